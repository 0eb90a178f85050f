/*
 * caps.c — device caps to and from JSON (no Vulkan here: preflight uses this
 * on machines without a GPU).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "gpu/caps.h"

#define CAPS_U64(X) \
	X(max_storage_buffer_range) X(max_memory_allocation_size) \
	X(min_storage_buffer_offset_alignment)
#define CAPS_U32(X) \
	X(vendor_id) X(device_id) X(driver_version) \
	X(max_compute_shared_memory_size) X(max_workgroup_invocations) \
	X(max_push_constants_size) X(subgroup_size)
#define CAPS_BOOL(X) X(fp16) X(int8) X(bf16) X(storage_16bit) \
	X(subgroup_arithmetic)
#define CAPS_STR(X) \
	X(name) X(device_type) X(api_version) X(driver_name) X(driver_info) \
	X(uuid)

cJSON *
device_caps_to_json(const struct device_caps *c)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "index", c->index);
	cJSON_AddNumberToObject(j, "device_count", c->device_count);
#define X(f) cJSON_AddStringToObject(j, #f, c->f);
	CAPS_STR(X)
#undef X
#define X(f) cJSON_AddNumberToObject(j, #f, (double)c->f);
	CAPS_U64(X) CAPS_U32(X)
#undef X
#define X(f) cJSON_AddBoolToObject(j, #f, c->f != 0);
	CAPS_BOOL(X)
#undef X
	cJSON *heaps = cJSON_AddArrayToObject(j, "heaps");
	for (int i = 0; i < c->heap_count && i < DEVICE_CAPS_MAX_HEAPS; i++) {
		cJSON *h = cJSON_CreateObject();
		cJSON_AddNumberToObject(h, "size", (double)c->heap_size[i]);
		cJSON_AddBoolToObject(h, "device_local", c->heap_device_local[i]);
		cJSON_AddItemToArray(heaps, h);
	}
	cJSON *a = cJSON_AddArrayToObject(j, "max_workgroup_size");
	for (int i = 0; i < 3; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(c->max_workgroup_size[i]));
	a = cJSON_AddArrayToObject(j, "max_workgroup_count");
	for (int i = 0; i < 3; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(c->max_workgroup_count[i]));
	return j;
}

static enum lq_status
caps_bad(struct lq_error *err, const char *field, const char *want)
{
	error_set(err, LQ_FAILED, "LQ-GPU-CAPS", "device caps: %s must be %s",
	    field, want);
	error_set_field(err, "%s", field);
	return LQ_FAILED;
}

static enum lq_status
caps_num(const cJSON *j, const char *key, double *v, struct lq_error *err)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, key);
	if (it == NULL) {
		*v = 0;
		return LQ_OK;
	}
	if (!cJSON_IsNumber(it) || it->valuedouble < 0)
		return caps_bad(err, key, "a non-negative number");
	*v = it->valuedouble;
	return LQ_OK;
}

enum lq_status
device_caps_from_json(const cJSON *j, struct device_caps *c,
    struct lq_error *err)
{
	double v;
	memset(c, 0, sizeof(*c));
	if (!cJSON_IsObject(j))
		return caps_bad(err, "(top level)", "an object");
	c->index = (int)json_get_int(j, "index", 0);
	c->device_count = (int)json_get_int(j, "device_count", 1);
#define X(f) do { \
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, #f); \
	if (it != NULL && !cJSON_IsString(it)) \
		return caps_bad(err, #f, "a string"); \
	if (it != NULL) \
		snprintf(c->f, sizeof(c->f), "%s", it->valuestring); \
} while (0);
	CAPS_STR(X)
#undef X
#define X(f) if (caps_num(j, #f, &v, err) != LQ_OK) return LQ_FAILED; \
	c->f = (uint64_t)v;
	CAPS_U64(X)
#undef X
#define X(f) if (caps_num(j, #f, &v, err) != LQ_OK) return LQ_FAILED; \
	c->f = (uint32_t)v;
	CAPS_U32(X)
#undef X
#define X(f) do { \
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, #f); \
	if (it != NULL && !cJSON_IsBool(it)) \
		return caps_bad(err, #f, "true or false"); \
	c->f = cJSON_IsTrue(it); \
} while (0);
	CAPS_BOOL(X)
#undef X
	const cJSON *heaps = cJSON_GetObjectItemCaseSensitive(j, "heaps");
	if (heaps != NULL) {
		if (!cJSON_IsArray(heaps))
			return caps_bad(err, "heaps", "an array");
		const cJSON *h;
		cJSON_ArrayForEach(h, heaps) {
			if (c->heap_count >= DEVICE_CAPS_MAX_HEAPS)
				break;
			if (!cJSON_IsObject(h))
				return caps_bad(err, "heaps[]", "objects");
			if (caps_num(h, "size", &v, err) != LQ_OK)
				return LQ_FAILED;
			c->heap_size[c->heap_count] = (uint64_t)v;
			c->heap_device_local[c->heap_count] =
			    json_get_bool(h, "device_local", 0);
			c->heap_count++;
		}
	}
	/* A caps file that describes no device must not pass for one whose
	 * limits are all zero (preflight would then check nothing). */
	if (c->name[0] == '\0')
		return caps_bad(err, "name", "the device's name (a non-empty "
		    "string, as `latentq devices --json` writes it)");

	static const char *arrays[2] = {"max_workgroup_size", "max_workgroup_count"};
	uint32_t *dst[2] = {c->max_workgroup_size, c->max_workgroup_count};
	for (int k = 0; k < 2; k++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, arrays[k]);
		if (a == NULL)
			continue;
		if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3)
			return caps_bad(err, arrays[k], "an array of 3 numbers");
		for (int i = 0; i < 3; i++) {
			const cJSON *it = cJSON_GetArrayItem(a, i);
			if (!cJSON_IsNumber(it) || it->valuedouble < 0)
				return caps_bad(err, arrays[k],
				    "an array of 3 numbers");
			dst[k][i] = (uint32_t)it->valuedouble;
		}
	}
	return LQ_OK;
}

