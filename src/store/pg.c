/*
 * pg.c — the PostgreSQL driver behind the store's statement functions
 * (store-int.h), through libpq, so that many hosts drain one queue.
 *
 * SQL arrives in the store's shared dialect and is rewritten here only
 * where PostgreSQL spells it otherwise: `?` and `?N` placeholders become
 * `$N` (outside quoted literals and identifiers).  Statements run with
 * PQexecParams, one round trip per step-to-result; the store's cached
 * statements (the hot path: claim, lease renewal, checkpoint writes) are
 * server-side prepared statements instead, PQprepare'd on a connection's
 * first use with the types of that use's bindings and then run with
 * PQexecPrepared (parsed and planned once per connection, not per call).
 * Parameters are typed by their binding (int8, float8, text; bytea in
 * binary; a bare NULL left for the server to infer); a use whose types
 * differ from the prepared ones runs unprepared, as PQexecParams.
 * Results come back as text: numbers parse with
 * strtoll/strtod (PostgreSQL 12+ prints float8 in its shortest exact
 * form, so a double survives the trip bit for bit) and bytea is decoded
 * from its hex form on first read.
 *
 * The connection: a lost connection (SQLSTATE class 08, or the server
 * shutting down, 57P01..57P03) is LQ_RETRY; the next call outside a
 * transaction resets it (PQreset), so a worker that backs off and tries
 * again reconnects by itself.  A transaction open when it was lost is
 * gone with it; store_rollback then just forgets it.  A new connection
 * has no prepared statements: each reset starts a new generation, and a
 * statement prepared in an older one is prepared again on its next use.
 *
 * Schema versions are rows of latentq_migrations(version, applied_at),
 * written in each migration's transaction; migrations are serialised
 * across hosts by a transaction-scoped advisory lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "core/util.h"
#include "store/store-int.h"

/* pg_type OIDs (catalog/pg_type_d.h, stable across releases) */
#define PG_INT8OID 20
#define PG_FLOAT8OID 701
#define PG_BYTEAOID 17
#define PG_TEXTOID 25

/*
 * pg_advisory_xact_lock keys: migrations, "latentq" in ASCII
 * (0x6c6174656e7471); submit's live-job lookup, "latentqS".
 */
#define PG_MIGRATION_LOCK "30506450030589041"
#define PG_SUBMIT_LOCK "7809651207830794579"

extern const struct embed_file store_migrations_pg[];

struct store_pg {
	PGconn *conn;
	unsigned generation;	/* of the connection: + 1 per PQreset */
	unsigned statements;	/* prepared statements named so far */
	int64_t changes;
	char sqlstate[6];
	char *message;		/* the last error's text */
};

struct pg_param {
	char *owned;		/* text or number, owned */
	const void *blob;	/* borrowed until the step */
	int length, format;
	Oid type;
};

struct pg_stmt {
	struct store_stmt base;
	char *sql;		/* with $N placeholders */
	int nparams;
	struct pg_param *params;
	/*
	 * A persistent statement's server-side name ("" until it is first
	 * prepared) and the connection generation and parameter types it
	 * was prepared with (prepared_types[nparams]).
	 */
	int persistent;
	char name[16];
	unsigned prepared_in;
	Oid *prepared_types;
	PGresult *res;
	int executed, row, nrows;
	unsigned char **blobs;	/* decoded bytea per column, or NULL */
	size_t *blob_sizes;
	int ncols;
};

#define PGS(x) ((struct pg_stmt *)(x))

static void
pg_set_error(struct store *st, const char *sqlstate, const char *message)
{
	struct store_pg *pg = st->pg;
	snprintf(pg->sqlstate, sizeof(pg->sqlstate), "%s", sqlstate ?
	    sqlstate : "");
	free(pg->message);
	pg->message = xstrdup(message != NULL && *message ? message :
	    "unknown error");
	/* libpq's messages end with a newline */
	size_t n = strlen(pg->message);
	while (n > 0 && (pg->message[n - 1] == '\n' || pg->message[n - 1] ==
	    ' '))
		pg->message[--n] = '\0';
}

static void
pg_set_result_error(struct store *st, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) :
	    NULL;
	/* the primary message: one line, without "ERROR:" */
	const char *msg = res ? PQresultErrorField(res,
	    PG_DIAG_MESSAGE_PRIMARY) : NULL;
	if (msg == NULL || *msg == '\0')
		msg = PQerrorMessage(st->pg->conn);
	pg_set_error(st, state, msg);
}

