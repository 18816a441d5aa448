/*
 * gdnctl demo: the whole product on a throwaway project, without a cluster
 * or an API key. It copies examples/demo into DIR/project (a new git
 * repository) and its example agent into DIR/agent, runs this same binary's
 * `gdnctl loop` there (local backend, validation gate, measured performance
 * policy; journal and perf_state.json in DIR/logs), then `gdnctl report`
 * (DIR/report.html) and `gdnctl lint-log`, and sums up. docs/gdnctl-demo.md.
 *
 * Children are spawned by argv through the proc API (no shell) in their own
 * process groups; gdnctl's SIGINT/SIGTERM handlers forward a Ctrl-C to the
 * running child's group and the demo exits 130/143.
 */
#include "gdnctl/compat.h"
#include "gdnctl/journal.h"
#include "gdnctl/cmd.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/file.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/report.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/* The example agent has this many patches. */
#define DEMO_PATCHES 5
/* ... in a series for one worker and one for two (agent.sh --workers 2). */
#define DEMO_EXAMPLE_WORKERS 2
/* The performance thresholds: the demo's changes are 2x and more, noise on a
 * loaded machine stays well inside 30 %. */
#define DEMO_THRESHOLD_PCT "30"

/*
 * The project's gdnctl.yaml says what to run: these variables would override
 * it (and the demo's --workers says how many workers: the example agent's
 * series is made for that number).
 */
static const char *const demo_env[] = {"GDNCTL_TEST_COMMAND",
				       "GDNCTL_PROFILE_COMMAND",
				       "GDNCTL_TRACE_GLOB",
				       "GDNCTL_LOG_FILE",
				       "GDNCTL_LOOP_BACKEND",
				       "GDNCTL_LOOP_WORKERS",
				       NULL};

static const char *const agent_choices[] = {"example", "codex", "claude", NULL};

struct demo_args {
	const char *dir, *agent;
	long iterations, workers;
	int keep;
};

static const struct opt_usage demo_usage = {
    "gdnctl demo [--dir DIR] [--agent example|codex|claude] [--iterations N] [--workers N] "
    "[--keep]",
    "Run the hill-climb loop end to end on a small bundled C project and write a report.",
    "DIR gets project/ (a new git repository from examples/demo: a matmul kernel, its\n"
    "test and benchmark), agent/ (the deterministic example agent and its patches),\n"
    "logs/ (the loop's journal loop.jsonl and perf_state.json) and report.html.\n"
    "The loop runs 'make -s test' and 'make -s bench' after each commit, keeps a\n"
    "change only when the test passes and throughput/speedup (the kernel against\n"
    "the unchanged starting kernel, timed interleaved) rises by 30 % or more,\n"
    "and reverts the rest (kept under refs/gdnctl/discarded/N). The example agent\n"
    "(not an AI) proposes five fixed patches: a speed-up, a change that breaks the\n"
    "test, a slower one, one that changes nothing, a second speed-up.\n"
    "With --workers 2 the loop runs two workers side by side (gdnctl loop --workers\n"
    "2) and the example agent a two-worker series: the two speed-ups, the same\n"
    "idea as the first written another way (it conflicts with the promoted first\n"
    "one and is discarded), the broken one and the one that changes nothing. It\n"
    "ends with the serial run's champion, in less wall time.\n"
    "Needs git, make, a C compiler and zlib headers. Exit status: 0 ok; 1 the loop,\n"
    "the report or the log check failed; 2 usage (a non-empty DIR); 4 the agent\n"
    "program or examples/demo not found; 130/143 interrupted."};

/* ---- files ---- */

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

static bool demo_dir_ok(const char *dir)
{
	char *m = xstrfmt("%s/matmul.c", dir), *a = xstrfmt("%s/agent/agent.sh", dir);
	bool ok = is_file(m) && is_file(a);

	free(m);
	free(a);
	return ok;
}

