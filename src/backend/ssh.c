/*
 * The `ssh` backend: the work runs on a host reached with OpenSSH,
 *
 *   ssh -o BatchMode=yes [-p PORT] [-i IDENTITY] [-l USER] [-o OPT]... HOST -- \
 *       'cd -- DIR && env K=V... bash -s -- run JOBDIR fg ARGV...'
 *
 * with the job shim (jobdir.c) on standard input and every value quoted
 * for the remote shell. The shim runs the command in its own process
 * group and records it, so a command that outlives its timeout (or a ^C)
 * is stopped on the host by a second ssh ("stop"): killing the local ssh
 * client alone would leave it running there. The exit status is the
 * remote command's.
 *
 * With `sync: rsync` the repository (or the current directory) is first
 * copied to the workdir: `ssh HOST -- mkdir -p -- DIR`, then
 * `rsync -a -s --checksum [--exclude=P]... -e 'ssh ...' SRC/ HOST:DIR/`
 * (by content, not by size and mtime: see ssh_sync()). A second
 * tree (b->copy_suffix: --perf-ab's champion) has a workdir of its own,
 * DIR + suffix.
 *
 * Names are checked when the backend is opened: the host and the user
 * must not start with '-' and contain no shell metacharacters; no value
 * may contain a newline.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define DEFAULT_JOBDIR	"~/.cache/gdnctl/jobs"
#define SYNC_TIMEOUT_MS (3600 * 1000)

struct ssh_priv {
	struct gdn_job_target target;
	const char *ssh, *rsync;
	const char *host, *user, *workdir, *jobroot;
	char *identity;
	long port;
	const struct strvec *excludes;
	struct strvec options; /* ssh_options as ssh -o values */
	bool sync;
};

/* ssh and its options, up to (not including) the host. */
static void ssh_base(const struct ssh_priv *sp, struct strvec *argv)
{
	strvec_pushl(argv, sp->ssh, "-o", "BatchMode=yes", NULL);
	if (sp->port > 0) {
		strvec_push(argv, "-p");
		strvec_pushf(argv, "%ld", sp->port);
	}
	if (sp->identity)
		strvec_pushl(argv, "-i", sp->identity, NULL);
	if (sp->user)
		strvec_pushl(argv, "-l", sp->user, NULL);
	for (size_t i = 0; i < sp->options.nr; i++)
		strvec_pushl(argv, "-o", sp->options.v[i], NULL);
}

static void ssh_build(struct gdn_backend *b, const char *run_dir, const char *const *run_env,
		      const char *const *args, struct strvec *argv, const char **dir,
		      struct strvec *env)
{
	struct ssh_priv *sp = b->priv;
	struct sbuf remote = SBUF_INIT;

	gdn_ssh_remote_command(&remote, run_dir, run_env, args);
	ssh_base(sp, argv);
	strvec_pushl(argv, sp->host, "--", remote.buf, NULL);
	*dir = NULL;
	sbuf_release(&remote);
}

/* rsync -e splits its argument at spaces and honours '...' and "..." (no backslashes). */
static bool rsync_quotable(const char *s)
{
	return !(strchr(s, '\'') && strchr(s, '"'));
}

static void rsync_add_word(struct sbuf *sb, const char *s)
{
	if (sb->len)
		sbuf_addch(sb, ' ');
	if (*s && !strpbrk(s, " \t'\""))
		sbuf_adds(sb, s);
	else if (!strchr(s, '\''))
		sbuf_addf(sb, "'%s'", s);
	else
		sbuf_addf(sb, "\"%s\"", s);
}

