/*
 * scheduler.c — FlowMatchEulerDiscreteScheduler's schedule, Euler step and
 * LTXPipeline's classifier-free guidance, reproducing upstream's float32 /
 * float64 arithmetic one operation at a time (see scheduler.h).
 *
 * Why each expression is split into single operations: upstream evaluates
 * every NumPy / torch operation with one rounding.  A C compiler allowed to
 * contract a*b + c into an FMA would round once instead of twice and drift
 * from the goldens in the last bit (test-scheduler fails if it does); the
 * pragmas below forbid it even under -std=gnu11 -march=native, and one
 * operation per statement keeps the intent visible.
 */
/* No FMA contraction: every operation rounds once, as upstream's do. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sampler/scheduler.h"
#include "sampler/scheduler-int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/json.h"
#include "core/util.h"

#define SCHED_CLASS_NAME "FlowMatchEulerDiscreteScheduler"

void
scheduler_config_init(struct scheduler_config *cfg)
{
	cfg->num_train_timesteps = 1000;
	cfg->shift = 1.0;
	cfg->use_dynamic_shifting = false;
	cfg->base_shift = 0.5;
	cfg->max_shift = 1.15;
	cfg->base_image_seq_len = 256;
	cfg->max_image_seq_len = 4096;
	cfg->shift_terminal = 0.0;
	cfg->time_shift_type = SCHEDULER_TIME_SHIFT_EXPONENTIAL;
}

enum lq_status
scheduler_config_error(struct lq_error *err, const char *path,
    const char *code, const char *key, const char *hint, const char *fmt,
    const char *detail)
{
	error_set(err, LQ_FAILED, code, fmt, key, detail);
	error_set_where(err, path, 0, 0);
	error_set_field(err, "%s", key);
	if (hint != NULL)
		error_set_hint(err, "%s", hint);
	return LQ_FAILED;
}

const char *
scheduler_json_type_name(const cJSON *v)
{
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsArray(v))
		return "an array";
	return "an object";
}

/* A boolean key; *out keeps its default when absent. */
enum lq_status
scheduler_json_bool(const cJSON *json, const char *path, const char *key,
    bool *out, struct lq_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, key);

	if (v == NULL)
		return LQ_OK;
	if (!cJSON_IsBool(v))
		return scheduler_config_error(err, path, "LQ-SCHED-001", key,
		    NULL, "%s must be true or false, not %s",
		    scheduler_json_type_name(v));
	*out = cJSON_IsTrue(v);
	return LQ_OK;
}

/* A number key (null allowed only if null_ok; then *is_null is set). */
enum lq_status
scheduler_json_number(const cJSON *json, const char *path, const char *key,
    double *out, bool null_ok, bool *is_null, struct lq_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, key);

	if (is_null != NULL)
		*is_null = false;
	if (v == NULL)
		return LQ_OK;
	if (null_ok && cJSON_IsNull(v)) {
		*is_null = true;
		return LQ_OK;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return scheduler_config_error(err, path, "LQ-SCHED-001", key,
		    NULL, "%s must be a finite number, not %s",
		    scheduler_json_type_name(v));
	*out = v->valuedouble;
	return LQ_OK;
}

/* An integer key in [min, 2^53]. */
enum lq_status
scheduler_json_int(const cJSON *json, const char *path, const char *key,
    int64_t *out, int64_t min, struct lq_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(json, key);
	char detail[64];

	if (v == NULL)
		return LQ_OK;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
	    !(fabs(v->valuedouble) <= 9007199254740992.0))
		return scheduler_config_error(err, path, "LQ-SCHED-001", key,
		    NULL, "%s must be an integer, not %s", cJSON_IsNumber(v) ?
		    "a fraction" : scheduler_json_type_name(v));
	if (v->valuedouble < (double)min) {
		snprintf(detail, sizeof(detail), "%.17g", v->valuedouble);
		return scheduler_config_error(err, path, "LQ-SCHED-002", key,
		    NULL, "%s is %s; it must be at least 1", detail);
	}
	*out = (int64_t)v->valuedouble;
	return LQ_OK;
}

