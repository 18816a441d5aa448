/*
 * The `slurm` backend: the work is a batch job.
 *
 * submit: a batch script (#SBATCH lines for the job name, the output file
 *   JOBDIR/slurm-%j.out, partition, time limit and extra options; `cd` to
 *   the workdir; `export K='V'`; `exec ARGV`) is written 0600 to the job
 *   directory, given to `sbatch --parsable`, and removed (it may hold
 *   secrets); sbatch prints "ID" or "ID;CLUSTER".
 * status: `squeue -h -j ID -o %T` while the job is queued or running; once
 *   squeue no longer lists it, `sacct -j ID -X -n -P -o JobID,State,ExitCode`
 *   where accounting works, else `scontrol show job ID`. An empty squeue is
 *   never taken for success: no record anywhere is an error.
 * logs: the output file (scontrol's StdOut= when Slurm still knows the job).
 * stop: `scancel ID`. run = submit, then wait while following the output;
 *   on gdnctl's timeout or a ^C the job is cancelled.
 *
 * Every program name comes from configuration (programs.sbatch, ...), so
 * tests and unusual installations can substitute them.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define DEFAULT_JOBDIR	  "~/.cache/gdnctl/jobs"
#define CLIENT_TIMEOUT_MS (120 * 1000)
#define CLIENT_OUT_LIMIT  (1 << 20)
#define READ_CHUNK_MAX	  (8 << 20)
#define LOG_FILE_MAX	  ((size_t)256 << 20)

struct slurm_priv {
	const char *sbatch, *squeue, *sacct, *scontrol, *scancel;
	const char *partition, *time_limit, *job_name, *workdir;
	const struct strvec *options;
	char *jobroot; /* local, absolute */
	long poll_ms;
};

/* ---- pure parsers ---- */

static bool all_digits(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* "12" or "12_3"; at most 32 bytes. */
static bool valid_id(const char *s, size_t len)
{
	const char *us = memchr(s, '_', len);

	if (len > 32)
		return false;
	if (!us)
		return all_digits(s, len);
	return all_digits(s, (size_t)(us - s)) && all_digits(us + 1, len - (size_t)(us - s) - 1);
}

static bool valid_cluster(const char *s, size_t len)
{
	if (!len || len > 60 || s[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && (!s[i] || !strchr("._-", s[i])))
			return false;
	return true;
}

/* "ID", "ID;CLUSTER" (sep ';') or "ID@CLUSTER" into job; false when malformed. */
static bool split_job(const char *s, size_t len, const char *seps, struct gdn_slurm_job *job)
{
	size_t n = 0;

	while (n < len && !strchr(seps, s[n]))
		n++;
	if (!valid_id(s, n))
		return false;
	if (n < len && !valid_cluster(s + n + 1, len - n - 1))
		return false;
	memset(job, 0, sizeof(*job));
	memcpy(job->id, s, n);
	if (n < len)
		memcpy(job->cluster, s + n + 1, len - n - 1);
	return true;
}

static void trim(const char **s, size_t *len)
{
	while (*len && isspace((unsigned char)**s))
		(*s)++, (*len)--;
	while (*len && isspace((unsigned char)(*s)[*len - 1]))
		(*len)--;
}

static void add_quoted_excerpt(struct sbuf *sb, const char *s, size_t len)
{
	sbuf_addch(sb, '\'');
	for (size_t i = 0; i < len && i < 80; i++)
		sbuf_addch(sb, (unsigned char)s[i] < 0x20 ? '?' : s[i]);
	if (len > 80)
		sbuf_adds(sb, "...");
	sbuf_addch(sb, '\'');
}

int gdn_slurm_parse_sbatch(const char *out, size_t len, struct gdn_slurm_job *job,
			   struct gdn_err *err)
{
	const char *p = out, *end = out + len, *last = NULL;
	size_t last_len = 0;
	bool found = false;
	struct sbuf ex = SBUF_INIT;
	int ret = 0;

	/* a NUL byte would cut the id short: the output is corrupt, not an id */
	if (memchr(out, '\0', len))
		return gdn_err_set(err, GDN_EPARSE, "sbatch printed a NUL byte, not a job id");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *l = p;
		size_t ll = n;

		trim(&l, &ll);
		if (ll) {
			last = l;
			last_len = ll;
			if (split_job(l, ll, ";", job))
				found = true;
		}
		p += n + (nl ? 1 : 0);
	}
	if (!found) {
		if (last)
			add_quoted_excerpt(&ex, last, last_len);
		ret = gdn_err_set(err, GDN_EPARSE, "sbatch printed no job id%s%s", last ? ": " : "",
				  ex.buf);
	}
	sbuf_release(&ex);
	return ret;
}

int gdn_slurm_parse_job_id(const char *text, struct gdn_slurm_job *job, struct gdn_err *err)
{
	struct sbuf ex = SBUF_INIT;
	int ret = 0;

	if (!text || !split_job(text, strlen(text), "@;", job)) {
		add_quoted_excerpt(&ex, text ? text : "", text ? strlen(text) : 0);
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "invalid Slurm job id %s: expected digits (12, 12_3), "
				  "optionally @CLUSTER",
				  ex.buf);
	}
	sbuf_release(&ex);
	return ret;
}

