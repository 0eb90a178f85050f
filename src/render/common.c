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
#include "gpu/gpu.h"
#include "media/media.h"
#include "render/render-int.h"
#include "sampler/rng.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/transfer.h"

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
	/* two jobs writing one file: the later replaces the earlier's
	 * output (cmd_check_outputs then keeps it, not re-decoding over
	 * it); say so, as the file is replaced */
	int64_t other = 0;
	char name[128];
	struct lq_error qe;
	error_clear(&qe);
	if (store_find_other_artifact(a->st, t->path, NULL, a->job_id, &other,
	    name, sizeof(name), &qe) == LQ_OK && other != 0) {
		char *p = util_escape_control(t->path);
		char *n = util_escape_control(name);
		log_warn("job %lld: %s replaces job %lld (%s)'s output of that "
		    "path", (long long)a->job_id, p, (long long)other, n);
		free(p);
		free(n);
	}
	return store_commit_artifact(a->st, a->job_id, a->kind, t, code, NULL,
	    err);
}

enum lq_status
render_write_videos(const struct render_job_ctx *c,
    const struct render_videos *v, char **output, struct lq_error *err)
{
	const struct job_config *jc = c->jc;
	enum lq_status s = LQ_OK;
	size_t vb = (size_t)v->F * v->H * v->W * 3;
	struct media_provenance prov = {
		.job = c->job->name, .prompt = jc->prompt,
		.negative_prompt = jc->negative_prompt, .has_seed = 1,
		.seed = jc->seed, .model_digest = v->model_digest,
		.config_digest = c->job->config_digest,
	};
	struct render_artifact mp4_a = {c->st, c->job->id, "mp4"};
	struct render_artifact sheet_a = {c->st, c->job->id, "contact_sheet"};
	struct file_commit mp4_c = {render_commit_artifact, &mp4_a};
	struct file_commit sheet_c = {render_commit_artifact, &sheet_a};
	*output = NULL;
	for (int b = 0; b < v->B && s == LQ_OK; b++) {
		char *mp4 = job_output_path(jc, c->base_dir, b, v->B);
		struct media_video_options vo = {.fps = jc->frame_rate,
		    .crf = -1, .provenance = &prov, .tags = v->tags,
		    .n_tags = v->n_tags, .commit = &mp4_c,
		    .audio = v->audio != NULL ? &v->audio[b] : NULL};
		struct media_frames fr = {v->F, v->H, v->W, v->u8 +
		    (size_t)b * vb};
		if ((s = render_make_parent_dirs(mp4, err)) == LQ_OK)
			s = media_write_mp4(mp4, &fr, &vo, err);
		if (s == LQ_OK) {
			struct media_sheet_options so = media_sheet_defaults;
			so.commit = &sheet_c;
			char *sheet = job_path_sibling(mp4, ".sheet.png");
			s = media_write_contact_sheet(sheet, &fr, &so, &prov, NULL,
			    NULL, err);
			if (s == LQ_OK)
				log_info("job %lld %s: wrote %s and %s",
				    (long long)c->job->id, c->job->name, mp4,
				    sheet);
			free(sheet);
		}
		if (s == LQ_OK && b == 0)
			*output = xstrdup(mp4);
		free(mp4);
	}
	return s;
}

enum lq_status
render_write_tensors(const struct render_job_ctx *c, struct st_writer *w,
    struct lq_error *err)
{
	struct render_artifact ta = {c->st, c->job->id, "tensors"};
	struct file_commit tc = {render_commit_artifact, &ta};
	char *path = job_resolve_path(c->base_dir, c->jc->save_tensors);
	enum lq_status s = render_make_parent_dirs(path, err);
	if (s == LQ_OK)
		s = st_writer_write_commit(w, path, &tc, err);
	free(path);
	return s;
}

enum lq_status
render_upload(struct gpu_ctx *ctx, int ndim, const int64_t *shape,
    const float *x, struct gpu_buffer **buf, struct gpu_tensor *t,
    struct lq_error *err)
{
	size_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= (size_t)shape[i];
	enum lq_status s = gpu_buffer_create(ctx, n * sizeof(float), buf, err);
	if (s != LQ_OK)
		return s;
	*t = gpu_tensor_make(*buf, 0, GPU_F32, ndim, shape);
	return x != NULL ? gpu_tensor_upload_f32(ctx, t, x, err) : LQ_OK;
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

enum gpu_precision
render_precision(const struct job_config *jc)
{
	enum gpu_precision p = GPU_PRECISION_F32;
	/* absent: a config written before the key, f32; a bad value never
	 * gets here (preflight's LQ-CFG-002, render_job's LQ-RUN-CFG) */
	int bad = jc->precision != NULL &&
	    gpu_precision_parse(jc->precision, &p) != 0;
	LQ_ASSERT(!bad);
	(void)bad;
	return p;
}

void
render_device_fingerprint(const struct gpu_ctx *gpu, const char *resolved,
    char out[DIGEST_HEX_SIZE])
{
	const struct device_caps *caps = gpu_ctx_caps(gpu);
	char *fp = xasprintf("%s|%s|%u|%s|%s|%s", caps->name, caps->uuid,
	    caps->driver_version, PACKAGE_VERSION, gpu_ctx_variant(gpu),
	    resolved != NULL ? resolved : "");
	digest_hex(fp, strlen(fp), out);
	free(fp);
}
