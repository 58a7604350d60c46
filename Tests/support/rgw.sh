#!/usr/bin/env bash
# Start, stop or describe a throw-away Ceph RADOS Gateway for segno's S3 tests.
#
#   Tests/support/rgw.sh start   start (or reuse) a one-node in-memory cluster; prints `export` lines
#   Tests/support/rgw.sh env     print the `export` lines of the running gateway (exit 1 if none)
#   Tests/support/rgw.sh stop    stop exactly the processes `start` launched and delete the data
#   Tests/support/rgw.sh status  exit 0 when the gateway answers
#
# Usage in a shell:  eval "$(Tests/support/rgw.sh start)"
#
# Needs the Debian packages radosgw, ceph-mon and ceph-osd (installed by `make deps` / .ci/run, not here).
# Everything listens on 127.0.0.1 only; data lives in memory (memstore) and under $SEGNO_RGW_DIR.
# Overridable: SEGNO_RGW_DIR (/tmp/segno-rgw), SEGNO_RGW_PORT (17480), SEGNO_RGW_MON_PORT (17300;
# the OSD binds within +10..+40 of it), all outside the kernel's ephemeral range (Tests/support/ports.sh),
# SEGNO_RGW_MEMSTORE_BYTES (4 GiB: the most the OSD stores before it reports itself full).
set -euo pipefail

DIR="${SEGNO_RGW_DIR:-/tmp/segno-rgw}"
PORT="${SEGNO_RGW_PORT:-17480}"
MON_PORT="${SEGNO_RGW_MON_PORT:-17300}"
MEMSTORE_BYTES="${SEGNO_RGW_MEMSTORE_BYTES:-4294967296}"
# Fixed test credentials: they protect nothing but this local, in-memory gateway.
ACCESS_KEY="SEGNOTESTACCESSKEY01"
SECRET_KEY="segnoTestSecretKey/0123456789+abcdefghijk"
ENDPOINT="http://127.0.0.1:${PORT}"
CONF="$DIR/ceph.conf"
# shellcheck source=ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

log() { printf 'rgw.sh: %s\n' "$*" >&2; }

print_env() {
    printf 'export S3_TEST_ENDPOINT=%s\n' "$ENDPOINT"
    printf 'export S3_TEST_ACCESS_KEY=%s\n' "$ACCESS_KEY"
    printf "export S3_TEST_SECRET_KEY='%s'\n" "$SECRET_KEY"
    printf 'export S3_TEST_REGION=us-east-1\n'
}

# The PID in $DIR/pids/NAME.pid if that process is alive and still runs the program we started.
live_pid() {
    local name="$1" prog="$2" pid
    [[ -f "$DIR/pids/$name.pid" ]] || return 1
    pid="$(cat "$DIR/pids/$name.pid")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$prog" || return 1
    printf '%s\n' "$pid"
}

gateway_answers() {
    curl -s -o /dev/null -m 2 "$ENDPOINT/" 2>/dev/null
}

running() {
    live_pid mon ceph-mon >/dev/null && live_pid osd ceph-osd >/dev/null \
        && live_pid rgw radosgw >/dev/null && gateway_answers
}

# Start a daemon in the foreground (-f) in its own session, detached from the caller, and record its PID.
launch() {
    local name="$1"; shift
    setsid "$@" -f </dev/null >>"$DIR/log/$name.out" 2>&1 &
    echo $! >"$DIR/pids/$name.pid"
}

# Wait until "$@" succeeds, at most $1 seconds (polling every 0.2 s), while daemon $3
# (name:program, as `launch` recorded it) still runs: one that died as it started fails at once.
wait_for() {
    local limit="$1" what="$2" daemon="$3"; shift 3
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if ! live_pid "${daemon%%:*}" "${daemon#*:}" >/dev/null; then
            log "$what exited as it started (logs in $DIR/log)"
            return 1
        fi
        if (( SECONDS >= deadline )); then
            log "timed out after ${limit}s waiting for $what (logs in $DIR/log)"
            return 1
        fi
        sleep 0.2
    done
}

