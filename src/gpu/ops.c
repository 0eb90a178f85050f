/*
 * ops.c — records the kernels of ops.h: checks shapes and dtypes, fills
 * each kernel's push constants (shaders/push.h) and dispatches through
 * gpu_cmd_dispatch.  No Vulkan calls here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
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

/* ---- splitting (tensors larger than one binding) ---- */

/*
 * The largest c in [0, left] such that every t[i] (NULL: skipped) sliced
 * to [start·mul[i], (start + c)·mul[i]) along dim[i] fits one binding
 * (mul NULL: 1).  Spans grow with c, so a binary search finds it.
 */
static int64_t
fit_len(const struct gpu_cmd *cmd, int n, const struct gpu_tensor *const *t,
    const int *dim, const int64_t *mul, int64_t start, int64_t left)
{
	int64_t lo = 0, hi = left;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2, ok = 1;
		for (int i = 0; i < n && ok; i++) {
			if (t[i] == NULL)
				continue;
			int64_t m = mul ? mul[i] : 1;
			struct gpu_tensor v = gpu_tensor_slice(t[i], dim[i],
			    start * m, mid * m);
			ok = gpu_bind_fits(cmd, &v);
		}
		if (ok)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* 1 when every non-NULL t[i] fits one binding. */
static int
all_fit(const struct gpu_cmd *cmd, int n, const struct gpu_tensor *const *t)
{
	for (int i = 0; i < n; i++)
		if (t[i] != NULL && !gpu_bind_fits(cmd, t[i]))
			return 0;
	return 1;
}

/* The error of a tensor that no split of `op` brings under one binding. */
static enum lq_status
split_fail(struct gpu_cmd *cmd, const char *op, const char *name,
    const struct gpu_tensor *t, const char *unit)
{
	const struct device_caps *c = gpu_ctx_caps(gpu_cmd_ctx(cmd));
	return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
	    "%s: %s %s (%" PRIu64 " bytes) does not split to fit one binding: "
	    "one %s is more than device \"%s\" binds (%" PRIu64 " bytes, "
	    "maxStorageBufferRange)", op, name, DESC(t),
	    gpu_bind_span(cmd, t), unit, c->name, gpu_cmd_max_binding(cmd));
}

#define SL(t, d, a, n) gpu_tensor_slice((t), (d), (a), (n))

/* ---- elementwise ---- */

/*
 * The host pointers of t[0..n) (NULL entries: NULL) into hp; 1 when every
 * given tensor is mapped and the host path is on (gpu_cmd_host_ptr), so
 * the op can run on the host (host_rows.c), else 0.
 */
static int
host_ptrs(const struct gpu_cmd *cmd, int n, const struct gpu_tensor *const *t,
    void **hp)
{
	int ok = 1;
	for (int i = 0; i < n; i++) {
		hp[i] = gpu_cmd_host_ptr(cmd, t[i]);
		if (t[i] != NULL && hp[i] == NULL)
			ok = 0;
	}
	return ok;
}

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

static enum lq_status ew_split(struct gpu_cmd *cmd, const char *op,
    unsigned code, const struct gpu_tensor *const *bind, int nd, int d0,
    float alpha, float beta);

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
	/* the merged views: what the kernel sees, and what a split slices */
	struct gpu_tensor mv[4];
	for (int i = 0; i < 4; i++) {
		mv[i] = v[i];
		mv[i].ndim = nd > 0 ? nd : 1;
		for (int k = 0; k < GPU_MAX_DIMS; k++) {
			mv[i].shape[k] = k < nd ? shape[k] : 1;
			mv[i].stride[k] = k < nd ? st[i][k] : 0;
		}
	}
	const struct gpu_tensor *bind[4] = {&mv[0], a ? &mv[1] : NULL,
	    b ? &mv[2] : NULL, c ? &mv[3] : NULL};
	/* the CPU-device host path (host_rows.c) */
	void *hp[4];
	if (host_ptrs(cmd, 4, bind, hp)) {
		struct gpu_host_op o = {.kind = GPU_HOST_EW};
		struct gpu_host_rows *r = &o.rows;
		*r = (struct gpu_host_rows){.code = code, .alpha = alpha,
		    .beta = beta, .y = hp[0], .a = hp[1], .b = hp[2],
		    .c = hp[3]};
		r->dta = a ? a->dtype : GPU_F32;
		r->dtb = b ? b->dtype : GPU_F32;
		r->dtc = c ? c->dtype : GPU_F32;
		int64_t *st5[4] = {r->sy, r->sa, r->sb, r->sc};
		for (int k = 0; k < 5; k++) {
			int j = k - (5 - nd);
			r->shape[k] = j < 0 ? 1 : shape[j];
			for (int i = 0; i < 4; i++)
				st5[i][k] = j < 0 || bind[i] == NULL ? 0 :
				    bind[i]->stride[j];
		}
		return gpu_cmd_host(cmd, &o, op);
	}
	return ew_split(cmd, op, code, bind, nd, 0, alpha, beta);
}

/* One ew dispatch over merged views (bind[0] = y; NULL = absent). */
static enum lq_status
ew_emit(struct gpu_cmd *cmd, const char *op, unsigned code,
    const struct gpu_tensor *const *bind, int nd, float alpha, float beta)
{
	const struct gpu_tensor *y = bind[0];
	int64_t n = gpu_tensor_numel(y);
	if (n > UINT32_MAX)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: %s has too many elements", op, DESC(y));
	struct ew_push pc;
	memset(&pc, 0, sizeof(pc));
	int pad = 5 - nd;
	for (int k = 0; k < 5; k++) {
		int j = k - pad;
		pc.shape[k] = k < pad ? 1 : (uint32_t)y->shape[j];
		pc.sy[k] = k < pad ? 0 : (uint32_t)y->stride[j];
		pc.sa[k] = k < pad || !bind[1] ? 0 : (uint32_t)bind[1]->stride[j];
		pc.sb[k] = k < pad || !bind[2] ? 0 : (uint32_t)bind[2]->stride[j];
		pc.sc[k] = k < pad || !bind[3] ? 0 : (uint32_t)bind[3]->stride[j];
	}
	pc.flags = code | (uint32_t)nd << LQ_EW_NDIM |
	    (bind[1] ? (uint32_t)bind[1]->dtype << LQ_EW_DTA : 0) |
	    (bind[2] ? (uint32_t)bind[2]->dtype << LQ_EW_DTB : 0) |
	    (bind[3] ? (uint32_t)bind[3]->dtype << LQ_EW_DTC : 0) |
	    (bind[2] ? 1u << LQ_EW_HAS_B : 0) |
	    (bind[3] ? 1u << LQ_EW_HAS_C : 0);
	pc.alpha = alpha;
	pc.beta = beta;
	for (int i = 0; i < 4; i++)
		pc.off[i] = gpu_bind_offset(cmd, bind[i]);
	static const unsigned char w[4] = {1, 0, 0, 0};
	uint32_t gx, gy;
	gpu_cmd_grid(cmd, ((uint64_t)n + 127) / 128, &gx, &gy);
	return gpu_cmd_dispatch(cmd, GPU_K_EW, bind, w, &pc, gx, gy, 1, op);
}

/*
 * Elementwise work has no reductions, so any split gives the same bits:
 * the outermost dim (from `d0`) that is not 1 is cut into runs whose
 * views all fit; where a single index does not fit, the next dim is cut.
 */
static enum lq_status
ew_split(struct gpu_cmd *cmd, const char *op, unsigned code,
    const struct gpu_tensor *const *bind, int nd, int d0, float alpha,
    float beta)
{
	if (all_fit(cmd, 4, bind))
		return ew_emit(cmd, op, code, bind, nd, alpha, beta);
	int k = d0;
	while (k < bind[0]->ndim && bind[0]->shape[k] == 1)
		k++;
	if (k >= bind[0]->ndim) {
		for (int i = 0; i < 4; i++)
			if (bind[i] != NULL && !gpu_bind_fits(cmd, bind[i]))
				return split_fail(cmd, op, i ? "input" : "y",
				    bind[i], "element");
		return gpu_cmd_status(cmd, NULL);
	}
	int dim[4] = {k, k, k, k};
	int64_t len = bind[0]->shape[k];
	for (int64_t at = 0; at < len;) {
		int64_t c = fit_len(cmd, 4, bind, dim, NULL, at, len - at);
		struct gpu_tensor sv[4];
		const struct gpu_tensor *sb[4];
		for (int i = 0; i < 4; i++) {
			if (bind[i] != NULL)
				sv[i] = SL(bind[i], k, at, c ? c : 1);
			sb[i] = bind[i] ? &sv[i] : NULL;
		}
		TRY(c ? ew_emit(cmd, op, code, sb, nd, alpha, beta) :
		    ew_split(cmd, op, code, sb, nd, k + 1, alpha, beta));
		at += c ? c : 1;
	}
	return LQ_OK;
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

enum lq_status
ops_leaky_relu(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, float negative_slope)
{
	OP_BEGIN(cmd);
	if (!same_shape(x, y))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "ops_leaky_relu: y %s and x %s differ", DESC(y), DESC(x));
	return ew_record(cmd, "ops_leaky_relu", LQ_EW_LEAKY_RELU, y, x, NULL,
	    NULL, negative_slope, 0);
}

