/*
 * unipc.c — UniPCMultistepScheduler (diffusers
 * schedulers/scheduling_unipc_multistep.py) with flow sigmas, as
 * WanPipeline uses it: the schedule, the predictor / corrector pair and
 * the state a checkpoint carries (see unipc.h).
 *
 * As in scheduler.c, one upstream operation is one C statement with one
 * rounding: the scalar coefficients are 0-d float32 tensors upstream
 * (sigma, alpha, lambda, h, rk, expm1(hh), the b vector), the element
 * updates float32 tensor ops evaluated left to right.  FMA contraction is
 * forbidden so that holds on every target.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sampler/unipc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "sampler/scheduler.h"
#include "sampler/scheduler-int.h"

void
unipc_config_init(struct unipc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->num_train_timesteps = 1000;
	cfg->solver_order = 2;
	cfg->solver_type = UNIPC_BH2;
	cfg->lower_order_final = true;
	cfg->flow_shift = 1.0;
	cfg->shift_terminal = 0.0;
	cfg->final_sigmas_type = UNIPC_FINAL_ZERO;
	cfg->n_disable_corrector = 0;
}

/* A string key that must be one of `allowed` (NULL-terminated); *index. */
static enum lq_status
get_choice(const cJSON *json, const char *path, const char *key,
    const char *const *allowed, const char *hint, int *index,
    struct lq_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, key);

	if (v == NULL)
		return LQ_OK;
	if (!cJSON_IsString(v))
		return scheduler_config_error(err, path, "LQ-SCHED-001", key,
		    hint, "%s must be a string, not %s",
		    scheduler_json_type_name(v));
	for (int i = 0; allowed[i] != NULL; i++) {
		if (strcmp(v->valuestring, allowed[i]) == 0) {
			*index = i;
			return LQ_OK;
		}
	}
	return scheduler_config_error(err, path, "LQ-SCHED-002", key, hint,
	    "%s is \"%s\", which latentq does not implement",
	    v->valuestring);
}

/* Options upstream has and latentq refuses when set (true / non-null). */
static const struct {
	const char *key;
	const char *what;
} unimplemented[] = {
	{ "use_karras_sigmas", "Karras sigmas are" },
	{ "use_exponential_sigmas", "exponential sigmas are" },
	{ "use_beta_sigmas", "beta sigmas are" },
	{ "thresholding", "dynamic thresholding is" },
	{ "use_dynamic_shifting", "dynamic shifting (WanPipeline never "
	    "passes mu; diffusers raises) is" },
};

static const char *const known_keys[] = {
	"num_train_timesteps", "beta_start", "beta_end", "beta_schedule",
	"trained_betas", "solver_order", "prediction_type", "thresholding",
	"dynamic_thresholding_ratio", "sample_max_value", "predict_x0",
	"solver_type", "lower_order_final", "disable_corrector", "solver_p",
	"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas",
	"use_flow_sigmas", "flow_shift", "timestep_spacing", "steps_offset",
	"final_sigmas_type", "rescale_betas_zero_snr", "use_dynamic_shifting",
	"time_shift_type", "sigma_min", "sigma_max", "shift_terminal",
};

static const char *const solver_types[] = { "bh1", "bh2", "midpoint",
    "heun", "logrho", NULL };
static const char *const final_types[] = { "zero", "sigma_min", NULL };
static const char *const spacings[] = { "linspace", "leading", "trailing",
    NULL };
static const char *const predictions[] = { "flow_prediction", NULL };
static const char *const beta_schedules[] = { "linear", "scaled_linear",
    "squaredcos_cap_v2", NULL };

enum lq_status
unipc_config_from_json(const cJSON *json, const char *path,
    struct unipc_config *cfg, struct lq_error *err)
{
	const cJSON *v;
	bool flag, is_null;
	int64_t order = 2, steps_offset = 0;
	double num = 0.0;
	int idx;
	char detail[64];