/*
 * Before a statement: a connection that broke is reset, unless a
 * transaction was open on it (that transaction is lost; the caller's
 * rollback comes first).  `opening`: the statement is store_begin's, whose
 * transaction the server has not seen yet.  Returns 0 when the connection
 * is usable.
 */
static int
pg_ready(struct store *st, int opening)
{
	struct store_pg *pg = st->pg;
	if (PQstatus(pg->conn) == CONNECTION_OK)
		return 0;
	if (st->txn_depth > (opening ? 1 : 0)) {
		pg_set_error(st, "08006", "the connection to the server was lost "
		    "in a transaction");
		return -1;
	}
	PQreset(pg->conn);
	pg->generation++;	/* none of the old prepared statements is here */
	if (PQstatus(pg->conn) != CONNECTION_OK) {
		pg_set_error(st, "08006", PQerrorMessage(pg->conn));
		return -1;
	}
	return 0;
}

/*
 * The store's placeholders to PostgreSQL's: `?N` is $N, a bare `?` is one
 * more than the largest number so far (SQLite's rule).  Quoted strings and
 * identifiers are copied as they are.  *nparams gets the largest number.
 */
static char *
pg_rewrite(const char *sql, int *nparams)
{
	struct strbuf sb = {0};
	int max = 0;
	for (const char *p = sql; *p; ) {
		if (*p == '\'' || *p == '"') {
			char q = *p;
			const char *e = p + 1;
			while (*e && *e != q)
				e++;
			if (*e)
				e++;
			strbuf_append(&sb, p, (size_t)(e - p));
			p = e;
		} else if (*p == '?') {
			int n;
			p++;
			if (*p >= '0' && *p <= '9') {
				n = 0;
				while (*p >= '0' && *p <= '9')
					n = n * 10 + (*p++ - '0');
			} else {
				n = max + 1;
			}
			if (n > max)
				max = n;
			strbuf_printf(&sb, "$%d", n);
		} else {
			strbuf_append(&sb, p, 1);
			p++;
		}
	}
	*nparams = max;
	if (sb.buf == NULL)
		strbuf_append(&sb, "", 0);
	return strbuf_release(&sb);
}

static struct store_stmt *
pg_prepare(struct store *st, const char *sql, int persistent,
    struct lq_error *err)
{
	(void)err;	/* prepared on the server at the first step */
	struct pg_stmt *ps = xcalloc(1, sizeof(*ps));
	ps->base.st = st;
	ps->sql = pg_rewrite(sql, &ps->nparams);
	ps->persistent = persistent;
	if (ps->nparams > 0) {
		ps->params = xcalloc((size_t)ps->nparams, sizeof(*ps->params));
		ps->prepared_types = xcalloc((size_t)ps->nparams,
		    sizeof(*ps->prepared_types));
	}
	return &ps->base;
}

static void
pg_clear_result(struct pg_stmt *ps)
{
	for (int i = 0; i < ps->ncols; i++)
		free(ps->blobs[i]);
	free(ps->blobs);
	free(ps->blob_sizes);
	ps->blobs = NULL;
	ps->blob_sizes = NULL;
	ps->ncols = 0;
	PQclear(ps->res);
	ps->res = NULL;
	ps->executed = ps->row = ps->nrows = 0;
}

static void
pg_reset(struct store_stmt *s)
{
	struct pg_stmt *ps = PGS(s);
	pg_clear_result(ps);
	for (int i = 0; i < ps->nparams; i++) {
		free(ps->params[i].owned);
		memset(&ps->params[i], 0, sizeof(ps->params[i]));
	}
}

static void
pg_finalize(struct store_stmt *s)
{
	struct pg_stmt *ps = PGS(s);
	/* a server-side statement goes with its connection (store_close
	 * finalizes cached statements only before closing it) */
	pg_reset(s);
	free(ps->params);
	free(ps->prepared_types);
	free(ps->sql);
	free(ps);
}

/* The statement's parameter i (1-based), emptied for a new value. */
static struct pg_param *
pg_param(struct store_stmt *s, int i)
{
	struct pg_stmt *ps = PGS(s);
	LQ_ASSERT(i >= 1 && i <= ps->nparams);
	struct pg_param *p = &ps->params[i - 1];
	free(p->owned);
	memset(p, 0, sizeof(*p));
	return p;
}

