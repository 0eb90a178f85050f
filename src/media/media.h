/*
 * media.h — latentq's output files: H.264 MP4 through libavcodec/libavformat,
 * PNG frames and a contact sheet through libpng.  The only module that
 * includes libav* headers.
 *
 * Frames are always uint8 RGB, row-major [F, H, W, 3] (the pipeline's
 * `video_uint8`; the conversion from float lives in the sampler).  Nothing
 * here depends on time, thread count or the host: the same frames and
 * options give the same bytes, so an interrupted and an uninterrupted render
 * write identical files.
 *
 * Ownership: inputs are borrowed for the call.  Every file is written to
 * a fresh temporary "PATH.XXXXXX.part" beside it (core/file.h: created
 * O_EXCL, so a planted file or symlink is never followed and two writers
 * never share one), made durable (fsync) and renamed onto PATH once
 * complete, so PATH is either absent, the previous file, or the whole new
 * one; on error the temporary is removed.  Writers that take a
 * `struct file_commit` hand the finished temporary to it instead of
 * renaming it themselves (render records the artifact under the job's
 * lease that way).  Missing parent directories are created.
 * Structs filled by media_read_* own their memory; release them with the
 * matching *_clear.  Every failing function fills the caller's
 * struct lq_error (the message names the library call and the path) and
 * returns LQ_FAILED (bad input, unwritable path), or LQ_RETRY with code
 * LQ-IO-005 when the disk is full or failing (ENOSPC, EDQUOT, EIO: see
 * file_errno_status), naming the errno.
 */
#ifndef LQ_MEDIA_MEDIA_H
#define LQ_MEDIA_MEDIA_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/file.h"

/*
 * Bytes an output file's name may grow by for the files written beside it:
 * "NAME.mp4.part" (and any per-attempt tag of a temporary name),
 * "NAME.sheet.png" and its ".part", frames' "frame_0001.png".  Preflight
 * keeps output names this far under NAME_MAX and PATH_MAX; a new suffix
 * longer than this must raise it.
 */
#define MEDIA_NAME_RESERVE 32

/* A borrowed clip: count frames of height × width RGB24, [F, H, W, 3]. */
struct media_frames {
	int count, height, width;
	const uint8_t *rgb;
};

/* One container / PNG text tag. */
struct media_tag {
	const char *key, *value;
};

/*
 * A job's provenance.  Any field may be NULL (then not written).  In an MP4
 * it becomes these container tags (mov/mp4 "mdta" keys, read back by
 * ffprobe as format tags):
 *   title = job, comment = prompt, latentq_job, latentq_prompt,
 *   latentq_negative_prompt, latentq_seed (decimal), latentq_model_digest,
 *   latentq_config_digest, latentq_version
 * and the same keys as PNG tEXt chunks in frames and contact sheets.
 */
struct media_provenance {
	const char *job;
	const char *prompt;
	const char *negative_prompt;
	int has_seed;
	uint64_t seed;
	const char *model_digest;
	const char *config_digest;
	const char *image_digest;	/* image-to-video's image (BLAKE2b-256) */
	const char *version;		/* latentq's; NULL = PACKAGE_VERSION */
};

/*
 * Turns a frame rate given as a number into a rational: NTSC-style rates
 * within 0.001 of k·1000/1001 (23.976, 29.97, 59.94) become k·1000/1001,
 * everything else the nearest fraction with a denominator up to 1001
 * (25 → 25/1, 12.5 → 25/2).  Fails (LQ-MEDIA-001, field "fps") for a rate
 * that is not finite or outside (0, 1000].
 */
enum lq_status media_rate_from_double(double fps, int *num, int *den,
    struct lq_error *err);

/*
 * A borrowed audio track: `channels` planes of `samples` float samples at
 * `sample_rate` Hz, planar [channels, samples] (one video's row of the
 * LTX-2 vocoder's `waveform` [B, channels, samples]), nominally in
 * [-1, 1] (the encoder clips what lies outside).  Encoded with FFmpeg's
 * native AAC encoder (AAC-LC, bit-exact flags, one thread) at `bit_rate`
 * bits per second (<= 0: 64000 per channel).  The sample rate must be one
 * AAC has (8000 ... 96000: 8000, 11025, 12000, 16000, 22050, 24000, 32000,
 * 44100, 48000, 64000, 88200, 96000) and channels 1 or 2; anything else
 * fails with LQ-MEDIA-009 before a byte is written.
 */
