/*
 * `gdnctl loop` (alias `codex-loop`): the unattended hill-climb. Parses
 * the original codex-loop's options (same names, defaults and messages),
 * loads the prompt and the session directives, opens the agent driver and
 * runs the engine (src/loop/engine.c), printing its progress with the
 * "[gdnctl] " prefix and a summary at the end.
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/cmd.h"
#include "gdnctl/backend.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/loop.h"
#include "gdnctl/marin.h"
#include "gdnctl/marin_gate.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static const struct opt_usage loop_usage = {
    "gdnctl loop --iterations N [options]\n"
    "gdnctl loop --resume [options]",
    "Run a coding agent in a loop, one iteration at a time, without losing work.",
    "Each iteration: stash a dirty tree (--dirty-policy stash), optionally merge a remote\n"
    "branch, run the agent with the prompt, detect its commits, run the post-checks and\n"
    "apply the policies, then restore the stash by its commit id. Every transition is\n"
    "journaled in <log dir>/loop.jsonl; --resume continues the last run after a crash.\n"
    "Exit status: 0; the agent's exit code (124 on a timeout) when it fails; 1; 2 for an\n"
    "iteration error; 3 when an iteration made no commit; 128+N when interrupted.\n"
    "See docs/gdnctl-loop.md.",
};

static const char *const policies[] = {"fail", "count-failure", "continue", NULL};
static const char *const dirty_policies[] = {"fail", "stash", NULL};
static const char *const restore_policies[] = {"warn-keep", "fail", NULL};
static const char *const sync_policies[] = {"off", "once", "each-iteration", NULL};
static const char *const conflict_policies[] = {"fail", "skip", NULL};
static const char *const agents[] = {"codex", "claude", "command", NULL};
static const char *const perf_modes[] = {"on", "required", "off", NULL};
static const char *const perf_directions[] = {"auto", "higher", "lower", NULL};
static const char *const perf_policies[] = {"revert-count-failure", "revert-continue", "fail",
					    "count-failure",	    "continue",	       NULL};
static const char *const perf_withins[] = {"keep", "revert", NULL};
static const char *const perf_stats[] = {"median", "best", NULL};
static const char *const validation_modes[] = {"required", "profile-only", "off", NULL};
static const char *const perf_sources[] = {"auto", "cli", "wandb", "trace", NULL};
static const char *const perf_aggregations[] = {"history-window", "summary", NULL};
static const char *const perf_history_aggs[] = {"median", "mean", NULL};

struct loop_args {
	long iterations;
	const char *prompt_file, *workdir, *model, *codex_bin, *reasoning_effort, *codex_profile;
	int ephemeral, search, show_file_updates;
	struct strvec directives, directive_files, presets, post_checks;
	double sleep_seconds, codex_timeout, codex_idle_timeout, retry_sleep;
	long agent_timeout_ms, agent_idle_timeout_ms, kill_grace_ms;
	const char *post_check_policy, *no_commit_policy, *iteration_error_policy;
	long max_failures, codex_retries, post_check_retries;
	int resilient, allow_dirty, allow_no_commit, resume, json, dry_run;
	const char *log_dir, *hillclimb_log;
	const char *dirty_policy, *restore_policy;
	const char *sync_policy, *sync_remote, *sync_branch, *sync_conflict;
	const char *validation_mode, *perf_mode;
	const char *validation_policy, *backend;
	long validation_timeout_ms;
	const char *perf_metric, *perf_direction, *perf_policy, *perf_state_file;
	const char *perf_within, *perf_stat;
	double perf_min_improvement, perf_max_regression, perf_min_confidence;
	struct strvec perf_gates;
	long perf_repeats;
	const char *perf_source, *perf_aggregation, *perf_history_agg;
	long perf_step_start, perf_step_end, perf_min_points, perf_wandb_retries;
	long perf_wandb_timeout_ms;
	const char *perf_wandb_entity, *perf_wandb_project, *perf_wandb_prefix;
	int log_measurements;
	long validation_retries;
	const char *agent, *agent_cmd;
	const char *until_time;
	double max_agent_minutes;
	long stop_after_failures;
};

struct printer {
	bool json; /* progress to stderr: stdout is the summary document */
};

static void on_say(enum gdn_loop_level level, const char *msg, void *payload)
{
	struct printer *pr = payload;
	FILE *info = pr->json ? stderr : stdout;

	switch (level) {
	case GDN_LOOP_HEADING:
		fprintf(info, "\n[gdnctl] %s\n", msg);
		fflush(info);
		break;
	case GDN_LOOP_INFO:
		fprintf(info, "[gdnctl] %s\n", msg);
		fflush(info);
		break;
	case GDN_LOOP_NOTE:
		fprintf(stderr, "[gdnctl] %s\n", msg);
		break;
	case GDN_LOOP_WARN:
		fprintf(stderr, "[gdnctl] WARNING: %s\n", msg);
		break;
	}
}

static int on_agent_line(const char *line, size_t len, void *payload)
{
	struct printer *pr = payload;
	FILE *f = pr->json ? stderr : stdout;

	fwrite(line, 1, len, f);
	fputc('\n', f);
	fflush(f);
	return 0;
}

static int agent_run(void *agent, const struct gdn_agent_request *req, struct gdn_agent_result *res,
		     struct gdn_err *err)
{
	return gdn_agent_run(agent, req, res, err);
}

static bool nonempty(const char *s)
{
	return s && *s;
}

/* An absolute path: `p` resolved against `base` (not required to exist). */
static char *abspath(const char *base, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xstrfmt("%s/%s", base, p);
}

