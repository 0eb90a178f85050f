/*
 * device.c — the Vulkan runtime's device part (gpu.h): VkResult errors,
 * instance and device selection, caps, the context with its persisted
 * pipeline cache, and the pipelines, created lazily from embedded SPIR-V.
 * The shared objects are in vk.h.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "core/digest.h"
#include "core/embed.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/vk.h"

const VkFormat gpu_texfmt_vk[GPU_TEX_COUNT] = {
	[GPU_TEX_RGBA32F] = VK_FORMAT_R32G32B32A32_SFLOAT,
	[GPU_TEX_RGBA16F] = VK_FORMAT_R16G16B16A16_SFLOAT,
	[GPU_TEX_RG32UI] = VK_FORMAT_R32G32_UINT,
	[GPU_TEX_R32F] = VK_FORMAT_R32_SFLOAT,
	[GPU_TEX_R16F] = VK_FORMAT_R16_SFLOAT,
	[GPU_TEX_R16UI] = VK_FORMAT_R16_UINT,
};
const uint32_t gpu_texfmt_size[GPU_TEX_COUNT] = {
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

enum lq_status
gpu_vk_fail(struct lq_error *err, VkResult r, const char *fmt, ...)
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
	return gpu_vk_fail(err, (VkResult)vkresult, "%s", what);
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
	c->subgroup_arithmetic = (sub.supportedOperations &
	    VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0 &&
	    (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;

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
		gpu_vk_fail(err, r, "vkCreateInstance(apiVersion 1.2%s)",
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
		return gpu_vk_fail(err, r, "vkEnumeratePhysicalDevices");
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
		return gpu_vk_fail(err, r, "vkEnumeratePhysicalDevices");
	}
	return LQ_OK;
}

int
gpu_logical_devices(void)
{
	const char *v = getenv("LATENTQ_LOGICAL_DEVICES");
	if (v == NULL || *v == '\0')
		return 1;
	char *end;
	long n = strtol(v, &end, 10);
	if (*end != '\0' || n < 1 || n > GPU_MAX_LOGICAL_DEVICES) {
		log_warn("LATENTQ_LOGICAL_DEVICES=%s ignored: not a count from 1 "
		    "to %d", v, GPU_MAX_LOGICAL_DEVICES);
		return 1;
	}
	return (int)n;
}

/*
 * The device slots: physical device i's gpu_logical_devices() logical
 * devices are slots i*L .. i*L+L-1, each with the physical device's caps
 * (index = the slot, device_count = all slots).  *pds (may be NULL) gets
 * the physical devices, caller-owned.
 */
static enum lq_status
slots_list(VkInstance inst, VkPhysicalDevice **pds, struct device_caps **out,
    int *n, int *per, struct lq_error *err)
{
	VkPhysicalDevice *p = NULL;
	uint32_t np = 0;
	enum lq_status st = phys_list(inst, &p, &np, err);
	if (st != LQ_OK)
		return st;
	int L = gpu_logical_devices();
	*out = xcalloc((size_t)np * L, sizeof(**out));
	for (uint32_t i = 0; i < np; i++)
		for (int l = 0; l < L; l++)
			caps_fill(p[i], (int)i * L + l, (int)np * L,
			    &(*out)[i * L + l]);
	*n = (int)np * L;
	*per = L;
	if (pds != NULL)
		*pds = p;
	else
		free(p);
	return LQ_OK;
}

