/*
 * Backends: where work runs. A vtable over the child-process API; gdnctl
 * never reimplements a scheduler, it drives the real tools (ssh, sbatch,
 * squeue, sacct, scontrol, scancel, the Ray job CLI, Marin's dev_tpu.py).
 *
 * Backends are named in configuration (`backends.<name>.type` and the
 * type's keys, see docs/configuration.md); built-in names exist for the
 * defaults (`local`, and the Marin `ray` / `dev-tpu` conventions).
 *
 * Jobs outlive the gdnctl process that submitted them: a job id printed
 * by `gdnctl run --no-wait` must work with a later `gdnctl wait/logs/stop
 * --backend NAME JOB` (Slurm job id, Ray submission id; local and ssh
 * jobs keep a small job directory with pid, output and exit status).
 *
 * Modules here never print: output of the work itself is streamed to the
 * caller's on_line callback; what the backend is doing (the argv it
 * runs) is reported through on_event so the command can echo it.
 *
 * Types live in src/backend/<type>.c; the registry (src/backend/backend.c)
 * is a table of their ops, and src/backend/backend_impl.h holds what the
 * types share (config lookups, echo-and-run, the poll loop of `wait`).
 */
#ifndef GDNCTL_BACKEND_H
#define GDNCTL_BACKEND_H

#include "gdnctl/compat.h"
#include "gdnctl/proc.h"
#include "gdnctl/strvec.h"

struct gdn_config;
struct gdn_err;

enum gdn_job_state {
	GDN_JOB_UNKNOWN = 0,
	GDN_JOB_PENDING,
	GDN_JOB_RUNNING,
	GDN_JOB_SUCCEEDED,
	GDN_JOB_FAILED,	 /* includes Slurm TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED... */
	GDN_JOB_STOPPED, /* cancelled / stopped on request: not success */
	GDN_JOB_TIMEOUT, /* gdnctl's own deadline passed */
};

struct gdn_job_status {
	enum gdn_job_state state;
	bool final;
	int exit_code;	   /* -1 when unknown; 128+N for "killed by signal N" */
	char native[64];   /* the backend's own state name: "OUT_OF_MEMORY", "STOPPED" */
	char message[256]; /* one line from the backend, may be empty */
	char job_id[128];  /* run(): the job it submitted ("" when none, e.g. local) */
};
#define GDN_JOB_STATUS_INIT     \
	{                       \
		.exit_code = -1 \
	}

/* Progress and echo events a backend reports while it works. */
enum gdn_backend_event {
	GDN_EV_SPAWN,	/* text: the shell-quoted argv about to run (secrets masked) */
	GDN_EV_WAITING, /* text: "waiting for job 12 on hpc (RUNNING) for 1m30s" */
	GDN_EV_INFO,	/* text: anything else worth a line */
	GDN_EV_POLL,	/* text: like SPAWN, for a status poll repeated while waiting
			   (gdn_backend_echo reports the first round only) */
};
typedef void (*gdn_backend_event_fn)(enum gdn_backend_event ev, const char *text, void *payload);

struct gdn_run_spec {
	/* Exactly one of argv (run as given) or shell (run with `bash -lc SHELL`). */
	const char *const *argv;
	const char *shell;
	const char *const *env; /* "K=V" for the work's environment, in order */
	const char *name;	/* job name (Slurm -J, Ray submission-id prefix), or NULL */
	long timeout_ms;	/* 0: none; on expiry the work is stopped and state is TIMEOUT */
	bool dry_run;		/* report the argv(s) through GDN_EV_SPAWN, run nothing */
	gdn_line_fn on_line;	/* the work's output, per line */
	void *payload;
	/* every tick_ms (> 0) while the work runs, where the backend can (local, job dir) */
	void (*on_tick)(int64_t elapsed_ms, int64_t idle_ms, void *payload);
	int tick_ms;
};

struct gdn_wait_spec {
	long timeout_ms;  /* 0: forever */
	long poll_ms;	  /* 0: the backend's default */
	long progress_ms; /* GDN_EV_WAITING at most this often while the state stays the
			     same (0: 60 s); a new state is reported at once */
	bool show_logs;	  /* stream the job's output while waiting */
	long tail;	  /* lines of output to show at the end (0: none) */
	gdn_line_fn on_line;
	void *payload;
};

