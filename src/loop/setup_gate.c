/*
 * The setup of `gdnctl loop`, its validation (loop_setup.h): the Marin
 * defaults, the measurement and the performance policy, the engine's
 * options, the gate's backend and hooks, the run's plan.
 */
#include "gdnctl/compat.h"
#include "gdnctl/loop_setup.h"
#include "setup_impl.h"
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/file.h"
#include "gdnctl/journal.h"
#include "gdnctl/json.h"
#include "gdnctl/marin.h"
#include "gdnctl/proc.h"
#include "gdnctl/prompt.h"
#include "gdnctl/repo.h"
#include "gdnctl/gitops.h"
#include "gdnctl/targets.h"
#include "gdnctl/xalloc.h"

/* ---- validation and the performance policy ---- */

/*
 * The Marin defaults (marin_gate.h): a phase without its project.* command
 * runs the original's when validation runs on Marin targets (a held dev
 * TPU, Ray fallback clusters). The profile values are checked even when
 * unused, as the original did at startup.
 */
static int marin_defaults(struct gdn_loop_setup *s)
{
	struct gdn_loop_where *w = &s->w;
	enum gdn_gate_mode mode = s->gate.mode;
	struct gdn_marin_gate all;
	bool marin = w->hold || w->clusters.nr || w->auto_clusters;

	w->mg.p.tpu = w->profile_tpu;
	w->mg.p.all_transformer = w->all_transformer;
	w->mg.p.extra = (const char *const *)w->profile_env.v;
	w->mg.dry_run = w->profile_dry_run;
	w->mg.repo = s->agent_dir;
	w->mg.tests = marin && mode == GDN_GATE_REQUIRED &&
		      !nonempty(gdn_config_str(s->cfg, "project.test_command"));
	w->mg.profile = marin && (mode != GDN_GATE_OFF || s->a.perf_on) &&
			!nonempty(gdn_config_str(s->cfg, "project.profile_command"));
	all = w->mg;
	all.tests = all.profile = true;
	if (gdn_marin_gate_check(&all, &s->err))
		return failed(s, GDN_SETUP_PLAIN);
	return 0;
}

/* The W&B source and --log-measurements. */
static int setup_measure(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_measure_opts *mo = &s->mo;

	mo->source = (enum gdn_measure_source)a->perf_source;
	if (!gdn_measure_source_takes(mo->source, s->pc.metric))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-source %s does not go with --perf-metric %s (trace/... "
		    "metrics come from the trace)",
		    gdn_enum_name(gdn_measure_source_enum, a->perf_source), s->pc.metric);
	if (a->perf_step_end < a->perf_step_start)
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-history-step-end must be >= --perf-history-step-start");
	mo->history = a->perf_history;
	mo->window.step_min = a->perf_step_start;
	mo->window.step_max = a->perf_step_end;
	mo->window.agg = (enum gdn_agg)a->perf_history_agg;
	mo->window.min_points = (size_t)a->perf_min_points;
	mo->entity = a->perf_wandb_entity;
	mo->project = a->perf_wandb_project;
	mo->run_prefix = nonempty(a->perf_wandb_prefix) ? a->perf_wandb_prefix : NULL;
	mo->http.retries = (int)a->perf_wandb_retries;
	mo->fetch_timeout_ms = a->perf_wandb_timeout_ms;
	mo->log_trace_deltas = 3;
	if (a->log_measurements) {
		if (!s->hlog)
			return gdn_loop_setup_fail(
			    s, GDN_SETUP_ERROR, GDN_EUSAGE,
			    "--log-measurements needs a running log (--hillclimb-log-file "
			    "or log_file)");
		mo->log_file = s->hlog;
	}
	if (s->w.mg.profile && !nonempty(a->perf_wandb_prefix)) {
		s->wandb_prefix = gdn_marin_gate_wandb_prefix(&s->w.mg);
		mo->run_prefix = s->wandb_prefix;
	}
	if (s->w.mg.profile && strcmp(s->w.mg.p.wandb_mode, "online")) {
		/* the original fetched W&B metrics only for online runs */
		if (mo->source == GDN_MEASURE_WANDB)
			return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
						   "--perf-source wandb needs "
						   "--validation-profile-wandb-mode online");
		if (mo->source == GDN_MEASURE_AUTO)
			mo->source = GDN_MEASURE_CLI;
	}
	return 0;
}

