/*
 * tokenizer.c — T5 prompt tokenisation as transformers' slow T5Tokenizer
 * (legacy) does it inside LTXPipeline._get_t5_prompt_embeds; see
 * tokenizer.h for the steps.  SentencePiece itself is behind spm.h.
 */
#include "text/tokenizer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "text/spm.h"

/* transformers' AddedToken, as serialised in added_tokens_decoder. */
struct added_token {
	char *content;
	size_t len;
	int id;
	bool lstrip, rstrip, single_word, special;
};

struct text_tokenizer {
	struct text_spm *spm;
	struct added_token *added;
	int n_added;
	int eos_id, pad_id, unk_id;
};

/* ---- UTF-8 helpers ------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static int
utf8_seq_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	int len;
	uint32_t c, min;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, c = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if ((size_t)len > n) {
		return 0;
	}
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
		return 0;
	}
	*cp = c;
	return len;
}

/* Python's str.isspace() for one code point. */
static bool
py_isspace(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) ||
	    c == 0x85 || c == 0xa0 || c == 0x1680 ||
	    (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
	    c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Python's str.lstrip(): first byte offset of [s, s+n) that is not space. */
static size_t
py_lstrip(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint32_t c;
		int l = utf8_seq_len((const unsigned char *)s + i, n - i, &c);
		if (l == 0 || !py_isspace(c)) {
			break;
		}
		i += (size_t)l;
	}
	return i;
}

/* Python's str.rstrip(): new length of [s, s+n) without trailing space. */
static size_t
py_rstrip(const char *s, size_t n)
{
	while (n > 0) {
		size_t st = n - 1;
		while (st > 0 && ((unsigned char)s[st] & 0xc0) == 0x80) {
			st--;
		}
		uint32_t c;
		int l = utf8_seq_len((const unsigned char *)s + st, n - st, &c);
		if (l == 0 || !py_isspace(c)) {
			break;
		}
		n = st;
	}
	return n;
}

/* ---- loading ------------------------------------------------------------ */

static void
add_token(struct text_tokenizer *tok, const char *content, int id,
    bool lstrip, bool rstrip, bool single_word, bool special)
{
	if (content == NULL || content[0] == '\0') {
		return;
	}
	for (int i = 0; i < tok->n_added; i++) {
		if (strcmp(tok->added[i].content, content) == 0) {
			return;	/* first definition wins, as in transformers */
		}
	}
	tok->added = xrealloc(tok->added,
	    (size_t)(tok->n_added + 1) * sizeof(*tok->added));
	struct added_token *t = &tok->added[tok->n_added++];
	t->content = xstrdup(content);
	t->len = strlen(content);
	t->id = id;
	t->lstrip = lstrip;
	t->rstrip = rstrip;
	t->single_word = single_word;
	t->special = special;
}

static const struct added_token *
find_added(const struct text_tokenizer *tok, const char *s, size_t n)
{
	for (int i = 0; i < tok->n_added; i++) {
		if (tok->added[i].len == n &&
		    memcmp(tok->added[i].content, s, n) == 0) {
			return &tok->added[i];
		}
	}
	return NULL;
}

static const struct added_token *
find_added_id(const struct text_tokenizer *tok, int id)
{
	for (int i = 0; i < tok->n_added; i++) {
		if (tok->added[i].id == id) {
			return &tok->added[i];
		}
	}
	return NULL;
}

/* A special token's content: a string or an AddedToken dict. */
static const char *
special_content(const cJSON *cfg, const cJSON *map, const char *key,
    const char *def)
{
	const cJSON *objs[2] = { cfg, map };
	for (int i = 0; i < 2; i++) {
		const cJSON *v = objs[i] ?
		    cJSON_GetObjectItemCaseSensitive(objs[i], key) : NULL;
		if (cJSON_IsString(v)) {
			return v->valuestring;
		}
		if (cJSON_IsObject(v)) {
			return json_get_string(v, "content", def);
		}
	}
	return def;
}

/* Id of a token string as convert_tokens_to_ids: added tokens first. */
static int
token_to_id(const struct text_tokenizer *tok, const char *s)
{
	const struct added_token *t = find_added(tok, s, strlen(s));
	return t ? t->id : text_spm_piece_to_id(tok->spm, s);
}

