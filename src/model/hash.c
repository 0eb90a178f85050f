/*
 * hash.c — model folder digests with a (path, size, mtime, inode) cache
 * (see hash.h).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "model/hash.h"

struct list {
	char **v;
	size_t n, cap;
};

static void
list_push(struct list *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->v = xrealloc(l->v, l->cap * sizeof(char *));
	}
	l->v[l->n++] = s;
}

/* Collects relative paths of regular files under root/rel. */
static enum lq_status
walk(const char *root, const char *rel, struct list *out, int depth, struct lq_error *err)
{
	char *dir = rel[0] ? xasprintf("%s/%s", root, rel) : xstrdup(root);
	if (depth > 16) {
		error_set(err, LQ_FAILED, "LQ-MODEL-020", "folder nesting too deep at %s", dir);
		error_set_where(err, dir, 0, 0);
		free(dir);
		return LQ_FAILED;
	}
	DIR *d = opendir(dir);
	if (d == NULL) {
		error_set(err, LQ_FAILED, "LQ-MODEL-020", "cannot open folder: %s", strerror(errno));
		error_set_where(err, dir, 0, 0);
		free(dir);
		return LQ_FAILED;
	}
	struct dirent *de;
	enum lq_status rc = LQ_OK;
	while (rc == LQ_OK && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char *r = rel[0] ? xasprintf("%s/%s", rel, de->d_name) : xstrdup(de->d_name);
		char *p = xasprintf("%s/%s", root, r);
		struct stat sb;
		if (stat(p, &sb) != 0) {
			free(p);
			free(r);
			continue;	/* dangling symlink: not a model file */
		}
		free(p);
		if (S_ISDIR(sb.st_mode)) {
			rc = walk(root, r, out, depth + 1, err);
			free(r);
		} else if (S_ISREG(sb.st_mode)) {
			list_push(out, r);
		} else {
			free(r);
		}
	}
	closedir(d);
	free(dir);
	return rc;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
model_digest_combine(const char *const *relpaths, const char *const *hexes, size_t n,
    char out[DIGEST_HEX_SIZE])
{
	struct digest_state st;
	digest_begin(&st);
	for (size_t i = 0; i < n; i++) {
		digest_update(&st, relpaths[i], strlen(relpaths[i]));
		digest_update(&st, "\t", 1);
		digest_update(&st, hexes[i], strlen(hexes[i]));
		digest_update(&st, "\n", 1);
	}
	digest_end(&st, out);
}

void
model_digest_clear(struct model_digest *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->files[i].relpath);
		free(d->files[i].path);
	}
	free(d->files);
	free(d->root);
	memset(d, 0, sizeof(*d));
}

enum lq_status
model_hash_folder(const char *dir, const struct model_hash_cache *cache, int force,
    struct model_digest *out, struct lq_error *err)
{
	return model_hash_files(dir, NULL, cache, force, out, err);
}

