/*
 * tree.h — private to src/manifest/: a YAML document as a tree of nodes with
 * their source positions, built from libyaml's event parser.
 *
 * Aliases are not copied: an alias node becomes a pointer to its anchor's
 * node, so a node may have several parents.  The number of nodes an alias
 * stands for (its anchor's expanded size) is added to a running count, and
 * the parse is refused when that count passes TREE_MAX_ALIAS_NODES: a
 * "billion laughs" document is refused after a few thousand events instead
 * of expanding.  Nesting, aliases expanded, is limited to 64 levels so that
 * later passes may recurse.  Anchors are registered when their node is complete, so a
 * node cannot contain an alias to itself (no cycles).
 *
 * Ownership: every node belongs to the tree's arena and is released by
 * tree_free(); node pointers stay valid until then.
 */
#ifndef LQ_MANIFEST_TREE_H
#define LQ_MANIFEST_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* Nodes that aliases may expand into, in total, per document. */
#define TREE_MAX_ALIAS_NODES 1000000u

enum tree_kind { TREE_SCALAR, TREE_SEQUENCE, TREE_MAPPING };

/* The YAML 1.2 core-schema type of a scalar (quoted scalars are strings). */
enum tree_scalar_type {
	TREE_NULL, TREE_BOOL, TREE_INT, TREE_FLOAT, TREE_STRING,
};

struct tree_node {
	enum tree_kind kind;
	int line, column;		/* 1-based start of the node */
	/* scalar */
	char *text;			/* as written (after YAML unescaping) */
	size_t len;
	enum tree_scalar_type type;
	int quoted;			/* written with quotes or as a block */
	/* sequence: items[0..n); mapping: items[2i] key, items[2i+1] value */
	struct tree_node **items;
	size_t n, cap;
	size_t weight;			/* nodes in the subtree, aliases expanded (saturating) */
	int height;			/* levels below it, aliases expanded (0: scalar) */
};

struct tree {
	struct tree_node *root;		/* NULL for an empty document */
	struct tree_node **arena;
	size_t n_arena, cap_arena;
};

/*
 * Parses `len` bytes of YAML (or JSON) named `name` (for messages) into *out.
 * Exactly one document is read; a stream of several is refused.  On error
 * fills err (LQ-MAN-001 syntax, LQ-MAN-002 alias limit or unknown anchor,
 * LQ-MAN-006 non-scalar key, LQ-MAN-014 several documents) with
 * file:line:column and returns LQ_FAILED; *out is then NULL.  The caller
 * frees the tree with tree_free().
 */
enum lq_status tree_parse(const char *name, const char *text, size_t len,
    struct tree **out, struct lq_error *err);
void tree_free(struct tree *t);

/* Number of key/value pairs of a mapping node. */
static inline size_t tree_map_size(const struct tree_node *m) { return m->n / 2; }

/* Value of `key` in mapping m (first match), or NULL; *key_node gets the key. */
struct tree_node *tree_map_get(const struct tree_node *m, const char *key,
    struct tree_node **key_node);

/* Human name of a node's type for messages: "a mapping", "the integer 512"... */
const char *tree_kind_name(const struct tree_node *node);

/*
 * Parses a plain or quoted decimal (or 0x hex, 0o octal) integer scalar
 * exactly.  Returns 0 and sets *v on success, -1 if not an integer, -2 on
 * overflow.
 */
int tree_parse_u64(const char *text, uint64_t *v);
int tree_parse_i64(const char *text, int64_t *v);

#endif
