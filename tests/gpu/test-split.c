/*
 * test-split.c — tensors larger than one binding (ops.h "Splitting").
 *
 * Two contexts on the same device: one as the device is, one with
 * LATENTQ_GPU_MAX_BINDING lowered to SPLIT_LIMIT bytes.  Every op kind the
 * models use runs on the same shapes and inputs in both; the small-limit
 * run must record more dispatches (it did split) and give the same bits
 * (memcmp of every output), and the full-limit run must not have split
 * (each of its bindings fits).  Also: what cannot be split fails with
 * LQ-GPU-RANGE naming the op, the tensor and the limit.
 * The shaders are what split: the CPU-device fast path (host GEMMs on
 * mapped memory, which never split) is turned off here and tested in
 * test-host.
 * Exits 77 without a Vulkan device.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "gpu/ops.h"
#include "tests/test.h"

#define SPLIT_LIMIT 65536	/* bytes; the shapes below exceed it */
#define MAX_OUT 8

struct env {
	struct gpu_ctx *ctx;
	struct gpu_pool *pool;
	struct gpu_cmd *cmd;
	uint64_t rng;
	struct gpu_tensor outs[MAX_OUT];
	int nout;
	float *host[MAX_OUT];
	unsigned dispatches;
};

static struct env envs[2];	/* [0] device limits, [1] SPLIT_LIMIT */

#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define ND(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

