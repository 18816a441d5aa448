/*
 * The `dev-tpu` backend: a development TPU held by Marin's dev_tpu.py,
 * and commands run on it.
 *
 * hold: a long-lived child, started from the repository root with the
 * command prefix (default `uv run`):
 *
 *   scripts/ray/dev_tpu.py --cluster C --tpu-name N [--verbose] allocate [--sync-path P]
 * [--tpu-type T]
 *
 * It is active once a line contains one of the ready markers (by default
 * the original's "TPU allocation is active. Press Ctrl-C to release..."
 * and "TPU allocated successfully!"). Its output goes to the allocation
 * log; from the ready line on it is read and dropped, so the child never
 * blocks on a full pipe. Each pass tries the cluster and then the
 * fallback clusters; a cluster that is not ready within ready_timeout is
 * given up; `attempts` passes, retry_sleep apart.
 *
 * release: SIGINT to the allocation's process group (dev_tpu.py releases
 * the TPU on Ctrl-C), SIGTERM after stop_timeout, SIGKILL 15 s later, until
 * the group is empty. SIGINT/SIGTERM to gdnctl do the same (proc.h).
 *
 * run: `execute: marin` (default)
 *
 *   scripts/ray/dev_tpu.py --cluster C --tpu-name N execute -e K=V... [--no-sync] -- CMD
 *
 * (CMD is one argument: dev_tpu.py runs it with bash on the TPU), or
 * `execute: ssh`, straight to the host alias dev_tpu.py writes:
 *
 *   ssh -o BatchMode=yes dev-tpu-N -- 'cd WORKDIR && exec env K=V... bash -lc CMD'
 *
 * status without a job id reports the held allocation (RUNNING while
 * held). There are no background jobs: wait, logs and stop say so (and
 * submit is absent); those are the ray backend's business.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/marin.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define TERM_GRACE_MS	15000 /* release: SIGTERM to SIGKILL, as the original */
#define FAILED_GRACE_MS 5000  /* a failed attempt that already exited */
#define TICK_MS		100
#define PROGRESS_MS	30000
#define LOG_TAIL_LINES	20
#define DEFAULT_WORKDIR "marin"

struct hold {
	struct gdn_proc p;
	struct gdn_proc_async *a;
	struct strvec argv;
	FILE *log; /* written by the worker thread only */
	const struct strvec *markers;
	bool worker_ready; /* the worker's own copy */
	bool ready;	   /* __atomic: set by the worker */
	char *cluster;
};

struct devtpu_priv {
	struct strvec prefix;
	const char *ssh;
	const char *tpu_name, *tpu_type, *sync_path, *workdir;
	struct strvec clusters; /* the cluster, then the fallbacks */
	struct strvec markers;
	long ready_timeout_ms, stop_timeout_ms, retry_sleep_ms, attempts;
	bool verbose, no_sync, ssh_execute;
	char *log_path;
	struct hold *hold; /* while held */
};

/* ---- configuration ---- */

static int check_text(struct gdn_backend *b, const char *key, const char *value,
		      struct gdn_err *err)
{
	struct gdn_err sub = GDN_ERR_INIT;
	struct sbuf what = SBUF_INIT;
	int ret = 0;

	sbuf_addf(&what, "backends.%s.%s", b->name, key);
	if (gdn_check_text(value, what.buf, GDN_ECONFIG, &sub))
		ret = gdn_err_set(err, GDN_ECONFIG, "%s: %s", gdn_backend_origin(b, key), sub.msg);
	sbuf_release(&what);
	return ret;
}

/* $XDG_STATE_HOME/gdnctl/dev-tpu-NAME-allocate.log (~/.local/state when unset). */
static char *default_log_path(const char *tpu_name)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (state && state[0] == '/')
		return xstrfmt("%s/gdnctl/dev-tpu-%s-allocate.log", state, tpu_name);
	if (home && *home)
		return xstrfmt("%s/.local/state/gdnctl/dev-tpu-%s-allocate.log", home, tpu_name);
	return xstrfmt("dev-tpu-%s-allocate.log", tpu_name);
}

