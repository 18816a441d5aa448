/*
 * Agent drivers: the coding agent the loop runs once per iteration
 * (Codex CLI, Claude Code, or any command). A driver table, like the
 * backends: each driver builds its argv, feeds the prompt, filters and
 * judges the output. Everything runs through the child-process API
 * (proc.h): the agent's whole process group is killed on a runtime or
 * idle timeout, and the idle timer is reset only by real output.
 */
#ifndef GDNCTL_AGENT_H
#define GDNCTL_AGENT_H

#include "gdnctl/compat.h"
#include "gdnctl/proc.h"
#include "gdnctl/strvec.h"

struct gdn_err;

/* The driver `gdnctl loop` and `gdnctl doctor` use when none is named. */
#define GDN_AGENT_DEFAULT "codex"

/*
 * What a driver declares about itself, for the commands (choices,
 * defaults) and for `gdnctl doctor` (its install and login hints and
 * checks). One per driver, defined in the driver's own file; static.
 */
struct gdn_agent_info {
	const char *name; /* the --agent value */
	const char *help; /* one line */
	/* gdnctl loop: -m and --reasoning-effort when not given (NULL: the CLI's own) */
	const char *default_model, *default_effort;
	bool needs_command;	  /* runs --agent-cmd: nothing to run without one */
	const char *command_hint; /* doctor: how to give that command line */
	const char *install_hint; /* doctor: how to get the binary when it is missing */
	bool version_check;	  /* doctor: `BIN --version` answers */
	/*
	 * doctor: where a login lives. NULL login_vars: no login to check
	 * (login_skip says why). Else the first variable set, or the file
	 * login_file in $login_dir_var (when set) or login_home_file under
	 * $HOME (a "login_file_kind PATH"), else a warning with login_hint.
	 */
	const char *const *login_vars;
	const char *login_skip;
	const char *login_dir_var, *login_file, *login_home_file, *login_file_kind;
	const char *login_hint;
};

/* The driver named `name` (borrowed, static), or NULL. */
const struct gdn_agent_info *gdn_agent_find(const char *name);
/* The drivers' names in table order: NULL-terminated, static (option choices). */
const char *const *gdn_agent_names(void);

/* How the agent is configured for a whole loop (from flags and config). */
struct gdn_agent_opts {
	const char *driver;  /* a driver's name (gdn_agent_names()); NULL: GDN_AGENT_DEFAULT */
	const char *bin;     /* --codex-bin / claude binary / NULL: GDNCTL_CODEX, PATH */
	const char *command; /* "command" driver: 'prog arg {prompt_file}' */
	const char *model;   /* -m / --model, or NULL */
	const char
	    *reasoning_effort;	/* codex -c model_reasoning_effort / claude --effort, or NULL */
	const char *profile;	/* codex -p, or NULL */
	bool search;		/* codex --search when supported */
	bool ephemeral;		/* codex --ephemeral */
	bool show_file_updates; /* keep file-update / diff blocks in the shown output */
	long timeout_ms;	/* runtime limit per attempt (0: none) */
	long idle_timeout_ms;	/* idle limit per attempt (0: none) */
	long kill_grace_ms;	/* between SIGINT, SIGTERM, SIGKILL */
	const char *const *env; /* extra "K=V" (or "K": remove) for the agent, or NULL */
	long probe_timeout_ms;	/* codex capability probes (0: 20000) */
};

/* One run of the agent (one attempt of one iteration). */
struct gdn_agent_request {
	const char *workdir;
	const char *prompt;	       /* the full prompt text */
	const char *prompt_file;       /* where the prompt was saved (for {prompt_file}) */
	const char *last_message_file; /* where the agent's final message goes (codex -o) */
	const char *transcript_file;   /* the agent's full, unfiltered output is appended here */
	gdn_line_fn on_line;	       /* filtered output for the terminal, or NULL */
	void *payload;
	/* Called when the agent's process group exists (for the journal), or NULL. */
	void (*on_spawn)(pid_t pgid, void *spawn_payload);
	void *spawn_payload;
	/* Called every tick_ms (> 0) while the agent runs (gdn_proc.on_tick), or NULL. */
	void (*on_tick)(int64_t elapsed_ms, int64_t idle_ms, void *spawn_payload);
	int tick_ms;
	/*
	 * The attempt's mark, "GDNCTL_AGENT_RUN=<unique>" (the caller journals
	 * it, so that a resume after a crash finds what the agent left), or
	 * NULL: one is made here.
	 */
	const char *mark;
};

