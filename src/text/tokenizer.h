/*
 * tokenizer.h — the T5 prompt tokenizer, as LTXPipeline uses it.
 *
 * Reproduces transformers' slow `T5Tokenizer` (legacy mode) called as
 * `LTXPipeline._get_t5_prompt_embeds` calls it:
 *
 *   tokenizer([prompt], padding="max_length", max_length=max_sequence_length,
 *             truncation=True, add_special_tokens=True)
 *
 * i.e. (transformers tokenization_utils.py PreTrainedTokenizer.tokenize,
 * tokenization_t5.py T5Tokenizer):
 *   1. the prompt is split on the added tokens (`</s>`, `<pad>`, `<unk>`,
 *      `<extra_id_N>`, ... from tokenizer_config.json's added_tokens_decoder),
 *      leftmost-longest, honouring each token's lstrip/rstrip/single_word;
 *      a literal `</s>` in the text is the EOS token, with attention mask 1;
 *   2. every other chunk goes through SentencePiece on its own (its
 *      normaliser adds the `▁` dummy prefix and trims/merges whitespace);
 *      pieces map to ids by piece_to_id;
 *   3. if text tokens + 1 > max_length, the text tokens are cut to
 *      max_length - 1 (right side);
 *   4. EOS is appended unless the last id already is EOS;
 *   5. right-padded with the pad id to max_length, mask 1 on real tokens.
 *
 * Ownership: a `struct text_tokenizer` belongs to the caller of
 * text_tokenizer_load (free with text_tokenizer_free).  A `struct
 * text_tokens` is filled by text_tokenizer_encode; its arrays are released
 * with text_tokens_release.  A tokenizer is not thread-safe.
 */
#ifndef LQ_TEXT_TOKENIZER_H
#define LQ_TEXT_TOKENIZER_H

#include <stdint.h>

#include "core/error.h"

/* transformers' default and LTXPipeline's max_sequence_length. */
#define TEXT_MAX_SEQUENCE_LENGTH 128

struct text_tokenizer;

/* One tokenised prompt, padded to max_length. */
struct text_tokens {
	int max_length;			/* as requested */
	int64_t *input_ids;		/* [max_length]; pad id after num_valid */
	int64_t *attention_mask;	/* [max_length]; 1 = real token (literal
					 * special tokens included), 0 = pad */
	int num_valid;			/* tokens with mask 1 (<= max_length) */
	int untruncated_len;		/* length without truncation, EOS
					 * included (padding="longest") */
	int num_dropped;		/* text tokens cut by truncation; 0 when
					 * the prompt fits */
	int64_t *dropped_ids;		/* [num_dropped]; NULL when none */
	char *dropped_text;		/* the cut tokens decoded as the
					 * pipeline's truncation warning decodes
					 * them; "" when none */
};

/*
 * Loads the tokenizer from a model folder's `tokenizer/` directory
 * (`spiece.model`, `tokenizer_config.json`, optional
 * `special_tokens_map.json` / `added_tokens.json`).  Errors (LQ_FAILED):
 * LQ-TOK-001 missing/corrupt spiece.model, LQ-TOK-004 unreadable or
 * unsupported config (e.g. `legacy: false`, a tokenizer_class other than
 * T5Tokenizer[Fast]).  *out is NULL on error.
 */
enum lq_status text_tokenizer_load(const char *dir,
    struct text_tokenizer **out, struct lq_error *err);

/* Frees the tokenizer; NULL is fine. */
void text_tokenizer_free(struct text_tokenizer *tok);

/*
 * Tokenises one UTF-8 prompt (may be "") to `max_length` ids (>= 1) as
 * described at the top of this file.  Truncation is not an error here: the
 * caller (preflight) decides from out->num_dropped whether it is one.
 * Errors (LQ_FAILED): LQ-TOK-003 the prompt is not valid UTF-8 or contains
 * NUL, LQ-TOK-002 SentencePiece failure.  On error *out is zeroed.
 */
enum lq_status text_tokenizer_encode(struct text_tokenizer *tok,
    const char *prompt, int max_length, struct text_tokens *out,
    struct lq_error *err);

/* Releases the arrays of `t` and zeroes it. */
void text_tokens_release(struct text_tokens *t);

/* The EOS and pad ids of the tokenizer. */
int text_tokenizer_eos_id(const struct text_tokenizer *tok);
int text_tokenizer_pad_id(const struct text_tokenizer *tok);

/*
 * Decodes ids to text as transformers' `tokenizer.decode(ids)` does
 * (special tokens kept, clean_up_tokenization_spaces).  Caller frees.
 */
char *text_tokenizer_decode(const struct text_tokenizer *tok,
    const int64_t *ids, int n);

#endif