static float
frand(struct env *e)
{
	e->rng ^= e->rng << 13;
	e->rng ^= e->rng >> 7;
	e->rng ^= e->rng << 17;
	return (float)((e->rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* A pool tensor filled with random values in [-scale, scale]. */
static struct gpu_tensor
in(struct env *e, enum gpu_dtype dt, int nd, const int64_t *shape,
    float scale)
{
	struct gpu_tensor t;
	struct lq_error err;
	error_clear(&err);
	if (gpu_pool_tensor(e->pool, dt, nd, shape, &t, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	size_t n = (size_t)gpu_tensor_numel(&t);
	float *h = malloc(n * sizeof(float) + 4);
	for (size_t i = 0; i < n; i++)
		h[i] = frand(e) * scale;
	if (gpu_tensor_upload_f32(e->ctx, &t, h, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(h);
	return t;
}

/* An output tensor (filled with a pattern so unwritten parts show). */
static struct gpu_tensor
out(struct env *e, int nd, const int64_t *shape)
{
	struct gpu_tensor t = in(e, GPU_F32, nd, shape, 7.0f);
	LQ_ASSERT(e->nout < MAX_OUT);
	e->outs[e->nout++] = t;
	return t;
}

typedef void (*case_fn)(struct env *e, struct gpu_cmd *cmd);

/*
 * Runs `f` in both contexts with the same random inputs; `min_split` is
 * the least number of extra dispatches the small limit must cause.
 */
static void
run_case(const char *name, case_fn f)
{
	for (int i = 0; i < 2; i++) {
		struct env *e = &envs[i];
		struct lq_error err;
		error_clear(&err);
		e->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)strlen(name) * 7919u;
		for (const char *c = name; *c; c++)
			e->rng = e->rng * 31 + (unsigned char)*c;
		e->nout = 0;
		gpu_pool_reset(e->pool, 0);
		gpu_cmd_begin(e->cmd);
		f(e, e->cmd);
		e->dispatches = gpu_cmd_dispatch_count(e->cmd);
		if (gpu_cmd_submit(e->cmd, &err) != LQ_OK) {
			fprintf(stderr, "%s (%s limit): ", name,
			    i ? "small" : "device");
			error_print(&err, stderr);
			test_checks++;
			test_failed++;
			return;
		}
		for (int k = 0; k < e->nout; k++) {
			size_t n = (size_t)gpu_tensor_numel(&e->outs[k]);
			e->host[k] = malloc(n * sizeof(float) + 4);
			if (gpu_tensor_download_f32(e->ctx, &e->outs[k],
			    e->host[k], &err) != LQ_OK) {
				error_print(&err, stderr);
				exit(99);
			}
		}
	}
	struct env *a = &envs[0], *b = &envs[1];
	CHECK_INT(a->nout, b->nout);
	int same = 1;
	size_t bytes = 0;
	for (int k = 0; k < a->nout; k++) {
		size_t n = (size_t)gpu_tensor_numel(&a->outs[k]) * sizeof(float);
		bytes += n;
		if (memcmp(a->host[k], b->host[k], n) != 0) {
			size_t j = 0;
			while (a->host[k][j] == b->host[k][j] ||
			    memcmp(&a->host[k][j], &b->host[k][j], 4) == 0)
				j++;
			fprintf(stderr, "%s: output %d differs at %zu: %.9g "
			    "(device limit) vs %.9g (split)\n", name, k, j,
			    (double)a->host[k][j], (double)b->host[k][j]);
			same = 0;
		}
		free(a->host[k]);
		free(b->host[k]);
	}
	printf("%-28s %3u -> %3u dispatches, %7zu output bytes %s\n", name,
	    a->dispatches, b->dispatches, bytes, same ? "bit-identical" :
	    "DIFFER");
	CHECK(same);
	CHECK(b->dispatches > a->dispatches);
}

/* ---- the cases: shapes chosen so that tensors exceed SPLIT_LIMIT ---- */

/* FF-style linear: x and y over the limit (row blocks), f32 weights. */
static void
c_linear_rows(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 3, SH(2, 300, 64), 1);
	struct gpu_tensor w = in(e, GPU_F32, 2, SH(96, 64), 0.2f);
	struct gpu_tensor b = in(e, GPU_F32, 1, SH(96), 0.5f);
	struct gpu_tensor y = out(e, 3, SH(2, 300, 96));
	ops_linear(cmd, &y, &x, &w, &b, OPS_ACT_GELU_TANH);
}

/* A weight over the limit (blocks of output columns), bf16 and f16. */
static void
c_linear_wide(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 2, SH(70, 128), 1);
	struct gpu_tensor w = in(e, GPU_BF16, 2, SH(600, 128), 0.1f);
	struct gpu_tensor b = in(e, GPU_BF16, 1, SH(600), 0.5f);
	struct gpu_tensor y = out(e, 2, SH(70, 600));
	ops_linear(cmd, &y, &x, &w, &b, OPS_ACT_SILU);
	struct gpu_tensor w2 = in(e, GPU_F16, 2, SH(300, 128), 0.1f);
	struct gpu_tensor y2 = out(e, 2, SH(70, 300));
	ops_linear(cmd, &y2, &x, &w2, NULL, OPS_ACT_NONE);
}

/* Both at once, and K % 4 != 0 (the generic matmul kernel). */
static void
c_linear_generic(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 2, SH(260, 66), 1);
	struct gpu_tensor w = in(e, GPU_F32, 2, SH(330, 66), 0.2f);
	struct gpu_tensor y = out(e, 2, SH(260, 330));
	ops_linear(cmd, &y, &x, &w, NULL, OPS_ACT_GELU);
}

/*
 * ops_linear_gated_add: x, r and y over the limit (row blocks) with a
 * [B, D] gate (a row of a [B, 6, D] table), in place; a bf16 weight over
 * it (column blocks) with a per-token gate; a per-token gate over it
 * (the pair through the scratch buffer).
 */
static void
c_linear_gated(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 3, SH(2, 300, 64), 1);
	struct gpu_tensor w = in(e, GPU_F32, 2, SH(96, 64), 0.2f);
	struct gpu_tensor b = in(e, GPU_F32, 1, SH(96), 0.5f);
	struct gpu_tensor ada = in(e, GPU_F32, 3, SH(2, 6, 96), 1);
	struct gpu_tensor gate = gpu_tensor_slice(&ada, 1, 2, 1);
	gate.ndim = 2;
	gate.shape[1] = 96;
	gate.stride[1] = 1;
	struct gpu_tensor y = out(e, 3, SH(2, 300, 96));
	ops_linear_gated_add(cmd, &y, &y, &gate, &x, &w, &b, OPS_ACT_GELU_TANH);
	struct gpu_tensor x2 = in(e, GPU_F32, 3, SH(1, 20, 128), 1);
	struct gpu_tensor w2 = in(e, GPU_BF16, 2, SH(600, 128), 0.1f);
	struct gpu_tensor r2 = in(e, GPU_F32, 3, SH(1, 20, 600), 1);
	struct gpu_tensor g2 = in(e, GPU_BF16, 3, SH(1, 20, 600), 1);
	struct gpu_tensor y2 = out(e, 3, SH(1, 20, 600));
	ops_linear_gated_add(cmd, &y2, &r2, &g2, &x2, &w2, NULL, OPS_ACT_NONE);
	struct gpu_tensor x3 = in(e, GPU_F32, 3, SH(1, 200, 32), 1);
	struct gpu_tensor w3 = in(e, GPU_F16, 2, SH(96, 32), 0.2f);
	struct gpu_tensor g3 = in(e, GPU_F32, 3, SH(1, 200, 96), 1);
	struct gpu_tensor y3 = out(e, 3, SH(1, 200, 96));
	ops_linear_gated_add(cmd, &y3, &y3, &g3, &x3, &w3, NULL, OPS_ACT_SILU);
}

static void
c_matmul(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor a = in(e, GPU_F32, 3, SH(6, 70, 40), 1);
	struct gpu_tensor b = in(e, GPU_F32, 3, SH(6, 50, 40), 1);
	struct gpu_tensor c = out(e, 3, SH(6, 70, 50));
	ops_matmul(cmd, &c, &a, &b, 1, 0.125f);
	/* one batch larger than the limit: row blocks */
	struct gpu_tensor a1 = in(e, GPU_F32, 3, SH(2, 300, 36), 1);
	struct gpu_tensor b1 = in(e, GPU_F32, 3, SH(1, 36, 70), 1);
	struct gpu_tensor c1 = out(e, 3, SH(2, 300, 70));
	ops_matmul(cmd, &c1, &a1, &b1, 0, 1.0f);
}

/* Self-attention over the limit as a batch; cross-attention whose one
 * sample of queries is over it (blocks of query rows). */
static void
c_attention(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor q = in(e, GPU_F32, 3, SH(3, 100, 64), 1);
	struct gpu_tensor k = in(e, GPU_F32, 3, SH(3, 100, 64), 1);
	struct gpu_tensor v = in(e, GPU_F32, 3, SH(3, 100, 64), 1);
	struct gpu_tensor o = out(e, 3, SH(3, 100, 64));
	struct ops_attention_args args = {.heads = 2, .scale = 0.176f};
	ops_attention(cmd, &o, &q, &k, &v, &args);
	struct gpu_tensor q2 = in(e, GPU_F32, 3, SH(2, 300, 64), 1);
	struct gpu_tensor k2 = in(e, GPU_F32, 3, SH(2, 90, 64), 1);
	struct gpu_tensor v2 = in(e, GPU_F32, 3, SH(2, 90, 64), 1);
	struct gpu_tensor kb = in(e, GPU_F32, 2, SH(2, 90), 3);
	struct gpu_tensor o2 = out(e, 3, SH(2, 300, 64));
	struct ops_attention_args a2 = {.heads = 4, .scale = 0.25f,
	    .key_bias = &kb};
	ops_attention(cmd, &o2, &q2, &k2, &v2, &a2);
}

static void
c_norm_rows(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 3, SH(2, 350, 48), 2);
	struct gpu_tensor w = in(e, GPU_BF16, 1, SH(48), 1);
	struct gpu_tensor b = in(e, GPU_F32, 1, SH(48), 1);
	struct gpu_tensor y1 = out(e, 3, SH(2, 350, 48));
	struct gpu_tensor y2 = out(e, 3, SH(2, 350, 48));
	struct gpu_tensor y3 = out(e, 3, SH(2, 350, 48));
	ops_layer_norm(cmd, &y1, &x, &w, &b, 1e-6f);
	ops_rms_norm(cmd, &y2, &x, &w, 1e-5f);
	ops_softmax(cmd, &y3, &x);
	/* modulated: blocks start on a batch row or stay inside one batch */
	struct gpu_tensor tab = in(e, GPU_F32, 2, SH(2, 3 * 48), 1);
	struct gpu_tensor sc = gpu_tensor_slice(&tab, 1, 0, 48);
	struct gpu_tensor sh = gpu_tensor_slice(&tab, 1, 96, 48);
	struct gpu_tensor y4 = out(e, 3, SH(2, 350, 48));
	struct gpu_tensor y5 = out(e, 3, SH(2, 350, 48));
	ops_norm_modulate(cmd, &y4, &x, OPS_NORM_LAYER, &w, &b, 1e-6f, &sc,
	    &sh);
	ops_norm_modulate(cmd, &y5, &x, OPS_NORM_RMS, NULL, NULL, 1e-6f, NULL,
	    &sh);
}

/* Channel norms: one sample over the limit, so blocks of channels with
 * the sums carried between them. */
static void
c_norm_channels(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 5, SH(2, 40, 3, 10, 20), 2);
	struct gpu_tensor w = in(e, GPU_F32, 1, SH(40), 1);
	struct gpu_tensor b = in(e, GPU_F16, 1, SH(40), 1);
	struct gpu_tensor y1 = out(e, 5, SH(2, 40, 3, 10, 20));
	struct gpu_tensor y2 = out(e, 5, SH(2, 40, 3, 10, 20));
	ops_rms_norm_channels(cmd, &y1, &x, NULL, 1e-8f);
	ops_layer_norm_channels(cmd, &y2, &x, &w, &b, 1e-6f);
	/* in place, as the VAE runs it */
	struct gpu_tensor y3 = out(e, 5, SH(2, 40, 3, 10, 20));
	ops_copy(cmd, &y3, &x);
	ops_rms_norm_channels(cmd, &y3, &y3, &w, 1e-8f);
}

