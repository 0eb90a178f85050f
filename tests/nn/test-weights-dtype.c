/*
 * test-weights-dtype.c — F16 and BF16 weight files load and compute as
 * stored.  For each dtype the golden model's weights are written twice:
 * in that dtype, and as F32 holding the same (rounded) values.  Both run
 * through nn_forward_run (the code `latentq forward` runs) and must agree
 * to float32 accumulation noise, which shows the shaders decode the 16-bit
 * weights exactly; the 16-bit run is also compared with the float32 golden
 * with a bound that only catches gross errors (weights lose precision).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/half.h"
#include "core/util.h"
#include "model/safetensors.h"
#include "nn/forward.h"
#include "test.h"

static char tmp[] = "/tmp/latentq-dtype.XXXXXX";

static float
round_to(float f, enum st_dtype dt)
{
	return dt == ST_F16 ? half_f16_to_f32(half_f32_to_f16(f)) :
	    half_bf16_to_f32(half_f32_to_bf16(f));
}

/* Writes `dst`/config.json and the weights of `src` in `dt` (or as F32
 * rounded through dt when as_f32). */
static void
write_model(const char *src, const char *dst, enum st_dtype dt, int as_f32)
{
	char *in = xasprintf("%s/diffusion_pytorch_model.safetensors", src);
	char *out = xasprintf("%s/diffusion_pytorch_model.safetensors", dst);
	char *cin = xasprintf("%s/config.json", src);
	char *cout = xasprintf("%s/config.json", dst);
	struct st_file *f;
	struct st_writer *w = st_writer_new();
	struct lq_error err;
	size_t n;
	char *cfg;
	FILE *fp;

	error_clear(&err);
	mkdir(dst, 0755);
	if (st_file_open(in, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	for (size_t i = 0; i < st_file_count(f); i++) {
		const struct st_tensor *t = st_file_tensor(f, i);
		float *v = st_tensor_to_f32(t);
		int64_t numel = st_tensor_numel(t);

		for (int64_t j = 0; j < numel; j++)
			v[j] = round_to(v[j], dt);
		st_writer_add_f32(w, t->name, as_f32 ? ST_F32 : dt, t->ndim,
		    t->shape, v);
		free(v);
	}
	if (st_writer_write(w, out, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	st_writer_free(w);
	st_file_close(f);
	cfg = util_read_file(cin, &n);
	fp = fopen(cout, "w");
	if (cfg == NULL || fp == NULL || fwrite(cfg, 1, n, fp) != n)
		exit(99);
	fclose(fp);
	free(cfg);
	free(in);
	free(out);
	free(cin);
	free(cout);
}

static float *
read_out(const char *path, const char *key, int64_t *n)
{
	struct st_file *f;
	struct lq_error err;
	const struct st_tensor *t;
	float *v;

	error_clear(&err);
	if (st_file_open(path, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	t = st_file_find(f, key);
	if (t == NULL)
		exit(99);
	*n = st_tensor_numel(t);
	v = st_tensor_to_f32(t);
	st_file_close(f);
	return v;
}

static void
compare(const char *what, const float *a, const float *b, int64_t n,
    double tol_rel)
{
	double m = 0, g = 0;

	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);

		if (!(d <= m))
			m = d;
		if (fabs(b[i]) > g)
			g = fabs(b[i]);
	}
	printf("%-40s max abs %.3g  max rel %.3g\n", what, m, m / g);
	CHECK(m <= tol_rel * g);
}

static void
run(enum nn_component comp, const char *sub, const char *model_src,
    const char *inputs, const char *golden, const char *key, enum st_dtype dt)
{
	const char *dtn = st_dtype_name(dt);
	char *root16 = xasprintf("%s/%s-%s", tmp, sub, dtn);
	char *root32 = xasprintf("%s/%s-%s-f32", tmp, sub, dtn);
	char *d16 = xasprintf("%s/%s", root16, sub);
	char *d32 = xasprintf("%s/%s", root32, sub);
	char *o16 = xasprintf("%s.out.safetensors", root16);
	char *o32 = xasprintf("%s.out.safetensors", root32);
	const char *in[1] = { inputs };
	struct nn_forward_opts fo = { 0 };
	struct lq_error err;
	float *a, *b, *g;
	int64_t na, nb, ng;
	char what[96];

	mkdir(root16, 0755);
	mkdir(root32, 0755);
	write_model(model_src, d16, dt, 0);
	write_model(model_src, d32, dt, 1);
	fo.component = comp;
	fo.inputs = in;
	fo.ninputs = 1;
	error_clear(&err);
	fo.model = root16;	/* pipeline-style folder: uses <root>/<sub> */
	fo.out = o16;
	CHECK_INT(nn_forward_run(&fo, &err), LQ_OK);
	fo.model = d32;		/* component folder */
	fo.out = o32;
	CHECK_INT(nn_forward_run(&fo, &err), LQ_OK);
	if (err.status != LQ_OK) {
		error_print(&err, stderr);
		exit(1);
	}
	a = read_out(o16, key, &na);
	b = read_out(o32, key, &nb);
	g = read_out(golden, key, &ng);
	CHECK_INT(na, nb);
	CHECK_INT(na, ng);
	snprintf(what, sizeof(what), "%s %s vs F32 of the same values", sub, dtn);
	compare(what, a, b, na, 1e-5);
	snprintf(what, sizeof(what), "%s %s vs float32 golden", sub, dtn);
	compare(what, a, g, na, dt == ST_BF16 ? 0.03 : 0.005);
	free(a);
	free(b);
	free(g);
	free(root16);
	free(root32);
	free(d16);
	free(d32);
	free(o16);
	free(o32);
}

int
main(void)
{
	const char *D = LQ_SRCDIR "/tests/data/ltxv";
	char *tm = xasprintf("%s/transformer/model/transformer", D);
	char *ti = xasprintf("%s/transformer/gridA.inputs.safetensors", D);
	char *to = xasprintf("%s/transformer/gridA.output.safetensors", D);
	char *vm = xasprintf("%s/vae/vae_causal/model/vae", D);
	char *vi = xasprintf("%s/vae/vae_causal/decode.inputs.safetensors", D);
	char *vo = xasprintf("%s/vae/vae_causal/decode.output.safetensors", D);
	int rc;

	if (mkdtemp(tmp) == NULL)
		return 99;
	run(NN_COMPONENT_TRANSFORMER, "transformer", tm, ti, to, "output", ST_F16);
	run(NN_COMPONENT_TRANSFORMER, "transformer", tm, ti, to, "output", ST_BF16);
	run(NN_COMPONENT_VAE_DECODER, "vae", vm, vi, vo, "sample", ST_BF16);
	rc = test_summary();
	{
		char *cmd = xasprintf("rm -rf '%s'", tmp);

		if (system(cmd) != 0)
			rc = rc ? rc : 1;
		free(cmd);
	}
	free(tm);
	free(ti);
	free(to);
	free(vm);
	free(vi);
	free(vo);
	return rc;
}
