/*
 * caps.h — the facts about a Vulkan device that preflight needs, as a plain
 * struct with no Vulkan types, so it can be filled from a live device
 * (gpu_devices_list / gpu_ctx_caps in gpu.h), saved as JSON on one machine
 * (`latentq devices --json`) and loaded on another (`--device-caps FILE`)
 * where no GPU is present.
 *
 * Ownership: a `struct device_caps` is plain data (fixed-size arrays), owned
 * by whoever declared it; no free needed.  JSON values returned are
 * caller-owned (cJSON_Delete).
 *
 * JSON form (one object; a file may also hold {"devices": [obj, ...]}):
 *   {"index":0, "name":"llvmpipe ...", "vendor_id":65541, "device_id":0,
 *    "device_type":"cpu", "api_version":"1.3.230", "driver_name":"llvmpipe",
 *    "driver_info":"Mesa 22.3.6", "driver_version":4194306,
 *    "uuid":"32 hex digits", "heaps":[{"size":N,"device_local":true}],
 *    "max_storage_buffer_range":N, "max_memory_allocation_size":N,
 *    "min_storage_buffer_offset_alignment":N,
 *    "max_compute_shared_memory_size":N, "max_workgroup_size":[x,y,z],
 *    "max_workgroup_invocations":N, "max_workgroup_count":[x,y,z],
 *    "max_push_constants_size":N, "subgroup_size":N,
 *    "fp16":true, "int8":true, "bf16":false, "storage_16bit":true,
 *    "device_count":1}
 */
#ifndef LQ_GPU_CAPS_H
#define LQ_GPU_CAPS_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"

#define DEVICE_CAPS_MAX_HEAPS 16

struct device_caps {
	int index;			/* position in the enumeration */
	int device_count;		/* how many devices the host has */
	char name[256];			/* VkPhysicalDeviceProperties.deviceName */
	uint32_t vendor_id, device_id;
	char device_type[16];		/* "discrete", "integrated", "virtual", "cpu", "other" */
	char api_version[32];		/* "1.3.230" */
	char driver_name[64];		/* VkPhysicalDeviceDriverProperties */
	char driver_info[128];
	uint32_t driver_version;	/* raw, vendor-encoded */
	char uuid[33];			/* deviceUUID, lower-case hex */
	int heap_count;
	uint64_t heap_size[DEVICE_CAPS_MAX_HEAPS];	/* bytes */
	int heap_device_local[DEVICE_CAPS_MAX_HEAPS];
	uint64_t max_storage_buffer_range;	/* bytes one tensor binding may span */
	uint64_t max_memory_allocation_size;	/* bytes */
	uint64_t min_storage_buffer_offset_alignment;
	uint32_t max_compute_shared_memory_size;	/* bytes */
	uint32_t max_workgroup_size[3];
	uint32_t max_workgroup_invocations;
	uint32_t max_workgroup_count[3];
	uint32_t max_push_constants_size;
	uint32_t subgroup_size;
	int fp16;		/* shaderFloat16 */
	int int8;		/* shaderInt8 */
	int bf16;		/* VK_KHR_shader_bfloat16 (latentq decodes BF16 weights itself either way) */
	int storage_16bit;	/* storageBuffer16BitAccess */
	int subgroup_arithmetic;	/* VK_SUBGROUP_FEATURE_ARITHMETIC_BIT in compute */
};

/*
 * Fills `out` from a JSON object in the form above (missing keys read as 0 /
 * empty).  Fails with LQ_FAILED, code LQ-GPU-CAPS, naming the bad field when
 * a present key has the wrong type or `j` is not an object; `out` is then
 * undefined.
 */
enum lq_status device_caps_from_json(const cJSON *j, struct device_caps *out,
    struct lq_error *err);

/* Returns a new JSON object for `caps` (caller frees with cJSON_Delete). */
cJSON *device_caps_to_json(const struct device_caps *caps);

/*
 * Reads a caps file (`--device-caps FILE.json`): either one object or
 * {"devices":[...]} of which entry `index` is taken (index < 0: the first).
 * Errors (LQ_FAILED, LQ-GPU-CAPS) name the file; `out` is then undefined.
 */
enum lq_status device_caps_load(const char *path, int index,
    struct device_caps *out, struct lq_error *err);

/* Writes `caps` to path as pretty JSON.  LQ_FAILED on I/O error. */
enum lq_status device_caps_save(const char *path,
    const struct device_caps *caps, struct lq_error *err);

/*
 * latentq's device buffers (weights packs, activation pool chunks) are at
 * most this many bytes, so no single allocation is a large share of a heap.
 */
#define DEVICE_CAPS_MAX_BUFFER ((uint64_t)1 << 30)

/*
 * The largest tensor latentq can hold: it lives in one buffer, so
 * min(max_memory_allocation_size, DEVICE_CAPS_MAX_BUFFER) bytes.  Ops split
 * a tensor larger than one binding (device_caps_max_binding) into several
 * dispatches (gpu/ops.h), so the binding range no longer bounds a tensor.
 */
uint64_t device_caps_max_tensor(const struct device_caps *caps);

/*
 * Answers preflight's question "can a tensor of `nbytes` be held on this
 * device?" against device_caps_max_tensor.  LQ_OK when it fits, else
 * LQ_FAILED (LQ-GPU-RANGE) with a message naming `what`, the size and the
 * limit.
 */
enum lq_status device_caps_check_tensor(const struct device_caps *caps,
    const char *what, uint64_t nbytes, struct lq_error *err);

/*
 * The largest binding in bytes, min(max_storage_buffer_range,
 * max_memory_allocation_size): what one dispatch may bind of a tensor.
 */
uint64_t device_caps_max_binding(const struct device_caps *caps);

/* The largest device-local heap (any heap when none is local), bytes. */
uint64_t device_caps_heap_bytes(const struct device_caps *caps);

/* Fraction of the heap kept free by default (preflight's --memory-margin
 * and the render's weight-streaming choice). */
#define DEVICE_CAPS_MEMORY_MARGIN 0.10

/* device_caps_heap_bytes less `margin` (outside (0, 1): the default). */
uint64_t device_caps_memory_budget(const struct device_caps *caps,
    double margin);

#endif
