/*
 * Suspicious-diff patterns of the integrity gate (integrity.h): POSIX
 * extended regular expressions over the added or removed lines (or the
 * file headers) of the candidate's diff, limited to files by globs.
 */
#include "gdnctl/compat.h"
#include <fnmatch.h>
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define PY "*.py"
#define CC "*.c,*.h,*.cc,*.cpp,*.cxx,*.hpp,*.cu,*.cuh,*.hip"
#define NW "(^|[^[:alnum:]_])" /* no word character before */
#define EW "([^[:alnum:]_]|$)" /* none after */

const char *const gdn_diffpat_defaults[] = {
    /* a timer patched, or a kernel that touches the clocks the harness reads */
    "timer-patched:+:" PY ":(time\\.(perf_counter|time|monotonic|process_time)(_ns)?|timeit\\."
    "default_timer|do_bench)[[:space:]]*=[^=]",
    "timer-patched:+:" CC ":" NW "(clock_gettime|gettimeofday|QueryPerformanceCounter|"
    "(cuda|hip)EventElapsedTime|rdtsc)" EW,
    /* synchronisation removed */
    "sync-removed:-:" PY ":block_until_ready|\\.synchronize\\(|effects_barrier",
    "sync-removed:-:" CC ":(cuda|hip)(Device|Stream|Event)Synchronize|__syncthreads|"
    "cooperative_groups::sync",
    /* results kept between calls */
    "cached-results:+:" PY ":@(functools\\.)?(lru_cache|cache)" EW,
    "cached-results:+:" PY ":^[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(:[^=]*)?=[[:space:]]*(\\{|dict\\(|"
    "(collections\\.)?(defaultdict|OrderedDict)\\()",
    "cached-results:+:" CC ":" NW "static" EW ".*" NW "[A-Za-z0-9_]*(cache|memo)[A-Za-z0-9_]*" EW,
    /* the host called back from device code */
    "host-callback:+:" PY ":pure_callback|io_callback|host_callback|debug\\.callback",
    "host-callback:+:" CC ":(cuda|hip)LaunchHostFunc|cudaStreamAddCallback",
    /* precision narrowed */
    "precision-narrowed:+:" PY ":" NW "(bfloat16|float16|float8[A-Za-z0-9_]*|fp8)" EW
    "|\\.half\\(\\)|allow_tf32[[:space:]]*=[[:space:]]*True|set_float32_matmul_precision|"
    "default_matmul_precision|Precision\\.DEFAULT|input_precision",
    "precision-narrowed:+:" CC ":__half|__nv_bfloat16|_Float16|__fp16|__bf16|fast-math|"
    "fast_math|Ofast|__fdividef|__fmul_rn|" NW "__expf" EW,
    /* a symbolic link: writes through it reach files the diff does not name */
    "symlink-added:h::^(new file mode|new mode) 120000",
    NULL,
};

