/*
 * The one child-process API. Everything that runs a program (backends,
 * agents, post-checks, git where libgit2 cannot) goes through it.
 *
 * - argv[0] is looked up in PATH (the child's PATH: p->env may change
 *   it); never run through a shell (a caller that wants one passes
 *   {"bash", "-lc", CMD} explicitly). A file without "#!" is run by
 *   /bin/sh, as execvp() does.
 * - The child runs in its own process group, with every signal
 *   disposition back to SIG_DFL (SIGPIPE included), an empty signal mask,
 *   stdin from stdin_text or /dev/null, and no other descriptor of ours.
 *   Being in its own group, it does not see the terminal's ^C: gdnctl
 *   forwards it (see gdn_proc_install_signal_handlers()). It cannot use
 *   the terminal interactively (reading /dev/tty stops it with SIGTTIN).
 * - On a deadline, an idle timeout, a stop request from on_line, or
 *   SIGINT/SIGTERM to gdnctl, the whole group gets SIGINT, then SIGTERM,
 *   then SIGKILL (kill_grace_ms apart). When we killed it, gdn_proc_run
 *   keeps signalling until the group is empty (kill(-pgid, 0) fails with
 *   ESRCH), so grandchildren die too; group members that became our own
 *   children (gdnctl is a subreaper) are reaped. That wait is bounded:
 *   kill_grace_ms after the SIGKILL it gives up (a process stuck in the
 *   kernel, or a zombie whose new parent does not reap it). When the
 *   child exits by itself, leftover members of its group are left alone
 *   (output they write afterwards is not read): gdn_proc_stop_leftovers()
 *   is there to stop them.
 * - stdout and stderr are merged into one pipe, captured into `out`
 *   (capped by out.limit) and streamed per line to on_line.
 * - stdin_text is written by the poll loop while output is read (no pipe
 *   deadlock), then closed; without it stdin is /dev/null.
 * - exec failure reaches the parent through a close-on-exec pipe and is
 *   reported as GDN_ENOTFOUND / GDN_EIO from gdn_proc_run.
 * - Every live child is in a registry; gdn_proc_kill_all() stops them all.
 * - GDNCTL_TRACE=1 logs every spawn to stderr as a shell-quoted argv with
 *   secrets masked (gdn_argv_format()).
 */
#ifndef GDNCTL_PROC_H
#define GDNCTL_PROC_H

#include "gdnctl/compat.h"
#include "gdnctl/sbuf.h"

struct gdn_err;

/*
 * Called for each complete output line (without its newline; line[len] is
 * NUL). A last line without newline is delivered at EOF, and a line longer
 * than GDN_PROC_LINE_MAX bytes is delivered in pieces of that size. Return
 * non-zero to stop the child (status GDN_PROC_STOPPED); on_line is not
 * called again for that run.
 */
typedef int (*gdn_line_fn)(const char *line, size_t len, void *payload);
#define GDN_PROC_LINE_MAX (1024 * 1024)

enum gdn_proc_status {
	GDN_PROC_NOT_RUN = 0,
	GDN_PROC_EXITED,   /* code holds the exit status */
	GDN_PROC_SIGNALED, /* signo holds the signal */
	GDN_PROC_TIMEOUT,  /* runtime deadline passed; group killed */
	GDN_PROC_IDLE,	   /* no output for idle_timeout_ms; group killed */
	GDN_PROC_STOPPED,  /* on_line, gdn_proc_kill_all() or SIGINT/SIGTERM; group killed */
};

