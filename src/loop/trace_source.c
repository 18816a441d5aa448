/*
 * The loop's trace of one profile run, from where the run left it
 * (include/gdnctl/trace_source.h): the local working tree, the
 * backend's workdir (copied back), a GCS profile URI or hosted-XProf
 * link the profile printed, or the W&B run it printed (through
 * gdn_trace_fetch). Nothing here prints: the iteration's report and
 * journal callbacks carry what happened.
 */
#include "gdnctl/compat.h"
#include <glob.h>
#include <sys/stat.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/loop.h"
#include "gdnctl/measure.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/targets.h"
#include "gdnctl/trace_fetch.h"
#include "gdnctl/trace_source.h"
#include "gdnctl/xalloc.h"

#define DEFAULT_FETCH_TIMEOUT_MS (600 * 1000)
#define PROFILE_DIR		 "/plugins/profile"
#define URI_MAX			 2048

const struct gdn_enum gdn_trace_source_enum[] = {
    {"auto", GDN_TRACE_SRC_AUTO, "local, then the backend's workdir, then GCS, then W&B"},
    {"local", GDN_TRACE_SRC_LOCAL, "project.trace_glob in the working tree"},
    {"backend", GDN_TRACE_SRC_BACKEND, "project.trace_glob in the backend's workdir, copied back"},
    {"wandb", GDN_TRACE_SRC_WANDB, "the jax_profile artifact of the W&B run the profile printed"},
    {"gcs", GDN_TRACE_SRC_GCS, "the gs:// profile URI or hosted-XProf link the profile printed"},
    {"none", GDN_TRACE_SRC_NONE, "no trace"},
    GDN_ENUM_END,
};

/* ---- what the profile printed ---- */

void gdn_trace_refs_release(struct gdn_trace_refs *r)
{
	free(r->gcs);
	free(r->gcs_from);
	free(r->wandb);
	free(r->wandb_url);
	memset(r, 0, sizeof(*r));
}

/* Where a URI printed in a log line ends. */
static bool uri_stop(unsigned char c)
{
	return c <= 0x20 || c == 0x7f || strchr("\"'<>`()[]{}|\\^", c);
}

static size_t uri_len(const char *p, const char *end)
{
	size_t n = 0;

	while (p + n < end && n < URI_MAX && !uri_stop((unsigned char)p[n]))
		n++;
	if (p + n < end && !p[n])
		return 0;		      /* a NUL byte cut it short: no URI */
	while (n && strchr(".,;:", p[n - 1])) /* punctuation after the URI */
		n--;
	return n;
}

/*
 * "gs://BUCKET/..." with "/plugins/profile" in it, cut after the session
 * directory (or after plugins/profile when there is none); NULL otherwise.
 */
