/*
 * test-ops.c — every kernel of gpu/ops.h against a double-precision CPU
 * reference (ref.h) on random shapes, including odd sizes that are not
 * multiples of any tile; prints the max abs / rel error of each case
 * against its stated tolerance |gpu - ref| <= atol + rtol·|ref|.  Also:
 * determinism (three runs bitwise equal), shape errors, range errors.
 * Exits 77 without a Vulkan device.  Run with LATENTQ_VALIDATE=1 by
 * validate.sh, which also requires zero validation messages.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/log.h"
#include "gpu/gpu.h"
#include "gpu/ops.h"
#include "tests/gpu/ref.h"
#include "tests/test.h"

static struct gpu_ctx *ctx;
static struct gpu_cmd *cmd;
static struct gpu_pool *pool;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float
frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static float *
rnd(size_t n, float scale)
{
	float *p = malloc(n * sizeof(float) + 4);
	for (size_t i = 0; i < n; i++)
		p[i] = frand() * scale;
	return p;
}

static struct gpu_tensor
T(enum gpu_dtype dt, int nd, const int64_t *shape)
{
	struct gpu_tensor t;
	struct lq_error err;
	error_clear(&err);
	if (gpu_pool_tensor(pool, dt, nd, shape, &t, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	return t;
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})

/* Uploads host floats into t (rounding them in place to t's dtype so the
 * reference sees exactly what the GPU sees). */
