/*
 * scheduler.h — flow-matching Euler sampler as diffusers' LTXPipeline drives
 * FlowMatchEulerDiscreteScheduler (diffusers 58eb52c0,
 * schedulers/scheduling_flow_match_euler_discrete.py and
 * pipelines/ltx/pipeline_ltx.py).
 *
 * Everything here runs on the CPU and reproduces upstream's arithmetic
 * operation by operation: the schedule is computed in float32 where upstream
 * uses float32 NumPy / torch, in float64 where upstream uses Python floats or
 * float64 NumPy (np.linspace, calculate_shift), so the sigmas and timesteps
 * are bit-identical to diffusers' (tests/sampler/test-scheduler checks the
 * goldens bitwise).  The per-element math (Euler step, guidance) is float32
 * with one rounding per upstream tensor operation; the .c file forbids FMA
 * contraction so that holds on every target.
 *
 * Ownership: a struct scheduler_config is plain data.  A struct
 * scheduler_schedule owns its two arrays; release them with
 * scheduler_schedule_free().  Buffers passed to the step functions are
 * borrowed.
 */
#ifndef LQ_SAMPLER_SCHEDULER_H
#define LQ_SAMPLER_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/error.h"

enum scheduler_time_shift {
	SCHEDULER_TIME_SHIFT_EXPONENTIAL,	/* e^mu / (e^mu + (1/s - 1)) */
	SCHEDULER_TIME_SHIFT_LINEAR,		/* mu / (mu + (1/s - 1)) */
};

/*
 * The keys of scheduler_config.json that latentq implements, with diffusers'
 * defaults for absent keys (scheduler_config_init).  Options latentq does not
 * implement (karras / exponential / beta sigmas, stochastic_sampling,
 * invert_sigmas) are refused when set, never ignored.
 */
struct scheduler_config {
	int64_t num_train_timesteps;	/* 1000 */
	double shift;			/* 1.0; static shift when not dynamic */
	bool use_dynamic_shifting;	/* false */
	double base_shift;		/* 0.5 */
	double max_shift;		/* 1.15 */
	int64_t base_image_seq_len;	/* 256 */
	int64_t max_image_seq_len;	/* 4096 */
	/* null -> 0.  As upstream (`if self.config.shift_terminal:`), 0 means
	 * no stretching. */
	double shift_terminal;
	enum scheduler_time_shift time_shift_type;	/* exponential */
};

/* Sets every field to diffusers' default. */
void scheduler_config_init(struct scheduler_config *cfg);

/*
 * Parses a scheduler_config.json object into *cfg (absent keys get
 * diffusers' defaults).  `path` (may be NULL) names the file in errors.
 * Fails (LQ_FAILED, code LQ-SCHED-001..004, err's field = the key) on a key
 * of the wrong type, a value out of range, a `_class_name` other than
 * FlowMatchEulerDiscreteScheduler, or an option latentq does not implement
 * set to a non-default value.  Unknown keys are ignored with a warning, as
 * diffusers does.  On failure *cfg is unspecified.
 */
enum lq_status scheduler_config_from_json(const cJSON *json, const char *path,
    struct scheduler_config *cfg, struct lq_error *err);

/* Reads and parses a scheduler_config.json file (LQ-SCHED-005 if it cannot
 * be read or is not JSON). */
enum lq_status scheduler_config_load(const char *path,
    struct scheduler_config *cfg, struct lq_error *err);

/*
 * mu for dynamic shifting, in float64 exactly as pipeline_ltx.calculate_shift
 * evaluates it:  m = (max_shift - base_shift) / (max_seq_len - base_seq_len),
 * b = base_shift - m * base_seq_len, mu = seq_len * m + b  (no clamping).
 * seq_len is the video token count F*H*W after VAE compression and
 * patching.  base_seq_len != max_seq_len (the config parser ensures it).
 */
double scheduler_calculate_shift(int64_t seq_len, int64_t base_seq_len,
    int64_t max_seq_len, double base_shift, double max_shift);

/*
 * np.linspace(start, stop, num) (endpoint=True) in float64, bit for bit as
 * NumPy 2.x computes it: step = (stop - start) / (num - 1),
 * y[i] = i * step + start (two roundings), y[num-1] = stop.  out has num
 * values; num >= 1.
 */
void scheduler_linspace(double start, double stop, int num, double *out);

