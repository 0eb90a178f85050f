/*
 * ops.c — records the kernels of ops.h: checks shapes and dtypes, fills
 * each kernel's push constants (shaders/push.h) and dispatches through
 * gpu_cmd_dispatch.  No Vulkan calls here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpu/internal.h"
#include "gpu/ops.h"

#define DESC(t) gpu_tensor_describe((t), (char[96]){0}, 96)

/* ew.comp op codes */

static enum lq_status
need_f32(struct gpu_cmd *cmd, const char *op, const char *name,
    const struct gpu_tensor *t)
{
	if (t->dtype != GPU_F32)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %s must be f32, got %s", op, name, DESC(t));
	return LQ_OK;
}

static enum lq_status
need_contig(struct gpu_cmd *cmd, const char *op, const char *name,
    const struct gpu_tensor *t)
{
	if (!gpu_tensor_is_contiguous(t))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %s must be contiguous, got %s", op, name, DESC(t));
	return LQ_OK;
}

static enum lq_status
need_numel(struct gpu_cmd *cmd, const char *op, const char *name,
    const struct gpu_tensor *t, int64_t n)
{
	if (gpu_tensor_numel(t) != n)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %s is %s, expected %" PRId64 " elements", op, name,
		    DESC(t), n);
	return LQ_OK;
}

static int
same_shape(const struct gpu_tensor *a, const struct gpu_tensor *b)
{
	if (a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i])
			return 0;
	return 1;
}

#define TRY(x) do { enum lq_status st_ = (x); if (st_ != LQ_OK) return st_; } while (0)

/* Starts an op: returns the sticky error if the command already failed. */
#define OP_BEGIN(cmd) TRY(gpu_cmd_status((cmd), NULL))

/* Elements from a view's first to its last element, inclusive. */
static uint64_t
extent(const struct gpu_tensor *t)
{
	int64_t last = 0;
	for (int i = 0; i < t->ndim; i++)
		last += (t->shape[i] - 1) * t->stride[i];
	return (uint64_t)last + 1;
}

/* ---- elementwise ---- */

/* numpy broadcast of t to y's shape into *out; 0 if incompatible. */
static int
bcast(const struct gpu_tensor *t, const struct gpu_tensor *y,
    struct gpu_tensor *out)
{
	if (t->ndim > y->ndim)
		return 0;
	int d = y->ndim - t->ndim;
	for (int k = 0; k < t->ndim; k++)
		if (t->shape[k] != y->shape[k + d] && t->shape[k] != 1)
			return 0;
	*out = gpu_tensor_broadcast(t, y->ndim, y->shape);
	return 1;
}

static enum lq_status
ew_record(struct gpu_cmd *cmd, const char *op, unsigned code,
    const struct gpu_tensor *y, const struct gpu_tensor *a,
    const struct gpu_tensor *b, const struct gpu_tensor *c, float alpha,
    float beta)
{
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "y", y));
	struct gpu_tensor v[4];
	const struct gpu_tensor *in[4] = {y, a, b, c};
	static const char *names[4] = {"y", "a", "b", "c"};
	v[0] = *y;
	for (int i = 1; i < 4; i++) {
		if (in[i] == NULL)
			continue;
		if (!bcast(in[i], y, &v[i]))
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: %s %s does not broadcast to y %s", op,
			    names[i], DESC(in[i]), DESC(y));
	}
	/* merge dims: drop size-1 dims, fuse k with k+1 when contiguous in
	 * every operand */
	int64_t shape[GPU_MAX_DIMS], st[4][GPU_MAX_DIMS];
	int nd = 0;
	for (int k = 0; k < y->ndim; k++) {
		if (y->shape[k] == 1)
			continue;
		int fuse = nd > 0;
		for (int i = 0; i < 4 && fuse; i++)
			if (in[i] != NULL &&
			    st[i][nd - 1] != v[i].stride[k] * y->shape[k])
				fuse = 0;
		if (fuse) {
			shape[nd - 1] *= y->shape[k];
			for (int i = 0; i < 4; i++)
				st[i][nd - 1] = in[i] ? v[i].stride[k] : 0;
		} else {
			shape[nd] = y->shape[k];
			for (int i = 0; i < 4; i++)
				st[i][nd] = in[i] ? v[i].stride[k] : 0;
			nd++;
		}
	}
	if (nd > 5)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: y %s needs %d dims after merging (at most 5)", op,
		    DESC(y), nd);
	int64_t n = gpu_tensor_numel(y);
	if (n > UINT32_MAX)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: %s has too many elements", op, DESC(y));
	struct ew_push pc;
	memset(&pc, 0, sizeof(pc));
	int pad = 5 - nd;
	for (int k = 0; k < 5; k++) {
		pc.shape[k] = k < pad ? 1 : (uint32_t)shape[k - pad];
		pc.sy[k] = k < pad ? 0 : (uint32_t)st[0][k - pad];
		pc.sa[k] = k < pad ? 0 : (uint32_t)st[1][k - pad];
		pc.sb[k] = k < pad ? 0 : (uint32_t)st[2][k - pad];
		pc.sc[k] = k < pad ? 0 : (uint32_t)st[3][k - pad];
	}
	pc.flags = code | (uint32_t)nd << LQ_EW_NDIM |
	    (a ? (uint32_t)a->dtype << LQ_EW_DTA : 0) |
	    (b ? (uint32_t)b->dtype << LQ_EW_DTB : 0) |
	    (c ? (uint32_t)c->dtype << LQ_EW_DTC : 0) |
	    (b ? 1u << LQ_EW_HAS_B : 0) | (c ? 1u << LQ_EW_HAS_C : 0);
	pc.alpha = alpha;
	pc.beta = beta;
	const struct gpu_tensor *bind[4] = {&v[0], a ? &v[1] : NULL,
	    b ? &v[2] : NULL, c ? &v[3] : NULL};
	for (int i = 0; i < 4; i++)
		pc.off[i] = gpu_bind_offset(cmd, bind[i]);
	static const unsigned char w[4] = {1, 0, 0, 0};
	uint32_t gx, gy;
	gpu_cmd_grid(cmd, ((uint64_t)n + 127) / 128, &gx, &gy);
	return gpu_cmd_dispatch(cmd, GPU_K_EW, bind, w, &pc, gx, gy, 1, op);
}

