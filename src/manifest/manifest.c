/*
 * manifest.c — manifests: node tree → typed keys → one resolved config per
 * job (see manifest.h for the contract, schema.c for the keys).
 *
 * Passes: tree_parse() builds the node tree (syntax and alias limits);
 * check_map() checks one mapping against a key set (duplicates, unknown keys
 * with a suggestion, types) and returns its typed values as a cJSON object
 * in which null means "back to the built-in default"; build_config() layers
 * entry over defaults over built-in defaults for one job and one seed.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/util.h"
#include "manifest/manifest.h"
#include "model/ref.h"
#include "manifest/tree.h"

#define MAX_EXACT_INT 9007199254740992.0	/* 2^53 */

struct keyset {
	const struct manifest_key *keys;
	size_t n;
};

struct ctx {
	struct manifest *m;
	size_t cap_errors, cap_jobs;
	cJSON **builtin;	/* parsed built-in defaults, per schema row */
	cJSON *defaults;	/* typed `defaults`, or NULL */
	size_t *job_error;	/* per job: index into m->errors + 1, 0 for none */
};

/* ---- errors ---------------------------------------------------------- */

static size_t
add_error(struct ctx *c, int line, int column, const char *field,
    const char *code, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* Appends an error; returns its index. */
static size_t
add_error(struct ctx *c, int line, int column, const char *field,
    const char *code, const char *hint, const char *fmt, ...)
{
	struct manifest *m = c->m;
	if (m->n_errors == c->cap_errors) {
		c->cap_errors = c->cap_errors ? 2 * c->cap_errors : 8;
		m->errors = xrealloc(m->errors, c->cap_errors * sizeof(*m->errors));
	}
	struct lq_error *e = &m->errors[m->n_errors];
	error_clear(e);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	e->status = LQ_FAILED;
	snprintf(e->code, sizeof(e->code), "%s", code);
	error_set_where(e, m->path, line, column);
	if (field)
		error_set_field(e, "%s", field);
	if (hint)
		error_set_hint(e, "%s", hint);
	return m->n_errors++;
}

/* "a string (\"512\")", "a mapping": a node for messages, text shortened. */
static char *
describe(const struct tree_node *v)
{
	if (v->kind != TREE_SCALAR || v->type == TREE_NULL)
		return xstrdup(tree_kind_name(v));
	char shown[48];
	if (v->len > 40)
		snprintf(shown, sizeof(shown), "%.37s...", v->text);
	else
		snprintf(shown, sizeof(shown), "%s", v->text);
	if (v->type == TREE_STRING)
		return xasprintf("%s (\"%s\")", tree_kind_name(v), shown);
	return xasprintf("%s (%s)", tree_kind_name(v), shown);
}

static int
type_error(struct ctx *c, const struct tree_node *v, const char *field,
    enum manifest_type want, const char *hint)
{
	char *got = describe(v);
	add_error(c, v->line, v->column, field, "LQ-MAN-005", hint,
	    "expected %s, got %s", manifest_type_name(want), got);
	free(got);
	return 0;
}

/* ---- paths and templates --------------------------------------------- */

static char *
resolve_path(const struct manifest *m, const char *p)
{
	if (p[0] == '/')
		return xstrdup(p);
	if (p[0] == '~' && (p[1] == '/' || p[1] == '\0')) {
		const char *home = getenv("HOME");
		if (home && home[0])
			return xasprintf("%s%s", home, p + 1);
	}
	if (strcmp(m->dir, ".") == 0)
		return xstrdup(p);
	return xasprintf("%s/%s", m->dir, p);
}

/*
 * Expands {name} {seed} {index} and the escapes {{ }} of template t.  With
 * out == NULL only checks.  Returns 0, or -1 with *bad (caller frees) naming
 * the offending piece.
 */
static int
template_expand(const char *t, const char *name, const char *seed,
    size_t index, char **out, char **bad)
{
	struct strbuf sb = { 0 };
	const char *p = t;
	while (*p) {
		if (p[0] == '{' && p[1] == '{') {
			strbuf_append(&sb, "{", 1);
			p += 2;
		} else if (p[0] == '}' && p[1] == '}') {
			strbuf_append(&sb, "}", 1);
			p += 2;
		} else if (p[0] == '{') {
			const char *end = strchr(p, '}');
			size_t n = end ? (size_t)(end - p - 1) : 0;
			if (end && n == 4 && strncmp(p + 1, "name", 4) == 0)
				strbuf_append(&sb, name, strlen(name));
			else if (end && n == 4 && strncmp(p + 1, "seed", 4) == 0)
				strbuf_append(&sb, seed, strlen(seed));
			else if (end && n == 5 && strncmp(p + 1, "index", 5) == 0)
				strbuf_printf(&sb, "%zu", index);
			else {
				*bad = end ? xstrndup(p, (size_t)(end - p + 1)) :
				    xstrdup("{ without a closing }");
				free(sb.buf);
				return -1;
			}
			p = end + 1;
		} else if (p[0] == '}') {
			*bad = xstrdup("} without an opening {");
			free(sb.buf);
			return -1;
		} else {
			strbuf_append(&sb, p, 1);
			p++;
		}
	}
	if (out)
		*out = strbuf_release(&sb);
	else
		free(sb.buf);
	return 0;
}

/* ---- type checks ----------------------------------------------------- */

static int check_map(struct ctx *c, const struct tree_node *map,
    struct keyset ks, const char *prefix, int in_defaults, cJSON **out);

static struct keyset
keyset_fields(const struct manifest_key *k)
{
	struct keyset ks = { k->fields, 0 };
	while (k->fields[ks.n].name)
		ks.n++;
	return ks;
}

static struct keyset
keyset_jobs(void)
{
	struct keyset ks = { manifest_key_at(0), manifest_key_count() };
	return ks;
}

static int
check_u64(struct ctx *c, const struct tree_node *v, const char *field,
    cJSON **out)
{
	uint64_t u;
	int digits_only = v->len > 0 && strspn(v->text, "0123456789") == v->len;
	if (v->kind != TREE_SCALAR ||
	    !((v->type == TREE_INT && !v->quoted) ||
	      (v->type == TREE_STRING && digits_only)))
		return type_error(c, v, field, MANIFEST_U64,
		    "seeds are whole numbers from 0 to 18446744073709551615");
	if (tree_parse_u64(v->text, &u) != 0) {
		add_error(c, v->line, v->column, field, "LQ-MAN-005",
		    "seeds are whole numbers from 0 to 18446744073709551615",
		    "expected %s, got %s", manifest_type_name(MANIFEST_U64),
		    v->text);
		return 0;
	}
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, u);
	*out = cJSON_CreateString(buf);
	return 1;
}