static int devtpu_open(struct gdn_backend *b, struct gdn_err *err)
{
	struct devtpu_priv *dp = xcalloc(1, sizeof(*dp));
	const struct strvec *prefix = gdn_backend_list(b, "command_prefix");
	const struct strvec *fallbacks = gdn_backend_list(b, "fallback_clusters");
	const struct strvec *markers = gdn_backend_list(b, "ready_markers");
	const char *cluster = gdn_backend_str(b, "cluster");
	const char *execute = gdn_backend_str(b, "execute");
	const char *log = gdn_backend_str(b, "allocate_log");
	int ret = 0;

	b->priv = dp;
	strvec_init(&dp->prefix);
	strvec_init(&dp->clusters);
	strvec_init(&dp->markers);
	for (size_t i = 0; i < prefix->nr && !ret; i++)
		ret = check_text(b, "command_prefix", prefix->v[i], err);
	if (ret)
		goto out;
	if (prefix->nr)
		strvec_pushv(&dp->prefix, prefix->v);
	else
		strvec_pushl(&dp->prefix, gdn_backend_program(b, "uv", "uv"), "run", NULL);
	dp->ssh = gdn_backend_program(b, "ssh", "ssh");
	dp->tpu_name = gdn_backend_str(b, "tpu_name");
	dp->tpu_type = gdn_backend_str(b, "tpu_type");
	dp->sync_path = gdn_backend_str(b, "sync_path");
	dp->workdir = gdn_backend_str(b, "workdir");
	if (!dp->workdir)
		dp->workdir = DEFAULT_WORKDIR;
	dp->verbose = gdn_backend_int(b, "verbose", 0);
	dp->no_sync = gdn_backend_int(b, "no_sync", 0);
	dp->ready_timeout_ms =
	    (long)gdn_backend_int(b, "ready_timeout", GDN_MARIN_READY_TIMEOUT_MS);
	dp->stop_timeout_ms = (long)gdn_backend_int(b, "stop_timeout", GDN_MARIN_STOP_TIMEOUT_MS);
	dp->retry_sleep_ms = (long)gdn_backend_int(b, "retry_sleep", GDN_MARIN_RETRY_SLEEP_MS);
	dp->attempts = (long)gdn_backend_int(b, "attempts", 1);
	dp->ssh_execute = execute && !strcmp(execute, "ssh");
	if (execute && strcmp(execute, "ssh") && strcmp(execute, "marin")) {
		ret = gdn_backend_config_error(b, "execute", err, "is '%s', not marin or ssh",
					       execute);
		goto out;
	}
	if (!dp->tpu_name) {
		ret = gdn_backend_config_error(b, "tpu_name", err,
					       "is not set (the dev TPU's name, --tpu-name)");
		goto out;
	}
	ret = gdn_backend_check_name(b, "tpu_name", GDN_NAME_TPU_NAME, dp->tpu_name, err);
	if (ret)
		goto out;
	strvec_push(&dp->clusters, cluster ? cluster : GDN_MARIN_CLUSTER);
	ret = gdn_backend_check_name(b, "cluster", GDN_NAME_CLUSTER, dp->clusters.v[0], err);
	for (size_t i = 0; i < fallbacks->nr && !ret; i++) {
		ret = gdn_backend_check_name(b, "fallback_clusters", GDN_NAME_CLUSTER,
					     fallbacks->v[i], err);
		if (!ret && !strvec_contains(&dp->clusters, fallbacks->v[i]))
			strvec_push(&dp->clusters, fallbacks->v[i]);
	}
	if (!ret && dp->tpu_type)
		ret = gdn_backend_check_name(b, "tpu_type", GDN_NAME_TPU, dp->tpu_type, err);
	if (!ret && dp->sync_path)
		ret = check_text(b, "sync_path", dp->sync_path, err);
	if (!ret)
		ret = check_text(b, "workdir", dp->workdir, err);
	for (size_t i = 0; i < markers->nr && !ret; i++)
		ret = check_text(b, "ready_markers", markers->v[i], err);
	if (ret)
		goto out;
	strvec_pushv(&dp->markers, markers->nr ? markers->v : gdn_marin_ready_markers);
	if (dp->ready_timeout_ms <= 0)
		ret = gdn_backend_config_error(b, "ready_timeout", err, "must be > 0");
	else if (dp->stop_timeout_ms <= 0)
		ret = gdn_backend_config_error(b, "stop_timeout", err, "must be > 0");
	else if (dp->attempts <= 0)
		ret = gdn_backend_config_error(b, "attempts", err, "must be > 0");
	else if (dp->retry_sleep_ms < 0)
		ret = gdn_backend_config_error(b, "retry_sleep", err, "must be >= 0");
	if (ret)
		goto out;
	if (log)
		ret = check_text(b, "allocate_log", log, err);
	if (!ret)
		dp->log_path = log ? gdn_backend_local_path(log, b->repo_root)
				   : default_log_path(dp->tpu_name);
out:
	return ret;
}