static char *profile_uri(const char *s, size_t n)
{
	const char *end = s + n, *bucket = s + 5, *pp, *sess, *slash;

	if (n <= 5 || memcmp(s, "gs://", 5) || *bucket == '/')
		return NULL;
	pp = memmem(s, n, PROFILE_DIR, strlen(PROFILE_DIR));
	if (!pp || pp < bucket || !memchr(bucket, '/', (size_t)(pp - bucket + 1)))
		return NULL;
	sess = pp + strlen(PROFILE_DIR);
	if (sess < end && *sess != '/')
		return NULL; /* plugins/profileX */
	if (sess + 1 >= end)
		return xstrndup(s, (size_t)(sess - s));
	sess++;
	slash = memchr(sess, '/', (size_t)(end - sess));
	return xstrndup(s, (size_t)((slash ? slash : end) - s));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The uri= parameter of a hosted-XProf link, decoded: a gs:// profile root, or NULL. */
static char *xprof_link_uri(const char *s, size_t n)
{
	const char *q = memchr(s, '?', n), *end = s + n, *v = NULL;
	struct sbuf dec = SBUF_INIT;
	char *uri = NULL;

	for (const char *p = q; p && p + 5 <= end; p++)
		if ((*p == '?' || *p == '&') && !memcmp(p + 1, "uri=", 4)) {
			v = p + 5;
			break;
		}
	if (!v)
		return NULL;
	for (const char *p = v; p < end && *p != '&' && *p != '#'; p++) {
		int c = (unsigned char)*p;

		if (c == '%' && p + 2 < end && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
			c = hexval(p[1]) * 16 + hexval(p[2]);
			p += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (c <= 0x20 || c == 0x7f)
			goto out; /* no spaces or control characters in a profile root */
		sbuf_addch(&dec, (char)c);
	}
	while (dec.len && dec.buf[dec.len - 1] == '/')
		sbuf_setlen(&dec, dec.len - 1);
	if (dec.len <= 5 || strncmp(dec.buf, "gs://", 5) || dec.buf[5] == '/')
		goto out;
	if (!strstr(dec.buf, PROFILE_DIR "/") && !strstr(dec.buf + 5, "/")) {
		/* a bare bucket: too wide to fetch */
		goto out;
	}
	uri = profile_uri(dec.buf, dec.len);
	if (!uri && !strstr(dec.buf, PROFILE_DIR))
		uri = xstrfmt("%s" PROFILE_DIR, dec.buf); /* Levanter's run root */
out:
	sbuf_release(&dec);
	return uri;
}

void gdn_trace_refs_scan(const char *out, size_t len, const char *wandb_base_url,
			 struct gdn_trace_refs *r)
{
	const char *end = out + len;
	char *direct = NULL, *linked = NULL, *url = NULL, *ref;

	memset(r, 0, sizeof(*r));
	for (const char *p = out; p + 5 <= end; p++) {
		size_t n;
		char *u;

		if (!memcmp(p, "gs://", 5)) {
			n = uri_len(p, end);
			u = profile_uri(p, n);
			if (u) {
				free(direct);
				direct = u;
			}
			p += n ? n - 1 : 0;
		} else if (p + 8 <= end &&
			   (!memcmp(p, "https://", 8) || !memcmp(p, "http://", 7))) {
			n = uri_len(p, end);
			u = xprof_link_uri(p, n);
			if (u) {
				free(linked);
				linked = u;
			}
			p += n ? n - 1 : 0;
		}
	}
	if (direct) {
		r->gcs = direct;
		r->gcs_from = xstrdup("uri");
		free(linked);
	} else if (linked) {
		r->gcs = linked;
		r->gcs_from = xstrdup("xprof-link");
	}
	ref = gdn_measure_find_run_url(out, len, wandb_base_url, &url);
	if (ref) {
		r->wandb = xstrfmt("wandb:%s", ref);
		r->wandb_url = url;
		free(ref);
	}
}

/* ---- the sources ---- */

struct found {
	char *path;
	const char *source;
	char *origin;
	struct sbuf why; /* "; "-separated reasons of the sources tried */
	bool tried;	 /* a source was tried (not merely unset) */
};

static void because(struct found *f, const char *fmt, ...) GDN_PRINTF(2, 3);
static void because(struct found *f, const char *fmt, ...)
{
	va_list ap;

	if (f->why.len)
		sbuf_adds(&f->why, "; ");
	va_start(ap, fmt);
	sbuf_vaddf(&f->why, fmt, ap);
	va_end(ap);
}

char *gdn_trace_newest_local(const char *dir, const char *pattern_rel, const struct timespec *since)
{
	char *pattern = xstrfmt("%s/%s", dir, pattern_rel), *best = NULL;
	struct timespec best_t = {0, 0};
	glob_t gl;

	if (glob(pattern, 0, NULL, &gl))
		goto out;
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		struct stat st;

		if (stat(gl.gl_pathv[i], &st) || !S_ISREG(st.st_mode))
			continue;
		if (st.st_mtim.tv_sec < since->tv_sec ||
		    (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec < since->tv_nsec))
			continue;
		if (!best || st.st_mtim.tv_sec > best_t.tv_sec ||
		    (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec)) {
			free(best);
			best = xstrdup(gl.gl_pathv[i]);
			best_t = st.st_mtim;
		}
	}
	globfree(&gl);
out:
	free(pattern);
	return best;
}

static char *dest_dir(const struct gdn_trace_source *ts, const struct gdn_loop_iter *it,
		      long attempt)
{
	return xstrfmt("%s/traces/iteration-%03ld/run-%ld", ts->log_dir ? ts->log_dir : ".",
		       it->iteration, attempt);
}

static int64_t deadline(const struct gdn_trace_source *ts)
{
	return gdn_now_ms() +
	       (ts->fetch_timeout_ms > 0 ? ts->fetch_timeout_ms : DEFAULT_FETCH_TIMEOUT_MS);
}

static void from_backend(const struct gdn_trace_source *ts, const struct gdn_loop_iter *it,
			 long attempt, int64_t since_s, struct found *f)
{
	struct gdn_copy_opts co = {0};
	struct strvec files = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_backend *b = ts->targets ? gdn_targets_last(ts->targets) : ts->backend;
	char *dest;

	if (!b || !strcmp(b->ops->type, "local")) {
		if (ts->mode == GDN_TRACE_SRC_BACKEND)
			because(f, "backend: the profile runs here (trace_source local reads it)");
		return;
	}
	if (!gdn_backend_can_copy(b)) {
		because(f, "backend %s: type %s cannot copy files back", b->name, b->ops->type);
		return;
	}
	f->tried = true;
	dest = dest_dir(ts, it, attempt);
	co.deadline_ms = deadline(ts);
	co.newer_than_s = since_s;
	co.newest_only = true;
	if (gdn_backend_copy_back(b, ts->trace_glob, dest, &co, &files, &err))
		because(f, "backend %s: %s", b->name, err.msg);
	else if (!files.nr)
		because(f, "backend %s: no file matching '%s' written by this run", b->name,
			ts->trace_glob);
	else {
		f->path = xstrdup(files.v[0]);
		f->source = "backend";
		f->origin = xstrfmt("%s:%s", b->name, ts->trace_glob);
	}
	strvec_clear(&files);
	free(dest);
}

/* Rank of a fetched file as a trace to read: lower is better, -1 not a trace. */
static int trace_rank(const char *path)
{
	static const char *const ends[] = {"perfetto_trace.json.gz", ".trace.json.gz",
					   ".trace.json", ".xplane.pb", ".xplane.pb.gz"};
	size_t len = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(ends); i++) {
		size_t el = strlen(ends[i]);

		if (len >= el && !strcmp(path + len - el, ends[i]))
			return (int)i;
	}
	return -1;
}