/* Options upstream has and latentq does not implement: refused when set. */
static const struct {
	const char *key;
	const char *what;
} unimplemented_bools[] = {
	{ "use_karras_sigmas", "Karras sigmas" },
	{ "use_exponential_sigmas", "exponential sigmas" },
	{ "use_beta_sigmas", "beta sigmas" },
	{ "stochastic_sampling", "stochastic sampling" },
	{ "invert_sigmas", "inverted sigmas (Mochi)" },
};

static const char *const known_keys[] = {
	"num_train_timesteps", "shift", "use_dynamic_shifting", "base_shift",
	"max_shift", "base_image_seq_len", "max_image_seq_len",
	"shift_terminal", "time_shift_type", "use_karras_sigmas",
	"use_exponential_sigmas", "use_beta_sigmas", "stochastic_sampling",
	"invert_sigmas",
};

enum lq_status
scheduler_config_from_json(const cJSON *json, const char *path,
    struct scheduler_config *cfg, struct lq_error *err)
{
	const cJSON *v;
	bool is_null, flag;
	char detail[64];
	size_t i;

	scheduler_config_init(cfg);
	if (!cJSON_IsObject(json)) {
		error_set(err, LQ_FAILED, "LQ-SCHED-005",
		    "scheduler config must be a JSON object, not %s",
		    scheduler_json_type_name(json));
		error_set_where(err, path, 0, 0);
		return LQ_FAILED;
	}

	v = cJSON_GetObjectItemCaseSensitive(json, "_class_name");
	if (v != NULL && (!cJSON_IsString(v) ||
	    strcmp(v->valuestring, SCHED_CLASS_NAME) != 0))
		return scheduler_config_error(err, path, "LQ-SCHED-003", "_class_name",
		    "latentq implements " SCHED_CLASS_NAME " only",
		    "%s is %s; latentq implements only this scheduler's "
		    "class", cJSON_IsString(v) ? v->valuestring : "not a string");

	for (i = 0; i < LQ_ARRAY_LEN(unimplemented_bools); i++) {
		flag = false;
		if (scheduler_json_bool(json, path, unimplemented_bools[i].key, &flag,
		    err) != LQ_OK)
			return LQ_FAILED;
		if (flag)
			return scheduler_config_error(err, path, "LQ-SCHED-004",
			    unimplemented_bools[i].key,
			    "set it to false (LTX-Video's released configs do)",
			    "%s is true: %s are not implemented in latentq",
			    unimplemented_bools[i].what);
	}

	if (scheduler_json_int(json, path, "num_train_timesteps",
	    &cfg->num_train_timesteps, 1, err) != LQ_OK ||
	    scheduler_json_number(json, path, "shift", &cfg->shift, false, NULL,
	    err) != LQ_OK ||
	    scheduler_json_bool(json, path, "use_dynamic_shifting",
	    &cfg->use_dynamic_shifting, err) != LQ_OK ||
	    scheduler_json_number(json, path, "base_shift", &cfg->base_shift,
	    false, NULL, err) != LQ_OK ||
	    scheduler_json_number(json, path, "max_shift", &cfg->max_shift,
	    false, NULL, err) != LQ_OK ||
	    scheduler_json_int(json, path, "base_image_seq_len",
	    &cfg->base_image_seq_len, 1, err) != LQ_OK ||
	    scheduler_json_int(json, path, "max_image_seq_len",
	    &cfg->max_image_seq_len, 1, err) != LQ_OK ||
	    scheduler_json_number(json, path, "shift_terminal",
	    &cfg->shift_terminal,
	    true, &is_null, err) != LQ_OK)
		return LQ_FAILED;
	if (is_null)
		cfg->shift_terminal = 0.0;

