/*
 * test-scheduler.c — the flow-matching Euler scheduler against diffusers'
 * goldens: config parsing and refusals, np.linspace, every schedule in
 * scheduler/schedules.safetensors and the ltxv-demo index (bitwise), the
 * Euler step chain of euler_steps.safetensors (bitwise), and the pipelines'
 * guidance + step relation transformer_output -> latents_after_step.
 */
#include "../test.h"
#include "golden.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "core/util.h"
#include "sampler/scheduler.h"

static struct scheduler_config
load_config(const char *rel)
{
	struct scheduler_config cfg;
	struct lq_error err;
	char *path = golden_path(rel);

	error_clear(&err);
	if (scheduler_config_load(path, &cfg, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(path);
	return cfg;
}

/* Parses `text`; returns the status and leaves the error in *err. */
static enum lq_status
parse_text(const char *text, struct scheduler_config *cfg,
    struct lq_error *err)
{
	cJSON *json = cJSON_Parse(text);
	enum lq_status st;

	LQ_ASSERT(json != NULL);
	error_clear(err);
	st = scheduler_config_from_json(json, "test.json", cfg, err);
	cJSON_Delete(json);
	return st;
}

static void
test_config(void)
{
	static const struct {
		const char *json, *code, *field;
	} bad[] = {
		{ "{\"use_karras_sigmas\": true}", "LQ-SCHED-004",
		  "use_karras_sigmas" },
		{ "{\"use_exponential_sigmas\": true}", "LQ-SCHED-004",
		  "use_exponential_sigmas" },
		{ "{\"use_beta_sigmas\": true}", "LQ-SCHED-004",
		  "use_beta_sigmas" },
		{ "{\"stochastic_sampling\": true}", "LQ-SCHED-004",
		  "stochastic_sampling" },
		{ "{\"invert_sigmas\": true}", "LQ-SCHED-004",
		  "invert_sigmas" },
		{ "{\"invert_sigmas\": 1}", "LQ-SCHED-001", "invert_sigmas" },
		{ "{\"shift\": \"2\"}", "LQ-SCHED-001", "shift" },
		{ "{\"shift\": 0}", "LQ-SCHED-002", "shift" },
		{ "{\"base_shift\": null}", "LQ-SCHED-001", "base_shift" },
		{ "{\"num_train_timesteps\": 10.5}", "LQ-SCHED-001",
		  "num_train_timesteps" },
		{ "{\"num_train_timesteps\": 0}", "LQ-SCHED-002",
		  "num_train_timesteps" },
		{ "{\"shift_terminal\": 1.0}", "LQ-SCHED-002",
		  "shift_terminal" },
		{ "{\"time_shift_type\": \"cubic\"}", "LQ-SCHED-002",
		  "time_shift_type" },
		{ "{\"base_image_seq_len\": 4096}", "LQ-SCHED-002",
		  "max_image_seq_len" },
		{ "{\"_class_name\": \"EulerDiscreteScheduler\"}",
		  "LQ-SCHED-003", "_class_name" },
	};
	struct scheduler_config cfg;
	struct lq_error err;
	size_t i;

	/* Absent keys take diffusers' defaults; unknown keys are ignored. */
	CHECK_INT(parse_text("{\"future_option\": 3}", &cfg, &err), LQ_OK);
	CHECK_INT(cfg.num_train_timesteps, 1000);
	CHECK(cfg.shift == 1.0);
	CHECK(!cfg.use_dynamic_shifting);
	CHECK(cfg.base_shift == 0.5);
	CHECK(cfg.max_shift == 1.15);
	CHECK_INT(cfg.base_image_seq_len, 256);
	CHECK_INT(cfg.max_image_seq_len, 4096);
	CHECK(cfg.shift_terminal == 0.0);
	CHECK_INT(cfg.time_shift_type, SCHEDULER_TIME_SHIFT_EXPONENTIAL);

	/* Options set to their defaults are accepted. */
	CHECK_INT(parse_text("{\"use_karras_sigmas\": false, "
	    "\"invert_sigmas\": false, \"shift_terminal\": null, "
	    "\"time_shift_type\": \"linear\"}", &cfg, &err), LQ_OK);
	CHECK_INT(cfg.time_shift_type, SCHEDULER_TIME_SHIFT_LINEAR);

	for (i = 0; i < LQ_ARRAY_LEN(bad); i++) {
		CHECK_INT(parse_text(bad[i].json, &cfg, &err), LQ_FAILED);
		CHECK_STR(err.code, bad[i].code);
		CHECK_STR(err.field, bad[i].field);
		CHECK_STR(err.file, "test.json");
		CHECK_CONTAINS(err.message, bad[i].field);
	}

	cfg = load_config("scheduler_config_ltx090.json");
	CHECK(cfg.use_dynamic_shifting);
	CHECK(cfg.base_shift == 0.95);
	CHECK(cfg.max_shift == 2.05);
	CHECK_INT(cfg.base_image_seq_len, 1024);
	CHECK_INT(cfg.max_image_seq_len, 4096);
	CHECK(cfg.shift_terminal == 0.1);
	cfg = load_config("scheduler_config_ltx095.json");
	CHECK(!cfg.use_dynamic_shifting);
	CHECK(cfg.shift == 1.0);
	CHECK(cfg.shift_terminal == 0.0);

	{
		struct lq_error e2;
		char *missing = golden_path("no-such-config.json");

		error_clear(&e2);
		CHECK_INT(scheduler_config_load(missing, &cfg, &e2),
		    LQ_FAILED);
		CHECK_STR(e2.code, "LQ-SCHED-005");
		free(missing);
	}
}

/* "<key>.<what>" in buf (160 bytes). */
static const char *
kname(char *buf, const char *key, const char *what)
{
	snprintf(buf, 160, "%s.%s", key, what);
	return buf;
}

/* Every <cfg>_N<n>_L<l> case of schedules.safetensors, bitwise. */
static void
test_schedule_goldens(void)
{
	struct st_file *f = golden_open("schedules.safetensors");
	struct scheduler_config c090 = load_config("scheduler_config_ltx090.json");
	struct scheduler_config c095 = load_config("scheduler_config_ltx095.json");
	int cases = 0;
	size_t t;

	for (t = 0; t < st_file_count(f); t++) {
		const struct st_tensor *ts = st_file_tensor(f, t);
		char cfgname[16], key[128], name[160];
		int n, k, same;
		long long l;
		size_t cnt;
		struct scheduler_schedule s;
		struct lq_error err;
		double *lin, *in, *mu;
		float *sig, *tim;

		if (sscanf(ts->name, "%15[^_]_N%d_L%lld.mu", cfgname, &n,
		    &l) != 3 || strstr(ts->name, ".mu") == NULL)
			continue;
		cases++;
		snprintf(key, sizeof(key), "%s_N%d_L%lld", cfgname, n, l);

		error_clear(&err);
		CHECK_INT(scheduler_set_timesteps(strcmp(cfgname, "ltx090") ==
		    0 ? &c090 : &c095, n, l, &s, &err), LQ_OK);

		mu = golden_f64(f, kname(name, key, "mu"), NULL);
		CHECK(s.mu == mu[0]);
		if (s.mu != mu[0])
			fprintf(stderr, "%s mu %.17g != %.17g\n", key, s.mu,
			    mu[0]);

		in = golden_f64(f, kname(name, key, "sigmas_in"), &cnt);
		CHECK_INT(cnt, n);
		lin = xmalloc((size_t)n * sizeof(double));
		scheduler_linspace(1.0, 1.0 / n, n, lin);
		same = memcmp(lin, in, (size_t)n * sizeof(double)) == 0;
		CHECK(same);

		sig = golden_f32(f, kname(name, key, "sigmas"), &cnt);
		CHECK_INT(cnt, n + 1);
		same = 0;
		for (k = 0; k <= n; k++)
			same += golden_same_f32(s.sigmas[k], sig[k]);
		CHECK_INT(same, n + 1);
		tim = golden_f32(f, kname(name, key, "timesteps"), &cnt);
		CHECK_INT(cnt, n);
		for (k = 0; k < n; k++)
			same += golden_same_f32(s.timesteps[k], tim[k]);
		CHECK_INT(same, 2 * n + 1);
		printf("schedule %s: mu %.9f, %d/%d values bitwise equal, "
		    "max abs sigma err %.3g\n", key, s.mu, same, 2 * n + 1,
		    golden_max_abs(s.sigmas, sig, (size_t)n + 1));
		free(lin);
		free(in);
		free(mu);
		free(sig);
		free(tim);
		scheduler_schedule_free(&s);
	}
	CHECK_INT(cases, 7);
	st_file_close(f);
}

/* The trained demo model's index.json: sigmas, timesteps, mu as recorded. */
static void
test_demo_index(void)
{
	char *path = golden_path("ltxv-demo/index.json");
	char *text = util_read_file(path, NULL);
	cJSON *root, *pipes, *run, *arr, *it;
	int runs = 0;

	LQ_ASSERT(text != NULL);
	root = cJSON_Parse(text);
	LQ_ASSERT(root != NULL);
	pipes = cJSON_GetObjectItemCaseSensitive(root, "pipeline");
	cJSON_ArrayForEach(run, pipes) {
		struct scheduler_config cfg;
		struct scheduler_schedule s;
		struct lq_error err;
		cJSON *args = cJSON_GetObjectItemCaseSensitive(run,
		    "pipeline_args");
		int n = (int)json_get_int(args, "num_inference_steps", 0);
		int64_t l = json_get_int(run, "video_sequence_length", 0);
		int k, same = 0;

		error_clear(&err);
		CHECK_INT(scheduler_config_from_json(
		    cJSON_GetObjectItemCaseSensitive(run, "scheduler_config"),
		    "index.json", &cfg, &err), LQ_OK);
		CHECK_INT(scheduler_set_timesteps(&cfg, n, l, &s, &err),
		    LQ_OK);
		CHECK(s.mu == json_get_number(run, "mu", -1));
		arr = cJSON_GetObjectItemCaseSensitive(run, "sigmas");
		CHECK_INT(cJSON_GetArraySize(arr), n + 1);
		k = 0;
		cJSON_ArrayForEach(it, arr) {
			if (k <= n && (double)s.sigmas[k] == it->valuedouble)
				same++;
			k++;
		}
		arr = cJSON_GetObjectItemCaseSensitive(run, "timesteps");
		CHECK_INT(cJSON_GetArraySize(arr), n);
		k = 0;
		cJSON_ArrayForEach(it, arr) {
			if (k < n && (double)s.timesteps[k] == it->valuedouble)
				same++;
			k++;
		}
		CHECK_INT(same, 2 * n + 1);
		printf("demo %s: N %d L %lld mu %.17g, %d/%d values equal\n",
		    run->string, n, (long long)l, s.mu, same, 2 * n + 1);
		scheduler_schedule_free(&s);
		runs++;
	}
	CHECK_INT(runs, 2);
	cJSON_Delete(root);
	free(text);
	free(path);
}

static void
test_edges(void)
{
	struct scheduler_config c090 = load_config("scheduler_config_ltx090.json");
	struct scheduler_config c095 = load_config("scheduler_config_ltx095.json");
	struct scheduler_config cfg;
	struct scheduler_schedule s;
	struct lq_error err;
	int i;

	/* N = 1: one step from pure noise to 0, with and without terminal. */
	error_clear(&err);
	CHECK_INT(scheduler_set_timesteps(&c090, 1, 72, &s, &err), LQ_OK);
	CHECK(s.sigmas[0] == 1.0f && s.sigmas[1] == 0.0f);
	CHECK(s.timesteps[0] == 1000.0f);
	scheduler_schedule_free(&s);
	CHECK_INT(scheduler_set_timesteps(&c095, 1, 72, &s, &err), LQ_OK);
	CHECK(s.sigmas[0] == 1.0f && s.sigmas[1] == 0.0f);
	scheduler_schedule_free(&s);

	/* N = 0 and an empty video are refused; nothing to free. */
	CHECK_INT(scheduler_set_timesteps(&c090, 0, 72, &s, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-SCHED-010");
	CHECK(s.sigmas == NULL && s.timesteps == NULL);
	CHECK_INT(scheduler_set_timesteps(&c090, 4, 0, &s, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-SCHED-011");

	/* A token count so large that the first two sigmas round to 1. */
	error_clear(&err);
	CHECK_INT(scheduler_set_timesteps(&c090, 4, 2000000, &s, &err),
	    LQ_FAILED);
	CHECK_STR(err.code, "LQ-SCHED-012");

	/* Linear time shift and static shift against their float64 formulas
	 * (float32 evaluation differs by rounding only). */
	CHECK_INT(parse_text("{\"use_dynamic_shifting\": true, "
	    "\"time_shift_type\": \"linear\", \"base_image_seq_len\": 1024, "
	    "\"base_shift\": 0.95, \"max_shift\": 2.05}", &cfg, &err), LQ_OK);
	CHECK_INT(scheduler_set_timesteps(&cfg, 10, 2000, &s, &err), LQ_OK);
	for (i = 0; i < 10; i++) {
		double u = 1.0 - (1.0 - 0.1) * i / 9.0;
		CHECK_NEAR(s.sigmas[i], s.mu / (s.mu + (1.0 / u - 1.0)), 1e-6);
	}
	CHECK(s.sigmas[10] == 0.0f);
	scheduler_schedule_free(&s);
	CHECK_INT(parse_text("{\"shift\": 3.0, \"shift_terminal\": 0.2, "
	    "\"num_train_timesteps\": 500}", &cfg, &err), LQ_OK);
	CHECK_INT(scheduler_set_timesteps(&cfg, 5, 100, &s, &err), LQ_OK);
	CHECK_NEAR(s.sigmas[4], 0.2, 1e-6);
	CHECK(s.sigmas[0] == 1.0f);
	for (i = 0; i < 5; i++) {
		CHECK(s.sigmas[i + 1] < s.sigmas[i]);
		CHECK(s.timesteps[i] == s.sigmas[i] * 500.0f);
	}
	scheduler_schedule_free(&s);
}

/* euler_steps.safetensors: ltx090, N 4, L 72, random velocities. */
static void
test_euler_golden(void)
{
	struct st_file *f = golden_open("euler_steps.safetensors");
	struct scheduler_config cfg = load_config("scheduler_config_ltx090.json");
	struct scheduler_schedule s;
	struct lq_error err;
	size_t n, per, i;
	float *sample = golden_f32(f, "sample", &n);
	float *v = golden_f32(f, "model_output", NULL);
	float *prev = golden_f32(f, "prev_sample", NULL);
	float *sig = golden_f32(f, "sigma", NULL);
	float *sig_next = golden_f32(f, "sigma_next", NULL);
	float *ts = golden_f32(f, "timestep", NULL);
	float *x, *chain;
	double err_step = 0, d;
	int k;

	error_clear(&err);
	CHECK_INT(scheduler_set_timesteps(&cfg, 4, 72, &s, &err), LQ_OK);
	per = n / 4;
	x = xmalloc(per * sizeof(float));
	chain = xmalloc(per * sizeof(float));
	memcpy(chain, sample, per * sizeof(float));
	for (k = 0; k < 4; k++) {
		CHECK(golden_same_f32(s.sigmas[k], sig[k]));
		CHECK(golden_same_f32(s.sigmas[k + 1], sig_next[k]));
		CHECK(golden_same_f32(s.timesteps[k], ts[k]));
		memcpy(x, sample + k * per, per * sizeof(float));
		scheduler_step_euler(x, v + k * per, per, s.sigmas[k],
		    s.sigmas[k + 1]);
		d = golden_max_abs(x, prev + k * per, per);
		if (d > err_step)
			err_step = d;
		for (i = 0; i < per; i++)
			CHECK(golden_same_f32(x[i], prev[k * per + i]));
		scheduler_step_euler(chain, v + k * per, per, s.sigmas[k],
		    s.sigmas[k + 1]);
	}
	d = golden_max_abs(chain, prev + 3 * per, per);
	printf("euler: per-step max abs err %.3g, chained final %.3g "
	    "(index atol 5e-06)\n", err_step, d);
	CHECK(d <= 5e-06);
	free(x);
	free(chain);
	free(sample);
	free(v);
	free(prev);
	free(sig);
	free(sig_next);
	free(ts);
	scheduler_schedule_free(&s);
	st_file_close(f);
}

/*
 * A whole pipeline's denoising loop, from the recorded transformer outputs:
 * guidance + Euler step must give latents_after_step.  Arguments from the
 * goldens' pipeline_args; atol per step from the goldens' index.json.
 */
static void
test_pipeline_steps(const char *rel, int64_t video_seq_len, size_t batch,
    double guidance_scale, double guidance_rescale, const double *atol)
{
	struct st_file *f = golden_open(rel);
	struct scheduler_config cfg = load_config("scheduler_config_ltx090.json");
	struct scheduler_schedule s;
	struct lq_error err;
	const struct st_tensor *tl = golden_tensor(f, "latents_after_step",
	    ST_F32);
	size_t steps = (size_t)tl->shape[0];
	size_t per = (size_t)(tl->shape[2] * tl->shape[3]);
	size_t lat = batch * per, k, i, same = 0;
	float *after = golden_f32(f, "latents_after_step", NULL);
	float *tin = golden_f32(f, "transformer_input_hidden_states", NULL);
	float *tout = golden_f32(f, "transformer_output", NULL);
	float *gsig = golden_f32(f, "sigmas", NULL);
	float *gts = golden_f32(f, "timesteps", NULL);
	float *x = xmalloc(lat * sizeof(float));
	float *v = xmalloc(lat * sizeof(float));
	float *chain = xmalloc(lat * sizeof(float));
	double d, worst = 0.0;

	CHECK_INT(tl->shape[1], batch);
	error_clear(&err);
	CHECK_INT(scheduler_set_timesteps(&cfg, (int)steps, video_seq_len, &s,
	    &err), LQ_OK);
	for (k = 0; k <= steps; k++)
		CHECK(golden_same_f32(s.sigmas[k], gsig[k]));
	for (k = 0; k < steps; k++)
		CHECK(golden_same_f32(s.timesteps[k], gts[k]));

	memcpy(chain, tin, lat * sizeof(float));
	for (k = 0; k < steps; k++) {
		const float *in_k = tin + k * 2 * lat;
		const float *out_k = tout + k * 2 * lat;

		/* The CFG batch is cat([latents, latents]). */
		CHECK(memcmp(in_k, in_k + lat, lat * sizeof(float)) == 0);
		memcpy(x, in_k, lat * sizeof(float));
		scheduler_apply_guidance(v, out_k, batch, per, guidance_scale,
		    guidance_rescale);
		scheduler_step_euler(x, v, lat, s.sigmas[k], s.sigmas[k + 1]);
		d = golden_max_abs(x, after + k * lat, lat);
		for (i = 0; i < lat; i++)
			same += golden_same_f32(x[i], after[k * lat + i]);
		printf("%s step %zu: max abs err %.3g (atol %g)\n", rel, k, d,
		    atol[k]);
		CHECK(d <= atol[k]);

		scheduler_apply_guidance(v, out_k, batch, per, guidance_scale,
		    guidance_rescale);
		scheduler_step_euler(chain, v, lat, s.sigmas[k],
		    s.sigmas[k + 1]);
		d = golden_max_abs(chain, after + k * lat, lat);
		if (d > worst)
			worst = d;
		CHECK(d <= atol[k]);
	}
	printf("%s: %zu/%zu values bitwise equal; chained max abs err %.3g\n",
	    rel, same, steps * lat, worst);
	free(after);
	free(tin);
	free(tout);
	free(gsig);
	free(gts);
	free(x);
	free(v);
	free(chain);
	scheduler_schedule_free(&s);
	st_file_close(f);
}

/*
 * LTXConditionPipeline's schedule (linear_quadratic_schedule through
 * set_timesteps(timesteps=...)) bit for bit against the two-stage goldens
 * (tests/data/ltxv-twostage/{refine,image_cond}/schedule.safetensors: 10
 * and 4 steps), the denoise_strength truncation (10 x 0.4: start 6,
 * latent_sigma = sigmas[6]) and the per-token next-sigma lookup.
 */
static void
test_condition_schedule(void)
{
	static const char *const cases[2] = { "refine", "image_cond" };
	static const int steps[2] = { 10, 4 };
	struct scheduler_config cfg;
	struct lq_error err;

	scheduler_config_init(&cfg);
	for (int c = 0; c < 2; c++) {
		char *rel = xasprintf("../ltxv-twostage/%s/schedule.safetensors",
		    cases[c]);
		struct st_file *f = golden_open(rel);
		struct scheduler_schedule s;
		size_t cnt;
		int same = 0;

		error_clear(&err);
		CHECK_INT(scheduler_set_timesteps_condition(&cfg, steps[c], &s,
		    &err), LQ_OK);
		float *sig = golden_f32(f, "scheduler_sigmas_full", &cnt);
		CHECK_INT((int)cnt, steps[c] + 1);
		for (int k = 0; k <= steps[c]; k++)
			same += golden_same_f32(s.sigmas[k], sig[k]);
		CHECK_INT(same, steps[c] + 1);
		float *tim = golden_f32(f, "scheduler_timesteps_full", &cnt);
		same = 0;
		for (int k = 0; k < steps[c]; k++)
			same += golden_same_f32(s.timesteps[k], tim[k]);
		CHECK_INT(same, steps[c]);
		if (c == 0) {
			float *ls = golden_f32(f, "latent_sigma", &cnt);
			int start = scheduler_denoise_start(10, 0.4);
			CHECK_INT(start, 6);
			CHECK(golden_same_f32(s.sigmas[start], ls[0]));
			free(ls);
			/* the next sigma of each step run is the schedule's
			 * next one; a frozen token (sigma 0) has none */
			for (int k = start; k < 10; k++) {
				float sg = s.timesteps[k] / 1000.0f;
				CHECK(golden_same_f32(scheduler_sigma_below(&s, sg),
				    s.sigmas[k + 1]));
			}
			CHECK(scheduler_sigma_below(&s, 0.0f) == 0.0f);
		}
		free(sig);
		free(tim);
		scheduler_schedule_free(&s);
		st_file_close(f);
		free(rel);
	}
	CHECK_INT(scheduler_denoise_start(10, 1.0), 0);
	CHECK_INT(scheduler_denoise_start(4, 0.2), 4);	/* no step */
	CHECK_INT(scheduler_denoise_start(3, 0.999), 1);	/* int(2.997) */
	/* upstream raises without mu */
	cfg.use_dynamic_shifting = true;
	struct scheduler_schedule s;
	error_clear(&err);
	CHECK_INT(scheduler_set_timesteps_condition(&cfg, 4, &s, &err),
	    LQ_FAILED);
	CHECK_STR(err.code, "LQ-SCHED-013");
}

int
main(void)
{
	static const double atol_a[] = { 6e-05, 0.0002, 0.0002, 0.0002 };
	static const double atol_b[] = { 7e-05, 0.0002, 0.0003, 0.0003 };

	test_config();
	test_schedule_goldens();
	test_demo_index();
	test_edges();
	test_euler_golden();
	test_condition_schedule();
	/* pipeA: B 2, grid 3x4x6, guidance 3.0, rescale 0 */
	test_pipeline_steps("pipeA/steps.safetensors", 72, 2, 3.0, 0.0,
	    atol_a);
	/* pipeB: B 1, grid 3x4x4, guidance 3.0, rescale 0.7 */
	test_pipeline_steps("pipeB/steps.safetensors", 48, 1, 3.0, 0.7,
	    atol_b);
	return test_summary();
}
