/*
 * tensor.c — tensor views over buffers (gpu.h): dtypes, shapes, strides,
 * reshape, slice, permute, broadcast and their host transfers.  Pure: no
 * Vulkan and no device (tests/gpu/test-tensor runs without one); the
 * transfers go through gpu_buffer_upload/download.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/half.h"
#include "core/util.h"
#include "gpu/gpu.h"

/* ---- dtypes ---- */

size_t
gpu_dtype_size(enum gpu_dtype dtype)
{
	return dtype == GPU_F32 ? 4 : 2;
}

const char *
gpu_dtype_name(enum gpu_dtype dtype)
{
	switch (dtype) {
	case GPU_F32: return "f32";
	case GPU_F16: return "f16";
	case GPU_BF16: return "bf16";
	}
	return "?";
}

/* ---- views ---- */

struct gpu_tensor
gpu_tensor_make(struct gpu_buffer *buf, size_t offset, enum gpu_dtype dtype,
    int ndim, const int64_t *shape)
{
	LQ_ASSERT(ndim >= 1 && ndim <= GPU_MAX_DIMS);
	struct gpu_tensor t = {.buf = buf, .offset = offset, .dtype = dtype,
	    .ndim = ndim};
	for (int i = 0; i < GPU_MAX_DIMS; i++)
		t.shape[i] = 1;
	int64_t s = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		LQ_ASSERT(shape[i] >= 1);
		t.shape[i] = shape[i];
		t.stride[i] = s;
		s *= shape[i];
	}
	return t;
}

int64_t
gpu_tensor_numel(const struct gpu_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

size_t
gpu_tensor_nbytes(const struct gpu_tensor *t)
{
	return (size_t)gpu_tensor_numel(t) * gpu_dtype_size(t->dtype);
}

int
gpu_tensor_is_contiguous(const struct gpu_tensor *t)
{
	int64_t s = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] != 1 && t->stride[i] != s)
			return 0;
		s *= t->shape[i];
	}
	return 1;
}

struct gpu_tensor
gpu_tensor_reshape(const struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	LQ_ASSERT(gpu_tensor_is_contiguous(t));
	struct gpu_tensor r = gpu_tensor_make(t->buf, t->offset, t->dtype, ndim,
	    shape);
	LQ_ASSERT(gpu_tensor_numel(&r) == gpu_tensor_numel(t));
	return r;
}

struct gpu_tensor
gpu_tensor_slice(const struct gpu_tensor *t, int dim, int64_t start,
    int64_t len)
{
	LQ_ASSERT(dim >= 0 && dim < t->ndim);
	LQ_ASSERT(start >= 0 && len >= 1 && start + len <= t->shape[dim]);
	struct gpu_tensor r = *t;
	r.offset += (size_t)(start * t->stride[dim]) * gpu_dtype_size(t->dtype);
	r.shape[dim] = len;
	return r;
}

struct gpu_tensor
gpu_tensor_permute(const struct gpu_tensor *t, const int *perm)
{
	struct gpu_tensor r = *t;
	int seen = 0;
	for (int k = 0; k < t->ndim; k++) {
		LQ_ASSERT(perm[k] >= 0 && perm[k] < t->ndim);
		LQ_ASSERT(!(seen & (1 << perm[k])));
		seen |= 1 << perm[k];
		r.shape[k] = t->shape[perm[k]];
		r.stride[k] = t->stride[perm[k]];
	}
	return r;
}

struct gpu_tensor
gpu_tensor_broadcast(const struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	LQ_ASSERT(ndim >= t->ndim && ndim <= GPU_MAX_DIMS);
	struct gpu_tensor r = *t;
	r.ndim = ndim;
	int d = ndim - t->ndim;
	for (int k = 0; k < ndim; k++) {
		int64_t sz = k < d ? 1 : t->shape[k - d];
		int64_t st = k < d ? 0 : t->stride[k - d];
		LQ_ASSERT(sz == shape[k] || sz == 1);
		r.shape[k] = shape[k];
		r.stride[k] = sz == shape[k] && sz != 1 ? st : 0;
	}
	for (int k = ndim; k < GPU_MAX_DIMS; k++) {
		r.shape[k] = 1;
		r.stride[k] = 0;
	}
	return r;
}

char *
gpu_tensor_describe(const struct gpu_tensor *t, char *buf, size_t n)
{
	if (t == NULL) {
		snprintf(buf, n, "(none)");
		return buf;
	}
	size_t k = (size_t)snprintf(buf, n, "%s[", gpu_dtype_name(t->dtype));
	for (int i = 0; i < t->ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? "," : "",
		    t->shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]%s",
		    gpu_tensor_is_contiguous(t) ? "" : "(strided)");
	return buf;
}

static enum lq_status
tensor_check_host(const struct gpu_tensor *t, struct lq_error *err)
{
	char d[96];
	if (!gpu_tensor_is_contiguous(t)) {
		error_set(err, LQ_FAILED, "LQ-GPU-SHAPE",
		    "host transfer of a non-contiguous view %s",
		    gpu_tensor_describe(t, d, sizeof(d)));
		return LQ_FAILED;
	}
	return LQ_OK;
}

enum lq_status
gpu_tensor_upload(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    const void *src, struct lq_error *err)
{
	if (tensor_check_host(t, err) != LQ_OK)
		return LQ_FAILED;
	return gpu_buffer_upload(ctx, t->buf, t->offset, src,
	    gpu_tensor_nbytes(t), err);
}

enum lq_status
gpu_tensor_download(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    void *dst, struct lq_error *err)
{
	if (tensor_check_host(t, err) != LQ_OK)
		return LQ_FAILED;
	return gpu_buffer_download(ctx, t->buf, t->offset, dst,
	    gpu_tensor_nbytes(t), err);
}

enum lq_status
gpu_tensor_upload_f32(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    const float *src, struct lq_error *err)
{
	if (t->dtype == GPU_F32)
		return gpu_tensor_upload(ctx, t, src, err);
	int64_t n = gpu_tensor_numel(t);
	uint16_t *h = xmalloc((size_t)n * 2 + 2);
	for (int64_t i = 0; i < n; i++)
		h[i] = t->dtype == GPU_F16 ? half_f32_to_f16(src[i]) :
		    half_f32_to_bf16(src[i]);
	enum lq_status st = gpu_tensor_upload(ctx, t, h, err);
	free(h);
	return st;
}

enum lq_status
gpu_tensor_download_f32(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    float *dst, struct lq_error *err)
{
	if (t->dtype == GPU_F32)
		return gpu_tensor_download(ctx, t, dst, err);
	int64_t n = gpu_tensor_numel(t);
	uint16_t *h = xmalloc((size_t)n * 2 + 2);
	enum lq_status st = gpu_tensor_download(ctx, t, h, err);
	if (st == LQ_OK)
		for (int64_t i = 0; i < n; i++)
			dst[i] = t->dtype == GPU_F16 ? half_f16_to_f32(h[i]) :
			    half_bf16_to_f32(h[i]);
	free(h);
	return st;
}
