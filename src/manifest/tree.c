/*
 * tree.c — YAML text to a node tree with positions (see tree.h), through
 * libyaml's event parser.  libyaml's own document loader is not used because
 * it expands nothing lazily and keeps no count of what aliases stand for;
 * here an alias is a shared pointer whose expanded size is counted.
 */
#include <errno.h>
#include <string.h>
#include <yaml.h>

#include "core/util.h"
#include "manifest/tree.h"

/* Nesting deeper than this is refused (later passes recurse). */
#define TREE_MAX_DEPTH 64

struct anchor {
	char *name;
	struct tree_node *node;
	struct anchor *next;
};

struct builder {
	struct tree *tree;
	const char *name;
	struct tree_node *stack[TREE_MAX_DEPTH + 1];
	int depth;
	struct anchor **buckets;
	size_t n_buckets, n_anchors;
	size_t alias_nodes;		/* nodes aliases stand for, so far */
	struct lq_error *err;
};

static size_t
sat_add(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t
hash_str(const char *s)
{
	size_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static struct tree_node *
node_new(struct builder *b, enum tree_kind kind, const yaml_mark_t *mark)
{
	struct tree *t = b->tree;
	struct tree_node *n = xcalloc(1, sizeof(*n));
	n->kind = kind;
	n->line = (int)mark->line + 1;
	n->column = (int)mark->column + 1;
	n->weight = 1;
	if (t->n_arena == t->cap_arena) {
		t->cap_arena = t->cap_arena ? 2 * t->cap_arena : 256;
		t->arena = xrealloc(t->arena, t->cap_arena * sizeof(*t->arena));
	}
	t->arena[t->n_arena++] = n;
	return n;
}

static void
node_push_item(struct tree_node *parent, struct tree_node *child)
{
	if (parent->n == parent->cap) {
		parent->cap = parent->cap ? 2 * parent->cap : 8;
		parent->items = xrealloc(parent->items,
		    parent->cap * sizeof(*parent->items));
	}
	parent->items[parent->n++] = child;
}

static int
is_any(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static int
is_int_text(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		const char *digits = s[1] == 'x' ? "0123456789abcdefABCDEF" : "01234567";
		s += 2;
		if (*s == '\0')
			return 0;
		return s[strspn(s, digits)] == '\0';
	}
	if (*s == '\0')
		return 0;
	return s[strspn(s, "0123456789")] == '\0';
}

static int
is_float_text(const char *s)
{
	static const char *const special[] = {
		".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
		"-.Inf", "-.INF", ".nan", ".NaN", ".NAN", NULL,
	};
	if (is_any(s, special))
		return 1;
	if (*s == '-' || *s == '+')
		s++;
	size_t int_digits = strspn(s, "0123456789");
	s += int_digits;
	size_t frac_digits = 0;
	if (*s == '.') {
		s++;
		frac_digits = strspn(s, "0123456789");
		s += frac_digits;
	}
	if (int_digits + frac_digits == 0)
		return 0;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		size_t e = strspn(s, "0123456789");
		if (e == 0)
			return 0;
		s += e;
	}
	return *s == '\0';
}

/* YAML 1.2 core schema resolution of a plain scalar. */
static enum tree_scalar_type
resolve_plain(const char *s, size_t len)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const bools[] = {
		"true", "True", "TRUE", "false", "False", "FALSE", NULL,
	};
	if (strlen(s) != len)	/* embedded NUL: only a string */
		return TREE_STRING;
	if (is_any(s, nulls))
		return TREE_NULL;
	if (is_any(s, bools))
		return TREE_BOOL;
	if (is_int_text(s))
		return TREE_INT;
	if (is_float_text(s))
		return TREE_FLOAT;
	return TREE_STRING;
}

static enum lq_status
fail_at(struct builder *b, const yaml_mark_t *mark, const char *code,
    const char *fmt, const char *arg)
{
	error_set(b->err, LQ_FAILED, code, fmt, arg);
	error_set_where(b->err, b->name, (int)mark->line + 1,
	    (int)mark->column + 1);
	return LQ_FAILED;
}

