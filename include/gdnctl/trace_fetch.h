/*
 * Traces from where remote runs leave them, src/backend/trace_fetch.c:
 * one table of sources keyed by spelling, the library entry the loop and
 * `gdnctl trace` call, and the cache they download to.
 *
 * The table lives at the backend layer so that the BACKEND:PATH source
 * (copy back through a configured backend) is one more entry beside the
 * HTTP ones of include/gdnctl/source.h.
 */
#ifndef GDNCTL_TRACE_FETCH_H
#define GDNCTL_TRACE_FETCH_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/source.h"
#include "gdnctl/strvec.h"

struct gdn_trace_source {
	const char *kind;     /* "gcs" (journals, --json) */
	const char *spelling; /* "gs://BUCKET/PREFIX" (help, messages) */
	/* Whether spec is this source's spelling (o: the configuration, for backends). */
	bool (*match)(const char *spec, const struct gdn_fetch_opts *o);
	/* List, select and download spec into dest_dir; see source.h for the contract. */
	int (*fetch)(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
		     struct gdn_fetch_result *res, struct gdn_err *err);
};
/* The table, ended by an entry with kind NULL. */
extern const struct gdn_trace_source gdn_trace_sources[];

/* The source whose spelling spec is, or NULL (a local path). */
const struct gdn_trace_source *gdn_trace_source_find(const char *spec,
						     const struct gdn_fetch_opts *o);

/*
 * The cache directory of a source: $XDG_CACHE_HOME/gdnctl/traces (else
 * ~/.cache/gdnctl/traces), then <kind>/<readable part of spec>-<hash>.
 * A new string.
 */
char *gdn_trace_cache_dir(const char *spec, const char *kind);

/*
 * Fetch the traces of `spec` (any spelling of the table) into dest_dir
 * (NULL: the cache directory). res (initialised by the caller with
 * gdn_fetch_result_init) says what each file became; files_out, when not
 * NULL, gets the local path of every file on disk afterwards. Returns 0 or
 * a negative gdn_errcode with one line in err; GDN_EUSAGE when spec is no
 * source spelling.
 */
int gdn_trace_fetch(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
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
