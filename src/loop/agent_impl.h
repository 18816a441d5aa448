/*
 * Private to the agent drivers (src/loop/agent*.c, filter.c) and their
 * tests: the driver table, the pieces each driver is made of, and the
 * pure parsers (probe output, help text, stream-json, word splitting,
 * output filter) so that they can be unit-tested and fuzzed alone.
 */
#ifndef GDNCTL_LOOP_AGENT_IMPL_H
#define GDNCTL_LOOP_AGENT_IMPL_H

#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

struct gdn_err;
struct agent_run;

#define AGENT_PROBE_TIMEOUT_MS 20000
#define AGENT_MESSAGE_MAX      (4 * 1024 * 1024)

/*
 * A driver: one file (agent_<name>.c) defines one of these, and one row
 * in agent_drivers.c lists it. It owns everything about its agent: what
 * it declares (info: defaults, install and login hints, doctor checks),
 * how it opens and builds its argv, and its per-run state.
 */
struct agent_driver {
	struct gdn_agent_info info;
	/* Resolve the binary, run probes; a->bin is set on success. */
	int (*open)(struct gdn_agent *a, struct strvec *warnings, struct gdn_err *err);
	void (*argv)(const struct gdn_agent *a, const struct gdn_agent_request *req,
		     struct strvec *argv);
	/*
	 * The driver's own state for one run (r->state), or NULL: create is
	 * called before the child starts (NULL: no state), release after the
	 * run whatever happened.
	 */
	void *(*run_create)(const struct gdn_agent *a);
	void (*run_release)(void *state);
	/* One line of the child's output (already in the transcript). Non-zero stops the child. */
	int (*line)(struct agent_run *r, const char *line, size_t len);
	/* Judge the finished run: set res->ok, res->reason, res->last_message. */
	void (*finish)(struct agent_run *r, struct gdn_agent_result *res);
};

extern const struct agent_driver agent_codex_driver;
extern const struct agent_driver agent_claude_driver;
extern const struct agent_driver agent_command_driver;

/* The table (agent_drivers.c), in the order of the --agent choices; NULL-terminated. */
extern const struct agent_driver *const agent_drivers[];

struct gdn_agent {
	const struct agent_driver *drv;
	char *bin; /* resolved program */
	char *command;
	char *model;
	char *effort;
	char *profile;
	bool search;	/* requested */
	bool search_ok; /* requested and supported */
	bool ephemeral;
	bool show_file_updates;
	long timeout_ms, idle_timeout_ms, kill_grace_ms, probe_timeout_ms;
	struct strvec env;
	char *efforts;	     /* comma-separated supported values, or NULL */
	struct strvec words; /* "command": the split command line */
};

/* ---- output filter (filter.c) ---- */

enum agent_filter_state {
	FILTER_NORMAL = 0,
	FILTER_BLOCK, /* after a file-update header: between files and hunks */
	FILTER_HUNK,  /* inside a hunk whose line counts are known */
	FILTER_LOOSE, /* inside a hunk without counts: +/-/space lines */
	FILTER_RAW,   /* content of an added/deleted file: until codex's next section */
};

struct agent_filter {
	enum agent_filter_state state;
	long old_left, new_left; /* FILTER_HUNK */
	bool show_all;		 /* show_file_updates: never hide */
	struct sbuf scratch;
};
#define AGENT_FILTER_INIT            \
	{                            \
		.scratch = SBUF_INIT \
	}
void agent_filter_release(struct agent_filter *f);
/* Whether to show this line (no newline) to the user; advances the state. */
bool agent_filter_show(struct agent_filter *f, const char *line, size_t len);

/* ---- codex probes (agent_codex.c) ---- */

/*
 * Parse the reasoning-effort probe output ("unknown variant `X`, expected
 * one of `a`, `b` ... in `model_reasoning_effort`"). Returns true and
 * pushes the values when found; false when the text says nothing usable.
 */
bool agent_codex_parse_efforts(const char *text, size_t len, struct strvec *values);
/* Whether `codex exec --help` output advertises --search as a whole word. */
bool agent_codex_help_has_search(const char *text, size_t len);
/* JSON string quoting as the original's json.dumps (for -c key="value"). */
void agent_json_quote(struct sbuf *out, const char *s);

