/*
 * mesh.c — a job's device mesh, one implementation for every pipeline's
 * render (render-int.h, doc/mesh.md): opening the mesh's devices, the
 * ranks' coordinates, one thread per rank per call, and the host copies
 * of a rank's rows and tokens.  What each rank computes, and how a
 * context group exchanges inside a forward, is the model's (src/nn/).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "core/codes.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "render/render-int.h"
#include "store/jobs.h"

/* The pipeline cache lives in the queue database. */
static enum lq_status
cache_load(void *ud, const char *fp, void **blob, size_t *n)
{
	struct lq_error err;
	error_clear(&err);
	return store_get_pipeline_cache(ud, fp, blob, n, &err);
}

static enum lq_status
cache_save(void *ud, const char *fp, const void *blob, size_t n)
{
	struct lq_error err;
	error_clear(&err);
	return store_put_pipeline_cache(ud, fp, blob, n, &err);
}

/*
 * A serving worker's kept mesh (render.h).  States: nothing kept (held 0,
 * lent 0) → lent to a job (render_mesh_open: lent 1, the key and the
 * devices_used detail set) → kept (render_mesh_close: held 1) → lent
 * again to a job with the same key, or freed (warm_drop) for one with
 * another, or at render_warm_free.
 */
struct render_warm {
	struct store *st;		/* the kept ctxs' pipeline cache (borrowed) */
	int held, lent;
	struct render_mesh mesh;	/* held: the kept mesh */
	/* the key of the mesh lent or held: the --device spec (NULL: none),
	 * the devices, data and context the job's mesh asked */
	char *spec;
	int devices, data, context;
	char *devices_used;		/* its devices_used event detail */
};

struct render_warm *
render_warm_create(struct store *cache_st)
{
	struct render_warm *w = xcalloc(1, sizeof(*w));
	w->st = cache_st;
	return w;
}

/* Frees the kept mesh and forgets its key. */
static void
warm_drop(struct render_warm *w)
{
	if (w->held)
		render_mesh_close(&w->mesh);
	w->held = 0;
	free(w->spec);
	free(w->devices_used);
	w->spec = w->devices_used = NULL;
}

void
render_warm_free(struct render_warm *w)
{
	if (w == NULL)
		return;
	assert(!w->lent);
	warm_drop(w);
	free(w);
}

int
render_warm_holds(const struct render_warm *w)
{
	return w != NULL && w->held;
}

static int
warm_key_is(const struct render_warm *w, const char *spec, int devices,
    int data, int context)
{
	if ((w->spec == NULL) != (spec == NULL) ||
	    (spec != NULL && strcmp(w->spec, spec) != 0))
		return 0;
	return w->devices == devices && w->data == data &&
	    w->context == context;
}

/* Moves mesh *from into *to (the ranks point back at their mesh). */
static void
mesh_move(struct render_mesh *to, struct render_mesh *from)
{
	*to = *from;
	for (int i = 0; i < to->n_ranks; i++)
		to->ranks[i].mesh = to;
	memset(from, 0, sizeof(*from));
}

enum lq_status
render_mesh_open(struct store *st, const struct store_job *job,
    struct render_warm *warm, const char *spec, const struct job_mesh *mesh,
    struct render_mesh *m, struct lq_error *err)
{
	int want = mesh->devices > 1 ? (int)mesh->devices : 1;
	int data = mesh->data > 1 ? (int)mesh->data : 1;
	int context = mesh->context > 1 ? (int)mesh->context : 1;
	struct device_caps *all = NULL;
	int n = 0;
	memset(m, 0, sizeof(*m));
	if (warm != NULL) {
		assert(!warm->lent);
		if (warm->held && warm_key_is(warm, spec, want, data, context)) {
			mesh_move(m, &warm->mesh);
			warm->held = 0;
			warm->lent = 1;
			m->warm = warm;
			/* the job's peak_device_bytes is its own */
			for (int i = 0; i < m->n_ranks; i++)
				gpu_ctx_memory_reset_peak(m->ranks[i].gpu);
			log_debug("job %lld: the devices of the previous job, "
			    "pipelines compiled (warm worker)", (long long)job->id);
			return store_add_event(st, job->id, "devices_used",
			    warm->devices_used, err);
		}
		warm_drop(warm);
	}
	enum lq_status s = gpu_devices_list(&all, &n, err);
	if (s != LQ_OK)
		return s;
	int *slots = xcalloc((size_t)n + 1, sizeof(*slots));
	int others = 0;
	int got = gpu_devices_select(all, n, spec, slots, n, &others, err);
	if (got < 0) {
		free(slots);
		free(all);
		return err->status;
	}
	if (got < want) {
		char named[160], left[64] = "";
		if (spec != NULL)
			snprintf(named, sizeof(named), "--device \"%s\" names %d",
			    spec, got);
		else
			snprintf(named, sizeof(named), "this host has %d", got);
		if (others > 0)
			snprintf(left, sizeof(left), " (and %d of another kind)",
			    others);
		error_set(err, LQ_FATAL, "LQ-RUN-MESH-HOST", "job %lld's mesh "
		    "needs %d devices of one kind but %s%s; the job is left for "
		    "a host that has them", (long long)job->id, want, named,
		    left);
		error_set_hint(err, "render it where %d devices of one kind are "
		    "present (LATENTQ_LOGICAL_DEVICES=%d for logical ones), or "
		    "submit it again with a smaller mesh", want, want);
		free(slots);
		free(all);
		return LQ_FATAL;
	}
	m->data = data;
	m->context = context;
	m->n_ranks = m->data * m->context;
	m->ranks = xcalloc((size_t)m->n_ranks, sizeof(*m->ranks));
	/* a kept ctx outlives this job's store handle: it saves its cache
	 * through the worker's */
	struct gpu_cache_io io = {cache_load, cache_save, warm != NULL ?
	    warm->st : st};
	cJSON *used = cJSON_CreateArray();
	for (int i = 0; i < m->n_ranks && s == LQ_OK; i++) {
		struct render_mesh_rank *k = &m->ranks[i];
		char dev[16];

		k->mesh = m;
		k->index = i;
		k->slot = slots[i];
		k->data = i / m->context;
		k->context = i % m->context;
		snprintf(dev, sizeof(dev), "%d", k->slot);
		struct gpu_ctx_opts o = {.device = dev, .cache =
		    util_env_switch("LATENTQ_NO_PIPELINE_CACHE", 0) ? NULL :
		    &io};
		s = gpu_ctx_create(&o, &k->gpu, err);
		cJSON *d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "index", k->slot);
		cJSON_AddStringToObject(d, "uuid", all[k->slot].uuid);
		cJSON *c = cJSON_AddObjectToObject(d, "mesh");
		cJSON_AddNumberToObject(c, "data", k->data);
		cJSON_AddNumberToObject(c, "context", k->context);
		cJSON_AddNumberToObject(c, "tensor", 0);
		cJSON_AddItemToArray(used, d);
	}
	free(slots);
	free(all);
	if (s != LQ_OK) {
		cJSON_Delete(used);
		return s;
	}
	cJSON *ev = cJSON_CreateObject();
	cJSON_AddItemToObject(ev, "devices_used", used);
	char *detail = json_canonical(ev);
	cJSON_Delete(ev);
	s = store_add_event(st, job->id, "devices_used", detail, err);
	if (warm != NULL) {
		warm->lent = 1;
		warm->spec = spec != NULL ? xstrdup(spec) : NULL;
		warm->devices = want;
		warm->data = data;
		warm->context = context;
		warm->devices_used = detail;
		m->warm = warm;
	} else {
		free(detail);
	}
	return s;
}

