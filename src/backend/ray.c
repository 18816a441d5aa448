/*
 * The `ray` backend: jobs on a Ray cluster, through the Ray job CLI.
 *
 * `cli: marin` (the default) drives Marin's wrappers, run from the
 * repository root with the command prefix (default `uv run`):
 *
 *   ray_run.py --cluster C --tpu T -e K=V... [--submission-id ID] [--no_wait] -- bash -lc CMD
 *   cluster.py --cluster C wait-job ID --poll P [--timeout T] [--show-logs] --tail N
 *   cluster.py --cluster C job-logs [-n N] ID | stop-job ID | list-jobs
 *
 * (the paths under lib/marin/ and scripts/ray/, see marin.h). `cli: ray`
 * drives the plain CLI (prefix default `ray`) with `--log-style record
 * --log-color false` so the lines parse the same from any terminal:
 *
 *   ray job submit [--address URL] [--submission-id ID] --runtime-env-json J --no-wait -- bash -lc
 * S ray job status|logs|stop [--address URL] ID
 *
 * Ray joins the entrypoint words with subprocess.list2cmdline() and runs
 * the result with /bin/sh, which would re-expand the command; so the
 * command travels in the runtime environment (GDNCTL_COMMAND, with the
 * job's variables) and the entrypoint only expands it: S is chosen so that
 * after list2cmdline and sh, bash gets exactly `eval "$GDNCTL_COMMAND"`.
 * Waiting polls `ray job status` and follows `ray job logs`.
 *
 * A job that ends STOPPED is not a success. Names (cluster, TPU type, job
 * ids) are checked before anything runs; nothing goes through a local shell.
 */
#include "gdnctl/compat.h"
#include <jansson.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/marin.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define TOOL_TIMEOUT_MS	 (10 * 60 * 1000) /* submit, status, logs, stop */
#define CAPTURE_LIMIT	 (64 << 20)
#define STOP_GRACE_MS	 10000
#define PLAIN_ENTRYPOINT "eval \"\\$GDNCTL_COMMAND\""
#define COMMAND_VARIABLE "GDNCTL_COMMAND"

struct ray_priv {
	bool marin;	      /* Marin's wrappers, else the plain ray CLI */
	struct strvec prefix; /* the program and its leading words */
	const char *cluster;  /* Marin: --cluster */
	const char *tpu;      /* Marin ray_run.py: --tpu (NULL: none) */
	const char *address;  /* plain: --address (NULL: Ray's own default) */
	long poll_ms;
};

static int ray_open(struct gdn_backend *b, struct gdn_err *err)
{
	struct ray_priv *rp = xcalloc(1, sizeof(*rp));
	const char *cli = gdn_backend_str(b, "cli");
	const struct strvec *prefix = gdn_backend_list(b, "command_prefix");
	int ret = 0;

	b->priv = rp;
	strvec_init(&rp->prefix);
	if (cli && strcmp(cli, "marin") && strcmp(cli, "ray")) {
		ret = gdn_backend_config_error(b, "cli", err, "is '%s', not marin or ray", cli);
		goto out;
	}
	rp->marin = !cli || !strcmp(cli, "marin");
	for (size_t i = 0; i < prefix->nr && !ret; i++)
		ret =
		    gdn_check_text(prefix->v[i], "a word of the command prefix", GDN_ECONFIG, err);
	if (ret)
		goto out;
	if (prefix->nr)
		strvec_pushv(&rp->prefix, prefix->v);
	else if (rp->marin)
		strvec_pushl(&rp->prefix, gdn_backend_program(b, "uv", "uv"), "run", NULL);
	else
		strvec_push(&rp->prefix, gdn_backend_program(b, "ray", "ray"));
	rp->cluster = gdn_backend_str(b, "cluster");
	if (!rp->cluster)
		rp->cluster = GDN_MARIN_CLUSTER;
	rp->tpu = gdn_backend_str(b, "tpu");
	if (!rp->tpu)
		rp->tpu = GDN_MARIN_TEST_TPU;
	else if (!strcmp(rp->tpu, "none"))
		rp->tpu = NULL;
	rp->address = gdn_backend_str(b, "address");
	rp->poll_ms = (long)gdn_backend_int(b, "poll", GDN_MARIN_WAIT_POLL_MS);
	ret = gdn_backend_check_name(b, "cluster", GDN_NAME_CLUSTER, rp->cluster, err);
	if (!ret && rp->tpu)
		ret = gdn_backend_check_name(b, "tpu", GDN_NAME_TPU, rp->tpu, err);
	if (!ret && rp->address)
		ret = gdn_check_text(rp->address, "the Ray address", GDN_ECONFIG, err);
	if (!ret && rp->address && rp->address[0] == '-')
		ret = gdn_backend_config_error(b, "address", err, "must not start with '-'");
out:
	return ret;
}

