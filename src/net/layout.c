/*
 * layout.c — crawls a diffusers-layout folder over HTTP into its cache
 * folder (see layout.h).  No curl here: every transfer is net_fetch's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/codes.h"
#include "core/file.h"
#include "core/log.h"
#include "core/util.h"
#include "model/diffusers.h"
#include "model/ref.h"
#include "net/layout.h"

struct crawl {
	const char *url;		/* the folder's URL, no trailing '/' */
	const char *dir;		/* its cache folder */
	const struct net_fetch_options *opt;
	int fetched;			/* files downloaded by this call */
};

/* A name a server's index may give a file: one plain component. */
static int
plain_name(const char *s)
{
	return s[0] != '\0' && s[0] != '.' && strpbrk(s, "/\\%?#") == NULL;
}

static enum lq_status
make_dir(const char *dir, struct lq_error *err)
{
	char *failed = NULL;
	if (util_mkdir_p(dir, 0755, &failed) == 0)
		return LQ_OK;
	error_set(err, LQ_FAILED, "LQ-NET-003", "cannot create folder %s: %s",
	    failed, strerror(errno));
	free(failed);
	return LQ_FAILED;
}

/*
 * Puts `rel` (relative to the folder) in place unless it is there.
 * optional: a 404/410 is no error, *present = 0.
 */
static enum lq_status
fetch_file(struct crawl *c, const char *rel, int optional, int *present,
    struct lq_error *err)
{
	char *path = xasprintf("%s/%s", c->dir, rel);
	struct stat sb;
	if (present != NULL)
		*present = 1;
	if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
		free(path);	/* renamed into place whole by an earlier call */
		return LQ_OK;
	}
	char *pdir = xstrdup(path);
	*strrchr(pdir, '/') = '\0';
	enum lq_status s = make_dir(pdir, err);
	free(pdir);
	char *url = xasprintf("%s/%s", c->url, rel);
	struct net_fetch_options o = *c->opt;
	o.label = rel;
	o.digest = NULL;
	if (s == LQ_OK)
		s = net_fetch(url, path, &o, NULL, NULL, err);
	if (s == LQ_OK) {
		c->fetched++;
	} else if (optional && error_code(err) == LQ_CODE_NET_008) {
		error_clear(err);
		s = LQ_OK;
		if (present != NULL)
			*present = 0;
	}
	free(url);
	free(path);
	return s;
}

static enum lq_status
layout_fail(struct lq_error *err, const char *url, const char *what)
{
	error_set(err, LQ_FAILED, "LQ-NET-009", "%s: %s", url, what);
	error_set_hint(err, "the URL must name a diffusers-layout folder "
	    "(Hugging Face style https://HOST/ORG/REPO/resolve/main)");
	return LQ_FAILED;
}

/* The shards a "*.safetensors.index.json" names, each fetched. */
static enum lq_status
fetch_shards(struct crawl *c, const char *prefix, const char *index_rel,
    struct lq_error *err)
{
	char *path = xasprintf("%s/%s", c->dir, index_rel);
	cJSON *j = NULL;
	enum lq_status s = diffusers_load_json(path, &j, err);
	char *url = xasprintf("%s/%s", c->url, index_rel);
	const cJSON *wm = s == LQ_OK ? cJSON_GetObjectItemCaseSensitive(j,
	    "weight_map") : NULL;
	if (s == LQ_OK && !cJSON_IsObject(wm))
		s = layout_fail(err, url, "the shard index has no weight_map "
		    "object");
	const cJSON *e;
	if (s == LQ_OK) {
		cJSON_ArrayForEach(e, wm) {
			if (!cJSON_IsString(e) || !plain_name(e->valuestring)) {
				s = layout_fail(err, url, "weight_map names a shard "
				    "that is not a plain file name");
				break;
			}
		}
	}
	if (s == LQ_OK) {
		cJSON_ArrayForEach(e, wm) {
			char *rel = xasprintf("%s%s", prefix, e->valuestring);
			s = fetch_file(c, rel, 0, NULL, err);	/* repeats: in place */
			free(rel);
			if (s != LQ_OK)
				break;
		}
	}
	if (s != LQ_OK && error_code(err) == LQ_CODE_MODEL_001)
		s = layout_fail(err, url, "the shard index is not a JSON object");
	if (s != LQ_OK && error_code(err) == LQ_CODE_NET_009)
		unlink(path);	/* the server's bad index: fetched anew next time */
	free(url);
	free(path);
	cJSON_Delete(j);
	return s;
}

/* One component's files (diffusers_component_layout), under `sub`. */
static enum lq_status
fetch_component(struct crawl *c, const char *name, const char *sub,
    struct lq_error *err)
{
	const struct diffusers_layout *l = diffusers_component_layout(name);
	char *prefix = sub != NULL ? xasprintf("%s/", sub) : xstrdup("");
	enum lq_status s = LQ_OK;
	char *rel = NULL;
	if (l->config != NULL) {
		rel = xasprintf("%s%s", prefix, l->config);
		s = fetch_file(c, rel, 0, NULL, err);
		free(rel);
	}
	for (size_t i = 0; s == LQ_OK && l->required[i] != NULL; i++) {
		rel = xasprintf("%s%s", prefix, l->required[i]);
		s = fetch_file(c, rel, 0, NULL, err);
		free(rel);
	}
	for (size_t i = 0; s == LQ_OK && l->optional[i] != NULL; i++) {
		rel = xasprintf("%s%s", prefix, l->optional[i]);
		s = fetch_file(c, rel, 1, NULL, err);
		free(rel);
	}
	if (s == LQ_OK && l->weights != NULL) {
		int sharded = 0;
		rel = xasprintf("%s%s.safetensors.index.json", prefix, l->weights);
		s = fetch_file(c, rel, 1, &sharded, err);
		if (s == LQ_OK && sharded)
			s = fetch_shards(c, prefix, rel, err);
		free(rel);
		if (s == LQ_OK && !sharded) {
			rel = xasprintf("%s%s.safetensors", prefix, l->weights);
			s = fetch_file(c, rel, 0, NULL, err);
			free(rel);
		}
	}
	free(prefix);
	return s;
}

