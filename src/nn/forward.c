/*
 * forward.c — `latentq forward`'s engine (see forward.h): named inputs in,
 * one component run on the device, named outputs (and intermediates) out.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/forward.h"
#include "nn/forward_t5.h"
#include "nn/ltxv_transformer.h"
#include "nn/ltxv_vae.h"
#include "nn/ltxv_vae_encoder.h"
#include "nn/wan_vae.h"
#include "nn/ltxv_upsampler.h"
#include "nn/ltx2_audio_vae.h"
#include "nn/ltx2_connectors.h"
#include "nn/ltx2_transformer.h"
#include "nn/ltx2_vocoder.h"
#include "nn/wan_transformer.h"
#include "nn/weights.h"

/* The components, in enum nn_component order: the --component name and
 * the subfolder of a pipeline folder that holds it. */
static const struct {
	const char *name, *sub;
} components[] = {
	[NN_COMPONENT_TRANSFORMER] = { "transformer", "transformer" },
	[NN_COMPONENT_VAE_DECODER] = { "vae-decoder", "vae" },
	[NN_COMPONENT_TEXT_ENCODER] = { "text-encoder", "text_encoder" },
	[NN_COMPONENT_VAE_ENCODER] = { "vae-encoder", "vae" },
	[NN_COMPONENT_LATENT_UPSAMPLER] = { "latent-upsampler", "latent_upsampler" },
	[NN_COMPONENT_VOCODER] = { "vocoder", "vocoder" },
	[NN_COMPONENT_AUDIO_VAE_DECODER] = { "audio-vae-decoder", "audio_vae" },
	[NN_COMPONENT_CONNECTORS] = { "connectors", "connectors" },
};
#define NCOMPONENTS (sizeof(components) / sizeof(components[0]))

int
nn_component_parse(const char *name, enum nn_component *out)
{
	for (size_t i = 0; i < NCOMPONENTS; i++) {
		if (strcmp(name, components[i].name) == 0) {
			*out = (enum nn_component)i;
			return 0;
		}
	}
	return -1;
}

const char *
nn_component_names(void)
{
	static char list[256];

	if (list[0] == '\0') {
		for (size_t i = 0; i < NCOMPONENTS; i++) {
			size_t n = strlen(list);

			snprintf(list + n, sizeof(list) - n, "%s%s",
			    i ? ", " : "", components[i].name);
		}
	}
	return list;
}

struct inputs {
	struct st_file **files;
	int n;
};

static const struct st_tensor *
input_find(const struct inputs *in, const char *name)
{
	for (int i = 0; i < in->n; i++) {
		const struct st_tensor *t = st_file_find(in->files[i], name);

		if (t)
			return t;
	}
	return NULL;
}

/* Every input must hold data: a zero-size dimension is refused up front. */
static enum lq_status
inputs_nonempty(const struct inputs *in, struct lq_error *err)
{
	for (int i = 0; i < in->n; i++) {
		for (size_t k = 0; k < st_file_count(in->files[i]); k++) {
			const struct st_tensor *t = st_file_tensor(in->files[i], k);

			for (int d = 0; d < t->ndim; d++) {
				if (t->shape[d] >= 1)
					continue;
				error_set(err, LQ_FAILED, "LQ-NN-INPUT",
				    "input %s has an empty dimension %d", t->name,
				    d);
				error_set_field(err, "%s", t->name);
				return LQ_FAILED;
			}
		}
	}
	return LQ_OK;
}

static enum lq_status
input_missing(const char *name, const char *what, struct lq_error *err)
{
	error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input %s is missing (%s)",
	    name, what);
	error_set_field(err, "%s", name);
	error_set_hint(err, "name the tensors as the upstream forward's "
	    "arguments, e.g. the goldens' *.inputs.safetensors");
	return LQ_FAILED;
}

/* An input as floats with a checked rank; caller frees. */
static enum lq_status
input_f32(const struct inputs *in, const char *name, int ndim,
    const char *what, const struct st_tensor **tp, float **out,
    struct lq_error *err)
{
	const struct st_tensor *t = input_find(in, name);

	*out = NULL;
	if (t == NULL)
		return input_missing(name, what, err);
	if (ndim >= 0 && t->ndim != ndim) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "input %s has %d dimensions (%s), expected %s", name,
		    t->ndim, st_dtype_name(t->dtype), what);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	*tp = t;
	*out = st_tensor_to_f32(t);
	return LQ_OK;
}

/* A one-element integer input (num_frames, height, width). */
static enum lq_status
input_int(const struct inputs *in, const char *name, int *out,
    struct lq_error *err)
{
	const struct st_tensor *t = input_find(in, name);
	double v;

	if (t == NULL)
		return input_missing(name, "a one-element integer", err);
	if (st_tensor_numel(t) != 1) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "input %s has %lld elements, expected one", name,
		    (long long)st_tensor_numel(t));
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	if (t->dtype == ST_I64) {
		int64_t i;

		memcpy(&i, t->data, sizeof(i));
		v = (double)i;
	} else {
		float *f = st_tensor_to_f32(t);

		v = f[0];
		free(f);
	}
	if (v < 1 || v > 1e6 || v != (double)(int)v) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "input %s is %g, expected a positive integer", name, v);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	*out = (int)v;
	return LQ_OK;
}

/* Uploads host floats into a new device buffer; *buf owns it. */
static enum lq_status
upload(struct gpu_ctx *ctx, int ndim, const int64_t *shape, const float *data,
    struct gpu_buffer **buf, struct gpu_tensor *t, struct lq_error *err)
{
	int64_t n = 1;
	enum lq_status st;

	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	st = gpu_buffer_create(ctx, (size_t)n * sizeof(float), buf, err);
	if (st != LQ_OK)
		return st;
	*t = gpu_tensor_make(*buf, 0, GPU_F32, ndim, shape);
	if (data)
		st = gpu_tensor_upload_f32(ctx, t, data, err);
	return st;
}

struct dump_sink {
	struct st_writer *w;
};

static enum lq_status
dump_to_writer(void *ud, const char *name, int ndim, const int64_t *shape,
    const float *data, struct lq_error *err)
{
	struct dump_sink *s = ud;

	(void)err;
	st_writer_add(s->w, name, ST_F32, ndim, shape, data);
	return LQ_OK;
}

static char *
component_dir(const char *model, const char *sub)
{
	char *p = xasprintf("%s/config.json", model);
	struct stat sb;
	int here = stat(p, &sb) == 0;

	free(p);
	if (here)
		return xstrdup(model);
	return xasprintf("%s/%s", model, sub);
}

static void
report_memory(FILE *fp, const char *what, size_t weights, size_t cap,
    size_t peak, size_t io)
{
	if (fp == NULL)
		return;
	fprintf(fp, "latentq: %s device memory: weights %.2f MiB, activations "
	    "peak %.2f MiB (pool %.2f MiB), inputs/outputs %.2f MiB, total "
	    "peak %.2f MiB\n", what, weights / 1048576.0, peak / 1048576.0,
	    cap / 1048576.0, io / 1048576.0,
	    (weights + cap + io) / 1048576.0);
}

/*
 * `forward -v`: the memory plan of the component next to what the device
 * held at its peak (gpu_ctx_memory), the pair the plan's tests compare.
 */
static void
report_plan(FILE *fp, struct gpu_ctx *ctx, const char *what,
    const struct nn_plan_bytes *plan)
{
	uint64_t peak;

	if (fp == NULL)
		return;
	gpu_ctx_memory(ctx, NULL, &peak);
	fprintf(fp, "latentq: %s memory plan: device %" PRIu64 " bytes "
	    "(weights %" PRIu64 ", activations %" PRIu64 ", inputs/outputs %"
	    PRIu64 "), host %" PRIu64 " bytes; measured peak_device_bytes %"
	    PRIu64 "\n", what, nn_plan_bytes_device(plan), plan->weights,
	    plan->activations, plan->io, plan->host, peak);
}

/* The weights layout of the component folder, from its headers: the
 * transformer's both ways (ltxv_transformer_weights_layout), else the
 * tensors under `prefix` resident. */
static enum lq_status
plan_weights(struct gpu_ctx *ctx, const char *dir, int transformer,
    const char *prefix, struct nn_weights_layout *lay, struct lq_error *err)
{
	struct st_set *set = NULL;
	enum lq_status st;

	memset(lay, 0, sizeof(*lay));
	if ((st = st_set_open(dir, &set, err)) != LQ_OK)
		return st;
	st = transformer ? ltxv_transformer_weights_layout(set,
	    gpu_ctx_caps(ctx), lay, err) : nn_weights_plan(set, prefix, NULL,
	    gpu_ctx_caps(ctx), &lay->resident, err);
	st_set_close(set);
	return st;
}

