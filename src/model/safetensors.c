/*
 * safetensors.c — strict safetensors reader (mmap), writer, sharded sets.
 *
 * Error codes, one per rule broken (err->file is the file, err->field the
 * tensor or key):
 *   LQ-ST-001  cannot open / stat / map the file
 *   LQ-ST-002  file shorter than the 8-byte header length (truncated)
 *   LQ-ST-003  header length past the end of the file or over ST_HEADER_MAX
 *   LQ-ST-004  header is not valid JSON (or holds a NUL byte)
 *   LQ-ST-005  header is not a JSON object
 *   LQ-ST-006  a tensor entry is not an object with dtype/shape/data_offsets
 *   LQ-ST-007  unknown dtype
 *   LQ-ST-008  bad shape: not an array of non-negative integers, > 8 dims
 *   LQ-ST-009  shape product × dtype size overflows 64 bits
 *   LQ-ST-010  shape × dtype size differs from the data_offsets span
 *   LQ-ST-011  bad data_offsets: not two integers, begin > end, or the span
 *              reaches past the end of the data section
 *   LQ-ST-012  two tensors' spans overlap
 *   LQ-ST-013  __metadata__ is not an object of strings
 *   LQ-ST-014  duplicate tensor name
 *   LQ-ST-015  writer: cannot create / write / rename the file
 *   LQ-ST-020  index file unreadable / not JSON / no weight_map object
 *   LQ-ST-021  weight_map entry not a string or a shard path escaping the dir
 *   LQ-ST-022  tensor listed in weight_map missing from its shard
 *   LQ-ST-023  shard tensor not listed in weight_map (or listed for another)
 *   LQ-ST-024  tensor name in more than one file of a set
 *   LQ-ST-025  directory holds no or several candidate files
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/half.h"
#include "core/json.h"
#include "core/util.h"
#include "model/safetensors.h"

struct st_file {
	char *path;
	const unsigned char *base;	/* whole file (mapped or borrowed) */
	size_t size;
	int mapped;
	size_t ntensors;
	struct st_tensor *tensors;	/* header order */
	size_t *by_name;		/* indices sorted by name */
	char **names;
	size_t nmeta;
	char **meta_keys, **meta_values;
};

static const struct {
	const char *name;
	size_t size;
} dtype_info[] = {
	[ST_F64] = {"F64", 8}, [ST_F32] = {"F32", 4}, [ST_F16] = {"F16", 2},
	[ST_BF16] = {"BF16", 2}, [ST_I64] = {"I64", 8}, [ST_I32] = {"I32", 4},
	[ST_I16] = {"I16", 2}, [ST_I8] = {"I8", 1}, [ST_U8] = {"U8", 1},
	[ST_BOOL] = {"BOOL", 1},
};

size_t
st_dtype_size(enum st_dtype t)
{
	LQ_ASSERT((unsigned)t < LQ_ARRAY_LEN(dtype_info));
	return dtype_info[t].size;
}

const char *
st_dtype_name(enum st_dtype t)
{
	LQ_ASSERT((unsigned)t < LQ_ARRAY_LEN(dtype_info));
	return dtype_info[t].name;
}

int
st_dtype_parse(const char *name, enum st_dtype *out)
{
	for (size_t i = 0; i < LQ_ARRAY_LEN(dtype_info); i++) {
		if (strcmp(name, dtype_info[i].name) == 0) {
			*out = (enum st_dtype)i;
			return 0;
		}
	}
	return -1;
}

int64_t
st_tensor_numel(const struct st_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

void
st_tensor_read_f32(const struct st_tensor *t, float *dst)
{
	int64_t n = st_tensor_numel(t);
	const unsigned char *p = t->data;
	for (int64_t i = 0; i < n; i++) {
		switch (t->dtype) {
		case ST_F64: { double v; memcpy(&v, p + 8 * i, 8); dst[i] = (float)v; break; }
		case ST_F32: memcpy(&dst[i], p + 4 * i, 4); break;
		case ST_F16: { uint16_t v; memcpy(&v, p + 2 * i, 2); dst[i] = half_f16_to_f32(v); break; }
		case ST_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); dst[i] = half_bf16_to_f32(v); break; }
		case ST_I64: { int64_t v; memcpy(&v, p + 8 * i, 8); dst[i] = (float)v; break; }
		case ST_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); dst[i] = (float)v; break; }
		case ST_I16: { int16_t v; memcpy(&v, p + 2 * i, 2); dst[i] = (float)v; break; }
		case ST_I8: dst[i] = (float)(int8_t)p[i]; break;
		case ST_U8: dst[i] = (float)p[i]; break;
		case ST_BOOL: dst[i] = p[i] ? 1.0f : 0.0f; break;
		}
	}
}

