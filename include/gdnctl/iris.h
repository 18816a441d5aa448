/*
 * Marin's Iris job CLI (lib/iris in marin-community/marin) as parsed facts:
 * what `iris job run --no-wait`, `job describe`, `job list --json`,
 * `job logs` and `job --help` print (src/backend/iris_parse.c). Pure
 * functions: nothing here runs a program, prints or exits. The backend
 * that drives the CLI is src/backend/iris.c (type `iris`).
 *
 * The facts (strings, states, exit codes, the two CLI generations) are
 * those of ../shared/reference/iris-cli.md.
 */
#ifndef GDNCTL_IRIS_H
#define GDNCTL_IRIS_H

#include "gdnctl/compat.h"
#include "gdnctl/backend.h"

struct gdn_err;

#define GDN_IRIS_ID_MAX	  127 /* fits gdn_job_status.job_id */
#define GDN_IRIS_CLUSTER  "marin"
#define GDN_IRIS_JOB_NAME "gdnctl"
#define GDN_IRIS_LOG_MAX  1000 /* `job logs` prints at most this many lines by default */
#define GDN_IRIS_DIR	  "lib/iris"

/*
 * The job id a submission printed (`iris job run --no-wait`): the last
 * line of the output that is a whole job id `/<user>/<name>` (the newer
 * CLIs print it alone on stdout; the log lines on stderr start with a
 * level and a time, so they never are one), else the first `Job
 * submitted: <id>` log line (the oldest CLI prints no id on stdout).
 * Output that holds a NUL byte is read only up to it. *id (caller frees)
 * on success; GDN_EPARSE with a message quoting the output's first line
 * when neither is there (empty output: "no output").
 */
int gdn_iris_parse_submit(const char *out, size_t len, char **id, struct gdn_err *err);

/* Whether text[0..len) is a job id /<user>/<name>[/...] gdnctl accepts (safe characters only). */
bool gdn_iris_valid_id(const char *text, size_t len);

/*
 * An Iris job state in any of its spellings: "running" (text output),
 * "JOB_STATE_RUNNING" (list --json), "RUNNING", or its number ("3").
 * Fills st: pending/building -> PENDING, running -> RUNNING, succeeded ->
 * SUCCEEDED, failed -> FAILED (the command's failure), killed,
 * worker_failed and unschedulable -> STOPPED (infrastructure, never the
 * command's failure; st->message says so); st->native gets the upper-case
 * name ("WORKER_FAILED"), exit_code is left alone. False for anything else.
 */
bool gdn_iris_state(const char *name, size_t len, struct gdn_job_status *st);

/* Whether st (from gdn_iris_state) is an infrastructure outcome: KILLED, WORKER_FAILED... */
bool gdn_iris_infrastructure(const struct gdn_job_status *st);

/*
 * `iris job describe ID` (newer CLI): the line
 *   State: {state}  exit={code}  failures={n}  preemptions={n}
 * fills st (exit "-" or absent: -1) and *preemptions (may be NULL).
 * GDN_EPARSE when there is no such line or the state is unknown.
 */
int gdn_iris_parse_describe(const char *out, size_t len, struct gdn_job_status *st,
			    long *preemptions, struct gdn_err *err);

/*
 * `iris job list --json --prefix ID` (older CLI): the element of the JSON
 * array whose "job_id" is id: its "state" (enum name or number),
 * "exit_code" (number or string; absent: 0 once terminal, as protobuf
 * leaves defaults out), "error" (st->message) and "preemption_count"
 * (*preemptions, may be NULL). Text before the array (a warning) is
 * skipped. GDN_ENOTFOUND when the job is not listed, GDN_EPARSE otherwise.
 */
int gdn_iris_parse_list_json(const char *out, size_t len, const char *id, struct gdn_job_status *st,
			     long *preemptions, struct gdn_err *err);

/* What `iris job --help` lists: the job subcommands gdnctl uses. */
struct gdn_iris_cli {
	bool run, cancel, stop, describe, list, logs, wait, summary;
};
/* The CLI generations gdnctl drives. */
enum gdn_iris_generation {
	GDN_IRIS_GEN_UNKNOWN = 0,
	GDN_IRIS_GEN_CANCEL, /* job cancel + job describe (the newest CLI) */
	GDN_IRIS_GEN_STOP,   /* job stop + job list --json (the older CLI) */
};
/*
 * Read the "Commands:" section of Click's help text into *cli and return
 * the generation. For an unknown CLI, err says what was missing
 * ("no 'job run'", "neither 'job cancel' with 'job describe' nor 'job
 * stop' with 'job list'") and the result is GDN_IRIS_GEN_UNKNOWN.
 */
enum gdn_iris_generation gdn_iris_parse_help(const char *out, size_t len, struct gdn_iris_cli *cli,
					     struct gdn_err *err);
/* "cancel/describe" or "stop/list --json" (for doctor and messages). */
const char *gdn_iris_generation_name(enum gdn_iris_generation g);

/*
 * One line of `iris job logs`: the command's own text after the
 * `[HH:MM:SS UTC] task=/u/j/0 attempt=0 | ` prefix (also without
 * `attempt=`, or with `worker=W`), so the lines read like the command's
 * output. *data and *data_len point into line; false (and the whole line)
 * when the line has no such prefix.
 */
bool gdn_iris_log_data(const char *line, size_t len, const char **data, size_t *data_len);

/*
 * A fresh job name for a submission: lower case (Iris stores names
 * lowercased), `PREFIX-YYYYmmdd-HHMMSS-xxxxxx`, PREFIX from name (NULL:
 * "gdnctl") with every character outside [a-z0-9_.-] made '-'. Caller frees.
 */
char *gdn_iris_job_name(const char *name);

/* ---- the backend (src/backend/iris.c) ---- */

/*
 * Ask the iris backend b's CLI for its job commands (`job --help`, once
 * per backend; timeout_ms 0: 10 min): 0 and *gen, or GDN_EBACKEND naming what was missing or
 * why the CLI did not answer; GDN_EUSAGE when b is not an iris backend.
 */
int gdn_iris_backend_probe(struct gdn_backend *b, long timeout_ms, enum gdn_iris_generation *gen,
			   struct gdn_err *err);
/* The CLI's command line as it runs ("uv run iris", "/usr/bin/iris"): a new string. */
char *gdn_iris_backend_program(const struct gdn_backend *b);
/* The cluster b passes as --cluster (NULL: none, or not an iris backend). Borrowed. */
const char *gdn_iris_backend_cluster(const struct gdn_backend *b);

#endif
