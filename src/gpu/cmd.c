/*
 * cmd.c — command recording (gpu.h, internal.h): begin/submit/wait,
 * descriptor pools, binding alignment and extents, the scratch buffer of
 * split ops, automatic barriers between dependent dispatches, and the
 * dispatch itself (with texel-buffer bindings).
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

#define DPOOL_SETS 512

enum lq_status
gpu_cmd_create(struct gpu_ctx *ctx, struct gpu_cmd **out, struct lq_error *err)
{
	*out = NULL;
	struct gpu_cmd *c = xcalloc(1, sizeof(*c));
	c->ctx = ctx;
	error_clear(&c->error);
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = ctx->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkResult r = vkAllocateCommandBuffers(ctx->device, &ai, &c->cb);
	if (r != VK_SUCCESS) {
		free(c);
		return gpu_vk_fail(err, r, "vkAllocateCommandBuffers(1)");
	}
	VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	r = vkCreateFence(ctx->device, &fci, NULL, &c->fence);
	if (r != VK_SUCCESS) {
		vkFreeCommandBuffers(ctx->device, ctx->pool, 1, &c->cb);
		free(c);
		return gpu_vk_fail(err, r, "vkCreateFence");
	}
	c->cbs = xmalloc(sizeof(*c->cbs));
	c->cbs[0] = c->cb;
	c->ncbs = 1;
	c->capsegs = 4;
	c->segs = xcalloc((size_t)c->capsegs, sizeof(*c->segs));
	*out = c;
	return LQ_OK;
}

void
gpu_cmd_free(struct gpu_cmd *cmd)
{
	if (cmd == NULL)
		return;
	VkDevice dev = cmd->ctx->device;
	vkDeviceWaitIdle(dev);
	for (int i = 0; i < cmd->ndpools; i++)
		vkDestroyDescriptorPool(dev, cmd->dpools[i], NULL);
	free(cmd->dpools);
	vkDestroyFence(dev, cmd->fence, NULL);
	vkFreeCommandBuffers(dev, cmd->ctx->pool, (uint32_t)cmd->ncbs,
	    cmd->cbs);
	free(cmd->cbs);
	free(cmd->segs);
	free(cmd->hops);
	for (int i = 0; i < cmd->nviews; i++)
		vkDestroyBufferView(dev, cmd->views[i], NULL);
	free(cmd->views);
	for (int i = 0; i < cmd->nretired; i++)
		gpu_buffer_destroy(cmd->retired[i]);
	free(cmd->retired);
	gpu_buffer_destroy(cmd->scratch);
	free(cmd->reads);
	free(cmd->writes);
	free(cmd);
}

/*
 * Starts segment nsegs: its command buffer (made on first need, reset
 * otherwise) begun and cmd->cb pointing at it.  Failures set the sticky
 * error.
 */
static enum lq_status
seg_start(struct gpu_cmd *cmd)
{
	VkDevice dev = cmd->ctx->device;
	int k = cmd->nsegs;
	if (k == cmd->capsegs) {
		cmd->capsegs *= 2;
		cmd->segs = xrealloc(cmd->segs, (size_t)cmd->capsegs *
		    sizeof(*cmd->segs));
	}
	VkResult r;
	if (k == cmd->ncbs) {
		cmd->cbs = xrealloc(cmd->cbs, (size_t)(k + 1) *
		    sizeof(*cmd->cbs));
		VkCommandBufferAllocateInfo ai = {
			.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
			.commandPool = cmd->ctx->pool,
			.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
			.commandBufferCount = 1,
		};
		r = vkAllocateCommandBuffers(dev, &ai, &cmd->cbs[k]);
		if (r != VK_SUCCESS)
			return gpu_vk_fail(&cmd->error, r,
			    "vkAllocateCommandBuffers(segment %d)", k);
		cmd->ncbs++;
	} else {
		r = vkResetCommandBuffer(cmd->cbs[k], 0);
		if (r != VK_SUCCESS)
			return gpu_vk_fail(&cmd->error, r,
			    "vkResetCommandBuffer");
	}
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	r = vkBeginCommandBuffer(cmd->cbs[k], &bi);
	if (r != VK_SUCCESS)
		return gpu_vk_fail(&cmd->error, r, "vkBeginCommandBuffer");
	cmd->segs[k] = (struct gpu_seg){.cb = cmd->cbs[k],
	    .first_hop = cmd->nhops};
	cmd->cb = cmd->cbs[k];
	cmd->nsegs = k + 1;
	/* what the next segment's dispatches see was finished by a wait */
	cmd->nreads = cmd->nwrites = 0;
	return LQ_OK;
}

