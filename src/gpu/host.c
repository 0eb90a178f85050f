/*
 * host.c — the CPU-device fast path (internal.h, issue 18 item 2): on a
 * Vulkan device that is a CPU implementation (lavapipe / llvmpipe,
 * VK_PHYSICAL_DEVICE_TYPE_CPU) every buffer is host memory, mapped, so
 * ops_linear, ops_matmul, ops_attention (two GEMMs per head around a
 * row softmax) and ops_conv3d (each output position's patch a row of an
 * im2col GEMM) run here, in C, on the mapped pointers instead of as
 * shaders (host_rows.c does the row norms, elementwise ops and rope);
 * everything else stays a shader.  The command stream is cut
 * there (cmd.c): the dispatches before a host op are submitted and waited
 * for, the host op runs, the next dispatches follow.
 *
 * The GEMM.  A register tile of HOST_MR rows × HOST_NR columns (two
 * 8-float vectors per row) over op(b) packed into HOST_NR-column panels;
 * every output element is one sum over k in order, c = Σ_k a·b, each
 * step a multiply and an add (or one fused multiply-add where the CPU has
 * FMA: the variant string says which), then times alpha.
 *
 * Determinism.  That sum is the same operations whatever row and column
 * of the tile an element sits in, whatever rows share the op and however
 * the op is cut into tasks, so a row's bits never depend on the rows
 * beside it (a mesh shard is bit-identical to the whole: tests/gpu/
 * test-host checks rows alone, in shards at any offset and in the whole
 * batch) nor on the thread count.  (OpenBLAS, which this path used
 * before, gives a row different bits by its position in its micro-tile on
 * some cores — Zen's: positions 6-11 of each 12 differ — so no fixed
 * panel could make it shard-exact.)  The thread count is still in the
 * variant string, with the kernel.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/half.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/ops.h"
#include "gpu/vk.h"

/* LATENTQ_GEMM_THREADS's largest: the pool's threads and their scratch */
#define HOST_POOL_MAX 256

/* The register tile: rows, columns (HOST_TILE_BODY is written for it). */
#define HOST_MR 6
#define HOST_NR 16
/* A GEMM task's rows: a multiple of HOST_MR, its c rows in scratch. */
#define HOST_TASK_ROWS 48

/* One host op at a time: a mesh's ranks run on threads of their own and
 * share the pool. */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * One pool thread's scratch (ctx->host_tls[t]): GEMM: the tile rows of c
 * (0), a's rows rounded to the op's precision (1); attention: packed keys
 * (0) and values (1), scores (2), outputs (3), query rows rounded (4);
 * conv3d: the tile rows (0), the im2col rows (1).
 */
#define HOST_TLS_SLOTS 5
struct gpu_host_tls {
	float *buf[HOST_TLS_SLOTS];
	size_t n[HOST_TLS_SLOTS];
};

/* the tile kernel: set once (gpu_host_resolve), by the CPU's features */
static int host_fma;
static pthread_once_t host_cpu_once = PTHREAD_ONCE_INIT;

static void
host_cpu_probe(void)
{
	__builtin_cpu_init();
	host_fma = __builtin_cpu_supports("avx2") &&
	    __builtin_cpu_supports("fma");
}

void
gpu_host_resolve(struct gpu_ctx *ctx)
{
	int want = util_env_switch("LATENTQ_GPU_HOST_GEMM",
	    strcmp(ctx->caps.device_type, "cpu") == 0);
	ctx->host_gemm = 0;
	snprintf(ctx->gemm_variant, sizeof(ctx->gemm_variant), "shader");
	if (!want)
		return;
	pthread_once(&host_cpu_once, host_cpu_probe);
	ctx->host_gemm = 1;
	ctx->host_threads = GPU_HOST_GEMM_THREADS;
	const char *e = getenv("LATENTQ_GEMM_THREADS");
	if (e != NULL && *e != '\0') {
		char *end;
		long t = strtol(e, &end, 10);
		if (*end != '\0' || t < 1 || t > HOST_POOL_MAX)
			log_warn("LATENTQ_GEMM_THREADS=%s is not a count from 1 to "
			    "%d; using %d", e, HOST_POOL_MAX,
			    GPU_HOST_GEMM_THREADS);
		else
			ctx->host_threads = (int)t;
	}
	ctx->host_tls = xcalloc((size_t)ctx->host_threads,
	    sizeof(*ctx->host_tls));
	snprintf(ctx->gemm_variant, sizeof(ctx->gemm_variant), "host-gemm:"
	    "%dx%d %s t=%d conv3d=im2col", HOST_MR, HOST_NR, host_fma ? "fma" :
	    "mul-add", ctx->host_threads);
}

/* a growable scratch buffer of at least `bytes` (*p, *n its size) */
static float *
host_grow(float **p, size_t *n, size_t bytes)
{
	if (*n < bytes) {
		free(*p);
		*p = xmalloc(bytes);
		*n = bytes;
	}
	return *p;
}

