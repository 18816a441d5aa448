/*
 * The command table: one sorted list of every command and alias. Aliases
 * of the original gdnctl.py names live here too, marked CMD_ALIAS.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"

const struct gdn_cmd gdn_commands[] = {
    {"allocate", cmd_allocate, "allocate a dev TPU and hold it until Ctrl-C", CMD_NEEDS_CONFIG,
     NULL},
    {"codex-loop", cmd_loop, "the original gdnctl.py name of loop", CMD_ALIAS | CMD_NEEDS_CONFIG,
     "loop"},
    {"completion", cmd_completion, "print a bash or zsh completion script", 0, NULL},
    {"config", cmd_config, "show the effective configuration and where each value came from",
     CMD_NEEDS_CONFIG, NULL},
    {"demo", cmd_demo, "run the hill-climb loop end to end on a small bundled C project", 0, NULL},
    {"dev-tpu-allocate", cmd_marin_alias, "the original gdnctl.py name of allocate",
     CMD_ALIAS | CMD_NEEDS_CONFIG, "allocate"},
    {"dev-tpu-profile", cmd_marin_alias, "the original gdnctl.py name of profile",
     CMD_ALIAS | CMD_NEEDS_CONFIG, "profile"},
    {"dev-tpu-test", cmd_marin_alias, "the original gdnctl.py name of test",
     CMD_ALIAS | CMD_NEEDS_CONFIG, "test"},
    {"doctor", cmd_doctor,
     "check the environment (programs, ssh, tokens, disk) and say what to fix", 0, NULL},
    {"download-trace", cmd_download_trace,
     "download profiler traces from the Hugging Face Hub, GCS or W&B artifacts", 0, NULL},
    {"help", cmd_help, "show help for gdnctl or one command", 0, NULL},
    {"hf-download-trace", cmd_download_trace, "the original gdnctl.py name of download-trace",
     CMD_ALIAS, "download-trace"},
    {"lint-log", cmd_lint_log, "check the markdown running log of iterations", CMD_NEEDS_CONFIG,
     NULL},
    {"logs", cmd_logs, "print the output of a job on a backend", CMD_NEEDS_CONFIG, NULL},
    {"loop", cmd_loop, "run a coding agent in an unattended hill-climb loop that never loses work",
     CMD_NEEDS_CONFIG, NULL},
    {"metrics", cmd_metrics, "read run metrics from Weights & Biases (summary or history window)",
     0, NULL},
    {"profile", cmd_profile, "run the project's profile on a backend (Marin: GDN tiny profile)",
     CMD_NEEDS_CONFIG, NULL},
    {"ray-logs", cmd_marin_alias, "the original gdnctl.py name of logs",
     CMD_ALIAS | CMD_NEEDS_CONFIG, "logs"},
    {"ray-profile", cmd_marin_alias, "the original gdnctl.py name of profile",
     CMD_ALIAS | CMD_NEEDS_CONFIG, "profile"},
    {"ray-test", cmd_marin_alias, "the original gdnctl.py name of test",
     CMD_ALIAS | CMD_NEEDS_CONFIG, "test"},
    {"ray-wait", cmd_marin_alias, "the original gdnctl.py name of wait",
     CMD_ALIAS | CMD_NEEDS_CONFIG, "wait"},
    {"report", cmd_report, "write an HTML report and a summary of a loop run", 0, NULL},
    {"run", cmd_run, "run a command on a backend (local, ssh, slurm, ...)", CMD_NEEDS_CONFIG, NULL},
    {"stop", cmd_stop, "stop a job on a backend", CMD_NEEDS_CONFIG, NULL},
    {"test", cmd_test, "run the project's tests on a backend (Marin: GDN tests on Ray)",
     CMD_NEEDS_CONFIG, NULL},
    {"trace", cmd_trace, "summarise and compare profiler traces (per-op device time)", 0, NULL},
    {"version", cmd_version, "print the version", 0, NULL},
    {"wait", cmd_wait, "wait for a job on a backend and report how it ended", CMD_NEEDS_CONFIG,
     NULL},
    {"xprof-compare", cmd_xprof_compare,
     "the original gdnctl.py xprof-compare, run locally (payload of trace diff --json)", CMD_ALIAS,
     "trace"},
    {"xprof-compare-runs", cmd_xprof_compare_runs,
     "the original gdnctl.py xprof-compare-runs: trace diff of two W&B runs' profiles", CMD_ALIAS,
     "trace"},
    {NULL, NULL, NULL, 0, NULL},
};

const struct gdn_cmd *gdn_cmd_find(const char *name)
{
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}
