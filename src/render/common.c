/*
 * common.c — what every pipeline's render does the same way (see
 * render-int.h): phases, noise draws, artifact commits, output folders.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "core/digest.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/util.h"
#include "render/render-int.h"
#include "sampler/rng.h"
#include "store/checkpoints.h"
#include "store/jobs.h"

enum lq_status
render_enter_phase(struct store *st, const struct store_job *job,
    const struct render_options *opt, const char *phase, int step, int total,
    struct lq_error *err)
{
	enum lq_status s = store_set_progress(st, job->id, phase, step, total,
	    err);
	if (s != LQ_OK)
		return s;
	char detail[96];
	snprintf(detail, sizeof(detail), "{\"phase\":\"%s\"}", phase);
	if ((s = store_add_event(st, job->id, "phase", detail, err)) != LQ_OK)
		return s;
	log_debug("job %lld: %s", (long long)job->id, phase);
	if (fault_point(job->name, phase, 0, opt->attempt))	/* start */
		return error_set(err, LQ_RETRY, "LQ-GPU-OOM",
		    "out of device memory (injected) in phase %s", phase);
	return LQ_OK;
}

enum lq_status
render_draw(const struct st_file *noise, const char *noise_path,
    uint64_t seed, const char *name, uint32_t purpose, int ndim,
    const int64_t *shape, float *out, struct lq_error *err)
{
	const struct st_tensor *t = noise ? st_file_find(noise, name) : NULL;
	size_t n = 1;

	for (int i = 0; i < ndim; i++)
		n *= (size_t)shape[i];
	if (t == NULL) {
		rng_fill_normal(seed, purpose, 0, out, n);
		return LQ_OK;
	}
	if (t->ndim != ndim || memcmp(t->shape, shape,
	    sizeof(int64_t) * (size_t)ndim) != 0) {
		char want[96] = "", have[96] = "";
		size_t a = 0, b = 0;

		for (int i = 0; i < ndim && a < sizeof(want); i++)
			a += (size_t)snprintf(want + a, sizeof(want) - a, "%s%lld",
			    i ? ", " : "", (long long)shape[i]);
		for (int i = 0; i < t->ndim && b < sizeof(have); i++)
			b += (size_t)snprintf(have + b, sizeof(have) - b, "%s%lld",
			    i ? ", " : "", (long long)t->shape[i]);
		error_set(err, LQ_FAILED, "LQ-RUN-NOISE", "%s: %s is [%s], the "
		    "job draws [%s]", noise_path, name, have, want);
		error_set_field(err, "noise");
		error_set_hint(err, "give %s the shape diffusers draws it in, or "
		    "leave it out to draw it from seed %llu", name,
		    (unsigned long long)seed);
		return LQ_FAILED;
	}
	float *f = st_tensor_to_f32(t);
	memcpy(out, f, n * sizeof(float));
	free(f);
	return LQ_OK;
}

enum lq_status
render_commit_artifact(void *ud, struct file_temp *t, const char *code,
    struct lq_error *err)
{
	const struct render_artifact *a = ud;
	return store_commit_artifact(a->st, a->job_id, a->kind, t, code, NULL,
	    err);
}

enum lq_status
render_make_parent_dirs(const char *path, struct lq_error *err)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) != 0 && errno != EEXIST) {
			enum lq_status st = file_fail(err, "LQ-IO-004", "mkdir", p,
			    errno);
			free(p);
			return st;
		}
		*s = '/';
	}
	free(p);
	return LQ_OK;
}

enum lq_status
render_pin_model(struct store *st, const struct store_job *job,
    const char *root, const char *digest, struct lq_error *err)
{
	enum lq_status s;
	const char *pin = job->model_digests;
	if (pin != NULL && strncmp(pin, STORE_LEGACY_DIGEST_PREFIX,
	    strlen(STORE_LEGACY_DIGEST_PREFIX)) == 0) {
		/* pinned before schema 0002's identity: trust it once */
		log_warn("job %lld: model digest pinned by an older latentq; "
		    "re-pinned as %.16s…", (long long)job->id, digest);
		if ((s = store_repin_legacy_model_digest(st, job->id, pin, digest,
		    err)) != LQ_OK)
			return s;
		pin = digest;
	}
	if (pin != NULL && pin[0] != '\0' && strcmp(pin, digest) != 0) {
		/*
		 * One rule for both backends: the job is not at fault, this
		 * host's copy is.  FATAL gives it back untouched, checkpoints
		 * kept (worker_exit_for: EXIT_UNAVAILABLE), for another host
		 * sharing the queue or a later run here once the files are
		 * restored; `status` shows this error meanwhile.  Poisoning it
		 * would make a restored copy need a `retry`.
		 */
		error_set(err, LQ_FATAL, "LQ-RUN-MODEL-HOST", "this host's copy "
		    "of model %s differs from the one job %lld pinned (digest "
		    "%.16s…, here %.16s…); the job is left queued for a host, or "
		    "a later run, whose copy matches", root, (long long)job->id,
		    job->model_digests, digest);
		error_set_hint(err, "restore the files (or make this host's copy "
		    "match), or submit the job again with --again to render "
		    "with these weights");
		return LQ_FATAL;
	}
	return store_pin_model_digest(st, job->id, digest, err);
}

void
render_device_fingerprint(const struct gpu_ctx *gpu, char out[DIGEST_HEX_SIZE])
{
	const struct device_caps *caps = gpu_ctx_caps(gpu);
	char fp[768];
	snprintf(fp, sizeof(fp), "%s|%s|%u|%s", caps->name, caps->uuid,
	    caps->driver_version, PACKAGE_VERSION);
	/* the shader-only path keeps the fingerprints made before there
	 * was another, so their checkpoints still resume */
	const char *v = gpu_ctx_kernel_variant(gpu);
	if (strcmp(v, "shader") != 0)
		snprintf(fp + strlen(fp), sizeof(fp) - strlen(fp), "|+%s", v);
	digest_hex(fp, strlen(fp), out);
}
