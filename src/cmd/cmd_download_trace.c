/*
 * `gdnctl download-trace` (alias `hf-download-trace`, the original tool's
 * name and flags): download profiler artifacts from a Hugging Face Hub
 * repository. The client lives in src/hub/; this file resolves the
 * options, token and pattern, prints the original's lines, draws a
 * progress bar on a terminal, and optionally summarises the traces.
 * See docs/gdnctl-download-trace.md.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/cmd_net.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/http.h"
#include "gdnctl/hf.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/source.h"
#include "gdnctl/strvec.h"
#include "gdnctl/trace.h"
#include "gdnctl/trace_fetch.h"
#include "gdnctl/xalloc.h"

#define JSON_SCHEMA	   "gdnctl.download_trace.v1"
#define DEFAULT_OUTPUT_DIR ".profiles/hf"
#define SUMMARY_TOP	   15

#define SOURCES_TEXT                                                                           \
	"SOURCE is one of:\n"                                                                  \
	"  hf:ORG/REPO[/PATH]      a Hugging Face Hub repository (same as --repo-id, with\n"   \
	"                          PATH as --path-prefix)\n"                                   \
	"  gs://BUCKET/PREFIX      Google Cloud Storage (JSON API; token from\n"               \
	"                          GOOGLE_OAUTH_ACCESS_TOKEN, else 'gcloud auth\n"             \
	"                          print-access-token'; STORAGE_EMULATOR_HOST is honoured)\n"  \
	"  wandb:ENTITY/PROJECT/RUN_ID[@ALIAS], or a W&B run URL\n"                            \
	"                          the run's jax_profile artifact with ALIAS (default\n"       \
	"                          latest), else its most recently updated one\n"              \
	"  wandb-artifact:ENTITY/PROJECT/NAME:ALIAS   a W&B artifact by name\n"                \
	"W&B: WANDB_API_KEY or ~/.netrc, and WANDB_BASE_URL, as 'gdnctl metrics'; the key\n"   \
	"never goes to a signed file URL on another host. Every source: .part then rename,\n"  \
	"Range resume, the source's checksum verified (HF sha256, GCS md5Hash, W&B manifest\n" \
	"md5), retries; --output-dir defaults to .profiles/KIND (hf, gcs, wandb,\n"            \
	"wandb-artifact). An interruption or --deadline stops the whole queue at once.\n"

#define USAGE_EXTRA                                                                             \
	SOURCES_TEXT                                                                            \
	"With --repo-id: lists the repository (recursive tree listing, every page), keeps the " \
	"files under\n"                                                                         \
	"--path-prefix whose path matches --pattern (POSIX extended regex, searched\n"          \
	"anywhere in the path), sorts them, keeps the first --limit, and downloads them\n"      \
	"into --output-dir/<repo path>: via <file>.part, resumed after an interruption,\n"      \
	"checked against the listing's size and LFS sha256, then renamed into place.\n"         \
	"A file already present and verified is not fetched again.\n"                           \
	"Endpoint: HF_ENDPOINT (default https://huggingface.co). Token: --token, HF_TOKEN,\n"   \
	"HUGGING_FACE_HUB_TOKEN, or the token file ($HF_HOME/token, default\n"                  \
	"~/.cache/huggingface/token); it is never printed.\n"                                   \
	"Exit status: 0 done (also when nothing matched); 1 a file failed verification,\n"      \
	"the hub refused (401, 403, 404), or a trace could not be summarised; 2 usage;\n"       \
	"5 network failure after the retries; 124 --deadline passed; 130, 143 interrupted."

static const struct opt_usage usage = {
    "gdnctl download-trace [options] SOURCE\ngdnctl download-trace --repo-id ID [options]",
    "Download profiler traces from the Hugging Face Hub, GCS or W&B artifacts.",
    USAGE_EXTRA,
};

static const struct opt_usage alias_usage = {
    "gdnctl hf-download-trace --repo-id ID [options]\ngdnctl hf-download-trace [options] SOURCE",
    "Download profiler traces from a Hugging Face Hub repository (the original\n"
    "gdnctl.py name; same as 'gdnctl download-trace').",
    USAGE_EXTRA,
};

struct dt_args {
	const char *repo_id, *revision, *path_prefix, *pattern, *output_dir, *token;
	int repo_type; /* enum gdn_hf_repo_type */
	int include_xplane, summarize, json, dry_run, wide;
	long limit, jobs;
	struct gdn_net_args net;
};