enum lq_status
ops_add(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, const struct gpu_tensor *b)
{
	return ew_record(cmd, "ops_add", LQ_EW_ADD, y, a, b, NULL, 0, 0);
}

enum lq_status
ops_mul(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, const struct gpu_tensor *b)
{
	return ew_record(cmd, "ops_mul", LQ_EW_MUL, y, a, b, NULL, 0, 0);
}

enum lq_status
ops_add_mul(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, const struct gpu_tensor *b,
    const struct gpu_tensor *c)
{
	return ew_record(cmd, "ops_add_mul", LQ_EW_ADDMUL, y, a, b, c, 0, 0);
}

enum lq_status
ops_scale(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a, float alpha, float beta)
{
	return ew_record(cmd, "ops_scale", LQ_EW_SCALE, y, a, NULL, NULL, alpha,
	    beta);
}

enum lq_status
ops_copy(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *a)
{
	return ew_record(cmd, "ops_copy", LQ_EW_COPY, y, a, NULL, NULL, 0, 0);
}

enum lq_status
ops_fill(struct gpu_cmd *cmd, const struct gpu_tensor *y, float value)
{
	return ew_record(cmd, "ops_fill", LQ_EW_FILL, y, NULL, NULL, NULL, value,
	    0);
}

enum lq_status
ops_act(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, enum ops_act act)
{
	float beta;
	uint32_t code = (uint32_t)act;
	memcpy(&beta, &code, 4);
	OP_BEGIN(cmd);
	if (!same_shape(x, y))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "ops_act: y %s and x %s differ", DESC(y), DESC(x));
	return ew_record(cmd, "ops_act", LQ_EW_ACT, y, x, NULL, NULL, 0, beta);
}

enum lq_status
ops_silu(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x)
{
	return ops_act(cmd, y, x, OPS_ACT_SILU);
}

enum lq_status
ops_gelu_tanh(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x)
{
	return ops_act(cmd, y, x, OPS_ACT_GELU_TANH);
}

/*
 * A per-(batch, d) row view [B, D] (or [D]) broadcast over [B, N, D]:
 * strides (row stride or 0, 0, 1).
 */
static enum lq_status
row_view(struct gpu_cmd *cmd, const char *op, const char *name,
    const struct gpu_tensor *t, const struct gpu_tensor *x,
    struct gpu_tensor *out)
{
	int64_t B = x->shape[0], D = x->shape[x->ndim - 1];
	int64_t tb, td, sb, sd;
	if (t->ndim == 1) {
		tb = 1;
		sb = 0;
		td = t->shape[0];
		sd = t->stride[0];
	} else if (t->ndim == 2) {
		tb = t->shape[0];
		sb = tb == 1 ? 0 : t->stride[0];
		td = t->shape[1];
		sd = t->stride[1];
	} else {
		tb = td = sb = sd = -1;
	}
	if ((tb != 1 && tb != B) || td != D || (D > 1 && sd != 1))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %s %s must be [%" PRId64 ", %" PRId64 "] or [%" PRId64
		    "] with unit inner stride (x %s)", op, name, DESC(t), B, D,
		    D, DESC(x));
	*out = *t;
	out->ndim = x->ndim;
	for (int k = 0; k < x->ndim; k++) {
		out->shape[k] = x->shape[k];
		out->stride[k] = 0;
	}
	out->stride[0] = sb;
	out->stride[x->ndim - 1] = 1;
	return LQ_OK;
}

enum lq_status
ops_modulate(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *scale,
    const struct gpu_tensor *shift)
{
	const char *op = "ops_modulate";
	OP_BEGIN(cmd);
	if (x->ndim != 3 || !same_shape(x, y))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s and y %s must both be [B, N, D]", op, DESC(x),
		    DESC(y));
	TRY(need_f32(cmd, op, "x", x));
	struct gpu_tensor sv, hv;
	if (scale)
		TRY(row_view(cmd, op, "scale", scale, x, &sv));
	if (shift)
		TRY(row_view(cmd, op, "shift", shift, x, &hv));
	return ew_record(cmd, op, LQ_EW_MODULATE, y, x, scale ? &sv : NULL,
	    shift ? &hv : NULL, 1.0f, 0);
}

enum lq_status
ops_gated_add(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *gate,
    const struct gpu_tensor *r)
{
	const char *op = "ops_gated_add";
	OP_BEGIN(cmd);
	if (x->ndim != 3 || !same_shape(x, y) || !same_shape(x, r))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s, r %s and y %s must all be [B, N, D]", op,
		    DESC(x), DESC(r), DESC(y));
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "r", r));
	if (gate == NULL)
		return ew_record(cmd, op, LQ_EW_ADD, y, x, r, NULL, 0, 0);
	struct gpu_tensor gv;
	TRY(row_view(cmd, op, "gate", gate, x, &gv));
	return ew_record(cmd, op, LQ_EW_ADDMUL, y, x, &gv, r, 0, 0);
}

