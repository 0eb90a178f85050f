/*
 * manifest.h — load a YAML (or JSON) manifest of render jobs.
 *
 * A manifest is one YAML document: `version` (1, optional), `defaults` (job
 * keys every entry inherits) and `jobs` (a sequence of job entries); the job
 * keys are the table in manifest/schema.h, documented in latentq-manifest(5).
 * Loading parses with libyaml (duplicate keys refused, aliases bounded),
 * checks every key's TYPE (ranges and geometry are preflight's), expands
 * `seeds` into one job per seed, applies defaults, resolves relative input
 * paths against the manifest's folder and expands output templates.
 *
 * Errors: a YAML syntax error (or an alias bomb) stops loading; otherwise
 * every key and type error of every entry is collected in m->errors, each
 * with file:line:column (1-based) and the key path ("jobs[2].height").  A job
 * whose entry has an error is kept in the list with job->error set and
 * job->config NULL, so the caller can record it as rejected and queue the
 * rest.  Codes:
 *   LQ-MAN-001 YAML syntax error            LQ-MAN-008 bad output template
 *   LQ-MAN-002 alias limit / unknown alias  LQ-MAN-009 job name used twice
 *   LQ-MAN-003 duplicate key                LQ-MAN-010 seed and seeds together
 *   LQ-MAN-004 unknown key (did you mean)   LQ-MAN-011 cannot read the file
 *   LQ-MAN-005 wrong type                   LQ-MAN-012 key not allowed in defaults
 *   LQ-MAN-006 wrong structure              LQ-MAN-013 required key missing
 *   LQ-MAN-007 unsupported version          LQ-MAN-014 several YAML documents
 *   LQ-MAN-015 a limit below is passed
 *
 * Limits (the one place they are defined; latentq-manifest(5) LIMITS lists
 * them, and a test checks that it does): a bigger manifest is refused before
 * it is read, more jobs before any entry is copied, a longer string or seeds
 * list before it is copied.  They keep a hostile manifest from exhausting
 * the host (memory grows with jobs and with string bytes); a real sweep
 * larger than one manifest is several manifests.
 *
 * Ownership: a struct manifest owns everything reachable from it (jobs,
 * their cJSON trees, errors); all of it is released by manifest_free().
 * Callers read the structs' fields but never free or modify them.
 */
#ifndef LQ_MANIFEST_MANIFEST_H
#define LQ_MANIFEST_MANIFEST_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/digest.h"
#include "core/error.h"
#include "manifest/schema.h"

struct tree;
struct tree_node;

#define MANIFEST_MAX_BYTES (16u << 20)	/* bytes of a manifest file */
#define MANIFEST_MAX_JOBS 10000u	/* jobs of one manifest, seeds expanded */
#define MANIFEST_MAX_SEEDS MANIFEST_MAX_JOBS	/* seeds one list may hold */
#define MANIFEST_MAX_STRING 65536u	/* bytes of one string value (prompt...) */

struct manifest_job {
	size_t index;		/* position in m->jobs, 0-based; the {index} template */
	size_t entry;		/* position of its entry in `jobs:`; "jobs[entry]" */
	const char *name;	/* never NULL: `name` as written, else "job<entry>";
				   "<name>-<seed>" when expanded from seeds */
	int line, column;	/* where the entry starts (1-based) */
	/*
	 * The entry exactly as written, as a JSON object (aliases expanded; for
	 * the `requests` table).  Integers that a double cannot hold exactly
	 * (past 2^53) are cJSON raw numbers, printed with every digit.  Jobs
	 * expanded from one entry share ONE request (the same pointer; a copy
	 * per seed would cost the square of the seed count).
	 */
	cJSON *request;
	/*
	 * The resolved config: every schema key with a default or written
	 * value (defaults applied, `seeds` expanded into `seed`, paths
	 * resolved, templates expanded, decode_noise_scale filled in), in
	 * schema order.  `seed` is a decimal STRING (u64); `loras` an array of
	 * {path, scale}; `mesh` an object with all four axes.  NULL when
	 * error != NULL.
	 */
	cJSON *config;
	const struct lq_error *error;	/* this job's first error; NULL if valid */
	/* private to manifest.c */
	int owns_request;	/* the first job of its entry frees request */
	const struct tree_node *node, *seed_node;
	char *seed_field;
	char *name_owned;
};