/* model_index.json, then each component it lists. */
static enum lq_status
fetch_pipeline(struct crawl *c, struct lq_error *err)
{
	enum lq_status s = fetch_file(c, DIFFUSERS_MODEL_INDEX, 0, NULL, err);
	if (s != LQ_OK)
		return s;
	char *path = xasprintf("%s/" DIFFUSERS_MODEL_INDEX, c->dir);
	char *url = xasprintf("%s/" DIFFUSERS_MODEL_INDEX, c->url);
	cJSON *index = NULL;
	s = diffusers_load_json(path, &index, err);
	const cJSON *e;
	if (s == LQ_OK) {
		/* names first: nothing is fetched for a hostile index */
		cJSON_ArrayForEach(e, index) {
			if (e->string[0] == '_' || !cJSON_IsArray(e))
				continue;
			if (!plain_name(e->string)) {
				s = layout_fail(err, url, "model_index.json names a "
				    "component that is not a plain folder name");
				break;
			}
		}
	}
	if (s == LQ_OK) {
		cJSON_ArrayForEach(e, index) {
			/* [library, class] strings; [null, null] is absent */
			if (e->string[0] == '_' || !cJSON_IsArray(e) ||
			    !cJSON_IsString(cJSON_GetArrayItem(e, 1)))
				continue;
			if ((s = fetch_component(c, e->string, e->string, err)) !=
			    LQ_OK)
				break;
		}
	}
	if (s != LQ_OK && error_code(err) == LQ_CODE_MODEL_001)
		/* the index arrived but is not JSON: the server's fault */
		s = layout_fail(err, url, "model_index.json is not a JSON object");
	if (s != LQ_OK && error_code(err) == LQ_CODE_NET_009)
		unlink(path);	/* fetched anew next time */
	cJSON_Delete(index);
	free(url);
	free(path);
	return s;
}

/* The marker, atomically: the folder is complete once it is there. */
static enum lq_status
mark_complete(const char *dir, const char *url, struct lq_error *err)
{
	char *mark = xasprintf("%s/%s", dir, MODEL_REF_CACHE_COMPLETE);
	struct file_temp t;
	enum lq_status s = file_open_temp(mark, ".tmp", "LQ-NET-003", &t, err);
	free(mark);
	if (s != LQ_OK)
		return s;
	size_t n = strlen(url);
	if (write(t.fd, url, n) != (ssize_t)n || write(t.fd, "\n", 1) != 1)
		s = file_fail(err, "LQ-NET-003", "write", t.tmp, errno);
	if (s == LQ_OK)
		s = file_commit_temp(&t, "LQ-NET-003", err);
	file_discard_temp(&t);
	return s;
}

enum lq_status
net_layout_fetch(const char *url, const char *component,
    const struct net_fetch_options *opt, struct lq_error *err)
{
	LQ_ASSERT(opt->digest == NULL);
	if (model_ref_cache_complete(url))
		return LQ_OK;
	char *dir = model_ref_cache_dir(url);
	char *trimmed = xstrdup(url);
	for (size_t n = strlen(trimmed); n > 0 && trimmed[n - 1] == '/'; n--)
		trimmed[n - 1] = '\0';
	enum lq_status s = make_dir(dir, err);
	if (s != LQ_OK) {
		free(trimmed);
		free(dir);
		return s;
	}
	char *lock = xasprintf("%s.lock", dir);
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (lfd < 0 || flock(lfd, LOCK_EX) != 0)
		s = error_set(err, LQ_FAILED, "LQ-NET-003", "cannot lock %s: %s",
		    lock, strerror(errno));
	/* another process may have finished it while we waited */
	if (s == LQ_OK && !model_ref_cache_complete(url)) {
		struct crawl c = {trimmed, dir, opt, 0};
		log_info("downloading model %s into %s", url, dir);
		s = component != NULL ? fetch_component(&c, component, NULL, err)
		    : fetch_pipeline(&c, err);
		if (s == LQ_OK)
			s = mark_complete(dir, url, err);
		if (s == LQ_OK)
			log_info("model %s complete (%d files fetched)", url,
			    c.fetched);
	}
	if (lfd >= 0)
		close(lfd);	/* releases the flock */
	free(lock);
	free(trimmed);
	free(dir);
	return s;
}

enum lq_status
net_layout_fetch_url(const char *url, const char *component,
    struct lq_error *err)
{
	struct net_fetch_options o = {.retries = -1,
	    .progress = isatty(STDERR_FILENO)};
	return net_layout_fetch(url, component, &o, err);
}
