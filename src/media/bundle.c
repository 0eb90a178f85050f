/*
 * bundle.c — bundles through libarchive (pax, none/gzip/zstd) and their
 * index, bundle.json.  See bundle.h for the layout and the rules a member
 * must pass; this file is the only one that includes archive.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "core/json.h"
#include "core/file.h"
#include "core/util.h"
#include "media/bundle.h"

#define IO_CHUNK (256 * 1024)

/* ---- writing ---- */

struct media_bundle_writer {
	struct archive *a;
	char *path, *part;
	int fd;
};

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static enum lq_status
archive_fail(struct lq_error *err, struct archive *a, const char *call,
    const char *path)
{
	const char *msg = a != NULL ? archive_error_string(a) : NULL;
	return error_set(err, LQ_FAILED, "LQ-BUNDLE-002", "%s failed on %s: %s",
	    call, path, msg != NULL ? msg : "unknown error");
}

enum lq_status
media_bundle_create(const char *path, struct media_bundle_writer **out,
    struct lq_error *err)
{
	*out = NULL;
	int filter;
	if (ends_with(path, ".tar"))
		filter = ARCHIVE_FILTER_NONE;
	else if (ends_with(path, ".tar.gz") || ends_with(path, ".tgz"))
		filter = ARCHIVE_FILTER_GZIP;
	else if (ends_with(path, ".tar.zst"))
		filter = ARCHIVE_FILTER_ZSTD;
	else {
		const char *dot = strrchr(path, '.');
		const char *slash = strrchr(path, '/');
		error_set(err, LQ_FAILED, "LQ-BUNDLE-001", "%s: the extension "
		    "\"%s\" names no bundle format", path,
		    dot != NULL && (slash == NULL || dot > slash) ? dot : "");
		error_set_field(err, "-o");
		error_set_hint(err, "name the bundle FILE.tar, FILE.tar.gz (or "
		    ".tgz) or FILE.tar.zst");
		return LQ_FAILED;
	}
	struct media_bundle_writer *w = xcalloc(1, sizeof(*w));
	w->path = xstrdup(path);
	/* A fresh PATH.XXXXXX.part, never a planted file or symlink (core/
	 * file.h); the writer keeps its descriptor and name. */
	struct file_temp t;
	enum lq_status fs = file_open_temp(path, ".part", "LQ-BUNDLE-002", &t,
	    err);
	if (fs != LQ_OK) {
		free(w->path);
		free(w);
		return fs;
	}
	w->fd = t.fd;
	w->part = t.tmp;
	free(t.path);
	w->a = archive_write_new();
	if (w->a == NULL)
		LQ_ASSERT(!"archive_write_new: out of memory");
	int r = archive_write_set_format_pax(w->a);
	if (r == ARCHIVE_OK) {
		if (filter == ARCHIVE_FILTER_GZIP) {
			r = archive_write_add_filter_gzip(w->a);
			/* no timestamp in the gzip header: same input, same bytes */
			if (r == ARCHIVE_OK)
				r = archive_write_set_filter_option(w->a, "gzip",
				    "timestamp", NULL);
		} else if (filter == ARCHIVE_FILTER_ZSTD) {
			r = archive_write_add_filter_zstd(w->a);
		}
	}
	if (r == ARCHIVE_OK)
		r = archive_write_open_fd(w->a, w->fd);
	if (r != ARCHIVE_OK) {
		archive_fail(err, w->a, "archive_write_open_fd", w->part);
		media_bundle_abort(w);
		return LQ_FAILED;
	}
	*out = w;
	return LQ_OK;
}

static struct archive_entry *
new_entry(const char *name, int64_t size)
{
	struct archive_entry *e = archive_entry_new();
	if (e == NULL)
		LQ_ASSERT(!"archive_entry_new: out of memory");
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, size);
	archive_entry_set_mtime(e, 0, 0);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	return e;
}

enum lq_status
media_bundle_add_data(struct media_bundle_writer *w, const char *name,
    const void *data, size_t size, struct lq_error *err)
{
	LQ_ASSERT(media_bundle_check_name(name) == NULL);
	struct archive_entry *e = new_entry(name, (int64_t)size);
	enum lq_status s = LQ_OK;
	if (archive_write_header(w->a, e) != ARCHIVE_OK)
		s = archive_fail(err, w->a, "archive_write_header", name);
	else if (size > 0 && archive_write_data(w->a, data, size) !=
	    (la_ssize_t)size)
		s = archive_fail(err, w->a, "archive_write_data", name);
	archive_entry_free(e);
	return s;
}