static void
pg_bind_int64(struct store_stmt *s, int i, int64_t v)
{
	struct pg_param *p = pg_param(s, i);
	p->owned = xasprintf("%lld", (long long)v);
	p->type = PG_INT8OID;
}

static void
pg_bind_double(struct store_stmt *s, int i, double v)
{
	struct pg_param *p = pg_param(s, i);
	p->owned = xasprintf("%.17g", v);	/* exact */
	p->type = PG_FLOAT8OID;
}

/*
 * Text is typed text, NULL from store_bind_text too: the server cannot
 * infer a type for "?9 IS NULL OR lease_owner = ?9" from the SQL alone.
 */
static void
pg_bind_text(struct store_stmt *s, int i, const char *v)
{
	struct pg_param *p = pg_param(s, i);
	p->owned = v != NULL ? xstrdup(v) : NULL;
	p->type = PG_TEXTOID;
}

static void
pg_bind_blob(struct store_stmt *s, int i, const void *b, size_t n)
{
	struct pg_param *p = pg_param(s, i);
	LQ_ASSERT(n <= INT32_MAX);
	p->blob = n > 0 ? b : "";
	p->length = (int)n;
	p->format = 1;
	p->type = PG_BYTEAOID;
}

static void
pg_bind_null(struct store_stmt *s, int i)
{
	(void)pg_param(s, i);
}

/*
 * Runs the statement once with these parameters: prepared on the server
 * (a persistent statement, prepared first if this connection has not got
 * it with these types), else unprepared.  The result is the caller's;
 * NULL or an error result when it failed.
 */
static PGresult *
pg_execute(struct store *st, struct pg_stmt *ps, const Oid *types,
    const char *const *values, const int *lengths, const int *formats)
{
	struct store_pg *pg = st->pg;
	int n = ps->nparams;
	if (!ps->persistent)
		return PQexecParams(pg->conn, ps->sql, n, types, values,
		    lengths, formats, 0);
	int here = ps->name[0] != '\0' && ps->prepared_in == pg->generation;
	if (here && n > 0 && memcmp(types, ps->prepared_types, (size_t)n *
	    sizeof(*types)) != 0)
		/* bound otherwise than when prepared (a NULL for a typed
		 * value): this use only, unprepared */
		return PQexecParams(pg->conn, ps->sql, n, types, values,
		    lengths, formats, 0);
	if (!here) {
		if (ps->name[0] == '\0')
			snprintf(ps->name, sizeof(ps->name), "lq%u",
			    ++pg->statements);
		PGresult *res = PQprepare(pg->conn, ps->name, ps->sql, n, types);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			return res;
		PQclear(res);
		ps->prepared_in = pg->generation;
		if (n > 0)
			memcpy(ps->prepared_types, types, (size_t)n *
			    sizeof(*types));
	}
	return PQexecPrepared(pg->conn, ps->name, n, values, lengths, formats,
	    0);
}

static int
pg_step(struct store_stmt *s)
{
	struct pg_stmt *ps = PGS(s);
	struct store *st = s->st;
	if (!ps->executed) {
		if (pg_ready(st, 0) != 0)
			return STORE_ERROR;
		int n = ps->nparams;
		const char **values = n ? xcalloc((size_t)n, sizeof(*values)) :
		    NULL;
		int *lengths = n ? xcalloc((size_t)n, sizeof(*lengths)) : NULL;
		int *formats = n ? xcalloc((size_t)n, sizeof(*formats)) : NULL;
		Oid *types = n ? xcalloc((size_t)n, sizeof(*types)) : NULL;
		for (int i = 0; i < n; i++) {
			struct pg_param *p = &ps->params[i];
			values[i] = p->blob ? p->blob : p->owned;
			lengths[i] = p->length;
			formats[i] = p->format;
			types[i] = p->type;
		}
		ps->res = pg_execute(st, ps, types, values, lengths, formats);
		free(values);
		free(lengths);
		free(formats);
		free(types);
		ps->executed = 1;
		ExecStatusType es = PQresultStatus(ps->res);
		if (es != PGRES_TUPLES_OK && es != PGRES_COMMAND_OK) {
			pg_set_result_error(st, ps->res);
			PQclear(ps->res);
			ps->res = NULL;
			return STORE_ERROR;
		}
		const char *ct = PQcmdTuples(ps->res);
		st->pg->changes = ct && *ct ? strtoll(ct, NULL, 10) : 0;
		ps->nrows = es == PGRES_TUPLES_OK ? PQntuples(ps->res) : 0;
		ps->ncols = es == PGRES_TUPLES_OK ? PQnfields(ps->res) : 0;
		if (ps->ncols > 0) {
			ps->blobs = xcalloc((size_t)ps->ncols, sizeof(*ps->blobs));
			ps->blob_sizes = xcalloc((size_t)ps->ncols,
			    sizeof(*ps->blob_sizes));
		}
		ps->row = 0;
	} else {
		for (int i = 0; i < ps->ncols; i++) {
			free(ps->blobs[i]);
			ps->blobs[i] = NULL;
		}
		ps->row++;
	}
	return ps->row < ps->nrows ? STORE_ROW : STORE_DONE;
}