static cJSON *
read_json(const char *path, bool required, struct lq_error *err, bool *bad)
{
	char *text = util_read_file(path, NULL);
	if (text == NULL) {
		if (required) {
			error_set(err, LQ_FAILED, "LQ-TOK-004",
			    "cannot read %s: %s", path, util_strerror(errno));
			error_set_where(err, path, 0, 0);
			*bad = true;
		}
		return NULL;
	}
	cJSON *j = json_parse_document(text, strlen(text));
	free(text);
	if (j == NULL) {
		error_set(err, LQ_FAILED, "LQ-TOK-004", "%s is not valid JSON",
		    path);
		error_set_where(err, path, 0, 0);
		*bad = true;
	}
	return j;
}

enum lq_status
text_tokenizer_load(const char *dir, struct text_tokenizer **out,
    struct lq_error *err)
{
	*out = NULL;
	struct text_tokenizer *tok = xcalloc(1, sizeof(*tok));
	char *path = xasprintf("%s/spiece.model", dir);
	enum lq_status st = text_spm_load(path, &tok->spm, err);
	free(path);
	if (st != LQ_OK) {
		free(tok);
		return st;
	}

	bool bad = false;
	char *cfg_path = xasprintf("%s/tokenizer_config.json", dir);
	char *map_path = xasprintf("%s/special_tokens_map.json", dir);
	char *added_path = xasprintf("%s/added_tokens.json", dir);
	cJSON *cfg = read_json(cfg_path, true, err, &bad);
	cJSON *map = bad ? NULL : read_json(map_path, false, err, &bad);
	cJSON *added_json = bad ? NULL : read_json(added_path, false, err, &bad);
	if (bad) {
		goto fail;
	}

	const char *cls = json_get_string(cfg, "tokenizer_class", "T5Tokenizer");
	if (strcmp(cls, "T5Tokenizer") != 0 &&
	    strcmp(cls, "T5TokenizerFast") != 0) {
		error_set(err, LQ_FAILED, "LQ-TOK-004",
		    "tokenizer_class %s is not supported", cls);
		error_set_where(err, cfg_path, 0, 0);
		error_set_field(err, "tokenizer_class");
		error_set_hint(err, "LTX-Video uses T5Tokenizer");
		goto fail;
	}
	/* transformers defaults legacy to True (with a warning) when unset. */
	const cJSON *legacy = cJSON_GetObjectItemCaseSensitive(cfg, "legacy");
	if (cJSON_IsFalse(legacy)) {
		error_set(err, LQ_FAILED, "LQ-TOK-004",
		    "legacy: false T5 tokenisation is not supported");
		error_set_where(err, cfg_path, 0, 0);
		error_set_field(err, "legacy");
		error_set_hint(err, "LTX-Video's tokenizer uses legacy: true");
		goto fail;
	}

