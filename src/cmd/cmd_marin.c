/*
 * `gdnctl test`, `profile` and `allocate`: the project's test and profile
 * commands on a backend, and a dev TPU held in the foreground until
 * Ctrl-C. Built-in defaults are the Marin GDN commands of the original
 * scripts/gdn/gdnctl.py (src/backend/marin.c); a project sets its own in
 * gdnctl.yaml (project.test_command, project.profile_command).
 *
 * And the original's names, with their flags, defaults, messages and exit
 * codes: ray-test, ray-profile, ray-wait, ray-logs, dev-tpu-allocate,
 * dev-tpu-test and dev-tpu-profile. Each builds exactly the argv the
 * original ran (Appendix A of the reference), echoes it as
 * `[gdnctl] $ ARGV` (secrets masked) and runs it from the repository root;
 * the exit status is the child's. --print-only (also --dry-run, except
 * for the two profile aliases, where --dry-run keeps its original meaning
 * of `--dry_run true` for the profile script) echoes and runs nothing.
 * See docs/gdnctl-test.md, -profile.md, -allocate.md and compatibility.md.
 */
#include "gdnctl/compat.h"
#include <glob.h>
#include "gdnctl/backend.h"
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/marin.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/trace_source.h"
#include "gdnctl/xalloc.h"

#define DEFAULT_BACKEND "ray"
#define HOLD_TICK_MS	200

/* ---- output ---- */

/* --dry-run: the echoed commands are the answer, on stdout. */
static bool plan_only;
/* The original's names (cmd_marin_alias) keep its streams: echoes and status on stdout. */
static bool original_streams;

/* Where echoes and status go: stderr (stdout as above); nothing under -q but a plan. */
static FILE *status_file(void)
{
	if (plan_only)
		return stdout;
	if (!gdn_status_file())
		return NULL;
	return original_streams ? stdout : gdn_status_file();
}

static void say_line(const char *prefix, const char *text)
{
	FILE *f = status_file();

	if (!f)
		return;
	fprintf(f, "[gdnctl] %s%s\n", prefix, text);
	fflush(f);
}

static void say_status(const char *fmt, ...) GDN_PRINTF(1, 2);
static void say_status(const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	say_line("", sb.buf);
	sbuf_release(&sb);
}

static void on_event(enum gdn_backend_event ev, const char *text, void *payload)
{
	struct strvec *polls = payload;

	switch (ev) {
	case GDN_EV_POLL:
		if (strvec_contains(polls, text))
			return;
		strvec_push(polls, text);
		/* fall through */
	case GDN_EV_SPAWN:
		say_line("$ ", text);
		break;
	case GDN_EV_WAITING:
	case GDN_EV_INFO:
		say_line("", text);
		break;
	}
}

/* A line of the work's output; registered secret values are masked here too. */
static int on_line(const char *line, size_t len, void *payload)
{
	struct sbuf sb = SBUF_INIT;

	(void)payload;
	sbuf_add(&sb, line, len);
	gdn_secret_mask(&sb);
	sbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, stdout);
	fflush(stdout);
	sbuf_release(&sb);
	return 0;
}

/* Register the values of secret-looking KEY=VALUE items with the masker. */
static void register_secrets(const char *const *env)
{
	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '=');

		if (eq && eq[1] && gdn_secret_name(env[i], (size_t)(eq - env[i])))
			gdn_secret_add_value(eq + 1);
	}
}

/* ---- choosing and opening the backend ---- */

struct backend_flag {
	const char *key;   /* backends.NAME.<key> */
	const char *value; /* NULL: not given */
	const char *flag;  /* for messages and as the origin */
	const char *types; /* backend types it applies to, space separated */
};

static bool type_in(const char *type, const char *types)
{
	size_t n = strlen(type);

	for (const char *p = types; (p = strstr(p, type)); p += n)
		if ((p == types || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

/* The backend's type from configuration, or its name when it is a built-in type. */
static const char *backend_type(const struct gdn_config *cfg, const char *name, bool *configured)
{
	struct strvec names = STRVEC_INIT;
	struct sbuf key = SBUF_INIT;
	const char *type = NULL;

	gdn_config_map_names(cfg, "backends", &names);
	*configured = strvec_contains(&names, name);
	if (*configured) {
		sbuf_addf(&key, "backends.%s.type", name);
		type = gdn_config_str(cfg, key.buf);
	}
	if (!type || !*type) {
		/* a built-in name needs no type, configured or not */
		type = NULL;
		for (const char *const *t = gdn_backend_types(); *t && !type; t++)
			if (!strcmp(*t, name))
				type = *t;
	}
	strvec_clear(&names);
	sbuf_release(&key);
	return type;
}

/*
 * Open backend `name` with the command line's settings over its
 * configuration (backends.NAME.KEY, source command-line). 0 or an exit code.
 */
static int open_backend(struct gdn_ctx *ctx, const char *cmd, const char *name,
			const struct backend_flag *flags, size_t nr, bool dry_run,
			struct strvec *polls, struct gdn_backend **out)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf key = SBUF_INIT;
	bool configured = false, any = false;
	const char *type = backend_type(&ctx->config, name, &configured);
	int code = 0, ret;

	*out = NULL;
	for (size_t i = 0; i < nr; i++) {
		if (!flags[i].value)
			continue;
		any = true;
		if (type && !type_in(type, flags[i].types)) {
			code = gdn_usage_error(cmd, "%s applies to %s backends, not '%s' (%s)",
					       flags[i].flag, flags[i].types, name, type);
			goto out;
		}
	}
	/* a built-in backend named on the command line gets a section of its own */
	if (any && type && !configured) {
		sbuf_addf(&key, "backends.%s.type", name);
		ret =
		    gdn_config_set(&ctx->config, key.buf, type, GDN_SRC_CMDLINE, "--backend", &err);
		if (ret) {
			code = gdn_die_err(&err);
			goto out;
		}
	}
	for (size_t i = 0; i < nr && type; i++) {
		if (!flags[i].value)
			continue;
		sbuf_reset(&key);
		sbuf_addf(&key, "backends.%s.%s", name, flags[i].key);
		ret = gdn_config_set(&ctx->config, key.buf, flags[i].value, GDN_SRC_CMDLINE,
				     flags[i].flag, &err);
		if (ret) {
			code = gdn_usage_error(cmd, "%s", err.msg);
			goto out;
		}
	}
	ret = gdn_backend_open(&ctx->config, name, out, &err);
	if (ret == GDN_ENOTFOUND || ret == GDN_EUSAGE) {
		code = gdn_usage_error(cmd, "%s", err.msg);
		goto out;
	}
	if (ret) {
		code = gdn_die_err(&err);
		goto out;
	}
	(*out)->on_event = on_event;
	(*out)->event_payload = polls;
	(*out)->repo_root = ctx->repo_root;
	(*out)->dry_run = dry_run;
	plan_only = dry_run;
out:
	sbuf_release(&key);
	return code;
}

/* The exit code for an op's error. */
static int op_failed(const struct gdn_err *err, int ret)
{
	if (ret == GDN_EINTR || gdn_proc_interrupted()) {
		gdn_error("%s", err->msg[0] ? err->msg : "interrupted");
		return GDN_EXIT_SIGNAL + (gdn_proc_interrupted() ? gdn_proc_interrupted() : SIGINT);
	}
	gdn_error("%s", err->msg[0] ? err->msg : "unknown error");
	return ret == GDN_ENOTFOUND ? GDN_EXIT_BACKEND : gdn_exit_for_error(ret);
}

/* Check a name given on the command line; 0 or the usage exit code. */
static int check_flag_name(const char *cmd, enum gdn_marin_name kind, const char *value)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (!value || !gdn_marin_check_name(kind, value, &err))
		return 0;
	return gdn_usage_error(cmd, "%s", err.msg);
}

/*
 * Run spec on b: submit and print the submission id (no_wait), or run and
 * wait. Returns the exit code: the job's (the child's own exit status
 * where there is one), 124 on timeout, 128+N when interrupted.
 */
static int run_on_backend(struct gdn_backend *b, struct gdn_run_spec *spec, bool no_wait)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	char *job_id = NULL;
	int code = GDN_EXIT_OK, ret;

	if (!spec->on_line)
		spec->on_line = on_line;
	if (no_wait) {
		if (!b->ops->submit) {
			gdn_error("backend '%s' (%s) cannot run a job without waiting", b->name,
				  b->ops->type);
			code = GDN_EXIT_USAGE;
			goto out;
		}
		ret = b->ops->submit(b, spec, &job_id, &err);
		if (ret)
			code = op_failed(&err, ret);
		else if (job_id)
			gdn_say("submission_id=%s", job_id);
		goto out;
	}
	ret = b->ops->run(b, spec, &st, &err);
	if (ret) {
		code = op_failed(&err, ret);
		goto out;
	}
	if (spec->dry_run || b->dry_run)
		goto out;
	code = gdn_job_exit_code(&st);
	if (st.state == GDN_JOB_TIMEOUT && st.job_id[0])
		gdn_error("timed out: job %s on %s was stopped", st.job_id, b->name);
	else if (st.state == GDN_JOB_TIMEOUT)
		gdn_error("timed out: the command on %s was stopped", b->name);
	else if (st.state == GDN_JOB_STOPPED && st.job_id[0] && !strcmp(b->ops->type, "iris"))
		gdn_error("stopped: job %s on %s ended %s (%s)", st.job_id, b->name, st.native,
			  st.message);
	else if (st.state == GDN_JOB_STOPPED && st.job_id[0])
		gdn_error("stopped: job %s on %s", st.job_id, b->name);
	else if (st.state == GDN_JOB_STOPPED)
		gdn_error("stopped: the command on %s", b->name);
	else if (code && st.job_id[0])
		say_status("job %s on %s finished: %s", st.job_id, b->name,
			   st.native[0] ? st.native : "FAILED");
out:
	free(job_id);
	return code;
}

