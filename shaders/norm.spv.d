shaders/norm.spv: shaders/norm.comp shaders/reduce.glsl shaders/push.h shaders/common.glsl
