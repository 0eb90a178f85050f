/*
 * safetensors.h — reading and writing safetensors files, and sharded sets.
 *
 * Format (https://github.com/huggingface/safetensors): an 8-byte
 * little-endian header length N, N bytes of JSON object header
 *   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3],
 *    "data_offsets": [begin, end]}, ...}
 * and the data section, offsets relative to its start (byte 8 + N).
 *
 * The reader maps the file read-only and validates the whole header before
 * returning: header length within the file and under ST_HEADER_MAX, header a
 * JSON object, every dtype known, shape product without 64-bit overflow,
 * shape × dtype size == data_offsets span, every span inside the data
 * section, no two non-empty spans overlapping.  Every error names the file
 * (err->file), the tensor (err->field) and the rule (err->code, message);
 * nothing outside the mapping is ever read.
 *
 * Ownership: an st_file owns its mapping, tensor records and names; the
 * `st_tensor` pointers, names, metadata strings and `data` pointers it hands
 * out are borrowed and valid until st_file_close.  `data` is NOT necessarily
 * aligned (a header length that is not a multiple of 8 is legal): read it
 * with memcpy or st_tensor_to_f32.  Data is little-endian as stored.
 *
 * An st_set is one logical tensor set over one file or the shards of a
 * `*.safetensors.index.json` (weight_map); it owns its files.
 */
#ifndef LQ_MODEL_SAFETENSORS_H
#define LQ_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/file.h"

/* Largest header accepted, in bytes (the Rust reference uses 100 MB). */
#define ST_HEADER_MAX (100u << 20)
#define ST_MAX_DIMS 8

enum st_dtype { ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8, ST_BOOL };

struct st_tensor {
	const char *name;
	enum st_dtype dtype;
	int ndim;			/* 0 (scalar) .. ST_MAX_DIMS */
	int64_t shape[ST_MAX_DIMS];	/* entries past ndim are 0 */
	const void *data;		/* borrowed from the mapping, maybe unaligned */
	size_t nbytes;			/* product(shape) * st_dtype_size(dtype) */
};

struct st_file;	/* opaque */

/*
 * Maps and validates `path`.  On success *out owns the mapping.  On failure
 * returns LQ_FAILED, *out is NULL and err names file, tensor and rule (codes
 * LQ-ST-001..016, see safetensors.c).
 */
enum lq_status st_file_open(const char *path, struct st_file **out, struct lq_error *err);
/*
 * Same over a caller's buffer (borrowed: it must outlive the st_file);
 * `label` names it in errors.  Used by the fuzz target and tests.
 */
enum lq_status st_file_open_memory(const void *buf, size_t size, const char *label,
    struct st_file **out, struct lq_error *err);
/* Unmaps and frees; NULL is allowed. */
void st_file_close(struct st_file *f);

/* Number of tensors (the __metadata__ entry is not one). */
size_t st_file_count(const struct st_file *f);
/* i-th tensor in header order, i < st_file_count. */
const struct st_tensor *st_file_tensor(const struct st_file *f, size_t i);
/* Tensor by exact name, NULL if absent (binary search). */
const struct st_tensor *st_file_find(const struct st_file *f, const char *name);
/* The tensor called `name`, else the file's only tensor when it holds just
 * one (how a job's `latents:` file is read), else NULL.  Borrowed. */
const struct st_tensor *st_file_find_or_only(const struct st_file *f,
    const char *name);
/* __metadata__ value by key, NULL if absent. */
const char *st_file_metadata(const struct st_file *f, const char *key);
/* Number of __metadata__ entries and the i-th key/value (NULL past the end). */
size_t st_file_metadata_count(const struct st_file *f);
const char *st_file_metadata_key(const struct st_file *f, size_t i);
const char *st_file_metadata_value(const struct st_file *f, size_t i);
/* Path (or label) the file was opened with. */
const char *st_file_path(const struct st_file *f);

