/*
 * test-host.c — the CPU-device fast path (gpu/host.c, issue 18 item 2):
 * ops_linear, ops_matmul and ops_attention as host GEMMs on mapped
 * memory.
 *
 * Two contexts on the same device: LATENTQ_GPU_HOST_GEMM=1 (host GEMMs)
 * and =0 (shaders).  Checks:
 *   - the variant strings ("host-gemm:6x16 fma|mul-add t=N" and
 *     "shader"), and that the default on a CPU device is the host path;
 *   - host and shader results agree within float rounding, for f32, f16
 *     and bf16 weights, with bias and every activation, batched and
 *     broadcast matmuls, transposed or not, and alpha;
 *   - the host path is bit-identical run to run, and a row's bits do not
 *     depend on which rows share its call (rows alone, shards at any
 *     offset, the whole batch): what mesh parity needs;
 *   - host attention (strided q/k/v, key_bias, bf16 bias) agrees with
 *     the shader's, run to run and for query rows alone (shards at
 *     several offsets) the same bits;
 *   - linear and attention give the same bits on 1, 2 and 3 threads;
 *   - host conv3d (im2col through the same tile) agrees with the
 *     shader's for each padding mode, stride 2, f16/bf16 weights, with
 *     and without bias, and is the same bits run to run;
 *   - host ops and shaders interleaved in one recording run in recording
 *     order (submit and submit_async + wait);
 *   - a weight larger than a binding needs no split on the host path;
 *   - operand precision (gpu_cmd_set_precision, the job key `precision`):
 *     at bf16 and f16 an operand is the nearest value of that type (core/
 *     half.c's conversions, ties, binary16's subnormals and overflow
 *     included) on both paths, linear and matmul give on both paths the
 *     bits of a plain sum over k of the rounded operands, and attention
 *     agrees with a double reference of rounded q, k, v and numerators
 *     while differing from f32;
 *   - ops_linear_gated_add is the bits of ops_linear then ops_gated_add
 *     (ops_add_mul for a per-token gate) on both paths: f32/f16/bf16
 *     weights, with and without bias, gate absent, [B, D] (a row of a
 *     [B, 6, D] table), [D], per token, bf16; activations; in place and
 *     not; rows not a multiple of any tile, 1-4 rows (the GEMV variant)
 *     and K % 4 != 0 (the shader path's unfused fallback).
 * Exits 77 without a Vulkan device.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "gpu/internal.h"
#include "gpu/ops.h"
#include "tests/test.h"

struct env {
	struct gpu_ctx *ctx;
	struct gpu_pool *pool;
	struct gpu_cmd *cmd;
};

static struct env host, shade;	/* LATENTQ_GPU_HOST_GEMM=1 / =0 */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

#define SH(...) ((const int64_t[]){__VA_ARGS__})

static float
frand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static float *
rand_host(size_t n)
{
	float *h = xmalloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		h[i] = frand();
	return h;
}

static void
die(const struct lq_error *err)
{
	error_print(err, stderr);
	exit(99);
}

/* A pool tensor of `e` holding h (converted to dt), or zeros when NULL. */
static struct gpu_tensor
put(struct env *e, enum gpu_dtype dt, int nd, const int64_t *shape,
    const float *h)
{
	struct gpu_tensor t;
	struct lq_error err;
	error_clear(&err);
	if (gpu_pool_tensor(e->pool, dt, nd, shape, &t, &err) != LQ_OK)
		die(&err);
	size_t n = (size_t)gpu_tensor_numel(&t);
	float *z = NULL;
	if (h == NULL)
		h = z = xcalloc(n, sizeof(float));
	if (gpu_tensor_upload_f32(e->ctx, &t, h, &err) != LQ_OK)
		die(&err);
	free(z);
	return t;
}

static float *
get(struct env *e, const struct gpu_tensor *t)
{
	struct lq_error err;
	error_clear(&err);
	float *h = xmalloc((size_t)gpu_tensor_numel(t) * sizeof(float));
	if (gpu_tensor_download_f32(e->ctx, t, h, &err) != LQ_OK)
		die(&err);
	return h;
}

static void
submit(struct env *e)
{
	struct lq_error err;
	error_clear(&err);
	if (gpu_cmd_submit(e->cmd, &err) != LQ_OK)
		die(&err);
}

/* max |a - b| / (1 + |b|) over n */
static double
max_rel(const float *a, const float *b, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]) / (1.0 + fabs(b[i]));
		if (!(d <= m))
			m = d;
	}
	return m;
}

/* y = act(x · wᵀ + b) on env e from host arrays; returns y (malloc'd). */
static float *
linear_on(struct env *e, int64_t M, int64_t N, int64_t K, enum gpu_dtype dt,
    const float *x, const float *w, const float *b, enum ops_act act)
{
	gpu_pool_reset(e->pool, 0);
	struct gpu_tensor tx = put(e, GPU_F32, 2, SH(M, K), x);
	struct gpu_tensor tw = put(e, dt, 2, SH(N, K), w);
	struct gpu_tensor tb = b ? put(e, dt, 1, SH(N), b) : (struct gpu_tensor){0};
	struct gpu_tensor ty = put(e, GPU_F32, 2, SH(M, N), NULL);
	gpu_cmd_begin(e->cmd);
	CHECK_INT(ops_linear(e->cmd, &ty, &tx, &tw, b ? &tb : NULL, act), LQ_OK);
	submit(e);
	return get(e, &ty);
}

static void
test_variant(void)
{
	const char *v = gpu_ctx_gemm_variant(host.ctx);
	printf("host variant: %s\n", v);
	CHECK(strcmp(v, "host-gemm:6x16 fma t=2 conv3d=im2col") == 0 ||
	    strcmp(v, "host-gemm:6x16 mul-add t=2 conv3d=im2col") == 0);
	CHECK_STR(gpu_ctx_gemm_variant(shade.ctx), "shader");
	/* the default on a CPU device is the host path */
	unsetenv("LATENTQ_GPU_HOST_GEMM");
	struct lq_error err;
	error_clear(&err);
	struct gpu_ctx *c;
	if (gpu_ctx_create(NULL, &c, &err) != LQ_OK)
		die(&err);
	if (strcmp(gpu_ctx_caps(c)->device_type, "cpu") == 0)
		CHECK_STR(gpu_ctx_gemm_variant(c), v);
	else
		CHECK_STR(gpu_ctx_gemm_variant(c), "shader");
	gpu_ctx_free(c);
	setenv("LATENTQ_GEMM_THREADS", "1", 1);
	if (gpu_ctx_create(NULL, &c, &err) != LQ_OK)
		die(&err);
	if (strcmp(gpu_ctx_caps(c)->device_type, "cpu") == 0)
		CHECK(strstr(gpu_ctx_gemm_variant(c), " t=1") != NULL);
	gpu_ctx_free(c);
	unsetenv("LATENTQ_GEMM_THREADS");
}

