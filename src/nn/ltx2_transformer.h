/*
 * ltx2_transformer.h — LTX-2's dual-stream (video + audio) DiT on Vulkan,
 * as diffusers' LTX2VideoTransformer3DModel (models/transformers/
 * transformer_ltx2.py, 58eb52c) computes it:
 *
 *   RoPE (LTX2AudioVideoRotaryPosEmbed: rope, audio_rope and the a2v / v2a
 *   cross_attn_rope, cross_attn_audio_rope; interleaved or split) ->
 *   proj_in, audio_proj_in -> timestep embeddings (LTX2AdaLayerNormSingle:
 *   time_embed, audio_time_embed, prompt_adaln, audio_prompt_adaln,
 *   av_cross_attn_{video,audio}_{scale_shift,a2v_gate,v2a_gate}) ->
 *   caption projections -> transformer_blocks (LTX2VideoTransformerBlock:
 *   self-attention, text cross-attention, a2v / v2a attention,
 *   feed-forward, per stream, AdaLN-modulated) -> scale_shift_table
 *   modulation of norm_out, proj_out, per stream.
 *
 * Use:
 *   ltx2_transformer_load(ctx, "model/transformer", &m, &err);
 *   [ltx2_transformer_reserve(m, &shape, &err);]   (allocates, once)
 *   ltx2_transformer_forward(m, &args, &out, NULL, &err);   (per call)
 *   ltx2_transformer_free(m);
 *
 * Ownership: the model owns its weights (uploaded once at load, as stored),
 * its activation pool and host scratch (reserved, grown to the largest
 * call so far) and its command
 * recording; args and outputs are the caller's host arrays (outputs are
 * filled, not allocated).  The gpu context must outlive the model.
 */
#ifndef LQ_NN_LTX2_TRANSFORMER_H
#define LQ_NN_LTX2_TRANSFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"
#include "nn/ltxv_transformer.h"
#include "nn/plan.h"

struct ltx2_transformer;

#define LTX2_TRANSFORMER_MAX_STG 64	/* spatio_temporal_guidance_blocks */

/* The forward's keyword arguments besides the tensors. */
struct ltx2_transformer_call {
	int use_cross_timestep;		/* false (upstream's forward default;
					 * LTX2Pipeline passes true) */
	int isolate_modalities;		/* false: with true, no a2v / v2a */
	int n_stg;			/* spatio_temporal_guidance_blocks */
	int stg_blocks[LTX2_TRANSFORMER_MAX_STG];	/* None / [] : n_stg 0 */
};

/* Upstream's defaults of ltx2_transformer_call. */
void ltx2_transformer_call_init(struct ltx2_transformer_call *c);

/*
 * Sets one call argument from text: use_cross_timestep and
 * isolate_modalities (true, false, 1, 0) or spatio_temporal_guidance_blocks
 * (a comma list of block indices, "" or "none" for None).  LQ_FAILED with
 * LQ-NN-INPUT naming the argument, the value and the valid ones otherwise.
 */
enum lq_status ltx2_transformer_call_set(struct ltx2_transformer_call *c,
    const char *name, const char *value, struct lq_error *err);

/* Host inputs of one call, borrowed (the goldens' names). */
struct ltx2_transformer_args {
	const float *hidden_states;		/* [B, N, in_channels], N = F·H·W,
						 * token (f·H + h)·W + w */
	const float *audio_hidden_states;	/* [B, L, audio_in_channels] */
	const float *encoder_hidden_states;	/* [B, T, caption_channels] */
	const float *audio_encoder_hidden_states;	/* [B, Ta, caption_channels] */
	const float *timestep;			/* [B] or [B, N] (per token), 0..1000 */
	const float *audio_timestep;		/* [B] or [B, L]; NULL: timestep
						 * (which must then be [B]) */
	const float *sigma;			/* [B], 0..1000; NULL: None (refused
						 * when the model or the call needs it) */
	const float *audio_sigma;		/* [B]; NULL: sigma */
	const float *encoder_attention_mask;	/* [B, T] 0/1 or NULL */
	const float *audio_encoder_attention_mask;	/* [B, Ta] 0/1 or NULL */
	int B, N, L, T, Ta;
	int timestep_per_token;			/* timestep is [B, N] */
	int audio_timestep_per_token;		/* audio_timestep is [B, L] */
	int num_frames, height, width;		/* latent grid, F·H·W = N */
	double fps;				/* 24.0 upstream's default */
	int audio_num_frames;			/* L */
	struct ltx2_transformer_call call;
};