/* ---- the project's commands, and the Marin defaults ---- */

/*
 * The backend of test and profile: --backend, else project.backend, else
 * local when the project names its own command, else iris in a Marin
 * checkout that has lib/iris and no ray_run.py (said on the terminal),
 * else ray (the Marin defaults).
 */
static const char *project_backend(struct gdn_ctx *ctx, const char *given, const char *command)
{
	const char *configured = gdn_config_str(&ctx->config, "project.backend");

	if (given && *given)
		return given;
	if (configured && *configured)
		return configured;
	if (command)
		return "local";
	if (gdn_marin_iris_checkout(ctx->repo_root ? ctx->repo_root : ctx->cwd)) {
		say_status("backend iris: this Marin checkout has %s and no %s (--backend ray for "
			   "Ray)",
			   GDN_MARIN_IRIS, GDN_MARIN_RAY_RUN);
		return "iris";
	}
	return DEFAULT_BACKEND;
}

/*
 * The built-in Marin command stands in for `key` only in a Marin checkout
 * (elsewhere it fails on paths that do not exist): 0, or the error printed
 * and GDN_EXIT_CONFIG.
 */
static int need_marin_checkout(struct gdn_ctx *ctx, const char *key)
{
	if (gdn_marin_checkout(ctx->repo_root ? ctx->repo_root : ctx->cwd))
		return 0;
	gdn_error("%s is not set and this is not a Marin checkout: set it in gdnctl.yaml", key);
	return GDN_EXIT_CONFIG;
}

/* ---- gdnctl test ---- */

static const struct opt_usage test_usage = {
    "gdnctl test [--backend NAME] [--tests kernels|layer|both] [--pytest-args ARGS]\n"
    "            [--env K=V]... [--cluster C] [--tpu T] [--tpu-name N] [--no-sync]\n"
    "            [--no-wait] [--timeout D] [--dry-run]",
    "Run the project's tests on a backend (by default the Marin GDN tests on Ray).",
    "Without project.test_command the built-in Marin command runs: the GDN kernel and\n"
    "layer tests (--tests) under lib/levanter with EQX_ON_ERROR=nan WANDB_MODE=offline,\n"
    "as the original ray-test/dev-tpu-test. With project.test_command in gdnctl.yaml\n"
    "that string runs with 'bash -c' on the local backend and 'bash -lc' on remote\n"
    "ones instead (--pytest-args is appended to it).\n"
    "The built-in command needs a Marin checkout. The backend is --backend, else\n"
    "project.backend, else local with project.test_command, iris in a Marin checkout\n"
    "with lib/iris and no ray_run.py, and ray otherwise; --cluster,\n"
    "--tpu, --tpu-name and --no-sync override its configuration for this run.\n"
    "Exit status: the tests' (0 passed); 124 on --timeout; 130/143 on SIGINT/SIGTERM.",
};

int cmd_test(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *backend = NULL, *tests = NULL, *pytest_args = NULL, *cluster = NULL;
	const char *tpu = NULL, *tpu_name = NULL, *command;
	int no_sync = 0, no_wait = 0, dry_run = 0, code = GDN_EXIT_OK;
	long timeout_ms = 0;
	struct strvec env = STRVEC_INIT, rest = STRVEC_INIT, polls = STRVEC_INIT;
	struct sbuf shell = SBUF_INIT, extra = SBUF_INIT;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_run_spec spec = {0};
	struct opt opts[] = {
	    OPT_STRING_('b', "backend", &backend, "NAME", "where to run (backends.NAME, or ray)",
			"project.backend, else local with the project's command, else ray"),
	    OPT_CHOICE_(0, "tests", &tests, gdn_marin_test_choices,
			"which GDN tests the built-in command runs", "both"),
	    OPT_STRING_(0, "pytest-args", &pytest_args, "ARGS",
			"extra pytest arguments (appended to project.test_command when set)", NULL),
	    OPT_KV_('e', "env", &env, "set an environment variable for the tests"),
	    OPT_STRING_(0, "cluster", &cluster, "C", "ray, dev-tpu, iris: the cluster",
			GDN_MARIN_CLUSTER),
	    OPT_STRING_(0, "tpu", &tpu, "T", "ray, iris: the TPU type", GDN_MARIN_TEST_TPU),
	    OPT_STRING_(0, "tpu-name", &tpu_name, "N", "dev-tpu: the dev TPU's name", NULL),
	    OPT_BOOL_(0, "no-sync", &no_sync, "dev-tpu: skip the rsync before executing"),
	    OPT_BOOL_(0, "no-wait", &no_wait, "submit, print the submission id and return"),
	    OPT_DURATION_(0, "timeout", &timeout_ms, "stop the tests after this long (exit 124)",
			  NULL),
	    OPT_BOOL_('n', "dry-run", &dry_run, "print the commands that would run; run nothing"),
	    OPT_END_(),
	};
	struct backend_flag flags[] = {
	    {"cluster", NULL, "--cluster", "ray dev-tpu iris"},
	    {"tpu", NULL, "--tpu", "ray iris"},
	    {"tpu_name", NULL, "--tpu-name", "dev-tpu"},
	    {"no_sync", NULL, "--no-sync", "dev-tpu"},
	};

	if (!gdn_cmd_parse_opts(opts, &test_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest,
				&code))
		goto out;
	if ((code = check_flag_name("test", GDN_NAME_CLUSTER, cluster)) ||
	    (code = check_flag_name("test", GDN_NAME_TPU, tpu)) ||
	    (code = check_flag_name("test", GDN_NAME_TPU_NAME, tpu_name)))
		goto out;
	command = gdn_config_str(&ctx->config, "project.test_command");
	if (command && !*command)
		command = NULL;
	if (command && tests) {
		code = gdn_usage_error("test", "--tests selects the built-in Marin tests; "
					       "project.test_command is set");
		goto out;
	}
	if (no_wait && timeout_ms) {
		code =
		    gdn_usage_error("test", "--timeout applies to a run that waits, not --no-wait");
		goto out;
	}
	flags[0].value = cluster;
	flags[1].value = tpu;
	flags[2].value = tpu_name;
	flags[3].value = no_sync ? "true" : NULL;
	code = open_backend(ctx, "test", project_backend(ctx, backend, command), flags,
			    ARRAY_SIZE(flags), dry_run, &polls, &b);
	if (!code && !command)
		code = need_marin_checkout(ctx, "project.test_command");
	if (code)
		goto out;
	if (command) {
		sbuf_adds(&shell, command);
		if (pytest_args) {
			sbuf_adds(&extra, pytest_args);
			sbuf_trim(&extra);
		}
		if (extra.len)
			sbuf_addf(&shell, " %s", extra.buf);
	} else {
		struct strvec marin_env = STRVEC_INIT;

		gdn_marin_test_command(&shell, tests ? tests : "both", pytest_args, &err);
		gdn_marin_test_env(&marin_env);
		strvec_pushv(&marin_env, env.v);
		strvec_clear(&env);
		env = marin_env;
		if (!dry_run)
			say_status("%s", GDN_MARIN_TEST_NOTE);
	}
	spec.shell = shell.buf;
	spec.env = env.v;
	spec.timeout_ms = timeout_ms;
	spec.dry_run = dry_run;
	code = run_on_backend(b, &spec, no_wait);
out:
	gdn_backend_free(b);
	strvec_clear(&env);
	strvec_clear(&rest);
	strvec_clear(&polls);
	sbuf_release(&shell);
	sbuf_release(&extra);
	return code;
}