static void
up(const struct gpu_tensor *t, float *h)
{
	struct lq_error err;
	error_clear(&err);
	size_t n = (size_t)gpu_tensor_numel(t);
	for (size_t i = 0; i < n; i++) {
		if (t->dtype == GPU_F16)
			h[i] = half_f16_to_f32(half_f32_to_f16(h[i]));
		else if (t->dtype == GPU_BF16)
			h[i] = half_bf16_to_f32(half_f32_to_bf16(h[i]));
	}
	if (gpu_tensor_upload_f32(ctx, t, h, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
}

static float *
down(const struct gpu_tensor *t)
{
	struct lq_error err;
	error_clear(&err);
	float *h = malloc((size_t)gpu_tensor_numel(t) * sizeof(float) + 4);
	if (gpu_tensor_download_f32(ctx, t, h, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	return h;
}

static void
run(void)
{
	struct lq_error err;
	error_clear(&err);
	enum lq_status st = gpu_cmd_submit(cmd, &err);
	if (st != LQ_OK)
		error_print(&err, stderr);
	CHECK_INT(st, LQ_OK);
}

static void
compare(const char *name, const struct gpu_tensor *t, const double *want,
    double atol, double rtol)
{
	float *got = down(t);
	size_t n = (size_t)gpu_tensor_numel(t);
	double maxabs = 0, maxrel = 0;
	size_t bad = 0, first = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs(got[i] - want[i]);
		double r = e / fmax(fabs(want[i]), 1e-30);
		if (!(e <= atol + rtol * fabs(want[i]))) {
			if (bad++ == 0)
				first = i;
		}
		if (e > maxabs || e != e)
			maxabs = e;
		if (fabs(want[i]) > 1e-3 && r > maxrel)
			maxrel = r;
	}
	printf("%-40s n=%-7zu max abs %.3g  max rel %.3g  (tol %.0e + %.0e|x|)%s\n",
	    name, n, maxabs, maxrel, atol, rtol, bad ? "  FAIL" : "");
	if (bad)
		printf("   first bad [%zu]: got %.9g want %.9g (%zu bad)\n", first,
		    got[first], want[first], bad);
	CHECK(bad == 0);
	free(got);
}

static void
begin(void)
{
	gpu_pool_reset(pool, 0);
	gpu_cmd_begin(cmd);
}

/* ---- cases ---- */

static void
test_linear(int M, int K, int N, enum gpu_dtype wdt, int bias, int act)
{
	begin();
	struct gpu_tensor x = T(GPU_F32, 3, SH(1, M, K));
	struct gpu_tensor w = T(wdt, 2, SH(N, K));
	struct gpu_tensor b = T(wdt, 1, SH(N));
	struct gpu_tensor y = T(GPU_F32, 2, SH(M, N));
	float *hx = rnd((size_t)M * K, 1), *hw = rnd((size_t)N * K, 0.5f);
	float *hb = rnd((size_t)N, 1);
	up(&x, hx);
	up(&w, hw);
	up(&b, hb);
	ops_linear(cmd, &y, &x, &w, bias ? &b : NULL, (enum ops_act)act);
	run();
	double *ref = malloc(sizeof(double) * (size_t)M * N);
	ref_linear(ref, hx, hw, bias ? hb : NULL, M, N, K, act);
	char name[96];
	snprintf(name, sizeof(name), "linear %dx%d->%d %s%s act%d", M, K, N,
	    gpu_dtype_name(wdt), bias ? " bias" : "", act);
	compare(name, &y, ref, 1e-5 * sqrt(K), 1e-5);
	free(hx), free(hw), free(hb), free(ref);
}

/*
 * ops_linear_gated_add: y = r + gate · act(x · wᵀ + b) with gate absent
 * (0), a row of a [B, 6, D] table (1) or per token (2); in place or not.
 */
static void
test_linear_gated_add(int B, int N, int K, int D, enum gpu_dtype wdt,
    int bias, int act, int gk, int in_place)
{
	begin();
	size_t M = (size_t)B * N;
	struct gpu_tensor x = T(GPU_F32, 3, SH(B, N, K));
	struct gpu_tensor w = T(wdt, 2, SH(D, K));
	struct gpu_tensor b = T(wdt, 1, SH(D));
	struct gpu_tensor r = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor y = in_place ? r : T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor gt = gk == 1 ? T(GPU_F32, 3, SH(B, 6, D)) :
	    T(GPU_F32, 3, SH(B, N, D));
	float *hx = rnd(M * K, 1), *hw = rnd((size_t)D * K, 0.5f);
	float *hb = rnd((size_t)D, 1), *hr = rnd(M * D, 4);
	float *hg = rnd((size_t)gpu_tensor_numel(&gt), 1);
	up(&x, hx);
	up(&w, hw);
	up(&b, hb);
	up(&r, hr);
	up(&gt, hg);
	struct gpu_tensor gv = gt;
	if (gk == 1) {
		gv = gpu_tensor_slice(&gt, 1, 2, 1);
		gv.ndim = 2;
		gv.shape[1] = D;
		gv.stride[1] = 1;
	}
	ops_linear_gated_add(cmd, &y, &r, gk ? &gv : NULL, &x, &w,
	    bias ? &b : NULL, (enum ops_act)act);
	run();
	double *ref = malloc(sizeof(double) * M * D);
	ref_linear(ref, hx, hw, bias ? hb : NULL, (int)M, D, K, act);
	for (size_t m = 0; m < M; m++)
		for (int d = 0; d < D; d++) {
			size_t i = m * D + d;
			double g = gk == 0 ? 1 : gk == 1 ?
			    hg[(m / N * 6 + 2) * D + d] : hg[i];
			ref[i] = hr[i] + g * ref[i];
		}
	char name[96];
	snprintf(name, sizeof(name), "linear_gated_add %dx%dx%d->%d %s%s act%d "
	    "gate%d%s", B, N, K, D, gpu_dtype_name(wdt), bias ? " bias" : "",
	    act, gk, in_place ? " in place" : "");
	compare(name, &y, ref, 1e-5 * sqrt(K), 1e-5);
	free(hx), free(hw), free(hb), free(hr), free(hg), free(ref);
}

static void
test_matmul(int batch, int M, int K, int N, int trans_b, int bcast_b)
{
	begin();
	int bb = bcast_b ? 1 : batch;
	struct gpu_tensor a = T(GPU_F32, 3, SH(batch, M, K));
	struct gpu_tensor b = trans_b ? T(GPU_F16, 3, SH(bb, N, K)) :
	    T(GPU_F16, 3, SH(bb, K, N));
	struct gpu_tensor c = T(GPU_F32, 3, SH(batch, M, N));
	float *ha = rnd((size_t)batch * M * K, 1), *hb = rnd((size_t)bb * K * N, 1);
	up(&a, ha);
	up(&b, hb);
	ops_matmul(cmd, &c, &a, &b, trans_b, 0.5f);
	run();
	double *ref = malloc(sizeof(double) * (size_t)batch * M * N);
	for (int z = 0; z < batch; z++)
		for (int m = 0; m < M; m++)
			for (int n = 0; n < N; n++) {
				double s = 0;
				const float *B = hb + (size_t)(bcast_b ? 0 : z) * K * N;
				for (int k = 0; k < K; k++)
					s += (double)ha[((size_t)z * M + m) * K + k] *
					    (trans_b ? B[(size_t)n * K + k] :
					    B[(size_t)k * N + n]);
				ref[((size_t)z * M + m) * N + n] = 0.5 * s;
			}
	char name[96];
	snprintf(name, sizeof(name), "matmul %dx%dx%dx%d%s%s", batch, M, K, N,
	    trans_b ? " T" : "", bcast_b ? " bcast" : "");
	compare(name, &c, ref, 1e-5 * sqrt(K), 1e-5);
	free(ha), free(hb), free(ref);
}

static void
test_norm(int rows, int D, int mode, int affine)
{
	begin();
	struct gpu_tensor x = T(GPU_F32, 2, SH(rows, D));
	struct gpu_tensor y = T(GPU_F32, 2, SH(rows, D));
	struct gpu_tensor w = T(GPU_BF16, 1, SH(D));
	struct gpu_tensor b = T(GPU_F32, 1, SH(D));
	float *hx = rnd((size_t)rows * D, 3), *hw = rnd(D, 1), *hb = rnd(D, 1);
	for (size_t i = 0; i < (size_t)rows * D; i++)
		hx[i] += 2.0f;		/* nonzero mean */
	up(&x, hx);
	up(&w, hw);
	up(&b, hb);
	if (mode == 0)
		ops_layer_norm(cmd, &y, &x, affine ? &w : NULL, affine ? &b : NULL,
		    1e-6f);
	else if (mode == 1)
		ops_rms_norm(cmd, &y, &x, affine ? &w : NULL, 1e-6f);
	else
		ops_softmax(cmd, &y, &x);
	run();
	double *ref = malloc(sizeof(double) * (size_t)rows * D);
	ref_norm_rows(ref, hx, affine ? hw : NULL,
	    affine && mode == 0 ? hb : NULL, rows, D, mode, 1e-6);
	char name[96];
	snprintf(name, sizeof(name), "%s %dx%d%s",
	    mode == 0 ? "layer_norm" : mode == 1 ? "rms_norm" : "softmax", rows,
	    D, affine ? " affine" : "");
	compare(name, &y, ref, 1e-5, 1e-5);
	free(hx), free(hw), free(hb), free(ref);
}

/*
 * ops_norm_modulate: norm then AdaLN modulation, scale / shift rows of a
 * [B, 3, D] table (row stride 3·D) or one shared [D] row, against the
 * double reference; and rows [r0, r0 + rc) of batch 1 normalised in a call
 * of their own are bitwise the rows of the whole call (a row's bits depend
 * on D alone).
 */
static void
test_norm_modulate(int B, int N, int D, int layer, int affine, int shared)
{
	begin();
	struct gpu_tensor x = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor y = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor w = T(GPU_F16, 1, SH(D));
	struct gpu_tensor b = T(GPU_F32, 1, SH(D));
	struct gpu_tensor tab = T(GPU_F32, 2, SH(B, 3 * D));
	size_t n = (size_t)B * N * D;
	float *hx = rnd(n, 3), *hw = rnd(D, 1), *hb = rnd(D, 1);
	float *ht = rnd((size_t)B * 3 * D, 1);
	for (size_t i = 0; i < n; i++)
		hx[i] += 1.5f;
	up(&x, hx);
	up(&w, hw);
	up(&b, hb);
	up(&tab, ht);
	struct gpu_tensor scale = gpu_tensor_slice(&tab, 1, 0, D);
	struct gpu_tensor shift = gpu_tensor_slice(&tab, 1, 2 * D, D);
	struct gpu_tensor first = gpu_tensor_slice(&scale, 0, 0, 1);
	struct gpu_tensor row0 = gpu_tensor_reshape(&first, 1, SH(D));
	const struct gpu_tensor *sc = shared ? &row0 : &scale;
	enum ops_norm kind = layer ? OPS_NORM_LAYER : OPS_NORM_RMS;
	const struct gpu_tensor *bias = affine && layer ? &b : NULL;
	CHECK_INT(ops_norm_modulate(cmd, &y, &x, kind, affine ? &w : NULL,
	    bias, 1e-6f, sc, &shift), LQ_OK);
	/* rows of batch B-1 alone, into a tensor of their own */
	int r0 = N / 3, rc = N - N / 3 > 5 ? 5 : N - N / 3;
	struct gpu_tensor xs = T(GPU_F32, 3, SH(1, rc, D));
	struct gpu_tensor ys = T(GPU_F32, 3, SH(1, rc, D));
	up(&xs, hx + ((size_t)(B - 1) * N + r0) * D);
	struct gpu_tensor scs = shared ? row0 :
	    gpu_tensor_slice(&scale, 0, B - 1, 1);
	struct gpu_tensor shs = gpu_tensor_slice(&shift, 0, B - 1, 1);
	CHECK_INT(ops_norm_modulate(cmd, &ys, &xs, kind, affine ? &w : NULL,
	    bias, 1e-6f, &scs, &shs), LQ_OK);
	run();
	double *ref = malloc(sizeof(double) * n);
	ref_norm_rows(ref, hx, affine ? hw : NULL, bias ? hb : NULL, B * N, D,
	    layer ? 0 : 1, 1e-6);
	for (int bi = 0; bi < B; bi++)
		for (int i = 0; i < N; i++)
			for (int d = 0; d < D; d++) {
				size_t k = ((size_t)bi * N + i) * D + d;
				int sb = shared ? 0 : bi;
				ref[k] = ref[k] * (1 + (double)ht[sb * 3 * D + d]) +
				    ht[bi * 3 * D + 2 * D + d];
			}
	char name[96];
	snprintf(name, sizeof(name), "norm_modulate %s %dx%dx%d%s%s",
	    layer ? "layer" : "rms", B, N, D, affine ? " affine" : "",
	    shared ? " shared" : "");
	compare(name, &y, ref, 2e-5, 2e-5);
	float *whole = down(&y), *alone = down(&ys);
	int same = memcmp(whole + ((size_t)(B - 1) * N + r0) * D, alone,
	    (size_t)rc * D * sizeof(float)) == 0;
	printf("%-40s %s\n", "  rows alone vs in the whole call",
	    same ? "bitwise equal" : "DIFFER");
	CHECK(same);
	free(whole), free(alone);
	free(hx), free(hw), free(hb), free(ht), free(ref);
}

static void
test_norm_channels(int B, int C, int F, int H, int W, int mode, int G)
{
	begin();
	int S = F * H * W;
	struct gpu_tensor x = T(GPU_F32, 5, SH(B, C, F, H, W));
	struct gpu_tensor y = T(GPU_F32, 5, SH(B, C, F, H, W));
	struct gpu_tensor w = T(GPU_F16, 1, SH(C));
	struct gpu_tensor b = T(GPU_F32, 1, SH(C));
	float *hx = rnd((size_t)B * C * S, 2), *hw = rnd(C, 1), *hb = rnd(C, 1);
	for (size_t i = 0; i < (size_t)B * C * S; i++)
		hx[i] += 0.5f;
	up(&x, hx);
	up(&w, hw);
	up(&b, hb);
	double *ref = malloc(sizeof(double) * (size_t)B * C * S);
	const char *what;
	if (G > 0) {
		ops_group_norm(cmd, &y, &x, G, &w, &b, 1e-6f);
		ref_group_norm(ref, hx, hw, hb, B, C, S, G, 1e-6);
		what = "group_norm";
	} else if (mode == 0) {
		ops_layer_norm_channels(cmd, &y, &x, &w, &b, 1e-6f);
		ref_norm_channels(ref, hx, hw, hb, B, C, S, 0, 1e-6);
		what = "layer_norm_channels";
	} else {
		ops_rms_norm_channels(cmd, &y, &x, NULL, 1e-8f);
		ref_norm_channels(ref, hx, NULL, NULL, B, C, S, 1, 1e-8);
		what = "rms_norm_channels";
	}
	run();
	char name[96];
	snprintf(name, sizeof(name), "%s [%d,%d,%d,%d,%d] G%d", what, B, C, F, H,
	    W, G);
	compare(name, &y, ref, 2e-5, 2e-5);
	free(hx), free(hw), free(hb), free(ref);
}

static void
test_elementwise(void)
{
	int B = 2, N = 37, D = 19;
	size_t n = (size_t)B * N * D;
	double *ref = malloc(sizeof(double) * n * 4);
	char name[64];

	/* modulate with rows of a [B, 6, D] table sum, and gated add */
	begin();
	struct gpu_tensor x = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor r = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor y = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor table = T(GPU_BF16, 2, SH(6, D));
	struct gpu_tensor temb = T(GPU_F32, 2, SH(B, 6 * D));
	struct gpu_tensor ada = T(GPU_F32, 3, SH(B, 6, D));
	float *hx = rnd(n, 2), *hr = rnd(n, 1), *ht = rnd(6 * D, 1);
	float *he = rnd((size_t)B * 6 * D, 1);
	up(&x, hx);
	up(&r, hr);
	up(&table, ht);
	up(&temb, he);
	ops_add_table(cmd, &ada, &table, &temb);
	struct gpu_tensor ada2 = gpu_tensor_reshape(&ada, 2, SH(B, 6 * D));
	struct gpu_tensor shift = gpu_tensor_slice(&ada2, 1, 0, D);
	struct gpu_tensor scale = gpu_tensor_slice(&ada2, 1, D, D);
	struct gpu_tensor gate = gpu_tensor_slice(&ada2, 1, 2 * D, D);
	struct gpu_tensor y2 = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor y3 = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor y4 = T(GPU_F32, 3, SH(B, N, D));
	ops_modulate(cmd, &y, &x, &scale, &shift);
	ops_gated_add(cmd, &y2, &y, &gate, &r);
	/* one of scale / shift absent (0) */
	ops_modulate(cmd, &y3, &x, &scale, NULL);
	ops_modulate(cmd, &y4, &x, NULL, &shift);
	run();
	for (int b = 0; b < B; b++)
		for (int i = 0; i < N; i++)
			for (int d = 0; d < D; d++) {
				size_t k = ((size_t)b * N + i) * D + d;
				double sh = ht[d] + (double)he[b * 6 * D + d];
				double sc = ht[D + d] + (double)he[b * 6 * D + D + d];
				double g = ht[2 * D + d] + (double)he[b * 6 * D + 2 * D + d];
				ref[k] = hx[k] * (1 + sc) + sh;
				ref[n + k] = ref[k] + g * hr[k];
				ref[2 * n + k] = hx[k] * (1 + sc);
				ref[3 * n + k] = hx[k] + sh;
			}
	compare("modulate (table rows)", &y, ref, 1e-5, 1e-5);
	compare("gated_add", &y2, ref + n, 1e-5, 1e-5);
	compare("modulate (no shift)", &y3, ref + 2 * n, 1e-5, 1e-5);
	compare("modulate (no scale)", &y4, ref + 3 * n, 1e-5, 1e-5);

	/* broadcast add / mul / add_mul / scale / fill / act */
	begin();
	x = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor v = T(GPU_F16, 1, SH(D));
	struct gpu_tensor col = T(GPU_F32, 3, SH(B, N, 1));
	struct gpu_tensor ya = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor ym = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor yam = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor ys = T(GPU_F32, 3, SH(B, N, D));
	float *hv = rnd(D, 1), *hc = rnd((size_t)B * N, 1);
	up(&x, hx);
	up(&v, hv);
	up(&col, hc);
	ops_add(cmd, &ya, &x, &v);
	ops_mul(cmd, &ym, &x, &col);
	ops_add_mul(cmd, &yam, &x, &v, &col);
	ops_scale(cmd, &ys, &x, 0.25f, -1.5f);
	run();
	for (size_t k = 0; k < n; k++) {
		int d = (int)(k % D);
		size_t row = k / D;
		ref[k] = (double)hx[k] + hv[d];
		ref[n + k] = (double)hx[k] * hc[row];
		ref[2 * n + k] = hx[k] + (double)hv[d] * hc[row];
		ref[3 * n + k] = hx[k] * 0.25 - 1.5;
	}
	compare("add (broadcast [D] f16)", &ya, ref, 1e-6, 1e-6);
	compare("mul (broadcast [B,N,1])", &ym, ref + n, 1e-6, 1e-6);
	compare("add_mul", &yam, ref + 2 * n, 1e-6, 1e-6);
	compare("scale", &ys, ref + 3 * n, 1e-6, 1e-6);

	for (int act = 1; act <= 6; act++) {
		begin();
		x = T(GPU_F32, 3, SH(B, N, D));
		y = T(GPU_F32, 3, SH(B, N, D));
		float *h6 = rnd(n, 6);
		up(&x, h6);
		ops_act(cmd, &y, &x, (enum ops_act)act);
		run();
		for (size_t k = 0; k < n; k++)
			ref[k] = ref_act(h6[k], act);
		snprintf(name, sizeof(name), "act %d", act);
		compare(name, &y, ref, 2e-6, 2e-6);
		free(h6);
	}
	/* leaky_relu with the vocoder's two slopes, on a strided view */
	for (int k = 0; k < 2; k++) {
		float slope = k ? 0.01f : 0.1f;
		begin();
		x = T(GPU_F32, 3, SH(B, D, N));
		y = T(GPU_F32, 3, SH(B, N, D));
		static const int tr[3] = {0, 2, 1};
		struct gpu_tensor xt = gpu_tensor_permute(&x, tr);
		float *h = rnd(n, 3);
		up(&x, h);
		ops_leaky_relu(cmd, &y, &xt, slope);
		run();
		for (int bi = 0; bi < B; bi++)
			for (int i = 0; i < N; i++)
				for (int d = 0; d < D; d++) {
					double v = h[((size_t)bi * D + d) * N + i];
					ref[((size_t)bi * N + i) * D + d] =
					    v >= 0 ? v : (double)slope * v;
				}
		snprintf(name, sizeof(name), "leaky_relu %g (transposed x)", slope);
		compare(name, &y, ref, 1e-7, 1e-7);
		free(h);
	}
	/* SnakeBeta: per-channel log-scale alpha, beta over [B, C, T] (dim 1
	 * = channels), and Snake (beta = alpha) */
	for (int k = 0; k < 2; k++) {
		begin();
		x = T(GPU_F32, 3, SH(B, N, D));
		y = T(GPU_F32, 3, SH(B, N, D));
		struct gpu_tensor al = T(GPU_F32, 1, SH(N)), be = T(GPU_F32, 1, SH(N));
		float *h = rnd(n, 3), *ha = rnd(N, 0.4f), *hb = rnd(N, 0.4f);
		up(&x, h);
		up(&al, ha);
		up(&be, hb);
		ops_snake_beta(cmd, &y, &x, &al, k ? &al : &be, 1e-9f);
		run();
		for (int bi = 0; bi < B; bi++)
			for (int c = 0; c < N; c++)
				for (int d = 0; d < D; d++) {
					size_t i = ((size_t)bi * N + c) * D + d;
					double v = h[i], s = sin(v * exp((double)ha[c]));
					ref[i] = v + s * s / (exp((double)(k ? ha : hb)[c]) + 1e-9);
				}
		compare(k ? "snake (beta = alpha)" : "snake_beta", &y, ref, 2e-6, 2e-6);
		free(h), free(ha), free(hb);
	}
	begin();
	x = T(GPU_F32, 3, SH(B, N, D));
	y = T(GPU_F32, 3, SH(B, N, D));
	{
		float *h = rnd(n, 3);
		up(&x, h);
		ops_clamp(cmd, &y, &x, -1.0f, 1.0f);
		run();
		for (size_t k = 0; k < n; k++)
			ref[k] = h[k] < -1 ? -1 : h[k] > 1 ? 1 : h[k];
		compare("clamp [-1, 1]", &y, ref, 0, 0);
		free(h);
	}
	begin();
	y = T(GPU_F32, 2, SH(3, 5));
	ops_fill(cmd, &y, 2.5f);
	run();
	for (int k = 0; k < 15; k++)
		ref[k] = 2.5;
	compare("fill", &y, ref, 0, 0);

	/* permute [B, N, D] -> [D, B, N] and drop the first of N */
	begin();
	x = T(GPU_F32, 3, SH(B, N, D));
	up(&x, hx);
	struct gpu_tensor xs = gpu_tensor_slice(&x, 1, 1, N - 1);
	struct gpu_tensor xp = gpu_tensor_permute(&xs, (const int[]){2, 0, 1});
	y = T(GPU_F32, 3, SH(D, B, N - 1));
	ops_copy(cmd, &y, &xp);
	run();
	for (int d = 0; d < D; d++)
		for (int b = 0; b < B; b++)
			for (int i = 0; i < N - 1; i++)
				ref[((size_t)d * B + b) * (N - 1) + i] =
				    hx[((size_t)b * N + i + 1) * D + d];
	compare("copy (slice + permute)", &y, ref, 0, 0);

	/* channel affine [C] and [B, C]; noise injection */
	int C = 5, F = 3, H = 4, W = 7, S = F * H * W;
	size_t nc = (size_t)B * C * S;
	begin();
	x = T(GPU_F32, 5, SH(B, C, F, H, W));
	y = T(GPU_F32, 5, SH(B, C, F, H, W));
	y2 = T(GPU_F32, 5, SH(B, C, F, H, W));
	struct gpu_tensor sc1 = T(GPU_F32, 1, SH(C));
	struct gpu_tensor sh2 = T(GPU_F32, 2, SH(B, C));
	struct gpu_tensor noise = T(GPU_F32, 2, SH(H, W));
	struct gpu_tensor nscale = T(GPU_F16, 1, SH(C));
	float *hxc = rnd(nc, 1), *hs1 = rnd(C, 1), *hs2 = rnd((size_t)B * C, 1);
	float *hn = rnd((size_t)H * W, 1), *hns = rnd(C, 1);
	up(&x, hxc);
	up(&sc1, hs1);
	up(&sh2, hs2);
	up(&noise, hn);
	up(&nscale, hns);
	ops_channel_affine(cmd, &y, &x, &sc1, &sh2, 1.0f);
	ops_copy(cmd, &y2, &x);
	ops_add_noise_channels(cmd, &y2, &noise, &nscale);
	run();
	double *ref2 = malloc(sizeof(double) * nc * 2);
	for (size_t k = 0; k < nc; k++) {
		int c = (int)(k / S % C), b = (int)(k / ((size_t)S * C));
		int hw = (int)(k % (H * W));
		ref2[k] = hxc[k] * (1.0 + hs1[c]) + hs2[b * C + c];
		ref2[nc + k] = hxc[k] + (double)hn[hw] * hns[c];
	}
	compare("channel_affine", &y, ref2, 1e-6, 1e-6);
	compare("add_noise_channels", &y2, ref2 + nc, 1e-6, 1e-6);
	free(hxc), free(hs1), free(hs2), free(hn), free(hns), free(ref2);
	free(hx), free(hr), free(ht), free(he), free(hv), free(hc), free(ref);
}

static void
test_attention(int B, int Nq, int Nk, int H, int Dh, int Dv, int use_kb,
    int use_bias, double scale, int fused)
{
	begin();
	/* fused: q, k, v are slices of one [B, N, 3·H·Dh] tensor (self-attn) */
	struct gpu_tensor q, k, v, qkv;
	int sq = H * Dh, sk = H * Dh, sv = H * Dv;
	float *hq, *hk, *hv;
	if (fused) {
		qkv = T(GPU_F32, 3, SH(B, Nq, 3 * H * Dh));
		float *h = rnd((size_t)B * Nq * 3 * H * Dh, 1);
		up(&qkv, h);
		q = gpu_tensor_slice(&qkv, 2, 0, H * Dh);
		k = gpu_tensor_slice(&qkv, 2, H * Dh, H * Dh);
		v = gpu_tensor_slice(&qkv, 2, 2 * H * Dh, H * Dh);
		hq = h;
		hk = h + H * Dh;
		hv = h + 2 * H * Dh;
		sq = sk = sv = 3 * H * Dh;
	} else {
		q = T(GPU_F32, 3, SH(B, Nq, H * Dh));
		k = T(GPU_F32, 3, SH(B, Nk, H * Dh));
		v = T(GPU_F32, 3, SH(B, Nk, H * Dv));
		hq = rnd((size_t)B * Nq * H * Dh, 1);
		hk = rnd((size_t)B * Nk * H * Dh, 1);
		hv = rnd((size_t)B * Nk * H * Dv, 1);
		up(&q, hq);
		up(&k, hk);
		up(&v, hv);
	}
	struct gpu_tensor o = T(GPU_F32, 3, SH(B, Nq, H * Dv));
	struct gpu_tensor kb = T(GPU_F32, 2, SH(B, Nk));
	struct gpu_tensor bias = T(GPU_F16, 3, SH(H, Nq, Nk));
	float *hkb = rnd((size_t)B * Nk, 1), *hbias = rnd((size_t)H * Nq * Nk, 2);
	for (int j = Nk / 2; j < Nk; j++)	/* masked tail in batch 0 */
		hkb[j] = -10000.0f;
	up(&kb, hkb);
	up(&bias, hbias);
	struct ops_attention_args args = {.heads = H, .scale = (float)scale,
	    .key_bias = use_kb ? &kb : NULL, .bias = use_bias ? &bias : NULL};
	ops_attention(cmd, &o, &q, &k, &v, &args);
	run();
	double *ref = malloc(sizeof(double) * (size_t)B * Nq * H * Dv);
	ref_attention(ref, hq, hk, hv, B, Nq, Nk, H, Dh, Dv, sq, sk, sv, scale,
	    use_kb ? hkb : NULL, use_bias ? hbias : NULL);
	char name[96];
	snprintf(name, sizeof(name), "attention B%d %dx%d H%d D%d/%d%s%s%s", B,
	    Nq, Nk, H, Dh, Dv, use_kb ? " kb" : "", use_bias ? " bias" : "",
	    fused ? " fused" : "");
	compare(name, &o, ref, 1e-5, 1e-4);
	if (fused) {
		free(hq);
	} else {
		free(hq), free(hk), free(hv);
	}
	free(hkb), free(hbias), free(ref);
}

static void
test_rope(int B, int N, int D, int cb)
{
	begin();
	struct gpu_tensor x = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor c = T(GPU_F32, 3, SH(cb, N, D));
	struct gpu_tensor s = T(GPU_F32, 3, SH(cb, N, D));
	float *hx = rnd((size_t)B * N * D, 2), *hc = rnd((size_t)cb * N * D, 1);
	float *hs = rnd((size_t)cb * N * D, 1);
	up(&x, hx);
	up(&c, hc);
	up(&s, hs);
	ops_rope(cmd, &x, &x, &c, &s);		/* in place */
	run();
	double *ref = malloc(sizeof(double) * (size_t)B * N * D);
	ref_rope(ref, hx, hc, hs, B, N, D, cb);
	char name[64];
	snprintf(name, sizeof(name), "rope [%d,%d,%d] cos batch %d", B, N, D, cb);
	compare(name, &x, ref, 1e-6, 1e-6);
	free(hx), free(hc), free(hs), free(ref);
}

static void
test_rope_split(int B, int N, int D, int cb, int hd)
{
	begin();
	struct gpu_tensor x = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor y = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor c = T(GPU_F32, 3, SH(cb, N, D / 2));
	struct gpu_tensor s = T(GPU_BF16, 3, SH(cb, N, D / 2));
	float *hx = rnd((size_t)B * N * D, 2), *hc = rnd((size_t)cb * N * D / 2, 1);
	float *hs = rnd((size_t)cb * N * D / 2, 1);
	up(&x, hx);
	up(&c, hc);
	up(&s, hs);
	ops_rope_split(cmd, &y, &x, &c, &s, hd);
	run();
	double *ref = malloc(sizeof(double) * (size_t)B * N * D);
	ref_rope_split(ref, hx, hc, hs, B, N, D, cb, hd);
	char name[64];
	snprintf(name, sizeof(name), "rope split [%d,%d,%d] hd %d cos batch %d",
	    B, N, D, hd, cb);
	compare(name, &y, ref, 1e-6, 1e-6);
	free(hx), free(hc), free(hs), free(ref);
}

static void
test_conv3d(int B, int Ci, int F, int H, int W, int Co, int k, int stride,
    int tcase, int rep_s, enum gpu_dtype wdt, int bias)
{
	begin();
	struct ops_conv3d_params p = {.stride = {stride, stride, stride},
	    .pad_h = {k / 2, k / 2}, .pad_w = {k / 2, k / 2},
	    .s_mode = rep_s == 2 ? OPS_PAD_REFLECT : rep_s ? OPS_PAD_REPLICATE :
	    OPS_PAD_ZERO};
	const char *tn;
	if (tcase == 0) {		/* causal */
		p.pad_t[0] = k - 1;
		p.t_mode = OPS_PAD_REPLICATE;
		tn = "causal";
	} else if (tcase == 1) {	/* non-causal replicate */
		p.pad_t[0] = p.pad_t[1] = (k - 1) / 2;
		p.t_mode = OPS_PAD_REPLICATE;
		tn = "noncausal";
	} else {
		p.pad_t[0] = p.pad_t[1] = k / 2;
		p.t_mode = OPS_PAD_ZERO;
		tn = "zero";
	}
	int Fo = (F + p.pad_t[0] + p.pad_t[1] - k) / stride + 1;
	int Ho = (H + 2 * (k / 2) - k) / stride + 1;
	int Wo = (W + 2 * (k / 2) - k) / stride + 1;
	struct gpu_tensor x = T(GPU_F32, 5, SH(B, Ci, F, H, W));
	struct gpu_tensor w = T(wdt, 5, SH(Co, Ci, k, k, k));
	struct gpu_tensor b = T(GPU_F32, 1, SH(Co));
	struct gpu_tensor y = T(GPU_F32, 5, SH(B, Co, Fo, Ho, Wo));
	size_t nx = (size_t)B * Ci * F * H * W, nw = (size_t)Co * Ci * k * k * k;
	float *hx = rnd(nx, 1), *hw = rnd(nw, 0.3f), *hb = rnd(Co, 1);
	up(&x, hx);
	up(&w, hw);
	up(&b, hb);
	ops_conv3d(cmd, &y, &x, &w, bias ? &b : NULL, &p);
	run();
	double *ref = malloc(sizeof(double) * (size_t)B * Co * Fo * Ho * Wo);
	int st[3] = {stride, stride, stride};
	int pad0[3] = {p.pad_t[0], k / 2, k / 2};
	ref_conv3d(ref, hx, hw, bias ? hb : NULL, B, Ci, F, H, W, Co, k, k, k, st,
	    pad0, Fo, Ho, Wo, tcase != 2, rep_s);
	char name[96];
	snprintf(name, sizeof(name), "conv3d [%d,%d,%d,%d,%d]->%d k%d s%d %s%s %s",
	    B, Ci, F, H, W, Co, k, stride, tn,
	    rep_s == 2 ? " refl" : rep_s ? " reps" : "",
	    gpu_dtype_name(wdt));
	compare(name, &y, ref, 1e-5 * sqrt((double)Ci * k * k * k), 1e-5);
	free(hx), free(hw), free(hb), free(ref);
}

/* Conv1d (stride, dilation, "same" padding) and ConvTranspose1d (the
 * vocoder's upsamplers: stride u, padding (k - u) / 2) with bias. */
static void
test_conv1d(int B, int Ci, int L, int Co, int k, int s, int d, int pad0,
    int pad1, int transposed, enum gpu_dtype wdt, int bias)
{
	begin();
	struct ops_conv1d_params p = {.stride = s, .dilation = d,
	    .pad = {pad0, pad1}, .transposed = transposed};
	int To = transposed ? (L - 1) * s + d * (k - 1) + 1 - pad0 - pad1 :
	    (L + pad0 + pad1 - d * (k - 1) - 1) / s + 1;
	struct gpu_tensor x = T(GPU_F32, 3, SH(B, Ci, L));
	struct gpu_tensor w = transposed ? T(wdt, 3, SH(Ci, Co, k)) :
	    T(wdt, 3, SH(Co, Ci, k));
	struct gpu_tensor b = T(GPU_F32, 1, SH(Co));
	struct gpu_tensor y = T(GPU_F32, 3, SH(B, Co, To));
	size_t nx = (size_t)B * Ci * L, nw = (size_t)Co * Ci * k;
	float *hx = rnd(nx, 1), *hw = rnd(nw, 0.3f), *hb = rnd(Co, 1);
	up(&x, hx);
	up(&w, hw);
	up(&b, hb);
	ops_conv1d(cmd, &y, &x, &w, bias ? &b : NULL, &p);
	run();
	double *ref = malloc(sizeof(double) * (size_t)B * Co * To);
	ref_conv1d(ref, hx, hw, bias ? hb : NULL, B, Ci, L, Co, k, s, d, pad0,
	    To, transposed);
	char name[96];
	snprintf(name, sizeof(name), "conv1d%s [%d,%d,%d]->%d k%d s%d d%d p%d,%d %s",
	    transposed ? "T" : "", B, Ci, L, Co, k, s, d, pad0, pad1,
	    gpu_dtype_name(wdt));
	compare(name, &y, ref, 1e-5 * sqrt((double)Ci * k), 1e-5);
	free(hx), free(hw), free(hb), free(ref);
}

static void
test_d2s(int swapped)
{
	begin();
	int B = 2, C = 3, F = 2, H = 3, W = 5, ft = 2, fh = 2, fw = 2;
	if (swapped)
		ft = 1;
	int Cd = C * ft * fh * fw;
	struct gpu_tensor x = T(GPU_F32, 5, SH(B, Cd, F, H, W));
	struct gpu_tensor y = T(GPU_F32, 5, SH(B, C, F * ft, H * fh, W * fw));
	struct gpu_tensor z = T(GPU_F32, 5, SH(B, Cd, F, H, W));
	size_t n = (size_t)B * Cd * F * H * W;
	float *hx = rnd(n, 1);
	up(&x, hx);
	ops_depth_to_space(cmd, &y, &x, ft, fh, fw, swapped);
	ops_space_to_depth(cmd, &z, &y, ft, fh, fw, swapped);
	run();
	double *ref = malloc(sizeof(double) * n), *ref2 = malloc(sizeof(double) * n);
	/* upstream: reshape(B, C, ft, fh, fw, F, H, W).permute(...) */
	for (int b = 0; b < B; b++)
		for (int c = 0; c < C; c++)
			for (int dt = 0; dt < ft; dt++)
				for (int da = 0; da < fh; da++)
					for (int db = 0; db < fw; db++)
						for (int f = 0; f < F; f++)
							for (int h = 0; h < H; h++)
								for (int w = 0; w < W; w++) {
		int cd = ((c * ft + dt) * fh + da) * fw + db;
		size_t src = ((((size_t)b * Cd + cd) * F + f) * H + h) * W + w;
		/* normal: da is h-offset, db is w-offset; swapped
		 * (unpatchify permute 0,1,5,2,6,4,7,3): da is w, db is h */
		int dh = swapped ? db : da, dw = swapped ? da : db;
		size_t dst = ((((size_t)b * C + c) * F * ft + f * ft + dt) * H * fh +
		    h * fh + dh) * W * fw + w * fw + dw;
		ref[dst] = hx[src];
		ref2[src] = hx[src];
	}
	compare(swapped ? "depth_to_space (unpatchify order)" :
	    "depth_to_space (upsampler order)", &y, ref, 0, 0);
	compare("space_to_depth round trip", &z, ref2, 0, 0);
	free(hx), free(ref), free(ref2);
}

/* A chain through the heavy kernels; returns a download of the result. */
static float *
chain_once(void)
{
	begin();
	int B = 2, N = 45, D = 48, H = 3;
	struct gpu_tensor x = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor w = T(GPU_F16, 2, SH(3 * D, D));
	struct gpu_tensor qkv = T(GPU_F32, 3, SH(B, N, 3 * D));
	struct gpu_tensor o = T(GPU_F32, 3, SH(B, N, D));
	struct gpu_tensor cx = T(GPU_F32, 5, SH(1, 6, 5, 9, 8));
	struct gpu_tensor cw = T(GPU_F32, 5, SH(6, 6, 3, 3, 3));
	struct gpu_tensor cy = T(GPU_F32, 5, SH(1, 6, 5, 9, 8));
	rng = 12345;
	float *hx = rnd((size_t)B * N * D, 1), *hw = rnd((size_t)3 * D * D, 0.2f);
	float *hcx = rnd(6 * 5 * 9 * 8, 1), *hcw = rnd(6 * 6 * 27, 0.2f);
	up(&x, hx);
	up(&w, hw);
	up(&cx, hcx);
	up(&cw, hcw);
	ops_linear(cmd, &qkv, &x, &w, NULL, OPS_ACT_NONE);
	ops_layer_norm(cmd, &qkv, &qkv, NULL, NULL, 1e-6f);
	struct gpu_tensor q = gpu_tensor_slice(&qkv, 2, 0, D);
	struct gpu_tensor k = gpu_tensor_slice(&qkv, 2, D, D);
	struct gpu_tensor v = gpu_tensor_slice(&qkv, 2, 2 * D, D);
	struct ops_attention_args a = {.heads = H, .scale = 0.25f};
	ops_attention(cmd, &o, &q, &k, &v, &a);
	struct ops_conv3d_params p = {.stride = {1, 1, 1}, .pad_t = {2, 0},
	    .pad_h = {1, 1}, .pad_w = {1, 1}, .t_mode = OPS_PAD_REPLICATE};
	ops_conv3d(cmd, &cy, &cx, &cw, NULL, &p);
	ops_group_norm(cmd, &cy, &cy, 3, NULL, NULL, 1e-6f);
	run();
	size_t no = (size_t)B * N * D, nc = 6 * 5 * 9 * 8;
	float *r = malloc((no + nc) * sizeof(float));
	float *a1 = down(&o), *a2 = down(&cy);
	memcpy(r, a1, no * sizeof(float));
	memcpy(r + no, a2, nc * sizeof(float));
	free(a1), free(a2), free(hx), free(hw), free(hcx), free(hcw);
	return r;
}

static void
test_determinism(void)
{
	size_t n = 2 * 45 * 48 + 6 * 5 * 9 * 8;
	float *r0 = chain_once(), *r1 = chain_once(), *r2 = chain_once();
	int same = memcmp(r0, r1, n * 4) == 0 && memcmp(r0, r2, n * 4) == 0;
	printf("determinism: 3 runs of linear+norm+attention+conv3d+group_norm "
	    "%s\n", same ? "bitwise equal" : "DIFFER");
	CHECK(same);
	free(r0), free(r1), free(r2);
}

static void
test_errors(void)
{
	struct lq_error err;
	error_clear(&err);
	begin();
	struct gpu_tensor x = T(GPU_F32, 2, SH(4, 8));
	struct gpu_tensor w = T(GPU_F32, 2, SH(5, 7));
	struct gpu_tensor y = T(GPU_F32, 2, SH(4, 5));
	CHECK_INT(ops_linear(cmd, &y, &x, &w, NULL, OPS_ACT_NONE), LQ_FAILED);
	/* sticky: the next op records nothing and returns the same error */
	CHECK_INT(ops_fill(cmd, &y, 0), LQ_FAILED);
	CHECK_INT(gpu_cmd_submit(cmd, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-SHAPE");
	CHECK_CONTAINS(err.message, "ops_linear");
	CHECK_CONTAINS(err.message, "f32[5,7]");

	/* a tensor over the largest buffer is refused up front; one over
	 * the binding limit is not (ops split it, tests/gpu/test-split) */
	const struct device_caps *caps = gpu_ctx_caps(ctx);
	uint64_t big = device_caps_max_tensor(caps) + 4;
	error_clear(&err);
	CHECK_INT(device_caps_check_tensor(caps, "latents", big, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-RANGE");
	CHECK_CONTAINS(err.message, "maxMemoryAllocationSize");
	CHECK_CONTAINS(err.message, "latents");
	CHECK_INT(device_caps_check_tensor(caps, "latents", 1024, &err), LQ_OK);
	CHECK_INT(device_caps_check_tensor(caps, "latents",
	    device_caps_max_binding(caps) + 4, &err), LQ_OK);
	struct gpu_tensor t;
	error_clear(&err);
	CHECK_INT(gpu_pool_tensor(pool, GPU_F32, 1,
	    SH((int64_t)(big / 4 + 1)), &t, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-RANGE");
	/* a full pool says so */
	error_clear(&err);
	gpu_pool_reset(pool, 0);
	CHECK_INT(gpu_pool_tensor(pool, GPU_F32, 1,
	    SH((int64_t)(gpu_pool_capacity(pool) / 4 + 64)), &t, &err),
	    LQ_FAILED);
	CHECK(strcmp(err.code, "LQ-GPU-POOL") == 0 ||
	    strcmp(err.code, "LQ-GPU-RANGE") == 0);
}

int
main(void)
{
	struct lq_error err;
	error_clear(&err);
	log_set_level(LOG_LEVEL_WARN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct gpu_ctx_opts opts = {0};
	if (gpu_ctx_create(&opts, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		return strcmp(err.code, "LQ-GPU-NODEV") == 0 ? 77 : 99;
	}
	printf("device: %s\n", gpu_ctx_caps(ctx)->name);
	if (gpu_pool_create(ctx, (size_t)64 << 20, &pool, &err) != LQ_OK ||
	    gpu_cmd_create(ctx, &cmd, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	/* linear and attention have texel-buffer fast paths: run the
	 * storage-buffer paths too */
	for (int pass = 0; pass < 2; pass++) {
		printf("-- %s paths\n", pass ? "storage-buffer" : "default");
		if (pass)
			setenv("LATENTQ_NO_TEXEL", "1", 1);
		test_linear(1, 1, 1, GPU_F32, 1, 0);
		test_linear(37, 65, 23, GPU_F32, 1, 1);
		test_linear(130, 200, 67, GPU_F16, 1, 2);
		test_linear(64, 128, 64, GPU_BF16, 0, 0);
		test_linear(5, 33, 129, GPU_F32, 0, 3);
		test_linear(300, 36, 70, GPU_F16, 1, 0);
		/* few rows: linear.comp's GEMV variant on the shader path */
		test_linear(2, 128, 67, GPU_BF16, 1, 1);
		test_linear(4, 64, 130, GPU_F16, 0, 0);
		test_linear(3, 96, 33, GPU_F32, 1, 2);
		/* the GEMV over K of many vec4s and N of many workgroups */
		test_linear(1, 1028, 1000, GPU_F32, 1, 0);
		test_linear(4, 516, 777, GPU_BF16, 0, 1);
		test_linear_gated_add(2, 151, 96, 72, GPU_BF16, 1, 1, 1, 1);
		test_linear_gated_add(1, 37, 64, 40, GPU_F16, 0, 0, 2, 0);
		test_linear_gated_add(2, 2, 128, 33, GPU_F32, 1, 2, 1, 0);
		test_linear_gated_add(1, 19, 66, 24, GPU_F32, 1, 0, 0, 1);
		test_matmul(3, 19, 33, 45, 0, 0);
		test_matmul(2, 70, 17, 9, 1, 1);
		test_attention(2, 37, 23, 3, 16, 16, 1, 0, 0.25, 0);
		test_attention(1, 70, 70, 2, 64, 64, 0, 1, 1.0, 0);
		test_attention(2, 33, 33, 2, 16, 16, 0, 0, 0.25, 1);
		test_attention(1, 9, 130, 1, 100, 100, 1, 0, 0.1, 0);
		test_conv3d(1, 3, 5, 6, 7, 5, 3, 1, 0, 0, GPU_F32, 1);
		test_conv3d(2, 4, 4, 5, 5, 6, 3, 1, 1, 0, GPU_F16, 0);
		test_conv3d(1, 3, 5, 7, 6, 4, 3, 2, 2, 0, GPU_F32, 1);
		test_conv3d(1, 5, 3, 4, 4, 7, 1, 1, 2, 0, GPU_BF16, 1);
		test_conv3d(1, 2, 4, 5, 6, 3, 3, 2, 0, 1, GPU_F32, 0);
		test_conv3d(1, 9, 3, 5, 11, 17, 3, 1, 0, 0, GPU_F16, 1);
		test_conv3d(1, 4, 2, 3, 19, 37, 3, 1, 1, 0, GPU_F32, 1);
		/* reflect (LTX-2's decoder): the smallest legal width 2, and
		 * with stride 2 */
		test_conv3d(2, 3, 3, 4, 2, 5, 3, 1, 0, 2, GPU_F32, 1);
		test_conv3d(1, 5, 4, 7, 9, 6, 3, 2, 1, 2, GPU_F32, 0);
		unsetenv("LATENTQ_NO_TEXEL");
	}
	test_norm(1, 1, 0, 0);
	test_norm(7, 37, 0, 1);
	test_norm(5, 300, 0, 0);
	test_norm(9, 300, 1, 1);
	test_norm(3, 129, 1, 0);
	test_norm(6, 77, 2, 0);
	test_norm(4, 2048, 1, 1);
	test_norm(3, 2051, 0, 1);
	test_norm(2, 4099, 2, 0);
	test_norm_modulate(2, 37, 19, 0, 0, 0);
	test_norm_modulate(2, 40, 128, 1, 1, 0);
	test_norm_modulate(3, 9, 301, 0, 1, 1);
	test_norm_modulate(1, 17, 8, 1, 0, 1);
	test_norm_channels(2, 13, 3, 5, 7, 1, 0);
	test_norm_channels(1, 8, 2, 3, 3, 0, 0);
	test_norm_channels(2, 12, 3, 4, 5, 0, 4);
	test_norm_channels(1, 6, 1, 1, 1, 0, 6);
	test_elementwise();
	test_attention(1, 5, 11, 1, 200, 256, 0, 0, 0.07, 0);
	test_attention(1, 3, 5, 2, 8, 24, 0, 1, 0.3, 0);
	test_rope(2, 13, 10, 1);
	test_rope(2, 7, 32, 2);
	test_rope_split(2, 13, 32, 1, 8);
	test_rope_split(2, 5, 36, 2, 12);
	test_rope_split(1, 3, 6, 1, 2);
	test_conv1d(2, 5, 9, 7, 7, 1, 1, 3, 3, 0, GPU_F32, 1);
	test_conv1d(1, 8, 33, 8, 3, 1, 3, 3, 3, 0, GPU_F16, 1);
	test_conv1d(2, 6, 20, 6, 5, 1, 2, 4, 4, 0, GPU_BF16, 0);
	test_conv1d(1, 4, 17, 3, 4, 1, 2, 3, 0, 0, GPU_F32, 1);
	test_conv1d(1, 4, 17, 3, 3, 2, 1, 1, 1, 0, GPU_F32, 1);
	test_conv1d(2, 9, 9, 4, 8, 4, 1, 2, 2, 1, GPU_F32, 1);
	test_conv1d(1, 16, 11, 8, 4, 2, 1, 1, 1, 1, GPU_F16, 0);
	test_conv1d(1, 5, 6, 3, 11, 5, 1, 3, 3, 1, GPU_F32, 1);
	test_conv1d(1, 3, 7, 2, 3, 3, 2, 0, 1, 1, GPU_BF16, 1);
	test_d2s(0);
	test_d2s(1);
	test_determinism();
	test_errors();
	unsigned vm = gpu_ctx_validation_messages(ctx);
	printf("validation messages: %u\n", vm);
	CHECK_INT(vm, 0);
	gpu_cmd_free(cmd);
	gpu_pool_free(pool);
	gpu_ctx_free(ctx);
	return test_summary();
}
