/*
 * ltx2-loop.c — LTX2Pipeline's denoising loop on the host, from the
 * transformer outputs a golden recorded, for tests/sampler/ltx2-loop.sh:
 *
 *   ltx2-loop DATA_DIR VARIANT OUT
 *
 * DATA_DIR is tests/data/ltx2 (index.json, pipeline/VARIANT/...).  The
 * pipeline arguments, grid and audio length come from index.json
 * (cases.pipeline.variants.VARIANT); the schedule from its
 * scheduler_config.json.  Checks here (exit 1 with a message): the
 * schedule (sigmas, timesteps, mu) equals the golden's bitwise, the audio
 * length rule gives the golden's audio_num_frames, and the packed initial
 * noise equals the latents entering step 0 bitwise.  Then each step runs
 * scheduler_apply_guidance_x0 for both streams on latentq's own latents
 * (with the golden's recorded transformer passes) and the Euler step, and
 * OUT gets video_/audio_latents_before_step, _velocity_guided,
 * _latents_after_step [steps, B, N, C] and audio_decoder_input_z (the last
 * audio latents denormalised with the audio VAE's buffers and unpacked)
 * for st-compare against the goldens' tolerances.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/json.h"
#include "core/util.h"
#include "model/safetensors.h"
#include "sampler/latents.h"
#include "sampler/scheduler.h"

static struct lq_error err;

static void
die(const char *what)
{
	fprintf(stderr, "ltx2-loop: %s\n", what);
	if (err.message[0] != '\0')
		error_print(&err, stderr);
	exit(1);
}

static struct st_file *
open_st(const char *dir, const char *rel)
{
	struct st_file *f;
	char *p = xasprintf("%s/%s", dir, rel);
	if (st_file_open(p, &f, &err) != LQ_OK)
		die(p);
	free(p);
	return f;
}

/* An F32 tensor of f as floats (caller frees); *n its count. */
static float *
get(const struct st_file *f, const char *name, size_t *n)
{
	const struct st_tensor *t = st_file_find(f, name);
	if (t == NULL)
		die(name);
	float *v = st_tensor_to_f32(t);
	if (n != NULL)
		*n = (size_t)st_tensor_numel(t);
	return v;
}

static double
num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v))
		die(key);
	return v->valuedouble;
}

/* Audio scales fall back to the video ones when falsy (0 or null), as
 * LTX2Pipeline.__call__ does with `audio_x = audio_x or x`. */
