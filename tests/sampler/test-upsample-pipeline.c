/*
 * test-upsample-pipeline.c — LTXLatentUpsamplePipeline's host steps
 * (sampler/latents.h) against the upstream goldens of tests/data/ltxv-extra
 * (case upsampler/pipeline): latents -> denormalise -> [upsampler] ->
 * AdaIN against the input -> tone map -> normalise, each step from the
 * golden's own input to it, within index.json's suggested_atol.  The
 * upsampler model itself is tests/nn/forward-upsampler.sh's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "model/safetensors.h"
#include "sampler/latents.h"
#include "test.h"

#define DATA LQ_SRCDIR "/tests/data/ltxv-extra"

static cJSON *index_root;

static struct st_file *
open_or_die(const char *rel)
{
	char *p = xasprintf("%s/%s", DATA, rel);
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
get(const struct st_file *f, const char *name, const struct st_tensor **tp)
{
	const struct st_tensor *t = st_file_find(f, name);

	if (t == NULL) {
		fprintf(stderr, "missing %s\n", name);
		exit(99);
	}
	if (tp)
		*tp = t;
	return st_tensor_to_f32(t);
}

/* suggested_atol of (file, key) anywhere in index.json; exits when absent
 * (a check without its tolerance is no check). */
static double
find_atol(const cJSON *j, const char *file, const char *key)
{
	const cJSON *e;

	if (cJSON_IsObject(j)) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "file");
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "key");
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "suggested_atol");

		if (cJSON_IsString(f) && cJSON_IsString(k) && cJSON_IsNumber(a) &&
		    strcmp(f->valuestring, file) == 0 &&
		    strcmp(k->valuestring, key) == 0)
			return a->valuedouble;
	}
	if (cJSON_IsObject(j) || cJSON_IsArray(j))
		cJSON_ArrayForEach(e, j) {
			double v = find_atol(e, file, key);

			if (v >= 0)
				return v;
		}
	return -1;
}

static void
compare(const char *run, const char *key, const float *mine,
    const float *gold, int64_t n)
{
	char *file = xasprintf("upsampler/pipeline/%s/output.safetensors", run);
	double atol = find_atol(index_root, file, key), m = 0;

	if (atol < 0) {
		fprintf(stderr, "index.json has no suggested_atol for %s %s\n",
		    file, key);
		exit(99);
	}
	for (int64_t i = 0; i < n; i++)
		if (!(fabs((double)mine[i] - gold[i]) <= m))
			m = fabs((double)mine[i] - gold[i]);
	printf("%-22s %-16s max abs %.3g (atol %g)\n", run, key, m, atol);
	CHECK_NEAR(m, 0, atol);
	free(file);
}

/* One pipeline run: adain / tone are its arguments. */
static void
run(const char *name, double adain, double tone, int latent_out)
{
	char *pi = xasprintf("upsampler/pipeline/%s/inputs.safetensors", name);
	char *po = xasprintf("upsampler/pipeline/%s/output.safetensors", name);
	struct st_file *fi = open_or_die(pi), *fo = open_or_die(po);
	struct st_file *fv = open_or_die("models/vae091/diffusion_pytorch_model.safetensors");
	const struct st_tensor *tl, *tu;
	float *lat = get(fi, "latents", &tl);
	float *uin = get(fo, "upsampler_input", NULL);
	float *uout = get(fo, "upsampler_output", &tu);
	float *mean = get(fv, "latents_mean", NULL), *std = get(fv, "latents_std", NULL);
	struct latents_shape in = { tl->shape[0], tl->shape[1], tl->shape[2],
	    tl->shape[3], tl->shape[4], 1, 1 };
	struct latents_shape up = { tu->shape[0], tu->shape[1], tu->shape[2],
	    tu->shape[3], tu->shape[4], 1, 1 };
	int64_t n_in = (int64_t)latents_numel(&in), n_up = (int64_t)latents_numel(&up);
	int64_t per_in = n_in / (in.batch * in.channels);
	int64_t per_up = n_up / (up.batch * up.channels);
	float *x = xmalloc(sizeof(float) * (size_t)n_up);
	const float *stage = uout;	/* the golden entering the next step */

	/* latents * latents_std / scaling_factor + latents_mean (vae091: 1.0) */
	memcpy(x, lat, sizeof(float) * (size_t)n_in);
	latents_denormalize(&in, x, mean, std, 1.0);
	compare(name, "upsampler_input", x, uin, n_in);
	if (adain > 0) {
		float *want = get(fo, "adain_out", NULL);

		memcpy(x, uout, sizeof(float) * (size_t)n_up);
		latents_adain_filter(x, uin, up.batch, up.channels, per_up, per_in,
		    adain);
		compare(name, "adain_out", x, want, n_up);
		stage = want;
	}
	if (tone > 0) {
		float *want = get(fo, "tone_out", NULL);

		memcpy(x, stage, sizeof(float) * (size_t)n_up);
		latents_tone_map(x, (size_t)n_up, tone);
		compare(name, "tone_out", x, want, n_up);
		stage = want;
	}
	if (latent_out) {
		float *want = get(fo, "output_latents", NULL);

		memcpy(x, stage, sizeof(float) * (size_t)n_up);
		latents_normalize(&up, x, mean, std, 1.0);
		compare(name, "output_latents", x, want, n_up);
		free(want);
	}
	if (stage != uout)
		free((float *)stage);
	free(x);
	free(lat);
	free(uin);
	free(uout);
	free(mean);
	free(std);
	st_file_close(fi);
	st_file_close(fo);
	st_file_close(fv);
	free(pi);
	free(po);
}

int
main(void)
{
	char *p = xasprintf("%s/index.json", DATA);
	size_t n;
	char *text = util_read_file(p, &n);

	if (text == NULL) {
		fprintf(stderr, "cannot read %s\n", p);
		return 99;
	}
	index_root = cJSON_Parse(text);
	free(text);
	free(p);
	run("plain_latent", 0.0, 0.0, 1);
	run("adain1_tone06_latent", 1.0, 0.6, 1);
	run("adain05_np", 0.5, 0.0, 0);
	/* tone mapping with compression 0 and AdaIN with factor 0 change
	 * nothing (upstream skips them; latentq's functions agree) */
	{
		float v[3] = { -2.5f, 0.25f, 3.0f }, w[3];

		memcpy(w, v, sizeof(v));
		latents_tone_map(w, 3, 0.0);
		CHECK(memcmp(v, w, sizeof(v)) == 0);
	}
	cJSON_Delete(index_root);
	return test_summary();
}