/* the context's shared host scratch buffer `slot`, at least `bytes` */
static float *
host_buf(struct gpu_ctx *ctx, int slot, size_t bytes)
{
	return host_grow(&ctx->host_scratch[slot], &ctx->host_scratch_n[slot],
	    bytes);
}

static float *
host_tls_buf(struct gpu_ctx *ctx, int t, int slot, size_t bytes)
{
	struct gpu_host_tls *s = &ctx->host_tls[t];
	return host_grow(&s->buf[slot], &s->n[slot], bytes);
}

/*
 * f32 view of n elements of a parameter: p itself when it is f32, else
 * decoded into the context's shared scratch `slot`.
 */
const float *
gpu_host_f32(struct gpu_ctx *ctx, int slot, const void *p, enum gpu_dtype dt,
    int64_t n)
{
	if (dt == GPU_F32)
		return p;
	float *f = host_buf(ctx, slot, (size_t)n * sizeof(float));
	if (dt == GPU_BF16) {
		/* half_bf16_to_f32 inline: the high half of the float */
		const uint16_t *h = p;
		uint32_t *u = (uint32_t *)(void *)f;
		for (int64_t i = 0; i < n; i++)
			u[i] = (uint32_t)h[i] << 16;
		return f;
	}
	for (int64_t i = 0; i < n; i++)
		f[i] = gpu_host_param(p, dt, i);
	return f;
}

/*
 * ---- Eight lanes at a time ----
 *
 * The softmax and the GEMM epilogue work on 8 floats at once through
 * GCC's vector extensions: each lane is the same IEEE operations as one
 * element would be, so the bits do not depend on the vector width the
 * compiler picks (SSE pairs, or AVX in the target_clones copy); a row's
 * tail goes through the same code in a padded vector.  Sums keep one
 * partial per lane (j mod 8) and add the lanes in a fixed order.
 */
/* the helpers are always inlined: no call passes a vector, so the ABI
 * warning GCC gives for 32-byte vectors without AVX does not apply (GCC
 * 12 still prints one "ABI ... changed in GCC 4.6" note per file) */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef float host_v8f __attribute__((vector_size(32)));
typedef int32_t host_v8i __attribute__((vector_size(32)));
#define HOST_INLINE static inline __attribute__((always_inline))

#define HOST_CLONES __attribute__((target_clones("avx2", "default")))

/* m ? a : b, lane by lane (m from a comparison: all ones or zeros) */
HOST_INLINE host_v8f
host_sel(host_v8i m, host_v8f a, host_v8f b)
{
	return (host_v8f)(((host_v8i)a & m) | ((host_v8i)b & ~m));
}

/* f in every lane (f - +0 is f, -0 included: one broadcast) */
HOST_INLINE host_v8f
host_splat(float f)
{
	return f - (host_v8f){0};
}

/* n <= 8 floats of p in a vector, the other lanes `pad` */
HOST_INLINE host_v8f
host_v8_load(const float *p, int64_t n, float pad)
{
	host_v8f v;
	if (n >= 8) {
		memcpy(&v, p, sizeof(v));
		return v;
	}
	v = host_splat(pad);
	memcpy(&v, p, (size_t)n * sizeof(float));
	return v;
}

HOST_INLINE void
host_v8_store(float *p, int64_t n, host_v8f v)
{
	memcpy(p, &v, (size_t)(n < 8 ? n : 8) * sizeof(float));
}

/*
 * e^x for x <= 0 (Cephes expf: x = n·ln2 + r, a degree-6 polynomial in
 * r, times 2^n), within 2 ulp of expf; below -87 it is e^-87.
 */
HOST_INLINE host_v8f
host_exp_neg(host_v8f x)
{
	x = host_sel(x < -87.0f, host_splat(-87.0f), x);
	host_v8f t = x * 1.44269504088896341f - 0.5f;
	/* in [t, t + 1): |r| <= ln2 / 2 */
	host_v8i ni = __builtin_convertvector(t, host_v8i);
	host_v8f n = __builtin_convertvector(ni, host_v8f);
	host_v8f r = x - n * 0.693359375f - n * -2.12194440e-4f;
	host_v8f p = host_splat(1.9875691500e-4f);
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	return p * (host_v8f)((ni + 127) << 23);
}

/* e = e^-2|u|: tanh(u) = sign(u) · (1 - e) / (1 + e), no overflow */
HOST_INLINE host_v8f
host_tanh_e(host_v8f u)
{
	host_v8i neg = u < 0.0f;
	host_v8f e = host_exp_neg(-2.0f * host_sel(neg, -u, u));
	host_v8f th = (1.0f - e) / (1.0f + e);
	return host_sel(neg, -th, th);
}

/* sigmoid(x) from e = e^-|x| */
HOST_INLINE host_v8f
host_sigmoid(host_v8f x)
{
	host_v8i neg = x < 0.0f;
	host_v8f e = host_exp_neg(host_sel(neg, x, -x));
	return host_sel(neg, e, host_splat(1.0f)) / (1.0f + e);
}

