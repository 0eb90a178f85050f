# src/nn: model graphs (LTX-Video transformer and VAE decoder) on gpu ops,
# their CPU float32 islands, weights upload, and `latentq forward`.
liblatentq_a_SOURCES += \
	src/nn/config.c src/nn/config.h \
	src/nn/dump.c src/nn/dump.h \
	src/nn/weights.c src/nn/weights.h \
	src/nn/ltxv_embed.c src/nn/ltxv_embed.h \
	src/nn/ltxv_transformer.c src/nn/ltxv_transformer.h \
	src/nn/ltxv_vae.c src/nn/ltxv_vae.h \
	src/nn/forward.c src/nn/forward.h src/nn/forward_t5.h \
	src/nn/forward_t5_none.c \
	src/cmd/forward.c
