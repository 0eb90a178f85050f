/*
 * test-ltx2-pipe-passes.c — the LTX-2 DiT (nn/ltx2_transformer.h) called
 * as diffusers' LTX2Pipeline calls it (pipelines/ltx2/pipeline_ltx2.py at
 * 58eb52c), against every transformer pass the pipeline golden recorded
 * (tests/data/ltx2/pipeline/pipe, 3 steps): the CFG pass on
 * cat([latents] * 2) with the connectors' cat([negative, positive])
 * embeddings and returned mask, timestep = sigma = t_i expanded to 2B,
 * use_cross_timestep; the STG pass (positive half, blocks [1]); the
 * modality-isolation pass (positive half, isolate_modalities).  Each
 * output within its per-step suggested_atol of index.json.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/ltx2_transformer.h"
#include "test.h"

static struct st_file *
open_st(const char *rel)
{
	char *p = xasprintf("%s/tests/data/ltx2/%s", LQ_SRCDIR, rel);
	struct st_file *f;
	struct lq_error err;

	error_clear(&err);
	if (st_file_open(p, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(p);
	return f;
}

static float *
need(const struct st_file *f, const char *name)
{
	const struct st_tensor *t = st_file_find(f, name);

	if (t == NULL) {
		fprintf(stderr, "golden tensor %s missing\n", name);
		exit(99);
	}
	return st_tensor_to_f32(t);
}

/* suggested_atol of steps.safetensors' `key`[index] in index.json */
static double
atol_of(const cJSON *node, const char *key, int index)
{
	const cJSON *e;

	if (cJSON_IsObject(node)) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(node, "key");
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(node, "file");
		const cJSON *i = cJSON_GetObjectItemCaseSensitive(node, "index");
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(node,
		    "suggested_atol");

		if (cJSON_IsString(k) && strcmp(k->valuestring, key) == 0 &&
		    cJSON_IsString(f) && strcmp(f->valuestring,
		    "pipeline/pipe/steps.safetensors") == 0 && cJSON_IsNumber(i) &&
		    i->valueint == index && cJSON_IsNumber(a))
			return a->valuedouble;
	}
	cJSON_ArrayForEach(e, node) {
		double v = atol_of(e, key, index);

		if (v >= 0)
			return v;
	}
	return -1;
}

static double
max_abs(const float *a, const float *b, size_t n)
{
	double m = 0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]);

		if (!(d <= m))
			m = isnan(d) ? INFINITY : d;
	}
	return m;
}

enum { B = 2, N = 24, L = 9, T = 8, C = 8, CA = 8, CC = 32, STEPS = 3 };

int
main(void)
{
	struct gpu_ctx *ctx = NULL;
	struct ltx2_transformer *m = NULL;
	struct lq_error err;
	struct st_file *steps = open_st("pipeline/pipe/steps.safetensors");
	struct st_file *outs = open_st("pipeline/pipe/output.safetensors");
	char *ip = xasprintf("%s/tests/data/ltx2/index.json", LQ_SRCDIR);
	char *dir = xasprintf("%s/tests/data/ltx2/transformer/model/transformer",
	    LQ_SRCDIR);
	size_t jn;
	char *jt = util_read_file(ip, &jn);
	cJSON *index = jt ? json_parse_document(jt, jn) : NULL;
	float *vlat = need(steps, "video_latents_before_step");
	float *alat = need(steps, "audio_latents_before_step");
	float *ts = need(steps, "timesteps");
	float *ehs = need(outs, "connector_prompt_embeds");
	float *aehs = need(outs, "connector_audio_prompt_embeds");
	float *mask = need(outs, "connector_attention_mask");
	static const char *const pass[3] = { "cfg", "stg", "modality" };
	float *gold[3][2];

	if (index == NULL) {
		fprintf(stderr, "%s: unreadable\n", ip);
		return 99;
	}
	for (int p = 0; p < 3; p++)
		for (int s = 0; s < 2; s++) {
			char *k = xasprintf("transformer_%s_%s_output", pass[p],
			    s ? "audio" : "video");

			gold[p][s] = need(steps, k);
			free(k);
		}
	error_clear(&err);
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK ||
	    ltx2_transformer_load(ctx, dir, &m, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	for (int i = 0; i < STEPS; i++) {
		const float *v = vlat + (size_t)i * B * N * C;
		const float *au = alat + (size_t)i * B * L * CA;
		float hs[2 * B * N * C], ahs[2 * B * L * CA], t[2 * B];
		float out[2 * B * N * C], aout[2 * B * L * CA];

		/* cat([latents] * 2) */
		memcpy(hs, v, sizeof(float) * B * N * C);
		memcpy(hs + B * N * C, v, sizeof(float) * B * N * C);
		memcpy(ahs, au, sizeof(float) * B * L * CA);
		memcpy(ahs + B * L * CA, au, sizeof(float) * B * L * CA);
		for (int b = 0; b < 2 * B; b++)
			t[b] = ts[i];
		for (int p = 0; p < 3; p++) {
			int rows = p == 0 ? 2 * B : B, off = p == 0 ? 0 : B;
			struct ltx2_transformer_args a = {
				.hidden_states = hs,
				.audio_hidden_states = ahs,
				/* the positive half: rows B.. of cat([neg, pos]) */
				.encoder_hidden_states = ehs + (size_t)off * T * CC,
				.audio_encoder_hidden_states = aehs +
				    (size_t)off * T * CC,
				.timestep = t,
				.sigma = t,
				.encoder_attention_mask = mask + (size_t)off * T,
				.audio_encoder_attention_mask = mask + (size_t)off * T,
				.B = rows, .N = N, .L = L, .T = T, .Ta = T,
				.num_frames = 3, .height = 2, .width = 4,
				.fps = 24.0, .audio_num_frames = L,
			};
			struct ltx2_transformer_out o = { out, aout };
			size_t gv = (size_t)i * rows * N * C;
			size_t ga = (size_t)i * rows * L * CA;
			double tv, ta, dv, da;
			char *kv, *ka;

			ltx2_transformer_call_init(&a.call);
			a.call.use_cross_timestep = 1;
			if (p == 1) {
				a.call.n_stg = 1;
				a.call.stg_blocks[0] = 1;
			}
			a.call.isolate_modalities = p == 2;
			if (ltx2_transformer_forward(m, &a, &o, NULL, &err) !=
			    LQ_OK) {
				error_print(&err, stderr);
				return 99;
			}
			kv = xasprintf("transformer_%s_video_output", pass[p]);
			ka = xasprintf("transformer_%s_audio_output", pass[p]);
			tv = atol_of(index, kv, i);
			ta = atol_of(index, ka, i);
			CHECK(tv > 0 && ta > 0);
			dv = max_abs(out, gold[p][0] + gv, (size_t)rows * N * C);
			da = max_abs(aout, gold[p][1] + ga, (size_t)rows * L * CA);
			printf("step %d %-8s video max abs %.3g (atol %g), audio "
			    "%.3g (atol %g)\n", i, pass[p], dv, tv, da, ta);
			CHECK(dv <= tv);
			CHECK(da <= ta);
			free(kv);
			free(ka);
		}
	}
	ltx2_transformer_free(m);
	gpu_ctx_free(ctx);
	for (int p = 0; p < 3; p++)
		for (int s = 0; s < 2; s++)
			free(gold[p][s]);
	free(vlat);
	free(alat);
	free(ts);
	free(ehs);
	free(aehs);
	free(mask);
	cJSON_Delete(index);
	free(jt);
	free(ip);
	free(dir);
	st_file_close(steps);
	st_file_close(outs);
	return test_summary();
}
