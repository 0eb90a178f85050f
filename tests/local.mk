# Test-wide pieces; each module's tests are listed in its own local.mk.
EXTRA_DIST += tests/test.h tests/cli/common.sh $(CLI_TESTS)
dist_man_MANS += man/latentq.1
CLI_TESTS = tests/cli/man.sh tests/cli/queue.sh tests/cli/limits.sh \
	tests/cli/integrity.sh tests/cli/exit.sh
TESTS += $(CLI_TESTS)
# The same queue, worker and crash tests against a throwaway PostgreSQL
# server (tests/cli/pg-server.sh), and the fleet tests of issue 17.
PG_TESTS = tests/pg/store.sh tests/pg/queue.sh tests/pg/worker.sh \
	tests/pg/resume.sh tests/pg/fleet.sh tests/pg/takeover.sh \
	tests/pg/outage.sh tests/pg/twostage.sh tests/pg/model.sh \
	tests/pg/fence.sh
TESTS += $(PG_TESTS)
EXTRA_DIST += $(PG_TESTS) tests/cli/pg-server.sh
EXTRA_DIST += tests/bench/bench-queue.sh
bench_SCRIPTS_LIST += tests/bench/bench-queue.sh
EXTRA_DIST += tests/bench/bench-render.sh
bench_SCRIPTS_LIST += tests/bench/bench-render.sh
EXTRA_DIST += tests/bench/bench-streaming.sh
bench_SCRIPTS_LIST += tests/bench/bench-streaming.sh
EXTRA_DIST += tests/bench/bench-store.sh
bench_SCRIPTS_LIST += tests/bench/bench-store.sh
EXTRA_DIST += tests/bench/bench-mesh.sh
bench_SCRIPTS_LIST += tests/bench/bench-mesh.sh
EXTRA_DIST += tests/bench/bench-warm.sh
bench_SCRIPTS_LIST += tests/bench/bench-warm.sh

# The two-stage example points at the goldens' random-weight latent
# upsampler under tests/data (the demo model has none): shipped in the
# tarball, not installed.
EXTRA_DIST += jobs/two-stage.yaml
# The demo manifests (text-to-video, image-to-video, an image condition) and their model, installed under $(pkgdatadir)/jobs/.
nobase_dist_pkgdata_DATA = jobs/demo.yaml jobs/i2v.yaml jobs/condition.yaml \
	jobs/images/red-circle.png \
	jobs/schedulers/static/scheduler_config.json \
	jobs/models/ltxv-demo/PROVENANCE.md \
	jobs/models/ltxv-demo/README.md \
	jobs/models/ltxv-demo/model_index.json \
	jobs/models/ltxv-demo/scheduler/scheduler_config.json \
	jobs/models/ltxv-demo/text_encoder/config.json \
	jobs/models/ltxv-demo/text_encoder/model.safetensors \
	jobs/models/ltxv-demo/tokenizer/special_tokens_map.json \
	jobs/models/ltxv-demo/tokenizer/spiece.model \
	jobs/models/ltxv-demo/tokenizer/tokenizer_config.json \
	jobs/models/ltxv-demo/transformer/config.json \
	jobs/models/ltxv-demo/transformer/diffusion_pytorch_model.safetensors \
	jobs/models/ltxv-demo/vae/config.json \
	jobs/models/ltxv-demo/vae/diffusion_pytorch_model.safetensors
EXTRA_DIST += tests/bench/bench-vae-tiled.sh
bench_SCRIPTS_LIST += tests/bench/bench-vae-tiled.sh
EXTRA_DIST += tests/bench/bench-model.sh tests/bench/reference/diffusers-forward.py
bench_SCRIPTS_LIST += tests/bench/bench-model.sh