struct gdn_backend;
struct gdn_copy_where;

/*
 * Return values of the ops: 0, or a negative gdn_errcode with err filled:
 * GDN_EUSAGE (a bad job id or argument), GDN_ECONFIG, GDN_EBACKEND (a
 * program misbehaved), GDN_ENOTFOUND (no such job), GDN_ETIMEOUT (wait:
 * its timeout passed; *st holds the last state), GDN_EINTR (SIGINT or
 * SIGTERM; gdn_proc_interrupted() names it). A job that ran and failed is
 * 0 with st->state GDN_JOB_FAILED. With b->dry_run (or spec->dry_run) the
 * ops report the argv they would run through GDN_EV_SPAWN/GDN_EV_POLL,
 * run nothing and leave st->state GDN_JOB_UNKNOWN.
 */
struct gdn_backend_ops {
	const char *type;
	/* A backend of this type named like the type works without configuration ("local"). */
	bool builtin;
	/* Read and check the type's configuration (backends.<name>.*); set b->priv. */
	int (*open)(struct gdn_backend *b, struct gdn_err *err);
	/* Run and wait, streaming output; *st gets the final state and exit code. */
	int (*run)(struct gdn_backend *b, const struct gdn_run_spec *spec,
		   struct gdn_job_status *st, struct gdn_err *err);
	/* Submit without waiting; *job_id (caller frees) names the job for later calls. */
	int (*submit)(struct gdn_backend *b, const struct gdn_run_spec *spec, char **job_id,
		      struct gdn_err *err);
	int (*status)(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
		      struct gdn_err *err);
	int (*wait)(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		    struct gdn_job_status *st, struct gdn_err *err);
	int (*logs)(struct gdn_backend *b, const char *job_id, long tail, gdn_line_fn on_line,
		    void *payload, struct gdn_err *err);
	int (*stop)(struct gdn_backend *b, const char *job_id, struct gdn_err *err);
	/* Hold an allocation (dev TPU) until release; NULL for backends without one. */
	int (*hold)(struct gdn_backend *b, struct gdn_err *err);
	int (*release)(struct gdn_backend *b, struct gdn_err *err);
	/*
	 * Where the files `path` names can be read (backend_impl.h); NULL
	 * for a type that cannot copy files back (gdn_backend_copy_back).
	 */
	int (*copy_source)(struct gdn_backend *b, const char *path, struct gdn_copy_where *w,
			   struct gdn_err *err);
	void (*free_priv)(struct gdn_backend *b);
};

struct gdn_backend {
	const struct gdn_backend_ops *ops;
	char *name;			 /* the configured name */
	const struct gdn_config *config; /* borrowed */
	gdn_backend_event_fn on_event;
	void *event_payload;
	void *priv; /* the type's own state */
	/* Set by the caller after gdn_backend_open: */
	const char *repo_root; /* borrowed: sync source and default workdir, or NULL (cwd) */
	/*
	 * Borrowed, or NULL: a second tree run on this backend (--perf-ab's
	 * champion, from its own repo_root) kept apart from the first: ssh
	 * with `sync: rsync` copies it to, runs it in and copies back from
	 * WORKDIR + copy_suffix ("~" and "/" get "/" + copy_suffix).
	 */
	const char *copy_suffix;
	bool dry_run; /* every op only reports what it would run */
	/* Private to the poll loop: GDN_EV_POLL is reported in the first round only. */
	bool quiet_polls;
	/* Private: the options of the spec it was opened from (owned), or NULL. */
	struct gdn_config *spec_config;
};

/*
 * Open the backend `name` from configuration (or a built-in name; a
 * section named like a built-in type may leave out `type`). Returns 0,
 * GDN_ENOTFOUND for an unknown name (message lists the known ones),
 * GDN_EUSAGE for a name that cannot be one (only letters, digits, '_'
 * and '-', not starting with '-'), or GDN_ECONFIG for a bad definition
 * (the message names file:line:col).
 */