enum lq_status
media_bundle_add_file(struct media_bundle_writer *w, const char *name,
    const char *path, int64_t size, const char *digest, struct lq_error *err)
{
	LQ_ASSERT(media_bundle_check_name(name) == NULL);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-006", "cannot open "
		    "%s: %s", path, strerror(errno));
	struct archive_entry *e = new_entry(name, size);
	enum lq_status s = LQ_OK;
	if (archive_write_header(w->a, e) != ARCHIVE_OK) {
		s = archive_fail(err, w->a, "archive_write_header", name);
		goto out;
	}
	char *buf = xmalloc(IO_CHUNK);
	struct digest_state ds;
	digest_begin(&ds);
	int64_t total = 0;
	for (;;) {
		ssize_t n = read(fd, buf, IO_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			s = error_set(err, LQ_FAILED, "LQ-BUNDLE-006", "cannot read "
			    "%s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (total + n > size) {
			s = error_set(err, LQ_FAILED, "LQ-BUNDLE-009", "%s grew past "
			    "the %" PRId64 " bytes recorded for it", path, size);
			break;
		}
		digest_update(&ds, buf, (size_t)n);
		if (archive_write_data(w->a, buf, (size_t)n) != n) {
			s = archive_fail(err, w->a, "archive_write_data", name);
			break;
		}
		total += n;
	}
	free(buf);
	if (s == LQ_OK) {
		char hex[DIGEST_HEX_SIZE];
		digest_end(&ds, hex);
		if (total != size || strcmp(hex, digest) != 0)
			s = error_set(err, LQ_FAILED, "LQ-BUNDLE-009", "%s changed "
			    "after it was recorded (%" PRId64 " bytes, BLAKE2b "
			    "%.16s…; recorded %" PRId64 " bytes, %.16s…)", path,
			    total, hex, size, digest);
	}
out:
	archive_entry_free(e);
	close(fd);
	return s;
}

static void
writer_free(struct media_bundle_writer *w)
{
	if (w->a != NULL)
		archive_write_free(w->a);
	if (w->fd >= 0)
		close(w->fd);
	free(w->path);
	free(w->part);
	free(w);
}

enum lq_status
media_bundle_commit(struct media_bundle_writer *w, struct lq_error *err)
{
	enum lq_status s = LQ_OK;
	if (archive_write_close(w->a) != ARCHIVE_OK)
		s = archive_fail(err, w->a, "archive_write_close", w->part);
	else if (fsync(w->fd) != 0)
		s = error_set(err, LQ_FAILED, "LQ-BUNDLE-002", "fsync failed on "
		    "%s: %s", w->part, strerror(errno));
	else if (rename(w->part, w->path) != 0)
		s = error_set(err, LQ_FAILED, "LQ-BUNDLE-002", "cannot rename "
		    "%s to %s: %s", w->part, w->path, strerror(errno));
	if (s != LQ_OK) {
		media_bundle_abort(w);
		return s;
	}
	writer_free(w);
	return LQ_OK;
}

void
media_bundle_abort(struct media_bundle_writer *w)
{
	if (w == NULL)
		return;
	unlink(w->part);
	writer_free(w);
}

/* ---- reading ---- */

struct media_bundle_reader {
	struct archive *a;
	char *source;		/* the file, or "(memory)" */
	int64_t max_member;
	char **seen;		/* member names so far */
	size_t n_seen, cap_seen;
	char *name;		/* current member */
	int64_t size, left;	/* declared size, bytes not yet read */
	int in_member;
	int pending;		/* the current header is delivered again */
};

const char *
media_bundle_check_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0)
		return "an empty name";
	if (n > MEDIA_BUNDLE_NAME_MAX)
		return "a name longer than 1024 bytes";
	if (name[0] == '/')
		return "an absolute path";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c < 0x20 || c == 0x7f)
			return "a control character in the name";
		if (c == '\\')
			return "a backslash in the name";
	}
	const char *p = name;
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash != NULL ? (size_t)(slash - p) : strlen(p);
		if (len == 0)
			return "an empty path component";
		if (len == 1 && p[0] == '.')
			return "a \".\" path component";
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return "path traversal (\"..\")";
		if (slash == NULL)
			break;
		p = slash + 1;
	}
	return NULL;
}

static enum lq_status
reader_start(struct media_bundle_reader *r, int rc, struct lq_error *err)
{
	if (rc != ARCHIVE_OK)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "%s is not a "
		    "bundle: %s", r->source, archive_error_string(r->a) ?
		    archive_error_string(r->a) : "unreadable");
	return LQ_OK;
}

static struct media_bundle_reader *
reader_new(const char *source, int64_t max_member)
{
	struct media_bundle_reader *r = xcalloc(1, sizeof(*r));
	r->source = xstrdup(source);
	r->max_member = max_member > 0 ? max_member : MEDIA_BUNDLE_MEMBER_MAX;
	r->a = archive_read_new();
	if (r->a == NULL)
		LQ_ASSERT(!"archive_read_new: out of memory");
	/* Exactly what media_bundle_create writes: tar (pax) in none, gzip
	 * or zstd.  No other format or filter is even attempted. */
	archive_read_support_format_tar(r->a);
	archive_read_support_filter_none(r->a);
	archive_read_support_filter_gzip(r->a);
	archive_read_support_filter_zstd(r->a);
	return r;
}

