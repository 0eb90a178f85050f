/*
 * supervisor.c — the `latentq run` loop: claim, spawn, heartbeat, record
 * (see supervisor.h for the contract).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"
#include "worker/supervisor.h"

#define TAIL_SIZE 2048

static volatile sig_atomic_t signals_seen;

static void
on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

static double
env_seconds(const char *name, double def)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		return def;
	char *end;
	double d = strtod(v, &end);
	return (*end == '\0' && d >= 0) ? d : def;
}

void
supervisor_owner(char *buf, size_t n)
{
	char host[256] = "localhost";
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	unsigned long long start = 0;
	FILE *fp = fopen("/proc/self/stat", "r");
	if (fp != NULL) {
		char stat[1024];
		size_t len = fread(stat, 1, sizeof(stat) - 1, fp);
		fclose(fp);
		stat[len] = '\0';
		char *p = strrchr(stat, ')');
		int field = 2;
		char *save = NULL;
		for (char *tok = p ? strtok_r(p + 1, " ", &save) : NULL; tok;
		    tok = strtok_r(NULL, " ", &save)) {
			if (++field == 22) {
				start = strtoull(tok, NULL, 10);
				break;
			}
		}
	}
	snprintf(buf, n, "%s:%ld:%llu", host, (long)getpid(), start);
}

/* A ring of the child's last TAIL_SIZE bytes of stderr. */
struct tail {
	char buf[TAIL_SIZE];
	size_t len;
};

static void
tail_add(struct tail *t, const char *data, size_t n)
{
	if (n >= TAIL_SIZE) {
		memcpy(t->buf, data + n - TAIL_SIZE, TAIL_SIZE);
		t->len = TAIL_SIZE;
		return;
	}
	if (t->len + n > TAIL_SIZE) {
		size_t drop = t->len + n - TAIL_SIZE;
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
	}
	memcpy(t->buf + t->len, data, n);
	t->len += n;
}

/* Did the last crash of this job happen while compiling, with no cache-off retry since? */
struct compile_scan {
	int compile_crash;
};

static int
scan_event(double at, const char *kind, const char *detail, void *ud)
{
	(void)at;
	struct compile_scan *c = ud;
	if (strcmp(kind, "crashed") == 0) {
		cJSON *d = detail ? cJSON_Parse(detail) : NULL;
		const char *phase = json_get_string(d, "phase", "");
		c->compile_crash = strcmp(phase, "compile") == 0;
		cJSON_Delete(d);
	} else if (strcmp(kind, "cache_off_retry") == 0) {
		c->compile_crash = 0;
	} else if (strcmp(kind, "retried") == 0) {
		c->compile_crash = 0;
	}
	return 0;
}

struct child {
	pid_t pid;
	int err_fd;
};

static int
spawn_child(const struct supervisor_options *opt, const struct store_job *job,
    const char *owner, int no_cache, struct child *out)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		/* Die with the supervisor: an orphan would go on rendering a
		 * job whose lease the next supervisor takes over.  (The death
		 * signal survives execv.)  If the supervisor died before the
		 * prctl, getppid() already names another process. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(SUPERVISOR_EXIT_LEASE_LOST);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		signal(SIGINT, SIG_IGN);	/* the supervisor decides */
		signal(SIGTERM, SIG_DFL);
		if (no_cache)
			setenv("LATENTQ_NO_PIPELINE_CACHE", "1", 1);
		char id[32], attempt[32], keep[32], token[32];
		snprintf(id, sizeof(id), "%lld", (long long)job->id);
		snprintf(attempt, sizeof(attempt), "%d", job->attempts);
		snprintf(token, sizeof(token), "%lld", (long long)job->lease_token);
		if (opt->keep_checkpoints == 0)
			snprintf(keep, sizeof(keep), "all");
		else
			snprintf(keep, sizeof(keep), "%d", opt->keep_checkpoints);
		const char *argv[24];
		int a = 0;
		argv[a++] = "latentq";
		argv[a++] = "-d";
		argv[a++] = opt->db_path;
		if (opt->device != NULL) {
			argv[a++] = "--device";
			argv[a++] = opt->device;
		}
		for (int v = 0; v < opt->verbose && v < 2; v++)
			argv[a++] = "-v";	/* the same verbosity in the child */
		if (opt->verbose < 0)
			argv[a++] = "-q";
		argv[a++] = "exec-job";
		argv[a++] = "--owner";
		argv[a++] = owner;
		argv[a++] = "--attempt";
		argv[a++] = attempt;
		argv[a++] = "--lease-token";
		argv[a++] = token;
		if (opt->keep_checkpoints >= 0) {
			argv[a++] = "--keep-checkpoints";
			argv[a++] = keep;
		}
		if (opt->resume_anywhere)
			argv[a++] = "--resume-anywhere";
		argv[a++] = id;
		argv[a] = NULL;
		execv("/proc/self/exe", (char *const *)argv);
		fprintf(stderr, "latentq: cannot exec /proc/self/exe: %s\n",
		    strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	out->pid = pid;
	out->err_fd = fds[0];
	return 0;
}