int gdn_backend_open(const struct gdn_config *cfg, const char *name, struct gdn_backend **out,
		     struct gdn_err *err);

/* One option of a spec: backends.<name>.<key> = value (as text, checked like configuration). */
struct gdn_backend_option {
	const char *key;
	const char *value;  /* NULL: left out */
	const char *origin; /* for messages; NULL: the spec's */
};

/*
 * A backend described by the caller rather than by configuration: the
 * loop's Ray validation targets, a dev TPU built from flags.
 */
struct gdn_backend_spec {
	const char *name; /* a valid backend name; also selects backends.<name>.* in cfg */
	const char *type; /* one of gdn_backend_types(); NULL: name's, as gdn_backend_open */
	const struct gdn_backend_option *options;
	size_t options_nr;
	const char *origin; /* where the options come from, for messages ("--flag") */
};

/*
 * Open a backend from a spec without touching cfg: the spec's options
 * come first, then backends.<name>.* in cfg, then the schema's defaults
 * (programs.* are read from cfg as always). Returns 0, GDN_EUSAGE for a
 * bad name or a bad option value (the message is the configuration's,
 * naming the option's origin), GDN_ECONFIG for an unknown type or a bad
 * definition; with no type, also what gdn_backend_open returns for name.
 */
int gdn_backend_open_spec(const struct gdn_config *cfg, const struct gdn_backend_spec *spec,
			  struct gdn_backend **out, struct gdn_err *err);
void gdn_backend_free(struct gdn_backend *b);
/*
 * backends.<name>.<key> as this backend sees it: the spec's option, else
 * the configuration's value, as written (no schema default); NULL when
 * unset. The list form is never NULL (empty when unset). Borrowed.
 */
const char *gdn_backend_setting(const struct gdn_backend *b, const char *key);
const struct strvec *gdn_backend_setting_list(const struct gdn_backend *b, const char *key);

/*
 * Whether a run on b can come from another tree than the first (the
 * caller sets repo_root to that tree and copy_suffix for the time of the
 * run), so that two trees alternate on b without one overwriting or
 * rebuilding the other: NULL when it can (local; ssh with `sync: rsync`;
 * slurm with a relative workdir, on the shared file system; ray
 * with `cli: marin`, whose submission uploads the tree), else why not, a
 * phrase (static) for a message.
 */
const char *gdn_backend_second_tree_refusal(const struct gdn_backend *b);

/*
 * dev-tpu: the cluster of the held allocation, or NULL (none held, or not a
 * dev-tpu backend). Whether its process still runs: ops->status without a job id.
 */
const char *gdn_devtpu_cluster(const struct gdn_backend *b);

/*
 * Copying files back from where the work ran (src/backend/copyback.c):
 * `path` names a file, a directory (every file under it) or a glob
 * (`*.trace.json.gz` under `traces`; `**` crosses directories) on the backend,
 * relative to its workdir unless absolute or "~/...":
 * - ssh, dev-tpu: listed with `ssh HOST -- 'cd -- WORKDIR && find ...'`
 *   (every value quoted for the remote shell), copied with
 *   `rsync -s -t --partial --files-from=LIST -e 'ssh OPTIONS' HOST:DIR/ STAGE/`
 *   over the backend's own ssh options;
 * - slurm: read where it is on this machine (the shared file system,
 *   workdir relative to the repository); else from the login host
 *   backends.<name>.host over ssh as above (user, port, identity,
 *   ssh_options);
 * - local: read in place (workdir relative to the repository).
 * Each file goes to LOCAL_DIR/<its path under the directory or the glob's
 * fixed part> through a staging file (rsync: LOCAL_DIR/.gdnctl-part/,
 * resumed by a later call; local: FILE.part), renamed into place; its
 * modification time is kept. A file already there with the same size and
 * time is not copied again. Remote names that are not safe local paths
 * (absolute, "..", control characters) are skipped.
 */
struct gdn_copy_opts {
	const char *pattern;  /* POSIX ERE searched in the path under the source; NULL: all */
	int64_t deadline_ms;  /* absolute gdn_now_ms() time; 0: none */
	int64_t newer_than_s; /* only files modified at or after (s since the epoch); 0: any */
	bool newest_only;     /* only the most recently modified file */
};

