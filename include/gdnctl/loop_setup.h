/*
 * Setting up `gdnctl loop` from its options (src/loop/setup.c), in named
 * steps: the startup checks, the paths (working tree, log dir, prompt,
 * session directives), the agent, the validation gate and performance
 * policy, the engine's options, the gate's backend and hooks; and where
 * validation runs (src/loop/targets.c): the held dev TPU and the Ray
 * fallback clusters. The command (src/cmd/cmd_loop.c) declares the option
 * table over struct gdn_loop_args, calls the steps in order and prints.
 *
 * Nothing here prints or exits. A failed step returns -1 with the message
 * in setup->err and the way the command shows it in setup->style.
 */
#ifndef GDNCTL_LOOP_SETUP_H
#define GDNCTL_LOOP_SETUP_H

#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/loop.h"
#include "gdnctl/gate.h"
#include "gdnctl/hold.h"
#include "gdnctl/integrity.h"
#include "gdnctl/lock.h"
#include "gdnctl/marin_gate.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/trace_source.h"

struct gdn_config;
struct gdn_loop_state;

/* The option values of `gdnctl loop` (choices are the values of the owning module's enum). */
struct gdn_loop_args {
	long iterations;
	const char *prompt_file, *workdir, *model, *codex_bin, *reasoning_effort, *codex_profile;
	int ephemeral, search, show_file_updates;
	struct strvec directives, directive_files, presets, post_checks;
	double sleep_seconds, codex_timeout, codex_idle_timeout, retry_sleep;
	long agent_timeout_ms, agent_idle_timeout_ms, kill_grace_ms, heartbeat_ms;
	int post_check_policy, no_commit_policy, iteration_error_policy; /* gdn_loop_policy */
	long max_failures, codex_retries, post_check_retries;
	int resilient, allow_dirty, allow_no_commit, resume, json, dry_run;
	int resume_override; /* --resume-override */
	const char *log_dir, *hillclimb_log;
	int dirty_policy, restore_policy, sync_policy, sync_conflict;
	int isolation, agent_failure_commits; /* gdn_isolation, gdn_agent_failure_commits */
	const char *loop_branch;
	const char *sync_remote, *sync_branch;
	int validation_mode, perf_on, validation_policy; /* gdn_gate_mode, perf mode, policy */
	struct strvec backends; /* --backend: once (shared), or once per worker */
	const char *backend;	/* the first --backend (NULL: loop.backend, else local) */
	long workers;		/* --workers, else loop.workers (>= 1); with --targets: max(N, M) */
	long agents, targets;	/* --workers N agents, --targets M (0: not given) */
	const char *worktree_dir;
	long validation_timeout_ms;
	const char *perf_metric, *perf_state_file;
	int perf_direction, perf_policy, perf_within, perf_stat;
	double perf_min_improvement, perf_max_regression, perf_min_confidence;
	struct strvec perf_gates;
	long perf_repeats;
	int perf_ab;		/* --perf-ab / --no-perf-ab; -1: on when perf_repeats > 1 */
	long perf_max_repeats;	/* --perf-ab: pairs at most (0: 4 x perf_repeats) */
	double perf_confidence; /* --perf-ab: of the interval */
	int perf_source, perf_history, perf_history_agg; /* measure source, aggregation, gdn_agg */
	long perf_step_start, perf_step_end, perf_min_points, perf_wandb_retries;
	long perf_wandb_timeout_ms;
	const char *perf_wandb_entity, *perf_wandb_project, *perf_wandb_prefix;
	int log_measurements;
	long validation_retries;
	const char *agent, *agent_cmd; /* the agent driver's name (agent.h) */
	const char *until_time;
	double max_agent_minutes;
	long stop_after_failures;
	long max_tokens, max_tokens_per_hour; /* 0: no limit */
	struct strvec protect;		      /* --protect GLOB */
	double max_cost_usd;		      /* 0: no limit */
};

/*
 * With --workers N > 1, what worker K validates on (gdn_loop_where.wv[K - 1]):
 * its gate backend, its held dev TPU <dev-tpu-name>-w<K> and its targets.
 */