/*
 * examples/demo: next to the executable (build/release/gdnctl ->
 * ../../examples/demo, or ../examples/demo, or an installed bin/ ->
 * ../share/gdnctl/examples/demo), else in the source tree gdnctl was built
 * from, else in the installed data dir. Returns a new string or NULL;
 * every place looked at is appended to `tried`.
 */
static char *find_demo_source(struct strvec *tried)
{
	static const char *const rel[] = {"../../examples/demo", "../examples/demo",
					  "../share/gdnctl/examples/demo"};
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *found = NULL;

	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; i < ARRAY_SIZE(rel) && !found; i++) {
			char *cand = xstrfmt("%s/%s", exe, rel[i]);

			strvec_push(tried, cand);
			if (demo_dir_ok(cand))
				found = realpath(cand, NULL);
			free(cand);
		}
	}
	if (!found) {
		strvec_push(tried, GDNCTL_SOURCE_DATADIR "/examples/demo");
		if (demo_dir_ok(GDNCTL_SOURCE_DATADIR "/examples/demo"))
			found = xstrdup(GDNCTL_SOURCE_DATADIR "/examples/demo");
	}
	if (!found) {
		strvec_push(tried, GDNCTL_DATADIR "/examples/demo");
		if (demo_dir_ok(GDNCTL_DATADIR "/examples/demo"))
			found = xstrdup(GDNCTL_DATADIR "/examples/demo");
	}
	return found;
}

static int copy_file(const char *src, const char *dst, mode_t mode, struct gdn_err *err)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, ret = 0;
	ssize_t n;

	if (in < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", src);
		goto out;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0777);
	if (out < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot create '%s'", dst);
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", src);
			goto out;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", dst);
				goto out;
			}
			off += w;
		}
	}
	if (close(out)) {
		out = -1;
		ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", dst);
		goto out;
	}
	out = -1;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ret;
}

/*
 * Copy the tree src into dst (created), regular files and directories only;
 * top-level names in `skip` are left out (build outputs, the agent).
 */
static int copy_tree(const char *src, const char *dst, const char *const *skip, struct gdn_err *err)
{
	DIR *d = NULL;
	struct dirent *e;
	struct sbuf s = SBUF_INIT, t = SBUF_INIT;
	int ret = 0;

	if (mkdir(dst, 0777) && errno != EEXIST) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot create '%s'", dst);
		goto out;
	}
	d = opendir(src);
	if (!d) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", src);
		goto out;
	}
	while ((e = readdir(d))) {
		struct stat st;
		bool skipped = false;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		for (size_t i = 0; skip && skip[i]; i++)
			skipped = skipped || !strcmp(e->d_name, skip[i]);
		if (skipped)
			continue;
		sbuf_reset(&s);
		sbuf_addf(&s, "%s/%s", src, e->d_name);
		sbuf_reset(&t);
		sbuf_addf(&t, "%s/%s", dst, e->d_name);
		if (lstat(s.buf, &st)) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", s.buf);
			goto out;
		}
		if (S_ISDIR(st.st_mode))
			ret = copy_tree(s.buf, t.buf, NULL, err);
		else if (S_ISREG(st.st_mode))
			ret = copy_file(s.buf, t.buf, st.st_mode, err);
		if (ret)
			goto out;
	}
out:
	if (d)
		closedir(d);
	sbuf_release(&s);
	sbuf_release(&t);
	return ret;
}

/* rm -r of a directory the demo created (no symlinks are followed). */
static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	struct sbuf s = SBUF_INIT;

	while (d && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sbuf_reset(&s);
		sbuf_addf(&s, "%s/%s", path, e->d_name);
		if (!lstat(s.buf, &st) && S_ISDIR(st.st_mode))
			remove_tree(s.buf);
		else
			unlink(s.buf);
	}
	if (d)
		closedir(d);
	rmdir(path);
	sbuf_release(&s);
}