	unipc_config_init(cfg);
	if (!cJSON_IsObject(json)) {
		error_set(err, LQ_FAILED, "LQ-SCHED-005", "scheduler config "
		    "must be a JSON object, not %s",
		    scheduler_json_type_name(json));
		error_set_where(err, path, 0, 0);
		return LQ_FAILED;
	}
	v = cJSON_GetObjectItemCaseSensitive(json, "_class_name");
	if (v != NULL && (!cJSON_IsString(v) ||
	    strcmp(v->valuestring, UNIPC_CLASS_NAME) != 0))
		return scheduler_config_error(err, path, "LQ-SCHED-003",
		    "_class_name", "WanPipeline's scheduler is "
		    UNIPC_CLASS_NAME " (its released scheduler folders use it)",
		    "%s is %s; latentq implements only " UNIPC_CLASS_NAME
		    " for this pipeline", cJSON_IsString(v) ? v->valuestring :
		    "not a string");

	for (size_t i = 0; i < LQ_ARRAY_LEN(unimplemented); i++) {
		flag = false;
		if (scheduler_json_bool(json, path, unimplemented[i].key, &flag,
		    err) != LQ_OK)
			return LQ_FAILED;
		if (flag)
			return scheduler_config_error(err, path, "LQ-SCHED-004",
			    unimplemented[i].key, "set it to false (Wan 2.1's "
			    "released scheduler configs do)",
			    "%s is true: %s not implemented in latentq",
			    unimplemented[i].what);
	}
	/* use_flow_sigmas and predict_x0 must be on: latentq implements the
	 * flow-matching form only (the VP / DDPM one is not Wan's). */
	flag = false;
	if (scheduler_json_bool(json, path, "use_flow_sigmas", &flag, err) !=
	    LQ_OK)
		return LQ_FAILED;
	if (!flag)
		return scheduler_config_error(err, path, "LQ-SCHED-004",
		    "use_flow_sigmas", "set \"use_flow_sigmas\": true and "
		    "\"prediction_type\": \"flow_prediction\" (Wan 2.1's "
		    "scheduler configs)", "%s is %s: only flow sigmas are "
		    "implemented for " UNIPC_CLASS_NAME, cJSON_GetObjectItem(
		    json, "use_flow_sigmas") ? "false" : "absent (default false)");
	flag = true;
	if (scheduler_json_bool(json, path, "predict_x0", &flag, err) != LQ_OK)
		return LQ_FAILED;
	if (!flag)
		return scheduler_config_error(err, path, "LQ-SCHED-004",
		    "predict_x0", "set it to true (flow_prediction needs it; "
		    "diffusers raises otherwise)", "%s is %s: only the x0 "
		    "(data prediction) form is implemented", "false");
	v = cJSON_GetObjectItemCaseSensitive(json, "prediction_type");
	if (v == NULL)
		return scheduler_config_error(err, path, "LQ-SCHED-004",
		    "prediction_type", "set \"prediction_type\": "
		    "\"flow_prediction\"", "%s is %s: only flow_prediction is "
		    "implemented with flow sigmas", "absent (default epsilon)");
	if (get_choice(json, path, "prediction_type", predictions,
	    "use \"flow_prediction\"", &idx, err) != LQ_OK)
		return LQ_FAILED;
	v = cJSON_GetObjectItemCaseSensitive(json, "solver_p");
	if (v != NULL && !cJSON_IsNull(v))
		return scheduler_config_error(err, path, "LQ-SCHED-004",
		    "solver_p", "set it to null", "%s is %s: an outside "
		    "predictor scheduler is not implemented", "set");

	if (scheduler_json_int(json, path, "num_train_timesteps",
	    &cfg->num_train_timesteps, 1, err) != LQ_OK ||
	    scheduler_json_int(json, path, "solver_order", &order, 1, err) !=
	    LQ_OK ||
	    scheduler_json_bool(json, path, "lower_order_final",
	    &cfg->lower_order_final, err) != LQ_OK ||
	    scheduler_json_number(json, path, "flow_shift", &cfg->flow_shift,
	    false, NULL, err) != LQ_OK ||
	    scheduler_json_number(json, path, "shift_terminal",
	    &cfg->shift_terminal, true, &is_null, err) != LQ_OK)
		return LQ_FAILED;
	if (is_null)
		cfg->shift_terminal = 0.0;
	if (order > UNIPC_MAX_ORDER) {
		snprintf(detail, sizeof(detail), "%lld", (long long)order);
		return scheduler_config_error(err, path, "LQ-SCHED-002",
		    "solver_order", "use 1, 2 (Wan's) or 3",
		    "%s is %s; latentq implements orders 1 to 3", detail);
	}
	cfg->solver_order = (int)order;
	if (!(cfg->flow_shift > 0.0)) {
		snprintf(detail, sizeof(detail), "%.17g", cfg->flow_shift);
		return scheduler_config_error(err, path, "LQ-SCHED-002",
		    "flow_shift", "Wan 2.1 uses 3.0 (480p) or 5.0 (720p)",
		    "%s is %s; it must be greater than 0", detail);
	}
	if (cfg->shift_terminal < 0.0 || cfg->shift_terminal >= 1.0) {
		snprintf(detail, sizeof(detail), "%.17g", cfg->shift_terminal);
		return scheduler_config_error(err, path, "LQ-SCHED-002",
		    "shift_terminal", "null disables it",
		    "%s is %s; it must be null or in [0, 1)", detail);
	}