/* One file the source holds: its path under the source, size and time. */
struct gdn_copy_file {
	char *name; /* relative, '/'-separated (owned) */
	int64_t size;
	int64_t mtime_s;
};
struct gdn_copy_files {
	struct gdn_copy_file *v;
	size_t nr, alloc;
};
void gdn_copy_files_release(struct gdn_copy_files *files);

/* Whether backend b can copy files back (ssh, dev-tpu, slurm, local; not ray). */
bool gdn_backend_can_copy(const struct gdn_backend *b);

/*
 * List what `path` selects with o's filters, sorted by name. Returns 0,
 * GDN_ENOTFOUND (no such file or directory: nothing matched is 0 and an
 * empty list), GDN_EUSAGE (a bad path or pattern; the backend cannot
 * copy), GDN_ECONFIG, GDN_EBACKEND (ssh failed: its first line),
 * GDN_ETIMEOUT (the deadline) or GDN_EINTR.
 */
int gdn_backend_copy_list(struct gdn_backend *b, const char *path, const struct gdn_copy_opts *o,
			  struct gdn_copy_files *out, struct gdn_err *err);
/*
 * Copy what `path` selects into local_dir (created). files_out (may be
 * NULL) gets the local path of each file, copied or already there, in
 * name order. Returns what gdn_backend_copy_list does, or GDN_EIO for a
 * local file that cannot be written, GDN_EBACKEND for a failed rsync.
 * With b->dry_run: echoes the commands, copies nothing.
 */
int gdn_backend_copy_back(struct gdn_backend *b, const char *path, const char *local_dir,
			  const struct gdn_copy_opts *o, struct strvec *files_out,
			  struct gdn_err *err);
/*
 * The remote listing command (pure, for the tests): list the files under
 * `base` (relative to root, which may be NULL: the login directory), at
 * most `depth` levels down (0: any), one "gdnctl-file MTIME SIZE NAME"
 * line each; a single file prints "gdnctl-one MTIME SIZE PATH"; a missing
 * base prints "gdnctl-missing".
 */
void gdn_copy_remote_list_command(struct sbuf *out, const char *root, const char *base, int depth);

/* "unknown", "pending", "running", "succeeded", "failed", "stopped", "timeout". */
const char *gdn_job_state_name(enum gdn_job_state s);
/* The types in the registry, in order (for messages and docs); NULL-terminated, static. */
const char *const *gdn_backend_types(void);

/*
 * The exit code of `gdnctl run` for a finished job: 0 succeeded; the
 * command's own code when it exited non-zero (128+N for signal N); 124
 * for gdnctl's timeout; 128+signal when gdnctl was interrupted; 1 for
 * any other failure (Slurm TIMEOUT, OUT_OF_MEMORY, CANCELLED...).
 */
int gdn_job_exit_code(const struct gdn_job_status *st);

/* ---- pure helpers (no programs run), exposed for the tests and fuzzers ---- */

/*
 * Names that reach ssh, a remote shell or a batch script. Each returns 0
 * or `code` with a one-line message "invalid WHAT 'VALUE': reason"
 * (control characters escaped, long values cut):
 * - host: letters, digits and . - _ : % [ ] only; not starting with '-'
 *   (ssh would read an option; shell metacharacters would reach
 *   ProxyCommand and friends through %h);
 * - user: letters, digits and . - _ only; not starting with '-';
 * - text: any value without control characters (newlines included) and
 *   at most 4096 bytes: paths and options that are quoted where used.
 */
int gdn_check_host(const char *value, const char *what, int code, struct gdn_err *err);
int gdn_check_user(const char *value, const char *what, int code, struct gdn_err *err);
int gdn_check_text(const char *value, const char *what, int code, struct gdn_err *err);
/* A job id of the local and ssh backends: [A-Za-z0-9_-][A-Za-z0-9._-]*, at most 100 bytes. */
int gdn_check_job_id(const char *value, int code, struct gdn_err *err);

/*
 * Append `path` for a POSIX shell: quoted, except that a leading "~/" (or
 * a lone "~") becomes "$HOME"/ so the remote home is used.
 */