/* Host and shader linear agree; every dtype and activation. */
static void
test_linear_matches(void)
{
	static const enum gpu_dtype dts[3] = {GPU_F32, GPU_F16, GPU_BF16};
	static const enum ops_act acts[] = {OPS_ACT_NONE, OPS_ACT_GELU_TANH,
	    OPS_ACT_SILU, OPS_ACT_RELU, OPS_ACT_GELU, OPS_ACT_TANH,
	    OPS_ACT_SIGMOID};
	int64_t M = 300, N = 72, K = 96;
	for (int d = 0; d < 3; d++) {
		for (size_t a = 0; a < sizeof(acts) / sizeof(acts[0]); a++) {
			float *x = rand_host((size_t)(M * K));
			float *w = rand_host((size_t)(N * K));
			float *b = rand_host((size_t)N);
			unsigned h0 = 0;
			float *yh = linear_on(&host, M, N, K, dts[d], x, w,
			    a % 2 ? b : NULL, acts[a]);
			h0 = gpu_cmd_host_op_count(host.cmd);
			float *ys = linear_on(&shade, M, N, K, dts[d], x, w,
			    a % 2 ? b : NULL, acts[a]);
			CHECK_INT(h0, 1);
			CHECK_INT(gpu_cmd_host_op_count(shade.cmd), 0);
			double r = max_rel(yh, ys, (size_t)(M * N));
			if (!(r < 2e-5))
				printf("linear %s act %d: max rel %g\n",
				    gpu_dtype_name(dts[d]), (int)acts[a], r);
			CHECK(r < 2e-5);
			free(x);
			free(w);
			free(b);
			free(yh);
			free(ys);
		}
	}
}

/*
 * Run to run, and a row's bits whatever rows share its call: the whole
 * batch, shards at several offsets (a mesh's), single rows.
 */
static void
test_rows_bits(void)
{
	static const int64_t Ks[] = {64, 100, 1000, 2048};
	static const int64_t Ns[] = {8, 96, 640};
	for (size_t ki = 0; ki < 4; ki++) {
		for (size_t ni = 0; ni < 3; ni++) {
			int64_t M = 600, N = Ns[ni], K = Ks[ki];
			float *x = rand_host((size_t)(M * K));
			float *w = rand_host((size_t)(N * K));
			float *b = rand_host((size_t)N);
			float *all = linear_on(&host, M, N, K, GPU_BF16, x, w, b,
			    OPS_ACT_GELU_TANH);
			float *again = linear_on(&host, M, N, K, GPU_BF16, x, w,
			    b, OPS_ACT_GELU_TANH);
			CHECK(memcmp(all, again, (size_t)(M * N) * 4) == 0);
			free(again);
			static const int64_t offs[] = {0, 1, 5, 255, 300, 599};
			static const int64_t ms[] = {1, 2, 7, 256, 257, 300};
			int same = 1, tried = 0;
			for (size_t oi = 0; oi < 6; oi++) {
				for (size_t mi = 0; mi < 6; mi++) {
					int64_t o = offs[oi], m = ms[mi];
					if (o + m > M)
						continue;
					float *part = linear_on(&host, m, N, K,
					    GPU_BF16, x + o * K, w, b,
					    OPS_ACT_GELU_TANH);
					tried++;
					if (memcmp(part, all + o * N, (size_t)(m *
					    N) * 4) != 0) {
						same = 0;
						printf("rows %lld+%lld of N=%lld "
						    "K=%lld differ from the "
						    "whole batch's\n",
						    (long long)o, (long long)m,
						    (long long)N, (long long)K);
					}
					free(part);
				}
			}
			CHECK(tried > 20);
			CHECK(same);
			free(x);
			free(w);
			free(b);
			free(all);
		}
	}
}

/*
 * The shaders too: a few rows go through linear.comp's GEMV variant, many
 * through its tiles; a row's bits are the same either way (the same fma
 * chain), so a data-parallel shard of a timestep projection matches the
 * whole batch's.
 */
static void
test_gemv_bits(void)
{
	static const enum gpu_dtype dts[] = {GPU_F32, GPU_F16, GPU_BF16};
	for (size_t di = 0; di < 3; di++) {
		int64_t M = 300, N = 70, K = 132;
		float *x = rand_host((size_t)(M * K));
		float *w = rand_host((size_t)(N * K));
		float *b = rand_host((size_t)N);
		float *all = linear_on(&shade, M, N, K, dts[di], x, w, b,
		    OPS_ACT_SILU);
		int same = 1;
		for (int64_t m = 1; m <= 4; m++) {
			for (int64_t o = 0; o + m <= M; o += 97) {
				float *part = linear_on(&shade, m, N, K, dts[di],
				    x + o * K, w, b, OPS_ACT_SILU);
				if (memcmp(part, all + o * N, (size_t)(m * N) *
				    4) != 0) {
					same = 0;
					printf("gemv: rows %lld+%lld (dtype %d) "
					    "differ from the tiled call's\n",
					    (long long)o, (long long)m, (int)dts[di]);
				}
				free(part);
			}
		}
		CHECK(same);
		free(x);
		free(w);
		free(b);
		free(all);
	}
}

/* c = alpha · a · op(b), batched and broadcast, on env e */
static float *
matmul_on(struct env *e, int64_t ab, int64_t bb, int64_t batch, int64_t M,
    int64_t N, int64_t K, int trans_b, enum gpu_dtype dt, const float *a,
    const float *b, float alpha)
{
	gpu_pool_reset(e->pool, 0);
	struct gpu_tensor ta = put(e, GPU_F32, 3, SH(ab, M, K), a);
	struct gpu_tensor tb = trans_b ? put(e, dt, 3, SH(bb, N, K), b) :
	    put(e, dt, 3, SH(bb, K, N), b);
	struct gpu_tensor tc = put(e, GPU_F32, 3, SH(batch, M, N), NULL);
	gpu_cmd_begin(e->cmd);
	CHECK_INT(ops_matmul(e->cmd, &tc, &ta, &tb, trans_b, alpha), LQ_OK);
	submit(e);
	return get(e, &tc);
}

static void
test_matmul_matches(void)
{
	struct {
		int64_t ab, bb, batch, M, N, K;
		int trans_b;
		enum gpu_dtype dt;
		float alpha;
	} cs[] = {
		{3, 3, 3, 70, 50, 40, 0, GPU_F32, 1.0f},
		{3, 3, 3, 70, 50, 40, 1, GPU_F32, 0.125f},
		{1, 4, 4, 33, 17, 64, 1, GPU_F16, 2.0f},
		{4, 1, 4, 300, 24, 36, 0, GPU_BF16, 1.0f},
	};
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		float *a = rand_host((size_t)(cs[i].ab * cs[i].M * cs[i].K));
		float *b = rand_host((size_t)(cs[i].bb * cs[i].N * cs[i].K));
		float *ch = matmul_on(&host, cs[i].ab, cs[i].bb, cs[i].batch,
		    cs[i].M, cs[i].N, cs[i].K, cs[i].trans_b, cs[i].dt, a, b,
		    cs[i].alpha);
		CHECK_INT(gpu_cmd_host_op_count(host.cmd), 1);
		float *cs_ = matmul_on(&shade, cs[i].ab, cs[i].bb, cs[i].batch,
		    cs[i].M, cs[i].N, cs[i].K, cs[i].trans_b, cs[i].dt, a, b,
		    cs[i].alpha);
		double r = max_rel(ch, cs_, (size_t)(cs[i].batch * cs[i].M *
		    cs[i].N));
		if (!(r < 2e-5))
			printf("matmul case %zu: max rel %g\n", i, r);
		CHECK(r < 2e-5);
		free(a);
		free(b);
		free(ch);
		free(cs_);
	}
}

