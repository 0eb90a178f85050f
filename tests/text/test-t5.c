/*
 * test-t5.c — the T5 encoder against upstream goldens:
 *   shared/goldens/ltxv/t5 (random tiny T5: no mask, with mask, and the
 *   block-0 position bias) and shared/goldens/ltxv-demo/t5 (the demo model's
 *   trained encoder, T = 128, 32 buckets / distance 128).
 * Each case is computed twice: by a float64 CPU reference written here from
 * modeling_t5.py (checks the reading of upstream), and by t5_encoder_forward
 * on the Vulkan device (checked against suggested_atol).  Prints max abs /
 * max rel errors.  Exits 77 when no Vulkan device can be opened.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/t5.h"
#include "text/prompt.h"
#include "text/tokenizer.h"
#include "../test.h"

static char *
data_path(const char *rel)
{
	const char *top = getenv("top_srcdir");
	return xasprintf("%s/tests/data/text/%s", top ? top : ".", rel);
}

static struct st_file *
open_st(const char *rel)
{
	char *p = data_path(rel);
	struct lq_error err;
	struct st_file *f = NULL;
	if (st_file_open(p, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(p);
	return f;
}

static const struct st_tensor *
need(const struct st_file *f, const char *name)
{
	const struct st_tensor *t = st_file_find(f, name);
	if (t == NULL) {
		fprintf(stderr, "golden tensor %s missing\n", name);
		exit(99);
	}
	return t;
}

static int64_t *
read_i64(const struct st_tensor *t)
{
	int64_t n = st_tensor_numel(t);
	int64_t *v = xmalloc((size_t)n * sizeof(int64_t));
	memcpy(v, t->data, (size_t)n * sizeof(int64_t));
	return v;
}

/* ---- float64 reference (modeling_t5.py T5EncoderModel) ------------------ */

struct ref_model {
	struct t5_config cfg;
	struct st_set *set;
};

static double *
ref_weight(struct ref_model *m, const char *fmt, int i)
{
	char name[160];
	snprintf(name, sizeof(name), fmt, i);
	const struct st_tensor *t = st_set_find(m->set, name);
	if (t == NULL) {
		fprintf(stderr, "reference: %s missing\n", name);
		exit(99);
	}
	float *f = st_tensor_to_f32(t);
	int64_t n = st_tensor_numel(t);
	double *d = xmalloc((size_t)n * sizeof(double));
	for (int64_t k = 0; k < n; k++) {
		d[k] = f[k];
	}
	free(f);
	return d;
}

static void
ref_rms(const double *x, const double *w, int rows, int D, double eps,
    double *y)
{
	for (int r = 0; r < rows; r++) {
		double s = 0;
		for (int d = 0; d < D; d++) {
			s += x[r * D + d] * x[r * D + d];
		}
		double inv = 1.0 / sqrt(s / D + eps);
		for (int d = 0; d < D; d++) {
			y[r * D + d] = x[r * D + d] * inv * w[d];
		}
	}
}

/* y[rows, N] = x[rows, K] · w[N, K]ᵀ */
static void
ref_linear(const double *x, const double *w, int rows, int K, int N,
    double *y)
{
	for (int r = 0; r < rows; r++) {
		for (int n = 0; n < N; n++) {
			double s = 0;
			for (int k = 0; k < K; k++) {
				s += x[r * K + k] * w[n * K + k];
			}
			y[r * N + n] = s;
		}
	}
}

/* Independent bucket: the same formula in double (matches float32 here
 * except exactly at bucket edges, which the test also checks). */
static int
ref_bucket(int rp, int nb, int md)
{
	int ret = 0;
	nb /= 2;
	if (rp > 0) {
		ret += nb;
	}
	rp = abs(rp);
	int me = nb / 2;
	if (rp < me) {
		return ret + rp;
	}
	int large = me + (int)(log((double)rp / me) / log((double)md / me) *
	    (nb - me));
	return ret + (large < nb - 1 ? large : nb - 1);
}