/* ---- the profile options, shared by profile, ray-profile and dev-tpu-profile ---- */

struct profile_opts {
	struct gdn_marin_profile p;
	struct strvec profile_env;
	int all_transformer;
	const char *marin_prefix;
};

#define PROFILE_OPTS(po, tpu_help)                                                               \
	OPT_STRING_(0, "tpu", &(po).p.tpu, "T", tpu_help, GDN_MARIN_PROFILE_TPU),                \
	    OPT_CHOICE_(0, "size", &(po).p.size, gdn_marin_size_choices,                         \
			"model size (GDN_PROFILE_SIZE)", "130m"),                                \
	    OPT_INT_(0, "num-steps", &(po).p.num_steps, "N",                                     \
		     "training steps (GDN_PROFILE_NUM_STEPS)", "20", 0, 0),                      \
	    OPT_INT_(0, "profile-start-step", &(po).p.profile_start_step, "N",                   \
		     "first profiled step (GDN_PROFILE_PROFILE_START_STEP)", "2", 0, 0),         \
	    OPT_INT_(0, "profile-num-steps", &(po).p.profile_num_steps, "N",                     \
		     "profiled steps (GDN_PROFILE_PROFILE_NUM_STEPS)", "6", 0, 0),               \
	    OPT_INT_(0, "batch-size", &(po).p.batch_size, "N",                                   \
		     "batch size (GDN_PROFILE_BATCH_SIZE)", "8", 0, 0),                          \
	    OPT_INT_(0, "chunk-size", &(po).p.chunk_size, "N",                                   \
		     "GDN chunk size (GDN_PROFILE_CHUNK_SIZE)", NULL, 0, 0),                     \
	    OPT_INT_(0, "segment-size", &(po).p.segment_size, "N",                               \
		     "GDN segment size (GDN_PROFILE_SEGMENT_SIZE)", NULL, 0, 0),                 \
	    OPT_INT_(0, "gdn-layers-per-block", &(po).p.layers_per_block, "N",                   \
		     "GDN layers in each block (GDN_PROFILE_GDN_LAYERS_PER_BLOCK)", NULL, 0, 0), \
	    OPT_INT_(0, "gdn-block-size", &(po).p.block_size, "N",                               \
		     "layers in each block (GDN_PROFILE_GDN_BLOCK_SIZE)", NULL, 0, 0),           \
	    OPT_BOOL_(0, "all-transformer", &(po).all_transformer,                               \
		      "attention-only control run (GDN_PROFILE_ALL_TRANSFORMER=1)"),             \
	    OPT_LIST_(0, "profile-env", &(po).profile_env, "KEY=VALUE",                          \
		      "extra environment variable for the profile"),                             \
	    OPT_STRING_(0, "ce-implementation", &(po).p.ce_impl, "IMPL",                         \
			"fused CE: auto, xla, reference, pallas_tpu or pallas_gpu", "auto"),     \
	    OPT_STRING_(0, "ce-bwd-mode", &(po).p.ce_bwd, "MODE",                                \
			"CE backward: pallas or xla_streaming", "pallas"),                       \
	    OPT_STRING_(0, "run-name-prefix", &(po).p.run_name_prefix, "P",                      \
			"W&B run name prefix (GDN_PROFILE_RUN_NAME_PREFIX)",                     \
			GDN_MARIN_RUN_NAME_PREFIX),                                              \
	    OPT_CHOICE_(0, "wandb-mode", &(po).p.wandb_mode, gdn_marin_wandb_choices,            \
			"W&B mode (WANDB_MODE)", "online")

static void profile_opts_init(struct profile_opts *po)
{
	struct gdn_marin_profile defaults = GDN_MARIN_PROFILE_INIT;

	po->p = defaults;
	strvec_init(&po->profile_env);
	po->all_transformer = 0;
	po->marin_prefix = NULL;
}

/* PROFILE_ENV (+ MARIN_PREFIX for a dev TPU); 0 or GDN_EUSAGE with the original's message. */
static int profile_env(struct profile_opts *po, const char *dev_tpu_cluster, const char *root,
		       struct strvec *env, struct gdn_err *err)
{
	int ret;

	po->p.all_transformer = po->all_transformer;
	po->p.extra = po->profile_env.v;
	ret = gdn_marin_profile_env(&po->p, env, err);
	if (!ret && dev_tpu_cluster)
		gdn_marin_prefix_env(env, po->marin_prefix, dev_tpu_cluster, root);
	if (!ret)
		register_secrets(env->v);
	return ret;
}

/* ---- gdnctl profile ---- */

/* List the files project.trace_glob matches that changed since `since`. */
static void report_traces(struct gdn_ctx *ctx, time_t since)
{
	const char *pattern = gdn_config_str(&ctx->config, "project.trace_glob");
	char *full;
	glob_t g;

	if (!pattern || !*pattern)
		return;
	full = pattern[0] == '/' || !ctx->repo_root ? xstrdup(pattern)
						    : xstrfmt("%s/%s", ctx->repo_root, pattern);
	if (!glob(full, 0, NULL, &g)) {
		for (size_t i = 0; i < g.gl_pathc; i++) {
			struct stat st;

			if (!stat(g.gl_pathv[i], &st) && S_ISREG(st.st_mode) &&
			    st.st_mtime >= since)
				gdn_say("trace: %s", g.gl_pathv[i]);
		}
		globfree(&g);
	}
	free(full);
}

/* A line of the profile's output: shown, and kept (the last 4 MiB) to find its gs:// URI. */
static int keep_line(const char *line, size_t len, void *payload)
{
	struct sbuf *kept = payload;

	if (kept->len > (4u << 20)) {
		memmove(kept->buf, kept->buf + kept->len / 2, kept->len - kept->len / 2);
		sbuf_setlen(kept, kept->len - kept->len / 2);
	}
	sbuf_add(kept, line, len);
	sbuf_addch(kept, '\n');
	return on_line(line, len, NULL);
}

/* The profile's GCS URI (the `gcs` trace source and download-trace fetch it from there). */
static void report_gcs(const struct sbuf *printed)
{
	struct gdn_trace_refs refs = {0};

	gdn_trace_refs_scan(printed->buf, printed->len, NULL, &refs);
	if (refs.gcs)
		gdn_say("profile: %s", refs.gcs);
	else
		say_status("the profile printed no gs:// profile URI");
	gdn_trace_refs_release(&refs);
}

