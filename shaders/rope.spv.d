shaders/rope.spv: shaders/rope.comp shaders/push.h shaders/common.glsl