enum lq_status
ops_add_table(struct gpu_cmd *cmd, const struct gpu_tensor *out,
    const struct gpu_tensor *table, const struct gpu_tensor *temb)
{
	const char *op = "ops_add_table";
	OP_BEGIN(cmd);
	if (out->ndim != 3 || table->ndim != 2 ||
	    table->shape[0] != out->shape[1] || table->shape[1] != out->shape[2])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: out %s must be [B, K, D] and table %s [K, D]", op,
		    DESC(out), DESC(table));
	TRY(need_contig(cmd, op, "temb", temb));
	TRY(need_numel(cmd, op, "temb", temb, gpu_tensor_numel(out)));
	struct gpu_tensor te = gpu_tensor_reshape(temb, 3, out->shape);
	return ew_record(cmd, op, LQ_EW_ADD, out, &te, table, NULL, 0, 0);
}

/* [B, C, S...] -> 3-D [B, C, S] (contiguous x only). */
static struct gpu_tensor
as_bcs(const struct gpu_tensor *x)
{
	int64_t s = 1;
	for (int k = 2; k < x->ndim; k++)
		s *= x->shape[k];
	int64_t shape[3] = {x->shape[0], x->ndim > 1 ? x->shape[1] : 1, s};
	return gpu_tensor_reshape(x, 3, shape);
}

/* [C] or [B, C] parameter as a view broadcast over [B, C, S]. */
static enum lq_status
chan_view(struct gpu_cmd *cmd, const char *op, const char *name,
    const struct gpu_tensor *t, const struct gpu_tensor *x3,
    struct gpu_tensor *out)
{
	int64_t B = x3->shape[0], C = x3->shape[1];
	int ok = (t->ndim == 1 && t->shape[0] == C) ||
	    (t->ndim == 2 && (t->shape[0] == B || t->shape[0] == 1) &&
	    t->shape[1] == C);
	if (!ok)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %s %s must be [%" PRId64 "] or [%" PRId64 ", %" PRId64
		    "]", op, name, DESC(t), C, B, C);
	*out = *t;
	out->ndim = 3;
	out->shape[0] = B;
	out->shape[1] = C;
	out->shape[2] = x3->shape[2];
	if (t->ndim == 1) {
		out->stride[0] = 0;
		out->stride[1] = t->stride[0];
	} else {
		out->stride[0] = t->shape[0] == 1 ? 0 : t->stride[0];
		out->stride[1] = t->stride[1];
	}
	out->stride[2] = 0;
	return LQ_OK;
}

enum lq_status
ops_channel_affine(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *scale,
    const struct gpu_tensor *shift, float scale_bias)
{
	const char *op = "ops_channel_affine";
	OP_BEGIN(cmd);
	if (x->ndim < 2 || !same_shape(x, y))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s and y %s must both be [B, C, ...]", op, DESC(x),
		    DESC(y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	TRY(need_f32(cmd, op, "x", x));
	struct gpu_tensor x3 = as_bcs(x), y3 = as_bcs(y), sv, hv;
	if (scale)
		TRY(chan_view(cmd, op, "scale", scale, &x3, &sv));
	if (shift)
		TRY(chan_view(cmd, op, "shift", shift, &x3, &hv));
	return ew_record(cmd, op, LQ_EW_MODULATE, &y3, &x3, scale ? &sv : NULL,
	    shift ? &hv : NULL, scale_bias, 0);
}

enum lq_status
ops_add_noise_channels(struct gpu_cmd *cmd, const struct gpu_tensor *x,
    const struct gpu_tensor *noise, const struct gpu_tensor *scale)
{
	const char *op = "ops_add_noise_channels";
	OP_BEGIN(cmd);
	if (x->ndim != 5 || noise->ndim != 2 || scale->ndim != 1 ||
	    noise->shape[0] != x->shape[3] || noise->shape[1] != x->shape[4] ||
	    scale->shape[0] != x->shape[1])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s must be [B, C, F, H, W], noise %s [H, W], "
		    "scale %s [C]", op, DESC(x), DESC(noise), DESC(scale));
	TRY(need_f32(cmd, op, "x", x));
	struct gpu_tensor nv = *noise, sv = *scale;
	nv.ndim = sv.ndim = 5;
	for (int k = 0; k < 5; k++) {
		nv.shape[k] = sv.shape[k] = x->shape[k];
		nv.stride[k] = sv.stride[k] = 0;
	}
	nv.stride[3] = noise->stride[0];
	nv.stride[4] = noise->stride[1];
	sv.stride[1] = scale->stride[0];
	return ew_record(cmd, op, LQ_EW_ADDMUL, x, x, &nv, &sv, 0, 0);
}

/* ---- matmul ---- */

static enum gpu_kernel
matmul_kernel(enum gpu_dtype dt)
{
	return dt == GPU_F16 ? GPU_K_MATMUL_F16 :
	    dt == GPU_BF16 ? GPU_K_MATMUL_BF16 : GPU_K_MATMUL_F32;
}