static const struct opt_usage profile_usage = {
    "gdnctl profile [--backend NAME] [profile options] [--profile-env K=V]...\n"
    "               [--cluster C] [--tpu-name N] [--no-sync] [--no-wait] [--timeout D]\n"
    "               [--dry-run]",
    "Run the project's profile on a backend (by default the Marin GDN tiny profile on Ray).",
    "Without project.profile_command the built-in Marin command runs the GDN tiny\n"
    "profile with the original's environment (EQX_ON_ERROR, WANDB_MODE, GDN_PROFILE_*,\n"
    "the CE settings, then every --profile-env, in that order); on a dev-tpu backend\n"
    "it also sets MARIN_PREFIX (--marin-prefix, else the cluster's bucket). With\n"
    "project.profile_command that string runs instead ('bash -c' locally, 'bash -lc'\n"
    "on remote hosts), with the --profile-env variables only. --tpu is the TPU\n"
    "variant of the profile and, on a ray backend, the TPU type the job asks for.\n"
    "--profile-dry-run passes --dry_run true to the profile script; --dry-run only\n"
    "prints the commands.\n"
    "The built-in command needs a Marin checkout. The backend is --backend, else\n"
    "project.backend, else local with project.profile_command, iris in a Marin\n"
    "checkout with lib/iris and no ray_run.py (the output ends with the profile's\n"
    "gs:// URI), and ray otherwise.",
};

static const char *const marin_profile_flags[] = {
    "size",
    "num-steps",
    "profile-start-step",
    "profile-num-steps",
    "batch-size",
    "chunk-size",
    "segment-size",
    "gdn-layers-per-block",
    "gdn-block-size",
    "all-transformer",
    "ce-implementation",
    "ce-bwd-mode",
    "run-name-prefix",
    "wandb-mode",
    "marin-prefix",
    "profile-dry-run",
    "tpu",
    NULL,
};

/* project.profile_command, NULL when unset or empty (borrowed) */
static const char *custom_profile_command(struct gdn_ctx *ctx)
{
	const char *command = gdn_config_str(&ctx->config, "project.profile_command");

	return command && !*command ? NULL : command;
}

/* the built-in profile's flags (but --tpu) do not apply to a custom command: 0 or exit code */
static int check_custom_flags(const struct opt *opts, const char *command)
{
	for (size_t i = 0; command && marin_profile_flags[i]; i++) {
		for (const struct opt *o = opts; o->type != OPT_END; o++) {
			if (o->long_name && o->seen &&
			    !strcmp(o->long_name, marin_profile_flags[i]) &&
			    strcmp(o->long_name, "tpu"))
				return gdn_usage_error(
				    "profile",
				    "--%s applies to the built-in Marin profile; "
				    "project.profile_command is set",
				    o->long_name);
		}
	}
	return 0;
}

/* --tpu is the profile's TPU and the Ray job's; a configured Ray TPU is the default */
static void ray_default_tpu(struct gdn_ctx *ctx, const char *backend, struct profile_opts *po)
{
	struct sbuf key = SBUF_INIT;
	const char *configured_tpu;

	sbuf_addf(&key, "backends.%s.tpu", backend);
	configured_tpu = gdn_config_str(&ctx->config, key.buf);
	if (configured_tpu && *configured_tpu && strcmp(configured_tpu, "auto") &&
	    strcmp(configured_tpu, "none"))
		po->p.tpu = configured_tpu;
	sbuf_release(&key);
}

/* the shell command and environment of the profile; 0 or an error in err */
static int profile_script(struct gdn_ctx *ctx, const struct gdn_backend *b, struct profile_opts *po,
			  const char *command, int script_dry_run, struct sbuf *shell,
			  struct strvec *env, struct gdn_err *err)
{
	const char *dev_cluster = NULL;
	struct sbuf key = SBUF_INIT;
	int ret;

	if (command) {
		sbuf_adds(shell, command);
		ret = gdn_marin_parse_profile_env(po->profile_env.v, env, err);
		register_secrets(env->v);
		return ret;
	}
	if (!strcmp(b->ops->type, "dev-tpu")) {
		sbuf_addf(&key, "backends.%s.cluster", b->name);
		dev_cluster = gdn_config_str(&ctx->config, key.buf);
		if (!dev_cluster || !*dev_cluster)
			dev_cluster = GDN_MARIN_CLUSTER;
	}
	ret = profile_env(po, dev_cluster, ctx->repo_root, env, err);
	gdn_marin_profile_command(shell, dev_cluster != NULL, script_dry_run);
	sbuf_release(&key);
	return ret;
}

int cmd_profile(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct profile_opts po;
	const char *backend = NULL, *cluster = NULL, *tpu_name = NULL, *command, *type;
	int no_sync = 0, no_wait = 0, dry_run = 0, script_dry_run = 0, code = GDN_EXIT_OK, ret;
	bool configured = false, iris;
	long timeout_ms = 0;
	time_t started;
	struct sbuf printed = SBUF_INIT;
	struct strvec env = STRVEC_INIT, rest = STRVEC_INIT, polls = STRVEC_INIT;
	struct sbuf shell = SBUF_INIT;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_run_spec spec = {0};
	struct opt opts[] = {
	    OPT_STRING_('b', "backend", &backend, "NAME", "where to run (backends.NAME, or ray)",
			"project.backend, else local with the project's command, else ray"),
	    PROFILE_OPTS(po,
			 "TPU variant of the profile (GDN_PROFILE_TPU_VARIANT; ray, iris: --tpu)"),
	    OPT_STRING_(0, "marin-prefix", &po.marin_prefix, "URL",
			"dev-tpu: MARIN_PREFIX (default: gs://BUCKET of the cluster)", NULL),
	    OPT_BOOL_(0, "profile-dry-run", &script_dry_run,
		      "pass --dry_run true to the profile script"),
	    OPT_STRING_(0, "cluster", &cluster, "C", "ray, dev-tpu, iris: the cluster",
			GDN_MARIN_CLUSTER),
	    OPT_STRING_(0, "tpu-name", &tpu_name, "N", "dev-tpu: the dev TPU's name", NULL),
	    OPT_BOOL_(0, "no-sync", &no_sync, "dev-tpu: skip the rsync before executing"),
	    OPT_BOOL_(0, "no-wait", &no_wait, "submit, print the submission id and return"),
	    OPT_DURATION_(0, "timeout", &timeout_ms, "stop the profile after this long (exit 124)",
			  NULL),
	    OPT_BOOL_('n', "dry-run", &dry_run, "print the commands that would run; run nothing"),
	    OPT_END_(),
	};
	struct backend_flag flags[] = {
	    {"cluster", NULL, "--cluster", "ray dev-tpu iris"},
	    {"tpu", NULL, "--tpu", "ray iris"},
	    {"tpu_name", NULL, "--tpu-name", "dev-tpu"},
	    {"no_sync", NULL, "--no-sync", "dev-tpu"},
	};

	profile_opts_init(&po);
	if (!gdn_cmd_parse_opts(opts, &profile_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest,
				&code))
		goto out;
	if ((code = check_flag_name("profile", GDN_NAME_CLUSTER, cluster)) ||
	    (code = check_flag_name("profile", GDN_NAME_TPU, po.p.tpu)) ||
	    (code = check_flag_name("profile", GDN_NAME_TPU_NAME, tpu_name)))
		goto out;
	if (no_wait && timeout_ms) {
		code = gdn_usage_error("profile",
				       "--timeout applies to a run that waits, not --no-wait");
		goto out;
	}
	command = custom_profile_command(ctx);
	code = check_custom_flags(opts, command);
	if (code)
		goto out;
	backend = project_backend(ctx, backend, command);
	type = backend_type(&ctx->config, backend, &configured);
	iris = type && !strcmp(type, "iris");
	if (type && (!strcmp(type, "ray") || iris) && !opt_seen(opts, "tpu"))
		ray_default_tpu(ctx, backend, &po);
	flags[0].value = cluster;
	if (type && (!strcmp(type, "ray") || iris) && (!command || opt_seen(opts, "tpu")))
		flags[1].value = po.p.tpu;
	flags[2].value = tpu_name;
	flags[3].value = no_sync ? "true" : NULL;
	code = open_backend(ctx, "profile", backend, flags, ARRAY_SIZE(flags), dry_run, &polls, &b);
	if (!code && !command)
		code = need_marin_checkout(ctx, "project.profile_command");
	if (code)
		goto out;
	ret = profile_script(ctx, b, &po, command, script_dry_run, &shell, &env, &err);
	if (ret) {
		code = gdn_usage_error("profile", "%s", err.msg);
		goto out;
	}
	spec.shell = shell.buf;
	spec.env = env.v;
	spec.timeout_ms = timeout_ms;
	spec.dry_run = dry_run;
	started = time(NULL);
	if (iris) { /* where the profile went: the gs:// URI its output names */
		spec.on_line = keep_line;
		spec.payload = &printed;
	}
	code = run_on_backend(b, &spec, no_wait);
	if (!code && !dry_run && !no_wait)
		report_traces(ctx, started - 1);
	if (!code && !dry_run && !no_wait && iris)
		report_gcs(&printed);
out:
	gdn_backend_free(b);
	sbuf_release(&printed);
	strvec_clear(&po.profile_env);
	strvec_clear(&env);
	strvec_clear(&rest);
	strvec_clear(&polls);
	sbuf_release(&shell);
	return code;
}

