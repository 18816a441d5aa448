/*
 * Where the loop's trace of one profile run comes from
 * (`project.trace_source`, src/loop/trace_source.c): in `auto`, the
 * first of
 *   1. local: the newest file `project.trace_glob` matches in the working
 *      tree, written by this run;
 *   2. backend: the same glob in the backend's workdir, copied back
 *      (gdn_backend_copy_back) after the profile phase;
 *   3. gcs: a `gs://.../plugins/profile/...` URI, or the hosted-XProf
 *      link (`.../open?uri=gs%3A...`), the profile printed;
 *   4. wandb: the W&B run the profile printed, through its `jax_profile`
 *      artifact;
 * (`local`, `backend`, `gcs`, `wandb`: that one only; `none`: no trace).
 * Fetched traces go to LOG_DIR/traces/iteration-NNN/run-K/. What was
 * found, or why nothing was, is reported and journaled (`trace` event).
 */
#ifndef GDNCTL_TRACE_SOURCE_H
#define GDNCTL_TRACE_SOURCE_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/trace_fetch.h"

struct gdn_backend;
struct gdn_loop_iter;
struct gdn_targets;
struct strvec;

enum gdn_trace_source_mode {
	GDN_TRACE_SRC_AUTO = 0,
	GDN_TRACE_SRC_LOCAL,
	GDN_TRACE_SRC_BACKEND,
	GDN_TRACE_SRC_WANDB,
	GDN_TRACE_SRC_GCS,
	GDN_TRACE_SRC_NONE,
};
/* "auto", "local", "backend", "wandb", "gcs", "none". */
extern const struct gdn_enum gdn_trace_source_enum[];

/* ---- what a profile printed (pure) ---- */

struct gdn_trace_refs {
	char *gcs;	 /* "gs://BUCKET/.../plugins/profile/SESSION" or a run root, or NULL */
	char *gcs_from;	 /* "uri" (printed as is) or "xprof-link" (from a hosted-XProf link) */
	char *wandb;	 /* "wandb:ENTITY/PROJECT/RUN", or NULL */
	char *wandb_url; /* the run URL it came from */
};
/*
 * The last gs:// profile URI and W&B run in `out`: a `gs://` URI that has
 * `/plugins/profile/` (cut after the session directory) wins over the
 * `uri=gs://...` of a hosted-XProf link (percent-decoded); the W&B run is
 * gdn_measure_find_run_url's (wandb.ai or base_url). Never fails.
 */
void gdn_trace_refs_scan(const char *out, size_t len, const char *wandb_base_url,
			 struct gdn_trace_refs *r);
void gdn_trace_refs_release(struct gdn_trace_refs *r);

/* ---- the loop's source ---- */

typedef int (*gdn_trace_fetch_fn)(const char *spec, const char *dest_dir,
				  const struct gdn_trace_fetch_opts *opts, struct strvec *files_out,
				  struct gdn_err *err);

struct gdn_trace_source {
	enum gdn_trace_source_mode mode;
	const char *trace_glob;	     /* relative to the working tree and the backend's workdir */
	const char *workdir;	     /* the local working tree */
	struct gdn_backend *backend; /* where the profile runs (borrowed), or NULL */
	struct gdn_targets *targets; /* else: the backend of its last try (targets.c) */
	const char *log_dir;	     /* fetched traces go under LOG_DIR/traces/ */
	const char *wandb_base_url;  /* NULL: https://wandb.ai */
	long fetch_timeout_ms;	     /* per fetch; 0: 10 minutes */
	gdn_trace_fetch_fn fetch;    /* NULL: gdn_trace_fetch */
	/* whether a run without a trace is worth a warning (a trace metric or trace gates) */
	bool expected;
	/*
	 * A local trace is linked under LOG_DIR/traces/ too (--isolation
	 * worktree: the agent's worktree, where the profile wrote it, goes at
	 * the end of the run).
	 */
	bool keep_local;
};

/* The newest regular file matching `pattern_rel` under `dir`, modified at or after `since`. */
char *gdn_trace_newest_local(const char *dir, const char *pattern_rel,
			     const struct timespec *since);

/*
 * The trace of profile run `attempt` of the iteration, started at
 * `since_s` (seconds since the epoch; files older are not this run's):
 * a path (new string) or NULL. Reports what it did through it->report
 * (a warning with the reason when there is no trace and one was
 * expected) and journals a `trace` event {iteration, attempt, source,
 * path, file (relative to the log dir), origin, reason}.
 */
char *gdn_trace_source_find(const struct gdn_trace_source *ts, const struct gdn_loop_iter *it,
			    long attempt, int64_t since_s, const char *out, size_t len);

#endif
