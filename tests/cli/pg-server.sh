# pg-server.sh — a throwaway PostgreSQL server for the tests and benches
# (sourced).  pg_start starts one in a fresh folder: Debian's initdb and
# pg_ctl (postgresql package), a Unix socket only, no TCP; as the user
# postgres when run as root (the server refuses root).  pg_createdb NAME
# creates a database and prints its URL for -d / LATENTQ_DB; pg_sql URL SQL
# runs SQL with psql; pg_pause / pg_resume stop and start the same server;
# pg_stop stops it and removes the folder.  A server that cannot start
# ends the test with a failure (exit 1): these tests are never skipped.
#
# Options for speed only (fsync off): what the tests check is latentq's
# transactions, not the server's durability.  PG_OPTS adds to them.

PG_BIN=${PG_BIN:-$(pg_config --bindir 2>/dev/null)}
[ -x "$PG_BIN/initdb" ] || PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
PG_DIR=
PG_USER=latentq

# pg_as CMD... : run CMD as the server's owner.
pg_as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_start() {
	if [ ! -x "$PG_BIN/initdb" ]; then
		echo "FAIL: no PostgreSQL server binaries (initdb) found; on Debian: apt-get install postgresql (tools/install-deps.sh)" >&2
		exit 1
	fi
	PG_DIR=$(mktemp -d /tmp/latentq-pg.XXXXXX) || exit 1
	if [ "$(id -u)" = 0 ]; then
		if ! id postgres >/dev/null 2>&1; then
			echo "FAIL: running as root and there is no user postgres to run the server as (the postgresql package creates it)" >&2
			exit 1
		fi
		chown postgres "$PG_DIR"
	fi
	if ! pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U "$PG_USER" \
	    -E UTF8 --locale=C --no-sync > "$PG_DIR/initdb.log" 2>&1; then
		echo "FAIL: initdb failed:" >&2
		sed 's/^/  | /' "$PG_DIR/initdb.log" >&2
		exit 1
	fi
	pg_resume
}

# Starts (again) the server of pg_start, same folder and socket.
pg_resume() {
	if ! pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
	    -t 30 -o "-k $PG_DIR -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60 ${PG_OPTS:-}" \
	    start > "$PG_DIR/pg_ctl.log" 2>&1; then
		echo "FAIL: the PostgreSQL server did not start:" >&2
		sed 's/^/  | /' "$PG_DIR/pg_ctl.log" "$PG_DIR/server.log" >&2
		exit 1
	fi
}

# Stops the server (fast: open connections are cut, as a network drop).
pg_pause() {
	pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop > /dev/null 2>&1
}

pg_stop() {
	[ -n "$PG_DIR" ] || return 0
	pg_pause
	rm -rf "$PG_DIR"
	PG_DIR=
}

# pg_url NAME : the URL of database NAME on this server.
pg_url() { echo "postgresql://$PG_USER@/$1?host=$PG_DIR"; }

# pg_sql URL SQL : unaligned, tuples only, stops at the first error.
pg_sql() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2"
}

# pg_createdb NAME : creates it, with SQLite's group_concat for the tests'
# queries, and prints its URL.
pg_createdb() {
	pg_sql "$(pg_url postgres)" "CREATE DATABASE \"$1\"" || exit 1
	pg_sql "$(pg_url "$1")" "
	CREATE FUNCTION lq_concat(acc text, v text, sep text) RETURNS text
	  LANGUAGE sql IMMUTABLE AS
	  'SELECT CASE WHEN v IS NULL THEN acc WHEN acc IS NULL THEN v ELSE acc || sep || v END';
	CREATE FUNCTION lq_concat1(acc text, v text) RETURNS text
	  LANGUAGE sql IMMUTABLE AS 'SELECT lq_concat(acc, v, '','')';
	CREATE AGGREGATE group_concat(text, text) (SFUNC = lq_concat, STYPE = text);
	CREATE AGGREGATE group_concat(text) (SFUNC = lq_concat1, STYPE = text);" || exit 1
	pg_url "$1"
}