/* project.trace_source: where each profile run's trace comes from (trace_source.c). */
static int setup_trace_source(struct gdn_loop_setup *s)
{
	struct gdn_trace_source *ts = &s->ts;
	const char *mode = gdn_config_str(s->cfg, "project.trace_source");
	int m = GDN_TRACE_SRC_AUTO;

	if (nonempty(mode) && gdn_enum_parse(gdn_trace_source_enum, mode, &m))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG,
					   "project.trace_source '%s' is not one of auto, local, "
					   "backend, wandb, gcs, none",
					   mode);
	ts->mode = (enum gdn_trace_source_mode)m;
	ts->trace_glob = s->gate.trace_glob;
	ts->workdir = s->agent_dir;
	ts->keep_local = s->a.isolation == GDN_ISOLATION_WORKTREE;
	ts->log_dir = s->log_dir;
	ts->wandb_base_url = s->mo.base_url ? s->mo.base_url : getenv("WANDB_BASE_URL");
	ts->fetch_timeout_ms = s->mo.fetch_timeout_ms;
	ts->expected = gdn_perf_is_trace_metric(s->pc.metric) || nonempty(ts->trace_glob);
	s->gate.trace_source = ts;
	/*
	 * A trace metric needs a trace: from project.trace_glob, from what the
	 * profile prints (project.trace_source gcs or wandb), or the Marin
	 * profile's W&B run. Without any, every sample would be unscored.
	 */
	if (gdn_perf_is_trace_metric(s->pc.metric) &&
	    (ts->mode == GDN_TRACE_SRC_NONE ||
	     (!nonempty(ts->trace_glob) && !s->w.mg.profile &&
	      (ts->mode == GDN_TRACE_SRC_AUTO || ts->mode == GDN_TRACE_SRC_LOCAL ||
	       ts->mode == GDN_TRACE_SRC_BACKEND))))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-metric %s is read from the profile's trace, and %s: set "
		    "project.trace_glob (where the profile writes its trace) or "
		    "project.trace_source "
		    "(gcs, wandb)",
		    s->pc.metric,
		    ts->mode == GDN_TRACE_SRC_NONE ? "project.trace_source is none"
						   : "no project.trace_glob says where it is");
	return 0;
}