/*
 * shaders/common.glsl lq_act, lane by lane: the same functions, written
 * so nothing overflows (tanh and the sigmoid through e^-|x|); they agree
 * with the shader's within float rounding, not bit for bit.
 */
HOST_INLINE host_v8f
host_act(host_v8f x, unsigned act)
{
	switch (act) {
	case LQ_ACT_GELU_TANH: {
		host_v8f u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
		return 0.5f * x * (1.0f + host_tanh_e(u));
	}
	case LQ_ACT_SILU:
		return x * host_sigmoid(x);
	case LQ_ACT_RELU:
		return host_sel(x > 0.0f, x, host_splat(0.0f));
	case LQ_ACT_GELU:
		for (int i = 0; i < 8; i++)
			x[i] = 0.5f * x[i] * (1.0f + erff(x[i] *
			    0.7071067811865476f));
		return x;
	case LQ_ACT_TANH: {
		host_v8f x2 = x * x;
		host_v8f small = x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f /
		    15.0f + x2 * (-17.0f / 315.0f))));
		host_v8f ax = host_sel(x < 0.0f, -x, x);
		return host_sel(ax < 0.0625f, small, host_tanh_e(x));
	}
	case LQ_ACT_SIGMOID:
		return host_sigmoid(x);
	default:
		return x;
	}
}

/* host_act on one float (host_rows.c's elementwise activations) */
float
gpu_host_act(float x, unsigned act)
{
	return host_act(host_splat(x), act)[0];
}

/*
 * dst[j] = act(alpha · src[j] + bias[j]) for j < n (bias may be NULL);
 * with res (ops_linear_gated_add), res[j] + gate[j] · that (gate NULL: 1;
 * res may be dst): host_rows.c's gated add, x + gate · r, one rounding
 * for the product and one for the sum (this file has -ffp-contract=off;
 * only the tile is compiled to fuse).
 */
HOST_CLONES static void
host_epilogue_row(float *dst, const float *src, const float *bias,
    const float *res, const float *gate, int64_t n, float alpha,
    unsigned act)
{
	for (int64_t j = 0; j < n; j += 8) {
		host_v8f v = host_v8_load(src + j, n - j, 0.0f);
		if (alpha != 1.0f)
			v *= alpha;
		if (bias != NULL)
			v += host_v8_load(bias + j, n - j, 0.0f);
		v = host_act(v, act);
		if (res != NULL && gate != NULL)
			v = host_v8_load(res + j, n - j, 0.0f) +
			    host_v8_load(gate + j, n - j, 0.0f) * v;
		else if (res != NULL)
			v = host_v8_load(res + j, n - j, 0.0f) + v;
		host_v8_store(dst + j, n - j, v);
	}
}

/*
 * The row softmax's numerator in place: s[j] = e^(s[j] - max s) for
 * j < n; returns Σ s[j] (a partial sum per lane j mod 8, the lanes added
 * in a fixed order).
 */
HOST_CLONES static float
host_softmax_row(float *s, int64_t n)
{
	host_v8f m = host_splat(-3.0e38f);
	for (int64_t j = 0; j < n; j += 8) {
		host_v8f v = host_v8_load(s + j, n - j, -3.0e38f);
		m = host_sel(v > m, v, m);
	}
	float mx = m[0];
	for (int i = 1; i < 8; i++)
		mx = m[i] > mx ? m[i] : mx;
	host_v8f acc = host_splat(0.0f);
	for (int64_t j = 0; j < n; j += 8) {
		host_v8f e = host_exp_neg(host_v8_load(s + j, n - j, mx) - mx);
		/* the padded lanes hold e^0: counted out */
		if (n - j < 8)
			for (int64_t i = n - j; i < 8; i++)
				e[i] = 0.0f;
		host_v8_store(s + j, n - j, e);
		acc += e;
	}
	return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) +
	    (acc[6] + acc[7]));
}


/*
 * ---- The tile ----
 *
 * c[i][j] for i < HOST_MR (rows a[i], k < K) and j < HOST_NR, from the
 * panel bp [K][HOST_NR]: c row i at c + i·ldc.  Written out per row so
 * the twelve accumulators stay in registers.  HOST_TILE_FMA (set in the
 * FMA copy, compiled with fp-contract=fast) fuses each step.
 */