struct manifest {
	char *path;			/* as given */
	char *dir;			/* folder relative paths resolve against (absolute when it exists) */
	char digest[DIGEST_HEX_SIZE];	/* BLAKE2b-256 of the file's bytes */
	int version;			/* 1 */
	struct manifest_job *jobs;
	size_t n_jobs;
	struct lq_error *errors;	/* every error found, in file order per pass */
	size_t n_errors;
	/* private to manifest.c */
	struct tree *tree;
	const struct tree_node *defaults;
};

/*
 * Loads the manifest file at `path`.  *out is ALWAYS set to a manifest the
 * caller must manifest_free(), whatever the result:
 *   LQ_OK      no error; every job has a config.
 *   LQ_WARN    only job-level errors: the jobs with error == NULL may be
 *              queued, the others recorded as rejected.  err = first error.
 *   LQ_FAILED  the manifest as a whole is unusable (unreadable, syntax
 *              error, alias limit, bad top level or defaults, no jobs):
 *              queue nothing.  err = first error; m->errors has them all
 *              (m->jobs may be empty).
 */
enum lq_status manifest_load(const char *path, struct manifest **out,
    struct lq_error *err);

/*
 * The same from memory: `name` is used in messages and relative paths
 * resolve against its folder (the current folder when it has none).  `text`
 * need not be NUL-terminated; it is copied as needed.
 */
enum lq_status manifest_load_buffer(const char *name, const char *text,
    size_t len, struct manifest **out, struct lq_error *err);

/* Frees everything (NULL is fine). */
void manifest_free(struct manifest *m);

/*
 * Typed reads of a job's config key (top level): `def` when absent, null,
 * of another type or (for u64) not a valid decimal u64.  manifest_job_u64
 * reads decimal strings (as `seed` is stored) and exact integral numbers.
 * Strings are borrowed from the config.
 */
uint64_t manifest_job_u64(const struct manifest_job *job, const char *key,
    uint64_t def);
int64_t manifest_job_int(const struct manifest_job *job, const char *key,
    int64_t def);
double manifest_job_number(const struct manifest_job *job, const char *key,
    double def);
const char *manifest_job_string(const struct manifest_job *job,
    const char *key, const char *def);
int manifest_job_bool(const struct manifest_job *job, const char *key,
    int def);

/* Where a job's key was written (for preflight's messages). */
struct manifest_where {
	int written;		/* 1: written in the entry or in defaults; 0: built-in default */
	int line, column;	/* of the value (1-based); the entry's start when not written */
	char field[128];	/* "jobs[2].height", "defaults.height", "jobs[0].seeds[1]", or "jobs[2]" */
	const char *text;	/* the scalar exactly as written ("1.0", "-1"); NULL for
				   mappings, sequences and built-in defaults; borrowed */
};

/*
 * Finds where `key` of `job` was written.  `key` is a path into the job:
 * "height", "mesh.devices", "loras[1].path".  The entry is searched first,
 * then `defaults`; for a job expanded from `seeds`, "seed" is the element of
 * the list it came from.  Returns out->written.
 */
int manifest_job_where(const struct manifest *m,
    const struct manifest_job *job, const char *key,
    struct manifest_where *out);

/*
 * Convenience for error reports: sets err's file, line, column and field to
 * where `key` of `job` was written (see manifest_job_where); leaves status,
 * code, message and hint alone.
 */
void manifest_job_error_at(const struct manifest *m,
    const struct manifest_job *job, const char *key, struct lq_error *err);

#endif