/* ---- gdnctl allocate ---- */

static const struct opt_usage allocate_usage = {
    "gdnctl allocate [--backend NAME] [--cluster C] [--tpu-name N] [--tpu-type T]\n"
    "                [--fallback-cluster C]... [--ready-timeout D] [--attempts N]\n"
    "                [--retry-sleep D] [--stop-timeout D] [--log PATH] [--sync-path P]\n"
    "                [--verbose] [--dry-run]",
    "Allocate a dev TPU and hold it in the foreground until Ctrl-C.",
    "Runs Marin's 'dev_tpu.py ... allocate' and waits for it to print a ready marker;\n"
    "its output goes to the allocation log. Each pass tries --cluster, then every\n"
    "--fallback-cluster; --attempts passes, --retry-sleep apart. Ctrl-C or SIGTERM\n"
    "releases the allocation (SIGINT to its process group, then SIGTERM and SIGKILL\n"
    "--stop-timeout apart) and exits 130 or 143. Exit status 4 when the allocation\n"
    "fails or its process exits while held.",
};

/* the option values of gdnctl allocate, and the strings made from them for the backend */
struct allocate_opts {
	const char *backend, *cluster, *tpu_name, *tpu_type, *log, *sync_path;
	int verbose, dry_run;
	long ready_timeout, retry_sleep, stop_timeout, attempts;
	struct strvec fallbacks;
	struct sbuf joined, n_ready, n_retry, n_stop, n_attempts;
};

#define ALLOCATE_OPTS_INIT                                                           \
	{                                                                            \
		.backend = "dev-tpu", .fallbacks = STRVEC_INIT, .joined = SBUF_INIT, \
		.n_ready = SBUF_INIT, .n_retry = SBUF_INIT, .n_stop = SBUF_INIT,     \
		.n_attempts = SBUF_INIT                                              \
	}

static void allocate_opts_release(struct allocate_opts *ao)
{
	strvec_clear(&ao->fallbacks);
	sbuf_release(&ao->joined);
	sbuf_release(&ao->n_ready);
	sbuf_release(&ao->n_retry);
	sbuf_release(&ao->n_stop);
	sbuf_release(&ao->n_attempts);
}

/* names and durations; joins the fallback clusters. 0 or the exit code of the usage error */
static int allocate_check(struct allocate_opts *ao, const struct opt *opts)
{
	int code;

	if ((code = check_flag_name("allocate", GDN_NAME_CLUSTER, ao->cluster)) ||
	    (code = check_flag_name("allocate", GDN_NAME_TPU_NAME, ao->tpu_name)) ||
	    (code = check_flag_name("allocate", GDN_NAME_TPU, ao->tpu_type)))
		return code;
	for (size_t i = 0; i < ao->fallbacks.nr; i++) {
		code = check_flag_name("allocate", GDN_NAME_CLUSTER, ao->fallbacks.v[i]);
		if (code)
			return code;
		sbuf_addf(&ao->joined, "%s%s", i ? "," : "", ao->fallbacks.v[i]);
	}
	if (opt_seen(opts, "ready-timeout") && ao->ready_timeout <= 0)
		return gdn_usage_error("allocate", "--ready-timeout must be > 0");
	if (opt_seen(opts, "stop-timeout") && ao->stop_timeout <= 0)
		return gdn_usage_error("allocate", "--stop-timeout must be > 0");
	return 0;
}

/* the values of the backend flags, in the order of cmd_allocate's table */
static void allocate_flag_values(struct allocate_opts *ao, const struct opt *opts,
				 struct backend_flag *flags)
{
	sbuf_addf(&ao->n_ready, "%ldms", ao->ready_timeout);
	sbuf_addf(&ao->n_retry, "%ldms", ao->retry_sleep);
	sbuf_addf(&ao->n_stop, "%ldms", ao->stop_timeout);
	sbuf_addf(&ao->n_attempts, "%ld", ao->attempts);
	flags[0].value = ao->cluster;
	flags[1].value = ao->tpu_name;
	flags[2].value = ao->tpu_type;
	flags[3].value = ao->fallbacks.nr ? ao->joined.buf : NULL;
	flags[4].value = opt_seen(opts, "ready-timeout") ? ao->n_ready.buf : NULL;
	flags[5].value = opt_seen(opts, "attempts") ? ao->n_attempts.buf : NULL;
	flags[6].value = opt_seen(opts, "retry-sleep") ? ao->n_retry.buf : NULL;
	flags[7].value = opt_seen(opts, "stop-timeout") ? ao->n_stop.buf : NULL;
	flags[8].value = ao->log;
	flags[9].value = ao->sync_path;
	flags[10].value = ao->verbose ? "true" : NULL;
}

/* polls the held allocation until Ctrl-C; clears *held when it ended by itself */
static int hold_until_interrupted(struct gdn_backend *b, bool *held)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;

	for (bool first = true; !gdn_proc_interrupted(); first = false) {
		struct gdn_err serr = GDN_ERR_INIT;

		if (b->ops->status(b, NULL, &st, &serr)) {
			gdn_error("%s", serr.msg);
			return GDN_EXIT_BACKEND;
		}
		if (st.state != GDN_JOB_RUNNING) {
			gdn_error("%s", st.message[0] ? st.message : "the allocation ended");
			*held = false;
			return GDN_EXIT_BACKEND;
		}
		if (first)
			say_status("holding %s; press Ctrl-C to release it", st.job_id);
		gdn_sleep_interruptible(HOLD_TICK_MS);
	}
	return GDN_EXIT_OK;
}

/* releases a held allocation; returns the exit code, signals first */
static int release_allocation(struct gdn_backend *b, bool held, int code)
{
	if (b && held) {
		struct gdn_err rerr = GDN_ERR_INIT;

		if (b->ops->release(b, &rerr)) {
			gdn_error("%s", rerr.msg);
			code = code ? code : GDN_EXIT_BACKEND;
		}
	}
	if (gdn_proc_interrupted())
		code = GDN_EXIT_SIGNAL + gdn_proc_interrupted();
	return code;
}