float *
st_tensor_to_f32(const struct st_tensor *t)
{
	int64_t n = st_tensor_numel(t);
	float *dst = xmalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
	st_tensor_read_f32(t, dst);
	return dst;
}

/* ---- reader ---- */

static enum lq_status
fail(struct lq_error *err, const char *file, const char *tensor, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum lq_status
fail(struct lq_error *err, const char *file, const char *tensor, const char *code,
    const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err == NULL)
		return LQ_FAILED;
	if (tensor != NULL)
		error_set(err, LQ_FAILED, code, "tensor \"%.100s\": %s", tensor, msg);
	else
		error_set(err, LQ_FAILED, code, "%s", msg);
	error_set_where(err, file, 0, 0);
	if (tensor != NULL)
		error_set_field(err, "%s", tensor);
	return LQ_FAILED;
}

/* A JSON number that is an exact non-negative integer below 2^63. */
static int
json_u63(const cJSON *j, uint64_t *out)
{
	if (!cJSON_IsNumber(j))
		return -1;
	double d = j->valuedouble;
	if (!(d >= 0) || d >= 9223372036854775808.0 || d != floor(d))
		return -1;
	*out = (uint64_t)d;
	return 0;
}

static const struct st_file *sort_file;

static int
cmp_by_name(const void *a, const void *b)
{
	size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
	return strcmp(sort_file->tensors[ia].name, sort_file->tensors[ib].name);
}

struct span {
	uint64_t begin, end;
	size_t index;
};

static int
cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static void
file_free(struct st_file *f)
{
	if (f == NULL)
		return;
	if (f->mapped && f->base != NULL)
		munmap((void *)f->base, f->size ? f->size : 1);
	for (size_t i = 0; i < f->ntensors; i++)
		free(f->names[i]);
	for (size_t i = 0; i < f->nmeta; i++) {
		free(f->meta_keys[i]);
		free(f->meta_values[i]);
	}
	free(f->names);
	free(f->tensors);
	free(f->by_name);
	free(f->meta_keys);
	free(f->meta_values);
	free(f->path);
	free(f);
}

static enum lq_status
parse_tensor(struct st_file *f, const cJSON *e, struct st_tensor *t, uint64_t *begin,
    uint64_t *end, uint64_t data_size, struct lq_error *err)
{
	const char *P = f->path, *N = e->string;
	if (!cJSON_IsObject(e))
		return fail(err, P, N, "LQ-ST-006", "entry is not a JSON object");
	const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
	const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
	const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
	if (jd == NULL || js == NULL || jo == NULL)
		return fail(err, P, N, "LQ-ST-006", "entry lacks \"%s\"",
		    jd == NULL ? "dtype" : js == NULL ? "shape" : "data_offsets");
	if (!cJSON_IsString(jd))
		return fail(err, P, N, "LQ-ST-007", "dtype is not a string");
	if (st_dtype_parse(jd->valuestring, &t->dtype) != 0)
		return fail(err, P, N, "LQ-ST-007",
		    "unknown dtype \"%.40s\" (known: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)",
		    jd->valuestring);
	if (!cJSON_IsArray(js))
		return fail(err, P, N, "LQ-ST-008", "shape is not an array");
	int nd = cJSON_GetArraySize(js);
	if (nd > ST_MAX_DIMS)
		return fail(err, P, N, "LQ-ST-008", "shape has %d dimensions, more than %d",
		    nd, ST_MAX_DIMS);
	t->ndim = nd;
	uint64_t numel = 1;
	int overflow = 0, k = 0;
	const cJSON *d;
	cJSON_ArrayForEach(d, js) {
		uint64_t v;
		if (json_u63(d, &v) != 0)
			return fail(err, P, N, "LQ-ST-008",
			    "shape[%d] is not a non-negative integer below 2^63", k);
		t->shape[k++] = (int64_t)v;
		if (__builtin_mul_overflow(numel, v, &numel))
			overflow = 1;
	}
	uint64_t nbytes;
	if (!overflow && __builtin_mul_overflow(numel, (uint64_t)st_dtype_size(t->dtype), &nbytes))
		overflow = 1;
	/* A zero dimension makes the product 0 whatever the others are, but an
	 * overflowing partial product is still refused: no real tensor needs it. */
	if (overflow)
		return fail(err, P, N, "LQ-ST-009",
		    "shape product times dtype size overflows 64 bits");
	if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2)
		return fail(err, P, N, "LQ-ST-011", "data_offsets is not [begin, end]");
	if (json_u63(cJSON_GetArrayItem(jo, 0), begin) != 0 ||
	    json_u63(cJSON_GetArrayItem(jo, 1), end) != 0)
		return fail(err, P, N, "LQ-ST-011",
		    "data_offsets are not non-negative integers below 2^63");
	if (*begin > *end)
		return fail(err, P, N, "LQ-ST-011", "data_offsets begin %llu > end %llu",
		    (unsigned long long)*begin, (unsigned long long)*end);
	if (*end - *begin != nbytes)
		return fail(err, P, N, "LQ-ST-010",
		    "shape x %s size is %llu bytes but data_offsets span %llu bytes",
		    st_dtype_name(t->dtype), (unsigned long long)nbytes,
		    (unsigned long long)(*end - *begin));
	if (*end > data_size)
		return fail(err, P, N, "LQ-ST-011",
		    "data_offsets [%llu, %llu] reach past the data section (%llu bytes)",
		    (unsigned long long)*begin, (unsigned long long)*end,
		    (unsigned long long)data_size);
	t->nbytes = (size_t)nbytes;
	return LQ_OK;
}