/* 1 when path is a directory with entries, 0 when empty, -1 when it does not exist. */
static int dir_state(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int state = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			state = 1;
	closedir(d);
	return state;
}

/* ---- children ---- */

static const char *self_exe(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

/*
 * Run argv in dir, output straight to ours. Returns the child's exit code
 * (gdn_proc_exit_code), or -1 when it could not be started (err set).
 */
static int run_child(const struct strvec *argv, const char *dir, bool quiet, const char *const *env,
		     struct gdn_err *err)
{
	struct gdn_proc p = GDN_PROC_INIT;
	int rc = -1;

	fflush(stdout);
	fflush(stderr);
	p.argv = argv->v;
	p.dir = dir;
	p.env = env;
	p.kill_grace_ms = 10000;
	if (quiet)
		p.capture = true;
	else
		p.inherit_output = true;
	if (gdn_proc_run(&p, err))
		goto out;
	rc = gdn_proc_exit_code(&p);
	if (quiet && rc)
		fputs(p.out.buf, stderr);
out:
	gdn_proc_release(&p);
	return rc;
}

static int git(const char *dir, struct gdn_err *err, ...)
{
	struct strvec argv = STRVEC_INIT;
	const char *a;
	va_list ap;
	int rc;

	strvec_push(&argv, "git");
	va_start(ap, err);
	while ((a = va_arg(ap, const char *)))
		strvec_push(&argv, a);
	va_end(ap);
	rc = run_child(&argv, dir, true, NULL, err);
	if (rc > 0)
		gdn_err_set(err, GDN_EFAILED, "git %s failed (exit %d)", argv.v[1], rc);
	strvec_clear(&argv);
	return rc;
}

/* A new repository in dir with one commit of everything in it. */
static int init_repo(const char *dir, struct gdn_err *err)
{
	if (git(dir, err, "init", "-q", NULL) ||
	    git(dir, err, "config", "user.name", "gdnctl demo", NULL) ||
	    git(dir, err, "config", "user.email", "demo@gdnctl.invalid", NULL) ||
	    git(dir, err, "config", "commit.gpgsign", "false", NULL) ||
	    git(dir, err, "checkout", "-q", "-b", "main", NULL) ||
	    git(dir, err, "add", "-A", NULL) ||
	    git(dir, err, "commit", "-q", "-m", "demo: a naive matmul, its test and benchmark",
		NULL))
		return -1;
	return 0;
}

/* ---- the summary ---- */

struct outcome {
	long kept, reverted, conflicts;
	struct strvec lines;
	long first_discarded;
};

/*
 * --workers: a candidate that conflicts with a champion another worker
 * promoted meanwhile (a `rebase` event with "result": "conflict", or a
 * `conflict` event) and the ref it was kept under (`ref_kept`).
 */
struct conflict {
	long iteration;
	char *reason, *ref;
};

struct conflicts {
	struct conflict *v;
	size_t nr, alloc;
};

static struct conflict *conflict_of(struct conflicts *cs, long it, bool add)
{
	for (size_t i = 0; i < cs->nr; i++)
		if (cs->v[i].iteration == it)
			return &cs->v[i];
	if (!add)
		return NULL;
	ALLOC_GROW(cs->v, cs->nr + 1, cs->alloc);
	cs->v[cs->nr] = (struct conflict){.iteration = it};
	return &cs->v[cs->nr++];
}

static void read_conflicts(const char *buf, size_t len, struct conflicts *cs)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		json_t *e = json_loadb(p, n, 0, NULL);
		enum gdn_event ev =
		    gdn_journal_event(e ? json_string_value(json_object_get(e, "event")) : NULL);
		const char *result = e ? json_string_value(json_object_get(e, "result")) : NULL;
		const char *reason = e ? json_string_value(json_object_get(e, "reason")) : NULL;
		long it = e ? (long)json_integer_value(json_object_get(e, "iteration")) : 0;
		struct conflict *c = NULL;

		if (it > 0 && (ev == GDN_EV_CONFLICT ||
			       (ev == GDN_EV_REBASE && result && !strcmp(result, "conflict")))) {
			c = conflict_of(cs, it, true);
			if (reason && !c->reason)
				c->reason = xstrdup(reason);
		} else if (it > 0 && ev == GDN_EV_REF_KEPT && (c = conflict_of(cs, it, false)) &&
			   !c->ref && json_string_value(json_object_get(e, "ref"))) {
			c->ref = xstrdup(json_string_value(json_object_get(e, "ref")));
		}
		json_decref(e);
		p += n + 1;
	}
}

