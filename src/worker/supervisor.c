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

#include "core/codes.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"
#include "worker/protocol.h"
#include "worker/supervisor.h"
#include "worker/webhooks.h"
#include "store/webhooks.h"

#define TAIL_SIZE 2048

static volatile sig_atomic_t signals_seen;

static void
on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

void
supervisor_owner(char *buf, size_t n)
{
	store_lease_owner_self(buf, n);
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

/*
 * A worker child: a one-job `exec-job` (order_fd -1), or a serving one
 * (`exec-job --serve`, worker/protocol.h) that takes its orders on
 * order_fd and answers on reply_fd.  pid 0: none (it ended).
 */
struct child {
	pid_t pid;
	int err_fd;
	int order_fd, reply_fd;
	char reply[128];	/* an answer line being read */
	size_t reply_len;
};

/* LATENTQ_WARM_WORKER: serving children unless "0" (latentq(1)). */
static int
warm_worker_enabled(void)
{
	return util_env_switch("LATENTQ_WARM_WORKER", 1);
}

/*
 * Starts a child for `job` (a one-job exec-job), or, with job NULL, a
 * serving one that waits for orders.
 */
static int
spawn_child(const struct supervisor_options *opt, const struct store_job *job,
    const char *owner, int no_cache, struct child *out)
{
	int fds[2], ord[2] = {-1, -1}, rep[2] = {-1, -1};
	if (pipe(fds) != 0)
		return -1;
	if (job == NULL && (pipe(ord) != 0 || pipe(rep) != 0)) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		for (int i = 0; i < 2; i++) {
			if (ord[i] >= 0)
				close(ord[i]);
			if (rep[i] >= 0)
				close(rep[i]);
		}
		errno = e;
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		if (job == NULL) {
			close(ord[0]);
			close(ord[1]);
			close(rep[0]);
			close(rep[1]);
		}
		errno = e;
		return -1;
	}
	if (pid == 0) {
		/* Die with the supervisor: an orphan would go on rendering a
		 * job whose lease the next supervisor takes over.  (The death
		 * signal survives execv.)  If the supervisor died before the
		 * prctl, getppid() already names another process. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(WORKER_EXIT_LEASE_LOST);
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		close(fds[1]);
		if (job == NULL) {
			/* orders on stdin, answers on WORKER_SERVE_REPLY_FD
			 * (moved above it first: a pipe end may be fd 3) */
			int o = fcntl(ord[0], F_DUPFD, WORKER_SERVE_REPLY_FD + 1);
			int r = fcntl(rep[1], F_DUPFD, WORKER_SERVE_REPLY_FD + 1);
			if (o < 0 || r < 0)
				_exit(127);
			for (int i = 0; i < 2; i++) {
				close(ord[i]);
				close(rep[i]);
			}
			dup2(o, STDIN_FILENO);
			dup2(r, WORKER_SERVE_REPLY_FD);
			close(o);
			close(r);
		}
		signal(SIGINT, SIG_IGN);	/* the supervisor decides */
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (no_cache)
			setenv("LATENTQ_NO_PIPELINE_CACHE", "1", 1);
		char id[32], attempt[32], keep[32], token[32];
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
		if (job != NULL) {
			snprintf(id, sizeof(id), "%lld", (long long)job->id);
			snprintf(attempt, sizeof(attempt), "%d", job->attempts);
			snprintf(token, sizeof(token), "%lld",
			    (long long)job->lease_token);
			argv[a++] = "--attempt";
			argv[a++] = attempt;
			argv[a++] = "--lease-token";
			argv[a++] = token;
		} else {
			argv[a++] = "--serve";
		}
		if (opt->keep_checkpoints >= 0) {
			argv[a++] = "--keep-checkpoints";
			argv[a++] = keep;
		}
		if (opt->resume_anywhere)
			argv[a++] = "--resume-anywhere";
		if (opt->allow_download)
			argv[a++] = "--allow-download";
		if (job != NULL)
			argv[a++] = id;
		argv[a] = NULL;
		execv("/proc/self/exe", (char *const *)argv);
		fprintf(stderr, "latentq: cannot exec /proc/self/exe: %s\n",
		    strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->err_fd = fds[0];
	out->order_fd = out->reply_fd = -1;
	if (job == NULL) {
		close(ord[0]);
		close(rep[1]);
		fcntl(ord[1], F_SETFD, FD_CLOEXEC);
		fcntl(rep[0], F_SETFD, FD_CLOEXEC);
		fcntl(rep[0], F_SETFL, O_NONBLOCK);
		out->order_fd = ord[1];
		out->reply_fd = rep[0];
	}
	return 0;
}

/* Sends a serving child the order for `job`; -1 (errno) if it is gone. */
static int
child_order(struct child *ch, const struct store_job *job)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "%lld %d %lld\n",
	    (long long)job->id, job->attempts, (long long)job->lease_token);
	ch->reply_len = 0;
	return write(ch->order_fd, line, (size_t)n) == n ? 0 : -1;
}

