shaders/ew.spv: shaders/ew.comp shaders/push.h shaders/common.glsl