enum lq_status
device_caps_load(const char *path, int index, struct device_caps *out,
    struct lq_error *err)
{
	size_t n;
	char *text = util_read_file(path, &n);
	if (text == NULL) {
		error_set(err, LQ_FAILED, "LQ-GPU-CAPS",
		    "cannot read device caps file %s: %s", path,
		    util_strerror(errno));
		error_set_where(err, path, 0, 0);
		return LQ_FAILED;
	}
	cJSON *j = json_parse_document(text, n);
	free(text);
	if (j == NULL) {
		error_set(err, LQ_FAILED, "LQ-GPU-CAPS",
		    "device caps file is not valid JSON");
		error_set_where(err, path, 0, 0);
		return LQ_FAILED;
	}
	const cJSON *obj = j;
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(j, "devices");
	if (devs != NULL) {
		int count = cJSON_IsArray(devs) ? cJSON_GetArraySize(devs) : 0;
		int i = index < 0 ? 0 : index;
		if (i >= count) {
			error_set(err, LQ_FAILED, "LQ-GPU-CAPS",
			    "device %d not in caps file (%d devices)", i, count);
			error_set_where(err, path, 0, 0);
			cJSON_Delete(j);
			return LQ_FAILED;
		}
		obj = cJSON_GetArrayItem(devs, i);
	}
	enum lq_status st = device_caps_from_json(obj, out, err);
	if (st != LQ_OK)
		error_set_where(err, path, 0, 0);
	cJSON_Delete(j);
	return st;
}

enum lq_status
device_caps_save(const char *path, const struct device_caps *caps,
    struct lq_error *err)
{
	cJSON *j = device_caps_to_json(caps);
	char *text = json_pretty(j);
	cJSON_Delete(j);
	FILE *fp = fopen(path, "w");
	int ok = fp != NULL && fputs(text, fp) >= 0 && fputc('\n', fp) != EOF;
	if (fp != NULL && fclose(fp) != 0)
		ok = 0;
	free(text);
	if (!ok) {
		error_set(err, LQ_FAILED, "LQ-GPU-CAPS",
		    "cannot write device caps file %s", path);
		error_set_where(err, path, 0, 0);
		return LQ_FAILED;
	}
	return LQ_OK;
}

uint64_t
device_caps_max_binding(const struct device_caps *caps)
{
	uint64_t m = caps->max_storage_buffer_range;
	if (caps->max_memory_allocation_size != 0 &&
	    caps->max_memory_allocation_size < m)
		m = caps->max_memory_allocation_size;
	return m;
}

uint64_t
device_caps_max_tensor(const struct device_caps *caps)
{
	uint64_t m = DEVICE_CAPS_MAX_BUFFER;
	if (caps->max_memory_allocation_size != 0 &&
	    caps->max_memory_allocation_size < m)
		m = caps->max_memory_allocation_size;
	return m;
}

enum lq_status
device_caps_check_tensor(const struct device_caps *caps, const char *what,
    uint64_t nbytes, struct lq_error *err)
{
	uint64_t m = device_caps_max_tensor(caps);
	if (nbytes <= m)
		return LQ_OK;
	error_set(err, LQ_FAILED, "LQ-GPU-RANGE",
	    "%s needs %llu bytes in one buffer but device \"%s\" allocates "
	    "at most %llu (maxMemoryAllocationSize, and latentq's buffers of "
	    "at most %llu)", what ? what : "tensor",
	    (unsigned long long)nbytes, caps->name, (unsigned long long)m,
	    (unsigned long long)DEVICE_CAPS_MAX_BUFFER);
	error_set_hint(err, "reduce the resolution, frame count or batch size");
	return LQ_FAILED;
}

uint64_t
device_caps_heap_bytes(const struct device_caps *caps)
{
	uint64_t heap = 0;
	int any_local = 0;
	for (int i = 0; i < caps->heap_count && i < DEVICE_CAPS_MAX_HEAPS; i++)
		any_local |= caps->heap_device_local[i];
	for (int i = 0; i < caps->heap_count && i < DEVICE_CAPS_MAX_HEAPS; i++)
		if ((!any_local || caps->heap_device_local[i]) &&
		    caps->heap_size[i] > heap)
			heap = caps->heap_size[i];
	return heap;
}

uint64_t
device_caps_memory_budget(const struct device_caps *caps, double margin)
{
	if (!(margin > 0 && margin < 1))
		margin = DEVICE_CAPS_MEMORY_MARGIN;
	return (uint64_t)((double)device_caps_heap_bytes(caps) * (1.0 - margin));
}
