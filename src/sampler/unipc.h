/*
 * unipc.h — UniPCMultistepScheduler as WanPipeline drives it (diffusers
 * 58eb52c0, schedulers/scheduling_unipc_multistep.py and
 * pipelines/wan/pipeline_wan.py): flow sigmas shifted by flow_shift,
 * integer timesteps, the UniP predictor (multistep_uni_p_bh_update) and
 * the UniC corrector (multistep_uni_c_bh_update) in step()'s order.
 *
 * Like scheduler.h, everything runs on the CPU in upstream's precision:
 * the schedule in float64 (NumPy), sigmas stored as float32, the
 * coefficients as upstream's 0-d float32 tensors and the per-element
 * update in float32, one rounding per upstream tensor operation (the .c
 * file forbids FMA contraction).  Where upstream calls LAPACK
 * (torch.linalg.solve for the corrector's rhos_c, order >= 2) latentq
 * solves the same small system by Gaussian elimination with partial
 * pivoting in float32; the result may differ from LAPACK's in the last
 * bit, well inside the goldens' tolerance.
 *
 * What is implemented (everything else is refused when set, never
 * ignored): use_flow_sigmas true, prediction_type flow_prediction
 * (predict_x0 true, as upstream requires for it), solver_type bh1 / bh2,
 * solver_order 1..UNIPC_MAX_ORDER, lower_order_final, disable_corrector,
 * final_sigmas_type zero / sigma_min, flow_shift, shift_terminal.
 * Refused: thresholding, solver_p, Karras / exponential / beta sigmas,
 * use_dynamic_shifting (WanPipeline never passes mu: upstream raises).
 * The DDPM keys (beta_*, trained_betas, timestep_spacing, steps_offset,
 * rescale_betas_zero_snr) do not reach the flow-sigma schedule; they are
 * type-checked and otherwise without effect, as upstream.
 *
 * Ownership: struct unipc_config is plain data; struct unipc_schedule and
 * struct unipc_state own their arrays (unipc_schedule_free,
 * unipc_state_free).  Buffers passed to unipc_step are borrowed.
 */
#ifndef LQ_SAMPLER_UNIPC_H
#define LQ_SAMPLER_UNIPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/error.h"

#define UNIPC_CLASS_NAME "UniPCMultistepScheduler"
#define UNIPC_MAX_ORDER 3
#define UNIPC_MAX_DISABLED 64	/* entries of disable_corrector */

enum unipc_solver_type {
	UNIPC_BH1,	/* B(h) = h */
	UNIPC_BH2,	/* B(h) = e^h - 1 */
};

enum unipc_final_sigmas {
	UNIPC_FINAL_ZERO,	/* the last step goes to sigma 0 */
	UNIPC_FINAL_SIGMA_MIN,	/* ... to the last sigma of the schedule */
};

/* The keys of scheduler_config.json that reach the computation. */
struct unipc_config {
	int64_t num_train_timesteps;	/* 1000 */
	int solver_order;		/* 2 */
	enum unipc_solver_type solver_type;	/* bh2 */
	bool lower_order_final;		/* true */
	double flow_shift;		/* 1.0 */
	double shift_terminal;		/* null -> 0: no stretching */
	enum unipc_final_sigmas final_sigmas_type;	/* zero */
	int n_disable_corrector;	/* [] */
	int disable_corrector[UNIPC_MAX_DISABLED];
};

/*
 * diffusers' defaults, except use_flow_sigmas / flow_prediction (which
 * upstream defaults off and latentq requires): the config Wan's converted
 * scheduler folders spell out.
 */
void unipc_config_init(struct unipc_config *cfg);

/*
 * Parses a scheduler_config.json object (absent keys: defaults above).
 * `path` (may be NULL) names the file in errors.  Fails (LQ_FAILED,
 * err's field = the key) with LQ-SCHED-001 for a key of the wrong type,
 * LQ-SCHED-002 for a value out of range (solver_order outside
 * 1..UNIPC_MAX_ORDER, flow_shift <= 0, an unknown solver_type /
 * final_sigmas_type / timestep_spacing / prediction_type),
 * LQ-SCHED-003 for a `_class_name` other than UniPCMultistepScheduler,
 * LQ-SCHED-004 for an option latentq does not implement (see above).
 * Unknown keys are ignored with a warning, as diffusers does.
 */
enum lq_status unipc_config_from_json(const cJSON *json, const char *path,
    struct unipc_config *cfg, struct lq_error *err);

/* Reads and parses a file (LQ-SCHED-005 if unreadable or not JSON). */
enum lq_status unipc_config_load(const char *path, struct unipc_config *cfg,
    struct lq_error *err);

/*
 * The job's flow_shift in place of the config's, as
 * UniPCMultistepScheduler.from_config(config, flow_shift=x) makes it (the
 * manifest key flow_shift).  Not above 0: LQ_FAILED LQ-WAN-005, field
 * flow_shift, *cfg unchanged.
 */