enum lq_status
ops_snake_beta(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *alpha,
    const struct gpu_tensor *beta, float eps)
{
	OP_BEGIN(cmd);
	if (!same_shape(x, y) || x->ndim != 3 || alpha->ndim != 1 ||
	    beta->ndim != 1 || alpha->shape[0] != x->shape[1] ||
	    beta->shape[0] != x->shape[1])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "ops_snake_beta: y %s, x %s must be [B, C, T] and alpha %s, "
		    "beta %s [C]", DESC(y), DESC(x), DESC(alpha), DESC(beta));
	/* [C] as [C, 1]: broadcast over B (leading) and T */
	struct gpu_tensor a2 = gpu_tensor_reshape(alpha, 2,
	    (const int64_t[]){ alpha->shape[0], 1 });
	struct gpu_tensor b2 = gpu_tensor_reshape(beta, 2,
	    (const int64_t[]){ beta->shape[0], 1 });
	return ew_record(cmd, "ops_snake_beta", LQ_EW_SNAKE, y, x, &a2, &b2,
	    eps, 0);
}

enum lq_status
ops_clamp(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, float lo, float hi)
{
	OP_BEGIN(cmd);
	if (!same_shape(x, y) || !(lo <= hi))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "ops_clamp: y %s and x %s differ, or lo %g > hi %g",
		    DESC(y), DESC(x), lo, hi);
	return ew_record(cmd, "ops_clamp", LQ_EW_CLAMP, y, x, NULL, NULL, lo,
	    hi);
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

/*
 * k, or its copy that rounds the operands (gpu_kernel_rounding) when
 * cmd's precision is not f32: the generic matmul and attention kernels
 * (linear.comp and attn_tex.comp are not taken then).
 */
static enum gpu_kernel
kernel_for_precision(const struct gpu_cmd *cmd, enum gpu_kernel k)
{
	if (gpu_cmd_precision(cmd) == GPU_PRECISION_F32)
		return k;
	int r = gpu_kernel_rounding((int)k);
	LQ_ASSERT(r >= 0);
	return (enum gpu_kernel)r;
}

static enum gpu_kernel
matmul_kernel(enum gpu_dtype dt)
{
	return dt == GPU_F16 ? GPU_K_MATMUL_F16 :
	    dt == GPU_BF16 ? GPU_K_MATMUL_BF16 : GPU_K_MATMUL_F32;
}

/*
 * linear.comp's gated residual (ops_linear_gated_add): c = r + gate ·
 * act(...).  r: c's rows of r (ldc apart, like c); gate: a [B, Ng, n]
 * view of the columns c has (inner stride 1, bound whole) or NULL; m0:
 * the op's row of c's first row (a row block's), gn: rows per sample.
 */
struct mm_resid {
	const struct gpu_tensor *r, *gate;
	int64_t m0, gn;
};

/* 1 when linear.comp takes a (row-major [M, K], batch stride sa) times
 * bᵀ (b [N, K], batch stride sb): K, the batch strides and both bound
 * starts multiples of 4 elements.  Slicing rows of a or b keeps this. */
static int
linear_fits(const struct gpu_cmd *cmd, const struct gpu_tensor *a,
    const struct gpu_tensor *b, int64_t K, int64_t sa, int64_t sb)
{
	/* a reduced precision rounds in matmul.comp's copy alone */
	return gpu_cmd_precision(cmd) == GPU_PRECISION_F32 &&
	    K % 4 == 0 && gpu_bind_offset(cmd, a) % 4 == 0 &&
	    gpu_bind_offset(cmd, b) % 4 == 0 && sa % 4 == 0 && sb % 4 == 0;
}

