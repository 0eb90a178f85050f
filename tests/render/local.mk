check_PROGRAMS += tests/render/st-tool
tests_render_st_tool_SOURCES = tests/render/st-tool.c
tests_render_st_tool_LDADD = $(LQ_TEST_LDADD)
RENDER_TESTS = tests/cli/fleet.sh tests/render/ltx2.sh tests/render/ltx2-demo.sh tests/render/wan.sh tests/render/i2v.sh tests/render/condition.sh tests/render/twostage.sh tests/render/parity.sh tests/render/peak.sh tests/render/lora.sh tests/render/streaming.sh tests/render/guard.sh tests/render/tiled.sh tests/cli/resume.sh tests/cli/resume-path.sh tests/cli/precision.sh tests/cli/worker.sh tests/cli/warm.sh tests/cli/fence.sh tests/cli/symlink.sh tests/cli/disk-full.sh \
	tests/cli/flaky.sh tests/cli/tty.sh
TESTS += $(RENDER_TESTS)
EXTRA_DIST += $(RENDER_TESTS) tests/cli/render-common.sh tests/data/pipeline \
	tests/data/ltxv-twostage