enum lq_status
media_bundle_open(const char *path, int64_t max_member,
    struct media_bundle_reader **out, struct lq_error *err)
{
	*out = NULL;
	struct stat sb;
	if (stat(path, &sb) != 0)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "cannot open "
		    "%s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "%s is not a "
		    "regular file", path);
	struct media_bundle_reader *r = reader_new(path, max_member);
	if (reader_start(r, archive_read_open_filename(r->a, path, IO_CHUNK),
	    err) != LQ_OK) {
		media_bundle_close(r);
		return LQ_FAILED;
	}
	*out = r;
	return LQ_OK;
}

enum lq_status
media_bundle_open_memory(const void *data, size_t size, int64_t max_member,
    struct media_bundle_reader **out, struct lq_error *err)
{
	*out = NULL;
	struct media_bundle_reader *r = reader_new("(memory)", max_member);
	if (reader_start(r, archive_read_open_memory(r->a, data, size), err) !=
	    LQ_OK) {
		media_bundle_close(r);
		return LQ_FAILED;
	}
	*out = r;
	return LQ_OK;
}

static enum lq_status
member_fail(struct media_bundle_reader *r, const char *name,
    struct lq_error *err, const char *what)
{
	return error_set(err, LQ_FAILED, "LQ-BUNDLE-005", "%s: member "
	    "\"%.200s\" is refused: %s", r->source, name, what);
}

enum lq_status
media_bundle_next(struct media_bundle_reader *r, const char **name,
    int64_t *size, int *done, struct lq_error *err)
{
	*done = 0;
	if (r->pending) {
		r->pending = 0;
		*name = r->name;
		*size = r->size;
		return LQ_OK;
	}
	if (r->in_member) {
		/* the caller skipped the rest of the member: that is fine */
		if (archive_read_data_skip(r->a) != ARCHIVE_OK)
			return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "%s: "
			    "cannot skip member %s: %s", r->source, r->name,
			    archive_error_string(r->a));
		r->in_member = 0;
	}
	struct archive_entry *e;
	int rc = archive_read_next_header(r->a, &e);
	if (rc == ARCHIVE_EOF) {
		*done = 1;
		return LQ_OK;
	}
	if (rc != ARCHIVE_OK)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "%s: damaged "
		    "archive after %zu members: %s", r->source, r->n_seen,
		    archive_error_string(r->a) ? archive_error_string(r->a) :
		    "unreadable header");
	const char *nm = archive_entry_pathname(e);
	if (nm == NULL)
		return member_fail(r, "?", err, "a member without a name");
	if (archive_entry_hardlink(e) != NULL)
		return member_fail(r, nm, err, "a hard link");
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		break;
	case AE_IFLNK:
		return member_fail(r, nm, err, "a symbolic link");
	case AE_IFCHR:
	case AE_IFBLK:
		return member_fail(r, nm, err, "a device");
	case AE_IFIFO:
		return member_fail(r, nm, err, "a FIFO");
	case AE_IFDIR:
		return member_fail(r, nm, err, "a folder (bundles hold "
		    "files only)");
	default:
		return member_fail(r, nm, err, "not a regular file");
	}
	const char *why = media_bundle_check_name(nm);
	if (why != NULL)
		return member_fail(r, nm, err, why);
	if (archive_entry_sparse_count(e) > 0)
		return member_fail(r, nm, err, "a sparse file");
	if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0)
		return member_fail(r, nm, err, "no size in its header");
	int64_t sz = archive_entry_size(e);
	int64_t limit = (strcmp(nm, MEDIA_BUNDLE_INDEX) == 0 ||
	    strcmp(nm, MEDIA_BUNDLE_SIG) == 0) ? MEDIA_BUNDLE_INDEX_MAX :
	    r->max_member;
	if (sz > limit) {
		error_set(err, LQ_FAILED, "LQ-BUNDLE-005", "%s: member \"%s\" is "
		    "refused: %" PRId64 " bytes is over the limit of %" PRId64,
		    r->source, nm, sz, limit);
		error_set_hint(err, "import --max-member-size raises the limit "
		    "for outputs and checkpoints");
		return LQ_FAILED;
	}
	for (size_t i = 0; i < r->n_seen; i++)
		if (strcmp(r->seen[i], nm) == 0)
			return member_fail(r, nm, err, "a duplicate name");
	if (r->n_seen == r->cap_seen) {
		r->cap_seen = r->cap_seen ? 2 * r->cap_seen : 16;
		r->seen = xrealloc(r->seen, r->cap_seen * sizeof(*r->seen));
	}
	r->seen[r->n_seen++] = xstrdup(nm);
	free(r->name);
	r->name = xstrdup(nm);
	r->size = r->left = sz;
	r->in_member = 1;
	*name = r->name;
	*size = sz;
	return LQ_OK;
}