static enum lq_status
file_parse(struct st_file *f, struct lq_error *err)
{
	const char *P = f->path;
	if (f->size < 8)
		return fail(err, P, NULL, "LQ-ST-002",
		    "file is %zu bytes, shorter than the 8-byte header length (truncated)",
		    f->size);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | f->base[i];
	if (hlen > f->size - 8)
		return fail(err, P, NULL, "LQ-ST-003",
		    "header length %llu reaches past the end of the file (%zu bytes)",
		    (unsigned long long)hlen, f->size);
	if (hlen > ST_HEADER_MAX)
		return fail(err, P, NULL, "LQ-ST-003",
		    "header length %llu is over the %u-byte limit",
		    (unsigned long long)hlen, ST_HEADER_MAX);
	const char *htext = (const char *)f->base + 8;
	if (memchr(htext, '\0', hlen) != NULL)
		return fail(err, P, NULL, "LQ-ST-004", "header holds a NUL byte");
	char *copy = xstrndup(htext, hlen);
	const char *endp = NULL;
	cJSON *root = cJSON_ParseWithOpts(copy, &endp, 1);
	if (root == NULL) {
		size_t off = endp ? (size_t)(endp - copy) : 0;
		free(copy);
		return fail(err, P, NULL, "LQ-ST-004",
		    "header is not valid JSON (near byte %zu of %llu)", off,
		    (unsigned long long)hlen);
	}
	free(copy);
	enum lq_status rc = LQ_OK;
	if (!cJSON_IsObject(root)) {
		rc = fail(err, P, NULL, "LQ-ST-005", "header is not a JSON object");
		goto out;
	}
	uint64_t data_size = f->size - 8 - hlen;
	const unsigned char *data = f->base + 8 + hlen;
	size_t n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, root)
		n++;
	f->tensors = xcalloc(n ? n : 1, sizeof(*f->tensors));
	f->names = xcalloc(n ? n : 1, sizeof(char *));
	f->by_name = xcalloc(n ? n : 1, sizeof(size_t));
	struct span *spans = xcalloc(n ? n : 1, sizeof(*spans));
	int seen_meta = 0;
	cJSON_ArrayForEach(e, root) {
		if (strcmp(e->string, "__metadata__") == 0) {
			if (seen_meta++ || !cJSON_IsObject(e)) {
				rc = fail(err, P, "__metadata__", "LQ-ST-013",
				    seen_meta > 1 ? "__metadata__ appears twice"
				    : "__metadata__ is not a JSON object");
				goto out_spans;
			}
			size_t total = (size_t)cJSON_GetArraySize(e);
			f->meta_keys = xcalloc(total ? total : 1, sizeof(char *));
			f->meta_values = xcalloc(total ? total : 1, sizeof(char *));
			const cJSON *m;
			cJSON_ArrayForEach(m, e) {
				if (!cJSON_IsString(m)) {
					rc = fail(err, P, "__metadata__", "LQ-ST-013",
					    "value of \"%.80s\" is not a string", m->string);
					goto out_spans;
				}
				f->meta_keys[f->nmeta] = xstrdup(m->string);
				f->meta_values[f->nmeta++] = xstrdup(m->valuestring);
			}
			continue;
		}
		struct st_tensor *t = &f->tensors[f->ntensors];
		uint64_t b = 0, en = 0;
		if ((rc = parse_tensor(f, e, t, &b, &en, data_size, err)) != LQ_OK)
			goto out_spans;
		f->names[f->ntensors] = xstrdup(e->string);
		t->name = f->names[f->ntensors];
		t->data = data + b;
		spans[f->ntensors] = (struct span){b, en, f->ntensors};
		f->by_name[f->ntensors] = f->ntensors;
		f->ntensors++;
	}
	/* Names: sorted index, duplicates refused (cJSON keeps both). */
	sort_file = f;
	qsort(f->by_name, f->ntensors, sizeof(size_t), cmp_by_name);
	for (size_t i = 1; i < f->ntensors; i++) {
		const char *a = f->tensors[f->by_name[i - 1]].name;
		if (strcmp(a, f->tensors[f->by_name[i]].name) == 0) {
			rc = fail(err, P, a, "LQ-ST-014", "tensor name appears twice in the header");
			goto out_spans;
		}
	}
	/* Spans: sorted by begin, each non-empty one must start at or after the
	 * furthest end so far. */
	qsort(spans, f->ntensors, sizeof(*spans), cmp_span);
	uint64_t far = 0;
	size_t far_i = 0;
	for (size_t i = 0; i < f->ntensors; i++) {
		if (spans[i].begin == spans[i].end)
			continue;
		if (spans[i].begin < far) {
			const char *a = f->tensors[spans[i].index].name;
			const char *b2 = f->tensors[far_i].name;
			rc = fail(err, P, a, "LQ-ST-012",
			    "data_offsets [%llu, %llu] overlap those of \"%.100s\" (ending at %llu)",
			    (unsigned long long)spans[i].begin,
			    (unsigned long long)spans[i].end, b2, (unsigned long long)far);
			goto out_spans;
		}
		far = spans[i].end;
		far_i = spans[i].index;
	}
