/*
 * ltxv_transformer.h — LTX-Video's denoising transformer on Vulkan, as
 * diffusers' LTXVideoTransformer3DModel (models/transformers/
 * transformer_ltx.py) computes it: proj_in, AdaLayerNormSingle timestep
 * embedding, PixArt caption projection, 3-D RoPE, the transformer blocks,
 * the final scale_shift_table modulation and proj_out.
 *
 * Use:
 *   ltxv_transformer_load(ctx, "model/transformer", &m, &err);
 *   [ltxv_transformer_set_context(m, group, rank, &err);  (a mesh, below)]
 *   ltxv_transformer_reserve(m, B, N, T, &err);     (allocates, once)
 *   for each step: ltxv_transformer_forward(m, &args, &out, NULL, &err);
 *   ltxv_transformer_free(m);
 * forward allocates nothing once reserve has been called for shapes at
 * least as large (it reserves itself on first use otherwise).
 *
 * Ownership: the model owns its weights (uploaded once at load, as stored:
 * F32/F16/BF16), its activation pool and its command recording.  Inputs and
 * the output are caller-owned device tensors (GPU_F32, contiguous) that must
 * not live in the model's pool.  The gpu context must outlive the model.
 */
#ifndef LQ_NN_LTXV_TRANSFORMER_H
#define LQ_NN_LTXV_TRANSFORMER_H

#include <stddef.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"
#include "nn/plan.h"
#include "nn/weights.h"

/* The config is model/diffusers.h's struct ltxv_transformer_config. */
struct ltxv_transformer;

/*
 * Reads `dir`/config.json, checks it, and uploads the weights of `dir`
 * (diffusion_pytorch_model*.safetensors).  Errors: LQ_FAILED with
 * LQ-NN-CONFIG naming the key for an unsupported or malformed config,
 * LQ-NN-WMISS / LQ-NN-WSHAPE for missing or misshapen weights, the
 * safetensors codes for a bad file; LQ_RETRY when the device is out of
 * memory.  On error *out is NULL and nothing is left allocated.
 */
enum lq_status ltxv_transformer_load(struct gpu_ctx *ctx, const char *dir,
    struct ltxv_transformer **out, struct lq_error *err);

/*
 * ltxv_transformer_load with LoRAs fused into its weights at load
 * (diffusers' LTXVideoLoraLoaderMixin.load_lora_weights + fuse_lora; see
 * nn/weights.h).  loras->fused gets the number of pairs applied.
 */
struct nn_lora_set;
enum lq_status ltxv_transformer_load_fused(struct gpu_ctx *ctx,
    const char *dir, struct nn_lora_set *loras,
    struct ltxv_transformer **out, struct lq_error *err);

/*
 * Weight streaming (issue 12 item 4): with `streaming`, the weights of
 * each transformer_blocks.<i> stay in host memory (the mapped safetensors,
 * F16/BF16 as stored) and are uploaded block by block into two device
 * slots, block i + 1 while block i computes (nn/weights.h); everything
 * else is resident.  The output is bit-identical to a resident run.  The
 * memory plan (nn/plan.h, nn_plan_render) decides; `weight_streaming:
 * auto|on|off` (enum nn_plan_choice) lets a job force it.
 */
struct ltxv_transformer_opts {
	int streaming;		/* 1: stream the blocks' weights */
};

/*
 * Reads `dir`/config.json with model/diffusers.h's parser (upstream
 * defaults, class and value checks), without loading anything.  Errors:
 * LQ-MODEL-* as diffusers_parse_transformer.
 */
enum lq_status ltxv_transformer_read_config(const char *dir,
    struct ltxv_transformer_config *c, struct lq_error *err);

/*
 * The transformer's weights in `set` (its safetensors headers) laid out
 * as the loader lays them on a device with `caps` (NULL: see
 * nn_weights_plan): all resident, and with the blocks streamed (two
 * slots).  Errors as nn_weights_plan (LQ-GPU-RANGE).
 */
enum lq_status ltxv_transformer_weights_layout(const struct st_set *set,
    const struct device_caps *caps, struct nn_weights_layout *out,
    struct lq_error *err);

/* ltxv_transformer_load_fused with options (opts NULL: all resident). */
enum lq_status ltxv_transformer_load_opts(struct gpu_ctx *ctx,
    const char *dir, struct nn_lora_set *loras,
    const struct ltxv_transformer_opts *opts, struct ltxv_transformer **out,
    struct lq_error *err);

/* 1 when the blocks' weights stream; one slot's bytes and the uploads so
 * far (either pointer may be NULL). */
int ltxv_transformer_streaming(const struct ltxv_transformer *m,
    size_t *slot_bytes, unsigned *uploads);

void ltxv_transformer_free(struct ltxv_transformer *m);

