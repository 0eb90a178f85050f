/*
 * weights.c — upload a component's safetensors to the device once, packed
 * into as few buffers as the device's allocation and binding limits allow.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/lora.h"
#include "nn/weights.h"

struct nn_weight_entry {
	const char *name;		/* borrowed from the st_set */
	size_t st_index;		/* position in the st_set */
	struct gpu_tensor t;
	int group;			/* streamed group, -1: resident */
	size_t offset;			/* in its buffer or slot */
	const void *host;		/* streamed: bytes to upload */
	size_t bytes;
	float *owned;			/* host copy converted at load, or NULL */
};

struct nn_weights {
	struct gpu_ctx *ctx;
	struct st_set *set;
	struct gpu_buffer **bufs;
	int nbufs;
	struct nn_weight_entry *entries;	/* sorted by name */
	size_t nentries;
	size_t device_bytes;
	/* streaming */
	int ngroups, nslots;
	struct gpu_buffer **slots;
	size_t slot_bytes, host_bytes;
	int *slot_group;		/* group each slot holds, -1 none */
	unsigned uploads;		/* groups uploaded so far */
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
	for (int i = 0; i < w->nslots; i++)
		gpu_buffer_free(w->slots[i]);
	free(w->slots);
	free(w->slot_group);
	for (size_t i = 0; i < w->nentries; i++)
		free(w->entries[i].owned);
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
	return nn_weights_load_streamed(ctx, path, prefix, loras, NULL, out,
	    err);
}

int
nn_weights_group_of(const char *name, const char *group_prefix)
{
	size_t gl;
	char *end;
	long g;

	if (group_prefix == NULL)
		return -1;
	gl = strlen(group_prefix);
	if (strncmp(name, group_prefix, gl) != 0 || name[gl] < '0' ||
	    name[gl] > '9')
		return -1;
	g = strtol(name + gl, &end, 10);
	return *end == '.' && g >= 0 && g < 1000000 ? (int)g : -1;
}

/*
 * The layout: each selected tensor's dtype on the device, its buffer (or
 * group) and offset.  Resident tensors are packed into buffers of at most
 * device_caps_max_tensor bytes; a group's tensors are packed from offset 0
 * of a slot, so every slot holds any group at the same offsets.  Shared by
 * the loader and nn_weights_plan.
 */
struct layout {
	size_t *bufsize;	/* per resident buffer */
	int nbufs;
	size_t *bufidx;		/* per entry */
	size_t slot_bytes, resident_bytes, host_bytes;
	int ngroups;
	size_t largest;			/* the largest tensor, bytes */
	const char *largest_name;	/* borrowed from the set */
	int has_16bit;
};

