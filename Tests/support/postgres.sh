#!/usr/bin/env bash
# Start or stop a throw-away PostgreSQL 15 for segno's shared-state tests, on 127.0.0.1 only.
#
#   Tests/support/postgres.sh start   initdb in $SEGNO_PG_DIR, start on a free port; prints `export` lines
#   Tests/support/postgres.sh stop    stop the server this script started and delete its folder
#   Tests/support/postgres.sh pause / resume   stop and restart the same server (outage tests)
#
# Needs the Debian package postgresql-15 (installed by `make test-deps`). Trust authentication:
# it is a loopback-only server for tests; a real deployment uses passwords (PGPASSWORD/~/.pgpass).
set -euo pipefail

DIR="${SEGNO_PG_DIR:-/tmp/segno-pg}"
BIN=/usr/lib/postgresql/15/bin
log() { printf 'postgres.sh: %s\n' "$*" >&2; }
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

print_env() {
    printf 'export SEGNO_TEST_PG=postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable\n' "$(cat "$DIR/port")"
    printf 'export SEGNO_TEST_PG_DIR=%s\n' "$DIR"
}

# The server must not inherit the caller's pipes (a test reading this script's output would wait forever).
start_server() {
    as_pg "$BIN/pg_ctl -D '$DIR/data' -l '$DIR/log' -o \"-p $(cat "$DIR/port") -k '$DIR' -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200\" -w -t 30 start" </dev/null >/dev/null 2>&1 \
        || { log "pg_ctl start failed: $(tail -5 "$DIR/log" 2>/dev/null)"; exit 1; }
}

case "${1:-}" in
start)
    [ -x "$BIN/initdb" ] || { log "missing postgresql-15 (apt-get install postgresql-15)"; exit 1; }
    if [ -f "$DIR/port" ] && "$BIN/pg_isready" -q -h 127.0.0.1 -p "$(cat "$DIR/port")"; then print_env; exit 0; fi
    rm -rf "$DIR"; mkdir -p "$DIR"
    free_port > "$DIR/port"
    chown -R postgres "$DIR" 2>/dev/null || true
    as_pg "$BIN/initdb -D '$DIR/data' -A trust -U postgres" >/dev/null
    start_server
    print_env ;;
pause)
    as_pg "$BIN/pg_ctl -D '$DIR/data' -m fast -w stop" >/dev/null ;;
resume)
    start_server ;;
stop)
    if [ -d "$DIR/data" ]; then as_pg "$BIN/pg_ctl -D '$DIR/data' -m fast -w stop" >/dev/null 2>&1 || true; fi
    rm -rf "$DIR" ;;
*)
    echo "usage: $0 start|stop|pause|resume" >&2; exit 2 ;;
esac