static void ray_free(struct gdn_backend *b)
{
	struct ray_priv *rp = b->priv;

	if (rp)
		strvec_clear(&rp->prefix);
	free(rp);
	b->priv = NULL;
}

/* ---- running the tools ---- */

/* The prefix, then `ray job SUB [--address A] --log-style record --log-color false` (plain). */
static void plain_argv(const struct ray_priv *rp, const char *sub, struct strvec *argv)
{
	strvec_pushv(argv, rp->prefix.v);
	strvec_pushl(argv, "job", sub, NULL);
	if (rp->address)
		strvec_pushl(argv, "--address", rp->address, NULL);
	strvec_pushl(argv, "--log-style", "record", "--log-color", "false", NULL);
}

/* Echo, then run (unless a dry run); 0 with status NOT_RUN for a dry run. */
static int spawn(struct gdn_backend *b, bool dry, enum gdn_backend_event ev, struct gdn_proc *p,
		 struct gdn_err *err)
{
	if (dry && !b->dry_run) {
		gdn_backend_echo(b, ev, p->env, p->argv);
		p->status_kind = GDN_PROC_NOT_RUN;
		return 0;
	}
	return gdn_backend_spawn(b, ev, p, err);
}

/* A tool that ran to the end with exit 0; else an error naming it. */
static int tool_result(struct gdn_backend *b, const char *what, struct gdn_proc *p,
		       struct gdn_err *err)
{
	struct sbuf first = SBUF_INIT;
	int ret = 0;

	if (p->status_kind == GDN_PROC_STOPPED) {
		ret = gdn_err_set(err, GDN_EINTR, "interrupted while %s on %s", what, b->name);
	} else if (p->status_kind == GDN_PROC_TIMEOUT) {
		ret = gdn_err_set(err, GDN_EBACKEND, "%s on %s timed out", what, b->name);
	} else if (p->status_kind != GDN_PROC_EXITED || p->code) {
		gdn_backend_first_line(&p->out, &first);
		gdn_secret_mask(&first);
		ret = gdn_err_set(err, GDN_EBACKEND, "%s on %s failed (exit %d): %s", what, b->name,
				  gdn_proc_exit_code(p), first.buf);
	}
	sbuf_release(&first);
	return ret;
}

/*
 * Run argv in the repository, streaming its output to on_line (when
 * given) and capturing it unless it is the job's own long output.
 */
static int run_tool(struct gdn_backend *b, bool dry, enum gdn_backend_event ev,
		    const struct strvec *argv, gdn_line_fn on_line, void *payload, long timeout_ms,
		    bool capture, struct gdn_proc *p, struct gdn_err *err)
{
	p->argv = argv->v;
	p->dir = b->repo_root;
	p->capture = capture;
	p->out.limit = CAPTURE_LIMIT;
	p->on_line = on_line;
	p->payload = payload;
	p->timeout_ms = timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
	p->kill_grace_ms = STOP_GRACE_MS;
	return spawn(b, dry, ev, p, err);
}

static int check_job(const char *job_id, struct gdn_err *err)
{
	return gdn_marin_check_name(GDN_NAME_JOB, job_id, err);
}

/* A submission id from spec->name: NAME-YYYYmmdd-HHMMSS-xxxxxx, or NULL (the tool picks). */
static int submission_id(const struct gdn_run_spec *spec, char **out, struct gdn_err *err)
{
	char stamp[64];

	*out = NULL;
	if (!spec->name)
		return 0;
	gdn_job_new_id(stamp, sizeof(stamp));
	*out = xstrfmt("%s-%s", spec->name, stamp);
	if (check_job(*out, err)) {
		FREE_AND_NULL(*out);
		return gdn_err_set(err, GDN_EUSAGE,
				   "invalid job name '%s': use letters, digits, "
				   "'.', '_' and '-'",
				   spec->name);
	}
	return 0;
}

