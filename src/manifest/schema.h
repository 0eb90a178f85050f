/*
 * schema.h — the one table of manifest job keys.
 *
 * Every key a job (or `defaults`) may carry is one row: its name, its type,
 * its built-in default as JSON text and a one-line meaning.  Adding a key is
 * one row in schema.c plus its line in man/latentq-manifest.5 (a test checks
 * that every row is documented there).  Types are checked when a manifest is
 * loaded; ranges and geometry are preflight's business.
 *
 * The table is static data: every pointer returned here is borrowed and
 * valid for the life of the program.
 */
#ifndef LQ_MANIFEST_SCHEMA_H
#define LQ_MANIFEST_SCHEMA_H

#include <stddef.h>

enum manifest_type {
	MANIFEST_STRING,	/* any scalar, kept as its text */
	MANIFEST_PATH,		/* non-empty text; relative: against the manifest's folder */
	MANIFEST_MODEL,		/* a path or a model name, as model_ref_is_path (model/ref.h) tells */
	MANIFEST_TEMPLATE,	/* output path with {name} {seed} {index}; not resolved */
	MANIFEST_INT,		/* integer, |v| <= 2^53 (a JSON number holds it exactly) */
	MANIFEST_NUMBER,	/* finite integer or decimal */
	MANIFEST_BOOL,		/* true or false */
	MANIFEST_U64,		/* 0 .. 2^64-1, parsed exactly; a decimal string in the config */
	MANIFEST_U64_LIST,	/* non-empty sequence of MANIFEST_U64 */
	MANIFEST_INT_LIST,	/* sequence (maybe empty) of MANIFEST_INT */
	MANIFEST_LORAS,		/* sequence of mappings with the sub-keys in `fields` */
	MANIFEST_CONDITIONS,	/* the same, each an LTXVideoCondition {image, frame_index, strength} */
	MANIFEST_MESH,		/* mapping with the sub-keys in `fields`, merged per sub-key */
	MANIFEST_SECOND_STAGE,	/* mapping with the sub-keys in `fields`, defaults filled */
	MANIFEST_TILING,	/* "auto", "off", or a mapping with the sub-keys in `fields` */
};

/* Key flags. */
#define MANIFEST_KEY_NOT_IN_DEFAULTS 1u	/* e.g. name: must differ per job */

struct manifest_key {
	const char *name;
	enum manifest_type type;
	const char *def;		/* built-in default as JSON text; NULL: none */
	const char *meaning;		/* one line, for messages and docs */
	const struct manifest_key *fields; /* LORAS, CONDITIONS, MESH, TILING: sub-keys, ended by a NULL name */
	unsigned flags;
};

/* Number of job keys and the i-th one, in table (documentation) order. */
size_t manifest_key_count(void);
const struct manifest_key *manifest_key_at(size_t i);

/* The job key `name`, or NULL. */
const struct manifest_key *manifest_key_find(const char *name);
/* Sub-key `name` of a LORAS or MESH key, or NULL. */
const struct manifest_key *manifest_key_field(const struct manifest_key *k,
    const char *name);

/* The closest of `n` names to `word` if close enough to suggest, else NULL. */
const char *manifest_key_suggest(const char *word, const char *const *names,
    size_t n);

/* "an integer", "a path"... for messages. */
const char *manifest_type_name(enum manifest_type type);

#endif
