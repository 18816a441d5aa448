#!/usr/bin/env bash
# download-trace BACKEND:PATH for a real single-node Slurm: a batch job
# writes traces into the backend's workdir (on the shared file system,
# visible here), and `download-trace hpc:traces` copies them back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-slurm.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SBATCH GDNCTL_SQUEUE GDNCTL_SACCT \
	GDNCTL_SCONTROL GDNCTL_SCANCEL
slurm_start

mkdir -p "$XDG_CONFIG_HOME/gdnctl" jobs wd
cat >"$XDG_CONFIG_HOME/gdnctl/config.yaml" <<EOF
backends:
  hpc:
    type: slurm
    workdir: $TRASH/wd
    jobdir: $TRASH/jobs
    poll: 500ms
EOF

test_expect_success 'a Slurm job leaves traces in its workdir; download-trace copies them back' '
	gdnctl run -b hpc -- sh -c "mkdir -p traces/run1 && printf slurm | gzip >traces/run1/p.trace.json.gz && echo x >traces/run1/other.txt && hostname" >out 2>&1 &&
	test_grep "finished: SUCCEEDED\|COMPLETED" out &&
	test -e wd/traces/run1/p.trace.json.gz &&
	gdnctl download-trace hpc:traces --output-dir got >out 2>err &&
	test_grep ! "ssh" err &&
	test_grep "^\[gdnctl\] run1/p.trace.json.gz -> $TRASH/got/run1/p.trace.json.gz$" out &&
	test "$(gzip -dc got/run1/p.trace.json.gz)" = slurm &&
	test ! -e got/run1/other.txt
'

test_done
