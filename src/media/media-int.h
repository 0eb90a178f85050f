/*
 * media-int.h — helpers shared by the files of src/media/ only.
 */
#ifndef LQ_MEDIA_INT_H
#define LQ_MEDIA_INT_H

#include "media/media.h"

/* Routes libav's log through latentq's log; idempotent. */
void media_init_libav(void);

/* Most tags media_provenance_tags can produce. */
#define MEDIA_PROVENANCE_TAGS 10

/*
 * Fills tags[] (MEDIA_PROVENANCE_TAGS entries) from p, skipping NULL
 * fields; values borrow from p, the seed is printed into seed_buf.
 * Returns the count.
 */
size_t media_provenance_tags(const struct media_provenance *p,
    struct media_tag *tags, char seed_buf[24]);

/* mkdir -p dir; LQ-MEDIA-006 naming the directory on failure. */
enum lq_status media_make_dirs(const char *dir, struct lq_error *err);
/* Creates the directory that will hold path (and its parents). */
enum lq_status media_make_parent(const char *path, struct lq_error *err);

#endif