/*
 * The operand precision of the model's matrix products from its next
 * forward on (the job key `precision`; gpu_cmd_set_precision says what
 * it rounds).  A loaded model starts at GPU_PRECISION_F32.
 */
void ltxv_transformer_set_precision(struct ltxv_transformer *m,
    enum gpu_precision p);

/* The parsed config (borrowed). */
const struct ltxv_transformer_config *ltxv_transformer_config(
    const struct ltxv_transformer *m);

/*
 * Allocates the activation pool and host scratch for batch B, N video
 * tokens and T text tokens (a later call with larger shapes reallocates).
 * LQ_RETRY (LQ-GPU-OOM) when the device is out of memory.
 */
enum lq_status ltxv_transformer_reserve(struct ltxv_transformer *m, int B,
    int N, int T, struct lq_error *err);

struct ltxv_transformer_args {
	/* [B, N, in_channels] packed latents, token n = (f*H + h)*W + w. */
	const struct gpu_tensor *hidden_states;
	/* [B, T, caption_channels] text features (T5 last_hidden_state). */
	const struct gpu_tensor *encoder_hidden_states;
	/* Host [B]: per-sample timestep on the scheduler's 0..1000 scale. */
	const float *timestep;
	/* Host [B, N] per-token timesteps instead (LTXImageToVideoPipeline's
	 * `t * (1 - conditioning_mask)`: upstream's timestep of shape
	 * [B, N]), or NULL.  Tokens are grouped into runs of equal values,
	 * each embedded once. */
	const float *timestep_tokens;
	/* Host [B, T]: 1 = real token, 0 = padding; NULL = no mask (upstream
	 * turns it into the additive bias (1 - mask) * -10000). */
	const float *encoder_attention_mask;
	/* Latent grid; N must equal num_frames * height * width. */
	int num_frames, height, width;
	/* Host [3] = (vae_temporal_ratio / frame_rate, vae_spatial_ratio,
	 * vae_spatial_ratio), or NULL for upstream's None (unscaled grid). */
	const double *rope_interpolation_scale;
	/* Host [3, N] video_coords (LTXConditionPipeline's; the same for
	 * every sample), or NULL for the grid above; on a context rank the
	 * whole grid's, [3, P N].  When given, rope_interpolation_scale is
	 * not used (upstream ignores it). */
	const float *video_coords;
};

/*
 * One forward pass, LTXVideoTransformer3DModel.forward(hidden_states,
 * encoder_hidden_states, timestep, encoder_attention_mask, num_frames,
 * height, width, rope_interpolation_scale) with video_coords=None:
 * writes `output` [B, N, out_channels] (GPU_F32, contiguous).  Records and
 * submits on the model's own command and waits for it.  With `dump`, also
 * hands over the intermediates the goldens name (rope.out0/out1, proj_in,
 * time_embed.*, caption_projection, encoder_attention_bias,
 * transformer_blocks.<i>.norm1/attn1/attn2/ff, transformer_blocks.<i>,
 * norm_out, proj_out).  Errors: LQ_FAILED LQ-NN-SHAPE for inconsistent
 * shapes; device errors as gpu_cmd_submit reports them.  `output` is
 * undefined on error.
 */
enum lq_status ltxv_transformer_forward(struct ltxv_transformer *m,
    const struct ltxv_transformer_args *args, const struct gpu_tensor *output,
    const struct nn_dump *dump, struct lq_error *err);

/*
 * Context parallelism, Ulysses style (DeepSpeed-Ulysses; diffusers'
 * ContextParallelConfig(ulysses_degree=P) in hooks/context_parallel.py),
 * doc/mesh.md has the op-by-op table.  The P ranks of a group are P
 * models (one per device), each given the same weights and inputs but
 * only its own contiguous token shard: hidden_states, timestep_tokens and
 * the output are [B, N/P, ...], rank r holding tokens [r N/P, (r+1) N/P)
 * of the grid num_frames × height × width; encoder_hidden_states and its
 * mask are whole on every rank (cross-attention is replicated).  Every
 * op is per token except self-attention: after to_q/k/v, norm_q/k and
 * RoPE on its tokens, rank r sends each rank its heads and receives all
 * tokens of heads [r H/P, (r+1) H/P) (all-to-all through host memory),
 * computes those heads whole over the whole sequence, and the inverse
 * all-to-all brings every token's heads back before to_out.  So each
 * output value is computed by the same kernel on the same data as on one
 * device: bit-identical.  The P forwards run at once, one thread each
 * (a ctx is used by one thread); the group's barrier joins them at each
 * exchange.  A rank that fails aborts the group, so the others return
 * LQ-NN-MESH instead of waiting.
 *
 * LATENTQ_MESH_NO_KV_GATHER=1 (tests, the negative control of issue 16)
 * skips the exchange: each rank attends over its own tokens only, the
 * seed of the upstream bugs; outputs then differ from one device.
 *
 * Ownership: the group is caller-owned (ltxv_cp_group_free after every
 * model of it); its host buffers hold the whole q, k, v and o of one
 * forward, [B, N, inner_dim] f32 each.
 */
