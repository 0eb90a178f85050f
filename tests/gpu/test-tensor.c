/*
 * test-tensor.c — tensor views (src/gpu/tensor.c) without a device: it is
 * linked with tensor.c and libcore alone (no Vulkan library), so a view
 * function that reached the device would not link.  The buffer transfers
 * tensor.c calls are stubbed here: they record what they were asked, so
 * the f32 → f16/bf16 packing and the refusal of strided host transfers are
 * checked too.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "gpu/gpu.h"
#include "test.h"

/* ---- stubs of buffer.c: a "buffer" is host memory here ---- */

static unsigned char fake_mem[4096];
static size_t last_off, last_n;
static int transfers;

/* Counts a transfer of n bytes at offset; returns where they are. */
static unsigned char *
fake_at(size_t offset, size_t n)
{
	transfers++;
	last_off = offset;
	last_n = n;
	return fake_mem + offset;
}

enum lq_status
gpu_buffer_upload(struct gpu_ctx *ctx, struct gpu_buffer *buf, size_t offset,
    const void *src, size_t n, struct lq_error *err)
{
	(void)ctx, (void)buf, (void)err;
	memcpy(fake_at(offset, n), src, n);
	return LQ_OK;
}

enum lq_status
gpu_buffer_download(struct gpu_ctx *ctx, const struct gpu_buffer *buf,
    size_t offset, void *dst, size_t n, struct lq_error *err)
{
	(void)ctx, (void)buf, (void)err;
	memcpy(dst, fake_at(offset, n), n);
	return LQ_OK;
}

/* ---- views ---- */

static void
test_make(void)
{
	CHECK_INT(gpu_dtype_size(GPU_F32), 4);
	CHECK_INT(gpu_dtype_size(GPU_F16), 2);
	CHECK_INT(gpu_dtype_size(GPU_BF16), 2);
	CHECK_STR(gpu_dtype_name(GPU_BF16), "bf16");

	struct gpu_tensor t = gpu_tensor_make(NULL, 64, GPU_F16, 3,
	    (int64_t[]){2, 3, 5});
	CHECK_INT(t.ndim, 3);
	CHECK_INT(t.offset, 64);
	/* row-major strides in elements; unused dims are 1 */
	CHECK_INT(t.stride[0], 15);
	CHECK_INT(t.stride[1], 5);
	CHECK_INT(t.stride[2], 1);
	for (int i = 3; i < GPU_MAX_DIMS; i++)
		CHECK_INT(t.shape[i], 1);
	CHECK_INT(gpu_tensor_numel(&t), 30);
	CHECK_INT(gpu_tensor_nbytes(&t), 60);
	CHECK(gpu_tensor_is_contiguous(&t));
	char d[64];
	CHECK_STR(gpu_tensor_describe(&t, d, sizeof(d)), "f16[2,3,5]");
	CHECK_STR(gpu_tensor_describe(NULL, d, sizeof(d)), "(none)");
	/* a short buffer truncates, never overruns */
	char small[6];
	gpu_tensor_describe(&t, small, sizeof(small));
	CHECK_STR(small, "f16[2");
}

