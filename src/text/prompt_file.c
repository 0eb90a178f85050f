/*
 * prompt_file.c — `prompt_embeds: FILE`: precomputed prompt embeddings in
 * a safetensors file, checked as diffusers' LTXPipeline.check_inputs checks
 * its prompt_embeds / negative_prompt_embeds arguments (see prompt.h).
 */
#include "text/prompt.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/safetensors.h"

static enum lq_status
fail(struct lq_error *err, const char *path, const char *field,
    const char *code, const char *msg, const char *hint)
{
	error_set(err, LQ_FAILED, code, "%s", msg);
	error_set_where(err, path, 0, 0);
	error_set_field(err, "%s", field);
	if (hint != NULL) {
		error_set_hint(err, "%s", hint);
	}
	return LQ_FAILED;
}

static int
is_float(enum st_dtype t)
{
	return t == ST_F32 || t == ST_F16 || t == ST_BF16 || t == ST_F64;
}

/* Mask values as int64 0/1 (nonzero = 1), any numeric dtype. */
static int64_t *
mask_to_i64(const struct st_tensor *t)
{
	int64_t n = st_tensor_numel(t);
	int64_t *m = xmalloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
	size_t es = st_dtype_size(t->dtype);
	const unsigned char *p = t->data;
	if (is_float(t->dtype)) {
		float *f = st_tensor_to_f32(t);
		for (int64_t i = 0; i < n; i++) {
			m[i] = f[i] != 0.0f;
		}
		free(f);
		return m;
	}
	for (int64_t i = 0; i < n; i++) {
		int nz = 0;
		for (size_t b = 0; b < es; b++) {
			nz |= p[(size_t)i * es + b] != 0;
		}
		m[i] = nz;
	}
	return m;
}

enum lq_status
text_prompt_file_load(const char *path, int d_model,
    struct text_prompt_file *out, struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	struct st_file *f = NULL;
	enum lq_status st = st_file_open(path, &f, err);
	if (st != LQ_OK) {
		return st;
	}
	const char *names[2][2] = {
		{ "prompt_embeds", "prompt_attention_mask" },
		{ "negative_prompt_embeds", "negative_prompt_attention_mask" },
	};
	const struct st_tensor *emb[2], *mask[2];
	char msg[512];
	for (int i = 0; i < 2; i++) {
		emb[i] = st_file_find(f, names[i][0]);
		mask[i] = st_file_find(f, names[i][1]);
	}
	if (emb[0] == NULL) {
		st = fail(err, path, names[0][0], "LQ-EMB-001",
		    "the file has no prompt_embeds tensor",
		    "store prompt_embeds [B, T, D] and prompt_attention_mask "
		    "[B, T]");
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		if (emb[i] != NULL && mask[i] == NULL) {
			snprintf(msg, sizeof(msg), "%s needs %s beside it "
			    "(as LTXPipeline requires)", names[i][0],
			    names[i][1]);
			st = fail(err, path, names[i][1], "LQ-EMB-001", msg,
			    NULL);
			goto out;
		}
		if (emb[i] == NULL && mask[i] != NULL) {
			snprintf(msg, sizeof(msg), "%s without %s",
			    names[i][1], names[i][0]);
			st = fail(err, path, names[i][0], "LQ-EMB-001", msg,
			    NULL);
			goto out;
		}
		if (emb[i] == NULL) {
			continue;
		}
		if (emb[i]->ndim != 3 || !is_float(emb[i]->dtype) ||
		    emb[i]->shape[0] < 1 || emb[i]->shape[1] < 1 ||
		    emb[i]->shape[2] < 1) {
			snprintf(msg, sizeof(msg), "%s must be a non-empty "
			    "float tensor [B, T, D]; it is %s with %d dims",
			    names[i][0], st_dtype_name(emb[i]->dtype),
			    emb[i]->ndim);
			st = fail(err, path, names[i][0], "LQ-EMB-002", msg,
			    NULL);
			goto out;
		}
		if (mask[i]->ndim != 2 || mask[i]->dtype == ST_F64 ||
		    mask[i]->shape[0] != emb[i]->shape[0] ||
		    mask[i]->shape[1] != emb[i]->shape[1]) {
			snprintf(msg, sizeof(msg), "%s must be [%lld, %lld] "
			    "(the first two dims of %s), not %d-D %s",
			    names[i][1], (long long)emb[i]->shape[0],
			    (long long)emb[i]->shape[1], names[i][0],
			    mask[i]->ndim, st_dtype_name(mask[i]->dtype));
			st = fail(err, path, names[i][1], "LQ-EMB-003", msg,
			    NULL);
			goto out;
		}
	}
	if (emb[1] != NULL && (emb[1]->shape[0] != emb[0]->shape[0] ||
	    emb[1]->shape[1] != emb[0]->shape[1] ||
	    emb[1]->shape[2] != emb[0]->shape[2])) {
		snprintf(msg, sizeof(msg), "negative_prompt_embeds [%lld, "
		    "%lld, %lld] must have the shape of prompt_embeds [%lld, "
		    "%lld, %lld]", (long long)emb[1]->shape[0],
		    (long long)emb[1]->shape[1], (long long)emb[1]->shape[2],
		    (long long)emb[0]->shape[0], (long long)emb[0]->shape[1],
		    (long long)emb[0]->shape[2]);
		st = fail(err, path, names[1][0], "LQ-EMB-003", msg, NULL);
		goto out;
	}
	if (d_model > 0 && emb[0]->shape[2] != d_model) {
		snprintf(msg, sizeof(msg), "prompt_embeds has D = %lld; the "
		    "transformer's caption_channels is %d",
		    (long long)emb[0]->shape[2], d_model);
		st = fail(err, path, names[0][0], "LQ-EMB-003", msg, NULL);
		goto out;
	}
	out->B = (int)emb[0]->shape[0];
	out->T = (int)emb[0]->shape[1];
	out->D = (int)emb[0]->shape[2];
	out->prompt_embeds = st_tensor_to_f32(emb[0]);
	out->prompt_attention_mask = mask_to_i64(mask[0]);
	if (emb[1] != NULL) {
		out->negative_prompt_embeds = st_tensor_to_f32(emb[1]);
		out->negative_prompt_attention_mask = mask_to_i64(mask[1]);
	}
out:
	st_file_close(f);
	return st;
}

void
text_prompt_file_release(struct text_prompt_file *f)
{
	free(f->prompt_embeds);
	free(f->prompt_attention_mask);
	free(f->negative_prompt_embeds);
	free(f->negative_prompt_attention_mask);
	memset(f, 0, sizeof(*f));
}