/* An optional float input with exactly `n` values (rank free); *out NULL
 * when absent. */
static enum lq_status
input_opt_n(const struct inputs *in, const char *name, int64_t n,
    const char *what, float **out, struct lq_error *err)
{
	const struct st_tensor *t = input_find(in, name);

	*out = NULL;
	if (t == NULL)
		return LQ_OK;
	if (st_tensor_numel(t) != n) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input %s has %lld "
		    "values, expected %s (%lld)", name,
		    (long long)st_tensor_numel(t), what, (long long)n);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	*out = st_tensor_to_f32(t);
	return LQ_OK;
}

/* A timestep input: [B] (or one value, expanded) or [B, tokens]. */
static enum lq_status
input_timestep(const struct inputs *in, const char *name, int64_t B,
    int64_t ntok, float **out, int *per_token, struct lq_error *err)
{
	const struct st_tensor *t = input_find(in, name);
	int64_t n;
	float *f;

	*out = NULL;
	*per_token = 0;
	if (t == NULL)
		return LQ_OK;
	n = st_tensor_numel(t);
	if (n != 1 && n != B && n != B * ntok) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input %s has %lld "
		    "values; expected [B] = %lld or [B, tokens] = [%lld, %lld] "
		    "(0..1000 scale)", name, (long long)n, (long long)B,
		    (long long)B, (long long)ntok);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	f = st_tensor_to_f32(t);
	if (n == 1) {
		*out = xmalloc(sizeof(float) * (size_t)B);
		for (int64_t b = 0; b < B; b++)
			(*out)[b] = f[0];
		free(f);
	} else {
		*out = f;
		*per_token = n == B * ntok && ntok != 1;
	}
	return LQ_OK;
}

/* The fps input: a python float (F64 kept exactly), default 24.0. */
static enum lq_status
input_fps(const struct inputs *in, double *fps, struct lq_error *err)
{
	const struct st_tensor *t = input_find(in, "fps");

	*fps = 24.0;
	if (t == NULL)
		return LQ_OK;
	if (st_tensor_numel(t) != 1) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input fps has %lld "
		    "values, expected one", (long long)st_tensor_numel(t));
		error_set_field(err, "fps");
		return LQ_FAILED;
	}
	if (t->dtype == ST_F64) {
		memcpy(fps, t->data, sizeof(*fps));
	} else {
		float *f = st_tensor_to_f32(t);

		*fps = f[0];
		free(f);
	}
	return LQ_OK;
}

/* LTX2VideoTransformer3DModel (see forward.h for the inputs). */
static enum lq_status
run_ltx2_transformer(struct gpu_ctx *ctx, const char *dir,
    const struct inputs *in, struct st_writer *w, const struct nn_dump *dump,
    FILE *report, const struct ltx2_transformer_call *call,
    enum gpu_precision prec, struct lq_error *err)
{
	struct ltx2_transformer *m = NULL;
	const struct ltx2_transformer_config *c;
	const struct st_tensor *ths, *tahs, *tehs, *taehs;
	float *hs = NULL, *ahs = NULL, *ehs = NULL, *aehs = NULL, *ts = NULL;
	float *ats = NULL, *sig = NULL, *asig = NULL, *mask = NULL, *amask = NULL;
	float *out = NULL, *aout = NULL;
	struct ltx2_transformer_args a;
	struct ltx2_transformer_out o;
	int64_t B;
	enum lq_status st;

	memset(&a, 0, sizeof(a));
	if (call)
		a.call = *call;
	else
		ltx2_transformer_call_init(&a.call);
	if ((st = input_f32(in, "hidden_states", 3, "[B, N, in_channels]", &ths,
	    &hs, err)) ||
	    (st = input_f32(in, "audio_hidden_states", 3,
	    "[B, L, audio_in_channels]", &tahs, &ahs, err)) ||
	    (st = input_f32(in, "encoder_hidden_states", 3,
	    "[B, T, caption_channels]", &tehs, &ehs, err)) ||
	    (st = input_f32(in, "audio_encoder_hidden_states", 3,
	    "[B, T, caption_channels]", &taehs, &aehs, err)) ||
	    (st = input_int(in, "num_frames", &a.num_frames, err)) ||
	    (st = input_int(in, "height", &a.height, err)) ||
	    (st = input_int(in, "width", &a.width, err)) ||
	    (st = input_int(in, "audio_num_frames", &a.audio_num_frames, err)) ||
	    (st = input_fps(in, &a.fps, err)) ||
	    (st = ltx2_transformer_load(ctx, dir, &m, err)))
		goto out;
	ltx2_transformer_set_precision(m, prec);
	c = ltx2_transformer_config(m);
	B = ths->shape[0];
	a.B = (int)B;
	a.N = (int)ths->shape[1];
	a.L = (int)tahs->shape[1];
	a.T = (int)tehs->shape[1];
	a.Ta = (int)taehs->shape[1];
	{
		const struct st_tensor *ts3[4] = { ths, tahs, tehs, taehs };
		static const char *const nm[4] = { "hidden_states",
		    "audio_hidden_states", "encoder_hidden_states",
		    "audio_encoder_hidden_states" };
		const int64_t want[4] = { c->in_channels, c->audio_in_channels,
		    c->caption_channels, c->caption_channels };

		for (int i = 0; i < 4; i++) {
			if (ts3[i]->shape[0] == B && ts3[i]->shape[2] == want[i])
				continue;
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input %s "
			    "is [%lld, %lld, %lld]; expected [B = %lld, tokens, "
			    "%lld]", nm[i], (long long)ts3[i]->shape[0],
			    (long long)ts3[i]->shape[1],
			    (long long)ts3[i]->shape[2], (long long)B,
			    (long long)want[i]);
			error_set_field(err, "%s", nm[i]);
			goto out;
		}
	}
	if ((st = input_timestep(in, "timestep", B, a.N, &ts,
	    &a.timestep_per_token, err)) ||
	    (st = input_timestep(in, "audio_timestep", B, a.L, &ats,
	    &a.audio_timestep_per_token, err)) ||
	    (st = input_opt_n(in, "sigma", B, "[B]", &sig, err)) ||
	    (st = input_opt_n(in, "audio_sigma", B, "[B]", &asig, err)) ||
	    (st = input_opt_n(in, "encoder_attention_mask", B * a.T, "[B, T]",
	    &mask, err)) ||
	    (st = input_opt_n(in, "audio_encoder_attention_mask", B * a.Ta,
	    "[B, T]", &amask, err)))
		goto out;
	if (ts == NULL) {
		st = input_missing("timestep", "[B] or [B, N] on the 0..1000 "
		    "scale", err);
		goto out;
	}
	a.hidden_states = hs;
	a.audio_hidden_states = ahs;
	a.encoder_hidden_states = ehs;
	a.audio_encoder_hidden_states = aehs;
	a.timestep = ts;
	a.audio_timestep = ats;
	a.sigma = sig;
	a.audio_sigma = asig;
	a.encoder_attention_mask = mask;
	a.audio_encoder_attention_mask = amask;
	out = xmalloc(sizeof(float) * (size_t)(B * a.N * c->out_channels));
	aout = xmalloc(sizeof(float) * (size_t)(B * a.L * c->audio_out_channels));
	o.output = out;
	o.audio_output = aout;
	if ((st = ltx2_transformer_forward(m, &a, &o, dump, err)))
		goto out;
	st_writer_add(w, "output", ST_F32, 3,
	    (int64_t[]){ B, a.N, c->out_channels }, out);
	st_writer_add(w, "audio_output", ST_F32, 3,
	    (int64_t[]){ B, a.L, c->audio_out_channels }, aout);
	{
		size_t wb, cap, peak;

		ltx2_transformer_memory(m, &wb, &cap, &peak);
		report_memory(report, "ltx2 transformer", wb, cap, peak, 0);
	}
	if (report != NULL) {
		struct nn_weights_layout lay;
		struct nn_plan_bytes plan;
		struct ltx2_transformer_shape shp = { a.B, a.N, a.L, a.T, a.Ta,
		    a.timestep_per_token, a.audio_timestep != NULL &&
		    a.audio_timestep_per_token, a.call.use_cross_timestep, 0 };

		if ((st = plan_weights(ctx, dir, 0, NULL, &lay, err)))
			goto out;
		ltx2_transformer_plan(c, &lay, gpu_ctx_caps(ctx), &shp, &plan);
		report_plan(report, ctx, "ltx2 transformer", &plan);
	}
