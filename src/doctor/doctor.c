/*
 * The checks of `gdnctl doctor` (see include/gdnctl/doctor.h). Each check
 * appends one or more results; nothing here prints. External programs run
 * through gdn_proc_run with a deadline and a short kill grace.
 */
#include "gdnctl/compat.h"
#include <sys/statvfs.h>
#include "gdnctl/agent.h"
#include "gdnctl/backend.h"
#include "gdnctl/iris.h"
#include "gdnctl/marin.h"
#include "gdnctl/config.h"
#include "gdnctl/doctor.h"
#include "gdnctl/err.h"
#include "gdnctl/hf.h"
#include "gdnctl/wandb.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define DEFAULT_TIMEOUT_MS  10000
#define DEFAULT_MIN_FREE    (1ULL << 30)
#define KILL_GRACE_MS	    1000
#define OUTPUT_LIMIT	    (64 * 1024)
#define DEFAULT_LOOP_LOGDIR GDN_LOOP_LEGACY_LOG_DIR /* outside a repository */
#define DETAIL_MAX	    400

/* ---- the result list ---- */

const char *gdn_doctor_status_name(enum gdn_doctor_status s)
{
	switch (s) {
	case GDN_DOCTOR_OK:
		return "ok";
	case GDN_DOCTOR_WARN:
		return "warn";
	case GDN_DOCTOR_FAIL:
		return "FAIL";
	case GDN_DOCTOR_SKIP:
		return "skip";
	}
	return "?";
}

/* One line: cut at the first newline or control character, masked, shortened. */
static char *one_line(struct sbuf *sb)
{
	size_t i;

	for (i = 0; i < sb->len; i++)
		if (sb->buf[i] == '\n' || sb->buf[i] == '\r')
			break;
	sbuf_setlen(sb, i);
	for (i = 0; i < sb->len; i++)
		if ((unsigned char)sb->buf[i] < 0x20)
			sb->buf[i] = ' ';
	gdn_secret_mask(sb);
	sbuf_trim(sb);
	if (sb->len > DETAIL_MAX) {
		sbuf_setlen(sb, DETAIL_MAX - 3);
		sbuf_adds(sb, "...");
	}
	return sbuf_detach(sb, NULL);
}

void gdn_doctor_add(struct gdn_doctor_report *r, enum gdn_doctor_status status, const char *name,
		    const char *fix, const char *fmt, ...)
{
	struct gdn_doctor_result *res;
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	ALLOC_GROW(r->v, r->nr + 1, r->alloc);
	res = &r->v[r->nr++];
	res->name = xstrdup(name);
	res->status = status;
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	res->detail = one_line(&sb);
	res->fix = NULL;
	if (fix && *fix) {
		sbuf_adds(&sb, fix);
		res->fix = one_line(&sb);
	}
	sbuf_release(&sb);
}

void gdn_doctor_report_release(struct gdn_doctor_report *r)
{
	for (size_t i = 0; i < r->nr; i++) {
		free(r->v[i].name);
		free(r->v[i].detail);
		free(r->v[i].fix);
	}
	free(r->v);
	r->v = NULL;
	r->nr = r->alloc = 0;
}

size_t gdn_doctor_count(const struct gdn_doctor_report *r, enum gdn_doctor_status s)
{
	size_t n = 0;

	for (size_t i = 0; i < r->nr; i++)
		n += r->v[i].status == s;
	return n;
}

json_t *gdn_doctor_report_json(const struct gdn_doctor_report *r)
{
	json_t *doc = gdn_json_doc("gdnctl.doctor.v1"); /* new */
	json_t *counts = json_object(), *checks = json_array();

	json_object_set_new(doc, "ok", json_boolean(!gdn_doctor_count(r, GDN_DOCTOR_FAIL)));
	json_object_set_new(counts, "ok", json_integer((json_int_t)gdn_doctor_count(r, 0)));
	json_object_set_new(counts, "warn",
			    json_integer((json_int_t)gdn_doctor_count(r, GDN_DOCTOR_WARN)));
	json_object_set_new(counts, "fail",
			    json_integer((json_int_t)gdn_doctor_count(r, GDN_DOCTOR_FAIL)));
	json_object_set_new(counts, "skip",
			    json_integer((json_int_t)gdn_doctor_count(r, GDN_DOCTOR_SKIP)));
	json_object_set_new(doc, "counts", counts);
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_doctor_result *res = &r->v[i];
		json_t *o = json_object();

		json_object_set_new(o, "name", gdn_json_string_lossy(res->name));
		json_object_set_new(o, "status",
				    json_string(res->status == GDN_DOCTOR_FAIL
						    ? "fail"
						    : gdn_doctor_status_name(res->status)));
		json_object_set_new(o, "detail", gdn_json_string_lossy(res->detail));
		json_object_set_new(o, "fix", gdn_json_string_lossy(res->fix));
		json_array_append_new(checks, o);
	}
	json_object_set_new(doc, "checks", checks);
	return doc;
}

/* ---- helpers ---- */

char *gdn_doctor_find_program(const char *name)
{
	const char *path = getenv("PATH");
	struct strvec dirs = STRVEC_INIT;
	char *found = NULL;

	if (!name || !*name)
		goto out;
	if (strchr(name, '/')) {
		if (!access(name, X_OK))
			found = xstrdup(name);
		goto out;
	}
	strvec_split(&dirs, path && *path ? path : "/usr/local/bin:/usr/bin:/bin", ':');
	for (size_t i = 0; i < dirs.nr && !found; i++) {
		char *cand = xstrfmt("%s/%s", *dirs.v[i] ? dirs.v[i] : ".", name);
		struct stat st;

		if (!stat(cand, &st) && S_ISREG(st.st_mode) && !access(cand, X_OK))
			found = cand;
		else
			free(cand);
	}
out:
	strvec_clear(&dirs);
	return found;
}

