/*
 * config.h — strict readers for a diffusers component's config.json, used
 * by the ltxv model loaders: a key that is absent or null takes upstream's
 * default, a key of the wrong type is an error naming the file and key
 * (LQ_FAILED, LQ-NN-CONFIG).
 *
 * Ownership: nn_config_open returns a caller-owned cJSON tree
 * (cJSON_Delete); getters borrow it.
 */
#ifndef LQ_NN_CONFIG_H
#define LQ_NN_CONFIG_H

#include <cjson/cJSON.h>

#include "core/error.h"

/* Parses `dir`/config.json into *root.  LQ_FAILED LQ-NN-CONFIG when it is
 * missing or not a JSON object. */
enum lq_status nn_config_open(const char *dir, cJSON **root,
    struct lq_error *err);

enum lq_status nn_config_int(const cJSON *root, const char *key, int def,
    int *out, struct lq_error *err);
enum lq_status nn_config_float(const cJSON *root, const char *key,
    double def, double *out, struct lq_error *err);
enum lq_status nn_config_bool(const cJSON *root, const char *key, int def,
    int *out, struct lq_error *err);
/* Copies into out (size n); a longer string is an error. */
enum lq_status nn_config_string(const cJSON *root, const char *key,
    const char *def, char *out, size_t n, struct lq_error *err);
/*
 * A list of ints (JSON true/false read as 1/0 too), at most `max` entries;
 * absent/null: the `ndef` defaults.  *count receives the length.
 */
enum lq_status nn_config_int_list(const cJSON *root, const char *key,
    const int *def, int ndef, int *out, int max, int *count,
    struct lq_error *err);

#endif