/* "2026-11-21T18:00:00Z" (UTC) or "+DURATION" from now. Returns 0 or -1. */
static int parse_until(const char *s, time_t *out)
{
	struct tm tm = {0};
	const char *end;
	long ms;

	if (s[0] == '+') {
		if (opt_parse_duration_ms(s + 1, &ms))
			return -1;
		*out = time(NULL) + ms / 1000;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M", &tm);
	if (end && *end == ':')
		end = strptime(end, ":%S", &tm);
	if (!end || strcmp(end, "Z"))
		return -1;
	*out = timegm(&tm);
	return 0;
}

/* The original's --resilient preset (without the validation/perf items: the gate is off). */
static void apply_resilient(struct loop_args *a)
{
	if (a->max_failures >= 0)
		a->max_failures = -1;
	if (!strcmp(a->dirty_policy, "fail"))
		a->dirty_policy = "stash";
	if (!strcmp(a->no_commit_policy, "fail"))
		a->no_commit_policy = "count-failure";
	if (!strcmp(a->post_check_policy, "fail"))
		a->post_check_policy = "count-failure";
	if (!strcmp(a->iteration_error_policy, "fail"))
		a->iteration_error_policy = "count-failure";
	if (!strcmp(a->sync_conflict, "fail"))
		a->sync_conflict = "skip";
	a->restore_policy = "warn-keep";
	if (a->codex_retries < 2)
		a->codex_retries = 2;
	if (a->post_check_retries < 2)
		a->post_check_retries = 2;
}

/* The original's startup checks (exit 1, exact messages). */
static const char *validate(const struct loop_args *a)
{
	if (a->codex_retries < 0)
		return "--codex-retries must be >= 0.";
	if (a->post_check_retries < 0)
		return "--post-check-retries must be >= 0.";
	if (a->retry_sleep < 0)
		return "--retry-sleep-seconds must be >= 0.";
	if (!(a->codex_timeout > 0))
		return "--codex-timeout-seconds must be > 0 when set.";
	if (!(a->codex_idle_timeout > 0))
		return "--codex-idle-timeout-seconds must be > 0 when set.";
	if (strcmp(a->sync_policy, "off") && !*a->sync_remote)
		return "--sync-main-remote must be non-empty.";
	if (strcmp(a->sync_policy, "off") && !*a->sync_branch)
		return "--sync-main-branch must be non-empty.";
	if (a->sleep_seconds < 0)
		return "--sleep-seconds must be >= 0.";
	if (a->max_agent_minutes < 0)
		return "--max-agent-minutes must be >= 0.";
	if (a->stop_after_failures < 0)
		return "--stop-after-failures must be >= 0.";
	return NULL;
}

/* The W&B source and --log-measurements. Returns 0, or -1 after an error message. */
static int setup_measure(const struct loop_args *a, const char *hlog, struct gdn_measure_opts *mo,
			 const struct gdn_perf_config *pc)
{
	gdn_measure_source_parse(a->perf_source, &mo->source);
	if (gdn_perf_is_trace_metric(pc->metric) != (mo->source == GDN_MEASURE_TRACE) &&
	    mo->source != GDN_MEASURE_AUTO) {
		gdn_error("--perf-source %s does not go with --perf-metric %s (trace/... metrics "
			  "come from the trace)",
			  a->perf_source, pc->metric);
		return -1;
	}
	if (a->perf_step_end < a->perf_step_start) {
		gdn_error("--perf-history-step-end must be >= --perf-history-step-start");
		return -1;
	}
	mo->history = !strcmp(a->perf_aggregation, "history-window");
	mo->window.step_min = a->perf_step_start;
	mo->window.step_max = a->perf_step_end;
	mo->window.agg = !strcmp(a->perf_history_agg, "mean") ? GDN_AGG_MEAN : GDN_AGG_MEDIAN;
	mo->window.min_points = (size_t)a->perf_min_points;
	mo->entity = a->perf_wandb_entity;
	mo->project = a->perf_wandb_project;
	mo->run_prefix = nonempty(a->perf_wandb_prefix) ? a->perf_wandb_prefix : NULL;
	mo->http.retries = (int)a->perf_wandb_retries;
	mo->fetch_timeout_ms = a->perf_wandb_timeout_ms;
	mo->log_trace_deltas = 3;
	if (a->log_measurements) {
		if (!hlog) {
			gdn_error("--log-measurements needs a running log (--hillclimb-log-file or "
				  "log_file)");
			return -1;
		}
		mo->log_file = hlog;
	}
	return 0;
}

static const char *const *data_dirs(const char *workdir, const char **buf)
{
	buf[0] = workdir;
	buf[1] = GDNCTL_DATADIR;
	buf[2] = GDNCTL_SOURCE_DATADIR;
	buf[3] = NULL;
	return buf;
}

static int load_directives(const struct loop_args *a, const char *cwd, const char *workdir,
			   struct strvec *out, struct gdn_err *err)
{
	const char *dirs[4];
	int ret = 0;

	for (size_t i = 0; i < a->presets.nr && !ret; i++) {
		char *rel = xstrfmt("session_directives/%s.md", a->presets.v[i]);
		char *path = gdn_prompt_find(data_dirs(workdir, dirs), rel);
		char *source = xstrfmt("preset %s", a->presets.v[i]);

		if (!path)
			ret = gdn_err_set(err, GDN_ENOTFOUND, "directive file not found for %s: %s",
					  source, rel);
		else
			ret = gdn_prompt_add_directive_file(out, path, source, err);
		free(rel);
		free(path);
		free(source);
	}
	for (size_t i = 0; i < a->directive_files.nr && !ret; i++) {
		char *path = abspath(cwd, a->directive_files.v[i]);

		ret = gdn_prompt_add_directive_file(out, path, a->directive_files.v[i], err);
		free(path);
	}
	for (size_t i = 0; i < a->directives.nr && !ret; i++) {
		struct sbuf sb = SBUF_INIT;

		sbuf_adds(&sb, a->directives.v[i]);
		sbuf_trim(&sb);
		if (sb.len)
			strvec_push(out, sb.buf);
		sbuf_release(&sb);
	}
	return ret;
}

static void print_summary(const struct gdn_loop_summary *s)
{
	struct sbuf kinds = SBUF_INIT;

	for (int k = 0; k < GDN_FAIL_NR; k++)
		sbuf_addf(&kinds, "%s%s=%ld", k ? ", " : "", gdn_loop_failure_name(k),
			  s->fail_kinds[k]);
	printf("[gdnctl] loop summary: run %s: %ld iterations, %ld commits, %ld failures (%s), "
	       "%.3fs in the agent; stopped: %s (exit %d)\n",
	       s->run_id, s->iterations_run, s->commits, s->failures, kinds.buf,
	       (double)s->agent_ms / 1000.0, s->stop_reason ? s->stop_reason : "unknown",
	       s->exit_code);
	for (size_t i = 0; i < s->stashes_kept.nr; i++) {
		const char *sp = strchr(s->stashes_kept.v[i], ' ');

		printf("[gdnctl] stash kept for manual recovery: %.*s (%s)\n",
		       (int)(sp ? sp - s->stashes_kept.v[i] : (long)strlen(s->stashes_kept.v[i])),
		       s->stashes_kept.v[i], sp ? sp + 1 : "");
	}
	printf("[gdnctl] journal: %s\n", s->journal ? s->journal : "(none)");
	sbuf_release(&kinds);
}

/* ---- where validation runs: the held dev TPU and the Ray fallback clusters ---- */

static const char *const hold_policies[] = {"required", "best-effort", NULL};
#define MARIN_TARGETS "--hold-dev-tpu, --validation-ray-cluster, --validation-ray-cluster-auto"

struct where_args {
	int hold, verbose, auto_clusters, cross_tpu;
	const char *policy, *backend, *name, *cluster, *type, *sync_path, *alloc_log;
	const char *ray_tpu, *profile_tpu;
	struct strvec fallbacks, clusters, excludes;
	double ready_timeout, retry_sleep, stop_timeout, validation_retry_sleep;
	long attempts, validation_attempts, reacquire_ms;
	/* opened */
	struct gdn_backend *dev;
	struct gdn_hold *h;
	struct gdn_targets *targets;
	struct strvec dev_clusters;
	/* the original's other --validation-* flags (Marin defaults: marin_gate.h) */
	long max_attempts, ray_log_tail;
	double ray_test_timeout, ray_profile_timeout;
	int dev_no_sync, all_transformer, profile_dry_run;
	struct strvec profile_env;
	struct gdn_marin_gate mg;
};

static void on_backend_event(enum gdn_backend_event ev, const char *text, void *payload)
{
	struct sbuf sb = SBUF_INIT;

	if (ev == GDN_EV_SPAWN || ev == GDN_EV_POLL)
		sbuf_addf(&sb, "$ %s", text);
	else
		sbuf_adds(&sb, text);
	on_say(GDN_LOOP_INFO, sb.buf, payload);
	sbuf_release(&sb);
}

static bool seen(const struct opt *opts, const char *name)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, name))
			return o->seen > 0;
	return false;
}

/* The original's checks of the dev TPU and validation retry flags (exit 1, its messages). */
static const char *where_check(const struct where_args *w)
{
	if (!(w->ready_timeout > 0))
		return "--dev-tpu-ready-timeout must be > 0.";
	if (w->attempts <= 0)
		return "--dev-tpu-allocate-attempts must be > 0.";
	if (w->retry_sleep < 0)
		return "--dev-tpu-allocate-retry-sleep must be >= 0.";
	if (!(w->stop_timeout > 0))
		return "--dev-tpu-stop-timeout must be > 0.";
	if (w->validation_attempts < 1)
		return "--validation-attempts must be >= 1.";
	if (w->validation_retry_sleep < 0)
		return "--validation-retry-sleep must be >= 0.";
	if (w->reacquire_ms < 0)
		return "--dev-tpu-reacquire-interval must be >= 0.";
	return NULL;
}

/*
 * The original's checks of the other --validation-* flags (exit 1, its
 * messages), then --validation-max-attempts as --validation-attempts (-1:
 * unlimited). NULL or the message.
 */
static const char *marin_check(struct where_args *w, const struct opt *opts)
{
	bool max = seen(opts, "validation-max-attempts");

	if (max && (w->max_attempts == 0 || w->max_attempts < -1))
		return "--validation-max-attempts must be -1 (unlimited) or >= 1.";
	if (seen(opts, "validation-ray-test-timeout") && !(w->ray_test_timeout > 0))
		return "--validation-ray-test-timeout must be > 0 when set.";
	if (seen(opts, "validation-ray-profile-timeout") && !(w->ray_profile_timeout > 0))
		return "--validation-ray-profile-timeout must be > 0 when set.";
	if (seen(opts, "validation-ray-log-tail") && w->ray_log_tail <= 0)
		return "--validation-ray-log-tail must be > 0.";
	if (max && seen(opts, "validation-attempts") && w->max_attempts != w->validation_attempts)
		return "--validation-max-attempts and --validation-attempts are the same setting; "
		       "give one.";
	if (max)
		w->validation_attempts = w->max_attempts;
	return NULL;
}

/*
 * The Marin defaults (marin_gate.h): a phase without its project.* command
 * runs the original's when validation runs on Marin targets (a held dev
 * TPU, Ray fallback clusters). The profile values are checked even when
 * unused, as the original did at startup. 0 or an exit code.
 */