enum lq_status
model_hash_files(const char *dir, int (*keep)(const char *relpath),
    const struct model_hash_cache *cache, int force, struct model_digest *out,
    struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	char real[PATH_MAX];
	if (realpath(dir, real) == NULL) {
		error_set(err, LQ_FAILED, "LQ-MODEL-020", "cannot resolve folder: %s",
		    strerror(errno));
		error_set_where(err, dir, 0, 0);
		return LQ_FAILED;
	}
	struct list l = {0};
	if (walk(real, "", &l, 0, err) != LQ_OK) {
		for (size_t i = 0; i < l.n; i++)
			free(l.v[i]);
		free(l.v);
		return LQ_FAILED;
	}
	if (keep != NULL) {
		size_t k = 0;
		for (size_t i = 0; i < l.n; i++) {
			if (keep(l.v[i]))
				l.v[k++] = l.v[i];
			else
				free(l.v[i]);
		}
		l.n = k;
	}
	qsort(l.v, l.n, sizeof(char *), cmp_str);
	out->root = xstrdup(real);
	out->files = xcalloc(l.n ? l.n : 1, sizeof(*out->files));
	for (size_t i = 0; i < l.n; i++) {
		struct model_file_digest *f = &out->files[out->n++];
		f->relpath = l.v[i];
		f->path = xasprintf("%s/%s", real, l.v[i]);
		struct stat sb;
		if (stat(f->path, &sb) != 0) {
			error_set(err, LQ_FAILED, "LQ-MODEL-020", "cannot stat: %s", strerror(errno));
			error_set_where(err, f->path, 0, 0);
			goto fail;
		}
		f->size = (int64_t)sb.st_size;
		f->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
		f->inode = (int64_t)sb.st_ino;
		if (!force && cache && cache->lookup &&
		    cache->lookup(cache->ctx, f->path, f->size, f->mtime_ns, f->inode, f->blake2b)) {
			f->from_cache = 1;
			out->n_cached++;
			continue;
		}
		if (digest_file(f->path, f->blake2b, err) != LQ_OK)
			goto fail;
		out->n_hashed++;
		if (cache && cache->store)
			cache->store(cache->ctx, f->path, f->size, f->mtime_ns, f->inode, f->blake2b);
	}
	free(l.v);
	const char **rp = xcalloc(out->n ? out->n : 1, sizeof(char *));
	const char **hx = xcalloc(out->n ? out->n : 1, sizeof(char *));
	for (size_t i = 0; i < out->n; i++) {
		rp[i] = out->files[i].relpath;
		hx[i] = out->files[i].blake2b;
	}
	model_digest_combine(rp, hx, out->n, out->digest);
	free(rp);
	free(hx);
	return LQ_OK;
fail:
	for (size_t i = out->n; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	model_digest_clear(out);
	return LQ_FAILED;
}

void
model_digest_add_json(const struct model_digest *d, const char *prefix, cJSON *obj)
{
	for (size_t i = 0; i < d->n; i++) {
		char *k = xasprintf("%s%s", prefix ? prefix : "", d->files[i].relpath);
		cJSON_DeleteItemFromObjectCaseSensitive(obj, k);
		cJSON_AddStringToObject(obj, k, d->files[i].blake2b);
		free(k);
	}
}

static void
push_change(char ***v, size_t *n, char *s)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(char *));
	(*v)[(*n)++] = s;
}

enum lq_status
model_digest_compare(const cJSON *now, const char *pinned_json, char ***changes_out,
    size_t *nchanges, struct lq_error *err)
{
	cJSON *pinned = cJSON_Parse(pinned_json ? pinned_json : "");
	const cJSON *e;
	int ok = cJSON_IsObject(pinned);
	if (ok) {
		cJSON_ArrayForEach(e, pinned)
			if (!cJSON_IsString(e))
				ok = 0;
	}
	if (!ok) {
		cJSON_Delete(pinned);
		error_set(err, LQ_FAILED, "LQ-MODEL-022",
		    "the pinned model digests are not a JSON object of digests");
		return LQ_FAILED;
	}
	char **v = NULL;
	size_t n = 0;
	cJSON_ArrayForEach(e, now) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(pinned, e->string);
		if (p == NULL)
			push_change(&v, &n, xasprintf("%s added", e->string));
		else if (!cJSON_IsString(e) || strcmp(p->valuestring, e->valuestring) != 0)
			push_change(&v, &n, xasprintf("%s changed", e->string));
	}
	cJSON_ArrayForEach(e, pinned)
		if (cJSON_GetObjectItemCaseSensitive(now, e->string) == NULL)
			push_change(&v, &n, xasprintf("%s removed", e->string));
	cJSON_Delete(pinned);
	enum lq_status rc = LQ_OK;
	if (n > 0) {
		char field[128];
		snprintf(field, sizeof(field), "%s", v[0]);
		char *sp = strrchr(field, ' ');
		if (sp)
			*sp = '\0';
		if (n == 1)
			error_set(err, LQ_FAILED, "LQ-MODEL-021",
			    "model files changed since the job was validated: %s", v[0]);
		else
			error_set(err, LQ_FAILED, "LQ-MODEL-021",
			    "model files changed since the job was validated: %s (and %zu more)",
			    v[0], n - 1);
		error_set_field(err, "%s", field);
		error_set_hint(err, "restore the files, or submit the job again to validate it "
		    "against the new ones");
		rc = LQ_FAILED;
	}
	if (changes_out) {
		*changes_out = v;
		*nchanges = n;
	} else {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
	}
	return rc;
}
