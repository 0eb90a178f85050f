/*
 * lora.c — LoRA key forms, pairing, PEFT scaling, checks and CPU fusing
 * (see lora.h for the rules and their upstream sources).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "model/lora.h"

struct problems {
	char **v;
	size_t n;
	char code[24];
	char field[128];
};

static void
problem(struct problems *p, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
problem(struct problems *p, const char *code, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->n == 0) {
		snprintf(p->code, sizeof(p->code), "%s", code);
		snprintf(p->field, sizeof(p->field), "%s", field);
	}
	p->v = xrealloc(p->v, (p->n + 1) * sizeof(char *));
	p->v[p->n++] = xstrdup(msg);
}

static enum lq_status
problems_to_error(struct problems *p, const char *path, struct lq_error *err)
{
	if (p->n == 0)
		return LQ_OK;
	if (err) {
		if (p->n == 1)
			error_set(err, LQ_FAILED, p->code, "%s", p->v[0]);
		else
			error_set(err, LQ_FAILED, p->code, "%s (and %zu more problems)", p->v[0],
			    p->n - 1);
		error_set_where(err, path, 0, 0);
		error_set_field(err, "%s", p->field);
	}
	return LQ_FAILED;
}

static void
problems_free(struct problems *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = 0;
}

static int
starts(const char *s, const char *pre)
{
	return strncmp(s, pre, strlen(pre)) == 0;
}

static int
ends(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Replaces every `from` by `to` in a fresh string. */
static char *
replace_all(const char *s, const char *from, const char *to)
{
	struct strbuf sb = {0};
	size_t fl = strlen(from);
	const char *p;
	while ((p = strstr(s, from)) != NULL) {
		strbuf_append(&sb, s, (size_t)(p - s));
		strbuf_append(&sb, to, strlen(to));
		s = p + fl;
	}
	strbuf_append(&sb, s, strlen(s));
	return strbuf_release(&sb);
}

/* Original LTX-Video module names -> diffusers (upstream rename_dict). */
static char *
rename_original(const char *m)
{
	static const char *map[][2] = {
		{"patchify_proj", "proj_in"}, {"adaln_single", "time_embed"},
		{"q_norm", "norm_q"}, {"k_norm", "norm_k"},
	};
	char *cur = xstrdup(m);
	for (size_t i = 0; i < LQ_ARRAY_LEN(map); i++) {
		char *next = replace_all(cur, map[i][0], map[i][1]);
		free(cur);
		cur = next;
	}
	return cur;
}

struct entry {
	char *module;
	const struct st_tensor *A, *B, *alpha;
	const char *a_key, *b_key;
};

struct meta {
	int have_alpha, have_r, use_rslora;
	double alpha;
	int r;
	const cJSON *alpha_pattern, *rank_pattern;
	cJSON *root;
};

/* A value from the diffusers metadata: "transformer.<key>" or "<key>". */
static const cJSON *
meta_get(const cJSON *root, const char *key)
{
	char k[96];
	snprintf(k, sizeof(k), "transformer.%s", key);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, k);
	if (v == NULL)
		v = cJSON_GetObjectItemCaseSensitive(root, key);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "transformer");
	if (v == NULL && cJSON_IsObject(t))
		v = cJSON_GetObjectItemCaseSensitive(t, key);
	return v;
}

/* PEFT pattern: key equals the module or a dotted suffix of it. */
static const cJSON *
pattern_match(const cJSON *pat, const char *module)
{
	const cJSON *e;
	if (!cJSON_IsObject(pat))
		return NULL;
	cJSON_ArrayForEach(e, pat) {
		size_t n = strlen(module), m = strlen(e->string);
		if (strcmp(module, e->string) == 0 ||
		    (n > m && module[n - m - 1] == '.' && strcmp(module + n - m, e->string) == 0))
			return e;
	}
	return NULL;
}

