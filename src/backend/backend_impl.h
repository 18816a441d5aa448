/*
 * What the backend types share; private to src/backend/.
 *
 * A type is one `const struct gdn_backend_ops` defined in its own file
 * (local.c, ssh.c, slurm.c, ...), declared here with one line and listed
 * with one line in the registry table of backend.c. Its open() reads
 * backends.<name>.* through the lookups below (which fall back to the
 * schema's defaults for a built-in backend that has no section).
 *
 * Nothing here prints: gdn_backend_event() hands a line to the command.
 */
#ifndef GDNCTL_BACKEND_IMPL_H
#define GDNCTL_BACKEND_IMPL_H

#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/marin.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

struct gdn_err;

/* ---- the types: one line each, and one row in backend.c's table ---- */

extern const struct gdn_backend_ops gdn_backend_local_ops;
extern const struct gdn_backend_ops gdn_backend_ssh_ops;
extern const struct gdn_backend_ops gdn_backend_slurm_ops;
extern const struct gdn_backend_ops gdn_backend_ray_ops;
extern const struct gdn_backend_ops gdn_backend_devtpu_ops;
extern const struct gdn_backend_ops gdn_backend_iris_ops;

/* ---- configuration: backends.<name>.<key> ---- */

/* The value as text, or the schema default, or NULL when unset or empty. Borrowed. */
const char *gdn_backend_str(const struct gdn_backend *b, const char *key);
/* INT, DURATION (ms) and BOOL values (or the schema default); fallback when unset. */
long long gdn_backend_int(const struct gdn_backend *b, const char *key, long long fallback);
/* A LIST value (never NULL; empty when unset). */
const struct strvec *gdn_backend_list(const struct gdn_backend *b, const char *key);
/* Where the value was set ("gdnctl.yaml:4:11", "-c", "default"), for messages. */
const char *gdn_backend_origin(const struct gdn_backend *b, const char *key);
/*
 * A configuration error about backends.<name>.<key>:
 * "ORIGIN: 'backends.NAME.KEY' MESSAGE". Returns GDN_ECONFIG.
 */
int gdn_backend_config_error(const struct gdn_backend *b, const char *key, struct gdn_err *err,
			     const char *fmt, ...) GDN_PRINTF(4, 5);
/*
 * gdn_marin_check_name() on the value of backends.<name>.<key>: 0, or
 * GDN_ECONFIG "ORIGIN: 'backends.NAME.KEY': WHY IT IS REFUSED".
 */
int gdn_backend_check_name(const struct gdn_backend *b, const char *key, enum gdn_marin_name kind,
			   const char *value, struct gdn_err *err);
/* A program name from programs.<key> ("ssh", "sbatch"), else `fallback`. Borrowed. */
const char *gdn_backend_program(const struct gdn_backend *b, const char *key, const char *fallback);
/*
 * A local path: "~/" is $HOME, a relative path is relative to base (NULL:
 * as is). Returns a new string.
 */
char *gdn_backend_local_path(const char *path, const char *base);

/* ---- events and running programs ---- */

void gdn_backend_event(struct gdn_backend *b, enum gdn_backend_event ev, const char *fmt, ...)
    GDN_PRINTF(3, 4);
/*
 * Report argv as the shell-quoted line the command echoes, secrets masked;
 * env additions ("K=V") are shown first as `env K=V ...`.
 */
void gdn_backend_echo(struct gdn_backend *b, enum gdn_backend_event ev, const char *const *env,
		      const char *const *argv);
/*
 * Register with the secret masker the values of the "K=V" entries whose K
 * looks secret, also in the forms they take once quoted for a shell, so
 * they are masked inside remote command strings too.
 */
void gdn_backend_register_secrets(const char *const *env);
/*
 * Echo p->argv (with p->env) as `ev`, then run it unless b->dry_run (then
 * p->status_kind stays GDN_PROC_NOT_RUN). Returns what gdn_proc_run does.
 */