struct ran {
	bool started;	 /* false: could not run (msg in err) */
	bool timed_out;	 /* killed at the deadline */
	bool stopped;	 /* stopped because gdnctl got SIGINT/SIGTERM */
	int exit_code;	 /* gdn_proc_exit_code */
	struct sbuf out; /* merged stdout/stderr */
	struct gdn_err err;
};

static void ran_init(struct ran *x)
{
	memset(x, 0, sizeof(*x));
	sbuf_init(&x->out, 0);
}

/* Run argv to completion within timeout_ms, output captured. */
static void run_program(const char *const *argv, long timeout_ms, struct ran *x)
{
	struct gdn_proc p = GDN_PROC_INIT;

	p.argv = argv;
	p.timeout_ms = (int)timeout_ms;
	p.kill_grace_ms = KILL_GRACE_MS;
	p.capture = true;
	p.out.limit = OUTPUT_LIMIT;
	if (gdn_proc_run(&p, &x->err)) {
		x->started = false;
		goto out;
	}
	x->started = true;
	x->timed_out = p.status_kind == GDN_PROC_TIMEOUT || p.status_kind == GDN_PROC_IDLE;
	x->stopped = p.status_kind == GDN_PROC_STOPPED;
	x->exit_code = gdn_proc_exit_code(&p);
	sbuf_add(&x->out, p.out.buf, p.out.len);
out:
	gdn_proc_release(&p);
}

/* A run stopped by SIGINT/SIGTERM is no answer either way: the check is skipped. */
static bool stopped(struct gdn_doctor_report *r, const char *check, const struct ran *x)
{
	if (!x->stopped)
		return false;
	gdn_doctor_add(r, GDN_DOCTOR_SKIP, check, NULL, "interrupted");
	return true;
}

/* The first non-empty line of text (trimmed), or "no output". */
static void first_line(const struct sbuf *text, struct sbuf *out)
{
	const char *p = text->buf, *end = text->buf + text->len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct sbuf line = SBUF_INIT;

		sbuf_add(&line, p, len);
		sbuf_trim(&line);
		if (line.len) {
			sbuf_add(out, line.buf, line.len);
			sbuf_release(&line);
			return;
		}
		sbuf_release(&line);
		p += len + (nl ? 1 : 0);
	}
	sbuf_adds(out, "no output");
}

/*
 * The line of a `--version` answer that holds the version: the first one
 * with "N.N" in it (some programs print warnings first), else the first line.
 */
static void version_line(const struct sbuf *text, struct sbuf *out)
{
	const char *p = text->buf, *end = text->buf + text->len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		for (size_t i = 1; i + 1 < len; i++) {
			if (p[i] == '.' && isdigit((unsigned char)p[i - 1]) &&
			    isdigit((unsigned char)p[i + 1])) {
				struct sbuf line = SBUF_INIT;

				sbuf_add(&line, p, len);
				sbuf_trim(&line);
				sbuf_add(out, line.buf, line.len);
				sbuf_release(&line);
				return;
			}
		}
		p += len + (nl ? 1 : 0);
	}
	first_line(text, out);
}

/* The last non-empty line (ssh puts the reason last). */
static void last_line(const struct sbuf *text, struct sbuf *out)
{
	size_t end = text->len, start;

	while (end && (text->buf[end - 1] == '\n' || text->buf[end - 1] == '\r' ||
		       text->buf[end - 1] == ' '))
		end--;
	start = end;
	while (start && text->buf[start - 1] != '\n')
		start--;
	if (end > start)
		sbuf_add(out, text->buf + start, end - start);
	else
		sbuf_adds(out, "no output");
}

static void format_seconds(long ms, struct sbuf *out)
{
	if (ms % 1000)
		sbuf_addf(out, "%ld.%03lds", ms / 1000, ms % 1000);
	else
		sbuf_addf(out, "%lds", ms / 1000);
}

/* A configured program: programs.KEY (its env variable and default apply), else fallback. */
static const char *config_program(const struct gdn_config *cfg, const char *key,
				  const char *fallback)
{
	struct sbuf full = SBUF_INIT;
	const char *s;

	sbuf_addf(&full, "programs.%s", key);
	s = gdn_config_str(cfg, full.buf);
	sbuf_release(&full);
	return s && *s ? s : fallback;
}

static const char *backend_key(const struct gdn_config *cfg, const char *name, const char *key,
			       struct sbuf *tmp)
{
	const char *s;

	sbuf_reset(tmp);
	sbuf_addf(tmp, "backends.%s.%s", name, key);
	s = gdn_config_str(cfg, tmp->buf);
	return s && *s ? s : NULL;
}

static char *expand_home(const char *path)
{
	const char *home = getenv("HOME");

	if (home && *home && (!strcmp(path, "~") || !strncmp(path, "~/", 2)))
		return xstrfmt("%s%s", home, path + 1);
	return xstrdup(path);
}

/* ---- git and the repository ---- */