static enum lq_status
matmul_record(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *c,
    const struct gpu_tensor *a, const struct gpu_tensor *b,
    const struct gpu_tensor *bias, int64_t batch, int64_t M, int64_t N,
    int64_t K, int trans_b, enum ops_act act, float alpha, int64_t sc,
    int64_t sa, int64_t sb, int64_t ldc, const struct mm_resid *res)
{
	if (M > UINT32_MAX || N > UINT32_MAX || K > UINT32_MAX)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: dimensions too large", op);
	const struct gpu_tensor *g = res ? res->gate : NULL;
	struct matmul_push pc = {
		.M = (uint32_t)M, .N = (uint32_t)N, .K = (uint32_t)K,
		.batch = (uint32_t)batch,
		.flags = (trans_b ? 1u << LQ_MM_TRANS_B : 0) |
		    (uint32_t)act << LQ_MM_ACT |
		    (bias ? 1u << LQ_MM_HAS_BIAS : 0) |
		    (bias ? (uint32_t)bias->dtype << LQ_MM_DT_BIAS : 0) |
		    (res ? 1u << LQ_MM_RESID : 0) |
		    (g ? 1u << LQ_MM_HAS_GATE : 0) |
		    (g ? (uint32_t)g->dtype << LQ_MM_DT_GATE : 0) |
		    (uint32_t)gpu_cmd_precision(cmd) << LQ_MM_PREC,
		.alpha = alpha,
		.off_c = gpu_bind_offset(cmd, c),
		.off_a = gpu_bind_offset(cmd, a),
		.off_b = gpu_bind_offset(cmd, b),
		.off_bias = gpu_bind_offset(cmd, bias),
		.sc_batch = (uint32_t)sc, .sa_batch = (uint32_t)sa,
		.sb_batch = (uint32_t)sb, .ldc = (uint32_t)ldc,
		.off_r = res ? gpu_bind_offset(cmd, res->r) : 0,
		.off_g = gpu_bind_offset(cmd, g),
		.g_m0 = res ? (uint32_t)res->m0 : 0,
		.g_n = res ? (uint32_t)res->gn : 1,
		.sg_b = g ? (uint32_t)g->stride[0] : 0,
		.sg_n = g ? (uint32_t)g->stride[1] : 0,
	};
	const struct gpu_tensor *bind[6] = {c, a, b, bias, res ? res->r : NULL,
	    g};
	static const unsigned char w[6] = {1, 0, 0, 0, 0, 0};
	/* the gated epilogue is linear.comp's alone (its callers check) */
	LQ_ASSERT(res == NULL || (trans_b && batch == 1 &&
	    linear_fits(cmd, a, b, K, sa, sb)));
	if (trans_b && linear_fits(cmd, a, b, K, sa, sb)) {
		enum gpu_kernel k = b->dtype == GPU_F16 ? GPU_K_LINEAR_F16 :
		    b->dtype == GPU_BF16 ? GPU_K_LINEAR_BF16 : GPU_K_LINEAR_F32;
		uint64_t rows = 64 * LINEAR_TM;
		/* few rows (a timestep or pooled-caption projection): a
		 * column per invocation, the same sums (linear.comp GEMV) */
		if (M <= LINEAR_TM)
			return gpu_cmd_dispatch(cmd, k + (GPU_K_LINEAR_GEMV_F32 -
			    GPU_K_LINEAR_F32), bind, w, &pc,
			    (uint32_t)((N + 63) / 64), 1, (uint32_t)batch, op);
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
	return gpu_cmd_dispatch(cmd, kernel_for_precision(cmd,
	    matmul_kernel(b->dtype)), bind, w, &pc,
	    (uint32_t)((N + 63) / 64), (uint32_t)((M + 63) / 64),
	    (uint32_t)batch, op);
}

/*
 * The CPU-device fast path (host.c) of ops_linear (r NULL) or
 * ops_linear_gated_add (r, and the gate as a [B, N, D] view or NULL):
 * one host GEMM, no split, the residual in its epilogue.  Returns 1 when
 * it recorded the op (the command's status says how that went), 0 when
 * a tensor is not mapped (then the shaders do it).
 */
static int
linear_host(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, enum ops_act act, const struct gpu_tensor *r,
    const struct gpu_tensor *g, int64_t M, int64_t N, int64_t K)
{
	const struct gpu_tensor *t[6] = {y, x, w, b, r, g};
	void *hp[6];
	if (!host_ptrs(cmd, 6, t, hp))
		return 0;
	struct gpu_host_op o = {
		.c = hp[0], .a = hp[1], .b = hp[2], .bias = hp[3],
		.b_dtype = w->dtype,
		.bias_dtype = b != NULL ? b->dtype : GPU_F32,
		.batch = 1, .M = M, .N = N, .K = K, .ldc = N,
		.trans_b = 1, .act = (unsigned)act, .alpha = 1.0f,
		.res = hp[4], .gate = hp[5],
		.gate_dtype = g ? g->dtype : GPU_F32,
		.g_n = g ? g->shape[1] : 1, .sg_b = g ? g->stride[0] : 0,
		.sg_n = g ? g->stride[1] : 0,
	};
	gpu_cmd_host(cmd, &o, op);
	return 1;
}

/*
 * ops_linear's shaders (with `r`, ops_linear_gated_add's: r [M, N] like
 * y, gate a [B, M / B, N] view or NULL, linear_fits true): one dispatch,
 * or blocks of output columns (rows of w and b, columns of the gate),
 * each in blocks of rows of x, y and r.  Every output is still the same
 * sum over k in the same order and the same epilogue, so a split changes
 * no bit.
 */
static enum lq_status
linear_emit(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, enum ops_act act, const struct gpu_tensor *r,
    const struct gpu_tensor *gate, int64_t M, int64_t N, int64_t K)
{
	struct gpu_tensor x2 = gpu_tensor_reshape(x, 2, (int64_t[]){M, K});
	struct gpu_tensor y2 = gpu_tensor_reshape(y, 2, (int64_t[]){M, N});
	struct gpu_tensor r2 = r ? gpu_tensor_reshape(r, 2, (int64_t[]){M, N}) :
	    y2;
	struct mm_resid res = {.r = &r2, .gate = gate, .m0 = 0,
	    .gn = gate ? gate->shape[1] : 1};
	const struct gpu_tensor *all[6] = {&y2, &x2, w, b, r ? &r2 : NULL,
	    gate};
	if (all_fit(cmd, 6, all))
		return matmul_record(cmd, op, &y2, &x2, w, b, 1, M, N, K, 1, act,
		    1.0f, 0, 0, 0, N, r ? &res : NULL);
	for (int64_t n0 = 0; n0 < N;) {
		const struct gpu_tensor *wb[3] = {w, b, gate};
		int64_t nc = fit_len(cmd, 3, wb, (int[]){0, 0, 2}, NULL, n0,
		    N - n0);
		if (nc == 0)
			return split_fail(cmd, op, "w", w, "row");
		struct gpu_tensor wc = SL(w, 0, n0, nc), bc, gc;
		if (b != NULL)
			bc = SL(b, 0, n0, nc);
		if (gate != NULL)
			gc = SL(gate, 2, n0, nc);
		struct gpu_tensor yc = SL(&y2, 1, n0, nc);
		struct gpu_tensor rc = SL(&r2, 1, n0, nc);
		for (int64_t m0 = 0; m0 < M;) {
			const struct gpu_tensor *xy[3] = {&x2, &yc, r ? &rc : NULL};
			int64_t mc = fit_len(cmd, 3, xy, (int[]){0, 0, 0}, NULL,
			    m0, M - m0);
			if (mc == 0) {
				struct gpu_tensor x1 = SL(&x2, 0, m0, 1);
				int xbad = !gpu_bind_fits(cmd, &x1);
				return split_fail(cmd, op, xbad ? "x" : "y",
				    xbad ? x : y, "row");
			}
			struct gpu_tensor xm = SL(&x2, 0, m0, mc);
			struct gpu_tensor ym = SL(&yc, 0, m0, mc);
			struct gpu_tensor rm = SL(&rc, 0, m0, mc);
			struct mm_resid rb = {.r = &rm, .gate = gate ? &gc : NULL,
			    .m0 = m0, .gn = res.gn};
			TRY(matmul_record(cmd, op, &ym, &xm, &wc, b ? &bc : NULL,
			    1, mc, nc, K, 1, act, 1.0f, 0, 0, 0, N,
			    r ? &rb : NULL));
			m0 += mc;
		}
		n0 += nc;
	}
	return LQ_OK;
}

/*
 * The gate of ops_linear_gated_add as a [B, N, D] view of y's shape with
 * unit inner stride: [B, D] / [D] as ops_gated_add takes it (row_view:
 * N stride 0), or a [B, N, D] view with any outer strides.
 */
static enum lq_status
gate_view(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *gate,
    const struct gpu_tensor *y, struct gpu_tensor *out)
{
	if (gate->ndim != 3)
		return row_view(cmd, op, "gate", gate, y, out);
	if (!same_shape(gate, y) || (gate->shape[2] > 1 &&
	    gate->stride[2] != 1) || gate->stride[0] < 0 || gate->stride[1] < 0)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: gate %s must be [B, D], [D] or y's shape %s with unit "
		    "inner stride", op, DESC(gate), DESC(y));
	*out = *gate;
	out->stride[2] = 1;
	return LQ_OK;
}

/*
 * ops_linear (r NULL) and ops_linear_gated_add: the checks, then the
 * host path, the shaders, or (the gated add where linear.comp does not
 * apply) ops_linear into the command's scratch and ops_gated_add's
 * elementwise op, the arithmetic of the pair the op fuses.
 */
static enum lq_status
linear_op(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *y,
    const struct gpu_tensor *r, const struct gpu_tensor *gate,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, enum ops_act act)
{
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
	struct gpu_tensor gv;
	const struct gpu_tensor *g = NULL;
	if (r != NULL) {
		if (x->ndim != 3 || y->ndim != 3 || !same_shape(y, r) ||
		    x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1])
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: x %s must be [B, N, K] and r %s, y %s [B, N, D]",
			    op, DESC(x), DESC(r), DESC(y));
		TRY(need_f32(cmd, op, "r", r));
		TRY(need_contig(cmd, op, "r", r));
		if (gate != NULL) {
			TRY(gate_view(cmd, op, gate, y, &gv));
			g = &gv;
		}
	}
	if (linear_host(cmd, op, y, x, w, b, act, r, g, M, N, K))
		return gpu_cmd_status(cmd, NULL);
	if (r == NULL || (linear_fits(cmd, x, w, K, 0, 0) && (g == NULL ||
	    gpu_bind_fits(cmd, g))))
		return linear_emit(cmd, op, y, x, w, b, act, r, g, M, N, K);
	struct gpu_buffer *sbuf;
	TRY(gpu_cmd_scratch(cmd, (size_t)(M * N) * sizeof(float), &sbuf));
	struct gpu_tensor proj = gpu_tensor_make(sbuf, 0, GPU_F32, 3, y->shape);
	TRY(linear_op(cmd, op, &proj, NULL, NULL, x, w, b, act));
	return g ? ew_record(cmd, op, LQ_EW_ADDMUL, y, r, g, &proj, 0, 0) :
	    ew_record(cmd, op, LQ_EW_ADD, y, r, &proj, NULL, 0, 0);
}

enum lq_status
ops_linear(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, enum ops_act act)
{
	return linear_op(cmd, "ops_linear", y, NULL, NULL, x, w, b, act);
}

