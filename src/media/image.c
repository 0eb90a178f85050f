/*
 * image.c — reading a still image for image-to-video (see media.h,
 * media_read_image): PNG through libpng, JPEG (and any other still format
 * FFmpeg decodes) through libavformat / libavcodec.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "media/media.h"

enum lq_status
media_read_image(const char *path, uint8_t **rgb, int *height, int *width,
    struct lq_error *err)
{
	static const unsigned char png_sig[8] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
	};
	unsigned char head[8];
	size_t got = 0;
	FILE *fp;
	struct media_video v;
	enum lq_status s;

	*rgb = NULL;
	if ((fp = fopen(path, "rb")) != NULL) {
		got = fread(head, 1, sizeof(head), fp);
		fclose(fp);
	}
	if (got == sizeof(head) && memcmp(head, png_sig, sizeof(head)) == 0)
		return media_read_png(path, rgb, height, width, err);
	if ((s = media_read_video(path, 1, &v, err)) != LQ_OK)
		return s;
	if (v.frame_count != 1) {
		s = error_set(err, LQ_FAILED, "LQ-MEDIA-008", "%s holds %d frames; "
		    "an image has one", path, v.frame_count);
		media_video_clear(&v);
		return s;
	}
	*rgb = v.rgb;
	v.rgb = NULL;
	*height = v.height;
	*width = v.width;
	media_video_clear(&v);
	return LQ_OK;
}

/* ---- PIL's LANCZOS resize (Pillow libImaging/Resample.c) ------------ */

#define RESAMPLE_PRECISION_BITS (32 - 8 - 2)

static double
resample_sinc(double x)
{
	if (x == 0.0)
		return 1.0;
	x = x * M_PI;
	return sin(x) / x;
}

static double
resample_lanczos(double x)
{
	/* truncated sinc, support 3 */
	if (-3.0 <= x && x < 3.0)
		return resample_sinc(x) * resample_sinc(x / 3);
	return 0.0;
}

/*
 * precompute_coeffs + normalize_coeffs_8bpc: per output pixel the first
 * input pixel and count (bounds[2 * i], bounds[2 * i + 1]) and ksize
 * fixed-point weights.  Returns ksize; *bounds, *kk caller-owned.
 */
static int
resample_coeffs(int in_size, int out_size, int **bounds_out, int32_t **kk_out)
{
	double scale = (double)in_size / out_size, filterscale = scale;
	if (filterscale < 1.0)
		filterscale = 1.0;
	double support = 3.0 * filterscale;
	int ksize = (int)ceil(support) * 2 + 1;
	double *k = xcalloc((size_t)out_size * ksize, sizeof(double));
	int *bounds = xcalloc((size_t)out_size * 2, sizeof(int));
	int32_t *kk = xcalloc((size_t)out_size * ksize, sizeof(int32_t));

	for (int xx = 0; xx < out_size; xx++) {
		double center = (xx + 0.5) * scale, ww = 0.0;
		double ss = 1.0 / filterscale;
		int xmin = (int)(center - support + 0.5);
		if (xmin < 0)
			xmin = 0;
		int xmax = (int)(center + support + 0.5);
		if (xmax > in_size)
			xmax = in_size;
		xmax -= xmin;
		double *kx = k + (size_t)xx * ksize;
		for (int x = 0; x < xmax; x++) {
			double w = resample_lanczos((x + xmin - center + 0.5) * ss);
			kx[x] = w;
			ww += w;
		}
		for (int x = 0; x < xmax; x++)
			if (ww != 0.0)
				kx[x] /= ww;
		bounds[xx * 2] = xmin;
		bounds[xx * 2 + 1] = xmax;
	}
	for (size_t i = 0; i < (size_t)out_size * ksize; i++)
		kk[i] = k[i] < 0 ?
		    (int32_t)(-0.5 + k[i] * (1 << RESAMPLE_PRECISION_BITS)) :
		    (int32_t)(0.5 + k[i] * (1 << RESAMPLE_PRECISION_BITS));
	free(k);
	*bounds_out = bounds;
	*kk_out = kk;
	return ksize;
}

static uint8_t
resample_clip8(int32_t in)
{
	if (in >= (1 << RESAMPLE_PRECISION_BITS << 8))
		return 255;
	if (in <= 0)
		return 0;
	return (uint8_t)(in >> RESAMPLE_PRECISION_BITS);
}

void
media_resize_lanczos(const uint8_t *in, int h, int w, uint8_t *out, int oh,
    int ow)
{
	int *bh, *bv;
	int32_t *kh, *kv;
	int ksh = resample_coeffs(w, ow, &bh, &kh);
	int ksv = resample_coeffs(h, oh, &bv, &kv);
	int need_h = ow != w, need_v = oh != h;
	/* the rows the vertical pass reads */
	int y0 = bv[0], y1 = bv[oh * 2 - 2] + bv[oh * 2 - 1];
	const uint8_t *src = in;
	int src_rows = h, row0 = 0;
	uint8_t *tmp = NULL;

	if (need_h) {
		tmp = xmalloc((size_t)(y1 - y0) * ow * 3);
		for (int yy = 0; yy < y1 - y0; yy++)
			for (int xx = 0; xx < ow; xx++) {
				const int32_t *k = kh + (size_t)xx * ksh;
				int xmin = bh[xx * 2], xmax = bh[xx * 2 + 1];
				for (int c = 0; c < 3; c++) {
					int32_t ss = 1 << (RESAMPLE_PRECISION_BITS - 1);
					for (int x = 0; x < xmax; x++)
						ss += in[((size_t)(yy + y0) * w + x + xmin) *
						    3 + c] * k[x];
					tmp[((size_t)yy * ow + xx) * 3 + c] =
					    resample_clip8(ss);
				}
			}
		src = tmp;
		src_rows = y1 - y0;
		row0 = y0;	/* bounds_vert shifted by the first row */
	}
	(void)src_rows;
	if (need_v) {
		for (int yy = 0; yy < oh; yy++) {
			const int32_t *k = kv + (size_t)yy * ksv;
			int ymin = bv[yy * 2] - row0, ymax = bv[yy * 2 + 1];
			for (int xx = 0; xx < ow; xx++)
				for (int c = 0; c < 3; c++) {
					int32_t ss = 1 << (RESAMPLE_PRECISION_BITS - 1);
					for (int y = 0; y < ymax; y++)
						ss += src[((size_t)(y + ymin) * ow + xx) *
						    3 + c] * k[y];
					out[((size_t)yy * ow + xx) * 3 + c] =
					    resample_clip8(ss);
				}
		}
	} else {
		memcpy(out, src, (size_t)oh * ow * 3);
	}
	free(tmp);
	free(bh);
	free(bv);
	free(kh);
	free(kv);
}
