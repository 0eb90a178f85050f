/*
 * wan_transformer.h — Wan 2.1's denoising transformer on Vulkan, as
 * diffusers' WanTransformer3DModel (models/transformers/transformer_wan.py,
 * 58eb52c) computes it on the text-to-video path (no image embedder, no
 * added key / value projections, a timestep per sample):
 *
 *   rope (WanRotaryPosEmbed: 3 axes, head-dim split [t | h | w] with
 *   h = w = 2(d//6), interleaved pairs, integer positions) ->
 *   patch_embedding (Conv3d, kernel = stride = patch_size) ->
 *   condition_embedder (WanTimeTextImageEmbedding: [cos | sin] sinusoids,
 *   time_embedder, time_proj(SiLU(temb)), text_embedder) ->
 *   blocks (WanTransformerBlock: LayerNorm + scale_shift_table modulation,
 *   attn1 with RoPE, norm2 + attn2 over the text without a mask, FFN) ->
 *   norm_out modulated by scale_shift_table + temb (shift, then scale),
 *   proj_out, unpatchify.
 *
 * Use:
 *   wan_transformer_load(ctx, "model/transformer", &m, &err);
 *   [wan_transformer_reserve(m, &shape, &err);]   (allocates, once)
 *   for each pass: wan_transformer_forward(m, &args, &output, NULL, &err);
 *   wan_transformer_free(m);
 * forward allocates nothing once reserve has been called for a shape at
 * least as large (it reserves itself otherwise, grown, never shrunk).
 *
 * Ownership: the model owns its weights (uploaded once at load, as stored:
 * F32/F16/BF16), its activation pool, host scratch (RoPE tables and
 * sinusoids) and command recording.  hidden_states, encoder_hidden_states
 * and the output are the caller's device tensors (GPU_F32, contiguous, not
 * in the model's pool); the timesteps the caller's host array, borrowed
 * for the call.  The gpu context must outlive the model.
 */
#ifndef LQ_NN_WAN_TRANSFORMER_H
#define LQ_NN_WAN_TRANSFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"
#include "nn/plan.h"

/* The config is model/diffusers.h's struct wan_transformer_config. */
struct wan_transformer;

/*
 * Reads `dir`/config.json with diffusers_parse_wan_transformer (upstream
 * defaults; LQ-MODEL-00x naming the key), without loading anything.
 */
enum lq_status wan_transformer_read_config(const char *dir,
    struct wan_transformer_config *c, struct lq_error *err);

/*
 * Reads the config as above and uploads the weights of `dir`
 * (diffusion_pytorch_model*.safetensors): LQ-NN-WMISS / LQ-NN-WSHAPE
 * naming a missing or misshapen tensor, the safetensors codes for a bad
 * file; LQ_RETRY when the device is out of memory.  On error *out is NULL
 * and nothing is left allocated.
 */
enum lq_status wan_transformer_load(struct gpu_ctx *ctx, const char *dir,
    struct wan_transformer **out, struct lq_error *err);

/*
 * Weight streaming (nn/weights.h): with `streaming`, the weights of each
 * blocks.<i> stay in host memory (the mapped safetensors, F16/BF16 as
 * stored) and go block by block into two device slots, block i + 1 while
 * block i computes; everything else is resident.  The output is
 * bit-identical to a resident run.  The memory plan decides
 * (nn_plan_choose_streaming on wan_transformer_plan's resident bytes).
 */
struct wan_transformer_opts {
	int streaming;		/* 1: stream the blocks' weights */
};

/* wan_transformer_load with options (opts NULL: all resident). */
enum lq_status wan_transformer_load_opts(struct gpu_ctx *ctx,
    const char *dir, const struct wan_transformer_opts *opts,
    struct wan_transformer **out, struct lq_error *err);

/* 1 when the blocks' weights stream; one slot's bytes and the uploads so
 * far (either pointer may be NULL). */