void gdn_slurm_format_job_id(const struct gdn_slurm_job *job, struct sbuf *out)
{
	sbuf_adds(out, job->id);
	if (job->cluster[0])
		sbuf_addf(out, "@%s", job->cluster);
}

static const char *const running_states[] = {
    "RUNNING",	 "COMPLETING", "STAGE_OUT",	"SIGNALING", "RESIZING",
    "SUSPENDED", "STOPPED",    "POWER_UP_NODE", NULL,
};
static const char *const pending_states[] = {
    "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", NULL,
};
static const char *const failed_states[] = {
    "FAILED",	 "TIMEOUT",  "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT",  "REVOKED",   NULL,
};

static bool in_list(const char *const *list, const char *s, size_t len)
{
	for (; *list; list++)
		if (strlen(*list) == len && !memcmp(*list, s, len))
			return true;
	return false;
}

/* "E:S" -> E, or 128+S when S is not 0; -1 when malformed. */
static int parse_exit_code(const char *s, size_t len)
{
	const char *colon;
	long e = 0, sig = 0;

	if (!s)
		return -1;
	trim(&s, &len);
	colon = memchr(s, ':', len);
	if (!colon || !all_digits(s, (size_t)(colon - s)) ||
	    !all_digits(colon + 1, len - (size_t)(colon - s) - 1) || colon - s > 3 ||
	    len - (size_t)(colon - s) - 1 > 3)
		return -1;
	for (const char *p = s; p < colon; p++)
		e = e * 10 + (*p - '0');
	for (const char *p = colon + 1; p < s + len; p++)
		sig = sig * 10 + (*p - '0');
	if (e > 255 || sig > 127)
		return -1;
	return sig ? 128 + (int)sig : (int)e;
}

bool gdn_slurm_state(const char *name, size_t len, const char *exit_code, size_t exit_len,
		     struct gdn_job_status *st)
{
	size_t n;
	int code;
	char native[64];

	trim(&name, &len);
	for (n = 0; n < len && name[n] != ' ' && name[n] != '+'; n++)
		;
	if (!n || n >= sizeof(native))
		return false;
	memcpy(native, name, n);
	native[n] = '\0';
	code = parse_exit_code(exit_code, exit_len);
	st->message[0] = '\0';
	if (in_list(running_states, name, n)) {
		gdn_job_status_set(st, GDN_JOB_RUNNING, native, -1);
	} else if (in_list(pending_states, name, n)) {
		gdn_job_status_set(st, GDN_JOB_PENDING, native, -1);
	} else if (n == 9 && !memcmp(name, "COMPLETED", 9)) {
		if (code > 0)
			gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", code);
		else
			gdn_job_status_set(st, GDN_JOB_SUCCEEDED, native, 0);
	} else if (in_list(failed_states, name, n)) {
		gdn_job_status_set(st, GDN_JOB_FAILED, native, code);
	} else if (n == 9 && !memcmp(name, "CANCELLED", 9)) {
		gdn_job_status_set(st, GDN_JOB_STOPPED, native, code);
		/* "CANCELLED by 0": who cancelled it */
		if (len > n + 4 && !memcmp(name + n, " by ", 4) &&
		    all_digits(name + n + 4, len - n - 4) && len - n - 4 < 12)
			snprintf(st->message, sizeof(st->message), "cancelled by uid %.*s",
				 (int)(len - n - 4), name + n + 4);
	} else {
		return false;
	}
	return true;
}

static bool contains(const char *s, size_t len, const char *needle)
{
	return memmem(s, len, needle, strlen(needle)) != NULL;
}

