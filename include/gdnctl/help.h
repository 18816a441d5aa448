/*
 * Documents about the commands, generated from the command table and each
 * command's option table (src/cmd/cmd_help.c): for `gdnctl help --json`,
 * `gdnctl help --man` and `gdnctl completion`.
 */
#ifndef GDNCTL_HELP_H
#define GDNCTL_HELP_H

#include <jansson.h>
#include "gdnctl/compat.h"

struct gdn_cmd;
struct sbuf;

/* New reference: schema gdnctl.commands.v1, {"version", "global_options", "commands"}. */
json_t *gdn_help_commands_json(void);

#endif
