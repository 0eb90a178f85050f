/*
 * host.c — the CPU-device fast path (internal.h, issue 18 item 2): on a
 * Vulkan device that is a CPU implementation (lavapipe / llvmpipe,
 * VK_PHYSICAL_DEVICE_TYPE_CPU) every buffer is host memory, mapped, so
 * ops_linear, ops_matmul and ops_attention (two GEMMs per head around a
 * row softmax) run as OpenBLAS cblas_sgemm calls on the mapped pointers
 * instead of shaders; everything else stays a shader.  The command stream is cut there
 * (cmd.c): the dispatches before a host op are submitted and waited for,
 * the host op runs, the next dispatches follow.
 *
 * OpenBLAS is loaded with dlopen("libopenblas.so.0"), so the binary runs
 * without it: the GEMMs then stay shaders and the log says so once.
 *
 * Determinism.  OpenBLAS picks its kernel by the call's shape (a small-
 * matrix kernel below some M·N·K, a different K blocking), so the bits of
 * a row would depend on how many rows share its call: a mesh shard (fewer
 * rows) would differ from the whole.  So every call here has exactly
 * GPU_HOST_GEMM_ROWS rows: x is cut into fixed row panels and the last
 * one is padded with zero rows (tests/gpu/test-host checks rows computed
 * alone, in a shard at any offset and in the whole batch are the same
 * bits).  OpenBLAS never splits K between its threads, so the thread
 * count (fixed: LATENTQ_GEMM_THREADS, not the machine's cores) changes
 * no sum either; it is still part of the variant string, like the
 * library's version and kernel core, because those could.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/vk.h"

/* cblas.h's values (CblasRowMajor, CblasNoTrans, CblasTrans). */
enum { HOST_ROW_MAJOR = 101, HOST_NO_TRANS = 111, HOST_TRANS = 112 };

typedef void (*host_sgemm_fn)(int order, int transa, int transb, int m,
    int n, int k, float alpha, const float *a, int lda, const float *b,
    int ldb, float beta, float *c, int ldc);

static struct {
	pthread_once_t once;
	int ok;			/* library loaded */
	host_sgemm_fn sgemm;
	void (*set_threads)(int);
	char variant[96];	/* "host-gemm:OpenBLAS 0.3.21 SkylakeX" */
	char why[256];		/* why not loaded */
	/* One call at a time: OpenBLAS's thread count is process-wide and
	 * a mesh's ranks run on threads of their own. */
	pthread_mutex_t lock;
} host = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void
host_load(void)
{
	const char *lib = "libopenblas.so.0";
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(host.why, sizeof(host.why), "%s", dlerror());
		return;
	}
	host.sgemm = (host_sgemm_fn)dlsym(h, "cblas_sgemm");
	host.set_threads = (void (*)(int))dlsym(h,
	    "openblas_set_num_threads");
	char *(*config)(void) = (char *(*)(void))dlsym(h,
	    "openblas_get_config");
	char *(*core)(void) = (char *(*)(void))dlsym(h,
	    "openblas_get_corename");
	if (host.sgemm == NULL || host.set_threads == NULL || config == NULL ||
	    core == NULL) {
		snprintf(host.why, sizeof(host.why), "%s lacks cblas_sgemm, "
		    "openblas_set_num_threads, openblas_get_config or "
		    "openblas_get_corename", lib);
		dlclose(h);
		return;
	}
	/* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "OpenBLAS 0.3.21" */
	char name[64];
	snprintf(name, sizeof(name), "%s", config());
	char *sp = strchr(name, ' ');
	if (sp != NULL && (sp = strchr(sp + 1, ' ')) != NULL)
		*sp = '\0';
	snprintf(host.variant, sizeof(host.variant), "host-gemm:%s %s", name,
	    core());
	host.ok = 1;
}

/* once per process, when the fast path was wanted but cannot load */
static void
host_say_missing(void)
{
	log_warn("gpu: no host GEMM (%s): linear layers and matmuls run as "
	    "shaders on this CPU device; install libopenblas0 for the fast "
	    "path", host.why);
}