int gdn_slurm_parse_squeue(const char *out, size_t len, struct gdn_job_status *st,
			   struct gdn_err *err)
{
	const char *p = out, *end = out + len;
	struct sbuf ex = SBUF_INIT;
	int ret = 0;

	if (memchr(out, '\0', len))
		return gdn_err_set(err, GDN_EPARSE, "unexpected output from squeue: a NUL byte");
	if (contains(out, len, "Invalid job id"))
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *l = p;
		size_t ll = n;

		trim(&l, &ll);
		if (ll) {
			if (gdn_slurm_state(l, ll, NULL, 0, st)) {
				ret = 1;
			} else {
				add_quoted_excerpt(&ex, l, ll);
				ret = gdn_err_set(err, GDN_EPARSE,
						  "unexpected output from squeue: %s", ex.buf);
			}
			break;
		}
		p += n + (nl ? 1 : 0);
	}
	sbuf_release(&ex);
	return ret;
}

int gdn_slurm_parse_sacct(const char *out, size_t out_len, const char *id,
			  struct gdn_job_status *st)
{
	const char *p = out, *end = out + out_len;
	size_t idlen = strlen(id);
	int found = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *f1 = memchr(p, '|', len), *f2;
		struct gdn_job_status tmp = *st;

		/* a line with a NUL byte is corrupt: its fields may be cut short */
		if (f1 && (size_t)(f1 - p) == idlen && !memcmp(p, id, idlen) &&
		    !memchr(p, '\0', len)) {
			f2 = memchr(f1 + 1, '|', len - (size_t)(f1 + 1 - p));
			if (f2) {
				const char *f3 = memchr(f2 + 1, '|', len - (size_t)(f2 + 1 - p));
				size_t elen = (size_t)((f3 ? f3 : p + len) - (f2 + 1));

				if (gdn_slurm_state(f1 + 1, (size_t)(f2 - f1 - 1), f2 + 1, elen,
						    &tmp)) {
					*st = tmp;
					found = 1;
				}
			}
		}
		p += len + (nl ? 1 : 0);
	}
	return found;
}

/* The value of KEY= in scontrol output: a word (or, with to_eol, the rest of the line). */
static bool scontrol_value(const char *out, size_t len, const char *key, bool to_eol,
			   const char **v, size_t *vlen)
{
	const char *end = out + len;
	size_t klen = strlen(key);

	for (const char *p = out; (p = memmem(p, (size_t)(end - p), key, klen)); p += klen) {
		const char *e;

		if (p != out && p[-1] != ' ' && p[-1] != '\n')
			continue;
		p += klen;
		e = p;
		while (e < end && *e != '\n' && (to_eol || *e != ' '))
			e++;
		*v = p;
		*vlen = (size_t)(e - p);
		return true;
	}
	return false;
}

int gdn_slurm_parse_scontrol(const char *out, size_t len, struct gdn_job_status *st,
			     struct sbuf *stdout_path)
{
	const char *state, *code = NULL, *reason, *path;
	size_t slen, clen = 0, rlen, plen;
	struct gdn_job_status tmp = *st;

	/* a NUL byte may cut any value short (the path, the exit code) */
	if (memchr(out, '\0', len) || contains(out, len, "Invalid job id") ||
	    !scontrol_value(out, len, "JobState=", false, &state, &slen))
		return 0;
	scontrol_value(out, len, "ExitCode=", false, &code, &clen);
	if (!gdn_slurm_state(state, slen, code, clen, &tmp))
		return 0;
	if (!tmp.message[0] && scontrol_value(out, len, "Reason=", false, &reason, &rlen) &&
	    !(rlen == 4 && !memcmp(reason, "None", 4)))
		snprintf(tmp.message, sizeof(tmp.message), "reason: %.*s",
			 (int)(rlen > 200 ? 200 : rlen), reason);
	*st = tmp;
	if (stdout_path && scontrol_value(out, len, "StdOut=", true, &path, &plen)) {
		/* one-line form (-o): the value ends where the next " Key=" starts */
		for (size_t i = 0; i + 1 < plen; i++) {
			size_t k = i + 1;

			if (path[i] != ' ')
				continue;
			while (k < plen && (isalnum((unsigned char)path[k]) || path[k] == '/' ||
					    path[k] == ':' || path[k] == '_'))
				k++;
			if (k < plen && k > i + 1 && path[k] == '=') {
				plen = i;
				break;
			}
		}
		sbuf_add(stdout_path, path, plen);
	}
	return 1;
}

/* ---- configuration ---- */

static bool sbatch_value_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == '"' || *s == 0x7f)
			return false;
	return true;
}