static void
c_group_norm(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 5, SH(2, 32, 3, 10, 20), 2);
	struct gpu_tensor w = in(e, GPU_F32, 1, SH(32), 1);
	struct gpu_tensor b = in(e, GPU_F32, 1, SH(32), 1);
	struct gpu_tensor y = out(e, 5, SH(2, 32, 3, 10, 20));
	ops_group_norm(cmd, &y, &x, 8, &w, &b, 1e-6f);
}

static void
c_elementwise(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 3, SH(2, 300, 64), 1);
	struct gpu_tensor r = in(e, GPU_F32, 3, SH(2, 300, 64), 1);
	struct gpu_tensor t = in(e, GPU_BF16, 1, SH(64), 1);
	struct gpu_tensor ada = in(e, GPU_F32, 3, SH(2, 6, 64), 1);
	struct gpu_tensor y1 = out(e, 3, SH(2, 300, 64));
	ops_add(cmd, &y1, &x, &t);			/* broadcast */
	struct gpu_tensor y2 = out(e, 3, SH(2, 300, 64));
	struct gpu_tensor scale = gpu_tensor_slice(&ada, 1, 1, 1);
	struct gpu_tensor shift = gpu_tensor_slice(&ada, 1, 0, 1);
	scale.ndim = shift.ndim = 2;
	scale.shape[1] = shift.shape[1] = 64;
	scale.stride[1] = shift.stride[1] = 1;
	ops_modulate(cmd, &y2, &x, &scale, &shift);
	struct gpu_tensor y3 = out(e, 3, SH(2, 300, 64));
	ops_copy(cmd, &y3, &x);
	ops_gated_add(cmd, &y3, &y3, &scale, &r);	/* in place */
	/* a permuted (strided) copy: [2, 300, 64] -> [2, 64, 300] */
	struct gpu_tensor y4 = out(e, 3, SH(2, 64, 300));
	struct gpu_tensor xp = gpu_tensor_permute(&x, (const int[]){0, 2, 1});
	ops_copy(cmd, &y4, &xp);
	struct gpu_tensor y5 = out(e, 3, SH(2, 300, 64));
	ops_scale(cmd, &y5, &r, 0.5f, 0.25f);
	ops_act(cmd, &y5, &y5, OPS_ACT_SILU);
	ops_add_mul(cmd, &y5, &y5, &x, &r);
}

