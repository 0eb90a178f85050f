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

#include "core/json.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/t5.h"
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

	cJSON_Delete(idx);
	if (ctx == NULL) {
		int rc = test_summary();
		return rc != 0 ? rc : 77;
	}
	gpu_ctx_free(ctx);
	return test_summary();
}
