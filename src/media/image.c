/*
 * image.c — reading a still image for image-to-video (see media.h,
 * media_read_image): PNG through libpng, JPEG (and any other still format
 * FFmpeg decodes) through libavformat / libavcodec.
 */
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