void
gpu_host_resolve(struct gpu_ctx *ctx)
{
	const char *e = getenv("LATENTQ_GPU_HOST_GEMM");
	int want = strcmp(ctx->caps.device_type, "cpu") == 0;
	if (e != NULL && *e != '\0')
		want = strcmp(e, "0") != 0;
	ctx->host_gemm = 0;
	snprintf(ctx->gemm_variant, sizeof(ctx->gemm_variant), "shader");
	if (!want)
		return;
	pthread_once(&host.once, host_load);
	if (!host.ok) {
		static pthread_once_t said = PTHREAD_ONCE_INIT;
		pthread_once(&said, host_say_missing);
		return;
	}
	ctx->host_gemm = 1;
	ctx->host_threads = GPU_HOST_GEMM_THREADS;
	e = getenv("LATENTQ_GEMM_THREADS");
	if (e != NULL && *e != '\0') {
		char *end;
		long t = strtol(e, &end, 10);
		if (*end != '\0' || t < 1 || t > 256)
			log_warn("LATENTQ_GEMM_THREADS=%s is not a count from 1 to "
			    "256; using %d", e, GPU_HOST_GEMM_THREADS);
		else
			ctx->host_threads = (int)t;
	}
	snprintf(ctx->gemm_variant, sizeof(ctx->gemm_variant), "%s t=%d",
	    host.variant, ctx->host_threads);
}

/* float of element i of a parameter in dtype dt */
static float
host_param(const void *p, enum gpu_dtype dt, int64_t i)
{
	if (dt == GPU_F16)
		return half_f16_to_f32(((const uint16_t *)p)[i]);
	if (dt == GPU_BF16)
		return half_bf16_to_f32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

/* the context's host scratch buffer `slot`, at least `bytes` */
static float *
host_buf(struct gpu_ctx *ctx, int slot, size_t bytes)
{
	if (ctx->host_scratch_n[slot] < bytes) {
		free(ctx->host_scratch[slot]);
		ctx->host_scratch[slot] = xmalloc(bytes);
		ctx->host_scratch_n[slot] = bytes;
	}
	return ctx->host_scratch[slot];
}

/*
 * f32 view of n elements of a parameter: p itself when it is f32, else
 * decoded into the context's host scratch (slot 0 weights, 1 bias).
 */
static const float *
host_f32(struct gpu_ctx *ctx, int slot, const void *p, enum gpu_dtype dt,
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
		f[i] = host_param(p, dt, i);
	return f;
}

/* shaders/common.glsl lq_act, in C with the same formulas */
float
gpu_host_act(float x, unsigned act)
{
	switch (act) {
	case LQ_ACT_GELU_TANH: {
		float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
		u = u < -15.0f ? -15.0f : u > 15.0f ? 15.0f : u;
		float th = 1.0f - 2.0f / (expf(2.0f * u) + 1.0f);
		return 0.5f * x * (1.0f + th);
	}
	case LQ_ACT_SILU:
		return x / (1.0f + expf(-x));
	case LQ_ACT_RELU:
		return x > 0.0f ? x : 0.0f;
	case LQ_ACT_GELU:
		return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
	case LQ_ACT_TANH: {
		if (fabsf(x) < 0.0625f) {
			float x2 = x * x;
			return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f /
			    15.0f + x2 * (-17.0f / 315.0f))));
		}
		float c = x < -15.0f ? -15.0f : x > 15.0f ? 15.0f : x;
		return 1.0f - 2.0f / (expf(2.0f * c) + 1.0f);
	}
	case LQ_ACT_SIGMOID:
		return 1.0f / (1.0f + expf(-x));
	default:
		return x;
	}
}

/*
 * c[M, N] (row stride ldc) = act(alpha · a[M, K] · op(b) + bias) in
 * panels of exactly GPU_HOST_GEMM_ROWS rows (the last padded), b f32.
 */
