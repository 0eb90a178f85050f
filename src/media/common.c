/*
 * common.c — what the media writers share: provenance tags and folders
 * (temporaries and durable renames are core/file.h's).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "core/util.h"
#include "media/media-int.h"

size_t
media_provenance_tags(const struct media_provenance *p, struct media_tag *tags,
    char seed_buf[24])
{
	size_t n = 0;
#define TAG(k, v) do { if ((v) != NULL) tags[n++] = (struct media_tag){ (k), (v) }; } while (0)
	TAG("title", p->job);
	TAG("comment", p->prompt);
	TAG("latentq_job", p->job);
	TAG("latentq_prompt", p->prompt);
	TAG("latentq_negative_prompt", p->negative_prompt);
	if (p->has_seed) {
		snprintf(seed_buf, 24, "%" PRIu64, p->seed);
		TAG("latentq_seed", seed_buf);
	}
	TAG("latentq_model_digest", p->model_digest);
	TAG("latentq_config_digest", p->config_digest);
	TAG("latentq_image_digest", p->image_digest);
	TAG("latentq_version", p->version ? p->version : PACKAGE_VERSION);
#undef TAG
	LQ_ASSERT(n <= MEDIA_PROVENANCE_TAGS);
	return n;
}

enum lq_status
media_make_dirs(const char *dir, struct lq_error *err)
{
	if (dir[0] == '\0')
		return error_set(err, LQ_FAILED, "LQ-MEDIA-006",
		    "empty directory name");
	char *p = xstrdup(dir);
	enum lq_status s = LQ_OK;
	for (char *c = p + 1; ; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char saved = *c;
		*c = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			s = error_set(err, LQ_FAILED, "LQ-MEDIA-006",
			    "mkdir(%s) failed: %s", p, strerror(errno));
			break;
		}
		*c = saved;
		if (saved == '\0')
			break;
	}
	free(p);
	struct stat sb;
	if (s == LQ_OK && (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)))
		s = error_set(err, LQ_FAILED, "LQ-MEDIA-006",
		    "%s is not a directory", dir);
	return s;
}

enum lq_status
media_make_parent(const char *path, struct lq_error *err)
{
	char *copy = xstrdup(path);
	const char *dir = dirname(copy);
	enum lq_status s = strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0 ?
	    LQ_OK : media_make_dirs(dir, err);
	free(copy);
	return s;
}