/*
 * Shaders and host ops interleaved in one recording, each reading what
 * the one before wrote: y1 = x·2+1 (shader), y2 = y1·w1ᵀ (host),
 * y3 = y2 + y2 (shader), y4 = silu(y3·w2ᵀ + b) (host), y5 = y4·0.5
 * (shader).  Compared with the shader-only context.
 */
static float *
chain_on(struct env *e, const float *x, const float *w1, const float *w2,
    const float *b, int async)
{
	int64_t M = 40, K = 32, N = 48;
	gpu_pool_reset(e->pool, 0);
	struct gpu_tensor tx = put(e, GPU_F32, 2, SH(M, K), x);
	struct gpu_tensor t1 = put(e, GPU_F32, 2, SH(M, K), NULL);
	struct gpu_tensor w1t = put(e, GPU_F16, 2, SH(N, K), w1);
	struct gpu_tensor t2 = put(e, GPU_F32, 2, SH(M, N), NULL);
	struct gpu_tensor t3 = put(e, GPU_F32, 2, SH(M, N), NULL);
	struct gpu_tensor w2t = put(e, GPU_F32, 2, SH(N, N), w2);
	struct gpu_tensor bt = put(e, GPU_F32, 1, SH(N), b);
	struct gpu_tensor t4 = put(e, GPU_F32, 2, SH(M, N), NULL);
	struct gpu_tensor t5 = put(e, GPU_F32, 2, SH(M, N), NULL);
	/* channel norms stay shaders on the host path: [M, C, 1] views */
	struct gpu_tensor tx3 = gpu_tensor_reshape(&tx, 3, SH(M, K, 1));
	struct gpu_tensor t13 = gpu_tensor_reshape(&t1, 3, SH(M, K, 1));
	struct gpu_tensor t43 = gpu_tensor_reshape(&t4, 3, SH(M, N, 1));
	struct gpu_tensor t53 = gpu_tensor_reshape(&t5, 3, SH(M, N, 1));
	gpu_cmd_begin(e->cmd);
	CHECK_INT(ops_rms_norm_channels(e->cmd, &t13, &tx3, NULL, 1e-6f), LQ_OK);
	CHECK_INT(ops_linear(e->cmd, &t2, &t1, &w1t, NULL, OPS_ACT_NONE), LQ_OK);
	CHECK_INT(ops_add(e->cmd, &t3, &t2, &t2), LQ_OK);
	CHECK_INT(ops_linear(e->cmd, &t4, &t3, &w2t, &bt, OPS_ACT_SILU), LQ_OK);
	CHECK_INT(ops_rms_norm_channels(e->cmd, &t53, &t43, NULL, 1e-6f), LQ_OK);
	struct lq_error err;
	error_clear(&err);
	if (async) {
		if (gpu_cmd_submit_async(e->cmd, &err) != LQ_OK ||
		    gpu_cmd_wait(e->cmd, &err) != LQ_OK)
			die(&err);
	} else {
		submit(e);
	}
	return get(e, &t5);
}

static void
test_interleaved(void)
{
	float *x = rand_host(40 * 32), *w1 = rand_host(48 * 32);
	float *w2 = rand_host(48 * 48), *b = rand_host(48);
	float *ref = chain_on(&shade, x, w1, w2, b, 0);
	for (int async = 0; async < 2; async++) {
		float *y = chain_on(&host, x, w1, w2, b, async);
		/* linear, add (host_rows.c), linear; the two channel norms */
		CHECK_INT(gpu_cmd_host_op_count(host.cmd), 3);
		CHECK_INT(gpu_cmd_dispatch_count(host.cmd), 2);
		double r = max_rel(y, ref, 40 * 48);
		if (!(r < 1e-4))
			printf("interleaved (async %d): max rel %g\n", async, r);
		CHECK(r < 1e-4);
		free(y);
	}
	free(ref);
	free(x);
	free(w1);
	free(w2);
	free(b);
}

/*
 * ops_attention on env e: q, k, v slices of fused [B, N, 3·H·Dh] tensors
 * (strided rows), key_bias [B, Nk] and, when with_bias, bias [B, H, Nq,
 * Nk] in bf16.
 */
static float *
attention_on(struct env *e, int64_t B, int64_t Nq, int64_t Nk, int64_t H,
    int64_t Dh, const float *xq, const float *xkv, const float *kbias,
    const float *bias)
{
	gpu_pool_reset(e->pool, 0);
	int64_t W = H * Dh;
	struct gpu_tensor tq = put(e, GPU_F32, 3, SH(B, Nq, 3 * W), xq);
	struct gpu_tensor tkv = put(e, GPU_F32, 3, SH(B, Nk, 3 * W), xkv);
	struct gpu_tensor q = gpu_tensor_slice(&tq, 2, W, W);
	struct gpu_tensor k = gpu_tensor_slice(&tkv, 2, 0, W);
	struct gpu_tensor v = gpu_tensor_slice(&tkv, 2, 2 * W, W);
	struct gpu_tensor kb = put(e, GPU_F32, 2, SH(B, Nk), kbias);
	struct gpu_tensor bt;
	if (bias != NULL)
		bt = put(e, GPU_BF16, 4, SH(B, H, Nq, Nk), bias);
	struct gpu_tensor out = put(e, GPU_F32, 3, SH(B, Nq, W), NULL);
	struct ops_attention_args args = {
		.heads = (int)H, .scale = 1.0f / sqrtf((float)Dh),
		.key_bias = &kb, .bias = bias != NULL ? &bt : NULL,
	};
	gpu_cmd_begin(e->cmd);
	CHECK_INT(ops_attention(e->cmd, &out, &q, &k, &v, &args), LQ_OK);
	submit(e);
	return get(e, &out);
}

/*
 * Host attention matches the shader's within rounding; it is the same
 * bits run to run, and on both paths a query row's bits do not depend on
 * which query rows share the call (a context-parallel shard's; the
 * shader's attn, attn_tex or, with LATENTQ_GPU_SUBGROUP=1, attn_sg).
 */