static void
c_channels(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 5, SH(2, 16, 3, 20, 20), 1);
	struct gpu_tensor sc = in(e, GPU_F32, 2, SH(2, 16), 1);
	struct gpu_tensor sh = in(e, GPU_F32, 1, SH(16), 1);
	struct gpu_tensor noise = in(e, GPU_F32, 2, SH(20, 20), 1);
	struct gpu_tensor y = out(e, 5, SH(2, 16, 3, 20, 20));
	ops_channel_affine(cmd, &y, &x, &sc, &sh, 1.0f);
	ops_add_noise_channels(cmd, &y, &noise, &sh);
}

static void
c_rope(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 3, SH(2, 300, 64), 1);
	struct gpu_tensor cs = in(e, GPU_F32, 3, SH(1, 300, 64), 1);
	struct gpu_tensor sn = in(e, GPU_F32, 3, SH(1, 300, 64), 1);
	struct gpu_tensor y = out(e, 3, SH(2, 300, 64));
	ops_rope(cmd, &y, &x, &cs, &sn);
	/* split halves, heads of 16, tables [1, N, D/2] */
	struct gpu_tensor cs2 = in(e, GPU_F32, 3, SH(1, 300, 32), 1);
	struct gpu_tensor sn2 = in(e, GPU_F32, 3, SH(1, 300, 32), 1);
	struct gpu_tensor y2 = out(e, 3, SH(2, 300, 64));
	ops_rope_split(cmd, &y2, &x, &cs2, &sn2, 16);
}