out:
	ltx2_transformer_free(m);
	free(hs);
	free(ahs);
	free(ehs);
	free(aehs);
	free(ts);
	free(ats);
	free(sig);
	free(asig);
	free(mask);
	free(amask);
	free(out);
	free(aout);
	return st;
}

/* 1 when `dir`/config.json passes `is` (diffusers_is_ltx2_transformer,
 * diffusers_is_wan_transformer); an unreadable one is left to the
 * LTX-Video loader to report. */
static int
config_is(const char *dir, int (*is)(const cJSON *cfg))
{
	char *path = xasprintf("%s/config.json", dir);
	cJSON *j = NULL;
	int yes = 0;

	if (diffusers_load_json(path, &j, NULL) == LQ_OK)
		yes = is(j);
	cJSON_Delete(j);
	free(path);
	return yes;
}

/* WanTransformer3DModel (see forward.h for the inputs). */
static enum lq_status
run_wan_transformer(struct gpu_ctx *ctx, const char *dir,
    const struct inputs *in, struct st_writer *w, const struct nn_dump *dump,
    FILE *report, enum nn_plan_choice mode, enum gpu_precision prec,
    struct lq_error *err)
{
	struct wan_transformer *m = NULL;
	struct wan_transformer_config cfg;
	struct wan_transformer_opts topts = {0};
	struct wan_transformer_shape shp;
	struct nn_weights_layout lay;
	struct nn_plan_bytes plan;
	enum nn_weight_streaming streaming;
	struct st_set *set = NULL;
	const struct wan_transformer_config *c;
	const struct st_tensor *ths, *tehs;
	float *hs = NULL, *ehs = NULL, *ts = NULL, *out = NULL;
	struct gpu_buffer *b_hs = NULL, *b_ehs = NULL, *b_out = NULL;
	struct gpu_tensor g_hs, g_ehs, g_out;
	struct wan_transformer_args a;
	int per_token = 0;
	int64_t B, oshape[5];
	enum lq_status st;

	if ((st = input_f32(in, "hidden_states", 5, "[B, in_channels, F, H, W]",
	    &ths, &hs, err)) ||
	    (st = input_f32(in, "encoder_hidden_states", 3,
	    "[B, T, text_dim]", &tehs, &ehs, err)) ||
	    (st = wan_transformer_read_config(dir, &cfg, err)))
		goto out;
	/* the plan (nn/plan.h) decides streaming, as for a render */
	shp.B = (int)ths->shape[0];
	shp.F = (int)ths->shape[2];
	shp.H = (int)ths->shape[3];
	shp.W = (int)ths->shape[4];
	shp.T = (int)tehs->shape[1];
	shp.context = 1;
	shp.streaming = NN_WEIGHTS_RESIDENT;
	memset(&lay, 0, sizeof(lay));
	if ((st = st_set_open(dir, &set, err)) ||
	    (st = wan_transformer_weights_layout(set, gpu_ctx_caps(ctx), &lay,
	    err)))
		goto out;
	wan_transformer_plan(&cfg, &lay, gpu_ctx_caps(ctx), &shp, &plan);
	streaming = nn_plan_choose_streaming(mode, nn_plan_bytes_device(&plan),
	    device_caps_memory_budget(gpu_ctx_caps(ctx), 0));
	if (streaming == NN_WEIGHTS_STREAMED) {
		shp.streaming = streaming;
		wan_transformer_plan(&cfg, &lay, gpu_ctx_caps(ctx), &shp, &plan);
	}
	topts.streaming = streaming == NN_WEIGHTS_STREAMED;
	if ((st = wan_transformer_load_opts(ctx, dir, &topts, &m, err)))
		goto out;
	wan_transformer_set_precision(m, prec);
	c = wan_transformer_config(m);
	B = ths->shape[0];
	if (ths->shape[1] != c->in_channels || tehs->shape[0] != B ||
	    tehs->shape[2] != c->text_dim) {
		int bad = ths->shape[1] != c->in_channels;
		const struct st_tensor *t = bad ? ths : tehs;

		st = error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input %s is "
		    "[%lld, %lld, ...]; expected %s", t->name,
		    (long long)t->shape[0], (long long)t->shape[1], bad ?
		    "[B, in_channels, F, H, W] with the config's in_channels" :
		    "[B, T, text_dim] with hidden_states' B and the config's "
		    "text_dim");
		error_set_field(err, "%s", t->name);
		goto out;
	}
	{
		const struct st_tensor *tt = input_find(in, "timestep");

		if (tt == NULL) {
			st = input_missing("timestep", "[B] on the 0..1000 scale",
			    err);
			goto out;
		}
		if (st_tensor_numel(tt) != 1 && st_tensor_numel(tt) != B) {
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input "
			    "timestep has %lld values; expected [B] = %lld or one "
			    "(per-token timesteps, Wan 2.2 TI2V's, are not "
			    "implemented)", (long long)st_tensor_numel(tt),
			    (long long)B);
			error_set_field(err, "timestep");
			goto out;
		}
	}
	if ((st = input_timestep(in, "timestep", B, 1, &ts, &per_token, err)))
		goto out;
	if ((st = wan_transformer_check_grid(c, (int)ths->shape[2],
	    (int)ths->shape[3], (int)ths->shape[4], err)))
		goto out;
	memcpy(oshape, ths->shape, sizeof(oshape));
	oshape[1] = c->out_channels;
	if ((st = upload(ctx, 5, ths->shape, hs, &b_hs, &g_hs, err)) ||
	    (st = upload(ctx, 3, tehs->shape, ehs, &b_ehs, &g_ehs, err)) ||
	    (st = upload(ctx, 5, oshape, NULL, &b_out, &g_out, err)))
		goto out;
	a.hidden_states = &g_hs;
	a.encoder_hidden_states = &g_ehs;
	a.timestep = ts;
	if ((st = wan_transformer_forward(m, &a, &g_out, dump, err)))
		goto out;
	out = xmalloc(sizeof(float) * (size_t)gpu_tensor_numel(&g_out));
	if ((st = gpu_tensor_download_f32(ctx, &g_out, out, err)))
		goto out;
	st_writer_add(w, "output", ST_F32, 5, oshape, out);
	{
		size_t wb, cap, peak;

		size_t slot;
		unsigned uploads;

		wan_transformer_memory(m, &wb, &cap, &peak);
		report_memory(report, "wan transformer", wb, cap, peak,
		    gpu_buffer_size(b_hs) + gpu_buffer_size(b_ehs) +
		    gpu_buffer_size(b_out));
		if (report != NULL && wan_transformer_streaming(m, &slot,
		    &uploads))
			fprintf(report, "latentq: wan transformer weights "
			    "streamed (weight_streaming %s): blocks' %.2f MiB in "
			    "host memory; on the device %.2f MiB resident + two "
			    "block slots of %.2f MiB (all resident: %.2f MiB); "
			    "%u block uploads\n", nn_plan_choice_name(mode),
			    lay.streamed.streamed_host / 1048576.0,
			    lay.streamed.resident / 1048576.0, slot / 1048576.0,
			    lay.resident.device / 1048576.0, uploads);
	}
	report_plan(report, ctx, "wan transformer", &plan);
out:
	st_set_close(set);
	gpu_buffer_free(b_hs);
	gpu_buffer_free(b_ehs);
	gpu_buffer_free(b_out);
	wan_transformer_free(m);
	free(hs);
	free(ehs);
	free(ts);
	free(out);
	return st;
}

