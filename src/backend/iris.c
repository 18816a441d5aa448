/*
 * The `iris` backend: jobs on Marin's Iris orchestrator, through its job
 * CLI (lib/iris in marin-community/marin; facts in
 * ../shared/reference/iris-cli.md). Every command is the prefix (default
 * `uv run iris`, or programs.iris / command_prefix), the global options
 * (before `job`), then the job subcommand, run from the repository root
 * (the CLI bundles the working tree it runs in):
 *
 *   PREFIX [--cluster C] job run --no-wait --job-name NAME [--tpu T]
 *          [--enable-extra-resources] [--cpu N] [--memory M] [--disk D]
 *          [--max-retries N] [--region R]... [--extra E]... [-e K V]... -- CMD...
 *   PREFIX [--cluster C] job describe ID         (newer CLI: State/exit line)
 *   PREFIX [--cluster C] job list --json --prefix ID   (older CLI)
 *   PREFIX [--cluster C] job logs [-f] [--max-lines N] ID
 *   PREFIX [--cluster C] job cancel ID | job stop ID
 *   PREFIX job --help                             (the generation, once)
 *
 * The outcome is the job's state and the command's exit code (`job run`
 * does not carry it): SUCCEEDED is a pass, FAILED the command's failure
 * with its exit code, KILLED, WORKER_FAILED (worker death, or preemption
 * with Iris's budget spent) and UNSCHEDULABLE are infrastructure outcomes
 * (GDN_JOB_STOPPED with the native name: the loop retries them and never
 * counts them against the candidate). A preempted job that Iris requeues
 * is followed until it ends. A job still PENDING at the deadline never ran
 * the command: it is cancelled and reported STOPPED (infrastructure).
 *
 * Submissions are journaled: a file under the repository's git directory
 * (gdnctl/iris-jobs/KEY, KEY a hash of the backend, its cluster, the
 * submission's argv and the committed tree when the tree is clean) holds
 * the job id from the moment it is known until its outcome has been read.
 * A gdnctl killed in between (kill -9) leaves it, and the next run of the
 * same work on the same tree (a resumed loop redoing the iteration)
 * follows that job instead of submitting a second one.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/iris.h"
#include "gdnctl/marin.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/sha256.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define TOOL_TIMEOUT_MS (10 * 60 * 1000) /* submit, describe, list, cancel */
#define CAPTURE_LIMIT	(16 << 20)
#define STOP_GRACE_MS	10000
#define DEFAULT_POLL_MS 5000L

struct iris_priv {
	struct strvec prefix; /* the program and its leading words */
	const char *cluster;  /* --cluster (NULL: none; the CLI's own discovery) */
	const char *tpu;      /* --tpu (NULL: none) */
	bool extra_resources; /* --enable-extra-resources */
	const char *cpu, *memory, *disk;
	long long max_retries; /* -1: not passed */
	struct strvec env;     /* "K=V" from backends.NAME.env */
	long poll_ms;
	/* the CLI, probed once */
	enum gdn_iris_generation gen;
	struct gdn_iris_cli cli;
	bool probed;
};

/* A configured word that reaches the CLI's argv: text, not an option. */
static int check_word(struct gdn_backend *b, const char *key, const char *v, struct gdn_err *err)
{
	if (gdn_check_text(v, "a value", GDN_ECONFIG, err))
		return gdn_backend_config_error(b, key, err,
						"holds a control character or is too "
						"long");
	if (!*v || v[0] == '-')
		return gdn_backend_config_error(b, key, err,
						"'%s' must not be empty or start "
						"with '-'",
						v);
	return 0;
}

