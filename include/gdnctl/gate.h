/*
 * The validation gate and the performance policy (src/loop/gate.c): the
 * engine's hooks.
 */
#ifndef GDNCTL_GATE_H
#define GDNCTL_GATE_H

#include "gdnctl/compat.h"
#include "gdnctl/revert.h"
#include "gdnctl/loop.h"

struct gdn_backend;
struct gdn_perf_config;
struct gdn_perf_state;
struct gdn_measure_opts;
struct gdn_trace_source;
struct gdn_integrity;

enum gdn_gate_mode {
	GDN_GATE_OFF = 0,
	GDN_GATE_REQUIRED,     /* tests, then profile */
	GDN_GATE_PROFILE_ONLY, /* profile only */
};
/* --validation-mode: "required", "profile-only", "off". */
extern const struct gdn_enum gdn_gate_mode_enum[];

struct gdn_gate {
	const char *workdir;
	/* how a rejected iteration is undone: a revert commit, or reset (--isolation worktree) */
	enum gdn_revert_mode revert_mode;
	enum gdn_gate_mode mode;
	const char *test_command, *profile_command; /* NULL or "": the phase is skipped */
	long timeout_ms;			    /* per phase; 0: none */
	struct gdn_backend *backend;		    /* borrowed */
	gdn_line_fn on_line;			    /* the phases' output */
	long heartbeat_ms; /* --heartbeat: a phase silent this long is said to run (0: off) */
	void *payload;
	/* The performance policy (perf_config NULL: off); all borrowed. */
	const struct gdn_perf_config *perf_config;
	/*
	 * No --perf-metric outside Marin, and a trace configured: the ruler is
	 * decided on the baseline's measurement (gdn_perf_ruler_pick), on this
	 * configuration (the same as perf_config); NULL once decided, or fixed.
	 */
	struct gdn_perf_config *ruler_auto;
	struct gdn_perf_state *perf_state; /* loaded; saved after each decision */
	long perf_repeats;		   /* profile runs per commit (>= 1) */
	const char *trace_glob;		   /* relative to workdir, or NULL */
	/* Where the trace comes from (trace_source.h); NULL: trace_glob in workdir only. */
	const struct gdn_trace_source *trace_source;
	/* The W&B source and --log-measurements (measure.h); NULL: neither. */
	const struct gdn_measure_opts *measure;
	/*
	 * --validation-retries: a phase that could not run (a backend error
	 * such as an unreachable ssh host) or whose job was stopped from
	 * outside runs again up to this many times, retry_sleep_ms apart; a
	 * command that ran and failed is never retried.
	 */
	long phase_retries, retry_sleep_ms;
	/* Where the phases run (targets.c); NULL: on `backend` only. Borrowed. */
	struct gdn_targets *targets;
	/*
	 * --perf-ab: the champion (a detached worktree of its commit under
	 * log_dir/champion) and the candidate profiled alternately on the
	 * same backend or targets, at least perf_repeats pairs and up to
	 * perf_max_repeats while the interval at perf_confidence is
	 * inconclusive. A remote backend runs the champion with repo_root
	 * set to its worktree and copy_suffix ".gdnctl-" + the worktree's
	 * name (backend.h: ssh copies it to WORKDIR.gdnctl-champion); setup
	 * refuses where that cannot work (gdn_backend_second_tree_refusal).
	 */
	bool perf_ab;
	long perf_max_repeats;
	double perf_confidence;
	const char *log_dir;
	/* Private: the profile runs of the validation gate, reused by decide. */
	void *measured;
	long measured_iter;
	/*
	 * Globs (fnmatch(3) without flags: '*' matches '/' too; "dir/" covers
	 * everything below): an iteration that changes a matching path is
	 * reverted without validation. Borrowed; NULL or empty: none.
	 */
	const struct strvec *protected_paths;
	void *measured_champion; /* --perf-ab: the champion's runs, paired with measured */
	char *champion_dir;	 /* --perf-ab: the champion's worktree, and its commit */
	char *champion_dir_commit;
	char *champion_gitdir; /* the repository's common git dir, to remove it at the end */
	char *perf_main_path;  /* --workers: the run's perf state file (a child saves beside it) */
	const char *champion_name; /* its directory's name in log_dir (NULL: "champion") */
	/*
	 * Private: set on the champion's copy of the gate (its runs come from
	 * workdir: the local backend cds there, a remote one gets it as its
	 * repo_root and this as its copy_suffix for the run).
	 */
	const char *copy_suffix;
	/* integrity gate (issue 28): checks each kept candidate (NULL: off). Borrowed. */
	struct gdn_integrity *integrity;
};
/* Whether `path` (relative to the repository) matches one of the protected globs. */
bool gdn_gate_protected(const struct strvec *globs, const char *path);
/*
 * The validate hook (payload: struct gdn_gate). For an iteration with
 * commits, runs each phase with `bash -lc` on the backend (in the working
 * tree for the local backend) and journals a `validation` event (phase,
 * rc, state, duration_ms). A failed phase reverts every commit of the
 * iteration (gdn_revert_iteration, reason "validation failed: <phase>
 * exit N"), journals `revert` (discarded ref, head) and returns the exit
 * code (> 0) with the reason in err; a failed revert is an error (< 0).
 * A phase that could not run even after phase_retries (a backend error,
 * or a job still stopped from outside: GDN_EBACKEND) or was interrupted
 * also reverts (reason "validation could not run: ..." or "validation
 * interrupted by signal N") and returns the error (< 0).
 * Never reverts an iteration without commits (it does nothing then).
 * Before any phase, an iteration whose commits (or uncommitted changes)
 * touch a protected path is reverted with reason "protected path changed:
 * <path>", returns 1 and sets out->note for the next prompt.
 */
