/*
 * The agent driver table: one row per driver (the driver itself is one
 * file, agent_<name>.c). The order is the order of the --agent choices
 * in help and documentation; the first is not the default (GDN_AGENT_DEFAULT).
 */
#include "gdnctl/compat.h"
#include "agent_impl.h"

const struct agent_driver *const agent_drivers[] = {
    &agent_codex_driver,
    &agent_claude_driver,
    &agent_command_driver,
    NULL,
};