struct gdn_proc {
	const char *const *argv;
	const char *dir;	/* working directory, or NULL */
	const char *const *env; /* "K=V" sets, "K" (no '=') removes; NULL: inherit */
	const char *stdin_text; /* NULL: /dev/null */
	size_t stdin_len;	/* 0: strlen(stdin_text) */
	int timeout_ms;		/* 0: none */
	int idle_timeout_ms;	/* 0: none; only output bytes reset it */
	int kill_grace_ms;	/* between SIGINT, SIGTERM, SIGKILL; 0: 5000 */
	gdn_line_fn on_line;
	void *payload;
	/* Called once the program runs (exec succeeded), with its pid = process group id. */
	void (*on_spawn)(pid_t pgid, void *payload);
	/*
	 * Called every tick_ms (> 0) while the child runs, with the time since
	 * it started and since its last output (a heartbeat), or NULL.
	 */
	void (*on_tick)(int64_t elapsed_ms, int64_t idle_ms, void *payload);
	int tick_ms;
	/*
	 * The child writes straight to our stdout/stderr: nothing is read, so
	 * capture, on_line and idle_timeout_ms cannot be used with it
	 * (gdn_proc_run rejects the combination with GDN_EUSAGE).
	 */
	bool inherit_output;
	bool capture; /* keep output in `out` (reset first; capped by out.limit) */
	/*
	 * Any SIGINT/SIGTERM gdnctl got, even before this run began, stops it
	 * (gdn_proc_start sets it: its thread may start after the signal).
	 */
	bool stop_on_any_signal;
	struct sbuf out;

	/*
	 * Results. code and signo say how the child actually ended (exit status
	 * or signal) for every status after EXITED too; status_kind says why.
	 */
	pid_t pid;
	enum gdn_proc_status status_kind;
	int code;	 /* exit status when it exited (255 if someone else reaped it) */
	int signo;	 /* signal when it was killed by one */
	int stop_signal; /* STOPPED because gdnctl got SIGINT/SIGTERM: that signal; else 0 */
	int64_t duration_ms;
	bool out_truncated;
};
#define GDN_PROC_INIT            \
	{                        \
		.out = SBUF_INIT \
	}

/*
 * Run to completion. Returns 0 when the child was started and reaped
 * (whatever its exit status: read status_kind/code/signo), or a negative
 * gdn_errcode when it could not be started, with a one-line message in
 * err: GDN_ENOTFOUND for a missing program or directory ("cannot run
 * 'prog': No such file or directory"), GDN_EUSAGE for an empty argv or
 * inherit_output with capture/on_line/idle_timeout_ms, GDN_EIO otherwise.
 * Safe to call from several threads at once.
 */
int gdn_proc_run(struct gdn_proc *p, struct gdn_err *err);

/*
 * The exit code gdnctl should use for a finished child: code (EXITED),
 * 128+signo (SIGNALED), 124 (TIMEOUT, IDLE), 128+stop_signal (STOPPED;
 * 130 when no signal was involved), 127 when it did not run.
 */
int gdn_proc_exit_code(const struct gdn_proc *p);

/* Free captured output. */
void gdn_proc_release(struct gdn_proc *p);

/*
 * Stop every registered live child group: running gdn_proc_run calls
 * (in any thread) return GDN_PROC_STOPPED, and each group gets SIGINT,
 * SIGTERM, then SIGKILL, waiting up to the largest kill_grace_ms of the
 * groups between steps (at most about three times that in all). Call it
 * from the main loop (or another thread), not from a signal handler.
 */
void gdn_proc_kill_all(void);
/* How many child groups are registered as live right now (diagnostics, tests). */
int gdn_proc_live_count(void);

/*
 * Processes we did not start (an orphan of a killed gdnctl, a git command
 * in a tree). Read from /proc (src/util/proc_scan.c); where there is none,
 * nothing is found.
 */
/*
 * When process `pid` started (field 22 of /proc/PID/stat, clock ticks
 * since boot), or -1 (gone, a zombie, no /proc). With the pid it tells one
 * process from a later one that got the same pid.
 */
long long gdn_proc_started(pid_t pid);
/* The start time a process started now would show (the same clock and unit), or -1. */
long long gdn_proc_started_now(void);
/*
 * Stop process group `pgid`, not one of ours, whose leader started at
 * `started` (gdn_proc_started): SIGINT, SIGTERM, then SIGKILL to the
 * group, grace_ms apart (at most 1 s after the SIGKILL), as
 * gdn_proc_kill_all() does, until the group is empty. Nothing when the
 * leader is not that process when called (a stranger that reused the
 * number), pgid <= 1 or started < 0. Members that outlive the leader (a
 * child that ignores SIGINT) still get the later signals; a leader with
 * another start time later ends it (the group's number was reused).
 */
void gdn_proc_stop_group(pid_t pgid, long long started, int grace_ms);
/*
 * Whether a process other than this one runs whose command name
 * (/proc/PID/comm) starts with one of `names` (NULL-terminated) and whose
 * working directory is `dir` or starts with `dir_prefix` (may be NULL).
 */