static void
anchor_add(struct builder *b, const char *name, struct tree_node *node)
{
	if (b->buckets == NULL) {
		b->n_buckets = 256;
		b->buckets = xcalloc(b->n_buckets, sizeof(*b->buckets));
	}
	size_t h = hash_str(name) % b->n_buckets;
	/* A redefined anchor replaces the older one for later aliases. */
	for (struct anchor *a = b->buckets[h]; a; a = a->next)
		if (strcmp(a->name, name) == 0) {
			a->node = node;
			return;
		}
	struct anchor *a = xcalloc(1, sizeof(*a));
	a->name = xstrdup(name);
	a->node = node;
	a->next = b->buckets[h];
	b->buckets[h] = a;
	if (++b->n_anchors > 2 * b->n_buckets) {	/* grow: keep chains short */
		size_t n = 4 * b->n_buckets;
		struct anchor **nb = xcalloc(n, sizeof(*nb));
		for (size_t i = 0; i < b->n_buckets; i++)
			for (struct anchor *x = b->buckets[i], *next; x; x = next) {
				next = x->next;
				size_t j = hash_str(x->name) % n;
				x->next = nb[j];
				nb[j] = x;
			}
		free(b->buckets);
		b->buckets = nb;
		b->n_buckets = n;
	}
}

static struct tree_node *
anchor_find(struct builder *b, const char *name)
{
	if (b->buckets == NULL)
		return NULL;
	for (struct anchor *a = b->buckets[hash_str(name) % b->n_buckets]; a;
	    a = a->next)
		if (strcmp(a->name, name) == 0)
			return a->node;
	return NULL;
}

static void
anchors_free(struct builder *b)
{
	for (size_t i = 0; i < b->n_buckets; i++) {
		struct anchor *a = b->buckets[i];
		while (a) {
			struct anchor *next = a->next;
			free(a->name);
			free(a);
			a = next;
		}
	}
	free(b->buckets);
}

/*
 * Attaches a complete node to the open container (or makes it the root).
 * Mapping keys must be scalars.
 */
static enum lq_status
attach(struct builder *b, struct tree_node *node, const yaml_mark_t *mark)
{
	if (b->depth == 0) {
		b->tree->root = node;
		return LQ_OK;
	}
	struct tree_node *parent = b->stack[b->depth - 1];
	if (parent->kind == TREE_MAPPING && parent->n % 2 == 0 &&
	    node->kind != TREE_SCALAR)
		return fail_at(b, mark, "LQ-MAN-006",
		    "mapping keys must be scalars, not %s", tree_kind_name(node));
	if (node->height + b->depth >= TREE_MAX_DEPTH)	/* an alias nests deeper */
		return fail_at(b, mark, "LQ-MAN-006",
		    "nesting deeper than %s levels (aliases expanded)", "64");
	node_push_item(parent, node);
	parent->weight = sat_add(parent->weight, node->weight);
	if (parent->height < node->height + 1)
		parent->height = node->height + 1;
	return LQ_OK;
}

static void
set_parser_error(struct builder *b, yaml_parser_t *p, const char *text,
    size_t len)
{
	int line = (int)p->problem_mark.line + 1;
	int column = (int)p->problem_mark.column + 1;
	if (p->error == YAML_READER_ERROR || p->error == YAML_MEMORY_ERROR) {
		/* The reader reports a byte offset only. */
		line = 1;
		column = 1;
		for (size_t i = 0; i < p->problem_offset && i < len; i++) {
			if (text[i] == '\n') {
				line++;
				column = 1;
			} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
				column++;
			}
		}
	}
	if (p->error == YAML_READER_ERROR && p->problem_value != -1)
		error_set(b->err, LQ_FAILED, "LQ-MAN-001",
		    "YAML syntax error: %s (byte 0x%02x)",
		    p->problem ? p->problem : "unreadable input",
		    (unsigned)p->problem_value & 0xff);
	else if (p->context != NULL)
		error_set(b->err, LQ_FAILED, "LQ-MAN-001",
		    "YAML syntax error: %s %s (from line %d)", p->problem,
		    p->context, (int)p->context_mark.line + 1);
	else
		error_set(b->err, LQ_FAILED, "LQ-MAN-001",
		    "YAML syntax error: %s",
		    p->problem ? p->problem : "unreadable input");
	error_set_where(b->err, b->name, line, column);
}

