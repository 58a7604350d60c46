#!/usr/bin/env bash
# Start or stop a one-node Slurm (slurmctld + slurmd + munged) on 127.0.0.1 for segno's tests.
#
#   Tests/support/slurm.sh start   prints `export SLURM_CONF=…` (and SEGNO_TEST_SLURM=1)
#   Tests/support/slurm.sh stop    stops exactly what `start` launched and deletes its folder
#
# Needs the Debian packages slurm-wlm and munge (installed by `make test-deps`). No systemd and
# no cgroups: proctrack/linuxproc and task/none. Everything lives under $SEGNO_SLURM_DIR.
set -euo pipefail
DIR="${SEGNO_SLURM_DIR:-/tmp/segno-slurm}"
log() { printf 'slurm.sh: %s\n' "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
print_env() { printf 'export SLURM_CONF=%s/slurm.conf\nexport SEGNO_TEST_SLURM=1\n' "$DIR"; }

stop_all() {
    local pids=()
    for name in slurmd slurmctld munged; do
        if [ -f "$DIR/$name.pid" ]; then
            pid="$(cat "$DIR/$name.pid")"
            kill "$pid" 2>/dev/null && pids+=("$pid")
        fi
    done
    # Until each has exited (at most 5 s), so the folder is not removed under a daemon still writing it.
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do [[ -d "/proc/$pid" ]] || break; sleep 0.1; done
    done
    rm -rf "$DIR"
}

case "${1:-}" in
start)
    command -v slurmctld >/dev/null && command -v munged >/dev/null || { log "missing slurm-wlm or munge"; exit 1; }
    if [ -f "$DIR/slurm.conf" ] && SLURM_CONF="$DIR/slurm.conf" sinfo -h -o %T 2>/dev/null | grep -q idle; then print_env; exit 0; fi
    stop_all; mkdir -p "$DIR/munge" "$DIR/spool" "$DIR/state"
    chown munge "$DIR/munge"; chmod 755 "$DIR/munge"
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chown munge "$DIR/munge/munge.key"; chmod 400 "$DIR/munge/munge.key"
    su munge -s /bin/sh -c "munged --key-file='$DIR/munge/munge.key' --socket='$DIR/munge/munge.socket' --pid-file='$DIR/munge/munged.pid' --log-file='$DIR/munge/munged.log' --seed-file='$DIR/munge/munged.seed'" </dev/null >/dev/null 2>&1
    cp "$DIR/munge/munged.pid" "$DIR/munged.pid" 2>/dev/null || true
    host=$(hostname -s)
    cat > "$DIR/slurm.conf" <<CONF
ClusterName=segno
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -f "$DIR/slurm.conf" </dev/null >/dev/null 2>&1
    slurmd -f "$DIR/slurm.conf" </dev/null >/dev/null 2>&1
    for _ in $(seq 1 50); do
        if SLURM_CONF="$DIR/slurm.conf" sinfo -h -o %T 2>/dev/null | grep -q idle; then print_env; exit 0; fi
        sleep 0.2
    done
    log "the node did not come up: $(tail -3 "$DIR/slurmctld.log" 2>/dev/null) $(tail -3 "$DIR/slurmd.log" 2>/dev/null)"
    exit 1 ;;
stop) stop_all ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