static int iris_open(struct gdn_backend *b, struct gdn_err *err)
{
	struct iris_priv *ip = xcalloc(1, sizeof(*ip));
	const struct strvec *prefix = gdn_backend_list(b, "command_prefix");
	const struct strvec *env = gdn_backend_list(b, "env");
	const char *keys[] = {"cpu", "memory", "disk"};
	const char **vals[] = {&ip->cpu, &ip->memory, &ip->disk};
	const char *program;
	int ret = 0;

	b->priv = ip;
	strvec_init(&ip->prefix);
	strvec_init(&ip->env);
	for (size_t i = 0; i < prefix->nr && !ret; i++)
		ret =
		    gdn_check_text(prefix->v[i], "a word of the command prefix", GDN_ECONFIG, err);
	if (ret)
		goto out;
	program = gdn_backend_program(b, "iris", NULL);
	if (prefix->nr)
		strvec_pushv(&ip->prefix, prefix->v);
	else if (program)
		strvec_push(&ip->prefix, program);
	else /* Marin's canonical form: uv run iris */
		strvec_pushl(&ip->prefix, gdn_backend_program(b, "uv", "uv"), "run", "iris", NULL);
	ip->cluster = gdn_backend_str(b, "cluster");
	if (!ip->cluster)
		ip->cluster = GDN_IRIS_CLUSTER;
	else if (!strcmp(ip->cluster, "none"))
		ip->cluster = NULL;
	if (ip->cluster)
		ret = gdn_backend_check_name(b, "cluster", GDN_NAME_CLUSTER, ip->cluster, err);
	ip->tpu = gdn_backend_str(b, "tpu");
	if (!ip->tpu)
		ip->tpu = GDN_MARIN_PROFILE_TPU;
	else if (!strcmp(ip->tpu, "none"))
		ip->tpu = NULL;
	if (!ret && ip->tpu)
		ret = gdn_backend_check_name(b, "tpu", GDN_NAME_TPU, ip->tpu, err);
	ip->extra_resources = gdn_backend_int(b, "enable_extra_resources", 1) != 0;
	for (size_t i = 0; i < ARRAY_SIZE(keys) && !ret; i++) {
		*vals[i] = gdn_backend_str(b, keys[i]);
		if (*vals[i])
			ret = check_word(b, keys[i], *vals[i], err);
	}
	ip->max_retries = gdn_backend_int(b, "max_retries", -1);
	if (!ret && gdn_backend_setting(b, "max_retries") && ip->max_retries < 0)
		ret = gdn_backend_config_error(b, "max_retries", err, "must be 0 or more");
	for (size_t i = 0; !ret && i < gdn_backend_list(b, "extras")->nr; i++)
		ret = check_word(b, "extras", gdn_backend_list(b, "extras")->v[i], err);
	for (size_t i = 0; !ret && i < gdn_backend_list(b, "region")->nr; i++)
		ret = check_word(b, "region", gdn_backend_list(b, "region")->v[i], err);
	for (size_t i = 0; !ret && i < env->nr; i++) {
		const char *eq = strchr(env->v[i], '=');

		if (!eq || eq == env->v[i])
			ret = gdn_backend_config_error(b, "env", err, "item '%s' is not KEY=VALUE",
						       env->v[i]);
		else if (gdn_check_text(env->v[i], "an env item", GDN_ECONFIG, err))
			ret = gdn_backend_config_error(b, "env", err,
						       "item holds a control character");
		else
			strvec_push(&ip->env, env->v[i]);
	}
	ip->poll_ms = (long)gdn_backend_int(b, "poll", DEFAULT_POLL_MS);
out:
	return ret;
}

static void iris_free(struct gdn_backend *b)
{
	struct iris_priv *ip = b->priv;

	if (ip) {
		strvec_clear(&ip->prefix);
		strvec_clear(&ip->env);
	}
	free(ip);
	b->priv = NULL;
}

/* ---- running the CLI ---- */

/* The prefix, the global options, `job SUB`. */
static void job_argv(const struct iris_priv *ip, const char *sub, struct strvec *argv)
{
	strvec_pushv(argv, ip->prefix.v);
	if (ip->cluster)
		strvec_pushf(argv, "--cluster=%s", ip->cluster);
	strvec_pushl(argv, "job", sub, NULL);
}

