/*
 * test-runtime.c — the gpu runtime without kernel math: device caps JSON
 * round trip and errors, pipeline-cache persistence through an in-memory
 * gpu_cache_io (round trip, fingerprint invalidation, corrupt blob dropped,
 * LATENTQ_NO_PIPELINE_CACHE), device choice by index/name, buffers at
 * offsets, the activation pool, and host f16/bf16 conversion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/half.h"
#include "core/log.h"
#include "gpu/gpu.h"
#include "gpu/internal.h"
#include "gpu/ops.h"
#include "tests/test.h"

/* ---- in-memory cache io: one slot ---- */
struct memcache {
	char fp[80];
	void *blob;
	size_t n;
	int loads, saves;
};

static enum lq_status
mc_load(void *ud, const char *fp, void **blob, size_t *n)
{
	struct memcache *m = ud;
	m->loads++;
	*blob = NULL;
	*n = 0;
	if (m->blob != NULL && strcmp(fp, m->fp) == 0) {
		*blob = malloc(m->n);
		memcpy(*blob, m->blob, m->n);
		*n = m->n;
	}
	return LQ_OK;
}

static enum lq_status
mc_save(void *ud, const char *fp, const void *blob, size_t n)
{
	struct memcache *m = ud;
	m->saves++;
	free(m->blob);
	m->blob = malloc(n ? n : 1);
	memcpy(m->blob, blob, n);
	m->n = n;
	snprintf(m->fp, sizeof(m->fp), "%s", fp);
	return LQ_OK;
}

/*
 * Creates a ctx with cache io, records one fill, frees (saving).  With
 * `scribble` the io struct the opts pointed at is overwritten right after
 * create, as a caller's stack object is once its scope ends (render's
 * phase_compile): the ctx must have kept its own copy.
 */
static int
cache_session_io(struct memcache *m, int *loaded, unsigned *created,
    int scribble)
{
	struct gpu_cache_io *io = malloc(sizeof(*io));
	*io = (struct gpu_cache_io){mc_load, mc_save, m};
	struct gpu_ctx_opts opts = {.cache = io};
	struct gpu_ctx *ctx;
	struct lq_error err;
	error_clear(&err);
	/* the fill must be a shader (a pipeline to cache): on a CPU device
	 * the host path would run it as a C loop */
	const char *hg = getenv("LATENTQ_GPU_HOST_GEMM");
	char *saved = hg ? strdup(hg) : NULL;
	setenv("LATENTQ_GPU_HOST_GEMM", "0", 1);
	enum lq_status cst = gpu_ctx_create(&opts, &ctx, &err);
	if (saved) {
		setenv("LATENTQ_GPU_HOST_GEMM", saved, 1);
		free(saved);
	} else {
		unsetenv("LATENTQ_GPU_HOST_GEMM");
	}
	if (cst != LQ_OK) {
		error_print(&err, stderr);
		free(io);
		return 0;
	}
	if (scribble)
		memset(io, 0, sizeof(*io));
	struct gpu_buffer *b;
	struct gpu_cmd *cmd;
	CHECK_INT(gpu_buffer_create(ctx, 64, &b, &err), LQ_OK);
	CHECK_INT(gpu_cmd_create(ctx, &cmd, &err), LQ_OK);
	struct gpu_tensor t = gpu_tensor_make(b, 0, GPU_F32, 1,
	    (const int64_t[]){16});
	gpu_cmd_begin(cmd);
	CHECK_INT(ops_fill(cmd, &t, 3.0f), LQ_OK);
	CHECK_INT(gpu_cmd_submit(cmd, &err), LQ_OK);
	float h[16];
	CHECK_INT(gpu_tensor_download_f32(ctx, &t, h, &err), LQ_OK);
	CHECK(h[0] == 3.0f && h[15] == 3.0f);
	gpu_ctx_pipeline_stats(ctx, created, loaded);
	gpu_cmd_free(cmd);
	gpu_buffer_free(b);
	gpu_ctx_free(ctx);
	free(io);
	return 1;
}