static const char *
pg_value(struct store_stmt *s, int i)
{
	struct pg_stmt *ps = PGS(s);
	if (ps->res == NULL || ps->row >= ps->nrows || i < 0 || i >= ps->ncols ||
	    PQgetisnull(ps->res, ps->row, i))
		return NULL;
	return PQgetvalue(ps->res, ps->row, i);
}

static int
pg_column_is_null(struct store_stmt *s, int i)
{
	return pg_value(s, i) == NULL;
}

static int64_t
pg_column_int64(struct store_stmt *s, int i)
{
	const char *v = pg_value(s, i);
	if (v == NULL)
		return 0;
	if (strchr(v, '.') || strchr(v, 'e'))	/* a float8 read as integer */
		return (int64_t)strtod(v, NULL);
	if (strcmp(v, "t") == 0)		/* a boolean */
		return 1;
	return strtoll(v, NULL, 10);
}

static double
pg_column_double(struct store_stmt *s, int i)
{
	const char *v = pg_value(s, i);
	return v != NULL ? strtod(v, NULL) : 0;
}

static const char *
pg_column_text(struct store_stmt *s, int i)
{
	return pg_value(s, i);
}

static int
hex_digit(char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static const void *
pg_column_blob(struct store_stmt *s, int i)
{
	struct pg_stmt *ps = PGS(s);
	const char *v = pg_value(s, i);
	if (v == NULL)
		return NULL;
	if (PQftype(ps->res, i) != PG_BYTEAOID) {
		ps->blob_sizes[i] = strlen(v);
		return v;
	}
	if (ps->blobs[i] == NULL) {
		/* bytea_output=hex (a connection option): \x, 2 digits a byte */
		LQ_ASSERT(v[0] == '\\' && v[1] == 'x');
		size_t n = (strlen(v) - 2) / 2;
		unsigned char *b = xmalloc(n);
		for (size_t k = 0; k < n; k++)
			b[k] = (unsigned char)(hex_digit(v[2 + 2 * k]) << 4 |
			    hex_digit(v[3 + 2 * k]));
		ps->blobs[i] = b;
		ps->blob_sizes[i] = n;
	}
	return ps->blobs[i];
}

static size_t
pg_column_bytes(struct store_stmt *s, int i)
{
	struct pg_stmt *ps = PGS(s);
	if (pg_column_blob(s, i) == NULL)
		return 0;
	return ps->blob_sizes[i];
}

static enum lq_status
pg_exec(struct store *st, const char *sql, struct lq_error *err)
{
	if (pg_ready(st, sql == st->drv->begin_sql) != 0)
		return store_sql_error(st, "PQexec", err);
	PGresult *res = PQexec(st->pg->conn, sql);
	ExecStatusType es = PQresultStatus(res);
	if (es != PGRES_COMMAND_OK && es != PGRES_TUPLES_OK) {
		pg_set_result_error(st, res);
		PQclear(res);
		return store_sql_error(st, "PQexec", err);
	}
	PQclear(res);
	return LQ_OK;
}

static int64_t
pg_changes(struct store *st)
{
	return st->pg->changes;
}

/* Is this SQLSTATE one that may pass when tried again? */
static int
pg_transient(const char *state)
{
	static const char *const retry[] = {
		"40001",	/* serialization_failure */
		"40P01",	/* deadlock_detected */
		"55P03",	/* lock_not_available */
		"57P01",	/* admin_shutdown */
		"57P02",	/* crash_shutdown */
		"57P03",	/* cannot_connect_now */
		"53300",	/* too_many_connections */
		"25P03",	/* idle_in_transaction_session_timeout */
	};
	if (strncmp(state, "08", 2) == 0)	/* connection_exception */
		return 1;
	for (size_t i = 0; i < LQ_ARRAY_LEN(retry); i++)
		if (strcmp(state, retry[i]) == 0)
			return 1;
	return 0;
}

static enum lq_status
pg_error(struct store *st, const char *call, struct lq_error *err)
{
	struct store_pg *pg = st->pg;
	const char *state = pg->sqlstate;
	const char *msg = pg->message ? pg->message : "unknown error";
	/* libpq reports a broken connection without a SQLSTATE */
	if (*state == '\0' && PQstatus(pg->conn) != CONNECTION_OK)
		state = "08006";
	if (strncmp(state, "53", 2) == 0 && strcmp(state, "53300") != 0) {
		/* insufficient_resources: disk_full, out_of_memory, ... */
		error_set(err, LQ_RETRY, STORE_CODE_STORAGE, "%s failed on %s: "
		    "%s (SQLSTATE %s)", call, st->path, msg, state);
		error_set_hint(err, "free space on the database server; what "
		    "was committed before is kept");
		return LQ_RETRY;
	}
	enum lq_status status = pg_transient(state) ? LQ_RETRY : LQ_FAILED;
	error_set(err, status, "LQ-DB-001", "%s failed on %s: %s%s%s%s", call,
	    st->path, msg, *state ? " (SQLSTATE " : "", state,
	    *state ? ")" : "");
	if (status == LQ_RETRY && strncmp(state, "08", 2) == 0)
		error_set_hint(err, "the server is unreachable; the next try "
		    "reconnects");
	return status;
}

/* A query of one integer; -1 on error (kept for pg_error). */
static int64_t
pg_query_int(struct store *st, const char *sql)
{
	if (pg_ready(st, 0) != 0)
		return -1;
	PGresult *res = PQexec(st->pg->conn, sql);
	int64_t v = -1;
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
	    !PQgetisnull(res, 0, 0))
		v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	else
		pg_set_result_error(st, res);
	PQclear(res);
	return v;
}

