/*
 * The Marin GDN conventions as data, and the Ray job CLI's output as
 * parsed facts (src/backend/marin.c). Pure functions: nothing here runs
 * a program, prints or exits.
 *
 * - The remote test and profile command strings of the original
 *   scripts/gdn/gdnctl.py (v3), the profile environment in its exact
 *   order, --profile-env validation with the original's messages, the
 *   MARIN_PREFIX default and the cross-entropy normalisers.
 * - The argv of Marin's wrappers (ray_run.py, cluster.py, dev_tpu.py)
 *   after the configured program prefix (by default "uv run").
 * - Checks of cluster, TPU and job names given on the command line.
 * - Parsers of what the Ray job CLI and Marin's wrappers print:
 *   submission ids, job statuses, Marin's wait-job and list-jobs output.
 *
 * Returned `char *` belong to the caller; strvec/sbuf outputs are appended to.
 */
#ifndef GDNCTL_MARIN_H
#define GDNCTL_MARIN_H

#include "gdnctl/compat.h"
#include "gdnctl/backend.h"

struct sbuf;
struct strvec;
struct gdn_err;

/* Marin's Ray wrappers, relative to the repository root. */
#define GDN_MARIN_RAY_RUN     "lib/marin/src/marin/run/ray_run.py"
#define GDN_MARIN_CLUSTER_CLI "scripts/ray/cluster.py"
#define GDN_MARIN_DEV_TPU     "scripts/ray/dev_tpu.py"
/* The Marin GDN files gdnctl uses by default in a Marin checkout, relative to its root. */
#define GDN_MARIN_LEVANTER	 "lib/levanter"
#define GDN_MARIN_PROMPT	 "scripts/gdn/codex_iteration_prompt.md"
#define GDN_MARIN_DIRECTIVES_DIR "scripts/gdn/session_directives"
/* What `gdnctl loop` protects by default in a Marin checkout: the GDN tests and the profile
 * harness. */
#define GDN_MARIN_PROTECTED                                                               \
	"lib/levanter/tests/test_gdn_kernels.py", "lib/levanter/tests/test_gdn_layer.py", \
	    "experiments/speedrun/hackable_transformer_gdn/tiny_profile.py"

/* Marin's Iris orchestrator (its job CLI), relative to the repository root. */
#define GDN_MARIN_IRIS "lib/iris"

/*
 * Whether `root` (a repository root; NULL: no) is a Marin checkout: it
 * has GDN_MARIN_LEVANTER (a directory) and GDN_MARIN_RAY_RUN (a file) or
 * GDN_MARIN_IRIS (a directory; Marin after ray_run.py was deleted), what
 * the built-in Marin commands need. The Marin defaults (the GDN tests and
 * profile, the running log's path) apply only there. The one place that
 * decides it; reads the file system, nothing else.
 */
bool gdn_marin_checkout(const char *root);
/*
 * Whether `root` is a Marin checkout that runs its jobs on Iris: it has
 * GDN_MARIN_IRIS and no GDN_MARIN_RAY_RUN. There `test` and `profile`
 * default to the iris backend instead of ray.
 */
bool gdn_marin_iris_checkout(const char *root);

/* Defaults of the original tool. */
#define GDN_MARIN_CLUSTER	   "us-central1"
#define GDN_MARIN_TEST_TPU	   "auto"
#define GDN_MARIN_PROFILE_TPU	   "v5p-8"
#define GDN_MARIN_RUN_NAME_PREFIX  "gdn_tinyprof"
#define GDN_MARIN_READY_TIMEOUT_MS (900 * 1000L)
#define GDN_MARIN_STOP_TIMEOUT_MS  (120 * 1000L)
#define GDN_MARIN_RETRY_SLEEP_MS   (30 * 1000L)
#define GDN_MARIN_WAIT_POLL_MS	   5000L
#define GDN_MARIN_WAIT_TAIL	   200L
#define GDN_MARIN_LOGS_TAIL	   400L
#define GDN_MARIN_TEST_NOTE                                                             \
	"remote TPU test setup installs torch + transformers; full HF parity slice is " \
	"enabled."
#define GDN_MARIN_READY_NOTE                                                      \
	"dev TPU became active; suppressing further allocation log output while " \
	"keeping the hold process drained."

/* NULL-terminated value lists (the original's argparse choices). */
extern const char *const gdn_marin_ready_markers[]; /* dev_tpu.py allocate is ready */
extern const char *const gdn_marin_test_choices[];  /* kernels, layer, both */
extern const char *const gdn_marin_size_choices[];  /* 130m, 300m, 520m, 1_2b */
extern const char *const gdn_marin_wandb_choices[]; /* online, offline, disabled */

/* ---- names given on the command line ---- */