int wan_transformer_streaming(const struct wan_transformer *m,
    size_t *slot_bytes, unsigned *uploads);

/*
 * The transformer's weights in `set` (its safetensors headers) as the
 * loader lays them on a device with `caps` (NULL: see nn_weights_plan):
 * all resident, and with the blocks streamed (two slots).  Errors as
 * nn_weights_plan (LQ-GPU-RANGE).
 */
enum lq_status wan_transformer_weights_layout(const struct st_set *set,
    const struct device_caps *caps, struct nn_weights_layout *out,
    struct lq_error *err);

void wan_transformer_free(struct wan_transformer *m);

/*
 * The operand precision of the model's matrix products from its next
 * forward on (the job key `precision`; gpu_cmd_set_precision says what
 * it rounds).  A loaded model starts at GPU_PRECISION_F32.
 */
void wan_transformer_set_precision(struct wan_transformer *m,
    enum gpu_precision p);

/* The parsed config (borrowed). */
const struct wan_transformer_config *wan_transformer_config(
    const struct wan_transformer *m);

/*
 * Whether a latent grid (num_frames, height, width: latent frames and
 * pixels / vae_scale_factor) can run: each a multiple of its patch_size
 * entry (upstream's strided Conv3d would drop the rest silently and
 * unpatchify to a smaller output) and, after patching, at most
 * rope_max_seq_len (upstream slices its RoPE tables to that many rows).
 * LQ_FAILED LQ-NN-SHAPE naming the axis, its size and the rule otherwise.
 * Pure; preflight asks it for a job's grid.
 */
enum lq_status wan_transformer_check_grid(const struct wan_transformer_config *c,
    int num_frames, int height, int width, struct lq_error *err);

/* What one call's memory depends on: batch rows, the latent grid (F, H,
 * W before patching), the text length, the context degree of the model's
 * group (wan_transformer_set_context; 0 or 1: one device) and, for the
 * plan, how the weights are held (0: NN_WEIGHTS_RESIDENT). */
struct wan_transformer_shape {
	int B, F, H, W, T;
	int context;
	enum nn_weight_streaming streaming;
};

/*
 * Allocates the activation pool and host scratch for calls of shape s,
 * so that forwards of that shape or smaller allocate nothing.  LQ_RETRY
 * (LQ-GPU-OOM) when the device is out of memory; LQ-NN-SHAPE for a grid
 * wan_transformer_check_grid refuses.
 */
enum lq_status wan_transformer_reserve(struct wan_transformer *m,
    const struct wan_transformer_shape *s, struct lq_error *err);

struct wan_transformer_args {
	/* [B, in_channels, F, H, W] latents (upstream's hidden_states) */
	const struct gpu_tensor *hidden_states;
	/* [B, T, text_dim] text embeddings (UMT5 last_hidden_state, padded
	 * rows zero; every row is attended: upstream passes no mask) */
	const struct gpu_tensor *encoder_hidden_states;
	/* host [B]: the timestep of each sample on the 0..1000 scale (the
	 * pipeline's integer timesteps, or any float) */
	const float *timestep;
};

/*
 * One forward, WanTransformer3DModel.forward(hidden_states, timestep,
 * encoder_hidden_states, return_dict=False)[0] into `output` [B,
 * out_channels, F, H, W] (GPU_F32, contiguous: the velocity, unpatchified).
 * Records and submits on the model's command and waits.  Upstream details
 * mirrored: the RoPE tables are float64 then float32 (host, cached per
 * grid) and the sinusoids float32 (host), as upstream; norm_q / norm_k
 * act on the whole projected q / k in both attentions whatever qk_norm
 * says; norm2 is the identity without cross_attn_norm.  With `dump`, also
 * hands over the goldens' intermediates: rope_freqs_cos_full /
 * rope_freqs_sin_full [rope_max_seq_len, d], rope.out0 / rope.out1 [1, N,
 * 1, d], patch_embedding [B, inner, F', H', W'],
 * condition_embedder.{timesteps_proj, time_embedder, time_proj,
 * text_embedder, out0, out1, out2}, blocks.<i>.{norm1, attn1.norm_q,
 * attn1.norm_k, attn1, norm2, attn2.norm_q, attn2.norm_k, attn2, norm3,
 * ffn} for i = 0, blocks.<i> for every block, norm_out and proj_out.
 * Errors: LQ_FAILED LQ-NN-SHAPE for tensors of the wrong shape or a grid
 * wan_transformer_check_grid refuses, LQ-NN-INPUT without timesteps;
 * device errors as gpu_cmd_submit reports them (LQ_RETRY on OOM).
 * `output` is undefined on error.
 */