	/* Added tokens: the serialised added_tokens_decoder when present. */
	const cJSON *dec = cJSON_GetObjectItemCaseSensitive(cfg,
	    "added_tokens_decoder");
	if (cJSON_IsObject(dec)) {
		const cJSON *e;
		cJSON_ArrayForEach(e, dec) {
			char *end;
			long id = strtol(e->string, &end, 10);
			if (*end != '\0' || !cJSON_IsObject(e)) {
				error_set(err, LQ_FAILED, "LQ-TOK-004",
				    "added_tokens_decoder key \"%s\" is not an "
				    "id with a token", e->string);
				error_set_where(err, cfg_path, 0, 0);
				goto fail;
			}
			add_token(tok, json_get_string(e, "content", NULL),
			    (int)id, json_get_bool(e, "lstrip", 0),
			    json_get_bool(e, "rstrip", 0),
			    json_get_bool(e, "single_word", 0),
			    json_get_bool(e, "special", 0));
		}
	} else {
		/*
		 * Older folders: T5Tokenizer.__init__ adds <extra_id_i> at
		 * piece_size - 1 + extra_ids - i (lstrip/rstrip), then the
		 * special tokens (plain AddedTokens, ids from the vocab) and
		 * added_tokens.json.
		 */
		int extra = (int)json_get_int(cfg, "extra_ids", 100);
		int size = text_spm_piece_size(tok->spm);
		for (int i = 0; i < extra; i++) {
			char name[32];
			snprintf(name, sizeof(name), "<extra_id_%d>", i);
			add_token(tok, name, size - 1 + extra - i, true, true,
			    false, true);
		}
		const char *keys[3] = { "eos_token", "unk_token", "pad_token" };
		const char *defs[3] = { "</s>", "<unk>", "<pad>" };
		for (int i = 0; i < 3; i++) {
			const char *c = special_content(cfg, map, keys[i],
			    defs[i]);
			add_token(tok, c, text_spm_piece_to_id(tok->spm, c),
			    false, false, false, true);
		}
		const cJSON *e;
		cJSON_ArrayForEach(e, added_json) {
			if (cJSON_IsNumber(e)) {
				add_token(tok, e->string, e->valueint, false,
				    false, false, false);
			}
		}
	}
	tok->eos_id = token_to_id(tok,
	    special_content(cfg, map, "eos_token", "</s>"));
	tok->pad_id = token_to_id(tok,
	    special_content(cfg, map, "pad_token", "<pad>"));
	tok->unk_id = token_to_id(tok,
	    special_content(cfg, map, "unk_token", "<unk>"));

	cJSON_Delete(cfg);
	cJSON_Delete(map);
	cJSON_Delete(added_json);
	free(cfg_path);
	free(map_path);
	free(added_path);
	*out = tok;
	return LQ_OK;
fail:
	cJSON_Delete(cfg);
	cJSON_Delete(map);
	cJSON_Delete(added_json);
	free(cfg_path);
	free(map_path);
	free(added_path);
	text_tokenizer_free(tok);
	return LQ_FAILED;
}

void
text_tokenizer_free(struct text_tokenizer *tok)
{
	if (tok == NULL) {
		return;
	}
	text_spm_free(tok->spm);
	for (int i = 0; i < tok->n_added; i++) {
		free(tok->added[i].content);
	}
	free(tok->added);
	free(tok);
}

int
text_tokenizer_eos_id(const struct text_tokenizer *tok)
{
	return tok->eos_id;
}

int
text_tokenizer_pad_id(const struct text_tokenizer *tok)
{
	return tok->pad_id;
}

/* ---- encoding ----------------------------------------------------------- */

/* A chunk of the prompt: a byte range, and the added token it is (or NULL). */
struct chunk {
	const char *s;
	size_t n;
	const struct added_token *tok;
};

/*
 * Trie.split: cut the text around added tokens, leftmost match first and
 * the longest token among those starting there (so <extra_id_10> beats
 * <extra_id_1>).  UTF-8 is self-synchronising, so byte matching finds the
 * same matches as Python's code-point matching.
 */
static int
split_added(const struct text_tokenizer *tok, const char *text, size_t len,
    struct chunk **out)
{
	struct chunk *c = NULL;
	int n = 0, cap = 0;
	size_t start = 0, i = 0;
	while (i < len) {
		const struct added_token *best = NULL;
		for (int k = 0; k < tok->n_added; k++) {
			const struct added_token *t = &tok->added[k];
			if (t->len <= len - i &&
			    memcmp(text + i, t->content, t->len) == 0 &&
			    (best == NULL || t->len > best->len)) {
				best = t;
			}
		}
		if (best == NULL) {
			i++;
			continue;
		}
		if (n + 2 > cap) {
			cap = cap ? 2 * cap : 8;
			c = xrealloc(c, (size_t)cap * sizeof(*c));
		}
		if (i > start) {
			c[n++] = (struct chunk){ text + start, i - start, NULL };
		}
		c[n++] = (struct chunk){ text + i, best->len, best };
		i += best->len;
		start = i;
	}
	if (start < len || n == 0) {
		c = xrealloc(c, (size_t)(n + 1) * sizeof(*c));
		c[n++] = (struct chunk){ text + start, len - start, NULL };
	}
	*out = c;
	return n;
}

struct idvec {
	int64_t *v;
	int n, cap;
};