bool gdn_proc_running_in(const char *const *names, const char *dir, const char *dir_prefix);
/* One process as /proc/PID/stat shows it. */
struct gdn_proc_info {
	pid_t pid, ppid, pgid;
	long long started; /* as gdn_proc_started(), -1 when unknown */
	bool zombie;
};
typedef void (*gdn_proc_each_fn)(const struct gdn_proc_info *pi, void *payload);
/* Call fn for every process but this one (nothing without /proc). */
void gdn_proc_each(gdn_proc_each_fn fn, void *payload);
/* Whether process pid's initial environment (/proc/PID/environ) holds `entry` ("K=V") exactly. */
bool gdn_proc_env_has(pid_t pid, const char *entry);
/* Process pid's argv[0] (else its command name): a new string, or NULL when gone. */
char *gdn_proc_argv0(pid_t pid);

/*
 * What a child leaves behind (src/util/proc.c). A program that started
 * `sleep 1000 &` and exited leaves the sleep running in its process
 * group; one that ran `setsid sleep 1000 &` leaves it in a session of its
 * own, re-parented to the nearest child subreaper (gdnctl, after
 * gdn_proc_set_subreaper()) or to init.
 */
struct gdn_proc_leftover {
	pid_t pid;
	char *argv0; /* owned; "?" when it could not be read */
};
struct gdn_proc_leftovers {
	struct gdn_proc_leftover *v;
	size_t nr, alloc;
};
#define GDN_PROC_LEFTOVERS_INIT \
	{                       \
		NULL, 0, 0      \
	}
void gdn_proc_leftovers_release(struct gdn_proc_leftovers *l);
/*
 * Make gdnctl a child subreaper (Linux PR_SET_CHILD_SUBREAPER): the
 * descendants of its children whose parent died are re-parented to it,
 * not to init, so they can be found (their PPid is ours) and reaped.
 * Returns whether it is one (false where the system has no such thing).
 */
bool gdn_proc_set_subreaper(void);
/*
 * Stop what a finished child left behind: the processes still in its
 * process group `pgid` (its pid; unless a live child of ours is that
 * group again), and, when `mark` is non-NULL, every process whose
 * environment holds the entry `mark` ("K=V": put it in the child's env,
 * its descendants inherit it), wherever it went (setsid, re-parented to
 * us or to init). Each gets SIGTERM, then SIGKILL after grace_ms (0:
 * 2000), until none is left (the wait after SIGKILL is at most 1 s);
 * processes they start meanwhile are found too. Those that were signalled
 * are appended to `killed` (may be NULL). Zombies among our children that
 * no run of ours waits for (re-parented orphans) are reaped. `not_before`
 * (a gdn_proc_started_now() taken before the child was started, or -1)
 * spares reading the environment of processes older than the mark: the
 * whole scan then reads one small /proc file per process.
 */
void gdn_proc_stop_leftovers(pid_t pgid, const char *mark, long long not_before, int grace_ms,
			     struct gdn_proc_leftovers *killed);

/*
 * Install SIGINT/SIGTERM handlers (SA_RESTART; every loop here handles
 * EINTR anyway). A handler only records the signal and writes a byte to a
 * self-pipe; each gdn_proc_run running at that moment notices, stops its
 * child group and returns with status GDN_PROC_STOPPED and stop_signal
 * set. gdn_proc_interrupted() then returns the first signal number (0 if
 * none). Runs started after the signal work normally, so cleanups can still
 * run programs: callers check gdn_proc_interrupted() between steps.
 */
void gdn_proc_install_signal_handlers(void);
int gdn_proc_interrupted(void);
/*
 * Wait until fd has input (data, end of input or an error to read) or
 * gdnctl has got SIGINT/SIGTERM (ever, since the handlers were
 * installed): 1 fd is ready, 0 interrupted (gdn_proc_interrupted() says
 * by which signal), -1 poll failed (errno). Blocking reads of files,
 * pipes and terminals call it first, so that a signal ends them.
 */
int gdn_proc_wait_input(int fd);

/*
 * Secret masking for echoed commands and traces (src/util/secret.c).
 * Registrations are process-wide, thread-safe and never dropped.
 */