	if (!(cfg->shift > 0.0)) {
		snprintf(detail, sizeof(detail), "%.17g", cfg->shift);
		return scheduler_config_error(err, path, "LQ-SCHED-002", "shift", NULL,
		    "%s is %s; it must be greater than 0", detail);
	}
	if (cfg->shift_terminal < 0.0 || cfg->shift_terminal >= 1.0) {
		snprintf(detail, sizeof(detail), "%.17g", cfg->shift_terminal);
		return scheduler_config_error(err, path, "LQ-SCHED-002", "shift_terminal",
		    "LTX-Video 0.9.0/0.9.1 use 0.1; null disables it",
		    "%s is %s; it must be null or in [0, 1)", detail);
	}
	/* LTXPipeline computes mu whatever use_dynamic_shifting says, and
	 * Python would raise ZeroDivisionError here. */
	if (cfg->base_image_seq_len == cfg->max_image_seq_len) {
		snprintf(detail, sizeof(detail), "%lld",
		    (long long)cfg->max_image_seq_len);
		return scheduler_config_error(err, path, "LQ-SCHED-002",
		    "max_image_seq_len", NULL,
		    "%s equals base_image_seq_len (%s); mu would divide by 0",
		    detail);
	}

	v = cJSON_GetObjectItemCaseSensitive(json, "time_shift_type");
	if (v != NULL) {
		if (cJSON_IsString(v) &&
		    strcmp(v->valuestring, "exponential") == 0)
			cfg->time_shift_type = SCHEDULER_TIME_SHIFT_EXPONENTIAL;
		else if (cJSON_IsString(v) &&
		    strcmp(v->valuestring, "linear") == 0)
			cfg->time_shift_type = SCHEDULER_TIME_SHIFT_LINEAR;
		else
			return scheduler_config_error(err, path, "LQ-SCHED-002",
			    "time_shift_type", "use \"exponential\" or \"linear\"",
			    "%s is %s; it must be \"exponential\" or "
			    "\"linear\"", cJSON_IsString(v) ? v->valuestring :
			    scheduler_json_type_name(v));
	}

	/* diffusers ignores keys it does not know (with a log line); so do we,
	 * except that anything starting with '_' is metadata. */
	scheduler_warn_unknown_keys(json, path, known_keys,
	    LQ_ARRAY_LEN(known_keys));
	return LQ_OK;
}

enum lq_status
scheduler_config_load(const char *path, struct scheduler_config *cfg,
    struct lq_error *err)
{
	cJSON *json = scheduler_config_read(path, err);
	enum lq_status st;

	if (json == NULL)
		return LQ_FAILED;
	st = scheduler_config_from_json(json, path, cfg, err);
	cJSON_Delete(json);
	return st;
}

double
scheduler_calculate_shift(int64_t seq_len, int64_t base_seq_len,
    int64_t max_seq_len, double base_shift, double max_shift)
{
	double num, den, m, mb, b, ml, mu;

	LQ_ASSERT(base_seq_len != max_seq_len);
	num = max_shift - base_shift;
	den = (double)(max_seq_len - base_seq_len);	/* Python int - int */
	m = num / den;
	mb = m * (double)base_seq_len;
	b = base_shift - mb;
	ml = (double)seq_len * m;
	mu = ml + b;
	return mu;
}

void
scheduler_linspace(double start, double stop, int num, double *out)
{
	double delta, step, y;
	int i, div;

	LQ_ASSERT(num >= 1);
	div = num - 1;
	delta = stop - start;
	if (div > 0) {
		step = delta / (double)div;
		for (i = 0; i < num; i++) {
			if (step == 0.0) {
				/* NumPy's denormal path (gh-5437) */
				y = (double)i / (double)div;
				y = y * delta;
			} else {
				y = (double)i * step;
			}
			out[i] = y + start;
		}
		out[num - 1] = stop;
	} else {
		y = 0.0 * delta;
		out[0] = y + start;
	}
}

void
scheduler_schedule_free(struct scheduler_schedule *s)
{
	if (s == NULL)
		return;
	free(s->sigmas);
	free(s->timesteps);
	memset(s, 0, sizeof(*s));
}