void gdn_sh_add_path(struct sbuf *out, const char *path);

/*
 * backends.NAME.ssh_options as the values of `ssh -o`, appended to out:
 * "Key=value" as documented, and the forms copied from ssh command lines,
 * "-o", "Key=value" as two items, "-oKey=value" and "-o Key=value".
 * Returns NULL, or the first item that is not an -o option (another
 * flag, an empty value, a final "-o"; borrowed) and out is incomplete.
 */
const char *gdn_ssh_options(const struct strvec *items, struct strvec *out);

/*
 * The remote command string of the ssh backend:
 *   [cd -- DIR && ][env K=V... ]bash -s -- ARG...
 * every value quoted for the remote shell (DIR through gdn_sh_add_path).
 * The job shim (gdn_job_shim) is fed to that bash on standard input.
 */
void gdn_ssh_remote_command(struct sbuf *out, const char *dir, const char *const *env,
			    const char *const *args);

/*
 * What the shim printed: the first line "gdnctl-job: STATUS..." (lines
 * before it, e.g. from a login script, are skipped) into *st, and where
 * the data after that line starts (*data_off; the length when none).
 * GDN_EPARSE when there is no such line.
 */
int gdn_job_parse_shim(const char *out, size_t len, struct gdn_job_status *st, size_t *data_off,
		       struct gdn_err *err);

/* ---- Slurm output parsers ---- */

struct gdn_slurm_job {
	char id[64];	  /* "12", "12_3" (array task) */
	char cluster[64]; /* "" unless sbatch said "12;cluster" */
};

/*
 * `sbatch --parsable` output (len bytes): the last line that is "ID" or
 * "ID;CLUSTER" (warnings may come before it). GDN_EPARSE for anything
 * else, and for output with a NUL byte (an id it cut is no id).
 */
int gdn_slurm_parse_sbatch(const char *out, size_t len, struct gdn_slurm_job *job,
			   struct gdn_err *err);
/* A job id given by the user: "12", "12_3", "12@cluster" (what gdnctl prints), "12;cluster". */
int gdn_slurm_parse_job_id(const char *text, struct gdn_slurm_job *job, struct gdn_err *err);
/* "12" or "12@cluster". */
void gdn_slurm_format_job_id(const struct gdn_slurm_job *job, struct sbuf *out);

/*
 * Fill st from a Slurm state name ("RUNNING", "CANCELLED by 0",
 * "CANCELLED+", "OUT_OF_MEMORY") and an ExitCode "E:S" (or NULL): final
 * states are SUCCEEDED (COMPLETED with exit 0), FAILED (with the name in
 * st->native) or STOPPED (CANCELLED); exit_code is E, or 128+S when S is
 * not 0, or -1. Returns false for a name that is not a Slurm state.
 */
bool gdn_slurm_state(const char *name, size_t len, const char *exit_code, size_t exit_len,
		     struct gdn_job_status *st);
/*
 * `squeue -h -j ID -o %T` (len bytes): 1 and st filled for a state, 0 when
 * the job is not in the queue (no output, or "Invalid job id specified"),
 * GDN_EPARSE for anything else (an error message, in err; a NUL byte).
 */
int gdn_slurm_parse_squeue(const char *out, size_t len, struct gdn_job_status *st,
			   struct gdn_err *err);
/*
 * `sacct -j ID -X -n -P -o JobID,State,ExitCode` (len bytes): 1 and st
 * filled from the last line for job `id`; 0 when there is none (accounting
 * disabled, job unknown). Lines with a NUL byte are skipped.
 */
int gdn_slurm_parse_sacct(const char *out, size_t len, const char *id, struct gdn_job_status *st);
/*
 * `scontrol show job ID` (multi-line or -o, len bytes): 1 and st filled
 * from JobState=, ExitCode= and Reason=; the StdOut= path appended to
 * stdout_path when it is non-NULL; 0 when the job is unknown ("Invalid job
 * id") or the output has a NUL byte.
 */
int gdn_slurm_parse_scontrol(const char *out, size_t len, struct gdn_job_status *st,
			     struct sbuf *stdout_path);

#endif
