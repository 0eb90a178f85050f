/*
 * bench-gpu.c — `make bench`: throughput of the heavy kernels on the
 * default device, printed beside this machine's measured fp32 FMA peak
 * (a short C loop on every core, AVX2+FMA when the CPU has it) so each
 * figure reads as a fraction of the limit.  On lavapipe the device *is*
 * the CPU, so the fraction is meaningful; on a GPU it is just context.
 *
 *   linear 4096x2048 -> 2048 and -> 8192, F32 and F16 weights
 *   attention seq 4096, head_dim 64, 32 heads
 *   conv3d VAE-like [1,128,5,64,64] -> 128, k3 causal
 *   a chain of 100 small dispatches (one submit)
 *
 * LATENTQ_BENCH_QUICK=1 shrinks every shape 4x (for a smoke run);
 * LATENTQ_BENCH_ONLY=chain,linear,wide,attention,conv picks some.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "gpu/ops.h"

static struct gpu_ctx *ctx;
static struct gpu_cmd *cmd;
static struct gpu_pool *pool;

/* ---- fp32 FMA peak ---- */

typedef float v8 __attribute__((vector_size(32)));

__attribute__((target("avx2,fma"))) static double
fma_loop_avx2(long iters)
{
	v8 a[12], m = {1.0000001f, 1.0000001f, 1.0000001f, 1.0000001f,
	    1.0000001f, 1.0000001f, 1.0000001f, 1.0000001f};
	v8 c = {1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f};
	for (int i = 0; i < 12; i++)
		a[i] = c * (float)i;
	for (long it = 0; it < iters; it++)
		for (int i = 0; i < 12; i++)
			a[i] = a[i] * m + c;
	float s = 0;
	for (int i = 0; i < 12; i++)
		s += a[i][0];
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
			a[i] = a[i] * 1.0000001f + 1e-7f;
	float s = 0;
	for (int i = 0; i < 32; i++)
		s += a[i];
	return s;
}

static int have_avx2;
static volatile double sink;

static void *
fma_thread(void *arg)
{
	long iters = *(long *)arg;
	sink += have_avx2 ? fma_loop_avx2(iters) : fma_loop_generic(iters);
	return NULL;
}

