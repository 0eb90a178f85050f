/*
 * prompt.h — prompt embeddings for the render, as diffusers' LTXPipeline
 * builds them (pipelines/ltx/pipeline_ltx.py `encode_prompt` /
 * `_get_t5_prompt_embeds` at diffusers 58eb52c):
 *
 *   ids, mask = tokenizer(prompt, padding="max_length",
 *                         max_length=max_sequence_length, truncation=True)
 *   prompt_embeds = text_encoder(ids)[0]          (NO attention mask)
 *   prompt_attention_mask = mask
 *   if do_classifier_free_guidance:                (guidance_scale > 1)
 *       negative_prompt = negative_prompt or ""    (same tokenisation)
 *       negative_prompt_embeds, negative_prompt_attention_mask likewise
 *
 * One prompt per call (the render batches videos and builds the CFG batch
 * cat([negative, positive]) itself).  Embeddings depend only on the token
 * ids and the encoder weights (no mask reaches the encoder), so they are
 * cached under (encoder digest, ids digest) through a caller-supplied hook;
 * the queue database implements it (store), tests use memory.
 *
 * Ownership: a `struct text_prompt_embeds` is filled by text_prompt_encode
 * and its arrays released by text_prompt_embeds_release.  The tokenizer,
 * encoder interface and cache are borrowed for the call.
 */
#ifndef LQ_TEXT_PROMPT_H
#define LQ_TEXT_PROMPT_H

#include <stdint.h>

#include "core/error.h"
#include "core/digest.h"
#include "text/tokenizer.h"

struct t5_encoder;

/*
 * A text encoder as the prompt code sees it: `forward` computes
 * last_hidden_state [B, T, d_model] (host f32, caller-allocated) for ids
 * [B, T] without an attention mask.  `digest` names the weights for the
 * cache (e.g. the models table's text-encoder digest); NULL disables
 * caching.
 */
struct text_encoder_iface {
	int d_model;
	const char *digest;
	enum lq_status (*forward)(void *impl, const int64_t *input_ids, int B,
	    int T, float *last_hidden_state, struct lq_error *err);
	void *impl;
};

/* The interface over a loaded T5 encoder (t5_encoder_forward, mask NULL);
 * `digest` is borrowed and may be NULL. */
struct text_encoder_iface text_encoder_from_t5(struct t5_encoder *enc,
    const char *digest);

/*
 * Embedding cache hook.  Keys: `encoder_digest` (iface.digest) and
 * `ids_digest` (text_prompt_ids_digest of the T padded ids).  Values:
 * embeddings [T, D] f32.
 *   lookup: LQ_OK with *found = 1 and `embeds` filled, or LQ_OK with
 *           *found = 0 when absent.  Any other status is an error: it is
 *           logged as a warning and the prompt is encoded anyway.
 *   insert: stores a copy; errors are logged as warnings.
 * Either function pointer may be NULL.
 */
struct text_embed_cache {
	enum lq_status (*lookup)(void *ud, const char *encoder_digest,
	    const char *ids_digest, int T, int D, float *embeds, int *found,
	    struct lq_error *err);
	enum lq_status (*insert)(void *ud, const char *encoder_digest,
	    const char *ids_digest, int T, int D, const float *embeds,
	    struct lq_error *err);
	void *ud;
};

/* The cache over the queue database's text_cache table (prompt_store.c);
 * `st` is borrowed and must outlive the returned hook. */
struct store;
struct text_embed_cache text_embed_cache_from_store(struct store *st);

struct text_prompt_request {
	const char *prompt;			/* UTF-8, may be "" */
	const char *negative_prompt;		/* NULL = "" (upstream default) */
	int max_sequence_length;		/* 0 = 128 */
	int do_classifier_free_guidance;	/* also build the negative */
	int truncate;				/* job `truncate: true` */
};