/*
 * Ends the current segment's command buffer; when host ops follow it,
 * first makes the shaders' writes visible to the host.
 */
static enum lq_status
seg_end(struct gpu_cmd *cmd)
{
	struct gpu_seg *sg = &cmd->segs[cmd->nsegs - 1];
	if (sg->nhop > 0 && sg->dispatches > 0) {
		VkMemoryBarrier mb = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
			.dstAccessMask = VK_ACCESS_HOST_READ_BIT |
			    VK_ACCESS_HOST_WRITE_BIT,
		};
		vkCmdPipelineBarrier(sg->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		    VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
	}
	VkResult r = vkEndCommandBuffer(sg->cb);
	if (r != VK_SUCCESS)
		return gpu_vk_fail(&cmd->error, r, "vkEndCommandBuffer");
	return LQ_OK;
}

void
gpu_cmd_begin(struct gpu_cmd *cmd)
{
	VkDevice dev = cmd->ctx->device;
	LQ_ASSERT(!cmd->pending);
	error_clear(&cmd->error);
	cmd->dispatches = 0;
	cmd->host_ops = 0;
	cmd->nreads = cmd->nwrites = 0;
	cmd->dpool_cur = 0;
	/* submits wait, so nothing recorded earlier still uses these */
	for (int i = 0; i < cmd->nviews; i++)
		vkDestroyBufferView(dev, cmd->views[i], NULL);
	cmd->nviews = 0;
	for (int i = 0; i < cmd->nretired; i++)
		gpu_buffer_destroy(cmd->retired[i]);
	cmd->nretired = 0;
	for (int i = 0; i < cmd->ndpools; i++) {
		VkResult r = vkResetDescriptorPool(dev, cmd->dpools[i], 0);
		if (r != VK_SUCCESS) {
			gpu_vk_fail(&cmd->error, r, "vkResetDescriptorPool");
			return;
		}
	}
	cmd->nsegs = 0;
	cmd->nhops = 0;
	if (seg_start(cmd) != LQ_OK)
		return;
	cmd->recording = 1;
}

enum lq_status
gpu_cmd_status(const struct gpu_cmd *cmd, struct lq_error *err)
{
	if (cmd->error.status != LQ_OK && err != NULL)
		*err = cmd->error;
	return cmd->error.status;
}

unsigned
gpu_cmd_dispatch_count(const struct gpu_cmd *cmd)
{
	return cmd->dispatches;
}

struct gpu_ctx *
gpu_cmd_ctx(const struct gpu_cmd *cmd)
{
	return cmd->ctx;
}

void
gpu_cmd_set_precision(struct gpu_cmd *cmd, enum gpu_precision p)
{
	LQ_ASSERT(gpu_precision_name(p) != NULL);
	cmd->precision = p;
}

enum gpu_precision
gpu_cmd_precision(const struct gpu_cmd *cmd)
{
	return cmd->precision;
}

static const char *const precision_names[GPU_PRECISION_COUNT] = {
	[GPU_PRECISION_F32] = "f32",
	[GPU_PRECISION_BF16] = "bf16",
	[GPU_PRECISION_F16] = "f16",
};

const char *
gpu_precision_name(enum gpu_precision p)
{
	return (unsigned)p < GPU_PRECISION_COUNT ? precision_names[p] : NULL;
}

char *
gpu_precision_list(char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < GPU_PRECISION_COUNT && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i == 0 ? "" :
		    i + 1 < GPU_PRECISION_COUNT ? ", " : " or ",
		    precision_names[i]);
	return buf;
}