enum lq_status wan_transformer_forward(struct wan_transformer *m,
    const struct wan_transformer_args *a, const struct gpu_tensor *output,
    const struct nn_dump *dump, struct lq_error *err);

/*
 * Context parallelism, Ulysses style, with nn/ltxv_transformer.h's group
 * and exchange (doc/mesh.md has the roles): the P ranks of g are P models
 * (one per device) given the same weights and the same whole inputs; rank
 * r computes tokens [r N/P, (r+1) N/P) of the patched grid (N = F'·H'·W',
 * token (f·H' + h)·W' + w): its rows of the patch embedding, the RoPE
 * tables, the blocks and proj_out; the time and text embeddings are
 * replicated, and so are cross-attention's keys and values (every rank's
 * queries see every text row).  Self-attention's SDPA runs on heads [r
 * H/P, (r+1) H/P) of all N tokens (ltxv_cp_attention), and proj_out's rows
 * are gathered (ltxv_cp_gather) so that every rank unpatchifies the whole
 * output: `output` is whole on every rank, bit-identical to one device.
 * The group is created for (P, B, N, inner_dim); N must divide by P
 * (LQ-NN-SHAPE, preflight's LQ-MESH-004) and the heads by P (else this
 * call fails with LQ-NN-SHAPE, preflight's LQ-MESH-005).  Call before
 * reserve; g NULL returns to one device.  Intermediates are not dumped
 * under a group (LQ-NN-INPUT).  LATENTQ_MESH_NO_KV_GATHER=1 skips the
 * exchange (the negative control: each rank attends over its own tokens).
 */
struct ltxv_cp_group;
enum lq_status wan_transformer_set_context(struct wan_transformer *m,
    struct ltxv_cp_group *g, int rank, struct lq_error *err);

/*
 * WanRotaryPosEmbed's tables: cos, sin [rope_max_seq_len, d] (d =
 * attention_head_dim), column blocks [t | h | w] of widths rope_dim, each
 * get_1d_rotary_pos_embed(axis_dim, rope_max_seq_len, 10000,
 * use_real=True, repeat_interleave_real=True, freqs_dtype=float64):
 * angle p / 10000^(2j / axis_dim) in double, its cos / sin cast to
 * float32, each twice.  Caller-owned arrays; allocates nothing.
 */
void wan_rope_freqs(const struct wan_transformer_config *c, float *cos_out,
    float *sin_out);

/*
 * The memory plan of one forward (nn/plan.h): weights as `w` lays them
 * out (all of them, or with s->streaming NN_WEIGHTS_STREAMED the
 * non-block tensors plus two block slots; NULL: 0), the activation pool exactly as
 * wan_transformer_reserve sizes it on `caps` (on one rank of a context
 * group of s->context: its tokens' tensors and the gathered output),  the caller's f32
 * hidden_states / encoder_hidden_states / output buffers (io), and the
 * host scratch (RoPE tables, sinusoids).  Pure: reads no file and no
 * device.
 */
void wan_transformer_plan(const struct wan_transformer_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    const struct wan_transformer_shape *s, struct nn_plan_bytes *out);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void wan_transformer_memory(const struct wan_transformer *m, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

#endif
