/*
 * gpu.h — latentq's Vulkan compute runtime: devices, buffers, tensors, an
 * activation pool and command recording.  Kernels are in ops.h.
 *
 * Model of use:
 *
 *   struct gpu_ctx *ctx;   gpu_ctx_create(&opts, &ctx, &err);
 *   struct gpu_buffer *w;  gpu_buffer_create(ctx, bytes, &w, &err);
 *   struct gpu_tensor W = gpu_tensor_make(w, 0, GPU_F16, 2, (int64_t[]){out, in});
 *   gpu_tensor_upload(ctx, &W, host_f16_bytes, &err);     (or _upload_f32)
 *   struct gpu_pool *pool; gpu_pool_create(ctx, bytes, &pool, &err);
 *   struct gpu_tensor x, y;  gpu_pool_tensor(pool, GPU_F32, 2, shape, &x, &err) ...
 *   struct gpu_cmd *cmd;   gpu_cmd_create(ctx, &cmd, &err);
 *   gpu_cmd_begin(cmd);
 *   ops_linear(cmd, &y, &x, &W, NULL, OPS_ACT_NONE);    (records; see ops.h)
 *   ...many more ops...
 *   gpu_cmd_submit(cmd, &err);                          (runs and waits)
 *   gpu_tensor_download_f32(ctx, &y, host, &err);
 *
 * Recording: ops append dispatches to a command buffer; barriers between
 * dependent dispatches are inserted automatically (hazards are tracked per
 * buffer range), so a whole transformer step can be one submit.  Ops check
 * shapes when recording; a failure is kept in the command ("sticky error"):
 * later ops are skipped and gpu_cmd_submit returns the first error.
 *
 * Upload/download are synchronous and immediate: they happen when called,
 * not in recording order, so call them between submits.
 *
 * Ownership: every object created here is owned by the caller and freed with
 * its _free function, in reverse order of creation (buffers, pools and
 * commands before their context).  A `struct gpu_tensor` is a plain value
 * view: it borrows its buffer and is never freed.
 *
 * Errors: every Vulkan call is checked and a failure names the call and its
 * arguments.  VK_ERROR_DEVICE_LOST and VK_ERROR_OUT_OF_DEVICE_MEMORY /
 * OUT_OF_HOST_MEMORY come back as LQ_RETRY (code LQ-GPU-LOST / LQ-GPU-OOM);
 * other Vulkan failures are LQ_FAILED (LQ-GPU-VK); misuse such as a shape
 * mismatch is LQ_FAILED (LQ-GPU-SHAPE).  A tensor may be larger than the
 * device's maxStorageBufferRange: ops split it (ops.h); a tensor larger
 * than one buffer (device_caps_max_tensor), or a part an op cannot split
 * further, is LQ_FAILED (LQ-GPU-RANGE) naming the tensor and the limit.
 *
 * Environment:
 *   LATENTQ_DEVICE=N|NAME[,...]  device by slot index or case-insensitive
 *                              name substring when opts->device is NULL
 *                              (a list names a mesh's devices; a ctx
 *                              opens the first, gpu_devices_match)
 *   LATENTQ_LOGICAL_DEVICES=N  each physical device is N logical devices
 *                              (slots; gpu_logical_devices)
 *   LATENTQ_VALIDATE=1         enable VK_LAYER_KHRONOS_validation and count
 *                              its messages (gpu_ctx_validation_messages)
 *   LATENTQ_NO_PIPELINE_CACHE=1  never load or save the pipeline cache
 *   LATENTQ_NO_TEXEL=1         read through storage buffers only (no
 *                              texel-buffer fast paths; for debugging)
 *   LATENTQ_GPU_HEAP_LIMIT=BYTES (tests) report no memory heap larger
 *                              than BYTES in the device caps (what
 *                              preflight and vae_tiling: auto plan with)
 *   LATENTQ_GPU_FORCE_STAGING=1  (tests) treat device memory as not
 *                              host-visible, so transfers use staging
 *   LATENTQ_GPU_HOST_GEMM=0|1  ops_linear / _matmul / _attention as host GEMMs
 *                              (gpu/host.c, on mapped buffers) or shaders;
 *                              unset: host GEMMs when the device type is
 *                              "cpu" (gpu_ctx_gemm_variant)
 *   LATENTQ_GEMM_THREADS=N     threads of the host GEMMs
 *                              (default 2, a constant, not the cores)
 *   LATENTQ_GPU_MAX_BINDING=BYTES  (tests) lower the device's
 *                              maxStorageBufferRange to BYTES (>= 256) in
 *                              its caps, so ops split smaller tensors
 *
 * Threads: a ctx and everything made from it are used by one thread.
 *
 * Determinism: every kernel has a fixed reduction order and uses no float
 * atomics; the same inputs on the same device give bitwise-equal outputs.
 */