static void hold_free(struct hold *h)
{
	if (!h)
		return;
	if (h->log)
		fclose(h->log);
	gdn_proc_release(&h->p);
	strvec_clear(&h->argv);
	free(h->cluster);
	free(h);
}

static void devtpu_free(struct gdn_backend *b)
{
	struct devtpu_priv *dp = b->priv;

	if (!dp)
		return;
	if (dp->hold) {
		/* never leave an allocation behind */
		gdn_proc_stop(dp->hold->a, (int)dp->stop_timeout_ms, TERM_GRACE_MS);
		gdn_proc_finish(dp->hold->a, NULL);
		hold_free(dp->hold);
	}
	strvec_clear(&dp->prefix);
	strvec_clear(&dp->clusters);
	strvec_clear(&dp->markers);
	free(dp->log_path);
	free(dp);
	b->priv = NULL;
}

/* ---- the allocation ---- */

/* On the worker thread: log each line until the ready one, then drain. */
static int hold_line(const char *line, size_t len, void *payload)
{
	struct hold *h = payload;

	if (h->worker_ready)
		return 0;
	if (h->log) {
		fwrite(line, 1, len, h->log);
		fputc('\n', h->log);
	}
	for (size_t i = 0; i < h->markers->nr && !h->worker_ready; i++)
		h->worker_ready = !!strstr(line, h->markers->v[i]);
	if (h->worker_ready && h->log)
		fprintf(h->log, "[gdnctl] %s\n", GDN_MARIN_READY_NOTE);
	if (h->log)
		fflush(h->log);
	if (h->worker_ready)
		__atomic_store_n(&h->ready, true, __ATOMIC_RELEASE);
	return 0;
}

/* Report the last lines of the allocation log. */
static void report_log_tail(struct gdn_backend *b, const char *path)
{
	struct sbuf text = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *s, *end;
	size_t n = 0;

	if (sbuf_read_file(&text, path, 16 << 20, &err))
		goto out;
	end = text.buf + text.len;
	if (end > text.buf && end[-1] == '\n')
		end--;
	for (s = end; s > text.buf && n < LOG_TAIL_LINES; s--)
		if (s[-1] == '\n')
			n++;
	if (s > text.buf)
		s++;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;

		gdn_backend_event(b, GDN_EV_INFO, "  | %.*s", (int)(e - s), s);
		s = nl ? nl + 1 : end;
	}
out:
	sbuf_release(&text);
}

enum attempt_result { ACTIVE, EXITED, TIMED_OUT, INTERRUPTED };

/* Start the allocation on one cluster and wait until it is ready, exits or times out. */
static int try_cluster(struct gdn_backend *b, const char *cluster, long attempt,
		       enum attempt_result *res, struct hold **out, struct gdn_err *err)
{
	struct devtpu_priv *dp = b->priv;
	struct hold *h = xcalloc(1, sizeof(*h));
	struct sbuf dur = SBUF_INIT;
	int64_t start, last_report;
	int ret;

	*out = NULL;
	h->p = (struct gdn_proc)GDN_PROC_INIT;
	strvec_init(&h->argv);
	h->markers = &dp->markers;
	h->cluster = xstrdup(cluster);
	strvec_pushv(&h->argv, dp->prefix.v);
	gdn_marin_allocate_argv(&h->argv, cluster, dp->tpu_name, dp->verbose, dp->sync_path,
				dp->tpu_type);
	gdn_backend_event(b, GDN_EV_INFO, "dev TPU allocation attempt %ld/%ld on cluster %s",
			  attempt, dp->attempts, cluster);
	gdn_backend_echo(b, GDN_EV_SPAWN, NULL, h->argv.v);
	ret = gdn_mkdir_parents(dp->log_path, 0777, err);
	if (ret)
		goto out;
	h->log = fopen(dp->log_path, "w");
	if (!h->log) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot write the allocation log '%s'",
				    dp->log_path);
		goto out;
	}
	gdn_backend_event(b, GDN_EV_INFO, "dev TPU allocation log: %s", dp->log_path);
	h->p.argv = h->argv.v;
	h->p.dir = b->repo_root;
	h->p.on_line = hold_line;
	h->p.payload = h;
	h->p.kill_grace_ms = (int)dp->stop_timeout_ms;
	ret = gdn_proc_start(&h->p, &h->a, err);
	if (ret)
		goto out;
	start = last_report = gdn_now_ms();
	for (;;) {
		bool ended = gdn_proc_poll(h->a, TICK_MS);
		int64_t now = gdn_now_ms();

		if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) {
			*res = ACTIVE;
			break;
		}
		/* before "ended": a signal to gdnctl ends the child too */
		if (gdn_proc_interrupted()) {
			*res = INTERRUPTED;
			break;
		}
		if (ended) {
			*res = EXITED;
			break;
		}
		if (now - start >= dp->ready_timeout_ms) {
			*res = TIMED_OUT;
			break;
		}
		if (now - last_report >= PROGRESS_MS) {
			sbuf_reset(&dur);
			gdn_format_elapsed(now - start, &dur);
			gdn_backend_event(b, GDN_EV_WAITING,
					  "waiting for dev-tpu-%s on cluster %s to become active "
					  "for %s",
					  dp->tpu_name, cluster, dur.buf);
			last_report = now;
		}
	}