/* A whole schedule: sigmas[num_steps + 1] (last = 0), timesteps[num_steps]. */
struct scheduler_schedule {
	int num_steps;
	double mu;		/* calculate_shift(seq_len, ...) (computed always) */
	float *sigmas;		/* float32, num_steps + 1 values, sigmas[N] = 0 */
	float *timesteps;	/* float32, sigmas[i] * num_train_timesteps */
};

/*
 * Computes the schedule LTXPipeline gets from
 *   retrieve_timesteps(scheduler, N, sigmas=np.linspace(1, 1/N, N), mu=mu)
 * with mu = calculate_shift(video_seq_len, ...): linspace in float64, cast to
 * float32, exponential / linear time shift with mu (dynamic) or
 * shift*s / (1 + (shift-1)*s) (static), shift_terminal stretching, all in
 * float32; timesteps = sigma * num_train_timesteps (float32); 0 appended.
 *
 * Differences from upstream, both where upstream fails: with N = 1 and
 * shift_terminal set, upstream's stretch is 0/0 (NaN); latentq leaves the
 * single sigma unstretched, giving sigmas [1, 0].  A schedule whose first
 * two timesteps are equal (upstream's step-index lookup would then skip a
 * step and run off the end) or that is not finite is refused.
 *
 * Errors: num_steps < 1 (LQ-SCHED-010), video_seq_len < 1 (LQ-SCHED-011),
 * degenerate schedule (LQ-SCHED-012); *out is then zeroed (nothing to free).
 * On success the caller owns *out's arrays.
 */
enum lq_status scheduler_set_timesteps(const struct scheduler_config *cfg,
    int num_steps, int64_t video_seq_len, struct scheduler_schedule *out,
    struct lq_error *err);

/*
 * LTXConditionPipeline's default schedule (pipelines/ltx/
 * pipeline_ltx_condition.py, linear_quadratic_schedule, from LTX-Video's
 * rf.py): threshold 0.025, N // 2 linear steps then quadratic ones, in
 * Python floats, 1 - x, the final 1.0 dropped, rounded to float32.
 * Writes num_steps sigmas (num_steps >= 1; N = 1 gives [1.0]).
 */
void scheduler_linear_quadratic(int num_steps, float *sigmas);

/*
 * The schedule LTXConditionPipeline gets: timesteps =
 * linear_quadratic_schedule(N) * 1000 (float32), then
 * set_timesteps(timesteps=...): sigmas = float32(timesteps) /
 * num_train_timesteps, the static shift and shift_terminal as above,
 * timesteps = sigmas * num_train_timesteps, trailing 0.  The pipeline
 * never passes mu, so a config with use_dynamic_shifting fails as
 * diffusers does (LQ-SCHED-013, field use_dynamic_shifting, with the
 * converted 0.9.5 / 0.9.7 config as the hint); num_steps < 1 is
 * LQ-SCHED-010.  *out is zeroed on error; the caller owns it on success.
 * This is the FULL schedule: denoise_strength truncation is
 * scheduler_denoise_start's.
 */
enum lq_status scheduler_set_timesteps_condition(
    const struct scheduler_config *cfg, int num_steps,
    struct scheduler_schedule *out, struct lq_error *err);

/*
 * LTXConditionPipeline.get_timesteps: the index of the first step run with
 * denoise_strength s of N steps, N - min(int(N * s), N) (Python's int
 * truncates: 10 x 0.4 -> 4 steps, start 6).  The loop then runs steps
 * start .. N-1 and latent_sigma = sigmas[start].  s = 1 gives 0.
 */
int scheduler_denoise_start(int num_steps, double denoise_strength);

/*
 * The per-token "next sigma" of FlowMatchEulerDiscreteScheduler.step with
 * per_token_timesteps: the largest of the FULL schedule's sigmas
 * (trailing 0 included) below sigma - 1e-6 (float32), 0 when none is.
 */
float scheduler_sigma_below(const struct scheduler_schedule *s, float sigma);

/*
 * LTXConditionPipeline's Euler step on one sample's packed latents x
 * [tokens, dim] with velocity v (the guided noise_pred; upstream steps
 * with -noise_pred and x + (sigma - next) * -v, which is the same float32
 * value): per token sigma = timestep_tokens[j] / num_train_timesteps
 * (timestep_tokens NULL: t for every token, the [2B, 1] timestep of a
 * job without conditions), next = scheduler_sigma_below(s, sigma), then
 * scheduler_step_euler.  With conditioning_mask [tokens] (NULL without
 * conditions), a token is updated only where t / 1000 - 1e-6 < 1 - mask
 * (upstream's torch.where): strength-1 condition tokens stay frozen.
 */