static void
ref_forward(struct ref_model *m, const int64_t *ids, const int64_t *mask,
    int B, int T, double *out, double *pos_bias_out)
{
	const struct t5_config *c = &m->cfg;
	int D = c->d_model, H = c->num_heads, Dh = c->d_kv, I = H * Dh;
	int F = c->d_ff;
	double eps = c->layer_norm_epsilon;
	double *emb = ref_weight(m, "shared.weight", 0);
	double *rb = ref_weight(m, "encoder.block.%d.layer.0.SelfAttention."
	    "relative_attention_bias.weight", 0);
	double *pb = xmalloc((size_t)H * T * T * sizeof(double));
	for (int h = 0; h < H; h++) {
		for (int i = 0; i < T; i++) {
			for (int j = 0; j < T; j++) {
				int bk = t5_relative_position_bucket(j - i, 1,
				    c->relative_attention_num_buckets,
				    c->relative_attention_max_distance);
				pb[(h * T + i) * T + j] = rb[bk * H + h];
			}
		}
	}
	if (pos_bias_out) {
		memcpy(pos_bias_out, pb, (size_t)H * T * T * sizeof(double));
	}
	int BT = B * T;
	double *x = xmalloc((size_t)BT * D * sizeof(double));
	double *hn = xmalloc((size_t)BT * D * sizeof(double));
	double *tmp = xmalloc((size_t)BT * D * sizeof(double));
	double *q = xmalloc((size_t)BT * I * sizeof(double));
	double *k = xmalloc((size_t)BT * I * sizeof(double));
	double *v = xmalloc((size_t)BT * I * sizeof(double));
	double *att = xmalloc((size_t)BT * I * sizeof(double));
	double *f0 = xmalloc((size_t)BT * F * sizeof(double));
	double *f1 = xmalloc((size_t)BT * F * sizeof(double));
	double *sc = xmalloc((size_t)T * sizeof(double));
	for (int r = 0; r < BT; r++) {
		memcpy(&x[r * D], &emb[ids[r] * D], (size_t)D * sizeof(double));
	}
	for (int l = 0; l < c->num_layers; l++) {
		double *ln0 = ref_weight(m, "encoder.block.%d.layer.0.layer_norm.weight", l);
		double *wq = ref_weight(m, "encoder.block.%d.layer.0.SelfAttention.q.weight", l);
		double *wk = ref_weight(m, "encoder.block.%d.layer.0.SelfAttention.k.weight", l);
		double *wv = ref_weight(m, "encoder.block.%d.layer.0.SelfAttention.v.weight", l);
		double *wo = ref_weight(m, "encoder.block.%d.layer.0.SelfAttention.o.weight", l);
		double *ln1 = ref_weight(m, "encoder.block.%d.layer.1.layer_norm.weight", l);
		double *wi0 = ref_weight(m, "encoder.block.%d.layer.1.DenseReluDense.wi_0.weight", l);
		double *wi1 = ref_weight(m, "encoder.block.%d.layer.1.DenseReluDense.wi_1.weight", l);
		double *wff = ref_weight(m, "encoder.block.%d.layer.1.DenseReluDense.wo.weight", l);
		ref_rms(x, ln0, BT, D, eps, hn);
		ref_linear(hn, wq, BT, D, I, q);
		ref_linear(hn, wk, BT, D, I, k);
		ref_linear(hn, wv, BT, D, I, v);
		for (int b = 0; b < B; b++) {
			for (int h = 0; h < H; h++) {
				for (int i = 0; i < T; i++) {
					double mx = -INFINITY;
					for (int j = 0; j < T; j++) {
						double s = pb[(h * T + i) * T + j];
						for (int d = 0; d < Dh; d++) {
							s += q[(b * T + i) * I + h * Dh + d] *
							    k[(b * T + j) * I + h * Dh + d];
						}
						if (mask && mask[b * T + j] == 0) {
							s += -3.4028234663852886e38;
						}
						sc[j] = s;
						mx = s > mx ? s : mx;
					}
					double z = 0;
					for (int j = 0; j < T; j++) {
						sc[j] = exp(sc[j] - mx);
						z += sc[j];
					}
					for (int d = 0; d < Dh; d++) {
						double a = 0;
						for (int j = 0; j < T; j++) {
							a += sc[j] * v[(b * T + j) * I + h * Dh + d];
						}
						att[(b * T + i) * I + h * Dh + d] = a / z;
					}
				}
			}
		}
		ref_linear(att, wo, BT, I, D, tmp);
		for (int e = 0; e < BT * D; e++) {
			x[e] += tmp[e];
		}
		ref_rms(x, ln1, BT, D, eps, hn);
		ref_linear(hn, wi0, BT, D, F, f0);
		ref_linear(hn, wi1, BT, D, F, f1);
		for (int e = 0; e < BT * F; e++) {
			double a = f0[e];
			double g = 0.5 * a * (1.0 + tanh(sqrt(2.0 / M_PI) *
			    (a + 0.044715 * a * a * a)));
			f0[e] = g * f1[e];
		}
		ref_linear(f0, wff, BT, F, D, tmp);
		for (int e = 0; e < BT * D; e++) {
			x[e] += tmp[e];
		}
		free(ln0); free(wq); free(wk); free(wv); free(wo);
		free(ln1); free(wi0); free(wi1); free(wff);
	}
	double *lnf = ref_weight(m, "encoder.final_layer_norm.weight", 0);
	ref_rms(x, lnf, BT, D, eps, out);
	free(lnf);
	free(emb); free(rb); free(pb); free(x); free(hn); free(tmp);
	free(q); free(k); free(v); free(att); free(f0); free(f1); free(sc);
}

