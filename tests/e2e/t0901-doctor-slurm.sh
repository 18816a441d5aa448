#!/usr/bin/env bash
# gdnctl doctor against a real single-node Slurm (lib-slurm.sh): the slurm
# backend's programs are found and `scontrol ping` answers (ok); with a
# slurm.conf whose controller port nothing listens on, the controller
# check FAILs with a fix hint and exit 1, within --timeout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-slurm.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SBATCH GDNCTL_SQUEUE GDNCTL_SACCT \
	GDNCTL_SCONTROL GDNCTL_SCANCEL
slurm_start

mkdir -p "$XDG_CONFIG_HOME/gdnctl"
cat >"$XDG_CONFIG_HOME/gdnctl/config.yaml" <<EOF
backends:
  hpc:
    type: slurm
    jobdir: $TRASH/jobs
EOF

# a port where nothing listens, held for this script (lib.sh)
test_closed_port || skip_all "cannot hold a closed port on 127.0.0.1"

test_expect_success 'a running controller: programs and controller ok' '
	gdnctl doctor -b hpc --no-agent >out 2>err &&
	test_grep "^ok    backend hpc  *type slurm$" out &&
	test_grep "^ok    backend hpc: programs  *.*/sbatch, .*/squeue, .*/sacct, .*/scancel, .*/scontrol$" out &&
	test_grep "^ok    backend hpc: controller  *Slurmctld(primary) at .* is UP$" out
'

test_expect_success 'a controller nobody answers for: FAIL with a fix, exit 1, within --timeout' '
	dead=$CLOSED_PORT &&
	sed "s/^SlurmctldPort=.*/SlurmctldPort=$dead/" "$SLURM_CONF" >bad.conf &&
	start=$(date +%s) &&
	SLURM_CONF=$TRASH/bad.conf test_expect_code 1 gdnctl doctor -b hpc --no-agent --timeout 4s \
		>out 2>err &&
	elapsed=$(($(date +%s) - start)) &&
	test "$elapsed" -le 7 &&
	test_grep -E "^FAIL  backend hpc: controller  *(.scontrol ping. exited [0-9]+: .*DOWN|.scontrol ping. gave no answer within 4s)" out &&
	test_grep "^      fix: the controller does not answer: check that slurmctld runs" out
'

test_expect_success 'scontrol that hangs is stopped at --timeout' '
	mkdir -p bin &&
	printf "#!/bin/sh\nexec sleep 60\n" >bin/scontrol-hang &&
	chmod +x bin/scontrol-hang &&
	start=$(date +%s) &&
	test_expect_code 1 gdnctl -c "programs.scontrol=$TRASH/bin/scontrol-hang" doctor -b hpc \
		--no-agent --timeout 1s >out 2>err &&
	test $(($(date +%s) - start)) -le 4 &&
	test_grep "^FAIL  backend hpc: controller  *.$TRASH/bin/scontrol-hang ping. gave no answer within 1s$" out
'

test_done