/*
 * set_timesteps from float32 sigmas s[0..n-1] (s has room for n + 1):
 * the static or dynamic (mu) time shift, shift_terminal stretching,
 * timesteps = sigmas * num_train_timesteps and the trailing 0, all in
 * float32 as FlowMatchEulerDiscreteScheduler.set_timesteps.  Takes s.
 */
static enum lq_status
finish_schedule(const struct scheduler_config *cfg, float *s, int n,
    int64_t video_seq_len, struct scheduler_schedule *out,
    struct lq_error *err)
{
	float e, a, b, d, shift, shift_m1, num, den, omz_last, scale;
	float ntt;
	int i;

	out->num_steps = n;
	/* Under NumPy 2 (NEP 50) a Python float meeting a float32 array is
	 * cast to float32 and the operation runs in float32; `** 1.0` is the
	 * identity. */
	if (cfg->use_dynamic_shifting) {
		if (cfg->time_shift_type == SCHEDULER_TIME_SHIFT_EXPONENTIAL)
			e = (float)exp(out->mu);	/* math.exp(mu) */
		else
			e = (float)out->mu;
		for (i = 0; i < n; i++) {
			a = 1.0f / s[i];
			b = a - 1.0f;
			d = e + b;
			s[i] = e / d;
		}
	} else {
		/* self.shift * sigmas / (1 + (self.shift - 1) * sigmas) */
		shift = (float)cfg->shift;
		shift_m1 = (float)(cfg->shift - 1.0);
		for (i = 0; i < n; i++) {
			num = shift * s[i];
			den = shift_m1 * s[i];
			den = 1.0f + den;
			s[i] = num / den;
		}
	}

	/* stretch_shift_to_terminal: one_minus_z = 1 - t;
	 * scale = one_minus_z[-1] / (1 - shift_terminal);
	 * t = 1 - one_minus_z / scale.  When one_minus_z[-1] is 0 (N = 1)
	 * upstream computes 0/0; latentq leaves the sigmas as they are. */
	if (cfg->shift_terminal != 0.0) {
		omz_last = 1.0f - s[n - 1];
		if (omz_last != 0.0f) {
			scale = omz_last / (float)(1.0 - cfg->shift_terminal);
			for (i = 0; i < n; i++) {
				a = 1.0f - s[i];
				b = a / scale;
				s[i] = 1.0f - b;
			}
		}
	}

	/* torch: timesteps = sigmas * num_train_timesteps; cat 0 */
	out->sigmas = s;
	out->timesteps = xmalloc((size_t)n * sizeof(float));
	ntt = (float)cfg->num_train_timesteps;
	for (i = 0; i < n; i++)
		out->timesteps[i] = s[i] * ntt;
	s[n] = 0.0f;

	for (i = 0; i < n; i++) {
		if (!isfinite(s[i]) || !isfinite(out->timesteps[i])) {
			error_set(err, LQ_FAILED, "LQ-SCHED-012",
			    "sigma %d of %d is not finite (mu %.17g)", i, n,
			    out->mu);
			scheduler_schedule_free(out);
			return LQ_FAILED;
		}
	}
	if (n >= 2 && out->timesteps[0] == out->timesteps[1]) {
		error_set(err, LQ_FAILED, "LQ-SCHED-012",
		    "the first two timesteps are equal (%.9g) with "
		    "video sequence length %lld (mu %.17g); the diffusers "
		    "scheduler would skip a step", (double)out->timesteps[0],
		    (long long)video_seq_len, out->mu);
		error_set_hint(err, "use fewer steps or a smaller video");
		scheduler_schedule_free(out);
		return LQ_FAILED;
	}
	return LQ_OK;
}

cJSON *
scheduler_config_read(const char *path, struct lq_error *err)
{
	char *text = util_read_file(path, NULL);
	cJSON *json;

	if (text == NULL) {
		error_set(err, LQ_FAILED, "LQ-SCHED-005", "cannot read: %s",
		    util_strerror(errno));
		error_set_where(err, path, 0, 0);
		return NULL;
	}
	json = json_parse_document(text, strlen(text));
	free(text);
	if (json == NULL) {
		error_set(err, LQ_FAILED, "LQ-SCHED-005", "not valid JSON");
		error_set_where(err, path, 0, 0);
	}
	return json;
}