/* --perf-mode on: the policy's configuration, its state file and the metric source. */
static int setup_policy(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_perf_config *pc = &s->pc;
	char *spath;
	int ret;

	if (!s->w.mg.profile && !nonempty(gdn_config_str(s->cfg, "project.profile_command")))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-mode on needs project.profile_command in the configuration "
		    "(or Marin targets: " MARIN_TARGETS ")");
	{
		const char *ts = gdn_config_str(s->cfg, "project.trace_source");
		/* --perf-source cli or wandb: that source's value, never the trace */
		bool trace = a->perf_source == GDN_MEASURE_AUTO &&
			     (nonempty(gdn_config_str(s->cfg, "project.trace_glob")) ||
			      (nonempty(ts) && strcmp(ts, "none") && strcmp(ts, "auto")));

		bool decide;

		pc->metric = gdn_perf_ruler(a->perf_metric,
					    s->w.mg.profile || gdn_marin_checkout(s->agent_dir),
					    trace, &decide, &s->ruler_why);
		s->gate.ruler_auto = decide ? pc : NULL;
	}
	pc->direction = (enum gdn_perf_direction)a->perf_direction;
	s->direction_why = NULL;
	if (pc->direction == GDN_PERF_AUTO) {
		/* never a guess: a name that says neither a time nor a rate is refused */
		pc->direction = gdn_perf_direction_classify(pc->metric, &s->direction_why);
		if (pc->direction == GDN_PERF_AUTO)
			return gdn_loop_setup_fail(
			    s, GDN_SETUP_ERROR, GDN_EUSAGE,
			    "--perf-direction auto cannot tell from the name of --perf-metric '%s' "
			    "whether higher or lower is better: pass --perf-direction higher or "
			    "--perf-direction lower (or set loop.perf.direction)",
			    pc->metric);
	}
	pc->policy = (enum gdn_perf_policy)a->perf_policy;
	pc->within_policy = (enum gdn_perf_within)a->perf_within;
	pc->repeat_stat = (enum gdn_perf_stat)a->perf_stat;
	pc->min_improvement_pct = a->perf_min_improvement;
	pc->max_regression_pct = a->perf_max_regression;
	pc->min_confidence = a->perf_min_confidence;
	for (size_t i = 0; i < a->perf_gates.nr; i++)
		if (gdn_perf_gate_parse(&pc->gates, a->perf_gates.v[i], &s->err))
			return failed_usage(s);
	if (!a->perf_gates.nr)
		gdn_perf_gates_add_defaults(&pc->gates);
	if (gdn_perf_config_check(pc, &s->err))
		return failed_usage(s);
	spath = a->perf_state_file ? abspath(s->cwd, a->perf_state_file)
				   : xstrfmt("%s/perf_state.json", s->log_dir);
	ret = gdn_perf_state_load(&s->ps, spath, &s->err);
	free(spath);
	if (ret)
		return failed(s, GDN_SETUP_ERROR);
	s->gate.perf_config = pc;
	s->gate.perf_state = &s->ps;
	s->gate.perf_repeats = a->perf_repeats;
	if (!(a->perf_confidence > 0 && a->perf_confidence < 1))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--perf-confidence must lie between 0 and 1");
	s->gate.perf_ab = a->perf_ab < 0 ? a->perf_repeats > 1 : a->perf_ab > 0;
	s->gate.perf_max_repeats =
	    a->perf_max_repeats > 0 ? a->perf_max_repeats : 4 * a->perf_repeats;
	s->gate.perf_confidence = a->perf_confidence;
	s->gate.log_dir = s->log_dir;
	s->gate.trace_glob = gdn_config_str(s->cfg, "project.trace_glob");
	if (setup_measure(s) || setup_trace_source(s))
		return -1;
	s->gate.measure = &s->mo;
	return 0;
}

/*
 * The protected paths (globs): --protect, else project.protected_paths,
 * else in a Marin checkout the GDN test files and the profile harness the
 * gate runs. An iteration that changes one is reverted, not validated.
 */
static void setup_protected(struct gdn_loop_setup *s)
{
	const struct strvec *cfg = gdn_config_list(s->cfg, "project.protected_paths");
	static const char *const marin[] = {GDN_MARIN_PROTECTED, NULL};

	strvec_clear(&s->protected_paths);
	if (s->a.protect.nr)
		strvec_pushv(&s->protected_paths, s->a.protect.v);
	else if (cfg && cfg->nr)
		strvec_pushv(&s->protected_paths, cfg->v);
	s->protect_explicit = s->protected_paths.nr > 0;
	if (!s->protected_paths.nr && gdn_marin_checkout(s->agent_dir))
		strvec_pushv(&s->protected_paths, marin);
	s->gate.protected_paths = &s->protected_paths;
}