/*
 * What the loop did, from its journal through the report's model (commit
 * subjects from the repository): one line per iteration with commits.
 */
static void read_journal(const char *path, const char *repo, const char *log_dir, struct outcome *o)
{
	struct gdn_report r = GDN_REPORT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf buf = SBUF_INIT;
	struct conflicts cs = {0};

	if (sbuf_read_file(&buf, path, 64 << 20, &err) ||
	    gdn_report_load_journal(&r, buf.buf, buf.len, NULL, path, &err))
		goto out;
	read_conflicts(buf.buf, buf.len, &cs);
	gdn_report_add_hypotheses(&r, repo, log_dir);
	for (size_t i = 0; i < r.nr; i++) {
		const struct gdn_report_iter *it = &r.v[i];
		const char *subj = it->hypothesis ? it->hypothesis : "?";
		const struct conflict *c = conflict_of(&cs, it->iteration, false);

		if (c) {
			o->conflicts++;
			strvec_pushf(&o->lines,
				     "iteration %ld discarded (conflicts with the champion another "
				     "worker promoted meanwhile: %s): %s, kept as %s",
				     it->iteration, c->reason ? c->reason : "?", subj,
				     c->ref ? c->ref : "no discarded ref");
		} else if (it->reverted) {
			struct sbuf why = SBUF_INIT;

			gdn_loop_reason_words(&why, it->reason);
			o->reverted++;
			if (!o->first_discarded)
				o->first_discarded = it->iteration;
			strvec_pushf(&o->lines, "iteration %ld reverted (%s): %s, kept as %s",
				     it->iteration, why.len ? why.buf : "?", subj,
				     it->discarded_ref ? it->discarded_ref : "no discarded ref");
			sbuf_release(&why);
		} else if (it->kept > 0) {
			o->kept++;
			strvec_pushf(&o->lines, "iteration %ld kept (%ld commit%s): %s",
				     it->iteration, it->kept, it->kept == 1 ? "" : "s", subj);
		}
	}
out:
	for (size_t i = 0; i < cs.nr; i++) {
		free(cs.v[i].reason);
		free(cs.v[i].ref);
	}
	free(cs.v);
	gdn_report_release(&r);
	sbuf_release(&buf);
}

/* The exit code for an interrupted child, or 0. */
static int interrupted_code(void)
{
	int sig = gdn_proc_interrupted();

	return sig ? GDN_EXIT_SIGNAL + sig : 0;
}

/* ---- the command ---- */

/* A demo run: its options, its paths and how far it got. */
struct demo {
	struct demo_args a;
	const char *exe;
	bool example, created, loop_started;
	char *src, *dir, *project, *agent_dir, *logs, *report, *prompt, *journal, *agent_bin;
	int64_t t0;
	int loop_rc, report_rc;
};

static void demo_release(struct demo *d)
{
	free(d->src);
	free(d->dir);
	free(d->project);
	free(d->agent_dir);
	free(d->logs);
	free(d->report);
	free(d->prompt);
	free(d->journal);
	free(d->agent_bin);
}