static int
cache_session(struct memcache *m, int *loaded, unsigned *created)
{
	return cache_session_io(m, loaded, created, 0);
}

static void
test_pipeline_cache(void)
{
	struct memcache m = {0};
	int loaded;
	unsigned created;
	if (!cache_session(&m, &loaded, &created))
		return;
	CHECK_INT(loaded, 0);		/* nothing stored yet */
	CHECK_INT(created, 1);
	CHECK_INT(m.loads, 1);
	CHECK_INT(m.saves, 1);
	CHECK(m.n >= 32);		/* at least a Vulkan cache header */
	CHECK_INT(strlen(m.fp), 64);
	char fp[80];
	snprintf(fp, sizeof(fp), "%s", m.fp);

	/* round trip: the same fingerprint finds the blob and it is used */
	cache_session(&m, &loaded, &created);
	CHECK_INT(loaded, 1);
	CHECK_STR(m.fp, fp);

	/* a changed fingerprint (other device/driver/SPIR-V/version) finds
	 * nothing: stale data is never offered */
	m.fp[0] = m.fp[0] == '0' ? '1' : '0';
	cache_session(&m, &loaded, &created);
	CHECK_INT(loaded, 0);
	CHECK_STR(m.fp, fp);		/* re-saved under the real one */

	/* a corrupt blob under the right fingerprint is dropped, not fatal */
	memset(m.blob, 0xa5, m.n > 64 ? 64 : m.n);
	cache_session(&m, &loaded, &created);
	CHECK_INT(loaded, -1);
	CHECK_INT(created, 1);

	/* truncated blob */
	m.n = 7;
	cache_session(&m, &loaded, &created);
	CHECK_INT(loaded, -1);

	/* the io struct outlived by the ctx (a stack object in render):
	 * gpu_ctx_free still saves, through the ctx's own copy */
	int saves0 = m.saves;
	m.n = 7;
	cache_session_io(&m, &loaded, &created, 1);
	CHECK_INT(m.saves, saves0 + 1);
	CHECK(m.n >= 32);

	/*
	 * One resolved kernel option flipped misses the cache (issue 20
	 * item 4): LATENTQ_GPU_MAX_BINDING (the binding size tensors split
	 * at) and LATENTQ_NO_TEXEL (the texel-buffer kernels off, where the
	 * device has them) each give another fingerprint; unflipped, the
	 * first one hits again.
	 */
	cache_session(&m, &loaded, &created);
	CHECK_INT(loaded, 1);
	snprintf(fp, sizeof(fp), "%s", m.fp);
	setenv("LATENTQ_GPU_MAX_BINDING", "65536", 1);
	cache_session(&m, &loaded, &created);
	unsetenv("LATENTQ_GPU_MAX_BINDING");
	CHECK_INT(loaded, 0);
	CHECK(strcmp(m.fp, fp) != 0);
	struct gpu_ctx_opts vo = {0};
	struct gpu_ctx *vc = NULL;
	struct lq_error verr;
	error_clear(&verr);
	if (gpu_ctx_create(&vo, &vc, &verr) == LQ_OK) {
		char v0[256], v1[256];
		snprintf(v0, sizeof(v0), "%s", gpu_ctx_variant(vc));
		gpu_ctx_free(vc);
		setenv("LATENTQ_NO_TEXEL", "1", 1);
		CHECK_INT(gpu_ctx_create(&vo, &vc, &verr), LQ_OK);
		snprintf(v1, sizeof(v1), "%s", gpu_ctx_variant(vc));
		gpu_ctx_free(vc);
		unsetenv("LATENTQ_NO_TEXEL");
		CHECK_CONTAINS(v1, "texel=0/0 ");
		/* lavapipe has texel buffers: the variant must change */
		if (strncmp(v0, "texel=0/", 8) != 0)
			CHECK(strcmp(v0, v1) != 0);
		printf("kernel variants: %s; LATENTQ_NO_TEXEL=1: %s\n", v0, v1);
	}
	setenv("LATENTQ_NO_TEXEL", "1", 1);
	cache_session(&m, &loaded, &created);
	unsetenv("LATENTQ_NO_TEXEL");
	CHECK(loaded == 0 || strcmp(m.fp, fp) == 0);

	/* LATENTQ_NO_PIPELINE_CACHE=1: io is neither read nor written */
	int loads = m.loads, saves = m.saves;
	setenv("LATENTQ_NO_PIPELINE_CACHE", "1", 1);
	cache_session(&m, &loaded, &created);
	unsetenv("LATENTQ_NO_PIPELINE_CACHE");
	CHECK_INT(m.loads, loads);
	CHECK_INT(m.saves, saves);
	CHECK_INT(loaded, 0);
	free(m.blob);
}

