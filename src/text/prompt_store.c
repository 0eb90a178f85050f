/*
 * prompt_store.c — the prompt embedding cache (prompt.h) over the queue
 * database's text_cache table (store.h), so repeated prompts in a batch are
 * encoded once and a resumed job never re-encodes.  Values are stored as
 * dtype "F32", shape "[T,D]", little-endian float32 bytes.
 */
#include "text/prompt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "store/store.h"

static enum lq_status
store_lookup(void *ud, const char *encoder_digest, const char *ids_digest,
    int T, int D, float *embeds, int *found, struct lq_error *err)
{
	void *data = NULL;
	size_t size = 0;
	char *shape = NULL;
	*found = 0;
	enum lq_status st = store_get_text_cache(ud, encoder_digest, ids_digest,
	    &data, &size, &shape, err);
	if (st != LQ_OK || data == NULL) {
		free(shape);
		return st;
	}
	char want[48];
	snprintf(want, sizeof(want), "[%d,%d]", T, D);
	if (size == (size_t)T * D * sizeof(float) && shape != NULL &&
	    strcmp(shape, want) == 0) {
		memcpy(embeds, data, size);
		*found = 1;
	} else {
		/* A row of another shape under the same key: not ours. */
		log_warn("text_cache entry %.12s/%.12s has shape %s, want %s; "
		    "re-encoding", encoder_digest, ids_digest,
		    shape ? shape : "?", want);
	}
	free(data);
	free(shape);
	return LQ_OK;
}

static enum lq_status
store_insert(void *ud, const char *encoder_digest, const char *ids_digest,
    int T, int D, const float *embeds, struct lq_error *err)
{
	char shape[48];
	snprintf(shape, sizeof(shape), "[%d,%d]", T, D);
	return store_put_text_cache(ud, encoder_digest, ids_digest, "F32",
	    shape, embeds, (size_t)T * D * sizeof(float), err);
}

struct text_embed_cache
text_embed_cache_from_store(struct store *st)
{
	struct text_embed_cache c = { store_lookup, store_insert, st };
	return c;
}