out_spans:
	free(spans);
out:
	cJSON_Delete(root);
	return rc;
}

enum lq_status
st_file_open_memory(const void *buf, size_t size, const char *label, struct st_file **out,
    struct lq_error *err)
{
	struct st_file *f = xcalloc(1, sizeof(*f));
	f->path = xstrdup(label ? label : "(memory)");
	f->base = buf;
	f->size = size;
	*out = NULL;
	if (file_parse(f, err) != LQ_OK) {
		file_free(f);
		return LQ_FAILED;
	}
	*out = f;
	return LQ_OK;
}

enum lq_status
st_file_open(const char *path, struct st_file **out, struct lq_error *err)
{
	*out = NULL;
	/* util_open_regular: a FIFO in place of a weights file must not
	 * block the open. */
	int fd = util_open_regular(path);
	if (fd < 0)
		return fail(err, path, NULL, "LQ-ST-001", "cannot open: %s",
		    util_strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		return fail(err, path, NULL, "LQ-ST-001", "cannot stat: %s", strerror(e));
	}
	struct st_file *f = xcalloc(1, sizeof(*f));
	f->path = xstrdup(path);
	f->size = (size_t)sb.st_size;
	f->mapped = 1;
	if (f->size > 0) {
		void *p = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			int e = errno;
			close(fd);
			f->mapped = 0;
			file_free(f);
			return fail(err, path, NULL, "LQ-ST-001", "cannot mmap: %s", strerror(e));
		}
		f->base = p;
	} else {
		f->mapped = 0;
		f->base = (const unsigned char *)"";
	}
	close(fd);
	if (file_parse(f, err) != LQ_OK) {
		file_free(f);
		return LQ_FAILED;
	}
	*out = f;
	return LQ_OK;
}

void
st_file_close(struct st_file *f)
{
	file_free(f);
}

size_t
st_file_count(const struct st_file *f)
{
	return f->ntensors;
}

const struct st_tensor *
st_file_tensor(const struct st_file *f, size_t i)
{
	LQ_ASSERT(i < f->ntensors);
	return &f->tensors[i];
}