static void fetched(const struct gdn_trace_source *ts, const struct gdn_loop_iter *it, long attempt,
		    const char *what, const char *spec, struct found *f)
{
	struct gdn_trace_fetch_opts fo = {0};
	struct strvec files = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	gdn_trace_fetch_fn fetch = ts->fetch ? ts->fetch : gdn_trace_fetch;
	char *dest = dest_dir(ts, it, attempt);
	int best = -1, rank;

	f->tried = true;
	fo.deadline_ms = deadline(ts);
	fo.include_xplane = true;
	if (fetch(spec, dest, &fo, &files, &err)) {
		because(f, "%s %s: %s", what, spec, err.msg);
		goto out;
	}
	for (size_t i = 0; i < files.nr; i++) {
		rank = trace_rank(files.v[i]);
		if (rank >= 0 && (best < 0 || rank < trace_rank(files.v[best])))
			best = (int)i;
	}
	if (best < 0) {
		because(f, "%s %s: no trace among the %zu files fetched", what, spec, files.nr);
		goto out;
	}
	f->path = xstrdup(files.v[best]);
	f->source = what;
	f->origin = xstrdup(spec);
out:
	strvec_clear(&files);
	free(dest);
}

/* keep_local: the local trace hard-linked under the log dir (same file system), f->path then. */
static void keep_local(const struct gdn_trace_source *ts, const struct gdn_loop_iter *it,
		       long attempt, struct found *f)
{
	char *dest = dest_dir(ts, it, attempt), *path;
	const char *base = strrchr(f->path, '/');

	path = xstrfmt("%s/%s", dest, base ? base + 1 : f->path);
	if (!gdn_mkdir_p(dest, 0755, NULL)) {
		unlink(path);
		if (!link(f->path, path)) {
			free(f->path);
			f->path = path;
			path = NULL;
		}
	}
	free(path);
	free(dest);
}