static enum lq_status
run_transformer(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    enum nn_plan_choice mode, enum gpu_precision prec, struct lq_error *err)
{
	struct ltxv_transformer_config cfg;
	struct nn_weights_layout lay;
	struct nn_plan_bytes plan;
	enum nn_weight_streaming streaming;
	struct ltxv_transformer_opts topts = {0};
	struct ltxv_transformer *m = NULL;
	const struct ltxv_transformer_config *c;
	const struct st_tensor *ths, *tehs, *tt, *tm = NULL, *tr;
	float *hs = NULL, *ehs = NULL, *ts = NULL, *mask = NULL, *rs = NULL;
	float *tsb = NULL, *out = NULL;
	double rope[3];
	struct gpu_buffer *b_hs = NULL, *b_ehs = NULL, *b_out = NULL;
	struct gpu_tensor g_hs, g_ehs, g_out;
	struct ltxv_transformer_args a;
	int64_t B, N, T;
	enum lq_status st;

	memset(&a, 0, sizeof(a));
	/* the config first: a folder of another class (say a Wan VACE
	 * transformer) is named as such, not met with an input-shape error */
	if ((st = ltxv_transformer_read_config(dir, &cfg, err))) {
		if (strcmp(err->code, "LQ-MODEL-002") == 0)
			error_set_hint(err, "--component transformer runs "
			    "LTXVideoTransformer3DModel, "
			    "LTX2VideoTransformer3DModel and "
			    "WanTransformer3DModel folders");
		return st;
	}
	if ((st = input_f32(in, "hidden_states", 3, "[B, N, in_channels]", &ths, &hs, err)) ||
	    (st = input_f32(in, "encoder_hidden_states", 3, "[B, T, caption_channels]",
	    &tehs, &ehs, err)) ||
	    (st = input_f32(in, "timestep", -1, "[B] on the 0..1000 scale", &tt, &ts, err)) ||
	    (st = input_int(in, "num_frames", &a.num_frames, err)) ||
	    (st = input_int(in, "height", &a.height, err)) ||
	    (st = input_int(in, "width", &a.width, err)))
		goto out;
	B = ths->shape[0];
	N = ths->shape[1];
	T = tehs->shape[1];
	if (input_find(in, "encoder_attention_mask")) {
		st = input_f32(in, "encoder_attention_mask", 2, "[B, T]", &tm, &mask, err);
		if (st != LQ_OK)
			goto out;
		if (tm->shape[0] != B || tm->shape[1] != T) {
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
			    "encoder_attention_mask is [%lld, %lld], expected [%lld, %lld]",
			    (long long)tm->shape[0], (long long)tm->shape[1],
			    (long long)B, (long long)T);
			goto out;
		}
	}
	if (input_find(in, "rope_interpolation_scale")) {
		st = input_f32(in, "rope_interpolation_scale", 1, "[3]", &tr, &rs, err);
		if (st != LQ_OK)
			goto out;
		if (tr->shape[0] != 3) {
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
			    "rope_interpolation_scale has %lld values, expected 3",
			    (long long)tr->shape[0]);
			goto out;
		}
		/* Python floats: keep F64 exactly (upstream rounds to float32
		 * only when it multiplies). */
		if (tr->dtype == ST_F64)
			memcpy(rope, tr->data, sizeof(rope));
		else
			for (int i = 0; i < 3; i++)
				rope[i] = rs[i];
		a.rope_interpolation_scale = rope;
	}
	if (st_tensor_numel(tt) != B && st_tensor_numel(tt) != 1) {
		st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "timestep has %lld values for a batch of %lld",
		    (long long)st_tensor_numel(tt), (long long)B);
		goto out;
	}
	tsb = xmalloc(sizeof(float) * (size_t)B);
	for (int64_t b = 0; b < B; b++)
		tsb[b] = st_tensor_numel(tt) == 1 ? ts[0] : ts[b];

	/* the plan (nn/plan.h) decides streaming, as for a render */
	if ((st = plan_weights(ctx, dir, 1, NULL, &lay, err)))
		goto out;
	ltxv_transformer_plan(&cfg, &lay, gpu_ctx_caps(ctx), (int)B, (int)N,
	    (int)T, NN_WEIGHTS_RESIDENT, NULL, &plan);
	streaming = nn_plan_choose_streaming(mode, nn_plan_bytes_device(&plan),
	    device_caps_memory_budget(gpu_ctx_caps(ctx), 0));
	if (streaming == NN_WEIGHTS_STREAMED)
		ltxv_transformer_plan(&cfg, &lay, gpu_ctx_caps(ctx), (int)B,
		    (int)N, (int)T, streaming, NULL, &plan);
	topts.streaming = streaming == NN_WEIGHTS_STREAMED;
	if ((st = ltxv_transformer_load_opts(ctx, dir, NULL, &topts, &m, err)))
		goto out;
	ltxv_transformer_set_precision(m, prec);
	c = ltxv_transformer_config(m);

	if ((st = upload(ctx, 3, ths->shape, hs, &b_hs, &g_hs, err)) ||
	    (st = upload(ctx, 3, tehs->shape, ehs, &b_ehs, &g_ehs, err)) ||
	    (st = upload(ctx, 3, (int64_t[]){ B, N, c->out_channels }, NULL,
	    &b_out, &g_out, err)))
		goto out;
	a.hidden_states = &g_hs;
	a.encoder_hidden_states = &g_ehs;
	a.timestep = tsb;
	a.encoder_attention_mask = mask;
	if ((st = ltxv_transformer_reserve(m, (int)B, (int)N, (int)T, err)) ||
	    (st = ltxv_transformer_forward(m, &a, &g_out, dump, err)))
		goto out;
	out = xmalloc(sizeof(float) * (size_t)(B * N * c->out_channels));
	if ((st = gpu_tensor_download_f32(ctx, &g_out, out, err)))
		goto out;
	st_writer_add(w, "output", ST_F32, 3, g_out.shape, out);
	{
		size_t wb, cap, peak;

		size_t slot;
		unsigned uploads;

		ltxv_transformer_memory(m, &wb, &cap, &peak);
		report_memory(report, "transformer", wb, cap, peak,
		    gpu_buffer_size(b_hs) + gpu_buffer_size(b_ehs) +
		    gpu_buffer_size(b_out));
		if (report != NULL && ltxv_transformer_streaming(m, &slot,
		    &uploads))
			fprintf(report, "latentq: transformer weights streamed "
			    "(weight_streaming %s): blocks' %.2f MiB in host "
			    "memory; on the device %.2f MiB resident + two "
			    "block slots of %.2f MiB (all resident: %.2f MiB); "
			    "%u block uploads\n",
			    nn_plan_choice_name(mode),
			    lay.streamed.streamed_host / 1048576.0,
			    lay.streamed.resident / 1048576.0,
			    slot / 1048576.0, lay.resident.device / 1048576.0,
			    uploads);
	}
	report_plan(report, ctx, "transformer", &plan);
out:
	gpu_buffer_free(b_hs);
	gpu_buffer_free(b_ehs);
	gpu_buffer_free(b_out);
	ltxv_transformer_free(m);
	free(hs);
	free(ehs);
	free(ts);
	free(tsb);
	free(mask);
	free(rs);
	free(out);
	return st;
}

struct noise_files {
	const struct inputs *in;
	const struct ltxv_vae_noise *fallback;
};

/* Injected noise from the input files, named `<module>#<k>`. */
static enum lq_status
noise_from_inputs(void *ud, const char *module, int k, int height, int width,
    float *out, struct lq_error *err)
{
	struct noise_files *nf = ud;
	char name[160];
	const struct st_tensor *t;

	snprintf(name, sizeof(name), "%s#%d", module, k);
	if (nf->fallback) {
		enum lq_status st = nf->fallback->fill(nf->fallback->ud, module,
		    k, height, width, out, err);

		if (st != LQ_OK)
			return st;
	}
	t = input_find(nf->in, name);
	if (t == NULL && nf->fallback)
		return LQ_OK;
	if (t == NULL) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "injected-noise field %s ([%d, %d]) is missing", name,
		    height, width);
		error_set_field(err, "%s", name);
		error_set_hint(err, "give a file with the decoder's noise draws "
		    "(as decode.inject_noise.safetensors) with --inputs");
		return LQ_FAILED;
	}
	if (t->ndim != 2 || t->shape[0] != height || t->shape[1] != width) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "injected-noise field %s must be [%d, %d]", name, height,
		    width);
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	st_tensor_read_f32(t, out);
	return LQ_OK;
}

/* The tiled decode's frames, gathered into the whole sample. */
struct gather {
	float *out;			/* [B, C, F, H, W] */
	int64_t shape[5];
};

static enum lq_status
gather_frames(void *ud, int64_t f0, int64_t n, const float *x,
    int64_t x_frames, struct lq_error *err)
{
	struct gather *g = ud;
	int64_t hw = g->shape[3] * g->shape[4];

	(void)err;
	for (int64_t b = 0; b < g->shape[0]; b++)
		for (int64_t c = 0; c < g->shape[1]; c++)
			memcpy(g->out + ((b * g->shape[1] + c) * g->shape[2] + f0) * hw,
			    x + (b * g->shape[1] + c) * x_frames * hw,
			    sizeof(float) * (size_t)(n * hw));
	return LQ_OK;
}

