/*
 * st-compare.c — compares tensors of a safetensors file written by latentq
 * against a golden file, with the tolerances of the goldens' index.json.
 *
 *   st-compare [--rel R] INDEX DATA_DIR REL_FILE MINE [KEY...]
 *
 * Every statistic in INDEX (an object with "file", "key" and
 * "suggested_atol", anywhere in the tree) whose file is REL_FILE (and whose
 * key is one of KEY..., when given; KEY may be GOLDKEY:MINEKEY when latentq
 * names the tensor differently) is checked: MINE must hold the key with
 * the golden's shape and max |mine - golden| <= suggested_atol.  Prints one
 * line per key with the max abs and max rel error (rel = max abs / max
 * |golden|).  A statistic with an "index" i applies to slice i of the
 * first dimension only (per-step tolerances of a [steps, ...] tensor).
 * --rel R replaces every suggested_atol by R × max |golden| (the
 * tolerances latentq measured for its reduced precisions, `precision:`).
 * Exit 0 when all pass and at least one was checked, else 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "core/util.h"
#include "model/safetensors.h"

struct ctx {
	const char *rel;
	char **keys;
	int nkeys;
	const struct st_file *gold, *mine;
	int checked, failed;
	double rel_tol;		/* --rel, or 0 */
};

/* NULL when `key` is not to be checked, else the key to read in MINE. */
static const char *
wanted(const struct ctx *c, const char *key)
{
	size_t n = strlen(key);

	if (c->nkeys == 0)
		return key;
	for (int i = 0; i < c->nkeys; i++) {
		const char *k = c->keys[i];

		if (strcmp(k, key) == 0)
			return key;
		if (strncmp(k, key, n) == 0 && k[n] == ':')
			return k + n + 1;
	}
	return NULL;
}

static void
check(struct ctx *c, const char *key, const char *mkey, double atol,
    int slice)
{
	const struct st_tensor *g = st_file_find(c->gold, key);
	const struct st_tensor *m = st_file_find(c->mine, mkey);
	float *gf, *mf;
	double maxabs = 0, maxg = 0;
	int64_t n;

	c->checked++;
	if (g == NULL) {
		printf("FAIL %-40s missing from the golden file\n", key);
		c->failed++;
		return;
	}
	if (m == NULL) {
		printf("FAIL %-40s missing from latentq's output\n", key);
		c->failed++;
		return;
	}
	if (g->ndim != m->ndim ||
	    memcmp(g->shape, m->shape, sizeof(int64_t) * (size_t)g->ndim) != 0) {
		printf("FAIL %-40s shape differs from the golden's\n", key);
		c->failed++;
		return;
	}
	n = st_tensor_numel(g);
	gf = st_tensor_to_f32(g);
	mf = st_tensor_to_f32(m);
	int64_t lo = 0, hi = n;
	if (slice >= 0) {
		int64_t per = g->ndim > 0 && g->shape[0] > 0 ? n / g->shape[0] : 0;

		if (g->ndim == 0 || slice >= g->shape[0]) {
			printf("FAIL %-40s has no slice %d\n", key, slice);
			c->failed++;
			free(gf);
			free(mf);
			return;
		}
		lo = slice * per;
		hi = lo + per;
	}
	for (int64_t i = lo; i < hi; i++) {
		double d = fabs((double)mf[i] - (double)gf[i]);

		if (!(d <= maxabs))	/* NaN counts as failure */
			maxabs = isnan(d) ? INFINITY : d;
		if (fabs(gf[i]) > maxg)
			maxg = fabs(gf[i]);
	}
	free(gf);
	free(mf);
	if (c->rel_tol > 0)
		atol = c->rel_tol * maxg;
	char shown[160];
	if (slice >= 0)
		snprintf(shown, sizeof(shown), "%s[%d]", key, slice);
	else
		snprintf(shown, sizeof(shown), "%s", key);
	printf("%s %-40s max abs %.3g  max rel %.3g  (atol %.3g)\n",
	    maxabs <= atol ? "ok  " : "FAIL", shown, maxabs,
	    maxg > 0 ? maxabs / maxg : maxabs, atol);
	if (!(maxabs <= atol))
		c->failed++;
}

static void
walk(struct ctx *c, const cJSON *j)
{
	const cJSON *e;

	if (cJSON_IsObject(j)) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, "file");
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "key");
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "suggested_atol");

		if (cJSON_IsString(f) && cJSON_IsString(k) && cJSON_IsNumber(a)) {
			const char *mk = strcmp(f->valuestring, c->rel) == 0 ?
			    wanted(c, k->valuestring) : NULL;

			const cJSON *ix = cJSON_GetObjectItemCaseSensitive(j, "index");

			if (mk)
				check(c, k->valuestring, mk, a->valuedouble,
				    cJSON_IsNumber(ix) ? (int)ix->valuedouble : -1);
			return;
		}
	}
	if (cJSON_IsObject(j) || cJSON_IsArray(j))
		cJSON_ArrayForEach(e, j)
			walk(c, e);
}

int
main(int argc, char **argv)
{
	struct ctx c = { 0 };
	struct st_file *gold = NULL, *mine = NULL;
	struct lq_error err;
	cJSON *index;
	char *text, *gpath;
	size_t n;

	if (argc > 2 && strcmp(argv[1], "--rel") == 0) {
		c.rel_tol = strtod(argv[2], NULL);
		argc -= 2;
		argv += 2;
	}
	if (argc < 5 || c.rel_tol < 0) {
		fprintf(stderr, "usage: st-compare [--rel R] INDEX DATA_DIR "
		    "REL_FILE MINE [KEY...]\n");
		return 2;
	}
	text = util_read_file(argv[1], &n);
	if (text == NULL || (index = cJSON_ParseWithLength(text, n)) == NULL) {
		fprintf(stderr, "st-compare: cannot read %s\n", argv[1]);
		return 2;
	}
	free(text);
	gpath = xasprintf("%s/%s", argv[2], argv[3]);
	error_clear(&err);
	if (st_file_open(gpath, &gold, &err) != LQ_OK ||
	    st_file_open(argv[4], &mine, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 2;
	}
	c.rel = argv[3];
	c.keys = argv + 5;
	c.nkeys = argc - 5;
	c.gold = gold;
	c.mine = mine;
	walk(&c, index);
	printf("%s: %d tensors checked, %d failed\n", argv[3], c.checked, c.failed);
	st_file_close(gold);
	st_file_close(mine);
	cJSON_Delete(index);
	free(gpath);
	return c.checked > 0 && c.failed == 0 ? 0 : 1;
}