/*
 * Checks value v of key k (field names it in messages).  Returns 1 with *out
 * set to the typed value (cJSON null for a YAML null), or 0 after adding
 * errors.
 */
static int
check_value(struct ctx *c, const struct manifest_key *k,
    const struct tree_node *v, const char *field, cJSON **out)
{
	*out = NULL;
	if (v->kind == TREE_SCALAR && v->type == TREE_NULL && !v->quoted) {
		*out = cJSON_CreateNull();
		return 1;
	}
	if (v->kind == TREE_SCALAR && v->len > MANIFEST_MAX_STRING) {
		/* Before any copy: later passes (the tokenizer) cost far more
		 * than the text's size. */
		add_error(c, v->line, v->column, field, "LQ-MAN-015",
		    "shorten it", "the value is %zu bytes; a string may be at "
		    "most %u bytes (latentq-manifest(5) LIMITS)", v->len,
		    MANIFEST_MAX_STRING);
		return 0;
	}
	switch (k->type) {
	case MANIFEST_STRING:
		if (v->kind != TREE_SCALAR)
			return type_error(c, v, field, k->type, NULL);
		if (strlen(v->text) != v->len)	/* "\0" would cut it short */
			return type_error(c, v, field, k->type,
			    "a NUL character cannot be part of the text");
		*out = cJSON_CreateString(v->text);
		return 1;
	case MANIFEST_PATH:
	case MANIFEST_MODEL:
	case MANIFEST_TEMPLATE:
		if (v->kind != TREE_SCALAR || v->len == 0 ||
		    strlen(v->text) != v->len)
			return type_error(c, v, field, k->type, NULL);
		if (k->type == MANIFEST_TEMPLATE) {
			char *bad = NULL;
			if (template_expand(v->text, "", "", 0, NULL, &bad) != 0) {
				add_error(c, v->line, v->column, field,
				    "LQ-MAN-008",
				    "placeholders are {name}, {seed} and {index}; "
				    "write {{ and }} for braces",
				    "bad placeholder %s in \"%s\"", bad, v->text);
				free(bad);
				return 0;
			}
			*out = cJSON_CreateString(v->text);
		} else if ((k->type == MANIFEST_MODEL && !model_ref_is_path(v->text))
		    || model_ref_is_url(v->text)) {
			/* a name, or a URL (model/ref.h): kept as written */
			*out = cJSON_CreateString(v->text);
		} else {
			char *p = resolve_path(c->m, v->text);
			*out = cJSON_CreateString(p);
			free(p);
		}
		return 1;
	case MANIFEST_INT: {
		int64_t i;
		if (v->kind != TREE_SCALAR || v->type != TREE_INT)
			return type_error(c, v, field, k->type, NULL);
		if (tree_parse_i64(v->text, &i) != 0 ||
		    i > (INT64_C(1) << 53) || i < -(INT64_C(1) << 53)) {
			add_error(c, v->line, v->column, field, "LQ-MAN-005", NULL,
			    "expected an integer between -2^53 and 2^53, got %s",
			    v->text);
			return 0;
		}
		*out = cJSON_CreateNumber((double)i);
		return 1;
	}
	case MANIFEST_NUMBER: {
		int64_t i;
		double d;
		if (v->kind != TREE_SCALAR ||
		    (v->type != TREE_INT && v->type != TREE_FLOAT))
			return type_error(c, v, field, k->type, NULL);
		if (v->type == TREE_INT) {
			if (tree_parse_i64(v->text, &i) != 0) {
				add_error(c, v->line, v->column, field,
				    "LQ-MAN-005", NULL,
				    "expected a number, got %s (too large)",
				    v->text);
				return 0;
			}
			d = (double)i;
		} else {
			d = strtod(v->text, NULL);
			if (!isfinite(d) || strchr(v->text, 'n') ||
			    strchr(v->text, 'N')) {
				add_error(c, v->line, v->column, field,
				    "LQ-MAN-005", NULL,
				    "expected a finite number, got %s", v->text);
				return 0;
			}
		}
		*out = cJSON_CreateNumber(d);
		return 1;
	}
	case MANIFEST_BOOL:
		if (v->kind != TREE_SCALAR || v->type != TREE_BOOL)
			return type_error(c, v, field, k->type,
			    "write true or false");
		*out = cJSON_CreateBool(v->text[0] == 't' || v->text[0] == 'T');
		return 1;
	case MANIFEST_U64:
		return check_u64(c, v, field, out);
	case MANIFEST_U64_LIST: {
		if (v->kind != TREE_SEQUENCE)
			return type_error(c, v, field, k->type,
			    "write seeds: [1, 2, 3]");
		if (v->n == 0) {
			add_error(c, v->line, v->column, field, "LQ-MAN-005",
			    "write seeds: [1, 2, 3], or leave seeds out",
			    "expected %s, got an empty list",
			    manifest_type_name(k->type));
			return 0;
		}
		if (v->n > MANIFEST_MAX_SEEDS) {
			add_error(c, v->line, v->column, field, "LQ-MAN-015",
			    "split the list over several manifests",
			    "%zu seeds; an entry may list at most %u "
			    "(latentq-manifest(5) LIMITS)", v->n,
			    MANIFEST_MAX_SEEDS);
			return 0;
		}
		cJSON *arr = cJSON_CreateArray();
		int ok = 1;
		for (size_t i = 0; i < v->n; i++) {
			char *f = xasprintf("%s[%zu]", field, i);
			cJSON *s;
			if (check_u64(c, v->items[i], f, &s))
				cJSON_AddItemToArray(arr, s);
			else
				ok = 0;
			free(f);
		}
		if (!ok) {
			cJSON_Delete(arr);
			return 0;
		}
		*out = arr;
		return 1;
	}
	case MANIFEST_INT_LIST: {
		if (v->kind != TREE_SEQUENCE)
			return type_error(c, v, field, k->type,
			    "write a list such as [28] or []");
		cJSON *arr = cJSON_CreateArray();
		int ok = 1;
		for (size_t i = 0; i < v->n; i++) {
			const struct tree_node *e = v->items[i];
			char *f = xasprintf("%s[%zu]", field, i);
			int64_t x;
			if (e->kind != TREE_SCALAR || e->type != TREE_INT ||
			    tree_parse_i64(e->text, &x) != 0 ||
			    x > (INT64_C(1) << 53) || x < -(INT64_C(1) << 53)) {
				type_error(c, e, f, MANIFEST_INT, NULL);
				ok = 0;
			} else {
				cJSON_AddItemToArray(arr,
				    cJSON_CreateNumber((double)x));
			}
			free(f);
		}
		if (!ok) {
			cJSON_Delete(arr);
			return 0;
		}
		*out = arr;
		return 1;
	}
	case MANIFEST_LORAS:
	case MANIFEST_CONDITIONS: {
		/* a list of mappings whose first sub-key is required */
		int cond = k->type == MANIFEST_CONDITIONS;
		const char *req = k->fields[0].name;
		if (v->kind != TREE_SEQUENCE)
			return type_error(c, v, field, k->type, cond ?
			    "write conditions: [{image: first.png, frame_index: 0, "
			    "strength: 1.0}]" :
			    "write loras: [{path: style.safetensors, scale: 0.8}]");
		cJSON *arr = cJSON_CreateArray();
		struct keyset ks = keyset_fields(k);
		int ok = 1;
		for (size_t i = 0; i < v->n; i++) {
			const struct tree_node *item = v->items[i];
			char *f = xasprintf("%s[%zu]", field, i);
			cJSON *typed = NULL;
			if (item->kind != TREE_MAPPING) {
				type_error(c, item, f, k->type, cond ?
				    "each condition is a mapping {image, "
				    "frame_index, strength}" :
				    "each LoRA is a mapping {path, scale}");
				ok = 0;
			} else if (!check_map(c, item, ks, f, 0, &typed)) {
				ok = 0;
			} else if (!cJSON_IsString(cJSON_GetObjectItem(typed, req))) {
				add_error(c, item->line, item->column, f,
				    "LQ-MAN-013", cond ? "write {image: FILE, "
				    "frame_index: 0, strength: 1.0}" :
				    "write {path: FILE, scale: 1.0}",
				    cond ? "a condition needs an image" :
				    "a LoRA needs a path");
				ok = 0;
			} else {
				/* Fill the sub-key defaults: a LoRA is always
				 * {path, scale}, a condition {image,
				 * frame_index, strength}. */
				for (size_t j = 0; j < ks.n; j++) {
					cJSON *have = cJSON_GetObjectItem(typed,
					    ks.keys[j].name);
					if (ks.keys[j].def && (have == NULL ||
					    cJSON_IsNull(have))) {
						cJSON_DeleteItemFromObject(typed,
						    ks.keys[j].name);
						cJSON_AddItemToObject(typed,
						    ks.keys[j].name,
						    cJSON_Parse(ks.keys[j].def));
					}
				}
				cJSON_AddItemToArray(arr, typed);
				typed = NULL;
			}
			cJSON_Delete(typed);
			free(f);
		}
		if (!ok) {
			cJSON_Delete(arr);
			return 0;
		}
		*out = arr;
		return 1;
	}
	case MANIFEST_MESH:
		if (v->kind != TREE_MAPPING)
			return type_error(c, v, field, k->type,
			    "write mesh: {devices: 1, data: 1, context: 1, tensor: 1}");
		return check_map(c, v, keyset_fields(k), field, 0, out);
	case MANIFEST_SECOND_STAGE: {
		static const char *const need[] = {"latent_upsampler", "height",
		    "width"};
		if (v->kind != TREE_MAPPING)
			return type_error(c, v, field, k->type,
			    "write second_stage: {latent_upsampler: DIR, height: "
			    "1024, width: 1536, denoise_strength: 0.4}");
		if (!check_map(c, v, keyset_fields(k), field, 0, out))
			return 0;
		for (size_t i = 0; i < LQ_ARRAY_LEN(need); i++) {
			const cJSON *h = cJSON_GetObjectItem(*out, need[i]);
			if (h != NULL && !cJSON_IsNull(h))
				continue;
			add_error(c, v->line, v->column, field, "LQ-MAN-013",
			    "write second_stage: {latent_upsampler: DIR, height: "
			    "H, width: W} with stage 2's size (stage 1's times "
			    "the upsampler's scale)",
			    "second_stage needs %s", need[i]);
			cJSON_Delete(*out);
			*out = NULL;
			return 0;
		}
		return 1;
	}
	case MANIFEST_TILING:
		if (v->kind == TREE_MAPPING)
			return check_map(c, v, keyset_fields(k), field, 0, out);
		if (v->kind == TREE_SCALAR && (strcmp(v->text, "auto") == 0 ||
		    strcmp(v->text, "off") == 0)) {
			*out = cJSON_CreateString(v->text);
			return 1;
		}
		return type_error(c, v, field, k->type,
		    "write vae_tiling: auto, vae_tiling: off or vae_tiling: "
		    "{tile_sample_min_height: 256, tile_sample_stride_height: 192}");
	}
	return 0;
}