int
gpu_precision_parse(const char *s, enum gpu_precision *out)
{
	for (int i = 0; s != NULL && i < GPU_PRECISION_COUNT; i++)
		if (strcmp(s, precision_names[i]) == 0) {
			*out = (enum gpu_precision)i;
			return 0;
		}
	return -1;
}

/*
 * Submits segment k's command buffer with the fence (fence_busy).  The
 * first is always submitted (the transfer command records copies into it
 * directly); a later one holds dispatches, or it would not have started.
 */
static enum lq_status
seg_submit(struct gpu_cmd *cmd, int k)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cmd->segs[k].cb,
	};
	VkResult r = vkQueueSubmit(cmd->ctx->queue, 1, &si, cmd->fence);
	if (r != VK_SUCCESS)
		return gpu_vk_fail(&cmd->error, r,
		    "vkQueueSubmit(%u dispatches)", cmd->segs[k].dispatches);
	cmd->fence_busy = 1;
	return LQ_OK;
}

enum lq_status
gpu_cmd_submit_async(struct gpu_cmd *cmd, struct lq_error *err)
{
	LQ_ASSERT(!cmd->pending);
	if (!cmd->recording && cmd->error.status == LQ_OK)
		gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-STATE",
		    "gpu_cmd_submit without gpu_cmd_begin");
	if (cmd->recording) {
		cmd->recording = 0;
		if (cmd->error.status == LQ_OK)
			seg_end(cmd);
	}
	if (cmd->error.status != LQ_OK)
		return gpu_cmd_status(cmd, err);
	/* The first segment runs now; gpu_cmd_wait runs its host ops and
	 * the segments after it in order. */
	if (cmd->ctx->profile.on)
		cmd->submitted_ms = gpu_profile_now_ms();
	if (seg_submit(cmd, 0) != LQ_OK)
		return gpu_cmd_status(cmd, err);
	cmd->pending = 1;
	return LQ_OK;
}

/* Waits for the submitted segment's fence. */
static enum lq_status
seg_wait(struct gpu_cmd *cmd, int k)
{
	VkDevice dev = cmd->ctx->device;
	if (!cmd->fence_busy)
		return LQ_OK;
	cmd->fence_busy = 0;
	VkResult r = vkWaitForFences(dev, 1, &cmd->fence, VK_TRUE, UINT64_MAX);
	if (r != VK_SUCCESS)
		return gpu_vk_fail(&cmd->error, r,
		    "vkWaitForFences(%u dispatches)", cmd->segs[k].dispatches);
	r = vkResetFences(dev, 1, &cmd->fence);
	if (r != VK_SUCCESS)
		return gpu_vk_fail(&cmd->error, r, "vkResetFences");
	return LQ_OK;
}

enum lq_status
gpu_cmd_wait(struct gpu_cmd *cmd, struct lq_error *err)
{
	if (!cmd->pending)
		return gpu_cmd_status(cmd, err);
	struct gpu_ctx *ctx = cmd->ctx;
	int prof = ctx->profile.on;
	for (int k = 0; k < cmd->nsegs; k++) {
		double t0 = k == 0 ? cmd->submitted_ms : prof ?
		    gpu_profile_now_ms() : 0;
		if (k > 0 && seg_submit(cmd, k) != LQ_OK)
			break;
		if (seg_wait(cmd, k) != LQ_OK)
			break;
		const struct gpu_seg *sg = &cmd->segs[k];
		if (prof && sg->dispatches > 0)
			gpu_profile_add(ctx, sg->op, 0, gpu_profile_now_ms() - t0);
		for (int i = 0; i < sg->nhop; i++) {
			const struct gpu_host_op *h = &cmd->hops[sg->first_hop + i];
			t0 = prof ? gpu_profile_now_ms() : 0;
			gpu_host_run(ctx, h);
			if (prof)
				gpu_profile_add(ctx, h->opname, 1,
				    gpu_profile_now_ms() - t0);
		}
	}
	cmd->pending = 0;
	return gpu_cmd_status(cmd, err);
}