static enum lq_status
handle_event(struct builder *b, yaml_event_t *ev, int *documents, int *done)
{
	struct tree_node *node;
	const char *anchor = NULL;

	switch (ev->type) {
	case YAML_STREAM_START_EVENT:
	case YAML_DOCUMENT_END_EVENT:
	case YAML_NO_EVENT:
		return LQ_OK;
	case YAML_STREAM_END_EVENT:
		*done = 1;
		return LQ_OK;
	case YAML_DOCUMENT_START_EVENT:
		if (++*documents > 1)
			return fail_at(b, &ev->start_mark, "LQ-MAN-014",
			    "a manifest is one YAML document; found a second%s",
			    " (\"---\")");
		return LQ_OK;
	case YAML_ALIAS_EVENT: {
		const char *name = (const char *)ev->data.alias.anchor;
		node = anchor_find(b, name);
		if (node == NULL)
			return fail_at(b, &ev->start_mark, "LQ-MAN-002",
			    "alias *%s names no complete anchor before it", name);
		b->alias_nodes = sat_add(b->alias_nodes, node->weight);
		if (b->alias_nodes > TREE_MAX_ALIAS_NODES) {
			fail_at(b, &ev->start_mark, "LQ-MAN-002",
			    "aliases expand to too many nodes (more than 1000000) "
			    "at *%s; is this a \"billion laughs\" document?", name);
			return LQ_FAILED;
		}
		return attach(b, node, &ev->start_mark);
	}
	case YAML_SCALAR_EVENT: {
		node = node_new(b, TREE_SCALAR, &ev->start_mark);
		node->len = ev->data.scalar.length;
		node->text = xstrndup((const char *)ev->data.scalar.value,
		    node->len);
		/* xstrndup stops at NUL; keep embedded NULs' length honest. */
		if (strlen(node->text) != node->len) {
			free(node->text);
			node->text = xmalloc(node->len + 1);
			memcpy(node->text, ev->data.scalar.value, node->len);
			node->text[node->len] = '\0';
		}
		const char *tag = (const char *)ev->data.scalar.tag;
		node->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE &&
		    ev->data.scalar.style != YAML_ANY_SCALAR_STYLE;
		if (node->quoted || (tag && strcmp(tag, YAML_STR_TAG) == 0))
			node->type = TREE_STRING;
		else
			node->type = resolve_plain(node->text, node->len);
		anchor = (const char *)ev->data.scalar.anchor;
		if (attach(b, node, &ev->start_mark) != LQ_OK)
			return LQ_FAILED;
		if (anchor)
			anchor_add(b, anchor, node);
		return LQ_OK;
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		int is_seq = ev->type == YAML_SEQUENCE_START_EVENT;
		if (b->depth == TREE_MAX_DEPTH)
			return fail_at(b, &ev->start_mark, "LQ-MAN-006",
			    "nesting deeper than %s levels", "64");
		if (b->depth > 0) {
			struct tree_node *parent = b->stack[b->depth - 1];
			if (parent->kind == TREE_MAPPING && parent->n % 2 == 0)
				return fail_at(b, &ev->start_mark, "LQ-MAN-006",
				    "mapping keys must be scalars, not %s",
				    is_seq ? "a sequence" : "a mapping");
		}
		node = node_new(b, is_seq ? TREE_SEQUENCE : TREE_MAPPING,
		    &ev->start_mark);
		/* The anchor is registered at the end event: no self-reference. */
		anchor = is_seq ? (const char *)ev->data.sequence_start.anchor :
		    (const char *)ev->data.mapping_start.anchor;
		node->text = anchor ? xstrdup(anchor) : NULL;
		b->stack[b->depth++] = node;
		return LQ_OK;
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: {
		LQ_ASSERT(b->depth > 0);
		node = b->stack[--b->depth];
		if (attach(b, node, &ev->start_mark) != LQ_OK)
			return LQ_FAILED;
		if (node->text) {	/* the pending anchor name */
			anchor_add(b, node->text, node);
			free(node->text);
			node->text = NULL;
		}
		return LQ_OK;
	}
	}
	return LQ_OK;
}

enum lq_status
tree_parse(const char *name, const char *text, size_t len, struct tree **out,
    struct lq_error *err)
{
	yaml_parser_t parser;
	struct builder b = { .name = name, .err = err };
	int documents = 0, done = 0;
	enum lq_status st = LQ_OK;

	*out = NULL;
	b.tree = xcalloc(1, sizeof(*b.tree));
	if (!yaml_parser_initialize(&parser)) {
		fprintf(stderr, "latentq: yaml_parser_initialize failed: out of memory\n");
		exit(70);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (!done && st == LQ_OK) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev)) {
			set_parser_error(&b, &parser, text, len);
			st = LQ_FAILED;
			break;
		}
		st = handle_event(&b, &ev, &documents, &done);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	anchors_free(&b);
	if (st != LQ_OK) {
		/* Open containers hold a pending anchor name in text. */
		for (int i = 0; i < b.depth; i++) {
			free(b.stack[i]->text);
			b.stack[i]->text = NULL;
		}
		tree_free(b.tree);
		return st;
	}
	*out = b.tree;
	return LQ_OK;
}