/* ---- comparison ----------------------------------------------------------- */

static double
compare(const char *what, const float *golden, const double *d,
    const float *f, size_t n, double atol)
{
	double ma = 0, mr = 0, gmax = 0;
	for (size_t i = 0; i < n; i++) {
		double g = golden[i];
		double v = d ? d[i] : f[i];
		double e = fabs(v - g);
		ma = e > ma ? e : ma;
		gmax = fabs(g) > gmax ? fabs(g) : gmax;
		double r = e / (fabs(g) > 1e-3 ? fabs(g) : 1e-3);
		mr = r > mr ? r : mr;
	}
	printf("%-44s max abs %.3g  max rel %.3g  (atol %g, max|golden| %.3g)\n",
	    what, ma, mr, atol, gmax);
	CHECK(ma <= atol);
	return ma;
}

static double
suggested_atol(const cJSON *stats, const char *tensor)
{
	const cJSON *s;
	cJSON_ArrayForEach(s, stats) {
		if (strcmp(json_get_string(s, "tensor", ""), tensor) == 0) {
			return json_get_number(s, "suggested_atol", 0);
		}
	}
	fprintf(stderr, "no suggested_atol for %s\n", tensor);
	exit(99);
}

struct gcase {
	const char *name;
	const char *model_dir;
	const char *inputs, *outputs;
	const char *nomask_key, *masked_key;
	double atol_nomask, atol_masked;
};

