/*
 * The `local` backend: the work runs on this machine. `run` is one child
 * process (its own process group, killed as a group on a timeout or ^C);
 * `run --no-wait` starts it detached through the job shim (jobdir.c), so
 * `wait`, `logs` and `stop` work from later gdnctl processes.
 *
 * Keys: backends.<name>.workdir (relative to the repository root; default:
 * the current directory), .jobdir, .poll, .kill_grace.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define DEFAULT_JOBDIR "~/.cache/gdnctl/jobs"

struct local_priv {
	struct gdn_job_target target;
	char *jobroot;
	const char *workdir; /* as configured, or NULL */
	long kill_grace_ms;
};

static void local_build(struct gdn_backend *b, const char *run_dir, const char *const *run_env,
			const char *const *args, struct strvec *argv, const char **dir,
			struct strvec *env)
{
	strvec_pushl(argv, "bash", "-s", "--", NULL);
	strvec_pushv(argv, args);
	*dir = run_dir;
	if (run_env)
		strvec_pushv(env, run_env);
}

static int local_open(struct gdn_backend *b, struct gdn_err *err)
{
	struct local_priv *lp = xcalloc(1, sizeof(*lp));
	struct gdn_err sub = GDN_ERR_INIT;
	const char *jobdir = gdn_backend_str(b, "jobdir");
	char cwd[PATH_MAX];
	int ret = 0;

	b->priv = lp;
	lp->workdir = gdn_backend_str(b, "workdir");
	lp->kill_grace_ms = (long)gdn_backend_int(b, "kill_grace", 5000);
	if (!jobdir)
		jobdir = DEFAULT_JOBDIR;
	if (lp->workdir && gdn_check_text(lp->workdir, "workdir", GDN_ECONFIG, &sub)) {
		ret = gdn_backend_config_error(b, "workdir", err, "%s", sub.msg);
		goto out;
	}
	if (gdn_check_text(jobdir, "jobdir", GDN_ECONFIG, &sub)) {
		ret = gdn_backend_config_error(b, "jobdir", err, "%s", sub.msg);
		goto out;
	}
	lp->jobroot = gdn_backend_local_path(jobdir, getcwd(cwd, sizeof(cwd)) ? cwd : NULL);
	lp->target.build = local_build;
	lp->target.jobroot = lp->jobroot;
	lp->target.kill_grace_ms = lp->kill_grace_ms;
	lp->target.poll_ms = (long)gdn_backend_int(b, "poll", 1000);
out:
	return ret;
}

static void local_free(struct gdn_backend *b)
{
	struct local_priv *lp = b->priv;

	if (lp)
		free(lp->jobroot);
	free(lp);
	b->priv = NULL;
}

/* The working directory of the work: workdir against the repository root, or NULL. */
static char *local_workdir(struct gdn_backend *b)
{
	struct local_priv *lp = b->priv;

	return lp->workdir ? gdn_backend_local_path(lp->workdir, b->repo_root) : NULL;
}

static int local_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		     struct gdn_job_status *st, struct gdn_err *err)
{
	struct local_priv *lp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct sbuf dur = SBUF_INIT;
	char *wd = local_workdir(b);
	int ret;

	if (spec->dry_run)
		b->dry_run = true;
	gdn_run_spec_argv(spec, false, &argv);
	gdn_backend_register_secrets(spec->env);
	p.argv = argv.v;
	p.env = spec->env;
	p.dir = wd;
	p.on_line = spec->on_line;
	p.payload = spec->payload;
	p.on_tick = spec->on_tick;
	p.tick_ms = spec->tick_ms;
	p.timeout_ms = (int)spec->timeout_ms;
	p.kill_grace_ms = (int)lp->kill_grace_ms;
	ret = gdn_backend_spawn(b, GDN_EV_SPAWN, &p, err);
	if (ret == GDN_ENOTFOUND) {
		/* as a shell would: the command (or its directory) is missing, exit 127 */
		gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", 127);
		snprintf(st->message, sizeof(st->message), "%.200s", err->msg);
		ret = 0;
		goto out;
	}
	if (ret || b->dry_run)
		goto out;
	gdn_job_status_from_proc(st, &p, "COMPLETED");
	if (p.status_kind == GDN_PROC_SIGNALED) {
		snprintf(st->message, sizeof(st->message), "killed by signal %d", p.signo);
	} else if (st->state == GDN_JOB_TIMEOUT) {
		gdn_format_duration(spec->timeout_ms, &dur);
		snprintf(st->message, sizeof(st->message), "stopped after the timeout of %s",
			 dur.buf);
	}
out:
	gdn_proc_release(&p);
	strvec_clear(&argv);
	sbuf_release(&dur);
	free(wd);
	return ret;
}

static int local_submit(struct gdn_backend *b, const struct gdn_run_spec *spec, char **job_id,
			struct gdn_err *err)
{
	struct local_priv *lp = b->priv;
	char *wd = local_workdir(b);
	int ret = gdn_job_submit(b, &lp->target, wd, spec, job_id, err);

	free(wd);
	return ret;
}

static int local_status(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
			struct gdn_err *err)
{
	return gdn_job_status(b, &((struct local_priv *)b->priv)->target, job_id, st, err);
}

static int local_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		      struct gdn_job_status *st, struct gdn_err *err)
{
	return gdn_job_wait(b, &((struct local_priv *)b->priv)->target, job_id, w, st, err);
}

static int local_logs(struct gdn_backend *b, const char *job_id, long tail, gdn_line_fn on_line,
		      void *payload, struct gdn_err *err)
{
	return gdn_job_logs(b, &((struct local_priv *)b->priv)->target, job_id, tail, on_line,
			    payload, err);
}

static int local_stop(struct gdn_backend *b, const char *job_id, struct gdn_err *err)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;

	return gdn_job_stop(b, &((struct local_priv *)b->priv)->target, job_id, false, &st, err);
}

/* Copy back: the files are here, relative paths start at the workdir (or the repository). */
static int local_copy_source(struct gdn_backend *b, const char *path, struct gdn_copy_where *w,
			     struct gdn_err *err)
{
	char cwd[PATH_MAX];

	(void)path;
	(void)err;
	w->local_root = local_workdir(b);
	if (!w->local_root)
		w->local_root = xstrdup(b->repo_root		   ? b->repo_root
					: getcwd(cwd, sizeof(cwd)) ? cwd
								   : ".");
	return 0;
}

const struct gdn_backend_ops gdn_backend_local_ops = {
    .type = "local",
    .builtin = true,
    .open = local_open,
    .run = local_run,
    .submit = local_submit,
    .status = local_status,
    .wait = local_wait,
    .logs = local_logs,
    .stop = local_stop,
    .copy_source = local_copy_source,
    .free_priv = local_free,
};
