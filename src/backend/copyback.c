/*
 * Copying files back from where the work ran: `gdnctl download-trace
 * BACKEND:PATH` and the loop's trace from the backend's workdir
 * (include/gdnctl/backend.h describes the contract).
 *
 * A type says where its files are (ops->copy_source: this machine, or a
 * host over ssh with its own options); this file lists and copies:
 *
 *   ssh [OPTIONS] HOST -- '[cd -- ROOT || exit 3; ]if test -d BASE; then
 *       cd -- BASE && exec find . -mindepth 1 [-maxdepth N] -type f
 *       -printf '\''gdnctl-file %T@ %s %P\n'\''; elif test -f BASE; ...'
 *   rsync -s -t --partial --files-from=LIST -e 'ssh OPTIONS' HOST:DIR/ STAGE/
 *
 * Every value in the remote command is quoted (gdn_sh_add_path); rsync
 * gets the names through --files-from with -s (--protect-args), so no
 * name reaches a remote shell. A glob is matched here (fnmatch), never
 * by the remote shell.
 */
#include "gdnctl/compat.h"
#include <dirent.h>
#include <fnmatch.h>
#include <math.h>
#include <regex.h>
#include <sys/stat.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define LIST_TIMEOUT_MS (300 * 1000)
#define COPY_TIMEOUT_MS (3600 * 1000)
#define STAGE_NAME	".gdnctl-part"
#define LOCAL_WALK_MAX	1000000
#define LOCAL_DEPTH_MAX 64
#define MARK_FILE	"gdnctl-file "
#define MARK_ONE	"gdnctl-one "
#define MARK_MISSING	"gdnctl-missing"

void gdn_copy_where_release(struct gdn_copy_where *w)
{
	free(w->local_root);
	strvec_clear(&w->ssh);
	free(w->host);
	free(w->remote_root);
	memset(w, 0, sizeof(*w));
	strvec_init(&w->ssh);
}

void gdn_copy_files_release(struct gdn_copy_files *files)
{
	for (size_t i = 0; i < files->nr; i++)
		free(files->v[i].name);
	free(files->v);
	memset(files, 0, sizeof(*files));
}

bool gdn_backend_can_copy(const struct gdn_backend *b)
{
	return b && b->ops && b->ops->copy_source;
}

/* ---- paths ---- */

static bool has_glob(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return true;
	return false;
}

/* Split path into its fixed leading directories and the glob after them (NULL: no glob). */
struct split {
	char *base; /* "" for none */
	const char *glob;
	int depth; /* levels the glob spans; 0 with "**" */
};

static void split_path(const char *path, struct split *sp)
{
	const char *p = path, *last = path;

	sp->glob = NULL;
	sp->depth = 0;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (has_glob(p, len)) {
			sp->glob = p;
			break;
		}
		last = slash ? slash + 1 : p + len;
		p = slash ? slash + 1 : p + len;
	}
	if (!sp->glob) {
		sp->base = xstrdup(path);
	} else {
		size_t n = (size_t)(last - path);

		while (n > 1 && path[n - 1] == '/')
			n--;
		if (n == 1 && path[0] != '/')
			n = 0;
		sp->base = xstrndup(path, n);
		sp->depth = 1;
		for (const char *c = sp->glob; *c; c++)
			sp->depth += *c == '/';
		if (strstr(sp->glob, "**"))
			sp->depth = 0;
	}
	/* find would read a relative base starting with '-' as an option */
	if (sp->base[0] == '-') {
		char *b = xstrfmt("./%s", sp->base);

		free(sp->base);
		sp->base = b;
	}
}

char *gdn_copy_glob_base(const char *path)
{
	struct split sp;

	split_path(path, &sp);
	return sp.base;
}

static bool glob_match(const struct split *sp, const char *name)
{
	int flags = FNM_PERIOD;

	if (!sp->glob)
		return true;
	if (sp->depth)
		flags |= FNM_PATHNAME;
	return fnmatch(sp->glob, name, flags) == 0;
}

