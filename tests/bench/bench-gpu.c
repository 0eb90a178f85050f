/*
 * bench-gpu.c — `make bench`: throughput of the heavy kernels on the
 * default device as a fraction of this machine's fp32 FMA peak, beside
 * OpenBLAS sgemm doing the same GEMM work in the same run (issue 18).
 *
 * The peak is measured twice: fma.comp (FMA_CHAINS independent vec4
 * chains per invocation) on the device, and a C loop of FMA_C_CHAINS
 * independent FMA-intrinsic chains per core; on a CPU device the larger is
 * the peak, on a GPU the shader's.  Each row then reads
 *   time, GF/s, % of peak | sgemm GF/s, % of peak | latentq / sgemm
 * with sgemm (OpenBLAS, one thread per online CPU) at the row's shape:
 *   linear 4096x2048 -> 2048 and -> 8192, F32 and F16 weights
 *   attention seq 4096, head_dim 64, 32 heads (sgemm: q·kᵀ and p·v per head)
 *   the demo render's attention (2 x 320 tokens, 4 heads of 32) and
 *   linears (640 rows, 128 -> 128, 128 -> 512, 512 -> 128), and its
 *   residual updates (128 -> 128 and 512 -> 128 plus the gated add) as
 *   ops_linear + ops_gated_add and as ops_linear_gated_add
 *   conv3d VAE-like [1,128,5,64,64] -> 128, k3 causal (sgemm: im2col product)
 *   a chain of 100 small dispatches (one submit)
 *
 * LATENTQ_BENCH_QUICK=1 shrinks every shape 4x (for a smoke run);
 * LATENTQ_BENCH_ONLY=chain,linear,wide,attention,demo,conv picks some
 * (demo: the demo render's attention and linear shapes, at full size).
 * `bench-gpu sgemm M K N` prints only sgemm's GF/s for C[M,N] = A[M,K]·Bᵀ
 * (what tests/bench/bench-model.sh compares a whole forward with).
 */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "gpu/internal.h"
#include "gpu/ops.h"

#include <cblas.h>

static struct gpu_ctx *ctx;
static struct gpu_cmd *cmd;
static struct gpu_pool *pool;

/* ---- fp32 FMA peak ---- */

/*
 * The C loop: FMA_C_CHAINS independent accumulators per thread, one thread
 * per online CPU, through the FMA intrinsics (the project builds with
 * -ffp-contract=off, so `a * m + c` would be a multiply and an add: half
 * the rate, and latency-bound).  AVX-512 when the CPU has it, else
 * AVX2+FMA, else a scalar loop the compiler may vectorise.  The chains
 * must stay in registers: the inner loops are unrolled (an array left in
 * memory makes every FMA a load and a store), and AVX2's chains are 12,
 * with the two constants 14 of the 16 ymm registers (16 chains spilled and
 * read a quarter of Zen's peak) — still over the 10 that keep two FMA
 * pipes of latency 5 busy.
 */
#define FMA_C_CHAINS 16		/* AVX-512: 32 zmm registers */
#define FMA_C_CHAINS_AVX2 12
#define FMA_C_ITERS 20000000L

__attribute__((target("avx512f"))) static double
fma_loop_avx512(long iters)
{
	__m512 a[FMA_C_CHAINS], m = _mm512_set1_ps(1.0000001f),
	    c = _mm512_set1_ps(1e-7f);
	for (int i = 0; i < FMA_C_CHAINS; i++)
		a[i] = _mm512_set1_ps(1e-7f * (float)i);
	for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
		for (int i = 0; i < FMA_C_CHAINS; i++)
			a[i] = _mm512_fmadd_ps(a[i], m, c);
	}
	float s = 0;
	for (int i = 0; i < FMA_C_CHAINS; i++)
		s += _mm512_reduce_add_ps(a[i]);
	return s;
}

__attribute__((target("avx2,fma"))) static double
fma_loop_avx2(long iters)
{
	__m256 a[FMA_C_CHAINS_AVX2], m = _mm256_set1_ps(1.0000001f),
	    c = _mm256_set1_ps(1e-7f);
	for (int i = 0; i < FMA_C_CHAINS_AVX2; i++)
		a[i] = _mm256_set1_ps(1e-7f * (float)i);
	for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
		for (int i = 0; i < FMA_C_CHAINS_AVX2; i++)
			a[i] = _mm256_fmadd_ps(a[i], m, c);
	}
	float s = 0, f[8];
	for (int i = 0; i < FMA_C_CHAINS_AVX2; i++) {
		_mm256_storeu_ps(f, a[i]);
		s += f[0];
	}
	return s;
}