static void
test_attention(void)
{
	int64_t B = 2, Nq = 300, Nk = 290, H = 3, Dh = 32, W = H * Dh;
	for (int with_bias = 0; with_bias < 2; with_bias++) {
		float *xq = rand_host((size_t)(B * Nq * 3 * W));
		float *xkv = rand_host((size_t)(B * Nk * 3 * W));
		float *kb = rand_host((size_t)(B * Nk));
		for (int64_t j = 0; j < B * Nk; j++)	/* some masked keys */
			kb[j] = j % 7 == 3 ? -10000.0f : kb[j];
		float *bias = with_bias ? rand_host((size_t)(B * H * Nq * Nk)) :
		    NULL;
		float *yh = attention_on(&host, B, Nq, Nk, H, Dh, xq, xkv, kb,
		    bias);
		CHECK_INT(gpu_cmd_host_op_count(host.cmd), 1);
		float *again = attention_on(&host, B, Nq, Nk, H, Dh, xq, xkv,
		    kb, bias);
		CHECK(memcmp(yh, again, (size_t)(B * Nq * W) * 4) == 0);
		float *ys = attention_on(&shade, B, Nq, Nk, H, Dh, xq, xkv, kb,
		    bias);
		double r = max_rel(yh, ys, (size_t)(B * Nq * W));
		if (!(r < 1e-5))
			printf("attention (bias %d): max rel %g\n", with_bias, r);
		CHECK(r < 1e-5);
		/* queries o..o+m-1 of each sample alone (with the bias:
		 * its rows of those queries) */
		static const int64_t os[] = {5, 1, 7, 100, 299};
		static const int64_t msz[] = {257, 1, 13, 6, 1};
		for (size_t si = 0; si < sizeof(os) / sizeof(os[0]); si++) {
			int64_t o = os[si], m = msz[si];
			float *sq = xmalloc((size_t)(B * m * 3 * W) * 4);
			for (int64_t b = 0; b < B; b++)
				memcpy(sq + b * m * 3 * W, xq + (b * Nq + o) *
				    3 * W, (size_t)(m * 3 * W) * 4);
			float *sb = NULL;
			if (bias != NULL) {
				sb = xmalloc((size_t)(B * H * m * Nk) * 4);
				for (int64_t bh = 0; bh < B * H; bh++)
					memcpy(sb + bh * m * Nk, bias + (bh * Nq +
					    o) * Nk, (size_t)(m * Nk) * 4);
			}
			for (int path = 0; path < 2; path++) {
				float *whole = path ? ys : yh;
				float *part = attention_on(path ? &shade : &host,
				    B, m, Nk, H, Dh, sq, xkv, kb, sb);
				int same = 1;
				for (int64_t b = 0; b < B; b++)
					same &= memcmp(part + b * m * W, whole +
					    (b * Nq + o) * W, (size_t)(m * W) *
					    4) == 0;
				if (!same)
					printf("attention %s (bias %d): queries "
					    "%lld+%lld alone differ\n", path ?
					    "shader" : "host", with_bias,
					    (long long)o, (long long)m);
				CHECK(same);
				free(part);
			}
			free(sq);
			free(sb);
		}
		free(xq);
		free(xkv);
		free(kb);
		free(bias);
		free(yh);
		free(again);
		free(ys);
	}
}

/*
 * The same bits on 1, 2 and 3 threads (LATENTQ_GEMM_THREADS): a linear
 * with every task size's tail (M = 301), a batched matmul, attention.
 */
static void
test_threads(void)
{
	int64_t M = 301, N = 200, K = 130;
	float *x = rand_host((size_t)(M * K)), *w = rand_host((size_t)(N * K));
	float *b = rand_host((size_t)N);
	float *ref = linear_on(&host, M, N, K, GPU_F16, x, w, b, OPS_ACT_SILU);
	float *ma = rand_host(4 * 70 * 40), *mb = rand_host(4 * 40 * 50);
	float *mref = matmul_on(&host, 4, 4, 4, 70, 50, 40, 0, GPU_F32, ma, mb,
	    0.5f);
	int64_t B = 2, Nq = 50, Nk = 70, H = 3, Dh = 16, W = H * Dh;
	float *xq = rand_host((size_t)(B * Nq * 3 * W));
	float *xkv = rand_host((size_t)(B * Nk * 3 * W));
	float *kb = rand_host((size_t)(B * Nk));
	float *aref = attention_on(&host, B, Nq, Nk, H, Dh, xq, xkv, kb, NULL);
	static const char *const ts[] = {"1", "3"};
	for (int i = 0; i < 2; i++) {
		setenv("LATENTQ_GPU_HOST_GEMM", "1", 1);
		setenv("LATENTQ_GEMM_THREADS", ts[i], 1);
		struct lq_error err;
		error_clear(&err);
		struct env e;
		if (gpu_ctx_create(NULL, &e.ctx, &err) != LQ_OK ||
		    gpu_pool_create(e.ctx, (size_t)16 << 20, &e.pool, &err) !=
		    LQ_OK || gpu_cmd_create(e.ctx, &e.cmd, &err) != LQ_OK)
			die(&err);
		unsetenv("LATENTQ_GEMM_THREADS");
		char t[8];
		snprintf(t, sizeof(t), " t=%s ", ts[i]);
		CHECK(strstr(gpu_ctx_gemm_variant(e.ctx), t) != NULL);
		float *y = linear_on(&e, M, N, K, GPU_F16, x, w, b, OPS_ACT_SILU);
		CHECK(memcmp(y, ref, (size_t)(M * N) * 4) == 0);
		float *my = matmul_on(&e, 4, 4, 4, 70, 50, 40, 0, GPU_F32, ma, mb,
		    0.5f);
		CHECK(memcmp(my, mref, 4 * 70 * 50 * 4) == 0);
		float *ay = attention_on(&e, B, Nq, Nk, H, Dh, xq, xkv, kb, NULL);
		CHECK(memcmp(ay, aref, (size_t)(B * Nq * W) * 4) == 0);
		free(y);
		free(my);
		free(ay);
		gpu_cmd_free(e.cmd);
		gpu_pool_free(e.pool);
		gpu_ctx_free(e.ctx);
	}
	free(x);
	free(w);
	free(b);
	free(ref);
	free(ma);
	free(mb);
	free(mref);
	free(xq);
	free(xkv);
	free(kb);
	free(aref);
}