/* ---- what a submit prints ---- */

struct submit_out {
	gdn_line_fn on_line;
	void *payload;
	char *id;
};

static int submit_line(const char *line, size_t len, void *payload)
{
	struct submit_out *so = payload;

	if (!so->id)
		so->id = gdn_ray_parse_submission_id(line, len);
	return so->on_line ? so->on_line(line, len, so->payload) : 0;
}

/* The Marin ray_run.py argv for spec (no_wait: --no_wait). */
static void marin_submit_argv(const struct ray_priv *rp, const struct gdn_run_spec *spec,
			      const char *sid, bool no_wait, struct strvec *argv)
{
	struct strvec cmd = STRVEC_INIT;

	if (spec->shell)
		strvec_pushl(&cmd, "bash", "-lc", spec->shell, NULL);
	else
		strvec_pushv(&cmd, spec->argv);
	strvec_pushv(argv, rp->prefix.v);
	gdn_marin_ray_run_argv(argv, rp->cluster, rp->tpu, spec->env, sid, no_wait, cmd.v);
	strvec_clear(&cmd);
}

/*
 * The plain `ray job submit --no-wait` argv for spec. GDN_EUSAGE when a
 * value is not UTF-8 text (the Ray job API takes JSON).
 */
static int plain_submit_argv(const struct ray_priv *rp, const struct gdn_run_spec *spec,
			     const char *sid, struct strvec *argv, struct gdn_err *err)
{
	json_t *runtime = json_object(), *vars = json_object(), *v;
	struct sbuf command = SBUF_INIT;
	char *text = NULL;
	int ret = 0;

	for (size_t i = 0; spec->env && spec->env[i] && !ret; i++) {
		const char *eq = strchr(spec->env[i], '=');
		char *key;

		if (!eq)
			continue;
		key = xstrndup(spec->env[i], (size_t)(eq - spec->env[i]));
		v = json_string(eq + 1);
		if (!v || json_object_set_new(vars, key, v))
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "the value of '%s' is not UTF-8 text, which the Ray job "
					  "API needs",
					  key);
		free(key);
	}
	gdn_spec_command(spec, &command);
	v = ret ? NULL : json_string(command.buf);
	if (!ret && (!v || json_object_set_new(vars, COMMAND_VARIABLE, v)))
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "the command is not UTF-8 text, which the Ray job API needs");
	json_object_set_new(runtime, "env_vars", vars);
	if (ret)
		goto out;
	text = json_dumps(runtime, JSON_COMPACT | JSON_ENSURE_ASCII);
	plain_argv(rp, "submit", argv);
	if (sid)
		strvec_pushl(argv, "--submission-id", sid, NULL);
	strvec_pushl(argv, "--runtime-env-json", text ? text : "{}", "--no-wait", "--", "bash",
		     "-lc", PLAIN_ENTRYPOINT, NULL);
out:
	free(text);
	json_decref(runtime);
	sbuf_release(&command);
	return ret;
}

