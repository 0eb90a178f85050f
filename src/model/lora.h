/*
 * lora.h — LoRA files as trainers write them for LTX-Video, checked against
 * the base model and fused into its weights at load.
 *
 * Accepted key forms (one safetensors file; diffusers
 * loaders/lora_pipeline.py LTXVideoLoraLoaderMixin and
 * lora_conversion_utils.py _convert_non_diffusers_ltxv_lora_to_diffusers):
 *   transformer.<module>.lora_A.weight / .lora_B.weight    diffusers
 *   base_model.model.<module>.lora_A.weight ...             PEFT save
 *   diffusion_model.<module>.lora_A.weight ...              original LTX /
 *       ComfyUI; original module names are renamed as upstream does
 *       (patchify_proj -> proj_in, adaln_single -> time_embed,
 *        q_norm -> norm_q, k_norm -> norm_k)
 *   <module>.lora_A.weight ...                              bare (latentq
 *       accepts it; upstream would find no "transformer." keys)
 * lora_down / lora_up are read as lora_A / lora_B.  Only the transformer is
 * a LoRA target (text_encoder.* keys are refused by name).
 *
 * Scaling as PEFT defines it (peft/tuners/lora/layer.py update_layer):
 *   W' = W + s * (alpha / r) * B @ A       (alpha / sqrt(r) with use_rslora)
 * with s the manifest's scale, r the rank (lora_A rows), and alpha, in order:
 * a `<prefix><module>.alpha` scalar tensor; the metadata
 * "lora_adapter_metadata" JSON (diffusers: "transformer.lora_alpha",
 * "transformer.alpha_pattern", "transformer.r", "transformer.use_rslora";
 * pattern keys match a module name or its dotted suffix); metadata
 * "lora_alpha" or kohya's "ss_network_alpha"; else alpha = r.
 *
 * Ownership: a struct lora owns its file mapping and strings; pairs borrow
 * tensors from it.  Free with lora_free.
 *
 * Error codes: LQ-LORA-001 file unreadable (the safetensors code is kept in
 * the message), -002 lora_A without lora_B or the reverse, -003 ranks
 * disagree (A rows, B columns, metadata r), -004 a key that is not a LoRA
 * tensor of an accepted form, -005 a module the base model does not have,
 * -006 shapes do not fit the base weight, -007 bad alpha / metadata.
 */
#ifndef LQ_MODEL_LORA_H
#define LQ_MODEL_LORA_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/expected.h"
#include "model/safetensors.h"

struct lora_pair {
	char *module;			/* diffusers module, e.g. transformer_blocks.0.attn1.to_q */
	char *weight;			/* module + ".weight": the base tensor it changes */
	const struct st_tensor *A;	/* [r, in] */
	const struct st_tensor *B;	/* [out, r] */
	int rank;			/* r */
	double alpha;
	double scaling;			/* alpha / r, or alpha / sqrt(r) (rsLoRA) */
};

struct lora {
	char *path;
	struct st_file *file;
	struct lora_pair *pairs;	/* sorted by weight name */
	size_t n;
};

/*
 * Opens and pairs a LoRA file.  Every problem of the file itself (unpaired
 * tensors, rank disagreements, keys of no accepted form, bad alpha) is
 * reported: err carries the first, with the count of all in the message.
 * On failure *out is NULL.
 */
enum lq_status lora_open(const char *path, struct lora **out, struct lq_error *err);
void lora_free(struct lora *l);

/* The pair changing base tensor `weight_name` ("...to_q.weight"), or NULL. */
const struct lora_pair *lora_find(const struct lora *l, const char *weight_name);

/*
 * Preflight: checks every pair against the base transformer's expected
 * table without fusing: the module must exist (its .weight in the table, 2-D)
 * and A [r, in], B [out, r] must fit the weight [out, in].  Lists every
 * problem in `problems` (caller frees each string and the array; may be
 * NULL) and returns LQ_OK or LQ_FAILED with err naming the file and the first
 * module (codes -005, -006).
 */
enum lq_status lora_check(const struct lora *l, const struct tensor_table *base,
    char ***problems, size_t *nproblems, struct lq_error *err);

/*
 * Fuses one pair into a row-major float32 weight w[out * in] in place:
 * w += user_scale * scaling * (B @ A), products accumulated in float64.
 * The caller has checked shapes (lora_check); asserts them.
 */
void lora_fuse_pair(const struct lora_pair *p, double user_scale, float *w, int64_t out,
    int64_t in);

/*
 * Fuses every LoRA of a list that changes `weight_name` (scales[i] for
 * loras[i]) into w[out * in].  Returns the number of pairs fused.
 */
int lora_fuse_weight(struct lora *const *loras, const double *scales, size_t n,
    const char *weight_name, float *w, int64_t out, int64_t in);

#endif
