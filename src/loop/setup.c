/*
 * `gdnctl loop` set up from its options in named steps (loop_setup.h):
 * the original codex-loop's defaults and startup checks (same messages),
 * the paths, the agent, the validation gate and performance policy, the
 * engine's options and the gate's hooks. Never prints: a failed step
 * leaves its message in s->err for the command.
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

void gdn_loop_setup_init(struct gdn_loop_setup *s, const char *cwd, const char *repo_root,
			 struct gdn_config *cfg)
{
	struct gdn_err e = GDN_ERR_INIT;

	memset(s, 0, sizeof(*s));
	s->a = (struct gdn_loop_args){
	    .ephemeral = 1,
	    .sleep_seconds = 5.0,
	    .codex_timeout = 7200.0,
	    .codex_idle_timeout = 900.0,
	    .retry_sleep = 20.0,
	    .agent_timeout_ms = -1,
	    .agent_idle_timeout_ms = -1,
	    .kill_grace_ms = 10000,
	    .heartbeat_ms = 60000,
	    .post_check_policy = GDN_POLICY_FAIL,
	    .no_commit_policy = GDN_POLICY_FAIL,
	    .iteration_error_policy = GDN_POLICY_FAIL,
	    .dirty_policy = GDN_DIRTY_FAIL,
	    .isolation = GDN_ISOLATION_WORKTREE,
	    .restore_policy = GDN_RESTORE_WARN_KEEP,
	    .sync_policy = GDN_SYNC_OFF,
	    .sync_remote = "origin",
	    .sync_branch = "main",
	    .sync_conflict = GDN_SYNC_CONFLICT_FAIL,
	    .validation_mode = GDN_GATE_OFF,
	    .validation_policy = GDN_POLICY_COUNT_FAILURE,
	    .validation_timeout_ms = 30 * 60 * 1000,
	    .perf_on = 0,
	    .perf_metric = NULL, /* gdn_perf_ruler() */
	    .perf_direction = GDN_PERF_AUTO,
	    .perf_policy = GDN_PERF_REVERT_COUNT_FAILURE,
	    .perf_within = GDN_PERF_WITHIN_KEEP,
	    .perf_stat = GDN_PERF_STAT_MEDIAN,
	    .perf_min_improvement = 0.25,
	    .perf_max_regression = 1.0,
	    .perf_repeats = 1,
	    .perf_ab = -1,
	    .perf_confidence = 0.95,
	    .perf_source = GDN_MEASURE_AUTO,
	    .perf_history = 1,
	    .perf_history_agg = GDN_AGG_MEDIAN,
	    .perf_step_start = 10,
	    .perf_step_end = 18,
	    .perf_min_points = 5,
	    .perf_wandb_retries = 4,
	    .perf_wandb_timeout_ms = 120000,
	    .perf_wandb_entity = "marin-community",
	    .perf_wandb_project = "marin",
	    .agent = GDN_AGENT_DEFAULT,
	    .workers = 1,
	};
	strvec_init(&s->a.backends);
	strvec_init(&s->a.directives);
	strvec_init(&s->a.protect);
	strvec_init(&s->protected_paths);
	gdn_integrity_config_init(&s->integrity_cfg); /* integrity gate (issue 28) */
	strvec_init(&s->a.directive_files);
	strvec_init(&s->a.presets);
	strvec_init(&s->a.post_checks);
	strvec_init(&s->a.perf_gates);
	s->w = (struct gdn_loop_where){
	    .hold_required = 1,
	    .ready_timeout = 900.0,
	    .retry_sleep = 30.0,
	    .stop_timeout = 120.0,
	    .attempts = 1,
	    .validation_attempts = 1,
	    .validation_retry_sleep = 120.0,
	    .reacquire_ms = 5 * 60 * 1000,
	    .profile_tpu = GDN_MARIN_PROFILE_TPU,
	};
	strvec_init(&s->w.fallbacks);
	strvec_init(&s->w.clusters);
	strvec_init(&s->w.excludes);
	strvec_init(&s->w.dev_clusters);
	strvec_init(&s->w.profile_env);
	gdn_marin_gate_init(&s->w.mg);
	s->cwd = cwd;
	s->repo_root = repo_root;
	s->cfg = cfg;
	sbuf_init(&s->tmpl, 0);
	strvec_init(&s->directives);
	strvec_init(&s->warnings);
	strvec_init(&s->given);
	strvec_init(&s->resume_argv);
	s->hooks = (struct gdn_loop_hooks){.validate = gdn_gate_validate,
					   .payload = &s->gate,
					   .policy = GDN_POLICY_COUNT_FAILURE,
					   .worker_state = gdn_gate_worker_state};
	s->worker_hooks = (struct gdn_loop_hooks){.payload = &s->gate};
	gdn_perf_config_init(&s->pc);
	s->ps = (struct gdn_perf_state)GDN_PERF_STATE_INIT;
	s->repo_lock = (struct gdn_lock)GDN_LOCK_INIT;
	s->dir_lock = (struct gdn_lock)GDN_LOCK_INIT;
	gdn_measure_opts_init(&s->mo);
	s->from = json_object();
	s->err = e;
}

