/*
 * test-lora.c — LoRA key forms, PEFT alpha/rank scaling (tensor, metadata,
 * patterns, rsLoRA, default), fusing against hand-computed results, and the
 * problems preflight reports (every one, by name).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "model/diffusers.h"
#include "model/expected.h"
#include "model/load.h"
#include "model/lora.h"
#include "../test.h"

static char tmp[] = "/tmp/lq-lora-XXXXXX";

/* A = [[1,2,3],[0,1,0]] (r 2, in 3), B = [[1,0],[2,1]] (out 2):
 * B @ A = [[1,2,3],[2,5,6]] */
static const float A23[6] = {1, 2, 3, 0, 1, 0};
static const float B22[4] = {1, 0, 2, 1};

static void
add_pair(struct st_writer *w, const char *prefix, const char *module, const char *a,
    const char *b, enum st_dtype dt)
{
	char na[256], nb[256];
	snprintf(na, sizeof(na), "%s%s.%s.weight", prefix, module, a);
	snprintf(nb, sizeof(nb), "%s%s.%s.weight", prefix, module, b);
	st_writer_add_f32(w, na, dt, 2, (int64_t[]){2, 3}, A23);
	st_writer_add_f32(w, nb, dt, 2, (int64_t[]){2, 2}, B22);
}

static char *
write_lora(struct st_writer *w, const char *name)
{
	char *p = xasprintf("%s/%s", tmp, name);
	struct lq_error err;
	LQ_ASSERT(st_writer_write(w, p, &err) == LQ_OK);
	st_writer_free(w);
	return p;
}

static void
check_fused(const struct lora_pair *p, double scale, double factor)
{
	float wt[6] = {1, 1, 1, 1, 1, 1};
	lora_fuse_pair(p, scale, wt, 2, 3);
	/* hand-computed: 1 + factor * (B @ A) */
	const double ba[6] = {1, 2, 3, 2, 5, 6};
	double maxerr = 0;
	for (int i = 0; i < 6; i++)
		maxerr = fmax(maxerr, fabs(wt[i] - (1 + factor * ba[i])));
	printf("%-40s factor %-8g max abs err %.3g\n", p->module, factor, maxerr);
	CHECK(maxerr <= 1e-6);
}

