#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the Slurm sweep test (tests/test_slurm.py).
#
#   bash scripts/slurm-local.sh start   # install (Debian: slurmctld slurmd munge), configure, start
#   bash scripts/slurm-local.sh stop    # stop slurmctld and slurmd (munged keeps running)
#
# Everything lives under $SLURM_LOCAL (default /tmp/attndyn-slurm): slurm.conf, state, spool and
# logs. Daemons listen on 127.0.0.1 only (NodeAddr and SlurmctldHost's address). Needs root (the
# daemons and the jobs run as root). After start, `export SLURM_CONF=$SLURM_LOCAL/slurm.conf`
# makes sbatch, squeue and scancel talk to this cluster. docs/sweeps.md "On a Slurm cluster".
set -euo pipefail
D=${SLURM_LOCAL:-/tmp/attndyn-slurm}
CONF=$D/slurm.conf

stop() {
    for pidfile in "$D/slurmd.pid" "$D/slurmctld.pid"; do
        if [ -s "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
    done
    sleep 1
}

start() {
    if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge
    fi
    mkdir -p "$D/state" "$D/spool" "$D/log" /etc/munge /run/munge /var/lib/munge /var/log/munge
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
    fi
    chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
    chmod 700 /etc/munge && chmod 400 /etc/munge/munge.key
    pgrep -x munged >/dev/null || munged --force
    local host mem
    host=$(hostname)
    mem=$(awk '/MemTotal/ {print int($2 / 1024) - 2048}' /proc/meminfo)
    cat >"$CONF" <<CONF
ClusterName=attndyn-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SlurmctldPort=6817
SlurmdPort=6818
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    stop
    slurmctld -f "$CONF"
    slurmd -f "$CONF"
    for _ in $(seq 30); do
        if SLURM_CONF=$CONF sinfo -h -o %T 2>/dev/null | grep -q idle; then
            echo "slurm up: export SLURM_CONF=$CONF"
            return 0
        fi
        sleep 1
    done
    echo "slurm did not come up; logs in $D/log" >&2
    tail -5 "$D/log/slurmctld.log" "$D/log/slurmd.log" >&2 || true
    return 1
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
