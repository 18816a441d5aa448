/*
 * The command table: one sorted list of every command and alias. Aliases
 * of the original gdnctl.py names live here too, marked CMD_ALIAS.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"

const struct gdn_cmd gdn_commands[] = {
    {"codex-loop", cmd_loop, "the original gdnctl.py name of loop", CMD_ALIAS | CMD_NEEDS_CONFIG,
     "loop"},
    {"config", cmd_config, "show the effective configuration and where each value came from",
     CMD_NEEDS_CONFIG, NULL},
    {"download-trace", cmd_download_trace,
     "download profiler traces from a Hugging Face Hub repository", 0, NULL},
    {"help", cmd_help, "show help for gdnctl or one command", 0, NULL},
    {"hf-download-trace", cmd_download_trace, "the original gdnctl.py name of download-trace",
     CMD_ALIAS, "download-trace"},
    {"lint-log", cmd_lint_log, "check the markdown running log of iterations", CMD_NEEDS_CONFIG,
     NULL},
    {"loop", cmd_loop, "run a coding agent in an unattended hill-climb loop that never loses work",
     CMD_NEEDS_CONFIG, NULL},
    {"metrics", cmd_metrics, "read run metrics from Weights & Biases (summary or history window)",
     0, NULL},
    {"trace", cmd_trace, "summarise and compare profiler traces (per-op device time)", 0, NULL},
    {"version", cmd_version, "print the version", 0, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

const struct gdn_cmd *gdn_cmd_find(const char *name)
{
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}
