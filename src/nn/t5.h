/*
 * t5.h — the T5 v1.1 text encoder on Vulkan, as transformers'
 * `T5EncoderModel` (models/t5/modeling_t5.py at transformers 80b90e7):
 *
 *   x = shared[input_ids]                              (no scaling)
 *   per block i:
 *     h  = T5LayerNorm(x)                              (RMS, fp32 variance)
 *     x += o(Attention(q(h), k(h), v(h), bias))        (NO 1/sqrt(d) scale)
 *     h  = T5LayerNorm(x)
 *     x += wo(act(wi_0 h) * wi_1 h)                    (gated-gelu: gelu_new)
 *   last_hidden_state = T5LayerNorm(x)                 (final_layer_norm)
 *
 * `bias` is the relative position bias of block 0 (bidirectional buckets,
 * log-spaced, bucket math in float32 and truncated as upstream, computed on
 * the host and uploaded as [H, T, T]) reused by every block, plus, when a
 * mask is given, (1 - mask) * finfo(float32).min on the keys.  Dropout is
 * off (inference).  LTXPipeline calls the encoder WITHOUT a mask.
 *
 * The attention is recorded as separate kernels (heads split by ops_copy,
 * q·kᵀ by ops_matmul, bias by ops_add, ops_softmax, ·v, heads merged),
 * not ops_attention: the fused shader JITs for minutes on lavapipe, and
 * the [B, H, T, T] scores are small at T5's sequence lengths.
 *
 * Weights may be F32, F16 or BF16 (kept in their dtype on the device,
 * decoded to f32 in the kernels); activations are f32.  The token
 * embedding stays in the host mapping: its rows are gathered on the host
 * and uploaded (a few KB per prompt instead of the whole table).
 *
 * Ownership: a `struct t5_encoder` is owned by its loader's caller and freed
 * with t5_encoder_free before the gpu_ctx it was loaded on.  Not
 * thread-safe (one command buffer and activation pool per encoder).
 */
#ifndef LQ_NN_T5_H
#define LQ_NN_T5_H

#include <stdint.h>

#include "core/error.h"
#include "model/diffusers.h"

struct gpu_ctx;
struct t5_encoder;

/*
 * Reads a transformers T5 config.json into `cfg` (struct t5_config and its
 * defaults are model/diffusers.h's: diffusers_load_json +
 * diffusers_parse_t5).  Errors are theirs (LQ-MODEL-001 unreadable,
 * -002 not T5EncoderModel, -003 a bad value, -006 an activation latentq
 * does not implement), err naming the file and key.
 */
enum lq_status t5_config_load(const char *path, struct t5_config *cfg,
    struct lq_error *err);

/*
 * Loads a transformers text-encoder folder `dir` (`config.json` and
 * `model.safetensors` or a sharded `*.safetensors.index.json`) onto `ctx`.
 * The token embedding is `shared.weight` (or `encoder.embed_tokens.weight`).
 * Errors: config errors as t5_config_load, LQ-T5-002 a missing weight, LQ-T5-003 a weight
 * of the wrong shape or dtype (message names the tensor, both shapes),
 * safetensors' LQ-ST-* codes, GPU errors (LQ_RETRY on device OOM).
 * *out is NULL on error and nothing is left allocated.
 */
enum lq_status t5_encoder_load(struct gpu_ctx *ctx, const char *dir,
    struct t5_encoder **out, struct lq_error *err);

/*
 * last_hidden_state = T5EncoderModel(input_ids, attention_mask)[0].
 *   input_ids       [B, T] host, each in [0, vocab_size)
 *   attention_mask  [B, T] host 0/1, or NULL for none (what LTXPipeline
 *                   does; equivalent to all ones)
 *   last_hidden_state [B, T, d_model] host f32, caller-allocated
 * B >= 1, T >= 1.  Errors: LQ_FAILED LQ-T5-010 an id out of range (field
 * input_ids[b][t]), GPU errors (LQ_RETRY for device loss / OOM).  On error
 * the output is unspecified.
 */
enum lq_status t5_encoder_forward(struct t5_encoder *enc,
    const int64_t *input_ids, const int64_t *attention_mask, int B, int T,
    float *last_hidden_state, struct lq_error *err);

/* The loaded config (borrowed). */
const struct t5_config *t5_encoder_config(const struct t5_encoder *enc);

/* Number of successful t5_encoder_forward calls (cache tests, events). */
unsigned t5_encoder_forward_count(const struct t5_encoder *enc);

/*
 * The memory plan of one t5_encoder_forward for B prompts of T tokens
 * (see nn/plan.h): the weights t5_encoder_load uploads (each in its own
 * buffer, sized from `set`'s headers, or as f32 when `set` is NULL; the
 * token embedding stays on the host), the pool exactly as forward sizes
 * it on `caps`, and the host arrays forward allocates.  Pure.
 */
struct st_set;
struct device_caps;
struct nn_plan_bytes;
void t5_encoder_plan(const struct t5_config *c, const struct st_set *set,
    const struct device_caps *caps, int B, int T, struct nn_plan_bytes *out);

/* Frees device and host memory; NULL is fine. */
void t5_encoder_free(struct t5_encoder *enc);

/*
 * T5Attention._relative_position_bucket(relative_position, bidirectional,
 * num_buckets, max_distance) for one relative position (memory - query),
 * float32 log and truncation as upstream.  Exposed for tests.
 */
int t5_relative_position_bucket(int relative_position, int bidirectional,
    int num_buckets, int max_distance);

#endif
