/*
 * buffer.c — device buffers (gpu.h): memory type choice, creation, and
 * host transfers, direct when the memory is host-visible and coherent,
 * else through the context's staging buffer.
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

static int
memtype_find(const struct gpu_ctx *ctx, uint32_t bits, VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < ctx->memprops.memoryTypeCount; i++)
		if ((bits & (1u << i)) &&
		    (ctx->memprops.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	return -1;
}

void
gpu_buffer_destroy(struct gpu_buffer *b)
{
	if (b == NULL)
		return;
	VkDevice dev = b->ctx->device;
	b->ctx->mem_live -= b->counted;
	if (b->mapped != NULL)
		vkUnmapMemory(dev, b->memory);
	vkDestroyBuffer(dev, b->buffer, NULL);
	vkFreeMemory(dev, b->memory, NULL);
	free(b);
}

enum lq_status
gpu_buffer_new(struct gpu_ctx *ctx, size_t bytes, int staging,
    struct gpu_buffer **out, struct lq_error *err)
{
	*out = NULL;
	LQ_ASSERT(bytes > 0);
	size_t alloc = (size_t)gpu_buffer_plan_size(bytes);
	if (ctx->caps.max_memory_allocation_size != 0 &&
	    alloc > ctx->caps.max_memory_allocation_size) {
		error_set(err, LQ_FAILED, "LQ-GPU-RANGE",
		    "buffer of %zu bytes exceeds the device's "
		    "maxMemoryAllocationSize %" PRIu64, bytes,
		    ctx->caps.max_memory_allocation_size);
		return LQ_FAILED;
	}
	struct gpu_buffer *b = xcalloc(1, sizeof(*b));
	b->ctx = ctx;
	b->size = bytes;
	b->alloc = alloc;
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = alloc,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
		    VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
		    VK_BUFFER_USAGE_TRANSFER_DST_BIT |
		    VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkResult r = vkCreateBuffer(ctx->device, &bci, NULL, &b->buffer);
	if (r != VK_SUCCESS) {
		free(b);
		return gpu_vk_fail(err, r, "vkCreateBuffer(%zu bytes)", alloc);
	}
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(ctx->device, b->buffer, &req);
	const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
	    VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	/* Order of preference: host-visible device-local (UMA, CPU devices,
	 * resizable BAR), then device-local, then anything host-visible. */
	int cand[3], nc = 0;
	if (staging) {
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, hv);
	} else {
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, hv | dl);
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, dl);
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, hv);
	}
	r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
	int mt = -1;
	for (int i = 0; i < nc && r != VK_SUCCESS; i++) {
		if (cand[i] < 0)
			continue;
		VkMemoryAllocateInfo ai = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
			.allocationSize = req.size,
			.memoryTypeIndex = (uint32_t)cand[i],
		};
		r = vkAllocateMemory(ctx->device, &ai, NULL, &b->memory);
		mt = cand[i];
	}
	if (r != VK_SUCCESS) {
		vkDestroyBuffer(ctx->device, b->buffer, NULL);
		free(b);
		return gpu_vk_fail(err, r, "vkAllocateMemory(%" PRIu64 " bytes)",
		    (uint64_t)req.size);
	}
	if (!staging) {
		b->counted = req.size;
		ctx->mem_live += req.size;
		if (ctx->mem_live > ctx->mem_peak)
			ctx->mem_peak = ctx->mem_live;
	}
	r = vkBindBufferMemory(ctx->device, b->buffer, b->memory, 0);
	if (r != VK_SUCCESS) {
		gpu_vk_fail(err, r, "vkBindBufferMemory(%zu bytes)", alloc);
		gpu_buffer_destroy(b);
		return err ? err->status : LQ_FAILED;
	}
	/* LATENTQ_GPU_FORCE_STAGING=1 (tests) takes the path of a discrete
	 * GPU whose device memory is not host-visible. */
	int force_staging = !staging &&
	    util_env_switch("LATENTQ_GPU_FORCE_STAGING", 0);
	if ((ctx->memprops.memoryTypes[mt].propertyFlags & hv) == hv &&
	    !force_staging) {
		r = vkMapMemory(ctx->device, b->memory, 0, VK_WHOLE_SIZE, 0,
		    &b->mapped);
		if (r != VK_SUCCESS) {
			b->mapped = NULL;
			gpu_vk_fail(err, r, "vkMapMemory(%zu bytes)", alloc);
			gpu_buffer_destroy(b);
			return err ? err->status : LQ_FAILED;
		}
	}
	*out = b;
	return LQ_OK;
}

enum lq_status
gpu_buffer_create(struct gpu_ctx *ctx, size_t bytes, struct gpu_buffer **out,
    struct lq_error *err)
{
	return gpu_buffer_new(ctx, bytes ? bytes : 1, 0, out, err);
}