/* A real agent (--agent codex|claude): its program, from GDNCTL_CODEX/CLAUDE or PATH. */
static int find_agent(struct demo *d)
{
	const char *env = getenv(!strcmp(d->a.agent, "codex") ? "GDNCTL_CODEX" : "GDNCTL_CLAUDE");
	const char *want = env && *env ? env : d->a.agent;
	const char *path = getenv("PATH");
	struct strvec dirs = STRVEC_INIT;

	if (strchr(want, '/')) {
		if (!access(want, X_OK) && is_file(want))
			d->agent_bin = xstrdup(want);
	} else {
		strvec_split(&dirs, path ? path : "/usr/local/bin:/usr/bin:/bin", ':');
		for (size_t i = 0; i < dirs.nr && !d->agent_bin; i++) {
			char *cand = xstrfmt("%s/%s", *dirs.v[i] ? dirs.v[i] : ".", want);

			if (is_file(cand) && !access(cand, X_OK))
				d->agent_bin = cand;
			else
				free(cand);
		}
	}
	strvec_clear(&dirs);
	if (d->agent_bin)
		return 0;
	gdn_error("--agent %s: '%s' is not installed (not found in PATH); install and "
		  "log in to it, or run the demo with the example agent",
		  d->a.agent, want);
	return GDN_EXIT_BACKEND;
}

/* The checks before anything is created: the options, this program, the agent, examples/demo. */
static int check(struct demo *d)
{
	struct strvec tried = STRVEC_INIT;
	int code;

	if (d->example && d->a.iterations > DEMO_PATCHES) {
		gdn_error("--iterations %ld: the example agent has %d patches (use 1 to %d)",
			  d->a.iterations, DEMO_PATCHES, DEMO_PATCHES);
		return GDN_EXIT_USAGE;
	}
	if (d->example && d->a.workers > DEMO_EXAMPLE_WORKERS) {
		gdn_error("--workers %ld: the example agent has patch series for 1 and %d workers",
			  d->a.workers, DEMO_EXAMPLE_WORKERS);
		return GDN_EXIT_USAGE;
	}
	if (!d->exe) {
		gdn_error("cannot find this program's path (/proc/self/exe)");
		return GDN_EXIT_FAILED;
	}
	if (!d->example && (code = find_agent(d)))
		return code;
	d->src = find_demo_source(&tried);
	if (!d->src) {
		struct sbuf l = SBUF_INIT;

		for (size_t i = 0; i < tried.nr; i++)
			sbuf_addf(&l, "%s%s", i ? ", " : "", tried.v[i]);
		gdn_error("the demo project examples/demo was not found (looked in %s)", l.buf);
		sbuf_release(&l);
	}
	strvec_clear(&tried);
	return d->src ? 0 : GDN_EXIT_BACKEND;
}

/* --dir DIR (new or empty), else a new directory under $TMPDIR. */
static int make_dir(struct demo *d)
{
	const char *tmp = getenv("TMPDIR");
	int state;

	if (!d->a.dir) {
		d->dir = xstrfmt("%s/gdnctl-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(d->dir)) {
			gdn_error("cannot create a directory like '%s': %s", d->dir,
				  strerror(errno));
			return GDN_EXIT_FAILED;
		}
		d->created = true;
		if (d->dir[0] != '/') { /* a relative TMPDIR: the loop runs elsewhere */
			char *abs = realpath(d->dir, NULL);

			if (abs) {
				free(d->dir);
				d->dir = abs;
			}
		}
		return 0;
	}
	state = dir_state(d->a.dir);
	if (state > 0) {
		gdn_error("--dir '%s' is not empty: give a new or empty directory", d->a.dir);
		return GDN_EXIT_USAGE;
	}
	if (state < 0 && is_file(d->a.dir)) {
		gdn_error("--dir '%s' is a file: give a new or empty directory", d->a.dir);
		return GDN_EXIT_USAGE;
	}
	if (state < 0) {
		if (mkdir(d->a.dir, 0777)) {
			gdn_error("cannot create '%s': %s", d->a.dir, strerror(errno));
			return GDN_EXIT_FAILED;
		}
		d->created = true;
	}
	d->dir = realpath(d->a.dir, NULL);
	if (!d->dir) {
		gdn_error("cannot resolve '%s': %s", d->a.dir, strerror(errno));
		return GDN_EXIT_FAILED;
	}
	return 0;
}

