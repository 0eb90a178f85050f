/*
 * fault.h — fault injection for crash/resume tests (a testing aid, as
 * SQLite's crash tests inject I/O faults).
 *
 * LATENTQ_FAULT holds a comma-separated list of rules
 *     [JOB/]ACTION@PHASE[:STEP][#ATTEMPT]
 * ACTION is segv (raise SIGSEGV, default action), abort (SIGABRT), kill (SIGKILL itself),
 * exit (exit status 1), oom (report out of device memory: a retryable
 * failure), or nan (denoise only: the latent after that step's update gets
 * a NaN before the finiteness guard looks at it), or slow=SECONDS (denoise:
 * that step takes SECONDS longer, before its checkpoint; exit: the worker
 * lingers SECONDS after recording its job's outcome, as a slow teardown
 * does; both sleep through signals like a long kernel; "slow" alone is
 * 10 s).  PHASE is one of load, compile, encode-text, denoise, decode,
 * encode-video, and exit (slow only, step 0); STEP fires,
 * for denoise, after that step's checkpoint is committed (step numbers
 * count from 1) and, for decode, when the first frames of decode try STEP
 * arrive (tries count from 1; an "oom" there is retried by the render with
 * smaller VAE tiles); ATTEMPT restricts the rule to that
 * attempt number of the job (from 1); JOB restricts it to the job of that
 * name.  Example: "segv@denoise:2#1", "b/abort@load", "slow=30@denoise:3".
 * Nothing happens when the variable is unset.
 */
#ifndef LQ_CORE_FAULT_H
#define LQ_CORE_FAULT_H

/*
 * Called by the render at each phase start (step 0) and after each
 * committed step.  Returns 0, or 1 when an "oom" rule matched (the caller
 * then fails with LQ_RETRY); the other actions do not return.
 */
int fault_point(const char *job, const char *phase, int step, int attempt);

/* 1 when a "nan" rule matches this denoising step (see above). */
int fault_nan(const char *job, int step, int attempt);

/* Sleeps as a "slow" rule for this phase ("denoise", "exit") and step
 * says (see above). */
void fault_slow(const char *job, const char *phase, int step, int attempt);

#endif