void
scheduler_warn_unknown_keys(const cJSON *json, const char *path,
    const char *const *known, size_t n_known)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, json) {
		size_t k;
		if (v->string == NULL || v->string[0] == '_')
			continue;
		for (k = 0; k < n_known; k++)
			if (strcmp(v->string, known[k]) == 0)
				break;
		if (k == n_known)
			log_warn("%s%sunknown scheduler config key \"%s\" "
			    "ignored", path ? path : "", path ? ": " : "",
			    v->string);
	}
}

enum lq_status
scheduler_check_steps(int num_steps, struct lq_error *err)
{
	if (num_steps >= 1)
		return LQ_OK;
	error_set(err, LQ_FAILED, "LQ-SCHED-010",
	    "num_inference_steps is %d; it must be at least 1", num_steps);
	error_set_field(err, "num_inference_steps");
	return LQ_FAILED;
}

enum lq_status
scheduler_set_timesteps(const struct scheduler_config *cfg, int num_steps,
    int64_t video_seq_len, struct scheduler_schedule *out,
    struct lq_error *err)
{
	double *lin;
	float *s;
	int i, n;

	memset(out, 0, sizeof(*out));
	if (scheduler_check_steps(num_steps, err) != LQ_OK)
		return LQ_FAILED;
	if (video_seq_len < 1) {
		error_set(err, LQ_FAILED, "LQ-SCHED-011",
		    "video sequence length is %lld; it must be at least 1",
		    (long long)video_seq_len);
		return LQ_FAILED;
	}
	n = num_steps;

	/* pipeline_ltx: mu = calculate_shift(video_sequence_length, ...) and
	 * sigmas = np.linspace(1.0, 1 / N, N) in float64 ... */
	out->mu = scheduler_calculate_shift(video_seq_len,
	    cfg->base_image_seq_len, cfg->max_image_seq_len, cfg->base_shift,
	    cfg->max_shift);
	lin = xmalloc((size_t)n * sizeof(*lin));
	scheduler_linspace(1.0, 1.0 / (double)n, n, lin);

	/* ... set_timesteps: np.array(sigmas).astype(np.float32) */
	s = xmalloc((size_t)(n + 1) * sizeof(*s));
	for (i = 0; i < n; i++)
		s[i] = (float)lin[i];
	free(lin);
	return finish_schedule(cfg, s, n, video_seq_len, out, err);
}

void
scheduler_linear_quadratic(int num_steps, float *sigmas)
{
	/* Python floats (float64) throughout, as rf.py writes it; the list
	 * becomes a float32 tensor at the end. */
	const double threshold = 0.025;
	int ls = num_steps / 2, qs = num_steps - ls, i;
	double diff, qc, lc, cst, x;

	if (num_steps < 2) {
		sigmas[0] = 1.0f;
		return;
	}
	for (i = 0; i < ls; i++) {
		x = (double)i * threshold;
		x = x / (double)ls;
		sigmas[i] = (float)(1.0 - x);
	}
	diff = (double)ls - threshold * (double)num_steps;
	qc = diff / (double)((int64_t)ls * qs * qs);
	lc = threshold / (double)ls - 2.0 * diff / (double)((int64_t)qs * qs);
	cst = qc * (double)((int64_t)ls * ls);
	for (i = ls; i < num_steps; i++) {
		x = qc * (double)((int64_t)i * i);
		x = x + lc * (double)i;
		x = x + cst;
		sigmas[i] = (float)(1.0 - x);
	}
}