/* DIR/project (a new repository) and DIR/agent from examples/demo. */
static int make_project(struct demo *d)
{
	static const char *const project_skip[] = {"agent", "build", "out", NULL};
	static const char *const agent_skip[] = {NULL};
	struct gdn_err err = GDN_ERR_INIT;
	char *asrc;
	int rc;

	d->project = xstrfmt("%s/project", d->dir);
	d->agent_dir = xstrfmt("%s/agent", d->dir);
	d->logs = xstrfmt("%s/logs", d->dir);
	d->report = xstrfmt("%s/report.html", d->dir);
	d->prompt = xstrfmt("%s/prompt.md", d->project);
	d->journal = xstrfmt("%s/loop.jsonl", d->logs);
	gdn_say("demo directory: %s", d->dir);
	gdn_say("demo project from %s", d->src);
	asrc = xstrfmt("%s/agent", d->src);
	rc = copy_tree(d->src, d->project, project_skip, &err);
	if (!rc && d->example)
		rc = copy_tree(asrc, d->agent_dir, agent_skip, &err);
	free(asrc);
	if (rc)
		return gdn_die_err(&err);
	if (init_repo(d->project, &err)) {
		gdn_error("cannot create the demo repository: %s", err.msg);
		return interrupted_code() ? interrupted_code() : GDN_EXIT_FAILED;
	}
	return 0;
}

/*
 * The loop's console goes to DIR/logs/loop-console.log, not the terminal
 * (the agents' output is in the transcripts): the demo shows each
 * iteration's banner as it starts, then its decisions (sum_up).
 */
struct console {
	FILE *f;
};

static int console_line(const char *line, size_t len, void *payload)
{
	struct console *c = payload;
	const char *b = memmem(line, len, "] === ", 6);

	if (c->f) {
		fwrite(line, 1, len, c->f);
		fputc('\n', c->f);
		fflush(c->f);
	}
	if (b && len > 4 && !memcmp(line + len - 4, " ===", 4))
		gdn_say("%.*s", (int)(len - (size_t)(b + 6 - line) - 4), b + 6);
	return 0;
}

/* The loop, its console to `path`; -1 with err when it could not run, else its exit code. */
static int run_loop_child(const struct strvec *argv, const char *dir, const char *path,
			  struct gdn_err *err)
{
	struct gdn_proc p = GDN_PROC_INIT;
	struct console c = {fopen(path, "w")};
	int rc = -1;

	fflush(stdout);
	fflush(stderr);
	if (!c.f)
		gdn_warn("cannot write %s: %s (the loop's console is not kept)", path,
			 strerror(errno));
	p.argv = argv->v;
	p.dir = dir;
	p.env = demo_env;
	p.kill_grace_ms = 10000;
	p.on_line = console_line;
	p.payload = &c;
	if (!gdn_proc_run(&p, err))
		rc = gdn_proc_exit_code(&p);
	gdn_proc_release(&p);
	if (c.f)
		fclose(c.f);
	return rc;
}