static double
fma_loop_generic(long iters)
{
	float a[32];
	for (int i = 0; i < 32; i++)
		a[i] = (float)i * 1e-7f;
	for (long it = 0; it < iters; it++)
		for (int i = 0; i < 32; i++)
			a[i] = fmaf(a[i], 1.0000001f, 1e-7f);
	float s = 0;
	for (int i = 0; i < 32; i++)
		s += a[i];
	return s;
}

static int simd_lanes;		/* 16 (AVX-512), 8 (AVX2+FMA) or 1 */
static volatile double sink;

static void *
fma_thread(void *arg)
{
	long iters = *(long *)arg;
	sink += simd_lanes == 16 ? fma_loop_avx512(iters) :
	    simd_lanes == 8 ? fma_loop_avx2(iters) : fma_loop_generic(iters);
	return NULL;
}

static double
fma_peak_c(void)
{
	__builtin_cpu_init();
	simd_lanes = __builtin_cpu_supports("avx512f") ? 16 :
	    __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ?
	    8 : 1;
	long nt = sysconf(_SC_NPROCESSORS_ONLN);
	if (nt < 1)
		nt = 1;
	if (nt > 256)
		nt = 256;
	long iters = FMA_C_ITERS / (simd_lanes == 1 ? 8 : 1);
	int chains = simd_lanes == 16 ? FMA_C_CHAINS : simd_lanes == 8 ?
	    FMA_C_CHAINS_AVX2 : 32;
	double flop_per_iter = chains * simd_lanes * 2.0;
	pthread_t th[256];
	double best = 0;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = util_monotonic();
		for (long i = 0; i < nt; i++)
			pthread_create(&th[i], NULL, fma_thread, &iters);
		for (long i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
		double g = flop_per_iter * (double)iters * (double)nt /
		    (util_monotonic() - t0) / 1e9;
		if (g > best)
			best = g;
	}
	printf("fp32 FMA peak, C loop (%ld threads x %d chains, %s): %.1f "
	    "GFLOP/s\n", nt, chains,
	    simd_lanes == 16 ? "AVX-512" : simd_lanes == 8 ? "AVX2+FMA" :
	    "scalar fmaf", best);
	return best;
}

/* ---- helpers ---- */

static void
die(struct lq_error *err)
{
	error_print(err, stderr);
	exit(1);
}

static struct gpu_tensor
T(enum gpu_dtype dt, int nd, const int64_t *shape)
{
	struct gpu_tensor t;
	struct lq_error err;
	error_clear(&err);
	if (gpu_pool_tensor(pool, dt, nd, shape, &t, &err) != LQ_OK)
		die(&err);
	return t;
}

#define SH(...) ((const int64_t[]){__VA_ARGS__})

static void
fill(struct gpu_tensor *t)
{
	gpu_cmd_begin(cmd);
	ops_fill(cmd, t, 0.01f);
	struct lq_error err;
	error_clear(&err);
	if (gpu_cmd_submit(cmd, &err) != LQ_OK)
		die(&err);
}

static void
fill_param(struct gpu_tensor *t)
{
	size_t n = (size_t)gpu_tensor_numel(t);
	float *h = xmalloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		h[i] = (float)((i * 2654435761u) % 1000) * 1e-4f - 0.05f;
	struct lq_error err;
	error_clear(&err);
	if (gpu_tensor_upload_f32(ctx, t, h, &err) != LQ_OK)
		die(&err);
	free(h);
}

/* Seconds for one submit of what rec() records (after one warm-up). */
static double
timed(void (*rec)(void *), void *arg, int reps)
{
	struct lq_error err;
	error_clear(&err);
	double best = 1e30;
	for (int r = 0; r <= reps; r++) {
		gpu_cmd_begin(cmd);
		rec(arg);
		double t0 = util_monotonic();
		if (gpu_cmd_submit(cmd, &err) != LQ_OK)
			die(&err);
		double dt = util_monotonic() - t0;
		if ((r > 0 || reps == 0) && dt < best)
			best = dt;
	}
	return best;
}