void gdn_loop_setup_release(struct gdn_loop_setup *s)
{
	gdn_lock_release(&s->dir_lock);
	gdn_lock_release(&s->repo_lock);
	gdn_loop_where_release(&s->w);
	gdn_gate_release(&s->gate);
	gdn_integrity_release(&s->integrity); /* integrity gate (issue 28) */
	gdn_integrity_config_release(&s->integrity_cfg);
	gdn_perf_state_release(&s->ps);
	gdn_perf_config_release(&s->pc);
	strvec_clear(&s->a.perf_gates);
	strvec_clear(&s->a.backends);
	gdn_backend_free(s->backend);
	gdn_agent_free(s->agent);
	strvec_clear(&s->a.directives);
	strvec_clear(&s->a.protect);
	strvec_clear(&s->protected_paths);
	strvec_clear(&s->a.directive_files);
	strvec_clear(&s->a.presets);
	strvec_clear(&s->a.post_checks);
	strvec_clear(&s->directives);
	strvec_clear(&s->warnings);
	strvec_clear(&s->given);
	sbuf_release(&s->tmpl);
	free(s->workdir);
	free(s->agent_dir);
	free(s->worktree_dir);
	free(s->worker_dir);
	free(s->log_dir);
	free(s->hlog);
	free(s->prompt_path);
	free(s->marin_tests);
	free(s->marin_profile);
	free(s->wandb_prefix);
	json_decref(s->options);
	strvec_clear(&s->resume_argv);
	free(s->resume_run);
	json_decref(s->overridden);
	json_decref(s->from);
	json_decref(s->plan);
}

/* ---- --resume: the run to continue ---- */

/* The log dir of the options (its default: gdn_loop_default_log_dir), or NULL. */
static char *log_dir_path(const struct gdn_loop_setup *s)
{
	struct gdn_err ignored = GDN_ERR_INIT;

	return s->a.log_dir ? abspath(s->cwd, s->a.log_dir)
			    : gdn_loop_default_log_dir(s->workdir, NULL, &ignored);
}

int gdn_loop_setup_project_file(struct gdn_loop_setup *s, const struct gdn_loop_state *st)
{
	struct gdn_git g = {.workdir = s->repo_root, .quiet = true};
	struct sbuf blob = SBUF_INIT;
	char *name = NULL;
	bool found = false;
	int ret = 0;

	if (st->worktree || !st->open_iter || !st->open_agent || st->open_decided ||
	    !st->open_head || !s->repo_root || !s->cfg || !s->cfg->repo_file ||
	    !access(s->cfg->repo_file, F_OK))
		return 0;
	if (gdn_git_blob(&g, st->open_head, GDN_CONFIG_REPO_FILE, &blob, &found, &s->err) ||
	    !found) {
		gdn_err_clear(&s->err); /* not there either: nothing to read */
		goto out;
	}
	name = xstrfmt(GDN_CONFIG_REPO_FILE " at %.12s", st->open_head);
	if (gdn_config_load_under(s->cfg, name, blob.buf, blob.len, GDN_SRC_REPO_FILE, &s->err))
		ret = (s->style = GDN_SETUP_ERROR, -1);
	else
		strvec_pushf(&s->warnings,
			     "'%s' is missing (interrupted iteration %ld moved the branch): this "
			     "session reads the project's configuration from %s",
			     s->cfg->repo_file, st->open_iter, name);
out:
	free(name);
	sbuf_release(&blob);
	return ret;
}