	/* solver_type: upstream maps midpoint / heun / logrho to bh2 */
	idx = 1;
	if (get_choice(json, path, "solver_type", solver_types,
	    "use \"bh2\" (Wan's) or \"bh1\"", &idx, err) != LQ_OK)
		return LQ_FAILED;
	cfg->solver_type = idx == 0 ? UNIPC_BH1 : UNIPC_BH2;
	idx = 0;
	if (get_choice(json, path, "final_sigmas_type", final_types,
	    "use \"zero\" or \"sigma_min\"", &idx, err) != LQ_OK)
		return LQ_FAILED;
	cfg->final_sigmas_type = idx == 0 ? UNIPC_FINAL_ZERO :
	    UNIPC_FINAL_SIGMA_MIN;
	/* Checked as upstream checks them, without effect on flow sigmas. */
	if (get_choice(json, path, "timestep_spacing", spacings,
	    "use \"linspace\", \"leading\" or \"trailing\"", &idx, err) !=
	    LQ_OK || get_choice(json, path, "beta_schedule", beta_schedules,
	    "use \"linear\"", &idx, err) != LQ_OK ||
	    scheduler_json_number(json, path, "beta_start", &num, false, NULL,
	    err) != LQ_OK ||
	    scheduler_json_number(json, path, "beta_end", &num, false, NULL,
	    err) != LQ_OK ||
	    scheduler_json_int(json, path, "steps_offset", &steps_offset, 0,
	    err) != LQ_OK ||
	    scheduler_json_bool(json, path, "rescale_betas_zero_snr", &flag,
	    err) != LQ_OK)
		return LQ_FAILED;

	v = cJSON_GetObjectItemCaseSensitive(json, "disable_corrector");
	if (v != NULL) {
		const cJSON *e;
		if (!cJSON_IsArray(v))
			return scheduler_config_error(err, path, "LQ-SCHED-001",
			    "disable_corrector", "a list of step indices, "
			    "usually []", "%s must be a list of integers, not "
			    "%s", scheduler_json_type_name(v));
		cJSON_ArrayForEach(e, v) {
			if (!cJSON_IsNumber(e) || e->valuedouble !=
			    floor(e->valuedouble) || fabs(e->valuedouble) >
			    1e9)
				return scheduler_config_error(err, path,
				    "LQ-SCHED-001", "disable_corrector", NULL,
				    "%s must be a list of integers, not one "
				    "holding %s", cJSON_IsNumber(e) ?
				    "a fraction" : scheduler_json_type_name(e));
			if (cfg->n_disable_corrector == UNIPC_MAX_DISABLED)
				return scheduler_config_error(err, path,
				    "LQ-SCHED-002", "disable_corrector", NULL,
				    "%s has more than %s entries",
				    "64");
			cfg->disable_corrector[cfg->n_disable_corrector++] =
			    (int)e->valuedouble;
		}
	}

	scheduler_warn_unknown_keys(json, path, known_keys,
	    LQ_ARRAY_LEN(known_keys));
	return LQ_OK;
}

enum lq_status
unipc_config_load(const char *path, struct unipc_config *cfg,
    struct lq_error *err)
{
	cJSON *json = scheduler_config_read(path, err);
	enum lq_status st;

	if (json == NULL)
		return LQ_FAILED;
	st = unipc_config_from_json(json, path, cfg, err);
	cJSON_Delete(json);
	return st;
}