struct keyref {
	const struct tree_node *key;
	size_t pos;
};

static int
cmp_keyref(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int r = strcmp(x->key->text, y->key->text);
	if (r != 0)
		return r;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * Marks duplicate keys of mapping `map` in dup[pair] (1 = a later repeat),
 * adding one error per repeat.  Sorting keeps a huge mapping O(n log n).
 */
static int
find_duplicates(struct ctx *c, const struct tree_node *map, const char *prefix,
    unsigned char *dup)
{
	size_t n = tree_map_size(map);
	int found = 0;
	if (n < 2)
		return 0;
	struct keyref *refs = xmalloc(n * sizeof(*refs));
	for (size_t i = 0; i < n; i++) {
		refs[i].key = map->items[2 * i];
		refs[i].pos = i;
	}
	qsort(refs, n, sizeof(*refs), cmp_keyref);
	for (size_t i = 1; i < n; i++) {
		size_t first = i - 1;
		while (i < n && strcmp(refs[i].key->text, refs[first].key->text) == 0) {
			const struct tree_node *k = refs[i].key;
			char *f = prefix[0] ? xasprintf("%s.%s", prefix, k->text) :
			    xstrdup(k->text);
			add_error(c, k->line, k->column, f, "LQ-MAN-003",
			    "remove one of them",
			    "duplicate key \"%s\" (first written at line %d, column %d)",
			    k->text, refs[first].key->line, refs[first].key->column);
			free(f);
			dup[refs[i].pos] = 1;
			found = 1;
			i++;
		}
	}
	free(refs);
	return found;
}

static void
unknown_key(struct ctx *c, const struct tree_node *key, const char *field,
    const char *const *names, size_t n)
{
	const char *near = manifest_key_suggest(key->text, names, n);
	char *hint;
	if (strcmp(key->text, "<<") == 0)
		hint = xstrdup("merge keys (<<) are not supported; put shared "
		    "keys under defaults");
	else if (near)
		hint = xasprintf("did you mean \"%s\"?", near);
	else
		hint = xstrdup("see latentq-manifest(5) for the keys");
	add_error(c, key->line, key->column, field, "LQ-MAN-004", hint,
	    "unknown key \"%s\"", key->text);
	free(hint);
}

/*
 * Checks mapping `map` against key set ks; prefix names the mapping
 * ("jobs[2]", "defaults", "jobs[2].mesh").  Returns 1 with *out a cJSON
 * object of the typed values, or 0 with *out NULL after adding errors (all
 * of them: checking goes on past the first).
 */
static int
check_map(struct ctx *c, const struct tree_node *map, struct keyset ks,
    const char *prefix, int in_defaults, cJSON **out)
{
	size_t n = tree_map_size(map);
	unsigned char *dup = xcalloc(n ? n : 1, 1);
	int ok = !find_duplicates(c, map, prefix, dup);
	const char **names = xmalloc((ks.n ? ks.n : 1) * sizeof(*names));
	for (size_t i = 0; i < ks.n; i++)
		names[i] = ks.keys[i].name;
	cJSON *obj = cJSON_CreateObject();
	const struct tree_node *seed_key = NULL, *seeds_key = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct tree_node *key = map->items[2 * i];
		const struct tree_node *val = map->items[2 * i + 1];
		if (dup[i])
			continue;
		char *field = xasprintf("%s.%s", prefix, key->text);
		const struct manifest_key *k = NULL;
		for (size_t j = 0; j < ks.n; j++)
			if (strcmp(ks.keys[j].name, key->text) == 0)
				k = &ks.keys[j];
		cJSON *typed;
		if (k == NULL) {
			unknown_key(c, key, field, names, ks.n);
			ok = 0;
		} else if (in_defaults && (k->flags & MANIFEST_KEY_NOT_IN_DEFAULTS)) {
			char *hint = xasprintf("give each job its own %s", k->name);
			add_error(c, key->line, key->column, field, "LQ-MAN-012",
			    hint, "%s cannot have a default", k->name);
			free(hint);
			ok = 0;
		} else if (check_value(c, k, val, field, &typed)) {
			cJSON_AddItemToObject(obj, k->name, typed);
			if (k->type == MANIFEST_U64)
				seed_key = key;
			if (k->type == MANIFEST_U64_LIST)
				seeds_key = key;
		} else {
			ok = 0;
		}
		free(field);
	}
	if (seed_key && seeds_key) {
		char *field = xasprintf("%s.%s", prefix, seeds_key->text);
		add_error(c, seeds_key->line, seeds_key->column, field,
		    "LQ-MAN-010", "keep seed for one job or seeds for one job "
		    "per seed", "seed and seeds cannot be used together");
		free(field);
		ok = 0;
	}
	free(names);
	free(dup);
	if (!ok) {
		cJSON_Delete(obj);
		obj = NULL;
	}
	*out = obj;
	return ok;
}

