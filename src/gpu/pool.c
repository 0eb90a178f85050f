/*
 * pool.c — the activation pool (gpu.h): chunked device buffers that hand
 * out tensors by bump allocation, with marks to give a scope's back.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "core/digest.h"
#include "core/embed.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/vk.h"

/* Bytes of each buffer a pool is made of (the last one may be smaller). */
static uint64_t
pool_chunk(const struct device_caps *caps)
{
	uint64_t chunk = caps ? device_caps_max_tensor(caps) :
	    DEVICE_CAPS_MAX_BUFFER;

	return chunk & ~(uint64_t)255;
}

#define POOL_ALIGN 256

uint64_t
gpu_pool_plan(const struct device_caps *caps, const uint64_t *bytes, int n)
{
	const uint64_t chunk = pool_chunk(caps);
	uint64_t total = 0;

	for (int i = 0; i < n; i++)
		total += (bytes[i] + POOL_ALIGN - 1) & ~(uint64_t)(POOL_ALIGN - 1);
	if (total == 0)
		return gpu_buffer_plan_size(1);
	/* Carve in order as gpu_pool_tensor does (a tensor never spans two
	 * chunks); grow by what the gaps at chunk ends cost until it fits. */
	for (int round = 0; round <= n + 1; round++) {
		uint64_t pos = 0, short_by = 0;

		for (int i = 0; i < n; i++) {
			uint64_t need = (bytes[i] + POOL_ALIGN - 1) &
			    ~(uint64_t)(POOL_ALIGN - 1);
			uint64_t end = (pos / chunk + 1) * chunk;

			if (end > total)
				end = total;
			if (need > end - pos && need <= chunk && end < total) {
				pos = end;	/* next chunk */
				end = pos + chunk < total ? pos + chunk : total;
			}
			if (need > end - pos) {
				short_by = need - (end - pos);
				break;
			}
			pos += need;
		}
		if (short_by == 0)
			break;
		total += short_by;
	}
	/* what gpu_pool_create(total) allocates: chunk-sized buffers and a
	 * rounded remainder */
	return total / chunk * chunk + (total % chunk ?
	    gpu_buffer_plan_size(total % chunk) : 0);
}

enum lq_status
gpu_pool_create(struct gpu_ctx *ctx, size_t bytes, struct gpu_pool **out,
    struct lq_error *err)
{
	*out = NULL;
	struct gpu_pool *p = xcalloc(1, sizeof(*p));
	p->ctx = ctx;
	size_t chunk = (size_t)pool_chunk(&ctx->caps);
	size_t left = bytes ? bytes : 1;
	while (left > 0) {
		size_t k = left < chunk ? left : chunk;
		p->chunks = xrealloc(p->chunks, (size_t)(p->nchunks + 1) *
		    sizeof(*p->chunks));
		struct gpu_pool_chunk *c = &p->chunks[p->nchunks];
		enum lq_status st = gpu_buffer_create(ctx, k, &c->buf, err);
		if (st != LQ_OK) {
			gpu_pool_free(p);
			return st;
		}
		c->base = p->capacity;
		p->capacity += c->buf->alloc;
		p->nchunks++;
		left -= k;
	}
	*out = p;
	return LQ_OK;
}

void
gpu_pool_free(struct gpu_pool *pool)
{
	if (pool == NULL)
		return;
	for (int i = 0; i < pool->nchunks; i++)
		gpu_buffer_free(pool->chunks[i].buf);
	free(pool->chunks);
	free(pool);
}

enum lq_status
gpu_pool_tensor(struct gpu_pool *pool, enum gpu_dtype dtype, int ndim,
    const int64_t *shape, struct gpu_tensor *out, struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	struct gpu_tensor t = gpu_tensor_make(NULL, 0, dtype, ndim, shape);
	size_t nb = gpu_tensor_nbytes(&t);
	char d[96];
	if (device_caps_check_tensor(&pool->ctx->caps,
	    gpu_tensor_describe(&t, d, sizeof(d)), nb, err) != LQ_OK)
		return LQ_FAILED;
	size_t align = 256;
	size_t need = (nb + align - 1) & ~(align - 1);
	size_t pos = pool->fill;
	for (int i = 0; i < pool->nchunks; i++) {
		struct gpu_pool_chunk *c = &pool->chunks[i];
		size_t end = c->base + c->buf->alloc;
		if (pos >= end)
			continue;
		if (pos < c->base)
			pos = c->base;
		if (need <= end - pos) {
			t.buf = c->buf;
			t.offset = pos - c->base;
			pool->fill = pos + need;
			if (pool->fill > pool->peak)
				pool->peak = pool->fill;
			*out = t;
			return LQ_OK;
		}
		pos = end;	/* a tensor never spans two chunks */
	}
	error_set(err, LQ_FAILED, "LQ-GPU-POOL",
	    "activation pool of %zu bytes is full: %s needs %zu bytes at "
	    "fill %zu", pool->capacity, d, need, pool->fill);
	error_set_hint(err, "create the pool larger (peak so far %zu bytes)",
	    pool->peak);
	return LQ_FAILED;
}

size_t
gpu_pool_mark(const struct gpu_pool *pool)
{
	return pool->fill;
}

void
gpu_pool_reset(struct gpu_pool *pool, size_t mark)
{
	LQ_ASSERT(mark <= pool->fill);
	pool->fill = mark;
}

size_t
gpu_pool_peak(const struct gpu_pool *pool)
{
	return pool->peak;
}

size_t
gpu_pool_capacity(const struct gpu_pool *pool)
{
	return pool->capacity;
}
