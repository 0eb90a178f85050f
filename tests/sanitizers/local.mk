# Sanitizer builds (configure --enable-asan --enable-ubsan): every test runs
# with these options, and a report fails the run.  Reports also go to files
# under san-reports/ (log_path), which `make check` then refuses to leave
# behind: a report from a process whose exit status no test checks still
# fails it.  `make check-sanitizers` builds such a tree beside this one and
# runs its `make check` (the README, .ci/run).
#
# Every test process also preloads tests/sanitizers/keep-icd.so, which keeps
# Mesa's lavapipe ICD mapped after the Vulkan loader's dlclose() (the leak it
# would otherwise report is Mesa's: see keep-icd.c and lsan-mesa.sh), so
# ASan's check that its runtime comes first (verify_asan_link_order) is off.
EXTRA_DIST += tests/sanitizers/lsan.supp tests/sanitizers/lsan-mesa.sh \
	tests/sanitizers/keep-icd.c
if LQ_ASAN
check_PROGRAMS += tests/sanitizers/vk-leak
tests_sanitizers_vk_leak_SOURCES = tests/sanitizers/vk-leak.c
tests_sanitizers_vk_leak_LDADD = $(VULKAN_LIBS)
# A plain shared object, not instrumented: sh, sqlite3 and ffmpeg load it too.
check_DATA = tests/sanitizers/keep-icd.so
CLEANFILES += tests/sanitizers/keep-icd.so
tests/sanitizers/keep-icd.so: tests/sanitizers/keep-icd.c
	$(CC) -O2 -Wall -shared -fPIC -o $@ $(srcdir)/tests/sanitizers/keep-icd.c -ldl
TESTS += tests/sanitizers/lsan-mesa.sh
AM_TESTS_ENVIRONMENT += \
	mkdir -p '$(abs_top_builddir)/san-reports'; \
	LD_PRELOAD='$(abs_top_builddir)/tests/sanitizers/keep-icd.so'; export LD_PRELOAD; \
	ASAN_OPTIONS='detect_leaks=1:verify_asan_link_order=0:log_path=$(abs_top_builddir)/san-reports/asan'; export ASAN_OPTIONS; \
	LSAN_OPTIONS='suppressions=$(abs_top_srcdir)/tests/sanitizers/lsan.supp'; export LSAN_OPTIONS; \
	UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1:log_path=$(abs_top_builddir)/san-reports/ubsan'; export UBSAN_OPTIONS;
endif

# Reports left by the tests fail the run: `make san-reports-clean check
# san-reports-verify` (what check-sanitizers does; make check alone still
# fails each test whose process a sanitizer stopped).
san-reports-clean:
	@rm -rf san-reports && mkdir -p san-reports
san-reports-verify:
	@if [ -n "$$(ls san-reports 2>/dev/null)" ]; then \
	    for f in san-reports/*; do echo "== $$f"; cat "$$f"; done; \
	    echo "$$(ls san-reports | wc -l) sanitizer report(s): the run fails"; \
	    exit 1; fi
.PHONY: san-reports-clean san-reports-verify

# A sanitizer build of this source tree in build-san/ (a copy of the files
# git knows and the untracked ones it does not ignore: the source folder is
# configured in place, so it cannot host a VPATH build), then its checks.
check-sanitizers:
	rm -rf build-san && mkdir build-san
	cd $(srcdir) && git ls-files -z --cached --others --exclude-standard | \
	    tar --null -T - -cf - | (cd $(abs_top_builddir)/build-san && tar -xf -)
	cd build-san && ./autogen.sh && \
	    ./configure --enable-asan --enable-ubsan && \
	    $(MAKE) $(AM_MAKEFLAGS) san-reports-clean && \
	    { $(MAKE) $(AM_MAKEFLAGS) check; rc=$$?; \
	      $(MAKE) $(AM_MAKEFLAGS) san-reports-verify && exit $$rc; }
.PHONY: check-sanitizers

# The part of the sanitizer suite `.ci/run` runs (`make check-sanitizers-ci`):
# every unit test of the modules, the CLI exit statuses, a render, a crash and
# resume, image-to-video, the terminal, the plan, Mesa's leak, the LTX-2
# components (vocoder, audio VAE, connectors, transformer), device slots, a
# context-parallel mesh render with its threads, and the PostgreSQL queue
# through libpq (the store's tests with a dropped connection, the CLI round
# trip with concurrent submits, a render across a server outage); shown to pass
# whole with no report (215 s at load 5 on 2 cores, after a 4-minute build).
# `make check-sanitizers` runs all of the suite.
SAN_CI_TESTS = tests/core/test-codes tests/core/test-util tests/store/test-store tests/store/test-checkpoints \
	tests/manifest/test-manifest tests/manifest/test-manifest-bad tests/manifest/test-job \
	tests/model/test-safetensors tests/model/test-st-malformed tests/model/test-diffusers \
	tests/model/test-expected tests/model/test-lora tests/model/test-synth \
	tests/preflight/test-preflight tests/sampler/test-scheduler tests/sampler/test-rng \
	tests/sampler/test-latents tests/text/test-tokenizer tests/text/test-prompt \
	tests/gpu/test-tensor tests/gpu/test-ops tests/media/test-media \
	tests/sanitizers/lsan-mesa.sh tests/nn/forward-goldens.sh tests/nn/norm-out-linear.sh \
	tests/cli/exit.sh tests/cli/worker.sh tests/cli/tty.sh \
	tests/render/parity.sh tests/render/i2v.sh tests/preflight/plan.sh \
	tests/nn/ltx2-vocoder.sh tests/nn/ltx2-audio-vae.sh tests/nn/ltx2-connectors.sh \
	tests/nn/ltx2-transformer.sh tests/nn/test-ltx2-rope tests/nn/test-ltx2-pipe-passes \
	tests/nn/ltx2-vae.sh tests/render/ltx2.sh tests/sampler/ltx2-loop.sh tests/nn/test-plan \
	tests/nn/wan-vae.sh tests/nn/test-wan-vae-decode tests/nn/test-wan-vae-plan \
	tests/nn/wan-transformer.sh tests/nn/test-wan-cp tests/nn/wan-pipe-passes.sh \
	tests/gpu/test-runtime tests/mesh/context3.sh tests/sampler/test-unipc \
	tests/pg/store.sh tests/pg/queue.sh tests/pg/outage.sh tests/nn/precision.sh
check-sanitizers-ci:
	$(MAKE) $(AM_MAKEFLAGS) check-sanitizers TESTS='$(SAN_CI_TESTS)'
.PHONY: check-sanitizers-ci