static int
pg_schema_version(struct store *st)
{
	/* to_regclass: no error (and no aborted transaction) when absent */
	int64_t have = pg_query_int(st, "SELECT CASE WHEN to_regclass("
	    "'latentq_migrations') IS NULL THEN 0 ELSE 1 END");
	if (have <= 0)
		return (int)have;
	return (int)pg_query_int(st, "SELECT coalesce(max(version), 0) FROM "
	    "latentq_migrations");
}

static enum lq_status
pg_lock_schema(struct store *st, struct lq_error *err)
{
	return pg_exec(st, "SELECT pg_advisory_xact_lock(" PG_MIGRATION_LOCK
	    ");CREATE TABLE IF NOT EXISTS latentq_migrations (version integer "
	    "PRIMARY KEY, applied_at double precision NOT NULL)", err);
}

/*
 * Two hosts submitting the same job at once: under READ COMMITTED each
 * would find no live job and insert one.  Submitters queue on this lock
 * instead, as SQLite's writers do on its write lock; each statement after
 * it sees what the previous holder committed.
 */
static enum lq_status
pg_lock_submit(struct store *st, struct lq_error *err)
{
	return pg_exec(st, "SELECT pg_advisory_xact_lock(" PG_SUBMIT_LOCK ")",
	    err);
}

static enum lq_status
pg_set_schema_version(struct store *st, int version, struct lq_error *err)
{
	char sql[160];
	snprintf(sql, sizeof(sql), "INSERT INTO latentq_migrations(version, "
	    "applied_at) VALUES (%d, %.17g)", version, util_now());
	return pg_exec(st, sql, err);
}

static void
pg_close(struct store *st)
{
	if (st->pg == NULL)
		return;
	PQfinish(st->pg->conn);
	free(st->pg->message);
	free(st->pg);
	st->pg = NULL;
}

