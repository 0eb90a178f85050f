/*
 * forward_t5.c — `latentq forward --component text-encoder`: the T5
 * encoder of src/nn/t5.h (the text module's) on input_ids and an optional
 * attention_mask, as transformers' T5EncoderModel(input_ids,
 * attention_mask).last_hidden_state.
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nn/forward_t5.h"
#include "nn/t5.h"

static const struct st_tensor *
find(const struct st_file *const *files, int n, const char *name)
{
	for (int i = 0; i < n; i++) {
		const struct st_tensor *t = st_file_find(files[i], name);

		if (t)
			return t;
	}
	return NULL;
}

/* An integer [B, L] input as int64 (any integer or float dtype). */
static int64_t *
as_i64(const struct st_tensor *t)
{
	int64_t n = st_tensor_numel(t), *v = xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));

	if (t->dtype == ST_I64) {
		memcpy(v, t->data, sizeof(int64_t) * (size_t)n);
	} else {
		float *f = st_tensor_to_f32(t);

		for (int64_t i = 0; i < n; i++)
			v[i] = (int64_t)f[i];
		free(f);
	}
	return v;
}

enum lq_status
nn_forward_text_encoder(struct gpu_ctx *ctx, const char *dir,
    const struct st_file *const *files, int nfiles, struct st_writer *w,
    struct lq_error *err)
{
	const struct st_tensor *ti = find(files, nfiles, "input_ids");
	const struct st_tensor *tm = find(files, nfiles, "attention_mask");
	struct t5_encoder *enc = NULL;
	int64_t *ids = NULL, *mask = NULL, B, L, D;
	float *out = NULL;
	enum lq_status st;

	if (ti == NULL || ti->ndim != 2) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", ti == NULL ?
		    "input input_ids is missing ([B, L] token ids)" :
		    "input input_ids must be [B, L] token ids");
		error_set_field(err, "input_ids");
		return LQ_FAILED;
	}
	B = ti->shape[0];
	L = ti->shape[1];
	if (tm && (tm->ndim != 2 || tm->shape[0] != B || tm->shape[1] != L)) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "input attention_mask must be [%lld, %lld] like input_ids",
		    (long long)B, (long long)L);
		error_set_field(err, "attention_mask");
		return LQ_FAILED;
	}
	st = t5_encoder_load(ctx, dir, &enc, err);
	if (st != LQ_OK)
		return st;
	ids = as_i64(ti);
	mask = tm ? as_i64(tm) : NULL;
	D = t5_encoder_config(enc)->d_model;
	out = xmalloc(sizeof(float) * (size_t)(B * L * D));
	st = t5_encoder_forward(enc, ids, mask, (int)B, (int)L, out, err);
	if (st == LQ_OK)
		st_writer_add(w, "last_hidden_state", ST_F32, 3,
		    (int64_t[]){ B, L, D }, out);
	free(out);
	free(ids);
	free(mask);
	t5_encoder_free(enc);
	return st;
}
