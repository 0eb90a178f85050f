/*
 * test-ltxv-predecode.c — the pipeline's pre-decode step (latents
 * denormalisation with the VAE's latents_mean / latents_std, and the
 * timestep-conditioned noise mix) against the goldens' decode inputs:
 * latents_normalized -> latents_denormalized -> z.
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/safetensors.h"
#include "nn/ltxv_vae.h"
#include "test.h"

static struct st_file *
open_or_die(const char *rel)
{
	char *p = xasprintf("%s/tests/data/ltxv/%s", LQ_SRCDIR, rel);
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
get(const struct st_file *f, const char *name, int64_t *n)
{
	const struct st_tensor *t = st_file_find(f, name);

	if (t == NULL) {
		fprintf(stderr, "missing %s\n", name);
		exit(99);
	}
	if (n)
		*n = st_tensor_numel(t);
	return st_tensor_to_f32(t);
}

static double
maxdiff(const float *a, const float *b, int64_t n)
{
	double m = 0;

	for (int64_t i = 0; i < n; i++)
		if (!(fabs((double)a[i] - b[i]) <= m))
			m = fabs((double)a[i] - b[i]);
	return m;
}

static void
variant(const char *v, int tc)
{
	char *pi = xasprintf("vae/%s/decode.inputs.safetensors", v);
	char *pm = xasprintf("vae/%s/model/vae/diffusion_pytorch_model.safetensors", v);
	struct st_file *fi = open_or_die(pi), *fm = open_or_die(pm);
	const struct st_tensor *tn = st_file_find(fi, "latents_normalized");
	int64_t n, nc, B = tn->shape[0], C = tn->shape[1];
	float *x = get(fi, "latents_normalized", &n);
	float *want = get(fi, "latents_denormalized", NULL);
	float *mean = get(fm, "latents_mean", &nc), *std = get(fm, "latents_std", NULL);
	float *out = xmalloc(sizeof(float) * (size_t)n);
	double m;

	CHECK_INT(nc, C);
	ltxv_latents_denormalize(x, mean, std, 1.0, B, C, n / (B * C), out);
	m = maxdiff(out, want, n);
	printf("%s latents_denormalized: max abs %.3g\n", v, m);
	CHECK_NEAR(m, 0, 1e-6);
	if (tc) {
		float *noise = get(fi, "decode_noise", NULL);
		float *s = get(fi, "decode_noise_scale", NULL);
		float *z = get(fi, "z", NULL);

		ltxv_latents_mix_noise(want, noise, s, B, n / B, out);
		m = maxdiff(out, z, n);
		printf("%s z (noise mix): max abs %.3g\n", v, m);
		CHECK_NEAR(m, 0, 1e-6);
		free(noise);
		free(s);
		free(z);
	} else {
		float *z = get(fi, "z", NULL);

		CHECK(maxdiff(want, z, n) == 0);
		free(z);
	}
	free(x);
	free(want);
	free(mean);
	free(std);
	free(out);
	st_file_close(fi);
	st_file_close(fm);
	free(pi);
	free(pm);
}

int
main(void)
{
	variant("vae090", 0);
	variant("vae091", 1);
	variant("vae_causal", 0);
	return test_summary();
}