struct gdn_loop_where_worker {
	char *dir;		     /* its worktree (gdn_loop_setup_worker_dir) */
	char *tpu_name;		     /* --hold-dev-tpu: <dev-tpu-name>-w<K> */
	char *champion_name;	     /* --perf-ab: its champion worktree, champion-w<K> */
	struct gdn_backend *backend; /* --backend given once per worker: the K-th; NULL: shared */
	struct gdn_backend *dev;     /* its hold's dev-tpu backend */
	struct gdn_hold *h;
	struct gdn_targets *targets;
	struct strvec directives; /* its hold's managed dev TPU directive */
};

/* Where validation runs: the --hold-dev-tpu, --dev-tpu-*, --validation-* option values, and
 * what targets.c opened from them. */
struct gdn_loop_where {
	int hold, verbose, auto_clusters, cross_tpu;
	int hold_required; /* --hold-dev-tpu-policy (gdn_hold_policy_enum) */
	const char *backend, *name, *cluster, *type, *sync_path, *alloc_log;
	const char *ray_tpu, *profile_tpu;
	struct strvec fallbacks, clusters, excludes;
	double ready_timeout, retry_sleep, stop_timeout, validation_retry_sleep;
	long attempts, validation_attempts, reacquire_ms;
	/* the original's other --validation-* flags (Marin defaults: marin_gate.h) */
	long max_attempts, ray_log_tail;
	double ray_test_timeout, ray_profile_timeout;
	int dev_no_sync, all_transformer, profile_dry_run;
	struct strvec profile_env;
	struct gdn_marin_gate mg;
	/* opened (with workers: worker 1's, borrowed from wv[0]) */
	struct gdn_backend *dev;
	struct gdn_hold *h;
	struct gdn_targets *targets;
	struct strvec dev_clusters;
	/* --workers N > 1: one per worker (NULL with one worker) */
	long workers;
	struct gdn_loop_where_worker *wv;
	pid_t pid;   /* the process that opened them (0: not yet) */
	bool forked; /* in a worker's process: the holds and dev TPUs are the parent's */
};

/* How the command shows a failed step's err. */
enum gdn_loop_setup_style {
	GDN_SETUP_ERROR = 0, /* "[gdnctl] error: MSG", the exit code of err.code */
	GDN_SETUP_PLAIN,  /* codex-loop: "[gdnctl] MSG" (the original's startup messages), exit 1;
			     loop: as GDN_SETUP_ERROR */
	GDN_SETUP_SIGNAL, /* "[gdnctl] error: MSG", exit 128 + the signal that interrupted */
};