#ifndef LQ_GPU_GPU_H
#define LQ_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/caps.h"

#define GPU_MAX_DIMS 6

/* The values are the kernels' (shaders/abi.h, shared with GLSL). */
#include "../../shaders/abi.h"
enum gpu_dtype {
	GPU_F32 = LQ_DT_F32,
	GPU_F16 = LQ_DT_F16,
	GPU_BF16 = LQ_DT_BF16,
};

/* Bytes per element (4 or 2). */
size_t gpu_dtype_size(enum gpu_dtype dtype);
/* "f32", "f16", "bf16". */
const char *gpu_dtype_name(enum gpu_dtype dtype);

/*
 * Pipeline-cache persistence, implemented by the caller (the store keeps the
 * blobs in the queue database; tests use memory).  `fingerprint` is a hex
 * digest of device UUID + driver version + SPIR-V digest + latentq version
 * + the resolved kernel variants (gpu_ctx_variant);
 * a changed fingerprint simply finds nothing.  load returns LQ_OK with a
 * malloc'd blob (gpu frees it) or LQ_OK with *blob = NULL when absent; any
 * other status is logged as a warning and the cache is not used.  A blob
 * that Vulkan rejects or whose header does not match the device is dropped
 * with a warning.  save is called once, from gpu_ctx_free (and
 * gpu_ctx_save_cache), only when the cache content changed.
 */
struct gpu_cache_io {
	enum lq_status (*load)(void *ud, const char *fingerprint, void **blob,
	    size_t *n);
	enum lq_status (*save)(void *ud, const char *fingerprint,
	    const void *blob, size_t n);
	void *ud;
};

struct gpu_ctx_opts {
	/* Device: decimal index or case-insensitive name substring; NULL
	 * reads LATENTQ_DEVICE; neither set: the first discrete GPU, else
	 * integrated, else the first device. */
	const char *device;
	/* Validation layer: 0 = LATENTQ_VALIDATE decides, 1 = on, -1 = off. */
	int validate;
	/* Pipeline cache I/O, may be NULL (no persistence).  The struct is
	 * copied by gpu_ctx_create (it may be a stack object); its ud must
	 * stay valid until gpu_ctx_free, which saves through it. */
	const struct gpu_cache_io *cache;
};

struct gpu_ctx;		/* instance + device + queue + pipelines */
struct gpu_buffer;	/* one device buffer */
struct gpu_pool;	/* activation arena */
struct gpu_cmd;		/* a command recording */

/*
 * Lists every physical device's caps without creating a logical device
 * (what `latentq devices` prints).  *out is a caller-owned array (free())
 * of *n entries.  LQ_FAILED (LQ-GPU-NODEV) when Vulkan has no instance or
 * no device.
 */
enum lq_status gpu_devices_list(struct device_caps **out, int *n,
    struct lq_error *err);

/*
 * Device slots.  Every physical device is LATENTQ_LOGICAL_DEVICES (1 to
 * GPU_MAX_LOGICAL_DEVICES, default 1) logical devices: physical i's are
 * slots i*L .. i*L+L-1, each its own VkDevice with its own memory, queue
 * and pools when opened (gpu_ctx_create), all with physical i's caps.
 * Slots are what gpu_devices_list lists, what caps.index and
 * caps.device_count count, and what --device indices name.  This is how
 * a device mesh (issue 16) runs on one GPU or on lavapipe.
 */