struct ltxv_cp_group;
enum lq_status ltxv_cp_group_create(int P, int B, int64_t N, int D,
    struct ltxv_cp_group **out, struct lq_error *err);
void ltxv_cp_group_free(struct ltxv_cp_group *g);
/* Wakes every rank waiting at the group's barrier with LQ-NN-MESH; later
 * waits fail at once.  For a rank that fails outside forward. */
void ltxv_cp_group_abort(struct ltxv_cp_group *g);
/* The group's degree P; *D (may be NULL) gets its inner_dim. */
int ltxv_cp_group_degree(const struct ltxv_cp_group *g, int *D);

/* 1 when LATENTQ_MESH_NO_KV_GATHER asks for the negative control. */
int ltxv_cp_no_gather(void);

/*
 * The group's exchange, for any transformer whose ranks hold contiguous
 * token shards (the Wan transformer uses it too): rank `rank`'s q, k, v
 * [B, N/P, D] (recorded on cmd, not yet run) go through the group's host
 * arrays so that `attend` records, on the same buffers viewed [B, N, D/P],
 * the attention of heads [rank H/P, (rank+1) H/P) over all N tokens into
 * o viewed likewise; o then holds the rank's tokens of every head [B, N/P,
 * D].  `staging` is the caller's host array of B·(N/P)·D floats.  Submits
 * and waits; leaves cmd begun.  LQ-NN-MESH when another rank failed,
 * LQ-NN-SHAPE for shapes the group does not hold.
 */
typedef enum lq_status (*ltxv_cp_attend_fn)(void *ud, struct gpu_cmd *cmd,
    const struct gpu_tensor *o, const struct gpu_tensor *q,
    const struct gpu_tensor *k, const struct gpu_tensor *v,
    struct lq_error *err);
enum lq_status ltxv_cp_attention(struct ltxv_cp_group *g, int rank,
    struct gpu_ctx *ctx, struct gpu_cmd *cmd, float *staging,
    const struct gpu_tensor *o, const struct gpu_tensor *q,
    const struct gpu_tensor *k, const struct gpu_tensor *v,
    ltxv_cp_attend_fn attend, void *ud, struct lq_error *err);

/*
 * Gathers every rank's token shard part [B, N/P, K] (K <= the group's D)
 * into whole [B, N, K] on each rank, through the group's o array (staging
 * as above, B·(N/P)·K floats).  Submits and waits; leaves cmd begun.
 */
enum lq_status ltxv_cp_gather(struct ltxv_cp_group *g, int rank,
    struct gpu_ctx *ctx, struct gpu_cmd *cmd, float *staging,
    const struct gpu_tensor *part, const struct gpu_tensor *whole,
    struct lq_error *err);

/*
 * Makes m rank `rank` of g (NULL: the whole sequence, the default).  Call
 * before ltxv_transformer_reserve; the heads must divide by the group's P
 * (preflight's LQ-MESH-005), else LQ_FAILED LQ-NN-SHAPE.
 */
enum lq_status ltxv_transformer_set_context(struct ltxv_transformer *m,
    struct ltxv_cp_group *g, int rank, struct lq_error *err);

/*
 * Attention choices that change the pool: the fused kernel (off with
 * LATENTQ_NN_UNFUSED_ATTENTION=1) and the unfused path's score budget in
 * floats (LATENTQ_NN_SCORES_BUDGET, default 64 Mi).  _from_env reads them
 * as ltxv_transformer_load does.
 */
struct ltxv_attention_opts {
	int fused;
	int64_t scores_budget;
};
void ltxv_attention_opts_from_env(struct ltxv_attention_opts *o);

/*
 * The memory plan of one transformer forward (see nn/plan.h) for batch
 * rows B (cond + uncond counted), N video tokens and T text tokens:
 * weights as `w` packs them (all of them, or with NN_WEIGHTS_STREAMED the
 * non-block tensors plus two block buffers), the activation pool exactly
 * as ltxv_transformer_reserve sizes it (the tensors forward carves, on
 * `caps`' pool chunks), the f32 hidden_states / encoder_hidden_states /
 * output buffers its caller creates, and reserve's host scratch (RoPE
 * tables).  `w` NULL leaves weights 0; `att` NULL reads the environment.
 * Pure: reads no file and no device.
 */
void ltxv_transformer_plan(const struct ltxv_transformer_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    int B, int N, int T, enum nn_weight_streaming streaming,
    const struct ltxv_attention_opts *att, struct nn_plan_bytes *out);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void ltxv_transformer_memory(const struct ltxv_transformer *m,
    size_t *weights, size_t *pool_capacity, size_t *pool_peak);

#endif