static void
idvec_push(struct idvec *iv, int64_t id)
{
	if (iv->n == iv->cap) {
		iv->cap = iv->cap ? 2 * iv->cap : 64;
		iv->v = xrealloc(iv->v, (size_t)iv->cap * sizeof(*iv->v));
	}
	iv->v[iv->n++] = id;
}

/* Text ids without special-token additions (tokenize + convert_tokens_to_ids). */
static enum lq_status
tokenize_ids(struct text_tokenizer *tok, const char *text, size_t len,
    struct idvec *ids, struct lq_error *err)
{
	struct chunk *c;
	int n = split_added(tok, text, len, &c);

	/* PreTrainedTokenizer.tokenize: whitespace eating and single_word. */
	for (int i = 0; i < n; i++) {
		const struct added_token *t = c[i].tok;
		if (t == NULL) {
			continue;
		}
		struct chunk *left = i > 0 ? &c[i - 1] : NULL;
		struct chunk *right = i < n - 1 ? &c[i + 1] : NULL;
		if (t->rstrip && right && right->n > 0) {
			size_t k = py_lstrip(right->s, right->n);
			right->s += k;
			right->n -= k;
		}
		if (t->lstrip && left && left->n > 0) {
			left->n = py_rstrip(left->s, left->n);
		}
		/*
		 * single_word glues the token to a neighbour that is not
		 * separated by a space; the merged text then goes through
		 * SentencePiece.  Chunks are views of the prompt, so this
		 * works when they are adjacent, which is always the case
		 * unless lstrip/rstrip removed the space between (no T5
		 * token combines those flags; then the token text is
		 * dropped instead of glued).
		 */
		if (t->single_word && left && left->n > 0 &&
		    left->s[left->n - 1] != ' ') {
			/* tokens[i-1] += token: the token becomes plain text */
			if (left->s + left->n == c[i].s) {
				left->n += c[i].n;
			}
			c[i].n = 0;
			c[i].tok = NULL;
		} else if (t->single_word && right && right->n > 0 &&
		    right->s[0] != ' ') {
			if (c[i].s + c[i].n == right->s) {
				right->s = c[i].s;
				right->n += c[i].n;
			}
			c[i].n = 0;
			c[i].tok = NULL;
		}
	}

	for (int i = 0; i < n; i++) {
		if (c[i].n == 0) {
			continue;
		}
		if (c[i].tok != NULL) {
			idvec_push(ids, c[i].tok->id);
			continue;
		}
		char **pieces;
		int np = text_spm_encode(tok->spm, c[i].s, c[i].n, &pieces,
		    err);
		if (np < 0) {
			free(c);
			return LQ_FAILED;
		}
		for (int k = 0; k < np; k++) {
			idvec_push(ids, token_to_id(tok, pieces[k]));
		}
		text_spm_pieces_free(pieces, np);
	}
	free(c);
	return LQ_OK;
}

enum lq_status
text_tokenizer_encode(struct text_tokenizer *tok, const char *prompt,
    int max_length, struct text_tokens *out, struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	LQ_ASSERT(max_length >= 1);
	size_t len = strlen(prompt);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int l = utf8_seq_len((const unsigned char *)prompt + i,
		    len - i, &cp);
		if (l == 0) {
			error_set(err, LQ_FAILED, "LQ-TOK-003",
			    "the prompt is not valid UTF-8 (byte %zu)", i);
			return LQ_FAILED;
		}
		i += (size_t)l;
	}

	struct idvec ids = { 0 };
	if (tokenize_ids(tok, prompt, len, &ids, err) != LQ_OK) {
		free(ids.v);
		return LQ_FAILED;
	}
	int n_text = ids.n;

	/* padding="longest": build_inputs_with_special_tokens, no cut. */
	bool ends_eos = n_text > 0 && ids.v[n_text - 1] == tok->eos_id;
	int untruncated = n_text + (ends_eos ? 0 : 1);

	/*
	 * prepare_for_model: num_special_tokens_to_add() is 1 (EOS on an
	 * empty list) whether or not the text already ends with </s>.
	 */
	int keep = n_text;
	if (n_text + 1 > max_length) {
		keep = max_length - 1;
	}
	out->max_length = max_length;
	out->untruncated_len = untruncated;
	out->num_dropped = n_text - keep;
	if (out->num_dropped > 0) {
		out->dropped_ids = xmalloc((size_t)out->num_dropped *
		    sizeof(int64_t));
		memcpy(out->dropped_ids, ids.v + keep,
		    (size_t)out->num_dropped * sizeof(int64_t));
		out->dropped_text = text_tokenizer_decode(tok, out->dropped_ids,
		    out->num_dropped);
	} else {
		out->dropped_text = xstrdup("");
	}

	out->input_ids = xmalloc((size_t)max_length * sizeof(int64_t));
	out->attention_mask = xmalloc((size_t)max_length * sizeof(int64_t));
	int n = keep;
	if (keep > 0) {
		memcpy(out->input_ids, ids.v, (size_t)keep * sizeof(int64_t));
	}
	if (!(n > 0 && out->input_ids[n - 1] == tok->eos_id)) {
		out->input_ids[n++] = tok->eos_id;
	}
	out->num_valid = n;
	for (int i = 0; i < max_length; i++) {
		if (i >= n) {
			out->input_ids[i] = tok->pad_id;
		}
		out->attention_mask[i] = i < n ? 1 : 0;
	}
	free(ids.v);
	return LQ_OK;
}