static enum lq_status
run_vae(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    const struct ltxv_vae_noise *fallback, const struct ltxv_vae_tiling *tiling,
    struct lq_error *err)
{
	struct ltxv_vae *v = NULL;
	const struct ltxv_vae_config *c;
	const struct st_tensor *tz, *tt;
	float *z = NULL, *ts = NULL, *tsb = NULL, *out = NULL;
	struct gpu_buffer *b_z = NULL, *b_out = NULL;
	struct gpu_tensor g_z, g_out;
	struct ltxv_vae_decode_args a;
	struct noise_files nf = { in, fallback };
	struct ltxv_vae_noise noise = { noise_from_inputs, &nf };
	int64_t oshape[5], B;
	enum lq_status st;

	memset(&a, 0, sizeof(a));
	if ((st = input_f32(in, "z", 5, "[B, latent_channels, F, H, W]", &tz, &z, err)))
		goto out;
	B = tz->shape[0];
	if ((st = ltxv_vae_load(ctx, dir, &v, err)))
		goto out;
	c = ltxv_vae_config(v);
	if (c->timestep_conditioning) {
		/* vae.decode(z, temb): upstream's argument is temb; the
		 * pipeline goldens call it decode_timestep */
		const char *tname = input_find(in, "decode_timestep") == NULL &&
		    input_find(in, "temb") != NULL ? "temb" : "decode_timestep";

		if ((st = input_f32(in, tname, -1, "[B] on the 0..1 scale",
		    &tt, &ts, err)))
			goto out;
		if (st_tensor_numel(tt) != B && st_tensor_numel(tt) != 1) {
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
			    "%s has %lld values for a batch of %lld", tname,
			    (long long)st_tensor_numel(tt), (long long)B);
			goto out;
		}
		tsb = xmalloc(sizeof(float) * (size_t)B);
		for (int64_t b = 0; b < B; b++)
			tsb[b] = st_tensor_numel(tt) == 1 ? ts[0] : ts[b];
		a.decode_timestep = tsb;
	}
	if (input_find(in, "causal") != NULL) {
		/* AutoencoderKLLTX2Video.decode(z, temb, causal): one value,
		 * nonzero = causal (the config's decoder_causal still wins) */
		const struct st_tensor *tc = input_find(in, "causal");
		float *cv;

		if (!c->ltx2) {
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
			    "causal is an argument of AutoencoderKLLTX2Video."
			    "decode; an AutoencoderKLLTXVideo decoder has none "
			    "(its config's decoder_causal decides)");
			error_set_field(err, "causal");
			goto out;
		}
		if (st_tensor_numel(tc) != 1) {
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
			    "causal has %lld values; it is one flag (0 or 1)",
			    (long long)st_tensor_numel(tc));
			error_set_field(err, "causal");
			goto out;
		}
		cv = st_tensor_to_f32(tc);
		a.causal = cv[0] != 0.0f;
		free(cv);
	}
	a.noise = &noise;
	ltxv_vae_output_shape(v, tz->shape, oshape);
	if (tiling != NULL) {
		struct gather g;
		struct ltxv_vae_sink sink = { gather_frames, &g };
		size_t wb, cap, peak;

		memcpy(g.shape, oshape, sizeof(oshape));
		out = xcalloc((size_t)(oshape[0] * oshape[1] * oshape[2] *
		    oshape[3] * oshape[4]), sizeof(float));
		g.out = out;
		if ((st = ltxv_vae_decode_tiled(v, &a, z, tz->shape, tiling, &sink,
		    err)) != LQ_OK)
			goto out;
		st_writer_add(w, "sample", ST_F32, 5, oshape, out);
		ltxv_vae_memory(v, &wb, &cap, &peak);
		if (report != NULL) {
			struct nn_weights_layout lay;
			struct nn_plan_bytes plan;

			if ((st = plan_weights(ctx, dir, 0, "decoder.", &lay,
			    err)))
				goto out;
			ltxv_vae_plan(c, &lay, gpu_ctx_caps(ctx), (int)B,
			    (int)tz->shape[2], (int)tz->shape[3],
			    (int)tz->shape[4], tiling, &plan);
			report_memory(report, "vae decoder (tiled)", wb, cap, peak,
			    (size_t)plan.io);
			report_plan(report, ctx, "vae decoder", &plan);
		}
		goto out;
	}
	if ((st = upload(ctx, 5, tz->shape, z, &b_z, &g_z, err)) ||
	    (st = upload(ctx, 5, oshape, NULL, &b_out, &g_out, err)))
		goto out;
	a.z = &g_z;
	if ((st = ltxv_vae_reserve(v, (int)B, (int)tz->shape[2], (int)tz->shape[3],
	    (int)tz->shape[4], err)) ||
	    (st = ltxv_vae_decode(v, &a, &g_out, dump, err)))
		goto out;
	out = xmalloc(sizeof(float) * (size_t)gpu_tensor_numel(&g_out));
	if ((st = gpu_tensor_download_f32(ctx, &g_out, out, err)))
		goto out;
	st_writer_add(w, "sample", ST_F32, 5, oshape, out);
	{
		size_t wb, cap, peak;

		ltxv_vae_memory(v, &wb, &cap, &peak);
		report_memory(report, "vae decoder", wb, cap, peak,
		    gpu_buffer_size(b_z) + gpu_buffer_size(b_out));
	}
	if (report != NULL) {
		struct nn_weights_layout lay;
		struct nn_plan_bytes plan;

		if ((st = plan_weights(ctx, dir, 0, "decoder.", &lay, err)))
			goto out;
		ltxv_vae_plan(c, &lay, gpu_ctx_caps(ctx), (int)B,
		    (int)tz->shape[2], (int)tz->shape[3], (int)tz->shape[4],
		    NULL, &plan);
		report_plan(report, ctx, "vae decoder", &plan);
	}
out:
	gpu_buffer_free(b_z);
	gpu_buffer_free(b_out);
	ltxv_vae_free(v);
	free(z);
	free(ts);
	free(tsb);
	free(out);
	return st;
}

/*
 * AutoencoderKLWan.decode(z).sample (nn/wan_vae.h): z [B, z_dim, F, H, W]
 * -> sample, with --dump-intermediates post_quant_conv and
 * decoder_chunk<i>_preclamp.  Tiling is not implemented for Wan (issue
 * 20 names it out of scope): --set tiling attributes are refused.
 */
static enum lq_status
run_wan_vae(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    const struct ltxv_vae_tiling *tiling, struct lq_error *err)
{
	struct wan_vae *v = NULL;
	const struct st_tensor *tz;
	float *z = NULL, *out = NULL;
	struct gpu_buffer *b_z = NULL, *b_out = NULL;
	struct gpu_tensor g_z, g_out;
	int64_t oshape[5];
	enum lq_status st;

	if (tiling != NULL) {
		error_set(err, LQ_FAILED, "LQ-NN-TILING", "AutoencoderKLWan "
		    "decodes chunk by chunk untiled; VAE tiling for Wan is not "
		    "implemented (drop the --set tiling attributes)");
		return LQ_FAILED;
	}
	if ((st = input_f32(in, "z", 5, "[B, z_dim, F, H, W]", &tz, &z, err)) ||
	    (st = wan_vae_load(ctx, dir, &v, err)))
		goto out;
	if (tz->shape[1] != wan_vae_config(v)->z_dim) {
		st = error_set(err, LQ_FAILED, "LQ-NN-INPUT", "input z has %lld "
		    "channels; the VAE's z_dim is %d", (long long)tz->shape[1],
		    wan_vae_config(v)->z_dim);
		error_set_field(err, "z");
		goto out;
	}
	wan_vae_output_shape(wan_vae_config(v), tz->shape, oshape);
	out = xmalloc(sizeof(float) * (size_t)(oshape[0] * oshape[1] *
	    oshape[2] * oshape[3] * oshape[4]));
	if (dump == NULL) {
		/* the render's way in (wan_vae_decode_host) */
		if ((st = wan_vae_decode_host(v, z, tz->shape, out, err)))
			goto out;
	} else if ((st = upload(ctx, 5, tz->shape, z, &b_z, &g_z, err)) ||
	    (st = upload(ctx, 5, oshape, NULL, &b_out, &g_out, err)) ||
	    (st = wan_vae_decode(v, &g_z, &g_out, dump, err)) ||
	    (st = gpu_tensor_download_f32(ctx, &g_out, out, err))) {
		goto out;
	}
	st_writer_add(w, "sample", ST_F32, 5, oshape, out);
	if (report != NULL) {
		size_t wb, cap, peak;
		struct nn_weights_layout lay, lq;
		struct nn_plan_bytes plan;

		wan_vae_memory(v, &wb, &cap, &peak);
		report_memory(report, "vae decoder", wb, cap, peak,
		    (size_t)(gpu_buffer_plan_size((uint64_t)st_tensor_numel(tz) *
		    4) + gpu_buffer_plan_size((uint64_t)(oshape[0] * oshape[1] *
		    oshape[2] * oshape[3] * oshape[4]) * 4)));
		if ((st = plan_weights(ctx, dir, 0, "decoder.", &lay, err)) ||
		    (st = plan_weights(ctx, dir, 0, "post_quant_conv.", &lq, err)))
			goto out;
		lay.resident.device += lq.resident.device;
		wan_vae_plan(wan_vae_config(v), &lay, gpu_ctx_caps(ctx),
		    (int)tz->shape[0], (int)tz->shape[2], (int)tz->shape[3],
		    (int)tz->shape[4], &plan);
		report_plan(report, ctx, "vae decoder", &plan);
	}
out:
	gpu_buffer_free(b_z);
	gpu_buffer_free(b_out);
	wan_vae_free(v);
	free(z);
	free(out);
	return st;
}