struct dt_state {
	const struct dt_args *a;
	bool bar;	/* progress bar on stderr (a terminal) */
	bool bar_shown; /* a bar line is on screen */
	int64_t last_bar;
	bool quiet; /* --json: nothing but the document on stdout */
};

static bool repo_id_ok(const char *s)
{
	int slashes = 0;

	if (!*s || *s == '/' || s[strlen(s) - 1] == '/')
		return false;
	for (const char *p = s; *p; p++) {
		if (*p == '/') {
			if (++slashes > 1 || p[1] == '/')
				return false;
		} else if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.') {
			return false;
		}
	}
	return !strstr(s, "..");
}

static void clear_bar(struct dt_state *st)
{
	if (st->bar_shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		st->bar_shown = false;
	}
}

static void on_progress(void *ctx, const struct gdn_hf_progress *p)
{
	struct dt_state *st = ctx;
	int64_t now = gdn_now_ms();
	double secs = (double)p->elapsed_ms / 1000.0;

	if (!st->bar || now - st->last_bar < 100)
		return;
	st->last_bar = now;
	fprintf(stderr, "\r\033[K[gdnctl] %zu/%zu files  %.1f/%.1f MB  %.1f MB/s", p->files_done,
		p->files_total, (double)p->bytes_done / 1e6, (double)p->bytes_total / 1e6,
		secs > 0 ? (double)p->bytes_done / 1e6 / secs : 0.0);
	if (p->files_failed)
		fprintf(stderr, "  %zu failed", p->files_failed);
	fflush(stderr);
	st->bar_shown = true;
}

static void on_file(void *ctx, const struct gdn_hf_file *f)
{
	struct dt_state *st = ctx;

	clear_bar(st);
	if (f->state == GDN_HF_FAILED && (f->result == GDN_EINTR || f->result == GDN_ETIMEOUT))
		return; /* the queue stopped: the summary line says it once */
	if (f->state == GDN_HF_FAILED)
		gdn_error("%s", f->error ? f->error : "download failed");
	else if (!st->quiet)
		gdn_say("%s -> %s", f->path, f->local_path);
}

static const char *state_name(enum gdn_hf_state s)
{
	switch (s) {
	case GDN_HF_DOWNLOADED:
		return "downloaded";
	case GDN_HF_PRESENT:
		return "present";
	case GDN_HF_FAILED:
		return "failed";
	case GDN_HF_CANCELLED:
		return "not-started";
	default:
		return "pending";
	}
}

/* Whether a file is a trace the trace engine reads. */
static bool is_trace(const char *path)
{
	static const char *const ends[] = {".trace.json.gz", ".trace.json",
					   "perfetto_trace.json.gz"};
	size_t len = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(ends); i++) {
		size_t el = strlen(ends[i]);

		if (len >= el && !strcmp(path + len - el, ends[i]))
			return true;
	}
	return false;
}

/* Summarise the traces among the files; returns the number that failed. */
/* jsummaries (borrowed) gets one object per trace, or is NULL for text output. */
static int summarize(const struct gdn_hf_files *files, bool quiet, size_t width, json_t *jsummaries)
{
	int failed = 0;

	for (size_t i = 0; i < files->nr; i++) {
		const struct gdn_hf_file *f = &files->v[i];
		struct gdn_trace_opts topts = GDN_TRACE_OPTS_INIT;
		struct gdn_trace_summary s;
		struct gdn_err err = GDN_ERR_INIT;
		struct sbuf out = SBUF_INIT;

		if ((f->state != GDN_HF_DOWNLOADED && f->state != GDN_HF_PRESENT) ||
		    !is_trace(f->path))
			continue;
		gdn_trace_summary_init(&s);
		if (gdn_trace_summarize_file(f->local_path, &topts, &s, &err)) {
			gdn_error("cannot summarise '%s': %s", f->path, err.msg);
			failed++;
		} else if (jsummaries) {
			json_t *o = json_object(); /* new, stolen by jsummaries */

			json_object_set_new(o, "path", gdn_json_string_lossy(f->path));
			json_object_set_new(o, "summary", gdn_trace_summary_json(&s, SUMMARY_TOP));
			json_array_append_new(jsummaries, o);
		} else if (!quiet) {
			gdn_say("summary of %s:", f->path);
			gdn_trace_render_table_width(&s, GDN_TRACE_BY_OP, SUMMARY_TOP, width, &out);
			fwrite(out.buf, 1, out.len, stdout);
			for (size_t w = 0; w < s.warnings.nr; w++)
				gdn_warn("%s: %s", f->path, s.warnings.v[w]);
		}
		gdn_trace_summary_release(&s);
		sbuf_release(&out);
	}
	return failed;
}