/* ---- the request as written ------------------------------------------ */

static cJSON *
node_to_json(const struct tree_node *v)
{
	switch (v->kind) {
	case TREE_SEQUENCE: {
		cJSON *arr = cJSON_CreateArray();
		for (size_t i = 0; i < v->n; i++)
			cJSON_AddItemToArray(arr, node_to_json(v->items[i]));
		return arr;
	}
	case TREE_MAPPING: {
		cJSON *obj = cJSON_CreateObject();
		for (size_t i = 0; i + 1 < v->n; i += 2) {
			/* A repeated key (refused elsewhere) keeps its first value. */
			if (cJSON_GetObjectItemCaseSensitive(obj, v->items[i]->text))
				continue;
			cJSON_AddItemToObject(obj, v->items[i]->text,
			    node_to_json(v->items[i + 1]));
		}
		return obj;
	}
	case TREE_SCALAR:
		break;
	}
	switch (v->type) {
	case TREE_NULL:
		return cJSON_CreateNull();
	case TREE_BOOL:
		return cJSON_CreateBool(v->text[0] == 't' || v->text[0] == 'T');
	case TREE_INT: {
		int64_t i;
		uint64_t u;
		char buf[24];
		if (tree_parse_i64(v->text, &i) == 0) {
			if (i <= (INT64_C(1) << 53) && i >= -(INT64_C(1) << 53))
				return cJSON_CreateNumber((double)i);
			snprintf(buf, sizeof(buf), "%" PRId64, i);
			return cJSON_CreateRaw(buf);
		}
		if (tree_parse_u64(v->text, &u) == 0) {
			snprintf(buf, sizeof(buf), "%" PRIu64, u);
			return cJSON_CreateRaw(buf);
		}
		return cJSON_CreateString(v->text);
	}
	case TREE_FLOAT: {
		double d = strtod(v->text, NULL);
		if (isfinite(d) && !strchr(v->text, 'n') && !strchr(v->text, 'N'))
			return cJSON_CreateNumber(d);
		return cJSON_CreateString(v->text);
	}
	case TREE_STRING:
		break;
	}
	return cJSON_CreateString(v->text);
}

/* ---- jobs ------------------------------------------------------------ */