const struct st_tensor *
st_file_find(const struct st_file *f, const char *name)
{
	size_t lo = 0, hi = f->ntensors;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct st_tensor *t = &f->tensors[f->by_name[mid]];
		int c = strcmp(name, t->name);
		if (c == 0)
			return t;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct st_tensor *
st_file_find_or_only(const struct st_file *f, const char *name)
{
	const struct st_tensor *t = st_file_find(f, name);
	if (t == NULL && st_file_count(f) == 1)
		t = st_file_tensor(f, 0);
	return t;
}

const char *
st_file_metadata(const struct st_file *f, const char *key)
{
	for (size_t i = 0; i < f->nmeta; i++)
		if (strcmp(f->meta_keys[i], key) == 0)
			return f->meta_values[i];
	return NULL;
}

size_t
st_file_metadata_count(const struct st_file *f)
{
	return f->nmeta;
}

const char *
st_file_metadata_key(const struct st_file *f, size_t i)
{
	return i < f->nmeta ? f->meta_keys[i] : NULL;
}

const char *
st_file_metadata_value(const struct st_file *f, size_t i)
{
	return i < f->nmeta ? f->meta_values[i] : NULL;
}

const char *
st_file_path(const struct st_file *f)
{
	return f->path;
}

/* ---- writer ---- */

struct st_wtensor {
	char *name;
	enum st_dtype dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	void *data;
	size_t nbytes;
};

struct st_writer {
	struct st_wtensor *t;
	size_t n, cap;
	char **mkeys, **mvals;
	size_t nmeta;
};

struct st_writer *
st_writer_new(void)
{
	return xcalloc(1, sizeof(struct st_writer));
}

static struct st_wtensor *
writer_slot(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
    const int64_t *shape)
{
	LQ_ASSERT((unsigned)dtype < LQ_ARRAY_LEN(dtype_info));
	LQ_ASSERT(ndim >= 0 && ndim <= ST_MAX_DIMS);
	LQ_ASSERT(strcmp(name, "__metadata__") != 0);
	for (size_t i = 0; i < w->n; i++)
		LQ_ASSERT(strcmp(w->t[i].name, name) != 0);
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 16;
		w->t = xrealloc(w->t, w->cap * sizeof(*w->t));
	}
	struct st_wtensor *t = &w->t[w->n++];
	memset(t, 0, sizeof(*t));
	t->name = xstrdup(name);
	t->dtype = dtype;
	t->ndim = ndim;
	size_t numel = 1;
	for (int i = 0; i < ndim; i++) {
		LQ_ASSERT(shape[i] >= 0);
		t->shape[i] = shape[i];
		LQ_ASSERT(!__builtin_mul_overflow(numel, (size_t)shape[i], &numel));
	}
	LQ_ASSERT(!__builtin_mul_overflow(numel, st_dtype_size(dtype), &t->nbytes));
	t->data = xmalloc(t->nbytes ? t->nbytes : 1);
	return t;
}

void
st_writer_add_zeros(struct st_writer *w, const char *name, enum st_dtype dtype,
    int ndim, const int64_t *shape)
{
	struct st_wtensor *t = writer_slot(w, name, dtype, ndim, shape);
	free(t->data);
	t->data = NULL;		/* a hole in the file */
}

void
st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
    const int64_t *shape, const void *data)
{
	struct st_wtensor *t = writer_slot(w, name, dtype, ndim, shape);
	if (t->nbytes)
		memcpy(t->data, data, t->nbytes);
}

void
st_writer_add_f32(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
    const int64_t *shape, const float *data)
{
	struct st_wtensor *t = writer_slot(w, name, dtype, ndim, shape);
	size_t n = t->nbytes / st_dtype_size(dtype);
	unsigned char *p = t->data;
	for (size_t i = 0; i < n; i++) {
		switch (dtype) {
		case ST_F64: { double v = data[i]; memcpy(p + 8 * i, &v, 8); break; }
		case ST_F32: memcpy(p + 4 * i, &data[i], 4); break;
		case ST_F16: { uint16_t v = half_f32_to_f16(data[i]); memcpy(p + 2 * i, &v, 2); break; }
		case ST_BF16: { uint16_t v = half_f32_to_bf16(data[i]); memcpy(p + 2 * i, &v, 2); break; }
		default: LQ_ASSERT(!"st_writer_add_f32 needs a float dtype");
		}
	}
}

void
st_writer_set_metadata(struct st_writer *w, const char *key, const char *value)
{
	for (size_t i = 0; i < w->nmeta; i++) {
		if (strcmp(w->mkeys[i], key) == 0) {
			free(w->mvals[i]);
			w->mvals[i] = xstrdup(value);
			return;
		}
	}
	w->mkeys = xrealloc(w->mkeys, (w->nmeta + 1) * sizeof(char *));
	w->mvals = xrealloc(w->mvals, (w->nmeta + 1) * sizeof(char *));
	w->mkeys[w->nmeta] = xstrdup(key);
	w->mvals[w->nmeta++] = xstrdup(value);
}

static void
json_string(struct strbuf *sb, const char *s)
{
	strbuf_append(sb, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			strbuf_printf(sb, "\\%c", *p);
		else if (*p < 0x20)
			strbuf_printf(sb, "\\u%04x", *p);
		else
			strbuf_append(sb, (const char *)p, 1);
	}
	strbuf_append(sb, "\"", 1);
}

enum lq_status
st_writer_write(struct st_writer *w, const char *path, struct lq_error *err)
{
	return st_writer_write_commit(w, path, NULL, err);
}

