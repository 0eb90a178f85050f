/*
 * gpu.c — the Vulkan runtime behind gpu.h: instance and device selection,
 * caps, buffers with staging, tensor views, the activation pool, pipelines
 * (lazily created from embedded SPIR-V, with a persisted pipeline cache)
 * and command recording with automatic barriers.  The only file besides
 * ops.c that includes vulkan.h.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <vulkan/vulkan.h>

#include "config.h"
#include "core/digest.h"
#include "core/embed.h"
#include "core/log.h"
#include "core/half.h"
#include "core/util.h"
#include "gpu/internal.h"

struct gpu_pipeline {
	VkShaderModule module;
	VkDescriptorSetLayout dsl;
	VkPipelineLayout layout;
	VkPipeline pipeline;
};

struct gpu_ctx {
	VkInstance instance;
	VkDebugUtilsMessengerEXT messenger;
	VkPhysicalDevice phys;
	VkDevice device;
	VkQueue queue;
	uint32_t queue_family;
	VkCommandPool pool;
	VkPipelineCache cache;
	struct device_caps caps;
	VkPhysicalDeviceMemoryProperties memprops;
	unsigned validation_messages;
	/* The caller's cache io, copied at create: opts (and the io it
	 * points at) may be stack objects gone before gpu_ctx_free saves.
	 * cache_io points at cache_io_copy, or is NULL for no persistence. */
	struct gpu_cache_io cache_io_copy;
	const struct gpu_cache_io *cache_io;
	int cache_loaded;		/* 1 accepted, 0 none, -1 dropped */
	int cache_dirty;
	unsigned pipelines_created;
	char fingerprint[DIGEST_HEX_SIZE];
	struct gpu_pipeline pipes[GPU_K_COUNT];
	struct gpu_buffer *dummy;
	struct gpu_buffer *staging;	/* for non-host-visible buffers */
	struct gpu_cmd *xfer;		/* transfer command for staging */
	int tex_ok[GPU_TEX_COUNT];	/* format usable as uniform texel buffer */
	uint64_t max_texels;		/* maxTexelBufferElements */
	uint64_t min_texel_align;	/* minTexelBufferOffsetAlignment */
	/* device memory of buffers other than staging (vkAllocateMemory
	 * sizes): now, and the high-water mark (gpu_ctx_memory) */
	uint64_t mem_live, mem_peak;
};

struct gpu_buffer {
	struct gpu_ctx *ctx;
	VkBuffer buffer;
	VkDeviceMemory memory;
	size_t size;		/* as asked */
	size_t alloc;		/* rounded */
	uint64_t counted;	/* bytes in ctx->mem_live (0 for staging) */
	void *mapped;		/* non-NULL when host-visible + coherent */
};

struct gpu_pool_chunk {
	struct gpu_buffer *buf;
	size_t base;		/* pool-global offset of this chunk */
};

struct gpu_pool {
	struct gpu_ctx *ctx;
	struct gpu_pool_chunk *chunks;
	int nchunks;
	size_t capacity, fill, peak;
};

struct gpu_range {
	VkBuffer buffer;
	VkDeviceSize lo, hi;
};

struct gpu_cmd {
	struct gpu_ctx *ctx;
	VkCommandBuffer cb;
	VkFence fence;
	VkDescriptorPool *dpools;
	int ndpools, dpool_cur;
	int recording;
	struct lq_error error;		/* sticky */
	unsigned dispatches;
	struct gpu_range *reads, *writes;
	int nreads, nwrites, capreads, capwrites;
	VkBufferView *views;		/* destroyed at the next begin */
	int nviews, capviews;
	struct gpu_buffer *scratch;	/* split state (gpu_cmd_scratch) */
	struct gpu_buffer **retired;	/* outgrown scratch, freed at begin */
	int nretired;
	int pending;			/* submitted, not yet waited for */
};

static const VkFormat texfmt_vk[GPU_TEX_COUNT] = {
	[GPU_TEX_RGBA32F] = VK_FORMAT_R32G32B32A32_SFLOAT,
	[GPU_TEX_RGBA16F] = VK_FORMAT_R16G16B16A16_SFLOAT,
	[GPU_TEX_RG32UI] = VK_FORMAT_R32G32_UINT,
	[GPU_TEX_R32F] = VK_FORMAT_R32_SFLOAT,
	[GPU_TEX_R16F] = VK_FORMAT_R16_SFLOAT,
	[GPU_TEX_R16UI] = VK_FORMAT_R16_UINT,
};
static const uint32_t texfmt_size[GPU_TEX_COUNT] = {
	[GPU_TEX_RGBA32F] = 16, [GPU_TEX_RGBA16F] = 8, [GPU_TEX_RG32UI] = 8,
	[GPU_TEX_R32F] = 4, [GPU_TEX_R16F] = 2, [GPU_TEX_R16UI] = 2,
};

static const struct embed_file *
spirv_find(const char *name)
{
	return embed_find(gpu_spirv, name);
}

/* ---- errors ---- */

static const char *
vk_result_name(VkResult r)
{
	switch (r) {
#define R(x) case x: return #x;
	R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE)
	R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
	R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST)
	R(VK_ERROR_MEMORY_MAP_FAILED) R(VK_ERROR_LAYER_NOT_PRESENT)
	R(VK_ERROR_EXTENSION_NOT_PRESENT) R(VK_ERROR_FEATURE_NOT_PRESENT)
	R(VK_ERROR_INCOMPATIBLE_DRIVER) R(VK_ERROR_TOO_MANY_OBJECTS)
	R(VK_ERROR_FORMAT_NOT_SUPPORTED) R(VK_ERROR_FRAGMENTED_POOL)
	R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_INVALID_SHADER_NV)
	R(VK_ERROR_UNKNOWN)
#undef R
	default: return "VkResult(?)";
	}
}

/* Maps a failed VkResult onto a graded error naming the call. */
static enum lq_status
vk_fail(struct lq_error *err, VkResult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum lq_status
vk_fail(struct lq_error *err, VkResult r, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	enum lq_status st = LQ_FAILED;
	const char *code = "LQ-GPU-VK";
	if (r == VK_ERROR_DEVICE_LOST) {
		st = LQ_RETRY;
		code = "LQ-GPU-LOST";
	} else if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
	    r == VK_ERROR_OUT_OF_HOST_MEMORY ||
	    r == VK_ERROR_OUT_OF_POOL_MEMORY) {
		st = LQ_RETRY;
		code = "LQ-GPU-OOM";
	}
	error_set(err, st, code, "%s failed: %s (%d)", what, vk_result_name(r),
	    (int)r);
	if (st == LQ_RETRY && r == VK_ERROR_DEVICE_LOST)
		error_set_hint(err, "the device was lost; the job can be retried");
	return st;
}

enum lq_status
gpu_vk_result_status(int vkresult, const char *what, struct lq_error *err)
{
	if (vkresult == VK_SUCCESS)
		return LQ_OK;
	return vk_fail(err, (VkResult)vkresult, "%s", what);
}

enum lq_status
gpu_cmd_fail(struct gpu_cmd *cmd, enum lq_status st, const char *code,
    const char *fmt, ...)
{
	if (cmd->error.status != LQ_OK)
		return cmd->error.status;
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_set(&cmd->error, st, code, "%s", msg);
	return st;
}

/* ---- small helpers ---- */

size_t
gpu_dtype_size(enum gpu_dtype dtype)
{
	return dtype == GPU_F32 ? 4 : 2;
}

const char *
gpu_dtype_name(enum gpu_dtype dtype)
{
	switch (dtype) {
	case GPU_F32: return "f32";
	case GPU_F16: return "f16";
	case GPU_BF16: return "bf16";
	}
	return "?";
}

uint16_t
gpu_f32_to_f16(float f)
{
	return half_f32_to_f16(f);
}

float
gpu_f16_to_f32(uint16_t h)
{
	return half_f16_to_f32(h);
}

uint16_t
gpu_f32_to_bf16(float f)
{
	return half_f32_to_bf16(f);
}

float
gpu_bf16_to_f32(uint16_t h)
{
	return half_bf16_to_f32(h);
}

/* ---- devices and caps ---- */

