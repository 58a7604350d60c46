#!/usr/bin/env bash
# Start, stop or describe a live HLS station for segno's stream-capture tests: ffmpeg writes a
# live HLS stream (MPEG-TS segments of 1 s, two AAC renditions of 64 and 128 kb/s, a master
# playlist) from a fixed noise signal, and `python3 -m http.server` serves the folder.
#
#   Tests/support/hls.sh start   start (or reuse); prints `export` lines
#   Tests/support/hls.sh env     print the `export` lines of the running station (exit 1 if none)
#   Tests/support/hls.sh stop    stop exactly the processes `start` launched and delete the folder
#
# HLS_TEST_URL is the master playlist, HLS_TEST_ROOT the served folder (tests may drop playlists
# there), HLS_TEST_SOURCE the WAV that is streamed in a loop (for cross-correlation). Both processes
# are bounded: ffmpeg stops after SEGNO_HLS_SECONDS (3600) and the server after that plus 60 s.
# Everything listens on 127.0.0.1 only. Overridable: SEGNO_HLS_DIR (/tmp/segno-hls), SEGNO_HLS_PORT (17880, outside
# the kernel's ephemeral range: Tests/support/ports.sh).
set -euo pipefail

DIR="${SEGNO_HLS_DIR:-/tmp/segno-hls}"
PORT="${SEGNO_HLS_PORT:-17880}"
SECONDS_LIVE="${SEGNO_HLS_SECONDS:-3600}"
URL="http://127.0.0.1:${PORT}"
MARK="$DIR/.segno-hls"
# shellcheck source=ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

log() { printf 'hls.sh: %s\n' "$*" >&2; }

print_env() {
    printf 'export HLS_TEST_URL=%s/live/master.m3u8\n' "$URL"
    printf 'export HLS_TEST_BASE=%s\n' "$URL"
    printf 'export HLS_TEST_ROOT=%s/www\n' "$DIR"
    printf 'export HLS_TEST_SOURCE=%s/source.wav\n' "$DIR"
}

live_pid() {
    local name="$1" prog="$2" pid
    [[ -f "$DIR/$name.pid" ]] || return 1
    pid="$(cat "$DIR/$name.pid")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [[ -r "/proc/$pid/cmdline" ]] || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$prog" || return 1
    printf '%s\n' "$pid"
}

answers() { curl -sf -o /dev/null -m 2 "$URL/live/master.m3u8" 2>/dev/null && curl -sf -o /dev/null -m 2 "$URL/live/v1/index.m3u8"; }

running() { live_pid ffmpeg ffmpeg >/dev/null && live_pid http http.server >/dev/null && answers; }

stop() {
    local pid pids=()
    for entry in ffmpeg:ffmpeg http:http.server; do
        if pid="$(live_pid "${entry%%:*}" "${entry#*:}")"; then kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); fi
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do [[ -d "/proc/$pid" ]] || break; sleep 0.1; done
        if [[ -d "/proc/$pid" ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
    done
    if [[ -f "$MARK" ]]; then rm -rf "$DIR"; fi
}

start() {
    if running; then log "already running at $URL"; print_env; return 0; fi
    stop
    for tool in ffmpeg python3 curl timeout; do
        command -v "$tool" >/dev/null || { log "missing $tool"; return 1; }
    done
    need_free_port hls.sh "$PORT" SEGNO_HLS_PORT || return 1
    mkdir -p "$DIR/www/live"
    : >"$MARK"
    # A fixed pink noise (seeded): every block of it is unlike every other, so cross-correlation
    # finds exactly where captured audio comes from.
    ffmpeg -nostdin -hide_banner -loglevel error -f lavfi -i "anoisesrc=color=pink:seed=20261123:amplitude=0.5:r=44100" \
        -t 300 -ac 1 -c:a pcm_s16le -y "$DIR/source.wav"
    # ffmpeg writes the master playlist into its working folder.
    cd "$DIR/www/live"
    setsid timeout "$SECONDS_LIVE" ffmpeg -nostdin -hide_banner -loglevel error -re -stream_loop -1 -i "$DIR/source.wav" \
        -map 0:a -map 0:a -c:a aac -b:a:0 64k -b:a:1 128k -var_stream_map "a:0 a:1" \
        -f hls -hls_time 1 -hls_list_size 8 -hls_flags delete_segments+independent_segments \
        -master_pl_name master.m3u8 -hls_segment_filename 'v%v/seg%05d.ts' 'v%v/index.m3u8' \
        </dev/null >>"$DIR/ffmpeg.log" 2>&1 &
    echo $! >"$DIR/ffmpeg.pid"
    cd /
    setsid timeout "$((SECONDS_LIVE + 60))" python3 -m http.server --bind 127.0.0.1 --directory "$DIR/www" "$PORT" \
        </dev/null >>"$DIR/http.log" 2>&1 &
    echo $! >"$DIR/http.pid"
    local deadline=$((SECONDS + 40))
    until running; do
        if (( SECONDS >= deadline )); then log "timed out after 40s (logs in $DIR)"; stop; return 1; fi
        sleep 0.2
    done
    log "started at $URL/live/master.m3u8"
    print_env
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    env) if running; then print_env; else log "not running"; exit 1; fi ;;
    *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