static int check_value(struct gdn_backend *b, const char *key, const char *value, const char *extra,
		       struct gdn_err *err)
{
	if (!sbatch_value_ok(value))
		return gdn_backend_config_error(
		    b, key, err, "must not contain a newline, a control character or '\"'");
	if (extra && strpbrk(value, extra))
		return gdn_backend_config_error(b, key, err, "must not contain any of '%s'", extra);
	return 0;
}

static int slurm_open(struct gdn_backend *b, struct gdn_err *err)
{
	struct slurm_priv *sp = xcalloc(1, sizeof(*sp));
	const char *jobdir = gdn_backend_str(b, "jobdir");
	char cwd[PATH_MAX];
	int ret = 0;

	b->priv = sp;
	sp->sbatch = gdn_backend_program(b, "sbatch", "sbatch");
	sp->squeue = gdn_backend_program(b, "squeue", "squeue");
	sp->sacct = gdn_backend_program(b, "sacct", "sacct");
	sp->scontrol = gdn_backend_program(b, "scontrol", "scontrol");
	sp->scancel = gdn_backend_program(b, "scancel", "scancel");
	sp->partition = gdn_backend_str(b, "partition");
	sp->time_limit = gdn_backend_str(b, "time_limit");
	sp->job_name = gdn_backend_str(b, "job_name");
	sp->workdir = gdn_backend_str(b, "workdir");
	sp->options = gdn_backend_list(b, "sbatch_options");
	sp->poll_ms = (long)gdn_backend_int(b, "poll", 10000);
	if (!jobdir)
		jobdir = DEFAULT_JOBDIR;
	if (sp->partition)
		ret = check_value(b, "partition", sp->partition, " '#", err);
	if (!ret && sp->time_limit)
		ret = check_value(b, "time_limit", sp->time_limit, " '#", err);
	if (!ret && sp->job_name)
		ret = check_value(b, "job_name", sp->job_name, NULL, err);
	if (!ret && sp->workdir)
		ret = check_value(b, "workdir", sp->workdir, NULL, err);
	if (!ret)
		ret = check_value(b, "jobdir", jobdir, "%", err);
	for (size_t i = 0; !ret && i < sp->options->nr; i++)
		ret = check_value(b, "sbatch_options", sp->options->v[i], NULL, err);
	if (ret)
		goto out;
	sp->jobroot = gdn_backend_local_path(jobdir, getcwd(cwd, sizeof(cwd)) ? cwd : NULL);
out:
	return ret;
}

static void slurm_free(struct gdn_backend *b)
{
	struct slurm_priv *sp = b->priv;

	if (sp)
		free(sp->jobroot);
	free(sp);
	b->priv = NULL;
}

/* ---- the batch script ---- */

/* #SBATCH --OPT=VALUE, double-quoted when VALUE has a space (values never hold '"'). */
static void add_directive(struct sbuf *sb, const char *opt, const char *value)
{
	if (strpbrk(value, " \t#'"))
		sbuf_addf(sb, "#SBATCH --%s=\"%s\"\n", opt, value);
	else
		sbuf_addf(sb, "#SBATCH --%s=%s\n", opt, value);
}

static int build_script(struct gdn_backend *b, const struct gdn_run_spec *spec, struct sbuf *sb,
			struct gdn_err *err)
{
	struct slurm_priv *sp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct sbuf out = SBUF_INIT;
	const char *name = spec->name ? spec->name : sp->job_name ? sp->job_name : "gdnctl";
	char *wd = NULL;
	int ret = 0;

