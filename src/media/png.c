/*
 * png.c — PNG frames and contact sheets through libpng (thumbnails scaled
 * with libswscale).  See media.h.
 *
 * libpng reports errors by longjmp; each libpng session lives in its own
 * function whose locals are not changed after setjmp, with the message
 * captured by the error callback.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <png.h>

#include "core/file.h"
#include "core/util.h"
#include "media/media-int.h"
#include "media/media.h"

struct png_ctx {
	const char *path;
	FILE *fp;		/* written through png_write_data */
	int write_errno;	/* why a write failed (a full disk), else 0 */
	char message[256];
};

static void
png_on_error(png_structp png, png_const_charp msg)
{
	struct png_ctx *ctx = png_get_error_ptr(png);
	snprintf(ctx->message, sizeof(ctx->message), "%s", msg);
	png_longjmp(png, 1);
}

/* libpng's own writer says only "Write Error": keep the errno too. */
static void
png_write_data(png_structp png, png_bytep data, size_t n)
{
	struct png_ctx *ctx = png_get_io_ptr(png);
	if (fwrite(data, 1, n, ctx->fp) != n) {
		ctx->write_errno = errno ? errno : EIO;
		png_error(png, "Write Error");
	}
}

static void
png_flush_data(png_structp png)
{
	struct png_ctx *ctx = png_get_io_ptr(png);
	if (fflush(ctx->fp) != 0) {
		ctx->write_errno = errno ? errno : EIO;
		png_error(png, "Write Error");
	}
}

static void
png_on_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;	/* libpng warnings about ancillary chunks: ignore */
}

/* Writes to an open FILE; 0 on success, -1 with ctx->message set. */
static int
png_write_fp(FILE *fp, struct png_ctx *ctx, const uint8_t *rgb, int height,
    int width, const struct media_tag *tags, size_t n_tags)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx,
	    png_on_error, png_on_warning);
	if (png == NULL) {
		snprintf(ctx->message, sizeof(ctx->message),
		    "png_create_write_struct failed");
		return -1;
	}
	png_infop info = png_create_info_struct(png);
	png_bytep *rows = xmalloc((size_t)height * sizeof(png_bytep));
	png_text text[MEDIA_PROVENANCE_TAGS];
	for (size_t i = 0; i < n_tags; i++) {
		memset(&text[i], 0, sizeof(text[i]));
		/* PNG keywords are 1-79 Latin-1 characters; ours are ASCII. */
		text[i].compression = PNG_TEXT_COMPRESSION_NONE;
		text[i].key = (png_charp)tags[i].key;
		text[i].text = (png_charp)tags[i].value;
	}
	for (int y = 0; y < height; y++)
		rows[y] = (png_bytep)(rgb + (size_t)y * width * 3);
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		free(rows);
		return -1;
	}
	if (info == NULL)
		png_error(png, "png_create_info_struct failed");
	ctx->fp = fp;
	png_set_write_fn(png, ctx, png_write_data, png_flush_data);
	png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
	    PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
	    PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, 6);
	if (n_tags > 0)
		png_set_text(png, info, text, (int)n_tags);
	png_write_info(png, info);
	png_write_image(png, rows);
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	free(rows);
	return 0;
}

/* media_write_png, putting the file in place through `commit`. */
static enum lq_status
write_png(const char *path, const uint8_t *rgb, int height, int width,
    const struct media_provenance *prov, const struct file_commit *commit,
    struct lq_error *err)
{
	LQ_ASSERT(rgb != NULL);
	if (height < 1 || width < 1)
		return error_set(err, LQ_FAILED, "LQ-MEDIA-002",
		    "cannot write %s: image of %dx%d", path, width, height);
	struct media_tag tags[MEDIA_PROVENANCE_TAGS];
	char seed[24];
	size_t n_tags = prov ? media_provenance_tags(prov, tags, seed) : 0;

