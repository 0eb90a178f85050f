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
 * Weight streaming (weights larger than the device; stable-diffusion.cpp's
 * --offload-to-cpu, LTX-2's layer streaming).  Tensors named
 * `group_prefix` + decimal index + "." (the transformer's
 * "transformer_blocks.<i>.") form group i: they are not uploaded at load
 * but stay in host memory (the safetensors mapping, F16/BF16 as stored;
 * only LoRA-fused and F64 tensors are converted to F32 host copies), and
 * `nslots` device slots, each the size of the largest group, take group i
 * in slot i % nslots at the same offsets as any other group.  The views
 * nn_weights_get hands out for group i point into its slot, so a model
 * reads the same tensors either way; what changes is that group i's bytes
 * are there only after nn_weights_upload_group(w, i) and until group
 * i + nslots is uploaded.  With two slots, group i + 1 uploads while
 * group i computes (double buffering).
 */
struct nn_weights_stream {
	const char *group_prefix;	/* e.g. "transformer_blocks." */
	int nslots;			/* >= 1; 2 for double buffering */
};

/* Device and host bytes of a load (nn_weights_plan). */
struct nn_weights_bytes {
	size_t resident;	/* packed buffers of the tensors outside groups */
	size_t slot;		/* one slot: the largest group */
	size_t slots;		/* slots allocated (0 when nothing streams) */
	size_t device;		/* resident + slots · slot */
	size_t streamed_host;	/* bytes of all groups, kept in host memory */
	int groups;		/* groups found (0: nothing streams) */
	size_t largest;		/* the largest tensor uploaded, bytes */
	char largest_name[160];	/* its name */
	int has_16bit;		/* F16/BF16 tensors are uploaded as stored */
};

/*
 * The bytes nn_weights_load_streamed allocates for `set` (an open
 * safetensors set), from its headers alone, without a device: the same
 * layout function the loader uses (so a plan and a load cannot disagree).
 * stream NULL: everything resident.  caps NULL: 256-byte alignment and
 * buffers of DEVICE_CAPS_MAX_BUFFER (a plan without a device).  LQ_FAILED LQ-GPU-RANGE when a tensor
 * or a group is larger than one buffer of `caps`; *out is then zeroed.
 */
enum lq_status nn_weights_plan(const struct st_set *set, const char *prefix,
    const struct nn_weights_stream *stream, const struct device_caps *caps,
    struct nn_weights_bytes *out, struct lq_error *err);

/* nn_weights_load_fused with streaming (stream NULL: all resident). */
enum lq_status nn_weights_load_streamed(struct gpu_ctx *ctx, const char *path,
    const char *prefix, struct nn_lora_set *loras,
    const struct nn_weights_stream *stream, struct nn_weights **out,
    struct lq_error *err);

/* Group of a tensor name for `group_prefix` (see above), or -1. */
int nn_weights_group_of(const char *name, const char *group_prefix);

/* Groups streamed (0 when the load streams nothing). */
int nn_weights_groups(const struct nn_weights *w);

/*
 * Copies group `group`'s host bytes into its slot now (nothing when the
 * slot already holds it).  The caller makes sure no recorded or running
 * command still reads that slot for another group.  LQ_RETRY on device
 * loss; err's field names the tensor.
 */
enum lq_status nn_weights_upload_group(struct nn_weights *w, int group,
    struct lq_error *err);

/* Streaming figures: one slot's bytes, the groups' host bytes, and how
 * many group uploads have happened (tests, forward -v). */
void nn_weights_stream_stats(const struct nn_weights *w, size_t *slot_bytes,
    size_t *host_bytes, unsigned *uploads);

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

/* Device bytes held (sum of buffer sizes, slots included). */
size_t nn_weights_device_bytes(const struct nn_weights *w);

/* Path the set was opened from (borrowed). */
const char *nn_weights_path(const struct nn_weights *w);

#endif