#define HOST_TILE_BODY                                                      \
	host_v8f c00 = host_splat(0.0f), c01 = c00, c10 = c00, c11 = c00;   \
	host_v8f c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00;     \
	host_v8f c41 = c00, c50 = c00, c51 = c00;                           \
	const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];         \
	const float *a4 = a[4], *a5 = a[5];                                 \
	for (int64_t k = 0; k < K; k++) {                                   \
		host_v8f b0, b1;                                            \
		memcpy(&b0, bp + k * HOST_NR, sizeof(b0));                  \
		memcpy(&b1, bp + k * HOST_NR + 8, sizeof(b1));              \
		c00 += a0[k] * b0; c01 += a0[k] * b1;                \
		c10 += a1[k] * b0; c11 += a1[k] * b1;                \
		c20 += a2[k] * b0; c21 += a2[k] * b1;                \
		c30 += a3[k] * b0; c31 += a3[k] * b1;                \
		c40 += a4[k] * b0; c41 += a4[k] * b1;                \
		c50 += a5[k] * b0; c51 += a5[k] * b1;                \
	}                                                                   \
	memcpy(c, &c00, 32); memcpy(c + 8, &c01, 32); c += ldc;             \
	memcpy(c, &c10, 32); memcpy(c + 8, &c11, 32); c += ldc;             \
	memcpy(c, &c20, 32); memcpy(c + 8, &c21, 32); c += ldc;             \
	memcpy(c, &c30, 32); memcpy(c + 8, &c31, 32); c += ldc;             \
	memcpy(c, &c40, 32); memcpy(c + 8, &c41, 32); c += ldc;             \
	memcpy(c, &c50, 32); memcpy(c + 8, &c51, 32);

_Static_assert(HOST_MR == 6 && HOST_NR == 16, "HOST_TILE_BODY's shape");

HOST_CLONES static void
host_tile_mul_add(const float *const *a, int64_t K, const float *bp,
    float *c, int64_t ldc)
{
	HOST_TILE_BODY
}

__attribute__((target("avx2,fma"), optimize("fp-contract=fast"))) static void
host_tile_fma(const float *const *a, int64_t K, const float *bp, float *c,
    int64_t ldc)
{
	HOST_TILE_BODY
}

static void
host_tile(const float *const *a, int64_t K, const float *bp, float *c,
    int64_t ldc)
{
	if (host_fma)
		host_tile_fma(a, K, bp, c, ldc);
	else
		host_tile_mul_add(a, K, bp, c, ldc);
}

/* columns of op(b) [K, N] rounded up to whole panels */
static int64_t
host_npad(int64_t n)
{
	return (n + HOST_NR - 1) / HOST_NR * HOST_NR;
}

/*
 * dst[i] = gpu_host_round(src[i], prec) for i < n, without branches so
 * the compiler vectorizes it (the scalar function tests each value; this
 * runs on every operand of a reduced-precision GEMM and attention).
 * The same bits as gpu_host_round (test-host checks them pattern by
 * pattern): binary16's subnormals are x rounded to a multiple of 2^-24 by
 * adding and taking away 0.5f, whose ulp is 2^-24 (exact for x < 2^-14,
 * ties to even as nearbyintf).  dst may be src.
 */
#define HOST_VECTORIZE \
	__attribute__((optimize("tree-loop-vectorize", "vect-cost-model=dynamic")))

HOST_VECTORIZE static void
host_round_bf16(float *dst, const float *src, int64_t n)
{
	/* dst is src or apart from it: no dependence between iterations */
#pragma GCC ivdep
	for (int64_t i = 0; i < n; i++) {
		uint32_t u, r;
		memcpy(&u, &src[i], 4);
		r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
		r = (u & 0x7fffffffu) >= 0x7f800000u ? u : r;
		memcpy(&dst[i], &r, 4);
	}
}

HOST_VECTORIZE static void
host_round_f16(float *dst, const float *src, int64_t n)
{
#pragma GCC ivdep
	for (int64_t i = 0; i < n; i++) {
		uint32_t u, a, nm, sb, big, sub, nan;
		float f;
		memcpy(&u, &src[i], 4);
		a = u & 0x7fffffffu;
		nm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
		/* masks, not branches: all ones where the test holds */
		big = 0u - (uint32_t)(nm > 0x477fe000u);
		nm = (nm & ~big) | (0x7f800000u & big);
		memcpy(&f, &a, 4);
		f = (f + 0.5f) - 0.5f;
		memcpy(&sb, &f, 4);
		sub = 0u - (uint32_t)(a < 0x38800000u);
		nm = (u & 0x80000000u) | (nm & ~sub) | (sb & sub);
		nan = 0u - (uint32_t)(a >= 0x7f800000u);
		nm = (nm & ~nan) | (u & nan);
		memcpy(&dst[i], &nm, 4);
	}
}

void
gpu_host_round_n(float *dst, const float *src, int64_t n, unsigned prec)
{
	if (prec == LQ_PREC_BF16)
		host_round_bf16(dst, src, n);
	else if (prec == LQ_PREC_F16)
		host_round_f16(dst, src, n);
	else if (dst != src)
		memmove(dst, src, (size_t)n * sizeof(float));
}

/* p[i] = gpu_host_round(p[i], prec) for i < n (nothing at LQ_PREC_F32) */
static void
host_round_n(float *p, int64_t n, unsigned prec)
{
	if (prec != LQ_PREC_F32)
		gpu_host_round_n(p, p, n, prec);
}

/*
 * rows × K floats of a (row stride lda) into dst (row stride K), each
 * rounded to prec: the operand as the GEMM multiplies it.
 */