static enum lq_status
layout_make(const struct st_set *set, const char *prefix,
    const struct nn_lora_set *loras, const struct nn_weights_stream *stream,
    const struct device_caps *caps, struct nn_weight_entry *entries,
    size_t *nentries, struct layout *L, struct lq_error *err)
{
	size_t n = st_set_count(set), plen = prefix ? strlen(prefix) : 0;
	size_t align = caps ? caps->min_storage_buffer_offset_alignment : 0;
	size_t cap = (size_t)(caps ? device_caps_max_tensor(caps) :
	    DEVICE_CAPS_MAX_BUFFER);
	size_t *gfill = NULL, fill = 0;

	if (align < 256)
		align = 256;
	memset(L, 0, sizeof(*L));
	L->bufidx = xcalloc(n ? n : 1, sizeof(*L->bufidx));
	*nentries = 0;
	for (size_t i = 0; i < n; i++) {
		const struct st_tensor *t = st_set_tensor(set, i);
		struct nn_weight_entry *en = &entries[*nentries];
		enum gpu_dtype gd;
		size_t bytes;
		int g;

		if (plen && strncmp(t->name, prefix, plen) != 0)
			continue;
		if (!gpu_dtype_of(t->dtype, &gd))
			continue;
		if (lora_targets(loras, t))
			gd = GPU_F32;	/* fused in float32 */
		bytes = (size_t)st_tensor_numel(t) * gpu_dtype_size(gd);
		if (bytes == 0)
			continue;
		if (gd != GPU_F32)
			L->has_16bit = 1;
		if (bytes > L->largest) {
			L->largest = bytes;
			L->largest_name = t->name;
		}
		if (bytes > cap) {
			free(gfill);
			error_set(err, LQ_FAILED, "LQ-GPU-RANGE",
			    "weight %s (%zu bytes, %s) is larger than one "
			    "buffer of device \"%s\" (%zu bytes: "
			    "maxMemoryAllocationSize, at most %llu)", t->name,
			    bytes, gpu_dtype_name(gd), caps ? caps->name : "any", cap,
			    (unsigned long long)DEVICE_CAPS_MAX_BUFFER);
			error_set_field(err, "%s", t->name);
			error_set_hint(err, "a device with a larger "
			    "maxMemoryAllocationSize, or the weight stored "
			    "as f16/bf16");
			return LQ_FAILED;
		}
		g = stream ? nn_weights_group_of(t->name, stream->group_prefix) : -1;
		memset(en, 0, sizeof(*en));
		en->name = t->name;
		en->t.dtype = gd;
		en->st_index = i;
		en->group = g;
		en->bytes = bytes;
		if (g >= 0) {
			if (g >= L->ngroups) {
				gfill = xrealloc(gfill, sizeof(*gfill) * (size_t)(g + 1));
				for (int k = L->ngroups; k <= g; k++)
					gfill[k] = 0;
				L->ngroups = g + 1;
			}
			gfill[g] = align_up(gfill[g], align);
			en->offset = gfill[g];
			gfill[g] += bytes;
			if (gfill[g] > L->slot_bytes)
				L->slot_bytes = gfill[g];
			L->host_bytes += bytes;
			if (L->slot_bytes > cap) {
				free(gfill);
				error_set(err, LQ_FAILED, "LQ-GPU-RANGE",
				    "weights of %s%d. (%zu bytes) are larger than "
				    "one buffer of device \"%s\" (%zu bytes)",
				    stream->group_prefix, g, L->slot_bytes,
				    caps ? caps->name : "any", cap);
				return LQ_FAILED;
			}
		} else {
			fill = align_up(fill, align);
			if (fill > 0 && fill + bytes > cap) {
				L->bufsize = xrealloc(L->bufsize,
				    sizeof(*L->bufsize) * (size_t)(L->nbufs + 1));
				L->bufsize[L->nbufs++] = fill;
				fill = 0;
			}
			en->offset = fill;
			L->bufidx[*nentries] = (size_t)L->nbufs;
			fill += bytes;
		}
		(*nentries)++;
	}
	if (fill > 0) {
		L->bufsize = xrealloc(L->bufsize, sizeof(*L->bufsize) *
		    (size_t)(L->nbufs + 1));
		L->bufsize[L->nbufs++] = fill;
	}
	for (int b = 0; b < L->nbufs; b++)
		L->resident_bytes += L->bufsize[b];
	free(gfill);
	return LQ_OK;
}

static void
layout_free(struct layout *L)
{
	free(L->bufsize);
	free(L->bufidx);
}

enum lq_status
nn_weights_plan(const struct st_set *set, const char *prefix,
    const struct nn_weights_stream *stream, const struct device_caps *caps,
    struct nn_weights_bytes *out, struct lq_error *err)
{
	size_t n = st_set_count(set), ne;
	struct nn_weight_entry *entries = xcalloc(n ? n : 1, sizeof(*entries));
	struct layout L;
	enum lq_status st = layout_make(set, prefix, NULL, stream, caps, entries,
	    &ne, &L, err);

	memset(out, 0, sizeof(*out));
	if (st == LQ_OK) {
		int nslots = stream && L.ngroups > 0 ? stream->nslots : 0;

		out->resident = L.resident_bytes;
		out->slot = L.slot_bytes;
		out->slots = (size_t)nslots;
		out->streamed_host = L.host_bytes;
		out->device = L.resident_bytes + (size_t)nslots * L.slot_bytes;
		out->groups = L.ngroups;
		out->largest = L.largest;
		snprintf(out->largest_name, sizeof(out->largest_name), "%s",
		    L.largest_name ? L.largest_name : "");
		out->has_16bit = L.has_16bit;
	}
	layout_free(&L);
	free(entries);
	return st;
}

/* Host bytes of a tensor as the device holds it (converted if needed). */
static enum lq_status
host_source(struct nn_weights *w, struct nn_weight_entry *en,
    const struct st_tensor *t, struct nn_lora_set *loras, const void **src)
{
	if (lora_targets(loras, t)) {
		en->owned = st_tensor_to_f32(t);
		loras->fused += lora_fuse_weight(loras->loras, loras->scales,
		    loras->n, t->name, en->owned, t->shape[0], t->shape[1]);
	} else if (t->dtype == ST_F64) {
		en->owned = st_tensor_to_f32(t);
	}
	(void)w;
	*src = en->owned ? (const void *)en->owned : t->data;
	return LQ_OK;
}

