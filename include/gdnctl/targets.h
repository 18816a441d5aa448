/*
 * Where the gate's phases run (src/loop/targets.c): the held dev TPU, then Ray
 * fallback clusters, or the one backend.
 */
#ifndef GDNCTL_TARGETS_H
#define GDNCTL_TARGETS_H

#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/hold.h"
#include "gdnctl/loop.h"

/* Ray fallback clusters from <repo>/infra/marin-*.yaml (the original's filters). */
struct gdn_cluster_filter {
	const struct strvec *excludes; /* case-insensitive substrings of the cluster name */
	const char *tpu;	       /* NULL, "" or "auto": any tpu_slice_ */
	bool modern;		       /* any of tpu_slice_v5p_, _v5e_, _v6e_ (tests) */
};
/* "tpu_slice_" + tpu lowered, runs of other than [a-z0-9] as one '_', '_' trimmed. */
void gdn_tpu_slice_key(const char *tpu, struct sbuf *out);
/* Whether cluster `name` (file stem minus "marin-") with YAML `text` passes f. */
bool gdn_cluster_matches(const char *name, const char *text, const struct gdn_cluster_filter *f);
/* Append the matching clusters of sorted <repo>/infra/marin-*.yaml to out (deduped). */
int gdn_clusters_discover(const char *repo, const struct gdn_cluster_filter *f, struct strvec *out,
			  struct gdn_err *err);
/* Append items of `in` not already in out (empty ones dropped). */
void gdn_strvec_add_unique(struct strvec *out, const struct strvec *in);

/*
 * The command of a phase on one target when it depends on the target (the
 * Marin defaults: include/gdnctl/marin_gate.h): `dev` for the held dev TPU
 * (cluster: the one held), else a Ray cluster or the one backend (cluster
 * NULL). Appends the command to `command` and "K=V" items to `env`; leaves
 * `command` empty for the phase's own command. 0 or a gdn_errcode.
 */
typedef int (*gdn_phase_command_fn)(void *payload, const struct gdn_loop_iter *it,
				    const char *phase, bool dev, const char *cluster,
				    struct sbuf *command, struct strvec *env, struct gdn_err *err);

/*
 * The ordered targets of each phase: the held dev TPU (when any), then
 * Ray fallback clusters (a ray backend each), or the one backend.
 */
struct gdn_targets_opts {
	const char *repo;		   /* the working tree: the backends' repo_root */
	const char *infra_repo;		   /* where infra/ is read at setup (NULL: repo) */
	struct gdn_hold *hold;		   /* NULL: no held dev TPU */
	struct gdn_backend *dev;	   /* the hold's dev-tpu backend (borrowed) */
	const struct strvec *clusters;	   /* --validation-ray-cluster */
	bool auto_discover;		   /* --validation-ray-cluster-auto */
	const struct strvec *excludes;	   /* added to the defaults vllm, big-run */
	const struct strvec *dev_clusters; /* the dev TPU's, first in the auto list */
	const char *test_tpu;		   /* --tpu of Ray test jobs (NULL: backend default) */
	const char *profile_tpu;	   /* of Ray profile jobs, and the discovery filter */
	bool cross_tpu_tests;		   /* tests: any modern TPU family */
	struct gdn_backend *backend;	   /* without clusters: the fallback (borrowed) */
	long passes;			   /* >= 1; < 0: until a pass succeeds (or interrupted) */
	long retry_sleep_ms;
	/* Ray fallback jobs: the phase timeout (0: spec's) and the output shown (0: all). */
	long ray_tests_timeout_ms, ray_profile_timeout_ms, ray_log_tail;
	gdn_phase_command_fn phase_command; /* NULL: the phase's command everywhere */
	void *phase_payload;
	gdn_backend_event_fn on_event; /* for the ray backends opened here */
	void *event_payload;
	gdn_loop_say_fn say;
	void *payload;
};
struct gdn_targets;
/*
 * Open a ray backend per fallback cluster (backends.validation-<purpose>-N
 * set in cfg) and report auto-discovered lists. 0 or a gdn_errcode.
 */
int gdn_targets_new(struct gdn_config *cfg, const struct gdn_targets_opts *o,
		    struct gdn_targets **out, struct gdn_err *err);
void gdn_targets_free(struct gdn_targets *t);
/* Point the Ray fallback backends opened here at another working tree (repo: borrowed). */
void gdn_targets_set_repo(struct gdn_targets *t, const char *repo);
/*
 * Run a phase ("tests" or "profile") through the targets: up to `passes`
 * passes, retry_sleep_ms apart, each trying the held dev TPU (health
 * check, re-acquire when lost or failed), then each valid fallback in
 * order, then a re-acquired dev TPU once more. Stops at the first
 * success. A cluster whose submission said "No cluster config found for
 * region" is skipped for the rest of the run. Each try is journaled
 * (`validation`: phase, attempt, pass, target, cluster, rc, state,
 * duration_ms). spec gives the timeout and the output callback; the shell
 * is `command` (in `workdir` on a local backend), or what phase_command
 * gives for the target; Ray fallback jobs take the ray_*_timeout_ms of the
 * phase and show only their last ray_log_tail lines (when set). Returns 0 (*rc: the
 * last try's exit code), GDN_EINTR when interrupted, or another error.
 */
int gdn_targets_run(struct gdn_targets *t, const struct gdn_loop_iter *it, const char *phase,
		    long attempt, const char *command, const char *workdir,
		    const struct gdn_run_spec *spec, int *rc, struct gdn_err *err);
/*
 * gdn_targets_run for a second tree (--perf-ab's champion): each try's
 * remote backend runs it with repo_root `root` and copy_suffix `suffix`
 * (set for the run, then restored; backend.h), a local one in `workdir`. The
 * phase_command of a phase named "profile-..." is the profile's. root
 * NULL: gdn_targets_run.
 */
int gdn_targets_run_tree(struct gdn_targets *t, const struct gdn_loop_iter *it, const char *phase,
			 long attempt, const char *command, const char *workdir, const char *root,
			 const char *suffix, const struct gdn_run_spec *spec, int *rc,
			 struct gdn_err *err);
/* The number of targets, and the profile backend of target i (borrowed; NULL: not for the profile).
 */
size_t gdn_targets_nr(const struct gdn_targets *t);
const struct gdn_backend *gdn_targets_profile(const struct gdn_targets *t, size_t i);
/* The backend the last try of gdn_targets_run ran on (borrowed), or NULL. */
struct gdn_backend *gdn_targets_last(const struct gdn_targets *t);

#endif
