/* fault.c — LATENTQ_FAULT rules (see fault.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"

/*
 * Finds the first rule matching (job, phase, step, attempt); `nan` selects
 * whether "nan" rules or the others are considered.  Copies the action
 * into action[16]; returns 1 when one matched.
 */
static int
fault_match(const char *job, const char *phase, int step, int attempt,
    int nan, char action_out[16])
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
		if (strcmp(where, phase) != 0 || want_step != step ||
		    (want_attempt != 0 && want_attempt != attempt) ||
		    (strcmp(action, "nan") == 0) != nan)
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
	return fault_match(job, "denoise", step, attempt, 1, action);
}

int
fault_point(const char *job, const char *phase, int step, int attempt)
{
	char action[16];
	if (!fault_match(job, phase, step, attempt, 0, action))
		return 0;
	fprintf(stderr, "latentq: fault injection: %s at %s step %d "
	    "(attempt %d)\n", action, phase, step, attempt);
	fflush(stderr);
	if (strcmp(action, "segv") == 0)
		raise(SIGSEGV);
	else if (strcmp(action, "abort") == 0)
		abort();
	else if (strcmp(action, "kill") == 0)
		raise(SIGKILL);
	else if (strcmp(action, "exit") == 0)
		exit(1);
	else if (strcmp(action, "oom") == 0)
		return 1;
	return 0;
}
