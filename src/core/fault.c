/* fault.c — LATENTQ_FAULT rules (see fault.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fault.h"
#include "core/log.h"

/* The kind of an action: "nan", "slow" (from "slow=SECONDS") or other. */
static int
action_is(const char *action, const char *kind)
{
	size_t n = strlen(kind);
	return strncmp(action, kind, n) == 0 &&
	    (action[n] == '\0' || action[n] == '=');
}

/*
 * Finds the first rule matching (job, phase, step, attempt) whose action
 * is of kind `kind` ("nan", "slow"), or of neither kind when kind is NULL.
 * Copies the action into action[16]; returns 1 when one matched.
 */
static int
fault_match(const char *job, const char *phase, int step, int attempt,
    const char *kind, char action_out[16])
{
	const char *spec = getenv("LATENTQ_FAULT");
	if (spec == NULL || *spec == '\0')
		return 0;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", spec);
	char *save = NULL;
	for (char *rule = strtok_r(buf, ",", &save); rule != NULL;
	    rule = strtok_r(NULL, ",", &save)) {
		char action[16], where[64];
		char *slash = strchr(rule, '/');
		char *at = strchr(rule, '@');
		if (slash != NULL && at != NULL && slash < at) {
			*slash = '\0';
			if (job == NULL || strcmp(rule, job) != 0)
				continue;
			rule = slash + 1;
		}
		int want_step = 0, want_attempt = 0;
		char *hash = strchr(rule, '#');
		if (hash != NULL) {
			want_attempt = atoi(hash + 1);
			*hash = '\0';
		}
		if (sscanf(rule, "%15[^@]@%63s", action, where) != 2)
			continue;
		char *colon = strchr(where, ':');
		if (colon != NULL) {
			want_step = atoi(colon + 1);
			*colon = '\0';
		}
		int special = action_is(action, "nan") || action_is(action, "slow");
		if (strcmp(where, phase) != 0 || want_step != step ||
		    (want_attempt != 0 && want_attempt != attempt) ||
		    (kind == NULL ? special : !action_is(action, kind)))
			continue;
		memcpy(action_out, action, 16);
		return 1;
	}
	return 0;
}

int
fault_nan(const char *job, int step, int attempt)
{
	char action[16];
	return fault_match(job, "denoise", step, attempt, "nan", action);
}

void
fault_slow(const char *job, const char *phase, int step, int attempt)
{
	char action[16];
	if (!fault_match(job, phase, step, attempt, "slow", action))
		return;
	double secs = action[4] == '=' ? atof(action + 5) : 10.0;
	log_clear_progress();
	fprintf(stderr, "latentq: fault injection: %s step %d takes %.1f s "
	    "more (attempt %d)\n", phase, step, secs, attempt);
	fflush(stderr);
	/* a slow kernel is not interruptible: sleep through signals */
	struct timespec left = {(time_t)secs,
	    (long)((secs - (double)(time_t)secs) * 1e9)};
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

int
fault_point(const char *job, const char *phase, int step, int attempt)
{
	char action[16];
	if (!fault_match(job, phase, step, attempt, NULL, action))
		return 0;
	log_clear_progress();
	fprintf(stderr, "latentq: fault injection: %s at %s step %d "
	    "(attempt %d)\n", action, phase, step, attempt);
	fflush(stderr);
	if (strcmp(action, "segv") == 0) {
		/* die by the signal as a real crash does, whatever handler a
		 * runtime installed (AddressSanitizer's would report this
		 * deliberate raise() as a SEGV and exit 1 instead) */
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	} else if (strcmp(action, "abort") == 0)
		abort();
	else if (strcmp(action, "kill") == 0)
		raise(SIGKILL);
	else if (strcmp(action, "exit") == 0)
		exit(1);
	else if (strcmp(action, "oom") == 0)
		return 1;
	return 0;
}
