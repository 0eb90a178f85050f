/*
 * video.c — MP4 (H.264, yuv420p) writing and reading through libavformat,
 * libavcodec and libswscale.  See media.h.
 *
 * Byte-identical output for identical input is a requirement (a resumed
 * render must end with the same MP4 as an uninterrupted one), so every
 * source of variation is switched off: x264 runs single-threaded with
 * deterministic lookahead and without mb-tree (see encode()), the encoder
 * and muxer carry the bit-exact flags (no library version strings, no
 * creation time), and the colour conversion uses swscale's bit-exact path.
 * An audio track goes through FFmpeg's own AAC encoder (no threads, no
 * randomness), its frames sent as the video's are (audio_feed()), so
 * the packets the muxer interleaves are the same for any frame split.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "config.h"
#include "core/file.h"
#include "core/log.h"
#include "core/util.h"
#include "media/media-int.h"
#include "media/media.h"

/* libav's log lines go through latentq's log (quiet unless -v). */
static void
av_log_to_lq(void *avcl, int level, const char *fmt, va_list ap)
{
	char line[1024];
	int prefix = 1;
	if (level > av_log_get_level())
		return;
	av_log_format_line2(avcl, level, fmt, ap, line, sizeof(line), &prefix);
	size_t n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	if (n == 0)
		return;
	if (level <= AV_LOG_WARNING)
		log_info("libav: %s", line);
	else
		log_debug("libav: %s", line);
}

void
media_init_libav(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	av_log_set_level(log_get_level() >= LOG_LEVEL_DEBUG ? AV_LOG_INFO :
	    AV_LOG_WARNING);
	av_log_set_callback(av_log_to_lq);
}

static enum lq_status
av_fail(struct lq_error *err, const char *call, const char *path, int rc)
{
	char buf[AV_ERROR_MAX_STRING_SIZE] = "";
	av_strerror(rc, buf, sizeof(buf));
	/* a full or failing disk (AVERROR(ENOSPC), ...) is a retry */
	if (rc < 0 && file_errno_status(AVUNERROR(rc)) == LQ_RETRY)
		return file_fail(err, "LQ-MEDIA-003", call, path, AVUNERROR(rc));
	return error_set(err, LQ_FAILED, "LQ-MEDIA-003", "%s failed for %s: %s",
	    call, path, buf);
}

enum lq_status
media_rate_from_double(double fps, int *num, int *den, struct lq_error *err)
{
	if (!isfinite(fps) || fps <= 0 || fps > 1000) {
		error_set(err, LQ_FAILED, "LQ-MEDIA-001",
		    "frame rate %g is not a number in (0, 1000]", fps);
		error_set_field(err, "fps");
		error_set_hint(err, "use a rate such as 24, 25 or 23.976");
		return LQ_FAILED;
	}
	double k = round(fps * 1.001);
	if (fabs(fps - round(fps)) < 1e-9) {
		*num = (int)round(fps);
		*den = 1;
	} else if (fabs(fps - k * 1000.0 / 1001.0) < 0.001) {
		*num = (int)k * 1000;
		*den = 1001;
	} else {
		AVRational q = av_d2q(fps, 1001);
		*num = q.num;
		*den = q.den;
	}
	return LQ_OK;
}

/* Adds the provenance and extra tags to a dictionary. */
static void
set_tags(AVDictionary **d, const struct media_video_options *opt)
{
	const struct media_provenance *p = opt->provenance;
	if (p != NULL) {
		struct media_tag tags[MEDIA_PROVENANCE_TAGS];
		char seed[24];
		size_t n = media_provenance_tags(p, tags, seed);
		for (size_t i = 0; i < n; i++)
			av_dict_set(d, tags[i].key, tags[i].value, 0);
	}
	for (size_t i = 0; i < opt->n_tags; i++)
		av_dict_set(d, opt->tags[i].key, opt->tags[i].value, 0);
}

struct mp4_writer {
	const char *path;	/* the temporary, for messages */
	const char *url;	/* what libavformat opens: the temporary's fd */
	int width, height;
	int frames;		/* encoded so far */
	AVFormatContext *fmt;
	AVCodecContext *enc;
	AVStream *st;
	struct SwsContext *sws;
	AVFrame *frame;
	AVPacket *pkt;
	int rate_num, rate_den;	/* the video's frame rate */
	/* the audio track, when opt->audio was given */
	const struct media_audio *audio;
	AVCodecContext *aenc;
	AVStream *ast;
	AVFrame *aframe;
	int64_t asent;		/* samples per channel sent to aenc */
};

static void
mp4_writer_free(struct mp4_writer *w)
{
	avcodec_free_context(&w->aenc);
	av_frame_free(&w->aframe);
	if (w->fmt != NULL && w->fmt->pb != NULL)
		avio_closep(&w->fmt->pb);
	avformat_free_context(w->fmt);
	avcodec_free_context(&w->enc);
	sws_freeContext(w->sws);
	av_frame_free(&w->frame);
	av_packet_free(&w->pkt);
}