/*
 * The optional `posterior_noise` input of a VAE encoder run: *noise NULL
 * when absent, else the caller's copy (free it) of a tensor that must have
 * the latent's shape lat [B, C, F, H, W] (LQ-NN-INPUT naming the field).
 */
static enum lq_status
posterior_noise_input(const struct inputs *in, const int64_t lat[5],
    float **noise, struct lq_error *err)
{
	const struct st_tensor *tn;
	enum lq_status st;

	*noise = NULL;
	if (!input_find(in, "posterior_noise"))
		return LQ_OK;
	if ((st = input_f32(in, "posterior_noise", 5, "the latent's shape", &tn,
	    noise, err)))
		return st;
	if (memcmp(tn->shape, lat, 5 * sizeof(int64_t)) != 0) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", "posterior_noise must "
		    "have the latent's shape [%lld, %lld, %lld, %lld, %lld]",
		    (long long)lat[0], (long long)lat[1], (long long)lat[2],
		    (long long)lat[3], (long long)lat[4]);
		error_set_field(err, "posterior_noise");
		return LQ_FAILED;
	}
	return LQ_OK;
}

/*
 * An encoder's latent_dist as forward's outputs: par is quant_conv's
 * [mean | logvar] over lat [B, C, F, H, W] (parameters [B, 2C, F, H, W]);
 * writes parameters, mean, logvar, std, mode and, with noise (lat's
 * shape), sample = mean + std * noise: DiagonalGaussianDistribution
 * (diffusers autoencoders/vae.py), the same for LTX-Video and Wan.  The
 * arrays it allocates are returned in *mean, *lv, *sd, *smp (NULL when not
 * made) and stay the caller's to free once the writer is done with them.
 */
static void
write_latent_dist(struct st_writer *w, const int64_t lat[5], float *par,
    const float *noise, float **mean, float **lv, float **sd, float **smp)
{
	int64_t n = lat[0] * lat[1] * lat[2] * lat[3] * lat[4];
	int64_t S = lat[2] * lat[3] * lat[4], par_shape[5];

	*mean = xmalloc(sizeof(float) * (size_t)n);
	*lv = xmalloc(sizeof(float) * (size_t)n);
	*sd = xmalloc(sizeof(float) * (size_t)n);
	*smp = NULL;
	ltxv_latent_dist(par, lat[0], lat[1], S, *mean, *lv, *sd);
	memcpy(par_shape, lat, sizeof(par_shape));
	par_shape[1] = 2 * lat[1];
	st_writer_add(w, "parameters", ST_F32, 5, par_shape, par);
	st_writer_add(w, "mean", ST_F32, 5, lat, *mean);
	st_writer_add(w, "logvar", ST_F32, 5, lat, *lv);
	st_writer_add(w, "std", ST_F32, 5, lat, *sd);
	st_writer_add(w, "mode", ST_F32, 5, lat, *mean);
	if (noise != NULL) {
		*smp = xmalloc(sizeof(float) * (size_t)n);
		ltxv_latent_dist_sample(*mean, *sd, noise, n, *smp);
		st_writer_add(w, "sample", ST_F32, 5, lat, *smp);
	}
}

/*
 * AutoencoderKLWan.encode(x).latent_dist: `x` (or `sample`) [B, 3, T, H, W]
 * -> parameters (quant_conv's [mean | logvar]), mean, logvar, std, mode,
 * and sample = mean + std * posterior_noise when that is given; with
 * --dump-intermediates encoder_chunk<i> and quant_conv.
 */
static enum lq_status
run_wan_vae_encoder(struct gpu_ctx *ctx, const char *dir,
    const struct inputs *in, struct st_writer *w, const struct nn_dump *dump,
    FILE *report, const struct ltxv_vae_tiling *tiling, struct lq_error *err)
{
	struct wan_vae_encoder *e = NULL;
	const struct st_tensor *tx;
	const char *xname = input_find(in, "sample") ? "sample" : "x";
	float *x = NULL, *noise = NULL, *par = NULL, *mean = NULL, *lv = NULL;
	float *sd = NULL, *smp = NULL;
	struct gpu_buffer *b_x = NULL;
	struct gpu_tensor g_x;
	int64_t lat[5], n;
	enum lq_status st;

	if (tiling != NULL) {
		error_set(err, LQ_FAILED, "LQ-NN-TILING", "AutoencoderKLWan "
		    "encodes chunk by chunk untiled; VAE tiling for Wan is not "
		    "implemented (drop the --set tiling attributes)");
		return LQ_FAILED;
	}
	if ((st = input_f32(in, xname, 5, "x [B, 3, T, H, W]", &tx, &x, err)))
		goto out;
	if ((st = wan_vae_encoder_load(ctx, dir, &e, err)) ||
	    (st = wan_vae_encoder_latent_shape(e, tx->shape, lat, err)))
		goto out;
	n = lat[0] * lat[1] * lat[2] * lat[3] * lat[4];
	if ((st = posterior_noise_input(in, lat, &noise, err)))
		goto out;
	par = xmalloc(sizeof(float) * (size_t)(2 * n));
	if ((st = upload(ctx, 5, tx->shape, x, &b_x, &g_x, err)) ||
	    (st = wan_vae_encode(e, &g_x, par, dump, err)))
		goto out;
	write_latent_dist(w, lat, par, noise, &mean, &lv, &sd, &smp);
	{
		size_t wb, cap, peak;

		wan_vae_encoder_memory(e, &wb, &cap, &peak);
		report_memory(report, "vae encoder", wb, cap, peak,
		    b_x ? gpu_buffer_size(b_x) : 0);
	}
out:
	gpu_buffer_free(b_x);
	wan_vae_encoder_free(e);
	free(x);
	free(noise);
	free(par);
	free(mean);
	free(lv);
	free(sd);
	free(smp);
	return st;
}

/*
 * AutoencoderKLLTXVideo.encode(x).latent_dist: `sample` (or upstream's
 * argument name `x`) [B, 3, F, H, W] -> parameters, mean, logvar, std,
 * mode, and with `posterior_noise` (the mean's shape) sample.
 */
static enum lq_status
run_vae_encoder(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    const struct ltxv_vae_tiling *tiling, struct lq_error *err)
{
	struct ltxv_vae_encoder *e = NULL;
	const struct st_tensor *tx;
	const char *xname = input_find(in, "sample") ? "sample" : "x";
	float *x = NULL, *noise = NULL, *par = NULL, *mean = NULL, *lv = NULL;
	float *sd = NULL, *smp = NULL;
	struct gpu_buffer *b_x = NULL;
	struct gpu_tensor g_x;
	int64_t lat[5], n;
	enum lq_status st;

	if ((st = input_f32(in, xname, 5, "sample [B, 3, F, H, W]", &tx, &x, err)))
		goto out;
	if ((st = ltxv_vae_encoder_load(ctx, dir, &e, err)) ||
	    (st = ltxv_vae_encoder_latent_shape(e, tx->shape, lat, err)))
		goto out;
	n = lat[0] * lat[1] * lat[2] * lat[3] * lat[4];
	if ((st = posterior_noise_input(in, lat, &noise, err)))
		goto out;
	par = xmalloc(sizeof(float) * (size_t)(2 * n));
	if (tiling != NULL) {
		/* every tile is its own encoder call on the host's slices */
		if ((st = ltxv_vae_encode_tiled(e, x, tx->shape, tiling, par, err)))
			goto out;
	} else if ((st = upload(ctx, 5, tx->shape, x, &b_x, &g_x, err)) ||
	    (st = ltxv_vae_encode(e, &g_x, par, dump, err))) {
		goto out;
	}
	write_latent_dist(w, lat, par, noise, &mean, &lv, &sd, &smp);
	{
		size_t wb, cap, peak;

		ltxv_vae_encoder_memory(e, &wb, &cap, &peak);
		report_memory(report, "vae encoder", wb, cap, peak,
		    b_x ? gpu_buffer_size(b_x) : 0);
	}
out:
	gpu_buffer_free(b_x);
	ltxv_vae_encoder_free(e);
	free(x);
	free(noise);
	free(par);
	free(mean);
	free(lv);
	free(sd);
	free(smp);
	return st;
}