void
tree_free(struct tree *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n_arena; i++) {
		free(t->arena[i]->text);
		free(t->arena[i]->items);
		free(t->arena[i]);
	}
	free(t->arena);
	free(t);
}

struct tree_node *
tree_map_get(const struct tree_node *m, const char *key,
    struct tree_node **key_node)
{
	if (m == NULL || m->kind != TREE_MAPPING)
		return NULL;
	for (size_t i = 0; i + 1 < m->n; i += 2)
		if (strcmp(m->items[i]->text, key) == 0) {
			if (key_node)
				*key_node = m->items[i];
			return m->items[i + 1];
		}
	return NULL;
}

const char *
tree_kind_name(const struct tree_node *node)
{
	switch (node->kind) {
	case TREE_SEQUENCE:
		return "a sequence";
	case TREE_MAPPING:
		return "a mapping";
	case TREE_SCALAR:
		break;
	}
	switch (node->type) {
	case TREE_NULL:
		return "null";
	case TREE_BOOL:
		return "a boolean";
	case TREE_INT:
		return "an integer";
	case TREE_FLOAT:
		return "a number";
	case TREE_STRING:
		break;
	}
	return "a string";
}

int
tree_parse_u64(const char *s, uint64_t *v)
{
	unsigned base = 10;
	uint64_t r = 0;
	if (*s == '+')
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		base = s[1] == 'x' ? 16 : 8;
		s += 2;
	}
	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -1;
		if (d >= base)
			return -1;
		if (r > (UINT64_MAX - d) / base)
			return -2;
		r = r * base + d;
	}
	*v = r;
	return 0;
}

int
tree_parse_i64(const char *s, int64_t *v)
{
	int neg = *s == '-';
	uint64_t u;
	int rc = tree_parse_u64(s + (neg || *s == '+'), &u);
	if (rc != 0)
		return rc;
	if (s[neg || *s == '+'] == '+' || s[neg || *s == '+'] == '-')
		return -1;
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return -2;
		*v = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
	} else {
		if (u > (uint64_t)INT64_MAX)
			return -2;
		*v = (int64_t)u;
	}
	return 0;
}