static void
run_case(const struct gcase *gc, struct gpu_ctx *ctx, const char *pb_golden)
{
	struct st_file *in = open_st(gc->inputs), *outf = open_st(gc->outputs);
	const struct st_tensor *ids_t = need(in, "input_ids");
	int B = (int)ids_t->shape[0], T = (int)ids_t->shape[1];
	int64_t *ids = read_i64(ids_t);
	int64_t *mask = read_i64(need(in, "attention_mask"));
	float *g_nomask = st_tensor_to_f32(need(outf, gc->nomask_key));
	float *g_masked = st_tensor_to_f32(need(outf, gc->masked_key));

	struct ref_model m;
	struct lq_error err;
	char *dir = data_path(gc->model_dir);
	char *cfgp = xasprintf("%s/config.json", dir);
	CHECK_INT(t5_config_load(cfgp, &m.cfg, &err), LQ_OK);
	CHECK_INT(st_set_open(dir, &m.set, &err), LQ_OK);
	free(cfgp);
	int D = m.cfg.d_model, H = m.cfg.num_heads;
	size_t n = (size_t)B * T * D;
	printf("== %s: B %d, T %d, d_model %d\n", gc->name, B, T, D);

	double *ref = xmalloc(n * sizeof(double));
	double *pb = xmalloc((size_t)H * T * T * sizeof(double));
	char label[128];
	ref_forward(&m, ids, NULL, B, T, ref, pb);
	snprintf(label, sizeof(label), "%s f64 reference, no mask", gc->name);
	compare(label, g_nomask, ref, NULL, n, gc->atol_nomask);
	if (pb_golden != NULL) {
		struct st_file *im = open_st(pb_golden);
		const struct st_tensor *t = need(im,
		    "encoder.block.0.layer.0.SelfAttention.position_bias");
		float *g = st_tensor_to_f32(t);
		/* golden is [B, H, T, T] (+ zero mask): compare batch 0 */
		snprintf(label, sizeof(label), "%s position bias", gc->name);
		compare(label, g, pb, NULL, (size_t)H * T * T, 0.0);
		free(g);
		st_file_close(im);
	}
	ref_forward(&m, ids, mask, B, T, ref, NULL);
	snprintf(label, sizeof(label), "%s f64 reference, masked", gc->name);
	compare(label, g_masked, ref, NULL, n, gc->atol_masked);

	if (ctx != NULL) {
		struct t5_encoder *enc = NULL;
		enum lq_status st = t5_encoder_load(ctx, dir, &enc, &err);
		CHECK_INT(st, LQ_OK);
		if (st != LQ_OK) {
			error_print(&err, stderr);
		} else {
			float *y = xmalloc(n * sizeof(float));
			st = t5_encoder_forward(enc, ids, NULL, B, T, y, &err);
			CHECK_INT(st, LQ_OK);
			snprintf(label, sizeof(label), "%s vulkan, no mask",
			    gc->name);
			compare(label, g_nomask, NULL, y, n, gc->atol_nomask);
			st = t5_encoder_forward(enc, ids, mask, B, T, y, &err);
			CHECK_INT(st, LQ_OK);
			snprintf(label, sizeof(label), "%s vulkan, masked",
			    gc->name);
			compare(label, g_masked, NULL, y, n, gc->atol_masked);
			CHECK_INT(t5_encoder_forward_count(enc), 2);

			/*
			 * Batch independence, bit for bit: row b of a batch
			 * equals that sequence alone (the embedding cache
			 * stores rows encoded in either way), and a rerun is
			 * identical (determinism).
			 */
			float *y1 = xmalloc((size_t)T * D * sizeof(float));
			float *y2 = xmalloc(n * sizeof(float));
			st = t5_encoder_forward(enc, ids, NULL, B, T, y, &err);
			CHECK_INT(st, LQ_OK);
			st = t5_encoder_forward(enc, ids, NULL, B, T, y2, &err);
			CHECK(memcmp(y, y2, n * sizeof(float)) == 0);
			for (int b = 0; b < B; b++) {
				st = t5_encoder_forward(enc, ids + (size_t)b * T,
				    NULL, 1, T, y1, &err);
				CHECK_INT(st, LQ_OK);
				CHECK(memcmp(y1, y + (size_t)b * T * D,
				    (size_t)T * D * sizeof(float)) == 0);
			}
			free(y1);
			free(y2);

			/* an id outside the vocabulary is refused */
			int64_t bad = m.cfg.vocab_size;
			CHECK_INT(t5_encoder_forward(enc, &bad, NULL, 1, 1, y,
			    &err), LQ_FAILED);
			CHECK_STR(err.code, "LQ-T5-010");
			free(y);
			t5_encoder_free(enc);
		}
	}
	free(dir);
	free(ref);
	free(pb);
	free(ids);
	free(mask);
	free(g_nomask);
	free(g_masked);
	st_set_close(m.set);
	st_file_close(in);
	st_file_close(outf);
}

/*
 * BF16 weights: the demo encoder re-saved as BF16 runs on the device and is
 * compared with the float64 reference over the same (BF16-rounded) weights,
 * which isolates the kernels' BF16 decoding from the rounding of the
 * weights; the distance to the F32 golden is printed for information.
 */
