#!/usr/bin/env bash
# Upload throughput to the local Ceph RGW (Tests/support/rgw.sh): SegnoS3 against
# `aws s3 cp --recursive` with the same endpoint, for 200 x 1 MB and 2 x 200 MB files.
# Prints wall times (best of $REPEAT) and the ratio segno/aws (below 1 = segno faster).
#
#   S3BENCH=/path/to/s3bench bench/upload.sh
#
# S3BENCH is the driver in bench/s3bench (SegnoS3's upload() over N worker threads), built in
# release mode; it drives the same client the upload stage uses, without audio work. awscli comes
# from PyPI. Knobs: REPEAT (3), PARALLEL (10 files at once, as aws's max_concurrent_requests),
# SEGNO_BENCH_DIR (/tmp/segno-bench-upload, the generated files).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
S3BENCH="${S3BENCH:?set S3BENCH to the built s3bench binary}"
WORK="${SEGNO_BENCH_DIR:-/tmp/segno-bench-upload}"
REPEAT="${REPEAT:-3}"
PARALLEL="${PARALLEL:-10}"
BUCKET=segno-bench

eval "$("$ROOT/Tests/support/rgw.sh" start)"
export AWS_ACCESS_KEY_ID="$S3_TEST_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$S3_TEST_SECRET_KEY"
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
unset AWS_PROFILE AWS_ENDPOINT_URL
aws() { command aws --endpoint-url "$S3_TEST_ENDPOINT" "$@"; }

if [[ ! -f "$WORK/.complete" ]]; then
    rm -rf "$WORK"; mkdir -p "$WORK/small" "$WORK/large"
    for i in $(seq -w 1 200); do head -c 1000000 /dev/urandom >"$WORK/small/memo-$i.bin"; done
    for i in 1 2; do head -c 200000000 /dev/urandom >"$WORK/large/recording-$i.bin"; done
    touch "$WORK/.complete"
fi
aws s3 mb "s3://$BUCKET" >/dev/null 2>&1 || true

now() { date +%s.%N; }
clear_bucket() { aws s3 rm --recursive --quiet "s3://$BUCKET/" >/dev/null; }

best() { printf '%s\n' "$@" | sort -g | head -1; }

for set in small large; do
    aws_times=() segno_times=()
    for _ in $(seq "$REPEAT"); do
        clear_bucket
        t0=$(now); aws s3 cp --recursive --quiet "$WORK/$set" "s3://$BUCKET/aws/$set/"; t1=$(now)
        aws_times+=("$(echo "$t1 - $t0" | bc)")
        clear_bucket
        t0=$(now)
        "$S3BENCH" --endpoint "$S3_TEST_ENDPOINT" --bucket "$BUCKET" --prefix "segno/$set/" --parallel "$PARALLEL" "$WORK/$set" \
            >"$WORK/last-$set.json"
        t1=$(now)
        segno_times+=("$(echo "$t1 - $t0" | bc)")
    done
    clear_bucket
    a=$(best "${aws_times[@]}"); s=$(best "${segno_times[@]}")
    bytes=$(du -sb "$WORK/$set" | cut -f1)
    printf '%-6s %4d files %6.0f MB   aws s3 cp %7.2f s   segno %7.2f s   segno/aws %.2f   (segno: %s)\n' \
        "$set" "$(ls "$WORK/$set" | wc -l)" "$(echo "$bytes / 1000000" | bc -l)" "$a" "$s" "$(echo "$s / $a" | bc -l)" \
        "$(cat "$WORK/last-$set.json")"
done