enum lq_status
media_bundle_read(struct media_bundle_reader *r, void *buf, size_t n,
    size_t *got, struct lq_error *err)
{
	*got = 0;
	LQ_ASSERT(r->in_member);
	la_ssize_t k = archive_read_data(r->a, buf, n);
	if (k < 0)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "%s: cannot "
		    "read member %s: %s", r->source, r->name,
		    archive_error_string(r->a) ? archive_error_string(r->a) :
		    "damaged data");
	if (k > r->left)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "%s: member "
		    "%s holds more than the %" PRId64 " bytes its header says",
		    r->source, r->name, r->size);
	if (k == 0 && r->left > 0)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-003", "%s: member "
		    "%s ends %" PRId64 " bytes short of its size", r->source,
		    r->name, r->left);
	r->left -= k;
	*got = (size_t)k;
	if (k == 0)
		r->in_member = 0;
	return LQ_OK;
}

enum lq_status
media_bundle_read_all(struct media_bundle_reader *r, char **data,
    size_t *size, struct lq_error *err)
{
	*data = NULL;
	*size = 0;
	/* r->size is bounded by the limit media_bundle_next checked */
	char *buf = xmalloc((size_t)r->size + 1);
	size_t total = 0, got;
	enum lq_status s;
	do {
		size_t want = (size_t)r->size - total;
		s = media_bundle_read(r, buf + total, want > 0 ? want : 1, &got,
		    err);
		total += got;
	} while (s == LQ_OK && got > 0 && total <= (size_t)r->size);
	if (s != LQ_OK) {
		free(buf);
		return s;
	}
	buf[total] = '\0';
	*data = buf;
	*size = total;
	return LQ_OK;
}

enum lq_status
media_bundle_extract(struct media_bundle_reader *r, const char *path,
    char digest[DIGEST_HEX_SIZE], struct lq_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0644);
	if (fd < 0)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-007", "cannot create "
		    "%s: %s", path, strerror(errno));
	char *buf = xmalloc(IO_CHUNK);
	struct digest_state ds;
	digest_begin(&ds);
	enum lq_status s;
	size_t got;
	while ((s = media_bundle_read(r, buf, IO_CHUNK, &got, err)) == LQ_OK &&
	    got > 0) {
		digest_update(&ds, buf, got);
		for (size_t off = 0; off < got;) {
			ssize_t w = write(fd, buf + off, got - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				s = error_set(err, errno == ENOSPC ? LQ_RETRY :
				    LQ_FAILED, "LQ-BUNDLE-007", "cannot write %s: %s",
				    path, strerror(errno));
				break;
			}
			off += (size_t)w;
		}
		if (s != LQ_OK)
			break;
	}
	free(buf);
	if (s == LQ_OK && fsync(fd) != 0)
		s = error_set(err, LQ_FAILED, "LQ-BUNDLE-007", "fsync failed on "
		    "%s: %s", path, strerror(errno));
	if (close(fd) != 0 && s == LQ_OK)
		s = error_set(err, LQ_FAILED, "LQ-BUNDLE-007", "close failed on "
		    "%s: %s", path, strerror(errno));
	if (s != LQ_OK) {
		unlink(path);
		return s;
	}
	digest_end(&ds, digest);
	return LQ_OK;
}

void
media_bundle_close(struct media_bundle_reader *r)
{
	if (r == NULL)
		return;
	archive_read_free(r->a);
	for (size_t i = 0; i < r->n_seen; i++)
		free(r->seen[i]);
	free(r->seen);
	free(r->name);
	free(r->source);
	free(r);
}

enum lq_status
media_bundle_read_head(struct media_bundle_reader *r,
    struct media_bundle_index *idx, char index_digest[DIGEST_HEX_SIZE],
    char **sig, size_t *sig_len, struct lq_error *err)
{
	memset(idx, 0, sizeof(*idx));
	*sig = NULL;
	*sig_len = 0;
	const char *name;
	int64_t size;
	int done;
	enum lq_status s = media_bundle_next(r, &name, &size, &done, err);
	if (s != LQ_OK)
		return s;
	if (done || strcmp(name, MEDIA_BUNDLE_INDEX) != 0)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-004", "%s: the first "
		    "member is %s, not " MEDIA_BUNDLE_INDEX, r->source,
		    done ? "missing" : name);
	char *text;
	size_t len;
	if ((s = media_bundle_read_all(r, &text, &len, err)) != LQ_OK)
		return s;
	digest_hex(text, len, index_digest);
	s = media_bundle_parse_index(text, len, idx, err);
	free(text);
	if (s != LQ_OK) {
		error_set_where(err, r->source, 0, 0);
		return s;
	}
	if ((s = media_bundle_next(r, &name, &size, &done, err)) == LQ_OK &&
	    !done) {
		if (strcmp(name, MEDIA_BUNDLE_SIG) == 0)
			s = media_bundle_read_all(r, sig, sig_len, err);
		else
			r->pending = 1;
	}
	if (s != LQ_OK) {
		media_bundle_index_clear(idx);
		free(*sig);
		*sig = NULL;
	}
	return s;
}

/* ---- the index ---- */

