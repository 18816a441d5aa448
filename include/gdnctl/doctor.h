/*
 * `gdnctl doctor`: checks of the environment gdnctl works in (git and the
 * repository, configuration, each backend's programs and reachability,
 * the agent and its login, tokens, disk space, a C compiler). The checks
 * run here and return a list of results; src/cmd/cmd_doctor.c prints them.
 *
 * Every external program runs through the child-process API with a
 * deadline (opts.timeout_ms), so a check never hangs. Secrets are never
 * read into a result: token checks record where a token came from
 * ("set (from HF_TOKEN)"), and every detail and fix hint also passes
 * through the secret masker (gdn_secret_mask) before it is stored.
 */
#ifndef GDNCTL_DOCTOR_H
#define GDNCTL_DOCTOR_H

#include "gdnctl/compat.h"
#include <jansson.h>

struct sbuf;

enum gdn_doctor_status {
	GDN_DOCTOR_OK = 0,
	GDN_DOCTOR_WARN, /* works, but something is missing or risky */
	GDN_DOCTOR_FAIL, /* will not work as configured */
	GDN_DOCTOR_SKIP, /* not checked (an earlier check failed, nothing to check) */
};

struct gdn_doctor_result {
	char *name; /* "backend box: reachable" */
	enum gdn_doctor_status status;
	char *detail; /* one line, never NULL */
	char *fix;    /* one line, or NULL (always set for WARN and FAIL) */
};

struct gdn_doctor_report {
	struct gdn_doctor_result *v;
	size_t nr, alloc;
};
#define GDN_DOCTOR_REPORT_INIT \
	{                      \
		NULL, 0, 0     \
	}

struct gdn_doctor_opts {
	const char *cwd;		  /* where gdnctl runs (NULL: the current directory) */
	const char *const *cfg_overrides; /* -c KEY=VALUE, NULL-terminated, or NULL */
	const char *const *backends;	  /* names to check; NULL or empty: configured + local */
	const char *agent;		  /* a driver (gdn_agent_names()); NULL: the loop default */
	const char *agent_bin;		  /* explicit agent binary, or NULL */
	const char *agent_cmd;		  /* the command driver's command line, or NULL */
	const char *log_dir;		  /* NULL: the loop's default under the repository */
	long timeout_ms;		  /* per external check; 0: 10 s */
	unsigned long long min_free;	  /* bytes: less free space is a warning; 0: 1 GiB */
	bool skip_agent;		  /* leave the agent checks out (SKIP) */
};

/* Run every check; results are appended to r in order. */
void gdn_doctor_run(const struct gdn_doctor_opts *o, struct gdn_doctor_report *r);

/*
 * Append a result. detail is a printf format; detail and fix pass through
 * gdn_secret_mask(); a newline ends them (the rest is dropped).
 */
void gdn_doctor_add(struct gdn_doctor_report *r, enum gdn_doctor_status status, const char *name,
		    const char *fix, const char *fmt, ...) GDN_PRINTF(5, 6);
void gdn_doctor_report_release(struct gdn_doctor_report *r);
size_t gdn_doctor_count(const struct gdn_doctor_report *r, enum gdn_doctor_status s);
/* "ok", "warn", "FAIL", "skip". */
const char *gdn_doctor_status_name(enum gdn_doctor_status s);
/* New reference: {"schema": "gdnctl.doctor.v1", "ok": bool, "counts": {...}, "checks": [...]}. */
json_t *gdn_doctor_report_json(const struct gdn_doctor_report *r);

/* ---- pure helpers and single checks, exposed for the tests ---- */

/* WARN when avail is below min_free (0: 1 GiB), else OK. */
enum gdn_doctor_status gdn_doctor_disk_status(unsigned long long avail,
					      unsigned long long min_free);
/*
 * A size: a number with an optional unit B, K, M, G, T (KiB, MiB... also
 * accepted, 1024-based, any case); a bare number is bytes. 0 or GDN_EUSAGE.
 */
int gdn_doctor_parse_size(const char *s, unsigned long long *out);
/* "512 B", "3.2 KiB", "1.5 GiB" (1024-based, one decimal above bytes). */
void gdn_doctor_format_bytes(unsigned long long n, struct sbuf *out);
/* Free space where `path` (or its nearest existing parent) lives: result "disk: NAME". */
void gdn_doctor_check_disk(struct gdn_doctor_report *r, const char *name, const char *path,
			   unsigned long long min_free);
/*
 * A program in PATH (or a path with '/', which must be executable).
 * Returns a new string with its full path, or NULL.
 */
char *gdn_doctor_find_program(const char *name);
/* The Hugging Face token and the W&B key: "token: hf", "token: wandb" (presence only). */
void gdn_doctor_check_tokens(struct gdn_doctor_report *r);

#endif
