/*
 * `gdnctl lint-log`: check the markdown running log of iterations. The
 * rules live in src/lint/; this file resolves the log file and the
 * options (command line > configuration), reads the file, and prints.
 * Output and exit codes follow the original gdnctl.py lint-log; see
 * docs/gdnctl-lint-log.md.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/lint.h"
#include "gdnctl/marin.h"
#include "gdnctl/opt.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define DEFAULT_LOG_FILE "lib/levanter/.agents/projects/gdn_pallas_tpu_hillclimb.md"
#define LOG_MAX_BYTES	 ((size_t)256 << 20)
#define JSON_SCHEMA	 "gdnctl.lint_log.v1"

static const struct opt_usage usage = {
    "gdnctl lint-log [options]",
    "Check the markdown running log of iterations: unresolved commit placeholders,\n"
    "iteration headings that do not increase, and (on request) required fields and\n"
    "commit ids.",
    "Without --log-file the log is the configuration's log_file, relative to the\n"
    "repository root (its default, Marin's running log, only in a Marin checkout;\n"
    "elsewhere exit 3). Configuration keys: log_file, lint.scope, lint.require_fields,\n"
    "lint.since, lint.check_commits; options override them.\n"
    "Exit status: 0 the log passed; 1 problems found, or the log is not UTF-8 text;\n"
    "2 usage error, log file not found, or --check-commits outside a repository;\n"
    "3 configuration error; 130/143 interrupted (also while a FIFO log sends nothing).",
};

struct lint_args {
	const char *log_file;
	int scope; /* enum lint_scope */
	int allow_pending;
	int allow_this_commit;
	int allow_non_monotonic;
	int require_fields;
	struct strvec fields;
	long since;
	int check_commits;
	int json;
};

static void say_err(const char *fmt, ...) GDN_PRINTF(1, 2);

/* "[gdnctl] <message>" on stderr, without the "error: " tag (the original's wording). */
static void say_err(const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	sbuf_adds(&sb, "[gdnctl] ");
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	sbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, stderr);
	fflush(stderr);
	sbuf_release(&sb);
}

static const struct opt *find_opt(const struct opt *opts, const char *long_name)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, long_name))
			return o;
	BUG("lint-log has no option '--%s'", long_name);
}

/* Remove "." and ".." components of an absolute path, lexically. */
static void normalize_path(const char *path, struct sbuf *out)
{
	struct strvec parts = STRVEC_INIT;
	const char *p = path;

	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (len == 2 && !strncmp(p, "..", 2)) {
			if (parts.nr)
				strvec_pop(&parts);
		} else if (len && !(len == 1 && *p == '.')) {
			char *part = xstrndup(p, len);

			strvec_push(&parts, part);
			free(part);
		}
		p += len + (slash ? 1 : 0);
	}
	sbuf_reset(out);
	for (size_t i = 0; i < parts.nr; i++)
		sbuf_addf(out, "/%s", parts.v[i]);
	if (!out->len)
		sbuf_addch(out, '/');
	strvec_clear(&parts);
}

/*
 * The absolute path shown in messages: realpath() when the file exists,
 * else the real path of its directory plus the name, else the lexically
 * normalized path.
 */
static char *absolute_path(const char *path, const char *base)
{
	struct sbuf joined = SBUF_INIT, norm = SBUF_INIT;
	char *real = NULL, *slash;

	if (path[0] == '/')
		sbuf_adds(&joined, path);
	else
		sbuf_addf(&joined, "%s/%s", base && *base ? base : ".", path);
	real = realpath(joined.buf, NULL);
	if (real)
		goto out;
	normalize_path(joined.buf, &norm);
	slash = strrchr(norm.buf, '/');
	if (slash && slash != norm.buf && slash[1]) {
		char *dir = xstrndup(norm.buf, (size_t)(slash - norm.buf));
		char *rdir = realpath(dir, NULL);

		if (rdir)
			real = xstrfmt("%s%s%s", rdir, strcmp(rdir, "/") ? "/" : "", slash + 1);
		free(rdir);
		free(dir);
	}
	if (!real)
		real = sbuf_detach(&norm, NULL);
out:
	sbuf_release(&joined);
	sbuf_release(&norm);
	return real;
}

/* The log file: --log-file (relative to the current directory), else log_file (to the repository).
 */
static char *resolve_log_file(const struct lint_args *a, const struct gdn_ctx *ctx)
{
	const char *cfg;

	if (a->log_file)
		return absolute_path(a->log_file, ctx->cwd);
	cfg = gdn_config_str(&ctx->config, "log_file");
	if (!cfg || !*cfg)
		cfg = DEFAULT_LOG_FILE;
	return absolute_path(cfg, ctx->repo_root ? ctx->repo_root : ctx->cwd);
}