enum lq_status
unipc_config_set_flow_shift(struct unipc_config *cfg, double flow_shift,
    struct lq_error *err)
{
	if (!(flow_shift > 0.0) || !isfinite(flow_shift)) {
		error_set(err, LQ_FAILED, "LQ-WAN-005", "flow_shift is %g; it "
		    "must be a number greater than 0", flow_shift);
		error_set_field(err, "flow_shift");
		error_set_hint(err, "Wan 2.1 uses 3.0 (480p) or 5.0 (720p); "
		    "leave it out for the scheduler config's");
		return LQ_FAILED;
	}
	cfg->flow_shift = flow_shift;
	return LQ_OK;
}

void
unipc_schedule_free(struct unipc_schedule *s)
{
	if (s == NULL)
		return;
	free(s->sigmas);
	free(s->timesteps);
	memset(s, 0, sizeof(*s));
}

enum lq_status
unipc_set_timesteps(const struct unipc_config *cfg, int num_steps,
    struct unipc_schedule *out, struct lq_error *err)
{
	double *s, ntt, shift, a, b, omz_last, scale, last;
	int i, n;

	memset(out, 0, sizeof(*out));
	if (scheduler_check_steps(num_steps, err) != LQ_OK)
		return LQ_FAILED;
	n = num_steps;
	ntt = (double)cfg->num_train_timesteps;
	/* np.linspace(1, 1 / num_train_timesteps, N + 1)[:-1], float64 */
	s = xmalloc((size_t)(n + 1) * sizeof(*s));
	scheduler_linspace(1.0, 1.0 / ntt, n + 1, s);
	/* flow_shift * sigmas / (1 + (flow_shift - 1) * sigmas): the static
	 * shift of FlowMatchEulerDiscreteScheduler, but in float64 here
	 * (NumPy), where that scheduler rounds to float32 first. */
	shift = cfg->flow_shift;
	for (i = 0; i < n; i++) {
		a = shift * s[i];
		b = (shift - 1.0) * s[i];
		b = 1.0 + b;
		s[i] = a / b;
	}
	/* stretch_shift_to_terminal, float64 (0/0 with N = 1, left as is,
	 * as scheduler.c does) */
	if (cfg->shift_terminal != 0.0) {
		omz_last = 1.0 - s[n - 1];
		if (omz_last != 0.0) {
			scale = omz_last / (1.0 - cfg->shift_terminal);
			for (i = 0; i < n; i++) {
				a = 1.0 - s[i];
				s[i] = 1.0 - a / scale;
			}
		}
	}
	/* avoid inf torch.log(alpha) in the first update */
	if (fabs(s[0] - 1.0) < 1e-6)
		s[0] -= 1e-6;
	last = cfg->final_sigmas_type == UNIPC_FINAL_SIGMA_MIN ? s[n - 1] :
	    0.0;

	out->num_steps = n;
	out->sigmas = xmalloc((size_t)(n + 1) * sizeof(float));
	out->timesteps = xmalloc((size_t)n * sizeof(int64_t));
	for (i = 0; i < n; i++) {
		double t = s[i] * ntt;
		if (!isfinite(s[i]) || !(s[i] > 0.0) || !(s[i] < 1.0)) {
			error_set(err, LQ_FAILED, "LQ-SCHED-012", "sigma %d of "
			    "%d is %.17g; the flow sigmas must lie in (0, 1)",
			    i, n, s[i]);
			error_set_hint(err, "check flow_shift and "
			    "shift_terminal in scheduler_config.json");
			free(s);
			unipc_schedule_free(out);
			return LQ_FAILED;
		}
		out->timesteps[i] = (int64_t)t;	/* torch .to(int64): trunc */
		out->sigmas[i] = (float)s[i];
	}
	out->sigmas[n] = (float)last;
	free(s);
	return LQ_OK;
}

void
unipc_state_init(struct unipc_state *st, const struct unipc_config *cfg,
    size_t n)
{
	memset(st, 0, sizeof(*st));
	st->solver_order = cfg->solver_order;
	st->n = n;
	st->model_outputs = xmalloc((size_t)cfg->solver_order * n *
	    sizeof(float) + 1);
	st->last_sample = xmalloc(n * sizeof(float) + 1);
	/* x0, then the predictor's / corrector's (order - 1) D1 rows */
	st->scratch = xmalloc((size_t)cfg->solver_order * n * sizeof(float) +
	    1);
}

void
unipc_state_free(struct unipc_state *st)
{
	if (st == NULL)
		return;
	free(st->model_outputs);
	free(st->last_sample);
	free(st->scratch);
	memset(st, 0, sizeof(*st));
}

