#!/usr/bin/env bash
# Start, stop or describe a throw-away Icecast 2 server for segno's stream-capture tests.
#
#   Tests/support/icecast.sh start   start (or reuse) the server; prints `export` lines
#   Tests/support/icecast.sh env     print the `export` lines of the running server (exit 1 if none)
#   Tests/support/icecast.sh stop    stop exactly the process `start` launched and delete its folder
#   Tests/support/icecast.sh status  exit 0 when the server answers
#
# Usage in a shell:  eval "$(Tests/support/icecast.sh start)"
#
# Needs the Debian package icecast2 (installed by `make test-deps`, not here). Listens on 127.0.0.1
# only. Sources (ffmpeg … icecast://source:PASSWORD@HOST:PORT/MOUNT) are started by the tests; every
# mount sends ICY metadata every 4000 bytes (0.25 s at 128 kb/s, so title offsets are exact to a
# quarter second) and no burst on connect (a capture starts at the live edge, as the wall clock).
# Overridable: SEGNO_ICECAST_DIR (/tmp/segno-icecast), SEGNO_ICECAST_PORT (17800, outside the
# kernel's ephemeral range: Tests/support/ports.sh).
set -euo pipefail

DIR="${SEGNO_ICECAST_DIR:-/tmp/segno-icecast}"
PORT="${SEGNO_ICECAST_PORT:-17800}"
# Fixed test passwords: they protect nothing but this local server.
SOURCE_PASSWORD="segno-source"
ADMIN_PASSWORD="segno-admin"
URL="http://127.0.0.1:${PORT}"
CONF="$DIR/icecast.xml"
# shellcheck source=ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

log() { printf 'icecast.sh: %s\n' "$*" >&2; }

print_env() {
    printf 'export ICECAST_TEST_URL=%s\n' "$URL"
    printf 'export ICECAST_TEST_SOURCE=icecast://source:%s@127.0.0.1:%s\n' "$SOURCE_PASSWORD" "$PORT"
    printf 'export ICECAST_TEST_ADMIN=admin:%s\n' "$ADMIN_PASSWORD"
}

# The PID in $DIR/icecast.pid if that process is alive and still runs icecast2.
live_pid() {
    local pid
    [[ -f "$DIR/icecast.pid" ]] || return 1
    pid="$(cat "$DIR/icecast.pid")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- icecast2 || return 1
    printf '%s\n' "$pid"
}

answers() { curl -s -o /dev/null -m 2 "$URL/status-json.xsl" 2>/dev/null; }

running() { live_pid >/dev/null && answers; }

stop() {
    local pid
    if pid="$(live_pid)"; then
        kill -TERM "$pid" 2>/dev/null || true
        # Icecast takes more than 0.5 s to exit: wait for it before deleting its folder.
        for _ in $(seq 50); do [[ -d "/proc/$pid" ]] || break; sleep 0.1; done
        if [[ -d "/proc/$pid" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    # Only ever delete our own folder: it must hold our config.
    if [[ -f "$CONF" ]] && grep -q 'segno test icecast' "$CONF"; then rm -rf "$DIR"; fi
}

write_conf() {
    local user="$1" group="$2"
    cat >"$CONF" <<CONF
<!-- segno test icecast (Tests/support/icecast.sh): 127.0.0.1 only -->
<icecast>
  <location>segno tests</location>
  <admin>segno@localhost</admin>
  <limits>
    <clients>50</clients>
    <sources>10</sources>
    <queue-size>524288</queue-size>
    <client-timeout>30</client-timeout>
    <header-timeout>15</header-timeout>
    <source-timeout>5</source-timeout>
    <burst-on-connect>0</burst-on-connect>
    <burst-size>0</burst-size>
  </limits>
  <authentication>
    <source-password>$SOURCE_PASSWORD</source-password>
    <relay-password>$SOURCE_PASSWORD</relay-password>
    <admin-user>admin</admin-user>
    <admin-password>$ADMIN_PASSWORD</admin-password>
  </authentication>
  <hostname>127.0.0.1</hostname>
  <listen-socket>
    <port>$PORT</port>
    <bind-address>127.0.0.1</bind-address>
  </listen-socket>
  <mount type="default">
    <mp3-metadata-interval>4000</mp3-metadata-interval>
    <burst-size>0</burst-size>
  </mount>
  <fileserve>1</fileserve>
  <paths>
    <basedir>$DIR</basedir>
    <logdir>$DIR/log</logdir>
    <webroot>/usr/share/icecast2/web</webroot>
    <adminroot>/usr/share/icecast2/admin</adminroot>
    <pidfile>$DIR/icecast.pid</pidfile>
  </paths>
  <logging>
    <accesslog>access.log</accesslog>
    <errorlog>error.log</errorlog>
    <loglevel>2</loglevel>
  </logging>
  <security>
    <chroot>0</chroot>
    <changeowner><user>$user</user><group>$group</group></changeowner>
  </security>
</icecast>
CONF
}

start() {
    if running; then
        log "already running at $URL"
        print_env
        return 0
    fi
    stop
    for tool in icecast2 curl; do
        command -v "$tool" >/dev/null || { log "missing $tool (apt-get install --no-install-recommends icecast2 curl)"; return 1; }
    done
    need_free_port icecast.sh "$PORT" SEGNO_ICECAST_PORT || return 1
    local t0=$SECONDS user group
    mkdir -p "$DIR/log"
    # Icecast refuses to run as root unless it can change to another user.
    if [[ "$(id -u)" = 0 ]]; then user=nobody; group=nogroup; else user="$(id -un)"; group="$(id -gn)"; fi
    write_conf "$user" "$group"
    chown -R "$user:$group" "$DIR" 2>/dev/null || true
    chmod 0777 "$DIR"
    icecast2 -b -c "$CONF" >>"$DIR/log/start.out" 2>&1
    local deadline=$((SECONDS + 20))
    until running; do
        if (( SECONDS >= deadline )); then
            log "timed out after 20s waiting for icecast (logs in $DIR/log)"
            # -b forks: find the server by its config if the pid file never appeared.
            stop
            return 1
        fi
        sleep 0.2
    done
    log "started in $((SECONDS - t0))s at $URL (pid $(live_pid))"
    print_env
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) if running; then print_env; else log "not running"; exit 1; fi ;;
    status) running ;;
    *) echo "usage: $0 start|stop|env|status" >&2; exit 2 ;;
esac
