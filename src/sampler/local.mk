# sampler: flow-matching Euler schedule and step, UniPC multistep (Wan),
# guidance, counter-based noise, latent packing and video post-processing
# (CPU side).
liblatentq_a_SOURCES += \
	src/sampler/scheduler.c src/sampler/scheduler.h \
	src/sampler/scheduler-int.h \
	src/sampler/unipc.c src/sampler/unipc.h \
	src/sampler/rng.c src/sampler/rng.h \
	src/sampler/latents.c src/sampler/latents.h

check_PROGRAMS += tests/sampler/test-scheduler tests/sampler/test-rng \
	tests/sampler/test-latents tests/sampler/test-upsample-pipeline \
	tests/sampler/ltx2-loop tests/sampler/test-unipc
TESTS += tests/sampler/test-scheduler tests/sampler/test-rng \
	tests/sampler/test-latents tests/sampler/test-upsample-pipeline \
	tests/sampler/ltx2-loop.sh tests/sampler/test-unipc
tests_sampler_test_scheduler_SOURCES = tests/sampler/test-scheduler.c \
	tests/sampler/golden.h
tests_sampler_test_scheduler_LDADD = $(LQ_TEST_LDADD)
tests_sampler_test_rng_SOURCES = tests/sampler/test-rng.c
tests_sampler_test_rng_LDADD = $(LQ_TEST_LDADD)
tests_sampler_test_latents_SOURCES = tests/sampler/test-latents.c \
	tests/sampler/golden.h
tests_sampler_test_latents_LDADD = $(LQ_TEST_LDADD)
tests_sampler_test_upsample_pipeline_SOURCES = \
	tests/sampler/test-upsample-pipeline.c
tests_sampler_test_upsample_pipeline_LDADD = $(LQ_TEST_LDADD)
tests_sampler_ltx2_loop_SOURCES = tests/sampler/ltx2-loop.c
tests_sampler_ltx2_loop_LDADD = $(LQ_TEST_LDADD)
tests_sampler_test_unipc_SOURCES = tests/sampler/test-unipc.c
tests_sampler_test_unipc_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/data/sampler \
	tests/sampler/rng_reference.py tests/sampler/ltx2-loop.sh