static void
run_bf16(struct gpu_ctx *ctx)
{
	char *src_dir = data_path("ltxv-demo/text_encoder");
	char *src = xasprintf("%s/model.safetensors", src_dir);
	char tmpl[] = "/tmp/lq-t5-XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	char *dst = xasprintf("%s/model.safetensors", tmpl);
	char *cfg_src = xasprintf("%s/config.json", src_dir);
	char *cfg_dst = xasprintf("%s/config.json", tmpl);
	struct lq_error err;
	struct st_file *f = NULL;
	CHECK_INT(st_file_open(src, &f, &err), LQ_OK);
	struct st_writer *w = st_writer_new();
	for (size_t i = 0; i < st_file_count(f); i++) {
		const struct st_tensor *t = st_file_tensor(f, i);
		float *v = st_tensor_to_f32(t);
		st_writer_add_f32(w, t->name, ST_BF16, t->ndim, t->shape, v);
		free(v);
	}
	CHECK_INT(st_writer_write(w, dst, &err), LQ_OK);
	st_writer_free(w);
	st_file_close(f);
	size_t n;
	char *cfg = util_read_file(cfg_src, &n);
	FILE *fp = fopen(cfg_dst, "wb");
	CHECK(cfg != NULL && fp != NULL && fwrite(cfg, 1, n, fp) == n);
	fclose(fp);
	free(cfg);

	struct st_file *in = open_st("goldens/ltxv-demo/t5/inputs.safetensors");
	struct st_file *outf = open_st("goldens/ltxv-demo/t5/outputs.safetensors");
	const struct st_tensor *ids_t = need(in, "input_ids");
	int B = (int)ids_t->shape[0], T = (int)ids_t->shape[1];
	int64_t *ids = read_i64(ids_t);
	float *golden = st_tensor_to_f32(need(outf, "last_hidden_state_nomask"));

	struct ref_model m;
	CHECK_INT(t5_config_load(cfg_dst, &m.cfg, &err), LQ_OK);
	CHECK_INT(st_set_open(tmpl, &m.set, &err), LQ_OK);
	size_t count = (size_t)B * T * m.cfg.d_model;
	double *ref = xmalloc(count * sizeof(double));
	ref_forward(&m, ids, NULL, B, T, ref, NULL);
	float *ref_f = xmalloc(count * sizeof(float));
	for (size_t i = 0; i < count; i++) {
		ref_f[i] = (float)ref[i];
	}
	struct t5_encoder *enc = NULL;
	CHECK_INT(t5_encoder_load(ctx, tmpl, &enc, &err), LQ_OK);
	if (enc != NULL) {
		float *y = xmalloc(count * sizeof(float));
		CHECK_INT(t5_encoder_forward(enc, ids, NULL, B, T, y, &err),
		    LQ_OK);
		/* f32 math over bf16 weights vs the f64 reference: f32 level */
		compare("ltxv-demo/t5 BF16 weights vulkan vs f64 ref", ref_f,
		    NULL, y, count, 1e-4);
		/* vs the F32 golden: the weight rounding dominates */
		compare("ltxv-demo/t5 BF16 weights vs F32 golden", golden, NULL,
		    y, count, 0.05);
		free(y);
		t5_encoder_free(enc);
	}
	st_set_close(m.set);
	free(ref);
	free(ref_f);
	free(ids);
	free(golden);
	st_file_close(in);
	st_file_close(outf);
	remove(dst);
	remove(cfg_dst);
	rmdir(tmpl);
	free(src_dir);
	free(src);
	free(dst);
	free(cfg_src);
	free(cfg_dst);
}

/*
 * The ltxv-demo pipeline goldens (demoA, demoB): prompt_embeds and
 * negative_prompt_embeds ("" negative) through tokenizer + T5 as
 * LTXPipeline.encode_prompt builds them, and the same prompt again with an
 * embedding cache: the encoder does not run a second time.
 */
struct memcache {
	char ids[4][DIGEST_HEX_SIZE];
	float *v[4];
	int n;
};

