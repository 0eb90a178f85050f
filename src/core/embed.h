/*
 * embed.h — files compiled into the binary by tools/embed.c (schema SQL,
 * SPIR-V).  Tables are static, NULL-name terminated, never freed.
 */
#ifndef LQ_CORE_EMBED_H
#define LQ_CORE_EMBED_H

#include <stddef.h>

struct embed_file {
	const char *name;		/* e.g. "0001_init.sql" */
	const unsigned char *data;	/* NUL-terminated for convenience */
	size_t size;			/* bytes, excluding that NUL */
};

/* Returns the entry named `name` in `table`, or NULL. */
const struct embed_file *embed_find(const struct embed_file *table,
    const char *name);

#endif