static enum lq_status
matmul_record(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *c,
    const struct gpu_tensor *a, const struct gpu_tensor *b,
    const struct gpu_tensor *bias, int64_t batch, int64_t M, int64_t N,
    int64_t K, int trans_b, enum ops_act act, float alpha, int64_t sc,
    int64_t sa, int64_t sb)
{
	if (M > UINT32_MAX || N > UINT32_MAX || K > UINT32_MAX)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: dimensions too large", op);
	struct matmul_push pc = {
		.M = (uint32_t)M, .N = (uint32_t)N, .K = (uint32_t)K,
		.batch = (uint32_t)batch,
		.flags = (trans_b ? 1u << LQ_MM_TRANS_B : 0) |
		    (uint32_t)act << LQ_MM_ACT |
		    (bias ? 1u << LQ_MM_HAS_BIAS : 0) |
		    (bias ? (uint32_t)bias->dtype << LQ_MM_DT_BIAS : 0),
		.alpha = alpha,
		.off_c = gpu_bind_offset(cmd, c),
		.off_a = gpu_bind_offset(cmd, a),
		.off_b = gpu_bind_offset(cmd, b),
		.off_bias = gpu_bind_offset(cmd, bias),
		.sc_batch = (uint32_t)sc, .sa_batch = (uint32_t)sa,
		.sb_batch = (uint32_t)sb,
	};
	const struct gpu_tensor *bind[4] = {c, a, b, bias};
	static const unsigned char w[4] = {1, 0, 0, 0};
	if (trans_b && K % 4 == 0 && pc.off_a % 4 == 0 && pc.off_b % 4 == 0 &&
	    sa % 4 == 0 && sb % 4 == 0) {
		enum gpu_kernel k = b->dtype == GPU_F16 ? GPU_K_LINEAR_F16 :
		    b->dtype == GPU_BF16 ? GPU_K_LINEAR_BF16 : GPU_K_LINEAR_F32;
		uint64_t rows = 64 * LINEAR_TM;
		enum gpu_texfmt tf[4] = {GPU_TEX_NONE, GPU_TEX_RGBA32F,
		    b->dtype == GPU_F16 ? GPU_TEX_RGBA16F :
		    b->dtype == GPU_BF16 ? GPU_TEX_RG32UI : GPU_TEX_RGBA32F,
		    GPU_TEX_NONE};
		uint64_t ta = (uint64_t)gpu_tensor_numel(a) / 4 + 1;
		uint64_t tb = (uint64_t)gpu_tensor_numel(b) / 4 + 1;
		if (gpu_cmd_texel_ok(cmd, tf[1], ta) &&
		    gpu_cmd_texel_ok(cmd, tf[2], tb))
			return gpu_cmd_dispatch_tex(cmd, k + (GPU_K_LINEAR_TEX_F32 -
			    GPU_K_LINEAR_F32), bind, w, tf, &pc,
			    (uint32_t)((M + rows - 1) / rows),
			    (uint32_t)((N + LINEAR_TN - 1) / LINEAR_TN),
			    (uint32_t)batch, op);
		return gpu_cmd_dispatch(cmd, k, bind, w, &pc,
		    (uint32_t)((M + rows - 1) / rows),
		    (uint32_t)((N + LINEAR_TN - 1) / LINEAR_TN), (uint32_t)batch,
		    op);
	}
	return gpu_cmd_dispatch(cmd, matmul_kernel(b->dtype), bind, w, &pc,
	    (uint32_t)((N + 63) / 64), (uint32_t)((M + 63) / 64),
	    (uint32_t)batch, op);
}

enum lq_status
ops_linear(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, enum ops_act act)
{
	const char *op = "ops_linear";
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "w", w));
	int64_t K = x->shape[x->ndim - 1];
	if (w->ndim != 2 || w->shape[1] != K)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: w %s must be [N, %" PRId64 "] for x %s", op, DESC(w), K,
		    DESC(x));
	int64_t N = w->shape[0], M = gpu_tensor_numel(x) / K;
	if (y->shape[y->ndim - 1] != N || gpu_tensor_numel(y) != M * N)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: y %s must be [..., %" PRId64 "] with %" PRId64
		    " rows (x %s, w %s)", op, DESC(y), N, M, DESC(x), DESC(w));
	if (b != NULL && (b->ndim != 1 || b->shape[0] != N ||
	    !gpu_tensor_is_contiguous(b)))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: bias %s must be [%" PRId64 "]", op, DESC(b), N);
	return matmul_record(cmd, op, y, x, w, b, 1, M, N, K, 1, act, 1.0f, 0, 0,
	    0);
}

enum lq_status
ops_matmul(struct gpu_cmd *cmd, const struct gpu_tensor *c,
    const struct gpu_tensor *a, const struct gpu_tensor *b, int trans_b,
    float alpha)
{
	const char *op = "ops_matmul";
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "a", a));
	TRY(need_f32(cmd, op, "c", c));
	TRY(need_contig(cmd, op, "a", a));
	TRY(need_contig(cmd, op, "b", b));
	TRY(need_contig(cmd, op, "c", c));
	if (a->ndim < 2 || a->ndim > 3 || b->ndim < 2 || b->ndim > 3 ||
	    c->ndim < 2 || c->ndim > 3)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: a %s, b %s, c %s must be 2-D or 3-D", op, DESC(a),
		    DESC(b), DESC(c));
	int64_t ab = a->ndim == 3 ? a->shape[0] : 1;
	int64_t bb = b->ndim == 3 ? b->shape[0] : 1;
	int64_t cb = c->ndim == 3 ? c->shape[0] : 1;
	int64_t M = a->shape[a->ndim - 2], K = a->shape[a->ndim - 1];
	int64_t bk = b->shape[b->ndim - (trans_b ? 1 : 2)];
	int64_t N = b->shape[b->ndim - (trans_b ? 2 : 1)];
	int64_t batch = cb;
	if (bk != K || c->shape[c->ndim - 2] != M ||
	    c->shape[c->ndim - 1] != N || (ab != batch && ab != 1) ||
	    (bb != batch && bb != 1))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: shapes a %s, b %s%s, c %s do not match", op, DESC(a),
		    DESC(b), trans_b ? " (transposed)" : "", DESC(c));
	return matmul_record(cmd, op, c, a, b, NULL, batch, M, N, K, trans_b,
	    OPS_ACT_NONE, alpha, M * N, ab == 1 ? 0 : M * K,
	    bb == 1 ? 0 : K * N);
}