/* lambda = log(alpha) - log(sigma), alpha = 1 - sigma (flow sigmas). */
static float
flow_lambda(float sigma)
{
	float alpha = 1.0f - sigma;
	float la = logf(alpha), ls = logf(sigma);
	return la - ls;
}

/* The newest-first view of upstream's model_outputs list: [-(i + 1)]. */
static const float *
history(const struct unipc_state *st, int i)
{
	int slot = st->solver_order - 1 - i;
	LQ_ASSERT(slot >= 0 && st->have_output[slot]);
	return st->model_outputs + (size_t)slot * st->n;
}

/*
 * The coefficients both updates share: hh = -h (predict_x0),
 * h_phi_1 = expm1(hh), B_h, and b[0 .. order-1]:
 *   h_phi_k = h_phi_1 / hh - 1; for i in 1..order:
 *     b_i = h_phi_k * i! / B_h; h_phi_k = h_phi_k / hh - 1 / (i+1)!
 * (the Python float 1/(i+1)! becomes float32 against the 0-d tensor).
 */
static void
coefficients(const struct unipc_config *cfg, float h, int order,
    float *h_phi_1, float *B_h, float *b)
{
	float hh = -h, hp1 = expm1f(hh), hpk, bh;
	int64_t fact = 1;

	hpk = hp1 / hh;
	hpk = hpk - 1.0f;
	bh = cfg->solver_type == UNIPC_BH1 ? hh : expm1f(hh);
	for (int i = 1; i <= order; i++) {
		float t = hpk * (float)fact;
		b[i - 1] = t / bh;
		fact *= i + 1;
		hpk = hpk / hh;
		hpk = hpk - (float)(1.0 / (double)fact);
	}
	*h_phi_1 = hp1;
	*B_h = bh;
}

/* torch.pow(rk, p) for p = 0, 1, 2 (x * x) as upstream's R rows. */
static float
pow_int(float x, int p)
{
	if (p == 0)
		return 1.0f;
	if (p == 1)
		return x;
	if (p == 2)
		return x * x;
	return powf(x, (float)p);
}

/*
 * Solves A x = b (k x k, k <= UNIPC_MAX_ORDER, A row-major) in float32 by
 * Gaussian elimination with partial pivoting (LAPACK's getrf / getrs
 * steps: the first largest |pivot| wins, multipliers by division).
 */
static void
solve_small(float *A, float *b, int k, float *x)
{
	for (int c = 0; c < k; c++) {
		int p = c;
		for (int r = c + 1; r < k; r++)
			if (fabsf(A[r * k + c]) > fabsf(A[p * k + c]))
				p = r;
		if (p != c) {
			for (int j = 0; j < k; j++) {
				float t = A[c * k + j];
				A[c * k + j] = A[p * k + j];
				A[p * k + j] = t;
			}
			float t = b[c];
			b[c] = b[p];
			b[p] = t;
		}
		for (int r = c + 1; r < k; r++) {
			float l = A[r * k + c] / A[c * k + c];
			for (int j = c + 1; j < k; j++) {
				float t = l * A[c * k + j];
				A[r * k + j] = A[r * k + j] - t;
			}
			float t = l * b[c];
			b[r] = b[r] - t;
		}
	}
	for (int r = k - 1; r >= 0; r--) {
		float acc = b[r];
		for (int j = r + 1; j < k; j++) {
			float t = A[r * k + j] * x[j];
			acc = acc - t;
		}
		x[r] = acc / A[r * k + r];
	}
}

/*
 * The D1s of both updates: D1_i = (m_{-(i+1)} - m0) / rk_i, written to
 * d1[(i-1) * n], from lambda_si for sigma index si(i) = base - i.
 * rks[i-1] gets rk_i.
 */
static void
d1s(const struct unipc_state *st, const struct unipc_schedule *s,
    int base, int order, float lambda_s0, float h, const float *m0,
    float *rks, float *d1)
{
	size_t n = st->n;

	for (int i = 1; i < order; i++) {
		int si = base - i;
		const float *mi = history(st, i);
		float *d = d1 + (size_t)(i - 1) * n;
		LQ_ASSERT(si >= 0);
		float rk = flow_lambda(s->sigmas[si]) - lambda_s0;
		rk = rk / h;
		rks[i - 1] = rk;
		for (size_t j = 0; j < n; j++) {
			float t = mi[j] - m0[j];
			d[j] = t / rk;
		}
	}
}