	if (!sbatch_value_ok(name)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "invalid job name: it must not contain a newline, a control "
				  "character or '\"'");
		goto out;
	}
	sbuf_adds(sb, "#!/bin/bash\n");
	add_directive(sb, "job-name", name);
	sbuf_addf(&out, "%s/slurm-%%j.out", sp->jobroot);
	add_directive(sb, "output", out.buf);
	if (sp->partition)
		add_directive(sb, "partition", sp->partition);
	if (sp->time_limit)
		add_directive(sb, "time", sp->time_limit);
	for (size_t i = 0; i < sp->options->nr; i++)
		sbuf_addf(sb, "#SBATCH %s\n", sp->options->v[i]);
	sbuf_addf(sb, "# written by gdnctl for backend %s\n", b->name);
	if (sp->workdir) {
		wd = gdn_backend_local_path(sp->workdir, b->repo_root);
		sbuf_adds(sb, "cd -- ");
		sbuf_add_shell_quoted(sb, wd);
		sbuf_adds(sb, " || exit 1\n");
	}
	for (size_t i = 0; spec->env && spec->env[i]; i++) {
		const char *eq = strchr(spec->env[i], '=');
		char *k;

		if (!eq || eq == spec->env[i]) {
			ret = gdn_err_set(err, GDN_EUSAGE, "invalid environment entry '%s'",
					  spec->env[i]);
			goto out;
		}
		k = xstrndup(spec->env[i], (size_t)(eq - spec->env[i]));
		for (const char *c = k; *c && !ret; c++)
			if (!isalnum((unsigned char)*c) && *c != '_')
				ret = gdn_err_set(err, GDN_EUSAGE, "invalid variable name '%s'", k);
		if (!ret && isdigit((unsigned char)k[0]))
			ret = gdn_err_set(err, GDN_EUSAGE, "invalid variable name '%s'", k);
		if (!ret) {
			sbuf_addf(sb, "export %s=", k);
			sbuf_add_shell_quoted(sb, eq + 1);
			sbuf_addch(sb, '\n');
		}
		free(k);
		if (ret)
			goto out;
	}
	gdn_run_spec_argv(spec, true, &argv);
	sbuf_adds(sb, "exec");
	for (size_t i = 0; i < argv.nr; i++) {
		sbuf_addch(sb, ' ');
		sbuf_add_shell_quoted(sb, argv.v[i]);
	}
	sbuf_addch(sb, '\n');
out:
	strvec_clear(&argv);
	sbuf_release(&out);
	free(wd);
	return ret;
}

static int write_script(const char *dir, const struct sbuf *text, char **path, struct gdn_err *err)
{
	char *tmpl = xstrfmt("%s/gdnctl-XXXXXX.sh", dir);
	int fd = mkstemps(tmpl, 3), ret = 0;
	size_t off = 0;

	*path = NULL;
	if (fd < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot create a batch script in '%s'", dir);
		goto out;
	}
	while (off < text->len) {
		ssize_t n = write(fd, text->buf + off, text->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", tmpl);
			break;
		}
		off += (size_t)n;
	}
	if (close(fd) && !ret)
		ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", tmpl);
	if (ret)
		unlink(tmpl);
	else
		*path = tmpl, tmpl = NULL;
out:
	free(tmpl);
	return ret;
}

/* ---- running the clients ---- */

/* Run a Slurm client and capture its output; 0 when it ran (any exit status). */
static int client(struct gdn_backend *b, enum gdn_backend_event ev, struct strvec *argv,
		  struct gdn_proc *p, struct gdn_err *err)
{
	int ret;

	p->argv = argv->v;
	p->capture = true;
	p->out.limit = CLIENT_OUT_LIMIT;
	p->timeout_ms = CLIENT_TIMEOUT_MS;
	p->kill_grace_ms = 1000;
	ret = gdn_backend_spawn(b, ev, p, err);
	if (ret || b->dry_run)
		return ret;
	if (p->status_kind == GDN_PROC_STOPPED)
		return gdn_err_set(err, GDN_EINTR, "interrupted while running '%s'", argv->v[0]);
	if (p->status_kind != GDN_PROC_EXITED)
		return gdn_err_set(err, GDN_EBACKEND, "'%s' %s", argv->v[0],
				   p->status_kind == GDN_PROC_SIGNALED ? "was killed by a signal"
								       : "timed out");
	return 0;
}

static int client_failed(struct gdn_proc *p, const char *prog, struct gdn_err *err)
{
	struct sbuf first = SBUF_INIT;
	int ret;

	gdn_backend_first_line(&p->out, &first);
	ret = gdn_err_set(err, GDN_EBACKEND, "'%s' failed (exit %d): %s", prog, p->code, first.buf);
	sbuf_release(&first);
	return ret;
}

static void push_cluster(struct strvec *argv, const struct gdn_slurm_job *job)
{
	if (job->cluster[0])
		strvec_pushf(argv, "--clusters=%s", job->cluster);
}

static int slurm_submit_job(struct gdn_backend *b, const struct gdn_run_spec *spec,
			    struct gdn_slurm_job *job, struct gdn_err *err)
{
	struct slurm_priv *sp = b->priv;
	struct sbuf script = SBUF_INIT, id = SBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	char *path = NULL;
	int ret;

