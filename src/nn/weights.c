/*
 * weights.c — upload a component's safetensors to the device once, packed
 * into as few buffers as the device's allocation and binding limits allow.
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/lora.h"
#include "nn/weights.h"

struct nn_weight_entry {
	const char *name;		/* borrowed from the st_set */
	size_t st_index;		/* position in the st_set */
	struct gpu_tensor t;
};

struct nn_weights {
	struct st_set *set;
	struct gpu_buffer **bufs;
	int nbufs;
	struct nn_weight_entry *entries;	/* sorted by name */
	size_t nentries;
	size_t device_bytes;
};

static int
gpu_dtype_of(enum st_dtype d, enum gpu_dtype *out)
{
	switch (d) {
	case ST_F32: case ST_F64: *out = GPU_F32; return 1;
	case ST_F16: *out = GPU_F16; return 1;
	case ST_BF16: *out = GPU_BF16; return 1;
	default: return 0;
	}
}

static size_t
align_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

void
nn_weights_free(struct nn_weights *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < w->nbufs; i++)
		gpu_buffer_free(w->bufs[i]);
	free(w->bufs);
	free(w->entries);
	st_set_close(w->set);
	free(w);
}

enum lq_status
nn_weights_load(struct gpu_ctx *ctx, const char *path, const char *prefix,
    struct nn_weights **out, struct lq_error *err)
{
	return nn_weights_load_fused(ctx, path, prefix, NULL, out, err);
}

/* Does a LoRA of the set change this tensor? */
static int
lora_targets(const struct nn_lora_set *ls, const struct st_tensor *t)
{
	if (ls == NULL || t->ndim != 2)
		return 0;
	for (size_t i = 0; i < ls->n; i++)
		if (lora_find(ls->loras[i], t->name) != NULL)
			return 1;
	return 0;
}

enum lq_status
nn_weights_load_fused(struct gpu_ctx *ctx, const char *path,
    const char *prefix, struct nn_lora_set *loras, struct nn_weights **out,
    struct lq_error *err)
{
	const struct device_caps *caps = gpu_ctx_caps(ctx);
	struct nn_weights *w = xcalloc(1, sizeof(*w));
	size_t plen = prefix ? strlen(prefix) : 0, n, align, cap;
	size_t *offs, *bufidx, *bufsize = NULL, fill = 0;
	int nplanned = 0;
	enum lq_status st;

	*out = NULL;
	st = st_set_open(path, &w->set, err);
	if (st != LQ_OK) {
		free(w);
		return st;
	}
	n = st_set_count(w->set);
	w->entries = xcalloc(n ? n : 1, sizeof(*w->entries));
	offs = xcalloc(n ? n : 1, sizeof(*offs));
	bufidx = xcalloc(n ? n : 1, sizeof(*bufidx));
	align = caps->min_storage_buffer_offset_alignment;
	if (align < 256)
		align = 256;
	/* One buffer holds at most this much; a tensor larger than a binding
	 * is split by the ops that bind it (gpu/ops.h). */
	cap = (size_t)device_caps_max_tensor(caps);