/* y = conv3d(x, w, b) on env e (ops_conv3d), y's shape from the op's rule */
static float *
conv_on(struct env *e, const int64_t *xs, const int64_t *ws, enum gpu_dtype dt,
    const float *x, const float *w, const float *b,
    const struct ops_conv3d_params *p, int64_t *yn)
{
	gpu_pool_reset(e->pool, 0);
	int64_t ys[5] = {xs[0], ws[0], 0, 0, 0};
	const int *pads[3] = {p->pad_t, p->pad_h, p->pad_w};
	for (int i = 0; i < 3; i++) {
		int st = p->stride[i] > 0 ? p->stride[i] : 1;
		ys[2 + i] = (xs[2 + i] + pads[i][0] + pads[i][1] - ws[2 + i]) /
		    st + 1;
	}
	*yn = ys[0] * ys[1] * ys[2] * ys[3] * ys[4];
	struct gpu_tensor tx = put(e, GPU_F32, 5, xs, x);
	struct gpu_tensor tw = put(e, dt, 5, ws, w);
	struct gpu_tensor tb = b ? put(e, dt, 1, SH(ws[0]), b) :
	    (struct gpu_tensor){0};
	struct gpu_tensor ty = put(e, GPU_F32, 5, ys, NULL);
	gpu_cmd_begin(e->cmd);
	CHECK_INT(ops_conv3d(e->cmd, &ty, &tx, &tw, b ? &tb : NULL, p), LQ_OK);
	submit(e);
	return get(e, &ty);
}

static void
test_conv3d(void)
{
	struct {
		int64_t Ci, Co, F, H, W, kt, kh, kw;
		struct ops_conv3d_params p;
		enum gpu_dtype dt;
		int bias;
	} cs[] = {
		{8, 20, 5, 9, 7, 3, 3, 3, {.pad_t = {2, 0}, .pad_h = {1, 1},
		    .pad_w = {1, 1}, .t_mode = OPS_PAD_REPLICATE}, GPU_BF16, 1},
		{5, 16, 4, 6, 6, 3, 3, 3, {.pad_t = {1, 1}, .pad_h = {1, 1},
		    .pad_w = {1, 1}, .t_mode = OPS_PAD_ZERO,
		    .s_mode = OPS_PAD_REFLECT}, GPU_F16, 0},
		{6, 7, 5, 8, 10, 3, 3, 3, {.stride = {2, 2, 2}, .pad_t = {1, 1},
		    .pad_h = {1, 1}, .pad_w = {1, 1},
		    .t_mode = OPS_PAD_REPLICATE, .s_mode = OPS_PAD_REPLICATE},
		    GPU_F32, 1},
		{12, 9, 3, 5, 5, 1, 1, 1, {.stride = {1, 1, 1}}, GPU_F32, 1},
	};
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		int64_t xs[5] = {2, cs[i].Ci, cs[i].F, cs[i].H, cs[i].W};
		int64_t ws[5] = {cs[i].Co, cs[i].Ci, cs[i].kt, cs[i].kh, cs[i].kw};
		size_t nx = (size_t)(2 * cs[i].Ci * cs[i].F * cs[i].H * cs[i].W);
		size_t nw = (size_t)(ws[0] * ws[1] * ws[2] * ws[3] * ws[4]);
		float *x = rand_host(nx), *w = rand_host(nw);
		float *b = rand_host((size_t)cs[i].Co);
		int64_t n, n2;
		float *yh = conv_on(&host, xs, ws, cs[i].dt, x, w,
		    cs[i].bias ? b : NULL, &cs[i].p, &n);
		CHECK_INT(gpu_cmd_host_op_count(host.cmd), 1);
		float *again = conv_on(&host, xs, ws, cs[i].dt, x, w,
		    cs[i].bias ? b : NULL, &cs[i].p, &n2);
		CHECK(memcmp(yh, again, (size_t)n * 4) == 0);
		float *ys = conv_on(&shade, xs, ws, cs[i].dt, x, w,
		    cs[i].bias ? b : NULL, &cs[i].p, &n2);
		CHECK_INT(gpu_cmd_host_op_count(shade.cmd), 0);
		double r = max_rel(yh, ys, (size_t)n);
		if (!(r < 2e-5))
			printf("conv3d case %zu: max rel %g\n", i, r);
		CHECK(r < 2e-5);
		free(x);
		free(w);
		free(b);
		free(yh);
		free(again);
		free(ys);
	}
}

/* A weight larger than a (lowered) binding: no split, one host op. */
static void
test_no_split(void)
{
	setenv("LATENTQ_GPU_HOST_GEMM", "1", 1);
	setenv("LATENTQ_GPU_MAX_BINDING", "65536", 1);
	struct lq_error err;
	error_clear(&err);
	struct env e;
	if (gpu_ctx_create(NULL, &e.ctx, &err) != LQ_OK ||
	    gpu_pool_create(e.ctx, (size_t)4 << 20, &e.pool, &err) != LQ_OK ||
	    gpu_cmd_create(e.ctx, &e.cmd, &err) != LQ_OK)
		die(&err);
	unsetenv("LATENTQ_GPU_MAX_BINDING");
	int64_t M = 8, N = 64, K = 20000;	/* one row of x > 65536 bytes */
	float *x = rand_host((size_t)(M * K)), *w = rand_host((size_t)(N * K));
	float *y = linear_on(&e, M, N, K, GPU_BF16, x, w, NULL, OPS_ACT_NONE);
	CHECK_INT(gpu_cmd_host_op_count(e.cmd), 1);
	CHECK_INT(gpu_cmd_dispatch_count(e.cmd), 0);
	float *ys = linear_on(&shade, M, N, K, GPU_BF16, x, w, NULL,
	    OPS_ACT_NONE);
	double r = max_rel(y, ys, (size_t)(M * N));
	printf("no split: max rel %g\n", r);
	/* sums of 20000 terms of about ±0.3 (|y| ~ 40): both orders round
	 * to within 1e-3 of |y| + 1 */
	CHECK(r < 1e-3);
	free(x);
	free(w);
	free(y);
	free(ys);
	gpu_cmd_free(e.cmd);
	gpu_pool_free(e.pool);
	gpu_ctx_free(e.ctx);
}

/* ---- operand precision ---- */

static const enum gpu_precision precs[2] = {GPU_PRECISION_BF16,
    GPU_PRECISION_F16};

/* x as operand precision p multiplies it: core/half.c there and back */
static float
round_ref(float x, enum gpu_precision p)
{
	if (p == GPU_PRECISION_BF16)
		return half_bf16_to_f32(half_f32_to_bf16(x));
	if (p == GPU_PRECISION_F16)
		return half_f16_to_f32(half_f32_to_f16(x));
	return x;
}

/* x as a tensor of dtype dt holds it */
static float
stored(float x, enum gpu_dtype dt)
{
	return dt == GPU_F16 ? round_ref(x, GPU_PRECISION_F16) :
	    dt == GPU_BF16 ? round_ref(x, GPU_PRECISION_BF16) : x;
}

static int
same_bits(float a, float b)
{
	return memcmp(&a, &b, sizeof(a)) == 0;
}

/*
 * The host path's vectorized rounding (gpu_host_round_n, what every
 * operand of a reduced-precision GEMM or attention goes through) gives
 * gpu_host_round's bits, and core/half.c's there-and-back for numbers:
 * every exponent and sign with the low 16 bits at and around each
 * rounding boundary, a sweep of 2^25 patterns, in place and apart, at
 * lengths that leave every vector remainder.
 */