/* Run argv in the repository (the CLI bundles its cwd), capturing its output. */
static int run_tool(struct gdn_backend *b, bool dry, enum gdn_backend_event ev,
		    const struct strvec *argv, gdn_line_fn on_line, void *payload, long timeout_ms,
		    struct gdn_proc *p, struct gdn_err *err)
{
	p->argv = argv->v;
	p->dir = b->repo_root;
	p->capture = true;
	p->out.limit = CAPTURE_LIMIT;
	p->on_line = on_line;
	p->payload = payload;
	p->timeout_ms = timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
	p->kill_grace_ms = STOP_GRACE_MS;
	if (dry && !b->dry_run) {
		gdn_backend_echo(b, ev, p->env, p->argv);
		p->status_kind = GDN_PROC_NOT_RUN;
		return 0;
	}
	return gdn_backend_spawn(b, ev, p, err);
}

/* The line of a failed CLI worth quoting: Click's "Error: ..." line, else the last one. */
static void error_line(const struct sbuf *out, struct sbuf *line)
{
	const char *s = out->buf, *best = NULL;
	size_t best_len = 0;

	while (*s) {
		size_t n = strcspn(s, "\n");
		size_t a = 0;

		while (a < n && isspace((unsigned char)s[a]))
			a++;
		if (a < n && (!best || strncmp(best, "Error:", 6))) {
			best = s + a;
			best_len = n - a;
		}
		s += n + (s[n] == '\n');
	}
	if (!best) {
		sbuf_adds(line, "no output");
		return;
	}
	sbuf_add(line, best, best_len > 300 ? 300 : best_len);
	gdn_secret_mask(line);
}

/* A CLI that ran to the end with exit 0; else an error naming it. */
static int tool_result(struct gdn_backend *b, const char *what, struct gdn_proc *p,
		       struct gdn_err *err)
{
	struct sbuf line = SBUF_INIT;
	int ret = 0;

	if (p->status_kind == GDN_PROC_STOPPED) {
		ret = gdn_err_set(err, GDN_EINTR, "interrupted while %s on %s", what, b->name);
	} else if (p->status_kind == GDN_PROC_TIMEOUT) {
		ret = gdn_err_set(err, GDN_EBACKEND, "%s on %s timed out", what, b->name);
	} else if (p->status_kind != GDN_PROC_EXITED || p->code) {
		error_line(&p->out, &line);
		ret = gdn_err_set(err, GDN_EBACKEND, "%s on %s failed (exit %d): %s", what, b->name,
				  gdn_proc_exit_code(p), line.buf);
	}
	sbuf_release(&line);
	return ret;
}

