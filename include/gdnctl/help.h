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

/*
 * New reference: schema gdnctl.command.v1, {"name", "summary", "alias_of",
 * "hidden", "aliases", "usage", "description", "extra", "positional",
 * "options", "subcommands": [{"name", and when the subcommand has its own
 * table "usage", "description", "extra", "positional", "options"}]}.
 * NULL when the command parses no option table.
 */
json_t *gdn_help_command_json(const struct gdn_cmd *c);
/* New reference: schema gdnctl.commands.v1, {"version", "global_options", "commands"}. */
json_t *gdn_help_commands_json(void);

/* Append the roff page gdnctl(1). */
void gdn_help_man_main(struct sbuf *out);
/* Append the roff page gdnctl-CMD(1); -1 when c is an alias or has no option table. */
int gdn_help_man_command(struct sbuf *out, const struct gdn_cmd *c);

#endif