/* Moves every packet encoder `enc` has ready into the muxer as `st`'s. */
static enum lq_status
drain_stream(struct mp4_writer *w, AVCodecContext *enc, AVStream *st,
    struct lq_error *err)
{
	for (;;) {
		int rc = avcodec_receive_packet(enc, w->pkt);
		if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF)
			return LQ_OK;
		if (rc < 0)
			return av_fail(err, "avcodec_receive_packet", w->path, rc);
		av_packet_rescale_ts(w->pkt, enc->time_base, st->time_base);
		w->pkt->stream_index = st->index;
		rc = av_interleaved_write_frame(w->fmt, w->pkt);
		if (rc < 0)
			return av_fail(err, "av_interleaved_write_frame", w->path,
			    rc);
	}
}

static enum lq_status
drain(struct mp4_writer *w, struct lq_error *err)
{
	return drain_stream(w, w->enc, w->st, err);
}

/* AAC's sampling frequencies (ISO/IEC 14496-3, Table 1.18). */
int
media_audio_rate_ok(int rate)
{
	static const int rates[] = { 96000, 88200, 64000, 48000, 44100,
	    32000, 24000, 22050, 16000, 12000, 11025, 8000 };
	for (size_t i = 0; i < LQ_ARRAY_LEN(rates); i++)
		if (rates[i] == rate)
			return 1;
	return 0;
}

/* Refuses an audio track AAC cannot carry, before anything is opened. */
static enum lq_status
audio_check(const char *path, const struct media_audio *a,
    struct lq_error *err)
{
	if (a->pcm == NULL || a->samples < 1) {
		error_set(err, LQ_FAILED, "LQ-MEDIA-009",
		    "cannot write %s: the audio track has no samples", path);
		return LQ_FAILED;
	}
	if (a->channels < 1 || a->channels > 2) {
		error_set(err, LQ_FAILED, "LQ-MEDIA-009",
		    "cannot write %s: %d audio channels; the AAC track "
		    "takes 1 (mono) or 2 (stereo)", path, a->channels);
		error_set_hint(err, "mix the waveform down to stereo");
		return LQ_FAILED;
	}
	if (!media_audio_rate_ok(a->sample_rate)) {
		error_set(err, LQ_FAILED, "LQ-MEDIA-009",
		    "cannot write %s: audio at %d Hz; AAC carries 8000, 11025, "
		    "12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, "
		    "88200 or 96000 Hz", path, a->sample_rate);
		error_set_hint(err, "use a vocoder whose output_sampling_rate "
		    "is one of those, such as 24000 or 48000");
		return LQ_FAILED;
	}
	return LQ_OK;
}

/* Opens the AAC encoder and adds its stream (before the header). */
static enum lq_status
audio_open(struct mp4_writer *w, const struct media_audio *a,
    struct lq_error *err)
{
	const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_AAC);
	int rc;
	if (codec == NULL)
		return error_set(err, LQ_FAILED, "LQ-MEDIA-009",
		    "avcodec_find_encoder(aac) found no encoder in this "
		    "libavcodec");
	if ((w->ast = avformat_new_stream(w->fmt, NULL)) == NULL ||
	    (w->aenc = avcodec_alloc_context3(codec)) == NULL ||
	    (w->aframe = av_frame_alloc()) == NULL)
		return av_fail(err, "avformat_new_stream(audio)", w->path,
		    AVERROR(ENOMEM));
	AVCodecContext *e = w->aenc;
	e->sample_fmt = AV_SAMPLE_FMT_FLTP;
	e->sample_rate = a->sample_rate;
	av_channel_layout_default(&e->ch_layout, a->channels);
	e->bit_rate = a->bit_rate > 0 ? a->bit_rate : 64000 * a->channels;
	e->time_base = (AVRational){ 1, a->sample_rate };
	e->thread_count = 1;
	e->flags |= AV_CODEC_FLAG_BITEXACT;
	if (w->fmt->oformat->flags & AVFMT_GLOBALHEADER)
		e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
	if ((rc = avcodec_open2(e, codec, NULL)) < 0)
		return av_fail(err, "avcodec_open2(aac)", w->path, rc);
	if ((rc = avcodec_parameters_from_context(w->ast->codecpar, e)) < 0)
		return av_fail(err, "avcodec_parameters_from_context(aac)",
		    w->path, rc);
	w->ast->time_base = e->time_base;
	w->audio = a;
	return LQ_OK;
}

/*
 * Sends the audio up to sample `until` (per channel) to the encoder in
 * its frame_size frames; with `last`, the remainder too (a short final
 * frame) and the flush.
 */
