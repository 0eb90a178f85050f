/*
 * prompt.c — LTXPipeline's prompt / negative-prompt embeddings with an
 * embedding cache hook (see prompt.h).
 */
#include "text/prompt.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"

void
text_prompt_ids_digest(const int64_t *ids, int T, char hex[DIGEST_HEX_SIZE])
{
	struct digest_state st;
	digest_begin(&st);
	for (int i = 0; i < T; i++) {
		uint64_t v = (uint64_t)ids[i];
		unsigned char le[8];
		for (int k = 0; k < 8; k++) {
			le[k] = (unsigned char)(v >> (8 * k));
		}
		digest_update(&st, le, sizeof(le));
	}
	digest_end(&st, hex);
}

/* Fills err for a prompt that does not fit; returns the status to use. */
static enum lq_status
report_length(const struct text_tokens *t, int truncate, const char *field,
    struct lq_error *err)
{
	enum lq_status st = truncate ? LQ_WARN : LQ_FAILED;
	if (truncate) {
		/* the pipeline's logger.warning, recorded */
		error_set(err, st, "LQ-TOK-005",
		    "prompt has %d tokens; max_sequence_length is %d: the "
		    "last %d were dropped: \"%s\"", t->untruncated_len,
		    t->max_length, t->num_dropped, t->dropped_text);
	} else {
		error_set(err, st, "LQ-TOK-005",
		    "prompt has %d tokens; max_sequence_length is %d (%d "
		    "would be dropped: \"%s\")", t->untruncated_len,
		    t->max_length, t->num_dropped, t->dropped_text);
		error_set_hint(err, "shorten the prompt, raise "
		    "max_sequence_length, or set truncate: true");
	}
	if (field != NULL) {
		error_set_field(err, "%s", field);
	}
	return st;
}

enum lq_status
text_prompt_check(struct text_tokenizer *tok, const char *prompt,
    int max_sequence_length, int truncate, const char *field,
    struct lq_error *err)
{
	if (max_sequence_length <= 0) {
		max_sequence_length = TEXT_MAX_SEQUENCE_LENGTH;
	}
	struct text_tokens t;
	enum lq_status st = text_tokenizer_encode(tok, prompt,
	    max_sequence_length, &t, err);
	if (st != LQ_OK) {
		if (field != NULL) {
			error_set_field(err, "%s", field);
		}
		return st;
	}
	if (t.num_dropped > 0) {
		st = report_length(&t, truncate, field, err);
	}
	text_tokens_release(&t);
	return st;
}

void
text_prompt_embeds_release(struct text_prompt_embeds *e)
{
	free(e->prompt_embeds);
	free(e->prompt_attention_mask);
	free(e->prompt_input_ids);
	free(e->negative_prompt_embeds);
	free(e->negative_prompt_attention_mask);
	free(e->negative_prompt_input_ids);
	memset(e, 0, sizeof(*e));
}

/* One embedding to produce: its tokens, destination and cache state. */
struct slot {
	struct text_tokens tok;
	float *embeds;
	char ids_digest[DIGEST_HEX_SIZE];
	int have;		/* from the cache (or copied from the other) */
	int batch_row;		/* row in the encoder batch, -1 if none */
};

static int64_t *
dup_i64(const int64_t *v, int n)
{
	int64_t *d = xmalloc((size_t)n * sizeof(int64_t));
	memcpy(d, v, (size_t)n * sizeof(int64_t));
	return d;
}

