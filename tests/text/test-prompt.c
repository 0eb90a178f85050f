/*
 * test-prompt.c — prompt embeddings as LTXPipeline builds them, without a
 * GPU: a fake encoder (embedding = a function of the ids, calls counted) and
 * an in-memory embedding cache check that a repeated prompt is not encoded
 * twice, that prompt + negative are one batched call, and that errors and
 * truncation are reported; the ids and masks of the ltxv-demo pipeline
 * goldens (demoA, demoB: prompt and empty negative prompt) are reproduced
 * exactly.  (The real-encoder embeddings are checked in test-t5.)
 */
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "core/util.h"
#include "model/safetensors.h"
#include "store/store.h"
#include "text/prompt.h"
#include "../test.h"

static char *
data_path(const char *rel)
{
	const char *top = getenv("top_srcdir");
	return xasprintf("%s/tests/data/text/%s", top ? top : ".", rel);
}

/* ---- fake encoder ---- */

struct fake {
	int calls, rows;
	int fail;
};

static enum lq_status
fake_forward(void *impl, const int64_t *ids, int B, int T, float *out,
    struct lq_error *err)
{
	struct fake *f = impl;
	if (f->fail) {
		return error_set(err, LQ_RETRY, "LQ-GPU-LOST", "device lost");
	}
	f->calls++;
	f->rows += B;
	for (int b = 0; b < B; b++) {
		for (int t = 0; t < T; t++) {
			for (int d = 0; d < 4; d++) {
				out[((size_t)b * T + t) * 4 + d] =
				    (float)(ids[b * T + t] * 10 + d + t * 1000);
			}
		}
	}
	return LQ_OK;
}

/* ---- in-memory cache ---- */

struct entry {
	char enc[80], ids[DIGEST_HEX_SIZE];
	float *v;
	size_t n;
};

struct memcache {
	struct entry e[16];
	int n, lookups, inserts;
};

static enum lq_status
mc_lookup(void *ud, const char *enc, const char *ids, int T, int D,
    float *embeds, int *found, struct lq_error *err)
{
	struct memcache *c = ud;
	(void)err;
	c->lookups++;
	*found = 0;
	for (int i = 0; i < c->n; i++) {
		if (strcmp(c->e[i].enc, enc) == 0 &&
		    strcmp(c->e[i].ids, ids) == 0 &&
		    c->e[i].n == (size_t)T * D) {
			memcpy(embeds, c->e[i].v, c->e[i].n * sizeof(float));
			*found = 1;
		}
	}
	return LQ_OK;
}

static enum lq_status
mc_insert(void *ud, const char *enc, const char *ids, int T, int D,
    const float *embeds, struct lq_error *err)
{
	struct memcache *c = ud;
	if (c->n == 16) {
		return error_set(err, LQ_FAILED, NULL, "full");
	}
	c->inserts++;
	struct entry *e = &c->e[c->n++];
	snprintf(e->enc, sizeof(e->enc), "%s", enc);
	snprintf(e->ids, sizeof(e->ids), "%s", ids);
	e->n = (size_t)T * D;
	e->v = xmalloc(e->n * sizeof(float));
	memcpy(e->v, embeds, e->n * sizeof(float));
	return LQ_OK;
}

static int
row_matches(const float *emb, const int64_t *ids, int T)
{
	for (int t = 0; t < T; t++) {
		for (int d = 0; d < 4; d++) {
			if (emb[t * 4 + d] != (float)(ids[t] * 10 + d + t * 1000)) {
				return 0;
			}
		}
	}
	return 1;
}