/*
 * Whether there is a log to look for without --log-file: log_file set in
 * the configuration, or its default (Marin's running log) in a Marin checkout.
 */
static bool log_file_given(const struct gdn_ctx *ctx)
{
	const struct gdn_cfg_value *v = gdn_config_get(&ctx->config, "log_file");

	if (v && v->source != GDN_SRC_DEFAULT && v->str && *v->str)
		return true;
	return gdn_marin_checkout(ctx->repo_root ? ctx->repo_root : ctx->cwd);
}

static int print_json(const char *path, enum lint_scope scope, const struct lint_result *res,
		      bool fields_checked, const char *error)
{
	json_t *doc = gdn_json_doc(JSON_SCHEMA);
	json_t *findings = json_array();

	json_object_set_new(doc, "path", gdn_json_string_lossy(path));
	json_object_set_new(doc, "scope", json_string(lint_scope_name(scope)));
	json_object_set_new(doc, "ok", json_boolean(!error && !res->nr));
	json_object_set_new(doc, "entries", json_integer((json_int_t)res->entries));
	for (size_t i = 0; i < res->nr; i++) {
		const struct lint_finding *f = &res->findings[i];
		json_t *jf = json_object();

		json_object_set_new(jf, "rule", json_string(lint_rule_name(f->rule)));
		json_object_set_new(jf, "line", json_integer((json_int_t)f->line));
		json_object_set_new(jf, "message", gdn_json_string_lossy(f->message));
		json_array_append_new(findings, jf);
	}
	json_object_set_new(doc, "findings", findings);
	if (fields_checked && res->fields.nr) {
		json_t *jfields = json_array();

		for (size_t i = 0; i < res->fields.nr; i++)
			json_array_append_new(jfields, gdn_json_string_lossy(res->fields.v[i]));
		json_object_set_new(doc, "required_fields", jfields);
	}
	if (error)
		json_object_set_new(doc, "error", gdn_json_string_lossy(error));
	return gdn_json_print(doc);
}

static void print_findings(const char *path, const struct lint_result *res)
{
	int group = -1;

	for (size_t i = 0; i < res->nr; i++) {
		const struct lint_finding *f = &res->findings[i];

		if (lint_rule_group(f->rule) != group) {
			group = lint_rule_group(f->rule);
			say_err("%s in %s:", lint_rule_title(f->rule), path);
		}
		say_err("  %s", f->message);
	}
}

static int commit_exists_cb(const char *id, int *exists, void *payload, struct gdn_err *err)
{
	return gdn_repo_commit_exists(payload, id, exists, NULL, err);
}

/* The repository for --check-commits: the one holding the log, else the current one. */
static int find_repo(const char *log_path, const struct gdn_ctx *ctx, char **root,
		     struct gdn_err *err)
{
	char *dir = xstrdup(log_path), *slash = strrchr(dir, '/');
	int ret;

	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	ret = gdn_repo_discover(dir, root, err);
	if (ret == GDN_ENOTFOUND && ctx->repo_root) {
		gdn_err_clear(err);
		*root = xstrdup(ctx->repo_root);
		ret = 0;
	} else if (ret == GDN_ENOTFOUND) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "--check-commits needs a git repository: neither '%s' nor '%s' "
				  "is inside one",
				  dir, ctx->cwd ? ctx->cwd : ".");
	}
	free(dir);
	return ret;
}

/* Command line > configuration for every lint option. Returns 0 or an exit code. */
static int effective_opts(struct opt *opts, struct lint_args *a, const struct gdn_ctx *ctx,
			  struct lint_opts *o)
{
	const struct gdn_config *cfg = &ctx->config;
	const struct strvec *cfg_fields = gdn_config_list(cfg, "lint.require_fields");
	const char *scope = gdn_config_str(cfg, "lint.scope");
	int sc = a->scope;
	long long since;

	if (!scope || !*scope)
		scope = "last-entry";
	if (!find_opt(opts, "scope")->seen && gdn_enum_parse(lint_scope_enum, scope, &sc)) {
		const struct gdn_cfg_value *v = gdn_config_get(cfg, "lint.scope");
		struct sbuf names = SBUF_INIT;

		gdn_enum_join(lint_scope_enum, ", ", &names);
		gdn_error("%s: lint.scope: invalid value '%s' (choose from %s)",
			  v && v->origin ? v->origin : "configuration", scope, names.buf);
		sbuf_release(&names);
		return GDN_EXIT_CONFIG;
	}
	o->scope = (enum lint_scope)sc;
	o->allow_pending = a->allow_pending;
	o->allow_this_commit = a->allow_this_commit;
	o->allow_non_monotonic = a->allow_non_monotonic;

	o->fields = a->fields.nr ? &a->fields : cfg_fields;
	if (find_opt(opts, "require-fields")->seen)
		o->require_fields = a->require_fields;
	else
		o->require_fields = a->fields.nr || (cfg_fields && cfg_fields->nr);