static struct manifest_job *
job_new(struct ctx *c)
{
	struct manifest *m = c->m;
	if (m->n_jobs == c->cap_jobs) {
		c->cap_jobs = c->cap_jobs ? 2 * c->cap_jobs : 16;
		m->jobs = xrealloc(m->jobs, c->cap_jobs * sizeof(*m->jobs));
		c->job_error = xrealloc(c->job_error,
		    c->cap_jobs * sizeof(*c->job_error));
	}
	struct manifest_job *job = &m->jobs[m->n_jobs];
	memset(job, 0, sizeof(*job));
	job->index = m->n_jobs;
	c->job_error[m->n_jobs] = 0;
	m->n_jobs++;
	return job;
}

/* The value of key in the entry, else in defaults; NULL if neither. */
static const cJSON *
pick(struct ctx *c, const cJSON *entry, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, key);
	if (v == NULL && c->defaults)
		v = cJSON_GetObjectItemCaseSensitive(c->defaults, key);
	return v;
}

/*
 * The resolved config of one job: entry over defaults over built-in
 * defaults; `seed` is the job's seed as a decimal string.
 */
static cJSON *
build_config(struct ctx *c, const cJSON *entry, const char *name,
    const char *seed, size_t index)
{
	/* Keys are the schema's static names (cJSON "CS": not copied). */
	cJSON *cfg = cJSON_CreateObject();
	for (size_t i = 0; i < manifest_key_count(); i++) {
		const struct manifest_key *k = manifest_key_at(i);
		if (k->type == MANIFEST_U64_LIST)
			continue;
		if (strcmp(k->name, "name") == 0) {
			cJSON_AddItemToObjectCS(cfg, k->name, cJSON_CreateString(name));
			continue;
		}
		if (k->type == MANIFEST_U64) {
			cJSON_AddItemToObjectCS(cfg, k->name, cJSON_CreateString(seed));
			continue;
		}
		if (k->type == MANIFEST_MESH) {
			/* Merged per axis: entry, defaults, built-in. */
			const cJSON *em = cJSON_GetObjectItemCaseSensitive(entry, k->name);
			const cJSON *dm = c->defaults ?
			    cJSON_GetObjectItemCaseSensitive(c->defaults, k->name) : NULL;
			if (cJSON_IsNull(em))	/* mesh: null resets every axis */
				em = dm = NULL;
			if (cJSON_IsNull(dm))
				dm = NULL;
			cJSON *mesh = cJSON_CreateObject();
			for (const struct manifest_key *f = k->fields; f->name; f++) {
				const cJSON *v = cJSON_GetObjectItemCaseSensitive(em, f->name);
				if (v == NULL)
					v = cJSON_GetObjectItemCaseSensitive(dm, f->name);
				if (v == NULL || cJSON_IsNull(v))
					cJSON_AddItemToObjectCS(mesh, f->name,
					    cJSON_CreateNumber(strtod(f->def, NULL)));
				else
					cJSON_AddItemToObjectCS(mesh, f->name,
					    cJSON_Duplicate(v, 1));
			}
			cJSON_AddItemToObjectCS(cfg, k->name, mesh);
			continue;
		}
		const cJSON *v = pick(c, entry, k->name);
		cJSON *val;
		if (v != NULL && !cJSON_IsNull(v))
			val = cJSON_Duplicate(v, 1);
		else if (c->builtin[i] != NULL)
			val = cJSON_Duplicate(c->builtin[i], 1);
		else
			continue;
		if (k->type == MANIFEST_TEMPLATE) {
			char *s = NULL, *bad = NULL;
			int rc = template_expand(val->valuestring, name, seed,
			    index, &s, &bad);
			LQ_ASSERT(rc == 0);	/* checked when typed */
			cJSON_Delete(val);
			val = cJSON_CreateString(s);
			free(s);
		}
		cJSON_AddItemToObjectCS(cfg, k->name, val);
	}
	/* diffusers: decode_noise_scale None means decode_timestep. */
	cJSON *dns = cJSON_GetObjectItemCaseSensitive(cfg, "decode_noise_scale");
	cJSON *dt = cJSON_GetObjectItemCaseSensitive(cfg, "decode_timestep");
	if (dns && cJSON_IsNull(dns) && dt)
		cJSON_ReplaceItemInObjectCaseSensitive(cfg, "decode_noise_scale",
		    cJSON_Duplicate(dt, 1));
	return cfg;
}

/* Where the seed list or seed a job draws from lives: entry or defaults. */
static void
seed_source(struct ctx *c, const struct tree_node *entry_node,
    const cJSON *typed, const cJSON **seeds, const cJSON **seed,
    const struct tree_node **list_node, const char **list_prefix)
{
	*seeds = *seed = NULL;
	*list_node = NULL;
	*list_prefix = NULL;
	const cJSON *src = NULL;
	const struct tree_node *src_node = NULL;
	const char *prefix = NULL;
	if (cJSON_GetObjectItemCaseSensitive(typed, "seed") ||
	    cJSON_GetObjectItemCaseSensitive(typed, "seeds")) {
		src = typed;
		src_node = entry_node;
		prefix = "entry";
	} else if (c->defaults) {
		src = c->defaults;
		src_node = c->m->defaults;
		prefix = "defaults";
	}
	if (src == NULL)
		return;
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(src, "seeds");
	if (s && !cJSON_IsNull(s)) {
		*seeds = s;
		*list_node = tree_map_get(src_node, "seeds", NULL);
		*list_prefix = prefix;
	}
	s = cJSON_GetObjectItemCaseSensitive(src, "seed");
	if (s && !cJSON_IsNull(s))
		*seed = s;
}

