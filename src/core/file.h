/*
 * file.h — how latentq puts an output file in place: a temporary file
 * that nobody else can have planted or shares, made durable and renamed
 * onto its destination only when complete; and which errno values mean
 * "the storage is exhausted" (a retry, not bad input).
 *
 * A temporary is "PATH.XXXXXX<suffix>" in PATH's own folder (so the rename
 * is atomic), created with O_CREAT|O_EXCL|O_NOFOLLOW: a pre-planted file or
 * symlink of that name is never opened or followed (another name is drawn),
 * and two writers of the same PATH (two attempts, two hosts) never write
 * into one file.  rename(2) replaces a symlink at PATH itself, never its
 * target.
 *
 * Ownership: struct file_temp owns its strings and descriptor; every
 * file_open_temp that succeeded is ended by file_discard_temp (which
 * removes the temporary when it was not committed).
 */
#ifndef LQ_CORE_FILE_H
#define LQ_CORE_FILE_H

#include <stdint.h>

#include "core/digest.h"
#include "core/error.h"

struct file_temp {
	int fd;			/* O_RDWR|O_CLOEXEC on tmp; -1 once closed */
	char *tmp;		/* the temporary's path */
	char *path;		/* the destination */
	int committed;		/* renamed onto path */
};

/*
 * Creates a fresh temporary for `path` (see above), mode 0666 & ~umask.
 * On failure nothing is created, t is cleared and err is file_fail's
 * (`code`, the call and "PATH.XXXXXX<suffix>", errno).
 */
enum lq_status file_open_temp(const char *path, const char *suffix,
    const char *code, struct file_temp *t, struct lq_error *err);

/* Closes the descriptor, removes the temporary unless committed, frees. */
void file_discard_temp(struct file_temp *t);

/*
 * LQ_RETRY for the errno values that mean the storage is exhausted or
 * failing (ENOSPC, EDQUOT, EIO): the same write may pass once space is
 * freed, so they must not fail the job.  LQ_FAILED for everything else.
 */
enum lq_status file_errno_status(int e);

/*
 * Fills err for a failed system call `call` on `path` with errno `e`:
 * storage exhaustion (file_errno_status) is LQ_RETRY with code
 * FILE_CODE_STORAGE, anything else LQ_FAILED with `code`.  The message
 * names the call, the path and strerror(e).  Returns the status.
 */
#define FILE_CODE_STORAGE "LQ-IO-005"
enum lq_status file_fail(struct lq_error *err, const char *code,
    const char *call, const char *path, int e);

/* Makes the temporary's data durable: fsync(t->fd).  Errors: file_fail. */
enum lq_status file_sync_temp(struct file_temp *t, const char *code,
    struct lq_error *err);

/*
 * Renames the temporary onto t->path and fsyncs the folder, so the new
 * name survives a crash.  Errors: file_fail (the temporary stays).
 */
enum lq_status file_rename_temp(struct file_temp *t, const char *code,
    struct lq_error *err);

/*
 * How a finished (flushed, not yet synced) temporary is put in place.
 * fn must sync and rename it (file_sync_temp, file_rename_temp), or fail
 * leaving it for the writer to discard.  A NULL hook means
 * file_commit_temp.  The store's hook also records the file as a job's
 * artifact under the job's lease (store_commit_artifact).
 */
struct file_commit {
	enum lq_status (*fn)(void *ud, struct file_temp *t, const char *code,
	    struct lq_error *err);
	void *ud;
};

/* The plain commit: file_sync_temp then file_rename_temp. */
enum lq_status file_commit_temp(struct file_temp *t, const char *code,
    struct lq_error *err);

/* Calls the hook (or file_commit_temp when hook or hook->fn is NULL). */
enum lq_status file_commit(const struct file_commit *hook,
    struct file_temp *t, const char *code, struct lq_error *err);

/*
 * Size and BLAKE2b-256 of what the descriptor holds, read from offset 0
 * with pread (the descriptor's offset is not moved).  Errors: file_fail
 * with code LQ-IO-002.
 */
enum lq_status file_digest_fd(int fd, const char *name, int64_t *size,
    char hex[DIGEST_HEX_SIZE], struct lq_error *err);

#endif
