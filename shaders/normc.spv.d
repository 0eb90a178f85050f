shaders/normc.spv: shaders/normc.comp shaders/push.h shaders/common.glsl
