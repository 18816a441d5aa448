/*
 * Traces from where remote runs leave them (issue 18), src/backend/trace_fetch.c:
 * one table of sources keyed by spelling (`gs://BUCKET/PREFIX`,
 * `wandb:ENTITY/PROJECT/RUN[@ALIAS]` or a W&B run URL,
 * `wandb-artifact:ENTITY/PROJECT/NAME:ALIAS`, `hf:ORG/REPO[/PATH]`), the
 * library entries the loop's trace source (src/loop/trace_source.c) and
 * `gdnctl trace` call, and the cache they download to.
 *
 * The table lives at the backend layer so that a source that copies back
 * through a configured backend can be one more entry beside the HTTP ones
 * of include/gdnctl/source.h. (download-trace BACKEND:PATH is dispatched
 * before it, in src/cmd/download_backend.c.)
 */
#ifndef GDNCTL_TRACE_FETCH_H
#define GDNCTL_TRACE_FETCH_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/source.h"
#include "gdnctl/strvec.h"

struct gdn_trace_fetch_opts {
	int64_t deadline_ms; /* absolute gdn_now_ms() time; 0: none */
	const char
	    *pattern; /* POSIX ERE over the source's paths; NULL: the traces download-trace keeps */
	bool include_xplane; /* also *.xplane.pb */
};

/*
 * Download what `spec` names into dest_dir (created; NULL: the cache
 * directory), with download-trace's guarantees (.part then rename,
 * verification, retries, the queue stopped at once by an interruption or
 * the deadline, tokens never shown). files_out gets the local path of
 * every file fetched or already there. Returns 0 or a negative
 * gdn_errcode with err filled (never a token in it); GDN_EUSAGE when spec
 * is no source spelling.
 */
int gdn_trace_fetch(const char *spec, const char *dest_dir, const struct gdn_trace_fetch_opts *opts,
		    struct strvec *files_out, struct gdn_err *err);

struct gdn_fetch_source {
	const char *kind;     /* "gcs" (journals, --json, the cache) */
	const char *spelling; /* "gs://BUCKET/PREFIX" (help, messages) */
	/* Whether spec is this source's spelling (o: the configuration, for backends). */
	bool (*match)(const char *spec, const struct gdn_fetch_opts *o);
	/* List, select and download spec into dest_dir; see source.h for the contract. */
	int (*fetch)(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
		     struct gdn_fetch_result *res, struct gdn_err *err);
};
/* The table, ended by an entry with kind NULL. */
extern const struct gdn_fetch_source gdn_fetch_sources[];

/* The source whose spelling spec is, or NULL (a local path). */
const struct gdn_fetch_source *gdn_fetch_source_find(const char *spec,
						     const struct gdn_fetch_opts *o);

/*
 * The cache directory of a source: $XDG_CACHE_HOME/gdnctl/traces (else
 * ~/.cache/gdnctl/traces), then <kind>/<readable part of spec>-<hash>.
 * A new string.
 */
char *gdn_trace_cache_dir(const char *spec, const char *kind);

/*
 * gdn_trace_fetch with every option (jobs, limit, dry run, W&B defaults,
 * callbacks) and the whole result: res (initialised by the caller with
 * gdn_fetch_result_init) says what each file became.
 */
int gdn_trace_fetch_ex(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
		       struct gdn_fetch_result *res, struct strvec *files_out, struct gdn_err *err);

/*
 * What `gdnctl trace` reads among fetched files: the best trace-event
 * JSON (perfetto_trace.json.gz, then *.trace.json.gz, *.trace.json; the
 * last by path, the newest profile session), else every XPlane file of the
 * newest session's directory (into xplanes; *path is the first).
 * GDN_ENOTFOUND when there is none.
 */
int gdn_trace_fetch_pick(const struct strvec *local_paths, char **path, struct strvec *xplanes,
			 struct gdn_err *err);

#endif