/* The shader FMA peak: fma.comp (FMA_CHAINS vec4 chains per invocation). */
static double
fma_peak_shader(void)
{
	struct lq_error err;
	error_clear(&err);
	const uint32_t groups = 256, iters = 20000;
	gpu_pool_reset(pool, 0);
	struct gpu_tensor y = T(GPU_F32, 1, SH(groups * FMA_LOCAL));
	struct fma_push pc = {.iters = iters, .m = 1.0000001f, .c = 1e-7f};
	double best = 1e30;
	for (int r = 0; r < 3; r++) {
		gpu_cmd_begin(cmd);
		const struct gpu_tensor *b[1] = {&y};
		static const unsigned char w[1] = {1};
		gpu_cmd_dispatch(cmd, GPU_K_FMA, b, w, &pc, groups, 1, 1,
		    "fma peak");
		double t0 = util_monotonic();
		if (gpu_cmd_submit(cmd, &err) != LQ_OK)
			die(&err);
		double dt = util_monotonic() - t0;
		if (r > 0 && dt < best)
			best = dt;
	}
	double g = (double)groups * FMA_LOCAL * iters * FMA_CHAINS * 8 /
	    best / 1e9;
	printf("fp32 FMA peak, shader (fma.comp, %d vec4 chains per "
	    "invocation, %u x %d invocations): %.1f GFLOP/s\n", FMA_CHAINS,
	    groups, FMA_LOCAL, g);
	return g;
}

/* ---- OpenBLAS sgemm at the same shapes (the yardstick) ---- */

static float *
host_fill(size_t n)
{
	float *h = xmalloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		h[i] = (float)((i * 2654435761u) % 1000) * 1e-4f - 0.05f;
	return h;
}

/* Seconds of cblas_sgemm C[M,N] = A[M,K]·op(B) (B [N,K] when trans_b,
 * else [K,N]), best of two after one warm-up. */
static double
sgemm_time(int M, int K, int N, int trans_b)
{
	float *a = host_fill((size_t)M * K), *b = host_fill((size_t)K * N);
	float *c = xmalloc((size_t)M * N * sizeof(float));
	double best = 1e30;
	for (int r = 0; r < 3; r++) {
		double t0 = util_monotonic();
		cblas_sgemm(CblasRowMajor, CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, a, K, b,
		    trans_b ? K : N, 0.0f, c, N);
		double dt = util_monotonic() - t0;
		if (r > 0 && dt < best)
			best = dt;
	}
	free(a);
	free(b);
	free(c);
	return best;
}

static double peak;

/* One row of the table: time, GF/s, share of the peak, and the sgemm
 * figure of the same GEMM work with latentq's rate over it. */
static void
report(const char *what, double dt, double flop, double sgemm_dt)
{
	double g = flop / dt / 1e9, gs = flop / sgemm_dt / 1e9;
	printf("%-46s %8.3f s %7.1f GF/s %5.1f%% of peak | sgemm %7.1f GF/s "
	    "%5.1f%% | latentq/sgemm %.2f\n", what, dt, g, 100 * g / peak, gs,
	    100 * gs / peak, g / gs);
}

/* Timed repetitions for `flop` of work: a millisecond-sized call is
 * noisy on a loaded machine, so the best of 20. */
static int
small_reps(double flop)
{
	return flop < 1e9 ? 20 : 1;
}

struct lin { struct gpu_tensor y, x, w; };


static void
rec_linear(void *a)
{
	struct lin *l = a;
	ops_linear(cmd, &l->y, &l->x, &l->w, NULL, OPS_ACT_NONE);
}

static void
bench_linear(int M, int K, int N, enum gpu_dtype wdt)
{
	gpu_pool_reset(pool, 0);
	struct lin l = {T(GPU_F32, 2, SH(M, N)), T(GPU_F32, 2, SH(M, K)),
	    T(wdt, 2, SH(N, K))};
	fill(&l.x);
	fill_param(&l.w);
	double dt = timed(rec_linear, &l, small_reps(2.0 * M * K * N));
	char what[96];
	snprintf(what, sizeof(what), "linear %dx%d -> %d, %s weights", M, K, N,
	    gpu_dtype_name(wdt));
	report(what, dt, 2.0 * M * K * N, sgemm_time(M, K, N, 1));
}

/* x += gate · (h · wᵀ + b): a transformer block's residual update */
struct gated { struct gpu_tensor x, h, w, b, p, ada, gate; };

static void
rec_gated_pair(void *a)
{
	struct gated *g = a;
	ops_linear(cmd, &g->p, &g->h, &g->w, &g->b, OPS_ACT_NONE);
	ops_gated_add(cmd, &g->x, &g->x, &g->gate, &g->p);
}

static void
rec_gated_fused(void *a)
{
	struct gated *g = a;
	ops_linear_gated_add(cmd, &g->x, &g->x, &g->gate, &g->h, &g->w, &g->b,
	    OPS_ACT_NONE);
}