	if (spec->dry_run)
		b->dry_run = true;
	gdn_backend_register_secrets(spec->env);
	ret = build_script(b, spec, &script, err);
	if (ret)
		goto out;
	if (b->dry_run) {
		path = xstrfmt("%s/gdnctl-XXXXXX.sh", sp->jobroot);
	} else {
		ret = gdn_mkdir_p(sp->jobroot, 0700, err);
		if (!ret)
			ret = write_script(sp->jobroot, &script, &path, err);
		if (ret)
			goto out;
	}
	strvec_pushl(&argv, sp->sbatch, "--parsable", path, NULL);
	ret = client(b, GDN_EV_SPAWN, &argv, &p, err);
	if (b->dry_run) {
		const char *s = script.buf;

		gdn_backend_event(b, GDN_EV_INFO, "batch script %s:", path);
		while (*s) {
			size_t len = strcspn(s, "\n");

			gdn_backend_event(b, GDN_EV_INFO, "| %.*s", (int)len, s);
			s += len + (s[len] ? 1 : 0);
		}
	}
	if (ret || b->dry_run)
		goto out;
	if (p.code) {
		ret = client_failed(&p, sp->sbatch, err);
		goto out;
	}
	ret = gdn_slurm_parse_sbatch(p.out.buf, p.out.len, job, err);
	if (ret) {
		ret = GDN_EBACKEND;
		err->code = ret;
		goto out;
	}
	gdn_slurm_format_job_id(job, &id);
	gdn_backend_event(b, GDN_EV_INFO, "submitted batch job %s to %s", id.buf, b->name);
out:
	if (path && !b->dry_run)
		unlink(path);
	free(path);
	sbuf_release(&script);
	sbuf_release(&id);
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/*
 * The job's state: squeue while Slurm lists it, then sacct, then scontrol.
 * stdout_path (may be NULL) gets scontrol's StdOut= when scontrol was asked.
 */
static int slurm_state(struct gdn_backend *b, const struct gdn_slurm_job *job,
		       enum gdn_backend_event ev, struct gdn_job_status *st,
		       struct sbuf *stdout_path, struct gdn_err *err)
{
	struct slurm_priv *sp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_job_status q = GDN_JOB_STATUS_INIT;
	struct gdn_err perr = GDN_ERR_INIT;
	int ret, listed;

	strvec_pushl(&argv, sp->squeue, "-h", "-j", job->id, "-o", "%T", NULL);
	push_cluster(&argv, job);
	ret = client(b, ev, &argv, &p, err);
	if (ret || b->dry_run)
		goto out;
	listed = gdn_slurm_parse_squeue(p.out.buf, p.out.len, &q, &perr);
	if (listed < 0 ||
	    (p.code && !listed && !contains(p.out.buf, p.out.len, "Invalid job id"))) {
		ret = client_failed(&p, sp->squeue, err);
		goto out;
	}
	if (listed && !q.final) {
		*st = q;
		goto out;
	}

	strvec_clear(&argv);
	strvec_pushl(&argv, sp->sacct, "-j", job->id, "-X", "-n", "-P", "-o",
		     "JobID,State,ExitCode", NULL);
	push_cluster(&argv, job);
	ret = client(b, GDN_EV_SPAWN, &argv, &p, err);
	if (ret)
		goto out;
	if (gdn_slurm_parse_sacct(p.out.buf, p.out.len, job->id, st))
		goto out;

	strvec_clear(&argv);
	strvec_pushl(&argv, sp->scontrol, "show", "job", job->id, NULL);
	push_cluster(&argv, job);
	ret = client(b, GDN_EV_SPAWN, &argv, &p, err);
	if (ret)
		goto out;
	if (gdn_slurm_parse_scontrol(p.out.buf, p.out.len, st, stdout_path))
		goto out;
	if (listed) {
		*st = q;
		goto out;
	}
	ret = gdn_err_set(err, GDN_ENOTFOUND,
			  "job %s is not known to Slurm on '%s' (squeue, sacct and scontrol have "
			  "no record of it)",
			  job->id, b->name);
out:
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

static int parse_job(const char *job_id, struct gdn_slurm_job *job, struct gdn_err *err)
{
	return gdn_slurm_parse_job_id(job_id, job, err);
}

static char *output_path(struct gdn_backend *b, const struct gdn_slurm_job *job)
{
	struct slurm_priv *sp = b->priv;

	return xstrfmt("%s/slurm-%s.out", sp->jobroot, job->id);
}

/* Feed f what the file has beyond f->offset (nothing when it does not exist yet). */
static void read_more(const char *path, struct gdn_follow *f)
{
	char *buf;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	buf = xmalloc(READ_CHUNK_MAX);
	do {
		n = pread(fd, buf, READ_CHUNK_MAX, (off_t)f->offset);
	} while (n < 0 && errno == EINTR);
	if (n > 0)
		gdn_follow_feed(f, buf, (size_t)n);
	free(buf);
	close(fd);
}

struct poll_ctx {
	struct gdn_slurm_job job;
	char *path;
};

static int slurm_poll(struct gdn_backend *b, void *ctx, const char *job_id, struct gdn_follow *f,
		      struct gdn_job_status *st, struct gdn_err *err)
{
	struct poll_ctx *pc = ctx;
	int ret = slurm_state(b, &pc->job, GDN_EV_POLL, st, NULL, err);