/* The path relative to the log directory when it is under it, else NULL. */
static const char *under_log_dir(const char *path, const char *log_dir)
{
	size_t n = log_dir ? strlen(log_dir) : 0;

	if (!n || strncmp(path, log_dir, n) || path[n] != '/')
		return NULL;
	return path + n + 1;
}

char *gdn_trace_source_find(const struct gdn_trace_source *ts, const struct gdn_loop_iter *it,
			    long attempt, int64_t since_s, const char *out, size_t len)
{
	struct found f = {NULL, NULL, NULL, SBUF_INIT, false};
	struct gdn_trace_refs refs;
	enum gdn_trace_source_mode m = ts->mode;
	bool glob_set = ts->trace_glob && *ts->trace_glob;
	bool any = m == GDN_TRACE_SRC_AUTO;

	if (m == GDN_TRACE_SRC_NONE)
		return NULL;
	gdn_trace_refs_scan(out ? out : "", out ? len : 0, ts->wandb_base_url, &refs);
	if (any || m == GDN_TRACE_SRC_LOCAL) {
		if (glob_set) {
			f.tried = true;
			f.path = gdn_trace_newest_local(ts->workdir, ts->trace_glob,
							&(struct timespec){(time_t)since_s, 0});
			if (f.path)
				f.source = "local";
			if (f.path && ts->keep_local)
				keep_local(ts, it, attempt, &f);
			else
				because(&f, "local: no file matching '%s' written by this run",
					ts->trace_glob);
		} else if (m == GDN_TRACE_SRC_LOCAL) {
			because(&f, "local: project.trace_glob is not set");
		}
	}
	if (!f.path && (any || m == GDN_TRACE_SRC_BACKEND)) {
		if (glob_set)
			from_backend(ts, it, attempt, since_s, &f);
		else if (m == GDN_TRACE_SRC_BACKEND)
			because(&f, "backend: project.trace_glob is not set");
	}
	if (!f.path && (any || m == GDN_TRACE_SRC_GCS)) {
		if (refs.gcs)
			fetched(ts, it, attempt, "gcs", refs.gcs, &f);
		else if (m == GDN_TRACE_SRC_GCS || f.tried)
			because(&f, "gcs: the profile printed no gs://.../plugins/profile URI or "
				    "hosted-XProf link");
	}
	if (!f.path && (any || m == GDN_TRACE_SRC_WANDB)) {
		if (refs.wandb)
			fetched(ts, it, attempt, "wandb", refs.wandb, &f);
		else if (m == GDN_TRACE_SRC_WANDB || f.tried)
			because(&f, "wandb: the profile printed no W&B run");
	}

	if (f.path) {
		const char *rel = under_log_dir(f.path, ts->log_dir);

		gdn_loop_reportf(it, GDN_LOOP_INFO, "trace of profile run %ld: %s (%s%s%s)",
				 attempt, f.path, f.source, f.origin ? " " : "",
				 f.origin ? f.origin : "");
		it->journal(it->ctx, "trace",
			    json_pack("{sIsIsssssoso}", "iteration", (json_int_t)it->iteration,
				      "attempt", (json_int_t)attempt, "source", f.source, "path",
				      f.path, "file", rel ? json_string(rel) : json_null(),
				      "origin", f.origin ? json_string(f.origin) : json_null()));
	} else if (f.tried || ts->expected || m != GDN_TRACE_SRC_AUTO) {
		if (!f.why.len)
			because(&f,
				"no trace source applies (project.trace_glob is not set and the "
				"profile printed no GCS URI or W&B run)");
		if (f.tried || ts->expected || m != GDN_TRACE_SRC_AUTO)
			gdn_loop_reportf(it, ts->expected ? GDN_LOOP_WARN : GDN_LOOP_NOTE,
					 "no trace for profile run %ld, trace figures unscored: %s",
					 attempt, f.why.buf);
		it->journal(it->ctx, "trace",
			    json_pack("{sIsIsnsnss}", "iteration", (json_int_t)it->iteration,
				      "attempt", (json_int_t)attempt, "source", "path", "reason",
				      f.why.buf));
	}
	gdn_trace_refs_release(&refs);
	free(f.origin);
	sbuf_release(&f.why);
	return f.path;
}
