/*
 * submit.h — recording a manifest's jobs in the queue (used by `submit` and
 * `render`).
 *
 * Every entry is recorded as a request, as written.  Entries that fail
 * loading or preflight (src/preflight) become `rejected` jobs with their
 * first error's code and every problem in the message; a valid job's
 * preflight warnings become a "preflight" event; the
 * rest are queued, unless a job with the same config digest is already
 * queued, running or done (then it is reported and reused, unless
 * `again`).  The whole manifest is recorded in one transaction: a crash
 * mid-submit records nothing.
 */
#ifndef LQ_CMD_SUBMIT_H
#define LQ_CMD_SUBMIT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct store;

struct device_caps;

struct submit_options {
	int again;		/* queue duplicates anyway */
	int quiet;		/* no per-job lines on stdout */
	int snap;		/* preflight --snap: round off-grid geometry */
	int allow_download;	/* --allow-download: fetch model URLs (preflight.h) */
	const struct device_caps *caps;	/* device to check against; NULL: none */
};

struct submit_result {
	int64_t *job_ids;	/* queued or reused jobs, in manifest order; free() */
	size_t n_jobs;
	int queued, existing, rejected;
	int deferred;		/* left out, retryable (preflight_job_retryable):
				 * not recorded; the command exits 75 */
	int exit_status;	/* when not LQ_OK: the command's exit status for
				 * it (66 unreadable manifest, 65 bad, 74/75 db) */
};

/*
 * Loads, checks and records the manifest at `path`.  Prints one line per
 * job to stdout (unless quiet) once the transaction has committed — none
 * when it fails (a full disk: LQ_RETRY naming errno) — and each error to
 * stderr.  Returns LQ_OK
 * when the manifest was recorded (res->rejected and res->deferred may be
 * > 0), LQ_FAILED
 * when it is unusable as a whole (nothing queued), LQ_RETRY when the
 * database stayed busy.  res is always initialised.
 */
enum lq_status submit_manifest(struct store *st, const char *path,
    const struct submit_options *opt, struct submit_result *res);

#endif