enum lq_status
nn_weights_load_streamed(struct gpu_ctx *ctx, const char *path,
    const char *prefix, struct nn_lora_set *loras,
    const struct nn_weights_stream *stream, struct nn_weights **out,
    struct lq_error *err)
{
	const struct device_caps *caps = gpu_ctx_caps(ctx);
	struct nn_weights *w = xcalloc(1, sizeof(*w));
	struct layout L;
	size_t n;
	enum lq_status st;

	*out = NULL;
	w->ctx = ctx;
	memset(&L, 0, sizeof(L));
	st = st_set_open(path, &w->set, err);
	if (st != LQ_OK) {
		free(w);
		return st;
	}
	n = st_set_count(w->set);
	w->entries = xcalloc(n ? n : 1, sizeof(*w->entries));
	st = layout_make(w->set, prefix, loras, stream, caps, w->entries,
	    &w->nentries, &L, err);
	if (st != LQ_OK)
		goto fail;
	w->bufs = xcalloc(L.nbufs ? (size_t)L.nbufs : 1, sizeof(*w->bufs));
	for (int b = 0; b < L.nbufs; b++) {
		st = gpu_buffer_create(ctx, L.bufsize[b], &w->bufs[b], err);
		if (st != LQ_OK) {
			error_set_field(err, "%s", path);
			goto fail;
		}
		w->nbufs++;
		w->device_bytes += L.bufsize[b];
	}
	if (L.ngroups > 0) {
		w->ngroups = L.ngroups;
		w->slot_bytes = L.slot_bytes;
		w->host_bytes = L.host_bytes;
		w->slots = xcalloc((size_t)stream->nslots, sizeof(*w->slots));
		w->slot_group = xcalloc((size_t)stream->nslots,
		    sizeof(*w->slot_group));
		for (int k = 0; k < stream->nslots; k++) {
			st = gpu_buffer_create(ctx, L.slot_bytes, &w->slots[k], err);
			if (st != LQ_OK) {
				error_set_field(err, "%s", path);
				goto fail;
			}
			w->slot_group[k] = -1;
			w->nslots++;
			w->device_bytes += L.slot_bytes;
		}
	}
	/* Views, and the upload of what is resident. */
	for (size_t e = 0; e < w->nentries; e++) {
		struct nn_weight_entry *en = &w->entries[e];
		const struct st_tensor *t = st_set_tensor(w->set, en->st_index);
		int64_t shape[GPU_MAX_DIMS];
		int nd = t->ndim;
		const void *src;

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
		en->t = gpu_tensor_make(en->group >= 0 ?
		    w->slots[en->group % w->nslots] : w->bufs[L.bufidx[e]],
		    en->offset, en->t.dtype, nd, shape);
		host_source(w, en, t, loras, &src);
		if (en->group >= 0) {
			en->host = src;	/* F16/BF16 stay as stored */
			continue;
		}
		st = gpu_tensor_upload(ctx, &en->t, src, err);
		free(en->owned);
		en->owned = NULL;
		if (st != LQ_OK) {
			error_set_field(err, "%s", t->name);
			goto fail;
		}
	}
	layout_free(&L);
	*out = w;
	return LQ_OK;
fail:
	layout_free(&L);
	nn_weights_free(w);
	return st;
}

int
nn_weights_groups(const struct nn_weights *w)
{
	return w->ngroups;
}

enum lq_status
nn_weights_upload_group(struct nn_weights *w, int group, struct lq_error *err)
{
	int slot;

	LQ_ASSERT(group >= 0 && group < w->ngroups && w->nslots > 0);
	slot = group % w->nslots;
	if (w->slot_group[slot] == group)
		return LQ_OK;
	w->slot_group[slot] = -1;
	for (size_t e = 0; e < w->nentries; e++) {
		const struct nn_weight_entry *en = &w->entries[e];
		enum lq_status st;

		if (en->group != group)
			continue;
		st = gpu_buffer_upload(w->ctx, w->slots[slot], en->offset,
		    en->host, en->bytes, err);
		if (st != LQ_OK) {
			error_set_field(err, "%s", en->name);
			return st;
		}
	}
	w->slot_group[slot] = group;
	w->uploads++;
	return LQ_OK;
}

void
nn_weights_stream_stats(const struct nn_weights *w, size_t *slot_bytes,
    size_t *host_bytes, unsigned *uploads)
{
	if (slot_bytes)
		*slot_bytes = w->slot_bytes;
	if (host_bytes)
		*host_bytes = w->host_bytes;
	if (uploads)
		*uploads = w->uploads;
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