enum lq_status
render_mesh_warmup(struct render_mesh *m, enum gpu_precision prec,
    struct lq_error *err)
{
	enum lq_status s;
	for (int i = 0; i < m->n_ranks; i++) {
		if ((s = gpu_ctx_warmup(m->ranks[i].gpu, prec, err)) != LQ_OK)
			return s;
		gpu_ctx_save_cache(m->ranks[i].gpu, err);
		error_clear(err);
	}
	return LQ_OK;
}

void
render_mesh_close(struct render_mesh *m)
{
	struct render_warm *w = m->warm;
	if (w != NULL) {
		/* back to the worker, for its next job */
		assert(w->lent && !w->held);
		m->warm = NULL;
		mesh_move(&w->mesh, m);
		w->lent = 0;
		w->held = 1;
		return;
	}
	for (int i = m->n_ranks - 1; i >= 0; i--)
		gpu_ctx_free(m->ranks[i].gpu);
	free(m->ranks);
	memset(m, 0, sizeof(*m));
}

/* One rank's call: fn, and on failure abort (its group must not wait). */
static void *
rank_call(void *ud)
{
	struct render_mesh_rank *k = ud;
	struct render_mesh *m = k->mesh;

	error_clear(&k->err);
	k->status = m->fn(m->ud, k->index, &k->err);
	if (k->status != LQ_OK && m->abort != NULL)
		m->abort(m->ud, k->index);
	return NULL;
}

enum lq_status
render_mesh_run(struct render_mesh *m, render_mesh_fn fn,
    void (*abort)(void *ud, int rank), void *ud, struct lq_error *err)
{
	m->fn = fn;
	m->abort = abort;
	m->ud = ud;
	if (m->n_ranks == 1) {
		rank_call(&m->ranks[0]);
	} else {
		for (int i = 0; i < m->n_ranks; i++) {
			struct render_mesh_rank *k = &m->ranks[i];
			int e = pthread_create(&k->thread, NULL, rank_call, k);
			k->started = e == 0;
			if (k->started)
				continue;
			k->status = error_set(&k->err, LQ_RETRY, "LQ-RUN-RETRY",
			    "cannot start the thread of mesh device %d: %s", i,
			    strerror(e));
			if (abort != NULL)	/* its group must not wait for it */
				abort(ud, i);
		}
		for (int i = 0; i < m->n_ranks; i++)
			if (m->ranks[i].started)
				pthread_join(m->ranks[i].thread, NULL);
	}
	int bad = -1;
	for (int i = 0; i < m->n_ranks; i++) {
		const struct render_mesh_rank *k = &m->ranks[i];
		if (k->status == LQ_OK)
			continue;
		if (bad < 0 || (lq_code_find(m->ranks[bad].err.code) ==
		    LQ_CODE_NN_MESH && lq_code_find(k->err.code) != LQ_CODE_NN_MESH))
			bad = i;
	}
	if (bad < 0)
		return LQ_OK;
	*err = m->ranks[bad].err;
	return m->ranks[bad].status;
}

void
render_mesh_share(float *whole, int64_t S, float *share, int64_t row0,
    int64_t rows, int64_t tok0, int64_t toks, int64_t w, int gather)
{
	for (int64_t b = 0; b < rows; b++) {
		float *a = whole + ((size_t)(row0 + b) * (size_t)S +
		    (size_t)tok0) * (size_t)w;
		float *p = share + (size_t)b * (size_t)toks * (size_t)w;
		if (gather)
			memcpy(p, a, (size_t)toks * (size_t)w * sizeof(float));
		else
			memcpy(a, p, (size_t)toks * (size_t)w * sizeof(float));
	}
}