/*
 * The residual update of a block branch, B x N tokens of width K -> D,
 * as ops_linear then ops_gated_add and as ops_linear_gated_add (issue
 * 18 item 3): the best of 100 each, in alternating rounds of 20, so a
 * loaded machine's drift falls on both.
 */
static void
bench_gated(int B, int N, int K, int D)
{
	gpu_pool_reset(pool, 0);
	struct gated g = {.x = T(GPU_F32, 3, SH(B, N, D)),
	    .h = T(GPU_F32, 3, SH(B, N, K)), .w = T(GPU_F32, 2, SH(D, K)),
	    .b = T(GPU_F32, 1, SH(D)), .p = T(GPU_F32, 3, SH(B, N, D)),
	    .ada = T(GPU_F32, 3, SH(B, 6, D))};
	fill(&g.x);
	fill(&g.h);
	fill_param(&g.w);
	fill_param(&g.b);
	fill_param(&g.ada);
	/* row 2 of the [B, 6, D] modulation table, as the models' gates */
	g.gate = gpu_tensor_slice(&g.ada, 1, 2, 1);
	g.gate.ndim = 2;
	g.gate.shape[1] = D;
	g.gate.stride[1] = 1;
	double tp = 1e30, tf = 1e30;
	for (int r = 0; r < 5; r++) {
		double a = timed(rec_gated_pair, &g, 20);
		double b = timed(rec_gated_fused, &g, 20);
		tp = a < tp ? a : tp;
		tf = b < tf ? b : tf;
	}
	printf("residual %dx%d x %d -> %d, gate [B, D]: linear + gated_add "
	    "%.3f ms, linear_gated_add %.3f ms (%.2fx)\n", B, N, K, D,
	    tp * 1e3, tf * 1e3, tp / tf);
}

struct att { struct gpu_tensor o, q, k, v; int heads; };

static void
rec_attention(void *a)
{
	struct att *t = a;
	struct ops_attention_args args = {.heads = t->heads, .scale = 0.125f};
	ops_attention(cmd, &t->o, &t->q, &t->k, &t->v, &args);
}

static void
bench_attention(int B, int N, int D, int H)
{
	gpu_pool_reset(pool, 0);
	struct att t = {T(GPU_F32, 3, SH(B, N, H * D)),
	    T(GPU_F32, 3, SH(B, N, H * D)), T(GPU_F32, 3, SH(B, N, H * D)),
	    T(GPU_F32, 3, SH(B, N, H * D)), H};
	fill_param(&t.q);
	fill_param(&t.k);
	fill_param(&t.v);
	double dt = timed(rec_attention, &t, small_reps(4.0 * B * N * N * D *
	    H));
	/* sgemm: per sample and head q·kᵀ [N,D]x[D,N] and p·v [N,N]x[N,D] */
	double ds = B * H * (sgemm_time(N, D, N, 1) + sgemm_time(N, N, D, 0));
	char what[96];
	if (B == 1)
		snprintf(what, sizeof(what), "attention seq %d, head_dim %d, %d "
		    "heads", N, D, H);
	else
		snprintf(what, sizeof(what), "attention %dx seq %d, head_dim %d, "
		    "%d heads", B, N, D, H);
	report(what, dt, 4.0 * B * N * N * D * H, ds);
}

struct conv { struct gpu_tensor y, x, w, b; };

static void
rec_conv(void *a)
{
	struct conv *c = a;
	struct ops_conv3d_params p = {.stride = {1, 1, 1}, .pad_t = {2, 0},
	    .pad_h = {1, 1}, .pad_w = {1, 1}, .t_mode = OPS_PAD_REPLICATE};
	ops_conv3d(cmd, &c->y, &c->x, &c->w, &c->b, &p);
}

static void
bench_conv(int C, int F, int H, int W)
{
	gpu_pool_reset(pool, 0);
	struct conv c = {T(GPU_F32, 5, SH(1, C, F, H, W)),
	    T(GPU_F32, 5, SH(1, C, F, H, W)), T(GPU_F16, 5, SH(C, C, 3, 3, 3)),
	    T(GPU_F32, 1, SH(C))};
	fill(&c.x);
	fill_param(&c.w);
	fill_param(&c.b);
	double dt = timed(rec_conv, &c, 1);
	/* sgemm: the im2col product w [C, 27C] x cols [27C, F·H·W] */
	char what[96];
	snprintf(what, sizeof(what), "conv3d [1,%d,%d,%d,%d] -> %d k3, f16 w", C,
	    F, H, W, C);
	report(what, dt, 2.0 * C * C * 27 * F * H * W,
	    sgemm_time(C, 27 * C, F * H * W, 0));
}

struct chain { struct gpu_tensor a, b; };

