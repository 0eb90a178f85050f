/*
 * test-media.c — MP4, PNG and contact-sheet writers: written files are read
 * back with libavformat/libavcodec (media_read_video), ffprobe and libpng,
 * and writing the same frames twice must give identical bytes.
 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <glob.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/util.h"
#include "media/media.h"
#include "test.h"

static char tmpdir[] = "/tmp/lq-media-XXXXXX";

/* A smooth gradient with a white square moving right 4 px a frame. */
static uint8_t *
make_clip(int f, int h, int w)
{
	uint8_t *p = xmalloc((size_t)f * h * w * 3);
	for (int k = 0; k < f; k++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				uint8_t *q = p + (((size_t)k * h + y) * w + x) * 3;
				int sq = x >= 4 * k && x < 4 * k + 16 &&
				    y >= 8 && y < 24;
				q[0] = sq ? 255 : (uint8_t)(x * 255 / (w - 1));
				q[1] = sq ? 255 : (uint8_t)(y * 255 / (h - 1));
				q[2] = sq ? 255 : (uint8_t)(f > 1 ?
				    k * 255 / (f - 1) : 0);
			}
	return p;
}

static char *
tmp(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static void
test_rates(void)
{
	struct lq_error err;
	int num = 0, den = 0;
	static const struct { double fps; int num, den; } cases[] = {
		{ 25, 25, 1 }, { 24, 24, 1 }, { 23.976, 24000, 1001 },
		{ 29.97, 30000, 1001 }, { 59.94, 60000, 1001 }, { 12.5, 25, 2 },
		{ 8, 8, 1 },
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(cases); i++) {
		error_clear(&err);
		CHECK_INT(media_rate_from_double(cases[i].fps, &num, &den, &err),
		    LQ_OK);
		CHECK_INT(num, cases[i].num);
		CHECK_INT(den, cases[i].den);
	}
	error_clear(&err);
	CHECK_INT(media_rate_from_double(0, &num, &den, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MEDIA-001");
	CHECK_STR(err.field, "fps");
	error_clear(&err);
	CHECK_INT(media_rate_from_double(NAN, &num, &den, &err), LQ_FAILED);
}

/* Reads a whole file; caller frees. */
static uint8_t *
slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, r;

	if (fp == NULL)
		return NULL;
	do {
		if (len == cap)
			buf = xrealloc(buf, cap = cap ? 2 * cap : 65536);
		r = fread(buf + len, 1, cap - len, fp);
		len += r;
	} while (r > 0);
	fclose(fp);
	*n = len;
	return buf;
}

/* A stereo test tone: 440 Hz left, 660 Hz right, amplitude 0.5, [2, n]. */
static float *
make_tone(int64_t n, int rate)
{
	float *p = xmalloc((size_t)2 * n * sizeof(float));
	for (int64_t i = 0; i < n; i++) {
		p[i] = (float)(0.5 * sin(2 * M_PI * 440.0 * i / rate));
		p[n + i] = (float)(0.5 * sin(2 * M_PI * 660.0 * i / rate));
	}
	return p;
}

/*
 * The audio track: written whole and in frame ranges, the bytes agree;
 * read back there are two streams, AAC at the given rate and channels,
 * exactly the samples written (priming and padding trimmed by the edit
 * list), and a waveform close to the tone in each channel; a track AAC
 * cannot carry is refused before a file appears.
 */
static void
test_mp4_audio(void)
{
	const int F = 9, H = 64, W = 64, RATE = 24000;
	const int64_t N = (int64_t)F * RATE / 25;	/* 9 frames at 25 fps */
	uint8_t *rgb = make_clip(F, H, W);
	float *pcm = make_tone(N, RATE);
	struct media_frames v = { F, H, W, rgb };
	struct media_audio au = { .sample_rate = RATE, .channels = 2,
	    .samples = N, .pcm = pcm };
	struct media_video_options opt = { .fps = 25, .crf = -1,
	    .audio = &au };
	struct media_mp4 *m = NULL;
	struct lq_error err;
	char *a = tmp("av-whole.mp4"), *b = tmp("av-ranges.mp4");
	char *c = tmp("av-bad.mp4");
	size_t na = 0, nb = 0, fb = (size_t)H * W * 3;

	error_clear(&err);
	CHECK_INT(media_write_mp4(a, &v, &opt, &err), LQ_OK);
	CHECK_INT(media_mp4_open(b, W, H, &opt, &m, &err), LQ_OK);
	CHECK_INT(media_mp4_write(m, rgb, 2, &err), LQ_OK);
	CHECK_INT(media_mp4_write(m, rgb + 2 * fb, 7, &err), LQ_OK);
	CHECK_INT(media_mp4_close(m, &err), LQ_OK);
	uint8_t *da = slurp(a, &na), *db = slurp(b, &nb);
	CHECK(da != NULL && db != NULL && na > 0);
	CHECK(na == nb && memcmp(da, db, na) == 0);
	free(da);
	free(db);

	struct media_video rv;
	CHECK_INT(media_read_video(a, 1, &rv, &err), LQ_OK);
	CHECK_INT(rv.frame_count, F);
	CHECK(rv.audio_codec != NULL);
	CHECK_STR(rv.audio_codec ? rv.audio_codec : "", "aac");
	CHECK_INT(rv.sample_rate, RATE);
	CHECK_INT(rv.channels, 2);
	CHECK_INT(rv.audio_samples, N);
	/* AAC is lossy: compare the middle (the codec's edges ramp) */
	for (int ch = 0; ch < 2 && rv.pcm != NULL &&
	    rv.audio_samples == N; ch++) {
		double e2 = 0, s2 = 0;
		for (int64_t i = N / 8; i < N - N / 8; i++) {
			double x = pcm[ch * N + i];
			double d = rv.pcm[ch * rv.audio_samples + i] - x;
			e2 += d * d;
			s2 += x * x;
		}
		CHECK(e2 < 0.01 * s2);	/* better than 20 dB SNR */
	}
	media_video_clear(&rv);

	/* ffprobe sees two streams of the same duration, 9/25 s */
	char *cmd = xasprintf("ffprobe -v error -show_entries "
	    "stream=codec_type,codec_name,sample_rate,channels,duration "
	    "-of csv=p=0 '%s'", a);
	FILE *fp = popen(cmd, "r");
	char out[1024] = "";
	CHECK(fp != NULL);
	if (fp != NULL) {
		size_t got = fread(out, 1, sizeof(out) - 1, fp);
		out[got] = '\0';
		CHECK_INT(pclose(fp), 0);
	}
	CHECK_CONTAINS(out, "h264,video,0.360000\n");
	CHECK_CONTAINS(out, "aac,audio,24000,2,0.360000\n");
	free(cmd);

	/* the video-only clip's reader says there is no audio */
	struct media_video_options vopt = { .fps = 25, .crf = -1 };
	CHECK_INT(media_write_mp4(c, &v, &vopt, &err), LQ_OK);
	CHECK_INT(media_read_video(c, 0, &rv, &err), LQ_OK);
	CHECK(rv.audio_codec == NULL && rv.audio_samples == 0);
	media_video_clear(&rv);
	unlink(c);

	static const struct { int rate, channels; } bad[] = {
		{ 22000, 2 }, { 0, 1 }, { 24000, 3 }, { 24000, 0 },
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(bad); i++) {
		struct media_audio ba = au;
		ba.sample_rate = bad[i].rate;
		ba.channels = bad[i].channels;
		opt.audio = &ba;
		error_clear(&err);
		CHECK_INT(media_write_mp4(c, &v, &opt, &err), LQ_FAILED);
		CHECK_STR(err.code, "LQ-MEDIA-009");
		CHECK(access(c, F_OK) != 0);
	}
	free(a);
	free(b);
	free(c);
	free(pcm);
	free(rgb);
}

/* The streaming writer (media_mp4_open / write / close): frames given in
 * ranges of 1, 3 and 5 give media_write_mp4's bytes; abort leaves nothing;
 * a clip without frames is refused. */
static void
test_mp4_stream(void)
{
	const int F = 9, H = 64, W = 64;
	uint8_t *rgb = make_clip(F, H, W);
	struct media_frames v = { F, H, W, rgb };
	struct media_video_options opt = { .fps = 25, .crf = -1 };
	struct media_mp4 *m = NULL;
	struct lq_error err;
	char *a = tmp("whole.mp4"), *b = tmp("ranges.mp4"), *c = tmp("gone.mp4");
	char *part = xasprintf("%s.part", c);
	size_t na = 0, nb = 0, fb = (size_t)H * W * 3;
	uint8_t *da, *db;

	error_clear(&err);
	CHECK_INT(media_write_mp4(a, &v, &opt, &err), LQ_OK);
	CHECK_INT(media_mp4_open(b, W, H, &opt, &m, &err), LQ_OK);
	CHECK_INT(media_mp4_write(m, rgb, 1, &err), LQ_OK);
	CHECK_INT(media_mp4_write(m, rgb + fb, 3, &err), LQ_OK);
	CHECK_INT(media_mp4_write(m, rgb + 4 * fb, 5, &err), LQ_OK);
	CHECK_INT(media_mp4_close(m, &err), LQ_OK);
	da = slurp(a, &na);
	db = slurp(b, &nb);
	CHECK(da != NULL && db != NULL && na > 0);
	CHECK(na == nb && memcmp(da, db, na) == 0);
	CHECK_INT(media_mp4_open(c, W, H, &opt, &m, &err), LQ_OK);
	CHECK_INT(media_mp4_write(m, rgb, 2, &err), LQ_OK);
	media_mp4_abort(m);
	CHECK(access(c, F_OK) != 0);
	CHECK(access(part, F_OK) != 0);
	CHECK_INT(media_mp4_open(c, W, H, &opt, &m, &err), LQ_OK);
	CHECK_INT(media_mp4_close(m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MEDIA-002");
	CHECK(access(c, F_OK) != 0);
	CHECK(access(part, F_OK) != 0);
	error_clear(&err);
	CHECK_INT(media_mp4_open(c, W + 1, H, &opt, &m, &err), LQ_FAILED);
	CHECK(m == NULL);
	free(da);
	free(db);
	free(a);
	free(b);
	free(c);
	free(part);
	free(rgb);
}

static void
test_mp4(void)
{
	const int F = 9, H = 64, W = 64;
	uint8_t *rgb = make_clip(F, H, W);
	struct media_frames v = { F, H, W, rgb };
	struct media_provenance prov = {
		.job = "demo-1", .prompt = "a red circle moving left",
		.negative_prompt = "blurry", .has_seed = 1,
		.seed = 18446744073709551615ull,
		.model_digest = "abc123", .config_digest = "def456",
	};
	struct media_tag extra[] = { { "latentq_steps", "30" } };
	struct media_video_options opt = {
		.fps = 25, .crf = -1, .provenance = &prov, .tags = extra,
		.n_tags = 1,
	};
	struct lq_error err;
	error_clear(&err);
	char *a = tmp("a.mp4"), *b = tmp("b.mp4");
	CHECK_INT(media_write_mp4(a, &v, &opt, &err), LQ_OK);
	if (err.status != LQ_OK)
		error_print(&err, stderr);
	/* no temporary left beside it */
	char *part = xasprintf("%s.*.part", a);
	glob_t g;
	CHECK_INT(glob(part, 0, NULL, &g), GLOB_NOMATCH);
	globfree(&g);
	free(part);

	/* Read back with libavformat/libavcodec. */
	struct media_video mv;
	CHECK_INT(media_read_video(a, 1, &mv, &err), LQ_OK);
	CHECK_CONTAINS(mv.format, "mp4");
	CHECK_STR(mv.codec, "h264");
	CHECK_STR(mv.pix_fmt, "yuv420p");
	CHECK_INT(mv.width, W);
	CHECK_INT(mv.height, H);
	CHECK_INT(mv.frame_count, F);
	CHECK_INT(mv.rate_num, 25);
	CHECK_INT(mv.rate_den, 1);
	CHECK_STR(media_video_tag(&mv, "comment"), prov.prompt);
	CHECK_STR(media_video_tag(&mv, "title"), "demo-1");
	CHECK_STR(media_video_tag(&mv, "latentq_prompt"), prov.prompt);
	CHECK_STR(media_video_tag(&mv, "latentq_negative_prompt"), "blurry");
	CHECK_STR(media_video_tag(&mv, "latentq_seed"), "18446744073709551615");
	CHECK_STR(media_video_tag(&mv, "latentq_model_digest"), "abc123");
	CHECK_STR(media_video_tag(&mv, "latentq_config_digest"), "def456");
	CHECK(media_video_tag(&mv, "latentq_version") != NULL);
	CHECK_STR(media_video_tag(&mv, "latentq_steps"), "30");
	CHECK(media_video_tag(&mv, "creation_time") == NULL);
	if (mv.rgb != NULL && mv.frame_count == F) {
		double sum = 0;
		int maxd = 0;
		size_t n = (size_t)F * H * W * 3;
		for (size_t i = 0; i < n; i++) {
			int d = abs((int)mv.rgb[i] - (int)rgb[i]);
			sum += d;
			if (d > maxd)
				maxd = d;
		}
		printf("mp4 round trip: mean abs error %.3f, max %d (of 255)\n",
		    sum / n, maxd);
		CHECK(sum / n < 3.0);
	}
	media_video_clear(&mv);

	/* ffprobe agrees. */
	char *cmd = xasprintf("ffprobe -v error -select_streams v:0 "
	    "-count_frames -show_entries stream=codec_name,pix_fmt,"
	    "nb_read_frames,r_frame_rate:format_tags=latentq_seed,comment "
	    "-of default=noprint_wrappers=1 '%s'", a);
	FILE *fp = popen(cmd, "r");
	CHECK(fp != NULL);
	char out[2048] = "";
	if (fp != NULL) {
		size_t got = fread(out, 1, sizeof(out) - 1, fp);
		out[got] = '\0';
		CHECK_INT(pclose(fp), 0);
	}
	CHECK_CONTAINS(out, "codec_name=h264\n");
	CHECK_CONTAINS(out, "pix_fmt=yuv420p\n");
	CHECK_CONTAINS(out, "r_frame_rate=25/1\n");
	CHECK_CONTAINS(out, "nb_read_frames=9\n");
	CHECK_CONTAINS(out, "TAG:latentq_seed=18446744073709551615\n");
	CHECK_CONTAINS(out, "TAG:comment=a red circle moving left\n");
	free(cmd);

	/* Same input, same bytes. */
	CHECK_INT(media_write_mp4(b, &v, &opt, &err), LQ_OK);
	char da[DIGEST_HEX_SIZE] = "", db[DIGEST_HEX_SIZE] = "";
	CHECK_INT(digest_file(a, da, &err), LQ_OK);
	CHECK_INT(digest_file(b, db, &err), LQ_OK);
	CHECK_STR(da, db);
	/* ...and a different prompt gives different bytes (the digest sees it). */
	prov.prompt = "a blue square";
	CHECK_INT(media_write_mp4(b, &v, &opt, &err), LQ_OK);
	CHECK_INT(digest_file(b, db, &err), LQ_OK);
	CHECK(strcmp(da, db) != 0);

	/* NTSC rate, one frame. */
	opt.fps = 23.976;
	v.count = 1;
	CHECK_INT(media_write_mp4(b, &v, &opt, &err), LQ_OK);
	CHECK_INT(media_read_video(b, 0, &mv, &err), LQ_OK);
	CHECK_INT(mv.rate_num, 24000);
	CHECK_INT(mv.rate_den, 1001);
	CHECK_INT(mv.frame_count, 1);
	CHECK(mv.rgb == NULL);
	media_video_clear(&mv);

	/* Odd sizes are refused before anything is written. */
	char *odd = tmp("odd.mp4");
	struct media_frames ov = { 1, 64, 63, rgb };
	error_clear(&err);
	CHECK_INT(media_write_mp4(odd, &ov, &opt, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MEDIA-002");
	CHECK_CONTAINS(err.message, "64");
	CHECK(access(odd, F_OK) != 0);
	free(odd);

	/* A missing parent directory is created. */
	char *deep = tmp("out/mp4/deep.mp4");
	CHECK_INT(media_write_mp4(deep, &v, &opt, &err), LQ_OK);
	CHECK(access(deep, F_OK) == 0);
	free(deep);

	/* An unwritable path names the failing call; no file is left. */
	char *blocker = tmp("plain-file");
	FILE *bf = fopen(blocker, "w");
	fclose(bf);
	char *under = xasprintf("%s/x.mp4", blocker);
	error_clear(&err);
	CHECK_INT(media_write_mp4(under, &v, &opt, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MEDIA-006");
	CHECK_CONTAINS(err.message, blocker);
	CHECK(access(under, F_OK) != 0);
	free(under);
	free(blocker);
	/* (/proc takes no new files, even for root.) */
	error_clear(&err);
	CHECK_INT(media_write_mp4("/proc/x.mp4", &v, &opt, &err), LQ_FAILED);
	CHECK_CONTAINS(err.message, "open(/proc/x.mp4.XXXXXX.part)");

	/* A file that is not a video. */
	char *junk = tmp("junk.mp4");
	fp = fopen(junk, "w");
	fputs("not a video", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(media_read_video(junk, 0, &mv, &err), LQ_FAILED);
	CHECK_CONTAINS(err.message, junk);
	CHECK(mv.codec == NULL);
	free(junk);

	free(a);
	free(b);
	free(rgb);
}

static void
test_png(void)
{
	const int F = 9, H = 40, W = 48;
	uint8_t *rgb = make_clip(F, H, W);
	struct media_frames v = { F, H, W, rgb };
	struct media_provenance prov = { .job = "j", .prompt = "p", .has_seed = 1,
	    .seed = 7 };
	struct lq_error err;
	error_clear(&err);

	char *p1 = tmp("one.png"), *p2 = tmp("two.png");
	CHECK_INT(media_write_png(p1, rgb, H, W, &prov, &err), LQ_OK);
	CHECK_INT(media_write_png(p2, rgb, H, W, &prov, &err), LQ_OK);
	char d1[DIGEST_HEX_SIZE] = "", d2[DIGEST_HEX_SIZE] = "";
	CHECK_INT(digest_file(p1, d1, &err), LQ_OK);
	CHECK_INT(digest_file(p2, d2, &err), LQ_OK);
	CHECK_STR(d1, d2);
	uint8_t *back = NULL;
	int h = 0, w = 0;
	CHECK_INT(media_read_png(p1, &back, &h, &w, &err), LQ_OK);
	CHECK_INT(h, H);
	CHECK_INT(w, W);
	CHECK(back != NULL && memcmp(back, rgb, (size_t)H * W * 3) == 0);
	free(back);

	/* The provenance is in the file as tEXt. */
	size_t n = 0;
	char *bytes = util_read_file(p1, &n);
	CHECK(bytes != NULL && memmem(bytes, n, "latentq_seed\0" "7", 14));
	free(bytes);

	/* A truncated PNG fails with libpng's reason. */
	CHECK_INT(truncate(p2, 60), 0);
	error_clear(&err);
	CHECK_INT(media_read_png(p2, &back, &h, &w, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MEDIA-007");
	CHECK_CONTAINS(err.message, p2);
	CHECK(back == NULL);
	free(p1);
	free(p2);

	/* frames: DIR (created with its parents). */
	char *dir = tmp("out/frames");
	CHECK_INT(media_write_frames(dir, &v, &prov, &err), LQ_OK);
	for (int i = 1; i <= F + 1; i++) {
		char *f = xasprintf("%s/frame_%04d.png", dir, i);
		CHECK_INT(access(f, F_OK) == 0, i <= F);
		if (i == 5) {
			CHECK_INT(media_read_png(f, &back, &h, &w, &err), LQ_OK);
			CHECK(back != NULL && memcmp(back, rgb +
			    (size_t)4 * H * W * 3, (size_t)H * W * 3) == 0);
			free(back);
		}
		free(f);
	}
	free(dir);
	free(rgb);
}

static void
test_contact_sheet(void)
{
	struct lq_error err;
	error_clear(&err);

	/* Defaults: 9 frames of 64x64 → 3x3 grid, thumbnails full size. */
	const int F = 9, H = 64, W = 64;
	uint8_t *rgb = make_clip(F, H, W);
	struct media_frames v = { F, H, W, rgb };
	char *path = tmp("sheet.png");
	int sw = 0, sh = 0;
	CHECK_INT(media_write_contact_sheet(path, &v, NULL, NULL, &sw, &sh,
	    &err), LQ_OK);
	CHECK_INT(sw, 3 * 64 + 4 * 4);
	CHECK_INT(sh, 3 * 64 + 4 * 4);
	uint8_t *back = NULL;
	int h = 0, w = 0;
	CHECK_INT(media_read_png(path, &back, &h, &w, &err), LQ_OK);
	CHECK_INT(w, sw);
	CHECK_INT(h, sh);
	if (back != NULL && w == sw) {
		/* Corner is gap colour; frame 5 (index 4) is the centre cell. */
		CHECK_INT(back[0], 32);
		const uint8_t *cell = back + ((size_t)(4 + 64 + 4) * w +
		    (4 + 64 + 4)) * 3;
		CHECK(memcmp(cell, rgb + (size_t)4 * H * W * 3, 64 * 3) == 0);
	}
	free(back);

	/* 20 uniform frames of 96x128, thumbnails 64 wide, 16 shown. */
	int idx[16];
	CHECK_INT(media_sheet_pick(20, 16, idx), 16);
	CHECK_INT(idx[0], 0);
	CHECK_INT(idx[15], 19);
	CHECK_INT(idx[1], 1);
	CHECK_INT(idx[8], 10);	/* round(8·19/15) = round(10.13) */
	const int F2 = 20, H2 = 96, W2 = 128;
	uint8_t *u = xmalloc((size_t)F2 * H2 * W2 * 3);
	for (int k = 0; k < F2; k++)
		for (int i = 0; i < H2 * W2; i++) {
			uint8_t *q = u + ((size_t)k * H2 * W2 + i) * 3;
			q[0] = (uint8_t)(k * 12);
			q[1] = (uint8_t)(255 - k * 12);
			q[2] = 7;
		}
	struct media_frames v2 = { F2, H2, W2, u };
	struct media_sheet_options opt = { .max_frames = 16,
	    .max_thumb_width = 64, .gap = 2, .background = { 0, 0, 0 } };
	CHECK_INT(media_write_contact_sheet(path, &v2, &opt, NULL, &sw, &sh,
	    &err), LQ_OK);
	CHECK_INT(sw, 4 * 64 + 5 * 2);
	CHECK_INT(sh, 4 * 48 + 5 * 2);
	CHECK_INT(media_read_png(path, &back, &h, &w, &err), LQ_OK);
	CHECK_INT(w, sw);
	CHECK_INT(h, sh);
	if (back != NULL && w == sw) {
		/* Last cell's centre shows the last frame (±1 for rounding). */
		const uint8_t *c = back + ((size_t)(2 + 3 * 50 + 24) * w +
		    (2 + 3 * 66 + 32)) * 3;
		CHECK(abs(c[0] - 19 * 12) <= 1);
		CHECK(abs(c[1] - (255 - 19 * 12)) <= 1);
		CHECK(abs(c[2] - 7) <= 1);
	}
	free(back);
	free(u);
	free(path);
	free(rgb);
}

/* The clip of the crash tests, written by this process or a child. */
static enum lq_status
write_crash_clip(const char *path, struct lq_error *err)
{
	const int F = 24, H = 128, W = 160;
	uint8_t *rgb = make_clip(F, H, W);
	struct media_frames v = { F, H, W, rgb };
	struct media_provenance prov = { .job = "k", .prompt = "p" };
	/* with a track of sound: AAC is as reproducible as x264 here */
	float *pcm = make_tone((int64_t)F * 16000 / 24, 16000);
	struct media_audio au = { .sample_rate = 16000, .channels = 2,
	    .samples = (int64_t)F * 16000 / 24, .pcm = pcm };
	struct media_video_options opt = { .fps = 24, .crf = -1,
	    .provenance = &prov, .audio = &au };
	enum lq_status s = media_write_mp4(path, &v, &opt, err);
	free(pcm);
	/* ...and a contact sheet with downscaled thumbnails beside it. */
	struct media_sheet_options so = { .max_frames = 5, .columns = 2,
	    .max_thumb_width = 50, .gap = 3 };
	char *sheet = xasprintf("%s.sheet.png", path);
	if (s == LQ_OK)
		s = media_write_contact_sheet(sheet, &v, &so, &prov, NULL, NULL,
		    err);
	free(sheet);
	free(rgb);
	return s;
}

/*
 * A render killed while encoding: PATH is absent or the complete file
 * (never a torn one), and writing again gives the same bytes as a write
 * that was never interrupted.
 */
static void
test_kill_while_writing(void)
{
	struct lq_error err;
	error_clear(&err);
	char *ref = tmp("ref.mp4"), *path = tmp("killed.mp4");
	char dref[DIGEST_HEX_SIZE] = "", d[DIGEST_HEX_SIZE] = "";
	double t0 = util_monotonic();
	CHECK_INT(write_crash_clip(ref, &err), LQ_OK);
	int us = (int)((util_monotonic() - t0) * 1e6);
	CHECK_INT(digest_file(ref, dref, &err), LQ_OK);
	char dsheet[DIGEST_HEX_SIZE] = "";
	char *ref_sheet = xasprintf("%s.sheet.png", ref);
	CHECK_INT(digest_file(ref_sheet, dsheet, &err), LQ_OK);
	free(ref_sheet);
	srand((unsigned)time(NULL));
	for (int round = 0; round < 3; round++) {
		unlink(path);
		pid_t pid = fork();
		if (pid == 0)
			_exit(write_crash_clip(path, &err) == LQ_OK ? 0 : 1);
		usleep((useconds_t)(rand() % (us + 1)));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (access(path, F_OK) == 0) {
			CHECK_INT(digest_file(path, d, &err), LQ_OK);
			CHECK_STR(d, dref);
		}
		CHECK_INT(write_crash_clip(path, &err), LQ_OK);
		CHECK_INT(digest_file(path, d, &err), LQ_OK);
		CHECK_STR(d, dref);
	}

	/*
	 * Fresh processes whose heap starts with different garbage
	 * (glibc's MALLOC_PERTURB_) write the same bytes: nothing read
	 * uninitialised reaches the file (it did with x264's mb-tree).
	 */
	static const char *const perturb[] = { "0", "1", "77", "170" };
	for (size_t i = 0; i < LQ_ARRAY_LEN(perturb); i++) {
		unlink(path);
		pid_t pid = fork();
		if (pid == 0) {
			setenv("MALLOC_PERTURB_", perturb[i], 1);
			execl("/proc/self/exe", "test-media", "--write-clip",
			    path, (char *)NULL);
			_exit(127);
		}
		int status = -1;
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK_INT(digest_file(path, d, &err), LQ_OK);
		CHECK_STR(d, dref);
		char *sheet = xasprintf("%s.sheet.png", path);
		CHECK_INT(digest_file(sheet, d, &err), LQ_OK);
		CHECK_STR(d, dsheet);
		free(sheet);
	}
	free(ref);
	free(path);
}

int
main(int argc, char **argv)
{
	digest_init();
	if (argc == 3 && strcmp(argv[1], "--write-clip") == 0) {
		struct lq_error err;
		error_clear(&err);
		if (write_crash_clip(argv[2], &err) != LQ_OK) {
			error_print(&err, stderr);
			return 1;
		}
		return 0;
	}
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 99;
	}
	test_rates();
	test_mp4();
	test_mp4_stream();
	test_mp4_audio();
	test_png();
	test_contact_sheet();
	test_kill_while_writing();
	/* KEEP=1 in the environment keeps the files for a look */
	char *cmd = getenv("KEEP") ? xstrdup("true") : xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	free(cmd);
	return test_summary();
}