enum lq_status
gpu_cmd_submit(struct gpu_cmd *cmd, struct lq_error *err)
{
	enum lq_status st = gpu_cmd_submit_async(cmd, err);
	if (st != LQ_OK)
		return st;
	return gpu_cmd_wait(cmd, err);
}

static VkDeviceSize
bind_align(const struct gpu_ctx *ctx)
{
	/* both are powers of two: the larger is a multiple of the other */
	VkDeviceSize a = ctx->caps.min_storage_buffer_offset_alignment;
	if (ctx->min_texel_align > a)
		a = ctx->min_texel_align;
	return a < 16 ? 16 : a;
}

uint64_t
gpu_cmd_max_binding(const struct gpu_cmd *cmd)
{
	return device_caps_max_binding(&cmd->ctx->caps);
}

static void tensor_extent(const struct gpu_tensor *t, VkDeviceSize *lo,
    VkDeviceSize *hi);

uint64_t
gpu_bind_span(const struct gpu_cmd *cmd, const struct gpu_tensor *t)
{
	if (t == NULL)
		return 0;
	VkDeviceSize a = bind_align(cmd->ctx), lo, hi;
	tensor_extent(t, &lo, &hi);
	return (uint64_t)(((hi + 3) & ~(VkDeviceSize)3) - lo / a * a);
}

int
gpu_bind_fits(const struct gpu_cmd *cmd, const struct gpu_tensor *t)
{
	return gpu_bind_span(cmd, t) <= gpu_cmd_max_binding(cmd);
}

enum lq_status
gpu_cmd_scratch(struct gpu_cmd *cmd, size_t bytes, struct gpu_buffer **out)
{
	*out = NULL;
	if (cmd->error.status != LQ_OK)
		return cmd->error.status;
	if (cmd->scratch == NULL || cmd->scratch->size < bytes) {
		struct gpu_buffer *b;
		enum lq_status st = gpu_buffer_new(cmd->ctx, bytes ? bytes : 16,
		    0, &b, &cmd->error);
		if (st != LQ_OK)
			return st;
		if (cmd->scratch != NULL) {
			/* still referenced by what was recorded so far */
			cmd->retired = xrealloc(cmd->retired,
			    (size_t)(cmd->nretired + 1) * sizeof(*cmd->retired));
			cmd->retired[cmd->nretired++] = cmd->scratch;
		}
		cmd->scratch = b;
	}
	*out = cmd->scratch;
	return LQ_OK;
}

size_t
gpu_cmd_scratch_bytes(const struct gpu_cmd *cmd)
{
	return cmd->scratch ? cmd->scratch->alloc : 0;
}

uint32_t
gpu_bind_offset(const struct gpu_cmd *cmd, const struct gpu_tensor *t)
{
	if (t == NULL)
		return 0;
	VkDeviceSize a = bind_align(cmd->ctx);
	VkDeviceSize base = t->offset / a * a;
	return (uint32_t)((t->offset - base) / gpu_dtype_size(t->dtype));
}

/* Byte extent [lo, hi) of a view within its buffer. */
static void
tensor_extent(const struct gpu_tensor *t, VkDeviceSize *lo, VkDeviceSize *hi)
{
	int64_t last = 0;
	for (int i = 0; i < t->ndim; i++)
		last += (t->shape[i] - 1) * t->stride[i];
	*lo = t->offset;
	*hi = t->offset + (VkDeviceSize)(last + 1) * gpu_dtype_size(t->dtype);
}

static int
range_overlaps(const struct gpu_range *set, int n, const struct gpu_range *r)
{
	for (int i = 0; i < n; i++)
		if (set[i].buffer == r->buffer && set[i].lo < r->hi &&
		    r->lo < set[i].hi)
			return 1;
	return 0;
}

static void
range_add(struct gpu_range **set, int *n, int *cap, const struct gpu_range *r)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*set = xrealloc(*set, (size_t)*cap * sizeof(**set));
	}
	(*set)[(*n)++] = *r;
}

