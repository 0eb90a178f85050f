/*
 * test-unipc.c — UniPCMultistepScheduler (sampler/unipc.h) against
 * WanPipeline's golden (tests/data/wan/pipeline/run.safetensors, upstream
 * diffusers 58eb52c0 in float32):
 *   - the config parser and its refusals;
 *   - timesteps (int64, exact) and sigmas of the golden's 4-step schedule;
 *   - the recorded guided predictions fed step by step from input.latents:
 *     latents after every step within the index's suggested_atol (and the
 *     guidance of the two recorded passes equal to the recorded guided);
 *   - a state packed after every step and restored into a fresh one
 *     continues bit for bit;
 * and, where the golden has no case, a float64 re-statement of the UniPC
 * update written from the paper's B(h) form (UniPC, Zhao et al. 2023,
 * Algorithms 1-2 with rhos from the Vandermonde systems) for other step
 * counts, shifts, orders 1-3, bh1 / bh2, lower_order_final off and
 * disable_corrector, within a relative 1e-4.
 */
#include "../test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/util.h"
#include "model/safetensors.h"
#include "sampler/scheduler.h"
#include "sampler/unipc.h"

static char *
data_path(const char *rel)
{
	const char *top = getenv("top_srcdir");
	return xasprintf("%s/tests/data/wan/pipeline/%s", top ? top : ".",
	    rel);
}

static const struct st_tensor *
need(const struct st_file *f, const char *name, enum st_dtype dt)
{
	const struct st_tensor *t = st_file_find(f, name);
	if (t == NULL || t->dtype != dt) {
		fprintf(stderr, "golden tensor %s missing or not %s\n", name,
		    st_dtype_name(dt));
		exit(99);
	}
	return t;
}

static float *
need_f32(const struct st_file *f, const char *name, size_t *n)
{
	const struct st_tensor *t = need(f, name, ST_F32);
	float *v = xmalloc(t->nbytes + 1);
	memcpy(v, t->data, t->nbytes);
	*n = t->nbytes / 4;
	return v;
}

static enum lq_status
parse(const char *text, struct unipc_config *cfg, struct lq_error *err)
{
	cJSON *j = cJSON_Parse(text);
	enum lq_status s;

	LQ_ASSERT(j != NULL);
	error_clear(err);
	s = unipc_config_from_json(j, "t.json", cfg, err);
	cJSON_Delete(j);
	return s;
}

#define FLOW "\"use_flow_sigmas\": true, \"prediction_type\": " \
	"\"flow_prediction\""