struct gdn_loop_setup {
	/* in: the option values and the command's context and callbacks */
	struct gdn_loop_args a;
	struct strvec given; /* the long names of the options given (src/cmd/ fills it) */
	struct gdn_loop_where w;
	const char *cwd, *repo_root;
	struct gdn_config *cfg;
	bool original; /* invoked as codex-loop: the original's exit codes and messages */
	gdn_loop_say_fn say;
	gdn_line_fn on_line;	       /* the agent's and the validation's output */
	gdn_backend_event_fn on_event; /* the dev TPU's and the Ray fallbacks' commands */
	void *payload;
	/* out: what the steps built */
	char *workdir, *log_dir, *hlog, *prompt_path;
	char *agent_dir;    /* where the agent and the gate work: workdir, or the worktree */
	char *worktree_dir; /* --worktree-dir, absolute (NULL: <log dir>/workers) */
	char *worker_dir;   /* in a worker's process: its worktree (gdn_loop_setup_worker) */
	long worker_k;	    /* and its number (0: none yet) */
	size_t worker_base; /* the session directives before its hold's */
	struct sbuf tmpl;
	struct strvec directives, warnings; /* warnings: the agent driver's, to print */
	struct gdn_agent *agent;
	struct gdn_loop_opts lo;
	bool gate_on; /* validation or the performance policy: `hooks` */
	struct gdn_gate gate;
	struct gdn_loop_hooks hooks;
	struct gdn_loop_hooks worker_hooks; /* workers without a gate: the worker hook alone */
	struct gdn_backend *backend;
	struct gdn_perf_config pc;
	const char *ruler_why; /* why pc.metric is the ruler (gdn_perf_ruler); NULL: perf off */
	struct gdn_perf_state ps;
	struct gdn_measure_opts mo;
	struct gdn_trace_source ts; /* project.trace_source: the gate's trace_source */
	char *marin_tests, *marin_profile, *wandb_prefix;
	bool protect_explicit;	       /* given (not the Marin default): the gate runs */
	struct strvec protected_paths; /* --protect, project.protected_paths or the Marin default */
	/* integrity gate (issue 28): integrity.* keys, and the gate's state (gate.integrity) */
	struct gdn_integrity_config integrity_cfg;
	struct gdn_integrity integrity;
	/* one run per tree: <git common dir>/gdnctl.lock and <log dir>/loop.lock, held until
	 * release */
	struct gdn_lock repo_lock, dir_lock;
	/*
	 * The run's decision options (gdn_loop_options_json; the engine journals them with
	 * run_start); with --resume, the argv the table was parsed from last (the run's
	 * options, then the command line's: the option values borrow its strings), the
	 * resumed run's id and, with --resume-override, what the command line changed
	 * ({"options": {NAME: new}, "was": {NAME: old}}, or NULL).
	 */
	json_t *options;
	struct strvec resume_argv;
	char *resume_run;
	json_t *overridden;
	/*
	 * Where the values of options not given came from (gdn_loop_setup_check):
	 * {"validation-mode": "project.test_command", "perf-metric":
	 * "gdnctl.yaml:4:11", ...}, the configuration's origins of the loop.* keys
	 * (gdn_loop_config_options) and the reasons of defaults that depend on
	 * other settings.
	 */
	json_t *from;
	/* --perf-direction auto: why the metric's name resolved as it did (static), else NULL */
	const char *direction_why;
	/* no running log (s->hlog NULL): why, for the banner and the dry run (static), else NULL */
	const char *hlog_why;
	/* gdn_loop_setup_plan() of the run, journaled with run_start (s->lo.plan) */
	json_t *plan;
	/* a failed step */
	struct gdn_err err;
	enum gdn_loop_setup_style style;
};

/*
 * Fail a setup step: the message in s->err (code: an enum gdn_errcode),
 * shown in `style`; evaluates to -1. For setup.c and targets.c.
 */
#define gdn_loop_setup_fail(s, st, code, ...) \
	((s)->style = (st), gdn_err_set(&(s)->err, (code), __VA_ARGS__), -1)

/* The option defaults (the original codex-loop's), the context, the callbacks. */
void gdn_loop_setup_init(struct gdn_loop_setup *s, const char *cwd, const char *repo_root,
			 struct gdn_config *cfg);
void gdn_loop_setup_release(struct gdn_loop_setup *s);

/*
 * The steps, in this order; each returns 0 or -1 (s->err, s->style).
 * The command line comes first (src/cmd/loop_options.c, cmd_loop_options.h:
 * gdn_loop_setup_resume, then gdn_loop_setup_check, which ends with
 * gdn_loop_setup_validate): the values in s->a, the names of the options
 * given in s->given.
 *
 * read_run: the run --resume continues, from the journal of the log dir: 1
 * with st filled, 0 when there is none to read (the engine says why), -1 on
 * an error (s->err).
 */
int gdn_loop_setup_read_run(struct gdn_loop_setup *s, struct gdn_loop_state *st);
/*
 * project_file: an in-place run whose agent was interrupted (kill -9) after
 * it had moved the branch back past the commit that added gdnctl.yaml (a
 * `git reset --hard`, a checkout) left no project file in the working
 * tree, and the recovery that puts the branch back comes after the checks
 * that need it (project.test_command): the file is then read into s->cfg
 * as it was in the commit the iteration began at, under the environment
 * and -c, with a warning. 0, or -1 (s->err) when that file does not parse.
 */