enum lq_status unipc_config_set_flow_shift(struct unipc_config *cfg,
    double flow_shift, struct lq_error *err);

/* The schedule of set_timesteps(N): sigmas[N + 1], timesteps[N]. */
struct unipc_schedule {
	int num_steps;
	float *sigmas;		/* float32; sigmas[N] = 0 (or sigma_min) */
	int64_t *timesteps;	/* int64, what the transformer is given */
};

/*
 * UniPCMultistepScheduler.set_timesteps(N) with use_flow_sigmas:
 * sigmas = np.linspace(1, 1/num_train_timesteps, N + 1)[:-1] (float64),
 * s' = flow_shift*s / (1 + (flow_shift - 1)*s), shift_terminal
 * stretching, sigmas[0] -= 1e-6 when |sigmas[0] - 1| < 1e-6,
 * timesteps = int64(sigmas * num_train_timesteps) (truncation), the final
 * sigma appended, sigmas rounded to float32.  Equal timesteps are
 * harmless (WanPipeline calls set_begin_index(0), so no timestep lookup).
 * Errors: N < 1 LQ-SCHED-010, a schedule that is not finite or whose
 * sigmas leave (0, 1) LQ-SCHED-012; *out is then zeroed.  On success the
 * caller owns *out (unipc_schedule_free).
 */
enum lq_status unipc_set_timesteps(const struct unipc_config *cfg,
    int num_steps, struct unipc_schedule *out, struct lq_error *err);

void unipc_schedule_free(struct unipc_schedule *s);

/*
 * The scheduler's mutable state between steps, for n latent values:
 * what upstream keeps in model_outputs, last_sample, lower_order_nums,
 * this_order and _step_index (timestep_list is only read by solver_p,
 * which latentq refuses).  A checkpoint holds it whole
 * (unipc_state_pack): a resume continues bit for bit.
 */
struct unipc_state {
	int solver_order;
	size_t n;
	int step_index;		/* steps done */
	int lower_order_nums;
	int this_order;		/* order of the last predictor (0 before any) */
	int have_last_sample;
	/* model_outputs[slot * n ...], slot 0 oldest .. solver_order - 1
	 * newest, as upstream's list; have_output[slot] is upstream's
	 * "not None" */
	float *model_outputs;
	int have_output[UNIPC_MAX_ORDER];
	float *last_sample;	/* [n] */
	float *scratch;		/* [2 n], the step's temporaries */
};

/* A fresh state (step 0) for n values; aborts on host OOM (xmalloc). */
void unipc_state_init(struct unipc_state *st, const struct unipc_config *cfg,
    size_t n);

void unipc_state_free(struct unipc_state *st);

/*
 * UniPCMultistepScheduler.step(model_output, t, sample) for the state's
 * step index k (0 .. N-1) of schedule `s`: x0 = sample - sigma_k *
 * model_output (convert_model_output, flow_prediction); from k >= 1 the
 * UniC corrector first corrects `sample` (the previous predictor's
 * result) with x0, unless k-1 is in disable_corrector; the history
 * shifts; the order is min(solver_order, N - k) under lower_order_final,
 * warmed up by lower_order_nums; the corrected sample is kept as
 * last_sample; the UniP predictor writes the next latents into `sample`
 * (in place; n values, float32).  `model_output` is the guided velocity
 * [n] and is not modified.  Does not allocate.  k >= N is a bug (aborts).
 */
void unipc_step(const struct unipc_config *cfg,
    const struct unipc_schedule *s, struct unipc_state *st,
    const float *model_output, float *sample);

/*
 * The state as bytes, for a checkpoint: a fixed little-endian header
 * (magic "LQUNIPC1", solver_order, n, step_index, lower_order_nums,
 * this_order, flags: bit i = model_outputs slot i set, bit 8 = last_sample
 * set: 56 bytes) then the solver_order slots and last_sample as float32,
 * zeros where unset.  unipc_state_packed_size is the same for every step
 * of one config and n (56 + 4 (solver_order + 1) n bytes, a multiple of
 * 4: a checkpoint can carry it as floats after the latents).
 */
size_t unipc_state_packed_size(const struct unipc_state *st);
void unipc_state_pack(const struct unipc_state *st, unsigned char *out);

/*
 * Restores a packed state into `st` (initialised by unipc_state_init
 * with the same config and n).  A blob of another length, magic, order
 * or n, or with counters out of range, is LQ_FAILED LQ-RUN-CKPT naming
 * what differs; `st` is then unchanged.
 */
enum lq_status unipc_state_unpack(struct unipc_state *st,
    const unsigned char *data, size_t len, struct lq_error *err);

/*
 * A one-line canonical description of the resolved config ("UniPC
 * order=2 bh2 lower_order_final=1 flow_shift=3 ..."), for cache keys and
 * device fingerprints: two configs that step differently never give the
 * same string.  Writes at most `cap` bytes (NUL included).
 */
void unipc_config_describe(const struct unipc_config *cfg, char *out,
    size_t cap);

#endif
