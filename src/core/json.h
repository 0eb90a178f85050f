/*
 * json.h — helpers over cJSON.
 *
 * Canonical JSON: object keys sorted bytewise, no insignificant whitespace,
 * numbers as cJSON prints them (integers exactly, doubles with 17 significant
 * digits).  A config's digest is the BLAKE2b-256 of its canonical text, so the
 * same config always has the same digest whatever the manifest's key order.
 * Returned strings are caller-owned (free()).
 */
#ifndef LQ_CORE_JSON_H
#define LQ_CORE_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Sorts every object's keys in place (recursively). */
void json_sort_keys(cJSON *item);
/* Canonical text of item (sorts a copy; item unchanged). */
char *json_canonical(const cJSON *item);
/* Pretty text (cJSON_Print), never NULL. */
char *json_pretty(const cJSON *item);

/*
 * Parses a whole JSON document: NULL when it is not valid JSON or when
 * anything but whitespace follows it (cJSON_Parse alone accepts
 * `{"a": 1} junk`, which hides a truncated or corrupted config).
 */
cJSON *json_parse_document(const char *text, size_t len);

/* Typed getters: return `def` when the key is absent or of another type. */
double json_get_number(const cJSON *obj, const char *key, double def);
int64_t json_get_int(const cJSON *obj, const char *key, int64_t def);
const char *json_get_string(const cJSON *obj, const char *key, const char *def);
int json_get_bool(const cJSON *obj, const char *key, int def);

/*
 * Adds an integer to obj with every digit: cJSON_AddNumberToObject prints
 * 15 significant digits when it judges a double close enough, so 2^53
 * would come out as 9.00719925474099e+15.  Returns the new item.
 */
cJSON *json_add_int64(cJSON *obj, const char *key, int64_t v);

#endif