static int check_key(struct gdn_backend *b, const char *key, const char *value,
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

const char *gdn_ssh_options(const struct strvec *items, struct strvec *out)
{
	for (size_t i = 0; i < items->nr; i++) {
		const char *v = items->v[i];

		if (!strcmp(v, "-o")) {
			if (i + 1 == items->nr)
				return v;
			v = items->v[++i];
		} else if (!strncmp(v, "-o", 2)) {
			v += 2;
			v += strspn(v, " \t");
		}
		if (!*v || *v == '-')
			return items->v[i];
		strvec_push(out, v);
	}
	return NULL;
}

/* ssh_options (gdn_ssh_options), or a configuration error naming the refused item. */
static int ssh_options(struct gdn_backend *b, struct strvec *out, struct gdn_err *err)
{
	const char *bad = gdn_ssh_options(gdn_backend_list(b, "ssh_options"), out);

	if (!bad)
		return 0;
	if (!strcmp(bad, "-o"))
		return gdn_backend_config_error(b, "ssh_options", err,
						"ends with '-o' without its value (Key=value)");
	return gdn_backend_config_error(b, "ssh_options", err,
					"item '%s' is not an ssh -o option: write Key=value "
					"(StrictHostKeyChecking=accept-new)",
					bad);
}

static int ssh_open(struct gdn_backend *b, struct gdn_err *err)
{
	struct ssh_priv *sp = xcalloc(1, sizeof(*sp));
	const char *identity = gdn_backend_str(b, "identity");
	const char *sync = gdn_backend_str(b, "sync");
	int ret = 0;

	b->priv = sp;
	sp->ssh = gdn_backend_program(b, "ssh", "ssh");
	sp->rsync = gdn_backend_program(b, "rsync", "rsync");
	sp->host = gdn_backend_str(b, "host");
	sp->user = gdn_backend_str(b, "user");
	sp->workdir = gdn_backend_str(b, "workdir");
	sp->jobroot = gdn_backend_str(b, "jobdir");
	sp->port = (long)gdn_backend_int(b, "port", 0);
	strvec_init(&sp->options);
	sp->excludes = gdn_backend_list(b, "sync_exclude");
	sp->sync = sync && !strcmp(sync, "rsync");
	if (!sp->jobroot)
		sp->jobroot = DEFAULT_JOBDIR;

	if (!sp->host) {
		ret = gdn_backend_config_error(b, "host", err,
					       "is not set (the ssh backend needs "
					       "a host)");
		goto out;
	}
	ret = check_key(b, "host", sp->host, gdn_check_host, err);
	if (!ret && sp->user)
		ret = check_key(b, "user", sp->user, gdn_check_user, err);
	if (!ret && identity)
		ret = check_key(b, "identity", identity, gdn_check_text, err);
	if (!ret && sp->workdir)
		ret = check_key(b, "workdir", sp->workdir, gdn_check_text, err);
	if (!ret)
		ret = check_key(b, "jobdir", sp->jobroot, gdn_check_text, err);
	if (!ret)
		ret = ssh_options(b, &sp->options, err);
	for (size_t i = 0; !ret && i < sp->options.nr; i++)
		ret = check_key(b, "ssh_options", sp->options.v[i], gdn_check_text, err);
	for (size_t i = 0; !ret && i < sp->excludes->nr; i++)
		ret = check_key(b, "sync_exclude", sp->excludes->v[i], gdn_check_text, err);
	if (ret)
		goto out;
	if (!ret && (sp->port < 0 || sp->port > 65535)) {
		ret = gdn_backend_config_error(b, "port", err, "must be 1 to 65535, not %ld",
					       sp->port);
		goto out;
	}
	if (sp->sync && !sp->workdir) {
		ret = gdn_backend_config_error(
		    b, "sync", err, "needs backends.%s.workdir (where to copy to)", b->name);
		goto out;
	}
	if (identity)
		sp->identity = gdn_backend_local_path(identity, NULL);
	if (sp->sync) {
		bool ok = !sp->identity || rsync_quotable(sp->identity);

		for (size_t i = 0; ok && i < sp->options.nr; i++)
			ok = rsync_quotable(sp->options.v[i]);
		if (!ok) {
			ret = gdn_backend_config_error(
			    b, "sync", err,
			    "cannot pass an identity or ssh option with both ' and \" to rsync -e");
			goto out;
		}
	}
	sp->target.build = ssh_build;
	sp->target.jobroot = sp->jobroot;
	sp->target.kill_grace_ms = (long)gdn_backend_int(b, "kill_grace", 5000);
	sp->target.poll_ms = (long)gdn_backend_int(b, "poll", 5000);
	sp->target.login_shell = true;
out:
	return ret;
}

static void ssh_free(struct gdn_backend *b)
{
	struct ssh_priv *sp = b->priv;

	if (sp) {
		free(sp->identity);
		strvec_clear(&sp->options);
	}
	free(sp);
	b->priv = NULL;
}

/* Run one ssh/rsync step of the sync; 0 when it succeeded. */
static int sync_step(struct gdn_backend *b, const char *what, struct strvec *argv,
		     gdn_line_fn on_line, void *payload, struct gdn_err *err)
{
	struct gdn_proc p = GDN_PROC_INIT;
	int ret;

	p.argv = argv->v;
	p.on_line = on_line;
	p.payload = payload;
	p.timeout_ms = SYNC_TIMEOUT_MS;
	p.kill_grace_ms = 1000;
	ret = gdn_backend_spawn(b, GDN_EV_SPAWN, &p, err);
	if (ret || b->dry_run)
		goto out;
	if (p.status_kind == GDN_PROC_STOPPED)
		ret = gdn_err_set(err, GDN_EINTR, "interrupted while %s", what);
	else if (p.status_kind != GDN_PROC_EXITED || p.code)
		ret = gdn_err_set(err, GDN_EBACKEND, "%s for backend '%s' failed (exit %d)", what,
				  b->name, gdn_proc_exit_code(&p));
out:
	gdn_proc_release(&p);
	return ret;
}

/*
 * The workdir of this run (caller frees; NULL when none): workdir, or
 * with b->copy_suffix a second tree's (backend.h).
 */
static char *ssh_workdir(const struct gdn_backend *b)
{
	const struct ssh_priv *sp = b->priv;
	size_t n;

	if (!sp->workdir)
		return NULL;
	if (!b->copy_suffix || !*b->copy_suffix)
		return xstrdup(sp->workdir);
	n = strlen(sp->workdir);
	while (n > 1 && sp->workdir[n - 1] == '/')
		n--;
	if (n == 1 && (sp->workdir[0] == '~' || sp->workdir[0] == '/'))
		return xstrfmt("%s%s", sp->workdir[0] == '~' ? "~/" : "/", b->copy_suffix);
	return xstrfmt("%.*s%s", (int)n, sp->workdir, b->copy_suffix);
}

/* Copy the repository to the workdir wd. */
static int ssh_sync(struct gdn_backend *b, const char *wd, gdn_line_fn on_line, void *payload,
		    struct gdn_err *err)
{
	struct ssh_priv *sp = b->priv;
	struct strvec argv = STRVEC_INIT, base = STRVEC_INIT;
	struct sbuf remote = SBUF_INIT, e = SBUF_INIT, dest = SBUF_INIT;
	char cwd[PATH_MAX];
	const char *src = b->repo_root;
	int ret;

	if (!src)
		src = getcwd(cwd, sizeof(cwd)) ? cwd : ".";
	sbuf_adds(&remote, "mkdir -p -- ");
	gdn_sh_add_path(&remote, wd);
	ssh_base(sp, &argv);
	strvec_pushl(&argv, sp->host, "--", remote.buf, NULL);
	ret = sync_step(b, "creating the workdir", &argv, on_line, payload, err);
	if (ret)
		goto out;

	ssh_base(sp, &base);
	for (size_t i = 0; i < base.nr; i++)
		rsync_add_word(&e, base.v[i]);
	/* rsync paths are relative to the remote home: "~/x" is "x" */
	if (!strcmp(wd, "~"))
		wd = ".";
	else if (!strncmp(wd, "~/", 2))
		wd += 2;
	sbuf_addf(&dest, "%s:%s/", sp->host, wd);
	strvec_clear(&argv);
	/*
	 * --checksum: a file rewritten with the same size within the second
	 * rsync last copied it (an agent's "2.0" over "1.0") passes rsync's
	 * quick check of size and whole-second mtime, and the old tree would be
	 * validated (t0730 saw it; t0410 plants it)
	 */
	strvec_pushl(&argv, sp->rsync, "-a", "-s", "--checksum", NULL);
	for (size_t i = 0; i < sp->excludes->nr; i++)
		strvec_pushf(&argv, "--exclude=%s", sp->excludes->v[i]);
	strvec_pushl(&argv, "-e", e.buf, NULL);
	strvec_pushf(&argv, "%s/", src);
	strvec_push(&argv, dest.buf);
	ret = sync_step(b, "rsync", &argv, on_line, payload, err);
out:
	strvec_clear(&argv);
	strvec_clear(&base);
	sbuf_release(&remote);
	sbuf_release(&e);
	sbuf_release(&dest);
	return ret;
}

static int ssh_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		   struct gdn_job_status *st, struct gdn_err *err)
{
	struct ssh_priv *sp = b->priv;
	char *wd = ssh_workdir(b);
	int ret = 0;

	if (spec->dry_run)
		b->dry_run = true;
	if (sp->sync)
		ret = ssh_sync(b, wd, spec->on_line, spec->payload, err);
	if (!ret)
		ret = gdn_job_run_fg(b, &sp->target, wd, spec, st, err);
	free(wd);
	return ret;
}

