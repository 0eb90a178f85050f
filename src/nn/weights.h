/*
 * weights.h — a model component's weights on the device, uploaded once.
 *
 * nn_weights_load opens a component's safetensors (one file, a sharded
 * index or a folder, via st_set_open), uploads every floating-point tensor
 * whose name starts with a prefix, as stored (F32, F16 or BF16; F64 is
 * converted to F32), packed into a few large device buffers, and keeps the
 * mapping open for host reads of small tensors (scalars, buffers such as
 * the VAE's latents_mean).
 *
 * Ownership: the nn_weights owns its device buffers and the mapping; the
 * gpu_tensor views and st_tensor pointers it hands out are borrowed and
 * valid until nn_weights_free.  The gpu context must outlive it.
 */
#ifndef LQ_NN_WEIGHTS_H
#define LQ_NN_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/plan.h"

struct nn_weights;

/*
 * Loads `path` (file, *.safetensors.index.json or folder) and uploads the
 * float tensors whose names start with `prefix` (NULL or "" = all).
 * LQ_FAILED with the safetensors error when the set does not open;
 * LQ_RETRY (LQ-GPU-OOM) when the device is out of memory.  On error *out is
 * NULL and nothing is left allocated.
 */
/*
 * LoRAs to fuse into a component's weights at load: every 2-D weight that
 * one of them changes is read as float32, fused on the CPU
 * (model/lora.h lora_fuse_weight: W += scale * alpha/r * B @ A) and
 * uploaded as F32.  Borrowed for the call.
 */
struct nn_lora_set {
	struct lora *const *loras;
	const double *scales;
	size_t n;
	int fused;		/* out: LoRA pairs applied */
};

/* nn_weights_load with LoRAs fused (loras may be NULL). */
enum lq_status nn_weights_load_fused(struct gpu_ctx *ctx, const char *path,
    const char *prefix, struct nn_lora_set *loras, struct nn_weights **out,
    struct lq_error *err);

enum lq_status nn_weights_load(struct gpu_ctx *ctx, const char *path,
    const char *prefix, struct nn_weights **out, struct lq_error *err);

/*
 * The device bytes nn_weights_load_fused(ctx, path, prefix, loras) would
 * allocate for `set` on a device with `caps` (NULL: 256-byte alignment,
 * 1 GiB buffers), from the headers only: the same packing, the same
 * dtypes (LoRA targets as F32).  With `block_prefix` (e.g.
 * "transformer_blocks.") also the per-block sizes weight streaming needs.
 * Never fails today (LQ_OK); `out` is zeroed first.
 */
enum lq_status nn_weights_plan(const struct st_set *set, const char *prefix,
    const struct nn_lora_set *loras, const struct device_caps *caps,
    const char *block_prefix, struct nn_weights_layout *out);

/* Frees the device buffers and closes the mapping; NULL is ok. */
void nn_weights_free(struct nn_weights *w);

/*
 * The device view of tensor `name`, checked against `ndim` and `shape`
 * (shape entries < 0 match anything; shape NULL checks ndim only; ndim < 0
 * checks nothing).  LQ_FAILED LQ-NN-WMISS when absent (naming the file) or
 * LQ-NN-WSHAPE on a shape mismatch (naming both shapes); *out is then
 * zeroed.
 */
enum lq_status nn_weights_get(const struct nn_weights *w, const char *name,
    int ndim, const int64_t *shape, struct gpu_tensor *out,
    struct lq_error *err);

/* 1 when `name` was uploaded. */
int nn_weights_has(const struct nn_weights *w, const char *name);

/* The host (mapped) tensor `name` whatever its prefix, or NULL. */
const struct st_tensor *nn_weights_host(const struct nn_weights *w,
    const char *name);

/* Device bytes held (sum of buffer sizes). */
size_t nn_weights_device_bytes(const struct nn_weights *w);

/* Path the set was opened from (borrowed). */
const char *nn_weights_path(const struct nn_weights *w);

#endif