/*
 * bundle.json, format 1:
 * {"format": "latentq-bundle", "format_version": 1, "latentq_version": "…",
 *  "jobs": [{"id", "name", "state",
 *            "request": {"manifest_path", "manifest_digest", "entry_index",
 *                        "line", "request_json"},
 *            "config_json", "config_digest", "model_digests" (or null),
 *            "priority", "max_attempts", "attempts", "step", "total_steps",
 *            "phase", "error_code", "error_message", "output_path" (or null),
 *            "created_at", "finished_at" (0 when not finished),
 *            "events": [{"at", "kind", "detail" (JSON text or null)}],
 *            "artifacts": [{"kind", "path", "member", "size", "digest"}],
 *            "checkpoint": null or {"step", "sigma", "dtype", "shape",
 *                "config_digest", "model_digest", "device_fingerprint",
 *                "member", "size", "digest"}}]}
 * Texts that have a digest (config_json, request_json) are carried as
 * strings, byte for byte.
 */
#define BUNDLE_FORMAT_NAME "latentq-bundle"

static void
add_str(cJSON *o, const char *k, const char *v)
{
	if (v != NULL)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static void
add_file(cJSON *o, const struct media_bundle_file *f)
{
	cJSON_AddStringToObject(o, "member", f->member);
	cJSON_AddNumberToObject(o, "size", (double)f->size);
	cJSON_AddStringToObject(o, "digest", f->digest);
}

char *
media_bundle_format_index(const struct media_bundle_job *jobs, size_t n)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "format", BUNDLE_FORMAT_NAME);
	cJSON_AddNumberToObject(root, "format_version",
	    MEDIA_BUNDLE_FORMAT_VERSION);
	cJSON_AddStringToObject(root, "latentq_version", PACKAGE_VERSION);
	cJSON *arr = cJSON_AddArrayToObject(root, "jobs");
	for (size_t i = 0; i < n; i++) {
		const struct media_bundle_job *j = &jobs[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)j->id);
		cJSON_AddStringToObject(o, "name", j->name);
		cJSON_AddStringToObject(o, "state", j->state);
		cJSON *rq = cJSON_AddObjectToObject(o, "request");
		add_str(rq, "manifest_path", j->manifest_path);
		add_str(rq, "manifest_digest", j->manifest_digest);
		cJSON_AddNumberToObject(rq, "entry_index", j->entry_index);
		cJSON_AddNumberToObject(rq, "line", j->line);
		cJSON_AddStringToObject(rq, "request_json", j->request_json);
		cJSON_AddStringToObject(o, "config_json", j->config_json);
		cJSON_AddStringToObject(o, "config_digest", j->config_digest);
		add_str(o, "model_digests", j->model_digests);
		cJSON_AddNumberToObject(o, "priority", (double)j->priority);
		cJSON_AddNumberToObject(o, "max_attempts", j->max_attempts);
		cJSON_AddNumberToObject(o, "attempts", j->attempts);
		cJSON_AddNumberToObject(o, "step", j->step);
		cJSON_AddNumberToObject(o, "total_steps", j->total_steps);
		add_str(o, "phase", j->phase);
		add_str(o, "error_code", j->error_code);
		add_str(o, "error_message", j->error_message);
		add_str(o, "output_path", j->output_path);
		cJSON_AddNumberToObject(o, "created_at", j->created_at);
		cJSON_AddNumberToObject(o, "finished_at", j->finished_at);
		cJSON_AddItemToObject(o, "events", j->events != NULL ?
		    cJSON_Duplicate(j->events, 1) : cJSON_CreateArray());
		cJSON *as = cJSON_AddArrayToObject(o, "artifacts");
		for (size_t k = 0; k < j->n_artifacts; k++) {
			cJSON *a = cJSON_CreateObject();
			cJSON_AddStringToObject(a, "kind", j->artifacts[k].kind);
			cJSON_AddStringToObject(a, "path", j->artifacts[k].path);
			add_file(a, &j->artifacts[k].file);
			cJSON_AddItemToArray(as, a);
		}
		if (j->has_checkpoint) {
			const struct media_bundle_checkpoint *c = &j->checkpoint;
			cJSON *co = cJSON_AddObjectToObject(o, "checkpoint");
			cJSON_AddNumberToObject(co, "step", c->step);
			cJSON_AddNumberToObject(co, "sigma", c->sigma);
			cJSON_AddStringToObject(co, "dtype", c->dtype);
			cJSON *sh = cJSON_AddArrayToObject(co, "shape");
			for (int d = 0; d < c->ndim; d++)
				cJSON_AddItemToArray(sh,
				    cJSON_CreateNumber((double)c->shape[d]));
			cJSON_AddStringToObject(co, "config_digest",
			    c->config_digest);
			cJSON_AddStringToObject(co, "model_digest", c->model_digest);
			cJSON_AddStringToObject(co, "device_fingerprint",
			    c->device_fingerprint);
			add_file(co, &c->file);
		} else {
			cJSON_AddNullToObject(o, "checkpoint");
		}
		cJSON_AddItemToArray(arr, o);
	}
	char *text = json_pretty(root);
	cJSON_Delete(root);
	return text;
}

