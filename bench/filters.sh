#!/usr/bin/env bash
# Filter benchmark (not a test): CPU and wall time of segno's lowpass against SoX's on one long file.
#
#   bench/filters.sh SEGNO_BINARY [INPUT.wav] [RUNS]
#
# INPUT defaults to a 60-minute 48 kHz mono 16-bit pink-noise WAV, made with sox on first use in
# $BENCH_DIR (default /tmp/segno-bench). RUNS (default 3) pairs are interleaved A B A B so both tools
# see the same machine state; the medians are printed. Each tool is also timed copying the file
# with no effect, so the filter's own cost (effect minus copy) can be compared too. SoX dithers
# 16-bit output after an effect by default; `sox -D` (no dither) is timed as well, since its
# filter-only cost is the stricter comparison.
# The segno arguments can be changed with SEGNO_LOWPASS_ARGS (default "--lowpass 3000").
set -euo pipefail

segno=${1:?usage: bench/filters.sh SEGNO_BINARY [INPUT.wav] [RUNS]}
dir=${BENCH_DIR:-/tmp/segno-bench}
input=${2:-$dir/pink-60min-48k-mono.wav}
runs=${3:-3}
read -r -a segno_lowpass <<<"${SEGNO_LOWPASS_ARGS:---lowpass 3000}"
mkdir -p "$dir"
if [[ ! -f $input ]]; then
    echo "making $input (60 min, 48 kHz, mono, 16-bit pink noise)" >&2
    sox -n -r 48000 -c 1 -b 16 "$input" synth 3600 pinknoise vol 0.5
fi
out=$dir/out.wav

# time_cmd NAME CMD...: runs CMD once, appends "user+sys wall" to $dir/NAME.times
time_cmd() {
    local name=$1; shift
    /usr/bin/time -f "%U %S %e" -o "$dir/time.tmp" "$@" >/dev/null 2>"$dir/stderr.tmp" || {
        echo "failed: $*" >&2; cat "$dir/stderr.tmp" >&2; exit 1; }
    awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }' "$dir/time.tmp" >>"$dir/$name.times"
}

rm -f "$dir"/*.times
for ((i = 1; i <= runs; i++)); do
    time_cmd sox_lowpass sox "$input" "$out" lowpass 3000
    time_cmd segno_lowpass "$segno" convert "$input" "$out" "${segno_lowpass[@]}"
    time_cmd sox_lowpass_no_dither sox -D "$input" "$out" lowpass 3000
    time_cmd sox_copy sox "$input" "$out"
    time_cmd segno_copy "$segno" convert "$input" "$out"
done

median() { sort -n -k"$2" "$dir/$1.times" | awk -v k="$2" '{ v[NR] = $k } END { print v[int((NR + 1) / 2)] }'; }
printf "%-34s %10s %10s\n" "median of $runs (interleaved)" "CPU s" "wall s"
for name in sox_lowpass segno_lowpass sox_lowpass_no_dither sox_copy segno_copy; do
    printf "%-34s %10s %10s\n" "$name" "$(median $name 1)" "$(median $name 2)"
done
awk -v sl="$(median sox_lowpass 1)" -v gl="$(median segno_lowpass 1)" -v sd="$(median sox_lowpass_no_dither 1)" \
    -v sc="$(median sox_copy 1)" -v gc="$(median segno_copy 1)" 'BEGIN {
    printf "CPU ratio segno/sox, whole command:                  %.2f\n", gl / sl
    if (sl - sc > 0) printf "CPU ratio segno/sox, filter only (- copy):           %.2f  (%.3f s vs %.3f s)\n", (gl - gc) / (sl - sc), gl - gc, sl - sc
    if (sd - sc > 0) printf "CPU ratio segno/sox -D, filter only (- copy):        %.2f  (%.3f s vs %.3f s)\n", (gl - gc) / (sd - sc), gl - gc, sd - sc
}'