static enum lq_status
audio_feed(struct mp4_writer *w, int64_t until, int last,
    struct lq_error *err)
{
	const struct media_audio *a = w->audio;
	AVCodecContext *e = w->aenc;
	const int64_t fs = e->frame_size > 0 ? e->frame_size : 1024;
	enum lq_status s;
	int rc;

	if (until > a->samples)
		until = a->samples;
	for (;;) {
		int64_t n = until - w->asent;
		if (n > fs)
			n = fs;
		if (n <= 0 || (n < fs && !last))
			break;
		AVFrame *f = w->aframe;
		av_frame_unref(f);
		f->format = e->sample_fmt;
		f->nb_samples = (int)n;
		f->sample_rate = e->sample_rate;
		if ((rc = av_channel_layout_copy(&f->ch_layout,
		    &e->ch_layout)) < 0 || (rc = av_frame_get_buffer(f, 0)) < 0)
			return av_fail(err, "av_frame_get_buffer(audio)",
			    w->path, rc);
		for (int c = 0; c < a->channels; c++)
			memcpy(f->data[c], a->pcm + (size_t)c * a->samples +
			    w->asent, (size_t)n * sizeof(float));
		f->pts = w->asent;
		w->asent += n;
		if ((rc = avcodec_send_frame(e, f)) < 0)
			return av_fail(err, "avcodec_send_frame(audio)", w->path,
			    rc);
		if ((s = drain_stream(w, e, w->ast, err)) != LQ_OK)
			return s;
	}
	if (!last)
		return LQ_OK;
	if ((rc = avcodec_send_frame(e, NULL)) < 0)
		return av_fail(err, "avcodec_send_frame(audio flush)", w->path,
		    rc);
	return drain_stream(w, e, w->ast, err);
}

/* The audio sample (per channel) at which video frame `frames` starts. */
static int64_t
audio_due(const struct mp4_writer *w, int frames)
{
	return (int64_t)frames * w->audio->sample_rate * w->rate_den /
	    w->rate_num;
}

/* Fails if libav left any option unused (a typo would silently not apply). */
static enum lq_status
check_unused(AVDictionary *d, const char *call, const char *path,
    struct lq_error *err)
{
	const AVDictionaryEntry *e = av_dict_get(d, "", NULL,
	    AV_DICT_IGNORE_SUFFIX);
	if (e == NULL)
		return LQ_OK;
	return error_set(err, LQ_FAILED, "LQ-MEDIA-003",
	    "%s for %s did not accept option %s=%s", call, path, e->key,
	    e->value);
}

/* Opens the encoder and the muxer for frames of width x height and writes
 * the header (everything up to the first frame). */