enum lq_status
ops_linear_gated_add(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *r, const struct gpu_tensor *gate,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, enum ops_act act)
{
	return linear_op(cmd, "ops_linear_gated_add", y, r, gate, x, w, b, act);
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
	float *ch = gpu_cmd_host_ptr(cmd, c);
	const float *ah = gpu_cmd_host_ptr(cmd, a);
	const void *bh = gpu_cmd_host_ptr(cmd, b);
	if (ch != NULL && ah != NULL && bh != NULL) {
		/* the CPU-device fast path (host.c) */
		struct gpu_host_op o = {
			.c = ch, .a = ah, .b = bh, .b_dtype = b->dtype,
			.bias_dtype = GPU_F32, .batch = batch, .M = M, .N = N,
			.K = K, .sa = ab == 1 ? 0 : M * K,
			.sb = bb == 1 ? 0 : K * N, .sc = M * N, .ldc = N,
			.trans_b = trans_b != 0, .act = OPS_ACT_NONE,
			.alpha = alpha,
		};
		return gpu_cmd_host(cmd, &o, op);
	}
	const struct gpu_tensor *all[3] = {c, a, b};
	if (all_fit(cmd, 3, all))
		return matmul_record(cmd, op, c, a, b, NULL, batch, M, N, K,
		    trans_b, OPS_ACT_NONE, alpha, M * N, ab == 1 ? 0 : M * K,
		    bb == 1 ? 0 : K * N, N, NULL);
	/* Split: runs of whole batches, else row blocks of one batch (each
	 * output's sum is unchanged). */
	struct gpu_tensor a3 = gpu_tensor_reshape(a, 3, (int64_t[]){ab, M, K});
	struct gpu_tensor b3 = gpu_tensor_reshape(b, 3, (int64_t[]){bb,
	    b->shape[b->ndim - 2], b->shape[b->ndim - 1]});
	struct gpu_tensor c3 = gpu_tensor_reshape(c, 3, (int64_t[]){cb, M, N});
	for (int64_t z0 = 0; z0 < batch;) {
		const struct gpu_tensor *zs[3] = {&c3, ab > 1 ? &a3 : NULL,
		    bb > 1 ? &b3 : NULL};
		int64_t zc = fit_len(cmd, 3, zs, (int[]){0, 0, 0}, NULL, z0,
		    batch - z0);
		int64_t zn = zc ? zc : 1;
		struct gpu_tensor cz = SL(&c3, 0, z0, zn);
		struct gpu_tensor az = ab > 1 ? SL(&a3, 0, z0, zn) : a3;
		struct gpu_tensor bz = bb > 1 ? SL(&b3, 0, z0, zn) : b3;
		if (!gpu_bind_fits(cmd, &bz))
			return split_fail(cmd, op, "b", b, "matrix");
		if (zc == 0 || !gpu_bind_fits(cmd, &az)) {
			/* one batch (or a shared a) too large: blocks of rows */
			for (int64_t z = z0; z < z0 + zn; z++) {
				struct gpu_tensor c1 = SL(&c3, 0, z, 1);
				struct gpu_tensor a1 = ab > 1 ? SL(&a3, 0, z, 1) : a3;
				struct gpu_tensor b1 = bb > 1 ? SL(&b3, 0, z, 1) : b3;
				for (int64_t m0 = 0; m0 < M;) {
					const struct gpu_tensor *ca[2] = {&c1, &a1};
					int64_t mc = fit_len(cmd, 2, ca,
					    (int[]){1, 1}, NULL, m0, M - m0);
					if (mc == 0)
						return split_fail(cmd, op, "a or c",
						    c, "row");
					struct gpu_tensor cm = SL(&c1, 1, m0, mc);
					struct gpu_tensor am = SL(&a1, 1, m0, mc);
					TRY(matmul_record(cmd, op, &cm, &am, &b1,
					    NULL, 1, mc, N, K, trans_b,
					    OPS_ACT_NONE, alpha, M * N,
					    ab == 1 ? 0 : M * K,
					    bb == 1 ? 0 : K * N, N, NULL));
					m0 += mc;
				}
			}
		} else {
			TRY(matmul_record(cmd, op, &cz, &az, &bz, NULL, zn, M, N,
			    K, trans_b, OPS_ACT_NONE, alpha, M * N,
			    ab == 1 ? 0 : M * K, bb == 1 ? 0 : K * N, N, NULL));
		}
		z0 += zn;
	}
	return LQ_OK;
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

/*
 * One norm.comp pass over x's rows of D (x, y same shape, contiguous f32),
 * then, when scale or shift is given (x then [B, N, D]; scale, shift
 * [B, D] or [D] f32 views as ops_modulate takes them), the modulation
 * y · (1 + scale[b]) + shift[b] of row b·N + n.  Rows go in blocks that
 * fit one binding; with modulation a block starts on a batch row, or lies
 * inside one batch (then it reads one modulation row: N = 0).
 */
static enum lq_status
norm_rows(struct gpu_cmd *cmd, const char *op, unsigned mode,
    const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *weight, const struct gpu_tensor *bias, float eps,
    const struct gpu_tensor *scale, const struct gpu_tensor *shift)
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
	int64_t rows = gpu_tensor_numel(x) / D, N = 0;
	/* modulation rows: a [B, D] view's row stride (0: one shared row) */
	const struct gpu_tensor *mod[2] = {scale, shift};
	static const char *mod_name[2] = {"scale", "shift"};
	int64_t mod_stride[2] = {0, 0};
	if (scale != NULL || shift != NULL) {
		if (x->ndim != 3)
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: x %s must be [B, N, D]", op, DESC(x));
		N = x->shape[1];
		for (int i = 0; i < 2; i++) {
			if (mod[i] == NULL)
				continue;
			struct gpu_tensor v;
			TRY(need_f32(cmd, op, mod_name[i], mod[i]));
			TRY(row_view(cmd, op, mod_name[i], mod[i], x, &v));
			mod_stride[i] = v.stride[0];
		}
	}
	/* the CPU-device host path (host_rows.c) */
	const struct gpu_tensor *opnd[6] = {y, x, weight, bias, scale, shift};
	void *hp[6];
	if (host_ptrs(cmd, 6, opnd, hp)) {
		struct gpu_host_op o = {.kind = GPU_HOST_NORM};
		o.rows = (struct gpu_host_rows){.code = mode, .eps = eps,
		    .y = hp[0], .a = hp[1], .b = hp[2], .c = hp[3],
		    .dtb = weight ? weight->dtype : GPU_F32,
		    .dtc = bias ? bias->dtype : GPU_F32,
		    .scale = hp[4], .shift = hp[5], .rows = rows, .D = D,
		    .N = N, .s_sc = mod_stride[0], .s_sh = mod_stride[1]};
		return gpu_cmd_host(cmd, &o, op);
	}
	struct gpu_tensor x2 = gpu_tensor_reshape(x, 2, (int64_t[]){rows, D});
	struct gpu_tensor y2 = gpu_tensor_reshape(y, 2, (int64_t[]){rows, D});
	/* Rows are independent: blocks of rows that fit one binding. */
	for (int64_t r0 = 0; r0 < rows;) {
		const struct gpu_tensor *xy[2] = {&x2, &y2};
		int64_t rc = fit_len(cmd, 2, xy, (int[]){0, 0}, NULL, r0,
		    rows - r0);
		if (rc == 0)
			return split_fail(cmd, op, "x", x, "row");
		uint32_t n_mod = 0;
		if (N > 0) {
			if (r0 % N == 0 && rc >= N) {
				rc -= rc % N;
				n_mod = (uint32_t)N;
			} else if (rc > N - r0 % N) {
				rc = N - r0 % N;
			}
		}
		struct gpu_tensor xr = SL(&x2, 0, r0, rc), yr = SL(&y2, 0, r0, rc);
		uint32_t flags = norm_flags(mode, weight, bias) |
		    (scale ? 1u << LQ_NORM_HAS_SCALE : 0) |
		    (shift ? 1u << LQ_NORM_HAS_SHIFT : 0);
		struct norm_push pc = {
			.rows = (uint32_t)rc, .D = (uint32_t)D,
			.flags = flags,
			.eps = eps,
			.off_y = gpu_bind_offset(cmd, &yr),
			.off_x = gpu_bind_offset(cmd, &xr),
			.off_w = gpu_bind_offset(cmd, weight),
			.off_b = gpu_bind_offset(cmd, bias),
			.N = n_mod,
			.s_sc = (uint32_t)mod_stride[0],
			.s_sh = (uint32_t)mod_stride[1],
		};
		/* the block's first batch row */
		int64_t b0 = N > 0 ? r0 / N : 0;
		pc.off_sc = scale ? gpu_bind_offset(cmd, scale) +
		    (uint32_t)(b0 * mod_stride[0]) : 0;
		pc.off_sh = shift ? gpu_bind_offset(cmd, shift) +
		    (uint32_t)(b0 * mod_stride[1]) : 0;
		const struct gpu_tensor *bind[6] = {&yr, &xr, weight, bias,
		    scale, shift};
		static const unsigned char w[6] = {1, 0, 0, 0, 0, 0};
		/* norm.comp's 64 invocations: 64 rows, or 64 / subgroup size
		 * (a grid-stride loop covers any rows a smaller subgroup
		 * leaves) */
		enum gpu_kernel k;
		uint64_t per = gpu_ctx_norm_kernel(gpu_cmd_ctx(cmd), &k);
		uint32_t gx, gy;
		gpu_cmd_grid(cmd, ((uint64_t)rc + per - 1) / per, &gx, &gy);
		TRY(gpu_cmd_dispatch(cmd, k, bind, w, &pc, gx, gy, 1, op));
		r0 += rc;
	}
	return LQ_OK;
}

enum lq_status
ops_layer_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps)
{
	return norm_rows(cmd, "ops_layer_norm", LQ_NORM_LAYER, y, x, weight,
	    bias, eps, NULL, NULL);
}

