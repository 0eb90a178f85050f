/*
 * st-tool.c — safetensors helpers for the render tests.
 *
 *   st-tool diff MINE GOLD KEY ATOL   max |mine - gold| of tensor KEY (any
 *                                     float or u8 dtype) <= ATOL; prints the
 *                                     max abs and max rel error
 *   st-tool merge OUT IN...           one file holding every tensor of the
 *                                     inputs (first wins on a name clash)
 *   st-tool fill OUT NAME D0 [D1...]  one F32 tensor NAME of that shape,
 *                                     deterministic values in [-1, 1]
 *   st-tool zeros OUT NAME D0 [D1...] the same, all zeros
 *   st-tool crop OUT IN KEY DIM START LEN
 *                                     tensor KEY of IN sliced to
 *                                     [START, START + LEN) along DIM, as F32
 *   st-tool index OUT IN KEY I NEW    KEY[I] of IN (dim 0 dropped: one step
 *                                     of a [steps, ...] save_tensors
 *                                     stack) as F32 tensor NEW
 *   st-tool pick OUT IN KEY[:NEW]...  tensors KEY of IN (renamed NEW) into
 *                                     OUT; a missing KEY is an error
 *   st-tool unprefix OUT IN PREFIX    every tensor of IN, PREFIX dropped
 *                                     from the names that start with it
 *                                     (the goldens' "vae.decoder..." ->
 *                                     the decoder's "decoder...")
 *   st-tool prefix OUT IN PREFIX      every tensor of IN renamed
 *                                     PREFIX<name> (a two-stage job's
 *                                     "stage1." / "stage2." draws)
 *   st-tool resize OUT IMAGE KEY H W  IMAGE resized as PIL's LANCZOS
 *                                     (media_resize_lanczos) to H x W, as
 *                                     U8 tensor KEY [H, W, 3]
 *   st-tool png OUT IN KEY            U8 tensor KEY [H, W, 3] of IN as an
 *                                     RGB PNG
 *   st-tool png-chw OUT IN KEY        F32 tensor KEY [1, 3, H, W] of IN in
 *                                     [-1, 1] (VideoProcessor.preprocess's
 *                                     uint8 / 255 * 2 - 1) back to its
 *                                     uint8 pixels, as an RGB PNG
 *   st-tool image OUT IMAGE KEY       an image (media_read_image: PNG,
 *                                     JPEG) as U8 tensor KEY [H, W, 3]
 *   st-tool lora OUT MODULE OUT IN R  a PEFT-format LoRA for one Linear of a
 *                                     transformer (keys
 *                                     transformer.MODULE.lora_{A,B}.weight),
 *                                     deterministic values in [-0.05, 0.05]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "media/media.h"
#include "model/safetensors.h"

static struct st_file *
open_or_die(const char *path)
{
	struct st_file *f = NULL;
	struct lq_error err;
	error_clear(&err);
	if (st_file_open(path, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(2);
	}
	return f;
}

static double *
values(const struct st_tensor *t, size_t *n)
{
	size_t count = 1;
	for (int i = 0; i < t->ndim; i++)
		count *= (size_t)t->shape[i];
	double *v = xmalloc(count * sizeof(double));
	if (t->dtype == ST_U8) {
		for (size_t i = 0; i < count; i++)
			v[i] = ((const unsigned char *)t->data)[i];
	} else {
		float *f = st_tensor_to_f32(t);
		for (size_t i = 0; i < count; i++)
			v[i] = f[i];
		free(f);
	}
	*n = count;
	return v;
}

static int
do_diff(const char *mine_path, const char *gold_path, const char *key,
    double atol)
{
	struct st_file *mine = open_or_die(mine_path), *gold = open_or_die(gold_path);
	const struct st_tensor *a = st_file_find(mine, key);
	const struct st_tensor *b = st_file_find(gold, key);
	if (a == NULL || b == NULL || a->ndim != b->ndim ||
	    memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) != 0) {
		fprintf(stderr, "%s: missing or shape differs from the golden\n", key);
		return 1;
	}
	size_t n, m;
	double *x = values(a, &n), *y = values(b, &m);
	double max_abs = 0, max_gold = 0;
	for (size_t i = 0; i < n; i++) {
		double d = fabs(x[i] - y[i]);
		if (!(d <= max_abs))
			max_abs = isnan(d) ? INFINITY : (d > max_abs ? d : max_abs);
		if (fabs(y[i]) > max_gold)
			max_gold = fabs(y[i]);
	}
	int ok = max_abs <= atol;
	printf("%-22s max abs %.3g  max rel %.3g  (atol %g) %s\n", key, max_abs,
	    max_gold > 0 ? max_abs / max_gold : 0, atol, ok ? "ok" : "FAIL");
	free(x);
	free(y);
	st_file_close(mine);
	st_file_close(gold);
	return ok ? 0 : 1;
}

/* Writes w to out and frees it; 0, or 1 with the error printed. */
static int
write_out(struct st_writer *w, const char *out)
{
	struct lq_error err;
	error_clear(&err);
	int rc = st_writer_write(w, out, &err) == LQ_OK ? 0 : 1;
	if (rc)
		error_print(&err, stderr);
	st_writer_free(w);
	return rc;
}