	/* Plan: assign each tensor a buffer and an offset. */
	for (size_t i = 0; i < n; i++) {
		const struct st_tensor *t = st_set_tensor(w->set, i);
		enum gpu_dtype gd;
		size_t bytes;

		if (plen && strncmp(t->name, prefix, plen) != 0)
			continue;
		if (!gpu_dtype_of(t->dtype, &gd))
			continue;
		if (lora_targets(loras, t))
			gd = GPU_F32;	/* fused in float32 */
		bytes = (size_t)st_tensor_numel(t) * gpu_dtype_size(gd);
		if (bytes == 0)
			continue;
		if (bytes > cap) {
			st = error_set(err, LQ_FAILED, "LQ-GPU-RANGE",
			    "weight %s (%zu bytes, %s) is larger than one "
			    "buffer of device \"%s\" (%zu bytes: "
			    "maxMemoryAllocationSize, at most %llu)", t->name,
			    bytes, gpu_dtype_name(gd), caps->name, cap,
			    (unsigned long long)DEVICE_CAPS_MAX_BUFFER);
			error_set_field(err, "%s", t->name);
			error_set_hint(err, "a device with a larger "
			    "maxMemoryAllocationSize, or the weight stored "
			    "as f16/bf16");
			goto fail;
		}
		fill = align_up(fill, align);
		if (fill > 0 && fill + bytes > cap) {
			bufsize = xrealloc(bufsize, sizeof(*bufsize) * (size_t)(nplanned + 1));
			bufsize[nplanned++] = fill;
			fill = 0;
		}
		offs[w->nentries] = fill;
		bufidx[w->nentries] = (size_t)nplanned;
		w->entries[w->nentries].name = t->name;
		w->entries[w->nentries].t.dtype = gd;
		w->entries[w->nentries].st_index = i;
		w->nentries++;
		fill += bytes;
	}
	if (fill > 0) {
		bufsize = xrealloc(bufsize, sizeof(*bufsize) * (size_t)(nplanned + 1));
		bufsize[nplanned++] = fill;
	}
	w->bufs = xcalloc(nplanned ? (size_t)nplanned : 1, sizeof(*w->bufs));
	for (int b = 0; b < nplanned; b++) {
		st = gpu_buffer_create(ctx, bufsize[b], &w->bufs[b], err);
		if (st != LQ_OK) {
			error_set_field(err, "%s", path);
			goto fail;
		}
		w->nbufs++;
		w->device_bytes += bufsize[b];
	}
	/* Upload. */
	for (size_t e = 0; e < w->nentries; e++) {
		struct nn_weight_entry *en = &w->entries[e];
		const struct st_tensor *t = st_set_tensor(w->set, en->st_index);
		int64_t shape[GPU_MAX_DIMS];
		int nd = t->ndim;

		/* gpu tensors have 1..GPU_MAX_DIMS dims: a scalar is [1]. */
		if (nd == 0) {
			shape[0] = 1;
			nd = 1;
		} else {
			if (nd > GPU_MAX_DIMS) {
				st = error_set(err, LQ_FAILED, "LQ-NN-WSHAPE",
				    "%s: %d dimensions, at most %d supported",
				    t->name, t->ndim, GPU_MAX_DIMS);
				goto fail;
			}
			memcpy(shape, t->shape, sizeof(int64_t) * (size_t)nd);
		}
		en->t = gpu_tensor_make(w->bufs[bufidx[e]], offs[e], en->t.dtype,
		    nd, shape);
		if (lora_targets(loras, t)) {
			float *f = st_tensor_to_f32(t);

			loras->fused += lora_fuse_weight(loras->loras, loras->scales,
			    loras->n, t->name, f, t->shape[0], t->shape[1]);
			st = gpu_tensor_upload(ctx, &en->t, f, err);
			free(f);
		} else if (t->dtype == ST_F64) {
			float *f = st_tensor_to_f32(t);

			st = gpu_tensor_upload(ctx, &en->t, f, err);
			free(f);
		} else {
			st = gpu_tensor_upload(ctx, &en->t, t->data, err);
		}
		if (st != LQ_OK) {
			error_set_field(err, "%s", t->name);
			goto fail;
		}
	}
	free(offs);
	free(bufidx);
	free(bufsize);
	*out = w;
	return LQ_OK;
fail:
	free(offs);
	free(bufidx);
	free(bufsize);
	nn_weights_free(w);
	return st;
}

static const struct nn_weight_entry *
find_entry(const struct nn_weights *w, const char *name)
{
	size_t lo = 0, hi = w->nentries;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(w->entries[mid].name, name);

		if (c == 0)
			return &w->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int
nn_weights_has(const struct nn_weights *w, const char *name)
{
	return find_entry(w, name) != NULL;
}

static void
shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t used = 0;

	used += (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld",
		    i ? ", " : "", (long long)shape[i]);
	if (used < n)
		snprintf(buf + used, n - used, "]");
}

enum lq_status
nn_weights_get(const struct nn_weights *w, const char *name, int ndim,
    const int64_t *shape, struct gpu_tensor *out, struct lq_error *err)
{
	const struct nn_weight_entry *e = find_entry(w, name);
	const struct st_tensor *ht;
	int ok = 1;

	memset(out, 0, sizeof(*out));
	if (e == NULL) {
		error_set(err, LQ_FAILED, "LQ-NN-WMISS",
		    "weight %s is missing from %s", name, st_set_path(w->set));
		error_set_field(err, "%s", name);
		error_set_hint(err, "the folder does not hold the model its "
		    "config.json describes");
		return LQ_FAILED;
	}
	ht = st_set_find(w->set, name);
	if (ndim >= 0) {
		if (ht->ndim != ndim)
			ok = 0;
		for (int i = 0; ok && shape && i < ndim; i++)
			if (shape[i] >= 0 && shape[i] != ht->shape[i])
				ok = 0;
	}
	if (!ok) {
		char want[128], have[128];

		shape_str(want, sizeof(want), ndim, shape);
		shape_str(have, sizeof(have), ht->ndim, ht->shape);
		error_set(err, LQ_FAILED, "LQ-NN-WSHAPE",
		    "weight %s has shape %s, the config needs %s (-1 = any)",
		    name, have, want);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	*out = e->t;
	return LQ_OK;
}

const struct st_tensor *
nn_weights_host(const struct nn_weights *w, const char *name)
{
	return st_set_find(w->set, name);
}

size_t
nn_weights_device_bytes(const struct nn_weights *w)
{
	return w->device_bytes;
}

const char *
nn_weights_path(const struct nn_weights *w)
{
	return st_set_path(w->set);
}