/*
 * multistep_uni_p_bh_update (predict_x0) at step k with `order`:
 * x_t = sigma_t / sigma_s0 * x - alpha_t * h_phi_1 * m0
 *       - alpha_t * B_h * sum_k rhos_p[k] D1_k
 * with rhos_p = 0.5 for order 2, solve(R[:-1, :-1], b[:-1]) above.
 * x is read and the result written to out (may alias x).
 */
static void
predictor(const struct unipc_config *cfg, const struct unipc_schedule *s,
    const struct unipc_state *st, int k, int order, const float *x,
    float *out, float *d1)
{
	size_t n = st->n;
	float sigma_t = s->sigmas[k + 1], sigma_s0 = s->sigmas[k];
	float alpha_t = 1.0f - sigma_t;
	float lambda_t = flow_lambda(sigma_t), lambda_s0 = flow_lambda(sigma_s0);
	float h = lambda_t - lambda_s0;
	float rks[UNIPC_MAX_ORDER], b[UNIPC_MAX_ORDER];
	float rhos[UNIPC_MAX_ORDER], h_phi_1, B_h;
	const float *m0 = history(st, 0);

	d1s(st, s, k, order, lambda_s0, h, m0, rks, d1);
	rks[order - 1] = 1.0f;
	coefficients(cfg, h, order, &h_phi_1, &B_h, b);
	if (order == 2) {
		rhos[0] = 0.5f;
	} else if (order > 2) {
		float R[UNIPC_MAX_ORDER * UNIPC_MAX_ORDER];
		int kk = order - 1;
		for (int r = 0; r < kk; r++)
			for (int c = 0; c < kk; c++)
				R[r * kk + c] = pow_int(rks[c], r);
		solve_small(R, b, kk, rhos);
	}

	float ratio = sigma_t / sigma_s0;
	float ah = alpha_t * h_phi_1;
	float ab = alpha_t * B_h;
	for (size_t j = 0; j < n; j++) {
		float x_ = ratio * x[j], t = ah * m0[j];
		x_ = x_ - t;
		float res = 0.0f;
		if (order == 2) {
			res = rhos[0] * d1[j];
		} else if (order > 2) {
			res = rhos[0] * d1[j];
			for (int i = 1; i < order - 1; i++) {
				float p = rhos[i] * d1[(size_t)i * n + j];
				res = res + p;
			}
		}
		t = ab * res;
		out[j] = x_ - t;
	}
}

/*
 * multistep_uni_c_bh_update (predict_x0) at step k (>= 1) with the
 * previous step's `order`: corrects this_sample (x_t, in place) from
 * last_sample x, the history (m0 = the previous step's x0) and
 * model_t = this step's x0:
 * x_t = sigma_t / sigma_s0 * x - alpha_t * h_phi_1 * m0
 *       - alpha_t * B_h * (sum rhos_c[:-1] D1s + rhos_c[-1] (model_t - m0))
 * rhos_c = 0.5 for order 1, solve(R, b) above.
 */
static void
corrector(const struct unipc_config *cfg, const struct unipc_schedule *s,
    const struct unipc_state *st, int k, int order, const float *model_t,
    float *x_t, float *d1)
{
	size_t n = st->n;
	float sigma_t = s->sigmas[k], sigma_s0 = s->sigmas[k - 1];
	float alpha_t = 1.0f - sigma_t;
	float lambda_t = flow_lambda(sigma_t), lambda_s0 = flow_lambda(sigma_s0);
	float h = lambda_t - lambda_s0;
	float rks[UNIPC_MAX_ORDER], b[UNIPC_MAX_ORDER];
	float rhos[UNIPC_MAX_ORDER], h_phi_1, B_h;
	const float *m0 = history(st, 0), *x = st->last_sample;

	d1s(st, s, k - 1, order, lambda_s0, h, m0, rks, d1);
	rks[order - 1] = 1.0f;
	coefficients(cfg, h, order, &h_phi_1, &B_h, b);
	if (order == 1) {
		rhos[0] = 0.5f;
	} else {
		float R[UNIPC_MAX_ORDER * UNIPC_MAX_ORDER];
		for (int r = 0; r < order; r++)
			for (int c = 0; c < order; c++)
				R[r * order + c] = pow_int(rks[c], r);
		solve_small(R, b, order, rhos);
	}

	float ratio = sigma_t / sigma_s0;
	float ah = alpha_t * h_phi_1;
	float ab = alpha_t * B_h;
	float rl = rhos[order - 1];
	for (size_t j = 0; j < n; j++) {
		float x_ = ratio * x[j], t = ah * m0[j];
		x_ = x_ - t;
		float res = 0.0f;	/* upstream's integer 0 */
		if (order >= 2) {
			res = rhos[0] * d1[j];
			for (int i = 1; i < order - 1; i++) {
				float p = rhos[i] * d1[(size_t)i * n + j];
				res = res + p;
			}
		}
		float d1t = model_t[j] - m0[j];
		d1t = rl * d1t;
		res = res + d1t;
		t = ab * res;
		x_t[j] = x_ - t;
	}
}