static enum lq_status
dset_alloc(struct gpu_cmd *cmd, VkDescriptorSetLayout dsl, VkDescriptorSet *out)
{
	VkDevice dev = cmd->ctx->device;
	for (;;) {
		if (cmd->dpool_cur < cmd->ndpools) {
			VkDescriptorSetAllocateInfo ai = {
				.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
				.descriptorPool = cmd->dpools[cmd->dpool_cur],
				.descriptorSetCount = 1,
				.pSetLayouts = &dsl,
			};
			VkResult r = vkAllocateDescriptorSets(dev, &ai, out);
			if (r == VK_SUCCESS)
				return LQ_OK;
			if (r != VK_ERROR_OUT_OF_POOL_MEMORY &&
			    r != VK_ERROR_FRAGMENTED_POOL)
				return gpu_vk_fail(&cmd->error, r,
				    "vkAllocateDescriptorSets");
			cmd->dpool_cur++;
			continue;
		}
		VkDescriptorPoolSize ps[2] = {
			{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			    DPOOL_SETS * GPU_MAX_BINDINGS},
			{VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, DPOOL_SETS * 2},
		};
		VkDescriptorPoolCreateInfo pci = {
			.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
			.maxSets = DPOOL_SETS,
			.poolSizeCount = 2,
			.pPoolSizes = ps,
		};
		VkDescriptorPool pool;
		VkResult r = vkCreateDescriptorPool(dev, &pci, NULL, &pool);
		if (r != VK_SUCCESS)
			return gpu_vk_fail(&cmd->error, r,
			    "vkCreateDescriptorPool(%d sets)", DPOOL_SETS);
		cmd->dpools = xrealloc(cmd->dpools, (size_t)(cmd->ndpools + 1) *
		    sizeof(*cmd->dpools));
		cmd->dpools[cmd->ndpools++] = pool;
	}
}

void
gpu_cmd_grid(const struct gpu_cmd *cmd, uint64_t groups, uint32_t *gx,
    uint32_t *gy)
{
	uint64_t mx = cmd->ctx->caps.max_workgroup_count[0];
	if (mx == 0 || mx > 65535)
		mx = 65535;
	if (groups == 0)
		groups = 1;
	if (groups <= mx) {
		*gx = (uint32_t)groups;
		*gy = 1;
	} else {
		*gx = (uint32_t)mx;
		*gy = (uint32_t)((groups + mx - 1) / mx);
	}
}

int
gpu_texel_disabled(void)
{
	return util_env_switch("LATENTQ_NO_TEXEL", 0);
}

int
gpu_cmd_texel_ok(const struct gpu_cmd *cmd, enum gpu_texfmt fmt,
    uint64_t texels)
{
	if (gpu_texel_disabled())
		return 0;
	return fmt > GPU_TEX_NONE && fmt < GPU_TEX_COUNT &&
	    cmd->ctx->tex_ok[fmt] && texels <= cmd->ctx->max_texels;
}

enum lq_status
gpu_cmd_dispatch(struct gpu_cmd *cmd, enum gpu_kernel k,
    const struct gpu_tensor *const *binds, const unsigned char *writes,
    const void *push, uint32_t gx, uint32_t gy, uint32_t gz, const char *op)
{
	return gpu_cmd_dispatch_tex(cmd, k, binds, writes, NULL, push, gx, gy,
	    gz, op);
}