enum lq_status
st_writer_write_commit(struct st_writer *w, const char *path,
    const struct file_commit *commit, struct lq_error *err)
{
	struct strbuf sb = {0};
	strbuf_append(&sb, "{", 1);
	int first = 1;
	if (w->nmeta) {
		strbuf_printf(&sb, "\"__metadata__\":{");
		for (size_t i = 0; i < w->nmeta; i++) {
			if (i)
				strbuf_append(&sb, ",", 1);
			json_string(&sb, w->mkeys[i]);
			strbuf_append(&sb, ":", 1);
			json_string(&sb, w->mvals[i]);
		}
		strbuf_append(&sb, "}", 1);
		first = 0;
	}
	/* Data laid out by element size, largest first (as the Rust writer
	 * does): with the 8-aligned data start every tensor is then aligned to
	 * its element size.  The header keeps the add order. */
	size_t *order = xmalloc((w->n ? w->n : 1) * sizeof(size_t));
	uint64_t *offs = xmalloc((w->n ? w->n : 1) * sizeof(uint64_t));
	size_t k = 0;
	for (size_t es = 8; es >= 1; es /= 2)
		for (size_t i = 0; i < w->n; i++)
			if (st_dtype_size(w->t[i].dtype) == es)
				order[k++] = i;
	LQ_ASSERT(k == w->n);
	uint64_t off = 0;
	for (size_t j = 0; j < w->n; j++) {
		offs[order[j]] = off;
		off += w->t[order[j]].nbytes;
	}
	const uint64_t data_bytes = off;
	for (size_t i = 0; i < w->n; i++) {
		const struct st_wtensor *t = &w->t[i];
		off = offs[i];
		if (!first)
			strbuf_append(&sb, ",", 1);
		first = 0;
		json_string(&sb, t->name);
		strbuf_printf(&sb, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(t->dtype));
		for (int d = 0; d < t->ndim; d++)
			strbuf_printf(&sb, "%s%lld", d ? "," : "", (long long)t->shape[d]);
		strbuf_printf(&sb, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
		    (unsigned long long)(off + t->nbytes));
	}
	strbuf_append(&sb, "}", 1);
	while (sb.len % 8)
		strbuf_append(&sb, " ", 1);
	struct file_temp tf;
	FILE *fp = NULL;
	enum lq_status rc = LQ_OK;
	if ((rc = file_open_temp(path, ".tmp", "LQ-ST-015", &tf, err)) !=
	    LQ_OK)
		goto out;
	int dfd = dup(tf.fd);
	if (dfd < 0 || (fp = fdopen(dfd, "wb")) == NULL) {
		rc = file_fail(err, "LQ-ST-015", "fdopen", tf.tmp, errno);
		if (dfd >= 0)
			close(dfd);
		file_discard_temp(&tf);
		goto out;
	}
	unsigned char lenb[8];
	uint64_t hl = sb.len;
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(hl >> (8 * i));
	int ok = fwrite(lenb, 1, 8, fp) == 8 && fwrite(sb.buf, 1, sb.len, fp) == sb.len;
	int holes = 0;
	for (size_t j = 0; ok && j < w->n; j++) {
		const struct st_wtensor *t = &w->t[order[j]];
		if (t->nbytes && t->data == NULL) {
			/* st_writer_add_zeros: skip, the file system keeps a
			 * hole that reads as zeros */
			ok = fseeko(fp, (off_t)t->nbytes, SEEK_CUR) == 0;
			holes = 1;
		} else if (t->nbytes) {
			ok = fwrite(t->data, 1, t->nbytes, fp) == t->nbytes;
		}
	}
	/* a trailing hole: extend the file to its full length */
	if (ok && holes)
		ok = fflush(fp) == 0 && ftruncate(fileno(fp), (off_t)(8 + sb.len +
		    data_bytes)) == 0;
	int e = errno;
	if (fclose(fp) != 0 && ok) {
		ok = 0;
		e = errno;
	}
	if (!ok)
		rc = file_fail(err, "LQ-ST-015", "write", tf.tmp, e);
	else
		rc = file_commit(commit, &tf, "LQ-ST-015", err);
	if (rc != LQ_OK && err != NULL && err->file[0] == '\0')
		error_set_where(err, path, 0, 0);
	file_discard_temp(&tf);
out:
	free(order);
	free(offs);
	free(sb.buf);
	return rc;
}

void
st_writer_free(struct st_writer *w)
{
	if (w == NULL)
		return;
	for (size_t i = 0; i < w->n; i++) {
		free(w->t[i].name);
		free(w->t[i].data);
	}
	for (size_t i = 0; i < w->nmeta; i++) {
		free(w->mkeys[i]);
		free(w->mvals[i]);
	}
	free(w->t);
	free(w->mkeys);
	free(w->mvals);
	free(w);
}

/* ---- sets ---- */

struct st_set {
	char *path;
	struct st_file **files;
	size_t nfiles;
	const struct st_tensor **tensors;	/* sorted by name */
	size_t ntensors;
	size_t nmeta;
	char **mkeys, **mvals;
};

static int
cmp_tensor_ptr(const void *a, const void *b)
{
	const struct st_tensor *x = *(const struct st_tensor *const *)a;
	const struct st_tensor *y = *(const struct st_tensor *const *)b;
	return strcmp(x->name, y->name);
}