static void check_git(struct gdn_doctor_report *r, const char *cwd, long timeout_ms,
		      char **repo_root)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf line = SBUF_INIT;
	char *git = gdn_doctor_find_program("git"), *sha = NULL, *branch = NULL;
	bool dirty = false;
	int ret;

	if (!git) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, "git", "install git (apt-get install git)",
			       "'git' not found in PATH (the loop commits and reverts with it)");
	} else {
		const char *argv[] = {git, "--version", NULL};
		struct ran x;

		ran_init(&x);
		run_program(argv, timeout_ms, &x);
		if (stopped(r, "git", &x)) {
			/* reported */
		} else if (x.started && !x.timed_out && !x.exit_code) {
			first_line(&x.out, &line);
			gdn_doctor_add(r, GDN_DOCTOR_OK, "git", NULL, "%s (%s)", line.buf, git);
		} else {
			gdn_doctor_add(r, GDN_DOCTOR_FAIL, "git", "reinstall git",
				       "'%s --version' did not work: %s", git,
				       x.started ? "it failed" : x.err.msg);
		}
		sbuf_release(&x.out);
	}

	ret = gdn_repo_discover(cwd, repo_root, &err);
	if (ret == GDN_ENOTFOUND) {
		gdn_doctor_add(r, GDN_DOCTOR_WARN, "repository",
			       "run gdnctl inside your project's git repository (loop, test and "
			       "profile work there)",
			       "'%s' is not inside a git repository", cwd ? cwd : ".");
		goto out;
	}
	if (ret) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, "repository",
			       "check the repository with 'git status'", "%s", err.msg);
		goto out;
	}
	if (gdn_repo_head_at(*repo_root, &sha, &branch, &err)) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, "repository",
			       "check the repository with 'git status'", "'%s': %s", *repo_root,
			       err.msg);
		goto out;
	}
	if (!sha) {
		gdn_doctor_add(r, GDN_DOCTOR_WARN, "repository",
			       "make a first commit: the loop needs a HEAD to return to",
			       "%s (no commits yet)", *repo_root);
		goto out;
	}
	gdn_doctor_add(r, GDN_DOCTOR_OK, "repository", NULL, "%s (%s at %.12s)", *repo_root,
		       branch ? branch : "detached HEAD", sha);
	if (gdn_repo_dirty_at(*repo_root, &dirty, &err))
		gdn_doctor_add(r, GDN_DOCTOR_WARN, "repository: clean",
			       "check the repository with 'git status'", "%s", err.msg);
	else if (dirty)
		gdn_doctor_add(r, GDN_DOCTOR_WARN, "repository: clean",
			       "commit or stash your changes before 'gdnctl loop' ('git status' "
			       "lists them)",
			       "the working tree has uncommitted or untracked changes");
	else
		gdn_doctor_add(r, GDN_DOCTOR_OK, "repository: clean", NULL,
			       "no uncommitted changes");
out:
	free(git);
	free(sha);
	free(branch);
	sbuf_release(&line);
}

/* ---- configuration ---- */

static bool file_exists(const char *path)
{
	struct stat st;

	return path && !stat(path, &st);
}

static bool check_config(struct gdn_doctor_report *r, const struct gdn_doctor_opts *o,
			 const char *repo_root, struct gdn_config *cfg)
{
	struct gdn_config_load_opts lo = {0};
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf files = SBUF_INIT;
	bool ok = false;

	lo.repo_root = repo_root;
	lo.cmdline = o->cfg_overrides;
	if (gdn_config_load(cfg, &lo, &err)) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, "configuration",
			       "correct the value named above ('gdnctl config keys' lists the "
			       "keys; see docs/configuration.md)",
			       "%s", err.msg);
		goto out;
	}
	if (file_exists(cfg->repo_file))
		sbuf_addf(&files, "%s", cfg->repo_file);
	if (file_exists(cfg->user_file))
		sbuf_addf(&files, "%s%s", files.len ? ", " : "", cfg->user_file);
	gdn_doctor_add(r, GDN_DOCTOR_OK, "configuration", NULL, "%s",
		       files.len ? files.buf : "built-in defaults (no gdnctl.yaml, no user file)");
	ok = true;
out:
	sbuf_release(&files);
	return ok;
}

/* ---- backends ---- */

struct program_need {
	const char *key; /* programs.KEY, or NULL (not configurable) */
	const char *prog;
};

static void check_programs(struct gdn_doctor_report *r, const char *check,
			   const struct program_need *needs, size_t nr, const char *install_hint)
{
	struct sbuf found = SBUF_INIT, missing = SBUF_INIT, fix = SBUF_INIT;

	for (size_t i = 0; i < nr; i++) {
		char *path = gdn_doctor_find_program(needs[i].prog);

		if (path)
			sbuf_addf(&found, "%s%s", found.len ? ", " : "", path);
		else
			sbuf_addf(&missing, "%s'%s'", missing.len ? ", " : "", needs[i].prog);
		if (!path && needs[i].key)
			sbuf_addf(&fix, "%sprograms.%s", fix.len ? ", " : "set ", needs[i].key);
		free(path);
	}
	if (missing.len) {
		struct sbuf hint = SBUF_INIT;

		sbuf_adds(&hint, install_hint);
		if (fix.len)
			sbuf_addf(&hint, ", or %s to the program's path", fix.buf);
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check, hint.buf, "not found in PATH: %s",
			       missing.buf);
		sbuf_release(&hint);
	} else {
		gdn_doctor_add(r, GDN_DOCTOR_OK, check, NULL, "%s", found.buf);
	}
	sbuf_release(&found);
	sbuf_release(&missing);
	sbuf_release(&fix);
}