#define GPU_MAX_LOGICAL_DEVICES 16
int gpu_logical_devices(void);

/*
 * The device slots a --device spec names, in order: a comma list of slot
 * indices and case-insensitive name substrings (a name names every slot
 * whose name holds it); NULL or "" names every slot, discrete before
 * integrated before the others.  A slot named twice counts once.  Writes
 * the first `max` into slots[] and returns how many the spec names (may
 * exceed max); -1 when an entry names no device (LQ_FATAL, LQ-GPU-NODEV,
 * field "device", the hint listing the available ones).  Pure: `all` is
 * gpu_devices_list's array of n.
 */
int gpu_devices_match(const struct device_caps *all, int n, const char *spec,
    int *slots, int max, struct lq_error *err);

/*
 * 1 when a and b are devices of one kind (vendor and device id, name and
 * driver version): a mesh's devices must be, so every device runs the same
 * kernels to the same bits and a mesh checkpoint resumes on its kind.
 */
int gpu_devices_same_kind(const struct device_caps *a,
    const struct device_caps *b);

/*
 * The devices a job may run on together: of the slots `spec` names
 * (gpu_devices_match's order), the first and every later one of its kind
 * (gpu_devices_same_kind).  Writes the first `max` into slots[] and
 * returns how many there are; *others (may be NULL) gets how many named
 * slots were left out for being of another kind.  -1 as
 * gpu_devices_match.  Preflight (the host's device count) and the render
 * (the mesh it opens) both choose with it, so they agree.  Pure.
 */
int gpu_devices_select(const struct device_caps *all, int n, const char *spec,
    int *slots, int max, int *others, struct lq_error *err);

/*
 * Creates the instance, picks the device (opts->device), creates the
 * logical device, a compute queue and the command pool; pipelines are
 * created lazily on first use (loading the pipeline cache first).
 * `opts` may be NULL (= all zero: env decides).  On error *out is
 * NULL and nothing is left allocated.  An unknown device name fails with
 * LQ_FAILED (LQ-GPU-NODEV) listing the available devices.
 */
enum lq_status gpu_ctx_create(const struct gpu_ctx_opts *opts,
    struct gpu_ctx **out, struct lq_error *err);

/* Saves the pipeline cache if changed, waits idle, destroys.  NULL is ok. */
void gpu_ctx_free(struct gpu_ctx *ctx);

/* Caps of the chosen device (borrowed, lives as long as ctx). */
const struct device_caps *gpu_ctx_caps(const struct gpu_ctx *ctx);

/* Validation messages (warnings and errors) seen so far; 0 without layer. */
unsigned gpu_ctx_validation_messages(const struct gpu_ctx *ctx);

/*
 * Where GEMM-shaped work (ops_linear, ops_matmul, ops_attention,
 * ops_conv3d) runs on
 * this ctx, borrowed: "shader", or on a CPU device (lavapipe) whose
 * memory is host memory "host-gemm:6x16 fma|mul-add t=<threads>
 * conv3d=im2col" (host.c's GEMM on the mapped buffers: its tile, its
 * steps, its threads; conv3d through it).  It
 * is part of gpu_ctx_variant ("gemm=..."), so of the pipeline-cache
 * fingerprint and of the device fingerprint a checkpoint records: a
 * render resumes only under the same path.
 */
const char *gpu_ctx_gemm_variant(const struct gpu_ctx *ctx);

/* The pipeline-cache fingerprint of this ctx (hex, borrowed): the device
 * UUID, driver version, SPIR-V digest, latentq version and
 * gpu_ctx_variant. */
const char *gpu_ctx_cache_fingerprint(const struct gpu_ctx *ctx);

/*
 * The kernel variants this ctx resolved to at create, as one line
 * ("texel=MASK/MAX binding=BYTES": the texel-buffer formats the fast
 * paths may use, none under LATENTQ_NO_TEXEL, and the binding size
 * tensors split at, LATENTQ_GPU_MAX_BINDING).  Part of the cache
 * fingerprint and of a render's device fingerprint (borrowed).
 */
const char *gpu_ctx_variant(const struct gpu_ctx *ctx);


