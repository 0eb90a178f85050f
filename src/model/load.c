/*
 * load.c — one weight as float32 with LoRAs fused (see load.h).
 */
#include <stdio.h>
#include <string.h>

#include "model/load.h"

static void
shape_text(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
}

enum lq_status
model_read_weight_f32(const struct st_set *s, const char *name, int ndim,
    const int64_t *shape, struct lora *const *loras, const double *scales, size_t nloras,
    float *dst, int *nfused, struct lq_error *err)
{
	if (nfused)
		*nfused = 0;
	const struct st_tensor *t = st_set_find(s, name);
	if (t == NULL) {
		error_set(err, LQ_FAILED, "LQ-MODEL-010", "weight %s is missing", name);
		error_set_where(err, st_set_path(s), 0, 0);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	int same = t->ndim == ndim;
	for (int i = 0; same && i < ndim; i++)
		same = t->shape[i] == shape[i];
	if (!same) {
		char a[160], b[160];
		shape_text(a, sizeof(a), t->ndim, t->shape);
		shape_text(b, sizeof(b), ndim, shape);
		error_set(err, LQ_FAILED, "LQ-MODEL-012", "weight %s is %s in the file, %s expected",
		    name, a, b);
		error_set_where(err, st_set_path(s), 0, 0);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	if (t->dtype != ST_F32 && t->dtype != ST_F16 && t->dtype != ST_BF16) {
		error_set(err, LQ_FAILED, "LQ-MODEL-013", "weight %s is %s (F32, F16 or BF16 expected)",
		    name, st_dtype_name(t->dtype));
		error_set_where(err, st_set_path(s), 0, 0);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	st_tensor_read_f32(t, dst);
	if (ndim == 2 && nloras > 0) {
		int n = lora_fuse_weight(loras, scales, nloras, name, dst, shape[0], shape[1]);
		if (nfused)
			*nfused = n;
	}
	return LQ_OK;
}