/* The fix hint for a failed `ssh ... true`, from what ssh said. */
static void ssh_fix(const char *name, const char *host, const char *port, const struct sbuf *out,
		    bool timed_out, struct sbuf *fix)
{
	if (timed_out)
		sbuf_addf(fix,
			  "'%s' did not answer in time: check backends.%s.host and .port, a VPN "
			  "or firewall; raise --timeout for slow links",
			  host, name);
	else if (strstr(out->buf, "Connection refused"))
		sbuf_addf(fix,
			  "nothing accepts connections on %s port %s: check backends.%s.host and "
			  ".port, and that sshd runs there",
			  host, port ? port : "22", name);
	else if (strstr(out->buf, "Could not resolve hostname") ||
		 strstr(out->buf, "Name or service not known"))
		sbuf_addf(fix, "the name '%s' does not resolve: check backends.%s.host", host,
			  name);
	else if (strstr(out->buf, "Host key verification failed"))
		sbuf_addf(fix,
			  "accept the host key once by connecting by hand, or add "
			  "StrictHostKeyChecking=accept-new to backends.%s.ssh_options",
			  name);
	else if (strstr(out->buf, "Permission denied"))
		sbuf_addf(fix,
			  "the server refused the login: set backends.%s.user and .identity, or "
			  "install your public key there (ssh-copy-id)",
			  name);
	else
		sbuf_addf(fix, "check backends.%s.* (see docs/configuration.md)", name);
}

static void check_ssh_reachable(struct gdn_doctor_report *r, const struct gdn_config *cfg,
				const char *name, const char *check, long timeout_ms)
{
	struct sbuf tmp = SBUF_INIT, line = SBUF_INIT, fix = SBUF_INIT, cmd = SBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	/* borrowed from cfg */
	const char *host = backend_key(cfg, name, "host", &tmp);
	const char *port = backend_key(cfg, name, "port", &tmp);
	const char *user = backend_key(cfg, name, "user", &tmp);
	const char *ssh = config_program(cfg, "ssh", "ssh");
	const char *id = backend_key(cfg, name, "identity", &tmp);
	char *identity = id ? expand_home(id) : NULL;
	const struct strvec *options;
	struct ran x;
	long secs = (timeout_ms + 999) / 1000;

	ran_init(&x);
	if (!host) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check, "set it in gdnctl.yaml",
			       "backends.%s.host is not set", name);
		goto out;
	}
	sbuf_reset(&tmp);
	sbuf_addf(&tmp, "backends.%s.ssh_options", name);
	options = gdn_config_list(cfg, tmp.buf);

	strvec_pushl(&argv, ssh, "-o", "BatchMode=yes", "-o", NULL);
	strvec_pushf(&argv, "ConnectTimeout=%ld", secs < 1 ? 1 : secs);
	if (port)
		strvec_pushl(&argv, "-p", port, NULL);
	if (identity)
		strvec_pushl(&argv, "-i", identity, NULL);
	if (user)
		strvec_pushl(&argv, "-l", user, NULL);
	{
		struct strvec ov = STRVEC_INIT;

		gdn_ssh_options(options, &ov); /* a refused item: ssh_open says why */
		for (size_t i = 0; i < ov.nr; i++)
			strvec_pushl(&argv, "-o", ov.v[i], NULL);
		strvec_clear(&ov);
	}
	strvec_pushl(&argv, host, "--", "true", NULL);
	gdn_argv_format(&cmd, argv.v);

	run_program(argv.v, timeout_ms, &x);
	if (stopped(r, check, &x))
		goto out;
	if (!x.started) {
		gdn_doctor_add(
		    r, GDN_DOCTOR_FAIL, check,
		    "install OpenSSH (apt-get install openssh-client) or set programs.ssh", "%s",
		    x.err.msg);
		goto out;
	}
	if (!x.timed_out && !x.exit_code) {
		gdn_doctor_add(r, GDN_DOCTOR_OK, check, NULL, "%s%s%s%s%s logged in (ssh ... true)",
			       user ? user : "", user ? "@" : "", host, port ? ":" : "",
			       port ? port : "");
		goto out;
	}
	ssh_fix(name, host, port, &x.out, x.timed_out, &fix);
	sbuf_addf(&fix, "; try: %s", cmd.buf);
	if (x.timed_out) {
		format_seconds(timeout_ms, &line);
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check, fix.buf,
			       "no answer from '%s' within %s (ssh stopped)", host, line.buf);
	} else {
		last_line(&x.out, &line);
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check, fix.buf, "ssh exited %d: %s", x.exit_code,
			       line.buf);
	}
out:
	free(identity);
	strvec_clear(&argv);
	sbuf_release(&x.out);
	sbuf_release(&tmp);
	sbuf_release(&line);
	sbuf_release(&fix);
	sbuf_release(&cmd);
}

static void check_slurm_controller(struct gdn_doctor_report *r, const struct gdn_config *cfg,
				   const char *check, long timeout_ms)
{
	const char *scontrol = config_program(cfg, "scontrol", "scontrol");
	const char *argv[] = {scontrol, "ping", NULL};
	struct sbuf line = SBUF_INIT, t = SBUF_INIT;
	struct ran x;

	ran_init(&x);
	run_program(argv, timeout_ms, &x);
	if (stopped(r, check, &x))
		goto out;
	if (!x.started) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check,
			       "install the Slurm client tools or set programs.scontrol", "%s",
			       x.err.msg);
		goto out;
	}
	if (x.timed_out) {
		format_seconds(timeout_ms, &t);
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check,
			       "the controller does not answer: check that slurmctld runs and "
			       "SLURM_CONF (or /etc/slurm/slurm.conf) names it",
			       "'%s ping' gave no answer within %s", scontrol, t.buf);
		goto out;
	}
	first_line(&x.out, &line);
	if (x.exit_code || strstr(x.out.buf, "DOWN") || !strstr(x.out.buf, "UP"))
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check,
			       "the controller does not answer: check that slurmctld runs and "
			       "SLURM_CONF (or /etc/slurm/slurm.conf) names it",
			       "'%s ping' exited %d: %s", scontrol, x.exit_code, line.buf);
	else
		gdn_doctor_add(r, GDN_DOCTOR_OK, check, NULL, "%s", line.buf);