static void
caps_fill(VkPhysicalDevice pd, int index, int count, struct device_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->index = index;
	c->device_count = count;

	VkPhysicalDeviceDriverProperties drv = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES };
	VkPhysicalDeviceSubgroupProperties sub = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
		.pNext = &drv };
	VkPhysicalDeviceProperties2 p2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &sub };
	vkGetPhysicalDeviceProperties2(pd, &p2);
	const VkPhysicalDeviceProperties *p = &p2.properties;
	snprintf(c->name, sizeof(c->name), "%s", p->deviceName);
	c->vendor_id = p->vendorID;
	c->device_id = p->deviceID;
	const char *types[] = {"other", "integrated", "discrete", "virtual",
	    "cpu"};
	snprintf(c->device_type, sizeof(c->device_type), "%s",
	    (int)p->deviceType <= (int)VK_PHYSICAL_DEVICE_TYPE_CPU ?
	    types[p->deviceType] : "other");
	snprintf(c->api_version, sizeof(c->api_version), "%u.%u.%u",
	    VK_API_VERSION_MAJOR(p->apiVersion),
	    VK_API_VERSION_MINOR(p->apiVersion),
	    VK_API_VERSION_PATCH(p->apiVersion));
	snprintf(c->driver_name, sizeof(c->driver_name), "%.63s", drv.driverName);
	snprintf(c->driver_info, sizeof(c->driver_info), "%.127s", drv.driverInfo);
	c->driver_version = p->driverVersion;
	/* deviceUUID lives in VkPhysicalDeviceIDProperties */
	VkPhysicalDeviceIDProperties idp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES };
	VkPhysicalDeviceProperties2 p3 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &idp };
	vkGetPhysicalDeviceProperties2(pd, &p3);
	for (int i = 0; i < (int)VK_UUID_SIZE; i++)
		snprintf(c->uuid + 2 * i, 3, "%02x", idp.deviceUUID[i]);

	VkPhysicalDeviceMemoryProperties mp;
	vkGetPhysicalDeviceMemoryProperties(pd, &mp);
	for (uint32_t i = 0; i < mp.memoryHeapCount &&
	    i < DEVICE_CAPS_MAX_HEAPS; i++) {
		c->heap_size[i] = mp.memoryHeaps[i].size;
		c->heap_device_local[i] = (mp.memoryHeaps[i].flags &
		    VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
		c->heap_count++;
	}
	/* LATENTQ_GPU_HEAP_LIMIT=BYTES (tests): plan as if no heap held more,
	 * so memory decisions (vae_tiling: auto) can be tested on any device */
	const char *hl = getenv("LATENTQ_GPU_HEAP_LIMIT");
	if (hl != NULL && *hl != '\0') {
		char *end;
		unsigned long long lim = strtoull(hl, &end, 10);
		if (*end == '\0' && lim > 0)
			for (int i = 0; i < c->heap_count; i++)
				if (c->heap_size[i] > lim)
					c->heap_size[i] = lim;
	}
	const VkPhysicalDeviceLimits *l = &p->limits;
	c->max_storage_buffer_range = l->maxStorageBufferRange;
	c->min_storage_buffer_offset_alignment =
	    l->minStorageBufferOffsetAlignment;
	c->max_compute_shared_memory_size = l->maxComputeSharedMemorySize;
	for (int i = 0; i < 3; i++) {
		c->max_workgroup_size[i] = l->maxComputeWorkGroupSize[i];
		c->max_workgroup_count[i] = l->maxComputeWorkGroupCount[i];
	}
	c->max_workgroup_invocations = l->maxComputeWorkGroupInvocations;
	c->max_push_constants_size = l->maxPushConstantsSize;
	c->subgroup_size = sub.subgroupSize;

	VkPhysicalDeviceMaintenance3Properties m3 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES };
	VkPhysicalDeviceProperties2 p4 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &m3 };
	vkGetPhysicalDeviceProperties2(pd, &p4);
	c->max_memory_allocation_size = m3.maxMemoryAllocationSize;
	/* LATENTQ_GPU_MAX_BINDING=BYTES (tests) lowers maxStorageBufferRange,
	 * so the split paths of the ops run on small tensors. */
	const char *mb = getenv("LATENTQ_GPU_MAX_BINDING");
	if (mb != NULL && *mb != '\0') {
		char *end;
		unsigned long long v = strtoull(mb, &end, 10);
		if (*end != '\0' || v < 256)
			log_warn("LATENTQ_GPU_MAX_BINDING=%s ignored: not a "
			    "number of bytes >= 256", mb);
		else if (v < c->max_storage_buffer_range)
			c->max_storage_buffer_range = v / 16 * 16;
	}

	VkPhysicalDeviceVulkan12Features f12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
	VkPhysicalDeviceVulkan11Features f11 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
		.pNext = &f12 };
	VkPhysicalDeviceFeatures2 f2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = p->apiVersion >= VK_API_VERSION_1_2 ? &f11 : NULL };
	vkGetPhysicalDeviceFeatures2(pd, &f2);
	c->fp16 = f12.shaderFloat16;
	c->int8 = f12.shaderInt8;
	c->storage_16bit = f11.storageBuffer16BitAccess;
	c->bf16 = 0;
	uint32_t next = 0;
	if (vkEnumerateDeviceExtensionProperties(pd, NULL, &next, NULL) ==
	    VK_SUCCESS && next > 0) {
		VkExtensionProperties *ext = xcalloc(next, sizeof(*ext));
		if (vkEnumerateDeviceExtensionProperties(pd, NULL, &next, ext) ==
		    VK_SUCCESS)
			for (uint32_t i = 0; i < next; i++)
				if (strcmp(ext[i].extensionName,
				    "VK_KHR_shader_bfloat16") == 0)
					c->bf16 = 1;
		free(ext);
	}
}

static enum lq_status
instance_create(int validate, VkInstance *out, struct lq_error *err)
{
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "latentq",
		.applicationVersion = 1,
		.pEngineName = "latentq",
		.apiVersion = VK_API_VERSION_1_2,
	};
	const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
	const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
	VkInstanceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	if (validate) {
		ci.enabledLayerCount = 1;
		ci.ppEnabledLayerNames = layers;
		ci.enabledExtensionCount = 1;
		ci.ppEnabledExtensionNames = exts;
	}
	VkResult r = vkCreateInstance(&ci, NULL, out);
	if (r != VK_SUCCESS) {
		vk_fail(err, r, "vkCreateInstance(apiVersion 1.2%s)",
		    validate ? ", layer VK_LAYER_KHRONOS_validation" : "");
		if (validate && r == VK_ERROR_LAYER_NOT_PRESENT)
			error_set_hint(err, "install vulkan-validationlayers "
			    "or unset LATENTQ_VALIDATE");
		else
			error_set_hint(err, "is a Vulkan 1.2 driver installed? "
			    "(on Debian: mesa-vulkan-drivers)");
		if (err != NULL && err->status == LQ_FAILED)
			snprintf(err->code, sizeof(err->code), "LQ-GPU-NODEV");
		return LQ_FAILED;
	}
	return LQ_OK;
}

static enum lq_status
phys_list(VkInstance inst, VkPhysicalDevice **out, uint32_t *n,
    struct lq_error *err)
{
	VkResult r = vkEnumeratePhysicalDevices(inst, n, NULL);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkEnumeratePhysicalDevices");
	if (*n == 0) {
		/* a worker-level failure: no job can render here */
		error_set(err, LQ_FATAL, "LQ-GPU-NODEV",
		    "no Vulkan device found");
		error_set_hint(err, "install a Vulkan driver (on Debian: "
		    "mesa-vulkan-drivers for lavapipe)");
		return LQ_FAILED;
	}
	*out = xcalloc(*n, sizeof(**out));
	r = vkEnumeratePhysicalDevices(inst, n, *out);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		free(*out);
		return vk_fail(err, r, "vkEnumeratePhysicalDevices");
	}
	return LQ_OK;
}

enum lq_status
gpu_devices_list(struct device_caps **out, int *n, struct lq_error *err)
{
	VkInstance inst;
	*out = NULL;
	*n = 0;
	if (instance_create(0, &inst, err) != LQ_OK)
		return LQ_FAILED;
	VkPhysicalDevice *pds;
	uint32_t np;
	enum lq_status st = phys_list(inst, &pds, &np, err);
	if (st == LQ_OK) {
		*out = xcalloc(np, sizeof(**out));
		for (uint32_t i = 0; i < np; i++)
			caps_fill(pds[i], (int)i, (int)np, &(*out)[i]);
		*n = (int)np;
		free(pds);
	}
	vkDestroyInstance(inst, NULL);
	return st;
}

static int
env_flag(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL
debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
    VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *ud)
{
	(void)type;
	struct gpu_ctx *ctx = ud;
	if (sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
	    VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
		ctx->validation_messages++;
		log_warn("vulkan validation: %s", data->pMessage);
	}
	return VK_FALSE;
}

/* Picks by opts/env: index, name substring, or discrete > integrated > first. */
static enum lq_status
device_choose(struct device_caps *caps, int n, const char *want, int *idx,
    struct lq_error *err)
{
	if (want != NULL && *want != '\0') {
		char *end;
		long v = strtol(want, &end, 10);
		if (*end == '\0') {
			if (v >= 0 && v < n) {
				*idx = (int)v;
				return LQ_OK;
			}
		} else {
			for (int i = 0; i < n; i++) {
				if (strcasestr(caps[i].name, want) != NULL) {
					*idx = i;
					return LQ_OK;
				}
			}
		}
		struct strbuf sb = {0};
		for (int i = 0; i < n; i++)
			strbuf_printf(&sb, "%s%d: %s", i ? ", " : "", i,
			    caps[i].name);
		char *list = strbuf_release(&sb);
		error_set(err, LQ_FATAL, "LQ-GPU-NODEV",
		    "no Vulkan device matches \"%s\"", want);
		error_set_field(err, "device");
		error_set_hint(err, "available: %s", list);
		free(list);
		return LQ_FATAL;
	}
	int best = 0, rank = 99;
	for (int i = 0; i < n; i++) {
		int r = strcmp(caps[i].device_type, "discrete") == 0 ? 0 :
		    strcmp(caps[i].device_type, "integrated") == 0 ? 1 : 2;
		if (r < rank) {
			rank = r;
			best = i;
		}
	}
	*idx = best;
	return LQ_OK;
}