struct text_prompt_embeds {
	int T, D;				/* max_sequence_length, d_model */
	float *prompt_embeds;			/* [T, D] */
	int64_t *prompt_attention_mask;		/* [T] */
	int64_t *prompt_input_ids;		/* [T] */
	float *negative_prompt_embeds;		/* [T, D]; NULL without CFG */
	int64_t *negative_prompt_attention_mask;	/* [T]; NULL without CFG */
	int64_t *negative_prompt_input_ids;	/* [T]; NULL without CFG */
	int cache_hits;				/* of the 1 or 2 embeddings */
	int encoder_calls;			/* forward calls made (0 or 1) */
};

/*
 * Preflight for one prompt: tokenises it and compares its length with
 * max_sequence_length.  Returns LQ_OK when it fits; when it does not,
 * LQ_FAILED (LQ-TOK-005: "prompt has N tokens; max_sequence_length is M",
 * with the text that would be dropped and a hint) unless `truncate`, then
 * LQ_WARN with the same record naming what is dropped (upstream's warning).
 * `field` (e.g. "jobs[2].prompt", may be NULL) goes into err->field.
 * Tokenizer errors (LQ-TOK-003 bad UTF-8) are passed through.
 */
enum lq_status text_prompt_check(struct text_tokenizer *tok,
    const char *prompt, int max_sequence_length, int truncate,
    const char *field, struct lq_error *err);

/*
 * Builds the embeddings of `req` (see top of file).  The prompt and the
 * negative prompt are each checked as text_prompt_check does (too long and
 * not `truncate`: LQ_FAILED LQ-TOK-005, nothing encoded); the cache is
 * consulted first for each; what is missing is encoded in ONE forward call
 * (batch 2 when both are missing and differ) and inserted.  Returns LQ_OK,
 * or LQ_WARN (err filled) when a prompt was truncated under `truncate`;
 * encoder errors are passed through (LQ_RETRY for device loss).  On error
 * *out is released (zeroed).  `cache` may be NULL.
 */
enum lq_status text_prompt_encode(struct text_tokenizer *tok,
    const struct text_encoder_iface *enc, const struct text_embed_cache *cache,
    const struct text_prompt_request *req, struct text_prompt_embeds *out,
    struct lq_error *err);

/* Releases the arrays of `e` and zeroes it. */
void text_prompt_embeds_release(struct text_prompt_embeds *e);

/*
 * `prompt_embeds: FILE` in a job: precomputed embeddings replacing the text
 * encoder, named as LTXPipeline's arguments.  The file holds
 * prompt_embeds [B, T, D] (F32/F16/BF16) and prompt_attention_mask [B, T]
 * (any integer, bool or float dtype; nonzero = 1), optionally
 * negative_prompt_embeds and negative_prompt_attention_mask of the same
 * shapes (LTXPipeline.check_inputs' rules).  B videos render in one batch.
 */
struct text_prompt_file {
	int B, T, D;
	float *prompt_embeds;			/* [B, T, D] */
	int64_t *prompt_attention_mask;		/* [B, T] */
	float *negative_prompt_embeds;		/* [B, T, D] or NULL */
	int64_t *negative_prompt_attention_mask;	/* [B, T] or NULL */
};

/*
 * Reads and checks such a file.  Errors (LQ_FAILED, err->file = path,
 * err->field = the tensor): safetensors' LQ-ST-* codes; LQ-EMB-001
 * prompt_embeds missing, or an embeds tensor without its mask (upstream:
 * "Must provide `prompt_attention_mask` when specifying `prompt_embeds`");
 * LQ-EMB-002 wrong rank or dtype; LQ-EMB-003 shapes that disagree.  If
 * `d_model` > 0 the last dim must equal it (the transformer's
 * caption_channels).  On error *out is zeroed.
 */
enum lq_status text_prompt_file_load(const char *path, int d_model,
    struct text_prompt_file *out, struct lq_error *err);
void text_prompt_file_release(struct text_prompt_file *f);

/* BLAKE2b-256 hex of T padded ids as little-endian int64 bytes: the cache's
 * token-ids key. */
void text_prompt_ids_digest(const int64_t *ids, int T,
    char hex[DIGEST_HEX_SIZE]);

#endif