/* 1 when `rate` (Hz) is one AAC carries (the list above): the rule
 * media_mp4_open applies and preflight checks a vocoder against. */
int media_audio_rate_ok(int rate);

struct media_audio {
	int sample_rate;	/* Hz */
	int channels;		/* 1 (mono) or 2 (stereo: left, right) */
	int64_t samples;	/* per channel, >= 1 */
	const float *pcm;	/* [channels, samples] */
	int bit_rate;		/* bits/s; <= 0 = 64000 x channels */
};

struct media_video_options {
	double fps;		/* frames per second, see media_rate_from_double */
	int crf;		/* x264 constant rate factor 0..51; < 0 = 18 */
	const char *preset;	/* x264 preset; NULL = "medium" */
	const struct media_provenance *provenance;	/* may be NULL */
	const struct media_tag *tags;	/* extra container tags, may be NULL */
	size_t n_tags;
	const struct file_commit *commit;	/* NULL: plain rename */
	/* NULL: video only.  Otherwise a second (AAC) track starting with
	 * the first frame; borrowed until media_mp4_close or _abort. */
	const struct media_audio *audio;
};

/*
 * Writes `v` as an MP4 at `path`: H.264 (libx264, by default preset
 * medium and CRF 18; single-threaded, no mb-tree, bit-exact flags),
 * yuv420p, BT.709 limited range (tagged), timestamps i/fps, "faststart"
 * (index before the media data), provenance tags, no creation time, and
 * with opt->audio an AAC track beside it, interleaved by time (the
 * audio's packets reach the muxer as the video's frames do, so the bytes
 * do not depend on how the frames were split).  Width and height must
 * be even (yuv420p halves chroma);
 * an odd size fails with LQ-MEDIA-002 — latentq's sizes are multiples of
 * 32, so preflight rejects odd sizes long before this.  Needs count >= 1.
 */
enum lq_status media_write_mp4(const char *path, const struct media_frames *v,
    const struct media_video_options *opt, struct lq_error *err);

/*
 * The same MP4 written frame range by frame range, so a long video never
 * has to be in memory whole: open, any number of writes (frames in order,
 * [count, height, width, 3] each), then close (flush, trailer, fsync,
 * rename onto path) or abort (the .part file is removed).  Frames given
 * in any split give the bytes media_write_mp4 writes for them at once.
 * The handle is freed by close (also when it fails) and by abort.
 */
struct media_mp4;
enum lq_status media_mp4_open(const char *path, int width, int height,
    const struct media_video_options *opt, struct media_mp4 **out,
    struct lq_error *err);
enum lq_status media_mp4_write(struct media_mp4 *m, const uint8_t *rgb,
    int count, struct lq_error *err);
enum lq_status media_mp4_close(struct media_mp4 *m, struct lq_error *err);
void media_mp4_abort(struct media_mp4 *m);

/* What media_read_video found in a file. */
struct media_video {
	char *format;		/* libavformat's name, "mov,mp4,m4a,3gp,3g2,mj2" */
	char *codec;		/* "h264" */
	char *pix_fmt;		/* "yuv420p" */
	int width, height;
	int rate_num, rate_den;	/* the stream's average frame rate */
	int frame_count;	/* frames actually decoded */
	size_t n_tags;		/* container tags */
	char **tag_keys, **tag_values;
	uint8_t *rgb;		/* [frame_count, height, width, 3] or NULL */
	/* The first audio stream, if any (audio_codec NULL: none). */
	char *audio_codec;	/* "aac" */
	int sample_rate, channels;
	int64_t audio_samples;	/* decoded per channel, priming removed */
	float *pcm;		/* [channels, audio_samples] or NULL */
};

/*
 * Opens a video file with libavformat, decodes its first video stream to
 * the end and fills `out` (zeroed first).  With `want_rgb`, the decoded
 * frames are converted to RGB24 (BT.709 limited range, as written) into
 * out->rgb.  The first audio stream, if there is one, is decoded to
 * planar float into out->pcm either way.  On failure out is left cleared.  For tests, `latentq show`
 * and verifying outputs.
 */
enum lq_status media_read_video(const char *path, int want_rgb,
    struct media_video *out, struct lq_error *err);
/* Value of a container tag (borrowed), or NULL. */
const char *media_video_tag(const struct media_video *v, const char *key);
void media_video_clear(struct media_video *v);