static void
test_precision_round_n(void)
{
	static const uint32_t low[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001,
	    0x1fff, 0x2000, 0x2001, 0x3000, 0x5000, 0x7fff, 0x8000, 0x8001,
	    0xbfff, 0xc000, 0xefff, 0xf000, 0xffff};
	int64_t nl = (int64_t)(sizeof(low) / sizeof(low[0]));
	int64_t n = 65536 * nl + (1 << 25);
	float *x = malloc((size_t)n * sizeof(float));
	float *y = malloc((size_t)n * sizeof(float));
	CHECK(x != NULL && y != NULL);
	int64_t i = 0;
	for (uint32_t hi = 0; hi < 65536; hi++)
		for (int64_t l = 0; l < nl; l++) {
			uint32_t u = hi << 16 | low[l];
			memcpy(&x[i++], &u, 4);
		}
	for (uint32_t k = 0; k < (1u << 25); k++) {
		uint32_t u = k * 128u + (k * 2654435761u >> 25);
		memcpy(&x[i++], &u, 4);
	}
	static const unsigned pr[2] = {LQ_PREC_BF16, LQ_PREC_F16};
	for (int p = 0; p < 2; p++) {
		int64_t bad = 0;
		gpu_host_round_n(y, x, n, pr[p]);
		for (i = 0; i < n; i++) {
			float want = gpu_host_round(x[i], pr[p]);
			if (!same_bits(y[i], want) || (!isnan(x[i]) &&
			    !same_bits(want, round_ref(x[i], precs[p])))) {
				if (bad++ < 5)
					printf("%s: round_n(%a) = %a, not %a\n",
					    p ? "f16" : "bf16", x[i], y[i], want);
			}
		}
		if (bad != 0)
			printf("%s: vectorized rounding, %lld of %lld patterns "
			    "wrong\n", p ? "f16" : "bf16", (long long)bad,
			    (long long)n);
		CHECK_INT(bad, 0);
		/* in place, and every length up to 40 from every offset */
		bad = 0;
		for (int64_t len = 1; len <= 40; len++)
			for (int64_t off = 0; off < 8; off++) {
				float a[48], b[48];
				memcpy(a, x + 65536 * 3 + len * 7 + off, sizeof(a));
				memcpy(b, a, sizeof(b));
				gpu_host_round_n(b + off, b + off, len, pr[p]);
				for (int64_t j = 0; j < 48; j++) {
					float w = j >= off && j < off + len ?
					    gpu_host_round(a[j], pr[p]) : a[j];
					if (!same_bits(b[j], w))
						bad++;
				}
			}
		if (bad != 0)
			printf("%s: in-place rounding of short runs touched "
			    "or missed %lld values\n", p ? "f16" : "bf16",
			    (long long)bad);
		CHECK_INT(bad, 0);
	}
	gpu_host_round_n(y, x, 1000, LQ_PREC_F32);
	/* f32: a copy */
	CHECK(memcmp(x, y, 1000 * sizeof(float)) == 0);
	free(x);
	free(y);
}

/*
 * Each path's rounding, value by value: rows [v, 0, 0, 0] times the
 * identity give round(v) in column 0 (the other products are exact
 * zeros), for ties, both types' extremes, binary16's subnormals and
 * overflow, and a sweep of bit patterns.
 */
static void
test_precision_round(void)
{
	static const float edge[] = {0.0f, -0.0f, 1.0f, -1.5f, 65504.0f,
	    65519.996f, 65520.0f, -65536.0f, 1e6f, 3.0e38f, 6.1035156e-5f,
	    6.0975552e-5f, 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f,
	    8.940697e-8f, 1.0e-10f, 1.00390625f, 1.01171875f, 1.0009766f,
	    1.0029297f, 1e-40f};
	int64_t n0 = (int64_t)(sizeof(edge) / sizeof(edge[0]));
	int64_t M = n0 + 4000, K = 4;
	float *x = xcalloc((size_t)(M * K), sizeof(float));
	float w[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
	for (int64_t i = 0; i < M; i++) {
		float v;
		if (i < n0) {
			v = edge[i];
		} else {
			/* a stride through the finite floats */
			uint32_t u = (uint32_t)(i - n0) * 1073741u;
			u &= 0xbfffffffu;	/* below 2^1 in magnitude... */
			u |= (uint32_t)(i & 1) << 30;	/* ...or above */
			memcpy(&v, &u, 4);
			if (!isfinite(v))
				v = 1.0f;
		}
		x[i * K] = v;
	}
	for (int p = 0; p < 2; p++) {
		struct env *es[2] = {&host, &shade};
		for (int e = 0; e < 2; e++) {
			gpu_cmd_set_precision(es[e]->cmd, precs[p]);
			float *y = linear_on(es[e], M, 4, K, GPU_F32, x, w, NULL,
			    OPS_ACT_NONE);
			gpu_cmd_set_precision(es[e]->cmd, GPU_PRECISION_F32);
			int bad = 0;
			for (int64_t i = 0; i < M; i++) {
				/* + 0: the zero products make -0 +0 */
				float want = round_ref(x[i * K], precs[p]) + 0.0f;
				if (!same_bits(y[i * 4], want) && bad++ < 5)
					printf("%s %s: round(%a) = %a, not %a\n",
					    e ? "shader" : "host",
					    gpu_precision_name(precs[p]),
					    (double)x[i * K], (double)y[i * 4],
					    (double)want);
			}
			CHECK_INT(bad, 0);
			free(y);
		}
	}
	free(x);
}

/*
 * Linear and matmul at bf16 / f16: both paths give exactly Σ_k rx·rw in
 * k order (each product exact in fp32) times alpha plus the bias, and
 * not the f32 result.  K 96 takes linear.comp (and its GEMV variant for
 * M <= 4), K 30 and b [K, N] the generic matmul.comp.
 */
static void
test_precision_gemm(void)
{
	static const enum gpu_dtype dts[3] = {GPU_F32, GPU_F16, GPU_BF16};
	struct {
		int64_t M, N, K;
		int trans_b;
		float alpha;
	} cs[] = {
		{300, 72, 96, 1, 1.0f}, {3, 40, 96, 1, 1.0f},
		{77, 33, 30, 1, 1.0f}, {50, 20, 96, 0, 0.25f},
	};
	for (int p = 0; p < 2; p++)
	for (int d = 0; d < 3; d++)
	for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++) {
		int64_t M = cs[c].M, N = cs[c].N, K = cs[c].K;
		int linear = cs[c].trans_b && cs[c].alpha == 1.0f;
		float *x = rand_host((size_t)(M * K));
		float *w = rand_host((size_t)(N * K));
		float *b = rand_host((size_t)N);
		float *want = xmalloc((size_t)(M * N) * sizeof(float));
		for (int64_t i = 0; i < M; i++)
			for (int64_t n = 0; n < N; n++) {
				float acc = 0.0f;
				for (int64_t k = 0; k < K; k++) {
					float wv = stored(cs[c].trans_b ?
					    w[n * K + k] : w[k * N + n], dts[d]);
					acc += round_ref(x[i * K + k], precs[p]) *
					    round_ref(wv, precs[p]);
				}
				want[i * N + n] = linear ? acc +
				    stored(b[n], dts[d]) : cs[c].alpha * acc;
			}
		struct env *es[2] = {&host, &shade};
		float *y[2];
		for (int e = 0; e < 2; e++) {
			gpu_cmd_set_precision(es[e]->cmd, precs[p]);
			y[e] = linear ? linear_on(es[e], M, N, K, dts[d], x, w, b,
			    OPS_ACT_NONE) : matmul_on(es[e], 1, 1, 1, M, N, K,
			    cs[c].trans_b, dts[d], x, w, cs[c].alpha);
			gpu_cmd_set_precision(es[e]->cmd, GPU_PRECISION_F32);
			CHECK(memcmp(y[e], want, (size_t)(M * N) *
			    sizeof(float)) == 0);
		}
		float *y32 = linear ? linear_on(&host, M, N, K, dts[d], x, w, b,
		    OPS_ACT_NONE) : matmul_on(&host, 1, 1, 1, M, N, K,
		    cs[c].trans_b, dts[d], x, w, cs[c].alpha);
		CHECK(memcmp(y32, want, (size_t)(M * N) * sizeof(float)) != 0);
		free(x);
		free(w);
		free(b);
		free(want);
		free(y[0]);
		free(y[1]);
		free(y32);
	}
}