/* LTXLatentUpsamplerModel: hidden_states [B, C, F, H, W] -> output. */
static enum lq_status
run_upsampler(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    struct lq_error *err)
{
	struct ltxv_upsampler *u = NULL;
	const struct st_tensor *tx;
	float *x = NULL, *out = NULL;
	struct gpu_buffer *b_x = NULL, *b_y = NULL;
	struct gpu_tensor g_x, g_y;
	int64_t oshape[5];
	enum lq_status st;

	if ((st = input_f32(in, "hidden_states", 5, "[B, in_channels, F, H, W]",
	    &tx, &x, err)) ||
	    (st = ltxv_upsampler_load(ctx, dir, &u, err)))
		goto out;
	ltxv_upsampler_output_shape(u, tx->shape, oshape);
	if ((st = upload(ctx, 5, tx->shape, x, &b_x, &g_x, err)) ||
	    (st = upload(ctx, 5, oshape, NULL, &b_y, &g_y, err)) ||
	    (st = ltxv_upsampler_forward(u, &g_x, &g_y, dump, err)))
		goto out;
	out = xmalloc(sizeof(float) * (size_t)gpu_tensor_numel(&g_y));
	if ((st = gpu_tensor_download_f32(ctx, &g_y, out, err)))
		goto out;
	st_writer_add(w, "output", ST_F32, 5, oshape, out);
	{
		size_t wb, cap, peak;

		ltxv_upsampler_memory(u, &wb, &cap, &peak);
		report_memory(report, "latent upsampler", wb, cap, peak,
		    gpu_buffer_size(b_x) + gpu_buffer_size(b_y));
	}
out:
	gpu_buffer_free(b_x);
	gpu_buffer_free(b_y);
	ltxv_upsampler_free(u);
	free(x);
	free(out);
	return st;
}

/* LTX2Vocoder: mel (or upstream's argument name hidden_states)
 * [B, C, T, M] -> waveform [B, out_channels, samples]. */
static enum lq_status
run_vocoder(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    struct lq_error *err)
{
	struct ltx2_vocoder *v = NULL;
	const struct st_tensor *tm;
	const char *name = input_find(in, "mel") == NULL &&
	    input_find(in, "hidden_states") != NULL ? "hidden_states" : "mel";
	float *mel = NULL, *out = NULL;
	struct gpu_buffer *b_m = NULL, *b_y = NULL;
	struct gpu_tensor g_m, g_y;
	int64_t oshape[3];
	enum lq_status st;

	if ((st = input_f32(in, name, 4, "a mel spectrogram [B, C, T, M]",
	    &tm, &mel, err)) ||
	    (st = ltx2_vocoder_load(ctx, dir, &v, err)))
		goto out;
	ltx2_vocoder_output_shape(v, tm->shape, oshape);
	if ((st = upload(ctx, 4, tm->shape, mel, &b_m, &g_m, err)) ||
	    (st = upload(ctx, 3, oshape, NULL, &b_y, &g_y, err)) ||
	    (st = ltx2_vocoder_forward(v, &g_m, &g_y, dump, err)))
		goto out;
	out = xmalloc(sizeof(float) * (size_t)gpu_tensor_numel(&g_y));
	if ((st = gpu_tensor_download_f32(ctx, &g_y, out, err)))
		goto out;
	st_writer_add(w, "waveform", ST_F32, 3, oshape, out);
	{
		size_t wb, cap, peak;

		ltx2_vocoder_memory(v, &wb, &cap, &peak);
		report_memory(report, "vocoder", wb, cap, peak,
		    gpu_buffer_size(b_m) + gpu_buffer_size(b_y));
	}
	if (report != NULL) {
		struct nn_weights_layout lay;
		struct nn_plan_bytes plan;

		if ((st = plan_weights(ctx, dir, 0, NULL, &lay, err)))
			goto out;
		ltx2_vocoder_plan(ltx2_vocoder_config(v), ltx2_vocoder_bwe_config(v),
		    &lay, gpu_ctx_caps(ctx), tm->shape, &plan);
		report_plan(report, ctx, "vocoder", &plan);
	}
out:
	gpu_buffer_free(b_m);
	gpu_buffer_free(b_y);
	ltx2_vocoder_free(v);
	free(mel);
	free(out);
	return st;
}

/* AutoencoderKLLTX2Audio.decode: z [B, latent_channels, L, M] -> sample
 * (the mel spectrogram [B, output_channels, 4L - 3, mel_bins]). */
static enum lq_status
run_audio_vae(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    struct lq_error *err)
{
	struct ltx2_audio_vae *v = NULL;
	const struct st_tensor *tz;
	float *z = NULL, *out = NULL;
	struct gpu_buffer *b_z = NULL, *b_y = NULL;
	struct gpu_tensor g_z, g_y;
	int64_t oshape[4];
	enum lq_status st;

	if ((st = input_f32(in, "z", 4, "audio latents [B, C, L, M]", &tz, &z,
	    err)) ||
	    (st = ltx2_audio_vae_load(ctx, dir, &v, err)))
		goto out;
	ltx2_audio_vae_output_shape(v, tz->shape, oshape);
	if ((st = upload(ctx, 4, tz->shape, z, &b_z, &g_z, err)) ||
	    (st = upload(ctx, 4, oshape, NULL, &b_y, &g_y, err)) ||
	    (st = ltx2_audio_vae_decode(v, &g_z, &g_y, dump, err)))
		goto out;
	out = xmalloc(sizeof(float) * (size_t)gpu_tensor_numel(&g_y));
	if ((st = gpu_tensor_download_f32(ctx, &g_y, out, err)))
		goto out;
	st_writer_add(w, "sample", ST_F32, 4, oshape, out);
	{
		size_t wb, cap, peak;

		ltx2_audio_vae_memory(v, &wb, &cap, &peak);
		report_memory(report, "audio vae decoder", wb, cap, peak,
		    gpu_buffer_size(b_z) + gpu_buffer_size(b_y));
	}
	if (report != NULL) {
		struct nn_weights_layout lay;
		struct nn_plan_bytes plan;

		if ((st = plan_weights(ctx, dir, 0, "decoder.", &lay, err)))
			goto out;
		ltx2_audio_vae_plan(ltx2_audio_vae_config(v), &lay, tz->shape,
		    &plan);
		report_plan(report, ctx, "audio vae decoder", &plan);
	}
out:
	gpu_buffer_free(b_z);
	gpu_buffer_free(b_y);
	ltx2_audio_vae_free(v);
	free(z);
	free(out);
	return st;
}

/* An integer input as int64 (I64 as stored, floats converted); caller
 * frees. */
static int64_t *
input_i64(const struct st_tensor *t)
{
	int64_t n = st_tensor_numel(t), *out = xmalloc(sizeof(*out) *
	    (size_t)(n ? n : 1));

	if (t->dtype == ST_I64) {
		memcpy(out, t->data, sizeof(*out) * (size_t)n);
	} else {
		float *f = st_tensor_to_f32(t);

		for (int64_t i = 0; i < n; i++)
			out[i] = (int64_t)f[i];
		free(f);
	}
	return out;
}

/* LTX2TextConnectors: text_encoder_hidden_states [B, T, C·L] (or
 * [B, T, C, L]), attention_mask [B, T] -> video_text_embedding,
 * audio_text_embedding [B, T, C], attention_mask_out [B, T] (I64). */
