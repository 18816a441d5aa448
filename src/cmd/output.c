/* Output helpers shared by commands: the only place that prints. */
#include "gdnctl/compat.h"
#include <sys/ioctl.h>
#include "gdnctl/cmd.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/xalloc.h"
#include "gdnctl/sbuf.h"

static void vsay(FILE *f, const char *tag, const char *fmt, va_list ap)
{
	struct sbuf sb = SBUF_INIT;

	sbuf_adds(&sb, "[gdnctl] ");
	sbuf_adds(&sb, tag);
	sbuf_vaddf(&sb, fmt, ap);
	sbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, f);
	fflush(f);
	sbuf_release(&sb);
}

static bool quiet;

void gdn_set_quiet(bool q)
{
	quiet = q;
}

FILE *gdn_status_file(void)
{
	return quiet ? NULL : stderr;
}

void gdn_status(const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (quiet)
		return;
	sbuf_adds(&sb, "[gdnctl] ");
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	gdn_secret_mask(&sb);
	sbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, stderr);
	fflush(stderr);
	sbuf_release(&sb);
}

void gdn_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(stdout, "", fmt, ap);
	va_end(ap);
}

void gdn_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(stderr, "WARNING: ", fmt, ap);
	va_end(ap);
}

void gdn_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(stderr, "error: ", fmt, ap);
	va_end(ap);
}

int gdn_usage_error(const char *cmd, const char *fmt, ...)
{
	struct sbuf msg = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	gdn_error("%s", msg.buf);
	fprintf(stderr, "[gdnctl] see 'gdnctl %s -h'\n", cmd);
	sbuf_release(&msg);
	return GDN_EXIT_USAGE;
}

int gdn_json_print(json_t *doc)
{
	return gdn_json_print_rounded(doc, -1);
}

int gdn_json_print_rounded(json_t *doc, int decimals)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	if (decimals >= 0) {
		gdn_json_round_reals(doc, decimals);
		gdn_json_dump_precision(&sb, doc, 15);
	} else {
		gdn_json_dump(&sb, doc);
	}
	json_decref(doc);
	ret = fwrite(sb.buf, 1, sb.len, stdout) == sb.len ? 0 : -1;
	sbuf_release(&sb);
	return ret;
}

int gdn_die_err(const struct gdn_err *err)
{
	int sig = gdn_proc_interrupted();

	if (err->code == GDN_EINTR || sig) {
		gdn_error("%s", err->msg[0] ? err->msg : "interrupted");
		return GDN_EXIT_SIGNAL + (sig ? sig : SIGINT);
	}
	gdn_error("%s", err->msg[0] ? err->msg : "unknown error");
	return gdn_exit_for_error(err->code ? err->code : GDN_EFAILED);
}

bool gdn_cmd_parse_opts(struct opt *opts, const struct opt_usage *u, int argc, const char **argv,
			int flags, struct strvec *rest, int *exit_code)
{
	struct sbuf help = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int ret;
	bool go_on = false;

	if (opt_describe_take(opts, u, flags)) {
		*exit_code = GDN_EXIT_OK;
		return false;
	}
	ret = opt_parse(opts, u, argc, argv, flags, rest, &help, &err);
	if (ret == OPT_HELP_REQUESTED) {
		fwrite(help.buf, 1, help.len, stdout);
		*exit_code = GDN_EXIT_OK;
	} else if (ret) {
		*exit_code = gdn_usage_error(argv[0], "%s", err.msg);
	} else {
		go_on = true;
	}
	sbuf_release(&help);
	return go_on;
}

char *gdn_cmd_loop_log_dir(const struct gdn_ctx *ctx, struct gdn_err *err)
{
	char *root = NULL, *dir = NULL;

	if (ctx->repo_root) {
		root = xstrdup(ctx->repo_root);
	} else if (gdn_repo_discover(ctx->cwd, &root, err)) {
		if (err->code == GDN_ENOTFOUND)
			gdn_err_set(err, GDN_EUSAGE,
				    "not inside a git repository: '%s' (use --log-dir)", ctx->cwd);
		return NULL;
	}
	dir = gdn_loop_default_log_dir(root, NULL, err);
	free(root);
	return dir;
}

size_t gdn_cmd_term_width(void)
{
	struct winsize ws;
	const char *c;
	long v;

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	c = getenv("COLUMNS");
	v = c ? strtol(c, NULL, 10) : 0;
	return v > 0 && v <= 10000 ? (size_t)v : 100;
}