/* conv3d: x over the limit (blocks of input channels through y), w over
 * it (blocks of output channels); causal replicate padding, bias. */
static void
c_conv3d(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 5, SH(1, 24, 5, 12, 12), 1);
	struct gpu_tensor w = in(e, GPU_F32, 5, SH(40, 24, 3, 3, 3), 0.1f);
	struct gpu_tensor b = in(e, GPU_F32, 1, SH(40), 1);
	struct gpu_tensor y = out(e, 5, SH(1, 40, 5, 12, 12));
	struct ops_conv3d_params p = {.pad_t = {2, 0}, .pad_h = {1, 1},
	    .pad_w = {1, 1}, .t_mode = OPS_PAD_REPLICATE};
	ops_conv3d(cmd, &y, &x, &w, &b, &p);
	/* bf16 weights, stride 2, two samples, non-causal */
	struct gpu_tensor x2 = in(e, GPU_F32, 5, SH(2, 20, 4, 14, 14), 1);
	struct gpu_tensor w2 = in(e, GPU_BF16, 5, SH(48, 20, 3, 3, 3), 0.1f);
	struct gpu_tensor y2 = out(e, 5, SH(2, 48, 2, 7, 7));
	struct ops_conv3d_params p2 = {.stride = {2, 2, 2}, .pad_t = {1, 1},
	    .pad_h = {1, 1}, .pad_w = {1, 1}, .t_mode = OPS_PAD_REPLICATE};
	ops_conv3d(cmd, &y2, &x2, &w2, NULL, &p2);
	/* 1x1x1 (the VAE's shortcut) */
	struct gpu_tensor w3 = in(e, GPU_F16, 5, SH(36, 24, 1, 1, 1), 0.3f);
	struct gpu_tensor y3 = out(e, 5, SH(1, 36, 5, 12, 12));
	struct ops_conv3d_params p3 = {.stride = {1, 1, 1}};
	ops_conv3d(cmd, &y3, &x, &w3, NULL, &p3);
}

/* conv1d: a Conv1d whose x is over the limit (blocks of input channels
 * through y) and a ConvTranspose1d whose w is (blocks of output channels,
 * w's dim 1). */
static void
c_conv1d(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 3, SH(2, 40, 600), 1);
	struct gpu_tensor w = in(e, GPU_F32, 3, SH(24, 40, 3), 0.1f);
	struct gpu_tensor b = in(e, GPU_F32, 1, SH(24), 1);
	struct gpu_tensor y = out(e, 3, SH(2, 24, 600));
	struct ops_conv1d_params p = {.stride = 1, .dilation = 3,
	    .pad = {3, 3}};
	ops_conv1d(cmd, &y, &x, &w, &b, &p);
	struct gpu_tensor x2 = in(e, GPU_F32, 3, SH(1, 64, 40), 1);
	struct gpu_tensor w2 = in(e, GPU_BF16, 3, SH(64, 300, 8), 0.1f);
	struct gpu_tensor b2 = in(e, GPU_F32, 1, SH(300), 1);
	struct gpu_tensor y2 = out(e, 3, SH(1, 300, 160));
	struct ops_conv1d_params p2 = {.stride = 4, .pad = {2, 2},
	    .transposed = 1};
	ops_conv1d(cmd, &y2, &x2, &w2, &b2, &p2);
}

/* The VAE's upsampler (conv then depth-to-space) and unpatchify. */
static void
c_depth_to_space(struct env *e, struct gpu_cmd *cmd)
{
	struct gpu_tensor x = in(e, GPU_F32, 5, SH(2, 64, 4, 10, 10), 1);
	struct gpu_tensor y = out(e, 5, SH(2, 8, 8, 20, 20));
	ops_depth_to_space(cmd, &y, &x, 2, 2, 2, 0);
	struct gpu_tensor x2 = in(e, GPU_F32, 5, SH(1, 48, 3, 12, 12), 1);
	struct gpu_tensor y2 = out(e, 5, SH(1, 3, 3, 48, 48));
	ops_depth_to_space(cmd, &y2, &x2, 1, 4, 4, 1);
	struct gpu_tensor z = out(e, 5, SH(2, 64, 4, 10, 10));
	ops_space_to_depth(cmd, &z, &y, 2, 2, 2, 0);
}