/* ---- norms ---- */

static enum lq_status
param_vec(struct gpu_cmd *cmd, const char *op, const char *name,
    const struct gpu_tensor *t, int64_t n)
{
	if (t != NULL && (gpu_tensor_numel(t) != n || !gpu_tensor_is_contiguous(t)))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %s %s must be [%" PRId64 "]", op, name, DESC(t), n);
	return LQ_OK;
}

/* The flags word of norm.comp, normc.comp and gnorm.comp (shaders/abi.h). */
static uint32_t
norm_flags(unsigned mode, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias)
{
	return mode | (weight ? 1u << LQ_NORM_HAS_W : 0) |
	    (bias ? 1u << LQ_NORM_HAS_B : 0) |
	    (weight ? (uint32_t)weight->dtype << LQ_NORM_DTW : 0) |
	    (bias ? (uint32_t)bias->dtype << LQ_NORM_DTB : 0);
}

static enum lq_status
norm_rows(struct gpu_cmd *cmd, const char *op, unsigned mode,
    const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *weight, const struct gpu_tensor *bias, float eps)
{
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	if (!same_shape(x, y))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: y %s and x %s differ", op, DESC(y), DESC(x));
	int64_t D = x->shape[x->ndim - 1];
	TRY(param_vec(cmd, op, "weight", weight, D));
	TRY(param_vec(cmd, op, "bias", bias, D));
	int64_t rows = gpu_tensor_numel(x) / D;
	struct norm_push pc = {
		.rows = (uint32_t)rows, .D = (uint32_t)D,
		.flags = norm_flags(mode, weight, bias),
		.eps = eps,
		.off_y = gpu_bind_offset(cmd, y), .off_x = gpu_bind_offset(cmd, x),
		.off_w = gpu_bind_offset(cmd, weight),
		.off_b = gpu_bind_offset(cmd, bias),
	};
	const struct gpu_tensor *bind[4] = {y, x, weight, bias};
	static const unsigned char w[4] = {1, 0, 0, 0};
	uint32_t gx, gy;
	gpu_cmd_grid(cmd, (uint64_t)rows, &gx, &gy);
	return gpu_cmd_dispatch(cmd, GPU_K_NORM, bind, w, &pc, gx, gy, 1, op);
}

enum lq_status
ops_layer_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps)
{
	return norm_rows(cmd, "ops_layer_norm", LQ_NORM_LAYER, y, x, weight,
	    bias, eps);
}

enum lq_status
ops_rms_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight, float eps)
{
	return norm_rows(cmd, "ops_rms_norm", LQ_NORM_RMS, y, x, weight, NULL,
	    eps);
}

enum lq_status
ops_softmax(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x)
{
	return norm_rows(cmd, "ops_softmax", LQ_NORM_SOFTMAX, y, x, NULL, NULL,
	    0);
}

static enum lq_status
norm_chan(struct gpu_cmd *cmd, const char *op, enum gpu_kernel k,
    unsigned mode, int groups, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps)
{
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	if (x->ndim < 2 || !same_shape(x, y))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s and y %s must both be [B, C, ...]", op, DESC(x),
		    DESC(y));
	struct gpu_tensor x3 = as_bcs(x);
	int64_t B = x3.shape[0], C = x3.shape[1], S = x3.shape[2];
	TRY(param_vec(cmd, op, "weight", weight, C));
	TRY(param_vec(cmd, op, "bias", bias, C));
	uint32_t flags = norm_flags(mode, weight, bias);
	const struct gpu_tensor *bind[4] = {y, x, weight, bias};
	static const unsigned char w[4] = {1, 0, 0, 0};
	uint32_t gx, gy;
	if (k == GPU_K_NORMC) {
		struct normc_push pc = {
			.B = (uint32_t)B, .C = (uint32_t)C, .S = (uint32_t)S,
			.flags = flags, .eps = eps,
			.off_y = gpu_bind_offset(cmd, y),
			.off_x = gpu_bind_offset(cmd, x),
			.off_w = gpu_bind_offset(cmd, weight),
			.off_b = gpu_bind_offset(cmd, bias),
		};
		gpu_cmd_grid(cmd, ((uint64_t)(B * S) + 127) / 128, &gx, &gy);
		return gpu_cmd_dispatch(cmd, k, bind, w, &pc, gx, gy, 1, op);
	}
	if (groups < 1 || C % groups != 0)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %" PRId64 " channels do not split into %d groups", op,
		    C, groups);
	struct gnorm_push pc = {
		.B = (uint32_t)B, .C = (uint32_t)C, .S = (uint32_t)S,
		.G = (uint32_t)groups, .flags = flags, .eps = eps,
		.off_y = gpu_bind_offset(cmd, y),
		.off_x = gpu_bind_offset(cmd, x),
		.off_w = gpu_bind_offset(cmd, weight),
		.off_b = gpu_bind_offset(cmd, bias),
	};
	gpu_cmd_grid(cmd, (uint64_t)(B * groups), &gx, &gy);
	return gpu_cmd_dispatch(cmd, k, bind, w, &pc, gx, gy, 1, op);
}

