/*
 * scheduler-int.h — what the two schedulers' config parsers share
 * (scheduler.c's FlowMatchEulerDiscreteScheduler, unipc.c's
 * UniPCMultistepScheduler): one way to read a scheduler_config.json key and
 * to word its error.  Private to src/sampler/.
 */
#ifndef LQ_SAMPLER_SCHEDULER_INT_H
#define LQ_SAMPLER_SCHEDULER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/error.h"

/*
 * Sets *err to `code` with message fmt(key, detail), the file `path` (may
 * be NULL), field `key` and `hint` (may be NULL); returns LQ_FAILED.
 */
enum lq_status scheduler_config_error(struct lq_error *err, const char *path,
    const char *code, const char *key, const char *hint, const char *fmt,
    const char *detail);

/* "null", "a boolean", "a number", "a string", "an array", "an object". */
const char *scheduler_json_type_name(const cJSON *v);

/*
 * One key of `json`: absent leaves *out as it is (the caller's default);
 * present of the wrong type is LQ-SCHED-001, out of range LQ-SCHED-002,
 * field = the key.  Numbers must be finite; with null_ok a null sets
 * *is_null (else null is a wrong type).  Integers are exact, in
 * [min, 2^53].
 */
enum lq_status scheduler_json_bool(const cJSON *json, const char *path,
    const char *key, bool *out, struct lq_error *err);
enum lq_status scheduler_json_number(const cJSON *json, const char *path,
    const char *key, double *out, bool null_ok, bool *is_null,
    struct lq_error *err);
enum lq_status scheduler_json_int(const cJSON *json, const char *path,
    const char *key, int64_t *out, int64_t min, struct lq_error *err);

/*
 * Reads and parses the scheduler_config.json at `path`: the caller's
 * cJSON (cJSON_Delete it), or NULL with LQ-SCHED-005 (unreadable, not
 * JSON) at the file.
 */
cJSON *scheduler_config_read(const char *path, struct lq_error *err);

/*
 * diffusers ignores config keys it does not know, with a log line; so do
 * we: one warning for each key of `json` not in known[0..n_known) and not
 * metadata (a leading '_').
 */
void scheduler_warn_unknown_keys(const cJSON *json, const char *path,
    const char *const *known, size_t n_known);

/* num_inference_steps >= 1, else LQ-SCHED-010 on field num_inference_steps. */
enum lq_status scheduler_check_steps(int num_steps, struct lq_error *err);

#endif
