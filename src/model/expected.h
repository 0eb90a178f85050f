/*
 * expected.h — the tensors a model needs, by name, shape and dtype.
 *
 * For a family and config, expected_* build the list of tensors the upstream
 * module tree has (diffusers LTXVideoTransformer3DModel,
 * AutoencoderKLLTXVideo, transformers T5EncoderModel — the state_dict names
 * save_pretrained writes).  The same table drives loading (nn looks tensors
 * up by these names and shapes) and preflight's config-vs-weights check
 * (expected_check: ALL missing, unexpected, mis-shaped and wrong-dtype
 * tensors, not just the first).
 *
 * Ownership: a tensor_table owns its specs and names (tensor_table_free);
 * an expected_report owns its strings (expected_report_free).
 */
#ifndef LQ_MODEL_EXPECTED_H
#define LQ_MODEL_EXPECTED_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/diffusers.h"
#include "model/safetensors.h"

/* The tensor may be absent (e.g. T5's tied encoder.embed_tokens.weight, or
 * VAE encoder weights in a decoder-only file). */
#define TENSOR_SPEC_OPTIONAL 1u
/* Present in upstream files but not used by latentq (VAE encoder). */
#define TENSOR_SPEC_UNUSED 2u
/* One layout of a parameter saved two ways: of a table's EITHER tensors at
 * least one must be present, none alone is required (the transformer's
 * final modulation: scale_shift_table, or newer diffusers'
 * norm_out.linear.weight and .bias, which are also OPTIONAL so model
 * synth writes the first layout). */
#define TENSOR_SPEC_EITHER 4u

/* Weight dtypes latentq loads (compute accumulates in fp32). */
#define TENSOR_DTYPES_FLOAT ((1u << ST_F32) | (1u << ST_F16) | (1u << ST_BF16))

struct tensor_spec {
	char *name;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	unsigned dtypes;	/* bit (1u << st_dtype) per accepted dtype */
	unsigned flags;		/* TENSOR_SPEC_* */
};

struct tensor_table {
	struct tensor_spec *specs;	/* sorted by name after expected_* */
	size_t n, cap;
};

/* Build the table for one component (the table is cleared first). */
void expected_ltxv_transformer(const struct ltxv_transformer_config *c, struct tensor_table *t);
void expected_ltxv_vae(const struct ltxv_vae_config *c, struct tensor_table *t);
void expected_t5_encoder(const struct t5_config *c, struct tensor_table *t);
/* LTX2Pipeline's components (transformer_ltx2.py, pipelines/ltx2/
 * connectors.py, autoencoder_kl_ltx2_audio.py with its encoder as
 * OPTIONAL | UNUSED, pipelines/ltx2/vocoder.py LTX2Vocoder and
 * LTX2VocoderWithBWE with its MelSTFT buffers); the video VAE is
 * expected_ltxv_vae with `ltx2`.  For configs the diffusers_parse_ltx2_*
 * accepted. */
void expected_ltx2_transformer(const struct ltx2_transformer_config *c,
    struct tensor_table *t);
void expected_ltx2_connectors(const struct ltx2_connectors_config *c,
    struct tensor_table *t);
void expected_ltx2_audio_vae(const struct ltx2_audio_vae_config *c,
    struct tensor_table *t);
void expected_ltx2_vocoder(const struct ltx2_vocoder_config *c,
    struct tensor_table *t);
void expected_ltx2_vocoder_bwe(const struct ltx2_vocoder_bwe_config *c,
    struct tensor_table *t);
/* WanTransformer3DModel (transformer_wan.py, text-to-video) and
 * AutoencoderKLWan (autoencoder_kl_wan.py, Wan 2.1: decoder and
 * post_quant_conv required, encoder and quant_conv OPTIONAL | UNUSED). */
void expected_wan_transformer(const struct wan_transformer_config *c,
    struct tensor_table *t);
void expected_wan_vae(const struct wan_vae_config *c, struct tensor_table *t);

/* Appends one spec (copies name); used by the builders and by tests. */
void tensor_table_add(struct tensor_table *t, const char *name, int ndim,
    const int64_t *shape, unsigned dtypes, unsigned flags);
/* Sorts by name (binary search in tensor_table_find). */
void tensor_table_sort(struct tensor_table *t);
const struct tensor_spec *tensor_table_find(const struct tensor_table *t, const char *name);
void tensor_table_free(struct tensor_table *t);

struct expected_report {
	size_t n_missing, n_unexpected, n_misshaped, n_bad_dtype;
	/* one line each: "name", or "name: [2, 3] in the file, [3, 2] expected",
	 * or "name: F64 (F32, F16 or BF16 expected)" */
	char **missing, **unexpected, **misshaped, **bad_dtype;
};

/*
 * Compares a tensor set against a table.  Fills `r` with every problem.
 * Returns LQ_OK when none; otherwise LQ_FAILED with err naming `label` (the
 * component folder), the first problem's tensor as field, counts of each kind
 * in the message, and code LQ-MODEL-010 (missing), -011 (unexpected), -012
 * (mis-shaped) or -013 (dtype) for the first kind present in that order.
 * `r` may be NULL when only err is wanted; otherwise free it with
 * expected_report_free.
 */
enum lq_status expected_check(const struct tensor_table *t, const struct st_set *s,
    const char *label, struct expected_report *r, struct lq_error *err);
void expected_report_free(struct expected_report *r);

/* Components expected_check_model checks, in this order. */
enum expected_component { EXPECTED_TRANSFORMER, EXPECTED_VAE, EXPECTED_TEXT_ENCODER,
	EXPECTED_NCOMPONENTS };

/*
 * Preflight's config-vs-weights check of a whole folder: opens each present
 * component's tensor set (single file, shards + index) and compares it with
 * its table.  Every component is checked even after a failure; reports[c]
 * (optional, free each with expected_report_free) gets each component's
 * problems (all zero for an absent text encoder).  err gets the first
 * failing component's error (a safetensors error if its files are damaged).
 */
enum lq_status expected_check_model(const struct diffusers_model *m,
    struct expected_report reports[EXPECTED_NCOMPONENTS], struct lq_error *err);

#endif