out:
	sbuf_release(&dur);
	if (ret && h->a) {
		gdn_proc_stop(h->a, FAILED_GRACE_MS, FAILED_GRACE_MS);
		gdn_proc_finish(h->a, NULL);
		h->a = NULL;
	}
	if (ret)
		hold_free(h);
	else
		*out = h;
	return ret;
}

/*
 * Stop a failed attempt and describe it (lines of the log reported). When
 * the allocation program did not run at all, that is the error, in err.
 */
static int give_up(struct gdn_backend *b, struct hold *h, enum attempt_result res, long attempt,
		   struct sbuf *why, struct gdn_err *err)
{
	struct devtpu_priv *dp = b->priv;
	long grace = res == TIMED_OUT && dp->stop_timeout_ms > TERM_GRACE_MS ? TERM_GRACE_MS
		     : res == TIMED_OUT					     ? dp->stop_timeout_ms
									     : FAILED_GRACE_MS;
	int ret;

	gdn_proc_stop(h->a, (int)grace, TERM_GRACE_MS);
	ret = gdn_proc_finish(h->a, err);
	h->a = NULL;
	if (h->log) {
		fclose(h->log);
		h->log = NULL;
	}
	sbuf_reset(why);
	if (ret)
		return ret;
	if (res == EXITED)
		sbuf_addf(why,
			  "dev TPU allocation exited before becoming active (exit=%d, "
			  "cluster=%s, attempt=%ld/%ld); see the log: %s",
			  gdn_proc_exit_code(&h->p), h->cluster, attempt, dp->attempts,
			  dp->log_path);
	else
		sbuf_addf(why,
			  "timed out waiting for the dev TPU allocation to become active "
			  "(cluster=%s, attempt=%ld/%ld); see the log: %s",
			  h->cluster, attempt, dp->attempts, dp->log_path);
	if (res != INTERRUPTED) {
		gdn_backend_event(b, GDN_EV_INFO, "%s", why->buf);
		report_log_tail(b, dp->log_path);
	}
	return ret;
}