void
unipc_step(const struct unipc_config *cfg, const struct unipc_schedule *s,
    struct unipc_state *st, const float *model_output, float *sample)
{
	int k = st->step_index, order, slots = st->solver_order;
	size_t n = st->n;
	float *x0 = st->scratch, *d1 = st->scratch + n;
	bool use_corrector;

	LQ_ASSERT(k >= 0 && k < s->num_steps);
	LQ_ASSERT(st->solver_order == cfg->solver_order);

	use_corrector = k > 0 && st->have_last_sample;
	for (int i = 0; use_corrector && i < cfg->n_disable_corrector; i++)
		if (cfg->disable_corrector[i] == k - 1)
			use_corrector = false;

	/* convert_model_output, flow_prediction: sample - sigma_t * v */
	float sigma = s->sigmas[k];
	for (size_t j = 0; j < n; j++) {
		float t = sigma * model_output[j];
		x0[j] = sample[j] - t;
	}
	if (use_corrector)
		corrector(cfg, s, st, k, st->this_order, x0, sample, d1);

	/* model_outputs[i] = model_outputs[i + 1]; [-1] = x0 */
	if (slots > 1)
		memmove(st->model_outputs, st->model_outputs + n,
		    (size_t)(slots - 1) * n * sizeof(float));
	for (int i = 0; i + 1 < slots; i++)
		st->have_output[i] = st->have_output[i + 1];
	memcpy(st->model_outputs + (size_t)(slots - 1) * n, x0,
	    n * sizeof(float));
	st->have_output[slots - 1] = 1;

	order = cfg->solver_order;
	if (cfg->lower_order_final && s->num_steps - k < order)
		order = s->num_steps - k;
	if (st->lower_order_nums + 1 < order)
		order = st->lower_order_nums + 1;
	LQ_ASSERT(order > 0);
	st->this_order = order;

	memcpy(st->last_sample, sample, n * sizeof(float));
	st->have_last_sample = 1;
	predictor(cfg, s, st, k, order, st->last_sample, sample, d1);

	if (st->lower_order_nums < cfg->solver_order)
		st->lower_order_nums++;
	st->step_index++;
}

/* The packed state's header: 8 bytes of magic, then 6 little-endian u64. */
#define PACK_MAGIC "LQUNIPC1"
#define PACK_HEADER (8 + 6 * 8)

static void
put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t
get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Floats as little-endian bytes (the host order is checked once). */
static void
put_f32s(unsigned char *p, const float *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &v[i], 4);
		p[4 * i] = (unsigned char)u;
		p[4 * i + 1] = (unsigned char)(u >> 8);
		p[4 * i + 2] = (unsigned char)(u >> 16);
		p[4 * i + 3] = (unsigned char)(u >> 24);
	}
}

static void
get_f32s(const unsigned char *p, float *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
		    (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
		memcpy(&v[i], &u, 4);
	}
}

/* flags: bit i = have_output[i], bit 8 = have_last_sample */
static uint64_t
pack_flags(const struct unipc_state *st)
{
	uint64_t f = 0;
	for (int i = 0; i < st->solver_order; i++)
		if (st->have_output[i])
			f |= (uint64_t)1 << i;
	if (st->have_last_sample)
		f |= (uint64_t)1 << 8;
	return f;
}

size_t
unipc_state_packed_size(const struct unipc_state *st)
{
	/* every slot and last_sample, set or not: one size per config, so
	 * checkpoints of every step are alike (absent arrays are zeros) */
	return PACK_HEADER + ((size_t)st->solver_order + 1) * st->n * 4;
}