void
gpu_buffer_free(struct gpu_buffer *buf)
{
	if (buf == NULL)
		return;
	vkDeviceWaitIdle(buf->ctx->device);
	gpu_buffer_destroy(buf);
}

size_t
gpu_buffer_size(const struct gpu_buffer *buf)
{
	return buf->size;
}

uint64_t
gpu_buffer_plan_size(uint64_t bytes)
{
	return ((bytes ? bytes : 1) + 255) & ~(uint64_t)255;
}

void
gpu_ctx_memory(const struct gpu_ctx *ctx, uint64_t *live, uint64_t *peak)
{
	if (live)
		*live = ctx->mem_live;
	if (peak)
		*peak = ctx->mem_peak;
}

void
gpu_ctx_memory_reset_peak(struct gpu_ctx *ctx)
{
	ctx->mem_peak = ctx->mem_live;
}

#define STAGING_BYTES ((size_t)32 << 20)

/* Copies between a buffer and the staging buffer, synchronously. */
static enum lq_status
staged_copy(struct gpu_ctx *ctx, struct gpu_buffer *buf, size_t off,
    size_t n, int to_device, struct lq_error *err)
{
	if (ctx->xfer == NULL) {
		enum lq_status st = gpu_cmd_create(ctx, &ctx->xfer, err);
		if (st != LQ_OK)
			return st;
	}
	struct gpu_cmd *c = ctx->xfer;
	gpu_cmd_begin(c);
	if (c->error.status != LQ_OK) {
		if (err)
			*err = c->error;
		return c->error.status;
	}
	VkBufferCopy reg = {
		.srcOffset = to_device ? 0 : off,
		.dstOffset = to_device ? off : 0,
		.size = n,
	};
	if (to_device)
		vkCmdCopyBuffer(c->cb, ctx->staging->buffer, buf->buffer, 1, &reg);
	else
		vkCmdCopyBuffer(c->cb, buf->buffer, ctx->staging->buffer, 1, &reg);
	return gpu_cmd_submit(c, err);
}

static enum lq_status
check_range(const struct gpu_buffer *buf, size_t offset, size_t n,
    struct lq_error *err)
{
	if (offset > buf->size || n > buf->size - offset) {
		error_set(err, LQ_FAILED, "LQ-GPU-SHAPE",
		    "transfer of %zu bytes at offset %zu exceeds buffer of %zu "
		    "bytes", n, offset, buf->size);
		return LQ_FAILED;
	}
	return LQ_OK;
}

enum lq_status
gpu_buffer_upload(struct gpu_ctx *ctx, struct gpu_buffer *buf, size_t offset,
    const void *src, size_t n, struct lq_error *err)
{
	if (check_range(buf, offset, n, err) != LQ_OK)
		return LQ_FAILED;
	if (buf->mapped != NULL) {
		memcpy((char *)buf->mapped + offset, src, n);
		return LQ_OK;
	}
	if (ctx->staging == NULL && gpu_buffer_new(ctx, STAGING_BYTES, 1,
	    &ctx->staging, err) != LQ_OK)
		return err ? err->status : LQ_FAILED;
	for (size_t done = 0; done < n; done += STAGING_BYTES) {
		size_t k = n - done < STAGING_BYTES ? n - done : STAGING_BYTES;
		memcpy(ctx->staging->mapped, (const char *)src + done, k);
		enum lq_status st = staged_copy(ctx, buf, offset + done, k, 1, err);
		if (st != LQ_OK)
			return st;
	}
	return LQ_OK;
}

enum lq_status
gpu_buffer_download(struct gpu_ctx *ctx, const struct gpu_buffer *buf,
    size_t offset, void *dst, size_t n, struct lq_error *err)
{
	if (check_range(buf, offset, n, err) != LQ_OK)
		return LQ_FAILED;
	if (buf->mapped != NULL) {
		memcpy(dst, (const char *)buf->mapped + offset, n);
		return LQ_OK;
	}
	if (ctx->staging == NULL && gpu_buffer_new(ctx, STAGING_BYTES, 1,
	    &ctx->staging, err) != LQ_OK)
		return err ? err->status : LQ_FAILED;
	for (size_t done = 0; done < n; done += STAGING_BYTES) {
		size_t k = n - done < STAGING_BYTES ? n - done : STAGING_BYTES;
		enum lq_status st = staged_copy(ctx, (struct gpu_buffer *)buf,
		    offset + done, k, 0, err);
		if (st != LQ_OK)
			return st;
		memcpy((char *)dst + done, ctx->staging->mapped, k);
	}
	return LQ_OK;
}