static enum lq_status
encode_open(struct mp4_writer *w, int width, int height,
    const struct media_video_options *opt, struct lq_error *err)
{
	int num, den, rc;
	enum lq_status s = media_rate_from_double(opt->fps, &num, &den, err);
	if (s != LQ_OK)
		return s;

	rc = avformat_alloc_output_context2(&w->fmt, NULL, "mp4", w->url);
	if (rc < 0)
		return av_fail(err, "avformat_alloc_output_context2(mp4)",
		    w->path, rc);
	const AVCodec *codec = avcodec_find_encoder_by_name("libx264");
	if (codec == NULL) {
		error_set(err, LQ_FAILED, "LQ-MEDIA-004",
		    "avcodec_find_encoder_by_name(libx264) found no encoder: "
		    "this libavcodec was built without libx264");
		error_set_hint(err, "install a libavcodec built with libx264 "
		    "(Debian: libavcodec59 from main)");
		return LQ_FAILED;
	}
	if ((w->st = avformat_new_stream(w->fmt, NULL)) == NULL)
		return av_fail(err, "avformat_new_stream", w->path,
		    AVERROR(ENOMEM));
	if ((w->enc = avcodec_alloc_context3(codec)) == NULL)
		return av_fail(err, "avcodec_alloc_context3(libx264)", w->path,
		    AVERROR(ENOMEM));

	AVCodecContext *e = w->enc;
	w->width = width;
	w->height = height;
	e->width = width;
	e->height = height;
	e->pix_fmt = AV_PIX_FMT_YUV420P;
	e->time_base = (AVRational){ den, num };
	e->framerate = (AVRational){ num, den };
	e->sample_aspect_ratio = (AVRational){ 1, 1 };
	e->color_range = AVCOL_RANGE_MPEG;
	e->colorspace = AVCOL_SPC_BT709;
	e->color_primaries = AVCOL_PRI_BT709;
	e->color_trc = AVCOL_TRC_BT709;
	e->thread_count = 1;
	e->flags |= AV_CODEC_FLAG_BITEXACT;
	if (w->fmt->oformat->flags & AVFMT_GLOBALHEADER)
		e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

	AVDictionary *eopts = NULL;
	char crf[16];
	snprintf(crf, sizeof(crf), "%d", opt->crf < 0 ? 18 : opt->crf);
	av_dict_set(&eopts, "preset", opt->preset ? opt->preset : "medium", 0);
	av_dict_set(&eopts, "crf", crf, 0);
	/*
	 * mbtree=0: x264 r3095 (Debian's libx264-164) with macroblock-tree
	 * rate control reads uninitialised memory when a clip is shorter
	 * than its lookahead (9 or 24 frames here): the bytes written then
	 * depend on the heap's earlier contents (glibc's MALLOC_PERTURB_
	 * changes them), so a resumed process would write another file.
	 * Without mb-tree the output is the same under any heap state
	 * (tests/media/test-media.c checks across processes).
	 */
	av_dict_set(&eopts, "x264-params",
	    "threads=1:lookahead-threads=1:deterministic=1:mbtree=0", 0);
	rc = avcodec_open2(e, codec, &eopts);
	s = rc < 0 ? av_fail(err, "avcodec_open2(libx264)", w->path, rc) :
	    check_unused(eopts, "avcodec_open2(libx264)", w->path, err);
	av_dict_free(&eopts);
	if (s != LQ_OK)
		return s;

	rc = avcodec_parameters_from_context(w->st->codecpar, e);
	if (rc < 0)
		return av_fail(err, "avcodec_parameters_from_context", w->path,
		    rc);
	w->st->time_base = e->time_base;
	w->st->avg_frame_rate = e->framerate;
	w->rate_num = num;
	w->rate_den = den;
	if (opt->audio != NULL &&
	    (s = audio_open(w, opt->audio, err)) != LQ_OK)
		return s;

	w->fmt->flags |= AVFMT_FLAG_BITEXACT;
	set_tags(&w->fmt->metadata, opt);

	rc = avio_open(&w->fmt->pb, w->url, AVIO_FLAG_WRITE);
	if (rc < 0)
		return av_fail(err, "avio_open", w->path, rc);
	AVDictionary *mopts = NULL;
	av_dict_set(&mopts, "movflags", "+faststart+use_metadata_tags", 0);
	rc = avformat_write_header(w->fmt, &mopts);
	s = rc < 0 ? av_fail(err, "avformat_write_header", w->path, rc) :
	    check_unused(mopts, "avformat_write_header", w->path, err);
	av_dict_free(&mopts);
	if (s != LQ_OK)
		return s;

	w->sws = sws_getContext(width, height, AV_PIX_FMT_RGB24,
	    width, height, AV_PIX_FMT_YUV420P,
	    SWS_BICUBIC | SWS_ACCURATE_RND | SWS_BITEXACT, NULL, NULL, NULL);
	if (w->sws == NULL)
		return error_set(err, LQ_FAILED, "LQ-MEDIA-003",
		    "sws_getContext(rgb24 -> yuv420p, %dx%d) failed for %s",
		    width, height, w->path);
	const int *bt709 = sws_getCoefficients(SWS_CS_ITU709);
	if (sws_setColorspaceDetails(w->sws, bt709, 1, bt709, 0, 0, 1 << 16,
	    1 << 16) < 0)
		return error_set(err, LQ_FAILED, "LQ-MEDIA-003",
		    "sws_setColorspaceDetails(BT.709 limited) failed for %s",
		    w->path);

	if ((w->frame = av_frame_alloc()) == NULL ||
	    (w->pkt = av_packet_alloc()) == NULL)
		return av_fail(err, "av_frame_alloc", w->path, AVERROR(ENOMEM));
	w->frame->format = AV_PIX_FMT_YUV420P;
	w->frame->width = width;
	w->frame->height = height;
	w->frame->color_range = e->color_range;
	w->frame->colorspace = e->colorspace;
	w->frame->color_primaries = e->color_primaries;
	w->frame->color_trc = e->color_trc;
	if ((rc = av_frame_get_buffer(w->frame, 0)) < 0)
		return av_fail(err, "av_frame_get_buffer", w->path, rc);
	return LQ_OK;
}

/* Converts and encodes `count` more RGB24 frames [count, H, W, 3]. */
static enum lq_status
encode_frames(struct mp4_writer *w, const uint8_t *rgb, int count,
    struct lq_error *err)
{
	AVCodecContext *e = w->enc;
	size_t frame_bytes = (size_t)w->height * w->width * 3;
	enum lq_status s;
	int rc;