/* A name from the source that is safe under a local directory. */
static bool safe_name(const char *s)
{
	const char *p = s;

	if (!*s || *s == '/' || strlen(s) > 4096)
		return false;
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (!len || (len == 1 && p[0] == '.') || (len == 2 && !strncmp(p, "..", 2)))
			return false;
		if (!strncmp(p, STAGE_NAME, strlen(STAGE_NAME)) && p == s)
			return false;
		p = slash ? slash + 1 : p + len;
	}
	return true;
}

static bool absolute_or_home(const char *p)
{
	return p[0] == '/' || !strcmp(p, "~") || !strncmp(p, "~/", 2);
}

/* A path on the source: base joined to root unless absolute (a new string). */
static char *join_root(const char *root, const char *base)
{
	if (!*base)
		return xstrdup(root && *root ? root : ".");
	if (absolute_or_home(base) || !root || !*root)
		return xstrdup(base);
	return xstrfmt("%s/%s", root, base);
}

/* ---- the remote listing ---- */

void gdn_copy_remote_list_command(struct sbuf *out, const char *root, const char *base, int depth)
{
	const char *b = base && *base ? base : ".";

	if (root && *root) {
		sbuf_adds(out, "cd -- ");
		gdn_sh_add_path(out, root);
		sbuf_adds(out, " || exit 3; ");
	}
	sbuf_adds(out, "if test -d ");
	gdn_sh_add_path(out, b);
	sbuf_adds(out, "; then cd -- ");
	gdn_sh_add_path(out, b);
	sbuf_adds(out, " && exec find . -mindepth 1");
	if (depth > 0)
		sbuf_addf(out, " -maxdepth %d", depth);
	sbuf_adds(out, " -type f -printf '" MARK_FILE "%T@ %s %P\\n'; elif test -f ");
	gdn_sh_add_path(out, b);
	sbuf_adds(out, "; then exec find ");
	gdn_sh_add_path(out, b);
	sbuf_adds(out, " -maxdepth 0 -printf '" MARK_ONE "%T@ %s %p\\n'; else echo " MARK_MISSING
		       "; fi");
}

struct listing {
	struct gdn_copy_files files;
	bool one;	/* the base is a single file */
	bool missing;	/* no such file or directory */
	size_t skipped; /* names that are not safe local paths */
};

static void add_file(struct listing *l, const char *name, int64_t size, int64_t mtime)
{
	struct gdn_copy_file *f;

	if (!safe_name(name)) {
		l->skipped++;
		return;
	}
	ALLOC_GROW(l->files.v, l->files.nr + 1, l->files.alloc);
	f = &l->files.v[l->files.nr++];
	f->name = xstrdup(name);
	f->size = size;
	f->mtime_s = mtime;
}

/* "MTIME SIZE NAME": false when malformed. */
static bool parse_entry(const char *s, int64_t *mtime, int64_t *size, const char **name)
{
	char *end;
	double t;
	long long n;

	errno = 0;
	t = strtod(s, &end);
	if (end == s || *end != ' ' || errno || !isfinite(t))
		return false;
	s = end + 1;
	n = strtoll(s, &end, 10);
	if (end == s || *end != ' ' || errno || n < 0)
		return false;
	*mtime = (int64_t)floor(t);
	*size = n;
	*name = end + 1;
	return true;
}

struct list_ctx {
	struct listing *l;
	struct sbuf first; /* the first line that is not ours: ssh's or find's message */
};

static int list_line(const char *line, size_t len, void *payload)
{
	struct list_ctx *c = payload;
	int64_t mtime, size;
	const char *name;

	if ((!strncmp(line, MARK_FILE, strlen(MARK_FILE)) ||
	     !strncmp(line, MARK_ONE, strlen(MARK_ONE))) &&
	    memchr(line, '\0', len)) {
		c->l->skipped++; /* a NUL byte cut the name short: no name */
	} else if (!strncmp(line, MARK_FILE, strlen(MARK_FILE)) &&
		   parse_entry(line + strlen(MARK_FILE), &mtime, &size, &name)) {
		add_file(c->l, name, size, mtime);
	} else if (!strncmp(line, MARK_ONE, strlen(MARK_ONE)) &&
		   parse_entry(line + strlen(MARK_ONE), &mtime, &size, &name)) {
		const char *slash = strrchr(name, '/');

		c->l->one = true;
		add_file(c->l, slash ? slash + 1 : name, size, mtime);
	} else if (!strcmp(line, MARK_MISSING)) {
		c->l->missing = true;
	} else if (!c->first.len && len) {
		struct sbuf t = SBUF_INIT;

		sbuf_add(&t, line, len);
		gdn_backend_first_line(&t, &c->first);
		sbuf_release(&t);
	}
	return 0;
}