enum lq_status
ops_rms_norm(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight, float eps)
{
	return norm_rows(cmd, "ops_rms_norm", LQ_NORM_RMS, y, x, weight, NULL,
	    eps, NULL, NULL);
}

enum lq_status
ops_softmax(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x)
{
	return norm_rows(cmd, "ops_softmax", LQ_NORM_SOFTMAX, y, x, NULL, NULL,
	    0, NULL, NULL);
}

enum lq_status
ops_norm_modulate(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, enum ops_norm kind,
    const struct gpu_tensor *weight, const struct gpu_tensor *bias,
    float eps, const struct gpu_tensor *scale, const struct gpu_tensor *shift)
{
	const char *op = "ops_norm_modulate";
	if (kind == OPS_NORM_RMS && bias != NULL)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: an RMS norm has no bias", op);
	return norm_rows(cmd, op, kind == OPS_NORM_LAYER ? LQ_NORM_LAYER :
	    LQ_NORM_RMS, y, x, weight, bias, eps, scale, shift);
}

/*
 * One normc / gnorm dispatch on x, y [B, C, S] views (channel blocks are
 * slices of dim 1).  `phase` is normc's phase and first flag (0: whole),
 * Ctot the channels its statistics cover, stats its [2, S] sums.
 */
static enum lq_status
chan_emit(struct gpu_cmd *cmd, const char *op, enum gpu_kernel k,
    unsigned mode, int groups, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *weight,
    const struct gpu_tensor *bias, float eps, unsigned phase, int64_t Ctot,
    const struct gpu_tensor *stats)
{
	int64_t B = x->shape[0], C = x->shape[1], S = x->shape[2];
	uint32_t flags = norm_flags(mode, weight, bias);
	uint32_t gx, gy;
	if (k == GPU_K_NORMC) {
		const struct gpu_tensor *bind[5] = {y, x, weight, bias, stats};
		unsigned char w[5] = {1, 0, 0, 0, 0};
		unsigned ph = (phase >> NORMC_PHASE_SHIFT) & 3u;
		w[4] = ph == 1 || ph == 2;
		struct normc_push pc = {
			.B = (uint32_t)B, .C = (uint32_t)C, .S = (uint32_t)S,
			.flags = flags | phase, .eps = eps,
			.off_y = gpu_bind_offset(cmd, y),
			.off_x = gpu_bind_offset(cmd, x),
			.off_w = gpu_bind_offset(cmd, weight),
			.off_b = gpu_bind_offset(cmd, bias),
			.Ctot = (uint32_t)Ctot,
			.off_s = gpu_bind_offset(cmd, stats),
			.cs = (uint32_t)x->stride[1],
		};
		gpu_cmd_grid(cmd, ((uint64_t)(B * S) + 127) / 128, &gx, &gy);
		return gpu_cmd_dispatch(cmd, k, bind, w, &pc, gx, gy, 1, op);
	}
	const struct gpu_tensor *bind[4] = {y, x, weight, bias};
	static const unsigned char w[4] = {1, 0, 0, 0};
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
	struct gpu_tensor x3 = as_bcs(x), y3 = as_bcs(y);
	int64_t B = x3.shape[0], C = x3.shape[1], S = x3.shape[2];
	TRY(param_vec(cmd, op, "weight", weight, C));
	TRY(param_vec(cmd, op, "bias", bias, C));
	if (k == GPU_K_GNORM && (groups < 1 || C % groups != 0))
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: %" PRId64 " channels do not split into %d groups", op,
		    C, groups);
	const struct gpu_tensor *xy[2] = {&x3, &y3};
	if (all_fit(cmd, 2, xy))
		return chan_emit(cmd, op, k, mode, groups, &y3, &x3, weight,
		    bias, eps, 0, C, NULL);
	/* Split, one sample at a time. */
	for (int64_t b = 0; b < B; b++) {
		struct gpu_tensor xb = SL(&x3, 0, b, 1), yb = SL(&y3, 0, b, 1);
		const struct gpu_tensor *xyb[2] = {&xb, &yb};
		if (all_fit(cmd, 2, xyb)) {
			TRY(chan_emit(cmd, op, k, mode, groups, &yb, &xb, weight,
			    bias, eps, 0, C, NULL));
			continue;
		}
		if (k == GPU_K_GNORM) {
			/* groups are independent: blocks of whole groups */
			int64_t cg = C / groups, mul[2] = {cg, cg};
			for (int64_t g0 = 0; g0 < groups;) {
				int64_t gc = fit_len(cmd, 2, xyb, (int[]){1, 1},
				    mul, g0, groups - g0);
				if (gc == 0)
					return split_fail(cmd, op, "x", x,
					    "group");
				struct gpu_tensor xg = SL(&xb, 1, g0 * cg, gc * cg);
				struct gpu_tensor yg = SL(&yb, 1, g0 * cg, gc * cg);
				struct gpu_tensor wg, bg;
				if (weight)
					wg = SL(weight, 0, g0 * cg, gc * cg);
				if (bias)
					bg = SL(bias, 0, g0 * cg, gc * cg);
				TRY(chan_emit(cmd, op, k, mode, (int)gc, &yg, &xg,
				    weight ? &wg : NULL, bias ? &bg : NULL, eps, 0,
				    gc * cg, NULL));
				g0 += gc;
			}
			continue;
		}
		/* Channel norm: blocks of positions, each in blocks of
		 * channels, the per-position sums carried in a stats buffer
		 * [2, positions] between dispatches (normc.comp phases 1-3,
		 * the same order of additions). */
		struct gpu_buffer *sbuf;
		struct gpu_tensor x1 = SL(&xb, 1, 0, 1), y1 = SL(&yb, 1, 0, 1);
		const struct gpu_tensor *xy1[2] = {&x1, &y1};
		int64_t pc = fit_len(cmd, 2, xy1, (int[]){2, 2}, NULL, 0,
		    S);		/* one channel's run of positions */
		if (pc > (int64_t)(gpu_cmd_max_binding(cmd) / 8))
			pc = (int64_t)(gpu_cmd_max_binding(cmd) / 8);
		if (pc == 0)
			return split_fail(cmd, op, "x", x, "position");
		TRY(gpu_cmd_scratch(cmd, (size_t)(2 * pc) * sizeof(float), &sbuf));
		for (int64_t s0 = 0; s0 < S; s0 += pc) {
			int64_t sc = S - s0 < pc ? S - s0 : pc;
			struct gpu_tensor xs = SL(&xb, 2, s0, sc);
			struct gpu_tensor ys = SL(&yb, 2, s0, sc);
			const struct gpu_tensor *xys[2] = {&xs, &ys};
			struct gpu_tensor stats = gpu_tensor_make(sbuf, 0, GPU_F32,
			    1, (int64_t[]){2 * sc});
			for (unsigned ph = mode == 0 ? 1 : 2; ph <= 3; ph++)
				for (int64_t c0 = 0; c0 < C;) {
					int64_t cc = fit_len(cmd, 2, xys,
					    (int[]){1, 1}, NULL, c0, C - c0);
					if (cc == 0)
						return split_fail(cmd, op, "x", x,
						    "channel");
					struct gpu_tensor xc = SL(&xs, 1, c0, cc);
					struct gpu_tensor yc = SL(&ys, 1, c0, cc);
					struct gpu_tensor wc, bc;
					if (weight)
						wc = SL(weight, 0, c0, cc);
					if (bias)
						bc = SL(bias, 0, c0, cc);
					TRY(chan_emit(cmd, op, k, mode, 0, &yc,
					    &xc, weight ? &wc : NULL,
					    bias ? &bc : NULL, eps,
					    ph << NORMC_PHASE_SHIFT |
					    (c0 == 0 ? NORMC_FIRST : 0), C,
					    &stats));
					c0 += cc;
				}
		}
	}
	return LQ_OK;
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

/* One attention dispatch (shapes checked by ops_attention; `out` may be a
 * block of query rows of a contiguous output). */
