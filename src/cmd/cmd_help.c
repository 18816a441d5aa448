#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/exitcode.h"

void gdn_print_global_usage(FILE *f)
{
	fputs("usage: gdnctl [-C DIR] [-c KEY=VALUE]... COMMAND [ARGS]\n"
	      "       gdnctl --version | --help | help COMMAND\n",
	      f);
}

static void list_commands(FILE *f, bool aliases)
{
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++) {
		if ((c->flags & CMD_HIDDEN) || !!(c->flags & CMD_ALIAS) != aliases)
			continue;
		if (aliases)
			fprintf(f, "   %-20s same as '%s' (original gdnctl.py name)\n", c->name,
				c->alias_of);
		else
			fprintf(f, "   %-20s %s\n", c->name, c->summary);
	}
}

void gdn_print_global_help(FILE *f)
{
	bool any_alias = false;

	gdn_print_global_usage(f);
	fputs("\nHill-climb the speed of ML kernels: run tests and profiles on clusters,\n"
	      "read profiler traces, and drive an unattended optimisation loop.\n"
	      "\nGlobal options:\n"
	      "   -C DIR               run as if started in DIR\n"
	      "   -c KEY=VALUE         set a configuration value (highest precedence)\n"
	      "   --version            print the version\n"
	      "   -h, --help           show this help\n"
	      "\nCommands:\n",
	      f);
	list_commands(f, false);
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++)
		any_alias |= !!(c->flags & CMD_ALIAS);
	if (any_alias) {
		fputs("\nAliases:\n", f);
		list_commands(f, true);
	}
	fputs("\nSee 'gdnctl help COMMAND' for the options of one command.\n"
	      "Exit status: 0 ok, 1 failed, 2 usage, 3 configuration, 4 backend or agent,\n"
	      "5 network, 124 timed out, 128+N killed by signal N.\n",
	      f);
}

/* `gdnctl help [CMD]`: the global help, or exactly what `gdnctl CMD -h` prints. */
int cmd_help(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const struct gdn_cmd *c;
	const char *hargv[] = {NULL, "-h", NULL};

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		gdn_print_global_help(stdout);
		return GDN_EXIT_OK;
	}
	if (argc > 2) {
		gdn_error("usage: gdnctl help [COMMAND]");
		return GDN_EXIT_USAGE;
	}
	c = gdn_cmd_find(argv[1]);
	if (!c) {
		gdn_error("'%s' is not a gdnctl command; see 'gdnctl --help'", argv[1]);
		return GDN_EXIT_USAGE;
	}
	hargv[0] = c->name;
	ctx->name = c->name;
	return c->fn(2, hargv, ctx);
}

int cmd_version(int argc, const char **argv, struct gdn_ctx *ctx)
{
	(void)ctx;
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: gdnctl version\n\nPrint the version of gdnctl.\n");
		return GDN_EXIT_OK;
	}
	if (argc > 1) {
		gdn_error("usage: gdnctl version");
		return GDN_EXIT_USAGE;
	}
	printf("gdnctl version %s\n", GDNCTL_VERSION);
	return GDN_EXIT_OK;
}