static void
fingerprint_make(struct gpu_ctx *ctx)
{
	struct digest_state st;
	char spv[DIGEST_HEX_SIZE];
	digest_init();
	digest_begin(&st);
	for (const struct embed_file *f = gpu_spirv; f->name != NULL; f++) {
		digest_update(&st, f->name, strlen(f->name) + 1);
		digest_update(&st, f->data, f->size);
	}
	digest_end(&st, spv);
	char *s = xasprintf("uuid=%s driver=%u spirv=%s latentq=%s",
	    ctx->caps.uuid, ctx->caps.driver_version, spv, PACKAGE_VERSION);
	digest_hex(s, strlen(s), ctx->fingerprint);
	free(s);
}

/* Loads the pipeline cache through cache io; never fails the ctx. */
static enum lq_status
cache_create(struct gpu_ctx *ctx, struct lq_error *err)
{
	void *blob = NULL;
	size_t n = 0;
	ctx->cache_loaded = 0;
	if (ctx->cache_io != NULL && ctx->cache_io->load != NULL) {
		enum lq_status st = ctx->cache_io->load(ctx->cache_io->ud,
		    ctx->fingerprint, &blob, &n);
		if (st != LQ_OK) {
			log_warn("pipeline cache: load failed; not using it");
			blob = NULL;
			n = 0;
			ctx->cache_io = NULL;
		}
	}
	if (blob != NULL) {
		/* VkPipelineCacheHeaderVersionOne: check before handing the
		 * driver data it might mis-parse. */
		VkPhysicalDeviceProperties p;
		vkGetPhysicalDeviceProperties(ctx->phys, &p);
		const unsigned char *b = blob;
		uint32_t hs = 0, ver = 0, vendor = 0, dev = 0;
		if (n >= 16 + VK_UUID_SIZE) {
			memcpy(&hs, b, 4);
			memcpy(&ver, b + 4, 4);
			memcpy(&vendor, b + 8, 4);
			memcpy(&dev, b + 12, 4);
		}
		if (n < 16 + VK_UUID_SIZE || hs < 16 + VK_UUID_SIZE ||
		    hs > n || ver != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
		    vendor != p.vendorID || dev != p.deviceID ||
		    memcmp(b + 16, p.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
			log_warn("pipeline cache: stored blob (%zu bytes) does "
			    "not match this device; dropped", n);
			free(blob);
			blob = NULL;
			n = 0;
			ctx->cache_loaded = -1;
		}
	}
	VkPipelineCacheCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
		.initialDataSize = n,
		.pInitialData = blob,
	};
	VkResult r = vkCreatePipelineCache(ctx->device, &ci, NULL, &ctx->cache);
	if (r != VK_SUCCESS && blob != NULL) {
		log_warn("pipeline cache: driver rejected stored blob (%s); "
		    "dropped", vk_result_name(r));
		ctx->cache_loaded = -1;
		ci.initialDataSize = 0;
		ci.pInitialData = NULL;
		r = vkCreatePipelineCache(ctx->device, &ci, NULL, &ctx->cache);
	} else if (blob != NULL) {
		ctx->cache_loaded = 1;
	}
	free(blob);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkCreatePipelineCache(%zu bytes)", n);
	return LQ_OK;
}

enum lq_status
gpu_ctx_save_cache(struct gpu_ctx *ctx, struct lq_error *err)
{
	if (ctx->cache_io == NULL || ctx->cache_io->save == NULL ||
	    !ctx->cache_dirty || ctx->cache == VK_NULL_HANDLE)
		return LQ_OK;
	size_t n = 0;
	VkResult r = vkGetPipelineCacheData(ctx->device, ctx->cache, &n, NULL);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkGetPipelineCacheData(size)");
	void *blob = xmalloc(n ? n : 1);
	r = vkGetPipelineCacheData(ctx->device, ctx->cache, &n, blob);
	if (r != VK_SUCCESS) {
		free(blob);
		return vk_fail(err, r, "vkGetPipelineCacheData(%zu bytes)", n);
	}
	enum lq_status st = ctx->cache_io->save(ctx->cache_io->ud,
	    ctx->fingerprint, blob, n);
	free(blob);
	if (st != LQ_OK) {
		error_set(err, st, "LQ-GPU-CACHE",
		    "saving the pipeline cache (%zu bytes) failed", n);
		return st;
	}
	ctx->cache_dirty = 0;
	return LQ_OK;
}

static void buffer_destroy(struct gpu_buffer *b);
static enum lq_status buffer_create(struct gpu_ctx *ctx, size_t bytes,
    int staging, struct gpu_buffer **out, struct lq_error *err);

enum lq_status
gpu_ctx_create(const struct gpu_ctx_opts *opts, struct gpu_ctx **out,
    struct lq_error *err)
{
	struct gpu_ctx_opts def = {0};
	if (opts == NULL)
		opts = &def;
	*out = NULL;
	int validate = opts->validate > 0 ||
	    (opts->validate == 0 && env_flag("LATENTQ_VALIDATE"));
	const char *want = opts->device ? opts->device : getenv("LATENTQ_DEVICE");

	struct gpu_ctx *ctx = xcalloc(1, sizeof(*ctx));
	enum lq_status st = instance_create(validate, &ctx->instance, err);
	if (st != LQ_OK) {
		free(ctx);
		return st;
	}
	VkResult r;
	if (validate) {
		PFN_vkCreateDebugUtilsMessengerEXT fn =
		    (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
		    ctx->instance, "vkCreateDebugUtilsMessengerEXT");
		VkDebugUtilsMessengerCreateInfoEXT mi = {
			.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
			.messageSeverity =
			    VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
			    VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
			.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
			    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
			.pfnUserCallback = debug_cb,
			.pUserData = ctx,
		};
		if (fn == NULL) {
			error_set(err, LQ_FAILED, "LQ-GPU-VK",
			    "vkGetInstanceProcAddr(vkCreateDebugUtilsMessengerEXT) "
			    "returned NULL");
			goto fail;
		}
		r = fn(ctx->instance, &mi, NULL, &ctx->messenger);
		if (r != VK_SUCCESS) {
			vk_fail(err, r, "vkCreateDebugUtilsMessengerEXT");
			goto fail;
		}
	}
	VkPhysicalDevice *pds;
	uint32_t np;
	if (phys_list(ctx->instance, &pds, &np, err) != LQ_OK)
		goto fail;
	struct device_caps *all = xcalloc(np, sizeof(*all));
	for (uint32_t i = 0; i < np; i++)
		caps_fill(pds[i], (int)i, (int)np, &all[i]);
	int idx;
	st = device_choose(all, (int)np, want, &idx, err);
	if (st == LQ_OK) {
		ctx->phys = pds[idx];
		ctx->caps = all[idx];
	}
	free(all);
	free(pds);
	if (st != LQ_OK)
		goto fail;

	/* What the kernels need, checked once. */
	const struct device_caps *c = &ctx->caps;
	if (c->max_push_constants_size < 128 ||
	    c->max_workgroup_invocations < 128 ||
	    c->max_workgroup_size[0] < 128 ||
	    c->max_compute_shared_memory_size < 16384) {
		error_set(err, LQ_FAILED, "LQ-GPU-CAPS",
		    "device \"%s\" is below Vulkan's compute minimums "
		    "(push constants %u, workgroup %u, shared %u)", c->name,
		    c->max_push_constants_size, c->max_workgroup_invocations,
		    c->max_compute_shared_memory_size);
		goto fail;
	}
	vkGetPhysicalDeviceMemoryProperties(ctx->phys, &ctx->memprops);
	{
		VkPhysicalDeviceProperties pp;
		vkGetPhysicalDeviceProperties(ctx->phys, &pp);
		ctx->max_texels = pp.limits.maxTexelBufferElements;
		ctx->min_texel_align = pp.limits.minTexelBufferOffsetAlignment;
		for (int f = 1; f < GPU_TEX_COUNT; f++) {
			VkFormatProperties fp;
			vkGetPhysicalDeviceFormatProperties(ctx->phys,
			    texfmt_vk[f], &fp);
			ctx->tex_ok[f] = (fp.bufferFeatures &
			    VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
		}
	}

	uint32_t nq = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(ctx->phys, &nq, NULL);
	VkQueueFamilyProperties *qf = xcalloc(nq ? nq : 1, sizeof(*qf));
	vkGetPhysicalDeviceQueueFamilyProperties(ctx->phys, &nq, qf);
	int fam = -1;
	for (uint32_t i = 0; i < nq && fam < 0; i++)	/* prefer compute-only */
		if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
		    !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
			fam = (int)i;
	for (uint32_t i = 0; i < nq && fam < 0; i++)
		if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
			fam = (int)i;
	free(qf);
	if (fam < 0) {
		error_set(err, LQ_FAILED, "LQ-GPU-NODEV",
		    "device \"%s\" has no compute queue", c->name);
		goto fail;
	}
	ctx->queue_family = (uint32_t)fam;
	float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = ctx->queue_family,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
	};
	r = vkCreateDevice(ctx->phys, &dci, NULL, &ctx->device);
	if (r != VK_SUCCESS) {
		vk_fail(err, r, "vkCreateDevice(\"%s\", queue family %u)",
		    c->name, ctx->queue_family);
		goto fail;
	}
	vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
	VkCommandPoolCreateInfo pci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = ctx->queue_family,
	};
	r = vkCreateCommandPool(ctx->device, &pci, NULL, &ctx->pool);
	if (r != VK_SUCCESS) {
		vk_fail(err, r, "vkCreateCommandPool(queue family %u)",
		    ctx->queue_family);
		goto fail;
	}
	fingerprint_make(ctx);
	if (opts->cache != NULL && !env_flag("LATENTQ_NO_PIPELINE_CACHE")) {
		ctx->cache_io_copy = *opts->cache;
		ctx->cache_io = &ctx->cache_io_copy;
	}
	if (cache_create(ctx, err) != LQ_OK)
		goto fail;
	if (buffer_create(ctx, 16, 0, &ctx->dummy, err) != LQ_OK)
		goto fail;
	log_debug("gpu: device %d \"%s\" (%s, driver %s %s)", c->index,
	    c->name, c->device_type, c->driver_name, c->driver_info);
	*out = ctx;
	return LQ_OK;