static int
has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

void
st_set_close(struct st_set *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nfiles; i++)
		st_file_close(s->files[i]);
	for (size_t i = 0; i < s->nmeta; i++) {
		free(s->mkeys[i]);
		free(s->mvals[i]);
	}
	free(s->mkeys);
	free(s->mvals);
	free(s->files);
	free(s->tensors);
	free(s->path);
	free(s);
}

/* Collects all tensors, sorts them, refuses names found in two files. */
static enum lq_status
set_index(struct st_set *s, struct lq_error *err)
{
	size_t n = 0;
	for (size_t i = 0; i < s->nfiles; i++)
		n += st_file_count(s->files[i]);
	s->tensors = xcalloc(n ? n : 1, sizeof(*s->tensors));
	for (size_t i = 0; i < s->nfiles; i++)
		for (size_t j = 0; j < st_file_count(s->files[i]); j++)
			s->tensors[s->ntensors++] = st_file_tensor(s->files[i], j);
	qsort(s->tensors, s->ntensors, sizeof(*s->tensors), cmp_tensor_ptr);
	for (size_t i = 1; i < s->ntensors; i++)
		if (strcmp(s->tensors[i - 1]->name, s->tensors[i]->name) == 0)
			return fail(err, s->path, s->tensors[i]->name, "LQ-ST-024",
			    "tensor appears in more than one file of the set");
	return LQ_OK;
}

static void
set_add_meta(struct st_set *s, const char *k, const char *v)
{
	s->mkeys = xrealloc(s->mkeys, (s->nmeta + 1) * sizeof(char *));
	s->mvals = xrealloc(s->mvals, (s->nmeta + 1) * sizeof(char *));
	s->mkeys[s->nmeta] = xstrdup(k);
	s->mvals[s->nmeta++] = xstrdup(v);
}

static enum lq_status
set_open_index(struct st_set *s, const char *path, struct lq_error *err)
{
	size_t len;
	char *text = util_read_file(path, &len);
	if (text == NULL)
		return fail(err, path, NULL, "LQ-ST-020", "cannot read: %s", util_strerror(errno));
	cJSON *root = json_parse_document(text, len);
	free(text);
	enum lq_status rc = LQ_OK;
	const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
	if (root == NULL || !cJSON_IsObject(root) || !cJSON_IsObject(wm)) {
		rc = fail(err, path, NULL, "LQ-ST-020",
		    root == NULL ? "index is not valid JSON"
		    : "index has no \"weight_map\" object");
		goto out;
	}
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
	const cJSON *m;
	if (cJSON_IsObject(meta)) {
		cJSON_ArrayForEach(m, meta) {
			if (cJSON_IsString(m)) {
				set_add_meta(s, m->string, m->valuestring);
			} else if (cJSON_IsNumber(m)) {
				char buf[64];
				snprintf(buf, sizeof(buf), "%.17g", m->valuedouble);
				set_add_meta(s, m->string, buf);
			}
		}
	}
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash)
		slash[1] = '\0';
	else
		dir[0] = '\0';
	const cJSON *e;
	size_t nentries = 0;
	cJSON_ArrayForEach(e, wm) {
		nentries++;
		if (!cJSON_IsString(e) || e->valuestring[0] == '\0' ||
		    strchr(e->valuestring, '/') || strcmp(e->valuestring, "..") == 0 ||
		    strcmp(e->valuestring, ".") == 0) {
			rc = fail(err, path, e->string, "LQ-ST-021",
			    "weight_map value is not a shard file name beside the index");
			goto out_dir;
		}
		size_t k;
		for (k = 0; k < s->nfiles; k++) {
			const char *fp = st_file_path(s->files[k]);
			if (strcmp(fp + strlen(dir), e->valuestring) == 0)
				break;
		}
		if (k == s->nfiles) {
			char *sp = xasprintf("%s%s", dir, e->valuestring);
			struct st_file *f;
			rc = st_file_open(sp, &f, err);
			free(sp);
			if (rc != LQ_OK)
				goto out_dir;
			s->files = xrealloc(s->files, (s->nfiles + 1) * sizeof(*s->files));
			s->files[s->nfiles++] = f;
		}
		if (st_file_find(s->files[k], e->string) == NULL) {
			rc = fail(err, path, e->string, "LQ-ST-022",
			    "listed in weight_map for %.200s, which does not hold it",
			    e->valuestring);
			goto out_dir;
		}
	}
	if ((rc = set_index(s, err)) != LQ_OK)
		goto out_dir;
	/* Every shard tensor listed, and listed for its own shard. */
	for (size_t i = 0; i < s->nfiles; i++) {
		const char *fp = st_file_path(s->files[i]) + strlen(dir);
		for (size_t j = 0; j < st_file_count(s->files[i]); j++) {
			const char *name = st_file_tensor(s->files[i], j)->name;
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(wm, name);
			if (v == NULL || strcmp(v->valuestring, fp) != 0) {
				rc = fail(err, path, name, "LQ-ST-023",
				    "held by shard %.200s but %s", fp,
				    v == NULL ? "not listed in weight_map"
				    : "weight_map names another shard");
				goto out_dir;
			}
		}
	}
	(void)nentries;