static const float *
host_round_rows(float *dst, const float *a, int64_t lda, int64_t rows,
    int64_t K, unsigned prec)
{
	for (int64_t r = 0; r < rows; r++)
		gpu_host_round_n(dst + r * K, a + r * lda, K, prec);
	return dst;
}

/*
 * Packs op(b) [K, N] into panels: bp[(p·K + k)·HOST_NR + j] = op(b)[k][p·
 * HOST_NR + j], zero beyond N.  b in dtype dt with rows of ldb elements:
 * b [N, K] when trans, else [K, N].
 */
static void
host_pack(float *bp, const void *b, enum gpu_dtype dt, int trans, int64_t N,
    int64_t K, int64_t ldb)
{
	int64_t np = host_npad(N) / HOST_NR;
	for (int64_t p = 0; p < np; p++) {
		float *dst = bp + p * K * HOST_NR;
		for (int64_t j = 0; j < HOST_NR; j++) {
			int64_t n = p * HOST_NR + j;
			if (n >= N) {
				for (int64_t k = 0; k < K; k++)
					dst[k * HOST_NR + j] = 0.0f;
				continue;
			}
			if (trans && dt == GPU_F32) {
				const float *src = (const float *)b + n * ldb;
				for (int64_t k = 0; k < K; k++)
					dst[k * HOST_NR + j] = src[k];
			} else if (trans && dt == GPU_BF16) {
				const uint16_t *src = (const uint16_t *)b + n * ldb;
				for (int64_t k = 0; k < K; k++) {
					/* half_bf16_to_f32 inline */
					uint32_t u = (uint32_t)src[k] << 16;
					memcpy(&dst[k * HOST_NR + j], &u, 4);
				}
			} else {
				for (int64_t k = 0; k < K; k++)
					dst[k * HOST_NR + j] = gpu_host_param(b, dt,
					    trans ? n * ldb + k : k * ldb + n);
			}
		}
	}
}

/*
 * c rows [rows × npad] (row stride npad) = Σ_k a·op(b) for `rows` rows of
 * a starting at a (row stride lda; rows past the last valid one, m, read
 * row m - 1 and are thrown away by the caller), over every panel of bp.
 */
static void
host_gemm_block(const float *a, int64_t lda, int64_t rows, int64_t m,
    const float *bp, int64_t K, int64_t npad, float *c)
{
	for (int64_t p = 0; p < npad / HOST_NR; p++) {
		for (int64_t i = 0; i < rows; i += HOST_MR) {
			const float *ap[HOST_MR];
			for (int r = 0; r < HOST_MR; r++)
				ap[r] = a + (i + r < m ? i + r : m - 1) * lda;
			host_tile(ap, K, bp + p * K * HOST_NR, c + i * npad +
			    p * HOST_NR, npad);
		}
	}
}
/*
 * ---- The thread pool ----
 *
 * A host op is cut into tasks (a row panel of one GEMM batch, or of one
 * attention sample and head) whose bits depend on nothing but their own
 * inputs; the calling thread and up to host_threads - 1 pool threads take
 * tasks in turn, so which thread ran a task, and how many threads there
 * were, changes no bit.  Pool threads sleep on a condition variable
 * between ops (no spinning: lavapipe's threads want the same cores for
 * the shaders that follow).
 */
struct host_job {
	struct gpu_ctx *ctx;
	const struct gpu_host_op *o;
	/* task `i` on pool thread `t` (0 = the caller) */
	void (*task)(const struct host_job *j, int64_t i, int t);
	int64_t ntasks;
	_Atomic int64_t next;
	/* GEMM: packed op(b) (per batch when o->sb != 0, bp_stride floats
	 * apart), f32 bias, f32 gate (o->gate decoded), tasks per batch */
	const float *bp, *bias, *gate;
	int64_t bp_stride, per_batch;
	/* attention: f32 key bias or NULL */
	const float *kb;
};

static struct {
	pid_t pid;		/* the process the threads run in */
	int nthreads;		/* pool threads (1..nthreads; 0 is the caller) */
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	unsigned gen;		/* bumped per job */
	/* gen when thread t was started: the jobs it has to wait for are
	 * the later ones, whenever it first gets to run */
	unsigned born[HOST_POOL_MAX];
	int want;		/* threads 1..want-1 work on this job */
	int active;		/* of those, still working */
	struct host_job *job;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER};

static void
host_job_work(struct host_job *j, int t)
{
	for (;;) {
		int64_t i = j->next++;
		if (i >= j->ntasks)
			return;
		j->task(j, i, t);
	}
}

static void *
host_worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	pthread_mutex_lock(&pool.mu);
	unsigned seen = pool.born[t];
	for (;;) {
		while (pool.gen == seen)
			pthread_cond_wait(&pool.go, &pool.mu);
		seen = pool.gen;
		if (t >= pool.want)
			continue;
		struct host_job *j = pool.job;
		pthread_mutex_unlock(&pool.mu);
		host_job_work(j, t);
		pthread_mutex_lock(&pool.mu);
		if (--pool.active == 0)
			pthread_cond_signal(&pool.done);
	}
	return NULL;
}