fail:
	st = err != NULL && err->status != LQ_OK ? err->status : LQ_FAILED;
	gpu_ctx_free(ctx);
	return st;
}

void
gpu_ctx_free(struct gpu_ctx *ctx)
{
	if (ctx == NULL)
		return;
	if (ctx->device != VK_NULL_HANDLE) {
		vkDeviceWaitIdle(ctx->device);
		struct lq_error err;
		error_clear(&err);
		if (gpu_ctx_save_cache(ctx, &err) != LQ_OK)
			log_warn("pipeline cache not saved: %s", err.message);
		if (ctx->xfer != NULL)
			gpu_cmd_free(ctx->xfer);
		buffer_destroy(ctx->staging);
		buffer_destroy(ctx->dummy);
		for (int k = 0; k < GPU_K_COUNT; k++) {
			struct gpu_pipeline *p = &ctx->pipes[k];
			vkDestroyPipeline(ctx->device, p->pipeline, NULL);
			vkDestroyPipelineLayout(ctx->device, p->layout, NULL);
			vkDestroyDescriptorSetLayout(ctx->device, p->dsl, NULL);
			vkDestroyShaderModule(ctx->device, p->module, NULL);
		}
		vkDestroyPipelineCache(ctx->device, ctx->cache, NULL);
		vkDestroyCommandPool(ctx->device, ctx->pool, NULL);
		vkDestroyDevice(ctx->device, NULL);
	}
	if (ctx->messenger != VK_NULL_HANDLE) {
		PFN_vkDestroyDebugUtilsMessengerEXT fn =
		    (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
		    ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
		if (fn != NULL)
			fn(ctx->instance, ctx->messenger, NULL);
	}
	if (ctx->instance != VK_NULL_HANDLE)
		vkDestroyInstance(ctx->instance, NULL);
	free(ctx);
}

const struct device_caps *
gpu_ctx_caps(const struct gpu_ctx *ctx)
{
	return &ctx->caps;
}

unsigned
gpu_ctx_validation_messages(const struct gpu_ctx *ctx)
{
	return ctx->validation_messages;
}

const char *
gpu_ctx_cache_fingerprint(const struct gpu_ctx *ctx)
{
	return ctx->fingerprint;
}

void
gpu_ctx_pipeline_stats(const struct gpu_ctx *ctx, unsigned *created,
    int *cache_loaded)
{
	if (created)
		*created = ctx->pipelines_created;
	if (cache_loaded)
		*cache_loaded = ctx->cache_loaded;
}

/* ---- pipelines ---- */

static const struct {
	const char *spv;
	int nbind;
	uint32_t push;
	unsigned texmask;
} kernel_info[GPU_K_COUNT] = {
#define X(id, name, src, defs, nb, push, tex) \
	[GPU_K_##id] = {name ".spv", nb, sizeof(push), tex},
	GPU_KERNELS(X)
#undef X
};

static enum lq_status
pipeline_get(struct gpu_ctx *ctx, enum gpu_kernel k, struct gpu_pipeline **out,
    struct lq_error *err)
{
	struct gpu_pipeline *p = &ctx->pipes[k];
	*out = p;
	if (p->pipeline != VK_NULL_HANDLE)
		return LQ_OK;
	const char *name = kernel_info[k].spv;
	const struct embed_file *f = spirv_find(name);
	LQ_ASSERT(f != NULL);
	VkResult r;
	if (p->module == VK_NULL_HANDLE) {
		VkShaderModuleCreateInfo mci = {
			.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
			.codeSize = f->size,
			.pCode = (const uint32_t *)(const void *)f->data,
		};
		r = vkCreateShaderModule(ctx->device, &mci, NULL, &p->module);
		if (r != VK_SUCCESS)
			return vk_fail(err, r, "vkCreateShaderModule(%s)", name);
	}
	if (p->dsl == VK_NULL_HANDLE) {
		VkDescriptorSetLayoutBinding b[GPU_MAX_BINDINGS];
		for (int i = 0; i < kernel_info[k].nbind; i++)
			b[i] = (VkDescriptorSetLayoutBinding){
				.binding = (uint32_t)i,
				.descriptorType = (kernel_info[k].texmask >> i) & 1 ?
				    VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER :
				    VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
				.descriptorCount = 1,
				.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
			};
		VkDescriptorSetLayoutCreateInfo lci = {
			.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
			.bindingCount = (uint32_t)kernel_info[k].nbind,
			.pBindings = b,
		};
		r = vkCreateDescriptorSetLayout(ctx->device, &lci, NULL, &p->dsl);
		if (r != VK_SUCCESS)
			return vk_fail(err, r, "vkCreateDescriptorSetLayout(%s)",
			    name);
	}
	if (p->layout == VK_NULL_HANDLE) {
		VkPushConstantRange pr = {
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
			.size = kernel_info[k].push,
		};
		VkPipelineLayoutCreateInfo plci = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
			.setLayoutCount = 1,
			.pSetLayouts = &p->dsl,
			.pushConstantRangeCount = 1,
			.pPushConstantRanges = &pr,
		};
		r = vkCreatePipelineLayout(ctx->device, &plci, NULL, &p->layout);
		if (r != VK_SUCCESS)
			return vk_fail(err, r, "vkCreatePipelineLayout(%s)", name);
	}
	VkComputePipelineCreateInfo cci = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			.stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.module = p->module,
			.pName = "main",
		},
		.layout = p->layout,
	};
	r = vkCreateComputePipelines(ctx->device, ctx->cache, 1, &cci, NULL,
	    &p->pipeline);
	if (r != VK_SUCCESS) {
		p->pipeline = VK_NULL_HANDLE;
		return vk_fail(err, r, "vkCreateComputePipelines(%s)", name);
	}
	ctx->pipelines_created++;
	ctx->cache_dirty = 1;
	return LQ_OK;
}

enum lq_status
gpu_ctx_warmup(struct gpu_ctx *ctx, struct lq_error *err)
{
	for (int k = 0; k < GPU_K_COUNT; k++) {
		struct gpu_pipeline *p;
		enum lq_status st = pipeline_get(ctx, (enum gpu_kernel)k, &p, err);
		if (st != LQ_OK)
			return st;
	}
	return gpu_ctx_save_cache(ctx, err);
}

/* ---- buffers ---- */

static int
memtype_find(const struct gpu_ctx *ctx, uint32_t bits, VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < ctx->memprops.memoryTypeCount; i++)
		if ((bits & (1u << i)) &&
		    (ctx->memprops.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	return -1;
}

static void
buffer_destroy(struct gpu_buffer *b)
{
	if (b == NULL)
		return;
	VkDevice dev = b->ctx->device;
	b->ctx->mem_live -= b->counted;
	if (b->mapped != NULL)
		vkUnmapMemory(dev, b->memory);
	vkDestroyBuffer(dev, b->buffer, NULL);
	vkFreeMemory(dev, b->memory, NULL);
	free(b);
}

static enum lq_status
buffer_create(struct gpu_ctx *ctx, size_t bytes, int staging,
    struct gpu_buffer **out, struct lq_error *err)
{
	*out = NULL;
	LQ_ASSERT(bytes > 0);
	size_t alloc = (size_t)gpu_buffer_plan_size(bytes);
	if (ctx->caps.max_memory_allocation_size != 0 &&
	    alloc > ctx->caps.max_memory_allocation_size) {
		error_set(err, LQ_FAILED, "LQ-GPU-RANGE",
		    "buffer of %zu bytes exceeds the device's "
		    "maxMemoryAllocationSize %" PRIu64, bytes,
		    ctx->caps.max_memory_allocation_size);
		return LQ_FAILED;
	}
	struct gpu_buffer *b = xcalloc(1, sizeof(*b));
	b->ctx = ctx;
	b->size = bytes;
	b->alloc = alloc;
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = alloc,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
		    VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
		    VK_BUFFER_USAGE_TRANSFER_DST_BIT |
		    VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkResult r = vkCreateBuffer(ctx->device, &bci, NULL, &b->buffer);
	if (r != VK_SUCCESS) {
		free(b);
		return vk_fail(err, r, "vkCreateBuffer(%zu bytes)", alloc);
	}
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(ctx->device, b->buffer, &req);
	const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
	    VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	/* Order of preference: host-visible device-local (UMA, CPU devices,
	 * resizable BAR), then device-local, then anything host-visible. */
	int cand[3], nc = 0;
	if (staging) {
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, hv);
	} else {
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, hv | dl);
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, dl);
		cand[nc++] = memtype_find(ctx, req.memoryTypeBits, hv);
	}
	r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
	int mt = -1;
	for (int i = 0; i < nc && r != VK_SUCCESS; i++) {
		if (cand[i] < 0)
			continue;
		VkMemoryAllocateInfo ai = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
			.allocationSize = req.size,
			.memoryTypeIndex = (uint32_t)cand[i],
		};
		r = vkAllocateMemory(ctx->device, &ai, NULL, &b->memory);
		mt = cand[i];
	}
	if (r != VK_SUCCESS) {
		vkDestroyBuffer(ctx->device, b->buffer, NULL);
		free(b);
		return vk_fail(err, r, "vkAllocateMemory(%" PRIu64 " bytes)",
		    (uint64_t)req.size);
	}
	if (!staging) {
		b->counted = req.size;
		ctx->mem_live += req.size;
		if (ctx->mem_live > ctx->mem_peak)
			ctx->mem_peak = ctx->mem_live;
	}
	r = vkBindBufferMemory(ctx->device, b->buffer, b->memory, 0);
	if (r != VK_SUCCESS) {
		vk_fail(err, r, "vkBindBufferMemory(%zu bytes)", alloc);
		buffer_destroy(b);
		return err ? err->status : LQ_FAILED;
	}
	/* LATENTQ_GPU_FORCE_STAGING=1 (tests) takes the path of a discrete
	 * GPU whose device memory is not host-visible. */
	const char *fs = getenv("LATENTQ_GPU_FORCE_STAGING");
	int force_staging = !staging && fs != NULL && strcmp(fs, "1") == 0;
	if ((ctx->memprops.memoryTypes[mt].propertyFlags & hv) == hv &&
	    !force_staging) {
		r = vkMapMemory(ctx->device, b->memory, 0, VK_WHOLE_SIZE, 0,
		    &b->mapped);
		if (r != VK_SUCCESS) {
			b->mapped = NULL;
			vk_fail(err, r, "vkMapMemory(%zu bytes)", alloc);
			buffer_destroy(b);
			return err ? err->status : LQ_FAILED;
		}
	}
	*out = b;
	return LQ_OK;
}