/* Saves the pipeline cache now if it changed (no-op without cache io). */
enum lq_status gpu_ctx_save_cache(struct gpu_ctx *ctx, struct lq_error *err);

/* Pipelines created / loaded-from-cache counters (for tests). */
void gpu_ctx_pipeline_stats(const struct gpu_ctx *ctx, unsigned *created,
    int *cache_loaded);

/* ---- buffers ---- */

/*
 * Creates a device buffer of `bytes` (> 0) for storage use, device-local
 * where possible.  LQ_RETRY (LQ-GPU-OOM) when memory is short, LQ_FAILED
 * (LQ-GPU-RANGE) when bytes exceeds maxMemoryAllocationSize.
 */
enum lq_status gpu_buffer_create(struct gpu_ctx *ctx, size_t bytes,
    struct gpu_buffer **out, struct lq_error *err);
void gpu_buffer_free(struct gpu_buffer *buf);
size_t gpu_buffer_size(const struct gpu_buffer *buf);

/* Bytes gpu_buffer_create(bytes) asks Vulkan for (rounded up to 256);
 * pure, for memory plans. */
uint64_t gpu_buffer_plan_size(uint64_t bytes);

/*
 * Device memory held by this context's buffers (weights, pools, tensors;
 * every vkAllocateMemory size except the transfer staging buffer, which
 * is host memory): `live` now, `peak` the high-water mark since creation
 * or the last gpu_ctx_memory_reset_peak.  Either pointer may be NULL.
 * This is the measured `peak_device_bytes` a render records.
 */
void gpu_ctx_memory(const struct gpu_ctx *ctx, uint64_t *live,
    uint64_t *peak);
void gpu_ctx_memory_reset_peak(struct gpu_ctx *ctx);

/* Copies host bytes into buf[offset, offset+n) now (staged if needed). */
enum lq_status gpu_buffer_upload(struct gpu_ctx *ctx, struct gpu_buffer *buf,
    size_t offset, const void *src, size_t n, struct lq_error *err);
/* Copies buf[offset, offset+n) to host now. */
enum lq_status gpu_buffer_download(struct gpu_ctx *ctx,
    const struct gpu_buffer *buf, size_t offset, void *dst, size_t n,
    struct lq_error *err);

/* ---- tensors ---- */

/*
 * A view: element (i0..i{n-1}) lives at byte
 *   offset + (sum_k i_k * stride[k]) * gpu_dtype_size(dtype)
 * Strides are in elements, may be 0 (broadcast).  shape[k] >= 1.
 * Unused trailing shape entries are 1, strides 0.
 */
struct gpu_tensor {
	struct gpu_buffer *buf;
	size_t offset;			/* bytes */
	enum gpu_dtype dtype;
	int ndim;			/* 1..GPU_MAX_DIMS */
	int64_t shape[GPU_MAX_DIMS];
	int64_t stride[GPU_MAX_DIMS];	/* elements */
};

/* A contiguous (row-major) view of buf at byte offset. */
struct gpu_tensor gpu_tensor_make(struct gpu_buffer *buf, size_t offset,
    enum gpu_dtype dtype, int ndim, const int64_t *shape);
int64_t gpu_tensor_numel(const struct gpu_tensor *t);
/* Bytes of a contiguous tensor of this shape and dtype. */
size_t gpu_tensor_nbytes(const struct gpu_tensor *t);
/* 1 when strides are row-major contiguous. */
int gpu_tensor_is_contiguous(const struct gpu_tensor *t);
/* Same data, new shape (same numel); t must be contiguous (LQ_ASSERT). */
struct gpu_tensor gpu_tensor_reshape(const struct gpu_tensor *t, int ndim,
    const int64_t *shape);
/* View of [start, start+len) along dim (no copy; may be non-contiguous). */
struct gpu_tensor gpu_tensor_slice(const struct gpu_tensor *t, int dim,
    int64_t start, int64_t len);
/* View with dims reordered: result dim k = t's dim perm[k] (no copy). */
struct gpu_tensor gpu_tensor_permute(const struct gpu_tensor *t,
    const int *perm);
