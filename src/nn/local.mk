# src/nn: model graphs (LTX-Video transformer and VAE decoder) on gpu ops,
# their CPU float32 islands, weights upload, and `latentq forward`.
liblatentq_a_SOURCES += \
	src/nn/dump.c src/nn/dump.h \
	src/nn/plan.c src/nn/plan.h \
	src/nn/weights.c src/nn/weights.h \
	src/nn/ltxv_embed.c src/nn/ltxv_embed.h \
	src/nn/ltxv_transformer.c src/nn/ltxv_transformer.h \
	src/nn/ltxv_vae.c src/nn/ltxv_vae.h src/nn/ltxv_latents.c \
	src/nn/ltxv_vae_int.h \
	src/nn/ltxv_vae_encoder.c src/nn/ltxv_vae_encoder.h \
	src/nn/ltxv_upsampler.c src/nn/ltxv_upsampler.h \
	src/nn/ltx2_vocoder.c src/nn/ltx2_vocoder.h \
	src/nn/ltx2_audio_vae.c src/nn/ltx2_audio_vae.h \
	src/nn/ltx2_attn.c src/nn/ltx2_attn.h \
	src/nn/ltx2_connectors.c src/nn/ltx2_connectors.h \
	src/nn/ltx2_transformer.c src/nn/ltx2_transformer.h \
	src/nn/wan_vae.c src/nn/wan_vae.h \
	src/nn/wan_transformer.c src/nn/wan_transformer.h \
	src/nn/forward.c src/nn/forward.h src/nn/forward_t5.h \
	src/nn/forward_t5.c \
	src/cmd/forward.c

# Tests: the CPU float32 islands against the goldens' intermediates, and
# `latentq forward` against every transformer / VAE golden case.
check_PROGRAMS += tests/nn/test-ltxv-embed tests/nn/test-ltxv-predecode \
	tests/nn/test-weights-dtype tests/nn/test-weights-stream \
	tests/nn/test-plan tests/nn/test-ltxv-tiling tests/nn/st-compare \
	tests/nn/test-ltx2-rope tests/nn/test-ltx2-pipe-passes \
	tests/nn/test-wan-vae-plan tests/nn/test-wan-vae-decode \
	tests/nn/test-wan-cp
TESTS += tests/nn/test-ltxv-embed tests/nn/test-ltxv-predecode \
	tests/nn/test-weights-dtype tests/nn/test-weights-stream \
	tests/nn/test-plan tests/nn/test-ltxv-tiling tests/nn/forward-goldens.sh \
	tests/nn/forward-intermediates.sh tests/nn/plan-measured.sh \
	tests/nn/forward-split.sh tests/nn/forward-tiled.sh \
	tests/nn/forward-encoder.sh tests/nn/forward-upsampler.sh \
	tests/nn/norm-out-linear.sh tests/nn/ltx2-vocoder.sh \
	tests/nn/ltx2-audio-vae.sh tests/nn/ltx2-connectors.sh \
	tests/nn/test-ltx2-rope tests/nn/ltx2-transformer.sh \
	tests/nn/ltx2-vae.sh tests/nn/test-ltx2-pipe-passes \
	tests/nn/wan-transformer.sh tests/nn/wan-vae.sh tests/nn/test-wan-vae-plan \
	tests/nn/test-wan-vae-decode tests/nn/test-wan-cp \
	tests/nn/wan-pipe-passes.sh tests/nn/precision.sh
tests_nn_test_wan_cp_SOURCES = tests/nn/test-wan-cp.c
tests_nn_test_wan_cp_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_ltxv_embed_SOURCES = tests/nn/test-ltxv-embed.c
tests_nn_test_ltx2_rope_SOURCES = tests/nn/test-ltx2-rope.c
tests_nn_test_ltx2_rope_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_ltx2_pipe_passes_SOURCES = tests/nn/test-ltx2-pipe-passes.c
tests_nn_test_ltx2_pipe_passes_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_ltxv_embed_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_ltxv_predecode_SOURCES = tests/nn/test-ltxv-predecode.c
tests_nn_test_ltxv_predecode_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_weights_dtype_SOURCES = tests/nn/test-weights-dtype.c
tests_nn_test_weights_dtype_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_weights_stream_SOURCES = tests/nn/test-weights-stream.c
tests_nn_test_weights_stream_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_plan_SOURCES = tests/nn/test-plan.c
tests_nn_test_plan_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_ltxv_tiling_SOURCES = tests/nn/test-ltxv-tiling.c
tests_nn_test_ltxv_tiling_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_wan_vae_plan_SOURCES = tests/nn/test-wan-vae-plan.c
tests_nn_test_wan_vae_plan_LDADD = $(LQ_TEST_LDADD)
tests_nn_test_wan_vae_decode_SOURCES = tests/nn/test-wan-vae-decode.c
tests_nn_test_wan_vae_decode_LDADD = $(LQ_TEST_LDADD)
tests_nn_st_compare_SOURCES = tests/nn/st-compare.c
tests_nn_st_compare_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/nn/precision.sh tests/nn/forward-goldens.sh tests/nn/forward-intermediates.sh \
	tests/nn/plan-measured.sh tests/nn/forward-split.sh \
	tests/nn/forward-tiled.sh tests/nn/norm-out-linear.sh \
	tests/nn/forward-encoder.sh tests/nn/forward-upsampler.sh \
	tests/nn/ltx2-vocoder.sh tests/nn/ltx2-audio-vae.sh \
	tests/nn/ltx2-connectors.sh tests/nn/ltx2-common.sh \
	tests/nn/ltx2-transformer.sh tests/nn/ltx2-vae.sh \
	tests/nn/wan-transformer.sh tests/nn/wan-vae.sh \
	tests/nn/wan-pipe-passes.sh \
	tests/data/ltxv tests/data/ltxv-extra tests/data/ltx2 tests/data/wan