/*
 * Tokens and cost one agent run reported in its own event stream (codex
 * --json turn.completed usage, claude's result usage and total_cost_usd,
 * the command agent's "gdnctl-usage:" lines). -1: not reported.
 */
struct gdn_agent_usage {
	int64_t input_tokens, output_tokens;
	double cost_usd;
	int64_t tokens; /* a total without the input/output split (codex's "tokens used") */
};
#define GDN_AGENT_USAGE_NONE     \
	{                        \
		-1, -1, -1.0, -1 \
	}
/* Add `b` to `a` (a field stays -1 only when both are). */
void gdn_agent_usage_add(struct gdn_agent_usage *a, const struct gdn_agent_usage *b);
/* Whether anything was reported. */
bool gdn_agent_usage_known(const struct gdn_agent_usage *u);
/*
 * Parse one "gdnctl-usage: input=N output=N cost_usd=X" line (fields in
 * any order, each optional; leading blanks allowed). Returns true and
 * fills `u` (missing fields -1) when the line is one; false otherwise.
 */
bool gdn_agent_parse_usage_line(const char *line, size_t len, struct gdn_agent_usage *u);

struct gdn_agent_result {
	enum gdn_proc_status status; /* how the process ended (TIMEOUT, IDLE, ...) */
	int exit_code;		     /* gdn_proc_exit_code(): code, 124, 128+N */
	bool ok; /* the driver's verdict: exited 0 (claude: and a result event with success) */
	char *last_message; /* owned; NULL when none */
	char reason[256];   /* why not ok, one line */
	int64_t duration_ms;
	struct gdn_agent_usage usage; /* set by gdn_agent_run (-1: not reported) */
	/*
	 * Processes the agent left running when it ended (its group's, and
	 * those that left it with setsid), stopped by gdn_agent_run; owned.
	 */
	struct gdn_proc_leftovers leftovers;
};

struct gdn_agent;

/*
 * Resolve the driver and its binary and run its capability probes once
 * (codex: reasoning-effort values, --search support). Warnings found while
 * probing are appended to `warnings` (one line each) for the caller to
 * print. A missing binary is GDN_ENOTFOUND with a clear message.
 */
int gdn_agent_open(const struct gdn_agent_opts *o, struct gdn_agent **out, struct strvec *warnings,
		   struct gdn_err *err);
/*
 * What open() resolved, for the caller to print: the binary (borrowed;
 * for "command", the program of the command line), the reasoning-effort
 * values the codex binary reported (borrowed, comma-separated; NULL when
 * unknown or not codex), and whether --search will be passed.
 */
const char *gdn_agent_bin(const struct gdn_agent *a);
const char *gdn_agent_efforts(const struct gdn_agent *a);
bool gdn_agent_search(const struct gdn_agent *a);
/* The argv the agent would run for `req` (for --dry-run and the journal). */
void gdn_agent_argv(const struct gdn_agent *a, const struct gdn_agent_request *req,
		    struct strvec *argv);
/*
 * Run one attempt, in req->workdir, with the prompt on stdin (then
 * closed). Before it starts, a stale req->last_message_file is removed
 * and a header line (driver, UTC time, the shell-quoted argv with secrets
 * masked) is appended to req->transcript_file; every output line follows
 * unfiltered, then a trailer with the exit code. req->on_line gets what
 * the user should see: codex/command output without file-update and diff
 * blocks (unless show_file_updates), claude's stream-json rendered as
 * text; a non-zero return from it stops the agent (status STOPPED).
 * res->last_message: the -o file (codex), the result text (claude; also
 * written to last_message_file), or what the command wrote there.
 * When the agent has ended (by itself or killed), whatever it left
 * running is stopped: SIGTERM, then SIGKILL after the kill grace, to the
 * rest of its process group and to every process that inherited the
 * run's mark (GDNCTL_AGENT_RUN in the environment), setsid or not; those
 * are listed in res->leftovers.
 * Returns 0 when the process ran (see res; res->reason says why not ok),
 * or a gdn_errcode (the program vanished, the transcript cannot be
 * opened); res is filled and must be released either way.
 */
int gdn_agent_run(struct gdn_agent *a, const struct gdn_agent_request *req,
		  struct gdn_agent_result *res, struct gdn_err *err);
void gdn_agent_result_release(struct gdn_agent_result *res);
void gdn_agent_free(struct gdn_agent *a);

#endif
