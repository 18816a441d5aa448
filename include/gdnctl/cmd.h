/*
 * The command table and what main() prepares for a command. Commands
 * live in src/cmd/, one file each; they parse their options, call
 * modules, print, and return an exit code (include/gdnctl/exitcode.h).
 */
#ifndef GDNCTL_CMD_H
#define GDNCTL_CMD_H

#include "gdnctl/compat.h"
#include "gdnctl/config.h"
#include "gdnctl/strvec.h"

struct json_t;

struct gdn_ctx {
	const char *name;	     /* the name the command was invoked by (may be an alias) */
	const char *cwd;	     /* where gdnctl was started (after -C) */
	char *repo_root;	     /* repository working tree, or NULL (CMD_NEEDS_CONFIG/REPO) */
	struct gdn_config config;    /* loaded when the command has CMD_NEEDS_CONFIG */
	struct strvec cfg_overrides; /* -c KEY=VALUE from the global options */
};

enum cmd_flags {
	CMD_NEEDS_CONFIG = 1 << 0, /* discover the repository (if any) and load configuration */
	CMD_NEEDS_REPO = 1 << 1,   /* a repository is required */
	CMD_ALIAS = 1 << 2,	   /* an original-tool name; listed separately in help */
	CMD_HIDDEN = 1 << 3,
};

typedef int (*gdn_cmd_fn)(int argc, const char **argv, struct gdn_ctx *ctx);

struct gdn_cmd {
	const char *name;
	gdn_cmd_fn fn;
	const char *summary;
	int flags;
	const char *alias_of; /* for CMD_ALIAS: the gdnctl command it maps to */
};

/* The table (sorted by name), NULL-name terminated. */
extern const struct gdn_cmd gdn_commands[];
const struct gdn_cmd *gdn_cmd_find(const char *name);

/*
 * Output helpers for commands, "[gdnctl] " prefix. Standard output carries
 * data only: a command's answer, a job's output, a --dry-run plan
 * (gdn_say). Echoed commands ("[gdnctl] $ ARGV") and status lines go to
 * stderr through gdn_status, and not at all under the global -q/--quiet;
 * warnings and errors always go to stderr.
 */
void gdn_say(const char *fmt, ...) GDN_PRINTF(1, 2);	/* stdout: a line of the answer */
void gdn_status(const char *fmt, ...) GDN_PRINTF(1, 2); /* stderr unless -q; secrets masked */
/* The stream for status written piecewise (progress lines): stderr, or NULL under -q. */
FILE *gdn_status_file(void);
void gdn_set_quiet(bool quiet);			       /* main: -q/--quiet */
void gdn_warn(const char *fmt, ...) GDN_PRINTF(1, 2);  /* "[gdnctl] WARNING: ..." */
void gdn_error(const char *fmt, ...) GDN_PRINTF(1, 2); /* "[gdnctl] error: ..." */
/* "[gdnctl] error: MESSAGE" and "[gdnctl] see 'gdnctl CMD -h'" on stderr; returns GDN_EXIT_USAGE.
 */
int gdn_usage_error(const char *cmd, const char *fmt, ...) GDN_PRINTF(2, 3);
/*
 * The loop's default log directory (gdn_loop_default_log_dir) for the
 * repository around the current directory, for `loop status` and
 * `report`; NULL with err set (a usage error outside a repository).
 */
char *gdn_cmd_loop_log_dir(const struct gdn_ctx *ctx, struct gdn_err *err);
/*
 * How wide tables on standard output may be: 0 (no limit) when standard
 * output is not a terminal (a pipe or a file gets whole names, for grep),
 * else the terminal's columns (TIOCGWINSZ), else $COLUMNS, else 100.
 */
size_t gdn_cmd_term_width(void);
/*
 * Print a --json document (gdn_json_dump) to stdout and drop the reference
 * (steals doc). Returns 0 or -1 on write error.
 */
int gdn_json_print(struct json_t *doc);
/*
 * The same for a document of measured values: reals rounded to `decimals`
 * places and written with at most 15 significant digits (decimals < 0:
 * exactly gdn_json_print).
 */
int gdn_json_print_rounded(struct json_t *doc, int decimals);
/* Print err's message as an error and return the exit code for its code. */
int gdn_die_err(const struct gdn_err *err);

/*
 * Parse a command's options; on -h print help to stdout and set *exit_code to
 * 0; on a usage error print "[gdnctl] error: ..." plus a hint and set
 * *exit_code to 2. Returns true when the command should go on.
 */
struct opt;
struct opt_usage;
bool gdn_cmd_parse_opts(struct opt *opts, const struct opt_usage *u, int argc, const char **argv,
			int flags, struct strvec *rest, int *exit_code);

/* The global usage lines, and the whole global help (commands from the table). */
void gdn_print_global_usage(FILE *f);
void gdn_print_global_help(FILE *f);
/* "[gdnctl] error: 'NAME' is not a gdnctl command; ...", with a "did you mean" when one is close.
 */
void gdn_error_unknown_command(const char *name);

/* Commands */
int cmd_completion(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_config(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_demo(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_doctor(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_download_trace(int argc, const char **argv, struct gdn_ctx *ctx);
/*
 * download-trace BACKEND:PATH (src/cmd/download_backend.c): true when an
 * argument names a configured backend that way; then it ran, with the
 * exit code in *code. False: not that spelling, nothing done.
 */
bool gdn_download_backend_source(int argc, const char **argv, struct gdn_ctx *ctx, int *code);
int cmd_help(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_lint_log(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_allocate(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_marin_alias(int argc, const char **argv, struct gdn_ctx *ctx); /* by argv[0] */
int cmd_profile(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_test(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_logs(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_loop(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_loop_status(int argc, const char **argv, struct gdn_ctx *ctx); /* `loop status` */
int cmd_loop_verify(int argc, const char **argv, struct gdn_ctx *ctx); /* `loop verify` */
int cmd_metrics(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_report(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_run(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_stop(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_trace(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_version(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_wait(int argc, const char **argv, struct gdn_ctx *ctx);
int cmd_xprof_compare(int argc, const char **argv, struct gdn_ctx *ctx);      /* cmd_trace.c */
int cmd_xprof_compare_runs(int argc, const char **argv, struct gdn_ctx *ctx); /* cmd_trace.c */

#endif