static double
audio_num(const cJSON *o, const char *key, const char *video_key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (cJSON_IsNumber(v) && v->valuedouble != 0.0)
		return v->valuedouble;
	return num(o, video_key);
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: ltx2-loop DATA_DIR VARIANT OUT\n");
		return 2;
	}
	const char *dir = argv[1], *variant = argv[2], *out = argv[3];
	error_clear(&err);
	char *ip = xasprintf("%s/index.json", dir);
	size_t len = 0;
	char *text = util_read_file(ip, &len);
	if (text == NULL)
		die(ip);
	cJSON *index = json_parse_document(text, len);
	if (index == NULL)
		die("index.json does not parse");
	const cJSON *var = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(index, "cases"), "pipeline"),
	    "variants"), variant);
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(var,
	    "pipeline_args");
	const cJSON *grid = cJSON_GetObjectItemCaseSensitive(var,
	    "latent_grid_F_H_W");
	if (args == NULL || cJSON_GetArraySize(grid) != 3)
		die("no such pipeline variant in index.json");
	int64_t F = (int64_t)cJSON_GetArrayItem(grid, 0)->valuedouble;
	int64_t H = (int64_t)cJSON_GetArrayItem(grid, 1)->valuedouble;
	int64_t W = (int64_t)cJSON_GetArrayItem(grid, 2)->valuedouble;
	int steps = (int)num(args, "num_inference_steps");

	/* the schedule: LTX-Video's, with mu from the video token count */
	struct scheduler_config sc;
	struct scheduler_schedule sched;
	char *scp = xasprintf("%s/%s", dir, json_get_string(var,
	    "scheduler_config", ""));
	if (scheduler_config_load(scp, &sc, &err) != LQ_OK ||
	    scheduler_set_timesteps(&sc, steps, F * H * W, &sched, &err) !=
	    LQ_OK)
		die("schedule");
	if (sched.mu != num(var, "mu"))
		die("mu differs from the golden's");
	const cJSON *gs = cJSON_GetObjectItemCaseSensitive(var, "sigmas");
	const cJSON *gt = cJSON_GetObjectItemCaseSensitive(var, "timesteps");
	for (int i = 0; i <= steps; i++)
		if (sched.sigmas[i] != (float)cJSON_GetArrayItem(gs, i)->valuedouble ||
		    (i < steps && sched.timesteps[i] !=
		    (float)cJSON_GetArrayItem(gt, i)->valuedouble))
			die("the schedule differs from the golden's");

	/* the audio VAE: length rule and the (de)normalisation buffers */
	char *avp = xasprintf("%s/%s/config.json", dir, json_get_string(var,
	    "audio_vae_dir", ""));
	char *avt = util_read_file(avp, &len);
	cJSON *avc = avt ? json_parse_document(avt, len) : NULL;
	if (avc == NULL)
		die(avp);
	int64_t L = latents_audio_num_frames((int)num(args, "num_frames"),
	    num(args, "frame_rate"), (int)num(avc, "sample_rate"),
	    (int)num(avc, "mel_hop_length"), 4);
	if (L != (int64_t)num(var, "audio_num_frames"))
		die("audio_num_frames differs from the golden's");

	struct st_file *in = open_st(dir, "pipeline/pipe/inputs.safetensors");
	struct st_file *st = open_st(dir, "pipeline/pipe/steps.safetensors");
	char *avw = xasprintf("%s/diffusion_pytorch_model.safetensors",
	    json_get_string(var, "audio_vae_dir", ""));
	struct st_file *av = open_st(dir, avw);
	if (strcmp(variant, "pipe") != 0)
		die("only variant pipe's files are kept in tests/data");

	/* initial latents: the recorded draws, packed */
	const struct st_tensor *vn = st_file_find(in, "video_latents_noise");
	const struct st_tensor *an = st_file_find(in, "audio_latents_noise");
	if (vn == NULL || an == NULL || vn->ndim != 5 || an->ndim != 4)
		die("initial noise");
	int64_t B = vn->shape[0], C = vn->shape[1];
	int64_t AC = an->shape[1], M = an->shape[3];
	if (an->shape[2] != L || vn->shape[2] != F)
		die("noise shapes");
	struct latents_shape vs = { B, C, F, H, W, 1, 1 };
	size_t nv = (size_t)(B * C * F * H * W), na = (size_t)(B * AC * L * M);
	float *x = xmalloc(nv * sizeof(float)), *a = xmalloc(na * sizeof(float));
	float *tmp = get(in, "video_latents_noise", NULL);
	latents_pack(&vs, tmp, x);
	free(tmp);
	tmp = get(in, "audio_latents_noise", NULL);
	latents_pack_audio(tmp, B, AC, L, M, a);
	free(tmp);
	float *vb0 = get(st, "video_latents_before_step", NULL);
	float *ab0 = get(st, "audio_latents_before_step", NULL);
	if (memcmp(vb0, x, nv * sizeof(float)) != 0 ||
	    memcmp(ab0, a, na * sizeof(float)) != 0)
		die("packed noise differs from the latents entering step 0");
	free(vb0);
	free(ab0);

	struct scheduler_guidance_x0 gv = {
		num(args, "guidance_scale"), num(args, "stg_scale"),
		num(args, "modality_scale"), num(args, "guidance_rescale"),
	};
	struct scheduler_guidance_x0 ga = {
		audio_num(args, "audio_guidance_scale", "guidance_scale"),
		audio_num(args, "audio_stg_scale", "stg_scale"),
		audio_num(args, "audio_modality_scale", "modality_scale"),
		audio_num(args, "audio_guidance_rescale", "guidance_rescale"),
	};
	int cfg = gv.guidance_scale > 1.0 || ga.guidance_scale > 1.0;
	int stg = gv.stg_scale > 0.0 || ga.stg_scale > 0.0;
	int iso = gv.modality_scale > 1.0 || ga.modality_scale > 1.0;
	if (!cfg || !stg || !iso)
		die("this tool expects a golden with all three passes");

	float *cv = get(st, "transformer_cfg_video_output", NULL);
	float *ca = get(st, "transformer_cfg_audio_output", NULL);
	float *sv = get(st, "transformer_stg_video_output", NULL);
	float *sa = get(st, "transformer_stg_audio_output", NULL);
	float *mv = get(st, "transformer_modality_video_output", NULL);
	float *ma = get(st, "transformer_modality_audio_output", NULL);
	float *vbs = xmalloc(steps * nv * sizeof(float));
	float *vgs = xmalloc(steps * nv * sizeof(float));
	float *vas = xmalloc(steps * nv * sizeof(float));
	float *abs_ = xmalloc(steps * na * sizeof(float));
	float *ags = xmalloc(steps * na * sizeof(float));
	float *aas = xmalloc(steps * na * sizeof(float));
	size_t pv = nv / (size_t)B, pa = na / (size_t)B;
	for (int i = 0; i < steps; i++) {
		float sg = sched.sigmas[i], sn = sched.sigmas[i + 1];
		memcpy(vbs + i * nv, x, nv * sizeof(float));
		memcpy(abs_ + i * na, a, na * sizeof(float));
		scheduler_apply_guidance_x0(vgs + i * nv, x, (size_t)B, pv, sg,
		    cv + 2 * i * nv, 1, sv + i * nv, mv + i * nv, &gv);
		scheduler_apply_guidance_x0(ags + i * na, a, (size_t)B, pa, sg,
		    ca + 2 * i * na, 1, sa + i * na, ma + i * na, &ga);
		scheduler_step_euler(x, vgs + i * nv, nv, sg, sn);
		scheduler_step_euler(a, ags + i * na, na, sg, sn);
		memcpy(vas + i * nv, x, nv * sizeof(float));
		memcpy(aas + i * na, a, na * sizeof(float));
	}

	/* the audio decoder's input: denormalise packed, then unpack */
	size_t nm = 0, ns = 0;
	float *mean = get(av, "latents_mean", &nm);
	float *std = get(av, "latents_std", &ns);
	if ((int64_t)nm != AC * M || (int64_t)ns != AC * M)
		die("audio VAE latents_mean/std are not C*M long");
	latents_denormalize_audio(a, B * L, AC * M, mean, std);
	float *z = xmalloc(na * sizeof(float));
	latents_unpack_audio(a, B, AC, L, M, z);

	struct st_writer *w = st_writer_new();
	int64_t shv[4] = { steps, B, F * H * W, C };
	int64_t sha[4] = { steps, B, L, AC * M };
	int64_t shz[4] = { B, AC, L, M };
	st_writer_add(w, "video_latents_before_step", ST_F32, 4, shv, vbs);
	st_writer_add(w, "video_velocity_guided", ST_F32, 4, shv, vgs);
	st_writer_add(w, "video_latents_after_step", ST_F32, 4, shv, vas);
	st_writer_add(w, "audio_latents_before_step", ST_F32, 4, sha, abs_);
	st_writer_add(w, "audio_velocity_guided", ST_F32, 4, sha, ags);
	st_writer_add(w, "audio_latents_after_step", ST_F32, 4, sha, aas);
	st_writer_add(w, "audio_decoder_input_z", ST_F32, 4, shz, z);
	if (st_writer_write(w, out, &err) != LQ_OK)
		die(out);
	st_writer_free(w);
	printf("ltx2-loop: %d steps, video [%lld, %lld, %lld], audio "
	    "[%lld, %lld, %lld]\n", steps, (long long)B,
	    (long long)(F * H * W), (long long)C, (long long)B, (long long)L,
	    (long long)(AC * M));
	float *bufs[] = { x, a, cv, ca, sv, sa, mv, ma, vbs, vgs, vas, abs_,
	    ags, aas, mean, std, z };
	for (size_t i = 0; i < LQ_ARRAY_LEN(bufs); i++)
		free(bufs[i]);
	st_file_close(in);
	st_file_close(st);
	st_file_close(av);
	scheduler_schedule_free(&sched);
	cJSON_Delete(avc);
	cJSON_Delete(index);
	free(avt);
	free(text);
	free(avw);
	free(avp);
	free(scp);
	free(ip);
	return 0;
}