/* Bytes per element; 1 for BOOL. */
size_t st_dtype_size(enum st_dtype t);
/* "F32", "BF16", ... as safetensors spells them. */
const char *st_dtype_name(enum st_dtype t);
/* Parses a safetensors dtype name; returns 0 and sets *out, or -1. */
int st_dtype_parse(const char *name, enum st_dtype *out);
/* Number of elements (product of shape; 1 for a scalar). */
int64_t st_tensor_numel(const struct st_tensor *t);

/*
 * Float view of a tensor: a caller-owned (free()) array of numel floats.
 * F64/F32/F16/BF16 convert exactly or by rounding to nearest; integer and
 * BOOL tensors convert by value.  Never NULL (host allocation exits).
 */
float *st_tensor_to_f32(const struct st_tensor *t);
/* Same into a caller buffer of numel floats. */
void st_tensor_read_f32(const struct st_tensor *t, float *dst);

/* Scalar f16/bf16 conversions: core/half.h. */

/*
 * Writer: collects tensors (data copied at add) and metadata, writes a file
 * with the header padded by spaces to a multiple of 8, tensors in add order.
 * st_writer_add asserts on a bad dtype/ndim or a duplicate name (bugs).
 * st_writer_write writes a fresh temporary PATH.XXXXXX.tmp (core/file.h:
 * never a planted file or symlink) then renames it over PATH; on failure
 * err names the path and errno (LQ-ST-015, or LQ_RETRY LQ-IO-005 for a
 * full disk), and nothing is left at PATH.  st_writer_write_commit hands
 * the finished temporary to `commit` instead of renaming it.
 */
struct st_writer;
struct st_writer *st_writer_new(void);
void st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
    const int64_t *shape, const void *data);
/* As st_writer_add from floats, converting to dtype (F64/F32/F16/BF16). */
void st_writer_add_f32(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
    const int64_t *shape, const float *data);
/* A tensor of zeros that costs no disk: the file gets a hole there (a
 * sparse file), so a real-size model can be written to be planned. */
void st_writer_add_zeros(struct st_writer *w, const char *name,
    enum st_dtype dtype, int ndim, const int64_t *shape);
void st_writer_set_metadata(struct st_writer *w, const char *key, const char *value);
enum lq_status st_writer_write(struct st_writer *w, const char *path, struct lq_error *err);
enum lq_status st_writer_write_commit(struct st_writer *w, const char *path,
    const struct file_commit *commit, struct lq_error *err);
void st_writer_free(struct st_writer *w);

/*
 * Sharded / logical sets.  `path` is one of:
 *   - a .safetensors file;
 *   - a *.safetensors.index.json file: its "weight_map" {tensor: shard} is
 *     read, each shard (relative to the index, no "/" or "..") opened once;
 *     every listed tensor must be in its shard and every shard tensor listed;
 *   - a directory: its one *.safetensors.index.json if there is one, else its
 *     one *.safetensors file (names with a variant such as ".fp16." are
 *     ignored when a plain one exists); zero or several candidates fail.
 * A tensor name must occur once across the set.  On failure LQ_FAILED, *out
 * NULL, err names the file/tensor/rule (LQ-ST-02x).
 */
struct st_set;
enum lq_status st_set_open(const char *path, struct st_set **out, struct lq_error *err);
void st_set_close(struct st_set *s);
size_t st_set_count(const struct st_set *s);
/* i-th tensor, sorted by name. */
const struct st_tensor *st_set_tensor(const struct st_set *s, size_t i);
const struct st_tensor *st_set_find(const struct st_set *s, const char *name);
/* Files of the set in open order (one for a single file). */
size_t st_set_file_count(const struct st_set *s);
const struct st_file *st_set_file(const struct st_set *s, size_t i);
/* The index path, or the single file's path. */
const char *st_set_path(const struct st_set *s);
/* The weight_map index's own "metadata" object value by key (e.g.
 * "total_size" printed as text), or the single file's __metadata__. */
const char *st_set_metadata(const struct st_set *s, const char *key);

#endif