enum lq_status
scheduler_set_timesteps_condition(const struct scheduler_config *cfg,
    int num_steps, struct scheduler_schedule *out, struct lq_error *err)
{
	float *s, ntt;
	int i;

	memset(out, 0, sizeof(*out));
	if (scheduler_check_steps(num_steps, err) != LQ_OK)
		return LQ_FAILED;
	if (cfg->use_dynamic_shifting) {
		error_set(err, LQ_FAILED, "LQ-SCHED-013", "the scheduler has "
		    "use_dynamic_shifting true; LTXConditionPipeline (a job with "
		    "denoise_strength or conditions) never passes mu, so "
		    "diffusers refuses that schedule");
		error_set_field(err, "use_dynamic_shifting");
		error_set_hint(err, "give the job `scheduler:` a folder whose "
		    "scheduler_config.json has \"use_dynamic_shifting\": false "
		    "(as converted for LTX-Video 0.9.5 and 0.9.7)");
		return LQ_FAILED;
	}
	/* timesteps = linear_quadratic_schedule(N) * 1000 (float32), then
	 * set_timesteps(timesteps=...): sigmas = float32(timesteps) / 1000 */
	s = xmalloc((size_t)(num_steps + 1) * sizeof(*s));
	scheduler_linear_quadratic(num_steps, s);
	ntt = (float)cfg->num_train_timesteps;
	for (i = 0; i < num_steps; i++) {
		float t = s[i] * 1000.0f;
		s[i] = t / ntt;
	}
	return finish_schedule(cfg, s, num_steps, 1, out, err);
}

int
scheduler_denoise_start(int num_steps, double denoise_strength)
{
	/* get_timesteps: n = min(int(N * strength), N); start = max(N - n, 0) */
	double p = (double)num_steps * denoise_strength;
	int64_t n = p >= (double)num_steps ? num_steps : (int64_t)p;
	int64_t start = (int64_t)num_steps - n;

	return start > 0 ? (int)start : 0;
}

float
scheduler_sigma_below(const struct scheduler_schedule *s, float sigma)
{
	/* lower_mask = sigmas < per_token_sigma - 1e-6 (float32);
	 * (lower_mask * sigmas).max(dim=0): 0 when none is lower */
	float lim = sigma - 1e-6f, best = 0.0f;

	for (int i = 0; i <= s->num_steps; i++) {
		float v = s->sigmas[i] < lim ? s->sigmas[i] : 0.0f;
		if (v > best)
			best = v;
	}
	return best;
}

void
scheduler_step_tokens(const struct scheduler_schedule *s, float *x,
    const float *v, size_t tokens, size_t dim, const float *timestep_tokens,
    float t, const float *conditioning_mask, float num_train_timesteps)
{
	float tt = t / 1000.0f - 1e-6f;

	for (size_t j = 0; j < tokens; j++) {
		/* torch.where(t / 1000 - 1e-6 < 1 - mask, stepped, latents) */
		if (conditioning_mask != NULL &&
		    !(tt < 1.0f - conditioning_mask[j]))
			continue;
		float tj = timestep_tokens != NULL ? timestep_tokens[j] : t;
		float sigma = tj / num_train_timesteps;
		scheduler_step_euler(x + j * dim, v + j * dim, dim, sigma,
		    scheduler_sigma_below(s, sigma));
	}
}

void
scheduler_step_euler(float *x, const float *v, size_t n, float sigma,
    float sigma_next)
{
	float dt, dv;
	size_t i;

	dt = sigma_next - sigma;
	for (i = 0; i < n; i++) {
		dv = dt * v[i];
		x[i] = x[i] + dv;
	}
}

/* torch.std(unbiased) of one sample, float64 accumulation, float32 result. */
static float
sample_std(const float *x, size_t n)
{
	double sum = 0.0, mean, dx, ss = 0.0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += (double)x[i];
	mean = sum / (double)n;
	for (i = 0; i < n; i++) {
		dx = (double)x[i] - mean;
		ss += dx * dx;
	}
	return (float)sqrt(ss / (double)(n - 1));
}