	for (int k = 0; k < count; k++) {
		int i = w->frames++;
		if ((rc = av_frame_make_writable(w->frame)) < 0)
			return av_fail(err, "av_frame_make_writable", w->path, rc);
		const uint8_t *src[1] = { rgb + (size_t)k * frame_bytes };
		const int stride[1] = { w->width * 3 };
		rc = sws_scale(w->sws, src, stride, 0, w->height,
		    w->frame->data, w->frame->linesize);
		if (rc != w->height)
			return error_set(err, LQ_FAILED, "LQ-MEDIA-003",
			    "sws_scale(rgb24 -> yuv420p) of frame %d returned "
			    "%d rows, not %d, for %s", i + 1, rc, w->height,
			    w->path);
		w->frame->pts = i;
		if ((rc = avcodec_send_frame(e, w->frame)) < 0)
			return av_fail(err, "avcodec_send_frame", w->path, rc);
		if ((s = drain(w, err)) != LQ_OK)
			return s;
	}
	if (w->audio != NULL)
		return audio_feed(w, audio_due(w, w->frames), 0, err);
	return LQ_OK;
}

/* Flushes the encoder and writes the trailer. */
static enum lq_status
encode_finish(struct mp4_writer *w, struct lq_error *err)
{
	AVCodecContext *e = w->enc;
	enum lq_status s;
	int rc;

	if ((rc = avcodec_send_frame(e, NULL)) < 0)
		return av_fail(err, "avcodec_send_frame(flush)", w->path, rc);
	if ((s = drain(w, err)) != LQ_OK)
		return s;
	if (w->audio != NULL &&
	    (s = audio_feed(w, w->audio->samples, 1, err)) != LQ_OK)
		return s;
	if ((rc = av_write_trailer(w->fmt)) < 0)
		return av_fail(err, "av_write_trailer", w->path, rc);
	if ((rc = avio_closep(&w->fmt->pb)) < 0)
		return av_fail(err, "avio_closep", w->path, rc);
	return LQ_OK;
}

enum lq_status
media_write_mp4(const char *path, const struct media_frames *v,
    const struct media_video_options *opt, struct lq_error *err)
{
	LQ_ASSERT(v->rgb != NULL && opt != NULL);
	if (v->count < 1 || v->width < 2 || v->height < 2 ||
	    v->width % 2 != 0 || v->height % 2 != 0) {
		error_set(err, LQ_FAILED, "LQ-MEDIA-002",
		    "cannot write %s: %d frames of %dx%d; H.264 yuv420p needs "
		    "at least one frame and an even width and height", path,
		    v->count, v->width, v->height);
		error_set_hint(err, "use a width and height that are "
		    "multiples of 32");
		return LQ_FAILED;
	}
	enum lq_status s;
	struct media_mp4 *m = NULL;
	if ((s = media_mp4_open(path, v->width, v->height, opt, &m, err)) != LQ_OK)
		return s;
	if ((s = media_mp4_write(m, v->rgb, v->count, err)) != LQ_OK) {
		media_mp4_abort(m);
		return s;
	}
	return media_mp4_close(m, err);
}

struct media_mp4 {
	struct file_temp t;
	char *url;
	const struct file_commit *commit;	/* from the options */
	struct mp4_writer w;
};

enum lq_status
media_mp4_open(const char *path, int width, int height,
    const struct media_video_options *opt, struct media_mp4 **out,
    struct lq_error *err)
{
	LQ_ASSERT(opt != NULL);
	*out = NULL;
	if (width < 2 || height < 2 || width % 2 != 0 || height % 2 != 0) {
		error_set(err, LQ_FAILED, "LQ-MEDIA-002",
		    "cannot write %s: frames of %dx%d; H.264 yuv420p needs "
		    "an even width and height", path, width, height);
		error_set_hint(err, "use a width and height that are "
		    "multiples of 32");
		return LQ_FAILED;
	}
	enum lq_status s;
	if (opt->audio != NULL &&
	    (s = audio_check(path, opt->audio, err)) != LQ_OK)
		return s;
	if ((s = media_make_parent(path, err)) != LQ_OK)
		return s;
	media_init_libav();
	struct media_mp4 *m = xcalloc(1, sizeof(*m));
	if ((s = file_open_temp(path, ".part", "LQ-MEDIA-006", &m->t, err)) !=
	    LQ_OK) {
		free(m);
		return s;
	}
	/*
	 * libavformat opens by name (and "faststart" reopens the file by name
	 * to move the index): /proc/self/fd/N names the very file created
	 * above, so no path lookup can be redirected by a planted symlink.
	 */
	m->url = xasprintf("/proc/self/fd/%d", m->t.fd);
	m->w.path = m->t.tmp;
	m->w.url = m->url;
	m->commit = opt->commit;
	if ((s = encode_open(&m->w, width, height, opt, err)) != LQ_OK) {
		media_mp4_abort(m);
		return s;
	}
	*out = m;
	return LQ_OK;
}