int gdn_backend_spawn(struct gdn_backend *b, enum gdn_backend_event ev, struct gdn_proc *p,
		      struct gdn_err *err);
/*
 * The first line of a program's output that is not empty, trimmed and
 * shortened to fit one message line, appended to out ("no output" when
 * there is none).
 */
void gdn_backend_first_line(const struct sbuf *text, struct sbuf *out);

/* A duration given: "0.05s", "45s", "1m30s", "2h05m". */
void gdn_format_duration(long long ms, struct sbuf *out);
/* A time measured, to the second: "0s", "45s", "1m30s". */
void gdn_format_elapsed(long long ms, struct sbuf *out);
/* Call on_line for each of the last `tail` lines of buf (all when tail <= 0). */
void gdn_emit_lines(const char *buf, size_t len, long tail, gdn_line_fn on_line, void *payload);

/* ---- following a growing log ---- */

struct gdn_follow {
	long long offset;    /* bytes consumed so far */
	struct sbuf partial; /* the last line, until its newline arrives */
	gdn_line_fn on_line;
	void *payload;
	bool stopped; /* on_line asked to stop: nothing more is delivered */
};
#define GDN_FOLLOW_INIT                         \
	{                                       \
		0, SBUF_INIT, NULL, NULL, false \
	}

/* Consume the next len bytes of the log: whole lines go to on_line. */
void gdn_follow_feed(struct gdn_follow *f, const char *buf, size_t len);
/* Deliver a last line that has no newline. */
void gdn_follow_flush(struct gdn_follow *f);
void gdn_follow_release(struct gdn_follow *f);

/* ---- waiting by polling ---- */

/*
 * One poll (ctx is poll_wait's): fill *st, and when f is non-NULL feed it the output written
 * since f->offset, read AFTER the state (so a final state comes with all
 * of the output). With b->dry_run: echo what would run and return 0.
 */
typedef int (*gdn_poll_fn)(struct gdn_backend *b, void *ctx, const char *job_id,
			   struct gdn_follow *f, struct gdn_job_status *st, struct gdn_err *err);

/*
 * The wait loop: poll every w->poll_ms (or default_poll_ms) until the state
 * is final, reporting GDN_EV_WAITING when the state changes and every
 * w->progress_ms; follow the output when w->show_logs; up to 3 failed polls
 * in a row are reported and retried. Returns 0 (final state in *st),
 * GDN_ETIMEOUT, GDN_EINTR or the poll's error. The last w->tail lines are
 * the caller's business (ops->logs), as is anything to stop.
 */
int gdn_backend_poll_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
			  long default_poll_ms, gdn_poll_fn poll, void *ctx,
			  struct gdn_job_status *st, struct gdn_err *err);

/* Append the work as one shell string: spec->shell, or spec->argv shell-quoted. */
void gdn_spec_command(const struct gdn_run_spec *spec, struct sbuf *out);

/* Set st to a state with its native name (copied, truncated) and final flag. */
void gdn_job_status_set(struct gdn_job_status *st, enum gdn_job_state state, const char *native,
			int exit_code);

/*
 * Set st from how a child that ran the work ended: exit 0 -> SUCCEEDED
 * (native name ok_name), another exit or a signal -> FAILED (128+N),
 * a runtime or idle timeout -> TIMEOUT (124), stopped -> STOPPED.
 */
void gdn_job_status_from_proc(struct gdn_job_status *st, const struct gdn_proc *p,
			      const char *ok_name);

/* ---- copying files back (copyback.c) ---- */

/*
 * Where a copy reads: on this machine (local_root), or on a host over ssh
 * (ssh: the program and its options up to the host; remote_root: where
 * relative paths start there, NULL for the login directory). Filled by
 * ops->copy_source, released by gdn_copy_where_release.
 */
