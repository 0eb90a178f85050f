/*
 * models.c — SQL for models, model_files and file_hashes (see models.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "store/models.h"
#include "store/store-int.h"


enum lq_status
store_get_file_hash(struct store *st, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, char hex[65], int *found, struct lq_error *err)
{
	*found = 0;
	struct store_stmt *s = store_prepare_cached(st,
	    "SELECT blake2b FROM file_hashes WHERE path = ? AND size = ? AND mtime_ns = ? "
	    "AND inode = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, path);
	store_bind_int64(s, 2, size);
	store_bind_int64(s, 3, mtime_ns);
	store_bind_int64(s, 4, inode);
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		const char *t = store_column_str(s, 0);
		if (t != NULL && strlen((const char *)t) == 64) {
			memcpy(hex, t, 65);
			*found = 1;
		}
	}
	store_done(s);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return store_sql_error(st, "SELECT file_hashes", err);
	return LQ_OK;
}

enum lq_status
store_put_file_hash(struct store *st, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, const char *hex, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st,
	    "INSERT INTO file_hashes(path, size, mtime_ns, inode, blake2b, hashed_at) "
	    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET size = excluded.size, "
	    "mtime_ns = excluded.mtime_ns, inode = excluded.inode, blake2b = excluded.blake2b, "
	    "hashed_at = excluded.hashed_at", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, path);
	store_bind_int64(s, 2, size);
	store_bind_int64(s, 3, mtime_ns);
	store_bind_int64(s, 4, inode);
	store_bind_text(s, 5, hex);
	store_bind_double(s, 6, util_now());
	return store_step_done(st, s, "INSERT file_hashes", err);
}

int
store_file_hash_lookup(void *st, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, char hex[65])
{
	struct lq_error err;
	int found = 0;
	error_clear(&err);
	if (store_get_file_hash(st, path, size, mtime_ns, inode, hex, &found, &err) != LQ_OK)
		log_warn("hash cache lookup for %s: %s", path, err.message);
	return found;
}

char *
store_model_path_resolve(void *st, const char *name)
{
	struct store_model sm;
	memset(&sm, 0, sizeof(sm));
	int found = 0;
	struct lq_error err;
	error_clear(&err);
	char *p = NULL;
	if (store_find_model(st, name, &sm, &found, &err) != LQ_OK)
		log_warn("model %s: %s", name, err.message);
	else if (found)
		p = xstrdup(sm.path);
	store_model_clear(&sm);
	return p;
}

void
store_file_hash_record(void *st, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, const char *hex)
{
	struct lq_error err;
	error_clear(&err);
	if (store_put_file_hash(st, path, size, mtime_ns, inode, hex, &err) != LQ_OK)
		log_warn("hash cache update for %s: %s", path, err.message);
}

void
store_model_clear(struct store_model *m)
{
	if (m == NULL)
		return;
	free(m->name);
	free(m->path);
	free(m->family);
	free(m->config_json);
	free(m->digest);
	for (size_t i = 0; i < m->nfiles; i++)
		free(m->files[i].relpath);
	free(m->files);
	memset(m, 0, sizeof(*m));
}

void
store_models_free(struct store_model *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_model_clear(&v[i]);
	free(v);
}

static enum lq_status
put_files(struct store *st, int64_t id, const struct store_model_file *files, size_t n,
    struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, "DELETE FROM model_files WHERE model_id = ?",
	    err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, id);
	if (store_step_done(st, s, "DELETE model_files", err) != LQ_OK)
		return err->status;
	for (size_t i = 0; i < n; i++) {
		s = store_prepare_cached(st,
		    "INSERT INTO model_files(model_id, relpath, size, mtime_ns, inode, blake2b) "
		    "VALUES (?, ?, ?, ?, ?, ?)", err);
		if (s == NULL)
			return err->status;
		store_bind_int64(s, 1, id);
		store_bind_text(s, 2, files[i].relpath);
		store_bind_int64(s, 3, files[i].size);
		store_bind_int64(s, 4, files[i].mtime_ns);
		store_bind_int64(s, 5, files[i].inode);
		store_bind_text(s, 6, files[i].blake2b);
		if (store_step_done(st, s, "INSERT model_files", err) != LQ_OK)
			return err->status;
	}
	return LQ_OK;
}

enum lq_status
store_put_model(struct store *st, const struct store_model *m, int64_t *id,
    struct lq_error *err)
{
	if (store_begin(st, err) != LQ_OK)
		return err->status;
	enum lq_status rc;
	if (m->name != NULL) {
		struct store_stmt *q = store_prepare_cached(st,
		    "SELECT path FROM models WHERE name = ? AND path <> ?", err);
		if (q == NULL)
			goto fail;
		store_bind_text(q, 1, m->name);
		store_bind_text(q, 2, m->path);
		int r = store_step(q);
		if (r == STORE_ROW) {
			char *other = store_column_text(q, 0);
			store_done(q);
			error_set(err, LQ_FAILED, "LQ-DB-010",
			    "model name \"%s\" is already used by %s", m->name, other ? other : "?");
			error_set_hint(err, "choose another --name");
			free(other);
			goto fail;
		}
		store_done(q);
		if (r != STORE_DONE) {
			store_sql_error(st, "SELECT models", err);
			goto fail;
		}
	}
	struct store_stmt *s = store_prepare_cached(st,
	    "INSERT INTO models(name, path, family, config_json, digest, added_at) "
	    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
	    /* re-adding without --name keeps the name it had */
	    "name = coalesce(excluded.name, models.name), "
	    "family = excluded.family, config_json = excluded.config_json, "
	    "digest = excluded.digest, added_at = excluded.added_at", err);
	if (s == NULL)
		goto fail;
	store_bind_text(s, 1, m->name);
	store_bind_text(s, 2, m->path);
	store_bind_text(s, 3, m->family);
	store_bind_text(s, 4, m->config_json);
	store_bind_text(s, 5, m->digest);
	store_bind_double(s, 6, util_now());
	if (store_step_done(st, s, "INSERT models", err) != LQ_OK)
		goto fail;
	s = store_prepare_cached(st, "SELECT id FROM models WHERE path = ?", err);
	if (s == NULL)
		goto fail;
	store_bind_text(s, 1, m->path);
	if (store_step(s) != STORE_ROW) {
		store_done(s);
		store_sql_error(st, "SELECT models.id", err);
		goto fail;
	}
	*id = store_column_int64(s, 0);
	store_done(s);
	if (put_files(st, *id, m->files, m->nfiles, err) != LQ_OK)
		goto fail;
	if ((rc = store_commit(st, err)) != LQ_OK)
		goto fail;
	return LQ_OK;