int gdn_loop_setup_perf(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	const struct gdn_marin_gate *mg = &s->w.mg;

	s->gate.mode = (enum gdn_gate_mode)a->validation_mode;
	if (marin_defaults(s))
		return -1;
	if (s->gate.mode == GDN_GATE_REQUIRED && !mg->tests &&
	    !nonempty(gdn_config_str(s->cfg, "project.test_command")))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--validation-mode required needs project.test_command in the "
		    "configuration (or Marin targets: " MARIN_TARGETS ")");
	if (s->gate.mode == GDN_GATE_PROFILE_ONLY && !mg->profile &&
	    !nonempty(gdn_config_str(s->cfg, "project.profile_command")))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--validation-mode profile-only needs project.profile_command in the "
		    "configuration (or Marin targets: " MARIN_TARGETS ")");
	if (!a->perf_on && a->log_measurements)
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--log-measurements needs --perf-mode on (it logs the measured "
		    "figures)");
	setup_protected(s);
	/* integrity gate (issue 28) */
	if (gdn_integrity_configure(&s->integrity_cfg, s->cfg, s->repo_root, s->agent_dir, &s->err))
		return failed(s, GDN_SETUP_ERROR);
	if (s->integrity_cfg.on && !a->perf_on)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG,
					   "integrity.mode on needs --perf-mode on (it checks "
					   "the candidates the performance policy keeps)");
	s->integrity.c = &s->integrity_cfg;
	s->gate.integrity = s->integrity_cfg.on ? &s->integrity : NULL;
	s->gate_on = s->gate.mode != GDN_GATE_OFF || a->perf_on || s->protect_explicit;
	for (size_t i = 0; i < a->backends.nr; i++) {
		/* a name that does not exist is refused even when unused */
		struct gdn_backend *b = NULL;
		int ret = gdn_backend_open(s->cfg, a->backends.v[i], &b, &s->err);

		gdn_backend_free(b);
		if (ret)
			return failed_backend(s);
	}
	return a->perf_on ? setup_policy(s) : 0;
}

/* ---- the engine's options ---- */

void gdn_loop_setup_opts(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_loop_opts *lo = &s->lo;

	lo->workdir = s->agent_dir;
	lo->user_workdir = s->workdir;
	lo->isolation = (enum gdn_isolation)a->isolation;
	lo->workers = a->workers;
	lo->agents = a->agents;
	lo->targets = a->targets;
	lo->worktree_dir = s->worktree_dir;
	lo->branch = a->loop_branch;
	lo->agent_failure_commits = (enum gdn_agent_failure_commits)a->agent_failure_commits;
	lo->options = s->options;
	lo->log_dir = s->log_dir;
	lo->prompt_template = s->tmpl.buf;
	lo->directives = &s->directives;
	lo->hillclimb_log = s->hlog;
	lo->iterations = a->iterations;
	lo->sleep_ms = (long)(a->sleep_seconds * 1000.0);
	lo->post_checks = &a->post_checks;
	lo->post_check_policy = (enum gdn_loop_policy)a->post_check_policy;
	lo->no_commit_policy = (enum gdn_loop_policy)a->no_commit_policy;
	lo->iteration_error_policy = (enum gdn_loop_policy)a->iteration_error_policy;
	lo->max_failures = a->max_failures;
	lo->agent_retries = a->codex_retries;
	lo->post_check_retries = a->post_check_retries;
	lo->retry_sleep_ms = (long)(a->retry_sleep * 1000.0);
	lo->allow_dirty = a->allow_dirty;
	lo->original_exit_codes = s->original;
	lo->allow_no_commit = a->allow_no_commit;
	lo->dirty_policy = (enum gdn_dirty_policy)a->dirty_policy;
	lo->restore_policy = (enum gdn_restore_policy)a->restore_policy;
	lo->sync_policy = (enum gdn_sync_policy)a->sync_policy;
	lo->sync_remote = a->sync_remote;
	lo->sync_branch = a->sync_branch;
	lo->sync_conflict = (enum gdn_sync_conflict)a->sync_conflict;
	lo->max_agent_ms = (int64_t)(a->max_agent_minutes * 60000.0);
	if (a->max_agent_minutes > 0 && lo->max_agent_ms < 1)
		lo->max_agent_ms = 1;
	lo->stop_after_failures = a->stop_after_failures;
	lo->max_tokens = a->max_tokens;
	lo->max_tokens_per_hour = a->max_tokens_per_hour;
	lo->max_cost_usd = a->max_cost_usd;
	lo->resume = a->resume;
	lo->git_retry_sleep_ms = 2000;
	lo->heartbeat_ms = a->heartbeat_ms;
	lo->say = s->say;
	lo->on_agent_line = s->on_line;
	lo->payload = s->payload;
}