enum gdn_marin_name {
	GDN_NAME_CLUSTER,  /* letters, digits . _ - and / (a config path) */
	GDN_NAME_TPU,	   /* TPU type: letters, digits . _ - */
	GDN_NAME_TPU_NAME, /* dev TPU name: letters, digits . _ - */
	GDN_NAME_JOB,	   /* job / submission id: letters, digits . _ - : @ + */
};

/*
 * 0 when `value` is a safe name of that kind, else GDN_EUSAGE with a
 * one-line message naming it (control characters escaped). Names never
 * start with '-' and are at most 200 bytes; no shell metacharacters,
 * spaces or quotes.
 */
int gdn_marin_check_name(enum gdn_marin_name kind, const char *value, struct gdn_err *err);

/* Python's repr() of a str, as the original's messages show values ('x', "it's"). */
void gdn_py_repr(struct sbuf *out, const char *s);
/* Python's str() of a float: 5.0, 0.25, 1e+16. */
void gdn_py_float(struct sbuf *out, double v);

/* ---- remote commands ---- */

/*
 * REMOTE_TEST_CMD for `tests` ("kernels", "layer" or "both"), with
 * `pytest_args` (may be NULL) stripped and appended after -v in both
 * branches. GDN_EUSAGE for an unknown selection.
 */
int gdn_marin_test_command(struct sbuf *out, const char *tests, const char *pytest_args,
			   struct gdn_err *err);
/* The test environment: EQX_ON_ERROR=nan, WANDB_MODE=offline. */
void gdn_marin_test_env(struct strvec *env);

#define GDN_MARIN_UNSET LONG_MIN /* an optional integer that was not given */

/* The profile settings (PROFILE_ENV). */
struct gdn_marin_profile {
	const char *wandb_mode;	 /* online */
	const char *size;	 /* 130m */
	long num_steps;		 /* 20 */
	long profile_start_step; /* 2 */
	long profile_num_steps;	 /* 6 */
	const char *run_name_prefix;
	const char *tpu;	  /* v5p-8 */
	long batch_size;	  /* 8; GDN_MARIN_UNSET: not passed */
	long chunk_size;	  /* GDN_MARIN_UNSET: not passed */
	long segment_size;	  /* GDN_MARIN_UNSET: not passed */
	long layers_per_block;	  /* GDN_MARIN_UNSET: not passed */
	long block_size;	  /* GDN_MARIN_UNSET: not passed */
	bool all_transformer;	  /* GDN_PROFILE_ALL_TRANSFORMER=1 */
	const char *ce_impl;	  /* auto: not passed; normalised by gdn_marin_profile_env */
	const char *ce_bwd;	  /* pallas | xla_streaming (or an alias); always passed */
	const char *const *extra; /* raw --profile-env items, validated there; or NULL */
};
#define GDN_MARIN_PROFILE_INIT                                                                   \
	{                                                                                        \
		"online", "130m", 20, 2, 6, GDN_MARIN_RUN_NAME_PREFIX, GDN_MARIN_PROFILE_TPU, 8, \
		    GDN_MARIN_UNSET, GDN_MARIN_UNSET, GDN_MARIN_UNSET, GDN_MARIN_UNSET, false,   \
		    "auto", "pallas", NULL                                                       \
	}

/*
 * --profile-env items: each is stripped, empty ones are skipped, the rest
 * must be KEY=VALUE with KEY (stripped) a shell variable name; the value is
 * kept verbatim. Appends "KEY=VALUE" to pairs. GDN_EUSAGE with the
 * original's message otherwise:
 *   invalid --profile-env entry (expected KEY=VALUE): 'MISSING_EQUALS'
 *   invalid --profile-env key '1BAD'; expected [A-Za-z_][A-Za-z0-9_]*
 */
int gdn_marin_parse_profile_env(const char *const *items, struct strvec *pairs,
				struct gdn_err *err);

/*
 * PROFILE_ENV as "KEY=VALUE" items in the original's order: EQX_ON_ERROR,
 * WANDB_MODE, GDN_PROFILE_SIZE, _NUM_STEPS, _PROFILE_START_STEP,
 * _PROFILE_NUM_STEPS, _RUN_NAME_PREFIX, _TPU_VARIANT, then the optional
 * ones, the CE implementation unless auto, the CE backward flag, then the
 * --profile-env pairs. GDN_EUSAGE for a bad CE value or --profile-env item.
 */
int gdn_marin_profile_env(const struct gdn_marin_profile *p, struct strvec *env,
			  struct gdn_err *err);

/* PROFILE_CMD: dev_tpu (dev TPU: full uv sync) or Ray (plain uv sync); dry_run adds --dry_run true.
 */
void gdn_marin_profile_command(struct sbuf *out, bool dev_tpu, bool dry_run);

/*
 * The default MARIN_PREFIX for a cluster: gs://<bucket> of the cluster's
 * Marin configuration. Looked up in <root>/infra/marin-*.yaml (the
 * `BUCKET="..."` line) as marin.cluster.config does, then in a built-in
 * table of Marin's clusters, else gs://marin-<cluster>. `root` may be NULL.
 * us-east5-a -> gs://marin-us-east5; marin-us-central1 -> gs://marin-us-central1.
 */