void
text_tokens_release(struct text_tokens *t)
{
	free(t->input_ids);
	free(t->attention_mask);
	free(t->dropped_ids);
	free(t->dropped_text);
	memset(t, 0, sizeof(*t));
}

/* ---- decoding ----------------------------------------------------------- */

static void
replace_all(struct strbuf *sb, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	struct strbuf o = { 0 };
	const char *p = sb->buf ? sb->buf : "";
	const char *q;
	while ((q = strstr(p, from)) != NULL) {
		strbuf_append(&o, p, (size_t)(q - p));
		strbuf_append(&o, to, tl);
		p = q + fl;
	}
	strbuf_append(&o, p, strlen(p));
	free(sb->buf);
	*sb = o;
}

/* sp.decode of the pending ordinary ids, appended to sb. */
static void
flush_pieces(const struct text_tokenizer *tok, struct strbuf *sb, int *run,
    int *nrun)
{
	if (*nrun > 0) {
		char *s = text_spm_decode(tok->spm, run, *nrun);
		strbuf_append(sb, s, strlen(s));
		free(s);
		*nrun = 0;
	}
}

/*
 * T5Tokenizer.convert_tokens_to_string: ordinary pieces decoded by
 * SentencePiece, special tokens inserted verbatim with a space before a run
 * of them; then strip() and clean_up_tokenization.
 */
char *
text_tokenizer_decode(const struct text_tokenizer *tok, const int64_t *ids,
    int n)
{
	struct strbuf sb = { 0 };
	int *run = xmalloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	int nrun = 0;
	bool prev_special = false;
	strbuf_append(&sb, "", 0);
	for (int i = 0; i < n; i++) {
		const struct added_token *t = find_added_id(tok, (int)ids[i]);
		if (t != NULL) {
			if (!prev_special) {
				strbuf_append(&sb, " ", 1);
			}
			flush_pieces(tok, &sb, run, &nrun);
			strbuf_append(&sb, t->content, t->len);
			prev_special = true;
		} else {
			run[nrun++] = (int)ids[i];
			prev_special = false;
		}
	}
	flush_pieces(tok, &sb, run, &nrun);
	free(run);

	size_t a = py_lstrip(sb.buf, sb.len);
	size_t b = py_rstrip(sb.buf, sb.len);
	struct strbuf st = { 0 };
	strbuf_append(&st, sb.buf + a, b > a ? b - a : 0);
	free(sb.buf);
	static const char *const clean[][2] = {
		{ " .", "." }, { " ?", "?" }, { " !", "!" }, { " ,", "," },
		{ " ' ", "'" }, { " n't", "n't" }, { " 'm", "'m" },
		{ " 's", "'s" }, { " 've", "'ve" }, { " 're", "'re" },
	};
	for (size_t i = 0; i < sizeof(clean) / sizeof(clean[0]); i++) {
		replace_all(&st, clean[i][0], clean[i][1]);
	}
	return strbuf_release(&st);
}
