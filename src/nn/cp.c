/*
 * cp.c — a context-parallel group's barrier and host exchange (cp.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nn/cp.h"

struct nn_cp_group {
	int P;
	size_t floats;
	float *buf[NN_CP_BUFS];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int waiting, aborted;
	unsigned generation;
};

enum lq_status
nn_cp_group_create(int P, size_t floats, struct nn_cp_group **out,
    struct lq_error *err)
{
	*out = NULL;
	if (P < 1 || floats == 0)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "context group "
		    "of %d ranks with %zu floats per buffer", P, floats);
	struct nn_cp_group *g = xcalloc(1, sizeof(*g));
	g->P = P;
	g->floats = floats;
	for (int i = 0; i < NN_CP_BUFS; i++)
		g->buf[i] = xmalloc(floats * sizeof(float));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	*out = g;
	return LQ_OK;
}

void
nn_cp_group_free(struct nn_cp_group *g)
{
	if (g == NULL)
		return;
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	for (int i = 0; i < NN_CP_BUFS; i++)
		free(g->buf[i]);
	free(g);
}

int
nn_cp_group_size(const struct nn_cp_group *g)
{
	return g->P;
}

size_t
nn_cp_group_floats(const struct nn_cp_group *g)
{
	return g->floats;
}

float *
nn_cp_group_buf(struct nn_cp_group *g, int i)
{
	LQ_ASSERT(i >= 0 && i < NN_CP_BUFS);
	return g->buf[i];
}

void
nn_cp_group_abort(struct nn_cp_group *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	g->aborted = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

enum lq_status
nn_cp_barrier(struct nn_cp_group *g, const char *who, struct lq_error *err)
{
	pthread_mutex_lock(&g->mu);
	unsigned gen = g->generation;
	if (!g->aborted && ++g->waiting == g->P) {
		g->waiting = 0;
		g->generation++;
		pthread_cond_broadcast(&g->cv);
	} else {
		while (!g->aborted && g->generation == gen)
			pthread_cond_wait(&g->cv, &g->mu);
	}
	int aborted = g->aborted && g->generation == gen;
	pthread_mutex_unlock(&g->mu);
	if (aborted)
		return error_set(err, LQ_FAILED, "LQ-NN-MESH", "%s: another "
		    "device of the context group failed", who);
	return LQ_OK;
}

void
nn_cp_rows(float *all, int64_t N, float *part, int64_t B, int64_t r0,
    int64_t n, int64_t D, int to_all)
{
	for (int64_t b = 0; b < B; b++) {
		float *g = all + ((size_t)(b * N + r0) * (size_t)D);
		float *p = part + (size_t)(b * n) * (size_t)D;

		if (to_all)
			memcpy(g, p, sizeof(float) * (size_t)(n * D));
		else
			memcpy(p, g, sizeof(float) * (size_t)(n * D));
	}
}

void
nn_cp_cols(float *all, int64_t D, float *part, int64_t R, int64_t c0,
    int64_t w, int to_all)
{
	for (int64_t i = 0; i < R; i++) {
		float *g = all + (size_t)i * (size_t)D + (size_t)c0;
		float *p = part + (size_t)i * (size_t)w;

		if (to_all)
			memcpy(g, p, sizeof(float) * (size_t)w);
		else
			memcpy(p, g, sizeof(float) * (size_t)w);
	}
}

static int
env_on(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

int
nn_cp_no_gather(void)
{
	return env_on("LATENTQ_MESH_NO_KV_GATHER");
}

int
nn_cp_no_cross_gather(void)
{
	return env_on("LATENTQ_MESH_NO_CROSS_KV_GATHER");
}