int gdn_loop_setup_project_file(struct gdn_loop_setup *s, const struct gdn_loop_state *st);
/* Whether the command line gave `option` (its long name), from s->given. */
bool gdn_loop_setup_given(const struct gdn_loop_setup *s, const char *option);
/*
 * validate: the option combinations and the original's startup checks
 * (applies --resilient), over the values in s->a and s->given.
 */
int gdn_loop_setup_validate(struct gdn_loop_setup *s);
/*
 * The working tree, the log dir (default gdn_loop_default_log_dir()), the
 * prompt and the directives. Unless --dry-run: the log dir is created,
 * gdnctl becomes a child subreaper (the agent's setsid children are
 * re-parented to it) and the run's locks are taken: another loop holding
 * either fails the step with "another gdnctl loop (pid N) is running on
 * this tree" (GDN_EFAILED).
 */
int gdn_loop_setup_paths(struct gdn_loop_setup *s);
/* Open the agent driver; its warnings in s->warnings. */
int gdn_loop_setup_agent(struct gdn_loop_setup *s);
/* The validation mode with the Marin defaults, and the performance policy. */
int gdn_loop_setup_perf(struct gdn_loop_setup *s);
/* The engine's options (s->lo). Cannot fail. */
void gdn_loop_setup_opts(struct gdn_loop_setup *s);
/*
 * The gate's backend, commands and hooks (when s->gate_on), then where
 * validation runs; then the run's plan (s->plan, journaled with run_start).
 */
int gdn_loop_setup_gate(struct gdn_loop_setup *s);

/*
 * What the run measures and how it decides, once the steps up to
 * gdn_loop_setup_gate ran: the gate, the ruler and its direction. A new
 * reference:
 *   {"validation": {"mode": "required"|"profile-only"|"off", "from": WHY,
 *                   "tests": CMD|null, "profile": CMD|null, "backend": NAME|null},
 *    "perf": null | {"metric": NAME, "metric_from": WHY, "direction": "higher"|"lower",
 *                    "direction_from": "auto"|WHY, "direction_why": TEXT|null,
 *                    "min_improvement_pct": X, "max_regression_pct": X,
 *                    "regression_policy": P, "repeats": K, "state_file": PATH},
 *    "log_file": PATH|null, "log_file_why": TEXT|null}
 * WHY is "--OPTION" (given), a configuration origin ("gdnctl.yaml:3:7",
 * "GDNCTL_LOOP_PERF_METRIC"), "project.test_command" or "default".
 */
json_t *gdn_loop_setup_plan(const struct gdn_loop_setup *s);
/*
 * The ruler in words, appended to out: "throughput/duration_ms, lower is
 * better (auto: its name reads as a time)"; for the banner and the dry run.
 */
void gdn_loop_setup_ruler(const struct gdn_loop_setup *s, struct sbuf *out);
/* Journal `resume_override` (s->overridden) in the resumed run; nothing without it. */
int gdn_loop_setup_journal_override(struct gdn_loop_setup *s);
/*
 * The hooks gdn_loop_run() takes: s->hooks with a gate (validation, the
 * performance policy, protected paths); with --workers N > 1 and no gate,
 * hooks with the worker hook alone; else NULL.
 */
const struct gdn_loop_hooks *gdn_loop_setup_hooks(struct gdn_loop_setup *s);

/*
 * --workers N > 1. Worker K's worktree: <--worktree-dir>/w<K>, else
 * <log dir>/workers/w<K> (new string).
 */