enum lq_status
ops_rms_norm_channels(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight, float eps)
{
	return norm_chan(cmd, "ops_rms_norm_channels", GPU_K_NORMC, LQ_NORM_RMS,
	    0, y, x,
	    weight, NULL, eps);
}

enum lq_status
ops_layer_norm_channels(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps)
{
	return norm_chan(cmd, "ops_layer_norm_channels", GPU_K_NORMC,
	    LQ_NORM_LAYER, 0, y, x,
	    weight, bias, eps);
}

enum lq_status
ops_group_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, int groups, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps)
{
	return norm_chan(cmd, "ops_group_norm", GPU_K_GNORM, 0, groups, y, x,
	    weight, bias, eps);
}

/* ---- attention ---- */

enum lq_status
ops_attention(struct gpu_cmd *cmd, const struct gpu_tensor *out,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, const struct ops_attention_args *args)
{
	const char *op = "ops_attention";
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "q", q));
	TRY(need_f32(cmd, op, "k", k));
	TRY(need_f32(cmd, op, "v", v));
	TRY(need_f32(cmd, op, "out", out));
	TRY(need_contig(cmd, op, "out", out));
	int64_t H = args->heads;
	if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || out->ndim != 3 ||
	    H < 1)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: q %s, k %s, v %s, out %s must be [B, N, H*D], heads "
		    "%d", op, DESC(q), DESC(k), DESC(v), DESC(out),
		    args->heads);
	int64_t B = q->shape[0], Nq = q->shape[1], Nk = k->shape[1];
	int64_t Dh = q->shape[2] / H, Dv = v->shape[2] / H;
	if (q->shape[2] % H || v->shape[2] % H || k->shape[2] != q->shape[2] ||
	    k->shape[0] != B || v->shape[0] != B || v->shape[1] != Nk ||
	    out->shape[0] != B || out->shape[1] != Nq ||
	    out->shape[2] != v->shape[2] || q->stride[2] != 1 ||
	    k->stride[2] != 1 || v->stride[2] != 1)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: q %s, k %s, v %s, out %s do not match for %d heads "
		    "(inner stride must be 1)", op, DESC(q), DESC(k), DESC(v),
		    DESC(out), args->heads);
	int64_t D = Dh > Dv ? Dh : Dv;
	if (D > 256)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: head_dim %" PRId64 " exceeds 256", op, D);
	enum gpu_kernel kern = D <= 32 ? GPU_K_ATTN32 : D <= 64 ? GPU_K_ATTN64 :
	    D <= 128 ? GPU_K_ATTN128 : GPU_K_ATTN256;
	const struct gpu_tensor *kb = args->key_bias, *bias = args->bias;
	uint32_t kb_sb = 0;
	if (kb != NULL) {
		int64_t kbn = kb->shape[kb->ndim - 1];
		int64_t kbb = kb->ndim == 2 ? kb->shape[0] : 1;
		if (kb->ndim > 2 || kbn != Nk || (kbb != 1 && kbb != B) ||
		    (Nk > 1 && kb->stride[kb->ndim - 1] != 1))
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: key_bias %s must be [%" PRId64 ", %" PRId64
			    "] or [%" PRId64 "]", op, DESC(kb), B, Nk, Nk);
		kb_sb = kbb == 1 ? 0 : (uint32_t)kb->stride[0];
	}
	int bias_b = 0;
	if (bias != NULL) {
		int ok = gpu_tensor_is_contiguous(bias) &&
		    ((bias->ndim == 3 && bias->shape[0] == H &&
		    bias->shape[1] == Nq && bias->shape[2] == Nk) ||
		    (bias->ndim == 4 && bias->shape[0] == B &&
		    bias->shape[1] == H && bias->shape[2] == Nq &&
		    bias->shape[3] == Nk));
		if (!ok)
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: bias %s must be [H, Nq, Nk] or [B, H, Nq, Nk] "
			    "= [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
			    "]", op, DESC(bias), B, H, Nq, Nk);
		bias_b = bias->ndim == 4;
	}
	struct attn_push pc = {
		.B = (uint32_t)B, .Nq = (uint32_t)Nq, .Nk = (uint32_t)Nk,
		.H = (uint32_t)H, .Dh = (uint32_t)Dh, .Dv = (uint32_t)Dv,
		.scale = args->scale,
		.flags = (kb ? 1u << LQ_ATTN_HAS_KB : 0) |
		    (bias ? 1u << LQ_ATTN_HAS_BIAS : 0) |
		    (bias_b ? 1u << LQ_ATTN_BIAS_B : 0) |
		    (kb ? (uint32_t)kb->dtype << LQ_ATTN_DT_KB : 0) |
		    (bias ? (uint32_t)bias->dtype << LQ_ATTN_DT_BIAS : 0),
		.off_o = gpu_bind_offset(cmd, out),
		.off_q = gpu_bind_offset(cmd, q),
		.q_sb = (uint32_t)q->stride[0], .q_sn = (uint32_t)q->stride[1],
		.off_k = gpu_bind_offset(cmd, k),
		.k_sb = (uint32_t)k->stride[0], .k_sn = (uint32_t)k->stride[1],
		.off_v = gpu_bind_offset(cmd, v),
		.v_sb = (uint32_t)v->stride[0], .v_sn = (uint32_t)v->stride[1],
		.off_kb = gpu_bind_offset(cmd, kb), .kb_sb = kb_sb,
		.off_bias = gpu_bind_offset(cmd, bias),
	};
	const struct gpu_tensor *bind[6] = {out, q, k, v, kb, bias};
	static const unsigned char w[6] = {1, 0, 0, 0, 0, 0};
	int tex = D <= 128 && Dh % 4 == 0 && Dv % 4 == 0 &&
	    pc.off_q % 4 == 0 && pc.off_k % 4 == 0 && pc.off_v % 4 == 0 &&
	    pc.q_sb % 4 == 0 && pc.q_sn % 4 == 0 && pc.k_sb % 4 == 0 &&
	    pc.k_sn % 4 == 0 && pc.v_sb % 4 == 0 && pc.v_sn % 4 == 0 &&
	    gpu_cmd_texel_ok(cmd, GPU_TEX_RGBA32F, extent(q) / 4 + 1) &&
	    gpu_cmd_texel_ok(cmd, GPU_TEX_RGBA32F, extent(k) / 4 + 1) &&
	    gpu_cmd_texel_ok(cmd, GPU_TEX_RGBA32F, extent(v) / 4 + 1);
	if (tex) {
		static const enum gpu_texfmt tf[6] = {GPU_TEX_NONE,
		    GPU_TEX_RGBA32F, GPU_TEX_RGBA32F, GPU_TEX_RGBA32F,
		    GPU_TEX_NONE, GPU_TEX_NONE};
		return gpu_cmd_dispatch_tex(cmd, D <= 64 ? GPU_K_ATTN_TEX64 :
		    GPU_K_ATTN_TEX128, bind, w, tf, &pc,
		    (uint32_t)((Nq + 64 * ATTN_TQ - 1) / (64 * ATTN_TQ)),
		    (uint32_t)(B * H), 1, op);
	}
	return gpu_cmd_dispatch(cmd, kern, bind, w, &pc,
	    (uint32_t)((Nq + 63) / 64), (uint32_t)(B * H), 1, op);
}