/*
 * Runs job j's tasks on up to n threads (the caller one of them); pool
 * threads are started as first needed.  Called under host_lock.  If a
 * thread cannot be started the job runs on fewer: the same bits.
 */
static void
host_job_run(struct host_job *j, int n)
{
	if (pool.pid != getpid()) {
		/* a fork's child inherits no threads */
		pool.pid = getpid();
		pool.nthreads = 0;
	}
	if (n > j->ntasks)
		n = (int)j->ntasks;
	if (n > HOST_POOL_MAX)
		n = HOST_POOL_MAX;
	while (pool.nthreads + 1 < n) {
		pthread_t th;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pool.born[pool.nthreads + 1] = pool.gen;
		int e = pthread_create(&th, &at, host_worker,
		    (void *)(intptr_t)(pool.nthreads + 1));
		pthread_attr_destroy(&at);
		if (e != 0) {
			log_warn("gpu: host GEMM thread %d: pthread_create: %s; "
			    "running on %d", pool.nthreads + 1, strerror(e),
			    pool.nthreads + 1);
			break;
		}
		pool.nthreads++;
	}
	if (n > pool.nthreads + 1)
		n = pool.nthreads + 1;
	j->next = 0;
	if (n > 1) {
		pthread_mutex_lock(&pool.mu);
		pool.job = j;
		pool.want = n;
		pool.active = n - 1;
		pool.gen++;
		pthread_cond_broadcast(&pool.go);
		pthread_mutex_unlock(&pool.mu);
	}
	host_job_work(j, 0);
	if (n > 1) {
		pthread_mutex_lock(&pool.mu);
		while (pool.active > 0)
			pthread_cond_wait(&pool.done, &pool.mu);
		pthread_mutex_unlock(&pool.mu);
	}
}

/*
 * GEMM task i: HOST_TASK_ROWS rows of batch i / per_batch into the
 * thread's scratch, then c = act(alpha · Σ + bias) for the valid rows.
 */
static void
host_gemm_task(const struct host_job *j, int64_t i, int t)
{
	const struct gpu_host_op *o = j->o;
	int64_t z = i / j->per_batch, m0 = i % j->per_batch * HOST_TASK_ROWS;
	int64_t M = o->M, N = o->N, K = o->K, npad = host_npad(N);
	int64_t mc = M - m0 < HOST_TASK_ROWS ? M - m0 : HOST_TASK_ROWS;
	int64_t rows = (mc + HOST_MR - 1) / HOST_MR * HOST_MR;
	float *ct = host_tls_buf(j->ctx, t, 0, (size_t)(rows * npad) *
	    sizeof(float));
	const float *a = o->a + z * o->sa + m0 * K;
	if (o->prec != LQ_PREC_F32)
		a = host_round_rows(host_tls_buf(j->ctx, t, 1, (size_t)(mc * K) *
		    sizeof(float)), a, K, mc, K, o->prec);
	host_gemm_block(a, K, rows, mc,
	    j->bp + (o->sb != 0 ? z * j->bp_stride : 0), K, npad, ct);
	float *c = o->c + z * o->sc + m0 * o->ldc;
	for (int64_t r = 0; r < mc; r++) {
		int64_t m = m0 + r;
		const float *res = o->res ? o->res + m * o->ldc : NULL;
		const float *g = j->gate ? j->gate + m / o->g_n * o->sg_b +
		    m % o->g_n * o->sg_n : NULL;
		host_epilogue_row(c + r * o->ldc, ct + r * npad, j->bias, res, g,
		    N, o->alpha, o->act);
	}
}

/*
 * Attention task i: head i % heads of sample i / heads.  Keys and values
 * packed once, then HOST_MR query rows at a time: S = alpha·q·kᵀ, plus
 * the biases, softmax by rows, O = E·V, scaled by 1/sum.
 */