	enum lq_status s = media_make_parent(path, err);
	if (s != LQ_OK)
		return s;
	struct file_temp t;
	if ((s = file_open_temp(path, ".part", "LQ-MEDIA-006", &t, err)) !=
	    LQ_OK)
		return s;
	struct png_ctx ctx = { .path = path };
	int fd = dup(t.fd);
	FILE *fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (fp == NULL) {
		s = file_fail(err, "LQ-MEDIA-006", "fdopen", t.tmp, errno);
		if (fd >= 0)
			close(fd);
		file_discard_temp(&t);
		return s;
	}
	if (png_write_fp(fp, &ctx, rgb, height, width, tags, n_tags) != 0) {
		if (ctx.write_errno != 0)	/* the disk, not libpng */
			s = file_fail(err, "LQ-MEDIA-007", "write", t.tmp,
			    ctx.write_errno);
		else
			s = error_set(err, LQ_FAILED, "LQ-MEDIA-007",
			    "libpng failed writing %s: %s", path, ctx.message);
	}
	if (fclose(fp) != 0 && s == LQ_OK)
		s = file_fail(err, "LQ-MEDIA-006", "fclose", t.tmp, errno);
	if (s == LQ_OK)
		s = file_commit(commit, &t, "LQ-MEDIA-006", err);
	file_discard_temp(&t);
	return s;
}

enum lq_status
media_write_png(const char *path, const uint8_t *rgb, int height, int width,
    const struct media_provenance *prov, struct lq_error *err)
{
	return write_png(path, rgb, height, width, prov, NULL, err);
}

/* Reads from an open FILE; 0 on success, -1 with ctx->message set. */
static int
png_read_fp(FILE *fp, struct png_ctx *ctx, uint8_t **out, int *height,
    int *width)
{
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, ctx,
	    png_on_error, png_on_warning);
	if (png == NULL) {
		snprintf(ctx->message, sizeof(ctx->message),
		    "png_create_read_struct failed");
		return -1;
	}
	png_infop info = png_create_info_struct(png);
	/* Filled after setjmp, so volatile to survive the longjmp. */
	uint8_t *volatile pixels = NULL;
	png_bytep *volatile rows = NULL;
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_read_struct(&png, &info, NULL);
		free(pixels);
		free(rows);
		return -1;
	}
	if (info == NULL)
		png_error(png, "png_create_info_struct failed");
	png_init_io(png, fp);
	png_read_info(png, info);
	png_uint_32 w = png_get_image_width(png, info);
	png_uint_32 h = png_get_image_height(png, info);
	int color = png_get_color_type(png, info);
	png_set_expand(png);
	png_set_strip_16(png);
	png_set_strip_alpha(png);
	if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA)
		png_set_gray_to_rgb(png);
	png_set_interlace_handling(png);
	png_read_update_info(png, info);
	if (png_get_rowbytes(png, info) != (size_t)w * 3)
		png_error(png, "unexpected row size after conversion to RGB");
	pixels = xmalloc((size_t)w * h * 3);
	rows = xmalloc((size_t)h * sizeof(png_bytep));
	for (png_uint_32 y = 0; y < h; y++)
		rows[y] = pixels + (size_t)y * w * 3;
	png_read_image(png, rows);
	png_read_end(png, NULL);
	png_destroy_read_struct(&png, &info, NULL);
	free(rows);
	*out = pixels;
	*height = (int)h;
	*width = (int)w;
	return 0;
}

enum lq_status
media_read_png(const char *path, uint8_t **rgb, int *height, int *width,
    struct lq_error *err)
{
	*rgb = NULL;
	FILE *fp = fopen(path, "rb");
	if (fp == NULL)
		return error_set(err, LQ_FAILED, "LQ-MEDIA-006",
		    "fopen(%s) failed: %s", path, strerror(errno));
	struct png_ctx ctx = { .path = path };
	enum lq_status s = LQ_OK;
	if (png_read_fp(fp, &ctx, rgb, height, width) != 0)
		s = error_set(err, LQ_FAILED, "LQ-MEDIA-007",
		    "libpng failed reading %s: %s", path, ctx.message);
	fclose(fp);
	return s;
}

enum lq_status
media_write_frames(const char *dir, const struct media_frames *v,
    const struct media_provenance *prov, struct lq_error *err)
{
	return media_write_frames_from(dir, v, 0, prov, err);
}

enum lq_status
media_write_frames_from(const char *dir, const struct media_frames *v,
    int first, const struct media_provenance *prov, struct lq_error *err)
{
	enum lq_status s = media_make_dirs(dir, err);
	size_t fb = (size_t)v->height * v->width * 3;
	for (int i = 0; s == LQ_OK && i < v->count; i++) {
		char *path = xasprintf("%s/frame_%04d.png", dir, first + i + 1);
		s = media_write_png(path, v->rgb + (size_t)i * fb, v->height,
		    v->width, prov, err);
		free(path);
	}
	return s;
}

const struct media_sheet_options media_sheet_defaults = {
	.max_frames = 16, .max_thumb_width = 256, .gap = 4,
	.background = { 32, 32, 32 },
};

