/*
 * gdnctl: global options, dispatch from the command table, and the final
 * check that standard output was written.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/suggest.h"
#include "gdnctl/xalloc.h"

/*
 * Whether the command's arguments ask for help (then nothing needs loading):
 * -h, --help or an abbreviation of it ("--he"; opt_parse decides whether it
 * is one, and at worst the command then loads nothing and reports the error).
 */
static bool wants_help(int argc, const char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") ||
		    (strlen(argv[i]) >= 3 && !strncmp("--help", argv[i], strlen(argv[i]))))
			return true;
	return false;
}

/* A global long option abbreviated as argparse would ("--vers"): the full name, else `a`. */
static const char *global_long(const char *a)
{
	static const char *const names[] = {"--help", "--quiet", "--version"};
	size_t len = strlen(a);

	if (len < 3 || strncmp(a, "--", 2) || strchr(a, '='))
		return a;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strncmp(names[i], a, len))
			return names[i];
	return a;
}

static int prepare(const struct gdn_cmd *c, struct gdn_ctx *ctx)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_config_load_opts lo = {0};
	int ret;

	if (!(c->flags & (CMD_NEEDS_CONFIG | CMD_NEEDS_REPO)))
		return 0;
	ret = gdn_repo_discover(NULL, &ctx->repo_root, &err);
	if (ret && ret != GDN_ENOTFOUND)
		return gdn_die_err(&err);
	if (ret == GDN_ENOTFOUND && (c->flags & CMD_NEEDS_REPO)) {
		gdn_error("not inside a git repository: '%s'", ctx->cwd);
		return GDN_EXIT_USAGE;
	}
	gdn_err_clear(&err);
	lo.repo_root = ctx->repo_root;
	lo.cmdline = ctx->cfg_overrides.v;
	if (gdn_config_load(&ctx->config, &lo, &err))
		return gdn_die_err(&err);
	return 0;
}

static int finish_stdout(int code)
{
	if (fflush(stdout) || ferror(stdout)) {
		if (errno == EPIPE)
			return code;
		fprintf(stderr, "[gdnctl] error: write failure on standard output: %s\n",
			strerror(errno));
		return code ? code : GDN_EXIT_FAILED;
	}
	return code;
}

int main(int argc, char **argv)
{
	struct gdn_ctx ctx = {0};
	const struct gdn_cmd *c;
	char cwd[PATH_MAX];
	int i, code = 0;

	ctx.config = (struct gdn_config)GDN_CONFIG_INIT;
	strvec_init(&ctx.cfg_overrides);
	signal(SIGPIPE, SIG_IGN);

	for (i = 1; i < argc; i++) {
		const char *a = global_long(argv[i]);

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			gdn_print_global_help(stdout);
			return finish_stdout(0);
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			gdn_set_quiet(true);
		} else if (!strcmp(a, "--version")) {
			printf("gdnctl version %s\n", GDNCTL_VERSION);
			return finish_stdout(0);
		} else if (!strcmp(a, "-C") || !strcmp(a, "-c")) {
			if (i + 1 >= argc) {
				gdn_error("option '%s' requires a value", a);
				return GDN_EXIT_USAGE;
			}
			if (a[1] == 'C') {
				if (chdir(argv[++i])) {
					gdn_error("cannot change to '%s': %s", argv[i],
						  strerror(errno));
					return GDN_EXIT_USAGE;
				}
			} else {
				if (!strchr(argv[++i], '=')) {
					gdn_error("option '-c': expected KEY=VALUE, got '%s'",
						  argv[i]);
					return GDN_EXIT_USAGE;
				}
				strvec_push(&ctx.cfg_overrides, argv[i]);
			}
		} else {
			struct gdn_suggest sg = GDN_SUGGEST_INIT(a);
			struct sbuf hint = SBUF_INIT;

			gdn_suggest_add(&sg, "--help");
			gdn_suggest_add(&sg, "--quiet");
			gdn_suggest_add(&sg, "--version");
			gdn_suggest_format(&sg, NULL, &hint);
			gdn_error("unknown global option '%s'%s", a, hint.buf);
			gdn_suggest_release(&sg);
			sbuf_release(&hint);
			gdn_print_global_usage(stderr);
			return GDN_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		gdn_print_global_help(stderr);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	c = gdn_cmd_find(argv[i]);
	if (!c) {
		gdn_error_unknown_command(argv[i]);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		gdn_error("cannot read the current directory: %s", strerror(errno));
		code = GDN_EXIT_FAILED;
		goto out;
	}
	ctx.cwd = cwd;
	ctx.name = c->name;
	gdn_proc_install_signal_handlers();
	if (!wants_help(argc - i, (const char **)argv + i))
		code = prepare(c, &ctx);
	if (!code)
		code = c->fn(argc - i, (const char **)argv + i, &ctx);
	/* SIGINT/SIGTERM: 130/143 whatever the command made of it (unless killed by a signal) */
	if (gdn_proc_interrupted() && code < GDN_EXIT_SIGNAL)
		code = GDN_EXIT_SIGNAL + gdn_proc_interrupted();
out:
	gdn_config_release(&ctx.config);
	free(ctx.repo_root);
	strvec_clear(&ctx.cfg_overrides);
	return finish_stdout(code);
}