static enum lq_status
run_connectors(struct gpu_ctx *ctx, const char *dir, const struct inputs *in,
    struct st_writer *w, const struct nn_dump *dump, FILE *report,
    const struct ltx2_connectors_call *call, struct lq_error *err)
{
	struct ltx2_connectors *c = NULL;
	const struct ltx2_connectors_config *cfg;
	const struct st_tensor *th, *tm;
	float *hs = NULL, *mf = NULL, *ve = NULL, *ae = NULL;
	int64_t *mask = NULL, *mo = NULL, B, T, CL;
	struct ltx2_connectors_args a;
	struct ltx2_connectors_out o;
	enum lq_status st;

	if ((st = input_f32(in, "text_encoder_hidden_states", -1,
	    "[B, T, caption_channels * text_proj_in_factor]", &th, &hs, err)) ||
	    (st = input_f32(in, "attention_mask", 2, "[B, T] of 0/1", &tm,
	    &mf, err)) ||
	    (st = ltx2_connectors_load(ctx, dir, &c, err)))
		goto out;
	cfg = ltx2_connectors_config(c);
	CL = (int64_t)cfg->caption_channels * cfg->text_proj_in_factor;
	B = th->shape[0];
	T = th->ndim >= 2 ? th->shape[1] : 0;
	if (!((th->ndim == 3 && th->shape[2] == CL) || (th->ndim == 4 &&
	    th->shape[2] == cfg->caption_channels &&
	    th->shape[3] == cfg->text_proj_in_factor))) {
		st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "text_encoder_hidden_states must be [B, T, %lld] (caption_"
		    "channels %d x text_proj_in_factor %d, index c * L + l) or "
		    "[B, T, %d, %d]", (long long)CL, cfg->caption_channels,
		    cfg->text_proj_in_factor, cfg->caption_channels,
		    cfg->text_proj_in_factor);
		error_set_field(err, "text_encoder_hidden_states");
		goto out;
	}
	if (tm->shape[0] != B || tm->shape[1] != T) {
		st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "attention_mask is [%lld, %lld], expected [%lld, %lld]",
		    (long long)tm->shape[0], (long long)tm->shape[1],
		    (long long)B, (long long)T);
		error_set_field(err, "attention_mask");
		goto out;
	}
	/* 0/1 only (upstream computes (mask - 1)·finfo.max and sums it) */
	for (int64_t i = 0; i < B * T; i++) {
		if (mf[i] == 0.0f || mf[i] == 1.0f)
			continue;
		st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "attention_mask[%lld] is %g; it must hold 0 (padding) or 1 "
		    "(token)", (long long)i, mf[i]);
		error_set_field(err, "attention_mask");
		goto out;
	}
	mask = input_i64(tm);
	ve = xmalloc(sizeof(float) * (size_t)(B * T * cfg->caption_channels));
	ae = xmalloc(sizeof(float) * (size_t)(B * T * cfg->caption_channels));
	mo = xmalloc(sizeof(int64_t) * (size_t)(B * T));
	a.text_encoder_hidden_states = hs;
	a.attention_mask = mask;
	a.B = (int)B;
	a.T = (int)T;
	a.call = *call;
	o.video_text_embedding = ve;
	o.audio_text_embedding = ae;
	o.attention_mask_out = mo;
	if ((st = ltx2_connectors_forward(c, &a, &o, dump, err)))
		goto out;
	st_writer_add(w, "video_text_embedding", ST_F32, 3,
	    (int64_t[]){ B, T, cfg->caption_channels }, ve);
	st_writer_add(w, "audio_text_embedding", ST_F32, 3,
	    (int64_t[]){ B, T, cfg->caption_channels }, ae);
	st_writer_add(w, "attention_mask_out", ST_I64, 2,
	    (int64_t[]){ B, T }, mo);
	{
		size_t wb, cap, peak;

		ltx2_connectors_memory(c, &wb, &cap, &peak);
		report_memory(report, "connectors", wb, cap, peak, 0);
	}
	if (report != NULL) {
		struct nn_weights_layout lay;
		struct nn_plan_bytes plan;

		if ((st = plan_weights(ctx, dir, 0, NULL, &lay, err)))
			goto out;
		ltx2_connectors_plan(cfg, &lay, B, T, &plan);
		report_plan(report, ctx, "connectors", &plan);
	}
out:
	ltx2_connectors_free(c);
	free(hs);
	free(mf);
	free(ve);
	free(ae);
	free(mask);
	free(mo);
	return st;
}

enum lq_status
nn_forward_run(const struct nn_forward_opts *o, struct lq_error *err)
{
	struct inputs in = { NULL, 0 };
	struct gpu_ctx *ctx = NULL;
	struct gpu_ctx_opts copts;
	struct st_writer *w = st_writer_new();
	struct dump_sink sink = { w };
	struct nn_dump dump = { dump_to_writer, &sink };
	char *dir = component_dir(o->model, components[o->component].sub);
	enum lq_status st = LQ_OK;

	in.files = xcalloc((size_t)(o->ninputs ? o->ninputs : 1), sizeof(*in.files));
	for (int i = 0; i < o->ninputs; i++) {
		st = st_file_open(o->inputs[i], &in.files[i], err);
		if (st != LQ_OK)
			goto out;
		in.n++;
	}
	if ((st = inputs_nonempty(&in, err)) != LQ_OK)
		goto out;
	memset(&copts, 0, sizeof(copts));
	copts.device = o->device;
	st = gpu_ctx_create(&copts, &ctx, err);
	if (st != LQ_OK)
		goto out;
	switch (o->component) {
	case NN_COMPONENT_TRANSFORMER:
		if (config_is(dir, diffusers_is_ltx2_transformer)) {
			st = run_ltx2_transformer(ctx, dir, &in, w,
			    o->dump_intermediates ? &dump : NULL, o->report,
			    o->ltx2_call, o->precision, err);
			break;
		}
		if (config_is(dir, diffusers_is_wan_transformer) &&
		    o->ltx2_call == NULL) {
			st = run_wan_transformer(ctx, dir, &in, w,
			    o->dump_intermediates ? &dump : NULL, o->report,
			    o->weight_streaming, o->precision, err);
			break;
		}
		if (o->ltx2_call != NULL) {
			st = error_set(err, LQ_FAILED, "LQ-NN-INPUT", "--set %s: "
			    "%s's transformer takes no call arguments "
			    "(use_cross_timestep, isolate_modalities and "
			    "spatio_temporal_guidance_blocks are LTX-2's)",
			    o->ltx2_call_first,
			    config_is(dir, diffusers_is_wan_transformer) ? "Wan" :
			    "LTX-Video");
			error_set_field(err, "%s", o->ltx2_call_first);
			break;
		}
		st = run_transformer(ctx, dir, &in, w,
		    o->dump_intermediates ? &dump : NULL, o->report,
		    o->weight_streaming, o->precision, err);
		break;
	case NN_COMPONENT_VAE_DECODER:
		if (wan_vae_is_wan(dir)) {
			st = run_wan_vae(ctx, dir, &in, w,
			    o->dump_intermediates ? &dump : NULL, o->report,
			    o->vae_tiling, err);
			break;
		}
		st = run_vae(ctx, dir, &in, w,
		    o->dump_intermediates ? &dump : NULL, o->report,
		    o->noise_fallback, o->vae_tiling, err);
		break;
	case NN_COMPONENT_VAE_ENCODER:
		if (wan_vae_is_wan(dir)) {
			st = run_wan_vae_encoder(ctx, dir, &in, w,
			    o->dump_intermediates ? &dump : NULL, o->report,
			    o->vae_tiling, err);
			break;
		}
		st = run_vae_encoder(ctx, dir, &in, w,
		    o->dump_intermediates ? &dump : NULL, o->report, o->vae_tiling,
		    err);
		break;
	case NN_COMPONENT_LATENT_UPSAMPLER:
		st = run_upsampler(ctx, dir, &in, w,
		    o->dump_intermediates ? &dump : NULL, o->report, err);
		break;
	case NN_COMPONENT_CONNECTORS: {
		struct ltx2_connectors_call call;

		if (o->connectors_call)
			call = *o->connectors_call;
		else
			ltx2_connectors_call_init(&call);
		st = run_connectors(ctx, dir, &in, w,
		    o->dump_intermediates ? &dump : NULL, o->report, &call, err);
		break;
	}
	case NN_COMPONENT_AUDIO_VAE_DECODER:
		st = run_audio_vae(ctx, dir, &in, w,
		    o->dump_intermediates ? &dump : NULL, o->report, err);
		break;
	case NN_COMPONENT_VOCODER:
		st = run_vocoder(ctx, dir, &in, w,
		    o->dump_intermediates ? &dump : NULL, o->report, err);
		break;
	case NN_COMPONENT_TEXT_ENCODER:
		st = nn_forward_text_encoder(ctx, dir,
		    (const struct st_file *const *)in.files, in.n, w, err);
		break;
	}
	if (st == LQ_OK)
		st = st_writer_write(w, o->out, err);
out:
	st_writer_free(w);
	gpu_ctx_free(ctx);
	for (int i = 0; i < in.n; i++)
		st_file_close(in.files[i]);
	free(in.files);
	free(dir);
	return st;
}
