/*
 * A stand-in for gdn_trace_fetch (include/gdnctl/trace_fetch.h) until the
 * download-trace sources (GCS, W&B, Hugging Face; src/hub/) are in this
 * tree: every source is "not available". Delete this file when the real
 * one is linked in; nothing else changes.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/trace_fetch.h"

int gdn_trace_fetch(const char *spec, const char *dest_dir, const struct gdn_trace_fetch_opts *opts,
		    struct strvec *files_out, struct gdn_err *err)
{
	const char *colon = strchr(spec, ':');

	(void)dest_dir;
	(void)opts;
	(void)files_out;
	return gdn_err_set(err, GDN_ENOTFOUND,
			   "source not available: fetching '%.*s:' traces is not built in yet",
			   colon ? (int)(colon - spec) : (int)strlen(spec), spec);
}
