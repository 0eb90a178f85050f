/*
 * test-weights-stream.c — weight streaming in nn/weights.h on the golden
 * transformer written as BF16: the plan from headers equals what a load
 * allocates (resident and streamed); a streamed block's tensors are not on
 * the device until its group is uploaded, then hold exactly the stored
 * BF16 bytes (no widening on the host) in slot i % 2 at the same offsets
 * as any other block; an upload of a group its slot already holds does
 * nothing.  Exits 77 without a Vulkan device.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/weights.h"
#include "test.h"

static const struct nn_weights_stream blocks = {"transformer_blocks.", 2};

int
main(void)
{
	const char *src = getenv("top_srcdir");
	char tmp[] = "/tmp/latentq-stream.XXXXXX";
	struct lq_error err;
	struct st_file *f;
	struct st_set *set;
	struct gpu_ctx *ctx;
	struct nn_weights *wr, *ws;
	struct nn_weights_bytes pr, ps;

	error_clear(&err);
	log_set_level(LOG_LEVEL_WARN);
	if (mkdtemp(tmp) == NULL)
		return 99;
	char *in = xasprintf("%s/tests/data/ltxv/transformer/model/transformer/"
	    "diffusion_pytorch_model.safetensors", src ? src : ".");
	char *path = xasprintf("%s/model.safetensors", tmp);
	if (st_file_open(in, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	struct st_writer *w = st_writer_new();
	for (size_t i = 0; i < st_file_count(f); i++) {
		const struct st_tensor *t = st_file_tensor(f, i);
		float *v = st_tensor_to_f32(t);
		st_writer_add_f32(w, t->name, t->ndim >= 2 ? ST_BF16 : ST_F32,
		    t->ndim, t->shape, v);
		free(v);
	}
	st_file_close(f);
	if (st_writer_write(w, path, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	st_writer_free(w);

	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		return strcmp(err.code, "LQ-GPU-NODEV") == 0 ? 77 : 99;
	}
	const struct device_caps *caps = gpu_ctx_caps(ctx);
	CHECK_INT(st_set_open(path, &set, &err), LQ_OK);
	CHECK_INT(nn_weights_plan(set, NULL, NULL, caps, &pr, &err), LQ_OK);
	CHECK_INT(nn_weights_plan(set, NULL, &blocks, caps, &ps, &err), LQ_OK);
	CHECK_INT(pr.groups, 0);
	CHECK_INT(ps.groups, 2);
	CHECK_INT(ps.slots, 2);
	/* two blocks of the same shapes: the host holds both, a slot one
	 * (packed with the 256-byte alignment) */
	CHECK(ps.slot > 0 && ps.streamed_host > ps.slot &&
	    ps.streamed_host <= 2 * ps.slot);
	CHECK(ps.device == ps.resident + 2 * ps.slot);
	CHECK(ps.resident + ps.streamed_host <= pr.device);

	CHECK_INT(nn_weights_load_streamed(ctx, path, NULL, NULL, NULL, &wr, &err),
	    LQ_OK);
	CHECK_INT(nn_weights_load_streamed(ctx, path, NULL, NULL, &blocks, &ws,
	    &err), LQ_OK);
	/* one layout function: the plan is what the load allocates */
	CHECK(nn_weights_device_bytes(wr) == pr.device);
	CHECK(nn_weights_device_bytes(ws) == ps.device);
	CHECK_INT(nn_weights_groups(wr), 0);
	CHECK_INT(nn_weights_groups(ws), 2);
	printf("resident %zu bytes; streamed %zu resident + 2 slots of %zu "
	    "(%zu bytes of blocks in host memory)\n", pr.device, ps.resident,
	    ps.slot, ps.streamed_host);

	const char *q0 = "transformer_blocks.0.attn1.to_q.weight";
	const char *q1 = "transformer_blocks.1.attn1.to_q.weight";
	struct gpu_tensor t0, t1, tr;
	CHECK_INT(nn_weights_get(ws, q0, 2, NULL, &t0, &err), LQ_OK);
	CHECK_INT(nn_weights_get(ws, q1, 2, NULL, &t1, &err), LQ_OK);
	CHECK_INT(nn_weights_get(wr, q1, 2, NULL, &tr, &err), LQ_OK);
	CHECK_INT(t1.dtype, GPU_BF16);			/* as stored */
	CHECK_INT(tr.dtype, GPU_BF16);
	CHECK(t0.buf != t1.buf);			/* slots 0 and 1 */
	CHECK(t0.offset == t1.offset);			/* same layout */
	CHECK_INT(nn_weights_group_of(q1, "transformer_blocks."), 1);
	CHECK_INT(nn_weights_group_of("transformer_blocks.x", "transformer_blocks."), -1);
	CHECK_INT(nn_weights_group_of("proj_in.weight", "transformer_blocks."), -1);

	const struct st_tensor *h1 = nn_weights_host(ws, q1);
	unsigned ups;
	CHECK(h1 != NULL && h1->dtype == ST_BF16);
	CHECK_INT(nn_weights_upload_group(ws, 1, &err), LQ_OK);
	nn_weights_stream_stats(ws, NULL, NULL, &ups);
	CHECK_INT(ups, 1);
	CHECK_INT(nn_weights_upload_group(ws, 1, &err), LQ_OK);	/* held */
	nn_weights_stream_stats(ws, NULL, NULL, &ups);
	CHECK_INT(ups, 1);
	unsigned char *dev = xmalloc(h1->nbytes), *res = xmalloc(h1->nbytes);
	CHECK_INT(gpu_tensor_download(ctx, &t1, dev, &err), LQ_OK);
	CHECK_INT(gpu_tensor_download(ctx, &tr, res, &err), LQ_OK);
	CHECK(memcmp(dev, h1->data, h1->nbytes) == 0);	/* the stored bytes */
	CHECK(memcmp(dev, res, h1->nbytes) == 0);	/* = resident */
	/* group 3 would go to slot 1: a later upload replaces group 1 */
	free(dev);
	free(res);

	nn_weights_free(ws);
	nn_weights_free(wr);
	st_set_close(set);
	gpu_ctx_free(ctx);
	unlink(path);
	rmdir(tmp);
	free(in);
	free(path);
	return test_summary();
}