enum lq_status
gpu_buffer_create(struct gpu_ctx *ctx, size_t bytes, struct gpu_buffer **out,
    struct lq_error *err)
{
	return buffer_create(ctx, bytes ? bytes : 1, 0, out, err);
}

void
gpu_buffer_free(struct gpu_buffer *buf)
{
	if (buf == NULL)
		return;
	vkDeviceWaitIdle(buf->ctx->device);
	buffer_destroy(buf);
}

size_t
gpu_buffer_size(const struct gpu_buffer *buf)
{
	return buf->size;
}

uint64_t
gpu_buffer_plan_size(uint64_t bytes)
{
	return ((bytes ? bytes : 1) + 255) & ~(uint64_t)255;
}

void
gpu_ctx_memory(const struct gpu_ctx *ctx, uint64_t *live, uint64_t *peak)
{
	if (live)
		*live = ctx->mem_live;
	if (peak)
		*peak = ctx->mem_peak;
}

void
gpu_ctx_memory_reset_peak(struct gpu_ctx *ctx)
{
	ctx->mem_peak = ctx->mem_live;
}

#define STAGING_BYTES ((size_t)32 << 20)

/* Copies between a buffer and the staging buffer, synchronously. */
static enum lq_status
staged_copy(struct gpu_ctx *ctx, struct gpu_buffer *buf, size_t off,
    size_t n, int to_device, struct lq_error *err)
{
	if (ctx->xfer == NULL) {
		enum lq_status st = gpu_cmd_create(ctx, &ctx->xfer, err);
		if (st != LQ_OK)
			return st;
	}
	struct gpu_cmd *c = ctx->xfer;
	gpu_cmd_begin(c);
	if (c->error.status != LQ_OK) {
		if (err)
			*err = c->error;
		return c->error.status;
	}
	VkBufferCopy reg = {
		.srcOffset = to_device ? 0 : off,
		.dstOffset = to_device ? off : 0,
		.size = n,
	};
	if (to_device)
		vkCmdCopyBuffer(c->cb, ctx->staging->buffer, buf->buffer, 1, &reg);
	else
		vkCmdCopyBuffer(c->cb, buf->buffer, ctx->staging->buffer, 1, &reg);
	return gpu_cmd_submit(c, err);
}

static enum lq_status
check_range(const struct gpu_buffer *buf, size_t offset, size_t n,
    struct lq_error *err)
{
	if (offset > buf->size || n > buf->size - offset) {
		error_set(err, LQ_FAILED, "LQ-GPU-SHAPE",
		    "transfer of %zu bytes at offset %zu exceeds buffer of %zu "
		    "bytes", n, offset, buf->size);
		return LQ_FAILED;
	}
	return LQ_OK;
}

enum lq_status
gpu_buffer_upload(struct gpu_ctx *ctx, struct gpu_buffer *buf, size_t offset,
    const void *src, size_t n, struct lq_error *err)
{
	if (check_range(buf, offset, n, err) != LQ_OK)
		return LQ_FAILED;
	if (buf->mapped != NULL) {
		memcpy((char *)buf->mapped + offset, src, n);
		return LQ_OK;
	}
	if (ctx->staging == NULL && buffer_create(ctx, STAGING_BYTES, 1,
	    &ctx->staging, err) != LQ_OK)
		return err ? err->status : LQ_FAILED;
	for (size_t done = 0; done < n; done += STAGING_BYTES) {
		size_t k = n - done < STAGING_BYTES ? n - done : STAGING_BYTES;
		memcpy(ctx->staging->mapped, (const char *)src + done, k);
		enum lq_status st = staged_copy(ctx, buf, offset + done, k, 1, err);
		if (st != LQ_OK)
			return st;
	}
	return LQ_OK;
}

enum lq_status
gpu_buffer_download(struct gpu_ctx *ctx, const struct gpu_buffer *buf,
    size_t offset, void *dst, size_t n, struct lq_error *err)
{
	if (check_range(buf, offset, n, err) != LQ_OK)
		return LQ_FAILED;
	if (buf->mapped != NULL) {
		memcpy(dst, (const char *)buf->mapped + offset, n);
		return LQ_OK;
	}
	if (ctx->staging == NULL && buffer_create(ctx, STAGING_BYTES, 1,
	    &ctx->staging, err) != LQ_OK)
		return err ? err->status : LQ_FAILED;
	for (size_t done = 0; done < n; done += STAGING_BYTES) {
		size_t k = n - done < STAGING_BYTES ? n - done : STAGING_BYTES;
		enum lq_status st = staged_copy(ctx, (struct gpu_buffer *)buf,
		    offset + done, k, 0, err);
		if (st != LQ_OK)
			return st;
		memcpy((char *)dst + done, ctx->staging->mapped, k);
	}
	return LQ_OK;
}

/* ---- tensors ---- */

struct gpu_tensor
gpu_tensor_make(struct gpu_buffer *buf, size_t offset, enum gpu_dtype dtype,
    int ndim, const int64_t *shape)
{
	LQ_ASSERT(ndim >= 1 && ndim <= GPU_MAX_DIMS);
	struct gpu_tensor t = {.buf = buf, .offset = offset, .dtype = dtype,
	    .ndim = ndim};
	for (int i = 0; i < GPU_MAX_DIMS; i++)
		t.shape[i] = 1;
	int64_t s = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		LQ_ASSERT(shape[i] >= 1);
		t.shape[i] = shape[i];
		t.stride[i] = s;
		s *= shape[i];
	}
	return t;
}

int64_t
gpu_tensor_numel(const struct gpu_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

size_t
gpu_tensor_nbytes(const struct gpu_tensor *t)
{
	return (size_t)gpu_tensor_numel(t) * gpu_dtype_size(t->dtype);
}

int
gpu_tensor_is_contiguous(const struct gpu_tensor *t)
{
	int64_t s = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] != 1 && t->stride[i] != s)
			return 0;
		s *= t->shape[i];
	}
	return 1;
}

struct gpu_tensor
gpu_tensor_reshape(const struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	LQ_ASSERT(gpu_tensor_is_contiguous(t));
	struct gpu_tensor r = gpu_tensor_make(t->buf, t->offset, t->dtype, ndim,
	    shape);
	LQ_ASSERT(gpu_tensor_numel(&r) == gpu_tensor_numel(t));
	return r;
}

struct gpu_tensor
gpu_tensor_slice(const struct gpu_tensor *t, int dim, int64_t start,
    int64_t len)
{
	LQ_ASSERT(dim >= 0 && dim < t->ndim);
	LQ_ASSERT(start >= 0 && len >= 1 && start + len <= t->shape[dim]);
	struct gpu_tensor r = *t;
	r.offset += (size_t)(start * t->stride[dim]) * gpu_dtype_size(t->dtype);
	r.shape[dim] = len;
	return r;
}

struct gpu_tensor
gpu_tensor_permute(const struct gpu_tensor *t, const int *perm)
{
	struct gpu_tensor r = *t;
	int seen = 0;
	for (int k = 0; k < t->ndim; k++) {
		LQ_ASSERT(perm[k] >= 0 && perm[k] < t->ndim);
		LQ_ASSERT(!(seen & (1 << perm[k])));
		seen |= 1 << perm[k];
		r.shape[k] = t->shape[perm[k]];
		r.stride[k] = t->stride[perm[k]];
	}
	return r;
}