static void
rec_chain(void *p)
{
	struct chain *c = p;
	/* a channel norm: a shader on every device (the host path takes
	 * the elementwise ops and row norms) */
	for (int i = 0; i < 50; i++) {
		ops_rms_norm_channels(cmd, &c->b, &c->a, NULL, 1e-6f);
		ops_rms_norm_channels(cmd, &c->a, &c->b, NULL, 1e-6f);
	}
}

static void
bench_chain(void)
{
	gpu_pool_reset(pool, 0);
	struct chain c = {T(GPU_F32, 3, SH(1, 4, 256)),
	    T(GPU_F32, 3, SH(1, 4, 256))};
	fill(&c.a);
	double dt = timed(rec_chain, &c, 3);
	printf("100 dependent small dispatches (1024-element channel norm), "
	    "one submit: "
	    "%.3f ms  (%.1f us per dispatch)\n", dt * 1e3, dt * 1e4);
}

int
main(int argc, char **argv)
{
	struct lq_error err;
	error_clear(&err);
	if (argc == 5 && strcmp(argv[1], "sgemm") == 0) {
		int M = atoi(argv[2]), K = atoi(argv[3]), N = atoi(argv[4]);
		long nt = sysconf(_SC_NPROCESSORS_ONLN);
		if (M < 1 || K < 1 || N < 1) {
			fprintf(stderr, "bench-gpu sgemm M K N: positive sizes\n");
			return 2;
		}
		openblas_set_num_threads(nt < 1 ? 1 : (int)nt);
		double dt = sgemm_time(M, K, N, 1);
		printf("%.1f\n", 2.0 * M * K * N / dt / 1e9);
		return 0;
	}
	log_set_level(LOG_LEVEL_WARN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	int q = getenv("LATENTQ_BENCH_QUICK") != NULL ? 4 : 1;
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 77;
	}
	const struct device_caps *caps = gpu_ctx_caps(ctx);
	printf("device: %s (%s)\n", caps->name, caps->device_type);
	if (gpu_pool_create(ctx, (size_t)400 << 20, &pool, &err) != LQ_OK ||
	    gpu_cmd_create(ctx, &cmd, &err) != LQ_OK)
		die(&err);
	long nt = sysconf(_SC_NPROCESSORS_ONLN);
	openblas_set_num_threads(nt < 1 ? 1 : (int)nt);
	printf("OpenBLAS %s, core %s, %d threads\n", openblas_get_config(),
	    openblas_get_corename(), openblas_get_num_threads());
	double pc = fma_peak_c(), ps = fma_peak_shader();
	/* On a CPU device both measure the same cores: the larger is the
	 * nearer to the hardware's limit.  On a GPU the C loop is the host. */
	int cpu = strcmp(caps->device_type, "cpu") == 0;
	peak = cpu && pc > ps ? pc : ps;
	printf("peak used below: %.1f GFLOP/s (%s; shader/C %.2f)\n", peak,
	    cpu && pc > ps ? "C loop" : "shader", ps / pc);
	const char *only = getenv("LATENTQ_BENCH_ONLY");
#define WANT(s) (only == NULL || strstr(only, s) != NULL)
	if (WANT("chain"))
		bench_chain();
	if (WANT("linear")) {
		bench_linear(4096 / q, 2048, 2048, GPU_F32);
		bench_linear(4096 / q, 2048, 2048, GPU_F16);
	}
	if (WANT("wide")) {
		bench_linear(4096 / q, 2048, 8192, GPU_F32);
		bench_linear(4096 / q, 2048, 8192, GPU_F16);
	}
	if (WANT("attention"))
		bench_attention(1, 4096 / q, 64, 32);
	if (WANT("demo")) {
		/* the demo render's shapes (jobs/models/ltxv-demo at 64x64x9,
		 * CFG batch 2: 2 x 320 tokens, dim 128, 4 heads of 32, FF 512);
		 * never shrunk, they are small already */
		bench_attention(2, 320, 32, 4);
		bench_linear(640, 128, 128, GPU_F32);
		bench_linear(640, 128, 512, GPU_F32);
		bench_linear(640, 512, 128, GPU_F32);
		/* attention's to_out and the feed-forward's second linear
		 * with the block's gated residual */
		bench_gated(2, 320, 128, 128);
		bench_gated(2, 320, 512, 128);
	}
	if (WANT("conv"))
		bench_conv(128, 5, 64 / q, 64 / q);
	gpu_cmd_free(cmd);
	gpu_pool_free(pool);
	gpu_ctx_free(ctx);
	return 0;
}