static enum lq_status
attn_emit(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *out,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, const struct ops_attention_args *args,
    const struct gpu_tensor *kb, const struct gpu_tensor *bias)
{
	int64_t H = args->heads;
	int64_t B = q->shape[0], Nq = q->shape[1], Nk = k->shape[1];
	int64_t Dh = q->shape[2] / H, Dv = v->shape[2] / H;
	int64_t D = Dh > Dv ? Dh : Dv;
	enum gpu_kernel kern = D <= 32 ? GPU_K_ATTN32 : D <= 64 ? GPU_K_ATTN64 :
	    D <= 128 ? GPU_K_ATTN128 : GPU_K_ATTN256;
	uint32_t kb_sb = 0;
	if (kb != NULL)
		kb_sb = kb->ndim == 2 && kb->shape[0] > 1 ?
		    (uint32_t)kb->stride[0] : 0;
	int bias_b = bias != NULL && bias->ndim == 4;
	struct attn_push pc = {
		.B = (uint32_t)B, .Nq = (uint32_t)Nq, .Nk = (uint32_t)Nk,
		.H = (uint32_t)H, .Dh = (uint32_t)Dh, .Dv = (uint32_t)Dv,
		.scale = args->scale,
		.flags = (kb ? 1u << LQ_ATTN_HAS_KB : 0) |
		    (bias ? 1u << LQ_ATTN_HAS_BIAS : 0) |
		    (bias_b ? 1u << LQ_ATTN_BIAS_B : 0) |
		    (kb ? (uint32_t)kb->dtype << LQ_ATTN_DT_KB : 0) |
		    (bias ? (uint32_t)bias->dtype << LQ_ATTN_DT_BIAS : 0) |
		    (uint32_t)gpu_cmd_precision(cmd) << LQ_ATTN_PREC,
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
	/* a subgroup per query row (attn_sg.comp, any precision) */
	uint64_t sg = gpu_ctx_attn_subgroup(gpu_cmd_ctx(cmd), (uint64_t)Nq);
	if (sg != 0)
		return gpu_cmd_dispatch(cmd, (enum gpu_kernel)(kern +
		    (GPU_K_ATTN_SG32 - GPU_K_ATTN32)), bind, w, &pc,
		    (uint32_t)sg, (uint32_t)(B * H), 1, op);
	/* a reduced precision rounds in attn.comp's copy alone */
	int tex = gpu_cmd_precision(cmd) == GPU_PRECISION_F32 &&
	    D <= 128 && Dh % 4 == 0 && Dv % 4 == 0 &&
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
	return gpu_cmd_dispatch(cmd, kernel_for_precision(cmd, kern), bind, w,
	    &pc, (uint32_t)((Nq + 63) / 64), (uint32_t)(B * H), 1, op);
}

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
	const struct gpu_tensor *kb = args->key_bias, *bias = args->bias;
	if (kb != NULL) {
		int64_t kbn = kb->shape[kb->ndim - 1];
		int64_t kbb = kb->ndim == 2 ? kb->shape[0] : 1;
		if (kb->ndim > 2 || kbn != Nk || (kbb != 1 && kbb != B) ||
		    (Nk > 1 && kb->stride[kb->ndim - 1] != 1))
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: key_bias %s must be [%" PRId64 ", %" PRId64
			    "] or [%" PRId64 "]", op, DESC(kb), B, Nk, Nk);
	}
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
	}
	float *oh = gpu_cmd_host_ptr(cmd, out);
	const float *qh = gpu_cmd_host_ptr(cmd, q);
	const float *kh = gpu_cmd_host_ptr(cmd, k);
	const float *vh = gpu_cmd_host_ptr(cmd, v);
	const void *kbh = gpu_cmd_host_ptr(cmd, kb);
	const void *bh = gpu_cmd_host_ptr(cmd, bias);
	if (oh != NULL && qh != NULL && kh != NULL && vh != NULL &&
	    (kb == NULL || kbh != NULL) && (bias == NULL || bh != NULL)) {
		/* the CPU-device fast path (host.c): two GEMMs per head */
		struct gpu_host_op o = {
			.kind = GPU_HOST_ATTENTION,
			.c = oh, .a = qh, .b = kh, .v = vh, .bias = kbh,
			.bias_dtype = kb != NULL ? kb->dtype : GPU_F32,
			.skb = kb != NULL && kb->ndim == 2 && kb->shape[0] > 1 ?
			    kb->stride[0] : 0,
			.attn_bias = bh,
			.attn_bias_dtype = bias != NULL ? bias->dtype : GPU_F32,
			.attn_bias_b = bias != NULL && bias->ndim == 4,
			.batch = B, .heads = H, .M = Nq, .Nk = Nk, .K = Dh,
			.N = Dv, .sa = q->stride[0], .lda = q->stride[1],
			.sb = k->stride[0], .ldb = k->stride[1],
			.sv = v->stride[0], .ldv = v->stride[1],
			.alpha = args->scale,
		};
		return gpu_cmd_host(cmd, &o, op);
	}
	const struct gpu_tensor *all[6] = {out, q, k, v, kb, bias};
	if (all_fit(cmd, 6, all))
		return attn_emit(cmd, op, out, q, k, v, args, kb, bias);
	/* Split: one sample at a time, then blocks of query rows (each
	 * query row's online softmax runs over all keys, as unsplit).  A
	 * sample's keys and values must each fit one binding. */
	for (int64_t b = 0; b < B; b++) {
		struct gpu_tensor ob = SL(out, 0, b, 1), qb = SL(q, 0, b, 1);
		struct gpu_tensor kk = SL(k, 0, b, 1), vb = SL(v, 0, b, 1);
		struct gpu_tensor kbb, bb;
		if (kb != NULL)
			kbb = kb->ndim == 2 && kb->shape[0] > 1 ?
			    SL(kb, 0, b, 1) : *kb;
		if (bias != NULL)
			bb = bias->ndim == 4 ? SL(bias, 0, b, 1) : *bias;
		const struct gpu_tensor *kbp = kb ? &kbb : NULL;
		const struct gpu_tensor *bp = bias ? &bb : NULL;
		if (!gpu_bind_fits(cmd, &kk))
			return split_fail(cmd, op, "k", k, "sample's keys");
		if (!gpu_bind_fits(cmd, &vb))
			return split_fail(cmd, op, "v", v, "sample's values");
		if (kbp && !gpu_bind_fits(cmd, kbp))
			return split_fail(cmd, op, "key_bias", kb, "sample's bias");
		const struct gpu_tensor *qo[2] = {&qb, &ob};
		if (bp != NULL) {
			/* the kernel reads bias rows as [H, Nq, Nk]: no
			 * query blocks, a whole sample must fit */
			if (!gpu_bind_fits(cmd, bp) || !all_fit(cmd, 2, qo))
				return split_fail(cmd, op, "bias", bias,
				    "sample's bias");
			TRY(attn_emit(cmd, op, &ob, &qb, &kk, &vb, args, kbp, bp));
			continue;
		}
		for (int64_t i0 = 0; i0 < Nq;) {
			int64_t ic = fit_len(cmd, 2, qo, (int[]){1, 1}, NULL, i0,
			    Nq - i0);
			if (ic == 0)
				return split_fail(cmd, op, "q", q, "query row");
			struct gpu_tensor qi = SL(&qb, 1, i0, ic);
			struct gpu_tensor oi = SL(&ob, 1, i0, ic);
			TRY(attn_emit(cmd, op, &oi, &qi, &kk, &vb, args, kbp, NULL));
			i0 += ic;
		}
	}
	return LQ_OK;
}