static void
load_entry(struct ctx *c, const struct tree_node *node, size_t entry_index)
{
	char prefix[48];
	snprintf(prefix, sizeof(prefix), "jobs[%zu]", entry_index);
	size_t first_error = c->m->n_errors;
	cJSON *typed = NULL;
	int ok;

	if (node->kind != TREE_MAPPING) {
		char *got = describe(node);
		add_error(c, node->line, node->column, prefix, "LQ-MAN-006",
		    "write each job as a mapping: - {name: a, prompt: ...}",
		    "a job entry must be a mapping of keys, not %s", got);
		free(got);
		ok = 0;
	} else {
		ok = check_map(c, node, keyset_jobs(), prefix, 0, &typed);
	}

	/* A rejected entry still gets its written name when it is a scalar. */
	const struct tree_node *name_node = node->kind == TREE_MAPPING ?
	    tree_map_get(node, "name", NULL) : NULL;
	const char *written_name = typed ?
	    json_get_string(typed, "name", NULL) : name_node &&
	    name_node->kind == TREE_SCALAR && name_node->type != TREE_NULL ?
	    name_node->text : NULL;
	char *base = written_name ? xstrdup(written_name) :
	    xasprintf("job%zu", entry_index);
	if (written_name && written_name[0] == '\0') {
		char *f = xasprintf("%s.name", prefix);
		add_error(c, name_node->line, name_node->column, f, "LQ-MAN-005",
		    "leave name out for job<N>",
		    "expected a non-empty name, got an empty string");
		free(f);
		ok = 0;
	}

	const cJSON *seeds = NULL, *seed = NULL;
	const struct tree_node *list_node = NULL;
	const char *list_prefix = NULL;
	if (ok)
		seed_source(c, node, typed, &seeds, &seed, &list_node,
		    &list_prefix);
	size_t n = seeds ? (size_t)cJSON_GetArraySize(seeds) : 1;
	const cJSON *s = seeds ? seeds->child : NULL;
	/* One request per entry, shared by the jobs its seeds expand into: a
	 * copy per job would grow with the square of the seed count. */
	cJSON *request = node_to_json(node);
	for (size_t i = 0; i < n; i++, s = s ? s->next : NULL) {
		struct manifest_job *job = job_new(c);
		job->entry = entry_index;
		job->line = node->line;
		job->column = node->column;
		job->node = node;
		job->request = request;
		job->owns_request = i == 0;
		if (!ok) {
			job->name_owned = xstrdup(base);
			c->job_error[job->index] = first_error + 1;
		} else {
			const char *seed_str = s ? s->valuestring :
			    seed ? seed->valuestring :
			    c->builtin[manifest_key_find("seed") -
			        manifest_key_at(0)]->valuestring;
			job->name_owned = seeds ?
			    xasprintf("%s-%s", base, seed_str) : xstrdup(base);
			job->config = build_config(c, typed, job->name_owned,
			    seed_str, job->index);
			if (seeds && list_node) {
				job->seed_node = list_node->items[i];
				job->seed_field = strcmp(list_prefix, "entry") == 0 ?
				    xasprintf("%s.seeds[%zu]", prefix, i) :
				    xasprintf("defaults.seeds[%zu]", i);
			}
		}
		job->name = job->name_owned;
	}
	free(base);
	cJSON_Delete(typed);
}

struct nameref {
	const char *name;
	size_t index;
};