out:
	sbuf_release(&x.out);
	sbuf_release(&line);
	sbuf_release(&t);
}

/*
 * The Iris CLI: `job --help` answers and lists the commands of a
 * generation gdnctl drives; said with the program and the cluster.
 */
static void check_iris_cli(struct gdn_doctor_report *r, struct gdn_backend *b, const char *name,
			   const char *repo_root, long timeout_ms)
{
	enum gdn_iris_generation gen = GDN_IRIS_GEN_UNKNOWN;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf check = SBUF_INIT;
	const char *cluster = gdn_iris_backend_cluster(b);
	char *program = gdn_iris_backend_program(b);
	int ret;

	sbuf_addf(&check, "backend %s: iris CLI", name);
	b->repo_root = repo_root;
	ret = gdn_iris_backend_probe(b, timeout_ms, &gen, &err);
	if (ret)
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check.buf,
			       "install Marin's Iris CLI (uv sync in the Marin repository) or set "
			       "programs.iris / backends.NAME.command_prefix",
			       "%s", err.msg);
	else
		gdn_doctor_add(r, GDN_DOCTOR_OK, check.buf, NULL, "%s: %s, cluster %s", program,
			       gdn_iris_generation_name(gen),
			       cluster ? cluster : "(none: the CLI's own)");
	free(program);
	sbuf_release(&check);
}

static void check_backend(struct gdn_doctor_report *r, const struct gdn_config *cfg,
			  const char *name, long timeout_ms, const char *repo_root)
{
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf check = SBUF_INIT, tmp = SBUF_INIT;
	struct program_need needs[6];
	size_t nr = 0;
	const char *type, *install = "install it";
	int ret;

	sbuf_addf(&check, "backend %s", name);
	ret = gdn_backend_open(cfg, name, &b, &err);
	if (ret) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check.buf,
			       ret == GDN_ENOTFOUND
				   ? "define it under backends: in gdnctl.yaml (see "
				     "docs/configuration.md) or pick a listed one"
				   : "correct the value named above (see docs/configuration.md)",
			       "%s", err.msg);
		goto out;
	}
	type = b->ops->type;
	gdn_doctor_add(r, GDN_DOCTOR_OK, check.buf, NULL, "type %s", type);
	sbuf_addf(&check, ": programs");
	if (!strcmp(type, "local")) {
		needs[nr++] = (struct program_need){NULL, "bash"};
		install = "install bash";
	} else if (!strcmp(type, "ssh")) {
		const char *sync = backend_key(cfg, name, "sync", &tmp);

		needs[nr++] = (struct program_need){"ssh", config_program(cfg, "ssh", "ssh")};
		if (sync && !strcmp(sync, "rsync"))
			needs[nr++] =
			    (struct program_need){"rsync", config_program(cfg, "rsync", "rsync")};
		install = "install OpenSSH and rsync (apt-get install openssh-client rsync)";
	} else if (!strcmp(type, "slurm")) {
		static const char *const progs[] = {"sbatch", "squeue", "sacct", "scancel",
						    "scontrol"};

		for (size_t i = 0; i < ARRAY_SIZE(progs); i++)
			needs[nr++] = (struct program_need){
			    progs[i], config_program(cfg, progs[i], progs[i])};
		install = "install the Slurm client tools (apt-get install slurm-client) on this "
			  "host, or run gdnctl on the cluster's login node";
	} else if (!strcmp(type, "iris")) {
		sbuf_addf(&tmp, "backends.%s.command_prefix", name);
		if (gdn_config_list(cfg, tmp.buf)->nr)
			needs[nr++] =
			    (struct program_need){NULL, gdn_config_list(cfg, tmp.buf)->v[0]};
		else if (config_program(cfg, "iris", NULL))
			needs[nr++] =
			    (struct program_need){"iris", config_program(cfg, "iris", NULL)};
		else
			needs[nr++] = (struct program_need){"uv", config_program(cfg, "uv", "uv")};
		install = "install uv (https://docs.astral.sh/uv/) and run gdnctl in the Marin "
			  "repository (uv run iris)";
	} else {
		/* ray, dev-tpu: a command prefix, or uv (Marin scripts) / ray */
		const char *cli = backend_key(cfg, name, "cli", &tmp);
		const struct strvec *prefix;
		bool ray_cli = cli && !strcmp(cli, "ray");

		sbuf_reset(&tmp);
		sbuf_addf(&tmp, "backends.%s.command_prefix", name);
		prefix = gdn_config_list(cfg, tmp.buf);
		if (prefix->nr)
			needs[nr++] = (struct program_need){NULL, prefix->v[0]};
		else if (ray_cli && !strcmp(type, "ray"))
			needs[nr++] =
			    (struct program_need){"ray", config_program(cfg, "ray", "ray")};
		else
			needs[nr++] = (struct program_need){"uv", config_program(cfg, "uv", "uv")};
		if (!strcmp(type, "dev-tpu")) {
			const char *exec = backend_key(cfg, name, "execute", &tmp);

			if (exec && !strcmp(exec, "ssh"))
				needs[nr++] =
				    (struct program_need){"ssh", config_program(cfg, "ssh", "ssh")};
		}
		install = "install uv (https://docs.astral.sh/uv/) and run gdnctl in the Marin "
			  "repository";
	}
	check_programs(r, check.buf, needs, nr, install);
	sbuf_reset(&check);
	if (!strcmp(type, "ssh")) {
		char *ssh = gdn_doctor_find_program(config_program(cfg, "ssh", "ssh"));

		sbuf_addf(&check, "backend %s: reachable", name);
		if (!ssh)
			gdn_doctor_add(r, GDN_DOCTOR_SKIP, check.buf, NULL, "ssh is missing");
		else
			check_ssh_reachable(r, cfg, name, check.buf, timeout_ms);
		free(ssh);
	} else if (!strcmp(type, "slurm")) {
		char *scontrol =
		    gdn_doctor_find_program(config_program(cfg, "scontrol", "scontrol"));

		sbuf_addf(&check, "backend %s: controller", name);
		if (!scontrol)
			gdn_doctor_add(r, GDN_DOCTOR_SKIP, check.buf, NULL, "scontrol is missing");
		else
			check_slurm_controller(r, cfg, check.buf, timeout_ms);
		free(scontrol);
	} else if (!strcmp(type, "iris")) {
		check_iris_cli(r, b, name, repo_root, timeout_ms);
	}
