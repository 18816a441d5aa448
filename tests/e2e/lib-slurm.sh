# A private single-node Slurm cluster for end-to-end tests (sourced after
# lib.sh): munged, slurmctld and slurmd on 127.0.0.1 with ports chosen by
# the OS, every file under $TRASH/slurm, no slurmdbd (so sacct answers
# "Slurm accounting storage is disabled", as on many small clusters).
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/lib-slurm.sh"
#   slurm_start        # exports SLURM_CONF; skips or fails the script
#
# The daemons run as root (SlurmUser=root), so the tests need root. When
# Slurm or munge is not installed, the script is skipped outside CI and
# fails in CI ($CI = true). A daemon that does not start fails the script
# with its own log. The node claims 8 CPUs whatever the machine has
# (config_overrides), so a long job never holds up the others. Everything
# is stopped at exit, by pid: jobs are cancelled, their step processes
# killed (scontrol listpids), then slurmd, slurmctld and munged.

SLURM_DIR=$TRASH/slurm

# Whether process $1 still runs (a zombie that init has not reaped yet does not).
_proc_alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $s in Z*) return 1 ;; esac
	return 0
}

# Stop the process whose pid is in file $1: TERM, then KILL after 5 s.
_slurm_kill_pidfile() {
	local pid i
	[ -s "$1" ] || return 0
	pid=$(cat "$1")
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		_proc_alive "$pid" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	return 0
}

# Cancel our jobs and kill what is left of their steps on this node.
_slurm_stop_jobs() {
	local pids p
	scancel --full --quiet --user=root 2>/dev/null
	sleep 0.5
	pids=$(scontrol listpids 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}')
	for p in $pids; do
		kill -KILL "$p" 2>/dev/null
	done
	return 0
}

_slurm_fail() {
	local f
	echo "Bail out! $*"
	for f in "$SLURM_DIR"/munge/log "$SLURM_DIR"/slurmctld.log "$SLURM_DIR"/slurmd.log; do
		[ -s "$f" ] && { echo "# --- $f"; tail -n 30 "$f" | sed 's/^/# /'; }
	done
	exit 1
}

slurm_start() {
	local p missing= host ctld_port d_port i
	for p in munged slurmctld slurmd sbatch squeue sacct scontrol scancel sinfo; do
		command -v "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		if [ "${CI:-}" = true ]; then
			echo "Bail out! Slurm or munge is not installed (missing:$missing)"
			exit 1
		fi
		skip_all "Slurm or munge is not installed (missing:$missing; bash .ci/setup test installs them)"
	fi
	if [ "$(id -u)" -ne 0 ]; then
		[ "${CI:-}" = true ] && { echo "Bail out! the private Slurm cluster needs root"; exit 1; }
		skip_all "the private Slurm cluster needs root (SlurmUser=root)"
	fi

	mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/state" "$SLURM_DIR/spool" &&
		chmod 700 "$SLURM_DIR/munge" || _slurm_fail "cannot create $SLURM_DIR"
	head -c 1024 /dev/urandom >"$SLURM_DIR/munge/key" && chmod 400 "$SLURM_DIR/munge/key" ||
		_slurm_fail "cannot write the munge key"
	test_atexit "_slurm_kill_pidfile '$SLURM_DIR/munge/pid'"
	munged --key-file="$SLURM_DIR/munge/key" --socket="$SLURM_DIR/munge/sock" \
		--pid-file="$SLURM_DIR/munge/pid" --log-file="$SLURM_DIR/munge/log" \
		--seed-file="$SLURM_DIR/munge/seed" --force >"$SLURM_DIR/munge/out" 2>&1 ||
		_slurm_fail "munged did not start: $(cat "$SLURM_DIR/munge/out")"

	host=$(hostname -s)
	ctld_port=$(test_free_port)
	d_port=$(test_free_port)
	while [ "$d_port" = "$ctld_port" ]; do d_port=$(test_free_port); done
	cat >"$SLURM_DIR/slurm.conf" <<EOF
ClusterName=gdntest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/munge/sock
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool/%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
InactiveLimit=0
KillWait=2
MinJobAge=600
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	export SLURM_CONF=$SLURM_DIR/slurm.conf

	test_atexit "_slurm_kill_pidfile '$SLURM_DIR/slurmctld.pid'"
	test_atexit "_slurm_kill_pidfile '$SLURM_DIR/slurmd.pid'"
	test_atexit "_slurm_stop_jobs"
	slurmctld -c >"$SLURM_DIR/slurmctld.out" 2>&1 ||
		_slurm_fail "slurmctld did not start: $(cat "$SLURM_DIR/slurmctld.out")"
	slurmd -c >"$SLURM_DIR/slurmd.out" 2>&1 ||
		_slurm_fail "slurmd did not start: $(cat "$SLURM_DIR/slurmd.out")"
	for ((i = 0; i < 150; i++)); do
		if sinfo -h -o %t 2>/dev/null | grep -qx idle; then
			say "slurm: cluster gdntest up (slurmctld port $ctld_port, slurmd port $d_port)"
			return 0
		fi
		sleep 0.2
	done
	_slurm_fail "the Slurm node did not become idle within 30 s: $(sinfo 2>&1)"
}