static void
check_golden_ids(struct text_tokenizer *tok, const char *dir)
{
	char *p = xasprintf("%s/inputs.safetensors", dir);
	char *path = data_path(p);
	free(p);
	struct st_file *f = NULL;
	struct lq_error err;
	if (st_file_open(path, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(path);
	const char *prompt = st_file_metadata(f, "prompt");
	CHECK(prompt != NULL);
	struct fake fk = { 0 };
	struct text_encoder_iface enc = { 4, NULL, fake_forward, &fk };
	struct text_prompt_request req = { prompt, NULL, 128, 1, 0 };
	struct text_prompt_embeds e;
	CHECK_INT(text_prompt_encode(tok, &enc, NULL, &req, &e, &err), LQ_OK);
	const char *names[4] = { "prompt_input_ids", "prompt_attention_mask",
	    "negative_prompt_input_ids", "negative_prompt_attention_mask" };
	const int64_t *mine[4] = { e.prompt_input_ids, e.prompt_attention_mask,
	    e.negative_prompt_input_ids, e.negative_prompt_attention_mask };
	for (int i = 0; i < 4; i++) {
		const struct st_tensor *t = st_file_find(f, names[i]);
		CHECK(t != NULL && t->nbytes == 128 * sizeof(int64_t));
		if (t != NULL && mine[i] != NULL) {
			int same = memcmp(t->data, mine[i], t->nbytes) == 0;
			if (!same) {
				fprintf(stderr, "%s: %s differs\n", dir, names[i]);
			}
			CHECK(same);
		}
	}
	printf("%s: \"%s\": ids and masks as the pipeline\n", dir, prompt);
	text_prompt_embeds_release(&e);
	st_file_close(f);
}

/* prompt_embeds: FILE — the pipeline golden itself, then bad files. */
static void
check_prompt_file(void)
{
	struct lq_error err;
	error_clear(&err);
	struct text_prompt_file pf;
	char *golden = data_path("goldens/ltxv-demo/pipeline/demoA/inputs.safetensors");
	CHECK_INT(text_prompt_file_load(golden, 64, &pf, &err), LQ_OK);
	CHECK_INT(pf.B, 1);
	CHECK_INT(pf.T, 128);
	CHECK_INT(pf.D, 64);
	CHECK(pf.negative_prompt_embeds != NULL);
	struct st_file *f = NULL;
	CHECK_INT(st_file_open(golden, &f, &err), LQ_OK);
	if (f != NULL && pf.prompt_embeds != NULL) {
		float *g = st_tensor_to_f32(st_file_find(f, "prompt_embeds"));
		CHECK(memcmp(g, pf.prompt_embeds, 128 * 64 * sizeof(float)) == 0);
		free(g);
		CHECK(memcmp(st_file_find(f, "negative_prompt_attention_mask")->data,
		    pf.negative_prompt_attention_mask, 128 * sizeof(int64_t)) == 0);
	}
	st_file_close(f);
	text_prompt_file_release(&pf);
	CHECK_INT(text_prompt_file_load(golden, 4096, &pf, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-EMB-003");
	free(golden);

	char tmpl[] = "/tmp/lq-emb-XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	char *path = xasprintf("%s/e.safetensors", tmpl);
	float emb[2 * 3 * 4];
	for (int i = 0; i < 24; i++) {
		emb[i] = 0.25f * (float)i;
	}
	uint8_t mask[6] = { 1, 1, 0, 1, 0, 0 };
	const int64_t s3[3] = { 2, 3, 4 }, s2[2] = { 2, 3 };

	/* BF16 embeds + BOOL mask, B = 2, no negative: fine */
	struct st_writer *w = st_writer_new();
	st_writer_add_f32(w, "prompt_embeds", ST_BF16, 3, s3, emb);
	st_writer_add(w, "prompt_attention_mask", ST_BOOL, 2, s2, mask);
	CHECK_INT(st_writer_write(w, path, &err), LQ_OK);
	st_writer_free(w);
	CHECK_INT(text_prompt_file_load(path, 0, &pf, &err), LQ_OK);
	CHECK_INT(pf.B, 2);
	CHECK(pf.negative_prompt_embeds == NULL);
	CHECK(pf.prompt_embeds != NULL && pf.prompt_embeds[5] == 1.25f);
	CHECK(pf.prompt_attention_mask != NULL &&
	    pf.prompt_attention_mask[2] == 0 && pf.prompt_attention_mask[3] == 1);
	text_prompt_file_release(&pf);

	/* embeds without mask */
	w = st_writer_new();
	st_writer_add_f32(w, "prompt_embeds", ST_F32, 3, s3, emb);
	CHECK_INT(st_writer_write(w, path, &err), LQ_OK);
	st_writer_free(w);
	CHECK_INT(text_prompt_file_load(path, 0, &pf, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-EMB-001");
	CHECK_STR(err.field, "prompt_attention_mask");

	/* negative of another length */
	w = st_writer_new();
	st_writer_add_f32(w, "prompt_embeds", ST_F32, 3, s3, emb);
	st_writer_add(w, "prompt_attention_mask", ST_U8, 2, s2, mask);
	st_writer_add_f32(w, "negative_prompt_embeds", ST_F32, 3,
	    (int64_t[]){ 2, 2, 4 }, emb);
	st_writer_add(w, "negative_prompt_attention_mask", ST_U8, 2,
	    (int64_t[]){ 2, 2 }, mask);
	CHECK_INT(st_writer_write(w, path, &err), LQ_OK);
	st_writer_free(w);
	CHECK_INT(text_prompt_file_load(path, 0, &pf, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-EMB-003");
	CHECK_STR(err.field, "negative_prompt_embeds");
	printf("bad prompt_embeds file: %s\n", err.message);

	/* no prompt_embeds at all; integer embeds */
	w = st_writer_new();
	st_writer_add(w, "prompt_embeds", ST_I64, 2, s2, (int64_t[6]){ 0 });
	st_writer_add(w, "prompt_attention_mask", ST_U8, 2, s2, mask);
	CHECK_INT(st_writer_write(w, path, &err), LQ_OK);
	st_writer_free(w);
	CHECK_INT(text_prompt_file_load(path, 0, &pf, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-EMB-002");
	w = st_writer_new();
	st_writer_add(w, "other", ST_U8, 2, s2, mask);
	CHECK_INT(st_writer_write(w, path, &err), LQ_OK);
	st_writer_free(w);
	CHECK_INT(text_prompt_file_load(path, 0, &pf, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-EMB-001");
	CHECK_STR(err.field, "prompt_embeds");
	unlink(path);
	rmdir(tmpl);
	free(path);
}

int
main(void)
{
	struct lq_error err;
	error_clear(&err);
	char *dir = data_path("ltxv-demo/tokenizer");
	struct text_tokenizer *tok = NULL;
	if (text_tokenizer_load(dir, &tok, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	free(dir);

	/* Preflight. */
	const char *unit = "a yellow circle moving up on a gray background ";
	struct strbuf longp = { 0 };
	for (int i = 0; i < 10; i++) {
		strbuf_append(&longp, unit, strlen(unit));
	}
	CHECK_INT(text_prompt_check(tok, "a red circle", 128, 0, NULL, &err),
	    LQ_OK);
	error_clear(&err);
	CHECK_INT(text_prompt_check(tok, longp.buf, 128, 0, "jobs[1].prompt",
	    &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-TOK-005");
	CHECK_STR(err.field, "jobs[1].prompt");
	CHECK_CONTAINS(err.message, "151 tokens");
	CHECK_CONTAINS(err.hint, "truncate: true");
	printf("too long: %s; %s\n", err.message, err.hint);
	error_clear(&err);
	CHECK_INT(text_prompt_check(tok, longp.buf, 128, 1, NULL, &err),
	    LQ_WARN);
	CHECK_CONTAINS(err.message, "dropped");
	CHECK_INT(text_prompt_check(tok, "bad \xc3", 128, 0, "p", &err),
	    LQ_FAILED);
	CHECK_STR(err.code, "LQ-TOK-003");

	/* Cache: a repeated prompt is not encoded again. */
	struct fake fk = { 0 };
	struct memcache mc = { 0 };
	struct text_encoder_iface enc = { 4, "encoder-digest-1", fake_forward,
	    &fk };
	struct text_embed_cache cache = { mc_lookup, mc_insert, &mc };
	struct text_prompt_request req = { "a red circle moving left", NULL,
	    16, 1, 0 };
	struct text_prompt_embeds e1, e2;
	CHECK_INT(text_prompt_encode(tok, &enc, &cache, &req, &e1, &err),
	    LQ_OK);
	CHECK_INT(fk.calls, 1);
	CHECK_INT(fk.rows, 2);		/* prompt and "" in one batch */
	CHECK_INT(e1.encoder_calls, 1);
	CHECK_INT(e1.cache_hits, 0);
	CHECK_INT(mc.inserts, 2);
	CHECK_INT(e1.T, 16);
	CHECK_INT(e1.D, 4);
	CHECK(row_matches(e1.prompt_embeds, e1.prompt_input_ids, 16));
	CHECK(row_matches(e1.negative_prompt_embeds,
	    e1.negative_prompt_input_ids, 16));
	CHECK_INT(e1.negative_prompt_input_ids[0], 1);	/* "" -> [</s>] */
	CHECK_INT(e1.negative_prompt_attention_mask[1], 0);

	CHECK_INT(text_prompt_encode(tok, &enc, &cache, &req, &e2, &err),
	    LQ_OK);
	CHECK_INT(fk.calls, 1);		/* not run again */
	CHECK_INT(e2.encoder_calls, 0);
	CHECK_INT(e2.cache_hits, 2);
	CHECK(memcmp(e1.prompt_embeds, e2.prompt_embeds,
	    16 * 4 * sizeof(float)) == 0);
	CHECK(memcmp(e1.prompt_attention_mask, e2.prompt_attention_mask,
	    16 * sizeof(int64_t)) == 0);
	printf("repeated prompt: %d encoder call(s) for 2 requests, %d cache "
	    "hits\n", fk.calls, e2.cache_hits);
	text_prompt_embeds_release(&e2);

	/* A new prompt with the same (empty) negative: 1 row encoded. */
	req.prompt = "a blue square";
	CHECK_INT(text_prompt_encode(tok, &enc, &cache, &req, &e2, &err),
	    LQ_OK);
	CHECK_INT(fk.calls, 2);
	CHECK_INT(fk.rows, 3);
	CHECK_INT(e2.cache_hits, 1);
	text_prompt_embeds_release(&e2);

	/* Another encoder digest misses; no CFG: no negative. */
	struct text_encoder_iface enc2 = enc;
	enc2.digest = "encoder-digest-2";
	req.do_classifier_free_guidance = 0;
	CHECK_INT(text_prompt_encode(tok, &enc2, &cache, &req, &e2, &err),
	    LQ_OK);
	CHECK_INT(fk.calls, 3);
	CHECK(e2.negative_prompt_embeds == NULL);
	text_prompt_embeds_release(&e2);

	/* Prompt equal to the negative: one row. */
	req.prompt = "";
	req.do_classifier_free_guidance = 1;
	enc2.digest = NULL;		/* no caching */
	int rows = fk.rows;
	CHECK_INT(text_prompt_encode(tok, &enc2, &cache, &req, &e2, &err),
	    LQ_OK);
	CHECK_INT(fk.rows, rows + 1);
	CHECK(memcmp(e2.prompt_embeds, e2.negative_prompt_embeds,
	    16 * 4 * sizeof(float)) == 0);
	text_prompt_embeds_release(&e2);

	/* Too long without truncate: nothing encoded; with: LQ_WARN. */
	req.prompt = longp.buf;
	req.max_sequence_length = 128;
	int calls = fk.calls;
	CHECK_INT(text_prompt_encode(tok, &enc2, NULL, &req, &e2, &err),
	    LQ_FAILED);
	CHECK_STR(err.code, "LQ-TOK-005");
	CHECK_STR(err.field, "prompt");
	CHECK_INT(fk.calls, calls);
	CHECK(e2.prompt_embeds == NULL);
	req.truncate = 1;
	CHECK_INT(text_prompt_encode(tok, &enc2, NULL, &req, &e2, &err),
	    LQ_WARN);
	CHECK_INT(e2.prompt_attention_mask[127], 1);
	CHECK_INT(e2.prompt_input_ids[127], 1);
	text_prompt_embeds_release(&e2);

	/* Encoder failure passes through (device lost is a RETRY). */
	fk.fail = 1;
	req.prompt = "a green circle";
	req.truncate = 0;
	CHECK_INT(text_prompt_encode(tok, &enc2, NULL, &req, &e2, &err),
	    LQ_RETRY);
	CHECK(e2.prompt_embeds == NULL);

	text_prompt_embeds_release(&e1);
	for (int i = 0; i < mc.n; i++) {
		free(mc.e[i].v);
	}
	free(longp.buf);

	/* The queue database's text_cache: hit within a run and after a
	 * reopen (a resumed job does not re-encode). */
	char tmpl[] = "/tmp/lq-text-XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	char *db = xasprintf("%s/queue.db", tmpl);
	struct store *sdb = NULL;
	CHECK_INT(store_open(db, &sdb, &err), LQ_OK);
	if (sdb != NULL) {
		struct text_embed_cache sc = text_embed_cache_from_store(sdb);
		struct text_prompt_request r2 = { "a white triangle", NULL, 16,
		    1, 0 };
		fk.fail = 0;
		calls = fk.calls;
		CHECK_INT(text_prompt_encode(tok, &enc, &sc, &r2, &e2, &err),
		    LQ_OK);
		CHECK_INT(fk.calls, calls + 1);
		text_prompt_embeds_release(&e2);
		store_close(sdb);
		CHECK_INT(store_open(db, &sdb, &err), LQ_OK);
		sc = text_embed_cache_from_store(sdb);
		CHECK_INT(text_prompt_encode(tok, &enc, &sc, &r2, &e2, &err),
		    LQ_OK);
		CHECK_INT(fk.calls, calls + 1);
		CHECK_INT(e2.cache_hits, 2);
		CHECK(row_matches(e2.prompt_embeds, e2.prompt_input_ids, 16));
		text_prompt_embeds_release(&e2);
		/* another max_sequence_length is another key (other ids) */
		r2.max_sequence_length = 8;
		CHECK_INT(text_prompt_encode(tok, &enc, &sc, &r2, &e2, &err),
		    LQ_OK);
		CHECK_INT(fk.calls, calls + 2);
		text_prompt_embeds_release(&e2);
		store_close(sdb);
	}
	unlink(db);
	char *wal = xasprintf("%s-wal", db), *shm = xasprintf("%s-shm", db);
	unlink(wal);
	unlink(shm);
	rmdir(tmpl);
	free(wal);
	free(shm);
	free(db);

	check_golden_ids(tok, "goldens/ltxv-demo/pipeline/demoA");
	check_golden_ids(tok, "goldens/ltxv-demo/pipeline/demoB");
	check_prompt_file();

	text_tokenizer_free(tok);
	return test_summary();
}