out:
	gdn_backend_free(b);
	sbuf_release(&check);
	sbuf_release(&tmp);
}

static void check_backends(struct gdn_doctor_report *r, const struct gdn_doctor_opts *o,
			   const struct gdn_config *cfg, const char *repo_root)
{
	struct strvec names = STRVEC_INIT;

	if (o->backends && o->backends[0]) {
		for (size_t i = 0; o->backends[i]; i++)
			if (!strvec_contains(&names, o->backends[i]))
				strvec_push(&names, o->backends[i]);
	} else {
		gdn_config_map_names(cfg, "backends", &names);
		if (!strvec_contains(&names, "local"))
			strvec_push(&names, "local");
		/* test and profile run there on Iris by default */
		if (gdn_marin_iris_checkout(repo_root ? repo_root : o->cwd) &&
		    !strvec_contains(&names, "iris"))
			strvec_push(&names, "iris");
	}
	for (size_t i = 0; i < names.nr && !gdn_proc_interrupted(); i++)
		check_backend(r, cfg, names.v[i], o->timeout_ms, repo_root);
	strvec_clear(&names);
}

/* ---- the agent ---- */

/* "set (from VAR)" for the first variable set, into out; false when none is. */
static bool env_source(const char *const *vars, struct sbuf *out)
{
	for (size_t i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);

		if (v && *v) {
			sbuf_addf(out, "set (from %s)", vars[i]);
			return true;
		}
	}
	return false;
}

/* The login the driver declares: a variable, else its file, else a warning with its hint. */
static void check_agent_login(struct gdn_doctor_report *r, const struct gdn_agent_info *info)
{
	struct sbuf check = SBUF_INIT, src = SBUF_INIT, vars = SBUF_INIT;
	const char *home = getenv("HOME");
	const char *dir = info->login_dir_var ? getenv(info->login_dir_var) : NULL;
	char *file = NULL;

	sbuf_addf(&check, "agent: %s login", info->name);
	if (!info->login_vars) {
		gdn_doctor_add(r, GDN_DOCTOR_SKIP, check.buf, NULL, "%s", info->login_skip);
		goto out;
	}
	if (dir && *dir)
		file = xstrfmt("%s/%s", dir, info->login_file);
	else
		file = xstrfmt("%s/%s", home ? home : "", info->login_home_file);
	if (env_source(info->login_vars, &src) || file_exists(file)) {
		if (!src.len)
			sbuf_addf(&src, "%s %s", info->login_file_kind, file);
		gdn_doctor_add(r, GDN_DOCTOR_OK, check.buf, NULL, "%s", src.buf);
	} else {
		for (size_t i = 0; info->login_vars[i]; i++)
			sbuf_addf(&vars, "%s%s", i ? "/" : "", info->login_vars[i]);
		gdn_doctor_add(r, GDN_DOCTOR_WARN, check.buf, info->login_hint, "no %s and no %s",
			       vars.buf, file);
	}
out:
	free(file);
	sbuf_release(&check);
	sbuf_release(&src);
	sbuf_release(&vars);
}

/* The agent the configuration names (loop.agent), or NULL. */
static const char *configured_agent(const struct gdn_config *cfg)
{
	const char *s = NULL;

	if (cfg && gdn_config_schema_find(cfg, "loop.agent"))
		s = gdn_config_str(cfg, "loop.agent");
	return s && *s ? s : NULL;
}