enum lq_status
gpu_cmd_dispatch_tex(struct gpu_cmd *cmd, enum gpu_kernel k,
    const struct gpu_tensor *const *binds, const unsigned char *writes,
    const enum gpu_texfmt *texfmt, const void *push, uint32_t gx,
    uint32_t gy, uint32_t gz, const char *op)
{
	struct gpu_ctx *ctx = cmd->ctx;
	if (cmd->error.status != LQ_OK)
		return cmd->error.status;
	if (!cmd->recording)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-STATE",
		    "%s: recording without gpu_cmd_begin", op);
	const struct device_caps *c = &ctx->caps;
	if (gx > c->max_workgroup_count[0] || gy > c->max_workgroup_count[1] ||
	    gz > c->max_workgroup_count[2])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: %u×%u×%u workgroups exceed the device's "
		    "maxComputeWorkGroupCount %u×%u×%u", op, gx, gy, gz,
		    c->max_workgroup_count[0], c->max_workgroup_count[1],
		    c->max_workgroup_count[2]);
	if (gx == 0 || gy == 0 || gz == 0)
		return LQ_OK;
	/* after host ops: a new segment, run once they have; profiled
	 * (profile.c), a segment per dispatch */
	const struct gpu_seg *cur = &cmd->segs[cmd->nsegs - 1];
	if ((cur->nhop > 0 || (ctx->profile.on && cur->dispatches > 0)) &&
	    (seg_end(cmd) != LQ_OK || seg_start(cmd) != LQ_OK))
		return cmd->error.status;
	cmd->segs[cmd->nsegs - 1].op = op;
	int nb = gpu_kernel_info[k].nbind;
	struct gpu_pipeline *pipe;
	enum lq_status st = gpu_pipeline_get(ctx, k, &pipe, &cmd->error);
	if (st != LQ_OK)
		return st;
	VkDescriptorBufferInfo bi[GPU_MAX_BINDINGS];
	struct gpu_range rg[GPU_MAX_BINDINGS];
	VkDeviceSize a = bind_align(ctx);
	uint64_t maxr = device_caps_max_binding(c);
	int need_barrier = 0;
	for (int i = 0; i < nb; i++) {
		const struct gpu_tensor *t = binds[i];
		if (t == NULL) {
			bi[i] = (VkDescriptorBufferInfo){ctx->dummy->buffer, 0,
			    VK_WHOLE_SIZE};
			rg[i].buffer = VK_NULL_HANDLE;
			continue;
		}
		LQ_ASSERT(t->buf != NULL);
		VkDeviceSize lo, hi;
		tensor_extent(t, &lo, &hi);
		VkDeviceSize base = lo / a * a;
		VkDeviceSize end = (hi + 3) & ~(VkDeviceSize)3;
		if (end > t->buf->alloc)
			end = t->buf->alloc;
		if (hi > t->buf->alloc) {
			char d[96];
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: binding %d view %s at byte %zu runs past its "
			    "buffer of %zu bytes", op, i,
			    gpu_tensor_describe(t, d, sizeof(d)), t->offset,
			    t->buf->size);
		}
		if (end - base > maxr) {
			char d[96];
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
			    "%s: binding %d %s spans %" PRIu64 " bytes but device "
			    "\"%s\" binds at most %" PRIu64
			    " (maxStorageBufferRange)", op, i,
			    gpu_tensor_describe(t, d, sizeof(d)),
			    (uint64_t)(end - base), c->name, maxr);
		}
		bi[i] = (VkDescriptorBufferInfo){t->buf->buffer, base, end - base};
		rg[i] = (struct gpu_range){t->buf->buffer, lo, hi};
		if (range_overlaps(cmd->writes, cmd->nwrites, &rg[i]))
			need_barrier = 1;
		if (writes[i] && range_overlaps(cmd->reads, cmd->nreads, &rg[i]))
			need_barrier = 1;
	}
	if (need_barrier) {
		VkMemoryBarrier mb = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
			    VK_ACCESS_SHADER_READ_BIT,
			.dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
			    VK_ACCESS_SHADER_WRITE_BIT,
		};
		vkCmdPipelineBarrier(cmd->cb,
		    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
		    NULL);
		cmd->nreads = cmd->nwrites = 0;
	}
	for (int i = 0; i < nb; i++) {
		if (rg[i].buffer == VK_NULL_HANDLE)
			continue;
		if (writes[i])
			range_add(&cmd->writes, &cmd->nwrites, &cmd->capwrites,
			    &rg[i]);
		else
			range_add(&cmd->reads, &cmd->nreads, &cmd->capreads,
			    &rg[i]);
	}
	VkDescriptorSet set;
	st = dset_alloc(cmd, pipe->dsl, &set);
	if (st != LQ_OK)
		return st;
	VkWriteDescriptorSet w[GPU_MAX_BINDINGS];
	VkBufferView views[GPU_MAX_BINDINGS];
	for (int i = 0; i < nb; i++) {
		w[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = set,
			.dstBinding = (uint32_t)i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &bi[i],
		};
		if (!((gpu_kernel_info[k].texmask >> i) & 1))
			continue;
		LQ_ASSERT(texfmt != NULL && binds[i] != NULL &&
		    texfmt[i] > GPU_TEX_NONE && texfmt[i] < GPU_TEX_COUNT);
		VkDeviceSize ts = gpu_texfmt_size[texfmt[i]];
		VkBufferViewCreateInfo vci = {
			.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
			.buffer = bi[i].buffer,
			.format = gpu_texfmt_vk[texfmt[i]],
			.offset = bi[i].offset,
			.range = bi[i].range / ts * ts,
		};
		VkResult r = vkCreateBufferView(ctx->device, &vci, NULL,
		    &views[i]);
		if (r != VK_SUCCESS)
			return gpu_vk_fail(&cmd->error, r, "vkCreateBufferView(%s "
			    "binding %d, %" PRIu64 " bytes at %" PRIu64 ")", op, i,
			    (uint64_t)vci.range, (uint64_t)vci.offset);
		if (cmd->nviews == cmd->capviews) {
			cmd->capviews = cmd->capviews ? cmd->capviews * 2 : 16;
			cmd->views = xrealloc(cmd->views, (size_t)cmd->capviews *
			    sizeof(*cmd->views));
		}
		cmd->views[cmd->nviews++] = views[i];
		w[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
		w[i].pBufferInfo = NULL;
		w[i].pTexelBufferView = &views[i];
	}
	vkUpdateDescriptorSets(ctx->device, (uint32_t)nb, w, 0, NULL);
	vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE,
	    pipe->pipeline);
	vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE,
	    pipe->layout, 0, 1, &set, 0, NULL);
	vkCmdPushConstants(cmd->cb, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
	    gpu_kernel_info[k].push, push);
	vkCmdDispatch(cmd->cb, gx, gy, gz);
	cmd->dispatches++;
	cmd->segs[cmd->nsegs - 1].dispatches++;
	return LQ_OK;
}