static void
test_forms_and_scaling(void)
{
	struct lq_error err;
	error_clear(&err);
	struct st_writer *w = st_writer_new();
	/* diffusers prefix, alpha tensor 4, rank 2: scaling 2 */
	add_pair(w, "transformer.", "transformer_blocks.0.attn1.to_q", "lora_A", "lora_B", ST_F32);
	float four = 4;
	st_writer_add(w, "transformer.transformer_blocks.0.attn1.to_q.alpha", ST_F32, 0, NULL, &four);
	/* PEFT prefix, no alpha: metadata alpha 8 -> scaling 4 */
	add_pair(w, "base_model.model.", "transformer_blocks.0.attn1.to_k", "lora_A", "lora_B",
	    ST_F32);
	/* original format with renames, kohya down/up, bf16 */
	add_pair(w, "diffusion_model.", "patchify_proj", "lora_down", "lora_up", ST_BF16);
	/* bare keys; alpha_pattern 1 -> scaling 0.5 */
	add_pair(w, "", "transformer_blocks.0.ff.net.2", "lora_A", "lora_B", ST_F16);
	st_writer_set_metadata(w, "lora_adapter_metadata",
	    "{\"transformer.r\": 2, \"transformer.lora_alpha\": 8, "
	    "\"transformer.alpha_pattern\": {\"ff.net.2\": 1}}");
	char *path = write_lora(w, "forms.safetensors");
	struct lora *l = NULL;
	CHECK_INT(lora_open(path, &l, &err), LQ_OK);
	if (l == NULL) {
		error_print(&err, stderr);
		return;
	}
	CHECK_INT(l->n, 4);
	const struct lora_pair *q = lora_find(l, "transformer_blocks.0.attn1.to_q.weight");
	const struct lora_pair *k = lora_find(l, "transformer_blocks.0.attn1.to_k.weight");
	const struct lora_pair *pi = lora_find(l, "proj_in.weight");
	const struct lora_pair *ff = lora_find(l, "transformer_blocks.0.ff.net.2.weight");
	CHECK(q && k && pi && ff);
	if (q && k && pi && ff) {
		CHECK_INT(q->rank, 2);
		CHECK_NEAR(q->scaling, 2.0, 0);
		CHECK_NEAR(k->scaling, 4.0, 0);
		CHECK_NEAR(pi->scaling, 4.0, 0);
		CHECK_NEAR(ff->scaling, 0.5, 0);
		/* W += s * (alpha / r) * B @ A, with the manifest scale s */
		check_fused(q, 0.5, 1.0);
		check_fused(k, 0.25, 1.0);
		check_fused(pi, 1.0, 4.0);
		check_fused(ff, 2.0, 1.0);
	}
	/* two LoRAs on one weight add up */
	struct lora *ls[2] = {l, l};
	double scales[2] = {0.25, 0.25};
	float wt[6] = {1, 1, 1, 1, 1, 1};
	CHECK_INT(lora_fuse_weight(ls, scales, 2, "transformer_blocks.0.attn1.to_q.weight", wt, 2,
	    3), 2);
	CHECK_NEAR(wt[5], 1 + 6.0, 1e-6);
	CHECK_INT(lora_fuse_weight(ls, scales, 2, "nothing.weight", wt, 2, 3), 0);
	lora_free(l);
	free(path);

	/* default alpha = r (scaling 1); rsLoRA alpha / sqrt(r) */
	w = st_writer_new();
	add_pair(w, "transformer.", "proj_out", "lora_A", "lora_B", ST_F32);
	path = write_lora(w, "default.safetensors");
	CHECK_INT(lora_open(path, &l, &err), LQ_OK);
	if (l) {
		CHECK_NEAR(l->pairs[0].scaling, 1.0, 0);
		lora_free(l);
	}
	free(path);
	w = st_writer_new();
	add_pair(w, "transformer.", "proj_out", "lora_A", "lora_B", ST_F32);
	st_writer_set_metadata(w, "lora_adapter_metadata",
	    "{\"transformer.lora_alpha\": 4, \"transformer.use_rslora\": true}");
	path = write_lora(w, "rslora.safetensors");
	CHECK_INT(lora_open(path, &l, &err), LQ_OK);
	if (l) {
		CHECK_NEAR(l->pairs[0].scaling, 4 / sqrt(2.0), 1e-12);
		lora_free(l);
	}
	free(path);
	/* kohya-style metadata alpha */
	w = st_writer_new();
	add_pair(w, "transformer.", "proj_out", "lora_A", "lora_B", ST_F32);
	st_writer_set_metadata(w, "ss_network_alpha", "1");
	path = write_lora(w, "kohya.safetensors");
	CHECK_INT(lora_open(path, &l, &err), LQ_OK);
	if (l) {
		CHECK_NEAR(l->pairs[0].scaling, 0.5, 0);
		lora_free(l);
	}
	free(path);
}