int gdn_gate_validate(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		      struct gdn_err *err);
/*
 * The decide hook (payload: struct gdn_gate with perf_config set). For an
 * iteration with commits: profiles HEAD perf_repeats times (or reuses the
 * validation gate's profile runs of this iteration): each run's output
 * gives the CLI metric (or, with `measure`, the W&B value: measure.h; a
 * `measurement` event per W&B sample), and the newest file matching
 * trace_glob that the run wrote gives the trace figures; then
 * gdn_perf_decide(), saves the state, reports the reasons and journals a
 * `perf_decision` event, and carries out the action: revert (every commit
 * of the iteration, journaled as `revert`), count a failure (returns 1,
 * count-failure) or stop (returns 1, fail). A kept iteration's running-log
 * entry gets the measured figures with measure->log_file
 * (--log-measurements), committed (`log_measurements` event).
 */
int gdn_gate_decide(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		    struct gdn_err *err);
/*
 * The start hook: profiles the starting commit as the baseline (decision
 * `baseline`) unless the state already has a champion for the metric.
 */
int gdn_gate_start(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err);
/*
 * The synced hook: with the performance policy and a champion, profiles
 * the synced HEAD perf_repeats times and makes it the champion's
 * measurement (gdn_perf_champion_reprofile), journaled as
 * `perf_reprofile`: the next candidate is compared with the code it was
 * built on, not with a champion that predates the sync.
 */
int gdn_gate_synced(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err);
/*
 * The worker_state hook (--workers N, gate_worker.c). GDN_WORKER_FORK, in
 * worker k's child: the perf state as the parent last saved it, the
 * child's saves going to "<state file>.w<k>". GDN_WORKER_ADOPT, in the
 * parent: the decisions that file recorded appended to the run's state,
 * its champion taken when `promoted`, saved, the file removed.
 * GDN_WORKER_END, in the parent at the end of the run: worker k's A/B
 * champion worktree removed.
 */
int gdn_gate_worker_state(void *payload, long k, int what, bool promoted, struct gdn_err *err);
/* Free what the hooks kept between calls. */
void gdn_gate_release(struct gdn_gate *g);

#endif