/*
 * Waits for the child, relaying its stderr and renewing the lease.
 * Returns its wait status.
 */
static int
watch_child(struct store *st, const struct store_job *job, const char *owner,
    double lease, struct child *ch, struct tail *tail, int *lost_lease)
{
	/* Renew often: a cancel is noticed at the next renewal. */
	double every = lease / 4 < 2.0 ? lease / 4 : 2.0;
	double next_renew = util_monotonic() + every;
	int termed = 0, killed = 0, status = 0;
	int seen = signals_seen;
	for (;;) {
		struct pollfd p = {ch->err_fd, POLLIN, 0};
		int pr = ch->err_fd >= 0 ? poll(&p, 1, 200) : (usleep(200000), 0);
		if (pr > 0) {
			char buf[4096];
			ssize_t n = read(ch->err_fd, buf, sizeof(buf));
			if (n > 0) {
				tail_add(tail, buf, (size_t)n);
				fwrite(buf, 1, (size_t)n, stderr);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(ch->err_fd);
				ch->err_fd = -1;
			}
		}
		pid_t w = waitpid(ch->pid, &status, WNOHANG);
		if (w == ch->pid) {
			/* drain what is left of its stderr */
			if (ch->err_fd >= 0) {
				char buf[4096];
				ssize_t n;
				while ((n = read(ch->err_fd, buf, sizeof(buf))) > 0) {
					tail_add(tail, buf, (size_t)n);
					fwrite(buf, 1, (size_t)n, stderr);
				}
				close(ch->err_fd);
				ch->err_fd = -1;
			}
			return status;
		}
		if (signals_seen != seen) {
			seen = signals_seen;
			if (!termed) {
				log_info("asking job %lld to checkpoint and stop "
				    "(signal again to stop at once)", (long long)job->id);
				kill(ch->pid, SIGTERM);
				termed = 1;
			} else if (!killed) {
				kill(ch->pid, SIGKILL);
				killed = 1;
			}
		}
		if (util_monotonic() >= next_renew) {
			struct lq_error err;
			error_clear(&err);
			enum lq_status r = store_renew_lease(st, job->id, owner,
			    lease, &err);
			if (r == LQ_FAILED && !*lost_lease) {
				/* A child that just ended its job (done or failed)
				 * released the lease itself: let it exit. */
				for (int i = 0; i < 20; i++) {
					if (waitpid(ch->pid, &status, WNOHANG) == ch->pid) {
						close(ch->err_fd);
						ch->err_fd = -1;
						return status;
					}
					usleep(50000);
				}
				/* cancelled, or taken over: stop the child */
				log_warn("job %lld %s was cancelled or taken over (%s); "
				    "stopping its worker", (long long)job->id, job->name,
				    err.message);
				*lost_lease = 1;
				kill(ch->pid, SIGTERM);
				termed = 1;
			}
			next_renew = util_monotonic() + every;
		}
	}
}