/*
 * Writes one RGB24 image [height, width, 3] as an 8-bit RGB PNG (zlib level
 * 6, no time chunk) with the provenance (may be NULL) as tEXt chunks.
 */
enum lq_status media_write_png(const char *path, const uint8_t *rgb,
    int height, int width, const struct media_provenance *prov,
    struct lq_error *err);

/*
 * Reads a PNG as RGB24 (palette, grey, 16-bit and alpha are converted:
 * alpha dropped, 16 bits → 8).  *rgb is caller-owned (free()).  Text
 * chunks are not returned.
 */
enum lq_status media_read_png(const char *path, uint8_t **rgb, int *height,
    int *width, struct lq_error *err);

/*
 * Reads a still image as RGB24 [height, width, 3]: a PNG (by its
 * signature) with media_read_png; anything else through libavformat /
 * libavcodec (JPEG: FFmpeg's mjpeg decoder, converted with the matrix the
 * file declares: JFIF is BT.601 full range), which must hold exactly one
 * frame (LQ-MEDIA-008 otherwise).  *rgb is caller-owned (free()).  A JPEG
 * decodes within a level or two of other decoders (PIL's libjpeg), not
 * bit-identically.
 */
enum lq_status media_read_image(const char *path, uint8_t **rgb,
    int *height, int *width, struct lq_error *err);

/*
 * PIL's Image.resize(size, Image.LANCZOS) of an RGB24 image (Pillow's
 * libImaging/Resample.c, what diffusers' VaeImageProcessor.resize calls
 * with resample "lanczos"), bit for bit: Lanczos a = 3 stretched by the
 * downscale factor, coefficients per output pixel normalised to sum 1 and
 * rounded to 22-bit fixed point, the horizontal pass first (only over the
 * rows the vertical pass reads) into uint8, then the vertical, each sum
 * rounded and clipped to 0..255.  in [h, w, 3] -> out [oh, ow, 3]
 * (caller-owned, allocated by the caller).  All sizes >= 1.
 */
void media_resize_lanczos(const uint8_t *in, int h, int w, uint8_t *out,
    int oh, int ow);

/*
 * `frames: DIR`: creates DIR (and missing parents) and writes each frame as
 * DIR/frame_0001.png, frame_0002.png, … (1-based, at least 4 digits).
 * On error the frames already written stay.
 */
enum lq_status media_write_frames(const char *dir, const struct media_frames *v,
    const struct media_provenance *prov, struct lq_error *err);
/* The same for a range of a longer clip: v's frames are frames
 * first .. first + count - 1 of it (named frame_<first + 1> ...). */
enum lq_status media_write_frames_from(const char *dir,
    const struct media_frames *v, int first,
    const struct media_provenance *prov, struct lq_error *err);

struct media_sheet_options {
	int max_frames;		/* frames shown, evenly spaced incl. first and
				   last; <= 0 = 16 (all if fewer) */
	int columns;		/* <= 0 = ceil(sqrt(shown)) */
	int max_thumb_width;	/* thumbnails are downscaled (never up) to at
				   most this width, aspect kept; <= 0 = 256 */
	int gap;		/* pixels between and around thumbnails; < 0 = 4 */
	uint8_t background[3];	/* gap colour */
	const struct file_commit *commit;	/* NULL: plain rename */
};

/* What a NULL `opt` means: 16 frames, 256 px, gap 4, background 32,32,32. */
extern const struct media_sheet_options media_sheet_defaults;

/*
 * Indices of the frames a contact sheet shows: round(i·(count−1)/(n−1))
 * for i in 0..n, n = min(count, max_frames).  idx must hold max_frames
 * entries (16 for the default); returns n.
 */
int media_sheet_pick(int count, int max_frames, int *idx);

/*
 * Writes a contact sheet PNG: the picked frames as thumbnails in a grid,
 * row by row, `gap` pixels between them and around the edge.  Size:
 *   width  = columns·tw + (columns+1)·gap
 *   height = rows·th + (rows+1)·gap,  rows = ceil(shown / columns)
 * where tw × th is the thumbnail size (libswscale, area filter).  opt may
 * be NULL for the defaults.  *sheet_w / *sheet_h (may be NULL) get the
 * size written.
 */
enum lq_status media_write_contact_sheet(const char *path,
    const struct media_frames *v, const struct media_sheet_options *opt,
    const struct media_provenance *prov, int *sheet_w, int *sheet_h,
    struct lq_error *err);

#endif