static void
host_attention_task(const struct host_job *j, int64_t i, int t)
{
	const struct gpu_host_op *o = j->o;
	int64_t Nq = o->M, Nk = o->Nk, Dh = o->K, Dv = o->N, H = o->heads;
	int64_t h = i % H, bi = i / H;
	int64_t kpad = host_npad(Nk), vpad = host_npad(Dv);
	const float *q = o->a + bi * o->sa + h * Dh;
	const float *kb = j->kb != NULL ? j->kb + bi * o->skb : NULL;
	float *bk = host_tls_buf(j->ctx, t, 0, (size_t)(kpad * Dh) *
	    sizeof(float));
	float *bv = host_tls_buf(j->ctx, t, 1, (size_t)(vpad * Nk) *
	    sizeof(float));
	float *S = host_tls_buf(j->ctx, t, 2, (size_t)(HOST_MR * kpad) *
	    sizeof(float));
	float *O = host_tls_buf(j->ctx, t, 3, (size_t)(HOST_MR * vpad) *
	    sizeof(float));
	/* kᵀ [Dh, Nk] and v [Nk, Dv] as panels */
	host_pack(bk, (const float *)o->b + bi * o->sb + h * Dh, GPU_F32, 1,
	    Nk, Dh, o->ldb);
	host_pack(bv, o->v + bi * o->sv + h * Dv, GPU_F32, 0, Dv, Nk, o->ldv);
	host_round_n(bk, kpad * Dh, o->prec);
	host_round_n(bv, vpad * Nk, o->prec);
	float *qr = o->prec == LQ_PREC_F32 ? NULL : host_tls_buf(j->ctx, t, 4,
	    (size_t)(HOST_MR * Dh) * sizeof(float));
	for (int64_t i0 = 0; i0 < Nq; i0 += HOST_MR) {
		int64_t ic = Nq - i0 < HOST_MR ? Nq - i0 : HOST_MR;
		const float *qa = q + i0 * o->lda;
		int64_t lq = o->lda;
		if (qr != NULL) {
			qa = host_round_rows(qr, qa, lq, ic, Dh, o->prec);
			lq = Dh;
		}
		host_gemm_block(qa, lq, HOST_MR, ic, bk, Dh, kpad, S);
		float l[HOST_MR];
		for (int64_t r = 0; r < ic; r++) {
			float *s = S + r * kpad;
			for (int64_t c = 0; c < Nk; c++)
				s[c] *= o->alpha;
			if (kb != NULL)
				for (int64_t c = 0; c < Nk; c++)
					s[c] += kb[c];
			if (o->attn_bias != NULL) {
				int64_t base = (((o->attn_bias_b ? bi : 0) * H +
				    h) * Nq + i0 + r) * Nk;
				for (int64_t c = 0; c < Nk; c++)
					s[c] += gpu_host_param(o->attn_bias,
					    o->attn_bias_dtype, base + c);
			}
			l[r] = host_softmax_row(s, Nk);
			/* the numerators multiply v at the op's precision;
			 * their sum l stays as it was */
			host_round_n(s, Nk, o->prec);
		}
		/* O over the Nk keys only (the rows' padding columns are
		 * not summed); rows from ic on are thrown away */
		host_gemm_block(S, kpad, HOST_MR, ic, bv, Nk, vpad, O);
		for (int64_t r = 0; r < ic; r++) {
			float inv = 1.0f / l[r];
			float *dst = o->c + (bi * Nq + i0 + r) * H * Dv + h * Dv;
			for (int64_t d = 0; d < Dv; d++)
				dst[d] = O[r * vpad + d] * inv;
		}
	}
}

/*
 * Index of input coordinate i (may be outside [0, n)) under padding
 * mode m (ops_pad_mode), or -1 for a zero.
 */
static inline int64_t
host_pad_index(int64_t i, int64_t n, int m)
{
	if (i >= 0 && i < n)
		return i;
	if (m == OPS_PAD_REPLICATE)
		return i < 0 ? 0 : n - 1;
	if (m == OPS_PAD_REFLECT)
		return i < 0 ? -i : 2 * (n - 1) - i;
	return -1;
}

/*
 * Conv3d task i: output positions [i % per_batch · HOST_TASK_ROWS, +48)
 * of sample i / per_batch (flattened over Fo, Ho, Wo): each position's
 * patch (ci, kt, kh, kw in w's order) as one row of a, times the packed
 * wᵀ, plus the bias, written to y's channel planes.
 */
static void
host_conv3d_task(const struct host_job *j, int64_t i, int t)
{
	const struct gpu_host_op *o = j->o;
	const struct gpu_host_conv *g = &o->conv;
	int64_t npos = g->Fo * g->Ho * g->Wo;
	int64_t bi = i / j->per_batch, p0 = i % j->per_batch * HOST_TASK_ROWS;
	int64_t pc = npos - p0 < HOST_TASK_ROWS ? npos - p0 : HOST_TASK_ROWS;
	int64_t kt = g->kk[0], kh = g->kk[1], kw = g->kk[2];
	int64_t K = g->Ci * kt * kh * kw, npad = host_npad(g->Co);
	int64_t rows = (pc + HOST_MR - 1) / HOST_MR * HOST_MR;
	float *cols = host_tls_buf(j->ctx, t, 1, (size_t)(pc * K) *
	    sizeof(float));
	float *ct = host_tls_buf(j->ctx, t, 0, (size_t)(rows * npad) *
	    sizeof(float));
	const float *x = o->a + bi * g->Ci * g->F * g->H * g->W;
	int64_t plane = g->H * g->W;
	for (int64_t r = 0; r < pc; r++) {
		int64_t p = p0 + r, wo = p % g->Wo, ho = p / g->Wo % g->Ho;
		int64_t fo = p / (g->Wo * g->Ho);
		float *row = cols + r * K;
		for (int64_t a = 0; a < kt; a++) {
			int64_t f = host_pad_index(fo * g->st[0] - g->pad0[0] + a,
			    g->F, g->t_rep ? OPS_PAD_REPLICATE : OPS_PAD_ZERO);
			for (int64_t b = 0; b < kh; b++) {
				int64_t h = host_pad_index(ho * g->st[1] -
				    g->pad0[1] + b, g->H, g->s_mode);
				for (int64_t c = 0; c < kw; c++) {
					int64_t w = host_pad_index(wo * g->st[2] -
					    g->pad0[2] + c, g->W, g->s_mode);
					int64_t k = (a * kh + b) * kw + c;
					if (f < 0 || h < 0 || w < 0) {
						for (int64_t ci = 0; ci < g->Ci; ci++)
							row[ci * kt * kh * kw + k] = 0.0f;
						continue;
					}
					const float *src = x + (f * g->H + h) * g->W +
					    w;
					for (int64_t ci = 0; ci < g->Ci; ci++)
						row[ci * kt * kh * kw + k] =
						    src[ci * g->F * plane];
				}
			}
		}
	}
	host_gemm_block(cols, K, rows, pc, j->bp, K, npad, ct);
	float *y = o->c + bi * g->Co * npos;
	for (int64_t co = 0; co < g->Co; co++) {
		float bv = j->bias != NULL ? j->bias[co] : 0.0f;
		float *dst = y + co * npos + p0;
		for (int64_t r = 0; r < pc; r++)
			dst[r] = ct[r * npad + co] + bv;
	}
}