enum lq_status
ops_rope(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin)
{
	const char *op = "ops_rope";
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "cos", cos));
	TRY(need_contig(cmd, op, "sin", sin));
	if (x->ndim != 3 || !same_shape(x, y) || x->shape[2] % 2 ||
	    cos->ndim != 3 || !same_shape(cos, sin) ||
	    (cos->shape[0] != 1 && cos->shape[0] != x->shape[0]) ||
	    cos->shape[1] != x->shape[1] || cos->shape[2] != x->shape[2])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s, y %s must be [B, N, D] (D even) and cos %s, sin "
		    "%s [B or 1, N, D]", op, DESC(x), DESC(y), DESC(cos),
		    DESC(sin));
	int64_t B = x->shape[0], N = x->shape[1], D = x->shape[2];
	struct rope_push pc = {
		.B = (uint32_t)B, .N = (uint32_t)N, .D = (uint32_t)D,
		.cs_sb = cos->shape[0] == 1 ? 0 : (uint32_t)(N * D),
		.flags = (uint32_t)cos->dtype << LQ_ROPE_DT_COS |
		    (uint32_t)sin->dtype << LQ_ROPE_DT_SIN,
		.off_y = gpu_bind_offset(cmd, y), .off_x = gpu_bind_offset(cmd, x),
		.off_cos = gpu_bind_offset(cmd, cos),
		.off_sin = gpu_bind_offset(cmd, sin),
	};
	const struct gpu_tensor *bind[4] = {y, x, cos, sin};
	static const unsigned char w[4] = {1, 0, 0, 0};
	uint32_t gx, gy;
	gpu_cmd_grid(cmd, ((uint64_t)(B * N * D / 2) + 127) / 128, &gx, &gy);
	return gpu_cmd_dispatch(cmd, GPU_K_ROPE, bind, w, &pc, gx, gy, 1, op);
}

/* ---- conv3d and resampling ---- */