static int time_left(int64_t deadline_ms, int fallback, struct gdn_err *err)
{
	int64_t left;

	if (!deadline_ms)
		return fallback;
	left = deadline_ms - gdn_now_ms();
	if (left <= 0)
		return gdn_err_set(err, GDN_ETIMEOUT, "the deadline passed before the copy");
	return left < fallback ? (int)left : fallback;
}

static int remote_list(struct gdn_backend *b, const struct gdn_copy_where *w,
		       const struct split *sp, const struct gdn_copy_opts *o, struct listing *l,
		       struct gdn_err *err)
{
	struct strvec argv = STRVEC_INIT;
	struct sbuf cmd = SBUF_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct list_ctx c = {l, SBUF_INIT};
	int ret, t;

	t = time_left(o->deadline_ms, LIST_TIMEOUT_MS, err);
	if (t < 0)
		return t;
	gdn_copy_remote_list_command(&cmd, w->remote_root, sp->base, sp->glob ? sp->depth : 0);
	strvec_pushv(&argv, w->ssh.v);
	strvec_pushl(&argv, w->host, "--", cmd.buf, NULL);
	p.argv = argv.v;
	p.on_line = list_line;
	p.payload = &c;
	p.timeout_ms = t;
	p.kill_grace_ms = 1000;
	gdn_backend_echo(b, GDN_EV_SPAWN, NULL, argv.v);
	ret = gdn_proc_run(&p, err);
	if (ret)
		goto out;
	if (p.status_kind == GDN_PROC_STOPPED)
		ret = gdn_err_set(err, GDN_EINTR, "interrupted while listing '%s' on %s", sp->base,
				  b->name);
	else if (p.status_kind == GDN_PROC_TIMEOUT)
		ret = gdn_err_set(err, GDN_ETIMEOUT, "timed out listing '%s' on %s", sp->base,
				  b->name);
	else if (p.status_kind != GDN_PROC_EXITED || (p.code && !l->files.nr && !l->missing))
		ret = gdn_err_set(err, p.code == 3 ? GDN_ENOTFOUND : GDN_EBACKEND,
				  "listing '%s' on backend '%s' failed (exit %d): %s",
				  *sp->base ? sp->base : ".", b->name, gdn_proc_exit_code(&p),
				  c.first.len ? c.first.buf : "no output");
out:
	gdn_proc_release(&p);
	strvec_clear(&argv);
	sbuf_release(&cmd);
	sbuf_release(&c.first);
	return ret;
}

/* ---- the local listing ---- */

static void walk(const char *dir, const char *rel, int depth, int max_depth, struct listing *l,
		 size_t *seen)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) && *seen < LOCAL_WALK_MAX) {
		struct stat st;
		char *path, *name;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		(*seen)++;
		path = xstrfmt("%s/%s", dir, e->d_name);
		name = *rel ? xstrfmt("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
		if (!lstat(path, &st)) {
			if (S_ISDIR(st.st_mode)) {
				if ((!max_depth || depth < max_depth) && depth < LOCAL_DEPTH_MAX)
					walk(path, name, depth + 1, max_depth, l, seen);
			} else if (S_ISREG(st.st_mode) ||
				   (S_ISLNK(st.st_mode) && !stat(path, &st) &&
				    S_ISREG(st.st_mode))) {
				add_file(l, name, (int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec);
			}
		}
		free(path);
		free(name);
	}
	closedir(d);
}

static void local_list(const char *src, const struct split *sp, struct listing *l)
{
	struct stat st;
	size_t seen = 0;

	if (stat(src, &st)) {
		l->missing = true;
	} else if (S_ISDIR(st.st_mode)) {
		walk(src, "", 1, sp->glob ? sp->depth : 0, l, &seen);
	} else if (S_ISREG(st.st_mode) && !sp->glob) {
		const char *slash = strrchr(src, '/');

		l->one = true;
		add_file(l, slash ? slash + 1 : src, (int64_t)st.st_size,
			 (int64_t)st.st_mtim.tv_sec);
	} else {
		l->missing = true;
	}
}

/* ---- filters ---- */

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct gdn_copy_file *)a)->name,
		      ((const struct gdn_copy_file *)b)->name);
}