/*
 * View broadcast to `shape` (ndim >= t->ndim; t's dims align to the right,
 * size-1 dims get stride 0), numpy rules; LQ_ASSERT on mismatch.
 */
struct gpu_tensor gpu_tensor_broadcast(const struct gpu_tensor *t, int ndim,
    const int64_t *shape);
/* "f32[2,72,32]" into buf; returns buf. */
char *gpu_tensor_describe(const struct gpu_tensor *t, char *buf, size_t n);

/*
 * Upload/download a whole tensor now.  _upload/_download move raw bytes in
 * the tensor's dtype; _f32 variants convert from/to float (round to nearest
 * even for F16/BF16).  Views must be contiguous.
 */
enum lq_status gpu_tensor_upload(struct gpu_ctx *ctx,
    const struct gpu_tensor *t, const void *src, struct lq_error *err);
enum lq_status gpu_tensor_download(struct gpu_ctx *ctx,
    const struct gpu_tensor *t, void *dst, struct lq_error *err);
enum lq_status gpu_tensor_upload_f32(struct gpu_ctx *ctx,
    const struct gpu_tensor *t, const float *src, struct lq_error *err);
enum lq_status gpu_tensor_download_f32(struct gpu_ctx *ctx,
    const struct gpu_tensor *t, float *dst, struct lq_error *err);

/* ---- activation pool ---- */

/*
 * An arena of device memory for activations: tensors are carved out in
 * order (aligned to minStorageBufferOffsetAlignment) and released together
 * by resetting to a mark, so a model step allocates nothing.  Capacity is
 * fixed at creation; internally it may span several buffers (each at most
 * device_caps_max_tensor bytes); a single tensor never spans two, but may
 * be larger than one binding (ops split it).
 */
enum lq_status gpu_pool_create(struct gpu_ctx *ctx, size_t bytes,
    struct gpu_pool **out, struct lq_error *err);
void gpu_pool_free(struct gpu_pool *pool);
/*
 * The capacity (device bytes, as gpu_pool_create allocates it) a pool on a
 * device with `caps` needs so that tensors of bytes[0..n) carved in that
 * order all fit: each aligned to 256, none spanning two of the pool's
 * buffers (min(maxMemoryAllocationSize, 1 GiB) each).  Pure: memory plans
 * (nn/plan.h) and the models' _reserve size pools with it; pass the result
 * to gpu_pool_create.
 */
uint64_t gpu_pool_plan(const struct device_caps *caps, const uint64_t *bytes,
    int n);
/*
 * Carves a contiguous tensor.  LQ_FAILED (LQ-GPU-POOL) when the pool is
 * full (message gives the pool size and the bytes asked), LQ-GPU-RANGE when
 * the tensor exceeds one buffer (device_caps_max_tensor); *out is then
 * zeroed.
 */
enum lq_status gpu_pool_tensor(struct gpu_pool *pool, enum gpu_dtype dtype,
    int ndim, const int64_t *shape, struct gpu_tensor *out,
    struct lq_error *err);
/* Current fill (bytes), to pass to gpu_pool_reset later. */
size_t gpu_pool_mark(const struct gpu_pool *pool);
/* Releases everything carved after `mark`. */
void gpu_pool_reset(struct gpu_pool *pool, size_t mark);
/* Highest fill seen (bytes): size pools from a dry run. */
size_t gpu_pool_peak(const struct gpu_pool *pool);
size_t gpu_pool_capacity(const struct gpu_pool *pool);

/* ---- command recording ---- */

enum lq_status gpu_cmd_create(struct gpu_ctx *ctx, struct gpu_cmd **out,
    struct lq_error *err);
void gpu_cmd_free(struct gpu_cmd *cmd);
/* Starts a new recording (clears the sticky error and descriptor sets). */
void gpu_cmd_begin(struct gpu_cmd *cmd);
/*
 * Ends the recording, submits it and waits for completion.  Returns the
 * sticky error of the recording if any (nothing is submitted then), else
 * the result of submission (LQ_RETRY on device loss / OOM).
 */