static int
cmp_nameref(const void *a, const void *b)
{
	const struct nameref *x = a, *y = b;
	int r = strcmp(x->name, y->name);
	if (r != 0)
		return r;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* A name used twice: the later job is refused (the earlier may be queued). */
static void
check_unique_names(struct ctx *c)
{
	struct manifest *m = c->m;
	if (m->n_jobs < 2)
		return;
	struct nameref *refs = xmalloc(m->n_jobs * sizeof(*refs));
	for (size_t i = 0; i < m->n_jobs; i++) {
		refs[i].name = m->jobs[i].name;
		refs[i].index = i;
	}
	qsort(refs, m->n_jobs, sizeof(*refs), cmp_nameref);
	for (size_t i = 1; i < m->n_jobs; i++) {
		if (strcmp(refs[i].name, refs[i - 1].name) != 0)
			continue;
		size_t first = i - 1;
		while (first > 0 && strcmp(refs[first - 1].name, refs[i].name) == 0)
			first--;
		struct manifest_job *job = &m->jobs[refs[i].index];
		const struct manifest_job *other = &m->jobs[refs[first].index];
		struct manifest_where w;
		/* Point at the repeated seed when the entry's list made it. */
		int own_seed = job->seed_node && job->seed_field &&
		    strncmp(job->seed_field, "jobs[", 5) == 0;
		manifest_job_where(m, job, own_seed ? "seed" : "name", &w);
		char *hint = xasprintf("give each job its own name (jobs[%zu] "
		    "is at line %d)", other->entry, other->line);
		size_t e = add_error(c, w.line, w.column, w.field, "LQ-MAN-009",
		    hint, "job name \"%s\" is used twice", job->name);
		free(hint);
		if (c->job_error[job->index] == 0)
			c->job_error[job->index] = e + 1;
		cJSON_Delete(job->config);
		job->config = NULL;
	}
	free(refs);
}

/* Seeds a mapping's `seeds` sequence lists; 0 without one. */
static size_t
seeds_count(const struct tree_node *map)
{
	const struct tree_node *s = map && map->kind == TREE_MAPPING ?
	    tree_map_get(map, "seeds", NULL) : NULL;
	return s && s->kind == TREE_SEQUENCE ? s->n : 0;
}

/*
 * Counts the jobs the entries expand into, from the tree alone, before any
 * entry is typed or copied: past MANIFEST_MAX_JOBS the manifest is refused
 * as a whole.  Returns 0 after adding the error.
 */
static int
check_job_count(struct ctx *c, const struct tree_node *jobs)
{
	const struct tree_node *d = c->m->defaults;
	size_t d_seeds = seeds_count(d) > 0 && !tree_map_get(d, "seed", NULL) ?
	    seeds_count(d) : 1;
	size_t total = 0;
	for (size_t i = 0; i < jobs->n; i++) {
		const struct tree_node *e = jobs->items[i];
		size_t n = 1;
		if (e->kind == TREE_MAPPING && seeds_count(e) > 0)
			n = seeds_count(e);
		else if (e->kind == TREE_MAPPING && !tree_map_get(e, "seed", NULL))
			n = d_seeds;
		if (n > MANIFEST_MAX_SEEDS)
			continue;	/* check_value names the seeds list */
		total += n;
		if (total > MANIFEST_MAX_JOBS) {
			char f[48];
			snprintf(f, sizeof(f), "jobs[%zu]", i);
			add_error(c, e->line, e->column, f, "LQ-MAN-015",
			    "split it into several manifests", "the manifest "
			    "expands into more than %u jobs (with its seeds); "
			    "that is the limit of one manifest "
			    "(latentq-manifest(5) LIMITS)", MANIFEST_MAX_JOBS);
			return 0;
		}
	}
	return 1;
}

static void
load_top(struct ctx *c, const struct tree_node *root, size_t *manifest_errors)
{
	static const char *const top[] = { "version", "defaults", "jobs" };
	struct manifest *m = c->m;
	const struct tree_node *jobs = NULL;

	if (root == NULL || (root->kind == TREE_SCALAR && root->type == TREE_NULL)) {
		add_error(c, root ? root->line : 1, root ? root->column : 1, NULL,
		    "LQ-MAN-006", "write jobs: [{prompt: ...}]",
		    "the manifest is empty: it needs a jobs list");
		return;
	}
	if (root->kind != TREE_MAPPING) {
		char *got = describe(root);
		add_error(c, root->line, root->column, NULL, "LQ-MAN-006",
		    "write version: 1, defaults: {...} and jobs: [...]",
		    "the top level must be a mapping, not %s", got);
		free(got);
		return;
	}
	unsigned char *dup = xcalloc(tree_map_size(root) + 1, 1);
	find_duplicates(c, root, "", dup);
	for (size_t i = 0; i < tree_map_size(root); i++) {
		const struct tree_node *key = root->items[2 * i];
		const struct tree_node *val = root->items[2 * i + 1];
		if (dup[i])
			continue;
		if (strcmp(key->text, "version") == 0) {
			int64_t v;
			if (val->kind != TREE_SCALAR || val->type != TREE_INT) {
				type_error(c, val, "version", MANIFEST_INT,
				    "write version: 1");
			} else if (tree_parse_i64(val->text, &v) != 0 || v != 1) {
				add_error(c, val->line, val->column, "version",
				    "LQ-MAN-007", "write version: 1",
				    "manifest version %s is not supported; this "
				    "latentq reads version 1", val->text);
			}
		} else if (strcmp(key->text, "defaults") == 0) {
			if (val->kind == TREE_SCALAR && val->type == TREE_NULL)
				continue;
			if (val->kind != TREE_MAPPING) {
				char *got = describe(val);
				add_error(c, val->line, val->column, "defaults",
				    "LQ-MAN-005", NULL,
				    "expected a mapping of job keys, got %s", got);
				free(got);
				continue;
			}
			m->defaults = val;
			check_map(c, val, keyset_jobs(), "defaults", 1,
			    &c->defaults);
		} else if (strcmp(key->text, "jobs") == 0) {
			jobs = val;
		} else {
			unknown_key(c, key, key->text, top, LQ_ARRAY_LEN(top));
		}
	}
	free(dup);
	if (jobs == NULL) {
		add_error(c, root->line, root->column, NULL, "LQ-MAN-006",
		    "write jobs: [{prompt: ...}]", "the manifest has no jobs list");
		return;
	}
	if (jobs->kind != TREE_SEQUENCE) {
		char *got = describe(jobs);
		add_error(c, jobs->line, jobs->column, "jobs", "LQ-MAN-005",
		    "write jobs: [{prompt: ...}]",
		    "expected a sequence of job entries, got %s", got);
		free(got);
		return;
	}
	if (jobs->n == 0) {
		add_error(c, jobs->line, jobs->column, "jobs", "LQ-MAN-006",
		    "write jobs: [{prompt: ...}]", "the jobs list is empty");
		return;
	}
	/*
	 * Errors so far (top level, defaults) are the manifest's: with bad
	 * defaults every job is suspect, so the manifest is refused; the
	 * entries are still checked so that all errors are reported at once.
	 */
	if (!check_job_count(c, jobs))
		return;
	*manifest_errors = m->n_errors;
	for (size_t i = 0; i < jobs->n; i++)
		load_entry(c, jobs->items[i], i);
	check_unique_names(c);
}

static char *
manifest_dir(const char *name)
{
	const char *slash = strrchr(name, '/');
	char *dir = slash ? (slash == name ? xstrdup("/") :
	    xstrndup(name, (size_t)(slash - name))) : xstrdup(".");
	char *real = realpath(dir, NULL);
	if (real) {
		free(dir);
		dir = xstrdup(real);
		free(real);
	}
	return dir;
}

static enum lq_status
finish(struct ctx *c, size_t manifest_errors, struct lq_error *err)
{
	struct manifest *m = c->m;
	for (size_t i = 0; i < m->n_jobs; i++)
		m->jobs[i].error = c->job_error && c->job_error[i] ?
		    &m->errors[c->job_error[i] - 1] : NULL;
	if (c->builtin) {
		for (size_t i = 0; i < manifest_key_count(); i++)
			cJSON_Delete(c->builtin[i]);
		free(c->builtin);
	}
	cJSON_Delete(c->defaults);
	free(c->job_error);
	if (m->n_errors == 0)
		return LQ_OK;
	if (err)
		*err = m->errors[0];
	return manifest_errors > 0 ? LQ_FAILED : LQ_WARN;
}

enum lq_status
manifest_load_buffer(const char *name, const char *text, size_t len,
    struct manifest **out, struct lq_error *err)
{
	struct manifest *m = xcalloc(1, sizeof(*m));
	struct ctx c = { .m = m };
	struct lq_error perr;

	*out = m;
	m->path = xstrdup(name);
	m->dir = manifest_dir(name);
	m->version = 1;
	digest_hex(text, len, m->digest);

	error_clear(&perr);
	if (len > MANIFEST_MAX_BYTES) {
		add_error(&c, 0, 0, NULL, "LQ-MAN-015", "split it into several "
		    "manifests", "the manifest is %zu bytes; the limit is %u "
		    "(latentq-manifest(5) LIMITS)", len, MANIFEST_MAX_BYTES);
		return finish(&c, 1, err);
	}
	if (tree_parse(name, text, len, &m->tree, &perr) != LQ_OK) {
		add_error(&c, perr.line, perr.column, perr.field[0] ? perr.field : NULL,
		    perr.code, NULL, "%s", perr.message);
		return finish(&c, 1, err);
	}
	c.builtin = xcalloc(manifest_key_count(), sizeof(*c.builtin));
	for (size_t i = 0; i < manifest_key_count(); i++)
		if (manifest_key_at(i)->def)
			c.builtin[i] = cJSON_Parse(manifest_key_at(i)->def);

	size_t manifest_errors = SIZE_MAX;	/* all, unless jobs are reached */
	load_top(&c, m->tree->root, &manifest_errors);
	if (manifest_errors == SIZE_MAX)
		manifest_errors = m->n_errors;
	return finish(&c, manifest_errors, err);
}

enum lq_status
manifest_load(const char *path, struct manifest **out, struct lq_error *err)
{
	size_t len;
	/* A pipe is fine (`submit <(generate)`): the user named it; reading
	 * stops at the byte limit. */
	FILE *fp = fopen(path, "rb");
	char *text = fp ? util_read_stream_max(fp, MANIFEST_MAX_BYTES, &len) :
	    NULL;
	int e = errno;
	if (fp)
		fclose(fp);
	if (text == NULL) {
		struct manifest *m = xcalloc(1, sizeof(*m));
		struct ctx c = { .m = m };
		*out = m;
		m->path = xstrdup(path);
		m->dir = manifest_dir(path);
		m->version = 1;
		if (e == EFBIG)
			add_error(&c, 0, 0, NULL, "LQ-MAN-015", "split it into "
			    "several manifests", "the manifest is larger than "
			    "%u bytes (latentq-manifest(5) LIMITS)",
			    MANIFEST_MAX_BYTES);
		else
			add_error(&c, 0, 0, NULL, "LQ-MAN-011", NULL,
			    "cannot read the manifest: %s", util_strerror(e));
		return finish(&c, 1, err);
	}
	enum lq_status st = manifest_load_buffer(path, text, len, out, err);
	free(text);
	return st;
}

void
manifest_free(struct manifest *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n_jobs; i++) {
		struct manifest_job *job = &m->jobs[i];
		if (job->owns_request)
			cJSON_Delete(job->request);
		cJSON_Delete(job->config);
		free(job->seed_field);
		free(job->name_owned);
	}
	free(m->jobs);
	free(m->errors);
	tree_free(m->tree);
	free(m->path);
	free(m->dir);
	free(m);
}

