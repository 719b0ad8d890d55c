#!/bin/bash
# cluster.sh — bring up / tear down a throw-away REAL Slurm cluster on one
# Debian 12 machine (root, no systemd, cgroup v1), everything under one dir.
#
# Groundwork for the Slurm end-to-end suite (issue 7); no CTest test uses it yet.
# Checked by hand: single node (up to idle 0.4 s) and 2 emulated nodes (0.6 s);
# sbatch + srun --mpi=pmix and mpirun of an 8-rank MPI program, COMPLETED;
# srun --overlap next to a running step; `down` leaves no process, cgroup,
# link or directory behind.
#
#   cluster.sh up   DIR [NODES]    NODES=0 (default): one slurmd named after the
#                                  host, in the host network/pid namespace.
#                                  NODES>=1: node1..nodeN, each slurmd in its own
#                                  net/uts/pid/mount namespace, on a bridge.
#   cluster.sh exec DIR NODE CMD.. run CMD inside NODE's namespaces (as root)
#   cluster.sh down DIR            kill everything, remove cgroups/links, rm -rf DIR
#
# After `up`:  . DIR/env.sh   (exports SLURM_CONF, OMPI_MCA_*, PS_* helpers)
# Jobs must be submitted by the unprivileged $PS_USER (default pstest), e.g.
#   runuser -u pstest -- sbatch -D DIR/jobs ...      (runuser keeps SLURM_CONF)
#
# Environment knobs: PS_USER (pstest), PS_CPUS (16 CPUs declared per node),
#   PS_CTLD_PORT / PS_SLURMD_PORT (default: random free ports), PS_SUBNET
#   (default: first 10.78.N not on any interface), PS_UP_TIMEOUT (60 s),
#   PS_KEEP_ON_FAIL=1 (do not tear down when `up` fails).
set -euo pipefail

PS_USER=${PS_USER:-pstest}
PS_CPUS=${PS_CPUS:-16}
PS_UP_TIMEOUT=${PS_UP_TIMEOUT:-60}

log() { echo "cluster.sh: $*" >&2; }
die() { log "$*"; exit 1; }

need_pkgs() {
    local b missing=()
    for b in slurmd slurmctld srun sinfo munged tini mpicc mpirun ip unshare nsenter ss; do
        command -v "$b" >/dev/null || missing+=("$b")
    done
    [ -e /usr/include/slurm/slurm.h ] || missing+=(slurm.h)
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing packages (missing: ${missing[*]})"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends \
            slurmd slurmctld slurm-client libslurm-dev munge tini \
            openmpi-bin libopenmpi-dev iproute2 util-linux >/dev/null
    fi
}

port_free() { ! ss -Htan "( sport = :$1 )" 2>/dev/null | grep -q .; }
pick_port() {            # random free TCP port in 20000..39999, different from $1
    local p
    for _ in $(seq 200); do
        p=$(( 20000 + RANDOM % 20000 ))
        [ "$p" != "${1:-}" ] && port_free "$p" && { echo "$p"; return; }
    done
    die "no free port"
}
pick_subnet() {          # first 10.78.N.0/24 not used by any interface
    local n used
    used=$(ip -o -4 addr show | awk '{print $4}')
    for n in $(seq 0 255); do
        grep -q "^10\.78\.$n\." <<<"$used" || { echo "10.78.$n"; return; }
    done
    die "no free 10.78.N.0/24 subnet"
}

# spawn CMD...: run CMD in a new session with every fd > 2 closed, so that
# daemons do not hold the caller's pipes open (a `cluster.sh up | tee` or a test
# runner reading our output would otherwise never see EOF).  Use with `&`;
# $! is CMD's pid (a background subshell is no group leader => setsid doesn't fork).
spawn() {
    local fd
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null || true
    done
    exec setsid "$@"
}

wait_idle() {            # wait_idle CONF N: until N nodes are idle
    local conf=$1 n=$2 deadline=$(( SECONDS + PS_UP_TIMEOUT )) cnt
    while :; do
        cnt=$(SLURM_CONF=$conf sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l || true)
        [ "$cnt" -ge "$n" ] && return 0
        [ $SECONDS -lt $deadline ] || die "nodes not idle after ${PS_UP_TIMEOUT}s"
        sleep 0.1
    done
}

