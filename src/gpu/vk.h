/*
 * vk.h — private to src/gpu: the Vulkan objects behind gpu.h's opaque
 * handles (context, buffer, pool, command) and the helpers the runtime's
 * files share.  The runtime is split along its parts:
 *   device.c   errors, instance and device selection, caps, the context,
 *              the pipeline cache and the pipelines
 *   buffer.c   device buffers and their staged host transfers
 *   tensor.c   tensor views (pure: no Vulkan, no device)
 *   pool.c     the activation pool
 *   cmd.c      command recording, automatic barriers and dispatch
 * Only src/gpu includes vulkan.h (tools/check-includes.sh).
 */
#ifndef LQ_GPU_VK_H
#define LQ_GPU_VK_H

#include <vulkan/vulkan.h>

#include "core/digest.h"
#include "gpu/internal.h"

struct gpu_pipeline {
	VkShaderModule module;
	VkDescriptorSetLayout dsl;
	VkPipelineLayout layout;
	VkPipeline pipeline;
};

/* LATENTQ_GPU_PROFILE=1 (profile.c): time per op name and kind */
#define GPU_PROFILE_ROWS 96
struct gpu_profile_row {
	const char *op;		/* the op's static name ("ops_rms_norm") */
	int host;		/* a host op (host.c), not a dispatch */
	unsigned calls;
	double ms;
};
struct gpu_profile {
	int on;
	int n;
	struct gpu_profile_row rows[GPU_PROFILE_ROWS];
};

struct gpu_ctx {
	VkInstance instance;
	VkDebugUtilsMessengerEXT messenger;
	VkPhysicalDevice phys;
	VkDevice device;
	VkQueue queue;
	uint32_t queue_family;
	VkCommandPool pool;
	VkPipelineCache cache;
	struct device_caps caps;
	VkPhysicalDeviceMemoryProperties memprops;
	unsigned validation_messages;
	/* The caller's cache io, copied at create: opts (and the io it
	 * points at) may be stack objects gone before gpu_ctx_free saves.
	 * cache_io points at cache_io_copy, or is NULL for no persistence. */
	struct gpu_cache_io cache_io_copy;
	const struct gpu_cache_io *cache_io;
	int cache_loaded;		/* 1 accepted, 0 none, -1 dropped */
	int cache_dirty;
	unsigned pipelines_created;
	char fingerprint[DIGEST_HEX_SIZE];
	char variant[256];		/* gpu_ctx_variant */
	struct gpu_pipeline pipes[GPU_K_COUNT];
	struct gpu_buffer *dummy;
	struct gpu_buffer *staging;	/* for non-host-visible buffers */
	struct gpu_cmd *xfer;		/* transfer command for staging */
	int tex_ok[GPU_TEX_COUNT];	/* format usable as uniform texel buffer */
	uint64_t max_texels;		/* maxTexelBufferElements */
	uint64_t min_texel_align;	/* minTexelBufferOffsetAlignment */
	/* device memory of buffers other than staging (vkAllocateMemory
	 * sizes): now, and the high-water mark (gpu_ctx_memory) */
	uint64_t mem_live, mem_peak;
	/* the CPU-device fast path (host.c): on or not, its variant string
	 * (gpu_ctx_gemm_variant, in gpu_ctx_variant), the op's shared host
	 * scratch: f16/bf16 weights (0), biases (1) and attention key
	 * biases (2) decoded to f32, and each of the host_threads threads'
	 * own scratch (host.c's struct gpu_host_tls: padded panels,
	 * scores, im2col columns) */
	int host_gemm, host_threads;
	int subgroup;		/* norm_sg and linear_gemv_sg (device.c) */
	char gemm_variant[128];
#define GPU_HOST_SCRATCH 3
	float *host_scratch[GPU_HOST_SCRATCH];
	size_t host_scratch_n[GPU_HOST_SCRATCH];
	struct gpu_host_tls *host_tls;	/* [host_threads] */
	struct gpu_profile profile;
};

struct gpu_buffer {
	struct gpu_ctx *ctx;
	VkBuffer buffer;
	VkDeviceMemory memory;
	size_t size;		/* as asked */
	size_t alloc;		/* rounded */
	uint64_t counted;	/* bytes in ctx->mem_live (0 for staging) */
	void *mapped;		/* non-NULL when host-visible + coherent */
};

struct gpu_pool_chunk {
	struct gpu_buffer *buf;
	size_t base;		/* pool-global offset of this chunk */
};