/*
 * Attention at bf16 / f16 on both paths against a double reference of
 * rounded q, k, v and softmax numerators e^(s - max) (their sum
 * unrounded): the host's one-pass softmax within float rounding of it,
 * the shaders' online softmax, whose numerators are rounded against the
 * running maximum as FlashAttention's are, within a few of the type's
 * ulps; the f32 result further from it than either.
 */
static void
test_precision_attention(void)
{
	int64_t B = 2, Nq = 70, Nk = 50, H = 2, Dh = 32, W = H * Dh;
	float *xq = rand_host((size_t)(B * Nq * 3 * W));
	float *xkv = rand_host((size_t)(B * Nk * 3 * W));
	float *kb = rand_host((size_t)(B * Nk));
	for (size_t i = 0; i < (size_t)(B * Nq * 3 * W); i++)
		xq[i] *= 4.0f;		/* peaked softmax rows */
	double *s = xmalloc((size_t)Nk * sizeof(double));
	for (int p = 0; p < 2; p++) {
		float *want = xmalloc((size_t)(B * Nq * W) * sizeof(float));
		for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++)
		for (int64_t i = 0; i < Nq; i++) {
			const float *q = xq + (b * Nq + i) * 3 * W + W + h * Dh;
			double mx = -1e300, l = 0;
			for (int64_t j = 0; j < Nk; j++) {
				const float *k = xkv + (b * Nk + j) * 3 * W + h * Dh;
				double dot = 0;
				for (int64_t d = 0; d < Dh; d++)
					dot += (double)round_ref(q[d], precs[p]) *
					    round_ref(k[d], precs[p]);
				s[j] = dot / sqrt((double)Dh) + kb[b * Nk + j];
				mx = s[j] > mx ? s[j] : mx;
			}
			for (int64_t j = 0; j < Nk; j++) {
				s[j] = exp(s[j] - mx);
				l += s[j];
				s[j] = round_ref((float)s[j], precs[p]);
			}
			for (int64_t d = 0; d < Dh; d++) {
				double o = 0;
				for (int64_t j = 0; j < Nk; j++)
					o += s[j] * round_ref(xkv[(b * Nk + j) *
					    3 * W + 2 * W + h * Dh + d], precs[p]);
				want[(b * Nq + i) * W + h * Dh + d] = (float)(o / l);
			}
		}
		struct env *es[2] = {&host, &shade};
		for (int e = 0; e < 2; e++) {
			gpu_cmd_set_precision(es[e]->cmd, precs[p]);
			float *y = attention_on(es[e], B, Nq, Nk, H, Dh, xq, xkv,
			    kb, NULL);
			gpu_cmd_set_precision(es[e]->cmd, GPU_PRECISION_F32);
			float *y32 = attention_on(es[e], B, Nq, Nk, H, Dh, xq, xkv,
			    kb, NULL);
			double r = max_rel(y, want, (size_t)(B * Nq * W));
			double r32 = max_rel(y32, want, (size_t)(B * Nq * W));
			printf("attention %s %s: max rel %g to the rounded "
			    "reference, f32 %g\n", e ? "shader" : "host",
			    gpu_precision_name(precs[p]), r, r32);
			double tol = e == 0 ? 1e-4 : precs[p] ==
			    GPU_PRECISION_BF16 ? 4e-3 : 5e-4;
			CHECK(r < tol);
			CHECK(r32 > 2 * r);
			free(y);
			free(y32);
		}
		free(want);
	}
	free(s);
	free(xq);
	free(xkv);
	free(kb);
}

/* ops_linear_gated_add's gate in the test: absent, row 2 of a [B, 6, D]
 * table (the models' ada rows), a [D] vector, per token (every other row
 * of a [B, 2N, D] tensor), a bf16 [B, D] */
enum gate_kind { GATE_NONE, GATE_ROW, GATE_VEC, GATE_TOKEN, GATE_BF16,
	GATE_KINDS };

struct gated_case {
	int64_t B, N, K, D;
	enum gpu_dtype dt;
	int bias, in_place;
	enum gate_kind gate;
	enum ops_act act;
};

/*
 * y = r + gate · act(x · wᵀ + b) on env e: fused (ops_linear_gated_add)
 * or as the pair it replaces (ops_linear into p, then ops_gated_add, or
 * ops_add_mul for the per-token gate).  x, w, b, r, gate: host arrays
 * (gate sized for the largest kind, B·2N·D).  Returns y (malloc'd); the
 * op's host ops and dispatches into *hops, *disp.
 */