static void check_agent(struct gdn_doctor_report *r, const struct gdn_doctor_opts *o,
			const struct gdn_config *cfg)
{
	struct gdn_agent_opts ao = {0};
	struct gdn_agent *a = NULL;
	struct strvec warnings = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf check = SBUF_INIT, line = SBUF_INIT;
	const char *named = o->agent ? o->agent : configured_agent(cfg);
	const char *driver = named ? named : GDN_AGENT_DEFAULT;
	const struct gdn_agent_info *info = gdn_agent_find(driver);
	/* nobody asked for this agent: only `gdnctl loop` with its default needs it */
	bool optional = !named && !o->agent_bin && !o->agent_cmd;
	struct ran x;
	int ret;

	ran_init(&x);
	sbuf_addf(&check, "agent: %s", driver);
	if (o->skip_agent) {
		gdn_doctor_add(r, GDN_DOCTOR_SKIP, "agent", NULL, "--no-agent");
		goto out;
	}
	ao.driver = driver;
	ao.bin = o->agent_bin;
	ao.command = o->agent_cmd;
	ao.probe_timeout_ms = o->timeout_ms;
	if (info && info->needs_command && !o->agent_cmd) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check.buf, info->command_hint,
			       "the %s driver needs a command line", info->name);
		goto out;
	}
	ret = gdn_agent_open(&ao, &a, &warnings, &err);
	if (ret == GDN_ENOTFOUND && optional && info) {
		gdn_doctor_add(r, GDN_DOCTOR_WARN, check.buf, info->install_hint,
			       "%s (needed only by 'gdnctl loop --agent %s'; choose another with "
			       "--agent)",
			       err.msg, driver);
		goto out;
	}
	if (ret) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, check.buf,
			       info ? info->install_hint
				    : "check --agent-cmd: its program must be in PATH",
			       "%s", err.msg);
		goto out;
	}
	if (!info->version_check) {
		gdn_doctor_add(r, GDN_DOCTOR_OK, check.buf, NULL, "%s", gdn_agent_bin(a));
	} else {
		const char *argv[] = {gdn_agent_bin(a), "--version", NULL};

		run_program(argv, o->timeout_ms, &x);
		if (stopped(r, check.buf, &x)) {
			/* reported */
		} else if (x.started && !x.timed_out && !x.exit_code) {
			version_line(&x.out, &line);
			gdn_doctor_add(r, GDN_DOCTOR_OK, check.buf, NULL, "%s (%s)", line.buf,
				       gdn_agent_bin(a));
		} else {
			if (x.timed_out) {
				sbuf_adds(&line, "no answer within ");
				format_seconds(o->timeout_ms, &line);
			} else if (x.started)
				last_line(&x.out, &line);
			else
				sbuf_adds(&line, x.err.msg);
			gdn_doctor_add(r, GDN_DOCTOR_FAIL, check.buf,
				       "reinstall the agent or pass --codex-bin PATH",
				       "'%s --version' failed: %s", gdn_agent_bin(a), line.buf);
		}
	}
	for (size_t i = 0; i < warnings.nr; i++)
		gdn_doctor_add(r, GDN_DOCTOR_WARN, check.buf, "update the agent's CLI", "%s",
			       warnings.v[i]);
	check_agent_login(r, info);
out:
	gdn_agent_free(a);
	strvec_clear(&warnings);
	sbuf_release(&check);
	sbuf_release(&line);
	sbuf_release(&x.out);
}

/* ---- tokens ---- */

void gdn_doctor_check_tokens(struct gdn_doctor_report *r)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_wandb wb;
	char *token = NULL, *source = NULL;

	if (gdn_hf_find_token(NULL, &token, &source, &err))
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, "token: hf",
			       "fix or remove that token (huggingface-cli logout; unset HF_TOKEN)",
			       "%s", err.msg);
	else if (token)
		gdn_doctor_add(r, GDN_DOCTOR_OK, "token: hf", NULL, "set (from %s)", source);
	else
		gdn_doctor_add(r, GDN_DOCTOR_WARN, "token: hf",
			       "export HF_TOKEN or run 'huggingface-cli login' (download-trace "
			       "needs it for private repositories)",
			       "not set: anonymous access to the Hugging Face Hub");
	free(token);
	free(source);

	gdn_err_clear(&err);
	if (gdn_wandb_init(&wb, NULL, NULL, NULL, &err)) {
		gdn_doctor_add(r, GDN_DOCTOR_FAIL, "token: wandb", "correct WANDB_BASE_URL", "%s",
			       err.msg);
		return;
	}
	if (wb.api_key)
		gdn_doctor_add(r, GDN_DOCTOR_OK, "token: wandb", NULL, "set (from %s)",
			       wb.key_source);
	else
		gdn_doctor_add(r, GDN_DOCTOR_WARN, "token: wandb",
			       "export WANDB_API_KEY or run 'wandb login' (metrics needs it for "
			       "private projects)",
			       "not set: anonymous access to W&B");
	gdn_wandb_release(&wb);
}

/* ---- disk space ---- */

enum gdn_doctor_status gdn_doctor_disk_status(unsigned long long avail, unsigned long long min_free)
{
	if (!min_free)
		min_free = DEFAULT_MIN_FREE;
	return avail < min_free ? GDN_DOCTOR_WARN : GDN_DOCTOR_OK;
}

int gdn_doctor_parse_size(const char *s, unsigned long long *out)
{
	static const char units[] = "BKMGTP";
	char *end = NULL;
	unsigned long long n, mult = 1;
	const char *u;

	if (!s || !isdigit((unsigned char)*s))
		return GDN_EUSAGE;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return GDN_EUSAGE;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u)
			return GDN_EUSAGE;
		for (long i = 0; i < u - units; i++)
			mult *= 1024;
		end++;
		if (u != units && (!strcmp(end, "iB") || !strcmp(end, "ib") || !strcmp(end, "IB") ||
				   !strcmp(end, "B") || !strcmp(end, "b")))
			end += strlen(end);
		if (*end)
			return GDN_EUSAGE;
	}
	if (n && mult > ULLONG_MAX / n)
		return GDN_EUSAGE;
	*out = n * mult;
	return 0;
}

void gdn_doctor_format_bytes(unsigned long long n, struct sbuf *out)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)n;
	size_t u = 0;

	if (n < 1024) {
		sbuf_addf(out, "%llu B", n);
		return;
	}
	v /= 1024;
	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	sbuf_addf(out, "%.1f %s", v, units[u]);
}