int cmd_allocate(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct allocate_opts ao = ALLOCATE_OPTS_INIT;
	int code = GDN_EXIT_OK, ret;
	struct strvec rest = STRVEC_INIT, polls = STRVEC_INIT;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	bool held = false;
	struct opt opts[] = {
	    OPT_STRING_('b', "backend", &ao.backend, "NAME", "a dev-tpu backend", "dev-tpu"),
	    OPT_STRING_(0, "cluster", &ao.cluster, "C", "the cluster to allocate on",
			GDN_MARIN_CLUSTER),
	    OPT_STRING_(0, "tpu-name", &ao.tpu_name, "N", "the dev TPU's name (host dev-tpu-N)",
			NULL),
	    OPT_STRING_(0, "tpu-type", &ao.tpu_type, "T", "TPU type (dev_tpu.py --tpu-type)", NULL),
	    OPT_LIST_(0, "fallback-cluster", &ao.fallbacks, "C",
		      "try this cluster next when one fails"),
	    OPT_DURATION_(0, "ready-timeout", &ao.ready_timeout,
			  "give a cluster up when not ready after this long", "15m"),
	    OPT_INT_(0, "attempts", &ao.attempts, "N", "passes over the clusters", "1", 1, 1000),
	    OPT_DURATION_(0, "retry-sleep", &ao.retry_sleep, "sleep between passes", "30s"),
	    OPT_DURATION_(0, "stop-timeout", &ao.stop_timeout,
			  "release: SIGINT, then SIGTERM after this long", "2m"),
	    OPT_STRING_(0, "log", &ao.log, "PATH", "the allocation log",
			"~/.local/state/gdnctl/dev-tpu-N-allocate.log"),
	    OPT_STRING_(0, "sync-path", &ao.sync_path, "P", "dev_tpu.py allocate --sync-path",
			NULL),
	    OPT_BOOL_(0, "verbose", &ao.verbose, "dev_tpu.py --verbose"),
	    OPT_BOOL_('n', "dry-run", &ao.dry_run, "print the command that would run; run nothing"),
	    OPT_END_(),
	};
	struct backend_flag flags[] = {
	    {"cluster", NULL, "--cluster", "dev-tpu"},
	    {"tpu_name", NULL, "--tpu-name", "dev-tpu"},
	    {"tpu_type", NULL, "--tpu-type", "dev-tpu"},
	    {"fallback_clusters", NULL, "--fallback-cluster", "dev-tpu"},
	    {"ready_timeout", NULL, "--ready-timeout", "dev-tpu"},
	    {"attempts", NULL, "--attempts", "dev-tpu"},
	    {"retry_sleep", NULL, "--retry-sleep", "dev-tpu"},
	    {"stop_timeout", NULL, "--stop-timeout", "dev-tpu"},
	    {"allocate_log", NULL, "--log", "dev-tpu"},
	    {"sync_path", NULL, "--sync-path", "dev-tpu"},
	    {"verbose", NULL, "--verbose", "dev-tpu"},
	};

	if (!gdn_cmd_parse_opts(opts, &allocate_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest,
				&code))
		goto out;
	code = allocate_check(&ao, opts);
	if (code)
		goto out;
	allocate_flag_values(&ao, opts, flags);
	code = open_backend(ctx, "allocate", ao.backend, flags, ARRAY_SIZE(flags), ao.dry_run,
			    &polls, &b);
	if (code)
		goto out;
	if (!b->ops->hold || !b->ops->release) {
		code = gdn_usage_error("allocate", "backend '%s' (%s) has no allocation to hold",
				       b->name, b->ops->type);
		goto out;
	}
	ret = b->ops->hold(b, &err);
	if (ret) {
		code = op_failed(&err, ret);
		goto out;
	}
	held = !ao.dry_run;
	if (held)
		code = hold_until_interrupted(b, &held);
out:
	code = release_allocation(b, held, code);
	gdn_backend_free(b);
	allocate_opts_release(&ao);
	strvec_clear(&rest);
	strvec_clear(&polls);
	return code;
}

/* ---- the original's commands ---- */

/* uv (programs.uv) and "run". */
static void push_uv_run(struct gdn_ctx *ctx, struct strvec *argv)
{
	const char *uv = gdn_config_str(&ctx->config, "programs.uv");

	strvec_pushl(argv, uv && *uv ? uv : "uv", "run", NULL);
}

/*
 * Echo argv as the original did and run it from the repository root:
 * output straight to the terminal, or captured and re-emitted (capture,
 * for --no-wait, whose output is searched for the submission id). The
 * exit status is the child's.
 */