static double
fma_peak(void)
{
	__builtin_cpu_init();
	have_avx2 = __builtin_cpu_supports("avx2") &&
	    __builtin_cpu_supports("fma");
	long nt = sysconf(_SC_NPROCESSORS_ONLN);
	if (nt < 1)
		nt = 1;
	long iters = 20000000;
	double flop_per_iter = have_avx2 ? 12 * 8 * 2 : 32 * 2;
	pthread_t th[256];
	if (nt > 256)
		nt = 256;
	double t0 = util_monotonic();
	for (long i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, fma_thread, &iters);
	for (long i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	double dt = util_monotonic() - t0;
	double g = flop_per_iter * iters * nt / dt / 1e9;
	printf("fp32 FMA peak (C loop, %ld threads, %s): %.1f GFLOP/s\n", nt,
	    have_avx2 ? "AVX2+FMA 256-bit" : "generic", g);
	return g;
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

struct lin { struct gpu_tensor y, x, w; };

static void
rec_linear(void *a)
{
	struct lin *l = a;
	ops_linear(cmd, &l->y, &l->x, &l->w, NULL, OPS_ACT_NONE);
}

static void
bench_linear(int M, int K, int N, enum gpu_dtype wdt, double peak)
{
	gpu_pool_reset(pool, 0);
	struct lin l = {T(GPU_F32, 2, SH(M, N)), T(GPU_F32, 2, SH(M, K)),
	    T(wdt, 2, SH(N, K))};
	fill(&l.x);
	fill_param(&l.w);
	double dt = timed(rec_linear, &l, 1);
	double g = 2.0 * M * K * N / dt / 1e9;
	printf("linear %dx%d -> %d, %s weights: %8.3f s  %7.1f GFLOP/s  "
	    "(%.0f%% of peak)\n", M, K, N, gpu_dtype_name(wdt), dt, g,
	    100 * g / peak);
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
bench_attention(int N, int D, int H, double peak)
{
	gpu_pool_reset(pool, 0);
	struct att t = {T(GPU_F32, 3, SH(1, N, H * D)),
	    T(GPU_F32, 3, SH(1, N, H * D)), T(GPU_F32, 3, SH(1, N, H * D)),
	    T(GPU_F32, 3, SH(1, N, H * D)), H};
	fill_param(&t.q);
	fill_param(&t.k);
	fill_param(&t.v);
	double dt = timed(rec_attention, &t, 1);
	double g = 4.0 * N * N * D * H / dt / 1e9;
	printf("attention seq %d, head_dim %d, %d heads: %8.3f s  %7.1f "
	    "GFLOP/s  (%.0f%% of peak)\n", N, D, H, dt, g, 100 * g / peak);
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
bench_conv(int C, int F, int H, int W, double peak)
{
	gpu_pool_reset(pool, 0);
	struct conv c = {T(GPU_F32, 5, SH(1, C, F, H, W)),
	    T(GPU_F32, 5, SH(1, C, F, H, W)), T(GPU_F16, 5, SH(C, C, 3, 3, 3)),
	    T(GPU_F32, 1, SH(C))};
	fill(&c.x);
	fill_param(&c.w);
	fill_param(&c.b);
	double dt = timed(rec_conv, &c, 1);
	double g = 2.0 * C * C * 27 * F * H * W / dt / 1e9;
	printf("conv3d [1,%d,%d,%d,%d] -> %d k3 causal, f16 weights: %8.3f s  "
	    "%7.1f GFLOP/s  (%.0f%% of peak)\n", C, F, H, W, C, dt, g,
	    100 * g / peak);
}

struct chain { struct gpu_tensor a, b; };

static void
rec_chain(void *p)
{
	struct chain *c = p;
	for (int i = 0; i < 50; i++) {
		ops_add(cmd, &c->b, &c->a, &c->a);
		ops_add(cmd, &c->a, &c->b, &c->b);
	}
}

static void
bench_chain(void)
{
	gpu_pool_reset(pool, 0);
	struct chain c = {T(GPU_F32, 1, SH(1024)), T(GPU_F32, 1, SH(1024))};
	fill(&c.a);
	double dt = timed(rec_chain, &c, 3);
	printf("100 dependent small dispatches (1024-element add), one submit: "
	    "%.3f ms  (%.1f us per dispatch)\n", dt * 1e3, dt * 1e4);
}

int
main(void)
{
	struct lq_error err;
	error_clear(&err);
	log_set_level(LOG_LEVEL_WARN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	int q = getenv("LATENTQ_BENCH_QUICK") != NULL ? 4 : 1;
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 77;
	}
	printf("device: %s\n", gpu_ctx_caps(ctx)->name);
	double peak = fma_peak();
	if (gpu_pool_create(ctx, (size_t)400 << 20, &pool, &err) != LQ_OK ||
	    gpu_cmd_create(ctx, &cmd, &err) != LQ_OK)
		die(&err);
	const char *only = getenv("LATENTQ_BENCH_ONLY");
#define WANT(s) (only == NULL || strstr(only, s) != NULL)
	if (WANT("chain"))
		bench_chain();
	if (WANT("linear")) {
		bench_linear(4096 / q, 2048, 2048, GPU_F32, peak);
		bench_linear(4096 / q, 2048, 2048, GPU_F16, peak);
	}
	if (WANT("wide")) {
		bench_linear(4096 / q, 2048, 8192, GPU_F32, peak);
		bench_linear(4096 / q, 2048, 8192, GPU_F16, peak);
	}
	if (WANT("attention"))
		bench_attention(4096 / q, 64, 32, peak);
	if (WANT("conv"))
		bench_conv(128, 5, 64 / q, 64 / q, peak);
	gpu_cmd_free(cmd);
	gpu_pool_free(pool);
	gpu_ctx_free(ctx);
	return 0;
}