/*
 * codex exec --json: one JSON event per line (thread.started, turn.*,
 * item.*, error; older versions: {"msg": {"type": ...}} envelopes).
 * turn.completed's usage is the thread's running total (codex-rs exec
 * usage_from_last_total), so each one replaces the last; so does an
 * older token_count event's info.total_token_usage, while a token_count
 * with only per-request figures (info.last_token_usage, or flat fields)
 * adds up. input_tokens include the cached part, output_tokens the
 * reasoning part (the Responses API's convention).
 */
struct agent_codex_stream {
	int64_t input_tokens, cached_input_tokens, output_tokens, reasoning_output_tokens; /* -1 */
	long turns_completed, turns_failed;
	char thread_id[80];
	char error[200];    /* the last turn.failed or error event's message */
	char last_exec[64]; /* id of the command_execution item last shown as started */
	long events;
};
#define AGENT_CODEX_STREAM_INIT                     \
	{                                           \
		-1, -1, -1, -1, 0, 0, "", "", "", 0 \
	}
/*
 * Feed one output line. A JSON object is an event: the state is updated,
 * what to show the user (a rendering, like codex's plain output) pushed
 * onto `show`, and true returned. Anything else returns false untouched
 * (the caller shows it as plain text).
 */
bool agent_codex_feed(struct agent_codex_stream *st, const char *line, size_t len,
		      struct strvec *show);

/* ---- claude stream-json (agent_claude.c) ---- */

struct agent_claude_stream {
	bool have_result;
	bool result_success; /* subtype "success" and is_error false */
	bool is_error;
	char subtype[64];
	char *result; /* owned: the last result event's "result" text */
	long num_turns;
	double cost_usd;
	int64_t input_tokens, output_tokens; /* the result's usage (-1: none) */
	int64_t duration_ms;
	bool rate_limited;   /* a rate_limit_event with status "rejected" */
	char rate_info[160]; /* "five_hour, resets at 1771390800" */
	char session_id[80];
	long malformed; /* lines that were not JSON objects */
	long events;
};
#define AGENT_CLAUDE_STREAM_INIT \
	{                        \
		0                \
	}
void agent_claude_stream_release(struct agent_claude_stream *st);
/*
 * Feed one output line: update the state and push what should be shown
 * to the user (rendered text; non-JSON lines verbatim) onto `show`.
 */
void agent_claude_feed(struct agent_claude_stream *st, const char *line, size_t len,
		       bool show_file_updates, struct strvec *show);

/* ---- command driver (agent_command.c) ---- */

/*
 * Split a command line into words like a POSIX shell would, without
 * running one: blanks separate words; '...' is literal; "..." keeps
 * blanks and honours \" \\ \$ \` and backslash-newline; a backslash
 * outside quotes quotes the next character. No expansion of any kind.
 * GDN_EUSAGE for unbalanced quotes or a trailing backslash.
 */
int agent_split_words(const char *s, struct strvec *words, struct gdn_err *err);
/* Replace {prompt_file}, {workdir}, {last_message_file} in `word` (NULL values: ""). */
void agent_subst_word(struct sbuf *out, const char *word, const struct gdn_agent_request *req);

/* ---- shared helpers (agent_util.c), for the drivers and agent.c ---- */

/*
 * Resolve a program: with a '/', it must exist and be executable; else
 * the first executable PATH entry. Returns an owned path or NULL.
 */
char *agent_find_program(const char *name);
/* Read a file the agent wrote (capped); NULL when missing or empty. */
char *agent_read_message(const char *path);
/*
 * A new environment entry "GDNCTL_AGENT_RUN=<unique>" that marks one run's
 * processes (gdn_proc_stop_leftovers() finds them by it). Owned.
 */
char *agent_new_mark(void);
/* Fill res->reason from how the process ended (nothing when it exited 0). */
void agent_reason_from_status(const struct gdn_agent *a, struct gdn_agent_result *res);
/* Per-run context given to the driver's line/finish hooks. */
struct agent_run {
	struct gdn_agent *a;
	const struct gdn_agent_request *req;
	int transcript_fd;
	struct agent_filter filter;   /* for the drivers that filter their output */
	void *state;		      /* the driver's own (run_create), or NULL */
	struct gdn_agent_usage usage; /* what the run reported so far (-1: nothing) */
	bool tokens_next;	      /* codex: the last line was "tokens used" */
	bool consumer_stopped;
};
/* Pass one line to the request's on_line (if any); non-zero stops the child. */
int agent_emit(struct agent_run *r, const char *line, size_t len);

#endif