static int run_original(struct gdn_ctx *ctx, const struct strvec *argv, bool capture,
			bool print_only, long kill_grace_ms)
{
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf echo = SBUF_INIT;
	char *id = NULL;
	int code;

	gdn_argv_format(&echo, argv->v);
	gdn_secret_mask(&echo);
	if (print_only)
		gdn_say("$ %s", echo.buf); /* the answer */
	else
		say_line("$ ", echo.buf);
	if (print_only) {
		code = GDN_EXIT_OK;
		goto out;
	}
	p.argv = argv->v;
	p.dir = ctx->repo_root;
	p.inherit_output = !capture;
	p.capture = capture;
	p.kill_grace_ms = (int)kill_grace_ms;
	if (gdn_proc_run(&p, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	code = gdn_proc_exit_code(&p);
	if (!capture)
		goto out;
	id = gdn_ray_parse_submission_id(p.out.buf, p.out.len);
	gdn_secret_mask(&p.out);
	fwrite(p.out.buf, 1, p.out.len, stdout);
	fflush(stdout);
	if (id)
		gdn_say("submission_id=%s", id);
	else
		gdn_warn("could not parse submission id from output.");
out:
	free(id);
	sbuf_release(&echo);
	gdn_proc_release(&p);
	return code;
}

/* The original's SystemExit("[gdnctl] ..."): the message on stderr, exit 1. */
static int original_exit(const struct gdn_err *err)
{
	fprintf(stderr, "[gdnctl] %s\n", err->msg);
	return GDN_EXIT_FAILED;
}

static int check_names(const char *cmd, const char *cluster, const char *tpu, const char *tpu_name)
{
	int code = check_flag_name(cmd, GDN_NAME_CLUSTER, cluster);

	if (!code)
		code = check_flag_name(cmd, GDN_NAME_TPU, tpu);
	if (!code)
		code = check_flag_name(cmd, GDN_NAME_TPU_NAME, tpu_name);
	return code;
}

static int alias_ray_test(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *cluster = GDN_MARIN_CLUSTER, *tpu = GDN_MARIN_TEST_TPU, *tests = "both";
	const char *pytest_args = NULL;
	int no_wait = 0, print_only = 0, dry_run = 0, code = GDN_EXIT_OK;
	struct strvec rest = STRVEC_INIT, env = STRVEC_INIT, cmd = STRVEC_INIT, args = STRVEC_INIT;
	struct sbuf remote = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	static const struct opt_usage usage = {
	    "gdnctl ray-test [--cluster C] [--tpu T] [--tests kernels|layer|both]\n"
	    "                [--pytest-args ARGS] [--no-wait] [--print-only]",
	    "Run the GDN tests on a Ray TPU cluster via ray_run (the original gdnctl.py name).",
	    "Runs: uv run lib/marin/src/marin/run/ray_run.py --cluster C --tpu T\n"
	    "  -e EQX_ON_ERROR=nan -e WANDB_MODE=offline [--no_wait] -- bash -lc REMOTE_TEST_CMD\n"
	    "With --no-wait the output is captured, shown, and searched for the submission\n"
	    "id. Exit status: ray_run's. --print-only (or --dry-run) only prints the command.\n"
	    "Same as 'gdnctl test --backend ray'.",
	};
	struct opt opts[] = {
	    OPT_STRING_(0, "cluster", &cluster, "C", "cluster for ray_run", GDN_MARIN_CLUSTER),
	    OPT_STRING_(0, "tpu", &tpu, "T", "TPU type for ray_run", GDN_MARIN_TEST_TPU),
	    OPT_CHOICE_(0, "tests", &tests, gdn_marin_test_choices, "which GDN tests to run",
			"both"),
	    OPT_STRING_(0, "pytest-args", &pytest_args, "ARGS",
			"extra arguments appended to the pytest command", NULL),
	    OPT_BOOL_(0, "no-wait", &no_wait, "submit and return (ray_run --no_wait)"),
	    OPT_BOOL_(0, "print-only", &print_only, "print the command; run nothing"),
	    OPT_BOOL_(0, "dry-run", &dry_run, "same as --print-only"),
	    OPT_END_(),
	};

	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		goto out;
	code = check_names("ray-test", cluster, tpu, NULL);
	if (code)
		goto out;
	if (gdn_marin_test_command(&remote, tests, pytest_args, &err)) {
		code = original_exit(&err);
		goto out;
	}
	if (!print_only && !dry_run)
		say_status("%s", GDN_MARIN_TEST_NOTE);
	gdn_marin_test_env(&env);
	strvec_pushl(&cmd, "bash", "-lc", remote.buf, NULL);
	push_uv_run(ctx, &args);
	gdn_marin_ray_run_argv(&args, cluster, tpu, env.v, NULL, no_wait, cmd.v);
	code = run_original(ctx, &args, no_wait, print_only || dry_run, 10000);
out:
	strvec_clear(&rest);
	strvec_clear(&env);
	strvec_clear(&cmd);
	strvec_clear(&args);
	sbuf_release(&remote);
	return code;
}

static int alias_profile(int argc, const char **argv, struct gdn_ctx *ctx, bool dev_tpu)
{
	struct profile_opts po;
	const char *cluster = GDN_MARIN_CLUSTER, *tpu_name = NULL;
	const char *cmd_name = dev_tpu ? "dev-tpu-profile" : "ray-profile";
	int no_wait = 0, no_sync = 0, print_only = 0, script_dry_run = 0, code = GDN_EXIT_OK;
	struct strvec rest = STRVEC_INIT, env = STRVEC_INIT, cmd = STRVEC_INIT, args = STRVEC_INIT;
	struct sbuf remote = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	static const struct opt_usage ray_usage = {
	    "gdnctl ray-profile [--cluster C] [--tpu T] [profile options] [--profile-env K=V]...\n"
	    "                   [--dry-run] [--no-wait] [--print-only]",
	    "Submit the GDN tiny profile through ray_run (the original gdnctl.py name).",
	    "Runs: uv run lib/marin/src/marin/run/ray_run.py --cluster C --tpu T PROFILE_ENV...\n"
	    "  [--no_wait] -- bash -lc PROFILE_CMD\n"
	    "--dry-run passes --dry_run true to the profile script (as the original);\n"
	    "--print-only prints the command and runs nothing. Same as\n"
	    "'gdnctl profile --backend ray'.",
	};
	static const struct opt_usage dev_usage = {
	    "gdnctl dev-tpu-profile --tpu-name N [--cluster C] [--tpu T] [profile options]\n"
	    "                       [--profile-env K=V]... [--marin-prefix URL] [--dry-run]\n"
	    "                       [--no-sync] [--print-only]",
	    "Run the GDN tiny profile on a dev TPU (the original gdnctl.py name).",
	    "Runs: uv run scripts/ray/dev_tpu.py --cluster C --tpu-name N execute PROFILE_ENV...\n"
	    "  -e MARIN_PREFIX=URL [--no-sync] -- PROFILE_CMD\n"
	    "--dry-run passes --dry_run true to the profile script (as the original);\n"
	    "--print-only prints the command and runs nothing. Same as\n"
	    "'gdnctl profile --backend dev-tpu'.",
	};
	struct opt ray_opts[] = {
	    OPT_STRING_(0, "cluster", &cluster, "C", "cluster for ray_run", GDN_MARIN_CLUSTER),
	    PROFILE_OPTS(po, "TPU variant (GDN_PROFILE_TPU_VARIANT) and ray_run --tpu"),
	    OPT_BOOL_(0, "dry-run", &script_dry_run, "pass --dry_run true to the profile script"),
	    OPT_BOOL_(0, "no-wait", &no_wait, "submit and return (ray_run --no_wait)"),
	    OPT_BOOL_(0, "print-only", &print_only, "print the command; run nothing"),
	    OPT_END_(),
	};
	struct opt dev_opts[] = {
	    OPT_STRING_(0, "cluster", &cluster, "C", "cluster of the dev TPU", GDN_MARIN_CLUSTER),
	    OPT_STRING_(0, "tpu-name", &tpu_name, "N", "the dev TPU's name", NULL),
	    PROFILE_OPTS(po, "TPU variant (GDN_PROFILE_TPU_VARIANT)"),
	    OPT_STRING_(0, "marin-prefix", &po.marin_prefix, "URL",
			"MARIN_PREFIX (default: gs://BUCKET of the cluster)", NULL),
	    OPT_BOOL_(0, "dry-run", &script_dry_run, "pass --dry_run true to the profile script"),
	    OPT_BOOL_(0, "no-sync", &no_sync, "skip the rsync before executing"),
	    OPT_BOOL_(0, "print-only", &print_only, "print the command; run nothing"),
	    OPT_END_(),
	};

	profile_opts_init(&po);
	dev_opts[1].flags |= OPT_REQUIRED;
	if (!gdn_cmd_parse_opts(dev_tpu ? dev_opts : ray_opts, dev_tpu ? &dev_usage : &ray_usage,
				argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		goto out;
	code = check_names(cmd_name, cluster, po.p.tpu, tpu_name);
	if (code)
		goto out;
	if (profile_env(&po, dev_tpu ? cluster : NULL, ctx->repo_root, &env, &err)) {
		code = original_exit(&err);
		goto out;
	}
	gdn_marin_profile_command(&remote, dev_tpu, script_dry_run);
	push_uv_run(ctx, &args);
	if (dev_tpu) {
		gdn_marin_execute_argv(&args, cluster, tpu_name, env.v, no_sync, remote.buf);
	} else {
		strvec_pushl(&cmd, "bash", "-lc", remote.buf, NULL);
		gdn_marin_ray_run_argv(&args, cluster, po.p.tpu, env.v, NULL, no_wait, cmd.v);
	}
	code = run_original(ctx, &args, no_wait, print_only, 10000);
out:
	strvec_clear(&po.profile_env);
	strvec_clear(&rest);
	strvec_clear(&env);
	strvec_clear(&cmd);
	strvec_clear(&args);
	sbuf_release(&remote);
	return code;
}

static int alias_dev_tpu_test(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *cluster = GDN_MARIN_CLUSTER, *tpu_name = NULL, *tests = "both";
	const char *pytest_args = NULL;
	int no_sync = 0, print_only = 0, dry_run = 0, code = GDN_EXIT_OK;
	struct strvec rest = STRVEC_INIT, env = STRVEC_INIT, args = STRVEC_INIT;
	struct sbuf remote = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	static const struct opt_usage usage = {
	    "gdnctl dev-tpu-test --tpu-name N [--cluster C] [--tests kernels|layer|both]\n"
	    "                    [--pytest-args ARGS] [--no-sync] [--print-only]",
	    "Run the GDN tests on an allocated dev TPU (the original gdnctl.py name).",
	    "Runs: uv run scripts/ray/dev_tpu.py --cluster C --tpu-name N execute\n"
	    "  -e EQX_ON_ERROR=nan -e WANDB_MODE=offline [--no-sync] -- REMOTE_TEST_CMD\n"
	    "Exit status: dev_tpu.py's. --print-only (or --dry-run) only prints the command.\n"
	    "Same as 'gdnctl test --backend dev-tpu'.",
	};
	struct opt opts[] = {
	    OPT_STRING_(0, "cluster", &cluster, "C", "cluster of the dev TPU", GDN_MARIN_CLUSTER),
	    OPT_STRING_(0, "tpu-name", &tpu_name, "N", "the dev TPU's name", NULL),
	    OPT_CHOICE_(0, "tests", &tests, gdn_marin_test_choices, "which GDN tests to run",
			"both"),
	    OPT_STRING_(0, "pytest-args", &pytest_args, "ARGS",
			"extra arguments appended to the pytest command", NULL),
	    OPT_BOOL_(0, "no-sync", &no_sync, "skip the rsync before executing"),
	    OPT_BOOL_(0, "print-only", &print_only, "print the command; run nothing"),
	    OPT_BOOL_(0, "dry-run", &dry_run, "same as --print-only"),
	    OPT_END_(),
	};

	opts[1].flags |= OPT_REQUIRED;
	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		goto out;
	code = check_names("dev-tpu-test", cluster, NULL, tpu_name);
	if (code)
		goto out;
	if (gdn_marin_test_command(&remote, tests, pytest_args, &err)) {
		code = original_exit(&err);
		goto out;
	}
	if (!print_only && !dry_run)
		say_status("%s", GDN_MARIN_TEST_NOTE);
	gdn_marin_test_env(&env);
	push_uv_run(ctx, &args);
	gdn_marin_execute_argv(&args, cluster, tpu_name, env.v, no_sync, remote.buf);
	code = run_original(ctx, &args, false, print_only || dry_run, 10000);
out:
	strvec_clear(&rest);
	strvec_clear(&env);
	strvec_clear(&args);
	sbuf_release(&remote);
	return code;
}

static int alias_dev_tpu_allocate(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *cluster = GDN_MARIN_CLUSTER, *tpu_name = NULL, *tpu_type = NULL;
	int print_only = 0, dry_run = 0, code = GDN_EXIT_OK;
	struct strvec rest = STRVEC_INIT, args = STRVEC_INIT;
	static const struct opt_usage usage = {
	    "gdnctl dev-tpu-allocate --tpu-name N [--cluster C] [--tpu-type T] [--print-only]",
	    "Allocate a dev TPU and hold it until Ctrl-C (the original gdnctl.py name).",
	    "Runs: uv run scripts/ray/dev_tpu.py --cluster C --tpu-name N allocate [--tpu-type T]\n"
	    "with its output on the terminal. Ctrl-C or SIGTERM reaches it as SIGINT (then\n"
	    "SIGTERM, SIGKILL, two minutes apart); exit 130/143. Otherwise the exit status\n"
	    "is dev_tpu.py's. --print-only (or --dry-run) only prints the command. See also\n"
	    "'gdnctl allocate', which watches for readiness, logs and retries.",
	};
	struct opt opts[] = {
	    OPT_STRING_(0, "cluster", &cluster, "C", "cluster to allocate on", GDN_MARIN_CLUSTER),
	    OPT_STRING_(0, "tpu-name", &tpu_name, "N", "the dev TPU's name", NULL),
	    OPT_STRING_(0, "tpu-type", &tpu_type, "T", "TPU type (dev_tpu.py --tpu-type)", NULL),
	    OPT_BOOL_(0, "print-only", &print_only, "print the command; run nothing"),
	    OPT_BOOL_(0, "dry-run", &dry_run, "same as --print-only"),
	    OPT_END_(),
	};

	opts[1].flags |= OPT_REQUIRED;
	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		goto out;
	code = check_names("dev-tpu-allocate", cluster, tpu_type, tpu_name);
	if (code)
		goto out;
	push_uv_run(ctx, &args);
	gdn_marin_allocate_argv(&args, cluster, tpu_name, false, NULL, tpu_type);
	code = run_original(ctx, &args, false, print_only || dry_run, GDN_MARIN_STOP_TIMEOUT_MS);
out:
	strvec_clear(&rest);
	strvec_clear(&args);
	return code;
}

/* ray-wait and ray-logs: one positional job id. */
static int alias_ray_job(int argc, const char **argv, struct gdn_ctx *ctx, bool wait)
{
	const char *cluster = GDN_MARIN_CLUSTER, *grep = NULL;
	const char *cmd_name = wait ? "ray-wait" : "ray-logs";
	double poll_s = 5.0, timeout_s = 0;
	long tail = wait ? GDN_MARIN_WAIT_TAIL : GDN_MARIN_LOGS_TAIL;
	int show_logs = 0, print_only = 0, dry_run = 0, code = GDN_EXIT_OK;
	struct strvec rest = STRVEC_INIT, args = STRVEC_INIT;
	static const struct opt_usage wait_usage = {
	    "gdnctl ray-wait [--cluster C] [--poll S] [--timeout S] [--show-logs] [--tail N]\n"
	    "                [--grep G] [--print-only] JOB_ID",
	    "Wait for a Ray job (the original gdnctl.py name).",
	    "Runs: uv run scripts/ray/cluster.py --cluster C wait-job JOB_ID --poll S\n"
	    "  [--timeout S] [--show-logs] --tail N [--grep G]\n"
	    "Exit status: cluster.py's. --print-only (or --dry-run) only prints the command.\n"
	    "See also 'gdnctl wait --backend ray JOB_ID', which reads the final status.",
	};
	static const struct opt_usage logs_usage = {
	    "gdnctl ray-logs [--cluster C] [--tail N] [--grep G] [--print-only] JOB_ID",
	    "Tail the logs of a Ray job (the original gdnctl.py name).",
	    "Runs: uv run scripts/ray/cluster.py --cluster C job-logs -n N [-g G] JOB_ID\n"
	    "Exit status: cluster.py's. --print-only (or --dry-run) only prints the command.\n"
	    "Same as 'gdnctl logs --backend ray --tail N JOB_ID'.",
	};
	struct opt wait_opts[] = {
	    OPT_STRING_(0, "cluster", &cluster, "C", "cluster of the job", GDN_MARIN_CLUSTER),
	    OPT_SECONDS_(0, "poll", &poll_s, "S", "polling interval in seconds", "5.0"),
	    OPT_SECONDS_(0, "timeout", &timeout_s, "S", "give up after this many seconds", NULL),
	    OPT_BOOL_(0, "show-logs", &show_logs, "print the job's logs when it ends"),
	    OPT_INT_(0, "tail", &tail, "N", "log lines to show", "200", 0, 0),
	    OPT_STRING_(0, "grep", &grep, "G", "only log lines containing G", NULL),
	    OPT_BOOL_(0, "print-only", &print_only, "print the command; run nothing"),
	    OPT_BOOL_(0, "dry-run", &dry_run, "same as --print-only"),
	    OPT_END_(),
	};
	struct opt logs_opts[] = {
	    OPT_STRING_(0, "cluster", &cluster, "C", "cluster of the job", GDN_MARIN_CLUSTER),
	    OPT_INT_(0, "tail", &tail, "N", "log lines to show", "400", 0, 0),
	    OPT_STRING_(0, "grep", &grep, "G", "only log lines containing G", NULL),
	    OPT_BOOL_(0, "print-only", &print_only, "print the command; run nothing"),
	    OPT_BOOL_(0, "dry-run", &dry_run, "same as --print-only"),
	    OPT_END_(),
	};

	if (!gdn_cmd_parse_opts(wait ? wait_opts : logs_opts, wait ? &wait_usage : &logs_usage,
				argc, argv, 0, &rest, &code))
		goto out;
	if (!rest.nr) {
		code = gdn_usage_error(cmd_name, "the JOB_ID is missing");
		goto out;
	}
	if (rest.nr > 1) {
		code = gdn_usage_error(cmd_name, "one JOB_ID, not %zu arguments", rest.nr);
		goto out;
	}
	code = check_names(cmd_name, cluster, NULL, NULL);
	if (!code)
		code = check_flag_name(cmd_name, GDN_NAME_JOB, rest.v[0]);
	if (!code && grep && !*grep)
		grep = NULL;
	if (code)
		goto out;
	push_uv_run(ctx, &args);
	if (wait)
		gdn_marin_wait_job_argv(&args, cluster, rest.v[0], poll_s,
					wait_opts[2].seen ? timeout_s : -1, show_logs, tail, grep);
	else
		gdn_marin_job_logs_argv(&args, cluster, rest.v[0], tail, grep);
	code = run_original(ctx, &args, false, print_only || dry_run, 10000);
out:
	strvec_clear(&rest);
	strvec_clear(&args);
	return code;
}

int cmd_marin_alias(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *name = argv[0];

	original_streams = true;
	if (!strcmp(name, "ray-test"))
		return alias_ray_test(argc, argv, ctx);
	if (!strcmp(name, "ray-profile"))
		return alias_profile(argc, argv, ctx, false);
	if (!strcmp(name, "dev-tpu-profile"))
		return alias_profile(argc, argv, ctx, true);
	if (!strcmp(name, "dev-tpu-test"))
		return alias_dev_tpu_test(argc, argv, ctx);
	if (!strcmp(name, "dev-tpu-allocate"))
		return alias_dev_tpu_allocate(argc, argv, ctx);
	if (!strcmp(name, "ray-wait"))
		return alias_ray_job(argc, argv, ctx, true);
	if (!strcmp(name, "ray-logs"))
		return alias_ray_job(argc, argv, ctx, false);
	BUG("'%s' is not an alias of cmd_marin_alias", name);
}