/* `gdnctl loop` on the project; its exit status in d->loop_rc. */
static int run_loop(struct demo *d)
{
	struct strvec av = STRVEC_INIT;
	struct sbuf agent_cmd = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *console;
	int code = 0;

	strvec_pushl(&av, d->exe, "loop", "--iterations", NULL);
	strvec_pushf(&av, "%ld", d->a.iterations);
	if (d->a.workers > 1) {
		strvec_push(&av, "--workers");
		strvec_pushf(&av, "%ld", d->a.workers);
	}
	if (d->example) {
		char *script = xstrfmt("%s/agent.sh", d->agent_dir);

		sbuf_add_shell_quoted(&agent_cmd, script);
		if (d->a.workers > 1)
			sbuf_addf(&agent_cmd, " --workers %ld", d->a.workers);
		sbuf_adds(&agent_cmd, " {prompt_file}");
		free(script);
		strvec_pushl(&av, "--agent", "command", "--agent-cmd", agent_cmd.buf,
			     "--agent-timeout", "5m", "--agent-idle-timeout", "2m", NULL);
	} else {
		strvec_pushl(&av, "--agent", d->a.agent, "--codex-bin", d->agent_bin, NULL);
	}
	strvec_pushl(&av, "--prompt-file", d->prompt, "--log-dir", d->logs, "--validation-mode",
		     "required", "--validation-timeout", "10m", "--perf-mode", "on",
		     "--perf-metric", "throughput/speedup", "--perf-direction", "higher",
		     "--perf-min-improvement-pct", DEMO_THRESHOLD_PCT, "--perf-max-regression-pct",
		     DEMO_THRESHOLD_PCT, "--perf-repeats", "5", "--perf-repeat-stat", "best",
		     "--perf-regression-policy", "revert-count-failure",
		     "--perf-within-threshold-policy", "revert", "--max-failures", "-1",
		     "--sleep-seconds", "0", "--retry-sleep-seconds", "0", NULL);
	if (d->a.workers > 1)
		gdn_say(
		    "running: gdnctl loop --iterations %ld --workers %ld --agent %s ... (in %s)",
		    d->a.iterations, d->a.workers,
		    d->example ? "command (the EXAMPLE agent: deterministic patches, not an AI)"
			       : d->a.agent,
		    d->project);
	else
		gdn_say("running: gdnctl loop --iterations %ld --agent %s ... (in %s)",
			d->a.iterations,
			d->example ? "command (the EXAMPLE agent: deterministic patches, not an AI)"
				   : d->a.agent,
			d->project);
	d->loop_started = true;
	console = xstrfmt("%s/loop-console.log", d->logs);
	if (gdn_mkdir_p(d->logs, 0755, NULL))
		gdn_warn("cannot create %s: %s", d->logs, strerror(errno));
	gdn_say("the loop's output (the agent's in the transcripts there): %s", console);
	d->loop_rc = run_loop_child(&av, d->project, console, &err);
	if (d->loop_rc < 0) {
		code = gdn_die_err(&err);
	} else if (interrupted_code()) {
		gdn_error("interrupted: the loop was stopped");
		code = interrupted_code();
	} else if (d->loop_rc) {
		gdn_error("gdnctl loop failed (exit %d): its output is in %s", d->loop_rc, console);
	}
	free(console);
	strvec_clear(&av);
	sbuf_release(&agent_cmd);
	return code;
}

/* `gdnctl report` into DIR/report.html; its status in d->report_rc. */
static int run_report(struct demo *d)
{
	struct strvec av = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (!gdn_cmd_find("report")) {
		gdn_error("gdnctl report is not available in this build: no report was written "
			  "(the loop's results are in %s)",
			  d->logs);
		d->report_rc = GDN_EXIT_FAILED;
	} else {
		strvec_pushl(&av, d->exe, "report", "--log-dir", d->logs, "--output", d->report,
			     NULL);
		d->report_rc = run_child(&av, d->project, false, demo_env, &err);
		if (d->report_rc < 0)
			gdn_error("%s", err.msg);
		else if (d->report_rc)
			gdn_error("gdnctl report failed (exit %d)", d->report_rc);
	}
	strvec_clear(&av);
	return interrupted_code();
}