void scheduler_step_tokens(const struct scheduler_schedule *s, float *x,
    const float *v, size_t tokens, size_t dim, const float *timestep_tokens,
    float t, const float *conditioning_mask, float num_train_timesteps);

/* Frees a schedule's arrays and zeroes it; NULL or zeroed is fine. */
void scheduler_schedule_free(struct scheduler_schedule *s);

/*
 * One Euler step in place, as FlowMatchEulerDiscreteScheduler.step:
 * x[i] = x[i] + (sigma_next - sigma) * v[i], float32 (sigma_next - sigma is
 * rounded to float32 first, as upstream's 0-d float32 tensors do).
 * For step k of a schedule: sigma = sigmas[k], sigma_next = sigmas[k + 1].
 */
void scheduler_step_euler(float *x, const float *v, size_t n, float sigma,
    float sigma_next);

/*
 * Classifier-free guidance as LTXPipeline.__call__: the transformer ran on
 * the batch cat([negative, positive]), so `v_batch` is [2B, per_sample]
 * (rows 0..B-1 unconditional, B..2B-1 text).  Writes
 * out[b] = v_uncond[b] + g * (v_text[b] - v_uncond[b])  (float32), then,
 * when guidance_rescale > 0, upstream's rescale_noise_cfg:
 *   out = r * out * (std(v_text) / std(out)) + (1 - r) * out
 * with std per sample over all its per_sample elements, unbiased (N - 1),
 * accumulated in float64 and rounded to float32 as torch.std does on the
 * CPU.  `out` is [B, per_sample] and must not alias v_batch.
 * g and r are taken as Python floats are by torch: rounded to float32
 * (1 - r is computed in float64 first).
 * Call it only when guidance_scale > 1 (upstream's
 * do_classifier_free_guidance): otherwise the transformer runs on the B
 * latents alone, its output is the velocity, and no rescale applies.
 */
void scheduler_apply_guidance(float *out, const float *v_batch, size_t batch,
    size_t per_sample, double guidance_scale, double guidance_rescale);

/* The scales of LTX2Pipeline's guidance for one stream (video or audio). */
struct scheduler_guidance_x0 {
	double guidance_scale;	/* CFG: (g - 1)(x0_pos - x0_neg) */
	double stg_scale;	/* spatio-temporal: s (x0_pos - x0_stg) */
	double modality_scale;	/* modality isolation: (m - 1)(x0_pos - x0_iso) */
	double guidance_rescale;	/* rescale_noise_cfg on x0, 0 = off */
};

/*
 * LTX2Pipeline.__call__'s guidance (pipelines/ltx2/pipeline_ltx2.py), done
 * on x0 rather than on the velocity, for one stream of B samples of
 * per_sample packed values ([B, N, C] video or [B, L, C*M] audio):
 *   x0_k = x - v_k * sigma                 (convert_velocity_to_x0)
 *   x0_g = x0_pos + (g - 1)(x0_pos - x0_neg) + s (x0_pos - x0_stg)
 *          + (m - 1)(x0_pos - x0_iso)      (absent terms are 0)
 *   x0_g = rescale_noise_cfg(x0_g, x0_pos, r)   when r > 0
 *   v_out = (x - x0_g) / sigma             (convert_x0_to_velocity)
 * all in float32 in upstream's order; the Python-float scales are
 * rounded to float32 after the "- 1".  `x` is the stream's latents
 * [B, per_sample]; `sigma` the schedule's sigmas[i] (0..1).  `v_main` is
 * the transformer's output of the main pass: [2B, per_sample] as
 * cat([negative, positive]) when `cfg` (upstream's
 * do_classifier_free_guidance: the video or the audio guidance_scale
 * > 1; both streams then run the batch of 2B), else [B, per_sample].
 * `v_stg` and `v_iso` are the positive-only [B, per_sample] outputs of the
 * STG and modality-isolation passes, NULL when that pass did not run.
 * Writes the guided velocity `v_out` [B, per_sample] (not aliasing the
 * inputs) for scheduler_step_euler.  sigma must be > 0 (the schedule's
 * last sigma, 0, is never a step's).  Allocates two scratch arrays of
 * B x per_sample floats for the call (aborts on OOM, as xmalloc).
 */
void scheduler_apply_guidance_x0(float *v_out, const float *x, size_t batch,
    size_t per_sample, float sigma, const float *v_main, int cfg,
    const float *v_stg, const float *v_iso,
    const struct scheduler_guidance_x0 *g);

#endif