static void
meta_read(const struct st_file *f, struct meta *m, struct problems *pr)
{
	memset(m, 0, sizeof(*m));
	const char *j = st_file_metadata(f, "lora_adapter_metadata");
	if (j != NULL) {
		m->root = cJSON_Parse(j);
		if (!cJSON_IsObject(m->root)) {
			problem(pr, "LQ-LORA-007", "lora_adapter_metadata",
			    "metadata lora_adapter_metadata is not a JSON object");
			cJSON_Delete(m->root);
			m->root = NULL;
		}
	}
	if (m->root) {
		const cJSON *v = meta_get(m->root, "lora_alpha");
		if (cJSON_IsNumber(v)) {
			m->have_alpha = 1;
			m->alpha = v->valuedouble;
		}
		v = meta_get(m->root, "r");
		if (cJSON_IsNumber(v) && v->valuedouble >= 1) {
			m->have_r = 1;
			m->r = (int)v->valuedouble;
		}
		m->use_rslora = cJSON_IsTrue(meta_get(m->root, "use_rslora"));
		m->alpha_pattern = meta_get(m->root, "alpha_pattern");
		m->rank_pattern = meta_get(m->root, "rank_pattern");
	}
	if (!m->have_alpha) {
		const char *s = st_file_metadata(f, "lora_alpha");
		if (s == NULL)
			s = st_file_metadata(f, "ss_network_alpha");
		if (s != NULL) {
			char *end;
			double a = strtod(s, &end);
			if (end == s || *end != '\0' || !isfinite(a))
				problem(pr, "LQ-LORA-007", "lora_alpha",
				    "metadata alpha \"%.40s\" is not a number", s);
			else {
				m->have_alpha = 1;
				m->alpha = a;
			}
		}
	}
}

static int
cmp_pair(const void *a, const void *b)
{
	return strcmp(((const struct lora_pair *)a)->weight,
	    ((const struct lora_pair *)b)->weight);
}

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->module, ((const struct entry *)b)->module);
}

void
lora_free(struct lora *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n; i++) {
		free(l->pairs[i].module);
		free(l->pairs[i].weight);
	}
	free(l->pairs);
	st_file_close(l->file);
	free(l->path);
	free(l);
}