/* New reference: the files array of the document. */
static json_t *files_json(const struct gdn_hf_files *files)
{
	json_t *arr = json_array(); /* new */

	for (size_t i = 0; i < files->nr; i++) {
		const struct gdn_hf_file *f = &files->v[i];
		json_t *o = json_object(); /* new, stolen by arr */

		json_object_set_new(o, "path", gdn_json_string_lossy(f->path));
		json_object_set_new(o, "local_path",
				    f->local_path ? gdn_json_string_lossy(f->local_path)
						  : json_null());
		json_object_set_new(o, "size", json_integer((json_int_t)f->size));
		json_object_set_new(o, "lfs", json_boolean(f->lfs));
		json_object_set_new(o, "sha256", f->lfs ? json_string(f->sha256) : json_null());
		if (f->has_md5)
			json_object_set_new(o, "md5", json_string(f->md5));
		json_object_set_new(o, "state", json_string(state_name(f->state)));
		json_object_set_new(o, "resumed_bytes", json_integer((json_int_t)f->resumed));
		json_object_set_new(o, "fetched_bytes", json_integer((json_int_t)f->fetched));
		json_object_set_new(o, "attempts", json_integer(f->attempts));
		if (f->error)
			json_object_set_new(o, "error", gdn_json_string_lossy(f->error));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* The output directory as an absolute path (a new string). */
static char *absolute_dir(const char *dir, const char *cwd)
{
	struct sbuf sb = SBUF_INIT;

	if (dir[0] == '/')
		sbuf_adds(&sb, dir);
	else
		sbuf_addf(&sb, "%s/%s", cwd, dir);
	while (sb.len > 1 && sb.buf[sb.len - 1] == '/')
		sbuf_setlen(&sb, sb.len - 1);
	/* Drop "./" components, for tidy paths in messages. */
	for (char *p; (p = strstr(sb.buf, "/./"));)
		memmove(p, p + 2, strlen(p + 2) + 1);
	sbuf_setlen(&sb, strlen(sb.buf));
	if (sb.len >= 2 && !strcmp(sb.buf + sb.len - 2, "/."))
		sbuf_setlen(&sb, sb.len - 2);
	return sbuf_detach(&sb, NULL);
}

/* The checks of --repo-id and --revision, and the file pattern compiled into re. 0 or the exit
 * code (re is compiled only on 0). */
static int check_args(const struct dt_args *a, struct sbuf *pattern, regex_t *re)
{
	int rc;

	if (!repo_id_ok(a->repo_id)) {
		char *q = gdn_one_line(a->repo_id, 200);

		gdn_error("invalid --repo-id '%s': expected NAME or OWNER/NAME", q);
		free(q);
		return GDN_EXIT_USAGE;
	}
	if (!*a->revision) {
		gdn_error("--revision must not be empty");
		return GDN_EXIT_USAGE;
	}
	sbuf_adds(pattern, a->pattern ? a->pattern : GDN_HF_DEFAULT_PATTERN);
	if (a->include_xplane) {
		char *p = sbuf_detach(pattern, NULL);

		sbuf_addf(pattern, "(%s)|(%s)", p, GDN_HF_XPLANE_PATTERN);
		free(p);
	}
	rc = regcomp(re, pattern->buf, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[256];

		regerror(rc, re, msg, sizeof(msg));
		gdn_error("invalid --pattern '%s': %s", a->pattern ? a->pattern : pattern->buf,
			  msg);
		return GDN_EXIT_USAGE;
	}
	return 0;
}

/* The --json document's head: what is asked (new reference). */
static json_t *doc_new(const struct dt_args *a, const struct gdn_hf *hf, const char *outdir,
		       const char *pattern, const char *token, const char *token_src)
{
	json_t *doc = gdn_json_doc(JSON_SCHEMA);

	json_object_set_new(doc, "repo_id", gdn_json_string_lossy(a->repo_id));
	json_object_set_new(
	    doc, "repo_type",
	    json_string(gdn_hf_repo_type_name((enum gdn_hf_repo_type)a->repo_type)));
	json_object_set_new(doc, "revision", gdn_json_string_lossy(a->revision));
	json_object_set_new(doc, "endpoint", gdn_json_string_lossy(hf->endpoint));
	json_object_set_new(doc, "output_dir", gdn_json_string_lossy(outdir));
	json_object_set_new(doc, "pattern", gdn_json_string_lossy(pattern));
	json_object_set_new(doc, "path_prefix",
			    a->path_prefix ? gdn_json_string_lossy(a->path_prefix) : json_null());
	json_object_set_new(doc, "authenticated", json_boolean(token != NULL));
	json_object_set_new(doc, "token_source",
			    token_src ? gdn_json_string_lossy(token_src) : json_null());
	return doc;
}

/* The --json document's tail: what happened; print it. The exit code. */
static int doc_finish(json_t *doc, const struct dt_args *a, const struct gdn_hf_files *files,
		      size_t listed, size_t pages, json_t *jsummaries, const struct gdn_err *err,
		      int code)
{
	json_object_set_new(doc, "listed", json_integer((json_int_t)listed));
	json_object_set_new(doc, "pages", json_integer((json_int_t)pages));
	json_object_set_new(doc, "dry_run", json_boolean(a->dry_run));
	json_object_set_new(doc, "files", files_json(files));
	if (jsummaries)
		json_object_set_new(doc, "summaries", jsummaries);
	json_object_set_new(doc, "ok", json_boolean(!code));
	json_object_set_new(doc, "exit_code", json_integer(code));
	if (code && err->msg[0])
		json_object_set_new(doc, "error", gdn_json_string_lossy(err->msg));
	if (gdn_json_print(doc) && !code)
		code = GDN_EXIT_FAILED;
	return code;
}

/*
 * One line for the whole queue: how many files failed, or, when an
 * interruption or the deadline stopped it, how far it got.
 */
static void summary_line(const struct gdn_hf_files *files, int ret)
{
	size_t failed = 0, done = 0, stopped = 0, cancelled = 0;

	for (size_t i = 0; i < files->nr; i++) {
		const struct gdn_hf_file *f = &files->v[i];

		if (f->state == GDN_HF_CANCELLED)
			cancelled++;
		else if (f->state == GDN_HF_FAILED &&
			 (f->result == GDN_EINTR || f->result == GDN_ETIMEOUT))
			stopped++;
		else if (f->state == GDN_HF_FAILED)
			failed++;
		else if (f->state != GDN_HF_PENDING)
			done++;
	}
	if (ret == GDN_EINTR || ret == GDN_ETIMEOUT)
		gdn_error("%s: %zu of %zu files done, %zu failed, %zu stopped, %zu not started",
			  ret == GDN_EINTR ? "interrupted" : "the deadline passed", done, files->nr,
			  failed, stopped, cancelled);
	else
		gdn_error("%zu of %zu files failed", failed, files->nr);
}

/* Download the selected files (and summarise them with --summarize). The exit code. */
static int download(struct gdn_hf *hf, struct gdn_hf_files *files, const struct dt_args *a,
		    const char *outdir, struct dt_state *st, json_t **jsummaries,
		    struct gdn_err *err)
{
	struct gdn_hf_download_opts dopts = {0};
	int ret, code = 0;

	if (!a->json)
		gdn_say("downloading %zu files to %s", files->nr, outdir);
	dopts.type = (enum gdn_hf_repo_type)a->repo_type;
	dopts.repo_id = a->repo_id;
	dopts.revision = a->revision;
	dopts.output_dir = outdir;
	dopts.jobs = (int)a->jobs;
	dopts.on_file = on_file;
	dopts.on_progress = on_progress;
	dopts.ctx = st;
	ret = gdn_hf_download(hf, files, &dopts, err);
	clear_bar(st);
	if (ret)
		summary_line(files, ret);
	if (ret) {
		code = ret == GDN_EINTR && gdn_proc_interrupted()
			   ? GDN_EXIT_SIGNAL + gdn_proc_interrupted()
			   : gdn_exit_for_error(ret);
	}
	if (a->summarize) {
		if (a->json)
			*jsummaries = json_array();
		if (summarize(files, a->json, a->wide ? 0 : gdn_cmd_term_width(), *jsummaries) &&
		    !code)
			code = GDN_EXIT_FAILED;
	}
	return code;
}

/* Keep the files under --path-prefix matching the pattern, the first --limit; warn of unsafe
 * paths. */
static void select_files(struct gdn_hf_files *files, const struct dt_args *a, regex_t *re)
{
	struct gdn_hf_select sel = {0};
	struct strvec unsafe = STRVEC_INIT;

	sel.path_prefix = a->path_prefix;
	sel.regex = re;
	sel.limit = a->limit;
	gdn_hf_select_files(files, &sel, &unsafe);
	for (size_t i = 0; i < unsafe.nr; i++) {
		char *q = gdn_one_line(unsafe.v[i], 300);

		gdn_warn("skipping '%s': not a safe local path", q);
		free(q);
	}
	strvec_clear(&unsafe);
}

static void on_listed(void *ctx, const struct gdn_fetch_result *r)
{
	struct dt_state *st = ctx;

	for (size_t i = 0; i < r->unsafe.nr; i++) {
		char *q = gdn_one_line(r->unsafe.v[i], 300);

		gdn_warn("skipping '%s': not a safe local path", q);
		free(q);
	}
	if (st->quiet)
		return;
	if (r->resolved)
		gdn_say("%s: %s", r->source, r->resolved);
	if (!r->files.nr)
		gdn_say("No matching files found.");
	else if (st->a->dry_run)
		for (size_t i = 0; i < r->files.nr; i++)
			gdn_say("would download %s (%" PRIu64 " bytes)", r->files.v[i].path,
				r->files.v[i].size);
	else
		gdn_say("downloading %zu files to %s", r->files.nr, r->dest_dir);
}

/* Whether the download began (else the error came from the listing). */
static bool download_began(const struct gdn_fetch_result *r)
{
	for (size_t i = 0; i < r->files.nr; i++)
		if (r->files.v[i].state != GDN_HF_PENDING)
			return true;
	return false;
}

/* A SOURCE other than the Hub: gs://, wandb:, wandb-artifact:, run URLs. The exit code. */
static int download_source(const char *spec, const struct dt_args *a, bool dir_given,
			   struct dt_state *st, struct gdn_ctx *ctx)
{
	struct gdn_fetch_opts o = GDN_FETCH_OPTS_INIT;
	struct gdn_fetch_result res;
	struct gdn_err err = GDN_ERR_INIT;
	const struct gdn_fetch_source *src = gdn_fetch_source_find(spec, &o);
	char *dir = NULL, *outdir = NULL;
	json_t *jsummaries = NULL; /* new */
	int ret, code = 0;

	gdn_fetch_result_init(&res);
	dir = dir_given ? xstrdup(a->output_dir) : xstrfmt(".profiles/%s", src->kind);
	outdir = absolute_dir(dir, ctx->cwd ? ctx->cwd : ".");
	o.pattern = a->pattern;
	o.include_xplane = a->include_xplane;
	o.limit = a->limit;
	o.jobs = (int)a->jobs;
	o.dry_run = a->dry_run;
	gdn_net_args_apply(&a->net, &o.http);
	o.on_listed = on_listed;
	o.on_file = on_file;
	o.on_progress = on_progress;
	o.ctx = st;
	ret = gdn_trace_fetch_ex(spec, outdir, &o, &res, NULL, &err);
	clear_bar(st);
	if (ret && download_began(&res)) {
		summary_line(&res.files, ret);
		code = ret == GDN_EINTR && gdn_proc_interrupted()
			   ? GDN_EXIT_SIGNAL + gdn_proc_interrupted()
			   : gdn_exit_for_error(ret);
	} else if (ret) {
		code = ret == GDN_EINTR && gdn_proc_interrupted()
			   ? (gdn_error("%s", err.msg), GDN_EXIT_SIGNAL + gdn_proc_interrupted())
			   : gdn_die_err(&err);
	}
	if (!ret && a->summarize && !a->dry_run) {
		if (a->json)
			jsummaries = json_array();
		if (summarize(&res.files, a->json, a->wide ? 0 : gdn_cmd_term_width(),
			      jsummaries) &&
		    !code)
			code = GDN_EXIT_FAILED;
	}
	if (a->json) {
		json_t *doc = gdn_json_doc(JSON_SCHEMA);

		json_object_set_new(doc, "source", gdn_json_string_lossy(spec));
		json_object_set_new(doc, "kind", json_string(src->kind));
		json_object_set_new(doc, "endpoint",
				    res.endpoint ? gdn_json_string_lossy(res.endpoint)
						 : json_null());
		json_object_set_new(doc, "resolved",
				    res.resolved ? gdn_json_string_lossy(res.resolved)
						 : json_null());
		json_object_set_new(doc, "output_dir", gdn_json_string_lossy(outdir));
		json_object_set_new(doc, "pattern",
				    res.pattern ? gdn_json_string_lossy(res.pattern) : json_null());
		json_object_set_new(doc, "authenticated", json_boolean(res.auth_source != NULL));
		json_object_set_new(doc, "token_source",
				    res.auth_source ? gdn_json_string_lossy(res.auth_source)
						    : json_null());
		code = doc_finish(doc, a, &res.files, res.listed, res.files.pages, jsummaries, &err,
				  code);
		jsummaries = NULL;
	}
	json_decref(jsummaries);
	gdn_fetch_result_release(&res);
	free(dir);
	free(outdir);
	return code;
}

/*
 * SOURCE or --repo-id: exactly one. hf:ORG/REPO[/PATH] becomes --repo-id
 * (and --path-prefix). 0 or the exit code.
 */
static int resolve_source(struct dt_args *a, const struct strvec *rest, char **hf_repo,
			  char **hf_path)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_fetch_opts o = GDN_FETCH_OPTS_INIT;

	if (rest->nr > 1)
		return gdn_usage_error("download-trace", "download-trace takes one SOURCE, got %zu",
				       rest->nr);
	if (rest->nr && a->repo_id)
		return gdn_usage_error("download-trace", "give a SOURCE or --repo-id, not both");
	if (!rest->nr && !a->repo_id)
		return gdn_usage_error("download-trace",
				       "download-trace needs a SOURCE or --repo-id");
	if (!rest->nr)
		return 0;
	if (!gdn_fetch_source_find(rest->v[0], &o)) {
		char *q = gdn_one_line(rest->v[0], 200);
		int code =
		    gdn_usage_error("download-trace",
				    "'%s' is not a source: hf:ORG/REPO[/PATH], "
				    "gs://BUCKET/PREFIX, wandb:ENTITY/PROJECT/RUN_ID[@ALIAS], a "
				    "W&B run URL, or wandb-artifact:ENTITY/PROJECT/NAME:ALIAS",
				    q);

		free(q);
		return code;
	}
	if (!gdn_source_is_hf(rest->v[0]))
		return 0;
	if (gdn_source_parse_hf(rest->v[0], hf_repo, hf_path, &err))
		return gdn_die_err(&err);
	if (*hf_path && a->path_prefix)
		return gdn_usage_error(
		    "download-trace",
		    "give the path in hf:ORG/REPO/PATH or --path-prefix, not both");
	a->repo_id = *hf_repo;
	if (*hf_path)
		a->path_prefix = *hf_path;
	return 0;
}

int cmd_download_trace(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct dt_args a = {0};
	struct opt opts[] = {
	    OPT_STRING_(0, "repo-id", &a.repo_id, "ID",
			"the repository, e.g. marin-community/my-traces (or give a SOURCE)", NULL),
	    OPT_ENUM_(0, "repo-type", &a.repo_type, gdn_hf_repo_type_enum, "the repository type",
		      "dataset"),
	    OPT_STRING_(0, "revision", &a.revision, "REV", "branch, tag, commit or refs/pr/N",
			"main"),
	    OPT_STRING_(0, "path-prefix", &a.path_prefix, "PATH",
			"keep only files equal to or under PATH", NULL),
	    OPT_STRING_(0, "pattern", &a.pattern, "REGEX",
			"keep files whose path matches (POSIX extended regex)",
			"perfetto_trace.json.gz, *trace.json.gz, profile.json"),
	    OPT_BOOL_(0, "include-xplane", &a.include_xplane, "also keep xplane.pb files"),
	    OPT_INT_(0, "limit", &a.limit, "N", "keep the first N files (sorted by path)", NULL, 1,
		     LONG_MAX),
	    OPT_STRING_(0, "output-dir", &a.output_dir, "DIR",
			"where files go (created; other sources: .profiles/KIND)",
			DEFAULT_OUTPUT_DIR),
	    OPT_STRING_(0, "token", &a.token, "TOKEN",
			"Hugging Face token (else HF_TOKEN, HUGGING_FACE_HUB_TOKEN, token file)",
			NULL),
	    OPT_GROUP_("New in gdnctl"),
	    OPT_INT_(0, "jobs", &a.jobs, "N", "parallel transfers", "4", 1, 64),
	    OPT_BOOL_(0, "summarize", &a.summarize,
		      "summarise each downloaded trace (as 'gdnctl trace summary')"),
	    OPT_BOOL_(0, "wide", &a.wide,
		      "--summarize: never shorten names to fit the terminal (whole when piped)"),
	    OPT_BOOL_(0, "dry-run", &a.dry_run, "list the files that would be downloaded"),
	    OPT_BOOL_(0, "json", &a.json, "print a JSON document (schema " JSON_SCHEMA ")"),
	    GDN_NET_OPTS(&a.net, "60s", "0"),
	    OPT_END_(),
	};
	struct gdn_hf hf = {0};
	struct gdn_hf_files files = {0};
	struct gdn_http_opts ho = GDN_HTTP_OPTS_INIT;
	struct dt_state st = {0};
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec rest = STRVEC_INIT;
	struct sbuf pattern = SBUF_INIT;
	char *token = NULL, *token_src = NULL, *outdir = NULL, *hf_repo = NULL, *hf_path = NULL;
	json_t *doc = NULL, *jsummaries = NULL; /* new, new */
	size_t listed = 0, pages = 0;
	regex_t re;
	bool have_re = false, alias = ctx->name && !strcmp(ctx->name, "hf-download-trace");
	int code = 0;

	if (gdn_download_backend_source(argc, argv, ctx, &code))
		return code; /* BACKEND:PATH (src/cmd/download_backend.c) */
	a.repo_type = GDN_HF_DATASET;
	a.revision = "main";
	a.output_dir = DEFAULT_OUTPUT_DIR;
	a.jobs = 4;
	gdn_net_args_init(&a.net, 60000, 0);
	if (!gdn_cmd_parse_opts(opts, alias ? &alias_usage : &usage, argc, argv, 0, &rest, &code))
		goto out;
	st.a = &a;
	st.quiet = a.json;
	st.bar = !a.json && isatty(STDERR_FILENO);
	code = resolve_source(&a, &rest, &hf_repo, &hf_path);
	if (code)
		goto out;
	if (rest.nr && !hf_repo) {
		bool dir_given = false;

		for (const struct opt *op = opts; op->type != OPT_END; op++)
			if (op->long_name && !strcmp(op->long_name, "output-dir"))
				dir_given = op->seen > 0;
		code = download_source(rest.v[0], &a, dir_given, &st, ctx);
		goto out;
	}
	code = check_args(&a, &pattern, &re);
	if (code)
		goto out;
	have_re = true;
	if (gdn_hf_find_token(a.token, &token, &token_src, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	outdir = absolute_dir(a.output_dir, ctx->cwd ? ctx->cwd : ".");

	gdn_net_args_apply(&a.net, &ho);
	if (gdn_hf_init(&hf, NULL, token, &ho, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	if (a.json)
		doc = doc_new(&a, &hf, outdir, pattern.buf, token, token_src);
	if (gdn_hf_list(&hf, (enum gdn_hf_repo_type)a.repo_type, a.repo_id, a.revision, &files,
			&err)) {
		code = gdn_die_err(&err);
		if (!token && (strstr(err.msg, "HTTP 401") || strstr(err.msg, "HTTP 403")))
			fprintf(stderr, "[gdnctl] hint: a private repository needs a token: "
					"--token, HF_TOKEN or 'huggingface-cli login'\n");
		goto out;
	}
	listed = files.nr;
	pages = files.pages;
	select_files(&files, &a, &re);
	if (!files.nr) {
		if (!a.json)
			gdn_say("No matching files found.");
		goto out;
	}
	if (a.dry_run) {
		for (size_t i = 0; i < files.nr && !a.json; i++)
			gdn_say("would download %s (%" PRIu64 " bytes)", files.v[i].path,
				files.v[i].size);
		goto out;
	}
	code = download(&hf, &files, &a, outdir, &st, &jsummaries, &err);
out:
	if (doc) {
		code = doc_finish(doc, &a, &files, listed, pages, jsummaries, &err, code);
		jsummaries = NULL;
	}
	json_decref(jsummaries);
	if (have_re)
		regfree(&re);
	gdn_hf_files_release(&files);
	gdn_hf_release(&hf);
	strvec_clear(&rest);
	sbuf_release(&pattern);
	free(token);
	free(token_src);
	free(outdir);
	free(hf_repo);
	free(hf_path);
	return code;
}