static int
do_merge(const char *out, int n, char **in)
{
	struct st_writer *w = st_writer_new();
	struct st_file **files = xcalloc((size_t)n, sizeof(*files));
	char **seen = NULL;
	size_t n_seen = 0;
	for (int i = 0; i < n; i++) {
		files[i] = open_or_die(in[i]);
		for (size_t k = 0; k < st_file_count(files[i]); k++) {
			const struct st_tensor *t = st_file_tensor(files[i], k);
			int dup = 0;
			for (size_t s = 0; s < n_seen; s++)
				dup |= strcmp(seen[s], t->name) == 0;
			if (dup)
				continue;
			seen = xrealloc(seen, (n_seen + 1) * sizeof(char *));
			seen[n_seen++] = xstrdup(t->name);
			st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data);
		}
	}
	int rc = write_out(w, out);
	for (int i = 0; i < n; i++)
		st_file_close(files[i]);
	for (size_t s = 0; s < n_seen; s++)
		free(seen[s]);
	free(seen);
	free(files);
	return rc;
}

static int
do_unprefix(const char *out, const char *in, const char *prefix)
{
	struct st_file *f = open_or_die(in);
	struct st_writer *w = st_writer_new();
	size_t np = strlen(prefix);
	for (size_t k = 0; k < st_file_count(f); k++) {
		const struct st_tensor *t = st_file_tensor(f, k);
		const char *name = strncmp(t->name, prefix, np) == 0 ?
		    t->name + np : t->name;
		st_writer_add(w, name, t->dtype, t->ndim, t->shape, t->data);
	}
	int rc = write_out(w, out);
	st_file_close(f);
	return rc;
}

/* prefix: every tensor of IN renamed PREFIX<name>. */
static int
do_prefix(const char *out, const char *in, const char *prefix)
{
	struct st_file *f = open_or_die(in);
	struct st_writer *w = st_writer_new();
	size_t n = st_file_count(f);
	char **names = xcalloc(n + 1, sizeof(*names));
	for (size_t k = 0; k < n; k++) {
		const struct st_tensor *t = st_file_tensor(f, k);
		names[k] = xasprintf("%s%s", prefix, t->name);
		st_writer_add(w, names[k], t->dtype, t->ndim, t->shape, t->data);
	}
	int rc = write_out(w, out);
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	free(names);
	st_file_close(f);
	return rc;
}

/* resize: an image resized with media_resize_lanczos (PIL LANCZOS) to
 * H x W, as U8 tensor KEY [H, W, 3]. */
