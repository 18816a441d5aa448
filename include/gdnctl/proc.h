/*
 * The one child-process API. Everything that runs a program (backends,
 * agents, post-checks, git where libgit2 cannot) goes through it.
 *
 * - argv[0] is looked up in PATH; never run through a shell (a caller
 *   that wants one passes {"bash", "-lc", CMD} explicitly).
 * - The child runs in its own process group; on a deadline or idle
 *   timeout the whole group gets SIGINT, then SIGTERM, then SIGKILL
 *   (kill_grace_ms apart) and the result is GDN_PROC_TIMEOUT (exit 124).
 * - stdout and stderr are merged into one pipe, captured into `out`
 *   (capped by out.limit) and streamed per line to on_line.
 * - stdin_text is written by the poll loop while output is read (no pipe
 *   deadlock), then closed; without it stdin is /dev/null.
 * - exec failure reaches the parent through a close-on-exec pipe and is
 *   reported as GDN_ENOTFOUND / GDN_EIO from gdn_proc_run.
 * - Every live child is in a registry; gdn_proc_kill_all() (called from
 *   the signal path) stops them all.
 * - GDNCTL_TRACE=1 logs every spawn to stderr as a shell-quoted argv with
 *   secrets masked (gdn_secret_mask()).
 */
#ifndef GDNCTL_PROC_H
#define GDNCTL_PROC_H

#include "gdnctl/compat.h"
#include "gdnctl/sbuf.h"

struct gdn_err;

/* Called for each complete output line (without its newline). Return non-zero to stop the child. */
typedef int (*gdn_line_fn)(const char *line, size_t len, void *payload);

enum gdn_proc_status {
	GDN_PROC_NOT_RUN = 0,
	GDN_PROC_EXITED,   /* code holds the exit status */
	GDN_PROC_SIGNALED, /* signo holds the signal */
	GDN_PROC_TIMEOUT,  /* runtime deadline passed; group killed */
	GDN_PROC_IDLE,     /* no output for idle_timeout_ms; group killed */
	GDN_PROC_STOPPED,  /* on_line asked to stop, or gdn_proc_kill_all(); group killed */
};

struct gdn_proc {
	const char *const *argv;
	const char *dir;        /* working directory, or NULL */
	const char *const *env; /* "K=V" sets, "K" (no '=') removes; NULL: inherit */
	const char *stdin_text; /* NULL: /dev/null */
	size_t stdin_len;       /* 0: strlen(stdin_text) */
	int timeout_ms;         /* 0: none */
	int idle_timeout_ms;    /* 0: none */
	int kill_grace_ms;      /* between SIGINT, SIGTERM, SIGKILL; 0: 5000 */
	gdn_line_fn on_line;
	void *payload;
	bool inherit_output;    /* child writes straight to our stdout/stderr (no capture) */
	bool capture;           /* keep output in `out` (capped by out.limit) */
	struct sbuf out;

	/* results */
	pid_t pid;
	enum gdn_proc_status status_kind;
	int code;  /* exit status when EXITED */
	int signo; /* signal when SIGNALED */
	int64_t duration_ms;
	bool out_truncated;
};
#define GDN_PROC_INIT { .out = SBUF_INIT }

/*
 * Run to completion. Returns 0 when the child was started and reaped
 * (whatever its exit status: read status_kind/code/signo), or a negative
 * gdn_errcode when it could not be started (missing program: GDN_ENOTFOUND).
 */
int gdn_proc_run(struct gdn_proc *p, struct gdn_err *err);

/* The exit code gdnctl should use for a finished child: code, 128+signo, or 124. */
int gdn_proc_exit_code(const struct gdn_proc *p);

/* Free captured output. */
void gdn_proc_release(struct gdn_proc *p);

/* Stop every registered live child group (SIGINT, SIGTERM, SIGKILL). Safe from the main loop. */
void gdn_proc_kill_all(void);

/*
 * Install SIGINT/SIGTERM handlers: the first signal stops all children,
 * gdn_proc_interrupted() then returns the signal number, and running
 * gdn_proc_run calls return with status GDN_PROC_STOPPED.
 */
void gdn_proc_install_signal_handlers(void);
int gdn_proc_interrupted(void);

/* Secret masking for echoed commands and traces. */
/* Whether an environment variable name looks secret (*TOKEN*, *KEY*, *SECRET*, *PASSWORD*, or registered). */
bool gdn_secret_name(const char *name, size_t len);
/* Register an extra secret variable name, or a literal secret value to mask anywhere. */
void gdn_secret_add_name(const char *name);
void gdn_secret_add_value(const char *value);
/* Append argv as a shell-quoted command line with secret values masked as "***". */
void gdn_argv_format(struct sbuf *out, const char *const *argv);
/* Replace every registered secret value in sb with "***". */
void gdn_secret_mask(struct sbuf *sb);

#endif