stop() {
    local name prog pid pids=()
    for entry in rgw:radosgw osd:ceph-osd mon:ceph-mon; do
        name="${entry%%:*}"; prog="${entry#*:}"
        if pid="$(live_pid "$name" "$prog")"; then
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do [[ -d "/proc/$pid" ]] || break; sleep 0.1; done
        if [[ -d "/proc/$pid" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
    done
    # Only ever delete our own folder: it must hold our ceph.conf.
    if [[ -f "$CONF" ]] && grep -q '^# segno test cluster' "$CONF"; then rm -rf "$DIR"; fi
}

write_conf() {
    local fsid="$1"
    cat >"$CONF" <<CONF
# segno test cluster (Tests/support/rgw.sh) -- one node, in memory, 127.0.0.1 only
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$MON_PORT
auth cluster required = none
auth service required = none
auth client required = none
ms cluster mode = crc secure
ms service mode = crc secure
ms client mode = crc secure
ms mon cluster mode = crc secure
ms mon service mode = crc secure
ms mon client mode = crc secure
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon max pg per osd = 1000
mon data avail crit = 1
mon data avail warn = 2
osd crush chooseleaf type = 0
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
mon data = $DIR/mon/\$name
osd data = $DIR/osd/\$name
keyring = $DIR/keyring
[osd]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind port min = $((MON_PORT + 10))
ms bind port max = $((MON_PORT + 40))
[client]
public addr = 127.0.0.1
[client.rgw.segno]
rgw frontends = beast endpoint=127.0.0.1:$PORT
rgw dns name = localhost
# Deleted objects' data is freed after seconds, not hours: the OSD keeps everything in memory.
rgw gc obj min wait = 10
rgw gc processor period = 10
rgw gc processor max time = 10
CONF
}

start() {
    if running; then
        log "already running at $ENDPOINT"
        print_env
        return 0
    fi
    stop  # a half-started or dead cluster: clear it away first
    for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph curl; do
        command -v "$tool" >/dev/null || { log "missing $tool (apt-get install --no-install-recommends radosgw ceph-mon ceph-osd)"; return 1; }
    done
    need_free_port rgw.sh "$PORT" SEGNO_RGW_PORT || return 1
    need_free_port rgw.sh "$MON_PORT" SEGNO_RGW_MON_PORT || return 1
    local t0=$SECONDS fsid
    mkdir -p "$DIR"/{pids,log,run,mon,osd}
    fsid="$(cat /proc/sys/kernel/random/uuid)"
    write_conf "$fsid"
    : >"$DIR/keyring"
    local c=(-c "$CONF")
    # A failure part-way leaves nothing running behind.
    trap 'log "start failed; stopping what was started (its logs: $DIR-failed)"; rm -rf "$DIR-failed"; cp -r "$DIR/log" "$DIR-failed" 2>/dev/null; stop; exit 1' ERR

    monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$MON_PORT]" "$DIR/monmap" >>"$DIR/log/mkfs.out" 2>&1
    ceph-mon "${c[@]}" --mkfs -i a --monmap "$DIR/monmap" >>"$DIR/log/mkfs.out" 2>&1
    launch mon ceph-mon "${c[@]}" -i a
    wait_for 30 "the monitor" mon:ceph-mon ceph "${c[@]}" --connect-timeout 2 mon stat

    local osd_uuid; osd_uuid="$(cat /proc/sys/kernel/random/uuid)"
    ceph "${c[@]}" osd new "$osd_uuid" >>"$DIR/log/mkfs.out" 2>&1
    mkdir -p "$DIR/osd/osd.0"
    ceph-osd "${c[@]}" -i 0 --mkfs --osd-uuid "$osd_uuid" >>"$DIR/log/mkfs.out" 2>&1
    launch osd ceph-osd "${c[@]}" -i 0
    osd_up() { ceph "${c[@]}" osd dump 2>/dev/null | grep -q '^osd\.0 up'; }
    wait_for 60 "the OSD" osd:ceph-osd osd_up

    launch rgw radosgw "${c[@]}" -n client.rgw.segno
    wait_for 90 "the gateway" rgw:radosgw gateway_answers
    radosgw-admin "${c[@]}" user create --uid=segno-test --display-name="segno tests" \
        --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >>"$DIR/log/mkfs.out" 2>&1
    trap - ERR
    log "started in $((SECONDS - t0))s at $ENDPOINT (pids $(cat "$DIR"/pids/*.pid | tr '\n' ' '))"
    print_env
}

case "${1:-}" in
    # A daemon that crashes as it starts (radosgw has, once in many runs) gets one more try.
    # (A separate process each time: inside `||` bash ignores the ERR trap that cleans up.)
    start) bash "$0" start-once || { log "trying once more"; bash "$0" start-once; } ;;
    start-once) start ;;
    stop) stop ;;
    env) if running; then print_env; else log "not running"; exit 1; fi ;;
    status) running ;;
    *) echo "usage: $0 start|stop|env|status" >&2; exit 2 ;;
esac
