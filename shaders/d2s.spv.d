shaders/d2s.spv: shaders/d2s.comp shaders/push.h shaders/common.glsl