enum lq_status
ops_conv3d(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, const struct ops_conv3d_params *p)
{
	const char *op = "ops_conv3d";
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "w", w));
	if (x->ndim != 5 || w->ndim != 5 || y->ndim != 5 ||
	    w->shape[1] != x->shape[1])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s must be [B, Ci, F, H, W] and w %s [Co, Ci, kt, kh, "
		    "kw]", op, DESC(x), DESC(w));
	int st[3], kk[3], pad0[3], padsum[3], out[3];
	const int *pads[3] = {p->pad_t, p->pad_h, p->pad_w};
	for (int i = 0; i < 3; i++) {
		st[i] = p->stride[i] > 0 ? p->stride[i] : 1;
		kk[i] = (int)w->shape[2 + i];
		pad0[i] = pads[i][0];
		padsum[i] = pads[i][0] + pads[i][1];
		int64_t in = x->shape[2 + i] + padsum[i] - kk[i];
		if (in < 0 || pads[i][0] < 0 || pads[i][1] < 0)
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: kernel %s larger than padded input %s", op,
			    DESC(w), DESC(x));
		out[i] = (int)(in / st[i] + 1);
	}
	int64_t B = x->shape[0], Co = w->shape[0];
	if (y->shape[0] != B || y->shape[1] != Co || y->shape[2] != out[0] ||
	    y->shape[3] != out[1] || y->shape[4] != out[2])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: y %s must be [%" PRId64 ", %" PRId64 ", %d, %d, %d]",
		    op, DESC(y), B, Co, out[0], out[1], out[2]);
	TRY(param_vec(cmd, op, "bias", b, Co));
	uint64_t npos = (uint64_t)out[0] * out[1] *
	    (((uint64_t)out[2] + CONV_PW - 1) / CONV_PW);
	uint64_t groups = (npos + 63) / 64;
	uint32_t gx, chunks;
	gpu_cmd_grid(cmd, groups, &gx, &chunks);
	struct conv3d_push pc = {
		.B = (uint32_t)B, .Ci = (uint32_t)x->shape[1],
		.F = (uint32_t)x->shape[2], .H = (uint32_t)x->shape[3],
		.W = (uint32_t)x->shape[4], .Co = (uint32_t)Co,
		.Fo = (uint32_t)out[0], .Ho = (uint32_t)out[1],
		.Wo = (uint32_t)out[2], .kt = (uint32_t)kk[0],
		.kh = (uint32_t)kk[1], .kw = (uint32_t)kk[2],
		.st = (uint32_t)st[0], .sh = (uint32_t)st[1],
		.sw = (uint32_t)st[2], .pt = pad0[0], .ph = pad0[1],
		.pw = pad0[2],
		.flags = (p->t_mode == OPS_PAD_REPLICATE ?
		    1u << LQ_CONV_T_REPLICATE : 0) |
		    (p->s_mode == OPS_PAD_REPLICATE ?
		    1u << LQ_CONV_S_REPLICATE : 0) |
		    (b ? 1u << LQ_CONV_HAS_B : 0) |
		    (uint32_t)w->dtype << LQ_CONV_DTW |
		    (b ? (uint32_t)b->dtype << LQ_CONV_DTB : 0),
		.pos_chunks = chunks,
		.off_y = gpu_bind_offset(cmd, y), .off_x = gpu_bind_offset(cmd, x),
		.off_w = gpu_bind_offset(cmd, w), .off_b = gpu_bind_offset(cmd, b),
	};
	const struct gpu_tensor *bind[4] = {y, x, w, b};
	static const unsigned char wr[4] = {1, 0, 0, 0};
	enum gpu_texfmt tf[4] = {GPU_TEX_NONE, GPU_TEX_R32F,
	    w->dtype == GPU_F16 ? GPU_TEX_R16F :
	    w->dtype == GPU_BF16 ? GPU_TEX_R16UI : GPU_TEX_R32F, GPU_TEX_NONE};
	if (gpu_cmd_texel_ok(cmd, tf[1], (uint64_t)gpu_tensor_numel(x) + 4) &&
	    gpu_cmd_texel_ok(cmd, tf[2], (uint64_t)gpu_tensor_numel(w) + 4)) {
		enum gpu_kernel k = w->dtype == GPU_F16 ? GPU_K_CONV3D_TEX_F16 :
		    w->dtype == GPU_BF16 ? GPU_K_CONV3D_TEX_BF16 :
		    GPU_K_CONV3D_TEX_F32;
		return gpu_cmd_dispatch_tex(cmd, k, bind, wr, tf, &pc, gx,
		    (uint32_t)((Co + CONV_CB - 1) / CONV_CB), (uint32_t)(B * chunks),
		    op);
	}
	return gpu_cmd_dispatch(cmd, GPU_K_CONV3D, bind, wr, &pc, gx,
	    (uint32_t)((Co + CONV_CB - 1) / CONV_CB), (uint32_t)(B * chunks),
		    op);
}

static enum lq_status
d2s_record(struct gpu_cmd *cmd, const char *op, int to_depth,
    const struct gpu_tensor *space, const struct gpu_tensor *depth,
    const struct gpu_tensor *y, const struct gpu_tensor *x, int ft, int fh,
    int fw, int hw_swapped)
{
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	int64_t f = (int64_t)ft * fh * fw;
	if (space->ndim != 5 || depth->ndim != 5 || ft < 1 || fh < 1 ||
	    fw < 1 || (hw_swapped && fh != fw) ||
	    depth->shape[0] != space->shape[0] ||
	    depth->shape[1] != space->shape[1] * f ||
	    space->shape[2] != depth->shape[2] * ft ||
	    space->shape[3] != depth->shape[3] * fh ||
	    space->shape[4] != depth->shape[4] * fw)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: y %s and x %s do not match factors (%d, %d, %d)%s", op,
		    DESC(y), DESC(x), ft, fh, fw,
		    hw_swapped ? " with hw_swapped (needs fh == fw)" : "");
	struct d2s_push pc = {
		.B = (uint32_t)space->shape[0], .C = (uint32_t)space->shape[1],
		.F = (uint32_t)depth->shape[2], .H = (uint32_t)depth->shape[3],
		.W = (uint32_t)depth->shape[4],
		.ft = (uint32_t)ft, .fh = (uint32_t)fh, .fw = (uint32_t)fw,
		.flags = (to_depth ? 1u << LQ_D2S_TO_DEPTH : 0) |
		    (hw_swapped ? 1u << LQ_D2S_HW_SWAPPED : 0),
		.off_y = gpu_bind_offset(cmd, y), .off_x = gpu_bind_offset(cmd, x),
	};
	const struct gpu_tensor *bind[2] = {y, x};
	static const unsigned char w[2] = {1, 0};
	uint32_t gx, gy;
	gpu_cmd_grid(cmd, ((uint64_t)gpu_tensor_numel(y) + 127) / 128, &gx, &gy);
	return gpu_cmd_dispatch(cmd, GPU_K_D2S, bind, w, &pc, gx, gy, 1, op);
}

enum lq_status
ops_depth_to_space(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, int ft, int fh, int fw, int hw_swapped)
{
	return d2s_record(cmd, "ops_depth_to_space", 0, y, x, y, x, ft, fh, fw,
	    hw_swapped);
}

enum lq_status
ops_space_to_depth(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, int ft, int fh, int fw, int hw_swapped)
{
	return d2s_record(cmd, "ops_space_to_depth", 1, x, y, y, x, ft, fh, fw,
	    hw_swapped);
}