up_failed() {
    local f
    for f in "$DIR"/log/*; do [ -f "$f" ] && { echo "==> $f" >&2; tail -n 15 "$f" >&2; }; done
    [ -f "$DIR/munge/munged.log" ] && tail -n 5 "$DIR/munge/munged.log" >&2
    if [ "${PS_KEEP_ON_FAIL:-0}" = 1 ]; then
        log "up failed; left $DIR as is (PS_KEEP_ON_FAIL=1)"
    else
        log "up failed; tearing down"; cmd_down "$DIR"
    fi
}

# ---------------------------------------------------------------- up
cmd_up() {
    DIR=${1%/}; NODES=${2:-0}
    [[ "$DIR" = /* ]] || DIR=$(pwd)/$DIR
    [[ "$NODES" =~ ^[0-9]+$ ]] || die "NODES must be a number"
    [ -e "$DIR/env.sh" ] && die "$DIR already holds a cluster (run down first)"
    need_pkgs
    id "$PS_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$PS_USER"
    mkdir -p "$DIR"
    UP_OK=0
    trap '[ "$UP_OK" = 1 ] || up_failed' EXIT

    local host ctld_port slurmd_port subnet="" ctld_addr n nodes_conf=""
    host=$(hostname -s)
    cl=ps$(printf '%s' "$DIR" | md5sum | cut -c1-8)   # unique ClusterName, also prefixes links/cgroups
    ctld_port=${PS_CTLD_PORT:-$(pick_port)}
    slurmd_port=${PS_SLURMD_PORT:-$(pick_port "$ctld_port")}

    mkdir -p "$DIR"/{etc,munge,ctld,spool,log,run,jobs,nodetmp}
    chmod 755 "$DIR" "$DIR"/{etc,munge,spool,run,log}
    chmod 1777 "$DIR/nodetmp"
    chown slurm: "$DIR"/{ctld,log,run}
    chown "$PS_USER": "$DIR/jobs"

    # ---- munge: own key, socket, pid, log, seed; all under $DIR/munge.
    # Runs as root in the foreground (-F, no daemonizing double fork).
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 600 "$DIR/munge/munge.key"
    spawn munged -F --socket="$DIR/munge/munge.sock" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
        --seed-file="$DIR/munge/munged.seed" </dev/null >/dev/null 2>&1 &
    echo $! > "$DIR/run/munged.pid"

    # ---- topology.  Concurrent `up`s: serialize subnet choice + bridge
    # creation (the kernel happily accepts two bridges with the same subnet).
    local lockfd
    exec {lockfd}>"$( [ -d /run/lock ] && echo /run/lock || echo /tmp )/ps-slurm-cluster.lock"
    flock "$lockfd"
    if [ "$NODES" -eq 0 ]; then
        ctld_addr=127.0.0.1
        NODELIST=$host
        nodes_conf="NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$PS_CPUS State=UNKNOWN"
    else
        subnet=${PS_SUBNET:-$(pick_subnet)}
        ctld_addr=$subnet.1
        NODELIST=node[1-$NODES]
        {   echo "127.0.0.1 localhost"
            echo "$ctld_addr $host"
            for n in $(seq 1 "$NODES"); do echo "$subnet.$((10+n)) node$n"; done
        } > "$DIR/etc/hosts"
        for n in $(seq 1 "$NODES"); do
            nodes_conf+="NodeName=node$n NodeAddr=$subnet.$((10+n)) NodeHostname=node$n CPUs=$PS_CPUS State=UNKNOWN"$'\n'
        done
    fi

    cat > "$DIR/etc/slurm.conf" <<EOF
ClusterName=$cl
SlurmctldHost=$host($ctld_addr)
SlurmUser=slurm
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/etc/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/cgroup
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
${nodes_conf}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    cat > "$DIR/etc/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupAutomount=no
CgroupMountpoint=/sys/fs/cgroup
EOF
    # PMIx client dirs default to /tmp/spmix_appdir_<uid>_<job>.<step>, shared
    # by all emulated nodes (and concurrent clusters) => "File exists" step
    # launch failures.  Put them under $DIR/nodetmp, made per-node below.
    echo "PMIxCliTmpDirBase=$DIR/nodetmp" > "$DIR/etc/mpi.conf"
    : > "$DIR/etc/plugstack.conf"          # don't pick up /etc/slurm/plugstack.conf.d
    chmod 644 "$DIR"/etc/*

    cat > "$DIR/env.sh" <<EOF
export SLURM_CONF=$DIR/etc/slurm.conf
export OMPI_MCA_mpi_yield_when_idle=1
export PS_DIR=$DIR PS_CLUSTER=$cl PS_NODES=$NODES PS_NODELIST='$NODELIST'
export PS_USER=$PS_USER PS_SUBNET=$subnet PS_CTLD_PORT=$ctld_port PS_SLURMD_PORT=$slurmd_port
EOF
    local conf=$DIR/etc/slurm.conf

    # ---- bridge first: it carries SlurmctldHost's address in multi-node mode
    if [ "$NODES" -gt 0 ]; then
        ip link add "${cl}br" type bridge
        ip addr add "$ctld_addr/24" dev "${cl}br"
        ip link set "${cl}br" up
    fi
    flock -u "$lockfd"; exec {lockfd}>&-

    # ---- slurmctld: host namespaces, foreground (-D), drops to SlurmUser
    spawn slurmctld -D -i -f "$conf" </dev/null >"$DIR/log/slurmctld.stderr" 2>&1 &
    echo $! > "$DIR/run/slurmctld.fg.pid"
    # slurmd registers at start; if slurmctld isn't listening yet, slurmd
    # retries only later (single-node bring-up took ~1.1 s instead of ~0.5 s)
    local deadline=$(( SECONDS + PS_UP_TIMEOUT ))
    until SLURM_CONF=$conf scontrol ping 2>/dev/null | grep -q 'is UP'; do
        [ $SECONDS -lt $deadline ] || die "slurmctld not answering after ${PS_UP_TIMEOUT}s"
        kill -0 "$(cat "$DIR/run/slurmctld.fg.pid")" 2>/dev/null || die "slurmctld died"
        sleep 0.05
    done

    # ---- slurmd(s)
    if [ "$NODES" -eq 0 ]; then
        start_node "$host" "" ""
    else
        for n in $(seq 1 "$NODES"); do
            start_node "node$n" "$subnet.$((10+n))" "${cl}br"
        done
    fi
    wait_idle "$conf" "$([ "$NODES" -eq 0 ] && echo 1 || echo "$NODES")"
    UP_OK=1
    log "cluster $cl up in $DIR: $NODELIST idle (SlurmctldPort=$ctld_port SlurmdPort=$slurmd_port${subnet:+ subnet=$subnet.0/24})"
}

# start_node NAME ADDR BRIDGE — ADDR empty: single-node mode (host net/pid/uts)
start_node() {
    local name=$1 addr=$2 br=$3
    # Own freezer cgroup subtree, bind-mounted over /sys/fs/cgroup/freezer in
    # the node's mount namespace: nodes/clusters never share the
    # slurm_<node>/uid_U/job_J/step_S cgroups that proctrack/cgroup kills by.
    local cg=/sys/fs/cgroup/freezer/slurm_${cl}_$name
    mkdir -p "$cg" "$DIR/spool/$name"
    mkdir -p -m 1777 "$DIR/nodetmp.$name"
    local ready=$DIR/run/$name.ready
    local inner="
        set -e
        mount --bind '$cg' /sys/fs/cgroup/freezer
        mount --bind '$DIR/nodetmp.$name' '$DIR/nodetmp'
        mount -t tmpfs -o mode=1777,size=2g tmpfs /dev/shm"
    if [ -z "$addr" ]; then
        inner+="
        exec slurmd -D -f '$DIR/etc/slurm.conf' -N '$name'"
        spawn unshare --mount --propagation private -- sh -c "$inner" \
            >"$DIR/log/$name.stderr" 2>&1 </dev/null &
        echo $! > "$DIR/run/$name.unshare.pid"
        echo $! > "$DIR/run/$name.nspid"      # unshare exec()s sh: same process
        return
    fi
    inner+="
        hostname '$name'
        mount -t proc proc /proc
        mount --bind '$DIR/etc/hosts' /etc/hosts
        while [ ! -e '$ready' ]; do sleep 0.02; done
        exec tini -- slurmd -D -f '$DIR/etc/slurm.conf' -N '$name'"
    spawn unshare --net --uts --pid --mount --fork --kill-child --propagation private \
        -- sh -c "$inner" >"$DIR/log/$name.stderr" 2>&1 </dev/null &
    local upid=$! cpid=""
    echo "$upid" > "$DIR/run/$name.unshare.pid"
    for _ in $(seq 250); do
        cpid=$(pgrep -P "$upid" | head -1 || true)
        [ -n "$cpid" ] && break
        sleep 0.02
    done
    [ -n "$cpid" ] || die "namespace for $name did not start"
    echo "$cpid" > "$DIR/run/$name.nspid"
    local vh=${cl}h${name#node} vn=${cl}n${name#node}
    ip link add "$vh" type veth peer name "$vn"
    ip link set "$vn" netns "$cpid"
    ip link set "$vh" master "$br" up
    nsenter -t "$cpid" --net sh -c "
        ip link set lo up
        ip link set '$vn' name eth0
        ip addr add '$addr/24' dev eth0
        ip link set eth0 up"
    touch "$ready"
}

# ---------------------------------------------------------------- exec
cmd_exec() {
    DIR=${1%/}; local node=$2; shift 2
    [[ "$DIR" = /* ]] || DIR=$(pwd)/$DIR
    local p; p=$(cat "$DIR/run/$node.nspid") || die "no node $node"
    if [ -e "$DIR/run/$node.ready" ]; then
        exec nsenter -t "$p" --net --uts --mount --pid -- "$@"
    else
        exec nsenter -t "$p" --mount -- "$@"
    fi
}

# ---------------------------------------------------------------- down
cmd_down() {
    DIR=${1%/}
    [[ "$DIR" = /* ]] || DIR=$(pwd)/$DIR
    [ -d "$DIR" ] || { log "$DIR does not exist"; return 0; }
    local cl="" f p c pids="" q allpids=""
    cl=ps$(printf '%s' "$DIR" | md5sum | cut -c1-8)

    # 1. slurmctld (foreground pid; also the pid file in case -D was not used)
    for f in "$DIR/run/slurmctld.fg.pid" "$DIR/run/slurmctld.pid"; do
        [ -e "$f" ] || continue
        p=$(cat "$f"); allpids+=" $p $(pgrep -P "$p" | tr '\n' ' ' || true)"   # + slurmscriptd
        kill -9 "$p" 2>/dev/null || true
    done
    # 2. every process in a node's mount namespace (slurmd, slurmstepd, job
    #    tasks — all inherit it), then the unshare wrapper (for a pid-ns node
    #    its death SIGKILLs the ns init => the whole pid ns dies).
    for f in "$DIR"/run/*.unshare.pid; do
        [ -e "$f" ] || continue
        p=$(cat "$f"); allpids+=" $p"
        c=$(cat "${f%.unshare.pid}.nspid" 2>/dev/null || true)
        if [ -n "$c" ] && [ -e "/proc/$c/ns/mnt" ] \
           && ! [ "/proc/$c/ns/mnt" -ef /proc/self/ns/mnt ]; then
            # SIGSTOP everything sharing c's mount ns (stopped processes cannot
            # fork), rescan until stable, then SIGKILL.  c stays alive (stopped)
            # as the reference until then.
            pids=""
            for _ in 1 2 3 4 5 6 7 8; do
                local new=""
                for q in /proc/[0-9]*; do
                    [ "$q/ns/mnt" -ef "/proc/$c/ns/mnt" ] || continue
                    [[ " $pids " == *" ${q#/proc/} "* ]] || new+=" ${q#/proc/}"
                done
                [ -z "$new" ] && break
                kill -STOP $new 2>/dev/null || true
                pids+="$new"
            done
            allpids+="$pids"
            kill -9 $pids 2>/dev/null || true
        fi
        kill -9 "$p" 2>/dev/null || true
    done
    # 3. munged
    [ -e "$DIR/run/munged.pid" ] && { p=$(cat "$DIR/run/munged.pid"); allpids+=" $p"; kill "$p" 2>/dev/null || true; }
    # 4. fallback: anything still in our freezer subtrees (e.g. slurmstepds
    #    and tasks of a single-node cluster whose slurmd died earlier, taking
    #    the mount-ns reference with it): freeze, SIGKILL, thaw.
    for f in /sys/fs/cgroup/freezer/slurm_"$cl"_*; do
        [ -d "$f" ] || continue
        pids=$(find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null | tr '\n' ' ')
        [ -n "${pids// }" ] || continue
        echo FROZEN > "$f/freezer.state" 2>/dev/null || true
        allpids+=" $pids"
        kill -9 $pids 2>/dev/null || true
        echo THAWED > "$f/freezer.state" 2>/dev/null || true
        for _ in $(seq 50); do
            [ -z "$(find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] && break
            sleep 0.1
        done
    done
    # 5. wait until all of them are gone, zombies included: their reaper (PID 1, or a subreaper
    #    such as the test binaries, whose SlurmCluster reaps them while this runs) must reap them
    for _ in $(seq 100); do
        pids=""
        for p in $allpids; do [ -e "/proc/$p" ] && pids+=" $p"; done
        [ -z "$pids" ] && break
        sleep 0.1
    done
    [ -n "$pids" ] && log "warning: still present after 10s: $pids"
    # 6. cgroups, links
    for f in /sys/fs/cgroup/*/slurm_"$cl"_*; do
        [ -d "$f" ] || continue
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            find "$f" -depth -type d -exec rmdir {} + 2>/dev/null || true
            [ -d "$f" ] || break
            sleep 0.3
        done
        [ -d "$f" ] && log "warning: could not remove cgroup $f"
    done
    for f in /sys/class/net/"$cl"*; do
        [ -e "$f" ] && ip link del "${f##*/}" 2>/dev/null || true
    done
    rm -rf "$DIR" 2>/dev/null || true
    [ -d "$DIR" ] && log "warning: could not remove $DIR"
    return 0
}

case "${1:-}" in
    up)   [ $# -ge 2 ] || die "usage: $0 up DIR [nodes]";   cmd_up "$2" "${3:-0}" ;;
    exec) [ $# -ge 4 ] || die "usage: $0 exec DIR NODE CMD..."; cmd_exec "${@:2}" ;;
    down) [ $# -ge 2 ] || die "usage: $0 down DIR";        cmd_down "$2" ;;
    *)    die "usage: $0 up DIR [nodes] | exec DIR NODE CMD... | down DIR" ;;
esac