static void
host_gemm_rows(struct gpu_ctx *ctx, const struct gpu_host_op *o,
    const float *a, const float *b, const float *bias, float *c)
{
	const int64_t P = GPU_HOST_GEMM_ROWS;
	int64_t M = o->M, N = o->N, K = o->K;
	int tb = o->trans_b ? HOST_TRANS : HOST_NO_TRANS;
	int ldb = (int)(o->trans_b ? K : N);
	for (int64_t m0 = 0; m0 < M; m0 += P) {
		int64_t mc = M - m0 < P ? M - m0 : P;
		const float *ap = a + m0 * K;
		float *cp = c + m0 * o->ldc;
		int ldc = (int)o->ldc;
		if (mc < P) {
			size_t need = (size_t)(P * K + P * N) * sizeof(float);
			if (ctx->host_panel_n < need) {
				free(ctx->host_panel);
				ctx->host_panel = xmalloc(need);
				ctx->host_panel_n = need;
			}
			float *pa = ctx->host_panel, *pc = pa + P * K;
			memcpy(pa, ap, (size_t)(mc * K) * sizeof(float));
			memset(pa + mc * K, 0, (size_t)((P - mc) * K) *
			    sizeof(float));
			host.sgemm(HOST_ROW_MAJOR, HOST_NO_TRANS, tb, (int)P,
			    (int)N, (int)K, o->alpha, pa, (int)K, b, ldb, 0.0f,
			    pc, (int)N);
			for (int64_t i = 0; i < mc; i++)
				memcpy(cp + i * o->ldc, pc + i * N,
				    (size_t)N * sizeof(float));
		} else {
			host.sgemm(HOST_ROW_MAJOR, HOST_NO_TRANS, tb, (int)P,
			    (int)N, (int)K, o->alpha, ap, (int)K, b, ldb, 0.0f,
			    cp, ldc);
		}
		if (bias == NULL && o->act == LQ_ACT_NONE)
			continue;
		for (int64_t i = 0; i < mc; i++) {
			float *row = cp + i * o->ldc;
			for (int64_t j = 0; j < N; j++)
				row[j] = gpu_host_act(row[j] + (bias ? bias[j] :
				    0.0f), o->act);
		}
	}
}

/*
 * e^x for x <= 0 (Cephes expf: x = n·ln2 + r, a degree-6 polynomial in
 * r, times 2^n), within 2 ulp of expf; below -87 it is 0.  Written as
 * plain arithmetic on each element so the loops over rows vectorise.
 */
static inline float
host_exp_neg(float x)
{
	x = x < -87.0f ? -87.0f : x;
	float t = x * 1.44269504088896341f - 0.5f;
	float n = (float)(int)t;	/* in [t, t + 1): |r| <= ln2 / 2 */
	float r = x - n * 0.693359375f - n * -2.12194440e-4f;
	float p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	union {
		uint32_t u;
		float f;
	} e = {.u = (uint32_t)((int)n + 127) << 23};
	return p * e.f;
}

/*
 * GPU_HOST_ATTENTION for one (b, h): query rows in panels of exactly
 * GPU_HOST_GEMM_ROWS (the last padded): S = alpha·Qp·Kᵀ (sgemm), plus the
 * biases, softmax by rows (max, exp, sum in key order), O = E·V (sgemm),
 * scaled by 1/sum.
 */