/* Field getters that fill err with the field path on a wrong type. */
struct ictx {
	struct lq_error *err;
	char where[64];		/* "jobs[3]" */
};

static enum lq_status
bad(struct ictx *c, const char *key, const char *rule)
{
	error_set(c->err, LQ_FAILED, "LQ-BUNDLE-004", "bundle.json: %s", rule);
	error_set_field(c->err, "%s%s%s", c->where, c->where[0] ? "." : "",
	    key);
	return LQ_FAILED;
}

static enum lq_status
get_str(struct ictx *c, const cJSON *o, const char *key, int nullable,
    const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*out = NULL;
	if (nullable && (v == NULL || cJSON_IsNull(v)))
		return LQ_OK;
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return bad(c, key, "must be a string");
	*out = v->valuestring;
	return LQ_OK;
}

static enum lq_status
get_num(struct ictx *c, const cJSON *o, const char *key, double lo,
    double hi, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return bad(c, key, "must be a number");
	if (v->valuedouble < lo || v->valuedouble > hi)
		return bad(c, key, "is out of range");
	*out = v->valuedouble;
	return LQ_OK;
}

static enum lq_status
get_int(struct ictx *c, const cJSON *o, const char *key, double lo,
    double hi, int64_t *out)
{
	double d;
	if (get_num(c, o, key, lo, hi, &d) != LQ_OK)
		return LQ_FAILED;
	if (d != floor(d))
		return bad(c, key, "must be an integer");
	*out = (int64_t)d;
	return LQ_OK;
}