enum lq_status
media_mp4_write(struct media_mp4 *m, const uint8_t *rgb, int count,
    struct lq_error *err)
{
	return encode_frames(&m->w, rgb, count, err);
}

void
media_mp4_abort(struct media_mp4 *m)
{
	if (m == NULL)
		return;
	mp4_writer_free(&m->w);
	file_discard_temp(&m->t);
	free(m->url);
	free(m);
}

enum lq_status
media_mp4_close(struct media_mp4 *m, struct lq_error *err)
{
	enum lq_status s;
	if (m->w.frames < 1) {
		s = error_set(err, LQ_FAILED, "LQ-MEDIA-002",
		    "cannot write %s: no frames; H.264 needs at least one",
		    m->t.path);
		media_mp4_abort(m);
		return s;
	}
	s = encode_finish(&m->w, err);
	mp4_writer_free(&m->w);
	memset(&m->w, 0, sizeof(m->w));
	if (s == LQ_OK)
		s = file_commit(m->commit, &m->t, "LQ-MEDIA-006", err);
	file_discard_temp(&m->t);
	free(m->url);
	free(m);
	return s;
}

/* ---- reading ---- */

struct video_reader {
	const char *path;
	AVFormatContext *fmt;
	AVCodecContext *dec;
	struct SwsContext *sws;
	AVFrame *frame;
	AVPacket *pkt;
	int stream;
	size_t rgb_cap;
	/* the first audio stream (astream < 0: none) */
	int astream;
	AVCodecContext *adec;
	size_t pcm_cap;		/* samples per channel out->pcm holds */
};

/*
 * Appends the audio frames the decoder has ready to out->pcm, kept
 * planar [channels, cap] while growing and packed to [channels,
 * audio_samples] at the end (pcm_pack).
 */
static enum lq_status
take_audio(struct video_reader *r, struct media_video *out,
    struct lq_error *err)
{
	for (;;) {
		int rc = avcodec_receive_frame(r->adec, r->frame);
		if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF)
			return LQ_OK;
		if (rc < 0)
			return av_fail(err, "avcodec_receive_frame(audio)",
			    r->path, rc);
		AVFrame *f = r->frame;
		int C = out->channels;
		if (f->format != AV_SAMPLE_FMT_FLTP ||
		    f->ch_layout.nb_channels != C) {
			av_frame_unref(f);
			return error_set(err, LQ_FAILED, "LQ-MEDIA-005",
			    "%s: an audio frame is not planar float with %d "
			    "channels", r->path, C);
		}
		size_t need = (size_t)out->audio_samples + f->nb_samples;
		if (need > r->pcm_cap) {
			size_t cap = need * 2;
			float *p = xcalloc((size_t)C * cap, sizeof(float));
			for (int c = 0; c < C && out->pcm != NULL; c++)
				memcpy(p + (size_t)c * cap, out->pcm +
				    (size_t)c * r->pcm_cap,
				    (size_t)out->audio_samples * sizeof(float));
			free(out->pcm);
			out->pcm = p;
			r->pcm_cap = cap;
		}
		for (int c = 0; c < C; c++)
			memcpy(out->pcm + (size_t)c * r->pcm_cap +
			    out->audio_samples, f->extended_data[c],
			    (size_t)f->nb_samples * sizeof(float));
		out->audio_samples += f->nb_samples;
		av_frame_unref(f);
	}
}

/*
 * Trims the decoded audio to the stream's duration (the edit list's: the
 * AAC encoder pads the last frame, and libavcodec 59 drops only the
 * priming at the start) and packs out->pcm from [channels, cap] to
 * [channels, audio_samples].
 */
static void
pcm_pack(struct video_reader *r, struct media_video *out)
{
	if (r->astream >= 0) {
		const AVStream *st = r->fmt->streams[r->astream];
		if (st->duration > 0 && out->sample_rate > 0) {
			int64_t n = av_rescale_q(st->duration, st->time_base,
			    (AVRational){ 1, out->sample_rate });
			if (n < out->audio_samples)
				out->audio_samples = n;
		}
	}
	for (int c = 1; c < out->channels && out->pcm != NULL; c++)
		memmove(out->pcm + (size_t)c * out->audio_samples,
		    out->pcm + (size_t)c * r->pcm_cap,
		    (size_t)out->audio_samples * sizeof(float));
}