/* One rope dispatch; hd 0: interleaved, else split with heads of hd. */
static enum lq_status
rope_emit(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin, int hd)
{
	int64_t B = x->shape[0], N = x->shape[1], D = x->shape[2];
	struct rope_push pc = {
		.B = (uint32_t)B, .N = (uint32_t)N, .D = (uint32_t)D,
		.cs_sb = cos->shape[0] == 1 ? 0 :
		    (uint32_t)(N * cos->shape[2]),
		.flags = (uint32_t)cos->dtype << LQ_ROPE_DT_COS |
		    (uint32_t)sin->dtype << LQ_ROPE_DT_SIN |
		    (hd ? 1u << LQ_ROPE_SPLIT : 0),
		.hd = (uint32_t)hd,
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

static enum lq_status
rope_record(struct gpu_cmd *cmd, const char *op, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin, int hd)
{
	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "cos", cos));
	TRY(need_contig(cmd, op, "sin", sin));
	int64_t cd = hd ? x->shape[2] / 2 : x->shape[2];
	if (x->ndim != 3 || !same_shape(x, y) || x->shape[2] % 2 ||
	    (hd && (hd % 2 || x->shape[2] % hd)) ||
	    cos->ndim != 3 || !same_shape(cos, sin) ||
	    (cos->shape[0] != 1 && cos->shape[0] != x->shape[0]) ||
	    cos->shape[1] != x->shape[1] || cos->shape[2] != cd)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s, y %s must be [B, N, D] (D even%s) and cos %s, sin "
		    "%s [B or 1, N, %s]", op, DESC(x), DESC(y),
		    hd ? ", a multiple of the even head size" : "", DESC(cos),
		    DESC(sin), hd ? "D/2" : "D");
	const struct gpu_tensor *all[4] = {y, x, cos, sin};
	/* the CPU-device host path (host_rows.c) */
	void *hp[4];
	if (host_ptrs(cmd, 4, all, hp)) {
		struct gpu_host_op o = {.kind = GPU_HOST_ROPE};
		o.rows = (struct gpu_host_rows){.y = hp[0], .a = hp[1],
		    .b = hp[2], .c = hp[3], .dtb = cos->dtype,
		    .dtc = sin->dtype, .rows = x->shape[0], .N = x->shape[1],
		    .D = x->shape[2], .hd = hd,
		    .cs_sb = cos->shape[0] == 1 ? 0 : x->shape[1] * cd};
		return gpu_cmd_host(cmd, &o, op);
	}
	if (all_fit(cmd, 4, all))
		return rope_emit(cmd, op, y, x, cos, sin, hd);
	/* Split: per sample, blocks of tokens (elementwise per token). */
	int64_t B = x->shape[0], N = x->shape[1];
	for (int64_t b = 0; b < B; b++) {
		struct gpu_tensor yb = SL(y, 0, b, 1), xb = SL(x, 0, b, 1);
		int64_t cb = cos->shape[0] == 1 ? 0 : b;
		struct gpu_tensor cs = SL(cos, 0, cb, 1), sn = SL(sin, 0, cb, 1);
		const struct gpu_tensor *v4[4] = {&yb, &xb, &cs, &sn};
		for (int64_t n0 = 0; n0 < N;) {
			int64_t nc = fit_len(cmd, 4, v4, (int[]){1, 1, 1, 1},
			    NULL, n0, N - n0);
			if (nc == 0)
				return split_fail(cmd, op, "x", x, "token");
			struct gpu_tensor v[4];
			for (int i = 0; i < 4; i++)
				v[i] = SL(v4[i], 1, n0, nc);
			TRY(rope_emit(cmd, op, &v[0], &v[1], &v[2], &v[3], hd));
			n0 += nc;
		}
	}
	return LQ_OK;
}

enum lq_status
ops_rope(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin)
{
	return rope_record(cmd, "ops_rope", y, x, cos, sin, 0);
}

enum lq_status
ops_rope_split(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin, int head_dim)
{
	if (head_dim < 2)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "ops_rope_split: head_dim %d is not an even size >= 2",
		    head_dim);
	return rope_record(cmd, "ops_rope_split", y, x, cos, sin, head_dim);
}

/* ---- conv3d and resampling ---- */

/* Geometry of a checked conv3d (ops_conv3d). */
struct conv_geom {
	int st[3], kk[3], pad0[3], out[3];
	uint32_t tflags;	/* t_mode | s_mode<<1 */
	int64_t w_sco;		/* w's stride between output channels */
};

/* One conv3d dispatch: y [B, Co', ...] for w [Co', Ci', ...] over x
 * [B, Ci', ...] (blocks of channels are views of dim 1). */
static enum lq_status
conv3d_emit(struct gpu_cmd *cmd, const char *op, const void *geom,
    const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *w, const struct gpu_tensor *b, int accumulate)
{
	const struct conv_geom *g = geom;
	int64_t B = x->shape[0], Co = w->shape[0];
	const int *out = g->out;
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
		.Wo = (uint32_t)out[2], .kt = (uint32_t)g->kk[0],
		.kh = (uint32_t)g->kk[1], .kw = (uint32_t)g->kk[2],
		.st = (uint32_t)g->st[0], .sh = (uint32_t)g->st[1],
		.sw = (uint32_t)g->st[2], .pt = g->pad0[0], .ph = g->pad0[1],
		.pw = g->pad0[2],
		.flags = g->tflags | (b ? 1u << LQ_CONV_HAS_B : 0) |
		    (uint32_t)w->dtype << LQ_CONV_DTW |
		    (b ? (uint32_t)b->dtype << LQ_CONV_DTB : 0) |
		    (accumulate ? CONV_ACCUMULATE : 0),
		.pos_chunks = chunks,
		.off_y = gpu_bind_offset(cmd, y), .off_x = gpu_bind_offset(cmd, x),
		.off_w = gpu_bind_offset(cmd, w), .off_b = gpu_bind_offset(cmd, b),
		.w_sco = (uint32_t)g->w_sco,
	};
	const struct gpu_tensor *bind[4] = {y, x, w, b};
	static const unsigned char wr[4] = {1, 0, 0, 0};
	enum gpu_texfmt tf[4] = {GPU_TEX_NONE, GPU_TEX_R32F,
	    w->dtype == GPU_F16 ? GPU_TEX_R16F :
	    w->dtype == GPU_BF16 ? GPU_TEX_R16UI : GPU_TEX_R32F, GPU_TEX_NONE};
	if (gpu_cmd_texel_ok(cmd, tf[1], extent(x) + 4) &&
	    gpu_cmd_texel_ok(cmd, tf[2], extent(w) + 4)) {
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

/* One dispatch of a convolution over views of y, x, w (and b): its
 * geometry `g`, `accumulate` starting the sums from y. */
typedef enum lq_status (*conv_emit_fn)(struct gpu_cmd *cmd, const char *op,
    const void *g, const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *w, const struct gpu_tensor *b, int accumulate);

/*
 * A convolution (ops_conv3d, ops_conv1d) on y [B, Co, ...] from x
 * [B, Ci, ...] with w's output channels on dim `od` (0; 1 for torch's
 * transposed [Ci, Co, k]) and input channels on dim 1 - od.  Whole when
 * everything fits one binding; else one sample at a time, blocks of output
 * channels (as many as fit for one input channel: along a transposed w's
 * Co one block spans nearly all of w), and where the sample's input or the
 * block's w does not fit, blocks of input channels whose partial sums pass
 * through y (accumulate): the sums keep their order, so the bits do not
 * change; the bias is added once, by the last block.
 */
static enum lq_status
conv_split(struct gpu_cmd *cmd, const char *op, conv_emit_fn emit,
    const void *g, const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *w, const struct gpu_tensor *b, int od)
{
	int64_t B = x->shape[0], Ci = x->shape[1], Co = y->shape[1];
	const struct gpu_tensor *all[4] = {y, x, w, b};

	if (all_fit(cmd, 4, all))
		return emit(cmd, op, g, y, x, w, b, 0);
	struct gpu_tensor w_ci = SL(w, 1 - od, 0, 1);
	for (int64_t bi = 0; bi < B; bi++) {
		struct gpu_tensor xb = SL(x, 0, bi, 1), yb = SL(y, 0, bi, 1);
		for (int64_t o0 = 0; o0 < Co;) {
			const struct gpu_tensor *yw[3] = {&yb, &w_ci, b};
			int64_t oc = fit_len(cmd, 3, yw, (int[]){1, od, 0}, NULL,
			    o0, Co - o0);
			if (oc == 0) {
				struct gpu_tensor w1 = SL(&w_ci, od, o0, 1);
				int wbad = !gpu_bind_fits(cmd, &w1);
				return split_fail(cmd, op, wbad ? "w" : "y",
				    wbad ? w : y, "output channel");
			}
			struct gpu_tensor yo = SL(&yb, 1, o0, oc), wo = SL(w, od, o0, oc);
			struct gpu_tensor bo;
			if (b != NULL)
				bo = SL(b, 0, o0, oc);
			const struct gpu_tensor *bp = b ? &bo : NULL;
			if (gpu_bind_fits(cmd, &xb) && gpu_bind_fits(cmd, &wo)) {
				TRY(emit(cmd, op, g, &yo, &xb, &wo, bp, 0));
				o0 += oc;
				continue;
			}
			for (int64_t c0 = 0; c0 < Ci;) {
				const struct gpu_tensor *xw[2] = {&xb, &wo};
				int64_t cc = fit_len(cmd, 2, xw, (int[]){1, 1 - od},
				    NULL, c0, Ci - c0);
				if (cc == 0)
					return split_fail(cmd, op, "x", x,
					    "input channel");
				struct gpu_tensor xc = SL(&xb, 1, c0, cc);
				struct gpu_tensor wc = SL(&wo, 1 - od, c0, cc);
				TRY(emit(cmd, op, g, &yo, &xc, &wc,
				    c0 + cc == Ci ? bp : NULL, c0 > 0));
				c0 += cc;
			}
			o0 += oc;
		}
	}
	return LQ_OK;
}

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
	if (p->t_mode == OPS_PAD_REFLECT)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: reflect padding is spatial only (t_mode)", op);
	for (int i = 1; i < 3 && p->s_mode == OPS_PAD_REFLECT; i++)
		if (pads[i][0] >= x->shape[2 + i] || pads[i][1] >= x->shape[2 + i])
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: reflect padding %d/%d needs an input %s of at "
			    "least %d, x is %s", op, pads[i][0], pads[i][1],
			    i == 1 ? "height" : "width",
			    (pads[i][0] > pads[i][1] ? pads[i][0] : pads[i][1]) + 1,
			    DESC(x));
	struct conv_geom g;
	for (int i = 0; i < 3; i++) {
		g.st[i] = st[i];
		g.kk[i] = kk[i];
		g.pad0[i] = pad0[i];
		g.out[i] = out[i];
	}
	g.tflags = (p->t_mode == OPS_PAD_REPLICATE ?
	    1u << LQ_CONV_T_REPLICATE : 0) |
	    (p->s_mode == OPS_PAD_REPLICATE ? 1u << LQ_CONV_S_REPLICATE : 0) |
	    (p->s_mode == OPS_PAD_REFLECT ? 1u << LQ_CONV_S_REFLECT : 0);
	g.w_sco = w->stride[0];
	const struct gpu_tensor *opnd[4] = {y, x, w, b};
	void *hp[4];
	if (host_ptrs(cmd, 4, opnd, hp)) {
		/* the CPU-device fast path (host.c): im2col rows through the
		 * host GEMM's tile, no split */
		struct gpu_host_op o = {
			.kind = GPU_HOST_CONV3D, .c = hp[0], .a = hp[1],
			.b = hp[2], .bias = hp[3], .b_dtype = w->dtype,
			.bias_dtype = b != NULL ? b->dtype : GPU_F32,
			.conv = {
				.B = B, .Ci = x->shape[1], .F = x->shape[2],
				.H = x->shape[3], .W = x->shape[4], .Co = Co,
				.Fo = out[0], .Ho = out[1], .Wo = out[2],
				.kk = {kk[0], kk[1], kk[2]},
				.st = {st[0], st[1], st[2]},
				.pad0 = {pad0[0], pad0[1], pad0[2]},
				.t_rep = p->t_mode == OPS_PAD_REPLICATE,
				.s_mode = (int)p->s_mode,
			},
		};
		return gpu_cmd_host(cmd, &o, op);
	}
	return conv_split(cmd, op, conv3d_emit, &g, y, x, w, b, 0);
}