static int
is_digest(const char *s)
{
	if (s == NULL || strlen(s) != DIGEST_HEX_SIZE - 1)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

static enum lq_status
get_digest(struct ictx *c, const cJSON *o, const char *key, const char **out)
{
	if (get_str(c, o, key, 0, out) != LQ_OK)
		return LQ_FAILED;
	if (!is_digest(*out))
		return bad(c, key, "must be a BLAKE2b-256 digest (64 lower-case "
		    "hex digits)");
	return LQ_OK;
}

static enum lq_status
get_file(struct ictx *c, const cJSON *o, struct media_bundle_file *f)
{
	int64_t size;
	if (get_str(c, o, "member", 0, &f->member) != LQ_OK ||
	    get_int(c, o, "size", 0, 9007199254740992.0, &size) != LQ_OK ||
	    get_digest(c, o, "digest", &f->digest) != LQ_OK)
		return LQ_FAILED;
	f->size = size;
	const char *why = media_bundle_check_name(f->member);
	if (why != NULL)
		return bad(c, "member", why);
	if (strncmp(f->member, "jobs/", 5) != 0)
		return bad(c, "member", "must lie under jobs/");
	return LQ_OK;
}

#define I32 2147483647.0

static enum lq_status
parse_job(struct ictx *c, const cJSON *o, struct media_bundle_job *j)
{
	int64_t v;
	double d;
	if (!cJSON_IsObject(o))
		return bad(c, "", "a job must be an object");
	if (get_int(c, o, "id", 1, 9007199254740992.0, &v) != LQ_OK)
		return LQ_FAILED;
	j->id = v;
	if (get_str(c, o, "name", 0, &j->name) != LQ_OK ||
	    get_str(c, o, "state", 0, &j->state) != LQ_OK)
		return LQ_FAILED;
	const cJSON *rq = cJSON_GetObjectItemCaseSensitive(o, "request");
	if (!cJSON_IsObject(rq))
		return bad(c, "request", "must be an object");
	{
		struct ictx rc = *c;
		snprintf(rc.where, sizeof(rc.where), "%s.request", c->where);
		if (get_str(&rc, rq, "manifest_path", 0, &j->manifest_path) !=
		    LQ_OK ||
		    get_str(&rc, rq, "manifest_digest", 0, &j->manifest_digest) !=
		    LQ_OK ||
		    get_int(&rc, rq, "entry_index", 0, I32, &v) != LQ_OK)
			return LQ_FAILED;
		j->entry_index = (int)v;
		if (get_int(&rc, rq, "line", 0, I32, &v) != LQ_OK)
			return LQ_FAILED;
		j->line = (int)v;
		if (get_str(&rc, rq, "request_json", 0, &j->request_json) != LQ_OK)
			return LQ_FAILED;
		cJSON *t = json_parse_document(j->request_json,
		    strlen(j->request_json));
		if (t == NULL)
			return bad(&rc, "request_json", "must be JSON text");
		cJSON_Delete(t);
	}
	if (get_str(c, o, "config_json", 0, &j->config_json) != LQ_OK ||
	    get_digest(c, o, "config_digest", &j->config_digest) != LQ_OK)
		return LQ_FAILED;
	cJSON *t = json_parse_document(j->config_json, strlen(j->config_json));
	if (t == NULL || !cJSON_IsObject(t)) {
		cJSON_Delete(t);
		return bad(c, "config_json", "must be a JSON object's text");
	}
	cJSON_Delete(t);
	char hex[DIGEST_HEX_SIZE];
	digest_hex(j->config_json, strlen(j->config_json), hex);
	if (strcmp(hex, j->config_digest) != 0)
		return bad(c, "config_digest", "is not the BLAKE2b-256 of "
		    "config_json (the config was changed)");
	if (get_str(c, o, "model_digests", 1, &j->model_digests) != LQ_OK)
		return LQ_FAILED;
	if (get_int(c, o, "priority", -9223372036854775807.0,
	    9223372036854775807.0, &v) != LQ_OK)
		return LQ_FAILED;
	j->priority = v;
	if (get_int(c, o, "max_attempts", 0, I32, &v) != LQ_OK)
		return LQ_FAILED;
	j->max_attempts = (int)v;
	if (get_int(c, o, "attempts", 0, I32, &v) != LQ_OK)
		return LQ_FAILED;
	j->attempts = (int)v;
	if (get_int(c, o, "step", 0, I32, &v) != LQ_OK)
		return LQ_FAILED;
	j->step = (int)v;
	if (get_int(c, o, "total_steps", 0, I32, &v) != LQ_OK)
		return LQ_FAILED;
	j->total_steps = (int)v;
	if (get_str(c, o, "phase", 1, &j->phase) != LQ_OK ||
	    get_str(c, o, "error_code", 1, &j->error_code) != LQ_OK ||
	    get_str(c, o, "error_message", 1, &j->error_message) != LQ_OK ||
	    get_str(c, o, "output_path", 1, &j->output_path) != LQ_OK)
		return LQ_FAILED;
	if (get_num(c, o, "created_at", 0, 1e12, &d) != LQ_OK)
		return LQ_FAILED;
	j->created_at = d;
	if (get_num(c, o, "finished_at", 0, 1e12, &d) != LQ_OK)
		return LQ_FAILED;
	j->finished_at = d;

	const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "events");
	if (!cJSON_IsArray(ev))
		return bad(c, "events", "must be an array");
	int k = 0;
	for (const cJSON *e = ev->child; e != NULL; e = e->next, k++) {
		struct ictx ec = *c;
		snprintf(ec.where, sizeof(ec.where), "%s.events[%d]", c->where, k);
		const char *s;
		if (!cJSON_IsObject(e))
			return bad(&ec, "", "an event must be an object");
		if (get_num(&ec, e, "at", 0, 1e12, &d) != LQ_OK ||
		    get_str(&ec, e, "kind", 0, &s) != LQ_OK ||
		    get_str(&ec, e, "detail", 1, &s) != LQ_OK)
			return LQ_FAILED;
	}
	j->events = ev;

	const cJSON *as = cJSON_GetObjectItemCaseSensitive(o, "artifacts");
	if (!cJSON_IsArray(as))
		return bad(c, "artifacts", "must be an array");
	j->n_artifacts = (size_t)cJSON_GetArraySize(as);
	j->artifacts = xcalloc(j->n_artifacts + 1, sizeof(*j->artifacts));
	k = 0;
	for (const cJSON *a = as->child; a != NULL; a = a->next, k++) {
		struct media_bundle_artifact *ar = &j->artifacts[k];
		struct ictx ac = *c;
		snprintf(ac.where, sizeof(ac.where), "%s.artifacts[%d]", c->where,
		    k);
		if (!cJSON_IsObject(a))
			return bad(&ac, "", "an artifact must be an object");
		if (get_str(&ac, a, "kind", 0, &ar->kind) != LQ_OK ||
		    get_str(&ac, a, "path", 0, &ar->path) != LQ_OK ||
		    get_file(&ac, a, &ar->file) != LQ_OK)
			return LQ_FAILED;
		const char *why = media_bundle_check_name(ar->path);
		if (why != NULL)
			return bad(&ac, "path", why);
	}

	const cJSON *cp = cJSON_GetObjectItemCaseSensitive(o, "checkpoint");
	if (cp == NULL || cJSON_IsNull(cp))
		return LQ_OK;
	if (!cJSON_IsObject(cp))
		return bad(c, "checkpoint", "must be an object or null");
	struct ictx cc = *c;
	snprintf(cc.where, sizeof(cc.where), "%s.checkpoint", c->where);
	struct media_bundle_checkpoint *ck = &j->checkpoint;
	if (get_int(&cc, cp, "step", 0, I32, &v) != LQ_OK)
		return LQ_FAILED;
	ck->step = (int)v;
	if (get_num(&cc, cp, "sigma", -1e30, 1e30, &ck->sigma) != LQ_OK ||
	    get_str(&cc, cp, "dtype", 0, &ck->dtype) != LQ_OK ||
	    get_digest(&cc, cp, "config_digest", &ck->config_digest) != LQ_OK ||
	    get_digest(&cc, cp, "model_digest", &ck->model_digest) != LQ_OK ||
	    get_str(&cc, cp, "device_fingerprint", 0, &ck->device_fingerprint) !=
	    LQ_OK ||
	    get_file(&cc, cp, &ck->file) != LQ_OK)
		return LQ_FAILED;
	if (strlen(ck->dtype) >= 16)
		return bad(&cc, "dtype", "is too long");
	if (strcmp(ck->config_digest, j->config_digest) != 0)
		return bad(&cc, "config_digest", "differs from the job's");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(cp, "shape");
	if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) < 1 ||
	    cJSON_GetArraySize(sh) > (int)LQ_ARRAY_LEN(ck->shape))
		return bad(&cc, "shape", "must be an array of 1 to 8 sizes");
	ck->ndim = 0;
	for (const cJSON *x = sh->child; x != NULL; x = x->next) {
		if (!cJSON_IsNumber(x) || x->valuedouble < 1 ||
		    x->valuedouble > 1e12 || x->valuedouble != floor(x->valuedouble))
			return bad(&cc, "shape", "must hold positive integers");
		ck->shape[ck->ndim++] = (int64_t)x->valuedouble;
	}
	j->has_checkpoint = 1;
	return LQ_OK;
}