static void filter(struct gdn_copy_files *files, const struct split *sp, const regex_t *re,
		   const struct gdn_copy_opts *o)
{
	size_t keep = 0, newest = SIZE_MAX;

	for (size_t i = 0; i < files->nr; i++) {
		struct gdn_copy_file *f = &files->v[i];

		if (!glob_match(sp, f->name) || (re && regexec(re, f->name, 0, NULL, 0)) ||
		    (o->newer_than_s && f->mtime_s < o->newer_than_s)) {
			free(f->name);
			continue;
		}
		files->v[keep++] = *f;
	}
	files->nr = keep;
	qsort(files->v, files->nr, sizeof(*files->v), cmp_name);
	if (!o->newest_only || files->nr < 2)
		return;
	for (size_t i = 0; i < files->nr; i++)
		if (newest == SIZE_MAX || files->v[i].mtime_s >= files->v[newest].mtime_s)
			newest = i;
	for (size_t i = 0; i < files->nr; i++)
		if (i != newest)
			free(files->v[i].name);
	files->v[0] = files->v[newest];
	files->nr = 1;
}

/* ---- the whole listing ---- */

struct source {
	struct gdn_copy_where w;
	struct split sp;
	char *dir; /* where the names start: local (local_root set) or remote */
	bool one;
};

static void source_release(struct source *s)
{
	gdn_copy_where_release(&s->w);
	free(s->sp.base);
	free(s->dir);
}

static int list_source(struct gdn_backend *b, const char *path, const struct gdn_copy_opts *o,
		       struct source *s, struct gdn_copy_files *out, struct gdn_err *err)
{
	struct listing l = {{0}, false, false, 0};
	regex_t re;
	bool have_re = false;
	char *src = NULL;
	int ret = 0;

	if (!gdn_backend_can_copy(b))
		return gdn_err_set(err, GDN_EUSAGE,
				   "backend '%s' (type %s) cannot copy files back (ssh, dev-tpu, "
				   "slurm and local can)",
				   b->name, b->ops->type);
	if (!path || !*path || gdn_check_text(path, "path", GDN_EUSAGE, err))
		return path && *path ? err->code
				     : gdn_err_set(err, GDN_EUSAGE, "no path to copy back");
	if (o->pattern) {
		int rc = regcomp(&re, o->pattern, REG_EXTENDED | REG_NOSUB);

		if (rc) {
			char msg[256];

			regerror(rc, &re, msg, sizeof(msg));
			return gdn_err_set(err, GDN_EUSAGE, "invalid pattern '%s': %s", o->pattern,
					   msg);
		}
		have_re = true;
	}
	split_path(path, &s->sp);
	ret = b->ops->copy_source(b, s->sp.base, &s->w, err);
	if (ret)
		goto out;
	if (s->w.local_root) {
		src = join_root(s->w.local_root, s->sp.base);
		if (!strncmp(src, "~", 1)) {
			char *t = gdn_backend_local_path(src, NULL);

			free(src);
			src = t;
		}
		local_list(src, &s->sp, &l);
	} else {
		ret = remote_list(b, &s->w, &s->sp, o, &l, err);
		if (ret)
			goto out;
		src = join_root(s->w.remote_root, s->sp.base);
	}
	if (l.missing) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no such file or directory '%s' on %s%s%s",
				  *s->sp.base ? s->sp.base : ".", b->name,
				  absolute_or_home(s->sp.base) ? "" : " under ",
				  absolute_or_home(s->sp.base)
				      ? ""
				      : (s->w.local_root    ? s->w.local_root
					 : s->w.remote_root ? s->w.remote_root
							    : "the login directory"));
		goto out;
	}
	if (l.skipped)
		gdn_backend_event(b, GDN_EV_INFO, "skipped %zu names that are not safe local paths",
				  l.skipped);
	s->one = l.one;
	if (l.one) { /* the names start at the file's directory */
		char *slash = strrchr(src, '/');
		char *d = slash == src ? xstrdup("/")
			  : slash      ? xstrndup(src, (size_t)(slash - src))
				       : xstrdup(".");

		free(src);
		src = d;
	}
	s->dir = src;
	src = NULL;
	filter(&l.files, &s->sp, have_re ? &re : NULL, o);
	*out = l.files;
	l.files = (struct gdn_copy_files){0};