	if (find_opt(opts, "since")->seen) {
		o->since = a->since;
	} else {
		since = gdn_config_int(cfg, "lint.since", 0);
		o->since = since > LONG_MAX ? LONG_MAX : since < 0 ? 0 : (long)since;
	}
	if (!find_opt(opts, "check-commits")->seen)
		a->check_commits = gdn_config_bool(cfg, "lint.check_commits", false);
	return 0;
}

int cmd_lint_log(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct lint_args a = {NULL, LINT_SCOPE_LAST_ENTRY, 0, 0, 0, 0, STRVEC_INIT, 0, 0, 0};
	struct opt opts[] = {
	    OPT_STRING_(0, "log-file", &a.log_file, "PATH",
			"the running log (relative to the current directory)", "log_file"),
	    OPT_ENUM_(0, "scope", &a.scope, lint_scope_enum,
		      "where placeholders, fields and commits are checked", "last-entry"),
	    OPT_BOOL_(0, "allow-pending", &a.allow_pending,
		      "accept `- Commit: (pending)` placeholders"),
	    OPT_BOOL_(0, "allow-this-commit", &a.allow_this_commit,
		      "accept `- Commit: this commit` placeholders"),
	    OPT_BOOL_(0, "allow-non-monotonic", &a.allow_non_monotonic,
		      "accept iteration headings that do not increase"),
	    OPT_GROUP_("Entry checks (new in gdnctl)"),
	    OPT_BOOL_F(0, "require-fields", &a.require_fields,
		       "require the Entry Template's fields in every entry", OPT_NEGATABLE),
	    OPT_LIST_(0, "require-field", &a.fields, "NAME",
		      "require field NAME (instead of the template's)"),
	    OPT_INT_(0, "since", &a.since, "N", "skip entries numbered below N in the fields check",
		     "lint.since", 0, LONG_MAX),
	    OPT_BOOL_F(0, "check-commits", &a.check_commits,
		       "`- Commit:` must be none... or a commit of the repository", OPT_NEGATABLE),
	    OPT_GROUP_("Output"),
	    OPT_BOOL_(0, "json", &a.json, "print a JSON document (schema " JSON_SCHEMA ")"),
	    OPT_END_(),
	};
	struct lint_opts o = LINT_OPTS_INIT;
	struct lint_result res = LINT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf log = SBUF_INIT;
	struct strvec rest = STRVEC_INIT;
	struct stat st;
	char *path = NULL, *repo = NULL;
	char lint_msg[GDN_ERR_MSG_MAX] = "";
	int code = GDN_EXIT_OK, ret;

	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		goto out;
	code = effective_opts(opts, &a, ctx, &o);
	if (code)
		goto out;
	if (!a.log_file && !log_file_given(ctx)) {
		gdn_error("log_file is not set and this is not a Marin checkout: set it in "
			  "gdnctl.yaml or pass --log-file");
		code = GDN_EXIT_CONFIG;
		goto out;
	}
	path = resolve_log_file(&a, ctx);
	if (stat(path, &st) && (errno == ENOENT || errno == ENOTDIR)) {
		say_err("log file not found: %s", path);
		if (a.json)
			print_json(path, o.scope, &res, false, "log file not found");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	ret = sbuf_read_file(&log, path, LOG_MAX_BYTES, &err);
	if (ret) {
		code = gdn_die_err(&err);
		goto out;
	}
	if (a.check_commits) {
		ret = find_repo(path, ctx, &repo, &err);
		if (ret) {
			code = gdn_die_err(&err);
			goto out;
		}
		o.commit_exists = commit_exists_cb;
		o.payload = repo;
		o.repo_name = repo;
	}

	ret = lint_log_buffer(log.buf, log.len, &o, &res, &err);
	if (ret)
		memcpy(lint_msg, err.msg, sizeof(lint_msg));
	if (ret == GDN_ENOTFOUND) {
		gdn_err_prefix(&err, "'%s'", path);
		gdn_error("%s; name them with --require-field NAME or lint.require_fields",
			  err.msg);
		code = GDN_EXIT_FAILED;
	} else if (ret) {
		gdn_err_prefix(&err, "'%s'", path);
		code = gdn_die_err(&err);
	} else {
		code = res.nr ? GDN_EXIT_FAILED : GDN_EXIT_OK;
	}
	if (a.json) {
		print_json(path, o.scope, &res, o.require_fields, ret ? lint_msg : NULL);
	} else if (!ret && res.nr) {
		print_findings(path, &res);
	} else if (!ret) {
		gdn_say("log lint passed: %s", path);
	}
out:
	lint_result_release(&res);
	sbuf_release(&log);
	strvec_clear(&a.fields);
	strvec_clear(&rest);
	free(path);
	free(repo);
	return code;
}