out_dir:
	free(dir);
out:
	cJSON_Delete(root);
	return rc;
}

/* Picks the file a directory's tensors are in (see st_set_open). */
static enum lq_status
dir_pick(const char *dir, char **pick, struct lq_error *err)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return fail(err, dir, NULL, "LQ-ST-001", "cannot open directory: %s",
		    strerror(errno));
	char *idx[2] = {0}, *st[2] = {0};
	int nidx = 0, nst = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *nm = de->d_name;
		if (nm[0] == '.')
			continue;
		/* Variants ("x.fp16.safetensors") are skipped; only plain names. */
		if (has_suffix(nm, ".safetensors.index.json")) {
			if (strchr(nm, '.') != nm + strlen(nm) - strlen(".safetensors.index.json"))
				continue;
			if (nidx < 2)
				idx[nidx] = xstrdup(nm);
			nidx++;
		} else if (has_suffix(nm, ".safetensors")) {
			if (strchr(nm, '.') != nm + strlen(nm) - strlen(".safetensors"))
				continue;
			if (nst < 2)
				st[nst] = xstrdup(nm);
			nst++;
		}
	}
	closedir(d);
	enum lq_status rc = LQ_OK;
	const char *sep = has_suffix(dir, "/") ? "" : "/";
	if (nidx == 1)
		*pick = xasprintf("%s%s%s", dir, sep, idx[0]);
	else if (nidx == 0 && nst == 1)
		*pick = xasprintf("%s%s%s", dir, sep, st[0]);
	else
		rc = fail(err, dir, NULL, "LQ-ST-025",
		    nidx > 1 ? "directory holds several *.safetensors.index.json files"
		    : nst == 0 ? "directory holds no .safetensors file"
		    : "directory holds several .safetensors files and no index");
	for (int i = 0; i < 2; i++) {
		free(idx[i]);
		free(st[i]);
	}
	return rc;
}

enum lq_status
st_set_open(const char *path, struct st_set **out, struct lq_error *err)
{
	*out = NULL;
	struct stat sb;
	if (stat(path, &sb) != 0)
		return fail(err, path, NULL, "LQ-ST-001", "cannot open: %s", strerror(errno));
	char *file = NULL;
	if (S_ISDIR(sb.st_mode)) {
		if (dir_pick(path, &file, err) != LQ_OK)
			return LQ_FAILED;
	} else {
		file = xstrdup(path);
	}
	struct st_set *s = xcalloc(1, sizeof(*s));
	s->path = file;
	enum lq_status rc;
	if (has_suffix(file, ".json")) {
		rc = set_open_index(s, file, err);
	} else {
		struct st_file *f;
		rc = st_file_open(file, &f, err);
		if (rc == LQ_OK) {
			s->files = xmalloc(sizeof(*s->files));
			s->files[s->nfiles++] = f;
			for (size_t i = 0; i < st_file_metadata_count(f); i++)
				set_add_meta(s, st_file_metadata_key(f, i),
				    st_file_metadata_value(f, i));
			rc = set_index(s, err);
		}
	}
	if (rc != LQ_OK) {
		st_set_close(s);
		return LQ_FAILED;
	}
	*out = s;
	return LQ_OK;
}

size_t
st_set_count(const struct st_set *s)
{
	return s->ntensors;
}

const struct st_tensor *
st_set_tensor(const struct st_set *s, size_t i)
{
	LQ_ASSERT(i < s->ntensors);
	return s->tensors[i];
}

const struct st_tensor *
st_set_find(const struct st_set *s, const char *name)
{
	size_t lo = 0, hi = s->ntensors;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, s->tensors[mid]->name);
		if (c == 0)
			return s->tensors[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

size_t
st_set_file_count(const struct st_set *s)
{
	return s->nfiles;
}

const struct st_file *
st_set_file(const struct st_set *s, size_t i)
{
	LQ_ASSERT(i < s->nfiles);
	return s->files[i];
}

const char *
st_set_path(const struct st_set *s)
{
	return s->path;
}

const char *
st_set_metadata(const struct st_set *s, const char *key)
{
	for (size_t i = 0; i < s->nmeta; i++)
		if (strcmp(s->mkeys[i], key) == 0)
			return s->mvals[i];
	return NULL;
}