enum lq_status
lora_open(const char *path, struct lora **out, struct lq_error *err)
{
	*out = NULL;
	struct st_file *f;
	struct lq_error e2;
	error_clear(&e2);
	if (st_file_open(path, &f, &e2) != LQ_OK) {
		if (err) {
			error_set(err, LQ_FAILED, "LQ-LORA-001", "%s [%s]", e2.message, e2.code);
			error_set_where(err, path, 0, 0);
			error_set_field(err, "%s", e2.field);
		}
		return LQ_FAILED;
	}
	struct problems pr = {0};
	struct meta meta;
	meta_read(f, &meta, &pr);
	size_t n = st_file_count(f);
	struct entry *ents = xcalloc(n ? n : 1, sizeof(*ents));
	size_t ne = 0;
	for (size_t i = 0; i < n; i++) {
		const struct st_tensor *t = st_file_tensor(f, i);
		const char *k = t->name;
		int original = 0;
		if (starts(k, "transformer.")) {
			k += strlen("transformer.");
		} else if (starts(k, "base_model.model.")) {
			k += strlen("base_model.model.");
		} else if (starts(k, "diffusion_model.")) {
			k += strlen("diffusion_model.");
			original = 1;
		} else if (starts(k, "text_encoder.") || starts(k, "text_encoder_2.")) {
			problem(&pr, "LQ-LORA-004", t->name,
			    "\"%s\": text encoder LoRAs are not supported (transformer only)", t->name);
			continue;
		}
		static const struct {
			const char *suffix;
			int kind;	/* 0 A, 1 B, 2 alpha */
		} forms[] = {
			{".lora_A.weight", 0}, {".lora_B.weight", 1}, {".lora_down.weight", 0},
			{".lora_up.weight", 1}, {".alpha", 2},
		};
		int kind = -1;
		size_t cut = 0;
		for (size_t s = 0; s < LQ_ARRAY_LEN(forms); s++) {
			if (ends(k, forms[s].suffix)) {
				kind = forms[s].kind;
				cut = strlen(forms[s].suffix);
				break;
			}
		}
		if (kind < 0 || strlen(k) == cut) {
			problem(&pr, "LQ-LORA-004", t->name,
			    "\"%s\" is not a LoRA tensor of an accepted form "
			    "(<module>.lora_A.weight / .lora_B.weight / .alpha%s)", t->name,
			    strstr(k, "dora") || strstr(k, "magnitude") ? "; DoRA is not supported" : "");
			continue;
		}
		char *module = xstrndup(k, strlen(k) - cut);
		if (original) {
			char *r = rename_original(module);
			free(module);
			module = r;
		}
		size_t j;
		for (j = 0; j < ne; j++)
			if (strcmp(ents[j].module, module) == 0)
				break;
		if (j == ne) {
			ents[ne].module = module;
			ne++;
		} else {
			free(module);
		}
		const struct st_tensor **slot = kind == 0 ? &ents[j].A : kind == 1 ? &ents[j].B
		    : &ents[j].alpha;
		if (*slot != NULL) {
			problem(&pr, "LQ-LORA-004", t->name,
			    "\"%s\" and \"%s\" give the same LoRA tensor of module %s",
			    (*slot)->name, t->name, ents[j].module);
			continue;
		}
		*slot = t;
	}
	qsort(ents, ne, sizeof(*ents), cmp_entry);
	struct lora *l = xcalloc(1, sizeof(*l));
	l->path = xstrdup(path);
	l->file = f;
	l->pairs = xcalloc(ne ? ne : 1, sizeof(*l->pairs));
	for (size_t j = 0; j < ne; j++) {
		struct entry *e = &ents[j];
		if (e->A == NULL || e->B == NULL) {
			const struct st_tensor *have = e->A ? e->A : e->B ? e->B : e->alpha;
			problem(&pr, "LQ-LORA-002", have->name, "module %s has %s but no %s",
			    e->module, e->A ? "lora_A" : e->B ? "lora_B" : "an alpha",
			    e->A ? "lora_B" : "lora_A");
			continue;
		}
		if (e->A->ndim < 2 || e->B->ndim < 2 || e->A->shape[0] != e->B->shape[1]) {
			problem(&pr, "LQ-LORA-003", e->A->name,
			    "module %s: lora_A has %lld rows but lora_B %lld columns (ranks must agree)",
			    e->module, (long long)(e->A->ndim ? e->A->shape[0] : 0),
			    (long long)(e->B->ndim > 1 ? e->B->shape[1] : 0));
			continue;
		}
		int rank = (int)e->A->shape[0];
		const cJSON *rp = pattern_match(meta.rank_pattern, e->module);
		int want_r = cJSON_IsNumber(rp) ? (int)rp->valuedouble : meta.have_r ? meta.r : rank;
		if (want_r != rank) {
			problem(&pr, "LQ-LORA-003", e->A->name,
			    "module %s: rank %d in the tensors but r = %d in the metadata",
			    e->module, rank, want_r);
			continue;
		}
		double alpha = rank;
		if (e->alpha != NULL) {
			if (st_tensor_numel(e->alpha) != 1 ||
			    (e->alpha->dtype != ST_F32 && e->alpha->dtype != ST_F16 &&
			    e->alpha->dtype != ST_BF16 && e->alpha->dtype != ST_F64)) {
				problem(&pr, "LQ-LORA-007", e->alpha->name,
				    "%s must be one float", e->alpha->name);
				continue;
			}
			float *v = st_tensor_to_f32(e->alpha);
			alpha = v[0];
			free(v);
		} else {
			const cJSON *ap = pattern_match(meta.alpha_pattern, e->module);
			if (cJSON_IsNumber(ap))
				alpha = ap->valuedouble;
			else if (meta.have_alpha)
				alpha = meta.alpha;
		}
		if (!isfinite(alpha)) {
			problem(&pr, "LQ-LORA-007", e->module, "module %s: alpha is not finite",
			    e->module);
			continue;
		}
		struct lora_pair *p = &l->pairs[l->n++];
		p->module = xstrdup(e->module);
		p->weight = xasprintf("%s.weight", e->module);
		p->A = e->A;
		p->B = e->B;
		p->rank = rank;
		p->alpha = alpha;
		p->scaling = meta.use_rslora ? alpha / sqrt((double)rank) : alpha / rank;
	}
	for (size_t j = 0; j < ne; j++)
		free(ents[j].module);
	free(ents);
	cJSON_Delete(meta.root);
	qsort(l->pairs, l->n, sizeof(*l->pairs), cmp_pair);
	if (problems_to_error(&pr, path, err) != LQ_OK) {
		problems_free(&pr);
		lora_free(l);
		return LQ_FAILED;
	}
	*out = l;
	return LQ_OK;
}