struct gpu_tensor
gpu_tensor_broadcast(const struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	LQ_ASSERT(ndim >= t->ndim && ndim <= GPU_MAX_DIMS);
	struct gpu_tensor r = *t;
	r.ndim = ndim;
	int d = ndim - t->ndim;
	for (int k = 0; k < ndim; k++) {
		int64_t sz = k < d ? 1 : t->shape[k - d];
		int64_t st = k < d ? 0 : t->stride[k - d];
		LQ_ASSERT(sz == shape[k] || sz == 1);
		r.shape[k] = shape[k];
		r.stride[k] = sz == shape[k] && sz != 1 ? st : 0;
	}
	for (int k = ndim; k < GPU_MAX_DIMS; k++) {
		r.shape[k] = 1;
		r.stride[k] = 0;
	}
	return r;
}

char *
gpu_tensor_describe(const struct gpu_tensor *t, char *buf, size_t n)
{
	if (t == NULL) {
		snprintf(buf, n, "(none)");
		return buf;
	}
	size_t k = (size_t)snprintf(buf, n, "%s[", gpu_dtype_name(t->dtype));
	for (int i = 0; i < t->ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? "," : "",
		    t->shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]%s",
		    gpu_tensor_is_contiguous(t) ? "" : "(strided)");
	return buf;
}

static enum lq_status
tensor_check_host(const struct gpu_tensor *t, struct lq_error *err)
{
	char d[96];
	if (!gpu_tensor_is_contiguous(t)) {
		error_set(err, LQ_FAILED, "LQ-GPU-SHAPE",
		    "host transfer of a non-contiguous view %s",
		    gpu_tensor_describe(t, d, sizeof(d)));
		return LQ_FAILED;
	}
	return LQ_OK;
}

enum lq_status
gpu_tensor_upload(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    const void *src, struct lq_error *err)
{
	if (tensor_check_host(t, err) != LQ_OK)
		return LQ_FAILED;
	return gpu_buffer_upload(ctx, t->buf, t->offset, src,
	    gpu_tensor_nbytes(t), err);
}

enum lq_status
gpu_tensor_download(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    void *dst, struct lq_error *err)
{
	if (tensor_check_host(t, err) != LQ_OK)
		return LQ_FAILED;
	return gpu_buffer_download(ctx, t->buf, t->offset, dst,
	    gpu_tensor_nbytes(t), err);
}

enum lq_status
gpu_tensor_upload_f32(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    const float *src, struct lq_error *err)
{
	if (t->dtype == GPU_F32)
		return gpu_tensor_upload(ctx, t, src, err);
	int64_t n = gpu_tensor_numel(t);
	uint16_t *h = xmalloc((size_t)n * 2 + 2);
	for (int64_t i = 0; i < n; i++)
		h[i] = t->dtype == GPU_F16 ? gpu_f32_to_f16(src[i]) :
		    gpu_f32_to_bf16(src[i]);
	enum lq_status st = gpu_tensor_upload(ctx, t, h, err);
	free(h);
	return st;
}

enum lq_status
gpu_tensor_download_f32(struct gpu_ctx *ctx, const struct gpu_tensor *t,
    float *dst, struct lq_error *err)
{
	if (t->dtype == GPU_F32)
		return gpu_tensor_download(ctx, t, dst, err);
	int64_t n = gpu_tensor_numel(t);
	uint16_t *h = xmalloc((size_t)n * 2 + 2);
	enum lq_status st = gpu_tensor_download(ctx, t, h, err);
	if (st == LQ_OK)
		for (int64_t i = 0; i < n; i++)
			dst[i] = t->dtype == GPU_F16 ? gpu_f16_to_f32(h[i]) :
			    gpu_bf16_to_f32(h[i]);
	free(h);
	return st;
}

/* ---- pool ---- */

/* Bytes of each buffer a pool is made of (the last one may be smaller). */
static uint64_t
pool_chunk(const struct device_caps *caps)
{
	uint64_t chunk = caps ? device_caps_max_tensor(caps) :
	    DEVICE_CAPS_MAX_BUFFER;

	return chunk & ~(uint64_t)255;
}

#define POOL_ALIGN 256

uint64_t
gpu_pool_plan(const struct device_caps *caps, const uint64_t *bytes, int n)
{
	const uint64_t chunk = pool_chunk(caps);
	uint64_t total = 0;

	for (int i = 0; i < n; i++)
		total += (bytes[i] + POOL_ALIGN - 1) & ~(uint64_t)(POOL_ALIGN - 1);
	if (total == 0)
		return gpu_buffer_plan_size(1);
	/* Carve in order as gpu_pool_tensor does (a tensor never spans two
	 * chunks); grow by what the gaps at chunk ends cost until it fits. */
	for (int round = 0; round <= n + 1; round++) {
		uint64_t pos = 0, short_by = 0;

		for (int i = 0; i < n; i++) {
			uint64_t need = (bytes[i] + POOL_ALIGN - 1) &
			    ~(uint64_t)(POOL_ALIGN - 1);
			uint64_t end = (pos / chunk + 1) * chunk;

			if (end > total)
				end = total;
			if (need > end - pos && need <= chunk && end < total) {
				pos = end;	/* next chunk */
				end = pos + chunk < total ? pos + chunk : total;
			}
			if (need > end - pos) {
				short_by = need - (end - pos);
				break;
			}
			pos += need;
		}
		if (short_by == 0)
			break;
		total += short_by;
	}
	/* what gpu_pool_create(total) allocates: chunk-sized buffers and a
	 * rounded remainder */
	return total / chunk * chunk + (total % chunk ?
	    gpu_buffer_plan_size(total % chunk) : 0);
}

enum lq_status
gpu_pool_create(struct gpu_ctx *ctx, size_t bytes, struct gpu_pool **out,
    struct lq_error *err)
{
	*out = NULL;
	struct gpu_pool *p = xcalloc(1, sizeof(*p));
	p->ctx = ctx;
	size_t chunk = (size_t)pool_chunk(&ctx->caps);
	size_t left = bytes ? bytes : 1;
	while (left > 0) {
		size_t k = left < chunk ? left : chunk;
		p->chunks = xrealloc(p->chunks, (size_t)(p->nchunks + 1) *
		    sizeof(*p->chunks));
		struct gpu_pool_chunk *c = &p->chunks[p->nchunks];
		enum lq_status st = gpu_buffer_create(ctx, k, &c->buf, err);
		if (st != LQ_OK) {
			gpu_pool_free(p);
			return st;
		}
		c->base = p->capacity;
		p->capacity += c->buf->alloc;
		p->nchunks++;
		left -= k;
	}
	*out = p;
	return LQ_OK;
}

void
gpu_pool_free(struct gpu_pool *pool)
{
	if (pool == NULL)
		return;
	for (int i = 0; i < pool->nchunks; i++)
		gpu_buffer_free(pool->chunks[i].buf);
	free(pool->chunks);
	free(pool);
}

enum lq_status
gpu_pool_tensor(struct gpu_pool *pool, enum gpu_dtype dtype, int ndim,
    const int64_t *shape, struct gpu_tensor *out, struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	struct gpu_tensor t = gpu_tensor_make(NULL, 0, dtype, ndim, shape);
	size_t nb = gpu_tensor_nbytes(&t);
	char d[96];
	if (device_caps_check_tensor(&pool->ctx->caps,
	    gpu_tensor_describe(&t, d, sizeof(d)), nb, err) != LQ_OK)
		return LQ_FAILED;
	size_t align = 256;
	size_t need = (nb + align - 1) & ~(align - 1);
	size_t pos = pool->fill;
	for (int i = 0; i < pool->nchunks; i++) {
		struct gpu_pool_chunk *c = &pool->chunks[i];
		size_t end = c->base + c->buf->alloc;
		if (pos >= end)
			continue;
		if (pos < c->base)
			pos = c->base;
		if (need <= end - pos) {
			t.buf = c->buf;
			t.offset = pos - c->base;
			pool->fill = pos + need;
			if (pool->fill > pool->peak)
				pool->peak = pool->fill;
			*out = t;
			return LQ_OK;
		}
		pos = end;	/* a tensor never spans two chunks */
	}
	error_set(err, LQ_FAILED, "LQ-GPU-POOL",
	    "activation pool of %zu bytes is full: %s needs %zu bytes at "
	    "fill %zu", pool->capacity, d, need, pool->fill);
	error_set_hint(err, "create the pool larger (peak so far %zu bytes)",
	    pool->peak);
	return LQ_FAILED;
}

size_t
gpu_pool_mark(const struct gpu_pool *pool)
{
	return pool->fill;
}

void
gpu_pool_reset(struct gpu_pool *pool, size_t mark)
{
	LQ_ASSERT(mark <= pool->fill);
	pool->fill = mark;
}

size_t
gpu_pool_peak(const struct gpu_pool *pool)
{
	return pool->peak;
}

size_t
gpu_pool_capacity(const struct gpu_pool *pool)
{
	return pool->capacity;
}

/* ---- commands ---- */

#define DPOOL_SETS 512

enum lq_status
gpu_cmd_create(struct gpu_ctx *ctx, struct gpu_cmd **out, struct lq_error *err)
{
	*out = NULL;
	struct gpu_cmd *c = xcalloc(1, sizeof(*c));
	c->ctx = ctx;
	error_clear(&c->error);
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = ctx->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkResult r = vkAllocateCommandBuffers(ctx->device, &ai, &c->cb);
	if (r != VK_SUCCESS) {
		free(c);
		return vk_fail(err, r, "vkAllocateCommandBuffers(1)");
	}
	VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	r = vkCreateFence(ctx->device, &fci, NULL, &c->fence);
	if (r != VK_SUCCESS) {
		vkFreeCommandBuffers(ctx->device, ctx->pool, 1, &c->cb);
		free(c);
		return vk_fail(err, r, "vkCreateFence");
	}
	*out = c;
	return LQ_OK;
}