/* Host outputs, caller-allocated: [B, N, out_channels], [B, L,
 * audio_out_channels]. */
struct ltx2_transformer_out {
	float *output;
	float *audio_output;
};

/*
 * Reads `dir`/config.json (diffusers_parse_ltx2_transformer: LQ-MODEL-00x
 * naming the key) and uploads the weights (LQ-NN-WMISS / LQ-NN-WSHAPE).
 * LQ_RETRY on device OOM.  On error *out is NULL.
 */
enum lq_status ltx2_transformer_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_transformer **out, struct lq_error *err);

void ltx2_transformer_free(struct ltx2_transformer *m);

/*
 * The operand precision of the model's matrix products from its next
 * forward on (the job key `precision`; gpu_cmd_set_precision says what
 * it rounds).  A loaded model starts at GPU_PRECISION_F32.
 */
void ltx2_transformer_set_precision(struct ltx2_transformer *m,
    enum gpu_precision p);

const struct ltx2_transformer_config *ltx2_transformer_config(
    const struct ltx2_transformer *m);

/*
 * LTX2VideoTransformer3DModel.forward(..., return_dict=False) into `out`,
 * with video_coords / audio_coords None (computed from the grid), no
 * perturbation_mask (the STG blocks perturb every sample) and no
 * video_self_attention_mask.  Upstream details mirrored:
 * - RoPE coordinates, tables, timestep sinusoids and mask biases are
 *   float32 islands on the CPU in upstream's order of operations;
 * - per-token timesteps embed every token (rows B·N), per-sample ones B
 *   rows, each modulation broadcast accordingly;
 * - use_cross_timestep: the video stream's a2v / v2a modulation follows
 *   audio_sigma and the audio stream's sigma (false: their own
 *   timesteps); the gates get the timestep times
 *   cross_attn_timestep_scale_multiplier / timestep_scale_multiplier;
 * - the listed STG blocks' video and audio self-attention return
 *   to_out(gates · to_v(x)) when the config has perturbed_attn (without
 *   it the blocks are ignored, as upstream).
 * With `dump`, hands over the goldens' intermediates: rope.out0/1,
 * audio_rope.*, cross_attn_rope.*, cross_attn_audio_rope.* (interleaved
 * only; split's are [B, H, N, r] upstream) and their .coords_in, proj_in,
 * audio_proj_in, <embedding>.out0/1 and time_embed.emb.time_proj,
 * audio_time_embed.emb.time_proj, caption_projection,
 * audio_caption_projection, transformer_blocks.<i>.{norm1,
 * attn1.to_gate_logits, attn1.norm_q, attn1, audio_attn1, norm2, attn2,
 * audio_attn2, audio_to_video_norm, audio_to_video_attn,
 * video_to_audio_attn, ff, audio_ff, out0, out1} and the two attn2
 * attention_mask_in, norm_out, proj_out, audio_norm_out, audio_proj_out.
 * Errors: LQ_FAILED LQ-NN-INPUT for a grid that does not hold N or L
 * tokens, an audio_timestep left to a per-token timestep, a missing sigma
 * the model needs or an STG block index out of range (masks are taken as
 * upstream takes them, (1 - m)·-10000 for any value); LQ_RETRY on OOM.
 */
enum lq_status ltx2_transformer_forward(struct ltx2_transformer *m,
    const struct ltx2_transformer_args *a, const struct ltx2_transformer_out *out,
    const struct nn_dump *dump, struct lq_error *err);