/* ---- the gate's backend and hooks ---- */

static int open_backend(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_gate *gate = &s->gate;
	const char *bname = a->backend ? a->backend : gdn_config_str(s->cfg, "loop.backend");

	if (!bname || !*bname)
		bname = "local";
	if (gdn_backend_open(s->cfg, bname, &s->backend, &s->err))
		return failed_backend(s);
	s->backend->repo_root = s->agent_dir;
	/* --backend once per worker: worker K's is the K-th (worker 1's is s->backend too) */
	for (long k = 1; s->w.wv && a->backends.nr > 1 && k <= s->w.workers; k++) {
		struct gdn_backend **b = &s->w.wv[k - 1].backend;

		if (gdn_backend_open(s->cfg, a->backends.v[k - 1], b, &s->err))
			return failed_backend(s);
		(*b)->repo_root = s->agent_dir;
	}
	gate->workdir = s->agent_dir;
	gate->heartbeat_ms = a->heartbeat_ms;
	gate->revert_mode =
	    a->isolation == GDN_ISOLATION_WORKTREE ? GDN_REVERT_RESET : GDN_REVERT_COMMIT;
	gate->test_command = gdn_config_str(s->cfg, "project.test_command");
	gate->profile_command = gdn_config_str(s->cfg, "project.profile_command");
	if (s->w.mg.tests) {
		s->marin_tests = gdn_marin_gate_command(&s->w.mg, "tests");
		gate->test_command = s->marin_tests;
	}
	if (s->w.mg.profile) {
		s->marin_profile = gdn_marin_gate_command(&s->w.mg, "profile");
		gate->profile_command = s->marin_profile;
	}
	s->pc.command = gate->profile_command; /* recorded with each measurement */
	gate->timeout_ms = a->validation_timeout_ms;
	gate->backend = s->backend;
	gate->phase_retries = a->validation_retries;
	gate->retry_sleep_ms = (long)(a->retry_sleep * 1000.0);
	gate->on_line = s->on_line;
	gate->payload = s->payload;
	s->hooks.policy = (enum gdn_loop_policy)a->validation_policy;
	if (a->perf_on) {
		s->hooks.decide = gdn_gate_decide;
		s->hooks.start = gdn_gate_start;
		s->hooks.synced = gdn_gate_synced;
	}
	return 0;
}

/* --workers N > 1: one gdn_loop_where_worker per worker, and the worker hook. */
static void setup_workers(struct gdn_loop_setup *s)
{
	struct gdn_loop_where *w = &s->w;

	w->workers = s->a.workers;
	if (w->workers <= 1 || w->wv)
		return;
	w->wv = xcalloc((size_t)w->workers, sizeof(*w->wv));
	for (long k = 1; k <= w->workers; k++) {
		w->wv[k - 1].dir = gdn_loop_setup_worker_dir(s, k);
		w->wv[k - 1].champion_name = xstrfmt("champion-w%ld", k);
		strvec_init(&w->wv[k - 1].directives);
	}
	s->hooks.worker = gdn_loop_setup_worker;
	s->hooks.worker_state = gdn_loop_setup_worker_state;
	s->worker_hooks.worker = gdn_loop_setup_worker;
	s->worker_hooks.worker_state = gdn_loop_setup_worker_state;
}

int gdn_loop_setup_gate(struct gdn_loop_setup *s)
{
	setup_workers(s);
	if (s->gate_on && open_backend(s))
		return -1;
	if (gdn_loop_where_open(s))
		return -1;
	s->ts.backend = s->backend; /* where the profile ran: the trace source's backend */
	s->ts.targets = s->gate.targets;
	if ((s->w.mg.tests || s->w.mg.profile) && !s->gate.targets &&
	    !(s->a.dry_run && (s->w.hold || s->w.clusters.nr || s->w.auto_clusters)))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "the Marin validation defaults need a held dev TPU or Ray fallback "
		    "clusters (or project.test_command and project.profile_command)");
	json_decref(s->plan);
	s->plan = gdn_loop_setup_plan(s);
	s->lo.plan = s->plan;
	return 0;
}