void
gpu_cmd_free(struct gpu_cmd *cmd)
{
	if (cmd == NULL)
		return;
	VkDevice dev = cmd->ctx->device;
	vkDeviceWaitIdle(dev);
	for (int i = 0; i < cmd->ndpools; i++)
		vkDestroyDescriptorPool(dev, cmd->dpools[i], NULL);
	free(cmd->dpools);
	vkDestroyFence(dev, cmd->fence, NULL);
	vkFreeCommandBuffers(dev, cmd->ctx->pool, 1, &cmd->cb);
	for (int i = 0; i < cmd->nviews; i++)
		vkDestroyBufferView(dev, cmd->views[i], NULL);
	free(cmd->views);
	for (int i = 0; i < cmd->nretired; i++)
		buffer_destroy(cmd->retired[i]);
	free(cmd->retired);
	buffer_destroy(cmd->scratch);
	free(cmd->reads);
	free(cmd->writes);
	free(cmd);
}

void
gpu_cmd_begin(struct gpu_cmd *cmd)
{
	VkDevice dev = cmd->ctx->device;
	LQ_ASSERT(!cmd->pending);
	error_clear(&cmd->error);
	cmd->dispatches = 0;
	cmd->nreads = cmd->nwrites = 0;
	cmd->dpool_cur = 0;
	/* submits wait, so nothing recorded earlier still uses these */
	for (int i = 0; i < cmd->nviews; i++)
		vkDestroyBufferView(dev, cmd->views[i], NULL);
	cmd->nviews = 0;
	for (int i = 0; i < cmd->nretired; i++)
		buffer_destroy(cmd->retired[i]);
	cmd->nretired = 0;
	for (int i = 0; i < cmd->ndpools; i++) {
		VkResult r = vkResetDescriptorPool(dev, cmd->dpools[i], 0);
		if (r != VK_SUCCESS) {
			vk_fail(&cmd->error, r, "vkResetDescriptorPool");
			return;
		}
	}
	VkResult r = vkResetCommandBuffer(cmd->cb, 0);
	if (r != VK_SUCCESS) {
		vk_fail(&cmd->error, r, "vkResetCommandBuffer");
		return;
	}
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	r = vkBeginCommandBuffer(cmd->cb, &bi);
	if (r != VK_SUCCESS) {
		vk_fail(&cmd->error, r, "vkBeginCommandBuffer");
		return;
	}
	cmd->recording = 1;
}

enum lq_status
gpu_cmd_status(const struct gpu_cmd *cmd, struct lq_error *err)
{
	if (cmd->error.status != LQ_OK && err != NULL)
		*err = cmd->error;
	return cmd->error.status;
}

unsigned
gpu_cmd_dispatch_count(const struct gpu_cmd *cmd)
{
	return cmd->dispatches;
}

struct gpu_ctx *
gpu_cmd_ctx(const struct gpu_cmd *cmd)
{
	return cmd->ctx;
}

enum lq_status
gpu_cmd_submit_async(struct gpu_cmd *cmd, struct lq_error *err)
{
	LQ_ASSERT(!cmd->pending);
	if (!cmd->recording && cmd->error.status == LQ_OK)
		gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-STATE",
		    "gpu_cmd_submit without gpu_cmd_begin");
	if (cmd->recording) {
		VkResult r = vkEndCommandBuffer(cmd->cb);
		cmd->recording = 0;
		if (r != VK_SUCCESS && cmd->error.status == LQ_OK)
			vk_fail(&cmd->error, r, "vkEndCommandBuffer");
	}
	if (cmd->error.status != LQ_OK)
		return gpu_cmd_status(cmd, err);
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cmd->cb,
	};
	VkResult r = vkQueueSubmit(cmd->ctx->queue, 1, &si, cmd->fence);
	if (r != VK_SUCCESS) {
		vk_fail(&cmd->error, r, "vkQueueSubmit(%u dispatches)",
		    cmd->dispatches);
		return gpu_cmd_status(cmd, err);
	}
	cmd->pending = 1;
	return LQ_OK;
}

enum lq_status
gpu_cmd_wait(struct gpu_cmd *cmd, struct lq_error *err)
{
	VkDevice dev = cmd->ctx->device;
	if (!cmd->pending)
		return gpu_cmd_status(cmd, err);
	cmd->pending = 0;
	VkResult r = vkWaitForFences(dev, 1, &cmd->fence, VK_TRUE, UINT64_MAX);
	if (r != VK_SUCCESS) {
		vk_fail(&cmd->error, r, "vkWaitForFences(%u dispatches)",
		    cmd->dispatches);
		return gpu_cmd_status(cmd, err);
	}
	r = vkResetFences(dev, 1, &cmd->fence);
	if (r != VK_SUCCESS) {
		vk_fail(&cmd->error, r, "vkResetFences");
		return gpu_cmd_status(cmd, err);
	}
	return LQ_OK;
}

enum lq_status
gpu_cmd_submit(struct gpu_cmd *cmd, struct lq_error *err)
{
	enum lq_status st = gpu_cmd_submit_async(cmd, err);
	if (st != LQ_OK)
		return st;
	return gpu_cmd_wait(cmd, err);
}

static VkDeviceSize
bind_align(const struct gpu_ctx *ctx)
{
	/* both are powers of two: the larger is a multiple of the other */
	VkDeviceSize a = ctx->caps.min_storage_buffer_offset_alignment;
	if (ctx->min_texel_align > a)
		a = ctx->min_texel_align;
	return a < 16 ? 16 : a;
}

uint64_t
gpu_cmd_max_binding(const struct gpu_cmd *cmd)
{
	return device_caps_max_binding(&cmd->ctx->caps);
}

static void tensor_extent(const struct gpu_tensor *t, VkDeviceSize *lo,
    VkDeviceSize *hi);

uint64_t
gpu_bind_span(const struct gpu_cmd *cmd, const struct gpu_tensor *t)
{
	if (t == NULL)
		return 0;
	VkDeviceSize a = bind_align(cmd->ctx), lo, hi;
	tensor_extent(t, &lo, &hi);
	return (uint64_t)(((hi + 3) & ~(VkDeviceSize)3) - lo / a * a);
}

int
gpu_bind_fits(const struct gpu_cmd *cmd, const struct gpu_tensor *t)
{
	return gpu_bind_span(cmd, t) <= gpu_cmd_max_binding(cmd);
}

enum lq_status
gpu_cmd_scratch(struct gpu_cmd *cmd, size_t bytes, struct gpu_buffer **out)
{
	*out = NULL;
	if (cmd->error.status != LQ_OK)
		return cmd->error.status;
	if (cmd->scratch == NULL || cmd->scratch->size < bytes) {
		struct gpu_buffer *b;
		enum lq_status st = buffer_create(cmd->ctx, bytes ? bytes : 16,
		    0, &b, &cmd->error);
		if (st != LQ_OK)
			return st;
		if (cmd->scratch != NULL) {
			/* still referenced by what was recorded so far */
			cmd->retired = xrealloc(cmd->retired,
			    (size_t)(cmd->nretired + 1) * sizeof(*cmd->retired));
			cmd->retired[cmd->nretired++] = cmd->scratch;
		}
		cmd->scratch = b;
	}
	*out = cmd->scratch;
	return LQ_OK;
}

size_t
gpu_cmd_scratch_bytes(const struct gpu_cmd *cmd)
{
	return cmd->scratch ? cmd->scratch->alloc : 0;
}

uint32_t
gpu_bind_offset(const struct gpu_cmd *cmd, const struct gpu_tensor *t)
{
	if (t == NULL)
		return 0;
	VkDeviceSize a = bind_align(cmd->ctx);
	VkDeviceSize base = t->offset / a * a;
	return (uint32_t)((t->offset - base) / gpu_dtype_size(t->dtype));
}

/* Byte extent [lo, hi) of a view within its buffer. */
static void
tensor_extent(const struct gpu_tensor *t, VkDeviceSize *lo, VkDeviceSize *hi)
{
	int64_t last = 0;
	for (int i = 0; i < t->ndim; i++)
		last += (t->shape[i] - 1) * t->stride[i];
	*lo = t->offset;
	*hi = t->offset + (VkDeviceSize)(last + 1) * gpu_dtype_size(t->dtype);
}

static int
range_overlaps(const struct gpu_range *set, int n, const struct gpu_range *r)
{
	for (int i = 0; i < n; i++)
		if (set[i].buffer == r->buffer && set[i].lo < r->hi &&
		    r->lo < set[i].hi)
			return 1;
	return 0;
}

static void
range_add(struct gpu_range **set, int *n, int *cap, const struct gpu_range *r)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*set = xrealloc(*set, (size_t)*cap * sizeof(**set));
	}
	(*set)[(*n)++] = *r;
}

