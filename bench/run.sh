#!/usr/bin/env bash
# make bench: every benchmark, with the release segno given as $1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
segno="${1:?usage: bench/run.sh path/to/segno}"
awf="$(bash "$here/peers.sh")" || { echo "bench: audiowaveform could not be built (bench/peers.sh); its ratio is skipped" >&2; awf=""; }
python3 "$here/bench.py" "$segno" ${awf:+--audiowaveform "$awf"}