static void
test_config(void)
{
	static const struct {
		const char *json, *code, *field;
	} bad[] = {
		{ "{}", "LQ-SCHED-004", "use_flow_sigmas" },
		{ "{\"use_flow_sigmas\": true}", "LQ-SCHED-004",
		  "prediction_type" },
		{ "{\"use_flow_sigmas\": true, \"prediction_type\": "
		  "\"epsilon\"}", "LQ-SCHED-002", "prediction_type" },
		{ "{" FLOW ", \"predict_x0\": false}", "LQ-SCHED-004",
		  "predict_x0" },
		{ "{" FLOW ", \"thresholding\": true}", "LQ-SCHED-004",
		  "thresholding" },
		{ "{" FLOW ", \"use_karras_sigmas\": true}", "LQ-SCHED-004",
		  "use_karras_sigmas" },
		{ "{" FLOW ", \"use_dynamic_shifting\": true}", "LQ-SCHED-004",
		  "use_dynamic_shifting" },
		{ "{" FLOW ", \"solver_p\": {}}", "LQ-SCHED-004", "solver_p" },
		{ "{" FLOW ", \"solver_order\": 4}", "LQ-SCHED-002",
		  "solver_order" },
		{ "{" FLOW ", \"solver_order\": 0}", "LQ-SCHED-002",
		  "solver_order" },
		{ "{" FLOW ", \"solver_order\": 1.5}", "LQ-SCHED-001",
		  "solver_order" },
		{ "{" FLOW ", \"flow_shift\": 0}", "LQ-SCHED-002",
		  "flow_shift" },
		{ "{" FLOW ", \"flow_shift\": \"3\"}", "LQ-SCHED-001",
		  "flow_shift" },
		{ "{" FLOW ", \"solver_type\": \"bh3\"}", "LQ-SCHED-002",
		  "solver_type" },
		{ "{" FLOW ", \"final_sigmas_type\": \"max\"}", "LQ-SCHED-002",
		  "final_sigmas_type" },
		{ "{" FLOW ", \"timestep_spacing\": \"karras\"}",
		  "LQ-SCHED-002", "timestep_spacing" },
		{ "{" FLOW ", \"disable_corrector\": [0.5]}", "LQ-SCHED-001",
		  "disable_corrector" },
		{ "{" FLOW ", \"disable_corrector\": 1}", "LQ-SCHED-001",
		  "disable_corrector" },
		{ "{" FLOW ", \"shift_terminal\": 1.0}", "LQ-SCHED-002",
		  "shift_terminal" },
		{ "{" FLOW ", \"_class_name\": "
		  "\"FlowMatchEulerDiscreteScheduler\"}", "LQ-SCHED-003",
		  "_class_name" },
	};
	struct unipc_config cfg;
	struct lq_error err;

	for (size_t i = 0; i < LQ_ARRAY_LEN(bad); i++) {
		CHECK_INT(parse(bad[i].json, &cfg, &err), LQ_FAILED);
		CHECK_STR(err.code, bad[i].code);
		CHECK_STR(err.field, bad[i].field);
		CHECK(err.message[0] != '\0');
	}
	CHECK_INT(parse("{" FLOW ", \"solver_type\": \"midpoint\", "
	    "\"solver_order\": 3, \"disable_corrector\": [1, 3], "
	    "\"lower_order_final\": false, \"flow_shift\": 5.0}", &cfg, &err),
	    LQ_OK);
	CHECK_INT(cfg.solver_type, UNIPC_BH2);
	CHECK_INT(cfg.solver_order, 3);
	CHECK_INT(cfg.n_disable_corrector, 2);
	CHECK_INT(cfg.disable_corrector[1], 3);
	CHECK_INT(cfg.lower_order_final, 0);
	CHECK(cfg.flow_shift == 5.0);

	/* the describe string tells configs apart */
	struct unipc_config a, b;
	char da[256], db[256];
	CHECK_INT(parse("{" FLOW ", \"flow_shift\": 3.0}", &a, &err), LQ_OK);
	b = a;
	unipc_config_describe(&a, da, sizeof(da));
	b.flow_shift = nextafter(3.0, 4.0);
	unipc_config_describe(&b, db, sizeof(db));
	CHECK(strcmp(da, db) != 0);
	b = a;
	b.solver_order = 1;
	unipc_config_describe(&b, db, sizeof(db));
	CHECK(strcmp(da, db) != 0);
	b = a;
	b.solver_type = UNIPC_BH1;
	unipc_config_describe(&b, db, sizeof(db));
	CHECK(strcmp(da, db) != 0);
}

/* guided = uncond + g * (cond - uncond), float32 (pipeline_wan.py) */
static void
guide(float *out, const float *cond, const float *uncond, size_t n, float g)
{
	for (size_t i = 0; i < n; i++) {
		float d = cond[i] - uncond[i];
		d = g * d;
		out[i] = uncond[i] + d;
	}
}