static float *
gated_on(struct env *e, const struct gated_case *c, int fused,
    const float *x, const float *w, const float *b, const float *r,
    const float *gate, unsigned *hops, unsigned *disp)
{
	int64_t B = c->B, N = c->N, D = c->D;
	gpu_pool_reset(e->pool, 0);
	struct gpu_tensor tx = put(e, GPU_F32, 3, SH(B, N, c->K), x);
	struct gpu_tensor tw = put(e, c->dt, 2, SH(D, c->K), w);
	struct gpu_tensor tb = put(e, c->dt, 1, SH(D), b);
	struct gpu_tensor tr = put(e, GPU_F32, 3, SH(B, N, D), r);
	struct gpu_tensor ty = c->in_place ? tr : put(e, GPU_F32, 3,
	    SH(B, N, D), NULL);
	struct gpu_tensor tp = put(e, GPU_F32, 3, SH(B, N, D), NULL);
	struct gpu_tensor tg, *g = &tg;
	switch (c->gate) {
	case GATE_NONE:
		g = NULL;
		break;
	case GATE_ROW: {
		struct gpu_tensor tab = put(e, GPU_F32, 3, SH(B, 6, D), gate);
		tg = gpu_tensor_slice(&tab, 1, 2, 1);
		tg.ndim = 2;
		tg.shape[1] = D;
		tg.stride[1] = 1;
		break;
	}
	case GATE_VEC:
		tg = put(e, GPU_F32, 1, SH(D), gate);
		break;
	case GATE_TOKEN: {
		struct gpu_tensor two = put(e, GPU_F32, 3, SH(B, 2 * N, D), gate);
		tg = gpu_tensor_slice(&two, 1, 0, N);
		tg.stride[1] = 2 * D;
		break;
	}
	default:
		tg = put(e, GPU_BF16, 2, SH(B, D), gate);
		break;
	}
	const struct gpu_tensor *tbp = c->bias ? &tb : NULL;
	gpu_cmd_begin(e->cmd);
	if (fused) {
		CHECK_INT(ops_linear_gated_add(e->cmd, &ty, &tr, g, &tx, &tw, tbp,
		    c->act), LQ_OK);
	} else {
		CHECK_INT(ops_linear(e->cmd, &tp, &tx, &tw, tbp, c->act), LQ_OK);
		if (c->gate == GATE_TOKEN)
			CHECK_INT(ops_add_mul(e->cmd, &ty, &tr, &tp, g), LQ_OK);
		else
			CHECK_INT(ops_gated_add(e->cmd, &ty, &tr, g, &tp), LQ_OK);
	}
	*hops = gpu_cmd_host_op_count(e->cmd);
	*disp = gpu_cmd_dispatch_count(e->cmd);
	submit(e);
	return get(e, &ty);
}

/*
 * The fused op's bits are the pair's, on the host path and as shaders.
 * Inputs at scales where a fused multiply-add would round differently
 * from a product then a sum in many elements (so a contracted epilogue
 * fails here).
 */
static void
test_linear_gated_add(void)
{
	static const enum gpu_dtype dts[3] = {GPU_F32, GPU_F16, GPU_BF16};
	static const enum ops_act acts[3] = {OPS_ACT_NONE, OPS_ACT_GELU_TANH,
	    OPS_ACT_SILU};
	/* M = 302 rows: not a multiple of the host tile (6), its tasks (48)
	 * or the shader's (256); 3 rows: the GEMV variant; K 66: the
	 * shader path's fallback */
	static const int64_t shapes[3][4] = {{2, 151, 96, 72}, {1, 3, 64, 40},
	    {2, 37, 66, 24}};
	struct env *envs[2] = {&host, &shade};
	int n = 0, bad = 0;
	for (int si = 0; si < 3; si++)
	for (int d = 0; d < 3; d++)
	for (int gk = 0; gk < GATE_KINDS; gk++)
	for (int ip = 0; ip < 2; ip++) {
		struct gated_case c = {shapes[si][0], shapes[si][1],
		    shapes[si][2], shapes[si][3], dts[d], (d + gk + ip) % 2, ip,
		    (enum gate_kind)gk, acts[(d + gk) % 3]};
		int64_t M = c.B * c.N;
		float *x = rand_host((size_t)(M * c.K));
		float *w = rand_host((size_t)(c.D * c.K));
		float *b = rand_host((size_t)c.D);
		float *r = rand_host((size_t)(M * c.D));
		float *g = rand_host((size_t)(2 * M * c.D));
		for (int64_t i = 0; i < M * c.D; i++)
			r[i] *= 8.0f;
		for (int ei = 0; ei < 2; ei++) {
			unsigned h1, d1, h2, d2;
			float *yf = gated_on(envs[ei], &c, 1, x, w, b, r, g, &h1,
			    &d1);
			float *yu = gated_on(envs[ei], &c, 0, x, w, b, r, g, &h2,
			    &d2);
			n++;
			if (memcmp(yf, yu, (size_t)(M * c.D) * 4) != 0) {
				int64_t i = 0;
				while (memcmp(yf + i, yu + i, 4) == 0)
					i++;
				printf("linear_gated_add %s: B %lld N %lld K %lld "
				    "D %lld %s bias %d gate %d in place %d act "
				    "%d: [%lld] %.9g fused, %.9g apart\n",
				    ei ? "shader" : "host", (long long)c.B,
				    (long long)c.N, (long long)c.K, (long long)c.D,
				    gpu_dtype_name(c.dt), c.bias, gk, ip,
				    (int)c.act, (long long)i, (double)yf[i],
				    (double)yu[i]);
				bad++;
			}
			/* one host op on the host path; one dispatch as a
			 * shader where linear.comp applies (K % 4 == 0) */
			if (ei == 0)
				CHECK(h1 == 1 && d1 == 0 && h2 == 2);
			else
				CHECK(h1 == 0 && d1 == (c.K % 4 ? 2u : 1u) &&
				    d2 == 2);
			free(yf);
			free(yu);
		}
		free(x);
		free(w);
		free(b);
		free(r);
		free(g);
	}
	printf("linear_gated_add: %d of %d cases the pair's bits\n", n - bad,
	    n);
	CHECK(n == 2 * 3 * 3 * GATE_KINDS * 2);
	CHECK_INT(bad, 0);
}

static int
open_env(struct env *e, const char *host_gemm, struct lq_error *err)
{
	setenv("LATENTQ_GPU_HOST_GEMM", host_gemm, 1);
	if (gpu_ctx_create(NULL, &e->ctx, err) != LQ_OK)
		return strcmp(err->code, "LQ-GPU-NODEV") == 0 ? 77 : 99;
	if (gpu_pool_create(e->ctx, (size_t)64 << 20, &e->pool, err) != LQ_OK ||
	    gpu_cmd_create(e->ctx, &e->cmd, err) != LQ_OK)
		return 99;
	return 0;
}

int
main(void)
{
	struct lq_error err;
	error_clear(&err);
	log_set_level(LOG_LEVEL_WARN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	unsetenv("LATENTQ_GEMM_THREADS");
	int rc = open_env(&host, "1", &err);
	if (rc == 0)
		rc = open_env(&shade, "0", &err);
	if (rc != 0) {
		error_print(&err, stderr);
		return rc;
	}
	test_variant();
	test_linear_matches();
	test_rows_bits();
	test_gemv_bits();
	test_matmul_matches();
	test_interleaved();
	test_attention();
	test_threads();
	test_conv3d();
	test_no_split();
	test_precision_round();
	test_precision_round_n();
	test_precision_gemm();
	test_precision_attention();
	test_linear_gated_add();
	gpu_cmd_free(shade.cmd);
	gpu_pool_free(shade.pool);
	gpu_ctx_free(shade.ctx);
	gpu_cmd_free(host.cmd);
	gpu_pool_free(host.pool);
	gpu_ctx_free(host.ctx);
	return test_summary();
}