	if (!ret && f && !b->dry_run)
		read_more(pc->path, f);
	return ret;
}

static int cancel(struct gdn_backend *b, const struct gdn_slurm_job *job, struct gdn_err *err)
{
	struct slurm_priv *sp = b->priv;
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret;

	strvec_pushl(&argv, sp->scancel, job->id, NULL);
	push_cluster(&argv, job);
	ret = client(b, GDN_EV_SPAWN, &argv, &p, err);
	if (!ret && !b->dry_run && p.code)
		ret = client_failed(&p, sp->scancel, err);
	strvec_clear(&argv);
	gdn_proc_release(&p);
	return ret;
}

/* ---- the ops ---- */

static int slurm_submit(struct gdn_backend *b, const struct gdn_run_spec *spec, char **job_id,
			struct gdn_err *err)
{
	struct gdn_slurm_job job;
	struct sbuf id = SBUF_INIT;
	int ret = slurm_submit_job(b, spec, &job, err);

	*job_id = NULL;
	if (!ret && !b->dry_run) {
		gdn_slurm_format_job_id(&job, &id);
		*job_id = sbuf_detach(&id, NULL);
	}
	sbuf_release(&id);
	return ret;
}

static int slurm_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		     struct gdn_job_status *st, struct gdn_err *err)
{
	struct slurm_priv *sp = b->priv;
	struct poll_ctx pc = {.path = NULL};
	struct gdn_wait_spec w = {0};
	struct gdn_err werr = GDN_ERR_INIT;
	struct sbuf id = SBUF_INIT, dur = SBUF_INIT;
	int ret = slurm_submit_job(b, spec, &pc.job, err);

	if (ret || b->dry_run)
		goto out;
	gdn_slurm_format_job_id(&pc.job, &id);
	pc.path = output_path(b, &pc.job);
	w.timeout_ms = spec->timeout_ms;
	w.poll_ms = sp->poll_ms;
	w.show_logs = true;
	w.on_line = spec->on_line;
	w.payload = spec->payload;
	ret = gdn_backend_poll_wait(b, id.buf, &w, sp->poll_ms, slurm_poll, &pc, st, &werr);
	if (ret == GDN_ETIMEOUT) {
		ret = cancel(b, &pc.job, err);
		gdn_format_duration(spec->timeout_ms, &dur);
		gdn_job_status_set(st, GDN_JOB_TIMEOUT, "TIMEOUT", 124);
		snprintf(st->message, sizeof(st->message), "cancelled after the timeout of %s",
			 dur.buf);
	} else if (ret == GDN_EINTR) {
		ret = cancel(b, &pc.job, err);
		gdn_job_status_set(st, GDN_JOB_STOPPED, "CANCELLED", 128 + gdn_proc_interrupted());
		snprintf(st->message, sizeof(st->message), "cancelled on interrupt");
	} else if (ret) {
		*err = werr;
	}
	snprintf(st->job_id, sizeof(st->job_id), "%s", id.buf);
out:
	free(pc.path);
	sbuf_release(&id);
	sbuf_release(&dur);
	return ret;
}

static int slurm_status(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
			struct gdn_err *err)
{
	struct gdn_slurm_job job;
	int ret = parse_job(job_id, &job, err);