void gdn_diffpats_release(struct gdn_diffpats *p)
{
	for (size_t i = 0; i < p->nr; i++) {
		free(p->v[i].name);
		free(p->v[i].regex);
		strvec_clear(&p->v[i].globs);
		regfree(&p->v[i].re);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}

int gdn_diffpat_parse(struct gdn_diffpats *p, const char *spec, struct gdn_err *err)
{
	const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	const char *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
	struct gdn_diffpat x = {0};
	char msg[200];
	int rc;

	if (!c3 || c1 == spec || c2 != c1 + 2 || !strchr("+-h", c1[1]) || !c3[1])
		return gdn_err_set(err, GDN_ECONFIG,
				   "integrity.diff_patterns: '%.200s': expected "
				   "NAME:SIDE:GLOB[,GLOB...]:REGEX (SIDE + - or h)",
				   spec);
	x.name = xstrndup(spec, (size_t)(c1 - spec));
	x.side = c1[1];
	strvec_init(&x.globs);
	for (const char *g = c2 + 1; g < c3;) {
		const char *e = memchr(g, ',', (size_t)(c3 - g));

		if (!e)
			e = c3;
		if (e > g)
			strvec_pushf(&x.globs, "%.*s", (int)(e - g), g);
		g = e + 1;
	}
	x.regex = xstrdup(c3 + 1);
	rc = regcomp(&x.re, x.regex, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		regerror(rc, &x.re, msg, sizeof(msg));
		free(x.name);
		free(x.regex);
		strvec_clear(&x.globs);
		return gdn_err_set(err, GDN_ECONFIG, "integrity.diff_patterns: '%.200s': %s", spec,
				   msg);
	}
	ALLOC_GROW(p->v, p->nr + 1, p->alloc);
	p->v[p->nr++] = x;
	return 0;
}

void gdn_diffpats_add_defaults(struct gdn_diffpats *p)
{
	struct gdn_err err = GDN_ERR_INIT;

	for (size_t i = 0; gdn_diffpat_defaults[i]; i++)
		if (gdn_diffpat_parse(p, gdn_diffpat_defaults[i], &err))
			BUG("default diff pattern: %s", err.msg);
}

static bool file_matches(const struct gdn_diffpat *d, const char *path)
{
	const char *base = strrchr(path, '/');

	if (!d->globs.nr)
		return true;
	base = base ? base + 1 : path;
	for (size_t i = 0; i < d->globs.nr; i++)
		if (!fnmatch(d->globs.v[i], path, 0) || !fnmatch(d->globs.v[i], base, 0))
			return true;
	return false;
}

/* The scanner's state: the file of the lines, whether in a hunk. */
struct scan {
	struct sbuf file, line;
	bool in_hunk;
};

/* The file a "diff --git a/X b/Y" or "+++ b/Y" line names. */
static void header(struct scan *s, const char *l)
{
	const char *b;

	if (!strncmp(l, "diff --git ", 11)) {
		s->in_hunk = false;
		b = strstr(l, " b/");
		sbuf_reset(&s->file);
		sbuf_adds(&s->file, b ? b + 3 : l + 11);
	} else if (!strncmp(l, "+++ b/", 6)) {
		sbuf_reset(&s->file);
		sbuf_adds(&s->file, l + 6);
	} else if (!strncmp(l, "@@", 2)) {
		s->in_hunk = true;
	}
}

static void match_line(const struct gdn_diffpats *p, struct scan *s, bool *done, struct strvec *out)
{
	const char *l = s->line.buf;
	char side = s->in_hunk && (*l == '+' || *l == '-') ? *l : 'h';
	const char *text = side == 'h' ? l : l + 1;

	for (size_t i = 0; i < p->nr; i++) {
		const struct gdn_diffpat *d = &p->v[i];
		const char *t = text;

		if (done[i] || d->side != side || !file_matches(d, s->file.buf) ||
		    regexec(&d->re, text, 0, NULL, 0))
			continue;
		done[i] = true;
		while (*t == ' ' || *t == '\t')
			t++;
		strvec_pushf(out, "%s in %s: %.80s", d->name, s->file.len ? s->file.buf : "?", t);
	}
}

void gdn_diffpat_scan(const struct gdn_diffpats *p, const char *diff, size_t len,
		      struct strvec *matches)
{
	struct scan s = {SBUF_INIT, SBUF_INIT, false};
	bool *done = xcalloc(p->nr + 1, sizeof(*done));

	for (size_t off = 0; off < len;) {
		const char *nl = memchr(diff + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - diff - off) : len - off;

		sbuf_reset(&s.line);
		sbuf_add(&s.line, diff + off, n);
		off += n + 1;
		/* "+++ b/..." and "--- a/..." are headers even inside a file's hunks */
		if (!s.in_hunk || !strncmp(s.line.buf, "diff --git ", 11) ||
		    !strncmp(s.line.buf, "@@", 2))
			header(&s, s.line.buf);
		if (memchr(s.line.buf, '\0', s.line.len))
			continue;
		match_line(p, &s, done, matches);
	}
	free(done);
	sbuf_release(&s.file);
	sbuf_release(&s.line);
}
