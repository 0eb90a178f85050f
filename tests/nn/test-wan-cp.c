/*
 * test-wan-cp.c — the Wan transformer (nn/wan_transformer.h) under context
 * parallelism (doc/mesh.md: Ulysses exchange for self-attention,
 * cross-attention replicated) on two logical devices
 * (LATENTQ_LOGICAL_DEVICES=2), against one device: grid_a of the Wan
 * goldens (tests/data/wan/transformer, 12 tokens, 2 heads) split over two
 * ranks gives the one-device output bit for bit on both ranks (which
 * itself matches the golden within suggested_atol); the negative control
 * (LATENTQ_MESH_NO_KV_GATHER=1: each rank attends over its own tokens)
 * differs; a degree that does not divide the heads or the tokens, and
 * intermediates on a rank, are refused by name.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/ltxv_transformer.h"
#include "nn/wan_transformer.h"
#include "test.h"

#define MODEL LQ_SRCDIR "/tests/data/wan/transformer/model/transformer"

struct inputs {
	const struct st_tensor *hs, *ehs, *ts, *out;
	float *fhs, *fehs, *fts, *fout;
};

static void
inputs_read(const struct st_file *f, struct inputs *in)
{
	in->hs = st_file_find(f, "input.hidden_states");
	in->ehs = st_file_find(f, "input.encoder_hidden_states");
	in->ts = st_file_find(f, "input.timestep");
	in->out = st_file_find(f, "output");
	if (!in->hs || !in->ehs || !in->ts || !in->out) {
		fprintf(stderr, "golden tensors missing\n");
		exit(99);
	}
	in->fhs = st_tensor_to_f32(in->hs);
	in->fehs = st_tensor_to_f32(in->ehs);
	in->fts = st_tensor_to_f32(in->ts);
	in->fout = st_tensor_to_f32(in->out);
}

static void
inputs_free(struct inputs *in)
{
	free(in->fhs);
	free(in->fehs);
	free(in->fts);
	free(in->fout);
}

/* One device's model and tensors. */
struct rank {
	struct gpu_ctx *ctx;
	struct wan_transformer *m;
	struct gpu_buffer *bh, *be, *bo;
	struct gpu_tensor th, te, to;
	const struct inputs *in;
	float *out;			/* host [B, C, F, H, W] */
	const struct nn_dump *dump;
	enum lq_status st;
	struct lq_error err;
};

static void
die(const struct lq_error *err)
{
	error_print(err, stderr);
	exit(99);
}

static struct gpu_tensor
upload(struct gpu_ctx *ctx, const struct st_tensor *t, const float *data,
    struct gpu_buffer **b)
{
	struct lq_error err;
	struct gpu_tensor g;

	error_clear(&err);
	if (gpu_buffer_create(ctx, st_tensor_numel(t) * sizeof(float), b,
	    &err) != LQ_OK)
		die(&err);
	g = gpu_tensor_make(*b, 0, GPU_F32, t->ndim, t->shape);
	if (data && gpu_tensor_upload_f32(ctx, &g, data, &err) != LQ_OK)
		die(&err);
	return g;
}

static void
rank_open(struct rank *r, const char *device)
{
	struct gpu_ctx_opts o = { .device = device };

	memset(r, 0, sizeof(*r));
	error_clear(&r->err);
	if (gpu_ctx_create(&o, &r->ctx, &r->err) != LQ_OK ||
	    wan_transformer_load(r->ctx, MODEL, &r->m, &r->err) != LQ_OK)
		die(&r->err);
}

static void
rank_inputs(struct rank *r, const struct inputs *in)
{
	gpu_buffer_free(r->bh);
	gpu_buffer_free(r->be);
	gpu_buffer_free(r->bo);
	free(r->out);
	r->in = in;
	r->th = upload(r->ctx, in->hs, in->fhs, &r->bh);
	r->te = upload(r->ctx, in->ehs, in->fehs, &r->be);
	r->to = upload(r->ctx, in->out, NULL, &r->bo);
	r->out = xmalloc(sizeof(float) * (size_t)st_tensor_numel(in->out));
}

static void *
rank_run(void *ud)
{
	struct rank *r = ud;
	struct wan_transformer_args a = {
		.hidden_states = &r->th,
		.encoder_hidden_states = &r->te,
		.timestep = r->in->fts,
	};

	error_clear(&r->err);
	r->st = wan_transformer_forward(r->m, &a, &r->to, r->dump, &r->err);
	if (r->st == LQ_OK)
		r->st = gpu_tensor_download_f32(r->ctx, &r->to, r->out, &r->err);
	return NULL;
}

static void
rank_close(struct rank *r)
{
	gpu_buffer_free(r->bh);
	gpu_buffer_free(r->be);
	gpu_buffer_free(r->bo);
	wan_transformer_free(r->m);
	gpu_ctx_free(r->ctx);
	free(r->out);
}

