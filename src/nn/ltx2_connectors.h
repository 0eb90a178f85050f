/*
 * ltx2_connectors.h — LTX-2's text connectors on Vulkan, as diffusers'
 * pipelines/ltx2/connectors.py LTX2TextConnectors.forward computes them
 * (the LTX-2.0 path, per_modality_projections false): the text encoder's
 * stacked hidden states [B, T, C·L] and their 0/1 attention mask to the
 * video and audio streams' caption features [B, T, C] (the DiT's
 * encoder_hidden_states and audio_encoder_hidden_states).
 *
 *   per_layer_masked_mean_norm (CPU, see below) -> text_proj_in ->
 *   video_connector and audio_connector (LTX2ConnectorTransformer1d:
 *   learnable registers, 1-D RoPE, pre-norm attention + feed-forward
 *   blocks, final RMSNorm)
 *
 * Use:
 *   ltx2_connectors_load(ctx, "model/connectors", &c, &err);
 *   ltx2_connectors_forward(c, &args, &out, NULL, &err);
 *   ltx2_connectors_free(c);
 *
 * Ownership: the connectors own their weights, their activation pool
 * (sized per call) and their command recording; args and outputs are the
 * caller's (outputs are filled, not allocated).
 */
#ifndef LQ_NN_LTX2_CONNECTORS_H
#define LQ_NN_LTX2_CONNECTORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"

struct ltx2_connectors;

/* The call's arguments besides the tensors (LTX2TextConnectors.forward). */
struct ltx2_connectors_call {
	int padding_right;	/* padding_side: 0 "left" (upstream's default,
				 * the Gemma convention), 1 "right" */
	int scale_factor;	/* 8 */
};

/* Upstream's defaults of ltx2_connectors_call. */
void ltx2_connectors_call_init(struct ltx2_connectors_call *c);

/*
 * Sets one call argument from text: padding_side (left, right) or
 * scale_factor (a positive integer).  LQ_FAILED with LQ-NN-INPUT naming
 * the argument, the value and the valid ones otherwise.
 */
enum lq_status ltx2_connectors_call_set(struct ltx2_connectors_call *c,
    const char *name, const char *value, struct lq_error *err);

/* Host inputs of one call, borrowed. */
struct ltx2_connectors_args {
	const float *text_encoder_hidden_states;	/* [B, T, C·L], index c·L + l */
	const int64_t *attention_mask;	/* [B, T], 1 = valid, 0 = padding */
	int B, T;
	struct ltx2_connectors_call call;
};

/* Host outputs, caller-allocated: embeddings [B, T, C] each, mask [B, T]. */
struct ltx2_connectors_out {
	float *video_text_embedding;
	float *audio_text_embedding;
	int64_t *attention_mask_out;
};

/*
 * Reads `dir`/config.json (diffusers_parse_ltx2_connectors: LQ-MODEL-00x
 * naming the key) and uploads the weights (LQ-NN-WMISS / LQ-NN-WSHAPE).
 * LQ_RETRY on device OOM.  On error *out is NULL.
 */
enum lq_status ltx2_connectors_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_connectors **out, struct lq_error *err);

void ltx2_connectors_free(struct ltx2_connectors *c);

const struct ltx2_connectors_config *ltx2_connectors_config(
    const struct ltx2_connectors *c);

/*
 * LTX2TextConnectors.forward(text_encoder_hidden_states, attention_mask,
 * padding_side, scale_factor) into `out`.  Upstream details mirrored:
 * - the per-layer masked mean/range normalisation uses only the number of
 *   valid tokens (the mask's sum) and padding_side to place them (left:
 *   the last n), not the mask's pattern; sums in double, the rest in
 *   float32 as upstream; padded positions become 0;
 * - a connector with learnable registers moves the tokens the MASK marks
 *   valid to the front in order and fills positions p >= n with
 *   registers[p % R] (T must be a multiple of R), then attends without a
 *   mask; without registers the additive mask (m - 1)·FLT_MAX is the key
 *   bias;
 * - RoPE positions arange(T) / connector_rope_base_seq_len (integers, not
 *   midpoints), interleaved or split (rope_type);
 * - the returned mask is (returned additive mask < 1e-6): all ones, so
 *   the video embedding is multiplied by 1 (padded tokens take part in the
 *   DiT's cross-attention downstream).
 * With `dump`, hands over the goldens' intermediates (text_proj_in,
 * <side>_connector.rope.out0/1 (interleaved only), .blocks_input(after_registers),
 * .blocks_attention_mask, .transformer_blocks.<i>[.attn1], .norm_out,
 * .out0/1, text_proj_in.input(per_layer_masked_mean_norm)).
 * Errors: LQ_FAILED LQ-NN-INPUT for a mask value other than 0/1, no valid
 * token, or T not a multiple of a connector's registers; LQ_RETRY on OOM.
 */
enum lq_status ltx2_connectors_forward(struct ltx2_connectors *c,
    const struct ltx2_connectors_args *a, const struct ltx2_connectors_out *out,
    const struct nn_dump *dump, struct lq_error *err);

/* Device bytes: weights, and the activation pool's capacity and peak. */
/*
 * The memory plan (nn/plan.h) of one ltx2_connectors_forward of B
 * sequences of T tokens, from the config alone: weights as `w` lays them
 * out (NULL: 0) and the activation pool forward creates (its inputs live
 * in it; io 0).
 */
struct nn_plan_bytes;
struct nn_weights_layout;
void ltx2_connectors_plan(const struct ltx2_connectors_config *cfg,
    const struct nn_weights_layout *w, int B, int T,
    struct nn_plan_bytes *out);

void ltx2_connectors_memory(const struct ltx2_connectors *c, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

#endif