static int marin_defaults(struct gdn_ctx *ctx, struct where_args *w, enum gdn_gate_mode mode,
			  bool perf_on, const char *workdir)
{
	struct gdn_marin_gate all;
	struct gdn_err err = GDN_ERR_INIT;
	bool marin = w->hold || w->clusters.nr || w->auto_clusters;

	w->mg.p.tpu = w->profile_tpu;
	w->mg.p.all_transformer = w->all_transformer;
	w->mg.p.extra = (const char *const *)w->profile_env.v;
	w->mg.dry_run = w->profile_dry_run;
	w->mg.repo = workdir;
	w->mg.tests = marin && mode == GDN_GATE_REQUIRED &&
		      !nonempty(gdn_config_str(&ctx->config, "project.test_command"));
	w->mg.profile = marin && (mode != GDN_GATE_OFF || perf_on) &&
			!nonempty(gdn_config_str(&ctx->config, "project.profile_command"));
	all = w->mg;
	all.tests = all.profile = true;
	if (gdn_marin_gate_check(&all, &err)) {
		fprintf(stderr, "[gdnctl] %s\n", err.msg);
		return GDN_EXIT_FAILED;
	}
	return 0;
}

/* backends.NAME.KEY = value (from flag). 0 or an exit code. */
static int set_key(struct gdn_ctx *ctx, const char *name, const char *key, const char *value,
		   const char *flag)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *k = xstrfmt("backends.%s.%s", name, key);
	int ret = gdn_config_set(&ctx->config, k, value, GDN_SRC_CMDLINE, flag, &err);

	free(k);
	if (!ret)
		return 0;
	gdn_error("%s", err.msg);
	return GDN_EXIT_USAGE;
}