out:
	gdn_copy_files_release(&l.files);
	if (have_re)
		regfree(&re);
	free(src);
	return ret;
}

int gdn_backend_copy_list(struct gdn_backend *b, const char *path, const struct gdn_copy_opts *o,
			  struct gdn_copy_files *out, struct gdn_err *err)
{
	struct source s = {GDN_COPY_WHERE_INIT, {0}, NULL, false};
	int ret;

	memset(out, 0, sizeof(*out));
	ret = list_source(b, path, o, &s, out, err);
	source_release(&s);
	return ret;
}

/* ---- copying ---- */

/* Already there: same size and modification time. */
static bool present(const char *dest, const struct gdn_copy_file *f)
{
	struct stat st;

	return !stat(dest, &st) && S_ISREG(st.st_mode) && (int64_t)st.st_size == f->size &&
	       (int64_t)st.st_mtim.tv_sec == f->mtime_s;
}

static int copy_local_file(const char *src, const char *dest, struct gdn_err *err)
{
	char *part = xstrfmt("%s.part", dest);
	char buf[1 << 16];
	struct stat st;
	int in = -1, outfd = -1, ret = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &st)) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read '%s': %s", src, strerror(errno));
		goto out;
	}
	ret = gdn_mkdir_parents(dest, 0777, err);
	if (ret)
		goto out;
	outfd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (outfd < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot write '%s': %s", part, strerror(errno));
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || gdn_write_all(outfd, buf, (size_t)n)) {
			ret = gdn_err_set(err, GDN_EIO, "cannot copy '%s' to '%s': %s", src, part,
					  strerror(errno));
			goto out;
		}
		if (gdn_proc_interrupted()) {
			ret = gdn_err_set(err, GDN_EINTR, "interrupted while copying '%s'", src);
			goto out;
		}
	}
	{
		struct timespec times[2] = {st.st_atim, st.st_mtim};

		if (futimens(outfd, times) || close(outfd)) {
			outfd = -1;
			ret = gdn_err_set(err, GDN_EIO, "cannot write '%s': %s", part,
					  strerror(errno));
			goto out;
		}
	}
	outfd = -1;
	if (rename(part, dest))
		ret = gdn_err_set(err, GDN_EIO, "cannot rename '%s' to '%s': %s", part, dest,
				  strerror(errno));
out:
	if (in >= 0)
		close(in);
	if (outfd >= 0)
		close(outfd);
	if (ret)
		unlink(part);
	free(part);
	return ret;
}

/* rsync -e splits its argument at spaces and honours '...' and "..." (no backslashes). */
static int rsync_words(const struct strvec *argv, struct sbuf *e, struct gdn_err *err)
{
	for (size_t i = 0; i < argv->nr; i++) {
		const char *s = argv->v[i];

		if (strchr(s, '\'') && strchr(s, '"'))
			return gdn_err_set(err, GDN_ECONFIG,
					   "cannot pass ssh option '%s' with both ' and \" to "
					   "rsync -e",
					   s);
		if (e->len)
			sbuf_addch(e, ' ');
		if (*s && !strpbrk(s, " \t'\""))
			sbuf_adds(e, s);
		else if (!strchr(s, '\''))
			sbuf_addf(e, "'%s'", s);
		else
			sbuf_addf(e, "\"%s\"", s);
	}
	return 0;
}

/* rsync's remote path: relative to the remote home, so "~/x" is "x". */
static const char *rsync_remote_dir(const char *dir)
{
	if (!strcmp(dir, "~"))
		return ".";
	if (!strncmp(dir, "~/", 2))
		return dir[2] ? dir + 2 : ".";
	return dir;
}