enum lq_status
media_bundle_parse_index(const char *text, size_t len,
    struct media_bundle_index *out, struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	struct ictx c = {.err = err};
	out->root = json_parse_document(text, len);
	if (out->root == NULL || !cJSON_IsObject(out->root)) {
		media_bundle_index_clear(out);
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-004", "bundle.json is "
		    "not a JSON object");
	}
	const char *fmt;
	int64_t v;
	if (get_str(&c, out->root, "format", 0, &fmt) != LQ_OK)
		goto fail;
	if (strcmp(fmt, BUNDLE_FORMAT_NAME) != 0) {
		bad(&c, "format", "is not \"" BUNDLE_FORMAT_NAME "\"");
		goto fail;
	}
	if (get_int(&c, out->root, "format_version", 0, I32, &v) != LQ_OK)
		goto fail;
	out->format_version = (int)v;
	if (v != MEDIA_BUNDLE_FORMAT_VERSION) {
		bad(&c, "format_version", "is not a version this latentq reads");
		error_set_hint(err, "this latentq (%s) reads format version %d",
		    PACKAGE_VERSION, MEDIA_BUNDLE_FORMAT_VERSION);
		goto fail;
	}
	if (get_str(&c, out->root, "latentq_version", 0, &out->latentq_version) !=
	    LQ_OK)
		goto fail;
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(out->root, "jobs");
	if (!cJSON_IsArray(jobs)) {
		bad(&c, "jobs", "must be an array");
		goto fail;
	}
	out->n_jobs = (size_t)cJSON_GetArraySize(jobs);
	out->jobs = xcalloc(out->n_jobs + 1, sizeof(*out->jobs));
	size_t i = 0;
	for (const cJSON *o = jobs->child; o != NULL; o = o->next, i++) {
		snprintf(c.where, sizeof(c.where), "jobs[%zu]", i);
		if (parse_job(&c, o, &out->jobs[i]) != LQ_OK)
			goto fail;
	}
	/* every member listed once */
	c.where[0] = '\0';
	for (i = 0; i < out->n_jobs; i++) {
		const struct media_bundle_job *j = &out->jobs[i];
		size_t nf = j->n_artifacts + (j->has_checkpoint ? 1 : 0);
		for (size_t k = 0; k < nf; k++) {
			const char *m = k < j->n_artifacts ?
			    j->artifacts[k].file.member : j->checkpoint.file.member;
			const struct media_bundle_file *f =
			    media_bundle_find_member(out, m);
			const struct media_bundle_file *me = k < j->n_artifacts ?
			    &j->artifacts[k].file : &j->checkpoint.file;
			if (f != me) {
				snprintf(c.where, sizeof(c.where), "jobs[%zu]", i);
				error_set(err, LQ_FAILED, "LQ-BUNDLE-004", "bundle.json: "
				    "member %s is listed twice", m);
				error_set_field(err, "%s", c.where);
				goto fail;
			}
		}
	}
	return LQ_OK;
fail:
	media_bundle_index_clear(out);
	return LQ_FAILED;
}

void
media_bundle_index_clear(struct media_bundle_index *idx)
{
	for (size_t i = 0; i < idx->n_jobs && idx->jobs != NULL; i++)
		free(idx->jobs[i].artifacts);
	free(idx->jobs);
	cJSON_Delete(idx->root);
	memset(idx, 0, sizeof(*idx));
}

const struct media_bundle_file *
media_bundle_find_member(const struct media_bundle_index *idx,
    const char *name)
{
	for (size_t i = 0; i < idx->n_jobs; i++) {
		const struct media_bundle_job *j = &idx->jobs[i];
		for (size_t k = 0; k < j->n_artifacts; k++)
			if (j->artifacts[k].file.member != NULL &&
			    strcmp(j->artifacts[k].file.member, name) == 0)
				return &j->artifacts[k].file;
		if (j->has_checkpoint && strcmp(j->checkpoint.file.member, name) == 0)
			return &j->checkpoint.file;
	}
	return NULL;
}