void gdn_doctor_check_disk(struct gdn_doctor_report *r, const char *name, const char *path,
			   unsigned long long min_free)
{
	struct sbuf check = SBUF_INIT, dir = SBUF_INIT, avail_s = SBUF_INIT, total_s = SBUF_INIT,
		    min_s = SBUF_INIT, fix = SBUF_INIT;
	struct statvfs vfs;
	unsigned long long avail, total;
	enum gdn_doctor_status st;

	sbuf_addf(&check, "disk: %s", name);
	sbuf_adds(&dir, path && *path ? path : ".");
	/* the nearest existing directory: the path may not have been created yet */
	while (!file_exists(dir.buf)) {
		char *slash = strrchr(dir.buf, '/');

		if (!slash) {
			sbuf_reset(&dir);
			sbuf_adds(&dir, ".");
			break;
		}
		sbuf_setlen(&dir, slash == dir.buf ? 1 : (size_t)(slash - dir.buf));
	}
	if (statvfs(dir.buf, &vfs)) {
		gdn_doctor_add(r, GDN_DOCTOR_WARN, check.buf,
			       "check that the directory is readable", "cannot check '%s': %s",
			       dir.buf, strerror(errno));
		goto out;
	}
	avail = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	total = (unsigned long long)vfs.f_blocks * vfs.f_frsize;
	gdn_doctor_format_bytes(avail, &avail_s);
	gdn_doctor_format_bytes(total, &total_s);
	gdn_doctor_format_bytes(min_free ? min_free : DEFAULT_MIN_FREE, &min_s);
	st = gdn_doctor_disk_status(avail, min_free);
	sbuf_addf(&fix, "free space there (less than %s), or choose another place", min_s.buf);
	gdn_doctor_add(r, st, check.buf, st == GDN_DOCTOR_OK ? NULL : fix.buf,
		       "%s free of %s at %s", avail_s.buf, total_s.buf, dir.buf);
out:
	sbuf_release(&check);
	sbuf_release(&dir);
	sbuf_release(&avail_s);
	sbuf_release(&total_s);
	sbuf_release(&min_s);
	sbuf_release(&fix);
}

/* ---- a C compiler (gdnctl demo builds a C kernel) ---- */

static void check_cc(struct gdn_doctor_report *r, long timeout_ms)
{
	const char *env_cc = getenv("CC");
	struct strvec words = STRVEC_INIT;
	struct sbuf line = SBUF_INIT;
	char *cc;
	struct ran x;

	ran_init(&x);
	strvec_split(&words, env_cc && *env_cc ? env_cc : "cc", ' ');
	cc = words.nr ? gdn_doctor_find_program(words.v[0]) : NULL;
	if (!cc) {
		gdn_doctor_add(r, GDN_DOCTOR_WARN, "c compiler",
			       "install one (apt-get install gcc) or set CC; only 'gdnctl demo' "
			       "needs it",
			       "'%s' not found in PATH", words.nr ? words.v[0] : "cc");
	} else {
		const char *argv[] = {cc, "--version", NULL};

		run_program(argv, timeout_ms, &x);
		if (stopped(r, "c compiler", &x)) {
			/* reported */
		} else if (x.started && !x.timed_out && !x.exit_code) {
			first_line(&x.out, &line);
			gdn_doctor_add(r, GDN_DOCTOR_OK, "c compiler", NULL, "%s (%s)", line.buf,
				       cc);
		} else {
			gdn_doctor_add(r, GDN_DOCTOR_WARN, "c compiler",
				       "check the compiler installation or set CC",
				       "'%s --version' failed", cc);
		}
	}
	free(cc);
	strvec_clear(&words);
	sbuf_release(&line);
	sbuf_release(&x.out);
}

/* ---- all of it ---- */

/* After SIGINT/SIGTERM (a running check was stopped): say so, and run nothing more. */
static bool interrupted(struct gdn_doctor_report *r)
{
	int sig = gdn_proc_interrupted();

	if (!sig)
		return false;
	gdn_doctor_add(r, GDN_DOCTOR_SKIP, "interrupted", NULL,
		       "stopped by signal %d: the remaining checks did not run", sig);
	return true;
}

void gdn_doctor_run(const struct gdn_doctor_opts *opts, struct gdn_doctor_report *r)
{
	struct gdn_doctor_opts o = *opts;
	struct gdn_config cfg = GDN_CONFIG_INIT;
	char *repo_root = NULL, *log_dir = NULL;
	const char *tmp = getenv("TMPDIR");
	bool cfg_ok;

	if (o.timeout_ms <= 0)
		o.timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!o.min_free)
		o.min_free = DEFAULT_MIN_FREE;
	gdn_repo_global_init();
	check_git(r, o.cwd, o.timeout_ms, &repo_root);
	cfg_ok = check_config(r, &o, repo_root, &cfg);
	if (cfg_ok)
		check_backends(r, &o, &cfg, repo_root);
	else
		gdn_doctor_add(r, GDN_DOCTOR_SKIP, "backends", NULL,
			       "not checked: the configuration did not load");
	if (interrupted(r))
		goto out;
	check_agent(r, &o, cfg_ok ? &cfg : NULL);
	if (interrupted(r))
		goto out;
	gdn_doctor_check_tokens(r);
	if (o.log_dir)
		log_dir = xstrdup(o.log_dir);
	else if (repo_root)
		log_dir = gdn_loop_default_log_dir(repo_root, NULL, NULL);
	if (!log_dir)
		log_dir = xstrfmt("%s/%s", o.cwd ? o.cwd : ".", DEFAULT_LOOP_LOGDIR);
	gdn_doctor_check_disk(r, "log dir", log_dir, o.min_free);
	gdn_doctor_check_disk(r, "tmp", tmp && *tmp ? tmp : "/tmp", o.min_free);
	check_cc(r, o.timeout_ms);
out:
	free(repo_root);
	free(log_dir);
	gdn_config_release(&cfg);
}