/* What no split can fix names the op, the tensor and the limit. */
static void
test_unsplittable(void)
{
	struct env *e = &envs[1];
	struct lq_error err;
	error_clear(&err);
	gpu_pool_reset(e->pool, 0);
	gpu_cmd_begin(e->cmd);
	/* one row of x (20000 floats) is larger than the whole limit */
	struct gpu_tensor x = in(e, GPU_F32, 2, SH(2, 20000), 1);
	struct gpu_tensor w = in(e, GPU_BF16, 2, SH(4, 20000), 1);
	struct gpu_tensor y = in(e, GPU_F32, 2, SH(2, 4), 1);
	CHECK_INT(ops_linear(e->cmd, &y, &x, &w, NULL, OPS_ACT_NONE), LQ_FAILED);
	CHECK_INT(gpu_cmd_submit(e->cmd, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-RANGE");
	CHECK_CONTAINS(err.message, "ops_linear");
	CHECK_CONTAINS(err.message, "f32[2,20000]");
	CHECK_CONTAINS(err.message, "65536 bytes");
	CHECK_CONTAINS(err.message, "maxStorageBufferRange");
	printf("unsplittable: %s\n", err.message);
}

int
main(void)
{
	struct lq_error err;
	error_clear(&err);
	log_set_level(LOG_LEVEL_WARN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("LATENTQ_GPU_HOST_GEMM", "0", 1);
	for (int i = 0; i < 2; i++) {
		if (i == 1) {
			char v[32];
			snprintf(v, sizeof(v), "%d", SPLIT_LIMIT);
			setenv("LATENTQ_GPU_MAX_BINDING", v, 1);
		} else {
			unsetenv("LATENTQ_GPU_MAX_BINDING");
		}
		struct gpu_ctx_opts opts = {0};
		if (gpu_ctx_create(&opts, &envs[i].ctx, &err) != LQ_OK) {
			error_print(&err, stderr);
			return strcmp(err.code, "LQ-GPU-NODEV") == 0 ? 77 : 99;
		}
		if (gpu_pool_create(envs[i].ctx, (size_t)8 << 20,
		    &envs[i].pool, &err) != LQ_OK ||
		    gpu_cmd_create(envs[i].ctx, &envs[i].cmd, &err) != LQ_OK) {
			error_print(&err, stderr);
			return 99;
		}
	}
	const struct device_caps *c0 = gpu_ctx_caps(envs[0].ctx);
	const struct device_caps *c1 = gpu_ctx_caps(envs[1].ctx);
	printf("device: %s; bindings of %" PRIu64 " and %" PRIu64 " bytes\n",
	    c0->name, device_caps_max_binding(c0), device_caps_max_binding(c1));
	CHECK(device_caps_max_binding(c1) == SPLIT_LIMIT);
	CHECK(device_caps_max_binding(c0) > (uint64_t)8 << 20);

	run_case("linear (rows)", c_linear_rows);
	run_case("linear (bf16/f16 columns)", c_linear_wide);
	run_case("linear (generic kernel)", c_linear_generic);
	run_case("linear + gated residual", c_linear_gated);
	run_case("matmul", c_matmul);
	run_case("attention", c_attention);
	run_case("layer/rms norm, softmax", c_norm_rows);
	run_case("channel norms", c_norm_channels);
	run_case("group norm", c_group_norm);
	run_case("elementwise", c_elementwise);
	run_case("channel affine, noise", c_channels);
	run_case("rope", c_rope);
	run_case("conv3d", c_conv3d);
	run_case("conv1d", c_conv1d);
	run_case("depth-to-space", c_depth_to_space);
	test_unsplittable();

	for (int i = 1; i >= 0; i--) {
		gpu_cmd_free(envs[i].cmd);
		gpu_pool_free(envs[i].pool);
		gpu_ctx_free(envs[i].ctx);
	}
	return test_summary();
}