void *
gpu_cmd_host_ptr(const struct gpu_cmd *cmd, const struct gpu_tensor *t)
{
	if (t == NULL || !cmd->ctx->host_gemm || t->buf->mapped == NULL)
		return NULL;
	return (char *)t->buf->mapped + t->offset;
}

enum lq_status
gpu_cmd_host(struct gpu_cmd *cmd, const struct gpu_host_op *op,
    const char *opname)
{
	if (cmd->error.status != LQ_OK)
		return cmd->error.status;
	if (!cmd->recording)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-STATE",
		    "%s: recording without gpu_cmd_begin", opname);
	if (op->M > INT32_MAX || op->N > INT32_MAX || op->K > INT32_MAX ||
	    op->ldc > INT32_MAX || op->Nk > INT32_MAX || op->lda > INT32_MAX ||
	    op->ldb > INT32_MAX || op->ldv > INT32_MAX)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: %" PRId64 "×%" PRId64 "×%" PRId64 " exceeds the host "
		    "GEMM's int dimensions", opname, op->M, op->N, op->K);
	if (cmd->nhops == cmd->caphops) {
		cmd->caphops = cmd->caphops ? cmd->caphops * 2 : 16;
		cmd->hops = xrealloc(cmd->hops, (size_t)cmd->caphops *
		    sizeof(*cmd->hops));
	}
	/* profiled (profile.c), each host op alone in its segment */
	const struct gpu_seg *cur = &cmd->segs[cmd->nsegs - 1];
	if (cmd->ctx->profile.on && cur->nhop > 0 &&
	    (seg_end(cmd) != LQ_OK || seg_start(cmd) != LQ_OK))
		return cmd->error.status;
	cmd->hops[cmd->nhops] = *op;
	cmd->hops[cmd->nhops].prec = (unsigned)cmd->precision;
	cmd->hops[cmd->nhops++].opname = opname;
	cmd->segs[cmd->nsegs - 1].nhop++;
	cmd->host_ops++;
	return LQ_OK;
}

unsigned
gpu_cmd_host_op_count(const struct gpu_cmd *cmd)
{
	return cmd->host_ops;
}