static int
do_resize(const char *out, const char *in, const char *key, int oh, int ow)
{
	uint8_t *rgb = NULL;
	int h = 0, w = 0;
	struct lq_error err;

	error_clear(&err);
	if (oh < 1 || ow < 1)
		return 2;
	if (media_read_image(in, &rgb, &h, &w, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 1;
	}
	uint8_t *small = xmalloc((size_t)oh * ow * 3);
	media_resize_lanczos(rgb, h, w, small, oh, ow);
	struct st_writer *wr = st_writer_new();
	int64_t shape[3] = {oh, ow, 3};
	st_writer_add(wr, key, ST_U8, 3, shape, small);
	int rc = write_out(wr, out);
	free(small);
	free(rgb);
	return rc;
}

static int
do_lora(const char *out, const char *module, int64_t n_out, int64_t n_in,
    int64_t rank)
{
	uint32_t x = 12345;
	float *a = xmalloc((size_t)(rank * n_in) * sizeof(float));
	float *b = xmalloc((size_t)(n_out * rank) * sizeof(float));
	for (int64_t i = 0; i < rank * n_in; i++) {
		x = x * 1664525u + 1013904223u;
		a[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 0.1f;
	}
	for (int64_t i = 0; i < n_out * rank; i++) {
		x = x * 1664525u + 1013904223u;
		b[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 0.1f;
	}
	struct st_writer *w = st_writer_new();
	char *ka = xasprintf("transformer.%s.lora_A.weight", module);
	char *kb = xasprintf("transformer.%s.lora_B.weight", module);
	int64_t sa[2] = {rank, n_in}, sb[2] = {n_out, rank};
	st_writer_add(w, ka, ST_F32, 2, sa, a);
	st_writer_add(w, kb, ST_F32, 2, sb, b);
	int rc = write_out(w, out);
	free(ka);
	free(kb);
	free(a);
	free(b);
	return rc;
}

static int
do_pick(const char *out, const char *in, int n, char **keys)
{
	struct st_file *f = open_or_die(in);
	struct st_writer *w = st_writer_new();
	struct lq_error err;
	int rc = 0;

	for (int i = 0; i < n && rc == 0; i++) {
		char *key = xstrdup(keys[i]), *colon = strchr(key, ':');
		const struct st_tensor *t;

		if (colon)
			*colon = '\0';
		t = st_file_find(f, key);
		if (t == NULL) {
			fprintf(stderr, "st-tool: %s has no tensor %s\n", in, key);
			rc = 1;
		} else {
			st_writer_add(w, colon ? colon + 1 : key, t->dtype, t->ndim,
			    t->shape, t->data);
		}
		free(key);
	}
	error_clear(&err);
	if (rc == 0 && st_writer_write(w, out, &err) != LQ_OK) {
		error_print(&err, stderr);
		rc = 1;
	}
	st_writer_free(w);
	st_file_close(f);
	return rc;
}

static int
do_png(const char *out, const char *in, const char *key)
{
	struct st_file *f = open_or_die(in);
	const struct st_tensor *t = st_file_find(f, key);
	struct lq_error err;
	int rc = 0;

	error_clear(&err);
	if (t == NULL || t->dtype != ST_U8 || t->ndim != 3 || t->shape[2] != 3) {
		fprintf(stderr, "st-tool: %s has no U8 [H, W, 3] tensor %s\n", in,
		    key);
		rc = 1;
	} else if (media_write_png(out, t->data, (int)t->shape[0],
	    (int)t->shape[1], NULL, &err) != LQ_OK) {
		error_print(&err, stderr);
		rc = 1;
	}
	st_file_close(f);
	return rc;
}

static int
do_png_chw(const char *out, const char *in, const char *key)
{
	struct st_file *f = open_or_die(in);
	const struct st_tensor *t = st_file_find(f, key);
	struct lq_error err;
	int rc = 0;

	error_clear(&err);
	if (t == NULL || t->ndim != 4 || t->shape[0] != 1 || t->shape[1] != 3) {
		fprintf(stderr, "st-tool: %s has no [1, 3, H, W] tensor %s\n", in,
		    key);
		st_file_close(f);
		return 1;
	}
	int64_t H = t->shape[2], W = t->shape[3], hw = H * W;
	float *x = st_tensor_to_f32(t);
	uint8_t *rgb = xmalloc((size_t)(3 * hw));
	for (int64_t i = 0; i < hw && rc == 0; i++)
		for (int c = 0; c < 3; c++) {
			double u = ((double)x[c * hw + i] + 1.0) * 127.5;
			double r = rint(u);
			if (fabs(u - r) > 1e-3 || r < 0 || r > 255) {
				fprintf(stderr, "st-tool: %s[%d, %lld] = %g is not "
				    "a uint8 / 255 * 2 - 1\n", key, c,
				    (long long)i, (double)x[c * hw + i]);
				rc = 1;
				break;
			}
			rgb[i * 3 + c] = (uint8_t)r;
		}
	if (rc == 0 && media_write_png(out, rgb, (int)H, (int)W, NULL, &err) !=
	    LQ_OK) {
		error_print(&err, stderr);
		rc = 1;
	}
	free(rgb);
	free(x);
	st_file_close(f);
	return rc;
}

static int
do_image(const char *out, const char *in, const char *key)
{
	uint8_t *rgb = NULL;
	int h = 0, w = 0, rc = 0;
	struct lq_error err;

	error_clear(&err);
	if (media_read_image(in, &rgb, &h, &w, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 1;
	}
	struct st_writer *wr = st_writer_new();
	int64_t shape[3] = {h, w, 3};
	st_writer_add(wr, key, ST_U8, 3, shape, rgb);
	if (st_writer_write(wr, out, &err) != LQ_OK) {
		error_print(&err, stderr);
		rc = 1;
	}
	st_writer_free(wr);
	free(rgb);
	return rc;
}

static int
do_index(const char *out, const char *in, const char *key, int64_t i,
    const char *name)
{
	struct st_file *f = open_or_die(in);
	const struct st_tensor *t = st_file_find(f, key);
	struct lq_error err;
	int rc = 0;

	if (t == NULL || t->ndim < 2 || i < 0 || i >= t->shape[0]) {
		fprintf(stderr, "st-tool: %s: no tensor %s with an index %lld "
		    "on dim 0\n", in, key, (long long)i);
		st_file_close(f);
		return 1;
	}
	size_t inner = 1;
	for (int d = 1; d < t->ndim; d++)
		inner *= (size_t)t->shape[d];
	float *all = st_tensor_to_f32(t);
	struct st_writer *w = st_writer_new();
	st_writer_add(w, name, ST_F32, t->ndim - 1, t->shape + 1,
	    all + (size_t)i * inner);
	error_clear(&err);
	if (st_writer_write(w, out, &err) != LQ_OK) {
		error_print(&err, stderr);
		rc = 1;
	}
	st_writer_free(w);
	free(all);
	st_file_close(f);
	return rc;
}

static int
do_crop(const char *out, const char *in, const char *key, int dim,
    int64_t start, int64_t len)
{
	struct st_file *f = open_or_die(in);
	const struct st_tensor *t = st_file_find(f, key);
	struct lq_error err;
	int64_t shape[8], outer = 1, inner = 1;
	int rc = 0;

	if (t == NULL || dim < 0 || dim >= t->ndim || start < 0 || len < 1 ||
	    start + len > t->shape[dim]) {
		fprintf(stderr, "st-tool: %s: no tensor %s with [%lld, %lld) on "
		    "dim %d\n", in, key, (long long)start,
		    (long long)(start + len), dim);
		st_file_close(f);
		return 1;
	}
	for (int i = 0; i < t->ndim; i++) {
		shape[i] = i == dim ? len : t->shape[i];
		if (i < dim)
			outer *= t->shape[i];
		else if (i > dim)
			inner *= t->shape[i];
	}
	float *all = st_tensor_to_f32(t);
	float *v = xmalloc((size_t)(outer * len * inner) * sizeof(float));
	for (int64_t o = 0; o < outer; o++)
		memcpy(v + o * len * inner,
		    all + (o * t->shape[dim] + start) * inner,
		    (size_t)(len * inner) * sizeof(float));
	struct st_writer *w = st_writer_new();
	st_writer_add(w, key, ST_F32, t->ndim, shape, v);
	error_clear(&err);
	if (st_writer_write(w, out, &err) != LQ_OK) {
		error_print(&err, stderr);
		rc = 1;
	}
	st_writer_free(w);
	free(all);
	free(v);
	st_file_close(f);
	return rc;
}

static int
do_fill(const char *out, const char *name, int ndim, char **dims, int zeros)
{
	int64_t shape[8], n = 1;
	uint32_t x = 2468;
	if (ndim < 1 || ndim > 8)
		return 2;
	for (int i = 0; i < ndim; i++) {
		shape[i] = atoll(dims[i]);
		if (shape[i] < 1)
			return 2;
		n *= shape[i];
	}
	float *v = xmalloc((size_t)n * sizeof(float));
	for (int64_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		v[i] = zeros ? 0.0f : (float)(x >> 8) / 8388608.0f - 1.0f;
	}
	struct st_writer *w = st_writer_new();
	st_writer_add(w, name, ST_F32, ndim, shape, v);
	int rc = write_out(w, out);
	free(v);
	return rc;
}

int
main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "fill") == 0)
		return do_fill(argv[2], argv[3], argc - 4, argv + 4, 0);
	if (argc >= 5 && strcmp(argv[1], "zeros") == 0)
		return do_fill(argv[2], argv[3], argc - 4, argv + 4, 1);
	if (argc == 8 && strcmp(argv[1], "crop") == 0)
		return do_crop(argv[2], argv[3], argv[4], atoi(argv[5]),
		    atoll(argv[6]), atoll(argv[7]));
	if (argc == 7 && strcmp(argv[1], "index") == 0)
		return do_index(argv[2], argv[3], argv[4], atoll(argv[5]),
		    argv[6]);
	if (argc == 7 && strcmp(argv[1], "lora") == 0)
		return do_lora(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]),
		    atoll(argv[6]));
	if (argc == 6 && strcmp(argv[1], "diff") == 0)
		return do_diff(argv[2], argv[3], argv[4], atof(argv[5]));
	if (argc >= 4 && strcmp(argv[1], "merge") == 0)
		return do_merge(argv[2], argc - 3, argv + 3);
	if (argc == 5 && strcmp(argv[1], "image") == 0)
		return do_image(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "png-chw") == 0)
		return do_png_chw(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "png") == 0)
		return do_png(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "prefix") == 0)
		return do_prefix(argv[2], argv[3], argv[4]);
	if (argc == 7 && strcmp(argv[1], "resize") == 0)
		return do_resize(argv[2], argv[3], argv[4], atoi(argv[5]),
		    atoi(argv[6]));
	if (argc == 5 && strcmp(argv[1], "unprefix") == 0)
		return do_unprefix(argv[2], argv[3], argv[4]);
	if (argc >= 5 && strcmp(argv[1], "pick") == 0)
		return do_pick(argv[2], argv[3], argc - 4, argv + 4);
	fprintf(stderr, "usage: st-tool diff MINE GOLD KEY ATOL | merge OUT IN... | "
	    "fill OUT NAME D0 [D1...] | zeros OUT NAME D0 [D1...] | "
	    "crop OUT IN KEY DIM START LEN | index OUT IN KEY I NEW | pick OUT IN KEY[:NEW]... | png OUT IN KEY | "
	    "png-chw OUT IN KEY | image OUT IMAGE KEY | unprefix OUT IN PREFIX | "
	    "prefix OUT IN PREFIX | resize OUT IMAGE KEY H W | "
	    "lora OUT MODULE OUT IN RANK\n");
	return 2;
}
