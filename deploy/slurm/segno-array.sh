#!/bin/bash
# segno as a Slurm array job: every task is one worker on the same spec.
#
#   sbatch --array=0-7 deploy/slurm/segno-array.sh /srv/jobs/archive.yaml
#
# With `state: postgres://…` in the spec (PGPASSWORD or ~/.pgpass in the job's environment),
# the tasks claim recordings from the shared state: none is done twice, and a task that dies
# has its claims taken over when their lease ends. Without a database, export SEGNO_SHARDS=1:
# task K of N then runs `--shard K/N`, each shard with its own SQLite file beside the outputs.
#SBATCH --job-name=segno
#SBATCH --cpus-per-task=2
#SBATCH --output=segno-%A_%a.log
set -euo pipefail
spec="${1:?usage: sbatch --array=0-N segno-array.sh SPEC}"
args=(run "$spec" --quiet)
if [ -n "${SEGNO_SHARDS:-}" ]; then
    args+=(--shard "${SLURM_ARRAY_TASK_ID:-0}/${SLURM_ARRAY_TASK_COUNT:-1}")
fi
if [ -n "${SEGNO_REPORT_DIR:-}" ]; then
    args+=(--report "$SEGNO_REPORT_DIR/task-${SLURM_ARRAY_TASK_ID:-0}.json")
fi
exec "${SEGNO:-segno}" "${args[@]}"