enum lq_status
text_prompt_encode(struct text_tokenizer *tok,
    const struct text_encoder_iface *enc, const struct text_embed_cache *cache,
    const struct text_prompt_request *req, struct text_prompt_embeds *out,
    struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	const int T = req->max_sequence_length > 0 ?
	    req->max_sequence_length : TEXT_MAX_SEQUENCE_LENGTH;
	const int D = enc->d_model;
	const int n = req->do_classifier_free_guidance ? 2 : 1;
	const char *texts[2] = { req->prompt,
	    req->negative_prompt ? req->negative_prompt : "" };
	const char *fields[2] = { "prompt", "negative_prompt" };
	struct slot s[2];
	memset(s, 0, sizeof(s));
	enum lq_status result = LQ_OK;
	struct lq_error warn;
	error_clear(&warn);
	enum lq_status st = LQ_OK;

	for (int i = 0; i < n; i++) {
		st = text_tokenizer_encode(tok, texts[i], T, &s[i].tok, err);
		if (st != LQ_OK) {
			error_set_field(err, "%s", fields[i]);
			goto fail;
		}
		if (s[i].tok.num_dropped > 0) {
			st = report_length(&s[i].tok, req->truncate, fields[i],
			    &warn);
			if (st == LQ_FAILED) {
				*err = warn;
				goto fail;
			}
			result = LQ_WARN;
		}
		s[i].embeds = xmalloc((size_t)T * D * sizeof(float));
		s[i].batch_row = -1;
		text_prompt_ids_digest(s[i].tok.input_ids, T, s[i].ids_digest);
	}

	/* Cache lookups. */
	const int use_cache = cache != NULL && enc->digest != NULL;
	for (int i = 0; i < n && use_cache && cache->lookup; i++) {
		int found = 0;
		struct lq_error cerr;
		error_clear(&cerr);
		enum lq_status cs = cache->lookup(cache->ud, enc->digest,
		    s[i].ids_digest, T, D, s[i].embeds, &found, &cerr);
		if (cs != LQ_OK) {
			log_warn("prompt embedding cache lookup failed: %s",
			    cerr.message);
		} else if (found) {
			s[i].have = 1;
			out->cache_hits++;
		}
	}

	/* Encode what is missing in one call; identical ids share a row. */
	int64_t *batch = xmalloc((size_t)2 * T * sizeof(int64_t));
	int B = 0;
	for (int i = 0; i < n; i++) {
		if (s[i].have) {
			continue;
		}
		if (i == 1 && !s[0].have && strcmp(s[0].ids_digest,
		    s[1].ids_digest) == 0) {
			s[1].batch_row = s[0].batch_row;
			continue;
		}
		memcpy(batch + (size_t)B * T, s[i].tok.input_ids,
		    (size_t)T * sizeof(int64_t));
		s[i].batch_row = B++;
	}
	if (B > 0) {
		float *hs = xmalloc((size_t)B * T * D * sizeof(float));
		st = enc->forward(enc->impl, batch, B, T, hs, err);
		if (st != LQ_OK) {
			free(hs);
			free(batch);
			goto fail;
		}
		out->encoder_calls = 1;
		for (int i = 0; i < n; i++) {
			if (s[i].batch_row < 0) {
				continue;
			}
			memcpy(s[i].embeds, hs + (size_t)s[i].batch_row * T * D,
			    (size_t)T * D * sizeof(float));
			if (use_cache && cache->insert &&
			    (i == 0 || s[i].batch_row != s[0].batch_row)) {
				struct lq_error cerr;
				error_clear(&cerr);
				if (cache->insert(cache->ud, enc->digest,
				    s[i].ids_digest, T, D, s[i].embeds,
				    &cerr) != LQ_OK) {
					log_warn("prompt embedding cache insert "
					    "failed: %s", cerr.message);
				}
			}
		}
		free(hs);
	}
	free(batch);

	out->T = T;
	out->D = D;
	out->prompt_embeds = s[0].embeds;
	out->prompt_attention_mask = dup_i64(s[0].tok.attention_mask, T);
	out->prompt_input_ids = dup_i64(s[0].tok.input_ids, T);
	if (n == 2) {
		out->negative_prompt_embeds = s[1].embeds;
		out->negative_prompt_attention_mask =
		    dup_i64(s[1].tok.attention_mask, T);
		out->negative_prompt_input_ids = dup_i64(s[1].tok.input_ids, T);
	}
	for (int i = 0; i < n; i++) {
		text_tokens_release(&s[i].tok);
	}
	if (result == LQ_WARN) {
		*err = warn;
	}
	return result;
fail:
	for (int i = 0; i < 2; i++) {
		text_tokens_release(&s[i].tok);
		free(s[i].embeds);
	}
	text_prompt_embeds_release(out);
	return st;
}