/* What the loop did, and where to look. */
static void sum_up(struct demo *d)
{
	struct outcome o = {.lines = STRVEC_INIT};
	struct sbuf qproject = SBUF_INIT;

	read_journal(d->journal, d->project, d->logs, &o);
	if (d->a.workers > 1)
		gdn_say("demo finished in %.1f s with %ld workers: %ld iteration%s kept, %ld "
			"reverted, %ld discarded (conflict)",
			(double)(gdn_now_ms() - d->t0) / 1000.0, d->a.workers, o.kept,
			o.kept == 1 ? "" : "s", o.reverted, o.conflicts);
	else
		gdn_say("demo finished in %.1f s: %ld iteration%s kept, %ld reverted",
			(double)(gdn_now_ms() - d->t0) / 1000.0, o.kept, o.kept == 1 ? "" : "s",
			o.reverted);
	for (size_t i = 0; i < o.lines.nr; i++)
		gdn_say("  %s", o.lines.v[i]);
	if (!d->report_rc && is_file(d->report))
		gdn_say("report: %s", d->report);
	sbuf_add_shell_quoted(&qproject, d->project);
	gdn_say("the repository: %s (git -C %s log --oneline)", d->project, qproject.buf);
	if (o.first_discarded)
		gdn_say("a discarded attempt: git -C %s diff refs/gdnctl/discarded/%ld^!",
			qproject.buf, o.first_discarded);
	gdn_say("the loop's journal and performance state: %s", d->logs);
	strvec_clear(&o.lines);
	sbuf_release(&qproject);
}

/* `gdnctl lint-log` on the running log, then the summary; the demo's exit code. */
static int check_log(struct demo *d)
{
	struct strvec av = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int lrc;

	strvec_pushl(&av, d->exe, "lint-log", "--scope", "all", "--require-fields", NULL);
	gdn_say("checking the running log: gdnctl lint-log --scope all --require-fields");
	lrc = run_child(&av, d->project, false, demo_env, &err);
	strvec_clear(&av);
	if (lrc)
		gdn_error("the running log does not pass lint-log (exit %d)", lrc);
	if (interrupted_code())
		return interrupted_code();
	sum_up(d);
	return d->loop_rc || d->report_rc || lrc ? GDN_EXIT_FAILED : 0;
}

int cmd_demo(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct demo d = {.a = {.agent = "example", .iterations = DEMO_PATCHES, .workers = 1}};
	struct opt opts[] = {
	    OPT_STRING_(0, "dir", &d.a.dir, "DIR", "where to build the demo (new or empty)",
			"a new directory under $TMPDIR, else /tmp"),
	    OPT_CHOICE_(0, "agent", &d.a.agent, agent_choices,
			"the example agent (a script: no AI, no key), or a real one", "example"),
	    OPT_INT_(0, "iterations", &d.a.iterations, "N",
		     "loop iterations (the example agent has 5 patches)", "5", 1, 1000),
	    OPT_INT_(
		0, "workers", &d.a.workers, "N",
		"loop workers side by side (gdnctl loop --workers N; the example agent: 1 or 2)",
		"1", 1, 64),
	    OPT_BOOL_(0, "keep", &d.a.keep,
		      "keep DIR even when the demo stops before the loop runs"),
	    OPT_END_(),
	};
	struct strvec rest = STRVEC_INIT;
	int code = GDN_EXIT_OK;

	(void)ctx;
	d.exe = self_exe();
	d.t0 = gdn_now_ms();
	if (!gdn_cmd_parse_opts(opts, &demo_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest,
				&code))
		goto out;
	d.example = !strcmp(d.a.agent, "example");
	if (!(code = check(&d)) && !(code = make_dir(&d)) && !(code = make_project(&d)) &&
	    !(code = run_loop(&d)) && !(code = run_report(&d)))
		code = check_log(&d);
out:
	if (d.created && code && !d.loop_started && !d.a.keep) {
		remove_tree(d.dir);
		gdn_say("removed %s (--keep keeps it)", d.dir);
	} else if (code && d.dir && (d.created || d.loop_started)) {
		gdn_say("the demo directory is kept: %s", d.dir);
	}
	strvec_clear(&rest);
	demo_release(&d);
	return code;
}