int
media_sheet_pick(int count, int max_frames, int *idx)
{
	int n = count < max_frames ? count : max_frames;
	for (int i = 0; i < n; i++)
		idx[i] = n == 1 ? 0 :
		    (int)(((int64_t)2 * i * (count - 1) + (n - 1)) /
		    (2 * (int64_t)(n - 1)));	/* round half up, exact */
	return n;
}

enum lq_status
media_write_contact_sheet(const char *path, const struct media_frames *v,
    const struct media_sheet_options *opt, const struct media_provenance *prov,
    int *sheet_w, int *sheet_h, struct lq_error *err)
{
	if (opt == NULL)
		opt = &media_sheet_defaults;
	if (v->count < 1 || v->width < 1 || v->height < 1)
		return error_set(err, LQ_FAILED, "LQ-MEDIA-002",
		    "cannot write contact sheet %s: %d frames of %dx%d", path,
		    v->count, v->width, v->height);
	int max_frames = opt->max_frames > 0 ? opt->max_frames : 16;
	int *idx = xmalloc((size_t)max_frames * sizeof(int));
	int n = media_sheet_pick(v->count, max_frames, idx);
	int cols = opt->columns > 0 ? opt->columns :
	    (int)ceil(sqrt((double)n));
	if (cols > n)
		cols = n;
	int rows = (n + cols - 1) / cols;
	int maxw = opt->max_thumb_width > 0 ? opt->max_thumb_width : 256;
	int gap = opt->gap >= 0 ? opt->gap : 4;
	int tw = v->width < maxw ? v->width : maxw;
	int th = (int)(((int64_t)v->height * tw + v->width / 2) / v->width);
	if (th < 1)
		th = 1;
	int sw = cols * tw + (cols + 1) * gap;
	int sh = rows * th + (rows + 1) * gap;

	uint8_t *sheet = xmalloc((size_t)sw * sh * 3);
	for (size_t i = 0; i < (size_t)sw * sh; i++)
		memcpy(sheet + i * 3, opt->background, 3);

	enum lq_status s = LQ_OK;
	struct SwsContext *sws = NULL;
	uint8_t *thumb[4] = { NULL };
	int thumb_stride[4] = { 0 };
	if (tw != v->width || th != v->height) {
		sws = sws_getContext(v->width, v->height, AV_PIX_FMT_RGB24, tw,
		    th, AV_PIX_FMT_RGB24, SWS_AREA | SWS_ACCURATE_RND |
		    SWS_BITEXACT, NULL, NULL, NULL);
		if (sws == NULL)
			s = error_set(err, LQ_FAILED, "LQ-MEDIA-003",
			    "sws_getContext(%dx%d -> %dx%d) failed for %s",
			    v->width, v->height, tw, th, path);
		else if (av_image_alloc(thumb, thumb_stride, tw, th,
		    AV_PIX_FMT_RGB24, 32) < 0)
			s = error_set(err, LQ_FAILED, "LQ-MEDIA-003",
			    "av_image_alloc(%dx%d) failed for %s", tw, th, path);
	}
	size_t fb = (size_t)v->height * v->width * 3;
	for (int k = 0; s == LQ_OK && k < n; k++) {
		const uint8_t *src = v->rgb + (size_t)idx[k] * fb;
		int stride = v->width * 3;
		if (sws != NULL) {
			const uint8_t *in[1] = { src };
			const int in_stride[1] = { stride };
			if (sws_scale(sws, in, in_stride, 0, v->height, thumb,
			    thumb_stride) != th) {
				s = error_set(err, LQ_FAILED, "LQ-MEDIA-003",
				    "sws_scale(thumbnail of frame %d) failed "
				    "for %s", idx[k] + 1, path);
				break;
			}
			src = thumb[0];
			stride = thumb_stride[0];
		}
		int x0 = gap + (k % cols) * (tw + gap);
		int y0 = gap + (k / cols) * (th + gap);
		for (int y = 0; y < th; y++)
			memcpy(sheet + ((size_t)(y0 + y) * sw + x0) * 3,
			    src + (size_t)y * stride, (size_t)tw * 3);
	}
	if (s == LQ_OK)
		s = write_png(path, sheet, sh, sw, prov, opt ? opt->commit : NULL,
		    err);
	if (s == LQ_OK) {
		if (sheet_w != NULL)
			*sheet_w = sw;
		if (sheet_h != NULL)
			*sheet_h = sh;
	}
	sws_freeContext(sws);
	av_freep(&thumb[0]);
	free(sheet);
	free(idx);
	return s;
}
