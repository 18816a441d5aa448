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
	test_bail_out "$*" "$SLURM_DIR"/munge/log "$SLURM_DIR"/slurmctld.log "$SLURM_DIR"/slurmd.log
}

_slurm_idle() { sinfo -h -o %t 2>/dev/null | grep -qx idle; }
_slurm_bind_failed() {
	grep -q "Address already in use" "$SLURM_DIR/slurmctld.log" "$SLURM_DIR/slurmd.log" 2>/dev/null
}
_slurm_up() { _slurm_bind_failed || _slurm_idle; }

# slurm.conf for HOST with the slurmctld and slurmd ports: _slurm_conf HOST CTLD_PORT D_PORT
_slurm_conf() {
	local host=$1 ctld_port=$2 d_port=$3
	cat <<EOF
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
}

slurm_start() {
	local host ctld_port d_port
	test_need_programs "Slurm or munge" "bash .ci/setup test installs them" \
		munged slurmctld slurmd sbatch squeue sacct scontrol scancel sinfo
	if [ "$(id -u)" -ne 0 ]; then
		[ "${CI:-}" = true ] && { echo "Bail out! the private Slurm cluster needs root"; exit 1; }
		skip_all "the private Slurm cluster needs root (SlurmUser=root)"
	fi

	mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/state" "$SLURM_DIR/spool" &&
		chmod 700 "$SLURM_DIR/munge" || _slurm_fail "cannot create $SLURM_DIR"
	head -c 1024 /dev/urandom >"$SLURM_DIR/munge/key" && chmod 400 "$SLURM_DIR/munge/key" ||
		_slurm_fail "cannot write the munge key"
	test_start_daemon _slurm_fail munged "$SLURM_DIR/munge/pid" \
		munged --key-file="$SLURM_DIR/munge/key" --socket="$SLURM_DIR/munge/sock" \
		--pid-file="$SLURM_DIR/munge/pid" --log-file="$SLURM_DIR/munge/log" \
		--seed-file="$SLURM_DIR/munge/seed" --force

	host=$(hostname -s)
	export SLURM_CONF=$SLURM_DIR/slurm.conf
	# Ports the OS gave other sockets a moment ago can be taken again before
	# the daemons bind them (another test's server, an outgoing connection):
	# a daemon that logs "Address already in use" is stopped and both start
	# again on new ports.
	local attempt
	for attempt in 1 2 3 4 5; do
		ctld_port=$(test_free_port)
		d_port=$(test_free_port)
		while [ "$d_port" = "$ctld_port" ]; do d_port=$(test_free_port); done
		_slurm_conf "$host" "$ctld_port" "$d_port" >"$SLURM_CONF"
		: >"$SLURM_DIR/slurmctld.log"
		: >"$SLURM_DIR/slurmd.log"
		test_start_daemon _slurm_fail slurmctld "$SLURM_DIR/slurmctld.pid" slurmctld -c
		test_start_daemon _slurm_fail slurmd "$SLURM_DIR/slurmd.pid" slurmd -c
		test_wait_until 30 _slurm_up
		_slurm_bind_failed || break
		test_stop_pidfile "$SLURM_DIR/slurmd.pid"
		test_stop_pidfile "$SLURM_DIR/slurmctld.pid"
	done
	test_atexit "_slurm_stop_jobs" # runs first: jobs, then slurmd, slurmctld, munged
	if _slurm_idle; then
		say "slurm: cluster gdntest up (slurmctld port $ctld_port, slurmd port $d_port)"
		return 0
	fi
	_slurm_fail "the Slurm node did not become idle within 30 s: $(sinfo 2>&1)"
}