static int devtpu_hold(struct gdn_backend *b, struct gdn_err *err)
{
	struct devtpu_priv *dp = b->priv;
	struct sbuf why = SBUF_INIT, dur = SBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	int ret = 0;

	if (dp->hold) {
		ret = gdn_err_set(err, GDN_EUSAGE, "dev-tpu-%s is already held", dp->tpu_name);
		goto out;
	}
	if (b->dry_run) {
		strvec_pushv(&argv, dp->prefix.v);
		gdn_marin_allocate_argv(&argv, dp->clusters.v[0], dp->tpu_name, dp->verbose,
					dp->sync_path, dp->tpu_type);
		gdn_backend_echo(b, GDN_EV_SPAWN, NULL, argv.v);
		goto out;
	}
	for (long attempt = 1; attempt <= dp->attempts; attempt++) {
		for (size_t i = 0; i < dp->clusters.nr; i++) {
			enum attempt_result res = EXITED;
			struct hold *h = NULL;

			if (gdn_proc_interrupted()) {
				ret = gdn_err_set(err, GDN_EINTR,
						  "interrupted while allocating dev-tpu-%s",
						  dp->tpu_name);
				goto out;
			}
			ret = try_cluster(b, dp->clusters.v[i], attempt, &res, &h, err);
			if (ret)
				goto out;
			if (res == ACTIVE) {
				dp->hold = h;
				gdn_backend_event(b, GDN_EV_INFO,
						  "dev TPU allocation is active: dev-tpu-%s "
						  "(cluster %s)",
						  dp->tpu_name, h->cluster);
				goto out;
			}
			ret = give_up(b, h, res, attempt, &why, err);
			hold_free(h);
			if (!ret && res == INTERRUPTED)
				ret = gdn_err_set(err, GDN_EINTR,
						  "interrupted while allocating dev-tpu-%s",
						  dp->tpu_name);
			if (ret)
				goto out;
		}
		if (attempt < dp->attempts && dp->retry_sleep_ms > 0) {
			sbuf_reset(&dur);
			gdn_format_duration(dp->retry_sleep_ms, &dur);
			gdn_backend_event(b, GDN_EV_INFO, "retrying dev TPU allocation in %s",
					  dur.buf);
			if (gdn_sleep_interruptible(dp->retry_sleep_ms)) {
				ret = gdn_err_set(err, GDN_EINTR,
						  "interrupted while allocating dev-tpu-%s",
						  dp->tpu_name);
				goto out;
			}
		}
	}
	ret =
	    gdn_err_set(err, GDN_EBACKEND, "%s",
			why.len ? why.buf : "dev TPU allocation failed without diagnostic output");
out:
	strvec_clear(&argv);
	sbuf_release(&why);
	sbuf_release(&dur);
	return ret;
}

static int devtpu_release(struct gdn_backend *b, struct gdn_err *err)
{
	struct devtpu_priv *dp = b->priv;
	struct hold *h = dp->hold;
	struct gdn_err sub = GDN_ERR_INIT;
	int ret = 0;

	if (!h)
		return 0;
	gdn_backend_event(b, GDN_EV_INFO, "releasing dev TPU allocation: dev-tpu-%s (cluster %s)",
			  dp->tpu_name, h->cluster);
	gdn_proc_stop(h->a, (int)dp->stop_timeout_ms, TERM_GRACE_MS);
	if (gdn_proc_finish(h->a, &sub))
		ret = gdn_err_set(err, GDN_EBACKEND, "releasing dev-tpu-%s: %s", dp->tpu_name,
				  sub.msg);
	h->a = NULL;
	dp->hold = NULL;
	hold_free(h);
	return ret;
}

const char *gdn_devtpu_cluster(const struct gdn_backend *b)
{
	const struct devtpu_priv *dp = b->priv;

	if (strcmp(b->ops->type, "dev-tpu") || !dp || !dp->hold)
		return NULL;
	return dp->hold->cluster;
}

/* Without a job id: the held allocation (RUNNING while held). */
static int devtpu_status(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
			 struct gdn_err *err)
{
	struct devtpu_priv *dp = b->priv;
	struct hold *h = dp->hold;

	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	if (job_id && *job_id)
		return gdn_err_set(err, GDN_EUSAGE,
				   "backend '%s' (dev-tpu) has no jobs: it runs commands in the "
				   "foreground",
				   b->name);
	if (!h)
		return gdn_err_set(err, GDN_ENOTFOUND, "dev-tpu-%s is not held", dp->tpu_name);
	if (!gdn_proc_poll(h->a, 0)) {
		gdn_job_status_set(st, GDN_JOB_RUNNING, "HELD", -1);
	} else {
		/* h->p is the worker's until finish: read it after joining */
		gdn_proc_finish(h->a, NULL);
		h->a = NULL;
		gdn_job_status_set(st, GDN_JOB_FAILED, "EXITED", gdn_proc_exit_code(&h->p));
		snprintf(st->message, sizeof(st->message),
			 "the allocation process exited (exit=%d); see the log: %s",
			 gdn_proc_exit_code(&h->p), dp->log_path);
		dp->hold = NULL;
		hold_free(h);
	}
	snprintf(st->job_id, sizeof(st->job_id), "dev-tpu-%s", dp->tpu_name);
	return 0;
}

/* wait, logs and stop: a dev TPU runs commands in the foreground only. */
static int no_jobs(struct gdn_backend *b, struct gdn_err *err)
{
	return gdn_err_set(err, GDN_EUSAGE,
			   "backend '%s' (dev-tpu) has no jobs: it runs commands in the foreground "
			   "(use a ray backend for jobs)",
			   b->name);
}

static int devtpu_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		       struct gdn_job_status *st, struct gdn_err *err)
{
	(void)job_id;
	(void)w;
	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	return no_jobs(b, err);
}