static char *
crash_detail(int status, const struct store_job *after, const struct tail *t)
{
	cJSON *d = cJSON_CreateObject();
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		cJSON_AddNumberToObject(d, "signal", sig);
		cJSON_AddStringToObject(d, "signal_name", sigabbrev_np(sig) ?
		    sigabbrev_np(sig) : "?");
	} else {
		cJSON_AddNumberToObject(d, "exit_status", WEXITSTATUS(status));
	}
	cJSON_AddStringToObject(d, "phase", after->phase ? after->phase : "start");
	cJSON_AddNumberToObject(d, "step", after->step);
	char *tail = xstrndup(t->buf, t->len);
	cJSON_AddStringToObject(d, "stderr_tail", tail);
	free(tail);
	char *s = json_canonical(d);
	cJSON_Delete(d);
	return s;
}

/* Backoff before attempt n+1: base * 2^(n-1), capped at 10 minutes. */
static double
backoff_for(int attempts)
{
	double base = env_seconds("LATENTQ_RETRY_BACKOFF", 5.0);
	double b = base;
	for (int i = 1; i < attempts && b < 600; i++)
		b *= 2;
	return b < 600 ? b : 600;
}

int
supervisor_run(struct store *st, const struct supervisor_options *opt,
    struct supervisor_result *res)
{
	struct supervisor_result local = {0};
	if (res == NULL)
		res = &local;
	memset(res, 0, sizeof(*res));
	char owner[320];
	supervisor_owner(owner, sizeof(owner));
	double lease = env_seconds("LATENTQ_LEASE_SECONDS", 60);

	struct sigaction sa = {0}, old_int, old_term;
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	signals_seen = 0;