/* Open the dev-tpu backend: the flags over backends.NAME (NAME: --dev-tpu-backend or dev-tpu). */
static int open_dev(struct gdn_ctx *ctx, struct where_args *w, const struct opt *opts,
		    const char *log_dir, const char *workdir, struct printer *pr)
{
	const char *name = w->backend ? w->backend : "dev-tpu";
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf key = SBUF_INIT, v = SBUF_INIT;
	const struct {
		const char *flag, *key;
		bool seconds;
		const double *f;
		const long *n;
		const char *s;
	} flags[] = {
	    {"dev-tpu-name", "tpu_name", false, NULL, NULL, w->name},
	    {"dev-tpu-cluster", "cluster", false, NULL, NULL, w->cluster},
	    {"dev-tpu-type", "tpu_type", false, NULL, NULL, w->type},
	    {"dev-tpu-sync-path", "sync_path", false, NULL, NULL, w->sync_path},
	    {"dev-tpu-allocate-log", "allocate_log", false, NULL, NULL, w->alloc_log},
	    {"dev-tpu-ready-timeout", "ready_timeout", true, &w->ready_timeout, NULL, NULL},
	    {"dev-tpu-allocate-retry-sleep", "retry_sleep", true, &w->retry_sleep, NULL, NULL},
	    {"dev-tpu-stop-timeout", "stop_timeout", true, &w->stop_timeout, NULL, NULL},
	    {"dev-tpu-allocate-attempts", "attempts", false, NULL, &w->attempts, NULL},
	    {"dev-tpu-verbose", "verbose", false, NULL, NULL, w->verbose ? "true" : NULL},
	    {"validation-dev-no-sync", "no_sync", false, NULL, NULL,
	     w->dev_no_sync ? "true" : NULL},
	};
	const struct strvec *fb;
	const char *c;
	int code = 0;

	for (size_t i = 0; i < ARRAY_SIZE(flags) && !code; i++) {
		sbuf_reset(&v);
		sbuf_reset(&key);
		sbuf_addf(&key, "--%s", flags[i].flag);
		if (!seen(opts, flags[i].flag))
			continue;
		if (flags[i].f)
			sbuf_addf(&v, "%lldms", (long long)(*flags[i].f * 1000.0));
		else if (flags[i].n)
			sbuf_addf(&v, "%ld", *flags[i].n);
		else if (flags[i].s)
			sbuf_adds(&v, flags[i].s);
		else
			continue;
		code = set_key(ctx, name, flags[i].key, v.buf, key.buf);
	}
	if (!code && w->fallbacks.nr) {
		sbuf_reset(&v);
		for (size_t i = 0; i < w->fallbacks.nr; i++)
			sbuf_addf(&v, "%s%s", i ? "," : "", w->fallbacks.v[i]);
		code = set_key(ctx, name, "fallback_clusters", v.buf, "--dev-tpu-fallback-cluster");
	}
	/* the original's defaults: --sync-path ., <log-dir>/dev_tpu_allocate.log */
	sbuf_reset(&key);
	sbuf_addf(&key, "backends.%s.sync_path", name);
	if (!code && !gdn_config_str(&ctx->config, key.buf))
		code = set_key(ctx, name, "sync_path", ".", "--dev-tpu-sync-path");
	sbuf_reset(&key);
	sbuf_addf(&key, "backends.%s.allocate_log", name);
	if (!code && !gdn_config_str(&ctx->config, key.buf)) {
		char *p = xstrfmt("%s/dev_tpu_allocate.log", log_dir);

		code = set_key(ctx, name, "allocate_log", p, "--dev-tpu-allocate-log");
		free(p);
	}
	if (code)
		goto out;
	if (gdn_backend_open(&ctx->config, name, &w->dev, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	if (strcmp(w->dev->ops->type, "dev-tpu")) {
		gdn_error("--dev-tpu-backend %s is a %s backend, not dev-tpu", name,
			  w->dev->ops->type);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	w->dev->repo_root = workdir;
	w->dev->on_event = on_backend_event;
	w->dev->event_payload = pr;
	sbuf_reset(&key);
	sbuf_addf(&key, "backends.%s.cluster", name);
	c = gdn_config_str(&ctx->config, key.buf);
	strvec_push(&w->dev_clusters, c ? c : GDN_MARIN_CLUSTER);
	sbuf_reset(&key);
	sbuf_addf(&key, "backends.%s.fallback_clusters", name);
	fb = gdn_config_list(&ctx->config, key.buf);
	gdn_strvec_add_unique(&w->dev_clusters, fb);
out:
	sbuf_release(&key);
	sbuf_release(&v);
	return code;
}

/*
 * Before the loop: acquire the held dev TPU (--hold-dev-tpu) and set up
 * the validation targets. 0 or an exit code.
 */
static int where_setup(struct gdn_ctx *ctx, struct where_args *w, const struct opt *opts,
		       bool resilient, const char *log_dir, const char *workdir,
		       struct strvec *directives, struct gdn_gate *gate, bool gate_on,
		       struct printer *pr)
{
	struct gdn_err err = GDN_ERR_INIT;
	int code = 0;

	if (w->hold) {
		char *k = xstrfmt("backends.%s.tpu_name", w->backend ? w->backend : "dev-tpu");
		const char *name = w->name ? w->name : gdn_config_str(&ctx->config, k);

		free(k);
		if (!name && resilient) {
			fprintf(stderr, "[gdnctl] WARNING: --hold-dev-tpu requested without "
					"--dev-tpu-name; continuing without managed dev TPU due to "
					"--resilient.\n");
			w->hold = 0;
		} else if (!name) {
			fprintf(stderr, "[gdnctl] --hold-dev-tpu requires --dev-tpu-name.\n");
			return GDN_EXIT_FAILED;
		}
	}
	if (w->hold) {
		struct gdn_hold_opts ho = {0};
		char *k;

		code = open_dev(ctx, w, opts, log_dir, workdir, pr);
		if (code)
			return code;
		k = xstrfmt("backends.%s.tpu_name", w->dev->name);
		ho.tpu_name = gdn_config_str(&ctx->config, k);
		free(k);
		k = xstrfmt("backends.%s.tpu_type", w->dev->name);
		ho.tpu_type = gdn_config_str(&ctx->config, k);
		free(k);
		ho.backend = w->dev;
		ho.required = !strcmp(w->policy, "required") && !resilient;
		ho.reacquire_interval_ms = w->reacquire_ms;
		ho.mode = gate->mode;
		ho.directives = directives;
		ho.say = on_say;
		ho.payload = pr;
		w->h = gdn_hold_new(&ho);
		if (gdn_hold_acquire(w->h, &err)) {
			if (gdn_proc_interrupted()) {
				gdn_error("%s", err.msg);
				return GDN_EXIT_SIGNAL + gdn_proc_interrupted();
			}
			fprintf(stderr, "[gdnctl] %s\n", err.msg);
			return GDN_EXIT_FAILED;
		}
	}
	if (gate_on &&
	    (w->h || w->clusters.nr || w->auto_clusters || w->validation_attempts != 1)) {
		struct gdn_targets_opts to = {0};

		to.repo = workdir;
		to.hold = w->h;
		to.dev = w->dev;
		to.clusters = &w->clusters;
		to.auto_discover = w->auto_clusters;
		to.excludes = &w->excludes;
		to.dev_clusters = &w->dev_clusters;
		to.test_tpu = w->ray_tpu;
		to.profile_tpu = w->profile_tpu;
		to.cross_tpu_tests = w->cross_tpu;
		to.backend = gate->backend;
		to.passes = w->validation_attempts;
		to.retry_sleep_ms = (long)(w->validation_retry_sleep * 1000.0);
		to.ray_tests_timeout_ms = (long)(w->ray_test_timeout * 1000.0);
		to.ray_profile_timeout_ms = (long)(w->ray_profile_timeout * 1000.0);
		to.ray_log_tail = w->ray_log_tail;
		if (w->mg.tests || w->mg.profile) {
			to.phase_command = gdn_marin_gate_phase;
			to.phase_payload = &w->mg;
		}
		to.on_event = on_backend_event;
		to.event_payload = pr;
		to.say = on_say;
		to.payload = pr;
		if (gdn_targets_new(&ctx->config, &to, &w->targets, &err))
			return gdn_die_err(&err);
		gate->targets = w->targets;
	}
	return 0;
}

/* After the loop: release the hold and journal what could not be journaled yet. */
static void where_end(struct where_args *w, const char *log_dir, const char *run_id)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (!w->h)
		return;
	if (gdn_hold_release(w->h, &err))
		gdn_warn("%s", err.msg);
	gdn_hold_flush(w->h, log_dir, run_id);
}

static void where_free(struct where_args *w)
{
	gdn_targets_free(w->targets);
	gdn_hold_free(w->h);
	gdn_backend_free(w->dev);
	strvec_clear(&w->fallbacks);
	strvec_clear(&w->clusters);
	strvec_clear(&w->excludes);
	strvec_clear(&w->dev_clusters);
	strvec_clear(&w->profile_env);
}

static int dry_run(struct gdn_agent *agent, const struct gdn_loop_opts *lo, struct gdn_err *err)
{
	struct sbuf prompt = SBUF_INIT, line = SBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	char *head = NULL, *branch = NULL, *pfile = NULL, *mfile = NULL, *tfile = NULL;
	struct gdn_prompt_vars v = {1, lo->iterations, NULL, NULL, NULL};
	struct gdn_agent_request req = {0};
	int ret;

	ret = gdn_repo_head_at(lo->workdir, &head, &branch, err);
	if (ret)
		goto out;
	v.head_sha = head;
	v.branch = branch;
	gdn_prompt_render(lo->prompt_template, &v, lo->directives, &prompt);
	pfile = xstrfmt("%s/iteration-001-prompt.txt", lo->log_dir);
	mfile = xstrfmt("%s/iteration-001-last-message.txt", lo->log_dir);
	tfile = xstrfmt("%s/iteration-001-transcript.log", lo->log_dir);
	req = (struct gdn_agent_request){.workdir = lo->workdir,
					 .prompt = prompt.buf,
					 .prompt_file = pfile,
					 .last_message_file = mfile,
					 .transcript_file = tfile};
	gdn_agent_argv(agent, &req, &argv);
	printf("[gdnctl] dry run: the prompt of iteration 1 (%s):\n", pfile);
	fwrite(prompt.buf, 1, prompt.len, stdout);
	if (prompt.len && prompt.buf[prompt.len - 1] != '\n')
		putchar('\n');
	gdn_argv_format(&line, argv.v);
	printf("[gdnctl] dry run: the agent command (in %s):\n[gdnctl] $ %s\n", lo->workdir,
	       line.buf);
out:
	free(head);
	free(branch);
	free(pfile);
	free(mfile);
	free(tfile);
	strvec_clear(&argv);
	sbuf_release(&prompt);
	sbuf_release(&line);
	return ret;
}

int cmd_loop(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct loop_args a = {
	    .iterations = 0,
	    .ephemeral = 1,
	    .reasoning_effort = NULL,
	    .sleep_seconds = 5.0,
	    .codex_timeout = 7200.0,
	    .codex_idle_timeout = 900.0,
	    .retry_sleep = 20.0,
	    .agent_timeout_ms = -1,
	    .agent_idle_timeout_ms = -1,
	    .kill_grace_ms = 10000,
	    .post_check_policy = "fail",
	    .no_commit_policy = "fail",
	    .iteration_error_policy = "fail",
	    .dirty_policy = "fail",
	    .restore_policy = "warn-keep",
	    .sync_policy = "off",
	    .sync_remote = "origin",
	    .sync_branch = "main",
	    .sync_conflict = "fail",
	    .validation_mode = "off",
	    .validation_policy = "count-failure",
	    .validation_timeout_ms = 30 * 60 * 1000,
	    .perf_mode = "off",
	    .perf_metric = GDN_PERF_DEFAULT_METRIC,
	    .perf_direction = "auto",
	    .perf_policy = "revert-count-failure",
	    .perf_within = "keep",
	    .perf_stat = "median",
	    .perf_min_improvement = 0.25,
	    .perf_max_regression = 1.0,
	    .perf_repeats = 1,
	    .perf_source = "auto",
	    .perf_aggregation = "history-window",
	    .perf_history_agg = "median",
	    .perf_step_start = 10,
	    .perf_step_end = 18,
	    .perf_min_points = 5,
	    .perf_wandb_retries = 4,
	    .perf_wandb_timeout_ms = 120000,
	    .perf_wandb_entity = "marin-community",
	    .perf_wandb_project = "marin",
	    .agent = "codex",
	};
	struct where_args w = {
	    .policy = "required",
	    .ready_timeout = 900.0,
	    .retry_sleep = 30.0,
	    .stop_timeout = 120.0,
	    .attempts = 1,
	    .validation_attempts = 1,
	    .validation_retry_sleep = 120.0,
	    .reacquire_ms = 5 * 60 * 1000,
	    .profile_tpu = GDN_MARIN_PROFILE_TPU,
	    .fallbacks = STRVEC_INIT,
	    .clusters = STRVEC_INIT,
	    .excludes = STRVEC_INIT,
	    .dev_clusters = STRVEC_INIT,
	    .profile_env = STRVEC_INIT,
	};
	struct opt opts[] = {
	    OPT_GROUP_("Loop"),
	    OPT_INT_(0, "iterations", &a.iterations, "N",
		     "number of iterations (required unless --resume)", NULL, 0, 0),
	    OPT_STRING_(0, "prompt-file", &a.prompt_file, "PATH",
			"prompt template ({{ITERATION}}, {{TOTAL_ITERATIONS}}, {{HEAD_SHA}}, "
			"{{BRANCH}}, {{LOG_TAIL}})",
			"<repo>/prompts/iteration.md, else the installed one"),
	    OPT_STRING_(0, "workdir", &a.workdir, "PATH",
			"repository where the agent runs and git operations happen",
			"the repository root"),
	    OPT_STRING_(0, "log-dir", &a.log_dir, "PATH",
			"prompts, transcripts, last messages and the journal loop.jsonl",
			"<workdir>/.agents/logs/gdn_codex_loop"),
	    OPT_STRING_(0, "hillclimb-log-file", &a.hillclimb_log, "PATH",
			"running log: {{LOG_TAIL}} and commit stamping",
			"config log_file, under --workdir"),
	    OPT_FLOAT_(0, "sleep-seconds", &a.sleep_seconds, "S",
		       "sleep after a successful iteration (not after the last)", "5.0"),
	    OPT_BOOL_(0, "resume", &a.resume,
		      "continue the last run journaled in the log dir after a crash or kill"),
	    OPT_BOOL_(0, "dry-run", &a.dry_run,
		      "print the prompt and the agent command of iteration 1, run nothing"),
	    OPT_BOOL_(
		0, "json", &a.json,
		"print the summary as JSON (gdnctl.loop_summary.v1); progress goes to stderr"),
	    OPT_GROUP_("Stop conditions"),
	    OPT_STRING_(0, "until-time", &a.until_time, "TIME",
			"start no iteration after TIME (2026-11-21T18:00:00Z, UTC) or +DURATION",
			NULL),
	    OPT_FLOAT_(0, "max-agent-minutes", &a.max_agent_minutes, "M",
		       "start no iteration once the agent has run this long in total (0: no limit)",
		       "0"),
	    OPT_INT_(0, "stop-after-failures", &a.stop_after_failures, "N",
		     "stop (exit 1) after N consecutive failed iterations (0: never)", "0", 0, 0),
	    OPT_INT_(0, "max-failures", &a.max_failures, "N",
		     "abort when counted failures exceed N; -1 unlimited", "0", 0, 0),
	    OPT_GROUP_("Agent"),
	    OPT_CHOICE_(0, "agent", &a.agent, agents, "the agent driver", "codex"),
	    OPT_STRING_(0, "agent-cmd", &a.agent_cmd, "CMD",
			"command driver: 'prog arg {prompt_file}' (prompt also on stdin)", NULL),
	    OPT_STRING_(0, "codex-bin", &a.codex_bin, "PATH", "explicit agent binary", NULL),
	    OPT_STRING_(0, "model", &a.model, "NAME", "model (-m)", "gpt-5.4 for codex"),
	    OPT_STRING_(0, "reasoning-effort", &a.reasoning_effort, "LEVEL",
			"reasoning effort (codex -c model_reasoning_effort)", "xhigh for codex"),
	    OPT_STRING_(0, "codex-profile", &a.codex_profile, "NAME", "codex profile (-p)", NULL),
	    {OPT_BOOL, 0, "codex-ephemeral", &a.ephemeral, NULL, "codex --ephemeral", NULL, "on",
	     OPT_NEGATABLE, 0, 0, 0},
	    OPT_BOOL_(0, "search", &a.search, "codex --search (when the binary supports it)"),
	    OPT_BOOL_(0, "show-file-updates", &a.show_file_updates,
		      "show the agent's file-update and diff blocks on the terminal"),
	    OPT_INT_(0, "codex-retries", &a.codex_retries, "N",
		     "extra agent attempts per iteration", "0", 0, 0),
	    OPT_FLOAT_(0, "codex-timeout-seconds", &a.codex_timeout, "S",
		       "wall-clock limit per agent attempt (any agent)", "7200"),
	    OPT_FLOAT_(0, "codex-idle-timeout-seconds", &a.codex_idle_timeout, "S",
		       "no-output limit per agent attempt (any agent)", "900"),
	    OPT_DURATION_(0, "agent-timeout", &a.agent_timeout_ms,
			  "same as --codex-timeout-seconds, as a duration (0: none)", NULL),
	    OPT_DURATION_(0, "agent-idle-timeout", &a.agent_idle_timeout_ms,
			  "same as --codex-idle-timeout-seconds, as a duration (0: none)", NULL),
	    OPT_DURATION_(0, "agent-kill-grace", &a.kill_grace_ms,
			  "between SIGINT, SIGTERM and SIGKILL to the agent's process group",
			  "10s"),
	    OPT_FLOAT_(0, "retry-sleep-seconds", &a.retry_sleep, "S",
		       "sleep between agent and post-check retries", "20.0"),
	    OPT_GROUP_("Prompt and session directives"),
	    OPT_LIST_(0, "directive", &a.directives, "TEXT", "an inline session directive"),
	    OPT_LIST_(0, "directive-file", &a.directive_files, "PATH", "a directive from a file"),
	    OPT_LIST_(0, "directive-preset", &a.presets, "NAME",
		      "session_directives/NAME.md (the repository's, else the installed one)"),
	    OPT_GROUP_("Working tree"),
	    OPT_BOOL_(0, "allow-dirty", &a.allow_dirty, "skip the clean-tree requirement"),
	    OPT_CHOICE_(0, "dirty-policy", &a.dirty_policy, dirty_policies,
			"a dirty tree before an iteration", "fail"),
	    OPT_CHOICE_(0, "stash-restore-policy", &a.restore_policy, restore_policies,
			"when the stash cannot be restored", "warn-keep"),
	    OPT_BOOL_(0, "allow-no-commit", &a.allow_no_commit, "do not require a new commit"),
	    OPT_CHOICE_(0, "no-commit-policy", &a.no_commit_policy, policies,
			"an iteration without a new commit", "fail"),
	    OPT_CHOICE_(0, "iteration-error-policy", &a.iteration_error_policy, policies,
			"an unexpected error in an iteration", "fail"),
	    OPT_BOOL_(0, "resilient", &a.resilient,
		      "tolerant preset: unlimited failures, stash, count-failure, retries"),
	    OPT_GROUP_("Post-checks"),
	    OPT_LIST_(0, "post-check", &a.post_checks, "CMD",
		      "run with bash -lc after each iteration"),
	    OPT_CHOICE_(0, "post-check-policy", &a.post_check_policy, policies,
			"a failing post-check", "fail"),
	    OPT_INT_(0, "post-check-retries", &a.post_check_retries, "N",
		     "extra attempts per post-check", "0", 0, 0),
	    OPT_GROUP_("Sync with a remote branch"),
	    OPT_CHOICE_(0, "sync-main-policy", &a.sync_policy, sync_policies,
			"merge the remote branch before iterations", "off"),
	    OPT_STRING_(0, "sync-main-remote", &a.sync_remote, "NAME", "remote", "origin"),
	    OPT_STRING_(0, "sync-main-branch", &a.sync_branch, "NAME", "branch", "main"),
	    OPT_CHOICE_(0, "sync-main-conflict-policy", &a.sync_conflict, conflict_policies,
			"a merge conflict", "fail"),
	    OPT_GROUP_("Validation gate"),
	    OPT_CHOICE_(0, "validation-mode", &a.validation_mode, validation_modes,
			"after an iteration with commits: project.test_command then "
			"project.profile_command (required), the profile only, or nothing",
			"off"),
	    OPT_CHOICE_(0, "validation-policy", &a.validation_policy, policies,
			"a failed validation (its commits are reverted first)", "count-failure"),
	    OPT_DURATION_(0, "validation-timeout", &a.validation_timeout_ms,
			  "per validation phase (0: none)", "30m"),
	    OPT_STRING_(0, "backend", &a.backend, "NAME",
			"where the validation commands run (backends.NAME, or local)",
			"config loop.backend, else local"),
	    OPT_INT_(0, "validation-retries", &a.validation_retries, "N",
		     "run a phase again when it could not run (backend error, job stopped), "
		     "--retry-sleep-seconds apart; never for a failed command",
		     "0", 0, 1000),
	    OPT_GROUP_("Where validation runs (docs/gdnctl-loop.md)"),
	    OPT_INT_(0, "validation-attempts", &w.validation_attempts, "N",
		     "passes over the targets per phase", "1", 0, 0),
	    OPT_FLOAT_(0, "validation-retry-sleep", &w.validation_retry_sleep, "S",
		       "sleep between passes", "120.0"),
	    OPT_INT_(0, "validation-max-attempts", &w.max_attempts, "N",
		     "the original's name of --validation-attempts; -1: until a pass succeeds",
		     NULL, 0, 0),
	    OPT_FLOAT_(0, "validation-ray-test-timeout", &w.ray_test_timeout, "S",
		       "timeout of a Ray fallback tests job (overrides --validation-timeout)",
		       NULL),
	    OPT_FLOAT_(0, "validation-ray-profile-timeout", &w.ray_profile_timeout, "S",
		       "timeout of a Ray fallback profile job (overrides --validation-timeout)",
		       NULL),
	    OPT_INT_(0, "validation-ray-log-tail", &w.ray_log_tail, "N",
		     "show (and parse) only the last N lines of a Ray fallback job's output", "all",
		     0, 0),
	    OPT_LIST_(0, "validation-ray-cluster", &w.clusters, "C",
		      "a Ray fallback cluster, tried in order"),
	    OPT_BOOL_(0, "validation-ray-cluster-auto", &w.auto_clusters,
		      "Ray fallback clusters from <workdir>/infra/marin-*.yaml"),
	    OPT_LIST_(0, "validation-ray-cluster-exclude", &w.excludes, "S",
		      "skip discovered clusters whose name contains S (added to vllm, big-run)"),
	    OPT_BOOL_(0, "validation-cross-tpu-test-fallback", &w.cross_tpu,
		      "discovered test clusters: any v5p, v5e or v6e slice"),
	    OPT_STRING_(0, "validation-ray-tpu", &w.ray_tpu, "T", "--tpu of Ray test jobs",
			"the ray backend's, auto"),
	    OPT_STRING_(0, "validation-profile-tpu", &w.profile_tpu, "T",
			"--tpu of Ray profile jobs, and the discovery filter", "v5p-8"),
	    OPT_BOOL_(
		0, "hold-dev-tpu", &w.hold,
		"allocate a dev TPU before the loop, validate on it first, release at the end"),
	    OPT_CHOICE_(0, "hold-dev-tpu-policy", &w.policy, hold_policies,
			"when the allocation fails: abort (exit 1) or continue without it",
			"required"),
	    OPT_STRING_(0, "dev-tpu-backend", &w.backend, "NAME",
			"a configured dev-tpu backend (the flags below override its keys)",
			"dev-tpu"),
	    OPT_STRING_(0, "dev-tpu-name", &w.name, "N", "the dev TPU's name (required to hold)",
			"backends.NAME.tpu_name"),
	    OPT_STRING_(0, "dev-tpu-cluster", &w.cluster, "C", "the first cluster to allocate on",
			"us-central1"),
	    OPT_LIST_(0, "dev-tpu-fallback-cluster", &w.fallbacks, "C",
		      "allocate here when the cluster fails, in order"),
	    OPT_STRING_(0, "dev-tpu-type", &w.type, "T", "dev_tpu.py allocate --tpu-type", NULL),
	    OPT_STRING_(0, "dev-tpu-sync-path", &w.sync_path, "P",
			"the sync path of the allocation (dev_tpu.py)", "."),
	    OPT_FLOAT_(0, "dev-tpu-ready-timeout", &w.ready_timeout, "S",
		       "give a cluster up when not active after S seconds", "900.0"),
	    OPT_INT_(0, "dev-tpu-allocate-attempts", &w.attempts, "N",
		     "passes over the cluster and its fallbacks", "1", 0, 0),
	    OPT_FLOAT_(0, "dev-tpu-allocate-retry-sleep", &w.retry_sleep, "S",
		       "sleep between allocation passes", "30.0"),
	    OPT_FLOAT_(0, "dev-tpu-stop-timeout", &w.stop_timeout, "S",
		       "release: SIGINT, then SIGTERM after S seconds", "120.0"),
	    OPT_STRING_(0, "dev-tpu-allocate-log", &w.alloc_log, "PATH", "the allocation's output",
			"<log-dir>/dev_tpu_allocate.log"),
	    OPT_BOOL_(0, "dev-tpu-verbose", &w.verbose, "verbose dev_tpu.py output"),
	    OPT_DURATION_(0, "dev-tpu-reacquire-interval", &w.reacquire_ms,
			  "at most one re-acquire of a lost or failing dev TPU this often", "5m"),
	    OPT_GROUP_("Marin validation defaults: without project.test_command/profile_command"),
	    OPT_CHOICE_(0, "validation-tests", &w.mg.test_selection, gdn_marin_test_choices,
			"which GDN tests (REMOTE_TEST_CMD)", "both"),
	    OPT_STRING_(0, "validation-pytest-args", &w.mg.pytest_args, "ARGS",
			"appended to the pytest command", NULL),
	    OPT_BOOL_(0, "validation-dev-no-sync", &w.dev_no_sync,
		      "dev_tpu.py execute --no-sync on the held dev TPU"),
	    OPT_CHOICE_(0, "validation-profile-size", &w.mg.p.size, gdn_marin_size_choices,
			"GDN_PROFILE_SIZE", "130m"),
	    OPT_INT_(0, "validation-profile-num-steps", &w.mg.p.num_steps, "N",
		     "GDN_PROFILE_NUM_STEPS", "20", 0, 0),
	    OPT_INT_(0, "validation-profile-start-step", &w.mg.p.profile_start_step, "N",
		     "GDN_PROFILE_PROFILE_START_STEP", "2", 0, 0),
	    OPT_INT_(0, "validation-profile-num-steps-window", &w.mg.p.profile_num_steps, "N",
		     "GDN_PROFILE_PROFILE_NUM_STEPS", "6", 0, 0),
	    OPT_INT_(0, "validation-profile-batch-size", &w.mg.p.batch_size, "N",
		     "GDN_PROFILE_BATCH_SIZE", "8", 0, 0),
	    OPT_INT_(0, "validation-profile-chunk-size", &w.mg.p.chunk_size, "N",
		     "GDN_PROFILE_CHUNK_SIZE", NULL, 0, 0),
	    OPT_INT_(0, "validation-profile-segment-size", &w.mg.p.segment_size, "N",
		     "GDN_PROFILE_SEGMENT_SIZE", NULL, 0, 0),
	    OPT_INT_(0, "validation-profile-gdn-layers-per-block", &w.mg.p.layers_per_block, "N",
		     "GDN_PROFILE_GDN_LAYERS_PER_BLOCK", NULL, 0, 0),
	    OPT_INT_(0, "validation-profile-gdn-block-size", &w.mg.p.block_size, "N",
		     "GDN_PROFILE_GDN_BLOCK_SIZE", NULL, 0, 0),
	    OPT_BOOL_(0, "validation-profile-all-transformer", &w.all_transformer,
		      "GDN_PROFILE_ALL_TRANSFORMER=1 (attention-only control)"),
	    OPT_LIST_(0, "validation-profile-env", &w.profile_env, "KEY=VALUE",
		      "an extra environment variable of the profile"),
	    OPT_STRING_(0, "validation-profile-ce-implementation", &w.mg.p.ce_impl, "IMPL",
			"fused CE: auto, xla, reference, pallas_tpu or pallas_gpu",
			GDN_MARIN_GATE_CE_IMPL),
	    OPT_STRING_(0, "validation-profile-ce-bwd-mode", &w.mg.p.ce_bwd, "MODE",
			"CE backward: pallas or xla_streaming", "pallas"),
	    OPT_STRING_(0, "validation-profile-run-name-prefix", &w.mg.p.run_name_prefix, "P",
			"runs are named P_iterNNN (GDN_PROFILE_RUN_NAME_PREFIX); the W&B prefix",
			GDN_MARIN_GATE_RUN_NAME_PREFIX),
	    OPT_CHOICE_(0, "validation-profile-wandb-mode", &w.mg.p.wandb_mode,
			gdn_marin_wandb_choices,
			"WANDB_MODE; the metric comes from W&B only online", "online"),
	    OPT_STRING_(0, "validation-profile-marin-prefix", &w.mg.marin_prefix, "URL",
			"MARIN_PREFIX on the dev TPU", "gs://BUCKET of the held cluster"),
	    OPT_BOOL_(0, "validation-profile-dry-run", &w.profile_dry_run,
		      "pass --dry_run true to the profile script"),
	    OPT_GROUP_("Performance policy (docs/performance-policy.md)"),
	    OPT_CHOICE_(0, "perf-mode", &a.perf_mode, perf_modes,
			"measure each iteration with project.profile_command and keep, promote or "
			"revert it (required: same as on)",
			"off"),
	    OPT_STRING_(0, "perf-metric", &a.perf_metric, "NAME",
			"the metric (profile output, or trace/step_ms, trace/category/NAME_ms, "
			"trace/op/NAME_ms)",
			GDN_PERF_DEFAULT_METRIC),
	    OPT_CHOICE_(0, "perf-direction", &a.perf_direction, perf_directions,
			"which way is better", "auto"),
	    OPT_FLOAT_(0, "perf-min-improvement-pct", &a.perf_min_improvement, "PCT",
		       "promote at an improvement of at least PCT", "0.25"),
	    OPT_FLOAT_(0, "perf-max-regression-pct", &a.perf_max_regression, "PCT",
		       "a regression at a loss of at least PCT", "1.0"),
	    OPT_CHOICE_(0, "perf-regression-policy", &a.perf_policy, perf_policies,
			"a regression, a gate rejection or a missing metric",
			"revert-count-failure"),
	    OPT_CHOICE_(0, "perf-within-threshold-policy", &a.perf_within, perf_withins,
			"a change within the thresholds (neither promoted nor a regression)",
			"keep"),
	    OPT_CHOICE_(
		0, "perf-repeat-stat", &a.perf_stat, perf_stats,
		"one figure of a commit's --perf-repeats samples: their median, or the best "
		"(for noise that only slows down)",
		"median"),
	    OPT_LIST_(0, "perf-gate", &a.perf_gates, "RULE",
		      "a trace gate rule (repeatable; none: the defaults)"),
	    OPT_FLOAT_(0, "perf-min-confidence", &a.perf_min_confidence, "Z",
		       "z of the noise rule (0: off)", "0"),
	    OPT_INT_(0, "perf-repeats", &a.perf_repeats, "K", "profile runs per commit", "1", 1,
		     1000),
	    OPT_STRING_(0, "perf-state-file", &a.perf_state_file, "PATH", "champion and history",
			"<log-dir>/perf_state.json"),
	    OPT_CHOICE_(0, "perf-source", &a.perf_source, perf_sources,
			"where the metric comes from (auto: W&B when the profile names a run or "
			"one is found by prefix, else the profile output)",
			"auto"),
	    OPT_CHOICE_(0, "perf-aggregation", &a.perf_aggregation, perf_aggregations,
			"W&B: aggregate a history window, or read the run summary",
			"history-window"),
	    OPT_CHOICE_(0, "perf-history-aggregation", &a.perf_history_agg, perf_history_aggs,
			"W&B history window aggregate", "median"),
	    OPT_INT_(0, "perf-history-step-start", &a.perf_step_start, "N",
		     "W&B history window: first step (inclusive)", "10", 0, 0),
	    OPT_INT_(0, "perf-history-step-end", &a.perf_step_end, "N",
		     "W&B history window: last step (inclusive)", "18", 0, 0),
	    OPT_INT_(0, "perf-history-min-points", &a.perf_min_points, "N",
		     "W&B history window: finite points needed, else unscored", "5", 1, 1000000),
	    OPT_STRING_(0, "perf-wandb-entity", &a.perf_wandb_entity, "E",
			"W&B entity for a run name or prefix", "marin-community"),
	    OPT_STRING_(0, "perf-wandb-project", &a.perf_wandb_project, "P",
			"W&B project for a run name or prefix", "marin"),
	    OPT_STRING_(0, "perf-wandb-run-prefix", &a.perf_wandb_prefix, "PREFIX",
			"find the newest run named PREFIX_* ({iteration}: the iteration, 001)",
			NULL),
	    OPT_INT_(0, "perf-wandb-retries", &a.perf_wandb_retries, "N", "retries per W&B request",
		     "4", 0, 100),
	    OPT_DURATION_(0, "perf-wandb-timeout", &a.perf_wandb_timeout_ms,
			  "W&B requests of one profile run, in total (0: none)", "2m"),
	    OPT_BOOL_(
		0, "log-measurements", &a.log_measurements,
		"add the measured figures to a kept iteration's running-log entry (committed)"),
	    OPT_END_(),
	};
	struct printer pr = {false};
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec rest = STRVEC_INIT, directives = STRVEC_INIT, warnings = STRVEC_INIT;
	struct sbuf tmpl = SBUF_INIT;
	struct gdn_agent_opts ao = {0};
	struct gdn_agent *agent = NULL;
	struct gdn_loop_opts lo = {0};
	struct gdn_loop_agent la = {agent_run, gdn_agent_result_release, NULL};
	struct gdn_loop_summary sum = GDN_LOOP_SUMMARY_INIT;
	char *workdir = NULL, *log_dir = NULL, *hlog = NULL, *prompt_path = NULL;
	char *marin_tests = NULL, *marin_profile = NULL, *wandb_prefix = NULL;
	const char *dirs[4], *msg;
	enum gdn_loop_policy pcp, ncp, iep, vp = GDN_POLICY_COUNT_FAILURE;
	struct gdn_gate gate = {0};
	struct gdn_loop_hooks hooks = {gdn_gate_validate,	 NULL, &gate,
				       GDN_POLICY_COUNT_FAILURE, NULL, NULL};
	struct gdn_backend *backend = NULL;
	struct gdn_perf_config pc;
	struct gdn_perf_state ps = GDN_PERF_STATE_INIT;
	struct gdn_measure_opts mo;
	bool perf_on = false;
	int code = GDN_EXIT_OK;

	gdn_perf_config_init(&pc);
	gdn_measure_opts_init(&mo);
	gdn_marin_gate_init(&w.mg);
	a.max_failures = 0;
	if (!gdn_cmd_parse_opts(opts, &loop_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest,
				&code))
		goto out;
	pr.json = a.json;
	if (a.iterations <= 0 && !a.resume && !opts[1].seen) {
		gdn_error("option '--iterations' is required (or --resume)");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (!strcmp(a.agent, "command") && !a.agent_cmd) {
		gdn_error("--agent command needs --agent-cmd");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (a.resilient)
		apply_resilient(&a);
	msg = validate(&a);
	if (!msg)
		msg = where_check(&w);
	if (!msg)
		msg = marin_check(&w, opts);
	if (msg) {
		fprintf(stderr, "[gdnctl] %s\n", msg);
		code = GDN_EXIT_FAILED;
		goto out;
	}
	lo.until_time = 0;
	if (a.until_time && parse_until(a.until_time, &lo.until_time)) {
		gdn_error("--until-time: expected YYYY-MM-DDTHH:MM[:SS]Z or +DURATION, got '%s'",
			  a.until_time);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	/* Paths: the working tree, then everything in it (bug 11: one tree for all). */
	if (a.workdir) {
		char *p = abspath(ctx->cwd, a.workdir);

		workdir = realpath(p, NULL);
		if (!workdir) {
			gdn_error("cannot use --workdir '%s': %s", a.workdir, strerror(errno));
			code = GDN_EXIT_USAGE;
		}
		free(p);
		if (code)
			goto out;
	} else if (ctx->repo_root) {
		workdir = xstrdup(ctx->repo_root);
	} else {
		gdn_error("not inside a git repository: '%s' (use --workdir)", ctx->cwd);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	log_dir = a.log_dir ? abspath(ctx->cwd, a.log_dir)
			    : xstrfmt("%s/.agents/logs/gdn_codex_loop", workdir);
	if (a.hillclimb_log)
		hlog = abspath(ctx->cwd, a.hillclimb_log);
	else
		hlog = gdn_config_path(&ctx->config, "log_file", workdir);
	prompt_path = a.prompt_file
			  ? abspath(ctx->cwd, a.prompt_file)
			  : gdn_prompt_find(data_dirs(workdir, dirs), "prompts/iteration.md");
	if (!prompt_path) {
		gdn_error("no prompt template: pass --prompt-file (looked for prompts/iteration.md "
			  "in '%s', '%s', '%s')",
			  workdir, GDNCTL_DATADIR, GDNCTL_SOURCE_DATADIR);
		code = GDN_EXIT_FAILED;
		goto out;
	}
	if (sbuf_read_file(&tmpl, prompt_path, 16 * 1024 * 1024, &err) ||
	    load_directives(&a, ctx->cwd, workdir, &directives, &err)) {
		fprintf(stderr, "[gdnctl] %s\n", err.msg);
		code = GDN_EXIT_FAILED;
		goto out;
	}
	if (!a.dry_run) {
		struct stat st;

		if (mkdir(log_dir, 0755) && errno == ENOENT) {
			/* mkdir -p */
			for (char *s = strchr(log_dir + 1, '/'); s; s = strchr(s + 1, '/')) {
				*s = '\0';
				mkdir(log_dir, 0755);
				*s = '/';
			}
			mkdir(log_dir, 0755);
		}
		if (stat(log_dir, &st) || !S_ISDIR(st.st_mode)) {
			gdn_error("cannot create log directory '%s': %s", log_dir, strerror(errno));
			code = GDN_EXIT_FAILED;
			goto out;
		}
	}
	if (a.resilient)
		on_say(GDN_LOOP_INFO,
		       "resilient mode active: unlimited failures, stash dirty handling, "
		       "best-effort dev TPU hold, and retry-enabled command paths.",
		       &pr);

	ao.driver = a.agent;
	ao.bin = a.codex_bin;
	ao.command = a.agent_cmd;
	ao.model =
	    a.model ? (*a.model ? a.model : NULL) : (!strcmp(a.agent, "codex") ? "gpt-5.4" : NULL);
	ao.reasoning_effort = a.reasoning_effort ? (*a.reasoning_effort ? a.reasoning_effort : NULL)
						 : (!strcmp(a.agent, "codex") ? "xhigh" : NULL);
	ao.profile = a.codex_profile;
	ao.search = a.search;
	ao.ephemeral = a.ephemeral;
	ao.show_file_updates = a.show_file_updates;
	ao.timeout_ms =
	    a.agent_timeout_ms >= 0 ? a.agent_timeout_ms : (long)(a.codex_timeout * 1000.0);
	ao.idle_timeout_ms = a.agent_idle_timeout_ms >= 0 ? a.agent_idle_timeout_ms
							  : (long)(a.codex_idle_timeout * 1000.0);
	ao.kill_grace_ms = a.kill_grace_ms;
	if (gdn_agent_open(&ao, &agent, &warnings, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	for (size_t i = 0; i < warnings.nr; i++)
		gdn_warn("%s", warnings.v[i]);
	if (directives.nr) {
		char line[64];

		snprintf(line, sizeof(line), "session directives: %zu loaded", directives.nr);
		on_say(GDN_LOOP_INFO, line, &pr);
	}

	gdn_gate_mode_parse(a.validation_mode, &gate.mode);
	code = marin_defaults(ctx, &w, gate.mode, strcmp(a.perf_mode, "off") != 0, workdir);
	if (code)
		goto out;
	if (gate.mode == GDN_GATE_REQUIRED && !w.mg.tests &&
	    !nonempty(gdn_config_str(&ctx->config, "project.test_command"))) {
		gdn_error("--validation-mode required needs project.test_command in the "
			  "configuration (or Marin targets: " MARIN_TARGETS ")");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (gate.mode == GDN_GATE_PROFILE_ONLY && !w.mg.profile &&
	    !nonempty(gdn_config_str(&ctx->config, "project.profile_command"))) {
		gdn_error("--validation-mode profile-only needs project.profile_command in the "
			  "configuration (or Marin targets: " MARIN_TARGETS ")");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	perf_on = strcmp(a.perf_mode, "off") != 0;
	if (!perf_on && a.log_measurements) {
		gdn_error("--log-measurements needs --perf-mode on (it logs the measured figures)");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (perf_on) {
		char *spath;

		if (!w.mg.profile &&
		    !nonempty(gdn_config_str(&ctx->config, "project.profile_command"))) {
			gdn_error("--perf-mode on needs project.profile_command in the "
				  "configuration (or Marin targets: " MARIN_TARGETS ")");
			code = GDN_EXIT_USAGE;
			goto out;
		}
		pc.metric = a.perf_metric;
		gdn_perf_direction_parse(a.perf_direction, &pc.direction);
		gdn_perf_policy_parse(a.perf_policy, &pc.policy);
		gdn_perf_within_parse(a.perf_within, &pc.within_policy);
		gdn_perf_stat_parse(a.perf_stat, &pc.repeat_stat);
		pc.min_improvement_pct = a.perf_min_improvement;
		pc.max_regression_pct = a.perf_max_regression;
		pc.min_confidence = a.perf_min_confidence;
		for (size_t i = 0; i < a.perf_gates.nr; i++) {
			if (gdn_perf_gate_parse(&pc.gates, a.perf_gates.v[i], &err)) {
				gdn_error("%s", err.msg);
				code = GDN_EXIT_USAGE;
				goto out;
			}
		}
		if (!a.perf_gates.nr)
			gdn_perf_gates_add_defaults(&pc.gates);
		if (gdn_perf_config_check(&pc, &err)) {
			gdn_error("%s", err.msg);
			code = GDN_EXIT_USAGE;
			goto out;
		}
		spath = a.perf_state_file ? abspath(ctx->cwd, a.perf_state_file)
					  : xstrfmt("%s/perf_state.json", log_dir);
		if (gdn_perf_state_load(&ps, spath, &err)) {
			free(spath);
			code = gdn_die_err(&err);
			goto out;
		}
		free(spath);
		gate.perf_config = &pc;
		gate.perf_state = &ps;
		gate.perf_repeats = a.perf_repeats;
		gate.trace_glob = gdn_config_str(&ctx->config, "project.trace_glob");
		if (setup_measure(&a, hlog, &mo, &pc)) {
			code = GDN_EXIT_USAGE;
			goto out;
		}
		if (w.mg.profile && !nonempty(a.perf_wandb_prefix)) {
			wandb_prefix = gdn_marin_gate_wandb_prefix(&w.mg);
			mo.run_prefix = wandb_prefix;
		}
		if (w.mg.profile && strcmp(w.mg.p.wandb_mode, "online")) {
			/* the original fetched W&B metrics only for online runs */
			if (mo.source == GDN_MEASURE_WANDB) {
				gdn_error("--perf-source wandb needs "
					  "--validation-profile-wandb-mode online");
				code = GDN_EXIT_USAGE;
				goto out;
			}
			if (mo.source == GDN_MEASURE_AUTO)
				mo.source = GDN_MEASURE_CLI;
		}
		gate.measure = &mo;
	}
	gdn_loop_policy_parse(a.post_check_policy, &pcp);
	gdn_loop_policy_parse(a.no_commit_policy, &ncp);
	gdn_loop_policy_parse(a.iteration_error_policy, &iep);
	lo.workdir = workdir;
	lo.log_dir = log_dir;
	lo.prompt_template = tmpl.buf;
	lo.directives = &directives;
	lo.hillclimb_log = hlog;
	lo.iterations = a.iterations;
	lo.sleep_ms = (long)(a.sleep_seconds * 1000.0);
	lo.post_checks = &a.post_checks;
	lo.post_check_policy = pcp;
	lo.no_commit_policy = ncp;
	lo.iteration_error_policy = iep;
	lo.max_failures = a.max_failures;
	lo.agent_retries = a.codex_retries;
	lo.post_check_retries = a.post_check_retries;
	lo.retry_sleep_ms = (long)(a.retry_sleep * 1000.0);
	lo.allow_dirty = a.allow_dirty;
	lo.allow_no_commit = a.allow_no_commit;
	lo.dirty_policy = !strcmp(a.dirty_policy, "stash") ? GDN_DIRTY_STASH : GDN_DIRTY_FAIL;
	lo.restore_policy =
	    !strcmp(a.restore_policy, "fail") ? GDN_RESTORE_FAIL : GDN_RESTORE_WARN_KEEP;
	lo.sync_policy = !strcmp(a.sync_policy, "once")		    ? GDN_SYNC_ONCE
			 : !strcmp(a.sync_policy, "each-iteration") ? GDN_SYNC_EACH
								    : GDN_SYNC_OFF;
	lo.sync_remote = a.sync_remote;
	lo.sync_branch = a.sync_branch;
	lo.sync_conflict =
	    !strcmp(a.sync_conflict, "skip") ? GDN_SYNC_CONFLICT_SKIP : GDN_SYNC_CONFLICT_FAIL;
	lo.max_agent_ms = (int64_t)(a.max_agent_minutes * 60000.0);
	if (a.max_agent_minutes > 0 && lo.max_agent_ms < 1)
		lo.max_agent_ms = 1;
	lo.stop_after_failures = a.stop_after_failures;
	lo.resume = a.resume;
	lo.git_retry_sleep_ms = 2000;
	lo.say = on_say;
	lo.on_agent_line = on_agent_line;
	lo.payload = &pr;
	if (a.dry_run) {
		if (dry_run(agent, &lo, &err))
			code = gdn_die_err(&err);
		goto out;
	}
	la.agent = agent;
	if (gate.mode != GDN_GATE_OFF || perf_on) {
		const char *bname =
		    a.backend ? a.backend : gdn_config_str(&ctx->config, "loop.backend");

		if (!bname || !*bname)
			bname = "local";
		if (gdn_backend_open(&ctx->config, bname, &backend, &err)) {
			code = gdn_die_err(&err);
			goto out;
		}
		backend->repo_root = workdir;
		gate.workdir = workdir;
		gate.test_command = gdn_config_str(&ctx->config, "project.test_command");
		gate.profile_command = gdn_config_str(&ctx->config, "project.profile_command");
		if (w.mg.tests) {
			marin_tests = gdn_marin_gate_command(&w.mg, "tests");
			gate.test_command = marin_tests;
		}
		if (w.mg.profile) {
			marin_profile = gdn_marin_gate_command(&w.mg, "profile");
			gate.profile_command = marin_profile;
		}
		gate.timeout_ms = a.validation_timeout_ms;
		gate.backend = backend;
		gate.phase_retries = a.validation_retries;
		gate.retry_sleep_ms = (long)(a.retry_sleep * 1000.0);
		gate.on_line = on_agent_line;
		gate.payload = &pr;
		gdn_loop_policy_parse(a.validation_policy, &vp);
		hooks.policy = vp;
		if (perf_on) {
			hooks.decide = gdn_gate_decide;
			hooks.start = gdn_gate_start;
			hooks.synced = gdn_gate_synced;
		}
	}
	code = where_setup(ctx, &w, opts, a.resilient, log_dir, workdir, &directives, &gate,
			   gate.mode != GDN_GATE_OFF || perf_on, &pr);
	if (code)
		goto out;
	if ((w.mg.tests || w.mg.profile) && !gate.targets) {
		gdn_error("the Marin validation defaults need a held dev TPU or Ray fallback "
			  "clusters (or project.test_command and project.profile_command)");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (gdn_loop_run(&lo, &la, gate.mode != GDN_GATE_OFF || perf_on ? &hooks : NULL, &sum,
			 &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	where_end(&w, log_dir, sum.run_id);
	if (a.json) {
		if (gdn_json_print(gdn_loop_summary_json(&sum)))
			code = GDN_EXIT_FAILED;
	} else {
		print_summary(&sum);
	}
	if (!code)
		code = sum.exit_code;
out:
	where_free(&w);
	gdn_gate_release(&gate);
	gdn_perf_state_release(&ps);
	gdn_perf_config_release(&pc);
	strvec_clear(&a.perf_gates);
	gdn_backend_free(backend);
	gdn_agent_free(agent);
	gdn_loop_summary_release(&sum);
	strvec_clear(&a.directives);
	strvec_clear(&a.directive_files);
	strvec_clear(&a.presets);
	strvec_clear(&a.post_checks);
	strvec_clear(&rest);
	strvec_clear(&directives);
	strvec_clear(&warnings);
	sbuf_release(&tmpl);
	free(workdir);
	free(log_dir);
	free(hlog);
	free(prompt_path);
	free(marin_tests);
	free(marin_profile);
	free(wandb_prefix);
	return code;
}