/* Notices (an IF NOT EXISTS that found the table) are not the user's. */
static void
pg_notice(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

const struct store_driver store_driver_postgresql = {
	.name = "postgresql",
	/*
	 * READ COMMITTED: every guarded UPDATE re-checks its WHERE clause on
	 * the row's newest version, claims skip locked rows and the fence
	 * locks the job's row (FOR UPDATE), so no wider isolation is needed.
	 */
	.begin_sql = "BEGIN ISOLATION LEVEL READ COMMITTED",
	.variants = store_migrations_pg,
	.prepare = pg_prepare,
	.finalize = pg_finalize,
	.reset = pg_reset,
	.step = pg_step,
	.bind_int64 = pg_bind_int64,
	.bind_double = pg_bind_double,
	.bind_text = pg_bind_text,
	.bind_blob = pg_bind_blob,
	.bind_null = pg_bind_null,
	.column_is_null = pg_column_is_null,
	.column_int64 = pg_column_int64,
	.column_double = pg_column_double,
	.column_text = pg_column_text,
	.column_blob = pg_column_blob,
	.column_bytes = pg_column_bytes,
	.exec = pg_exec,
	.changes = pg_changes,
	.error = pg_error,
	.schema_version = pg_schema_version,
	.lock_schema = pg_lock_schema,
	.lock_submit = pg_lock_submit,
	.set_schema_version = pg_set_schema_version,
	.close = pg_close,
};

int
store_is_postgresql(const char *db)
{
	if (db == NULL)
		return 0;
	if (strncmp(db, "postgresql://", 13) == 0 ||
	    strncmp(db, "postgres://", 11) == 0)
		return 1;
	/* a libpq keyword/value conninfo: "host=/run/pg dbname=queue" */
	size_t k = strspn(db, "abcdefghijklmnopqrstuvwxyz_");
	return k > 0 && db[k] == '=';
}

/*
 * The conninfo as errors show it: a password (URL user:PASS@ or
 * password=PASS) is replaced by "***".
 */
static char *
pg_display(const char *conninfo)
{
	char *s = xstrdup(conninfo);
	char *p = strstr(s, "://");
	if (p != NULL) {
		char *at = strchr(p + 3, '@');
		char *colon = strchr(p + 3, ':');
		char *slash = strchr(p + 3, '/');
		if (at && colon && colon < at && (!slash || at < slash)) {
			char *out = xasprintf("%.*s:***%s", (int)(colon - s), s, at);
			free(s);
			s = out;
		}
	}
	char *pw = strstr(s, "password=");
	if (pw != NULL) {
		char *end = pw + 9;
		while (*end && *end != ' ' && *end != '&')
			end++;
		char *out = xasprintf("%.*spassword=***%s", (int)(pw - s), s,
		    end);
		free(s);
		s = out;
	}
	return s;
}

enum lq_status
store_pg_connect(struct store *st, const char *conninfo, struct lq_error *err)
{
	st->drv = &store_driver_postgresql;
	st->pg = xcalloc(1, sizeof(*st->pg));
	free(st->path);
	st->path = pg_display(conninfo);
	/*
	 * A server that does not answer is given 10 s per try (libpq waits
	 * for the system's TCP timeout otherwise), unless conninfo says.  The
	 * session's settings are connection parameters, so that PQreset
	 * (pg_ready) brings them back with the new connection.
	 */
	static const char *const keys[] = {"connect_timeout", "client_encoding",
	    "options", "dbname", NULL};
	const char *values[] = {"10", "UTF8", "-c bytea_output=hex", conninfo,
	    NULL};
	st->pg->conn = PQconnectdbParams(keys, values, 1);
	LQ_ASSERT(st->pg->conn != NULL);	/* libpq: NULL only without memory */
	if (PQstatus(st->pg->conn) != CONNECTION_OK) {
		pg_set_error(st, "08001", PQerrorMessage(st->pg->conn));
		/*
		 * Unreachable is RETRY (the server may come back); a refusal
		 * (bad password, no such database) is the same message from
		 * libpq, so it is graded by what the message says.
		 */
		const char *m = st->pg->message;
		int refused = strstr(m, "authentication") != NULL ||
		    strstr(m, "does not exist") != NULL ||
		    strstr(m, "invalid") != NULL;
		error_set(err, refused ? LQ_FAILED : LQ_RETRY, "LQ-DB-001",
		    "cannot connect to queue database %s: %s", st->path, m);
		error_set_hint(err, refused ? "check the URL's user, password "
		    "and database name" : "is the server running and "
		    "reachable? the next try reconnects");
		return err->status;
	}
	PQsetNoticeProcessor(st->pg->conn, pg_notice, NULL);
	return LQ_OK;
}