static int ssh_submit(struct gdn_backend *b, const struct gdn_run_spec *spec, char **job_id,
		      struct gdn_err *err)
{
	struct ssh_priv *sp = b->priv;
	char *wd = ssh_workdir(b);
	int ret = 0;

	*job_id = NULL;
	if (spec->dry_run)
		b->dry_run = true;
	if (sp->sync)
		ret = ssh_sync(b, wd, spec->on_line, spec->payload, err);
	if (!ret)
		ret = gdn_job_submit(b, &sp->target, wd, spec, job_id, err);
	free(wd);
	return ret;
}

static int ssh_status(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
		      struct gdn_err *err)
{
	return gdn_job_status(b, &((struct ssh_priv *)b->priv)->target, job_id, st, err);
}

static int ssh_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		    struct gdn_job_status *st, struct gdn_err *err)
{
	return gdn_job_wait(b, &((struct ssh_priv *)b->priv)->target, job_id, w, st, err);
}

static int ssh_logs(struct gdn_backend *b, const char *job_id, long tail, gdn_line_fn on_line,
		    void *payload, struct gdn_err *err)
{
	return gdn_job_logs(b, &((struct ssh_priv *)b->priv)->target, job_id, tail, on_line,
			    payload, err);
}

static int ssh_stop(struct gdn_backend *b, const char *job_id, struct gdn_err *err)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;

	return gdn_job_stop(b, &((struct ssh_priv *)b->priv)->target, job_id, false, &st, err);
}

/* Copy back from the host over the backend's own ssh options; relative paths start at workdir. */
static int ssh_copy_source(struct gdn_backend *b, const char *path, struct gdn_copy_where *w,
			   struct gdn_err *err)
{
	struct ssh_priv *sp = b->priv;

	(void)path;
	(void)err;
	ssh_base(sp, &w->ssh);
	w->host = xstrdup(sp->host);
	w->remote_root = ssh_workdir(b);
	w->rsync = sp->rsync;
	return 0;
}

const struct gdn_backend_ops gdn_backend_ssh_ops = {
    .type = "ssh",
    .open = ssh_open,
    .run = ssh_run,
    .submit = ssh_submit,
    .status = ssh_status,
    .wait = ssh_wait,
    .logs = ssh_logs,
    .stop = ssh_stop,
    .copy_source = ssh_copy_source,
    .free_priv = ssh_free,
};