void
gpu_host_run(struct gpu_ctx *ctx, const struct gpu_host_op *o)
{
	switch (o->kind) {
	case GPU_HOST_NORM:
		gpu_host_norm(ctx, &o->rows);
		return;
	case GPU_HOST_EW:
		gpu_host_ew(&o->rows);
		return;
	case GPU_HOST_ROPE:
		gpu_host_rope(&o->rows);
		return;
	default:
		break;
	}
	pthread_mutex_lock(&host_lock);
	struct host_job j = {.ctx = ctx, .o = o};
	if (o->kind == GPU_HOST_ATTENTION) {
		j.task = host_attention_task;
		j.ntasks = o->batch * o->heads;
		if (o->bias != NULL) {
			int64_t n = (o->skb != 0 ? o->batch - 1 : 0) * o->skb +
			    o->Nk;
			j.kb = gpu_host_f32(ctx, 2, o->bias, o->bias_dtype, n);
		}
	} else if (o->kind == GPU_HOST_CONV3D) {
		const struct gpu_host_conv *g = &o->conv;
		int64_t K = g->Ci * g->kk[0] * g->kk[1] * g->kk[2];
		j.task = host_conv3d_task;
		j.per_batch = (g->Fo * g->Ho * g->Wo + HOST_TASK_ROWS - 1) /
		    HOST_TASK_ROWS;
		j.ntasks = g->B * j.per_batch;
		j.bias = o->bias == NULL ? NULL :
		    gpu_host_f32(ctx, 1, o->bias, o->bias_dtype, g->Co);
		float *bp = host_buf(ctx, 0, (size_t)(host_npad(g->Co) * K) *
		    sizeof(float));
		host_pack(bp, o->b, o->b_dtype, 1, g->Co, K, K);
		j.bp = bp;
	} else {
		j.task = host_gemm_task;
		j.per_batch = (o->M + HOST_TASK_ROWS - 1) / HOST_TASK_ROWS;
		j.ntasks = o->batch * j.per_batch;
		j.bias = o->bias == NULL ? NULL :
		    gpu_host_f32(ctx, 1, o->bias, o->bias_dtype, o->N);
		if (o->gate != NULL) {
			/* the gate rows the op's rows reach */
			int64_t m = o->M - 1;
			j.gate = gpu_host_f32(ctx, 2, o->gate, o->gate_dtype,
			    m / o->g_n * o->sg_b + m % o->g_n * o->sg_n + o->N);
		}
		/* every batch's op(b) packed at once (sb = 0: one, shared) */
		int64_t nb = o->sb != 0 ? o->batch : 1;
		size_t esz = gpu_dtype_size(o->b_dtype);
		j.bp_stride = host_npad(o->N) * o->K;
		float *bp = host_buf(ctx, 0, (size_t)(nb * j.bp_stride) *
		    sizeof(float));
		for (int64_t z = 0; z < nb; z++)
			host_pack(bp + z * j.bp_stride, (const char *)o->b +
			    (size_t)(z * o->sb) * esz, o->b_dtype, o->trans_b,
			    o->N, o->K, o->trans_b ? o->K : o->N);
		host_round_n(bp, nb * j.bp_stride, o->prec);
		j.bp = bp;
	}
	host_job_run(&j, ctx->host_threads);
	pthread_mutex_unlock(&host_lock);
}

void
gpu_host_free(struct gpu_ctx *ctx)
{
	for (int i = 0; i < GPU_HOST_SCRATCH; i++)
		free(ctx->host_scratch[i]);
	if (ctx->host_tls != NULL)
		for (int t = 0; t < ctx->host_threads; t++)
			for (int i = 0; i < HOST_TLS_SLOTS; i++)
				free(ctx->host_tls[t].buf[i]);
	free(ctx->host_tls);
}