int gdn_loop_setup_read_run(struct gdn_loop_setup *s, struct gdn_loop_state *st)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err ignored = GDN_ERR_INIT;
	char *dir, *path;
	pid_t holder = 0;
	int ret = 0;

	if (!s->workdir && setup_find_workdir(s))
		return -1;
	dir = log_dir_path(s);
	if (!dir)
		return 0;
	/* a run that lives is refused as such, before its options are compared */
	path = xstrfmt("%s/loop.lock", dir);
	if (gdn_lock_probe(path, &holder) == 1)
		ret = holder > 0
			  ? gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
						"another gdnctl loop (pid %ld) is running on "
						"this tree",
						(long)holder)
			  : gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
						"another gdnctl loop is running on this tree");
	free(path);
	path = xstrfmt("%s/loop.jsonl", dir);
	if (!ret && !sbuf_read_file(&sb, path, 256 * 1024 * 1024, &ignored) &&
	    !gdn_journal_parse(sb.buf, sb.len, st, &ignored) && st->run_id)
		ret = 1;
	free(dir);
	free(path);
	sbuf_release(&sb);
	return ret;
}

/*
 * Drop a torn last line (a crash during a write) from the journal at path,
 * so that the next event starts a line of its own. 0 or -1 (errno).
 */
static int drop_torn_line(const char *path)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err ignored = GDN_ERR_INIT;
	const char *nl;
	int ret = 0;

	if (!sbuf_read_file(&sb, path, 256 * 1024 * 1024, &ignored) && sb.len &&
	    sb.buf[sb.len - 1] != '\n') {
		nl = memrchr(sb.buf, '\n', sb.len);
		ret = truncate(path, nl ? (off_t)(nl - sb.buf) + 1 : 0);
	}
	sbuf_release(&sb);
	return ret;
}

int gdn_loop_setup_journal_override(struct gdn_loop_setup *s)
{
	struct gdn_journal j = GDN_JOURNAL_INIT;
	json_t *was = json_object_get(s->overridden, "was"), *now, *v;
	const char *name;
	int ret;

	if (!s->overridden || !s->resume_run)
		return 0;
	ret = gdn_journal_open(&j, s->log_dir, s->resume_run, &s->err);
	if (!ret && drop_torn_line(j.path))
		ret = gdn_err_errno(&s->err, GDN_EIO, "cannot truncate journal '%s'", j.path);
	if (!ret) {
		now = json_object();
		json_object_foreach(was, name, v)
		{
			json_t *n = json_object_get(s->options, name);

			json_object_set(now, name, n ? n : json_null());
		}
		ret = gdn_journal_write(&j, "resume_override",
					json_pack("{sosO}", "options", now, "was", was), &s->err);
	}
	gdn_journal_close(&j);
	return ret ? failed(s, GDN_SETUP_ERROR) : 0;
}

/* ---- check ---- */

/* The original's --resilient preset (without the validation/perf items: the gate is off). */
static void apply_resilient(struct gdn_loop_args *a)
{
	if (a->max_failures >= 0)
		a->max_failures = -1;
	if (a->dirty_policy == GDN_DIRTY_FAIL)
		a->dirty_policy = GDN_DIRTY_STASH;
	if (a->no_commit_policy == GDN_POLICY_FAIL)
		a->no_commit_policy = GDN_POLICY_COUNT_FAILURE;
	if (a->post_check_policy == GDN_POLICY_FAIL)
		a->post_check_policy = GDN_POLICY_COUNT_FAILURE;
	if (a->iteration_error_policy == GDN_POLICY_FAIL)
		a->iteration_error_policy = GDN_POLICY_COUNT_FAILURE;
	if (a->sync_conflict == GDN_SYNC_CONFLICT_FAIL)
		a->sync_conflict = GDN_SYNC_CONFLICT_SKIP;
	a->restore_policy = GDN_RESTORE_WARN_KEEP;
	if (a->codex_retries < 2)
		a->codex_retries = 2;
	if (a->post_check_retries < 2)
		a->post_check_retries = 2;
}

/* The original's startup checks (exit 1, exact messages). */
static const char *validate(const struct gdn_loop_args *a)
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
	if (a->sync_policy != GDN_SYNC_OFF && !*a->sync_remote)
		return "--sync-main-remote must be non-empty.";
	if (a->sync_policy != GDN_SYNC_OFF && !*a->sync_branch)
		return "--sync-main-branch must be non-empty.";
	if (a->sleep_seconds < 0)
		return "--sleep-seconds must be >= 0.";
	if (a->max_agent_minutes < 0)
		return "--max-agent-minutes must be >= 0.";
	if (a->stop_after_failures < 0)
		return "--stop-after-failures must be >= 0.";
	if (a->max_tokens < 0)
		return "--max-tokens must be >= 0.";
	if (a->max_tokens_per_hour < 0)
		return "--max-tokens-per-hour must be >= 0.";
	if (a->max_cost_usd < 0)
		return "--max-cost-usd must be >= 0.";
	return NULL;
}