char *gdn_marin_default_prefix(const char *cluster, const char *root);
/*
 * Append "MARIN_PREFIX=<prefix>" to env: `prefix` when given, else
 * gdn_marin_default_prefix(cluster, root) (the dev TPU profile's -e).
 */
void gdn_marin_prefix_env(struct strvec *env, const char *prefix, const char *cluster,
			  const char *root);

/*
 * The original's cross-entropy normalisers. *out is a static string.
 * invalid CE implementation 'x'; expected one of: auto, xla, reference, pallas_tpu, pallas_gpu
 * unsupported CE backward mode 'x'; expected one of pallas, xla_streaming
 */
int gdn_marin_ce_implementation(const char *v, const char **out, struct gdn_err *err);
int gdn_marin_ce_bwd_mode(const char *m, const char **out, struct gdn_err *err);

/* ---- argv of Marin's wrappers (appended after the program prefix) ---- */

/* ray_run.py --cluster C --tpu T -e K=V... [--submission-id ID] [--no_wait] -- CMD... */
void gdn_marin_ray_run_argv(struct strvec *argv, const char *cluster, const char *tpu,
			    const char *const *env, const char *submission_id, bool no_wait,
			    const char *const *cmd);
/* cluster.py --cluster C wait-job ID --poll P [--timeout T] [--show-logs] --tail N [--grep G] */
void gdn_marin_wait_job_argv(struct strvec *argv, const char *cluster, const char *id,
			     double poll_s, double timeout_s, bool show_logs, long tail,
			     const char *grep);
/* cluster.py --cluster C job-logs -n N [-g G] ID */
void gdn_marin_job_logs_argv(struct strvec *argv, const char *cluster, const char *id, long tail,
			     const char *grep);
/* cluster.py --cluster C stop-job ID */
void gdn_marin_stop_job_argv(struct strvec *argv, const char *cluster, const char *id);
/* cluster.py --cluster C list-jobs */
void gdn_marin_list_jobs_argv(struct strvec *argv, const char *cluster);
/* dev_tpu.py --cluster C --tpu-name N [--verbose] allocate [--sync-path P] [--tpu-type T] */
void gdn_marin_allocate_argv(struct strvec *argv, const char *cluster, const char *tpu_name,
			     bool verbose, const char *sync_path, const char *tpu_type);
/* dev_tpu.py --cluster C --tpu-name N execute -e K=V... [--no-sync] -- CMD */
void gdn_marin_execute_argv(struct strvec *argv, const char *cluster, const char *tpu_name,
			    const char *const *env, bool no_sync, const char *cmd);

/* ---- output parsing ---- */

#define GDN_RAY_ID_MAX 256

/*
 * The submission id in submit output: the first `Job submitted with ID:
 * <id>` (Marin's ray_run.py, whitespace incl. newlines may precede the
 * id), else the first `Job '<id>' submitted successfully` (ray job
 * submit). NULL when neither is there, or the id is longer than
 * GDN_RAY_ID_MAX or holds a NUL byte (a cut id is no id): never an empty
 * string. The caller frees the result.
 */
char *gdn_ray_parse_submission_id(const char *text, size_t len);

/* PENDING RUNNING STOPPED SUCCEEDED FAILED -> state (false for anything else). */
bool gdn_ray_state_from_name(const char *s, size_t len, enum gdn_job_state *out);

/*
 * One line of `ray job status` / `ray job submit` / `ray job stop` output
 * (any log style: the pattern may sit after a record prefix):
 *   Job 'ID' succeeded | Job 'ID' was stopped | Job 'ID' failed
 *   Status for job 'ID': STATUS
 *   Status message: TEXT          (fills st->message only)
 *   Job has not exited yet. Status: STATUS
 * When `id` is non-NULL, lines about another job are ignored. Returns true
 * when the line told a state (st->state, st->native, st->final set).
 */
bool gdn_ray_parse_status_line(const char *line, size_t len, const char *id,
			       struct gdn_job_status *st);

/* Marin cluster.py wait-job: `[YYYY-MM-DD HH:MM:SS] ID status=STATUS MESSAGE`. */
bool gdn_marin_parse_wait_line(const char *line, size_t len, const char *id,
			       struct gdn_job_status *st);

/*
 * Marin cluster.py list-jobs output (a JSON list of job objects with
 * "submission_id", "status", "message", "driver_exit_code"): the job
 * `id`. 0 and *st filled; GDN_ENOTFOUND when the job is not listed;
 * GDN_EPARSE for text that is not such a list.
 */
int gdn_ray_parse_job_list(const char *text, size_t len, const char *id, struct gdn_job_status *st,
			   struct gdn_err *err);

#endif