/* Relays what the child wrote on stderr (tail: kept, may be NULL). */
static void
relay_stderr(struct child *ch, struct tail *tail)
{
	char buf[4096];
	ssize_t n;
	while (ch->err_fd >= 0 && (n = read(ch->err_fd, buf, sizeof(buf))) > 0) {
		if (tail != NULL)
			tail_add(tail, buf, (size_t)n);
		fwrite(buf, 1, (size_t)n, stderr);
		/* a progress line drawn by the child stays open until
		 * its newline: our own messages clear it first */
		log_partial_line(buf[n - 1] != '\n');
	}
}

/*
 * Reads what a serving child answered; 1 with *status (the exit status
 * of protocol.h) once the answer for job_id is complete, else 0 (and -1
 * when its answers ended or are not the protocol's).
 */
static int
child_answer(struct child *ch, int64_t job_id, int *status)
{
	for (;;) {
		char *nl = memchr(ch->reply, '\n', ch->reply_len);
		if (nl != NULL) {
			long long id;
			int rc;
			*nl = '\0';
			int ok = sscanf(ch->reply, "%lld %d", &id, &rc) == 2 &&
			    id == job_id;
			if (!ok)
				log_error("worker %ld answered \"%.60s\" for job "
				    "%lld", (long)ch->pid, ch->reply,
				    (long long)job_id);
			ch->reply_len = 0;
			if (!ok)
				return -1;
			*status = rc;
			return 1;
		}
		if (ch->reply_len >= sizeof(ch->reply) - 1)
			return -1;
		ssize_t n = read(ch->reply_fd, ch->reply + ch->reply_len,
		    sizeof(ch->reply) - 1 - ch->reply_len);
		if (n > 0) {
			ch->reply_len += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return -1;
	}
}

/* Closes the supervisor's ends of the child's pipes. */
static void
child_close_fds(struct child *ch)
{
	int *fds[] = {&ch->err_fd, &ch->order_fd, &ch->reply_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(*fds); i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

/*
 * Ends a serving child between jobs: the end of its orders makes it free
 * its devices (saving their pipeline caches) and exit; one that has not
 * within supervisor_stop_seconds() is killed.
 */
static void
child_retire(struct child *ch)
{
	if (ch->pid <= 0)
		return;
	if (ch->order_fd >= 0) {
		close(ch->order_fd);
		ch->order_fd = -1;
	}
	double until = util_monotonic() + supervisor_stop_seconds();
	int status;
	for (;;) {
		relay_stderr(ch, NULL);
		pid_t w = waitpid(ch->pid, &status, WNOHANG);
		if (w == ch->pid || (w < 0 && errno != EINTR))
			break;
		if (util_monotonic() >= until) {
			kill(ch->pid, SIGKILL);
			waitpid(ch->pid, &status, 0);
			break;
		}
		usleep(20000);
	}
	relay_stderr(ch, NULL);
	child_close_fds(ch);
	ch->pid = 0;
}

/*
 * 1 when job_id's record says it ended (done or poisoned: what a worker
 * records before it releases its lease), 0 when it is still running
 * (under another owner: taken over), cancelled, or unreadable.
 */
static int
job_was_ended(struct store *st, int64_t job_id)
{
	struct store_job now;
	struct lq_error err;
	error_clear(&err);
	if (store_get_job(st, job_id, &now, &err) != LQ_OK)
		return 0;
	int ended = now.state == JOB_STATE_DONE ||
	    now.state == JOB_STATE_POISONED;
	store_job_clear(&now);
	return ended;
}

/*
 * Waits for the child to end the job, relaying its stderr and renewing
 * the lease.  Returns its wait status; for a serving child that answered,
 * the wait status its answer stands for (*answered = 1: it is still
 * running, for its next order if the answer lets it serve on).
 */
static int
watch_child(struct store *st, const struct store_job *job, const char *owner,
    double lease, struct child *ch, struct tail *tail, int *lost_lease,
    int *answered)
{
	/* Renew often: a cancel is noticed at the next renewal. */
	double every = lease / 4 < 2.0 ? lease / 4 : 2.0;
	double next_renew = util_monotonic() + every;
	double stop_within = supervisor_stop_seconds(), term_at = 0;
	int termed = 0, killed = 0, status = 0, released = 0, rc = 0;
	int seen = signals_seen;
	*answered = 0;
	for (;;) {
		struct pollfd p[2] = {{ch->err_fd, POLLIN, 0},
		    {ch->reply_fd, POLLIN, 0}};
		int pr = ch->err_fd >= 0 || ch->reply_fd >= 0 ? poll(p, 2, 200) :
		    (usleep(200000), 0);
		if (pr > 0 && ch->err_fd >= 0 && (p[0].revents & (POLLIN | POLLHUP))) {
			char buf[4096];
			ssize_t n = read(ch->err_fd, buf, sizeof(buf));
			if (n > 0) {
				tail_add(tail, buf, (size_t)n);
				fwrite(buf, 1, (size_t)n, stderr);
				/* a progress line drawn by the child stays open until
				 * its newline: our own messages clear it first */
				log_partial_line(buf[n - 1] != '\n');
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(ch->err_fd);
				ch->err_fd = -1;
			}
		}
		if (ch->reply_fd >= 0 && (pr == 0 || (p[1].revents & (POLLIN |
		    POLLHUP)))) {
			int a = child_answer(ch, job->id, &rc);
			if (a > 0) {
				/* its stderr up to the answer is in the pipe */
				relay_stderr(ch, tail);
				*answered = 1;
				return W_EXITCODE(rc, 0);
			}
			if (a < 0) {
				/* no answer will come: the end of its orders
				 * ends it, and its exit status is the job's */
				close(ch->reply_fd);
				ch->reply_fd = -1;
				if (ch->order_fd >= 0)
					close(ch->order_fd);
				ch->order_fd = -1;
			}
		}
		pid_t w = waitpid(ch->pid, &status, WNOHANG);
		if (w == ch->pid) {
			/* drain what is left of its stderr */
			relay_stderr(ch, tail);
			/* an answer it gave just before it exited still counts */
			if (ch->reply_fd >= 0 && child_answer(ch, job->id, &rc) > 0)
				status = W_EXITCODE(rc, 0);
			child_close_fds(ch);
			ch->pid = 0;
			return status;
		}
		if (signals_seen != seen) {
			seen = signals_seen;
			if (!termed) {
				log_info("asking job %lld to checkpoint and stop within "
				    "%.0f s (signal again to stop at once)",
				    (long long)job->id, stop_within);
				kill(ch->pid, SIGTERM);
				termed = 1;
				term_at = util_monotonic();
			} else if (!killed) {
				kill(ch->pid, SIGKILL);
				killed = 1;
			}
		}
		/* The bound of latentq(1): a step slower than it is abandoned;
		 * the last committed checkpoint is where the job resumes. */
		if (termed && !killed && signals_seen &&
		    util_monotonic() - term_at >= stop_within) {
			log_warn("job %lld did not stop within %.0f s; stopping it "
			    "now (it resumes from its last committed step)",
			    (long long)job->id, stop_within);
			kill(ch->pid, SIGKILL);
			killed = 1;
		}
		if (!released && util_monotonic() >= next_renew) {
			struct lq_error err;
			error_clear(&err);
			enum lq_status r = store_renew_lease(st, job->id, owner,
			    lease, &err);
			if (r == LQ_FAILED && !*lost_lease) {
				if (job_was_ended(st, job->id)) {
					/* The child ended its job (done or failed)
					 * and released the lease itself: stop
					 * renewing and let it exit, however long its
					 * teardown takes.  (Had another host taken
					 * the job over and ended it, our child's next
					 * write is refused and it exits by itself.) */
					released = 1;
				} else {
					/* cancelled, or taken over: stop the child */
					log_warn("job %lld %s was cancelled or taken "
					    "over (%s); stopping its worker",
					    (long long)job->id, job->name, err.message);
					*lost_lease = 1;
					kill(ch->pid, SIGTERM);
					termed = 1;
					term_at = util_monotonic();
				}
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

double
supervisor_stop_seconds(void)
{
	return util_env_seconds("LATENTQ_STOP_SECONDS", 20.0);
}

/* Backoff after the n-th retry or failure: base * 2^(n-1), capped at 10 minutes. */
static double
backoff_for(int attempts)
{
	double base = util_env_seconds("LATENTQ_RETRY_BACKOFF", 5.0);
	double b = base;
	for (int i = 1; i < attempts && b < 600; i++)
		b *= 2;
	return b < 600 ? b : 600;
}

/*
 * A store call that failed with LQ_RETRY (SQLite busy past its timeout, the
 * PostgreSQL server unreachable) is tried again: db_backoff sleeps 0.1 s,
 * doubling to 2 s, and returns 0 once LATENTQ_DB_RETRY_SECONDS (default
 * 300) have passed since the first failure of the run of failures.  The
 * PostgreSQL driver reconnects on the next call.
 */
struct db_retry {
	double first, wait;
};

static int
db_backoff(struct db_retry *d, const struct lq_error *err)
{
	double now = util_monotonic();
	if (d->first == 0) {
		d->first = now;
		d->wait = 0.1;
		log_warn("%s; trying again", err->message);
	}
	if (now - d->first > util_env_seconds("LATENTQ_DB_RETRY_SECONDS", 300))
		return 0;
	usleep((useconds_t)(d->wait * 1e6));
	d->wait = d->wait * 2 < 2 ? d->wait * 2 : 2;
	return 1;
}

/* store_requeue_job, tried again while the database cannot be reached. */
static enum lq_status
requeue_job(struct store *st, int64_t id, const char *owner, double backoff,
    enum job_requeue_reason reason, const char *code, enum lq_status grade,
    const char *message, enum job_state *new_state, struct lq_error *err)
{
	struct db_retry d = {0};
	enum lq_status r;
	while ((r = store_requeue_job(st, id, owner, backoff, reason, code,
	    grade, message, new_state, err)) == LQ_RETRY && db_backoff(&d, err))
		error_clear(err);
	return r;
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
	double lease = util_env_seconds("LATENTQ_LEASE_SECONDS", 60);

	struct sigaction sa = {0}, old_int, old_term, ign = {0}, old_pipe;
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* an order to a serving child that died is EPIPE, not our death */
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe);
	signals_seen = 0;
	/* the serving child (pid 0: none yet, or it ended) */
	struct child warm = {.pid = 0, .err_fd = -1, .order_fd = -1,
	    .reply_fd = -1};
	int serve = warm_worker_enabled();

	int claims = 0, interrupted = 0, fatal = 0, host = 0, storage = 0;
	/* notifications a previous run left pending */
	worker_deliver_webhooks(st, 0);
	struct db_retry dbr = {0};
	while (!signals_seen && (opt->max_jobs == 0 || claims < opt->max_jobs)) {
		struct lq_error err;
		error_clear(&err);
		struct store_job job;
		int claimed = 0;
		enum lq_status r = store_claim_job(st, owner, lease, opt->only_ids,
		    opt->n_ids, &job, &claimed, &err);
		if (r == LQ_RETRY && db_backoff(&dbr, &err))
			continue;
		if (r != LQ_OK) {
			error_print(&err, stderr);
			fatal = 1;
			break;
		}
		if (!claimed) {
			double at;
			int running;
			r = store_next_claimable(st, opt->only_ids, opt->n_ids, &at,
			    &running, &err);
			if (r == LQ_RETRY && db_backoff(&dbr, &err))
				continue;
			if (r != LQ_OK) {
				error_print(&err, stderr);
				fatal = 1;
				break;
			}
			memset(&dbr, 0, sizeof(dbr));
			if (at < 0 && opt->mode == SUPERVISOR_ONCE &&
			    !(opt->only_ids != NULL && running > 0))
				break;
			worker_deliver_webhooks(st, 0);
			/* wait for a backoff to pass, a new job, or a lease to lapse */
			double wait = at > 0 ? at - util_now() : 1.0;
			if (wait > 1.0)
				wait = 1.0;
			if (wait < 0.05)
				wait = 0.05;
			usleep((useconds_t)(wait * 1e6));
			continue;
		}
		memset(&dbr, 0, sizeof(dbr));
		claims++;
		if (opt->webhook != NULL &&
		    store_add_job_webhook(st, job.id, opt->webhook, &err) != LQ_OK)
			error_print(&err, stderr);
		struct compile_scan scan = {0};
		store_list_events(st, job.id, scan_event, &scan, &err);
		int no_cache = scan.compile_crash;
		if (no_cache)
			store_add_event(st, job.id, "cache_off_retry", NULL, &err);
		log_info("job %lld %s: attempt %d (failures %d/%d)",
		    (long long)job.id, job.name, job.attempts, job.failures,
		    job.max_attempts);
		/* a cache-off retry runs in a fresh one-job child, its
		 * environment set for it alone */
		struct child one, *ch = &one;
		int spawned = 0;
		if (serve && !no_cache) {
			ch = &warm;
			if (warm.pid > 0 && child_order(&warm, &job) != 0)
				child_retire(&warm);	/* it died between jobs */
			else if (warm.pid > 0)
				spawned = 1;
			if (!spawned && spawn_child(opt, NULL, owner, 0, &warm) == 0) {
				log_debug("worker %ld started; it keeps its devices "
				    "for the jobs after this one", (long)warm.pid);
				/* if it died already, watch_child sees the crash */
				(void)child_order(&warm, &job);
				spawned = 1;
			}
		} else {
			child_retire(&warm);
			spawned = spawn_child(opt, &job, owner, no_cache, &one) == 0;
		}
		if (!spawned) {
			int e = errno;
			log_error("cannot start a worker process: %s", strerror(e));
			requeue_job(st, job.id, owner, 0, JOB_REQUEUE_HOST,
			    "LQ-RUN-SPAWN", LQ_FATAL, strerror(e), NULL, &err);
			store_job_clear(&job);
			host = 1;
			break;
		}
		struct tail tail = {0};
		int lost = 0;
		int answered = 0;
		int status = watch_child(st, &job, owner, lease, ch, &tail, &lost,
		    &answered);
		if (answered && !WORKER_SERVES_ON(WEXITSTATUS(status)))
			child_retire(ch);	/* it ends after that answer */
		struct store_job after;
		struct db_retry d = {0};
		while ((r = store_get_job(st, job.id, &after, &err)) == LQ_RETRY &&
		    db_backoff(&d, &err))
			error_clear(&err);
		if (r != LQ_OK) {
			error_print(&err, stderr);
			store_job_clear(&job);
			fatal = 1;
			break;
		}
		struct worker_report rep;
		worker_read_report(st, job.id, &rep, &err);
		enum worker_outcome o = worker_outcome_of(status);
		const char *phase = after.phase ? after.phase : "start";
		enum job_state ns = JOB_STATE_QUEUED;
		enum lq_status rr = LQ_OK;
		if (o == WORKER_DONE && after.state == JOB_STATE_DONE) {
			res->done++;
		} else if (o == WORKER_FAILED && after.state == JOB_STATE_POISONED) {
			res->poisoned++;
			res->failed_data++;
			log_error("job %lld %s failed: %s", (long long)job.id, job.name,
			    after.error_message ? after.error_message : "");
		} else if (lost || o == WORKER_LEASE_LOST) {
			/* cancelled or taken over: nothing of ours to record */
			if (!lost)
				log_warn("job %lld %s was taken over; its worker "
				    "stopped without writing", (long long)job.id,
				    job.name);
		} else if (o == WORKER_IOERR) {
			/* a full or failing disk (outputs or database) is the
			 * host's fault, not the job's: give the job back (its
			 * checkpoints are kept, so the next run resumes) and stop;
			 * retrying here would only fill the same disk again */
			rr = requeue_job(st, job.id, owner, 0, JOB_REQUEUE_HOST,
			    rep.present ? rep.code : "LQ-RUN-STORAGE", LQ_RETRY,
			    rep.present ? rep.message : "the disk of the outputs or "
			    "of the database failed (the worker's error is above); "
			    "resumes from its last checkpoint", NULL, &err);
			log_error("job %lld %s given back: %s; stopping",
			    (long long)job.id, job.name, rep.present ? rep.message :
			    "storage failed");
			storage = 1;
		} else if (o == WORKER_HOST) {
			/* this host cannot render (its error is on stderr above):
			 * give the job back untouched and stop */
			rr = requeue_job(st, job.id, owner, 0, JOB_REQUEUE_HOST,
			    rep.present ? rep.code : "LQ-RUN-HOST", rep.present ?
			    rep.grade : LQ_FATAL, rep.present ? rep.message :
			    "this host could not start rendering", NULL, &err);
			log_error("this host cannot render (job %lld %s given back "
			    "untouched); stopping", (long long)job.id, job.name);
			host = 1;
		} else if (signals_seen || (o == WORKER_TEMPFAIL && rep.present &&
		    lq_code_find(rep.code) == LQ_CODE_RUN_INT)) {
			/* interrupted (at our request, or the child's own SIGTERM):
			 * the lease goes back at once, no failure */
			char msg[160];
			snprintf(msg, sizeof(msg), "interrupted at step %d/%d; resumes "
			    "from there", after.step, after.total_steps);
			char *detail = crash_detail(status, &after, &tail);
			store_add_event(st, job.id, "interrupted", detail, &err);
			free(detail);
			rr = requeue_job(st, job.id, owner, 0,
			    JOB_REQUEUE_INTERRUPTED, "LQ-RUN-INT", LQ_RETRY, msg, NULL,
			    &err);
			interrupted = 1;
			res->interrupted++;
		} else if (o == WORKER_TEMPFAIL) {
			/* a RETRY-graded error: backoff, no failure counted */
			double b = backoff_for(job.attempts);
			rr = requeue_job(st, job.id, owner, b, JOB_REQUEUE_RETRY,
			    rep.present ? rep.code : "LQ-RUN-RETRY", LQ_RETRY,
			    rep.present ? rep.message : "the worker failed in a way "
			    "that may pass next time", &ns, &err);
			res->retried++;
			log_warn("job %lld %s: %s (retry); again in %.0f s",
			    (long long)job.id, job.name, rep.present ? rep.code :
			    "LQ-RUN-RETRY", b);
		} else {
			char *detail = crash_detail(status, &after, &tail);
			char msg[512];
			if (WIFSIGNALED(status))
				snprintf(msg, sizeof(msg), "worker killed by SIG%s in "
				    "phase %s (step %d)", sigabbrev_np(WTERMSIG(status)) ?
				    sigabbrev_np(WTERMSIG(status)) : "?", phase,
				    after.step);
			else
				snprintf(msg, sizeof(msg), "worker exited with status %d "
				    "in phase %s (step %d)", WEXITSTATUS(status), phase,
				    after.step);
			store_add_event(st, job.id, "crashed", detail, &err);
			free(detail);
			/* a driver crash while compiling is retried once without
			 * the pipeline cache, without counting */
			int compile_crash = strcmp(phase, "compile") == 0 &&
			    !no_cache && WIFSIGNALED(status);
			rr = requeue_job(st, job.id, owner, compile_crash ? 0 :
			    backoff_for(job.failures + 1), compile_crash ?
			    JOB_REQUEUE_RETRY : JOB_REQUEUE_CRASH, "LQ-RUN-CRASH",
			    LQ_FAILED, msg, &ns, &err);
			if (rr == LQ_OK) {
				res->crashed++;
				if (ns == JOB_STATE_POISONED) {
					res->poisoned++;
					log_error("job %lld %s poisoned: %s", (long long)job.id,
					    job.name, msg);
				} else {
					res->retried++;
					log_warn("job %lld %s: %s; will retry",
					    (long long)job.id, job.name, msg);
				}
			}
		}
		if (rr != LQ_OK)
			error_print(&err, stderr);
		store_job_clear(&after);
		store_job_clear(&job);
		if (fatal || host || storage)
			break;
		worker_deliver_webhooks(st, 0);
	}
	child_retire(&warm);
	if (signals_seen)
		interrupted = 1;
	else if (!fatal)
		/* the retries of this run's notifications, for a while */
		worker_deliver_webhooks(st, util_env_seconds("LATENTQ_WEBHOOK_WAIT", 60));
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	if (host)
		return EXIT_UNAVAILABLE;
	if (fatal || storage)
		return EXIT_IOERR;
	if (interrupted)
		return EXIT_TEMPFAIL;
	if (res->poisoned > res->failed_data)
		return EXIT_RUNTIME;
	if (res->failed_data > 0)
		return EXIT_DATAERR;
	return EXIT_OK;
}