struct gpu_pool {
	struct gpu_ctx *ctx;
	struct gpu_pool_chunk *chunks;
	int nchunks;
	size_t capacity, fill, peak;
};

struct gpu_range {
	VkBuffer buffer;
	VkDeviceSize lo, hi;
};

/*
 * A segment of a recording: the dispatches in its command buffer, then
 * host ops [first_hop, first_hop + nhop) once that buffer has run.
 */
struct gpu_seg {
	VkCommandBuffer cb;
	unsigned dispatches;
	int first_hop, nhop;
	const char *op;		/* its last dispatch's op (profile.c) */
};

struct gpu_cmd {
	struct gpu_ctx *ctx;
	VkCommandBuffer cb;		/* the segment being recorded */
	VkFence fence;
	VkDescriptorPool *dpools;
	int ndpools, dpool_cur;
	int recording;
	struct lq_error error;		/* sticky */
	unsigned dispatches;
	struct gpu_range *reads, *writes;
	int nreads, nwrites, capreads, capwrites;
	VkBufferView *views;		/* destroyed at the next begin */
	int nviews, capviews;
	struct gpu_buffer *scratch;	/* split state (gpu_cmd_scratch) */
	struct gpu_buffer **retired;	/* outgrown scratch, freed at begin */
	int nretired;
	int pending;			/* submitted, not yet waited for */
	/* segments (cut at host ops); segs[0].cb is allocated at create,
	 * later ones on first need and kept for later recordings */
	struct gpu_seg *segs;
	int nsegs, capsegs, ncbs;	/* in use, allocated slots, cbs made */
	VkCommandBuffer *cbs;		/* ncbs command buffers */
	struct gpu_host_op *hops;
	int nhops, caphops;
	unsigned host_ops;		/* recorded since begin */
	int fence_busy;			/* a segment was submitted with fence */
	double submitted_ms;		/* when segment 0 was (profile.c) */
	enum gpu_precision precision;	/* gpu_cmd_set_precision */
};

/* Vulkan format and bytes of each texel format (device.c). */
extern const VkFormat gpu_texfmt_vk[GPU_TEX_COUNT];
extern const uint32_t gpu_texfmt_size[GPU_TEX_COUNT];

/* What the runtime needs of each kernel: kernels.def's row (device.c). */
struct gpu_kernel_info {
	const char *spv;	/* embedded SPIR-V name, "ew.spv" */
	int nbind;		/* storage/texel bindings */
	uint32_t push;		/* push-constant bytes */
	unsigned texmask;	/* bindings that are texel buffers */
};
extern const struct gpu_kernel_info gpu_kernel_info[GPU_K_COUNT];

/*
 * Maps a failed VkResult onto a graded error naming the call: device loss
 * and memory exhaustion LQ_RETRY (LQ-GPU-LOST, LQ-GPU-OOM), anything else
 * LQ_FAILED (LQ-GPU-VK).  Returns the status.
 */
enum lq_status gpu_vk_fail(struct lq_error *err, VkResult r,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Creates a buffer of at least `bytes` (gpu_buffer_plan_size): staging, a
 * host-visible one for transfers; else the first memory type that
 * allocates of host-visible device-local, device-local, host-visible, and
 * mapped when host-visible (unless LATENTQ_GPU_FORCE_STAGING=1).  *out is
 * the caller's, freed with gpu_buffer_destroy (gpu_buffer_free for the
 * public ones).  Errors: LQ-GPU-RANGE (over maxMemoryAllocationSize),
 * LQ-GPU-OOM (retry), LQ-GPU-VK.
 */
enum lq_status gpu_buffer_new(struct gpu_ctx *ctx, size_t bytes,
    int staging, struct gpu_buffer **out, struct lq_error *err);
void gpu_buffer_destroy(struct gpu_buffer *b);

/*
 * The pipeline of kernel k, created on first use from its embedded SPIR-V
 * through the context's pipeline cache; *out is the context's.
 */
enum lq_status gpu_pipeline_get(struct gpu_ctx *ctx, enum gpu_kernel k,
    struct gpu_pipeline **out, struct lq_error *err);

/*
 * LATENTQ_GPU_PROFILE (profile.c): set in the environment and not "0";
 * the monotonic clock in ms; one timed call of op (a static string) added
 * to ctx's totals; the totals printed to stderr (gpu_ctx_free does, when
 * ctx->profile.on).
 */
int gpu_profile_wanted(void);
double gpu_profile_now_ms(void);
void gpu_profile_add(struct gpu_ctx *ctx, const char *op, int host,
    double ms);
void gpu_profile_print(struct gpu_ctx *ctx);

#endif
