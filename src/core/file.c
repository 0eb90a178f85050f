/*
 * file.c — unique temporaries, durable renames and storage-exhaustion
 * errors for every output latentq writes (see file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/util.h"

enum lq_status
file_open_temp(const char *path, const char *suffix, const char *code,
    struct file_temp *t, struct lq_error *err)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	size_t sl = strlen(suffix);
	char *tmp = xasprintf("%s.XXXXXX%s", path, suffix);
	/* mkostemps opens with O_CREAT|O_EXCL, which never follows a symlink
	 * (POSIX: EEXIST for any existing name) and retries other names. */
	int fd = mkostemps(tmp, (int)sl, O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		free(tmp);
		char *name = xasprintf("%s.XXXXXX%s", path, suffix);
		enum lq_status s = file_fail(err, code, "open", name, e);
		free(name);
		return s;
	}
	/* mkostemps creates 0600; an output gets what open(…, 0666) gives */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0) {
		enum lq_status s = file_fail(err, code, "fchmod", tmp, errno);
		close(fd);
		unlink(tmp);
		free(tmp);
		return s;
	}
	t->fd = fd;
	t->tmp = tmp;
	t->path = xstrdup(path);
	return LQ_OK;
}

void
file_discard_temp(struct file_temp *t)
{
	if (t->fd >= 0)
		close(t->fd);
	if (t->tmp != NULL && !t->committed)
		unlink(t->tmp);
	free(t->tmp);
	free(t->path);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

enum lq_status
file_errno_status(int e)
{
	switch (e) {
	case ENOSPC:
#if defined(EDQUOT) && EDQUOT != ENOSPC
	case EDQUOT:
#endif
	case EIO:
		return LQ_RETRY;
	default:
		return LQ_FAILED;
	}
}

enum lq_status
file_fail(struct lq_error *err, const char *code, const char *call,
    const char *path, int e)
{
	enum lq_status s = file_errno_status(e);
	error_set(err, s, s == LQ_RETRY ? FILE_CODE_STORAGE : code,
	    "%s(%s) failed: %s", call, path, strerror(e));
	if (s == LQ_RETRY)
		error_set_hint(err, "free space on that file system (or raise "
		    "the quota); the job stays queued and resumes from its last "
		    "checkpoint");
	return s;
}

enum lq_status
file_sync_temp(struct file_temp *t, const char *code, struct lq_error *err)
{
	if (fsync(t->fd) != 0)
		return file_fail(err, code, "fsync", t->tmp, errno);
	return LQ_OK;
}

enum lq_status
file_rename_temp(struct file_temp *t, const char *code, struct lq_error *err)
{
	if (rename(t->tmp, t->path) != 0)
		return file_fail(err, code, "rename", t->path, errno);
	t->committed = 1;
	char *copy = xstrdup(t->path);
	const char *dir = dirname(copy);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	enum lq_status s = LQ_OK;
	if (fd < 0 || fsync(fd) != 0)
		s = file_fail(err, code, fd < 0 ? "open" : "fsync", dir, errno);
	if (fd >= 0)
		close(fd);
	free(copy);
	return s;
}

enum lq_status
file_commit_temp(struct file_temp *t, const char *code, struct lq_error *err)
{
	enum lq_status s = file_sync_temp(t, code, err);
	if (s == LQ_OK)
		s = file_rename_temp(t, code, err);
	return s;
}

enum lq_status
file_commit(const struct file_commit *hook, struct file_temp *t,
    const char *code, struct lq_error *err)
{
	if (hook == NULL || hook->fn == NULL)
		return file_commit_temp(t, code, err);
	return hook->fn(hook->ud, t, code, err);
}

enum lq_status
file_digest_fd(int fd, const char *name, int64_t *size,
    char hex[DIGEST_HEX_SIZE], struct lq_error *err)
{
	struct digest_state st;
	digest_begin(&st);
	static unsigned char buf[1 << 20];
	off_t off = 0;
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return file_fail(err, "LQ-IO-002", "pread", name, errno);
		if (n == 0)
			break;
		digest_update(&st, buf, (size_t)n);
		off += n;
	}
	digest_end(&st, hex);
	*size = (int64_t)off;
	return LQ_OK;
}