/* `job --help` once: the generation, or an error naming what the CLI lacks. */
static int probe_within(struct gdn_backend *b, long timeout_ms, struct gdn_err *err)
{
	struct iris_priv *ip = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = 0;

	if (ip->probed)
		return ip->gen ? 0 : gdn_err_set(err, GDN_EBACKEND, "the Iris CLI is unusable");
	if (b->dry_run) { /* runs nothing: the newest CLI's commands */
		ip->gen = GDN_IRIS_GEN_CANCEL;
		return 0;
	}
	strvec_pushv(&argv, ip->prefix.v);
	strvec_pushl(&argv, "job", "--help", NULL);
	ret = run_tool(b, false, GDN_EV_POLL, &argv, NULL, NULL, timeout_ms, &p, err);
	if (!ret)
		ret = tool_result(b, "asking the Iris CLI for its job commands", &p, err);
	if (!ret) {
		ip->gen = gdn_iris_parse_help(p.out.buf, p.out.len, &ip->cli, err);
		if (!ip->gen)
			ret = gdn_err_prefix(err, "'%s job --help'", ip->prefix.v[0]);
	}
	ip->probed = !ret || ret == GDN_EBACKEND;
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

const char *gdn_iris_backend_cluster(const struct gdn_backend *b)
{
	return strcmp(b->ops->type, "iris") ? NULL : ((const struct iris_priv *)b->priv)->cluster;
}

static int probe(struct gdn_backend *b, struct gdn_err *err)
{
	return probe_within(b, TOOL_TIMEOUT_MS, err);
}

char *gdn_iris_backend_program(const struct gdn_backend *b)
{
	const struct iris_priv *ip = b->priv;
	struct sbuf sb = SBUF_INIT;

	for (size_t i = 0; ip && i < ip->prefix.nr; i++)
		sbuf_addf(&sb, "%s%s", i ? " " : "", ip->prefix.v[i]);
	return sbuf_detach(&sb, NULL);
}

int gdn_iris_backend_probe(struct gdn_backend *b, long timeout_ms, enum gdn_iris_generation *gen,
			   struct gdn_err *err)
{
	int ret;

	*gen = GDN_IRIS_GEN_UNKNOWN;
	if (strcmp(b->ops->type, "iris"))
		return gdn_err_set(err, GDN_EUSAGE, "backend %s is not an iris backend", b->name);
	ret = probe_within(b, timeout_ms > 0 ? timeout_ms : TOOL_TIMEOUT_MS, err);
	*gen = ((struct iris_priv *)b->priv)->gen;
	return ret;
}

static int check_job(const char *job_id, struct gdn_err *err)
{
	if (gdn_iris_valid_id(job_id, strlen(job_id)))
		return 0;
	return gdn_err_set(err, GDN_EUSAGE,
			   "invalid Iris job id '%.*s': expected /<user>/<name> (letters, digits, "
			   "'.', '_', '-')",
			   100, job_id);
}

/* ---- submitting ---- */

static int push_env(struct strvec *argv, const char *item, struct gdn_err *err)
{
	const char *eq = strchr(item, '=');

	if (!eq || eq == item)
		return gdn_err_set(err, GDN_EUSAGE, "environment item '%s' is not KEY=VALUE", item);
	strvec_push(argv, "-e");
	strvec_pushf(argv, "%.*s", (int)(eq - item), item);
	strvec_push(argv, eq + 1);
	return 0;
}

/* Everything of `job run` after --job-name NAME (the part the journal key hashes). */
static int submit_tail(struct gdn_backend *b, const struct gdn_run_spec *spec, struct strvec *argv,
		       struct gdn_err *err)
{
	struct iris_priv *ip = b->priv;
	const struct strvec *extras = gdn_backend_list(b, "extras");
	const struct strvec *regions = gdn_backend_list(b, "region");
	int ret = 0;

	if (ip->tpu)
		strvec_pushl(argv, "--tpu", ip->tpu, NULL);
	if (ip->extra_resources)
		strvec_push(argv, "--enable-extra-resources");
	if (ip->cpu)
		strvec_pushl(argv, "--cpu", ip->cpu, NULL);
	if (ip->memory)
		strvec_pushl(argv, "--memory", ip->memory, NULL);
	if (ip->disk)
		strvec_pushl(argv, "--disk", ip->disk, NULL);
	if (ip->max_retries >= 0)
		strvec_pushf(argv, "--max-retries=%lld", ip->max_retries);
	for (size_t i = 0; i < regions->nr; i++)
		strvec_pushl(argv, "--region", regions->v[i], NULL);
	for (size_t i = 0; i < extras->nr; i++)
		strvec_pushl(argv, "--extra", extras->v[i], NULL);
	for (size_t i = 0; i < ip->env.nr && !ret; i++)
		ret = push_env(argv, ip->env.v[i], err);
	for (size_t i = 0; spec->env && spec->env[i] && !ret; i++)
		ret = push_env(argv, spec->env[i], err);
	strvec_push(argv, "--");
	if (spec->shell)
		strvec_pushl(argv, "bash", "-lc", spec->shell, NULL);
	else
		strvec_pushv(argv, spec->argv);
	return ret;
}

static int submit_job(struct gdn_backend *b, const struct gdn_run_spec *spec,
		      const struct strvec *tail, char **id, struct gdn_err *err)
{
	struct iris_priv *ip = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	char *name = gdn_iris_job_name(spec->name);
	bool dry = spec->dry_run || b->dry_run;
	int ret;

	*id = NULL;
	job_argv(ip, "run", &argv);
	strvec_pushl(&argv, "--no-wait", "--job-name", name, NULL);
	strvec_pushv(&argv, tail->v);
	gdn_backend_register_secrets(spec->env);
	gdn_backend_register_secrets(ip->env.v);
	ret = run_tool(b, dry, GDN_EV_SPAWN, &argv, NULL, NULL, TOOL_TIMEOUT_MS, &p, err);
	if (ret || dry)
		goto out;
	ret = tool_result(b, "submitting the job", &p, err);
	if (ret)
		goto out;
	ret = gdn_iris_parse_submit(p.out.buf, p.out.len, id, err);
	if (ret) {
		gdn_err_prefix(err, "submitted '%s' on %s, but", name, b->name);
		ret = GDN_EBACKEND;
	}
out:
	free(name);
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/* ---- the submission journal ---- */

/* Run git in the repository; its trimmed output in out. 0 when it exited 0. */
static int git_out(struct gdn_backend *b, const char *const *args, struct sbuf *out)
{
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int ret;

	strvec_pushl(&argv, "git", "-C", b->repo_root, NULL);
	strvec_pushv(&argv, args);
	p.argv = argv.v;
	p.capture = true;
	p.out.limit = 1 << 20;
	p.timeout_ms = 60000;
	ret = gdn_proc_run(&p, &err);
	if (!ret && (p.status_kind != GDN_PROC_EXITED || p.code))
		ret = -1;
	sbuf_reset(out);
	sbuf_add(out, p.out.buf, p.out.len);
	sbuf_trim(out);
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/*
 * The journal file of this submission: GITDIR/gdnctl/iris-jobs/KEY, or
 * NULL (no repository, a tree with uncommitted changes, a dry run).
 */
static char *journal_path(struct gdn_backend *b, const struct strvec *tail)
{
	static const char *const status[] = {"status", "--porcelain", "--untracked-files=normal",
					     NULL};
	static const char *const revs[] = {"rev-parse", "--path-format=absolute",
					   "--git-common-dir", "HEAD^{tree}", NULL};
	struct iris_priv *ip = b->priv;
	struct gdn_sha256 c;
	unsigned char d[GDN_SHA256_LEN];
	char hex[65];
	struct sbuf out = SBUF_INIT;
	char *path = NULL, *nl;

	if (!b->repo_root || b->dry_run || git_out(b, status, &out) || out.len)
		goto out;
	if (git_out(b, revs, &out) || !(nl = strchr(out.buf, '\n')) || out.buf[0] != '/')
		goto out;
	*nl = '\0';
	gdn_sha256_init(&c);
	gdn_sha256_update(&c, b->name, strlen(b->name) + 1);
	gdn_sha256_update(&c, ip->cluster ? ip->cluster : "",
			  strlen(ip->cluster ? ip->cluster : "") + 1);
	gdn_sha256_update(&c, nl + 1, strlen(nl + 1) + 1);
	for (size_t i = 0; i < tail->nr; i++)
		gdn_sha256_update(&c, tail->v[i], strlen(tail->v[i]) + 1);
	gdn_sha256_final(&c, d);
	gdn_sha256_hex(d, hex);
	path = xstrfmt("%s/gdnctl/iris-jobs/%.32s", out.buf, hex);
out:
	sbuf_release(&out);
	return path;
}

/* The job id the journal holds, or NULL. */
static char *journal_read(const char *path)
{
	struct sbuf sb = SBUF_INIT;
	char *id = NULL;

	if (path && !sbuf_read_file(&sb, path, 4096, NULL)) {
		sbuf_trim(&sb);
		if (gdn_iris_valid_id(sb.buf, sb.len))
			id = xstrdup(sb.buf);
	}
	sbuf_release(&sb);
	return id;
}

static void journal_write(struct gdn_backend *b, const char *path, const char *id)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *dir;

	if (!path)
		return;
	dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	sbuf_addf(&sb, "%s\n", id);
	if (gdn_mkdir_p(dir, 0700, &err) || gdn_write_file_atomic(path, sb.buf, sb.len, &err))
		gdn_backend_event(b, GDN_EV_INFO, "could not journal job %s: %s", id, err.msg);
	free(dir);
	sbuf_release(&sb);
}

/* ---- status ---- */

static int status_of(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
		     long *preemptions, struct gdn_err *err)
{
	struct iris_priv *ip = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = check_job(job_id, err);

	if (!ret)
		ret = probe(b, err);
	if (ret)
		goto out;
	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	if (ip->gen == GDN_IRIS_GEN_CANCEL) {
		job_argv(ip, "describe", &argv);
		strvec_push(&argv, job_id);
	} else {
		job_argv(ip, "list", &argv);
		strvec_pushl(&argv, "--json", "--prefix", job_id, NULL);
	}
	ret = run_tool(b, false, GDN_EV_POLL, &argv, NULL, NULL, TOOL_TIMEOUT_MS, &p, err);
	if (ret || b->dry_run)
		goto out;
	if (p.status_kind == GDN_PROC_EXITED && p.code && strstr(p.out.buf, "No job named")) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no job '%s' on %s", job_id, b->name);
		goto out;
	}
	ret = tool_result(b, "asking for the job's state", &p, err);
	if (!ret && ip->gen == GDN_IRIS_GEN_CANCEL)
		ret = gdn_iris_parse_describe(p.out.buf, p.out.len, st, preemptions, err);
	else if (!ret)
		ret = gdn_iris_parse_list_json(p.out.buf, p.out.len, job_id, st, preemptions, err);
	if (ret == GDN_EPARSE)
		ret = GDN_EBACKEND;
	if (ret == GDN_ENOTFOUND)
		gdn_err_set(err, GDN_ENOTFOUND, "no job '%s' on %s", job_id, b->name);
	if (!ret && st->state == GDN_JOB_SUCCEEDED && st->exit_code > 0)
		/* all tasks exit 0 for SUCCEEDED; a code says otherwise */
		gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", st->exit_code);
	if (!ret && st->state == GDN_JOB_SUCCEEDED)
		st->exit_code = 0;
	snprintf(st->job_id, sizeof(st->job_id), "%s", job_id);
out:
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

static int iris_status(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
		       struct gdn_err *err)
{
	return status_of(b, job_id, st, NULL, err);
}

/* ---- logs ---- */

struct log_out {
	gdn_line_fn on_line;
	void *payload;
};

static int log_line(const char *line, size_t len, void *payload)
{
	struct log_out *lo = payload;
	const char *data;
	size_t n;

	if (!lo->on_line)
		return 0;
	gdn_iris_log_data(line, len, &data, &n);
	if (data == line) /* not a job line: the CLI's own (stderr), left out */
		return 0;
	return lo->on_line(data, n, lo->payload);
}

/* `job logs ID`, or `job logs -f ID` (follow: until the job is terminal). */
static int logs_cmd(struct gdn_backend *b, const char *job_id, long tail, bool follow,
		    long timeout_ms, gdn_line_fn on_line, void *payload, struct gdn_proc *p,
		    struct gdn_err *err)
{
	struct iris_priv *ip = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct log_out lo = {on_line, payload};
	int ret;

	job_argv(ip, "logs", &argv);
	if (follow)
		strvec_push(&argv, "-f");
	if (tail > 0)
		strvec_pushf(&argv, "--max-lines=%ld", tail);
	strvec_push(&argv, job_id);
	ret = run_tool(b, false, GDN_EV_SPAWN, &argv, log_line, &lo, timeout_ms, p, err);
	p->argv = NULL;
	strvec_clear(&argv);
	return ret;
}

static int iris_logs(struct gdn_backend *b, const char *job_id, long tail, gdn_line_fn on_line,
		     void *payload, struct gdn_err *err)
{
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = check_job(job_id, err);

	if (!ret)
		ret = logs_cmd(b, job_id, tail, false, TOOL_TIMEOUT_MS, on_line, payload, &p, err);
	if (!ret && !b->dry_run)
		ret = tool_result(b, "reading the job's logs", &p, err);
	gdn_proc_release(&p);
	return ret;
}

/* ---- stop ---- */

static int iris_stop(struct gdn_backend *b, const char *job_id, struct gdn_err *err)
{
	struct iris_priv *ip = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = check_job(job_id, err);

	if (!ret)
		ret = probe(b, err);
	if (ret)
		goto out;
	job_argv(ip, ip->gen == GDN_IRIS_GEN_CANCEL ? "cancel" : "stop", &argv);
	strvec_push(&argv, job_id);
	ret = run_tool(b, false, GDN_EV_SPAWN, &argv, NULL, NULL, TOOL_TIMEOUT_MS, &p, err);
	if (ret || b->dry_run)
		goto out;
	if (p.status_kind == GDN_PROC_EXITED && p.code && strstr(p.out.buf, "No job named")) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no job '%s' on %s", job_id, b->name);
		goto out;
	}
	ret = tool_result(b, "cancelling the job", &p, err);
out:
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/* ---- wait ---- */

struct poll_ctx {
	long preemptions;
};

static int poll_once(struct gdn_backend *b, void *ctx, const char *job_id, struct gdn_follow *f,
		     struct gdn_job_status *st, struct gdn_err *err)
{
	struct poll_ctx *pc = ctx;
	long pre = -1;
	int ret = status_of(b, job_id, st, &pre, err);

	(void)f;
	if (!ret && pre > pc->preemptions) {
		if (pc->preemptions >= 0)
			gdn_backend_event(b, GDN_EV_INFO,
					  "job %s on %s was preempted (%ld so far); Iris requeued "
					  "it",
					  job_id, b->name, pre);
		pc->preemptions = pre;
	}
	return ret;
}

/*
 * Follow the job to its end: its output through `job logs -f` when
 * show_logs (it returns once the job is terminal), then its state by
 * polling. Returns what gdn_backend_poll_wait does.
 */
static int follow_and_poll(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
			   struct gdn_job_status *st, struct gdn_err *err)
{
	struct iris_priv *ip = b->priv;
	struct gdn_wait_spec pw = *w;
	struct poll_ctx pc = {0};
	struct gdn_proc p = GDN_PROC_INIT;
	struct sbuf dur = SBUF_INIT;
	int64_t start = gdn_now_ms();
	int ret = 0;

	if (w->show_logs && !b->dry_run) {
		ret = logs_cmd(b, job_id, 0, true, w->timeout_ms, w->on_line, w->payload, &p, err);
		if (!ret && p.status_kind == GDN_PROC_STOPPED) {
			ret = gdn_err_set(err, GDN_EINTR, "interrupted while following job %s",
					  job_id);
		} else if (!ret && p.status_kind == GDN_PROC_TIMEOUT) {
			/* the deadline: the state it had then */
			ret = status_of(b, job_id, st, NULL, err);
			gdn_format_duration(w->timeout_ms, &dur);
			if (!ret)
				ret =
				    gdn_err_set(err, GDN_ETIMEOUT,
						"timed out after %s waiting for job %s on %s (%s)",
						dur.buf, job_id, b->name, st->native);
		} else if (!ret && (p.status_kind != GDN_PROC_EXITED || p.code)) {
			struct gdn_err lerr = GDN_ERR_INIT;

			tool_result(b, "following the job's logs", &p, &lerr);
			gdn_backend_event(b, GDN_EV_INFO, "%s; polling its state instead",
					  lerr.msg);
		}
		if (ret)
			goto out;
		pw.show_logs = false;
		if (w->timeout_ms > 0) {
			pw.timeout_ms = w->timeout_ms - (long)(gdn_now_ms() - start);
			if (pw.timeout_ms <= 0)
				pw.timeout_ms = 1;
		}
	}
	pw.show_logs = false;
	ret = gdn_backend_poll_wait(b, job_id, &pw, ip->poll_ms, poll_once, &pc, st, err);
out:
	snprintf(st->job_id, sizeof(st->job_id), "%s", job_id);
	sbuf_release(&dur);
	gdn_proc_release(&p);
	return ret;
}

static int iris_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		     struct gdn_job_status *st, struct gdn_err *err)
{
	int ret = check_job(job_id, err);

	if (!ret)
		ret = probe(b, err);
	if (ret)
		return ret;
	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	ret = follow_and_poll(b, job_id, w, st, err);
	if (!ret && !b->dry_run && w->tail > 0)
		ret = iris_logs(b, job_id, w->tail, w->on_line, w->payload, err);
	return ret;
}

/* ---- submit, run ---- */

static int iris_submit(struct gdn_backend *b, const struct gdn_run_spec *spec, char **job_id,
		       struct gdn_err *err)
{
	struct strvec tail = STRVEC_INIT;
	int ret = submit_tail(b, spec, &tail, err);

	*job_id = NULL;
	if (!ret)
		ret = submit_job(b, spec, &tail, job_id, err);
	strvec_clear(&tail);
	return ret;
}

static int iris_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		    struct gdn_job_status *st, struct gdn_err *err)
{
	struct gdn_wait_spec w = {0};
	struct strvec tail = STRVEC_INIT;
	struct gdn_job_status old = GDN_JOB_STATUS_INIT;
	struct gdn_err jerr = GDN_ERR_INIT;
	struct sbuf dur = SBUF_INIT;
	char *id = NULL, *journal = NULL;
	bool dry = spec->dry_run || b->dry_run;
	int ret;

	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	ret = submit_tail(b, spec, &tail, err);
	if (!ret && !dry)
		ret = probe(b, err);
	if (ret)
		goto out;
	journal = dry ? NULL : journal_path(b, &tail);
	id = journal_read(journal);
	if (id && !status_of(b, id, &old, NULL, &jerr) && !gdn_iris_infrastructure(&old)) {
		gdn_backend_event(b, GDN_EV_INFO,
				  "job %s on %s was submitted for this tree before (%s); following "
				  "it instead of submitting again",
				  id, b->name, old.native);
	} else {
		FREE_AND_NULL(id);
		ret = submit_job(b, spec, &tail, &id, err);
		if (ret || dry)
			goto out;
		journal_write(b, journal, id);
		gdn_backend_event(b, GDN_EV_INFO, "submitted job %s on %s", id, b->name);
	}
	snprintf(st->job_id, sizeof(st->job_id), "%s", id);
	w.timeout_ms = spec->timeout_ms;
	w.show_logs = true;
	w.on_line = spec->on_line;
	w.payload = spec->payload;
	ret = follow_and_poll(b, id, &w, st, err);
	if (ret == GDN_ETIMEOUT && st->state == GDN_JOB_PENDING) {
		gdn_format_duration(spec->timeout_ms, &dur);
		gdn_job_status_set(st, GDN_JOB_STOPPED, "PENDING", -1);
		snprintf(
		    st->message, sizeof(st->message),
		    "never left PENDING in %s: infrastructure outcome, the command did not run",
		    dur.buf);
		gdn_backend_stop_after(b, id, "never scheduled", "cancel");
		ret = 0;
	} else if (ret == GDN_ETIMEOUT) {
		gdn_job_status_set(st, GDN_JOB_TIMEOUT, "TIMEOUT", 124);
		gdn_backend_stop_after(b, id, "timed out", "cancel");
		ret = 0;
	} else if (ret == GDN_EINTR) {
		gdn_job_status_set(st, GDN_JOB_STOPPED, "STOPPED", 128 + gdn_proc_interrupted());
		gdn_backend_stop_after(b, id, "interrupted", "cancel");
		ret = 0;
	}
	snprintf(st->job_id, sizeof(st->job_id), "%s", id);
	/* the outcome is read (or the job given up): the journal has done its work */
	if (!ret && journal)
		unlink(journal);
out:
	free(id);
	free(journal);
	strvec_clear(&tail);
	sbuf_release(&dur);
	return ret;
}

const struct gdn_backend_ops gdn_backend_iris_ops = {
    .type = "iris",
    .builtin = true,
    .open = iris_open,
    .run = iris_run,
    .submit = iris_submit,
    .status = iris_status,
    .wait = iris_wait,
    .logs = iris_logs,
    .stop = iris_stop,
    .free_priv = iris_free,
};
