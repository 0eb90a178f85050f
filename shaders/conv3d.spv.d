shaders/conv3d.spv: shaders/conv3d.comp shaders/push.h shaders/common.glsl