static int copy_remote(struct gdn_backend *b, const struct source *s,
		       const struct gdn_copy_files *todo, const char *local_dir,
		       int64_t deadline_ms, struct gdn_err *err)
{
	struct strvec argv = STRVEC_INIT;
	struct sbuf e = SBUF_INIT, list = SBUF_INIT, first = SBUF_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	char *stage = xstrfmt("%s/%s", local_dir, STAGE_NAME);
	char *listfile = xstrfmt("%s/%s.list", local_dir, STAGE_NAME);
	int ret, t;

	ret = rsync_words(&s->w.ssh, &e, err);
	if (ret)
		goto out;
	for (size_t i = 0; i < todo->nr; i++)
		sbuf_addf(&list, "%s\n", todo->v[i].name);
	ret = gdn_mkdir_p(stage, 0777, err);
	if (!ret)
		ret = gdn_write_file_atomic(listfile, list.buf, list.len, err);
	if (ret)
		goto out;
	t = time_left(deadline_ms, COPY_TIMEOUT_MS, err);
	if (t < 0) {
		ret = t;
		goto out;
	}
	strvec_pushl(&argv, s->w.rsync ? s->w.rsync : "rsync", "-s", "-t", "--partial", NULL);
	strvec_pushf(&argv, "--files-from=%s", listfile);
	strvec_pushl(&argv, "-e", e.buf, NULL);
	strvec_pushf(&argv, "%s:%s/", s->w.host, rsync_remote_dir(s->dir));
	strvec_pushf(&argv, "%s/", stage);
	p.argv = argv.v;
	p.capture = true;
	p.out.limit = 1 << 20;
	p.timeout_ms = t;
	p.kill_grace_ms = 1000;
	ret = gdn_backend_spawn(b, GDN_EV_SPAWN, &p, err);
	if (ret || b->dry_run)
		goto out;
	if (p.status_kind == GDN_PROC_STOPPED) {
		ret = gdn_err_set(err, GDN_EINTR, "interrupted while copying from %s", b->name);
		goto out;
	}
	if (p.status_kind == GDN_PROC_TIMEOUT) {
		ret = gdn_err_set(err, GDN_ETIMEOUT, "timed out copying from %s", b->name);
		goto out;
	}
	if (p.status_kind != GDN_PROC_EXITED || p.code) {
		gdn_backend_first_line(&p.out, &first);
		ret = gdn_err_set(err, GDN_EBACKEND, "rsync from backend '%s' failed (exit %d): %s",
				  b->name, gdn_proc_exit_code(&p), first.buf);
		goto out;
	}
	for (size_t i = 0; i < todo->nr && !ret; i++) {
		char *from = xstrfmt("%s/%s", stage, todo->v[i].name);
		char *to = xstrfmt("%s/%s", local_dir, todo->v[i].name);

		ret = gdn_mkdir_parents(to, 0777, err);
		if (!ret && rename(from, to))
			ret = gdn_err_set(err, GDN_EIO, "cannot rename '%s' to '%s': %s", from, to,
					  strerror(errno));
		free(from);
		free(to);
	}
	if (!ret) {
		unlink(listfile);
		/* empty directories of the staging area, deepest first */
		for (size_t i = todo->nr; i > 0; i--) {
			char *d = xstrfmt("%s/%s", stage, todo->v[i - 1].name);

			for (char *slash; (slash = strrchr(d, '/')) && strlen(d) > strlen(stage);) {
				*slash = 0;
				if (strlen(d) > strlen(stage))
					rmdir(d);
			}
			free(d);
		}
		rmdir(stage);
	}
out:
	gdn_proc_release(&p);
	strvec_clear(&argv);
	sbuf_release(&e);
	sbuf_release(&list);
	sbuf_release(&first);
	free(stage);
	free(listfile);
	return ret;
}

int gdn_backend_copy_back(struct gdn_backend *b, const char *path, const char *local_dir,
			  const struct gdn_copy_opts *o, struct strvec *files_out,
			  struct gdn_err *err)
{
	struct source s = {GDN_COPY_WHERE_INIT, {0}, NULL, false};
	struct gdn_copy_files files = {0}, todo = {0};
	int ret;