static void
test_views(void)
{
	struct gpu_tensor t = gpu_tensor_make(NULL, 0, GPU_F32, 3,
	    (int64_t[]){2, 3, 4});

	/* slice: the offset moves by start × stride elements */
	struct gpu_tensor s = gpu_tensor_slice(&t, 1, 1, 2);
	CHECK_INT(s.offset, 1 * 4 * 4);
	CHECK_INT(s.shape[1], 2);
	CHECK_INT(s.stride[0], 12);
	CHECK(!gpu_tensor_is_contiguous(&s));
	char d[64];
	CHECK_STR(gpu_tensor_describe(&s, d, sizeof(d)), "f32[2,2,4](strided)");
	/* a slice of the first dim stays contiguous */
	struct gpu_tensor s0 = gpu_tensor_slice(&t, 0, 1, 1);
	CHECK_INT(s0.offset, 12 * 4);
	CHECK(gpu_tensor_is_contiguous(&s0));

	/* permute: shapes and strides follow perm */
	struct gpu_tensor p = gpu_tensor_permute(&t, (int[]){2, 0, 1});
	CHECK_INT(p.shape[0], 4);
	CHECK_INT(p.shape[1], 2);
	CHECK_INT(p.shape[2], 3);
	CHECK_INT(p.stride[0], 1);
	CHECK_INT(p.stride[1], 12);
	CHECK_INT(p.stride[2], 4);
	CHECK(!gpu_tensor_is_contiguous(&p));
	CHECK_INT(gpu_tensor_numel(&p), 24);

	/* reshape keeps the offset and the element count */
	struct gpu_tensor r = gpu_tensor_reshape(&s0, 2, (int64_t[]){4, 3});
	CHECK_INT(r.offset, s0.offset);
	CHECK_INT(r.stride[0], 3);
	CHECK_INT(gpu_tensor_numel(&r), 12);

	/* broadcast: new leading dims and size-1 dims get stride 0 */
	struct gpu_tensor b1 = gpu_tensor_make(NULL, 8, GPU_F32, 2,
	    (int64_t[]){1, 4});
	struct gpu_tensor b = gpu_tensor_broadcast(&b1, 3, (int64_t[]){5, 3, 4});
	CHECK_INT(b.ndim, 3);
	CHECK_INT(b.shape[0], 5);
	CHECK_INT(b.shape[1], 3);
	CHECK_INT(b.shape[2], 4);
	CHECK_INT(b.stride[0], 0);
	CHECK_INT(b.stride[1], 0);
	CHECK_INT(b.stride[2], 1);
	CHECK_INT(b.offset, 8);
	CHECK(!gpu_tensor_is_contiguous(&b));
	/* a size-1 dim that stays size 1 is contiguous whatever its stride */
	struct gpu_tensor one = gpu_tensor_broadcast(&b1, 2, (int64_t[]){1, 4});
	CHECK(gpu_tensor_is_contiguous(&one));
}

/* ---- host transfers through the (stubbed) buffer calls ---- */

static void
test_transfers(void)
{
	struct lq_error err;
	error_clear(&err);
	float src[6] = {1.0f, -2.5f, 0.1f, 65504.0f, 1e-8f, 3.0f};
	float back[6];

	/* f16: packed by core/half.h, at the view's byte offset */
	struct gpu_tensor h = gpu_tensor_make(NULL, 100, GPU_F16, 2,
	    (int64_t[]){2, 3});
	transfers = 0;
	CHECK_INT(gpu_tensor_upload_f32(NULL, &h, src, &err), LQ_OK);
	CHECK_INT(transfers, 1);
	CHECK_INT(last_off, 100);
	CHECK_INT(last_n, 12);
	for (int i = 0; i < 6; i++) {
		uint16_t v;
		memcpy(&v, fake_mem + 100 + 2 * i, 2);
		CHECK_INT(v, half_f32_to_f16(src[i]));
	}
	CHECK_INT(gpu_tensor_download_f32(NULL, &h, back, &err), LQ_OK);
	for (int i = 0; i < 6; i++)
		CHECK(back[i] == half_f16_to_f32(half_f32_to_f16(src[i])));

	/* bf16 */
	struct gpu_tensor bf = gpu_tensor_make(NULL, 200, GPU_BF16, 1,
	    (int64_t[]){6});
	CHECK_INT(gpu_tensor_upload_f32(NULL, &bf, src, &err), LQ_OK);
	for (int i = 0; i < 6; i++) {
		uint16_t v;
		memcpy(&v, fake_mem + 200 + 2 * i, 2);
		CHECK_INT(v, half_f32_to_bf16(src[i]));
	}

	/* f32 goes through as is */
	struct gpu_tensor f = gpu_tensor_make(NULL, 300, GPU_F32, 1,
	    (int64_t[]){6});
	CHECK_INT(gpu_tensor_upload_f32(NULL, &f, src, &err), LQ_OK);
	CHECK_INT(last_n, 24);
	CHECK(memcmp(fake_mem + 300, src, 24) == 0);

	/* a strided view is refused before any transfer, naming it */
	struct gpu_tensor big = gpu_tensor_make(NULL, 0, GPU_F32, 2,
	    (int64_t[]){4, 4});
	struct gpu_tensor col = gpu_tensor_slice(&big, 1, 1, 2);
	transfers = 0;
	CHECK_INT(gpu_tensor_upload(NULL, &col, src, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-SHAPE");
	CHECK_CONTAINS(err.message, "f32[4,2](strided)");
	error_clear(&err);
	CHECK_INT(gpu_tensor_download_f32(NULL, &col, back, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-SHAPE");
	CHECK_INT(transfers, 0);
}

int
main(void)
{
	test_make();
	test_views();
	test_transfers();
	return test_summary();
}
