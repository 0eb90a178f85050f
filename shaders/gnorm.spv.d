shaders/gnorm.spv: shaders/gnorm.comp shaders/reduce.glsl shaders/push.h shaders/common.glsl