/* What one call's memory depends on (ltx2_transformer_args' sizes). */
struct ltx2_transformer_shape {
	int B, N, L, T, Ta;
	int timestep_per_token;		/* timestep [B, N] */
	int audio_timestep_per_token;	/* audio_timestep [B, L] */
	int use_cross_timestep;
	int context;			/* the context group's P (0 or 1: none);
					 * N and L are then one rank's */
};

/*
 * Allocates the activation pool and the host scratch for calls of shape
 * s (the sizes ltx2_transformer_plan counts), so that forwards of that
 * shape allocate nothing; forward reserves itself when a call needs
 * more (grown, never shrunk).  LQ_RETRY (LQ-GPU-OOM) when the device is
 * out of memory.
 */
enum lq_status ltx2_transformer_reserve(struct ltx2_transformer *m,
    const struct ltx2_transformer_shape *s, struct lq_error *err);

/*
 * The memory plan of one forward (nn/plan.h): weights as `w` lays them
 * out (all resident; NULL: 0), the activation pool exactly as
 * ltx2_transformer_forward sizes it on `caps` (every input, table,
 * embedding, stream and scratch tensor lives in it, so io is 0) and the
 * forward's host scratch (RoPE tables and coordinates, sinusoids, mask
 * biases).  Pure: reads no file and no device.
 */
void ltx2_transformer_plan(const struct ltx2_transformer_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    const struct ltx2_transformer_shape *s, struct nn_plan_bytes *out);

/*
 * Context parallelism for both streams (issue 15 item 6, doc/mesh.md's
 * LTX-2 table), Ulysses style as ltxv_transformer_set_context: the P
 * ranks of group g are P models (one per device, the same weights), each
 * given the same call but only its contiguous shard of each stream:
 * hidden_states [B, N/P, ..] and audio_hidden_states [B, L/P, ..] (rank r
 * the tokens [r N/P, (r+1) N/P) of the grid num_frames × height × width
 * and [r L/P, (r+1) L/P) of audio_num_frames), per-token timesteps alike,
 * and its outputs the same shards; args.N and args.L are the rank's
 * counts.  Text, masks and per-sample timesteps are whole on every rank.
 * Every op is per token but attention:
 * - video and audio self-attention: after to_q/k/v, norm_q/k and RoPE on
 *   its tokens, all-to-all tokens -> heads (each rank computes H/P heads
 *   whole over every token), and back before to_out;
 * - a2v (Q video, K/V audio) and v2a (Q audio, K/V video): the K/V input
 *   (the other stream's modulated tokens) is all-gathered, with the
 *   cross-modal RoPE table of every token, so each query attends over
 *   every key, as on one device;
 * - text cross-attention: K/V replicated, nothing to exchange.
 * So each output value is computed by the same kernel on the same data as
 * on one device: bit-identical.  Forwards of one group run at once, one
 * thread each, and must be the same calls (rows, STG blocks, isolation);
 * a rank that fails aborts the group (the others return LQ-NN-MESH).
 * The exchanges are ltxv_transformer.h's (ltxv_cp_attention,
 * ltxv_cp_gather), through one group per stream.  The negative controls:
 * LATENTQ_MESH_NO_KV_GATHER=1 skips every exchange (ltxv_cp_no_gather),
 * LATENTQ_MESH_NO_CROSS_KV_GATHER=1 only the cross-modal gathers (so Q =
 * audio attends over 1/P of the video's keys and back, the upstream bug
 * of issue 15); outputs then differ from one device.
 *
 * set_context makes m rank `rank` of the video stream's group `video`
 * (ltxv_cp_group_create(P, B, N, inner_dim): B rows at most, N the
 * grid's every token) and the audio's `audio` (P, B, L,
 * audio_inner_dim); both NULL: the whole sequences, the default.  Both
 * streams' heads must divide by P (preflight's LQ-MESH-005), else
 * LQ_FAILED LQ-NN-SHAPE, as for groups of other degrees or widths.
 */
enum lq_status ltx2_transformer_set_context(struct ltx2_transformer *m,
    struct ltxv_cp_group *video, struct ltxv_cp_group *audio, int rank,
    struct lq_error *err);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void ltx2_transformer_memory(const struct ltx2_transformer *m, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

#endif