static enum lq_status
dset_alloc(struct gpu_cmd *cmd, VkDescriptorSetLayout dsl, VkDescriptorSet *out)
{
	VkDevice dev = cmd->ctx->device;
	for (;;) {
		if (cmd->dpool_cur < cmd->ndpools) {
			VkDescriptorSetAllocateInfo ai = {
				.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
				.descriptorPool = cmd->dpools[cmd->dpool_cur],
				.descriptorSetCount = 1,
				.pSetLayouts = &dsl,
			};
			VkResult r = vkAllocateDescriptorSets(dev, &ai, out);
			if (r == VK_SUCCESS)
				return LQ_OK;
			if (r != VK_ERROR_OUT_OF_POOL_MEMORY &&
			    r != VK_ERROR_FRAGMENTED_POOL)
				return vk_fail(&cmd->error, r,
				    "vkAllocateDescriptorSets");
			cmd->dpool_cur++;
			continue;
		}
		VkDescriptorPoolSize ps[2] = {
			{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			    DPOOL_SETS * GPU_MAX_BINDINGS},
			{VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, DPOOL_SETS * 2},
		};
		VkDescriptorPoolCreateInfo pci = {
			.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
			.maxSets = DPOOL_SETS,
			.poolSizeCount = 2,
			.pPoolSizes = ps,
		};
		VkDescriptorPool pool;
		VkResult r = vkCreateDescriptorPool(dev, &pci, NULL, &pool);
		if (r != VK_SUCCESS)
			return vk_fail(&cmd->error, r,
			    "vkCreateDescriptorPool(%d sets)", DPOOL_SETS);
		cmd->dpools = xrealloc(cmd->dpools, (size_t)(cmd->ndpools + 1) *
		    sizeof(*cmd->dpools));
		cmd->dpools[cmd->ndpools++] = pool;
	}
}

void
gpu_cmd_grid(const struct gpu_cmd *cmd, uint64_t groups, uint32_t *gx,
    uint32_t *gy)
{
	uint64_t mx = cmd->ctx->caps.max_workgroup_count[0];
	if (mx == 0 || mx > 65535)
		mx = 65535;
	if (groups == 0)
		groups = 1;
	if (groups <= mx) {
		*gx = (uint32_t)groups;
		*gy = 1;
	} else {
		*gx = (uint32_t)mx;
		*gy = (uint32_t)((groups + mx - 1) / mx);
	}
}

int
gpu_cmd_texel_ok(const struct gpu_cmd *cmd, enum gpu_texfmt fmt,
    uint64_t texels)
{
	const char *e = getenv("LATENTQ_NO_TEXEL");
	if (e != NULL && *e != '\0' && strcmp(e, "0") != 0)
		return 0;
	return fmt > GPU_TEX_NONE && fmt < GPU_TEX_COUNT &&
	    cmd->ctx->tex_ok[fmt] && texels <= cmd->ctx->max_texels;
}

enum lq_status
gpu_cmd_dispatch(struct gpu_cmd *cmd, enum gpu_kernel k,
    const struct gpu_tensor *const *binds, const unsigned char *writes,
    const void *push, uint32_t gx, uint32_t gy, uint32_t gz, const char *op)
{
	return gpu_cmd_dispatch_tex(cmd, k, binds, writes, NULL, push, gx, gy,
	    gz, op);
}

enum lq_status
gpu_cmd_dispatch_tex(struct gpu_cmd *cmd, enum gpu_kernel k,
    const struct gpu_tensor *const *binds, const unsigned char *writes,
    const enum gpu_texfmt *texfmt, const void *push, uint32_t gx,
    uint32_t gy, uint32_t gz, const char *op)
{
	struct gpu_ctx *ctx = cmd->ctx;
	if (cmd->error.status != LQ_OK)
		return cmd->error.status;
	if (!cmd->recording)
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-STATE",
		    "%s: recording without gpu_cmd_begin", op);
	const struct device_caps *c = &ctx->caps;
	if (gx > c->max_workgroup_count[0] || gy > c->max_workgroup_count[1] ||
	    gz > c->max_workgroup_count[2])
		return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
		    "%s: %u×%u×%u workgroups exceed the device's "
		    "maxComputeWorkGroupCount %u×%u×%u", op, gx, gy, gz,
		    c->max_workgroup_count[0], c->max_workgroup_count[1],
		    c->max_workgroup_count[2]);
	if (gx == 0 || gy == 0 || gz == 0)
		return LQ_OK;
	int nb = kernel_info[k].nbind;
	struct gpu_pipeline *pipe;
	enum lq_status st = pipeline_get(ctx, k, &pipe, &cmd->error);
	if (st != LQ_OK)
		return st;
	VkDescriptorBufferInfo bi[GPU_MAX_BINDINGS];
	struct gpu_range rg[GPU_MAX_BINDINGS];
	VkDeviceSize a = bind_align(ctx);
	uint64_t maxr = device_caps_max_binding(c);
	int need_barrier = 0;
	for (int i = 0; i < nb; i++) {
		const struct gpu_tensor *t = binds[i];
		if (t == NULL) {
			bi[i] = (VkDescriptorBufferInfo){ctx->dummy->buffer, 0,
			    VK_WHOLE_SIZE};
			rg[i].buffer = VK_NULL_HANDLE;
			continue;
		}
		LQ_ASSERT(t->buf != NULL);
		VkDeviceSize lo, hi;
		tensor_extent(t, &lo, &hi);
		VkDeviceSize base = lo / a * a;
		VkDeviceSize end = (hi + 3) & ~(VkDeviceSize)3;
		if (end > t->buf->alloc)
			end = t->buf->alloc;
		if (hi > t->buf->alloc) {
			char d[96];
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-SHAPE",
			    "%s: binding %d view %s at byte %zu runs past its "
			    "buffer of %zu bytes", op, i,
			    gpu_tensor_describe(t, d, sizeof(d)), t->offset,
			    t->buf->size);
		}
		if (end - base > maxr) {
			char d[96];
			return gpu_cmd_fail(cmd, LQ_FAILED, "LQ-GPU-RANGE",
			    "%s: binding %d %s spans %" PRIu64 " bytes but device "
			    "\"%s\" binds at most %" PRIu64
			    " (maxStorageBufferRange)", op, i,
			    gpu_tensor_describe(t, d, sizeof(d)),
			    (uint64_t)(end - base), c->name, maxr);
		}
		bi[i] = (VkDescriptorBufferInfo){t->buf->buffer, base, end - base};
		rg[i] = (struct gpu_range){t->buf->buffer, lo, hi};
		if (range_overlaps(cmd->writes, cmd->nwrites, &rg[i]))
			need_barrier = 1;
		if (writes[i] && range_overlaps(cmd->reads, cmd->nreads, &rg[i]))
			need_barrier = 1;
	}
	if (need_barrier) {
		VkMemoryBarrier mb = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
			    VK_ACCESS_SHADER_READ_BIT,
			.dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
			    VK_ACCESS_SHADER_WRITE_BIT,
		};
		vkCmdPipelineBarrier(cmd->cb,
		    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
		    NULL);
		cmd->nreads = cmd->nwrites = 0;
	}
	for (int i = 0; i < nb; i++) {
		if (rg[i].buffer == VK_NULL_HANDLE)
			continue;
		if (writes[i])
			range_add(&cmd->writes, &cmd->nwrites, &cmd->capwrites,
			    &rg[i]);
		else
			range_add(&cmd->reads, &cmd->nreads, &cmd->capreads,
			    &rg[i]);
	}
	VkDescriptorSet set;
	st = dset_alloc(cmd, pipe->dsl, &set);
	if (st != LQ_OK)
		return st;
	VkWriteDescriptorSet w[GPU_MAX_BINDINGS];
	VkBufferView views[GPU_MAX_BINDINGS];
	for (int i = 0; i < nb; i++) {
		w[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = set,
			.dstBinding = (uint32_t)i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &bi[i],
		};
		if (!((kernel_info[k].texmask >> i) & 1))
			continue;
		LQ_ASSERT(texfmt != NULL && binds[i] != NULL &&
		    texfmt[i] > GPU_TEX_NONE && texfmt[i] < GPU_TEX_COUNT);
		VkDeviceSize ts = texfmt_size[texfmt[i]];
		VkBufferViewCreateInfo vci = {
			.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
			.buffer = bi[i].buffer,
			.format = texfmt_vk[texfmt[i]],
			.offset = bi[i].offset,
			.range = bi[i].range / ts * ts,
		};
		VkResult r = vkCreateBufferView(ctx->device, &vci, NULL,
		    &views[i]);
		if (r != VK_SUCCESS)
			return vk_fail(&cmd->error, r, "vkCreateBufferView(%s "
			    "binding %d, %" PRIu64 " bytes at %" PRIu64 ")", op, i,
			    (uint64_t)vci.range, (uint64_t)vci.offset);
		if (cmd->nviews == cmd->capviews) {
			cmd->capviews = cmd->capviews ? cmd->capviews * 2 : 16;
			cmd->views = xrealloc(cmd->views, (size_t)cmd->capviews *
			    sizeof(*cmd->views));
		}
		cmd->views[cmd->nviews++] = views[i];
		w[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
		w[i].pBufferInfo = NULL;
		w[i].pTexelBufferView = &views[i];
	}
	vkUpdateDescriptorSets(ctx->device, (uint32_t)nb, w, 0, NULL);
	vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE,
	    pipe->pipeline);
	vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE,
	    pipe->layout, 0, 1, &set, 0, NULL);
	vkCmdPushConstants(cmd->cb, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
	    kernel_info[k].push, push);
	vkCmdDispatch(cmd->cb, gx, gy, gz);
	cmd->dispatches++;
	return LQ_OK;
}
