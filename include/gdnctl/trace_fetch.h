/*
 * Fetching a trace from where a remote run left it, by its source
 * spelling (issue 18): `gs://BUCKET/PREFIX`, `wandb:ENTITY/PROJECT/RUN[@ALIAS]`,
 * `wandb-artifact:ENTITY/PROJECT/NAME:ALIAS`, `hf:ORG/REPO[/PATH]`. The
 * loop's trace source (src/loop/trace_source.c) calls it for a GCS URI or
 * a W&B run the profile printed.
 *
 * The library entry belongs to the download-trace sources (src/hub/).
 * Until they are in this tree, src/loop/trace_fetch_stub.c answers every
 * call with GDN_ENOTFOUND "source not available": delete that file when
 * the real gdn_trace_fetch is linked in.
 */
#ifndef GDNCTL_TRACE_FETCH_H
#define GDNCTL_TRACE_FETCH_H

#include "gdnctl/compat.h"
#include "gdnctl/strvec.h"

struct gdn_err;

struct gdn_trace_fetch_opts {
	int64_t deadline_ms; /* absolute gdn_now_ms() time; 0: none */
	const char
	    *pattern; /* POSIX ERE over the source's paths; NULL: the traces download-trace keeps */
	bool include_xplane; /* also *.xplane.pb */
};

/*
 * Download what `spec` names into dest_dir (created), with download-trace's
 * guarantees (.part then rename, verification, retries, tokens never
 * shown). files_out gets the local path of every file fetched or already
 * there. Returns 0 or a negative gdn_errcode with err filled (never a
 * token in it).
 */
int gdn_trace_fetch(const char *spec, const char *dest_dir, const struct gdn_trace_fetch_opts *opts,
		    struct strvec *files_out, struct gdn_err *err);

#endif