/* ---- the plan ---- */

/* Where the value of `option` came from: s->from, else "default". */
static const char *from_of(const struct gdn_loop_setup *s, const char *option)
{
	const char *why = json_string_value(json_object_get(s->from, option));

	return why ? why : "default";
}

/* A string of the user's (any bytes: lossy), or null for NULL or "". */
static json_t *str_or_null(const char *v)
{
	return v && *v ? gdn_json_string_lossy(v) : json_null();
}

json_t *gdn_loop_setup_plan(const struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	const struct gdn_perf_config *pc = &s->pc;
	const char *bname = a->backend ? a->backend : gdn_config_str(s->cfg, "loop.backend");
	const char *tests = s->gate.test_command, *profile = s->gate.profile_command;
	json_t *plan = json_object(), *val = json_object(), *perf;

	if (!s->gate_on) { /* no gate opened: what the configuration names */
		tests = gdn_config_str(s->cfg, "project.test_command");
		profile = gdn_config_str(s->cfg, "project.profile_command");
	}
	json_object_set_new(val, "mode",
			    json_string(gdn_enum_name(gdn_gate_mode_enum, a->validation_mode)));
	json_object_set_new(val, "from", str_or_null(from_of(s, "validation-mode")));
	json_object_set_new(val, "tests",
			    str_or_null(a->validation_mode == GDN_GATE_REQUIRED ? tests : NULL));
	json_object_set_new(
	    val, "profile",
	    str_or_null(a->validation_mode != GDN_GATE_OFF || a->perf_on ? profile : NULL));
	json_object_set_new(val, "backend", str_or_null(nonempty(bname) ? bname : "local"));
	json_object_set_new(plan, "validation", val);
	if (a->perf_on) {
		enum gdn_perf_direction d = gdn_perf_direction_resolve(pc->direction, pc->metric);

		perf = json_object();
		json_object_set_new(perf, "metric", str_or_null(pc->metric));
		json_object_set_new(perf, "metric_from", str_or_null(from_of(s, "perf-metric")));
		json_object_set_new(perf, "direction", json_string(gdn_perf_direction_name(d)));
		json_object_set_new(perf, "direction_from",
				    str_or_null(a->perf_direction == GDN_PERF_AUTO
						    ? "auto"
						    : from_of(s, "perf-direction")));
		json_object_set_new(perf, "direction_why", str_or_null(s->direction_why));
		json_object_set_new(perf, "min_improvement_pct",
				    json_real(pc->min_improvement_pct));
		json_object_set_new(perf, "max_regression_pct", json_real(pc->max_regression_pct));
		json_object_set_new(perf, "regression_policy",
				    json_string(gdn_perf_policy_name(pc->policy)));
		json_object_set_new(perf, "repeats", json_integer(a->perf_repeats));
		json_object_set_new(perf, "state_file", str_or_null(s->ps.path));
	} else {
		perf = json_null();
	}
	json_object_set_new(plan, "perf", perf);
	json_object_set_new(plan, "log_file", str_or_null(s->hlog));
	json_object_set_new(plan, "log_file_why", str_or_null(s->hlog_why));
	return plan;
}

void gdn_loop_setup_ruler(const struct gdn_loop_setup *s, struct sbuf *out)
{
	const struct gdn_perf_config *pc = &s->pc;
	enum gdn_perf_direction d = gdn_perf_direction_resolve(pc->direction, pc->metric);

	sbuf_addf(out, "%s, %s is better", pc->metric, d == GDN_PERF_LOWER ? "lower" : "higher");
	if (s->a.perf_direction == GDN_PERF_AUTO && s->direction_why)
		sbuf_addf(out, " (auto: %s)", s->direction_why);
	else
		sbuf_addf(out, " (%s)", from_of(s, "perf-direction"));
}
