/*
 * profile.c — LATENTQ_GPU_PROFILE=1: where a process's device time goes,
 * per op (issue 18).
 *
 * Under it every dispatch is recorded into a command buffer (segment) of
 * its own and every host op runs alone (cmd.c), so gpu_cmd_wait can time
 * each: a dispatch from vkQueueSubmit to its fence (so it includes the
 * submit's own cost, tens of microseconds on lavapipe), a host op as its
 * call.  At gpu_ctx_free the totals per op name go to stderr, largest
 * first.  Serialising takes away whatever overlap the driver had between
 * dispatches: it finds the op to work on, it is not a benchmark (make
 * bench is).  The variant string does not carry it: the same kernels run,
 * in the same order, with the same bits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "gpu/vk.h"

int
gpu_profile_wanted(void)
{
	return util_env_switch("LATENTQ_GPU_PROFILE", 0);
}

double
gpu_profile_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void
gpu_profile_add(struct gpu_ctx *ctx, const char *op, int host, double ms)
{
	struct gpu_profile *p = &ctx->profile;
	if (op == NULL)
		op = "?";
	int i = 0;
	while (i < p->n && (p->rows[i].host != host ||
	    strcmp(p->rows[i].op, op) != 0))
		i++;
	if (i == p->n) {
		if (p->n == GPU_PROFILE_ROWS)
			return;
		p->rows[p->n++] = (struct gpu_profile_row){.op = op,
		    .host = host};
	}
	p->rows[i].calls++;
	p->rows[i].ms += ms;
}

static int
row_cmp(const void *a, const void *b)
{
	double x = ((const struct gpu_profile_row *)a)->ms;
	double y = ((const struct gpu_profile_row *)b)->ms;
	return x < y ? 1 : x > y ? -1 : 0;
}

void
gpu_profile_print(struct gpu_ctx *ctx)
{
	struct gpu_profile *p = &ctx->profile;
	if (!p->on || p->n == 0)
		return;
	qsort(p->rows, (size_t)p->n, sizeof(p->rows[0]), row_cmp);
	double total = 0;
	for (int i = 0; i < p->n; i++)
		total += p->rows[i].ms;
	fprintf(stderr, "latentq: profile of device \"%s\" (%s), %.1f ms in "
	    "all:\n", ctx->caps.name, ctx->gemm_variant, total);
	fprintf(stderr, "latentq: profile: %-28s %-6s %8s %10s %9s %6s\n",
	    "op", "where", "calls", "ms", "ms/call", "share");
	for (int i = 0; i < p->n; i++) {
		const struct gpu_profile_row *r = &p->rows[i];
		fprintf(stderr, "latentq: profile: %-28s %-6s %8u %10.1f %9.3f "
		    "%5.1f%%\n", r->op, r->host ? "host" : "shader", r->calls,
		    r->ms, r->ms / r->calls, total > 0 ? 100 * r->ms / total : 0);
	}
}