enum lq_status
gpu_devices_list(struct device_caps **out, int *n, struct lq_error *err)
{
	VkInstance inst;
	int per;
	*out = NULL;
	*n = 0;
	if (instance_create(0, &inst, err) != LQ_OK)
		return LQ_FAILED;
	enum lq_status st = slots_list(inst, NULL, out, n, &per, err);
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

/* Preference of a device with no --device: discrete, integrated, other. */
static int
type_rank(const struct device_caps *c)
{
	return strcmp(c->device_type, "discrete") == 0 ? 0 :
	    strcmp(c->device_type, "integrated") == 0 ? 1 : 2;
}

static int
slot_add(int *slots, int k, int max, int slot)
{
	for (int i = 0; i < k; i++)
		if (slots[i] == slot)
			return k;
	if (k < max)
		slots[k] = slot;
	return k + 1;
}

int
gpu_devices_match(const struct device_caps *all, int n, const char *spec,
    int *slots, int max, struct lq_error *err)
{
	int k = 0;
	if (spec == NULL || *spec == '\0') {
		for (int r = 0; r < 3; r++)
			for (int i = 0; i < n; i++)
				if (type_rank(&all[i]) == r)
					k = slot_add(slots, k, max, i);
		return k;
	}
	char *list = xstrdup(spec), *save = NULL;
	for (char *e = strtok_r(list, ",", &save); e != NULL;
	    e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ')
			e++;
		char *end;
		long v = strtol(e, &end, 10);
		int found = 0;
		if (*e != '\0' && *end == '\0') {
			if (v >= 0 && v < n) {
				k = slot_add(slots, k, max, (int)v);
				found = 1;
			}
		} else {
			for (int i = 0; *e != '\0' && i < n; i++)
				if (strcasestr(all[i].name, e) != NULL) {
					k = slot_add(slots, k, max, i);
					found = 1;
				}
		}
		if (!found) {
			struct strbuf sb = {0};
			for (int i = 0; i < n; i++)
				strbuf_printf(&sb, "%s%d: %s", i ? ", " : "", i,
				    all[i].name);
			char *avail = strbuf_release(&sb);
			error_set(err, LQ_FATAL, "LQ-GPU-NODEV",
			    "no Vulkan device matches \"%s\"%s%s%s", e,
			    strcmp(e, spec) != 0 ? " (in \"" : "",
			    strcmp(e, spec) != 0 ? spec : "",
			    strcmp(e, spec) != 0 ? "\")" : "");
			error_set_field(err, "device");
			error_set_hint(err, "available: %s", avail);
			free(avail);
			free(list);
			return -1;
		}
	}
	free(list);
	return k;
}

int
gpu_devices_same_kind(const struct device_caps *a, const struct device_caps *b)
{
	return a->vendor_id == b->vendor_id && a->device_id == b->device_id &&
	    a->driver_version == b->driver_version &&
	    strcmp(a->name, b->name) == 0 &&
	    strcmp(a->driver_info, b->driver_info) == 0;
}

int
gpu_devices_select(const struct device_caps *all, int n, const char *spec,
    int *slots, int max, int *others, struct lq_error *err)
{
	int *named = xcalloc((size_t)n + 1, sizeof(*named));
	int k = gpu_devices_match(all, n, spec, named, n, err);
	int got = 0, left = 0;
	for (int i = 0; i < k; i++) {
		if (i > 0 && !gpu_devices_same_kind(&all[named[0]],
		    &all[named[i]])) {
			left++;
			continue;
		}
		if (got < max)
			slots[got] = named[i];
		got++;
	}
	free(named);
	if (others != NULL)
		*others = left;
	return k < 0 ? -1 : got;
}

/*
 * The kernel variants this ctx resolved to: which texel-buffer formats
 * the fast paths may use (none under LATENTQ_NO_TEXEL), up to how many
 * texels, the binding size tensors are split at, and where GEMMs run
 * (gpu_ctx_gemm_variant, set by gpu_host_resolve before this).  What runs depends
 * on them, so the pipeline-cache fingerprint and a render's device
 * fingerprint carry them as resolved here, not as the environment said.
 */
/*
 * Whether the reductions that have a subgroup variant take it: the row
 * norms (ops.c norm_rows: norm_sg, a subgroup per row, not norm's
 * invocation per row) and attention (attn_emit: attn_sg*, a subgroup per
 * query row, not attn / attn_tex's invocation per row), both subgroupAdd
 * over coalesced reads, and both computing every row the same way however
 * many rows a call has, so meshes stay bit-identical to one device.  (A
 * subgroup per output column of the few-row linear would not: its sums
 * differ from the tiled kernel's that more rows take, so a data shard of
 * a timestep projection would differ from the whole batch.)  Taken where
 * the device has subgroup arithmetic in compute with subgroups of 8 to 64
 * lanes (attn_sg keeps head_dim / 8 elements a lane) and is not a CPU
 * device; LATENTQ_GPU_SUBGROUP=0|1 forces it (1 only where supported).
 */
static void
subgroup_resolve(struct gpu_ctx *ctx)
{
	int want = util_env_switch("LATENTQ_GPU_SUBGROUP",
	    strcmp(ctx->caps.device_type, "cpu") != 0);
	ctx->subgroup = want && ctx->caps.subgroup_arithmetic &&
	    ctx->caps.subgroup_size >= 8 && ctx->caps.subgroup_size <= 64;
}

unsigned
gpu_ctx_norm_kernel(const struct gpu_ctx *ctx, enum gpu_kernel *k)
{
	*k = ctx->subgroup ? GPU_K_NORM_SG : GPU_K_NORM;
	if (!ctx->subgroup)
		return 64;
	return ctx->caps.subgroup_size >= 64 ? 1 : 64 / ctx->caps.subgroup_size;
}

uint64_t
gpu_ctx_attn_subgroup(const struct gpu_ctx *ctx, uint64_t Nq)
{
	if (!ctx->subgroup)
		return 0;
	/* 64 / S rows a workgroup; the grid-stride loop takes the rest */
	uint64_t per = 64 / ctx->caps.subgroup_size;
	uint64_t groups = (Nq + per - 1) / per;
	return groups < 65535 ? groups : 65535;
}

static void
variant_make(struct gpu_ctx *ctx)
{
	unsigned mask = 0;
	for (int f = 1; f < GPU_TEX_COUNT; f++)
		if (ctx->tex_ok[f] && !gpu_texel_disabled())
			mask |= 1u << f;
	/* host-rows: host_rows.c's norms and elementwise ops, revision 1 */
	snprintf(ctx->variant, sizeof(ctx->variant), "texel=%#x/%llu "
	    "binding=%llu gemm=%s%s norm=%s", mask, mask ?
	    (unsigned long long)ctx->max_texels : 0ull,
	    (unsigned long long)ctx->caps.max_storage_buffer_range,
	    ctx->gemm_variant, ctx->host_gemm ? " host-rows:1" : "",
	    ctx->subgroup ? "subgroup" : "row");
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
	variant_make(ctx);
	char *s = xasprintf("uuid=%s driver=%u spirv=%s latentq=%s %s",
	    ctx->caps.uuid, ctx->caps.driver_version, spv, PACKAGE_VERSION,
	    ctx->variant);
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
		return gpu_vk_fail(err, r, "vkCreatePipelineCache(%zu bytes)", n);
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
		return gpu_vk_fail(err, r, "vkGetPipelineCacheData(size)");
	void *blob = xmalloc(n ? n : 1);
	r = vkGetPipelineCacheData(ctx->device, ctx->cache, &n, blob);
	if (r != VK_SUCCESS) {
		free(blob);
		return gpu_vk_fail(err, r, "vkGetPipelineCacheData(%zu bytes)", n);
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
			gpu_vk_fail(err, r, "vkCreateDebugUtilsMessengerEXT");
			goto fail;
		}
	}
	VkPhysicalDevice *pds;
	struct device_caps *all;
	int np, per, idx;
	if (slots_list(ctx->instance, &pds, &all, &np, &per, err) != LQ_OK)
		goto fail;
	/* the first device the spec names (a list names a mesh's devices:
	 * one ctx per slot, gpu_devices_match) */
	st = gpu_devices_match(all, np, want, &idx, 1, err) > 0 ? LQ_OK :
	    LQ_FATAL;
	if (st == LQ_OK) {
		ctx->phys = pds[idx / per];
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
			    gpu_texfmt_vk[f], &fp);
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
		gpu_vk_fail(err, r, "vkCreateDevice(\"%s\", queue family %u)",
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
		gpu_vk_fail(err, r, "vkCreateCommandPool(queue family %u)",
		    ctx->queue_family);
		goto fail;
	}
	gpu_host_resolve(ctx);
	subgroup_resolve(ctx);
	ctx->profile.on = gpu_profile_wanted();
	fingerprint_make(ctx);
	if (opts->cache != NULL && !env_flag("LATENTQ_NO_PIPELINE_CACHE")) {
		ctx->cache_io_copy = *opts->cache;
		ctx->cache_io = &ctx->cache_io_copy;
	}
	if (cache_create(ctx, err) != LQ_OK)
		goto fail;
	if (gpu_buffer_new(ctx, 16, 0, &ctx->dummy, err) != LQ_OK)
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
	gpu_profile_print(ctx);
	if (ctx->device != VK_NULL_HANDLE) {
		vkDeviceWaitIdle(ctx->device);
		struct lq_error err;
		error_clear(&err);
		if (gpu_ctx_save_cache(ctx, &err) != LQ_OK)
			log_warn("pipeline cache not saved: %s", err.message);
		if (ctx->xfer != NULL)
			gpu_cmd_free(ctx->xfer);
		gpu_buffer_destroy(ctx->staging);
		gpu_buffer_destroy(ctx->dummy);
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
	gpu_host_free(ctx);
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
gpu_ctx_gemm_variant(const struct gpu_ctx *ctx)
{
	return ctx->gemm_variant;
}

const char *
gpu_ctx_cache_fingerprint(const struct gpu_ctx *ctx)
{
	return ctx->fingerprint;
}

const char *
gpu_ctx_variant(const struct gpu_ctx *ctx)
{
	return ctx->variant;
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
const struct gpu_kernel_info gpu_kernel_info[GPU_K_COUNT] = {
#define X(id, name, src, defs, nb, push, tex) \
	[GPU_K_##id] = {name ".spv", nb, sizeof(push), tex},
	GPU_KERNELS(X)
#undef X
};

enum lq_status
gpu_pipeline_get(struct gpu_ctx *ctx, enum gpu_kernel k, struct gpu_pipeline **out,
    struct lq_error *err)
{
	struct gpu_pipeline *p = &ctx->pipes[k];
	*out = p;
	if (p->pipeline != VK_NULL_HANDLE)
		return LQ_OK;
	const char *name = gpu_kernel_info[k].spv;
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
			return gpu_vk_fail(err, r, "vkCreateShaderModule(%s)", name);
	}
	if (p->dsl == VK_NULL_HANDLE) {
		VkDescriptorSetLayoutBinding b[GPU_MAX_BINDINGS];
		for (int i = 0; i < gpu_kernel_info[k].nbind; i++)
			b[i] = (VkDescriptorSetLayoutBinding){
				.binding = (uint32_t)i,
				.descriptorType = (gpu_kernel_info[k].texmask >> i) & 1 ?
				    VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER :
				    VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
				.descriptorCount = 1,
				.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
			};
		VkDescriptorSetLayoutCreateInfo lci = {
			.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
			.bindingCount = (uint32_t)gpu_kernel_info[k].nbind,
			.pBindings = b,
		};
		r = vkCreateDescriptorSetLayout(ctx->device, &lci, NULL, &p->dsl);
		if (r != VK_SUCCESS)
			return gpu_vk_fail(err, r, "vkCreateDescriptorSetLayout(%s)",
			    name);
	}
	if (p->layout == VK_NULL_HANDLE) {
		VkPushConstantRange pr = {
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
			.size = gpu_kernel_info[k].push,
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
			return gpu_vk_fail(err, r, "vkCreatePipelineLayout(%s)", name);
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
		return gpu_vk_fail(err, r, "vkCreateComputePipelines(%s)", name);
	}
	ctx->pipelines_created++;
	ctx->cache_dirty = 1;
	return LQ_OK;
}

/* 1 for a kernel whose subgroup (or plain) twin ctx dispatches instead
 * (subgroup_resolve): never compiled for it */
static int
kernel_other_twin(const struct gpu_ctx *ctx, int k)
{
	int sg = k == GPU_K_NORM_SG || (k >= GPU_K_ATTN_SG32 &&
	    k <= GPU_K_ATTN_SG256);
	int plain = k == GPU_K_NORM || (k >= GPU_K_ATTN32 &&
	    k <= GPU_K_ATTN256) || k == GPU_K_ATTN_TEX64 ||
	    k == GPU_K_ATTN_TEX128 || (k >= GPU_K_ATTN32_R &&
	    k <= GPU_K_ATTN256_R);
	return ctx->subgroup ? plain : sg;
}

enum lq_status
gpu_ctx_warmup(struct gpu_ctx *ctx, enum gpu_precision prec,
    struct lq_error *err)
{
	for (int k = 0; k < GPU_K_COUNT; k++) {
		struct gpu_pipeline *p;
		if (prec == GPU_PRECISION_F32 && gpu_kernel_is_rounding(k))
			continue;
		if (kernel_other_twin(ctx, k))
			continue;
		enum lq_status st = gpu_pipeline_get(ctx, (enum gpu_kernel)k, &p, err);
		if (st != LQ_OK)
			return st;
	}
	return gpu_ctx_save_cache(ctx, err);
}