/* Opens a decoder for the file's first audio stream, if it has one. */
static enum lq_status
open_audio(struct video_reader *r, struct media_video *out,
    struct lq_error *err)
{
	const AVCodec *codec = NULL;
	r->astream = av_find_best_stream(r->fmt, AVMEDIA_TYPE_AUDIO, -1, -1,
	    &codec, 0);
	if (r->astream < 0) {
		r->astream = -1;
		return LQ_OK;
	}
	AVCodecParameters *par = r->fmt->streams[r->astream]->codecpar;
	int rc;
	out->audio_codec = xstrdup(avcodec_get_name(par->codec_id));
	out->sample_rate = par->sample_rate;
	out->channels = par->ch_layout.nb_channels;
	if ((r->adec = avcodec_alloc_context3(codec)) == NULL)
		return av_fail(err, "avcodec_alloc_context3(audio)", r->path,
		    AVERROR(ENOMEM));
	if ((rc = avcodec_parameters_to_context(r->adec, par)) < 0)
		return av_fail(err, "avcodec_parameters_to_context(audio)",
		    r->path, rc);
	r->adec->thread_count = 1;
	if ((rc = avcodec_open2(r->adec, codec, NULL)) < 0)
		return av_fail(err, "avcodec_open2(audio decoder)", r->path, rc);
	return LQ_OK;
}

static enum lq_status
take_frames(struct video_reader *r, struct media_video *out, int want_rgb,
    struct lq_error *err)
{
	for (;;) {
		int rc = avcodec_receive_frame(r->dec, r->frame);
		if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF)
			return LQ_OK;
		if (rc < 0)
			return av_fail(err, "avcodec_receive_frame", r->path, rc);
		out->frame_count++;
		if (want_rgb) {
			AVFrame *f = r->frame;
			if (f->width != out->width || f->height != out->height) {
				av_frame_unref(f);
				return error_set(err, LQ_FAILED, "LQ-MEDIA-005",
				    "%s: frame %d is %dx%d, the stream %dx%d",
				    r->path, out->frame_count, f->width,
				    f->height, out->width, out->height);
			}
			r->sws = sws_getCachedContext(r->sws, f->width,
			    f->height, f->format, f->width, f->height,
			    AV_PIX_FMT_RGB24, SWS_BICUBIC | SWS_ACCURATE_RND |
			    SWS_BITEXACT | SWS_FULL_CHR_H_INT, NULL, NULL, NULL);
			if (r->sws == NULL) {
				av_frame_unref(f);
				return error_set(err, LQ_FAILED, "LQ-MEDIA-003",
				    "sws_getCachedContext(%s -> rgb24) failed "
				    "for %s", av_get_pix_fmt_name(f->format),
				    r->path);
			}
			/* the matrix the stream declares: BT.709 (latentq's
			 * own MP4s) unless it says BT.601 or is a JPEG-range
			 * frame without a colour space (JFIF) */
			int cs = f->colorspace == AVCOL_SPC_BT470BG ||
			    f->colorspace == AVCOL_SPC_SMPTE170M ||
			    (f->colorspace == AVCOL_SPC_UNSPECIFIED &&
			    f->color_range == AVCOL_RANGE_JPEG) ?
			    SWS_CS_ITU601 : SWS_CS_ITU709;
			const int *coef = sws_getCoefficients(cs);
			if (sws_setColorspaceDetails(r->sws, coef,
			    f->color_range == AVCOL_RANGE_JPEG, coef, 1, 0,
			    1 << 16, 1 << 16) < 0) {
				av_frame_unref(f);
				return error_set(err, LQ_FAILED, "LQ-MEDIA-003",
				    "sws_setColorspaceDetails(BT.709 -> rgb24) "
				    "failed for %s", r->path);
			}
			size_t fb = (size_t)f->width * f->height * 3;
			size_t need = (size_t)out->frame_count * fb;
			if (need > r->rgb_cap) {
				r->rgb_cap = need * 2;
				out->rgb = xrealloc(out->rgb, r->rgb_cap);
			}
			uint8_t *dst[1] = { out->rgb + need - fb };
			int stride[1] = { f->width * 3 };
			rc = sws_scale(r->sws, (const uint8_t *const *)f->data,
			    f->linesize, 0, f->height, dst, stride);
			if (rc != f->height) {
				av_frame_unref(f);
				return error_set(err, LQ_FAILED, "LQ-MEDIA-003",
				    "sws_scale(-> rgb24) failed for %s", r->path);
			}
		}
		av_frame_unref(r->frame);
	}
}