	ret = list_source(b, path, o, &s, &files, err);
	if (ret)
		goto out;
	if (!b->dry_run) {
		ret = gdn_mkdir_p(local_dir, 0777, err);
		if (ret)
			goto out;
	}
	for (size_t i = 0; i < files.nr; i++) {
		char *dest = xstrfmt("%s/%s", local_dir, files.v[i].name);

		if (!present(dest, &files.v[i])) {
			ALLOC_GROW(todo.v, todo.nr + 1, todo.alloc);
			todo.v[todo.nr++] = files.v[i]; /* borrowed names */
		}
		free(dest);
	}
	if (todo.nr && s.w.local_root) {
		for (size_t i = 0; i < todo.nr && !ret; i++) {
			char *from = xstrfmt("%s/%s", s.dir, todo.v[i].name);
			char *to = xstrfmt("%s/%s", local_dir, todo.v[i].name);

			if (b->dry_run)
				gdn_backend_event(b, GDN_EV_SPAWN, "copy %s %s", from, to);
			else
				ret = copy_local_file(from, to, err);
			free(from);
			free(to);
		}
	} else if (todo.nr) {
		ret = copy_remote(b, &s, &todo, local_dir, o->deadline_ms, err);
	}
	for (size_t i = 0; !ret && files_out && i < files.nr; i++)
		strvec_pushf(files_out, "%s/%s", local_dir, files.v[i].name);
out:
	free(todo.v);
	gdn_copy_files_release(&files);
	source_release(&s);
	return ret;
}

/* ---- the slurm login host ---- */

static int check_setting(struct gdn_backend *b, const char *key, const char *value,
			 int (*check)(const char *, const char *, int, struct gdn_err *),
			 struct gdn_err *err)
{
	struct gdn_err sub = GDN_ERR_INIT;
	struct sbuf what = SBUF_INIT;
	int ret = 0;

	sbuf_addf(&what, "backends.%s.%s", b->name, key);
	if (check(value, what.buf, GDN_ECONFIG, &sub))
		ret = gdn_err_set(err, GDN_ECONFIG, "%s: %s", gdn_backend_origin(b, key), sub.msg);
	sbuf_release(&what);
	return ret;
}

int gdn_copy_ssh_from_config(struct gdn_backend *b, struct gdn_copy_where *w, struct gdn_err *err)
{
	const char *host = gdn_backend_str(b, "host"), *user = gdn_backend_str(b, "user");
	const char *identity = gdn_backend_str(b, "identity");
	const struct strvec *opts = gdn_backend_list(b, "ssh_options");
	long port = (long)gdn_backend_int(b, "port", 0);
	int ret;

	if (!host)
		return gdn_err_set(err, GDN_ENOTFOUND,
				   "backends.%s.host (the login host) is not set", b->name);
	ret = check_setting(b, "host", host, gdn_check_host, err);
	if (!ret && user)
		ret = check_setting(b, "user", user, gdn_check_user, err);
	if (!ret && identity)
		ret = check_setting(b, "identity", identity, gdn_check_text, err);
	for (size_t i = 0; !ret && i < opts->nr; i++)
		ret = check_setting(b, "ssh_options", opts->v[i], gdn_check_text, err);
	if (!ret && (port < 0 || port > 65535))
		ret = gdn_backend_config_error(b, "port", err, "must be 1 to 65535, not %ld", port);
	if (ret)
		return ret;
	strvec_pushl(&w->ssh, gdn_backend_program(b, "ssh", "ssh"), "-o", "BatchMode=yes", NULL);
	if (port > 0) {
		strvec_push(&w->ssh, "-p");
		strvec_pushf(&w->ssh, "%ld", port);
	}
	if (identity) {
		char *id = gdn_backend_local_path(identity, NULL);

		strvec_pushl(&w->ssh, "-i", id, NULL);
		free(id);
	}
	if (user)
		strvec_pushl(&w->ssh, "-l", user, NULL);
	for (size_t i = 0; i < opts->nr; i++)
		strvec_pushl(&w->ssh, "-o", opts->v[i], NULL);
	w->host = xstrdup(host);
	w->rsync = gdn_backend_program(b, "rsync", "rsync");
	return 0;
}