static int devtpu_logs(struct gdn_backend *b, const char *job_id, long tail, gdn_line_fn on_line,
		       void *payload, struct gdn_err *err)
{
	(void)job_id;
	(void)tail;
	(void)on_line;
	(void)payload;
	return no_jobs(b, err);
}

static int devtpu_stop(struct gdn_backend *b, const char *job_id, struct gdn_err *err)
{
	(void)job_id;
	return no_jobs(b, err);
}

/* ---- running commands ---- */

/* ssh dev-tpu-N -- 'cd WORKDIR && exec env K=V... bash -lc CMD' */
static void ssh_argv(struct devtpu_priv *dp, const struct gdn_run_spec *spec, const char *cmd,
		     struct strvec *argv)
{
	struct sbuf remote = SBUF_INIT, host = SBUF_INIT;

	sbuf_adds(&remote, "cd ");
	gdn_sh_add_path(&remote, dp->workdir);
	sbuf_adds(&remote, " && exec env");
	for (size_t i = 0; spec->env && spec->env[i]; i++) {
		if (!strchr(spec->env[i], '='))
			continue;
		sbuf_addch(&remote, ' ');
		sbuf_add_shell_quoted(&remote, spec->env[i]);
	}
	sbuf_adds(&remote, " bash -lc ");
	sbuf_add_shell_quoted(&remote, cmd);
	sbuf_addf(&host, "dev-tpu-%s", dp->tpu_name);
	strvec_pushl(argv, dp->ssh, "-o", "BatchMode=yes", host.buf, "--", remote.buf, NULL);
	sbuf_release(&remote);
	sbuf_release(&host);
}

static int devtpu_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		      struct gdn_job_status *st, struct gdn_err *err)
{
	struct devtpu_priv *dp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct sbuf cmd = SBUF_INIT;
	const char *cluster = dp->hold ? dp->hold->cluster : dp->clusters.v[0];
	int ret = 0;

	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	gdn_spec_command(spec, &cmd);
	gdn_backend_register_secrets(spec->env);
	if (dp->ssh_execute) {
		ssh_argv(dp, spec, cmd.buf, &argv);
	} else {
		strvec_pushv(&argv, dp->prefix.v);
		gdn_marin_execute_argv(&argv, cluster, dp->tpu_name, spec->env, dp->no_sync,
				       cmd.buf);
	}
	p.argv = argv.v;
	p.dir = b->repo_root;
	p.on_line = spec->on_line;
	p.payload = spec->payload;
	p.timeout_ms = spec->timeout_ms > INT_MAX ? INT_MAX : (int)spec->timeout_ms;
	p.kill_grace_ms = 10000;
	if (spec->dry_run && !b->dry_run) {
		gdn_backend_echo(b, GDN_EV_SPAWN, NULL, argv.v);
		goto out;
	}
	ret = gdn_backend_spawn(b, GDN_EV_SPAWN, &p, err);
	if (ret || b->dry_run)
		goto out;
	gdn_job_status_from_proc(st, &p, "SUCCEEDED");
out:
	strvec_clear(&argv);
	sbuf_release(&cmd);
	gdn_proc_release(&p);
	return ret;
}

/*
 * Copy back from the TPU host over ssh to the alias dev_tpu.py writes
 * (dev-tpu-NAME); relative paths start at workdir.
 */
static int devtpu_copy_source(struct gdn_backend *b, const char *path, struct gdn_copy_where *w,
			      struct gdn_err *err)
{
	struct devtpu_priv *dp = b->priv;

	(void)path;
	(void)err;
	strvec_pushl(&w->ssh, dp->ssh, "-o", "BatchMode=yes", NULL);
	w->host = xstrfmt("dev-tpu-%s", dp->tpu_name);
	w->remote_root = xstrdup(dp->workdir);
	w->rsync = gdn_backend_program(b, "rsync", "rsync");
	return 0;
}

const struct gdn_backend_ops gdn_backend_devtpu_ops = {
    .type = "dev-tpu",
    .builtin = true,
    .open = devtpu_open,
    .run = devtpu_run,
    .status = devtpu_status,
    .wait = devtpu_wait,
    .logs = devtpu_logs,
    .stop = devtpu_stop,
    .hold = devtpu_hold,
    .release = devtpu_release,
    .copy_source = devtpu_copy_source,
    .free_priv = devtpu_free,
};