static void
test_caps_json(const struct device_caps *live)
{
	struct lq_error err;
	error_clear(&err);
	cJSON *j = device_caps_to_json(live);
	struct device_caps back;
	CHECK_INT(device_caps_from_json(j, &back, &err), LQ_OK);
	CHECK_STR(back.name, live->name);
	CHECK_STR(back.uuid, live->uuid);
	CHECK(back.max_storage_buffer_range == live->max_storage_buffer_range);
	CHECK(back.max_memory_allocation_size == live->max_memory_allocation_size);
	CHECK_INT(back.heap_count, live->heap_count);
	CHECK(back.heap_size[0] == live->heap_size[0]);
	CHECK_INT(back.max_workgroup_count[2], live->max_workgroup_count[2]);
	CHECK_INT(back.subgroup_size, live->subgroup_size);
	CHECK_INT(back.fp16, live->fp16);
	cJSON_Delete(j);

	/* file round trip, both forms */
	char path[] = "/tmp/lq-caps-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK_INT(device_caps_save(path, live, &err), LQ_OK);
	memset(&back, 0, sizeof(back));
	CHECK_INT(device_caps_load(path, -1, &back, &err), LQ_OK);
	CHECK_STR(back.name, live->name);
	FILE *fp = fopen(path, "w");
	fputs("{\"devices\": [{\"name\": \"a\"}, {\"name\": \"b\", "
	    "\"max_storage_buffer_range\": 1000, "
	    "\"max_memory_allocation_size\": 5000}]}", fp);
	fclose(fp);
	CHECK_INT(device_caps_load(path, 1, &back, &err), LQ_OK);
	CHECK_STR(back.name, "b");
	/* a tensor is bounded by one buffer, not by one binding */
	CHECK(device_caps_max_binding(&back) == 1000);
	CHECK(device_caps_max_tensor(&back) == 5000);
	CHECK_INT(device_caps_check_tensor(&back, "x", 5000, &err), LQ_OK);
	CHECK_INT(device_caps_check_tensor(&back, "x", 5001, &err), LQ_FAILED);
	error_clear(&err);
	CHECK_INT(device_caps_load(path, 5, &back, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-CAPS");
	fp = fopen(path, "w");
	fputs("{\"name\": 3}", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(device_caps_load(path, -1, &back, &err), LQ_FAILED);
	CHECK_STR(err.field, "name");
	fp = fopen(path, "w");
	fputs("{not json", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(device_caps_load(path, -1, &back, &err), LQ_FAILED);
	CHECK_STR(err.file, path);
	unlink(path);
}

static void
test_device_choice(void)
{
	struct lq_error err;
	error_clear(&err);
	struct device_caps *all;
	int n;
	CHECK_INT(gpu_devices_list(&all, &n, &err), LQ_OK);
	CHECK(n >= 1);
	struct gpu_ctx *ctx;
	/* by name substring (case-insensitive) */
	char want[8];
	snprintf(want, sizeof(want), "%.3s", all[0].name);
	for (char *p = want; *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
	struct gpu_ctx_opts o = {.device = want};
	CHECK_INT(gpu_ctx_create(&o, &ctx, &err), LQ_OK);
	if (ctx) {
		CHECK_STR(gpu_ctx_caps(ctx)->name, all[0].name);
		gpu_ctx_free(ctx);
	}
	o.device = "0";
	CHECK_INT(gpu_ctx_create(&o, &ctx, &err), LQ_OK);
	gpu_ctx_free(ctx);
	/* unknown: fails for the whole worker (LQ_FATAL), names the devices */
	o.device = "no-such-gpu";
	error_clear(&err);
	CHECK_INT(gpu_ctx_create(&o, &ctx, &err), LQ_FATAL);
	CHECK(ctx == NULL);
	CHECK_STR(err.code, "LQ-GPU-NODEV");
	CHECK_CONTAINS(err.hint, all[0].name);
	o.device = "99";
	error_clear(&err);
	CHECK_INT(gpu_ctx_create(&o, &ctx, &err), LQ_FATAL);
	/* LATENTQ_DEVICE is read when opts->device is NULL */
	setenv("LATENTQ_DEVICE", "no-such-gpu", 1);
	error_clear(&err);
	CHECK_INT(gpu_ctx_create(NULL, &ctx, &err), LQ_FATAL);
	unsetenv("LATENTQ_DEVICE");
	free(all);
}

/* issue 16: device slots (LATENTQ_LOGICAL_DEVICES) and --device lists */
static void
test_device_mesh(void)
{
	struct lq_error err;
	error_clear(&err);
	struct device_caps *all = NULL, fake[4];
	int n = 0, slots[8];
	setenv("LATENTQ_LOGICAL_DEVICES", "3", 1);
	CHECK_INT(gpu_logical_devices(), 3);
	CHECK_INT(gpu_devices_list(&all, &n, &err), LQ_OK);
	CHECK(n >= 3 && n % 3 == 0);
	if (n >= 3) {
		CHECK_INT(all[2].index, 2);
		CHECK_INT(all[2].device_count, n);
		CHECK_STR(all[2].uuid, all[0].uuid);
		CHECK(gpu_devices_same_kind(&all[0], &all[2]));
	}
	/* two logical devices of one physical device: two VkDevices, each
	 * with its own memory */
	struct gpu_ctx *a = NULL, *b = NULL;
	struct gpu_buffer *ba = NULL;
	CHECK_INT(gpu_ctx_create(&(struct gpu_ctx_opts){.device = "1"}, &a,
	    &err), LQ_OK);
	CHECK_INT(gpu_ctx_create(&(struct gpu_ctx_opts){.device = "2"}, &b,
	    &err), LQ_OK);
	if (a != NULL && b != NULL) {
		CHECK_INT(gpu_ctx_caps(a)->index, 1);
		CHECK_INT(gpu_ctx_caps(b)->index, 2);
		CHECK_INT(gpu_buffer_create(a, 1 << 20, &ba, &err), LQ_OK);
		uint64_t la = 0, lb = 0;
		gpu_ctx_memory(a, &la, NULL);
		gpu_ctx_memory(b, &lb, NULL);
		CHECK(la >= (1u << 20));
		CHECK(lb < (1u << 20));
		gpu_buffer_free(ba);
	}
	gpu_ctx_free(b);
	gpu_ctx_free(a);
	setenv("LATENTQ_LOGICAL_DEVICES", "0", 1);
	CHECK_INT(gpu_logical_devices(), 1);	/* ignored with a warning */
	unsetenv("LATENTQ_LOGICAL_DEVICES");
	CHECK_INT(gpu_logical_devices(), 1);
	free(all);

	/* gpu_devices_match on a made-up host: cpu, discrete, discrete,
	 * integrated */
	memset(fake, 0, sizeof(fake));
	const char *names[4] = {"llvmpipe", "Radeon A", "Radeon A", "Intel B"};
	const char *types[4] = {"cpu", "discrete", "discrete", "integrated"};
	for (int i = 0; i < 4; i++) {
		fake[i].index = i;
		snprintf(fake[i].name, sizeof(fake[i].name), "%s", names[i]);
		snprintf(fake[i].device_type, sizeof(fake[i].device_type), "%s",
		    types[i]);
	}
	CHECK_INT(gpu_devices_match(fake, 4, NULL, slots, 8, &err), 4);
	CHECK_INT(slots[0], 1);		/* discrete first, then integrated */
	CHECK_INT(slots[1], 2);
	CHECK_INT(slots[2], 3);
	CHECK_INT(slots[3], 0);
	CHECK_INT(gpu_devices_match(fake, 4, "3,0", slots, 8, &err), 2);
	CHECK_INT(slots[0], 3);
	CHECK_INT(slots[1], 0);
	CHECK_INT(gpu_devices_match(fake, 4, "radeon", slots, 8, &err), 2);
	CHECK_INT(slots[0], 1);
	CHECK_INT(slots[1], 2);
	/* a slot named twice counts once; max bounds what is written */
	CHECK_INT(gpu_devices_match(fake, 4, "2,radeon, 0", slots, 1, &err), 3);
	CHECK_INT(slots[0], 2);
	error_clear(&err);
	CHECK_INT(gpu_devices_match(fake, 4, "1,nvidia", slots, 8, &err), -1);
	CHECK_STR(err.code, "LQ-GPU-NODEV");
	CHECK_CONTAINS(err.message, "\"nvidia\" (in \"1,nvidia\")");
	CHECK_CONTAINS(err.hint, "3: Intel B");
	error_clear(&err);
	CHECK_INT(gpu_devices_match(fake, 4, "4", slots, 8, &err), -1);
	/* gpu_devices_select: the named ones of the first's kind */
	int others = -1;
	CHECK_INT(gpu_devices_select(fake, 4, "radeon", slots, 8, &others,
	    &err), 2);
	CHECK_INT(others, 0);
	fake[2].driver_version = 7;
	CHECK(!gpu_devices_same_kind(&fake[1], &fake[2]));
	CHECK_INT(gpu_devices_select(fake, 4, "radeon", slots, 8, &others,
	    &err), 1);
	CHECK_INT(slots[0], 1);
	CHECK_INT(others, 1);
	/* 2 is another driver now, 3 and 0 other devices: 1 alone */
	CHECK_INT(gpu_devices_select(fake, 4, NULL, slots, 8, &others, &err),
	    1);
	CHECK_INT(others, 3);
	fake[3] = fake[1];
	fake[3].index = 3;
	CHECK_INT(gpu_devices_select(fake, 4, "2,3,1", slots, 8, &others,
	    &err), 1);	/* 2 first: only 2 is of 2's kind */
	CHECK_INT(gpu_devices_select(fake, 4, "1,2,3", slots, 1, &others,
	    &err), 2);	/* 1 and 3 (max 1 written), 2 left out */
	CHECK_INT(slots[0], 1);
	CHECK_INT(others, 1);
	error_clear(&err);
	CHECK_INT(gpu_devices_select(fake, 4, "9", slots, 8, &others, &err),
	    -1);
	CHECK_STR(err.code, "LQ-GPU-NODEV");
}

static void
test_buffers_pool(void)
{
	struct lq_error err;
	error_clear(&err);
	struct gpu_ctx *ctx;
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		CHECK(0);
		return;
	}
	struct gpu_buffer *b;
	CHECK_INT(gpu_buffer_create(ctx, 1000, &b, &err), LQ_OK);
	CHECK_INT(gpu_buffer_size(b), 1000);
	unsigned char in[100], out[100];
	for (int i = 0; i < 100; i++)
		in[i] = (unsigned char)(i * 7);
	CHECK_INT(gpu_buffer_upload(ctx, b, 901, in, 99, &err), LQ_OK);
	CHECK_INT(gpu_buffer_download(ctx, b, 901, out, 99, &err), LQ_OK);
	CHECK(memcmp(in, out, 99) == 0);
	error_clear(&err);
	CHECK_INT(gpu_buffer_upload(ctx, b, 950, in, 100, &err), LQ_FAILED);

	/* views: slice of f16 at an odd element offset through ops_copy */
	struct gpu_tensor h = gpu_tensor_make(b, 0, GPU_F16, 1,
	    (const int64_t[]){101});
	float hv[101];
	for (int i = 0; i < 101; i++)
		hv[i] = (float)i - 50.0f;
	CHECK_INT(gpu_tensor_upload_f32(ctx, &h, hv, &err), LQ_OK);
	struct gpu_tensor s = gpu_tensor_slice(&h, 0, 3, 41);
	struct gpu_tensor o = gpu_tensor_make(b, 512, GPU_F32, 1,
	    (const int64_t[]){41});
	struct gpu_cmd *cmd;
	CHECK_INT(gpu_cmd_create(ctx, &cmd, &err), LQ_OK);
	gpu_cmd_begin(cmd);
	CHECK_INT(ops_copy(cmd, &o, &s), LQ_OK);
	CHECK_INT(gpu_cmd_submit(cmd, &err), LQ_OK);
	float ov[41];
	CHECK_INT(gpu_tensor_download_f32(ctx, &o, ov, &err), LQ_OK);
	int ok = 1;
	for (int i = 0; i < 41; i++)
		ok &= ov[i] == hv[i + 3];
	CHECK(ok);
	/* submit without begin is an error, not a crash */
	error_clear(&err);
	CHECK_INT(gpu_cmd_submit(cmd, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-STATE");
	gpu_cmd_free(cmd);

	struct gpu_pool *pool;
	CHECK_INT(gpu_pool_create(ctx, 1 << 20, &pool, &err), LQ_OK);
	struct gpu_tensor t1, t2, t3;
	CHECK_INT(gpu_pool_tensor(pool, GPU_F32, 2, (const int64_t[]){3, 5},
	    &t1, &err), LQ_OK);
	size_t mark = gpu_pool_mark(pool);
	CHECK_INT(gpu_pool_tensor(pool, GPU_F32, 1, (const int64_t[]){1000},
	    &t2, &err), LQ_OK);
	CHECK(t2.offset >= t1.offset + 60);
	CHECK_INT(t2.offset % gpu_ctx_caps(ctx)->min_storage_buffer_offset_alignment, 0);
	gpu_pool_reset(pool, mark);
	CHECK_INT(gpu_pool_tensor(pool, GPU_F32, 1, (const int64_t[]){10},
	    &t3, &err), LQ_OK);
	CHECK_INT(t3.offset, t2.offset);	/* reused */
	CHECK(gpu_pool_peak(pool) >= 4000);
	error_clear(&err);
	CHECK_INT(gpu_pool_tensor(pool, GPU_F32, 1, (const int64_t[]){1 << 20},
	    &t3, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-POOL");
	gpu_pool_free(pool);
	gpu_buffer_free(b);
	gpu_ctx_free(ctx);
}

/* Buffers that are not host-visible: uploads and downloads go through the
 * staging buffer in chunks, and kernels see the data. */
static void
test_staging(void)
{
	struct lq_error err;
	error_clear(&err);
	setenv("LATENTQ_GPU_FORCE_STAGING", "1", 1);
	struct gpu_ctx *ctx;
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		CHECK(0);
		unsetenv("LATENTQ_GPU_FORCE_STAGING");
		return;
	}
	/* larger than the 32 MiB staging buffer: several chunks */
	size_t n = ((size_t)40 << 20) / 4 + 3;
	struct gpu_buffer *b;
	CHECK_INT(gpu_buffer_create(ctx, n * 4, &b, &err), LQ_OK);
	float *h = malloc(n * 4), *g = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		h[i] = (float)(i % 1000) - 500.0f;
	struct gpu_tensor t = gpu_tensor_make(b, 0, GPU_F32, 1,
	    (const int64_t[]){(int64_t)n});
	CHECK_INT(gpu_tensor_upload_f32(ctx, &t, h, &err), LQ_OK);
	struct gpu_cmd *cmd;
	CHECK_INT(gpu_cmd_create(ctx, &cmd, &err), LQ_OK);
	gpu_cmd_begin(cmd);
	CHECK_INT(ops_scale(cmd, &t, &t, 2.0f, 1.0f), LQ_OK);
	CHECK_INT(gpu_cmd_submit(cmd, &err), LQ_OK);
	CHECK_INT(gpu_tensor_download_f32(ctx, &t, g, &err), LQ_OK);
	int ok = 1;
	for (size_t i = 0; i < n; i++)
		ok &= g[i] == h[i] * 2.0f + 1.0f;
	CHECK(ok);
	free(h);
	free(g);
	gpu_cmd_free(cmd);
	gpu_buffer_free(b);
	gpu_ctx_free(ctx);
	unsetenv("LATENTQ_GPU_FORCE_STAGING");
}

/* Device loss and memory exhaustion grade as retryable, naming the call.
 * (VkResult values from the Vulkan ABI.) */
static void
test_vk_status(void)
{
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(gpu_vk_result_status(0, "vkQueueSubmit", &err), LQ_OK);
	CHECK_INT(gpu_vk_result_status(-4, "vkQueueSubmit(3 dispatches)", &err),
	    LQ_RETRY);
	CHECK_STR(err.code, "LQ-GPU-LOST");
	CHECK_CONTAINS(err.message, "vkQueueSubmit(3 dispatches) failed");
	CHECK_CONTAINS(err.message, "VK_ERROR_DEVICE_LOST");
	error_clear(&err);
	CHECK_INT(gpu_vk_result_status(-2, "vkAllocateMemory(1024 bytes)", &err),
	    LQ_RETRY);
	CHECK_STR(err.code, "LQ-GPU-OOM");
	CHECK_CONTAINS(err.message, "VK_ERROR_OUT_OF_DEVICE_MEMORY");
	error_clear(&err);
	CHECK_INT(gpu_vk_result_status(-1, "vkCreateBuffer", &err), LQ_RETRY);
	error_clear(&err);
	CHECK_INT(gpu_vk_result_status(-3, "vkCreateDevice", &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-GPU-VK");
	CHECK_CONTAINS(err.message, "VK_ERROR_INITIALIZATION_FAILED");
}

static void
test_half(void)
{
	CHECK(half_f16_to_f32(half_f32_to_f16(1.0f)) == 1.0f);
	CHECK(half_f32_to_f16(1.0f) == 0x3c00);
	CHECK(half_f32_to_f16(-2.0f) == 0xc000);
	CHECK(half_f32_to_f16(65504.0f) == 0x7bff);
	CHECK(half_f32_to_f16(1e6f) == 0x7c00);
	CHECK(half_f32_to_f16(5.96046448e-8f) == 0x0001);	/* smallest subnormal */
	CHECK(half_f16_to_f32(0x0001) == 5.96046448e-8f);
	CHECK(half_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);	/* tie to even */
	CHECK(half_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);
	CHECK(half_f32_to_bf16(1.0f) == 0x3f80);
	CHECK(half_bf16_to_f32(0x3f80) == 1.0f);
	CHECK(half_f32_to_bf16(1.0f + 1.0f / 256) == 0x3f80);	/* tie to even */
	CHECK(half_f32_to_bf16(1.0f + 3.0f / 256) == 0x3f82);
}

int
main(void)
{
	struct lq_error err;
	error_clear(&err);
	log_set_level(LOG_LEVEL_ERROR);
	struct device_caps *all;
	int n;
	if (gpu_devices_list(&all, &n, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 77;
	}
	test_half();
	test_vk_status();
	test_caps_json(&all[0]);
	test_device_choice();
	test_device_mesh();
	test_buffers_pool();
	test_staging();
	test_pipeline_cache();
	free(all);
	return test_summary();
}