static enum lq_status
mc_lookup(void *ud, const char *enc, const char *ids, int T, int D,
    float *embeds, int *found, struct lq_error *err)
{
	struct memcache *c = ud;
	(void)enc;
	(void)err;
	*found = 0;
	for (int i = 0; i < c->n; i++) {
		if (strcmp(c->ids[i], ids) == 0) {
			memcpy(embeds, c->v[i], (size_t)T * D * sizeof(float));
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
	(void)enc;
	if (c->n == 4) {
		return error_set(err, LQ_FAILED, NULL, "full");
	}
	snprintf(c->ids[c->n], DIGEST_HEX_SIZE, "%s", ids);
	c->v[c->n] = xmalloc((size_t)T * D * sizeof(float));
	memcpy(c->v[c->n], embeds, (size_t)T * D * sizeof(float));
	c->n++;
	return LQ_OK;
}

static void
run_pipeline(struct gpu_ctx *ctx, double atol)
{
	struct lq_error err;
	char *tdir = data_path("ltxv-demo/tokenizer");
	char *edir = data_path("ltxv-demo/text_encoder");
	struct text_tokenizer *tok = NULL;
	struct t5_encoder *t5 = NULL;
	CHECK_INT(text_tokenizer_load(tdir, &tok, &err), LQ_OK);
	CHECK_INT(t5_encoder_load(ctx, edir, &t5, &err), LQ_OK);
	free(tdir);
	free(edir);
	if (tok == NULL || t5 == NULL) {
		text_tokenizer_free(tok);
		t5_encoder_free(t5);
		return;
	}
	struct text_encoder_iface enc = text_encoder_from_t5(t5, "demo-te");
	struct memcache mc = { 0 };
	struct text_embed_cache cache = { mc_lookup, mc_insert, &mc };
	const char *runs[2] = { "goldens/ltxv-demo/pipeline/demoA/inputs.safetensors",
	    "goldens/ltxv-demo/pipeline/demoB/inputs.safetensors" };
	for (int r = 0; r < 2; r++) {
		struct st_file *f = open_st(runs[r]);
		struct text_prompt_request req = {
			.prompt = st_file_metadata(f, "prompt"),
			.negative_prompt = "",
			.max_sequence_length = 128,
			.do_classifier_free_guidance = 1,
		};
		struct text_prompt_embeds e;
		unsigned before = t5_encoder_forward_count(t5);
		CHECK_INT(text_prompt_encode(tok, &enc, &cache, &req, &e, &err),
		    LQ_OK);
		if (e.prompt_embeds == NULL) {
			error_print(&err, stderr);
			st_file_close(f);
			continue;
		}
		CHECK_INT(t5_encoder_forward_count(t5), before + 1);
		float *g = st_tensor_to_f32(need(f, "prompt_embeds"));
		float *gn = st_tensor_to_f32(need(f, "negative_prompt_embeds"));
		char label[96];
		snprintf(label, sizeof(label), "pipeline demo%c prompt_embeds",
		    'A' + r);
		compare(label, g, NULL, e.prompt_embeds, 128 * 64, atol);
		snprintf(label, sizeof(label),
		    "pipeline demo%c negative_prompt_embeds", 'A' + r);
		compare(label, gn, NULL, e.negative_prompt_embeds, 128 * 64,
		    atol);
		CHECK(memcmp(need(f, "prompt_attention_mask")->data,
		    e.prompt_attention_mask, 128 * sizeof(int64_t)) == 0);

		/* the same prompt again: served by the cache */
		struct text_prompt_embeds e2;
		before = t5_encoder_forward_count(t5);
		CHECK_INT(text_prompt_encode(tok, &enc, &cache, &req, &e2,
		    &err), LQ_OK);
		CHECK_INT(t5_encoder_forward_count(t5), before);
		CHECK_INT(e2.cache_hits, 2);
		CHECK(e2.prompt_embeds != NULL && memcmp(e.prompt_embeds,
		    e2.prompt_embeds, 128 * 64 * sizeof(float)) == 0);
		printf("demo%c again: encoder runs %u -> %u (cache hits %d)\n",
		    'A' + r, before, t5_encoder_forward_count(t5),
		    e2.cache_hits);
		text_prompt_embeds_release(&e2);
		text_prompt_embeds_release(&e);
		free(g);
		free(gn);
		st_file_close(f);
	}
	for (int i = 0; i < mc.n; i++) {
		free(mc.v[i]);
	}
	t5_encoder_free(t5);
	text_tokenizer_free(tok);
}

/* A config that does not match the weights is refused, naming the tensor. */
static void
run_bad_load(struct gpu_ctx *ctx)
{
	char tmpl[] = "/tmp/lq-t5bad-XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	char *model = data_path("goldens/ltxv/t5/model/text_encoder/model.safetensors");
	char *abs_model = realpath(model, NULL);
	char *link = xasprintf("%s/model.safetensors", tmpl);
	char *cfg = xasprintf("%s/config.json", tmpl);
	CHECK(abs_model != NULL && symlink(abs_model, link) == 0);
	FILE *fp = fopen(cfg, "w");
	fputs("{\"architectures\": [\"T5EncoderModel\"], \"vocab_size\": 100, "
	    "\"d_model\": 32, \"d_kv\": 8, \"num_heads\": 4, \"d_ff\": 60, "
	    "\"num_layers\": 2, \"relative_attention_num_buckets\": 8, "
	    "\"relative_attention_max_distance\": 8, "
	    "\"feed_forward_proj\": \"gated-gelu\"}", fp);
	fclose(fp);
	struct lq_error err;
	error_clear(&err);
	struct t5_encoder *enc = NULL;
	CHECK_INT(t5_encoder_load(ctx, tmpl, &enc, &err), LQ_FAILED);
	CHECK(enc == NULL);
	CHECK_STR(err.code, "LQ-T5-003");
	CHECK_CONTAINS(err.field, "DenseReluDense.wi_0.weight");
	printf("bad config: %s\n", err.message);
	/* num_layers 3: block 2 is missing */
	fp = fopen(cfg, "w");
	fputs("{\"vocab_size\": 100, \"d_model\": 32, \"d_kv\": 8, "
	    "\"num_heads\": 4, \"d_ff\": 64, \"num_layers\": 3, "
	    "\"relative_attention_num_buckets\": 8, "
	    "\"feed_forward_proj\": \"gated-gelu\"}", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(t5_encoder_load(ctx, tmpl, &enc, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-T5-002");
	CHECK_CONTAINS(err.field, "encoder.block.2.");
	unlink(link);
	unlink(cfg);
	rmdir(tmpl);
	free(model);
	free(abs_model);
	free(link);
	free(cfg);
}

int
main(void)
{
	/* Bucket edges: the float32 path must agree with upstream at the exact
	 * log-spaced boundaries (rp = 16, 32, 64 with 32 buckets / 128). */
	CHECK_INT(t5_relative_position_bucket(15, 1, 32, 128), 16 + 9);
	CHECK_INT(t5_relative_position_bucket(16, 1, 32, 128), 16 + 10);
	CHECK_INT(t5_relative_position_bucket(-16, 1, 32, 128), 10);
	CHECK_INT(t5_relative_position_bucket(-32, 1, 32, 128), 12);
	CHECK_INT(t5_relative_position_bucket(-64, 1, 32, 128), 14);
	CHECK_INT(t5_relative_position_bucket(-1000, 1, 32, 128), 15);
	CHECK_INT(t5_relative_position_bucket(0, 1, 32, 128), 0);
	for (int rp = -600; rp <= 600; rp++) {
		if (t5_relative_position_bucket(rp, 1, 32, 128) !=
		    ref_bucket(rp, 32, 128)) {
			CHECK_INT(t5_relative_position_bucket(rp, 1, 32, 128),
			    ref_bucket(rp, 32, 128));
		}
	}

	char *idx_path = data_path("goldens/ltxv/t5/index-t5.json");
	char *idx_text = util_read_file(idx_path, NULL);
	free(idx_path);
	cJSON *idx = cJSON_Parse(idx_text);
	free(idx_text);
	const cJSON *stats = cJSON_GetObjectItemCaseSensitive(idx, "stats");

	struct gpu_ctx *ctx = NULL;
	struct lq_error err;
	error_clear(&err);
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		fprintf(stderr, "no Vulkan device: only the CPU reference runs\n");
		ctx = NULL;
	}

	struct gcase ltxv = {
		"ltxv/t5", "goldens/ltxv/t5/model/text_encoder",
		"goldens/ltxv/t5/inputs.safetensors",
		"goldens/ltxv/t5/outputs.safetensors",
		"last_hidden_state_nomask", "last_hidden_state_masked",
		suggested_atol(stats, "last_hidden_state_nomask"),
		suggested_atol(stats, "last_hidden_state_masked"),
	};
	run_case(&ltxv, ctx, "goldens/ltxv/t5/intermediates_nomask.safetensors");

	/* No f64 run for the demo set: its README says to use the ltxv
	 * tolerances (1e-5 here). */
	struct gcase demo = {
		"ltxv-demo/t5", "ltxv-demo/text_encoder",
		"goldens/ltxv-demo/t5/inputs.safetensors",
		"goldens/ltxv-demo/t5/outputs.safetensors",
		"last_hidden_state_nomask", "last_hidden_state_masked",
		ltxv.atol_nomask, ltxv.atol_masked,
	};
	run_case(&demo, ctx, NULL);
	if (ctx != NULL) {
		run_bf16(ctx);
		run_bad_load(ctx);
		run_pipeline(ctx, demo.atol_nomask);
	}

	cJSON_Delete(idx);
	if (ctx == NULL) {
		int rc = test_summary();
		return rc != 0 ? rc : 77;
	}
	gpu_ctx_free(ctx);
	return test_summary();
}