static void
test_file_problems(void)
{
	struct lq_error err;
	struct st_writer *w = st_writer_new();
	/* unpaired */
	st_writer_add_f32(w, "transformer.proj_out.lora_A.weight", ST_F32, 2, (int64_t[]){2, 3},
	    A23);
	/* rank mismatch: A rank 2, B rank 1 */
	st_writer_add_f32(w, "transformer.proj_in.lora_A.weight", ST_F32, 2, (int64_t[]){2, 3},
	    A23);
	st_writer_add_f32(w, "transformer.proj_in.lora_B.weight", ST_F32, 2, (int64_t[]){4, 1},
	    B22);
	/* text encoder and junk keys */
	st_writer_add_f32(w, "text_encoder.encoder.block.0.q.lora_A.weight", ST_F32, 1,
	    (int64_t[]){2}, A23);
	st_writer_add_f32(w, "transformer.proj_in.weight", ST_F32, 1, (int64_t[]){2}, A23);
	char *path = write_lora(w, "bad.safetensors");
	struct lora *l = (struct lora *)1;
	error_clear(&err);
	CHECK_INT(lora_open(path, &l, &err), LQ_FAILED);
	CHECK(l == NULL);
	CHECK_CONTAINS(err.file, "bad.safetensors");
	CHECK_CONTAINS(err.message, "and 3 more problems");
	printf("%s\n", err.message);
	free(path);

	/* a damaged file keeps the safetensors rule in the message */
	path = xasprintf("%s/trunc.safetensors", tmp);
	FILE *fp = fopen(path, "w");
	fputs("abc", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(lora_open(path, &l, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-LORA-001");
	CHECK_CONTAINS(err.message, "LQ-ST-002");
	free(path);

	/* each kind alone names its code */
	struct {
		const char *name, *code;
		int rank_b;
	} one[] = {{"transformer.x.lora_A.weight", "LQ-LORA-002", 0},
		{"transformer.x.lora_B.weight", "LQ-LORA-003", 1},
		{"text_encoder.x.lora_A.weight", "LQ-LORA-004", 0}};
	for (size_t i = 0; i < LQ_ARRAY_LEN(one); i++) {
		w = st_writer_new();
		if (one[i].rank_b) {
			st_writer_add_f32(w, "transformer.x.lora_A.weight", ST_F32, 2,
			    (int64_t[]){2, 3}, A23);
			st_writer_add_f32(w, one[i].name, ST_F32, 2, (int64_t[]){4, 1}, B22);
		} else {
			st_writer_add_f32(w, one[i].name, ST_F32, 2, (int64_t[]){2, 3}, A23);
		}
		path = write_lora(w, "one.safetensors");
		error_clear(&err);
		CHECK_INT(lora_open(path, &l, &err), LQ_FAILED);
		CHECK_STR(err.code, one[i].code);
		free(path);
	}
}

static void
test_check(void)
{
	/* a tiny transformer: D = 2 * 4 = 8, in 3 */
	cJSON *j = cJSON_Parse("{\"in_channels\": 3, \"out_channels\": 3, \"num_layers\": 1,"
	    "\"num_attention_heads\": 2, \"attention_head_dim\": 4, \"cross_attention_dim\": 8,"
	    "\"caption_channels\": 8}");
	struct ltxv_transformer_config c;
	struct lq_error err;
	LQ_ASSERT(diffusers_parse_transformer(j, "t", &c, &err) == LQ_OK);
	cJSON_Delete(j);
	struct tensor_table t = {0};
	expected_ltxv_transformer(&c, &t);

	struct st_writer *w = st_writer_new();
	static const float z[64];
	/* fits: proj_in [8, 3] */
	st_writer_add_f32(w, "transformer.proj_in.lora_A.weight", ST_F32, 2, (int64_t[]){2, 3}, z);
	st_writer_add_f32(w, "transformer.proj_in.lora_B.weight", ST_F32, 2, (int64_t[]){8, 2}, z);
	/* mis-shaped: to_q is [8, 8] */
	st_writer_add_f32(w, "transformer.transformer_blocks.0.attn1.to_q.lora_A.weight", ST_F32, 2,
	    (int64_t[]){2, 3}, z);
	st_writer_add_f32(w, "transformer.transformer_blocks.0.attn1.to_q.lora_B.weight", ST_F32, 2,
	    (int64_t[]){8, 2}, z);
	/* no such module (block 5), and one that is not a weight (scale_shift_table) */
	st_writer_add_f32(w, "transformer.transformer_blocks.5.attn1.to_q.lora_A.weight", ST_F32, 2,
	    (int64_t[]){2, 8}, z);
	st_writer_add_f32(w, "transformer.transformer_blocks.5.attn1.to_q.lora_B.weight", ST_F32, 2,
	    (int64_t[]){8, 2}, z);
	st_writer_add_f32(w, "transformer.attn9.lora_A.weight", ST_F32, 2, (int64_t[]){2, 8}, z);
	st_writer_add_f32(w, "transformer.attn9.lora_B.weight", ST_F32, 2, (int64_t[]){8, 2}, z);
	char *path = write_lora(w, "check.safetensors");
	struct lora *l;
	CHECK_INT(lora_open(path, &l, &err), LQ_OK);
	char **probs = NULL;
	size_t np = 0;
	error_clear(&err);
	CHECK_INT(lora_check(l, &t, &probs, &np, &err), LQ_FAILED);
	CHECK_INT(np, 3);
	for (size_t i = 0; i < np; i++)
		printf("  %s\n", probs[i]);
	if (np == 3) {
		/* pairs sorted by weight name */
		CHECK_CONTAINS(probs[0], "attn9");
		CHECK_CONTAINS(probs[0], "matches no weight");
		CHECK_CONTAINS(probs[1], "transformer_blocks.0.attn1.to_q");
		CHECK_CONTAINS(probs[1], "does not fit");
		CHECK_CONTAINS(probs[2], "transformer_blocks.5.attn1.to_q");
	}
	CHECK_STR(err.code, "LQ-LORA-005");
	CHECK_STR(err.field, "attn9");
	for (size_t i = 0; i < np; i++)
		free(probs[i]);
	free(probs);
	lora_free(l);
	free(path);

	/* a clean LoRA passes */
	w = st_writer_new();
	st_writer_add_f32(w, "transformer.proj_in.lora_A.weight", ST_F32, 2, (int64_t[]){2, 3}, z);
	st_writer_add_f32(w, "transformer.proj_in.lora_B.weight", ST_F32, 2, (int64_t[]){8, 2}, z);
	path = write_lora(w, "ok.safetensors");
	CHECK_INT(lora_open(path, &l, &err), LQ_OK);
	CHECK_INT(lora_check(l, &t, NULL, NULL, &err), LQ_OK);
	lora_free(l);
	free(path);
	tensor_table_free(&t);
}

/* The load path: base weight read as float32, LoRA fused, shape checked. */
static void
test_load(void)
{
	struct lq_error err;
	struct st_writer *w = st_writer_new();
	float base[6] = {1, 1, 1, 1, 1, 1};
	st_writer_add_f32(w, "proj_out.weight", ST_BF16, 2, (int64_t[]){2, 3}, base);
	st_writer_add_f32(w, "proj_out.bias", ST_F32, 1, (int64_t[]){2}, base);
	char *bp = write_lora(w, "base.safetensors");
	w = st_writer_new();
	add_pair(w, "transformer.", "proj_out", "lora_A", "lora_B", ST_F32);
	char *lp = write_lora(w, "l.safetensors");
	struct st_set *s;
	struct lora *l;
	CHECK_INT(st_set_open(bp, &s, &err), LQ_OK);
	CHECK_INT(lora_open(lp, &l, &err), LQ_OK);
	float dst[6];
	double scale = 2.0;
	int nf = -1;
	CHECK_INT(model_read_weight_f32(s, "proj_out.weight", 2, (int64_t[]){2, 3}, &l, &scale, 1,
	    dst, &nf, &err), LQ_OK);
	CHECK_INT(nf, 1);
	/* 1 + 2 * (alpha/r = 1) * B @ A */
	const double want[6] = {3, 5, 7, 5, 11, 13};
	double maxerr = 0;
	for (int i = 0; i < 6; i++)
		maxerr = fmax(maxerr, fabs(dst[i] - want[i]));
	printf("load + fuse max abs err %.3g\n", maxerr);
	CHECK(maxerr <= 1e-6);
	CHECK_INT(model_read_weight_f32(s, "proj_out.bias", 1, (int64_t[]){2}, &l, &scale, 1, dst,
	    &nf, &err), LQ_OK);
	CHECK_INT(nf, 0);
	error_clear(&err);
	CHECK_INT(model_read_weight_f32(s, "proj_out.weight", 2, (int64_t[]){3, 2}, NULL, NULL, 0,
	    dst, NULL, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-012");
	CHECK_STR(err.field, "proj_out.weight");
	error_clear(&err);
	CHECK_INT(model_read_weight_f32(s, "proj_in.weight", 2, (int64_t[]){2, 3}, NULL, NULL, 0,
	    dst, NULL, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-010");
	lora_free(l);
	st_set_close(s);
	free(bp);
	free(lp);
}

int
main(void)
{
	LQ_ASSERT(mkdtemp(tmp) != NULL);
	test_forms_and_scaling();
	test_file_problems();
	test_check();
	test_load();
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	(void)!system(cmd);
	free(cmd);
	return test_summary();
}