/* Submit without waiting; *id set (caller frees) unless a dry run. */
static int submit_job(struct gdn_backend *b, const struct gdn_run_spec *spec, char **id,
		      struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct submit_out so = {spec->on_line, spec->payload, NULL};
	char *sid = NULL;
	bool dry = spec->dry_run || b->dry_run;
	int ret;

	*id = NULL;
	ret = submission_id(spec, &sid, err);
	if (ret)
		goto out;
	gdn_backend_register_secrets(spec->env);
	if (rp->marin)
		marin_submit_argv(rp, spec, sid, true, &argv);
	else
		ret = plain_submit_argv(rp, spec, sid, &argv, err);
	if (ret)
		goto out;
	/* Marin's submit output is worth seeing; the plain CLI's is boilerplate */
	so.on_line = rp->marin ? spec->on_line : NULL;
	ret =
	    run_tool(b, dry, GDN_EV_SPAWN, &argv, submit_line, &so, TOOL_TIMEOUT_MS, true, &p, err);
	if (ret || dry)
		goto out;
	ret = tool_result(b, "submitting the job", &p, err);
	if (ret)
		goto out;
	if (!so.id) {
		ret = gdn_err_set(err, GDN_EBACKEND,
				  "could not parse the submission id from the output of '%s'",
				  argv.v[0]);
		goto out;
	}
	if (check_job(so.id, err)) {
		ret = gdn_err_prefix(err, "submitted, but the tool printed a strange id");
		goto out;
	}
	*id = so.id;
	so.id = NULL;
out:
	free(so.id);
	free(sid);
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

static int ray_submit(struct gdn_backend *b, const struct gdn_run_spec *spec, char **job_id,
		      struct gdn_err *err)
{
	return submit_job(b, spec, job_id, err);
}

/* ---- status ---- */

struct status_out {
	const char *id;
	struct gdn_job_status *st;
	bool seen;
};

static int status_line(const char *line, size_t len, void *payload)
{
	struct status_out *so = payload;

	if (gdn_ray_parse_status_line(line, len, so->id, so->st))
		so->seen = true;
	return 0;
}

static int ray_status(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
		      struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct status_out so = {job_id, st, false};
	int ret = check_job(job_id, err);

	if (ret)
		goto out;
	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	if (rp->marin) {
		strvec_pushv(&argv, rp->prefix.v);
		gdn_marin_list_jobs_argv(&argv, rp->cluster);
	} else {
		plain_argv(rp, "status", &argv);
		strvec_push(&argv, job_id);
	}
	ret = run_tool(b, false, GDN_EV_POLL, &argv, rp->marin ? NULL : status_line, &so,
		       TOOL_TIMEOUT_MS, true, &p, err);
	if (ret || b->dry_run)
		goto out;
	if (!rp->marin && p.status_kind == GDN_PROC_EXITED && p.code &&
	    (strstr(p.out.buf, "does not exist") || strstr(p.out.buf, "not found"))) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no job '%s' on %s", job_id, b->name);
		goto out;
	}
	ret = tool_result(b, "asking for the job status", &p, err);
	if (ret)
		goto out;
	if (rp->marin) {
		ret = gdn_ray_parse_job_list(p.out.buf, p.out.len, job_id, st, err);
		if (ret == GDN_ENOTFOUND)
			gdn_err_set(err, GDN_ENOTFOUND, "no job '%s' on %s", job_id, b->name);
	} else if (!so.seen) {
		ret = gdn_err_set(err, GDN_EBACKEND,
				  "could not read the status of job '%s' from 'ray job status'",
				  job_id);
	}
	if (!ret && st->state == GDN_JOB_SUCCEEDED && st->exit_code < 0)
		st->exit_code = 0;
	snprintf(st->job_id, sizeof(st->job_id), "%s", job_id);
out:
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/* ---- logs ---- */

static int ray_logs(struct gdn_backend *b, const char *job_id, long tail, gdn_line_fn on_line,
		    void *payload, struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = check_job(job_id, err);

	if (ret)
		goto out;
	if (rp->marin && tail > 0) {
		strvec_pushv(&argv, rp->prefix.v);
		gdn_marin_job_logs_argv(&argv, rp->cluster, job_id, tail, NULL);
	} else if (rp->marin) {
		strvec_pushv(&argv, rp->prefix.v);
		strvec_pushl(&argv, GDN_MARIN_CLUSTER_CLI, "--cluster", rp->cluster, "job-logs",
			     job_id, NULL);
	} else {
		plain_argv(rp, "logs", &argv);
		strvec_push(&argv, job_id);
	}
	/* Marin's job-logs does the tail; the plain CLI prints everything */
	ret = run_tool(b, false, GDN_EV_SPAWN, &argv, rp->marin ? on_line : NULL, payload,
		       TOOL_TIMEOUT_MS, true, &p, err);
	if (ret || b->dry_run)
		goto out;
	ret = tool_result(b, "reading the job's logs", &p, err);
	if (!ret && !rp->marin)
		gdn_emit_lines(p.out.buf, p.out.len, tail, on_line, payload);
out:
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/* ---- stop ---- */

static int ray_stop(struct gdn_backend *b, const char *job_id, struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = check_job(job_id, err);

	if (ret)
		goto out;
	if (rp->marin) {
		strvec_pushv(&argv, rp->prefix.v);
		gdn_marin_stop_job_argv(&argv, rp->cluster, job_id);
	} else {
		plain_argv(rp, "stop", &argv);
		strvec_push(&argv, job_id);
	}
	ret = run_tool(b, false, GDN_EV_SPAWN, &argv, NULL, NULL, TOOL_TIMEOUT_MS, true, &p, err);
	if (ret || b->dry_run)
		goto out;
	ret = tool_result(b, "stopping the job", &p, err);
out:
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/* ---- wait ---- */

struct wait_out {
	struct gdn_backend *b;
	const char *id;
	struct gdn_job_status *st;
	const struct gdn_wait_spec *w;
	bool seen;
	int64_t start;
};

/* Marin wait-job prints status lines, then (--show-logs) the job's last lines. */
static int marin_wait_line(const char *line, size_t len, void *payload)
{
	struct wait_out *wo = payload;
	struct sbuf dur = SBUF_INIT;

	if (gdn_marin_parse_wait_line(line, len, wo->id, wo->st)) {
		wo->seen = true;
		gdn_format_elapsed(gdn_now_ms() - wo->start, &dur);
		if (!wo->st->final)
			gdn_backend_event(wo->b, GDN_EV_WAITING,
					  "waiting for job %s on %s (%s) for %s", wo->id,
					  wo->b->name, wo->st->native, dur.buf);
	} else if (wo->w->on_line) {
		wo->w->on_line(line, len, wo->w->payload);
	}
	sbuf_release(&dur);
	return 0;
}

static int marin_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		      struct gdn_job_status *st, struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct wait_out wo = {b, job_id, st, w, false, gdn_now_ms()};
	struct sbuf dur = SBUF_INIT;
	long poll_ms = w->poll_ms > 0 ? w->poll_ms : rp->poll_ms;
	bool show = w->show_logs || w->tail > 0;
	int ret;

	strvec_pushv(&argv, rp->prefix.v);
	gdn_marin_wait_job_argv(&argv, rp->cluster, job_id, (double)poll_ms / 1000.0,
				w->timeout_ms > 0 ? (double)w->timeout_ms / 1000.0 : -1, show,
				w->tail > 0 ? w->tail : GDN_MARIN_WAIT_TAIL, NULL);
	/* wait-job has its own timeout; ours is a safety net */
	ret = run_tool(b, false, GDN_EV_SPAWN, &argv, marin_wait_line, &wo,
		       w->timeout_ms > 0 ? w->timeout_ms + 60000 : 0, true, &p, err);
	if (ret || b->dry_run)
		goto out;
	if (wo.seen && st->final) {
		ret = 0;
	} else if (p.status_kind == GDN_PROC_EXITED && p.code == 2 &&
		   strstr(p.out.buf, "Timeout reached")) {
		gdn_format_duration(w->timeout_ms, &dur);
		ret = gdn_err_set(err, GDN_ETIMEOUT,
				  "timed out after %s waiting for job %s on %s (%s)", dur.buf,
				  job_id, b->name, st->native[0] ? st->native : "UNKNOWN");
	} else if (p.status_kind == GDN_PROC_EXITED && p.code == 1 &&
		   strstr(p.out.buf, "not found")) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no job '%s' on %s", job_id, b->name);
	} else {
		ret = tool_result(b, "waiting for the job", &p, err);
		if (!ret)
			ret = gdn_err_set(err, GDN_EBACKEND,
					  "'%s' wait-job printed no final status for job '%s'",
					  GDN_MARIN_CLUSTER_CLI, job_id);
	}
out:
	strvec_clear(&argv);
	sbuf_release(&dur);
	gdn_proc_release(&p);
	return ret;
}

/* The plain CLI: one poll is `ray job status`, then `ray job logs` for the new output. */
static int plain_poll(struct gdn_backend *b, void *ctx, const char *job_id, struct gdn_follow *f,
		      struct gdn_job_status *st, struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = ray_status(b, job_id, st, err);

	if (ret || !f || b->dry_run)
		goto out;
	plain_argv(rp, "logs", &argv);
	strvec_push(&argv, job_id);
	ret = run_tool(b, false, GDN_EV_POLL, &argv, NULL, NULL, TOOL_TIMEOUT_MS, true, &p, err);
	if (!ret)
		ret = tool_result(b, "reading the job's logs", &p, err);
	if (!ret && (long long)p.out.len > f->offset)
		gdn_follow_feed(f, p.out.buf + f->offset, p.out.len - (size_t)f->offset);
out:
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

static int ray_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		    struct gdn_job_status *st, struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	int ret = check_job(job_id, err);

	if (ret)
		return ret;
	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	snprintf(st->job_id, sizeof(st->job_id), "%s", job_id);
	if (rp->marin)
		ret = marin_wait(b, job_id, w, st, err);
	else
		ret = gdn_backend_poll_wait(b, job_id, w, rp->poll_ms, plain_poll, NULL, st, err);
	if (!ret && !b->dry_run && w->tail > 0 && !rp->marin)
		ret = ray_logs(b, job_id, w->tail, w->on_line, w->payload, err);
	if (!ret && st->state == GDN_JOB_SUCCEEDED && st->exit_code < 0)
		st->exit_code = 0;
	return ret;
}

/* ---- run: submit and wait ---- */

/* Marin: ray_run.py without --no_wait streams the job's logs and fails unless SUCCEEDED. */
static int marin_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		     struct gdn_job_status *st, struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct submit_out so = {spec->on_line, spec->payload, NULL};
	char *sid = NULL;
	bool dry = spec->dry_run || b->dry_run;
	int ret = submission_id(spec, &sid, err);

	if (ret)
		goto out;
	gdn_backend_register_secrets(spec->env);
	marin_submit_argv(rp, spec, sid, false, &argv);
	ret = run_tool(b, dry, GDN_EV_SPAWN, &argv, submit_line, &so, spec->timeout_ms, false, &p,
		       err);
	if (ret || dry)
		goto out;
	if (so.id && !check_job(so.id, NULL))
		snprintf(st->job_id, sizeof(st->job_id), "%s", so.id);
	gdn_job_status_from_proc(st, &p, "SUCCEEDED");
	if (st->job_id[0] && st->state == GDN_JOB_TIMEOUT)
		gdn_backend_stop_after(b, st->job_id, "timed out", "stop");
	else if (st->job_id[0] && st->state == GDN_JOB_STOPPED)
		gdn_backend_stop_after(b, st->job_id, "interrupted", "stop");
out:
	free(so.id);
	free(sid);
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/* Plain: submit --no-wait, then follow the logs while polling the status. */
static int plain_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		     struct gdn_job_status *st, struct gdn_err *err)
{
	struct gdn_wait_spec w = {0};
	char *id = NULL;
	int ret = submit_job(b, spec, &id, err);

	if (ret || spec->dry_run || b->dry_run)
		goto out;
	snprintf(st->job_id, sizeof(st->job_id), "%s", id);
	w.timeout_ms = spec->timeout_ms;
	w.show_logs = true;
	w.on_line = spec->on_line;
	w.payload = spec->payload;
	ret = gdn_backend_poll_wait(b, id, &w, ((struct ray_priv *)b->priv)->poll_ms, plain_poll,
				    NULL, st, err);
	snprintf(st->job_id, sizeof(st->job_id), "%s", id);
	if (ret == GDN_ETIMEOUT) {
		gdn_job_status_set(st, GDN_JOB_TIMEOUT, "TIMEOUT", 124);
		gdn_backend_stop_after(b, id, "timed out", "stop");
		ret = 0;
	} else if (ret == GDN_EINTR) {
		gdn_job_status_set(st, GDN_JOB_STOPPED, "STOPPED", 128 + gdn_proc_interrupted());
		gdn_backend_stop_after(b, id, "interrupted", "stop");
		ret = 0;
	}
	if (!ret && st->state == GDN_JOB_SUCCEEDED && st->exit_code < 0)
		st->exit_code = 0;
out:
	free(id);
	return ret;
}

static int ray_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		   struct gdn_job_status *st, struct gdn_err *err)
{
	struct ray_priv *rp = b->priv;

	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	return rp->marin ? marin_run(b, spec, st, err) : plain_run(b, spec, st, err);
}

const struct gdn_backend_ops gdn_backend_ray_ops = {
    .type = "ray",
    .builtin = true,
    .open = ray_open,
    .run = ray_run,
    .submit = ray_submit,
    .status = ray_status,
    .wait = ray_wait,
    .logs = ray_logs,
    .stop = ray_stop,
    .free_priv = ray_free,
};