/* ---- conv1d ---- */

/* A checked conv1d: its parameters with stride and dilation >= 1. */
struct conv1d_geom {
	const struct ops_conv1d_params *p;
	int s, d;
};

/* One conv1d dispatch over views: y [B, Co', To], x [B, Ci', T], w a view
 * of Co' output and Ci' input channels (dims by p->transposed). */
static enum lq_status
conv1d_emit(struct gpu_cmd *cmd, const char *op, const void *geom,
    const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *w, const struct gpu_tensor *b, int accumulate)
{
	const struct conv1d_geom *g = geom;
	const struct ops_conv1d_params *p = g->p;
	int s = g->s, d = g->d;
	int od = p->transposed ? 1 : 0;
	uint64_t n = (uint64_t)gpu_tensor_numel(y);
	struct conv1d_push pc = {
		.B = (uint32_t)x->shape[0], .Ci = (uint32_t)x->shape[1],
		.T = (uint32_t)x->shape[2], .Co = (uint32_t)y->shape[1],
		.To = (uint32_t)y->shape[2], .k = (uint32_t)w->shape[2],
		.stride = (uint32_t)s, .dilation = (uint32_t)d, .pad = p->pad[0],
		.flags = (p->transposed ? 1u << LQ_CONV1D_TRANSPOSED : 0) |
		    (b ? 1u << LQ_CONV1D_HAS_B : 0) |
		    (accumulate ? 1u << LQ_CONV1D_ACCUMULATE : 0) |
		    (uint32_t)w->dtype << LQ_CONV1D_DTW |
		    (b ? (uint32_t)b->dtype << LQ_CONV1D_DTB : 0),
		.off_y = gpu_bind_offset(cmd, y), .off_x = gpu_bind_offset(cmd, x),
		.off_w = gpu_bind_offset(cmd, w), .off_b = gpu_bind_offset(cmd, b),
		.w_sco = (uint32_t)w->stride[od],
		.w_sci = (uint32_t)w->stride[1 - od],
	};
	const struct gpu_tensor *bind[4] = {y, x, w, b};
	static const unsigned char wr[4] = {1, 0, 0, 0};
	uint32_t gx, gy;

	if (n > UINT32_MAX)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: %s has too many elements", op, DESC(y));
	gpu_cmd_grid(cmd, (n + 63) / 64, &gx, &gy);
	return gpu_cmd_dispatch(cmd, GPU_K_CONV1D, bind, wr, &pc, gx, gy, 1, op);
}

enum lq_status
ops_conv1d(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *w,
    const struct gpu_tensor *b, const struct ops_conv1d_params *p)
{
	const char *op = p->transposed ? "ops_conv1d (transposed)" : "ops_conv1d";
	int s = p->stride > 0 ? p->stride : 1, d = p->dilation > 0 ? p->dilation : 1;
	int od = p->transposed ? 1 : 0;	/* w's output-channel dim */
	int64_t B, Co, T, k, To;

	OP_BEGIN(cmd);
	TRY(need_f32(cmd, op, "x", x));
	TRY(need_f32(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "x", x));
	TRY(need_contig(cmd, op, "y", y));
	TRY(need_contig(cmd, op, "w", w));
	if (x->ndim != 3 || w->ndim != 3 || y->ndim != 3 ||
	    w->shape[1 - od] != x->shape[1] || p->pad[0] < 0 || p->pad[1] < 0)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: x %s must be [B, Ci, T] and w %s %s, pads >= 0", op,
		    DESC(x), DESC(w), p->transposed ? "[Ci, Co, k]" :
		    "[Co, Ci, k]");
	B = x->shape[0];
	T = x->shape[2];
	Co = w->shape[od];
	k = w->shape[2];
	if (p->transposed)
		To = (T - 1) * s + d * (k - 1) + 1 - p->pad[0] - p->pad[1];
	else
		To = T + p->pad[0] + p->pad[1] - d * (k - 1) - 1 < 0 ? 0 :
		    (T + p->pad[0] + p->pad[1] - d * (k - 1) - 1) / s + 1;
	if (To < 1)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: kernel %s (dilation %d) leaves no output of x %s", op,
		    DESC(w), d, DESC(x));
	if (y->shape[0] != B || y->shape[1] != Co || y->shape[2] != To)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
		    "%s: y %s must be [%" PRId64 ", %" PRId64 ", %" PRId64 "]",
		    op, DESC(y), B, Co, To);
	TRY(param_vec(cmd, op, "bias", b, Co));
	struct conv1d_geom g = { p, s, d };
	return conv_split(cmd, op, conv1d_emit, &g, y, x, w, b, od);
}

static enum lq_status
d2s_emit(struct gpu_cmd *cmd, const char *op, int to_depth,
    const struct gpu_tensor *space, const struct gpu_tensor *depth,
    const struct gpu_tensor *y, const struct gpu_tensor *x, int ft, int fh,
    int fw, int hw_swapped)
{
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
	const struct gpu_tensor *all[2] = {y, x};
	if (all_fit(cmd, 2, all))
		return d2s_emit(cmd, op, to_depth, space, depth, y, x, ft, fh, fw,
		    hw_swapped);
	/* Split: per sample, blocks of space channels c and their depth
	 * channels [c·f, (c+1)·f) (a permutation, no arithmetic). */
	int64_t B = space->shape[0], C = space->shape[1];
	for (int64_t b = 0; b < B; b++) {
		struct gpu_tensor sb = SL(space, 0, b, 1), db = SL(depth, 0, b, 1);
		const struct gpu_tensor *sd[2] = {&sb, &db};
		for (int64_t c0 = 0; c0 < C;) {
			int64_t cc = fit_len(cmd, 2, sd, (int[]){1, 1},
			    (int64_t[]){1, f}, c0, C - c0);
			if (cc == 0)
				return split_fail(cmd, op, "y", y, "channel");
			struct gpu_tensor sc = SL(&sb, 1, c0, cc);
			struct gpu_tensor dc = SL(&db, 1, c0 * f, cc * f);
			TRY(d2s_emit(cmd, op, to_depth, &sc, &dc,
			    to_depth ? &dc : &sc, to_depth ? &sc : &dc, ft, fh,
			    fw, hw_swapped));
			c0 += cc;
		}
	}
	return LQ_OK;
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