char *gdn_loop_setup_worker_dir(const struct gdn_loop_setup *s, long k);
/*
 * The hook gdn_loop_hooks.worker (payload: &s->gate, the hooks' payload),
 * set when workers > 1. In worker K's forked process, before its agent
 * starts: re-point what points at the agent's worktree (s->agent_dir) to
 * `workdir` (the gate's workdir, the gate backend's and the dev TPU's
 * repo_root, the trace source's workdir, the Marin gate's repository, the
 * Ray fallbacks' repo_root, the running log and --log-measurements' log
 * file), name its --perf-ab champion worktree <log dir>/champion-w<K>,
 * select its backend, hold and targets, add its hold's directive to the
 * session directives, and leave every hold to the parent
 * (gdn_loop_where_forked). Mutates the setup: meant for a worker's forked
 * process; in the loop's own process (worker 1 for the baseline) the holds
 * stay its own. May be called again (a re-validation, another worker):
 * the same result as one call. 0, or GDN_EUSAGE for a K out of 1..workers.
 */
int gdn_loop_setup_worker(void *payload, long k, const char *workdir, struct gdn_err *err);
/*
 * The hook gdn_loop_hooks.worker_state (payload: &s->gate), set when
 * workers > 1: the gate's (gdn_gate_worker_state), and with
 * GDN_WORKER_ADOPT (in the loop's process, worker k's child ended) worker
 * k's hold checked and, when lost, re-acquired (gdn_loop_where_refresh).
 */
int gdn_loop_setup_worker_state(void *payload, long k, int what, bool promoted,
				struct gdn_err *err);
/*
 * After the loop: release every hold and journal its events (a warning in
 * *warning, new string, or NULL: gdn_loop_where_end), and remove the
 * workers' champion worktrees.
 */
void gdn_loop_setup_end(struct gdn_loop_setup *s, const char *run_id, char **warning);
/*
 * `path` moved from under directory `from` to under `to`: to/REL for
 * from/REL (new string); NULL when path is not below from.
 */
char *gdn_loop_worker_path(const char *path, const char *from, const char *to);

/*
 * paths.c: where a loop keeps its files by default, outside the working
 * tree (`git clean -fdx` never reaches it). `repo` is the working tree's
 * root. Both return a new string, or NULL with err filled (the repository
 * cannot be opened).
 *
 * The repository's common git directory (shared by all its worktrees),
 * without a trailing slash.
 */
char *gdn_loop_common_dir(const char *repo, struct gdn_err *err);
/*
 * The default log directory: <common git dir>/gdnctl/<branch>, for
 * `branch` or, when NULL, the branch HEAD is on ("HEAD" when detached);
 * '/' and '%' in the name are percent-encoded ("feature/x" is
 * "feature%2Fx"). `gdnctl loop` and `gdnctl report` use it.
 */
char *gdn_loop_default_log_dir(const char *repo, const char *branch, struct gdn_err *err);
/* The default log dir of earlier versions, under the working tree (--resume points at it). */
#define GDN_LOOP_LEGACY_LOG_DIR ".agents/logs/gdn_codex_loop"

/*
 * targets.c: the original's checks of the dev TPU and validation retry
 * flags; then of the other --validation-* flags (--validation-max-attempts
 * becomes --validation-attempts); `given`: the long names of the options
 * given. NULL or the original's message.
 */
const char *gdn_loop_where_check(struct gdn_loop_where *w, const struct strvec *given);
/*
 * Acquire the held dev TPU (--hold-dev-tpu) and set up the validation
 * targets of the gate (when gate_on). 0 or -1 (s->err, s->style).
 */
int gdn_loop_where_open(struct gdn_loop_setup *s);
/*
 * With --workers N > 1, in the parent before worker K's iteration: when
 * its hold was lost (or never held, best-effort), re-acquire it
 * (rate-limited as one hold's). Nothing without a hold or in a worker.
 */
void gdn_loop_where_refresh(struct gdn_loop_where *w, long k);
/*
 * In a worker's forked process: every hold stays the parent's
 * (gdn_hold_forked). Nothing in the process that opened them.
 */
void gdn_loop_where_forked(struct gdn_loop_where *w);
/* After the loop: release the holds (a warning in *warning, new string, or NULL) and journal. */
void gdn_loop_where_end(struct gdn_loop_where *w, const char *log_dir, const char *run_id,
			char **warning);
void gdn_loop_where_release(struct gdn_loop_where *w);

#endif
