/*
 * test-tokenizer.c — the T5 tokenizer against the ltxv-demo goldens:
 * 12 prompts (empty, whitespace, punctuation, upper case, unknown letters,
 * non-ASCII, tabs/newlines, literal special tokens, full-width letters,
 * digits and outer spaces, truncation) token for token, with the mask,
 * padding, untruncated length and what truncation dropped.
 */
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "model/safetensors.h"
#include "text/tokenizer.h"
#include "../test.h"

static char *
data_path(const char *rel)
{
	const char *top = getenv("top_srcdir");
	return xasprintf("%s/tests/data/text/%s", top ? top : ".", rel);
}

int
main(void)
{
	struct lq_error err;
	error_clear(&err);
	char *dir = data_path("ltxv-demo/tokenizer");
	struct text_tokenizer *tok = NULL;
	enum lq_status st = text_tokenizer_load(dir, &tok, &err);
	free(dir);
	if (st != LQ_OK) {
		error_print(&err, stderr);
		return 1;
	}
	CHECK_INT(text_tokenizer_eos_id(tok), 1);
	CHECK_INT(text_tokenizer_pad_id(tok), 0);

	char *pj_path = data_path("goldens/ltxv-demo/tokenizer/prompts.json");
	char *pj_text = util_read_file(pj_path, NULL);
	free(pj_path);
	CHECK(pj_text != NULL);
	cJSON *pj = cJSON_Parse(pj_text);
	free(pj_text);
	CHECK(pj != NULL);
	int max_len = (int)json_get_int(pj, "max_sequence_length", 0);
	CHECK_INT(max_len, 128);
	const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(pj, "prompts");
	CHECK_INT(cJSON_GetArraySize(prompts), 12);

	/* tokens.safetensors: the padded [12, 128] tensors themselves. */
	char *ts_path = data_path("goldens/ltxv-demo/tokenizer/tokens.safetensors");
	struct st_file *ts = NULL;
	st = st_file_open(ts_path, &ts, &err);
	free(ts_path);
	if (st != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	const struct st_tensor *g_ids = st_file_find(ts, "input_ids");
	const struct st_tensor *g_mask = st_file_find(ts, "attention_mask");
	CHECK(g_ids != NULL && g_mask != NULL);
	CHECK(g_ids->dtype == ST_I64 && g_mask->dtype == ST_I64);
	CHECK_INT(g_ids->shape[0], 12);
	CHECK_INT(g_ids->shape[1], max_len);

	int rows = 0, tokens_ok = 0;
	const cJSON *p;
	cJSON_ArrayForEach(p, prompts) {
		const char *text = json_get_string(p, "prompt", NULL);
		const cJSON *valid = cJSON_GetObjectItemCaseSensitive(p,
		    "valid_ids");
		int num_valid = (int)json_get_int(p, "num_valid", -1);
		int untrunc = (int)json_get_int(p, "untruncated_len", -1);
		struct text_tokens t;
		st = text_tokenizer_encode(tok, text, max_len, &t, &err);
		CHECK_INT(st, LQ_OK);
		if (st != LQ_OK) {
			error_print(&err, stderr);
			continue;
		}
		CHECK_INT(t.num_valid, num_valid);
		CHECK_INT(t.untruncated_len, untrunc);
		CHECK_INT(t.num_dropped,
		    untrunc > max_len ? untrunc - max_len : 0);
		int same = 1;
		for (int i = 0; i < max_len; i++) {
			const cJSON *v = cJSON_GetArrayItem(valid, i);
			long long want_id = i < num_valid ? (long long)v->valuedouble : 0;
			long long want_mask = i < num_valid ? 1 : 0;
			if (t.input_ids[i] != want_id ||
			    t.attention_mask[i] != want_mask) {
				same = 0;
				fprintf(stderr, "prompt %d \"%s\": position %d: "
				    "id %lld mask %lld, want %lld %lld\n", rows,
				    text, i, (long long)t.input_ids[i],
				    (long long)t.attention_mask[i], want_id,
				    want_mask);
				break;
			}
		}
		/* the same row of tokens.safetensors, bytes for bytes */
		size_t row = (size_t)max_len * sizeof(int64_t);
		int same_st = memcmp((const char *)g_ids->data + rows * row,
		    t.input_ids, row) == 0 &&
		    memcmp((const char *)g_mask->data + rows * row,
		    t.attention_mask, row) == 0;
		CHECK(same_st);
		same = same && same_st;
		CHECK(same);
		tokens_ok += same;
		if (t.num_dropped > 0) {
			printf("prompt %d: %d tokens, %d dropped: \"%s\"\n", rows,
			    t.untruncated_len, t.num_dropped, t.dropped_text);
			/* the 151-token prompt repeats "... on a gray background". */
			CHECK_CONTAINS(t.dropped_text, "gray b");
		}
		text_tokens_release(&t);
		rows++;
	}
	printf("%d/%d prompts token for token\n", tokens_ok, rows);

	/* Invalid UTF-8 is refused with a code. */
	struct text_tokens t;
	error_clear(&err);
	CHECK_INT(text_tokenizer_encode(tok, "a \xff red", 16, &t, &err),
	    LQ_FAILED);
	CHECK_STR(err.code, "LQ-TOK-003");

	/* A short max_length truncates to max_length - 1 tokens + EOS. */
	CHECK_INT(text_tokenizer_encode(tok, "a red circle moving left", 4, &t,
	    &err), LQ_OK);
	CHECK_INT(t.num_valid, 4);
	CHECK_INT(t.input_ids[0], 3);
	CHECK_INT(t.input_ids[3], 1);
	CHECK_INT(t.num_dropped, 3);
	CHECK_STR(t.dropped_text, "moving left");
	text_tokens_release(&t);

	/* A prompt ending in a literal </s>: no second EOS (upstream's
	 * _add_eos_if_not_present). */
	CHECK_INT(text_tokenizer_encode(tok, "a red circle</s>", 8, &t, &err),
	    LQ_OK);
	CHECK_INT(t.num_valid, 4);
	CHECK_INT(t.untruncated_len, 4);
	CHECK_INT(t.input_ids[2], 14);
	CHECK_INT(t.input_ids[3], 1);
	CHECK_INT(t.input_ids[4], 0);
	text_tokens_release(&t);

	/* Longest added token wins (<extra_id_10> over <extra_id_1>), from a
	 * tokenizer_config.json with more added tokens. */
	char tmpl[] = "/tmp/lq-tok-XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	char *src = data_path("ltxv-demo/tokenizer/spiece.model");
	char *dst = xasprintf("%s/spiece.model", tmpl);
	size_t n;
	char *bytes = util_read_file(src, &n);
	FILE *fp = fopen(dst, "wb");
	CHECK(bytes != NULL && fp != NULL && fwrite(bytes, 1, n, fp) == n);
	fclose(fp);
	free(bytes);
	char *cfgp = xasprintf("%s/tokenizer_config.json", tmpl);
	fp = fopen(cfgp, "w");
	fputs("{\"added_tokens_decoder\": {"
	    "\"0\": {\"content\": \"<pad>\", \"special\": true},"
	    "\"1\": {\"content\": \"</s>\", \"special\": true},"
	    "\"2\": {\"content\": \"<unk>\", \"special\": true},"
	    "\"98\": {\"content\": \"<extra_id_1>\", \"lstrip\": true,"
	    " \"rstrip\": true, \"special\": true},"
	    "\"97\": {\"content\": \"<extra_id_10>\", \"lstrip\": true,"
	    " \"rstrip\": true, \"special\": true}},"
	    " \"eos_token\": \"</s>\", \"pad_token\": \"<pad>\","
	    " \"unk_token\": \"<unk>\", \"legacy\": true,"
	    " \"tokenizer_class\": \"T5Tokenizer\"}", fp);
	fclose(fp);
	struct text_tokenizer *tok2 = NULL;
	CHECK_INT(text_tokenizer_load(tmpl, &tok2, &err), LQ_OK);
	if (tok2 != NULL) {
		CHECK_INT(text_tokenizer_encode(tok2, "a <extra_id_10> b<extra_id_1>",
		    8, &t, &err), LQ_OK);
		CHECK_INT(t.num_valid, 5);
		CHECK_INT(t.input_ids[0], 3);
		CHECK_INT(t.input_ids[1], 97);
		CHECK_INT(t.input_ids[2], 11);
		CHECK_INT(t.input_ids[3], 98);
		CHECK_INT(t.input_ids[4], 1);
		text_tokens_release(&t);
		text_tokenizer_free(tok2);
	}
	/* legacy: false is refused rather than tokenised differently */
	fp = fopen(cfgp, "w");
	fputs("{\"legacy\": false}", fp);
	fclose(fp);
	CHECK_INT(text_tokenizer_load(tmpl, &tok2, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-TOK-004");
	CHECK_STR(err.field, "legacy");
	remove(cfgp);
	remove(dst);
	rmdir(tmpl);
	free(cfgp);
	free(dst);
	free(src);

	/* Missing folder. */
	struct text_tokenizer *bad = NULL;
	CHECK_INT(text_tokenizer_load("/nonexistent", &bad, &err), LQ_FAILED);
	CHECK(bad == NULL);
	CHECK_STR(err.code, "LQ-TOK-001");

	st_file_close(ts);
	cJSON_Delete(pj);
	text_tokenizer_free(tok);
	return test_summary();
}