enum lq_status gpu_cmd_submit(struct gpu_cmd *cmd, struct lq_error *err);
/*
 * gpu_cmd_submit in two halves, so the host can work while the device
 * runs (weight streaming uploads the next block meanwhile): submit_async
 * ends the recording and submits it (errors as gpu_cmd_submit); wait
 * waits for it (LQ_OK at once when nothing is pending).  Between the two,
 * the command may not be begun again, and nothing it reads may change.
 */
enum lq_status gpu_cmd_submit_async(struct gpu_cmd *cmd, struct lq_error *err);
enum lq_status gpu_cmd_wait(struct gpu_cmd *cmd, struct lq_error *err);
/* The sticky error so far (LQ_OK if none); copied into err if not NULL. */
enum lq_status gpu_cmd_status(const struct gpu_cmd *cmd, struct lq_error *err);
/* Dispatches recorded since gpu_cmd_begin (for benchmarks/tests). */
unsigned gpu_cmd_dispatch_count(const struct gpu_cmd *cmd);
/* Host GEMMs recorded since gpu_cmd_begin (the CPU-device fast path,
 * gpu_ctx_gemm_variant; for benchmarks/tests). */
unsigned gpu_cmd_host_op_count(const struct gpu_cmd *cmd);
struct gpu_ctx *gpu_cmd_ctx(const struct gpu_cmd *cmd);

/*
 * The operand precision of the GEMM-shaped ops a command records
 * (ops_linear, ops_matmul, ops_attention; the job key `precision`,
 * latentq-manifest(5)): GPU_PRECISION_F32 reads the operands as they are;
 * BF16 / F16 round both operands of every product to the nearest bfloat16
 * / binary16 (ties to even) and keep fp32 sums, outputs and everything
 * else (abi.h LQ_PREC_*: attention rounds q, k, v and the softmax
 * numerators).  ops_linear and ops_matmul give, on both paths (shaders
 * and the CPU-device host GEMM), the bits of a plain sum over k in order
 * of the rounded operands; attention agrees within rounding.  On the
 * shaders a reduced precision runs the generic matmul and attention
 * kernels' rounding copies (kernels.def's _R rows), not the register-
 * tiled linear.comp / attn_tex.comp, so it is slower there for now; where
 * the device takes the subgroup kernels, attn_sg rounds itself.  Other ops
 * (convolutions, norms, elementwise) ignore it.  A command starts at F32
 * and keeps its precision across gpu_cmd_begin; ops read it as they are
 * recorded.  Measured against the float32 goldens (tests/nn/precision.sh):
 * bf16 within 2^-7 and f16 within 2^-10 of a transformer output's
 * largest magnitude.
 */
enum gpu_precision {
	GPU_PRECISION_F32 = LQ_PREC_F32,
	GPU_PRECISION_BF16 = LQ_PREC_BF16,
	GPU_PRECISION_F16 = LQ_PREC_F16,
};
void gpu_cmd_set_precision(struct gpu_cmd *cmd, enum gpu_precision p);
enum gpu_precision gpu_cmd_precision(const struct gpu_cmd *cmd);
#define GPU_PRECISION_COUNT 3
/* "f32", "bf16", "f16" (the job key's values, in enum order; NULL for
 * another value); parse returns 0, or -1 for any other string or NULL. */
const char *gpu_precision_name(enum gpu_precision p);
int gpu_precision_parse(const char *s, enum gpu_precision *out);
/* "f32, bf16 or f16" (every name, for messages) into buf of n bytes;
 * returns buf. */
char *gpu_precision_list(char *buf, size_t n);

/*
 * Creates every pipeline a job at precision p may use now (instead of
 * lazily) so compile crashes happen up front: every kernel, less the
 * copies that round operands when p is GPU_PRECISION_F32 (they would
 * double lavapipe's compile time for nothing) and the subgroup or plain
 * twins of the reductions this device does not take (LATENTQ_GPU_SUBGROUP,
 * latentq(1)); then saves the cache
 * through cache io if it changed.
 */
enum lq_status gpu_ctx_warmup(struct gpu_ctx *ctx,
    enum gpu_precision p, struct lq_error *err);

#endif