	return ret ? ret : slurm_state(b, &job, GDN_EV_SPAWN, st, NULL, err);
}

static int slurm_logs(struct gdn_backend *b, const char *job_id, long tail, gdn_line_fn on_line,
		      void *payload, struct gdn_err *err)
{
	struct gdn_slurm_job job;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct sbuf path = SBUF_INIT, text = SBUF_INIT;
	int ret = parse_job(job_id, &job, err);

	if (ret)
		goto out;
	/* where Slurm says the output went, if it still knows the job */
	ret = slurm_state(b, &job, GDN_EV_SPAWN, &st, &path, err);
	if (ret == GDN_ENOTFOUND)
		ret = 0;
	if (ret || b->dry_run)
		goto out;
	if (!path.len) {
		char *p = output_path(b, &job);

		sbuf_adds(&path, p);
		free(p);
	}
	gdn_backend_event(b, GDN_EV_INFO, "output of job %s: %s", job_id, path.buf);
	ret = sbuf_read_file(&text, path.buf, LOG_FILE_MAX, err);
	if (ret == GDN_ENOTFOUND && !st.final && st.state != GDN_JOB_UNKNOWN)
		ret = 0; /* not started yet */
	if (!ret)
		gdn_emit_lines(text.buf, text.len, tail, on_line, payload);
out:
	sbuf_release(&path);
	sbuf_release(&text);
	return ret;
}

static int slurm_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
		      struct gdn_job_status *st, struct gdn_err *err)
{
	struct slurm_priv *sp = b->priv;
	struct poll_ctx pc = {.path = NULL};
	int ret = parse_job(job_id, &pc.job, err);

	if (ret)
		return ret;
	pc.path = output_path(b, &pc.job);
	ret = gdn_backend_poll_wait(b, job_id, w, sp->poll_ms, slurm_poll, &pc, st, err);
	if (!ret && !b->dry_run && w->tail > 0 && !w->show_logs)
		ret = slurm_logs(b, job_id, w->tail, w->on_line, w->payload, err);
	free(pc.path);
	return ret;
}

static int slurm_stop(struct gdn_backend *b, const char *job_id, struct gdn_err *err)
{
	struct gdn_slurm_job job;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	int ret = parse_job(job_id, &job, err);

	if (ret)
		return ret;
	ret = slurm_state(b, &job, GDN_EV_SPAWN, &st, NULL, err);
	if (ret || b->dry_run) {
		if (b->dry_run)
			ret = cancel(b, &job, err);
		return ret;
	}
	if (st.final) {
		gdn_backend_event(b, GDN_EV_INFO, "job %s had already finished: %s", job_id,
				  st.native);
		return 0;
	}
	ret = cancel(b, &job, err);
	if (!ret)
		gdn_backend_event(b, GDN_EV_INFO, "cancelled job %s on %s", job_id, b->name);
	return ret;
}

/*
 * Copy back: where the path's directory is visible on this machine (the
 * shared file system; relative paths start at workdir against the
 * repository), read it here; else over ssh from the login host
 * (backends.<name>.host), relative paths starting at workdir there.
 */
static int slurm_copy_source(struct gdn_backend *b, const char *path, struct gdn_copy_where *w,
			     struct gdn_err *err)
{
	struct slurm_priv *sp = b->priv;
	struct gdn_err sub = GDN_ERR_INIT;
	char cwd[PATH_MAX];
	const char *base = b->repo_root ? b->repo_root : getcwd(cwd, sizeof(cwd)) ? cwd : ".";
	char *root = sp->workdir ? gdn_backend_local_path(sp->workdir, base) : xstrdup(base);
	char *here = NULL;
	struct stat st;
	int ret = 0;

	if (!*path)
		here = xstrdup(root);
	else if (path[0] == '/' || path[0] == '~')
		here = gdn_backend_local_path(path, NULL);
	else
		here = xstrfmt("%s/%s", root, path);
	if (!stat(here, &st)) {
		w->local_root = root;
		root = NULL;
		goto out;
	}
	ret = gdn_copy_ssh_from_config(b, w, &sub);
	if (ret == GDN_ENOTFOUND)
		ret = gdn_err_set(err, GDN_ENOTFOUND,
				  "'%s' is not on this machine, and backends.%s.host (the login "
				  "host to copy from) is not set",
				  here, b->name);
	else if (ret)
		*err = sub;
	else
		w->remote_root = sp->workdir ? xstrdup(sp->workdir) : NULL;
out:
	free(root);
	free(here);
	return ret;
}

const struct gdn_backend_ops gdn_backend_slurm_ops = {
    .type = "slurm",
    .open = slurm_open,
    .run = slurm_run,
    .submit = slurm_submit,
    .status = slurm_status,
    .wait = slurm_wait,
    .logs = slurm_logs,
    .stop = slurm_stop,
    .copy_source = slurm_copy_source,
    .free_priv = slurm_free,
};