struct gdn_copy_where {
	char *local_root;
	struct strvec ssh;
	char *host;
	char *remote_root;
	const char *rsync; /* the rsync program (borrowed) */
};
#define GDN_COPY_WHERE_INIT                         \
	{                                           \
		NULL, STRVEC_INIT, NULL, NULL, NULL \
	}
void gdn_copy_where_release(struct gdn_copy_where *w);
/*
 * The slurm login host: ssh over backends.<name>.host, .user, .port,
 * .identity and .ssh_options (checked as the ssh backend checks them).
 * Returns 0, GDN_ENOTFOUND when host is not set, or GDN_ECONFIG.
 */
int gdn_copy_ssh_from_config(struct gdn_backend *b, struct gdn_copy_where *w, struct gdn_err *err);
/* The fixed leading part of a path that may be a glob (a new string; "" when none). */
char *gdn_copy_glob_base(const char *path);

/* ---- local and ssh jobs: the job shim (jobdir.c) ---- */

/*
 * Where the shim runs. build() appends to argv (and sets *dir, appends to
 * env) the command that runs `bash -s -- ARGS...` with the shim on stdin:
 * for local, bash itself in `run_dir` with `run_env`; for ssh, the ssh
 * command line with the remote command string. run_dir and run_env are
 * given for the "run" operation only (NULL otherwise).
 */
struct gdn_job_target {
	void (*build)(struct gdn_backend *b, const char *run_dir, const char *const *run_env,
		      const char *const *args, struct strvec *argv, const char **dir,
		      struct strvec *env);
	const char *jobroot; /* where job directories live on the target ("~/" allowed) */
	long kill_grace_ms;  /* stop: between SIGTERM and SIGKILL */
	long poll_ms;	     /* default poll interval of wait */
	bool login_shell;    /* a run spec's shell string runs under bash -lc (remote hosts) */
};

/* A fresh job id: "YYYYmmdd-HHMMSS-xxxxxx" (UTC, random hex). */
void gdn_job_new_id(char *buf, size_t size);

/* The shim's operations over a target (each checks the job id first). */
int gdn_job_submit(struct gdn_backend *b, const struct gdn_job_target *t, const char *run_dir,
		   const struct gdn_run_spec *spec, char **job_id, struct gdn_err *err);
int gdn_job_status(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		   struct gdn_job_status *st, struct gdn_err *err);
int gdn_job_wait(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		 const struct gdn_wait_spec *w, struct gdn_job_status *st, struct gdn_err *err);
int gdn_job_logs(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		 long tail, gdn_line_fn on_line, void *payload, struct gdn_err *err);
/* Stop the job's process group (TERM, then KILL); create: also when it has not started. */
int gdn_job_stop(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		 bool create, struct gdn_job_status *st, struct gdn_err *err);
/*
 * Run in the foreground through the shim ("run DIR fg ARGV"), streaming
 * output; on a timeout, a stop request or an interruption the job is
 * stopped on the target through a second command. For ssh.
 */
int gdn_job_run_fg(struct gdn_backend *b, const struct gdn_job_target *t, const char *run_dir,
		   const struct gdn_run_spec *spec, struct gdn_job_status *st, struct gdn_err *err);
/*
 * Stop job_id through b->ops->stop after a timeout or an interruption, best
 * effort: "VERBing job ID on NAME (WHY)", and a failure, are reported as
 * events, not returned. verb: "stop" or "cancel", as the backend's CLI says.
 */
void gdn_backend_stop_after(struct gdn_backend *b, const char *job_id, const char *why,
			    const char *verb);

/*
 * The argv a run spec stands for: spec->argv, or bash -c spec->shell.
 * login: "-lc", a login shell, for remote hosts whose profile sets up the
 * user's environment; a local run keeps the caller's environment as it is
 * (a login shell re-reads the system profile, which can put another
 * interpreter first on PATH).
 */
void gdn_run_spec_argv(const struct gdn_run_spec *spec, bool login, struct strvec *argv);

#endif