fail:
	store_rollback(st);
	return err->status ? err->status : LQ_FAILED;
}

enum lq_status
store_update_model_files(struct store *st, int64_t id, const char *digest,
    const struct store_model_file *files, size_t n, struct lq_error *err)
{
	if (store_begin(st, err) != LQ_OK)
		return err->status;
	struct store_stmt *s = store_prepare_cached(st, "UPDATE models SET digest = ? WHERE id = ?",
	    err);
	if (s == NULL)
		goto fail;
	store_bind_text(s, 1, digest);
	store_bind_int64(s, 2, id);
	if (store_step_done(st, s, "UPDATE models", err) != LQ_OK ||
	    put_files(st, id, files, n, err) != LQ_OK || store_commit(st, err) != LQ_OK)
		goto fail;
	return LQ_OK;
fail:
	store_rollback(st);
	return err->status ? err->status : LQ_FAILED;
}

#define MODEL_COLUMNS "id, name, path, family, config_json, digest, added_at"

static void
read_model(struct store_stmt *s, struct store_model *m)
{
	memset(m, 0, sizeof(*m));
	m->id = store_column_int64(s, 0);
	m->name = store_column_text(s, 1);
	m->path = store_column_text(s, 2);
	m->family = store_column_text(s, 3);
	m->config_json = store_column_text(s, 4);
	m->digest = store_column_text(s, 5);
	m->added_at = store_column_double(s, 6);
}

static enum lq_status
load_files(struct store *st, struct store_model *m, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st,
	    "SELECT relpath, size, mtime_ns, inode, blake2b FROM model_files "
	    "WHERE model_id = ? ORDER BY relpath", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, m->id);
	size_t cap = 0;
	int rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		if (m->nfiles == cap) {
			cap = cap ? 2 * cap : 16;
			m->files = xrealloc(m->files, cap * sizeof(*m->files));
		}
		struct store_model_file *f = &m->files[m->nfiles++];
		memset(f, 0, sizeof(*f));
		f->relpath = store_column_text(s, 0);
		f->size = store_column_int64(s, 1);
		f->mtime_ns = store_column_int64(s, 2);
		f->inode = store_column_int64(s, 3);
		const char *h = store_column_str(s, 4);
		snprintf(f->blake2b, sizeof(f->blake2b), "%s", h ? (const char *)h : "");
	}
	store_done(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, "SELECT model_files", err);
	return LQ_OK;
}

static enum lq_status
find_one(struct store *st, const char *sql, const char *key, int64_t id,
    struct store_model *out, int *found, struct lq_error *err)
{
	*found = 0;
	struct store_stmt *s = store_prepare_cached(st, sql, err);
	if (s == NULL)
		return err->status;
	if (key)
		store_bind_text(s, 1, key);
	else
		store_bind_int64(s, 1, id);
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		read_model(s, out);
		*found = 1;
	}
	store_done(s);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return store_sql_error(st, "SELECT models", err);
	if (*found && load_files(st, out, err) != LQ_OK) {
		store_model_clear(out);
		*found = 0;
		return err->status;
	}
	return LQ_OK;
}

enum lq_status
store_find_model(struct store *st, const char *name_or_path, struct store_model *out,
    int *found, struct lq_error *err)
{
	enum lq_status rc = find_one(st, "SELECT " MODEL_COLUMNS " FROM models WHERE name = ?",
	    name_or_path, 0, out, found, err);
	if (rc != LQ_OK || *found)
		return rc;
	return find_one(st, "SELECT " MODEL_COLUMNS " FROM models WHERE path = ?", name_or_path,
	    0, out, found, err);
}

enum lq_status
store_get_model(struct store *st, int64_t id, struct store_model *out, int *found,
    struct lq_error *err)
{
	return find_one(st, "SELECT " MODEL_COLUMNS " FROM models WHERE id = ?", NULL, id, out,
	    found, err);
}

enum lq_status
store_list_models(struct store *st, struct store_model **out, size_t *n, struct lq_error *err)
{
	*out = NULL;
	*n = 0;
	struct store_stmt *s = store_prepare_cached(st,
	    "SELECT " MODEL_COLUMNS " FROM models ORDER BY name IS NULL, name, path", err);
	if (s == NULL)
		return err->status;
	size_t cap = 0;
	int rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			*out = xrealloc(*out, cap * sizeof(**out));
		}
		read_model(s, &(*out)[(*n)++]);
	}
	store_done(s);
	if (rc != STORE_DONE) {
		store_models_free(*out, *n);
		*out = NULL;
		*n = 0;
		return store_sql_error(st, "SELECT models", err);
	}
	return LQ_OK;
}