/* Both ranks' forwards at once (one thread each); 0 when both passed. */
static int
run_pair(struct rank r[2])
{
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, rank_run, &r[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return r[0].st != LQ_OK || r[1].st != LQ_OK;
}

static struct st_file *
open_golden(const char *grid)
{
	char *p = xasprintf("%s/tests/data/wan/transformer/%s.safetensors",
	    LQ_SRCDIR, grid);
	struct st_file *f;
	struct lq_error err;

	error_clear(&err);
	if (st_file_open(p, &f, &err) != LQ_OK)
		die(&err);
	free(p);
	return f;
}

int
main(void)
{
	struct st_file *fa = open_golden("grid_a"), *fo = open_golden("grid_odd");
	struct inputs a, odd;
	struct rank one, r[2];
	struct ltxv_cp_group *g = NULL, *g3 = NULL;
	struct lq_error err;
	size_t n;
	double maxd = 0;

	setenv("LATENTQ_LOGICAL_DEVICES", "2", 1);
	unsetenv("LATENTQ_DEVICE");
	unsetenv("LATENTQ_MESH_NO_KV_GATHER");
	inputs_read(fa, &a);
	inputs_read(fo, &odd);
	n = (size_t)st_tensor_numel(a.out);

	/* one device: the reference (and the golden within its atol) */
	rank_open(&one, "0");
	rank_inputs(&one, &a);
	rank_run(&one);
	if (one.st != LQ_OK)
		die(&one.err);
	for (size_t i = 0; i < n; i++) {
		double dd = fabs((double)one.out[i] - a.fout[i]);

		maxd = dd > maxd ? dd : maxd;
	}
	CHECK(maxd <= 1e-5);	/* grid_a output's suggested_atol */

	/* two ranks on slots 0 and 1: bit-identical to one device */
	error_clear(&err);
	if (ltxv_cp_group_create(2, 2, 12, 24, &g, &err) != LQ_OK)
		die(&err);
	rank_open(&r[0], "0");
	rank_open(&r[1], "1");
	for (int i = 0; i < 2; i++) {
		rank_inputs(&r[i], &a);
		CHECK_INT(wan_transformer_set_context(r[i].m, g, i, &err), LQ_OK);
	}
	CHECK_INT(run_pair(r), 0);
	for (int i = 0; i < 2; i++)
		CHECK(memcmp(r[i].out, one.out, n * sizeof(float)) == 0);
	/* a rank's pool is the plan's (its tokens and the gathered output) */
	{
		struct wan_transformer_shape shp = { 2, 2, 4, 6, 8, 2,
		    NN_WEIGHTS_RESIDENT };
		struct nn_plan_bytes plan, plan1;
		size_t wb, cap, peak;

		wan_transformer_plan(wan_transformer_config(r[1].m), NULL,
		    gpu_ctx_caps(r[1].ctx), &shp, &plan);
		wan_transformer_memory(r[1].m, &wb, &cap, &peak);
		CHECK_INT(plan.activations, cap);
		shp.context = 1;
		wan_transformer_plan(wan_transformer_config(r[1].m), NULL,
		    gpu_ctx_caps(r[1].ctx), &shp, &plan1);
		CHECK(plan1.activations != plan.activations);
		CHECK(plan.host > plan1.host);	/* the rank's staging */
	}

	/* the negative control: no exchange, different output */
	setenv("LATENTQ_MESH_NO_KV_GATHER", "1", 1);
	CHECK_INT(run_pair(r), 0);
	CHECK(memcmp(r[0].out, one.out, n * sizeof(float)) != 0);
	unsetenv("LATENTQ_MESH_NO_KV_GATHER");
	/* and back: the same bits again (nothing cached from the control) */
	CHECK_INT(run_pair(r), 0);
	CHECK(memcmp(r[1].out, one.out, n * sizeof(float)) == 0);

	/* grid_odd's 45 tokens do not split in two: refused on each rank */
	for (int i = 0; i < 2; i++)
		rank_inputs(&r[i], &odd);
	CHECK(run_pair(r) != 0);
	CHECK_STR(r[0].err.code, "LQ-NN-SHAPE");
	CHECK_CONTAINS(r[0].err.message, "context degree 2 does not divide "
	    "the 45 tokens");

	/* intermediates are dumped on one device only */
	{
		struct nn_dump d = { NULL, NULL };

		for (int i = 0; i < 2; i++) {
			rank_inputs(&r[i], &a);
			r[i].dump = &d;
		}
		rank_run(&r[0]);
		CHECK_INT(r[0].st, LQ_FAILED);
		CHECK_STR(r[0].err.code, "LQ-NN-INPUT");
		r[0].dump = r[1].dump = NULL;
	}

	/* 3 ranks do not divide the 2 heads */
	if (ltxv_cp_group_create(3, 2, 12, 24, &g3, &err) != LQ_OK)
		die(&err);
	error_clear(&err);
	CHECK_INT(wan_transformer_set_context(r[0].m, g3, 0, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-NN-SHAPE");
	CHECK_CONTAINS(err.message, "context degree 3 does not divide the 2 "
	    "attention heads");

	rank_close(&one);
	rank_close(&r[0]);
	rank_close(&r[1]);
	ltxv_cp_group_free(g);
	ltxv_cp_group_free(g3);
	inputs_free(&a);
	inputs_free(&odd);
	st_file_close(fa);
	st_file_close(fo);
	return test_summary();
}