static void
host_attention_head(struct gpu_ctx *ctx, const struct gpu_host_op *o,
    int64_t bi, int64_t h)
{
	const int64_t P = GPU_HOST_GEMM_ROWS;
	int64_t Nq = o->M, Nk = o->Nk, Dh = o->K, Dv = o->N, H = o->heads;
	const float *q = o->a + bi * o->sa + h * Dh;
	const float *k = (const float *)o->b + bi * o->sb + h * Dh;
	const float *v = o->v + bi * o->sv + h * Dv;
	float *S = host_buf(ctx, 2, (size_t)(P * Nk) * sizeof(float));
	float *qp = host_buf(ctx, 3, (size_t)(P * Dh) * sizeof(float));
	float *op = host_buf(ctx, 4, (size_t)(P * Dv) * sizeof(float));
	float *l = host_buf(ctx, 5, (size_t)P * sizeof(float));
	const float *kb = o->bias == NULL ? NULL :
	    o->bias_dtype == GPU_F32 ? (const float *)o->bias + bi * o->skb :
	    NULL;
	float *kbf = NULL;
	if (o->bias != NULL && kb == NULL) {
		kbf = host_buf(ctx, 6, (size_t)Nk * sizeof(float));
		for (int64_t j = 0; j < Nk; j++)
			kbf[j] = host_param(o->bias, o->bias_dtype, bi * o->skb +
			    j);
		kb = kbf;
	}
	for (int64_t i0 = 0; i0 < Nq; i0 += P) {
		int64_t ic = Nq - i0 < P ? Nq - i0 : P;
		const float *qa = q + i0 * o->lda;
		int lda = (int)o->lda;
		if (ic < P) {
			for (int64_t i = 0; i < ic; i++)
				memcpy(qp + i * Dh, qa + i * o->lda,
				    (size_t)Dh * sizeof(float));
			memset(qp + ic * Dh, 0, (size_t)((P - ic) * Dh) *
			    sizeof(float));
			qa = qp;
			lda = (int)Dh;
		}
		host.sgemm(HOST_ROW_MAJOR, HOST_NO_TRANS, HOST_TRANS, (int)P,
		    (int)Nk, (int)Dh, o->alpha, qa, lda, k, (int)o->ldb, 0.0f,
		    S, (int)Nk);
		for (int64_t i = 0; i < ic; i++) {
			float *s = S + i * Nk;
			if (kb != NULL)
				for (int64_t j = 0; j < Nk; j++)
					s[j] += kb[j];
			if (o->attn_bias != NULL) {
				int64_t base = (((o->attn_bias_b ? bi : 0) * H +
				    h) * Nq + i0 + i) * Nk;
				for (int64_t j = 0; j < Nk; j++)
					s[j] += host_param(o->attn_bias,
					    o->attn_bias_dtype, base + j);
			}
			float m = -3.0e38f;
			for (int64_t j = 0; j < Nk; j++)
				m = s[j] > m ? s[j] : m;
			for (int64_t j = 0; j < Nk; j++)
				s[j] = host_exp_neg(s[j] - m);
			float sum = 0.0f;
			for (int64_t j = 0; j < Nk; j++)
				sum += s[j];
			l[i] = sum;
		}
		/* rows from ic on (padding) are whatever they are: a row's
		 * output depends on its own scores only, and these are
		 * dropped */
		host.sgemm(HOST_ROW_MAJOR, HOST_NO_TRANS, HOST_NO_TRANS, (int)P,
		    (int)Dv, (int)Nk, 1.0f, S, (int)Nk, v, (int)o->ldv, 0.0f, op,
		    (int)Dv);
		for (int64_t i = 0; i < ic; i++) {
			float inv = 1.0f / l[i];
			float *dst = o->c + (bi * Nq + i0 + i) * H * Dv + h * Dv;
			for (int64_t d = 0; d < Dv; d++)
				dst[d] = op[i * Dv + d] * inv;
		}
	}
}

void
gpu_host_run(struct gpu_ctx *ctx, const struct gpu_host_op *o)
{
	switch (o->kind) {
	case GPU_HOST_NORM:
		gpu_host_norm(&o->rows);
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
	pthread_mutex_lock(&host.lock);
	host.set_threads(ctx->host_threads);
	if (o->kind == GPU_HOST_ATTENTION) {
		for (int64_t bi = 0; bi < o->batch; bi++)
			for (int64_t h = 0; h < o->heads; h++)
				host_attention_head(ctx, o, bi, h);
		pthread_mutex_unlock(&host.lock);
		return;
	}
	const float *bias = o->bias == NULL ? NULL :
	    host_f32(ctx, 1, o->bias, o->bias_dtype, o->N);
	const float *b = NULL;
	for (int64_t z = 0; z < o->batch; z++) {
		if (z == 0 || o->sb != 0)
			b = host_f32(ctx, 0, (const char *)o->b + (size_t)(z *
			    o->sb) * gpu_dtype_size(o->b_dtype), o->b_dtype,
			    o->N * o->K);
		host_gemm_rows(ctx, o, o->a + z * o->sa, b, bias,
		    o->c + z * o->sc);
	}
	pthread_mutex_unlock(&host.lock);
}

void
gpu_host_free(struct gpu_ctx *ctx)
{
	for (int i = 0; i < GPU_HOST_SCRATCH; i++)
		free(ctx->host_scratch[i]);
	free(ctx->host_panel);
}