/*
 * Whether a variable or option name looks secret: it contains TOKEN, KEY,
 * SECRET, PASSWORD or PASSWD (any case) not followed by a letter ("HF_TOKEN",
 * "apiKey", "api-key", "AWS_SECRET_ACCESS_KEY"; not "tokenizer",
 * "max_tokens" or "StrictHostKeyChecking"), or it was registered.
 */
bool gdn_secret_name(const char *name, size_t len);
/* Register an extra secret name (matched whole, any case). */
void gdn_secret_add_name(const char *name);
/* Register a literal secret value to mask anywhere (empty values are ignored). */
void gdn_secret_add_value(const char *value);
/*
 * Append argv as a shell-quoted command line, arguments separated by one
 * space, with secrets shown as a bare "***":
 * - every registered secret value, anywhere;
 * - the VALUE of an argument NAME=VALUE, -NAME=VALUE or --NAME=VALUE whose
 *   NAME looks secret ("-e HF_TOKEN=***", "--api-key=***"), also nested
 *   ("--env=HF_TOKEN=***");
 * - the argument after an option -NAME/--NAME whose NAME looks secret
 *   ("--token ***");
 * - the same two forms inside a shell command string argument
 *   ("bash -lc 'export WANDB_API_KEY='***'; python train.py'").
 */
void gdn_argv_format(struct sbuf *out, const char *const *argv);
/* Replace every registered secret value in sb with "***". */
void gdn_secret_mask(struct sbuf *sb);

/*
 * A child that keeps running while the caller works (src/util/proc_async.c):
 * gdn_proc_run() on a thread of its own, for holds such as a dev TPU
 * allocation. Everything above applies (process group, registry, signal
 * forwarding: SIGINT/SIGTERM to gdnctl stops it too, kill_grace_ms
 * apart). on_line runs on that thread; the caller must not touch *p
 * until gdn_proc_finish() returned.
 */
struct gdn_proc_async;
/* Start p. 0 and *out; an error only when the thread cannot be started. */
int gdn_proc_start(struct gdn_proc *p, struct gdn_proc_async **out, struct gdn_err *err);
/* Wait up to wait_ms (0: just look) for the run to end; true when it has. */
bool gdn_proc_poll(struct gdn_proc_async *a, int wait_ms);
/*
 * Stop the child's group: SIGINT, then SIGTERM after int_grace_ms, then
 * SIGKILL after term_grace_ms, until the run has ended and the group is
 * empty (bounded: it gives up term_grace_ms after the SIGKILL). Nothing
 * when the run has ended and its group is gone. When gdnctl got SIGINT or
 * SIGTERM while the child ran, gdn_proc_run is stopping it already
 * (kill_grace_ms apart): then this only waits, so the child never gets a
 * second SIGINT in the middle of its own cleanup.
 */
void gdn_proc_stop(struct gdn_proc_async *a, int int_grace_ms, int term_grace_ms);
/*
 * Wait for the run to end, free a, and return what gdn_proc_run returned
 * (its error in err); p holds the results.
 */
int gdn_proc_finish(struct gdn_proc_async *a, struct gdn_err *err);

/*
 * fn(payload) in a forked child of gdnctl (the loop's workers): the child
 * shares nothing with the parent's running children (its registry starts
 * empty, its wake-up pipes are its own), gets SIGTERM when the parent
 * dies (Linux), is a child subreaper, and exits with fn's return value.
 * stdio is flushed before the fork. 0 and *pid, or an error.
 */
int gdn_proc_fork_fn(int (*fn)(void *payload), void *payload, pid_t *pid, struct gdn_err *err);
/* 1 when the forked child `pid` ended (*code: its exit code, or 128+signal), 0 while it runs. */
int gdn_proc_fork_poll(pid_t pid, int *code);
/*
 * Wait up to ms for one of the forked children pids[0..n-1] (0: none) to
 * end, or for a signal; returns at once when one has ended already. Reap
 * with gdn_proc_fork_poll. Without pidfds (Linux < 5.3), just ms.
 */
void gdn_proc_fork_wait(const pid_t *pids, size_t n, long ms);
/* Send sig to the forked child `pid`. */
void gdn_proc_fork_signal(pid_t pid, int sig);

#endif
