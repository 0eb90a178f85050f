/*
 * protocol.h — the contract between `latentq run` (the supervisor,
 * supervisor.c) and the worker child it spawns (`latentq exec-job`,
 * src/cmd/exec-job.c): the child's exit statuses, what the child has
 * recorded before each, and what the supervisor records after it.  Exit
 * values come from the one table in core/exit.def.
 *
 *   child exits            child recorded            supervisor records
 *   0  EXIT_OK             job done                  nothing more
 *   65 EXIT_DATAERR        job poisoned, its error   nothing more
 *   69 EXIT_UNAVAILABLE    worker_error event        requeue "host": the
 *      (this host cannot render: no Vulkan driver    attempt given back,
 *      or device, or a device error or out of        no failure; then the
 *      memory before the first step)                 supervisor stops (69)
 *   75 EXIT_TEMPFAIL       worker_error event        requeue "interrupted"
 *      (SIGTERM: stopped after a committed step,     (no backoff) or
 *      LQ-RUN-INT; or a RETRY-graded error during    "retry" (backoff);
 *      a step, such as LQ-GPU-OOM)                   no failure either way
 *   74 EXIT_IOERR          worker_error event when   requeue "host" (the
 *      (the queue database failed under the child,   it could                attempt given back),
 *      or a disk is full or failing: ENOSPC, EDQUOT,                        then the supervisor
 *      EIO on outputs or database)                                          stops (74)
 *   77 WORKER_EXIT_LEASE_LOST  nothing: the job is   nothing: the job is
 *      (the job is no longer leased to this child:   its new holder's
 *      taken over, cancelled, reaped; every write is
 *      fenced by the lease token, store/jobs.h)
 *   anything else, or killed by a signal             "crashed" event
 *                                                    (signal, phase, step,
 *                                                    stderr tail); requeue
 *                                                    "crash": one failure
 *
 * A warm worker (LATENTQ_WARM_WORKER, on unless "0") is the same child
 * started once for many jobs, `exec-job --serve`: it reads one order per
 * line on its stdin, "JOB ATTEMPT LEASE_TOKEN" (the claim the supervisor
 * made), renders that job exactly as a one-job child would, and answers
 * on fd WORKER_SERVE_REPLY_FD with "JOB STATUS", STATUS being the exit
 * status above that a one-job child would have ended with (its records
 * made first, as above).  The supervisor sends the next order only after
 * that answer.  After 0 or 65 the child waits for the next order, keeping
 * its devices warm (render_warm, render/render.h); after any other status,
 * and at the end of its stdin, it frees them and exits.  A child that
 * dies before it answers is a crash of the job it was given, as above;
 * the next job gets a fresh child.
 *
 * The worker_error event ({"code", "grade", "message", "exit"}) carries
 * the child's real error and grade, so that status and show print
 * "LQ-GPU-OOM (retry): out of device memory ..." rather than an exit
 * status.  How requeues count attempts and failures: store/jobs.h.
 *
 * Ownership: struct worker_report is plain data.
 */
#ifndef LQ_WORKER_PROTOCOL_H
#define LQ_WORKER_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/exit.h"

struct store;

/*
 * The child's status for "this job is no longer mine" (EX_NOPERM).  It
 * passes only between exec-job and the supervisor; no command exits with
 * it, so it is not in core/exit.def.
 */
#define WORKER_EXIT_LEASE_LOST 77

/* The fd a serving child (exec-job --serve) answers on. */
#define WORKER_SERVE_REPLY_FD 3

/* A serving child's status after which it waits for the next order. */
#define WORKER_SERVES_ON(status) ((status) == EXIT_OK || \
	(status) == EXIT_DATAERR)

/* What a child's wait status means (the table above). */
enum worker_outcome {
	WORKER_DONE,		/* 0 */
	WORKER_FAILED,		/* 65 */
	WORKER_HOST,		/* 69 */
	WORKER_TEMPFAIL,	/* 75 */
	WORKER_IOERR,		/* 74 */
	WORKER_LEASE_LOST,	/* 77 */
	WORKER_CRASH,		/* any other exit, or a signal */
};

/* Maps a waitpid() status onto the outcome above. */
enum worker_outcome worker_outcome_of(int wait_status);

/*
 * The child's exit status for a render that failed with `e` while the
 * job was in `phase` (NULL: unknown), by the table above and the flags of
 * e's row in core/codes.def: LQ-RUN-INT and other RETRY errors 75; a host
 * fault 69 (LQ_FATAL, or a HOST code, LQ-GPU-*, in load, compile or
 * encode-text, before the first denoising step); a lost lease (LQ-JOB-005)
 * 77; a full or failing disk (FILE_CODE_STORAGE, STORE_CODE_STORAGE) and
 * other QUEUE codes (LQ-DB-*) 74; other LQ_FAILED 65 (the caller poisons
 * the job).
 */
int worker_exit_for(const struct lq_error *e, const char *phase);

/* The child's last word: its real error as the job's "worker_error" event. */
struct worker_report {
	int present;		/* 0: the child recorded nothing */
	char code[24];
	enum lq_status grade;
	char message[1024];
	int exit_status;
};

/*
 * The error as recorded in jobs.error_message: error_format without its
 * " [CODE]" (the code is stored beside it).  Returns buf.
 */
char *worker_error_text(const struct lq_error *e, char *buf, size_t n);

/* Records e (with the exit status the child will end with) as above. */
enum lq_status worker_report_error(struct store *st, int64_t job_id,
    const struct lq_error *e, int exit_status, struct lq_error *err);

/*
 * Reads back the report of the job's current attempt: the last
 * worker_error event after its last "claimed" event (out->present = 0 when
 * there is none).
 */
enum lq_status worker_read_report(struct store *st, int64_t job_id,
    struct worker_report *out, struct lq_error *err);

#endif