static void
test_golden(void)
{
	struct unipc_config cfg;
	struct unipc_schedule s;
	struct unipc_state st, st2;
	struct lq_error err;
	struct st_file *f;
	char *path;
	size_t n, m;
	/* suggested_atol of stepK.latents_after (index.json) */
	static const double atol[4] = { 4e-6, 8e-6, 2e-5, 2e-5 };

	path = data_path("model/scheduler/scheduler_config.json");
	error_clear(&err);
	if (unipc_config_load(path, &cfg, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(path);
	CHECK(cfg.flow_shift == 3.0);
	CHECK_INT(cfg.solver_order, 2);

	path = data_path("run.safetensors");
	if (st_file_open(path, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(path);

	CHECK_INT(unipc_set_timesteps(&cfg, 4, &s, &err), LQ_OK);
	const struct st_tensor *tt = need(f, "timesteps", ST_I64);
	const struct st_tensor *ts = need(f, "sigmas", ST_F32);
	CHECK_INT(tt->nbytes, 4 * 8);
	CHECK_INT(ts->nbytes, 5 * 4);
	for (int i = 0; i < 4; i++) {
		int64_t want;
		memcpy(&want, (const char *)tt->data + 8 * i, 8);
		CHECK_INT(s.timesteps[i], want);
	}
	for (int i = 0; i < 5; i++) {
		float want;
		memcpy(&want, (const char *)ts->data + 4 * i, 4);
		/* suggested_atol 1e-6; latentq's float64 chain is upstream's,
		 * so the float32 values are the same bits */
		CHECK(s.sigmas[i] == want);
	}

	float *x = need_f32(f, "input.latents", &n);
	float *g = xmalloc(n * sizeof(float));
	unipc_state_init(&st, &cfg, n);
	for (int k = 0; k < 4; k++) {
		char name[64];
		snprintf(name, sizeof(name), "step%d.noise_pred_cond", k);
		float *c = need_f32(f, name, &m);
		CHECK_INT(m, n);
		snprintf(name, sizeof(name), "step%d.noise_pred_uncond", k);
		float *u = need_f32(f, name, &m);
		snprintf(name, sizeof(name), "step%d.noise_pred_guided", k);
		float *gg = need_f32(f, name, &m);
		guide(g, c, u, n, 5.0f);
		double dg = 0.0;
		for (size_t i = 0; i < n; i++)
			dg = fmax(dg, fabs((double)g[i] - gg[i]));
		CHECK(dg <= 3e-5);

		/* bit-exact resume: pack, restore into a fresh state */
		size_t len = unipc_state_packed_size(&st);
		/* one size at every step, a whole number of floats */
		CHECK_INT(len, 56 + 4 * 3 * n);
		unsigned char *blob = xmalloc(len);
		unipc_state_pack(&st, blob);
		unipc_state_init(&st2, &cfg, n);
		CHECK_INT(unipc_state_unpack(&st2, blob, len, &err), LQ_OK);
		float *x2 = xmalloc(n * sizeof(float));
		memcpy(x2, x, n * sizeof(float));
		unipc_step(&cfg, &s, &st2, gg, x2);

		unipc_step(&cfg, &s, &st, gg, x);
		CHECK(memcmp(x, x2, n * sizeof(float)) == 0);
		CHECK_INT(st.step_index, k + 1);

		snprintf(name, sizeof(name), "step%d.latents_after", k);
		float *want = need_f32(f, name, &m);
		double d = 0.0;
		for (size_t i = 0; i < n; i++)
			d = fmax(d, fabs((double)x[i] - want[i]));
		printf("step %d: max|latents - golden| = %.3g (atol %g), "
		    "guided %.3g\n", k, d, atol[k], dg);
		CHECK(d <= atol[k]);

		/* a truncated or foreign blob is refused, state untouched */
		CHECK_INT(unipc_state_unpack(&st2, blob, len - 1, &err),
		    LQ_FAILED);
		CHECK_STR(err.code, "LQ-RUN-CKPT");
		blob[0] = 'X';
		CHECK_INT(unipc_state_unpack(&st2, blob, len, &err),
		    LQ_FAILED);
		free(blob);
		unipc_state_free(&st2);
		free(x2);
		free(c);
		free(u);
		free(gg);
		free(want);
	}
	/* the orders upstream's step() picks: 1, 2, 2, 1 (lower_order_final) */
	CHECK_INT(st.this_order, 1);
	unipc_state_free(&st);
	unipc_schedule_free(&s);
	free(x);
	free(g);
	st_file_close(f);
}

/*
 * The float64 reference.  Lambda_i = log((1 - s_i) / s_i); the data
 * prediction x0_i = x - s_i v_i.  UniP-p from step k to k+1 with
 * h = L_{k+1} - L_k, r_m = (L_{k-m} - L_k) / h, D_m = (x0_{k-m} - x0_k)/r_m:
 *   x_{k+1} = s_{k+1}/s_k x - a_{k+1} (e^{-h} - 1) x0_k
 *             - a_{k+1} B(-h) sum_m rho_m D_m
 * with the rho from R rho = g, R_{ij} = r_j^i, g_i = phi_{i+1}(-h) i! / B
 * over the first p-1 rows, rho = 1/2 for p = 2 (the paper's choice).
 * UniC-p at k+1 uses the new x0_{k+1} as the extra D with r = 1, all p
 * rows, rho = 1/2 for p = 1.
 */
struct ref {
	int order, bh1, lof, ndis, dis[4];
	int N;
	double *sig;		/* N+1 */
};

static double
lam(double s)
{
	return log(1.0 - s) - log(s);
}

/* g_i for i = 1..p: h phi_i(hh) recursion as in the paper's appendix */
static void
gvec(double hh, double B, int p, double *g)
{
	double phi = expm1(hh) / hh - 1.0;	/* h phi_2 form */
	double fact = 1.0;
	for (int i = 1; i <= p; i++) {
		g[i - 1] = phi * fact / B;
		fact *= i + 1;
		phi = phi / hh - 1.0 / fact;
	}
}

static void
solve(double *A, double *b, int k)
{
	for (int c = 0; c < k; c++) {
		int p = c;
		for (int r = c + 1; r < k; r++)
			if (fabs(A[r * k + c]) > fabs(A[p * k + c]))
				p = r;
		for (int j = 0; j < k; j++) {
			double t = A[c * k + j];
			A[c * k + j] = A[p * k + j];
			A[p * k + j] = t;
		}
		double t = b[c];
		b[c] = b[p];
		b[p] = t;
		for (int r = c + 1; r < k; r++) {
			double l = A[r * k + c] / A[c * k + c];
			for (int j = c; j < k; j++)
				A[r * k + j] -= l * A[c * k + j];
			b[r] -= l * b[c];
		}
	}
	for (int r = k - 1; r >= 0; r--) {
		for (int j = r + 1; j < k; j++)
			b[r] -= A[r * k + j] * b[j];
		b[r] /= A[r * k + r];
	}
}

/*
 * One update from sigma index `from` to `to` with x0 history hist[0] =
 * newest (at `from`), hist[m] at from - m; for the corrector, extra is
 * the x0 at `to` (NULL for the predictor).
 */
static void
ref_update(const struct ref *r, int from, int to, int p, double **hist,
    const double *extra, const double *x, double *out, size_t n)
{
	double st = r->sig[to], s0 = r->sig[from], at = 1.0 - st;
	double h = lam(st) - lam(s0), hh = -h;
	double B = r->bh1 ? hh : expm1(hh);
	double rk[4], g[4], rho[4] = { 0 };
	int nd = p - 1;

	for (int m = 1; m <= nd; m++)
		rk[m - 1] = (lam(r->sig[from - m]) - lam(s0)) / h;
	gvec(hh, B, p, g);
	if (extra == NULL) {
		if (p == 2) {
			rho[0] = 0.5;
		} else if (p > 2) {
			double A[16];
			for (int i = 0; i < nd; i++)
				for (int j = 0; j < nd; j++)
					A[i * nd + j] = pow(rk[j], i);
			memcpy(rho, g, sizeof(double) * (size_t)nd);
			solve(A, rho, nd);
		}
	} else {
		rk[nd] = 1.0;
		if (p == 1) {
			rho[0] = 0.5;
		} else {
			double A[16];
			for (int i = 0; i < p; i++)
				for (int j = 0; j < p; j++)
					A[i * p + j] = pow(rk[j], i);
			memcpy(rho, g, sizeof(double) * (size_t)p);
			solve(A, rho, p);
		}
	}
	for (size_t j = 0; j < n; j++) {
		double v = st / s0 * x[j] - at * expm1(hh) * hist[0][j];
		double res = 0.0;
		for (int m = 1; m <= nd; m++)
			res += rho[m - 1] * (hist[m][j] - hist[0][j]) / rk[m - 1];
		if (extra != NULL)
			res += rho[nd] * (extra[j] - hist[0][j]);
		out[j] = v - at * B * res;
	}
}

/* A whole loop with model v = f(x, sigma) = 0.7 x - 0.3 sin(x) + 0.1 j. */
static double
model_v(double x, double sigma, size_t j)
{
	return 0.7 * x - 0.3 * sin(x + sigma) + 0.1 * (double)(j % 5);
}

static void
ref_loop(const struct ref *r, double *x, size_t n)
{
	double *hist[4], *x0 = xmalloc(n * sizeof(double)), *last =
	    xmalloc(n * sizeof(double)), *tmp = xmalloc(n * sizeof(double));
	int have = 0, lon = 0, prev_order = 0;

	for (int i = 0; i < 4; i++)
		hist[i] = xmalloc(n * sizeof(double));
	for (int k = 0; k < r->N; k++) {
		for (size_t j = 0; j < n; j++) {
			float v = (float)model_v(x[j], r->sig[k], j);
			x0[j] = x[j] - r->sig[k] * (double)v;
		}
		int corr = k > 0;
		for (int d = 0; d < r->ndis; d++)
			if (r->dis[d] == k - 1)
				corr = 0;
		if (corr) {
			ref_update(r, k - 1, k, prev_order, hist, x0, last, tmp,
			    n);
			memcpy(x, tmp, n * sizeof(double));
		}
		for (int m = 3; m > 0; m--)
			memcpy(hist[m], hist[m - 1], n * sizeof(double));
		memcpy(hist[0], x0, n * sizeof(double));
		have++;
		int p = r->order;
		if (r->lof && r->N - k < p)
			p = r->N - k;
		if (lon + 1 < p)
			p = lon + 1;
		memcpy(last, x, n * sizeof(double));
		ref_update(r, k, k + 1, p, hist, NULL, last, x, n);
		prev_order = p;
		if (lon < r->order)
			lon++;
	}
	for (int i = 0; i < 4; i++)
		free(hist[i]);
	free(x0);
	free(last);
	free(tmp);
}

static void
test_reference(void)
{
	static const struct {
		int N, order, bh1, lof;
		double shift;
		const char *dis;
	} cases[] = {
		{ 1, 2, 0, 1, 3.0, "[]" },
		{ 2, 2, 0, 1, 3.0, "[]" },
		{ 3, 1, 0, 1, 3.0, "[]" },
		{ 5, 2, 0, 1, 5.0, "[]" },
		{ 10, 2, 0, 1, 1.0, "[]" },
		{ 7, 3, 0, 1, 3.0, "[]" },
		{ 6, 2, 1, 1, 3.0, "[]" },
		{ 6, 2, 0, 0, 3.0, "[]" },
		{ 8, 3, 1, 0, 7.0, "[]" },
		{ 6, 2, 0, 1, 3.0, "[0, 2]" },
		{ 20, 2, 0, 1, 5.0, "[]" },
	};
	const size_t n = 37;

	for (size_t c = 0; c < LQ_ARRAY_LEN(cases); c++) {
		char json[512];
		struct unipc_config cfg;
		struct unipc_schedule s;
		struct unipc_state st;
		struct lq_error err;

		snprintf(json, sizeof(json), "{" FLOW ", \"solver_order\": %d, "
		    "\"solver_type\": \"%s\", \"lower_order_final\": %s, "
		    "\"flow_shift\": %.17g, \"disable_corrector\": %s}",
		    cases[c].order, cases[c].bh1 ? "bh1" : "bh2",
		    cases[c].lof ? "true" : "false", cases[c].shift,
		    cases[c].dis);
		CHECK_INT(parse(json, &cfg, &err), LQ_OK);
		CHECK_INT(unipc_set_timesteps(&cfg, cases[c].N, &s, &err),
		    LQ_OK);

		/* the schedule from its formula, float64 */
		struct ref r = { cfg.solver_order, cases[c].bh1, cases[c].lof,
		    cfg.n_disable_corrector, { 0 }, cases[c].N, NULL };
		for (int d = 0; d < r.ndis; d++)
			r.dis[d] = cfg.disable_corrector[d];
		r.sig = xmalloc((size_t)(r.N + 1) * sizeof(double));
		for (int i = 0; i < r.N; i++) {
			double t = 1.0 - (1.0 - 1.0 / 1000.0) * i / r.N;
			double sh = cases[c].shift * t / (1.0 + (cases[c].shift -
			    1.0) * t);
			if (i == 0)
				sh -= 1e-6;
			CHECK_NEAR(s.sigmas[i], sh, 1e-7);
			/* int64 truncation of sigma * 1000 */
			CHECK(s.timesteps[i] == (int64_t)floor(sh * 1000.0) ||
			    fabs(sh * 1000.0 - round(sh * 1000.0)) < 1e-9);
			r.sig[i] = (double)s.sigmas[i];
		}
		r.sig[r.N] = 0.0;
		CHECK(s.sigmas[r.N] == 0.0f);
		if (r.N > 1)
			CHECK(s.timesteps[0] == 999);

		float *x = xmalloc(n * sizeof(float)), *v = xmalloc(n *
		    sizeof(float));
		double *xr = xmalloc(n * sizeof(double));
		for (size_t j = 0; j < n; j++) {
			x[j] = (float)(0.9 * sin(1.7 * (double)j + 0.3));
			xr[j] = (double)x[j];
		}
		unipc_state_init(&st, &cfg, n);
		for (int k = 0; k < r.N; k++) {
			for (size_t j = 0; j < n; j++)
				v[j] = (float)model_v((double)x[j],
				    (double)s.sigmas[k], j);
			unipc_step(&cfg, &s, &st, v, x);
		}
		ref_loop(&r, xr, n);
		double d = 0.0, scale = 0.0;
		for (size_t j = 0; j < n; j++) {
			d = fmax(d, fabs((double)x[j] - xr[j]));
			scale = fmax(scale, fabs(xr[j]));
		}
		if (!(d <= 1e-4 * fmax(scale, 1.0)))
			fprintf(stderr, "case %zu (%s, N %d): max diff %.3g "
			    "(scale %.3g)\n", c, json, r.N, d, scale);
		CHECK(d <= 1e-4 * fmax(scale, 1.0));
		unipc_state_free(&st);
		unipc_schedule_free(&s);
		free(r.sig);
		free(x);
		free(v);
		free(xr);
	}

	/* flipping one option changes the result */
	struct unipc_config a, b;
	struct unipc_schedule sa, sb;
	struct lq_error err;
	CHECK_INT(parse("{" FLOW ", \"flow_shift\": 3.0}", &a, &err), LQ_OK);
	b = a;
	b.flow_shift = 5.0;
	CHECK_INT(unipc_set_timesteps(&a, 6, &sa, &err), LQ_OK);
	CHECK_INT(unipc_set_timesteps(&b, 6, &sb, &err), LQ_OK);
	CHECK(sa.sigmas[2] != sb.sigmas[2]);
	unipc_schedule_free(&sa);
	unipc_schedule_free(&sb);
	CHECK_INT(unipc_set_timesteps(&a, 0, &sa, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-SCHED-010");
}

int
main(void)
{
	test_config();
	test_golden();
	test_reference();
	return test_summary();
}