	int claims = 0, interrupted = 0, fatal = 0, storage = 0;
	while (!signals_seen && (opt->max_jobs == 0 || claims < opt->max_jobs)) {
		struct lq_error err;
		error_clear(&err);
		struct store_job job;
		int claimed = 0;
		enum lq_status r = store_claim_job(st, owner, lease, opt->only_ids,
		    opt->n_ids, &job, &claimed, &err);
		if (r == LQ_RETRY) {
			usleep(100000);
			continue;
		}
		if (r != LQ_OK) {
			error_print(&err, stderr);
			fatal = 1;
			break;
		}
		if (!claimed) {
			double at;
			int running;
			if (store_next_claimable(st, opt->only_ids, opt->n_ids, &at,
			    &running, &err) != LQ_OK) {
				error_print(&err, stderr);
				fatal = 1;
				break;
			}
			if (at < 0 && opt->mode == SUPERVISOR_ONCE &&
			    !(opt->only_ids != NULL && running > 0))
				break;
			/* wait for a backoff to pass, a new job, or a lease to lapse */
			double wait = at > 0 ? at - util_now() : 1.0;
			if (wait > 1.0)
				wait = 1.0;
			if (wait < 0.05)
				wait = 0.05;
			usleep((useconds_t)(wait * 1e6));
			continue;
		}
		claims++;
		struct compile_scan scan = {0};
		store_list_events(st, job.id, scan_event, &scan, &err);
		int no_cache = scan.compile_crash;
		if (no_cache)
			store_add_event(st, job.id, "cache_off_retry", NULL, &err);
		log_info("job %lld %s: attempt %d/%d", (long long)job.id, job.name,
		    job.attempts, job.max_attempts);
		struct child ch;
		if (spawn_child(opt, &job, owner, no_cache, &ch) != 0) {
			log_error("cannot start a worker process: %s", strerror(errno));
			store_requeue_job(st, job.id, owner, backoff_for(job.attempts),
			    1, "LQ-RUN-SPAWN", strerror(errno), NULL, &err);
			store_job_clear(&job);
			fatal = 1;
			break;
		}
		struct tail tail = {0};
		int lost = 0;
		int status = watch_child(st, &job, owner, lease, &ch, &tail, &lost);
		struct store_job after;
		if (store_get_job(st, job.id, &after, &err) != LQ_OK) {
			error_print(&err, stderr);
			store_job_clear(&job);
			fatal = 1;
			break;
		}
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (code == 0 && after.state == JOB_STATE_DONE) {
			res->done++;
		} else if (code == 65 && after.state == JOB_STATE_POISONED) {
			res->poisoned++;
			res->failed_data++;
		} else if (lost || code == SUPERVISOR_EXIT_LEASE_LOST) {
			/* cancelled or taken over: nothing of ours to record */
			if (!lost)
				log_warn("job %lld %s was taken over; its worker "
				    "stopped without writing", (long long)job.id,
				    job.name);
		} else if (code == SUPERVISOR_EXIT_STORAGE) {
			/* a full disk is the host's fault, not the job's: give
			 * the job back (its checkpoints are kept) and stop */
			store_requeue_job(st, job.id, owner, 0, 1, "LQ-RUN-STORAGE",
			    "storage exhausted while rendering (the worker's "
			    "error is above); resumes from its last checkpoint",
			    NULL, &err);
			storage = 1;
		} else if (code == 70) {
			/* the worker cannot render on this host (its error is on
			 * stderr above): give the job back untouched and stop */
			store_requeue_job(st, job.id, owner, 0, 1, "LQ-RUN-WORKER",
			    "the worker could not start rendering on this host",
			    NULL, &err);
			fatal = 1;
		} else if (code == 75 && signals_seen) {
			/* interrupted at our request: resumable, attempt refunded */
			store_add_event(st, job.id, "interrupted", NULL, &err);
			store_requeue_job(st, job.id, owner, 0, 1, "LQ-RUN-INT",
			    "interrupted; resumes from its last checkpoint", NULL,
			    &err);
			interrupted = 1;
			res->interrupted++;
		} else {
			char *detail = crash_detail(status, &after, &tail);
			char msg[512];
			if (WIFSIGNALED(status))
				snprintf(msg, sizeof(msg), "worker killed by SIG%s in "
				    "phase %s (step %d)", sigabbrev_np(WTERMSIG(status)) ?
				    sigabbrev_np(WTERMSIG(status)) : "?",
				    after.phase ? after.phase : "start", after.step);
			else
				snprintf(msg, sizeof(msg), "worker exited with status %d "
				    "in phase %s (step %d)", code, after.phase ?
				    after.phase : "start", after.step);
			store_add_event(st, job.id, "crashed", detail, &err);
			free(detail);
			int compile_crash = after.phase != NULL &&
			    strcmp(after.phase, "compile") == 0 && !no_cache &&
			    WIFSIGNALED(status);
			enum job_state ns = JOB_STATE_QUEUED;
			if (signals_seen) {
				store_requeue_job(st, job.id, owner, 0, 1, "LQ-RUN-INT",
				    msg, &ns, &err);
				interrupted = 1;
				res->interrupted++;
			} else if (store_requeue_job(st, job.id, owner,
			    compile_crash ? 0 : backoff_for(job.attempts),
			    compile_crash, "LQ-RUN-CRASH", msg, &ns, &err) == LQ_OK) {
				res->crashed++;
				if (ns == JOB_STATE_POISONED) {
					res->poisoned++;
					log_error("job %lld %s poisoned: %s", (long long)job.id,
					    job.name, msg);
				} else {
					res->retried++;
					log_warn("job %lld %s: %s; will retry", (long long)job.id,
					    job.name, msg);
				}
			} else {
				error_print(&err, stderr);
			}
		}
		if (code == 65 && after.state == JOB_STATE_POISONED)
			log_error("job %lld %s failed: %s", (long long)job.id, job.name,
			    after.error_message ? after.error_message : "");
		store_job_clear(&after);
		store_job_clear(&job);
		if (fatal || storage)
			break;
	}
	if (signals_seen)
		interrupted = 1;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (fatal)
		return 1;
	if (storage)
		return SUPERVISOR_EXIT_STORAGE;
	if (interrupted)
		return 75;
	if (res->poisoned > res->failed_data)
		return 1;
	if (res->failed_data > 0)
		return 65;
	return 0;
}