/*
 * rescale_noise_cfg (pipelines/stable_diffusion/pipeline_stable_diffusion.py)
 * in place on cfg [B, n] against text [B, n]:
 *   cfg = r * cfg * (std(text) / std(cfg)) + (1 - r) * cfg
 * per sample, in torch's float32 order.
 */
static void
rescale_noise_cfg(float *cfg, const float *text, size_t batch,
    size_t per_sample, double guidance_rescale)
{
	float r = (float)guidance_rescale;
	float one_minus_r = (float)(1.0 - guidance_rescale);

	LQ_ASSERT(per_sample >= 2);
	for (size_t bi = 0; bi < batch; bi++) {
		float *o = cfg + bi * per_sample;
		float ratio = sample_std(text + bi * per_sample, per_sample) /
		    sample_std(o, per_sample);
		for (size_t i = 0; i < per_sample; i++) {
			float a = o[i] * ratio, c;
			a = r * a;
			c = one_minus_r * o[i];
			o[i] = a + c;
		}
	}
}

void
scheduler_apply_guidance(float *out, const float *v_batch, size_t batch,
    size_t per_sample, double guidance_scale, double guidance_rescale)
{
	const float *vu, *vt;
	float g, d;
	size_t bi, i;

	g = (float)guidance_scale;
	for (bi = 0; bi < batch; bi++) {
		vu = v_batch + bi * per_sample;
		vt = v_batch + (batch + bi) * per_sample;
		for (i = 0; i < per_sample; i++) {
			d = vt[i] - vu[i];
			d = g * d;
			out[bi * per_sample + i] = vu[i] + d;
		}
	}
	if (!(guidance_rescale > 0.0))
		return;

	rescale_noise_cfg(out, v_batch + batch * per_sample, batch, per_sample,
	    guidance_rescale);
}

void
scheduler_apply_guidance_x0(float *v_out, const float *x, size_t batch,
    size_t per_sample, float sigma, const float *v_main, int cfg,
    const float *v_stg, const float *v_iso,
    const struct scheduler_guidance_x0 *g)
{
	size_t n = batch * per_sample, i;
	float *x0 = xmalloc(n * sizeof(float));
	float *xg = xmalloc(n * sizeof(float));
	const float *vp = cfg ? v_main + n : v_main;
	/* (scale - 1) and the like are Python floats: float32 in torch */
	float gc = (float)(g->guidance_scale - 1.0);
	float gs = (float)g->stg_scale;
	float gm = (float)(g->modality_scale - 1.0);

	/* convert_velocity_to_x0: sample - denoised_output * sigma */
	for (i = 0; i < n; i++) {
		float t = vp[i] * sigma;
		x0[i] = x[i] - t;
	}
	/*
	 * noise_pred_g = x0_pos + cfg_delta + stg_delta + modality_delta,
	 * left to right; an absent term is upstream's integer 0.
	 */
	for (i = 0; i < n; i++) {
		float acc = x0[i], d, o;
		if (cfg) {
			d = v_main[i] * sigma;
			o = x[i] - d;			/* x0_uncond */
			d = x0[i] - o;
			acc = acc + gc * d;
		} else {
			acc = acc + 0.0f;
		}
		if (v_stg != NULL) {
			d = v_stg[i] * sigma;
			o = x[i] - d;			/* x0_uncond_stg */
			d = x0[i] - o;
			acc = acc + gs * d;
		} else {
			acc = acc + 0.0f;
		}
		if (v_iso != NULL) {
			d = v_iso[i] * sigma;
			o = x[i] - d;		/* x0_uncond_modality */
			d = x0[i] - o;
			acc = acc + gm * d;
		} else {
			acc = acc + 0.0f;
		}
		xg[i] = acc;
	}
	if (g->guidance_rescale > 0.0)
		rescale_noise_cfg(xg, x0, batch, per_sample,
		    g->guidance_rescale);
	/* convert_x0_to_velocity: (sample - denoised_output) / sigma */
	for (i = 0; i < n; i++) {
		float d = x[i] - xg[i];
		v_out[i] = d / sigma;
	}
	free(x0);
	free(xg);
}