/* ---- typed reads ----------------------------------------------------- */

uint64_t
manifest_job_u64(const struct manifest_job *job, const char *key, uint64_t def)
{
	const cJSON *v = job->config ?
	    cJSON_GetObjectItemCaseSensitive(job->config, key) : NULL;
	uint64_t u;
	if (cJSON_IsString(v) && v->valuestring[0] != '\0' &&
	    strspn(v->valuestring, "0123456789") == strlen(v->valuestring) &&
	    tree_parse_u64(v->valuestring, &u) == 0)
		return u;
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble <= MAX_EXACT_INT &&
	    v->valuedouble == floor(v->valuedouble))
		return (uint64_t)v->valuedouble;
	return def;
}

int64_t
manifest_job_int(const struct manifest_job *job, const char *key, int64_t def)
{
	return job->config ? json_get_int(job->config, key, def) : def;
}

double
manifest_job_number(const struct manifest_job *job, const char *key, double def)
{
	return job->config ? json_get_number(job->config, key, def) : def;
}

const char *
manifest_job_string(const struct manifest_job *job, const char *key,
    const char *def)
{
	return job->config ? json_get_string(job->config, key, def) : def;
}

int
manifest_job_bool(const struct manifest_job *job, const char *key, int def)
{
	return job->config ? json_get_bool(job->config, key, def) : def;
}

/* ---- where a key was written ----------------------------------------- */

/*
 * Follows path ("mesh.devices", "loras[1].path") from node; appends the
 * walked components to field.  NULL if any component is missing.
 */
static const struct tree_node *
walk(const struct tree_node *node, const char *path, struct strbuf *field)
{
	const char *p = path;
	while (node && *p) {
		size_t n = strcspn(p, ".[");
		if (n > 0) {
			char *name = xstrndup(p, n);
			node = node->kind == TREE_MAPPING ?
			    tree_map_get(node, name, NULL) : NULL;
			strbuf_printf(field, ".%s", name);
			free(name);
			p += n;
		}
		while (node && *p == '[') {
			char *end;
			unsigned long long i = strtoull(p + 1, &end, 10);
			if (*end != ']' || node->kind != TREE_SEQUENCE ||
			    i >= node->n)
				return NULL;
			node = node->items[i];
			strbuf_printf(field, "[%llu]", i);
			p = end + 1;
		}
		if (*p == '.')
			p++;
		else if (*p != '\0')
			return NULL;
	}
	return node;
}

int
manifest_job_where(const struct manifest *m, const struct manifest_job *job,
    const char *key, struct manifest_where *out)
{
	memset(out, 0, sizeof(*out));
	out->line = job->line;
	out->column = job->column;
	snprintf(out->field, sizeof(out->field), "jobs[%zu]", job->entry);

	const struct tree_node *found = NULL;
	struct strbuf field = { 0 };
	if (strcmp(key, "seed") == 0 && job->seed_node) {
		found = job->seed_node;
		strbuf_printf(&field, "%s", job->seed_field);
	}
	if (found == NULL && job->node && job->node->kind == TREE_MAPPING) {
		strbuf_printf(&field, "jobs[%zu]", job->entry);
		found = walk(job->node, key, &field);
	}
	int seed_in_entry = job->node && (tree_map_get(job->node, "seed", NULL) ||
	    tree_map_get(job->node, "seeds", NULL));
	int is_seed_key = strcmp(key, "seed") == 0 ||
	    strcmp(key, "seeds") == 0 || strncmp(key, "seeds[", 6) == 0;
	if (found == NULL && m->defaults && !(is_seed_key && seed_in_entry) &&
	    strcmp(key, "name") != 0) {
		free(field.buf);
		memset(&field, 0, sizeof(field));
		strbuf_printf(&field, "defaults");
		found = walk(m->defaults, key, &field);
	}
	if (found) {
		out->written = 1;
		out->line = found->line;
		out->column = found->column;
		snprintf(out->field, sizeof(out->field), "%s", field.buf);
		out->text = found->kind == TREE_SCALAR ? found->text : NULL;
	}
	free(field.buf);
	return out->written;
}

void
manifest_job_error_at(const struct manifest *m, const struct manifest_job *job,
    const char *key, struct lq_error *err)
{
	struct manifest_where w;
	if (err == NULL)
		return;
	manifest_job_where(m, job, key, &w);
	error_set_where(err, m->path, w.line, w.column);
	error_set_field(err, "%s", w.field);
}