void
unipc_state_pack(const struct unipc_state *st, unsigned char *out)
{
	unsigned char *p = out + PACK_HEADER;

	memcpy(out, PACK_MAGIC, 8);
	put_u64(out + 8, (uint64_t)st->solver_order);
	put_u64(out + 16, (uint64_t)st->n);
	put_u64(out + 24, (uint64_t)st->step_index);
	put_u64(out + 32, (uint64_t)st->lower_order_nums);
	put_u64(out + 40, (uint64_t)st->this_order);
	put_u64(out + 48, pack_flags(st));
	memset(p, 0, ((size_t)st->solver_order + 1) * st->n * 4);
	for (int i = 0; i < st->solver_order; i++, p += st->n * 4)
		if (st->have_output[i])
			put_f32s(p, st->model_outputs + (size_t)i * st->n,
			    st->n);
	if (st->have_last_sample)
		put_f32s(p, st->last_sample, st->n);
}

enum lq_status
unipc_state_unpack(struct unipc_state *st, const unsigned char *data,
    size_t len, struct lq_error *err)
{
	uint64_t order, n, k, lon, to, flags;
	const unsigned char *p;

	if (len < PACK_HEADER || memcmp(data, PACK_MAGIC, 8) != 0)
		return error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "the "
		    "checkpoint's scheduler state is not a UniPC state (%zu "
		    "bytes)", len);
	order = get_u64(data + 8);
	n = get_u64(data + 16);
	k = get_u64(data + 24);
	lon = get_u64(data + 32);
	to = get_u64(data + 40);
	flags = get_u64(data + 48);
	if (order != (uint64_t)st->solver_order || n != st->n)
		return error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "the "
		    "checkpoint's UniPC state is of solver_order %llu for %llu "
		    "values; this render has solver_order %d for %zu",
		    (unsigned long long)order, (unsigned long long)n,
		    st->solver_order, st->n);
	if (k > (uint64_t)INT32_MAX || lon > order || to > order ||
	    (flags & ~(((uint64_t)1 << order) - 1) & ~((uint64_t)1 << 8)) != 0)
		return error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "the "
		    "checkpoint's UniPC state has counters out of range (step "
		    "%llu, lower_order_nums %llu, this_order %llu)",
		    (unsigned long long)k, (unsigned long long)lon,
		    (unsigned long long)to);
	if (len != unipc_state_packed_size(st))
		return error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "the "
		    "checkpoint's UniPC state is %zu bytes, not %zu", len,
		    unipc_state_packed_size(st));
	st->step_index = (int)k;
	st->lower_order_nums = (int)lon;
	st->this_order = (int)to;
	p = data + PACK_HEADER;
	for (int i = 0; i < st->solver_order; i++, p += n * 4) {
		st->have_output[i] = (int)((flags >> i) & 1);
		if (st->have_output[i])
			get_f32s(p, st->model_outputs + (size_t)i * n, n);
	}
	st->have_last_sample = (int)((flags >> 8) & 1);
	if (st->have_last_sample)
		get_f32s(p, st->last_sample, n);
	return LQ_OK;
}

void
unipc_config_describe(const struct unipc_config *cfg, char *out, size_t cap)
{
	size_t len;
	int w;

	/* %a: the exact bits of the doubles */
	w = snprintf(out, cap, UNIPC_CLASS_NAME " order=%d %s "
	    "lower_order_final=%d flow_shift=%a shift_terminal=%a final=%s "
	    "num_train_timesteps=%lld disable_corrector=[", cfg->solver_order,
	    cfg->solver_type == UNIPC_BH1 ? "bh1" : "bh2",
	    cfg->lower_order_final ? 1 : 0, cfg->flow_shift,
	    cfg->shift_terminal, cfg->final_sigmas_type == UNIPC_FINAL_ZERO ?
	    "zero" : "sigma_min", (long long)cfg->num_train_timesteps);
	len = w < 0 ? 0 : (size_t)w;
	for (int i = 0; i < cfg->n_disable_corrector && len < cap; i++) {
		w = snprintf(out + len, cap - len, "%s%d", i ? "," : "",
		    cfg->disable_corrector[i]);
		len += w < 0 ? 0 : (size_t)w;
	}
	if (len < cap)
		snprintf(out + len, cap - len, "]");
}