static enum lq_status
decode(struct video_reader *r, struct media_video *out, int want_rgb,
    struct lq_error *err)
{
	int rc = avformat_open_input(&r->fmt, r->path, NULL, NULL);
	if (rc < 0)
		return av_fail(err, "avformat_open_input", r->path, rc);
	if ((rc = avformat_find_stream_info(r->fmt, NULL)) < 0)
		return av_fail(err, "avformat_find_stream_info", r->path, rc);
	const AVCodec *codec = NULL;
	r->stream = av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1,
	    &codec, 0);
	if (r->stream < 0)
		return av_fail(err, "av_find_best_stream(video)", r->path,
		    r->stream);
	AVStream *st = r->fmt->streams[r->stream];
	out->format = xstrdup(r->fmt->iformat->name);
	out->codec = xstrdup(avcodec_get_name(st->codecpar->codec_id));
	const char *pf = av_get_pix_fmt_name(st->codecpar->format);
	out->pix_fmt = xstrdup(pf ? pf : "none");
	out->width = st->codecpar->width;
	out->height = st->codecpar->height;
	out->rate_num = st->avg_frame_rate.num;
	out->rate_den = st->avg_frame_rate.den;

	const AVDictionaryEntry *t = NULL;
	while ((t = av_dict_get(r->fmt->metadata, "", t,
	    AV_DICT_IGNORE_SUFFIX)) != NULL) {
		out->tag_keys = xrealloc(out->tag_keys,
		    (out->n_tags + 1) * sizeof(char *));
		out->tag_values = xrealloc(out->tag_values,
		    (out->n_tags + 1) * sizeof(char *));
		out->tag_keys[out->n_tags] = xstrdup(t->key);
		out->tag_values[out->n_tags] = xstrdup(t->value);
		out->n_tags++;
	}

	if ((r->dec = avcodec_alloc_context3(codec)) == NULL)
		return av_fail(err, "avcodec_alloc_context3", r->path,
		    AVERROR(ENOMEM));
	if ((rc = avcodec_parameters_to_context(r->dec, st->codecpar)) < 0)
		return av_fail(err, "avcodec_parameters_to_context", r->path,
		    rc);
	r->dec->thread_count = 1;
	if ((rc = avcodec_open2(r->dec, codec, NULL)) < 0)
		return av_fail(err, "avcodec_open2(decoder)", r->path, rc);
	enum lq_status s;
	if ((s = open_audio(r, out, err)) != LQ_OK)
		return s;
	if ((r->frame = av_frame_alloc()) == NULL ||
	    (r->pkt = av_packet_alloc()) == NULL)
		return av_fail(err, "av_frame_alloc", r->path, AVERROR(ENOMEM));

	for (;;) {
		rc = av_read_frame(r->fmt, r->pkt);
		if (rc == AVERROR_EOF)
			break;
		if (rc < 0)
			return av_fail(err, "av_read_frame", r->path, rc);
		if (r->pkt->stream_index == r->stream) {
			rc = avcodec_send_packet(r->dec, r->pkt);
			av_packet_unref(r->pkt);
			if (rc < 0)
				return av_fail(err, "avcodec_send_packet",
				    r->path, rc);
			if ((s = take_frames(r, out, want_rgb, err)) != LQ_OK)
				return s;
		} else if (r->pkt->stream_index == r->astream) {
			rc = avcodec_send_packet(r->adec, r->pkt);
			av_packet_unref(r->pkt);
			if (rc < 0)
				return av_fail(err, "avcodec_send_packet(audio)",
				    r->path, rc);
			if ((s = take_audio(r, out, err)) != LQ_OK)
				return s;
		} else {
			av_packet_unref(r->pkt);
		}
	}
	if ((rc = avcodec_send_packet(r->dec, NULL)) < 0)
		return av_fail(err, "avcodec_send_packet(flush)", r->path, rc);
	if ((s = take_frames(r, out, want_rgb, err)) != LQ_OK)
		return s;
	if (r->adec != NULL) {
		if ((rc = avcodec_send_packet(r->adec, NULL)) < 0)
			return av_fail(err, "avcodec_send_packet(audio flush)",
			    r->path, rc);
		if ((s = take_audio(r, out, err)) != LQ_OK)
			return s;
	}
	pcm_pack(r, out);
	return LQ_OK;
}

enum lq_status
media_read_video(const char *path, int want_rgb, struct media_video *out,
    struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	media_init_libav();
	struct video_reader r = { .path = path, .astream = -1 };
	enum lq_status s = decode(&r, out, want_rgb, err);
	avformat_close_input(&r.fmt);
	avcodec_free_context(&r.dec);
	avcodec_free_context(&r.adec);
	sws_freeContext(r.sws);
	av_frame_free(&r.frame);
	av_packet_free(&r.pkt);
	if (s != LQ_OK)
		media_video_clear(out);
	return s;
}

const char *
media_video_tag(const struct media_video *v, const char *key)
{
	for (size_t i = 0; i < v->n_tags; i++)
		if (strcmp(v->tag_keys[i], key) == 0)
			return v->tag_values[i];
	return NULL;
}

void
media_video_clear(struct media_video *v)
{
	free(v->format);
	free(v->codec);
	free(v->pix_fmt);
	for (size_t i = 0; i < v->n_tags; i++) {
		free(v->tag_keys[i]);
		free(v->tag_values[i]);
	}
	free(v->tag_keys);
	free(v->tag_values);
	free(v->rgb);
	free(v->audio_codec);
	free(v->pcm);
	memset(v, 0, sizeof(*v));
}
