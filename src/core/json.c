/* json.c — canonical JSON and typed getters over cJSON (see json.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"

static int
cmp_keys(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	return strcmp(x->string, y->string);
}

void
json_sort_keys(cJSON *item)
{
	if (item == NULL)
		return;
	for (cJSON *c = item->child; c != NULL; c = c->next)
		json_sort_keys(c);
	if (!cJSON_IsObject(item) || item->child == NULL)
		return;
	size_t n = 0;
	for (cJSON *c = item->child; c != NULL; c = c->next)
		n++;
	cJSON **v = xmalloc(n * sizeof(*v));
	n = 0;
	for (cJSON *c = item->child; c != NULL; c = c->next)
		v[n++] = c;
	qsort(v, n, sizeof(*v), cmp_keys);
	for (size_t i = 0; i < n; i++) {
		v[i]->prev = i > 0 ? v[i - 1] : v[n - 1];	/* cJSON: head->prev = tail */
		v[i]->next = i + 1 < n ? v[i + 1] : NULL;
	}
	item->child = v[0];
	free(v);
}

char *
json_canonical(const cJSON *item)
{
	cJSON *copy = cJSON_Duplicate(item, 1);
	LQ_ASSERT(copy != NULL);
	json_sort_keys(copy);
	char *s = cJSON_PrintUnformatted(copy);
	cJSON_Delete(copy);
	LQ_ASSERT(s != NULL);
	char *r = xstrdup(s);
	cJSON_free(s);
	return r;
}

char *
json_pretty(const cJSON *item)
{
	char *s = cJSON_Print(item);
	LQ_ASSERT(s != NULL);
	char *r = xstrdup(s);
	cJSON_free(s);
	return r;
}

cJSON *
json_parse_document(const char *text, size_t len)
{
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (j == NULL)
		return NULL;
	for (; end != NULL && end < text + len; end++) {
		if (*end == '\0')
			break;
		if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
			cJSON_Delete(j);
			return NULL;
		}
	}
	return j;
}

double
json_get_number(const cJSON *obj, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

int64_t
json_get_int(const cJSON *obj, const char *key, int64_t def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

const char *
json_get_string(const cJSON *obj, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) ? v->valuestring : def;
}

int
json_get_bool(const cJSON *obj, const char *key, int def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

cJSON *
json_add_int64(cJSON *obj, const char *key, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return cJSON_AddRawToObject(obj, key, buf);
}
