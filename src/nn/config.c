/* config.c — strict config.json readers (see config.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nn/config.h"

enum lq_status
nn_config_open(const char *dir, cJSON **root, struct lq_error *err)
{
	char *path = xasprintf("%s/config.json", dir);
	size_t n;
	char *text = util_read_file(path, &n);

	*root = NULL;
	if (text == NULL) {
		error_set(err, LQ_FAILED, "LQ-NN-CONFIG", "cannot read %s",
		    path);
		error_set_where(err, path, 0, 0);
		error_set_hint(err, "give a diffusers component folder "
		    "(with config.json) or a pipeline folder");
		free(path);
		return LQ_FAILED;
	}
	*root = cJSON_ParseWithLength(text, n);
	free(text);
	if (*root == NULL || !cJSON_IsObject(*root)) {
		cJSON_Delete(*root);
		*root = NULL;
		error_set(err, LQ_FAILED, "LQ-NN-CONFIG",
		    "%s is not a JSON object", path);
		error_set_where(err, path, 0, 0);
		free(path);
		return LQ_FAILED;
	}
	free(path);
	return LQ_OK;
}

static const cJSON *
item(const cJSON *root, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);

	return (it == NULL || cJSON_IsNull(it)) ? NULL : it;
}

static enum lq_status
bad_type(const char *key, const char *want, struct lq_error *err)
{
	error_set(err, LQ_FAILED, "LQ-NN-CONFIG",
	    "config.json key %s is not %s", key, want);
	error_set_field(err, "%s", key);
	return LQ_FAILED;
}

enum lq_status
nn_config_int(const cJSON *root, const char *key, int def, int *out,
    struct lq_error *err)
{
	const cJSON *it = item(root, key);

	if (it == NULL) {
		*out = def;
		return LQ_OK;
	}
	if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
	    fabs(it->valuedouble) > 1e9)
		return bad_type(key, "an integer", err);
	*out = (int)it->valuedouble;
	return LQ_OK;
}

enum lq_status
nn_config_float(const cJSON *root, const char *key, double def, double *out,
    struct lq_error *err)
{
	const cJSON *it = item(root, key);

	if (it == NULL) {
		*out = def;
		return LQ_OK;
	}
	if (!cJSON_IsNumber(it))
		return bad_type(key, "a number", err);
	*out = it->valuedouble;
	return LQ_OK;
}

enum lq_status
nn_config_bool(const cJSON *root, const char *key, int def, int *out,
    struct lq_error *err)
{
	const cJSON *it = item(root, key);

	if (it == NULL) {
		*out = def;
		return LQ_OK;
	}
	if (!cJSON_IsBool(it))
		return bad_type(key, "true or false", err);
	*out = cJSON_IsTrue(it);
	return LQ_OK;
}

enum lq_status
nn_config_string(const cJSON *root, const char *key, const char *def,
    char *out, size_t n, struct lq_error *err)
{
	const cJSON *it = item(root, key);
	const char *s = def;

	if (it != NULL) {
		if (!cJSON_IsString(it))
			return bad_type(key, "a string", err);
		s = it->valuestring;
	}
	if (strlen(s) >= n)
		return bad_type(key, "a known name", err);
	strcpy(out, s);
	return LQ_OK;
}

enum lq_status
nn_config_int_list(const cJSON *root, const char *key, const int *def,
    int ndef, int *out, int max, int *count, struct lq_error *err)
{
	const cJSON *it = item(root, key), *e;
	int n = 0;

	if (it == NULL) {
		LQ_ASSERT(ndef <= max);
		memcpy(out, def, sizeof(int) * (size_t)ndef);
		*count = ndef;
		return LQ_OK;
	}
	if (!cJSON_IsArray(it))
		return bad_type(key, "a list", err);
	cJSON_ArrayForEach(e, it) {
		if (n >= max) {
			error_set(err, LQ_FAILED, "LQ-NN-CONFIG",
			    "config.json key %s has more than %d entries", key,
			    max);
			error_set_field(err, "%s", key);
			return LQ_FAILED;
		}
		if (cJSON_IsBool(e))
			out[n++] = cJSON_IsTrue(e);
		else if (cJSON_IsNumber(e) && e->valuedouble == floor(e->valuedouble))
			out[n++] = (int)e->valuedouble;
		else
			return bad_type(key, "a list of integers or booleans", err);
	}
	*count = n;
	return LQ_OK;
}