const struct lora_pair *
lora_find(const struct lora *l, const char *weight_name)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(weight_name, l->pairs[mid].weight);
		if (c == 0)
			return &l->pairs[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

enum lq_status
lora_check(const struct lora *l, const struct tensor_table *base, char ***problems_out,
    size_t *nproblems, struct lq_error *err)
{
	struct problems pr = {0};
	for (size_t i = 0; i < l->n; i++) {
		const struct lora_pair *p = &l->pairs[i];
		const struct tensor_spec *s = tensor_table_find(base, p->weight);
		if (s == NULL) {
			problem(&pr, "LQ-LORA-005", p->module,
			    "LoRA module %s matches no weight of the model (no %s)", p->module,
			    p->weight);
			continue;
		}
		if (s->ndim != 2 || p->A->ndim != 2 || p->B->ndim != 2 ||
		    p->A->shape[1] != s->shape[1] || p->B->shape[0] != s->shape[0]) {
			problem(&pr, "LQ-LORA-006", p->module,
			    "LoRA module %s: lora_B [%lld, %d] @ lora_A [%d, %lld] does not fit "
			    "%s [%lld, %lld]", p->module, (long long)p->B->shape[0], p->rank,
			    p->rank, (long long)(p->A->ndim > 1 ? p->A->shape[1] : 0), p->weight,
			    (long long)s->shape[0], (long long)(s->ndim > 1 ? s->shape[1] : 0));
		}
	}
	enum lq_status rc = problems_to_error(&pr, l->path, err);
	if (problems_out) {
		*problems_out = pr.v;
		*nproblems = pr.n;
	} else {
		problems_free(&pr);
	}
	return rc;
}

void
lora_fuse_pair(const struct lora_pair *p, double user_scale, float *w, int64_t out, int64_t in)
{
	LQ_ASSERT(p->B->shape[0] == out && p->A->shape[1] == in);
	int64_t r = p->rank;
	float *A = st_tensor_to_f32(p->A), *B = st_tensor_to_f32(p->B);
	double *acc = xmalloc((size_t)in * sizeof(double));
	double s = user_scale * p->scaling;
	for (int64_t o = 0; o < out; o++) {
		memset(acc, 0, (size_t)in * sizeof(double));
		for (int64_t k = 0; k < r; k++) {
			double b = B[o * r + k];
			const float *a = A + k * in;
			for (int64_t i = 0; i < in; i++)
				acc[i] += b * a[i];
		}
		float *row = w + o * in;
		for (int64_t i = 0; i < in; i++)
			row[i] = (float)((double)row[i] + s * acc[i]);
	}
	free(acc);
	free(A);
	free(B);
}

int
lora_fuse_weight(struct lora *const *loras, const double *scales, size_t n,
    const char *weight_name, float *w, int64_t out, int64_t in)
{
	int fused = 0;
	for (size_t i = 0; i < n; i++) {
		const struct lora_pair *p = lora_find(loras[i], weight_name);
		if (p != NULL) {
			lora_fuse_pair(p, scales[i], w, out, in);
			fused++;
		}
	}
	return fused;
}