/*
 * --targets M with --workers N: N + M workers (worktrees, where a
 * candidate is proposed and validated), N of them at once in their agent
 * and M at once in validation, each validation on target 1..M. So an
 * agent never waits for a validation: while M candidates validate (or
 * wait for a target, or for their turn to be decided), N agents think in
 * the other worktrees.
 */
static int check_targets(struct gdn_loop_setup *s)
{
	struct gdn_loop_args *a = &s->a;

	if (!gdn_loop_setup_given(s, "targets")) {
		a->agents = a->targets = 0;
		return 0;
	}
	if (a->targets < 1 || a->targets > GDN_LOOP_WORKERS_MAX)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "option '--targets': %ld is out of range 1..%d",
					   a->targets, GDN_LOOP_WORKERS_MAX);
	if (a->workers < 2 && a->targets < 2)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--targets %ld needs --workers N > 1 or more targets",
					   a->targets);
	if (a->isolation != GDN_ISOLATION_WORKTREE)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--targets needs --isolation worktree");
	if (a->backends.nr > 1)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--targets does not go with a --backend per worker");
	if (a->workers > GDN_LOOP_WORKERS_MAX)
		return 0; /* said by the engine, as without --targets */
	a->agents = a->workers;
	a->workers = a->agents + a->targets;
	return 0;
}

/*
 * --workers (else loop.workers), --worktree-dir and the number of
 * --backend: once (shared by the workers) or once per worker.
 */
static int check_workers(struct gdn_loop_setup *s)
{
	struct gdn_loop_args *a = &s->a;
	bool given = gdn_loop_setup_given(s, "workers");
	const struct gdn_cfg_value *v = given ? NULL : gdn_config_get(s->cfg, "loop.workers");
	const char *what = v && v->source != GDN_SRC_DEFAULT ? "loop.workers" : "--workers";

	if (!given) {
		long long n = gdn_config_int(s->cfg, "loop.workers", 1);

		if (n < 1 || n > LONG_MAX)
			return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG,
						   "%s: loop.workers: %lld is out of range 1..",
						   v && v->origin ? v->origin : "config", n);
		a->workers = (long)n;
		if (a->workers > 1) /* the run keeps its workers (--resume) */
			json_object_set_new(s->options, "workers", json_integer(a->workers));
	} else if (a->workers < 1) {
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "option '--workers': %ld is out of range 1..",
					   a->workers);
	}
	if (a->workers > 1 && a->isolation != GDN_ISOLATION_WORKTREE)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "%s %ld needs --isolation worktree (a worktree per "
					   "worker), not --isolation %s",
					   what, a->workers,
					   gdn_enum_name(gdn_isolation_enum, a->isolation));
	if (a->worktree_dir && a->workers == 1)
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--worktree-dir needs --workers N > 1 (one agent works in "
		    "<log dir>/worktree)");
	if (a->backends.nr > 1 && (long)a->backends.nr != a->workers)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--backend given %zu times with %s %ld: give it once "
					   "(shared by the workers) or once per worker",
					   a->backends.nr, what, a->workers);
	a->backend = a->backends.nr ? a->backends.v[0] : NULL;
	return check_targets(s);
}

bool gdn_loop_setup_given(const struct gdn_loop_setup *s, const char *option)
{
	return strvec_contains(&s->given, option);
}

int gdn_loop_setup_validate(struct gdn_loop_setup *s)
{
	struct gdn_loop_args *a = &s->a;
	const char *msg;

	if (a->resume_override && !a->resume)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--resume-override needs --resume");
	if (a->iterations <= 0 && !a->resume && !gdn_loop_setup_given(s, "iterations"))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "option '--iterations' is required (or --resume)");
	if (a->iterations < 1 && gdn_loop_setup_given(s, "iterations"))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "option '--iterations': %ld is out of range 1..",
					   a->iterations);
	/* --agent-cmd names the command driver's program: it implies --agent command */
	if (a->agent_cmd && !gdn_loop_setup_given(s, "agent"))
		a->agent = "command";
	else if (a->agent_cmd && !gdn_agent_find(a->agent)->needs_command)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--agent-cmd runs a command of your own, which is "
					   "--agent command; --agent %s does not take it",
					   a->agent);
	if (gdn_agent_find(a->agent)->needs_command && !a->agent_cmd)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--agent %s needs --agent-cmd", a->agent);
	if (check_workers(s))
		return -1;
	if (a->resilient)
		apply_resilient(a);
	msg = validate(a);
	if (!msg)
		msg = gdn_loop_where_check(&s->w, &s->given);
	if (msg)
		return gdn_loop_setup_fail(s, GDN_SETUP_PLAIN, GDN_EUSAGE, "%s", msg);
	return 0;
}
