/*
 * Jobs of the local and ssh backends: a small shell script (the job shim)
 * run as `bash -s -- OP JOBDIR ARGS...` with the script on standard input,
 * locally or through ssh. It keeps one directory per job:
 *
 *   monitor  pid of the shell that waits for the job
 *   pgid     the job's process group (the job runs under `set -m`)
 *   output   the job's output (background jobs)
 *   exit     its exit status, written when it ends (128+N: signal N)
 *   cancel   a stop was requested (also before the job started)
 *
 * Operations: run (fg: output on the connection; bg: detached, output to
 * the file), poll (state, then the output from a byte offset), logs,
 * stop (SIGTERM to the group, SIGKILL after a grace) and reap. Each prints
 * one line "gdnctl-job: STATE" first (not fg run), so text a login
 * script prints before it is skipped. Everything is wrapped in functions
 * and called on the last line: a script cut short by a lost connection
 * runs nothing.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"
#include <sys/random.h>

#define SHIM_TIMEOUT_MS (120 * 1000)
#define SHIM_OUT_LIMIT	(8 << 20)
#define STATUS_PREFIX	"gdnctl-job: "

/* The shell script that runs, watches, stops and reports local and ssh jobs. */
static const char job_shim[] =
    "# gdnctl job shim 1: bash -s -- OP JOBDIR [ARGS...] (see docs/gdnctl-run.md)\n"
    "gdnctl_status() {\n"
    "\tlocal d=$1 p c=\n"
    "\t[ -e \"$d/cancel\" ] && c=' cancelled'\n"
    "\tif [ ! -d \"$d\" ]; then echo \"gdnctl-job: missing\"; return; fi\n"
    "\tif [ -f \"$d/exit\" ]; then echo \"gdnctl-job: exited $(cat -- \"$d/exit\")$c\"; return; "
    "fi\n"
    "\tif [ -f \"$d/pgid\" ] && p=$(cat -- \"$d/pgid\") && kill -0 -- \"-$p\" 2>/dev/null; then\n"
    "\t\techo \"gdnctl-job: running$c\"; return\n"
    "\tfi\n"
    "\tif [ -f \"$d/monitor\" ] && p=$(cat -- \"$d/monitor\") && kill -0 \"$p\" 2>/dev/null; then\n"
    "\t\tif [ -f \"$d/pgid\" ]; then echo \"gdnctl-job: running$c\"; else echo \"gdnctl-job: "
    "pending$c\"; fi\n"
    "\t\treturn\n"
    "\tfi\n"
    "\tif [ -f \"$d/exit\" ]; then echo \"gdnctl-job: exited $(cat -- \"$d/exit\")$c\"; return; "
    "fi\n"
    "\techo \"gdnctl-job: lost$c\"\n"
    "}\n"
    "gdnctl_alive() {\n"
    "\t# is anything but zombies left in process group $1?\n"
    "\tif command -v ps >/dev/null 2>&1; then\n"
    "\t\tps -eo pgid=,stat= 2>/dev/null | awk -v g=\"$1\" '$1 == g && $2 !~ /^Z/ { f = 1 } END { "
    "exit !f }'\n"
    "\telse\n"
    "\t\tkill -0 -- \"-$1\" 2>/dev/null\n"
    "\tfi\n"
    "}\n"
    "gdnctl_monitor() {\n"
    "\tlocal d=$1 mode=$2 p rc=143\n"
    "\tshift 2\n"
    "\t# the job gets our stderr; bash's own notices (\"Terminated\") go nowhere, so a\n"
    "\t# write to a connection that is gone cannot kill this shell\n"
    "\texec 3>&2 2>/dev/null\n"
    "\tset -m\n"
    "\tif [ ! -e \"$d/cancel\" ]; then\n"
    "\t\tif [ \"$mode\" = fg ]; then\n"
    "\t\t\t\"$@\" </dev/null 2>&3 3>&- &\n"
    "\t\telse\n"
    "\t\t\t\"$@\" </dev/null >>\"$d/output\" 2>&1 3>&- &\n"
    "\t\tfi\n"
    "\t\tp=$!\n"
    "\t\techo \"$p\" >\"$d/pgid.tmp\" && mv -f -- \"$d/pgid.tmp\" \"$d/pgid\"\n"
    "\t\t[ -e \"$d/cancel\" ] && kill -TERM -- \"-$p\" 2>/dev/null\n"
    "\t\twait \"$p\"\n"
    "\t\trc=$?\n"
    "\tfi\n"
    "\techo \"$rc\" >\"$d/exit.tmp\" && mv -f -- \"$d/exit.tmp\" \"$d/exit\"\n"
    "\treturn \"$rc\"\n"
    "}\n"
    "gdnctl_job() {\n"
    "\tlocal op=$1 d=$2 p i rc\n"
    "\tcase $d in \"~/\"*) d=$HOME/${d#\"~/\"} ;; esac\n"
    "\tshift 2\n"
    "\tcase $op in\n"
    "\trun)\n"
    "\t\tlocal mode=$1\n"
    "\t\tshift\n"
    "\t\tmkdir -p -- \"$d\" || return 125\n"
    "\t\tif [ \"$mode\" = fg ]; then\n"
    "\t\t\techo \"$$\" >\"$d/monitor\"\n"
    "\t\t\tgdnctl_monitor \"$d\" fg \"$@\"\n"
    "\t\t\trc=$?\n"
    "\t\t\t[ \"$rc\" = 255 ] || rm -rf -- \"$d\"\n"
    "\t\t\treturn \"$rc\"\n"
    "\t\tfi\n"
    "\t\tgdnctl_monitor \"$d\" bg \"$@\" >/dev/null 2>&1 </dev/null &\n"
    "\t\techo \"$!\" >\"$d/monitor\"\n"
    "\t\techo \"gdnctl-job: started\"\n"
    "\t\t;;\n"
    "\tpoll)\n"
    "\t\tgdnctl_status \"$d\"\n"
    "\t\tif [ \"$1\" -ge 0 ] && [ -f \"$d/output\" ]; then tail -c \"+$(($1 + 1))\" -- "
    "\"$d/output\"; fi\n"
    "\t\t;;\n"
    "\tlogs)\n"
    "\t\tgdnctl_status \"$d\"\n"
    "\t\t[ -f \"$d/output\" ] || return 0\n"
    "\t\tif [ \"$1\" -gt 0 ]; then tail -n \"$1\" -- \"$d/output\"; else cat -- \"$d/output\"; fi\n"
    "\t\t;;\n"
    "\tstop)\n"
    "\t\tif [ ! -d \"$d\" ]; then\n"
    "\t\t\t[ \"$2\" = 1 ] && mkdir -p -- \"$d\" && : >\"$d/cancel\"\n"
    "\t\t\techo \"gdnctl-job: missing\"\n"
    "\t\t\treturn 0\n"
    "\t\tfi\n"
    "\t\tif [ -f \"$d/exit\" ]; then\n"
    "\t\t\techo \"$(gdnctl_status \"$d\") already\"\n"
    "\t\t\treturn 0\n"
    "\t\tfi\n"
    "\t\t: >\"$d/cancel\"\n"
    "\t\tif [ -f \"$d/pgid\" ] && p=$(cat -- \"$d/pgid\"); then\n"
    "\t\t\tkill -TERM -- \"-$p\" 2>/dev/null\n"
    "\t\t\ti=0\n"
    "\t\t\twhile gdnctl_alive \"$p\" && [ \"$i\" -lt \"$(($1 * 10))\" ]; do\n"
    "\t\t\t\tsleep 0.1\n"
    "\t\t\t\ti=$((i + 1))\n"
    "\t\t\tdone\n"
    "\t\t\tgdnctl_alive \"$p\" && kill -KILL -- \"-$p\" 2>/dev/null\n"
    "\t\tfi\n"
    "\t\ti=0\n"
    "\t\twhile [ -d \"$d\" ] && [ ! -f \"$d/exit\" ] && [ \"$i\" -lt 50 ]; do\n"
    "\t\t\tsleep 0.1\n"
    "\t\t\ti=$((i + 1))\n"
    "\t\tdone\n"
    "\t\tgdnctl_status \"$d\"\n"
    "\t\t;;\n"
    "\treap)\n"
    "\t\tp=$(gdnctl_status \"$d\")\n"
    "\t\techo \"$p\"\n"
    "\t\tcase $p in *exited*) rm -rf -- \"$d\" ;; esac\n"
    "\t\t;;\n"
    "\t*)\n"
    "\t\techo \"gdnctl-job: error unknown operation $op\"\n"
    "\t\treturn 2\n"
    "\t\t;;\n"
    "\tesac\n"
    "}\n"
    "gdnctl_job \"$@\"\n";

/* ---- pure parts ---- */

void gdn_sh_add_path(struct sbuf *out, const char *path)
{
	if (!strcmp(path, "~")) {
		sbuf_adds(out, "\"$HOME\"");
	} else if (!strncmp(path, "~/", 2)) {
		sbuf_adds(out, "\"$HOME\"/");
		if (path[2])
			sbuf_add_shell_quoted(out, path + 2);
	} else {
		sbuf_add_shell_quoted(out, path);
	}
}

void gdn_ssh_remote_command(struct sbuf *out, const char *dir, const char *const *env,
			    const char *const *args)
{
	bool any_env = false;

	if (dir && *dir) {
		sbuf_adds(out, "cd -- ");
		gdn_sh_add_path(out, dir);
		sbuf_adds(out, " && ");
	}
	for (size_t i = 0; env && env[i]; i++) {
		if (!strchr(env[i], '='))
			continue;
		if (!any_env)
			sbuf_adds(out, "env ");
		any_env = true;
		sbuf_add_shell_quoted(out, env[i]);
		sbuf_addch(out, ' ');
	}
	sbuf_adds(out, "bash -s --");
	for (size_t i = 0; args && args[i]; i++) {
		sbuf_addch(out, ' ');
		sbuf_add_shell_quoted(out, args[i]);
	}
}

static bool word_is(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len >= n && !memcmp(s, word, n) && (len == n || s[n] == ' ');
}

int gdn_job_parse_shim(const char *out, size_t len, struct gdn_job_status *st, size_t *data_off,
		       struct gdn_err *err)
{
	size_t pos = 0, plen = strlen(STATUS_PREFIX);

	while (pos < len) {
		const char *line = out + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		const char *s = line + plen;
		size_t sl = n - plen;
		bool cancelled, already;

		pos += n + (nl ? 1 : 0);
		if (n < plen || memcmp(line, STATUS_PREFIX, plen))
			continue;
		*data_off = pos;
		if (memchr(s, '\0', sl))
			break; /* a NUL byte may cut the exit code short: no status */
		already = sl >= 8 && !memcmp(s + sl - 8, " already", 8);
		if (already)
			sl -= 8;
		cancelled = sl >= 10 && !memcmp(s + sl - 10, " cancelled", 10);
		if (cancelled)
			sl -= 10;
		st->message[0] = '\0';
		if (word_is(s, sl, "exited")) {
			long code = -1;
			char num[16];

			if (sl > 7 && sl - 7 < sizeof(num)) {
				char *end;

				memcpy(num, s + 7, sl - 7);
				num[sl - 7] = '\0';
				code = strtol(num, &end, 10);
				if (*end || end == num || code < 0 || code > 255)
					code = -1;
			}
			if (code < 0)
				break;
			if (cancelled)
				gdn_job_status_set(st, GDN_JOB_STOPPED, "STOPPED", (int)code);
			else if (code)
				gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", (int)code);
			else
				gdn_job_status_set(st, GDN_JOB_SUCCEEDED, "COMPLETED", 0);
		} else if (sl == 7 && word_is(s, sl, "running")) {
			gdn_job_status_set(st, GDN_JOB_RUNNING, "RUNNING", -1);
		} else if (sl == 7 && word_is(s, sl, "pending")) {
			gdn_job_status_set(st, GDN_JOB_PENDING, "PENDING", -1);
		} else if (sl == 7 && word_is(s, sl, "started")) {
			gdn_job_status_set(st, GDN_JOB_PENDING, "STARTED", -1);
		} else if (sl == 7 && word_is(s, sl, "stopped")) {
			gdn_job_status_set(st, GDN_JOB_STOPPED, "STOPPED", -1);
		} else if (sl == 7 && word_is(s, sl, "missing")) {
			gdn_job_status_set(st, GDN_JOB_UNKNOWN, "MISSING", -1);
		} else if (sl == 4 && word_is(s, sl, "lost")) {
			gdn_job_status_set(st, GDN_JOB_FAILED, "LOST", -1);
			snprintf(st->message, sizeof(st->message),
				 "the job's monitor is gone and recorded no exit status");
		} else if (word_is(s, sl, "error")) {
			gdn_job_status_set(st, GDN_JOB_UNKNOWN, "ERROR", -1);
			snprintf(st->message, sizeof(st->message), "%.*s", (int)sl, s);
		} else {
			break;
		}
		if (already)
			snprintf(st->message, sizeof(st->message), "already finished");
		return 0;
	}
	*data_off = len;
	return gdn_err_set(err, GDN_EPARSE, "no '%s' status line in the job shim's output",
			   STATUS_PREFIX "STATE");
}

void gdn_job_new_id(char *buf, size_t size)
{
	unsigned char rnd[3] = {0};
	time_t now = time(NULL);
	struct tm tm;

	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		unsigned v = (unsigned)getpid() ^ (unsigned)gdn_now_ms();

		rnd[0] = (unsigned char)v;
		rnd[1] = (unsigned char)(v >> 8);
		rnd[2] = (unsigned char)(v >> 16);
	}
	gmtime_r(&now, &tm);
	snprintf(buf, size, "%04d%02d%02d-%02d%02d%02d-%02x%02x%02x", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rnd[0], rnd[1],
		 rnd[2]);
}

/* The job directory of id on the target, as given to the shim. */
static void job_dir(const struct gdn_job_target *t, const char *id, struct sbuf *out)
{
	size_t len = strlen(t->jobroot);

	while (len > 1 && t->jobroot[len - 1] == '/')
		len--;
	sbuf_add(out, t->jobroot, len);
	sbuf_addf(out, "/%s", id);
}

void gdn_run_spec_argv(const struct gdn_run_spec *spec, bool login, struct strvec *argv)
{
	if (spec->shell) /* the user's own command string */
		strvec_pushl(argv, "bash", login ? "-lc" : "-c", spec->shell, NULL);
	else
		strvec_pushv(argv, spec->argv);
}

/* ---- running the shim ---- */

struct shim_call {
	struct strvec argv, env;
	struct gdn_proc p;
};
#define SHIM_CALL_INIT                                  \
	{                                               \
		STRVEC_INIT, STRVEC_INIT, GDN_PROC_INIT \
	}

static void shim_call_release(struct shim_call *c)
{
	strvec_clear(&c->argv);
	strvec_clear(&c->env);
	gdn_proc_release(&c->p);
}

/* Point c at the shim: `args` run through t's transport (bash or ssh), the shim on stdin. */
static void shim_prepare(struct gdn_backend *b, const struct gdn_job_target *t, const char *run_dir,
			 const char *const *run_env, const char *const *args, struct shim_call *c)
{
	t->build(b, run_dir, run_env, args, &c->argv, &c->p.dir, &c->env);
	c->p.argv = c->argv.v;
	c->p.env = c->env.nr ? c->env.v : NULL;
	c->p.stdin_text = job_shim;
	c->p.kill_grace_ms = 1000;
}

/*
 * A new job: its id (in id[idsz]) and directory (in dir), and c set up for
 * the shim's `run DIR MODE CMD...` (MODE "bg" or "fg").
 */
static void shim_run_prepare(struct gdn_backend *b, const struct gdn_job_target *t,
			     const char *run_dir, const struct gdn_run_spec *spec, const char *mode,
			     char *id, size_t idsz, struct sbuf *dir, struct shim_call *c)
{
	struct strvec args = STRVEC_INIT;

	if (spec->dry_run)
		b->dry_run = true;
	gdn_job_new_id(id, idsz);
	job_dir(t, id, dir);
	strvec_pushl(&args, "run", dir->buf, mode, NULL);
	gdn_run_spec_argv(spec, t->login_shell, &args);
	gdn_backend_register_secrets(spec->env);
	shim_prepare(b, t, run_dir, spec->env, args.v, c);
	strvec_clear(&args);
}

/*
 * Run one shim operation, capturing its output. 0 with the status in *st
 * and the data offset in *data_off; in a dry run 0 and nothing else.
 */
static int shim_op(struct gdn_backend *b, const struct gdn_job_target *t, enum gdn_backend_event ev,
		   const char *const *args, long timeout_ms, struct shim_call *c,
		   struct gdn_job_status *st, size_t *data_off, struct gdn_err *err)
{
	struct gdn_err perr = GDN_ERR_INIT;
	struct sbuf first = SBUF_INIT;
	int ret;

	shim_prepare(b, t, NULL, NULL, args, c);
	c->p.capture = true;
	c->p.out.limit = SHIM_OUT_LIMIT;
	c->p.timeout_ms = (int)timeout_ms;
	ret = gdn_backend_spawn(b, ev, &c->p, err);
	if (ret || b->dry_run)
		goto out;
	if (c->p.status_kind == GDN_PROC_STOPPED) {
		ret = gdn_err_set(err, GDN_EINTR, "interrupted while running '%s'", c->argv.v[0]);
		goto out;
	}
	if (c->p.status_kind != GDN_PROC_EXITED) {
		ret = gdn_err_set(
		    err, GDN_EBACKEND, "'%s' for backend '%s' %s", c->argv.v[0], b->name,
		    c->p.status_kind == GDN_PROC_SIGNALED ? "was killed by a signal" : "timed out");
		goto out;
	}
	ret = gdn_job_parse_shim(c->p.out.buf, c->p.out.len, st, data_off, &perr);
	if (ret || !strcmp(st->native, "ERROR")) {
		gdn_backend_first_line(&c->p.out, &first);
		ret = gdn_err_set(err, GDN_EBACKEND, "'%s' for backend '%s' failed (exit %d): %s",
				  c->argv.v[0], b->name, c->p.code, ret ? first.buf : st->message);
	}
out:
	sbuf_release(&first);
	return ret;
}

static int no_such_job(struct gdn_backend *b, const char *id, const char *dir, struct gdn_err *err)
{
	return gdn_err_set(err, GDN_ENOTFOUND, "no job '%s' on backend '%s' (no directory '%s')",
			   id, b->name, dir);
}

int gdn_job_submit(struct gdn_backend *b, const struct gdn_job_target *t, const char *run_dir,
		   const struct gdn_run_spec *spec, char **job_id, struct gdn_err *err)
{
	struct shim_call c = SHIM_CALL_INIT;
	struct sbuf dir = SBUF_INIT, first = SBUF_INIT;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	char id[64];
	size_t off;
	int ret;

	*job_id = NULL;
	shim_run_prepare(b, t, run_dir, spec, "bg", id, sizeof(id), &dir, &c);
	c.p.capture = true;
	c.p.out.limit = SHIM_OUT_LIMIT;
	c.p.timeout_ms = SHIM_TIMEOUT_MS;
	ret = gdn_backend_spawn(b, GDN_EV_SPAWN, &c.p, err);
	if (ret || b->dry_run)
		goto out;
	if (c.p.status_kind == GDN_PROC_STOPPED) {
		ret = gdn_err_set(err, GDN_EINTR, "interrupted while submitting to '%s'", b->name);
		goto out;
	}
	if (c.p.status_kind != GDN_PROC_EXITED ||
	    gdn_job_parse_shim(c.p.out.buf, c.p.out.len, &st, &off, NULL) ||
	    strcmp(st.native, "STARTED")) {
		gdn_backend_first_line(&c.p.out, &first);
		ret = gdn_err_set(err, GDN_EBACKEND, "could not start the job on '%s' (%s %d): %s",
				  b->name, c.p.status_kind == GDN_PROC_EXITED ? "exit" : "status",
				  c.p.status_kind == GDN_PROC_EXITED ? c.p.code
								     : (int)c.p.status_kind,
				  first.buf);
		goto out;
	}
	*job_id = xstrdup(id);
out:
	shim_call_release(&c);
	sbuf_release(&dir);
	sbuf_release(&first);
	return ret;
}

struct poll_ctx {
	const struct gdn_job_target *t;
	bool quiet; /* status() on its own: echo as SPAWN, not as a repeated poll */
};

static int job_poll(struct gdn_backend *b, void *ctx, const char *job_id, struct gdn_follow *f,
		    struct gdn_job_status *st, struct gdn_err *err)
{
	struct poll_ctx *pc = ctx;
	struct shim_call c = SHIM_CALL_INIT;
	struct sbuf dir = SBUF_INIT;
	char off_text[32];
	size_t off = 0;
	int ret;

	ret = gdn_check_job_id(job_id, GDN_EUSAGE, err);
	if (ret)
		goto out;
	job_dir(pc->t, job_id, &dir);
	snprintf(off_text, sizeof(off_text), "%lld", f ? f->offset : -1LL);
	ret = shim_op(b, pc->t, pc->quiet ? GDN_EV_SPAWN : GDN_EV_POLL,
		      (const char *const[]){"poll", dir.buf, off_text, NULL}, SHIM_TIMEOUT_MS, &c,
		      st, &off, err);
	if (ret || b->dry_run)
		goto out;
	if (!strcmp(st->native, "MISSING")) {
		ret = no_such_job(b, job_id, dir.buf, err);
		goto out;
	}
	if (f && off < c.p.out.len)
		gdn_follow_feed(f, c.p.out.buf + off, c.p.out.len - off);
out:
	shim_call_release(&c);
	sbuf_release(&dir);
	return ret;
}

int gdn_job_status(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		   struct gdn_job_status *st, struct gdn_err *err)
{
	struct poll_ctx pc = {t, true};

	return job_poll(b, &pc, job_id, NULL, st, err);
}

int gdn_job_wait(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		 const struct gdn_wait_spec *w, struct gdn_job_status *st, struct gdn_err *err)
{
	struct poll_ctx pc = {t, false};
	int ret = gdn_check_job_id(job_id, GDN_EUSAGE, err);

	if (ret)
		return ret;
	ret = gdn_backend_poll_wait(b, job_id, w, t->poll_ms, job_poll, &pc, st, err);
	if (!ret && !b->dry_run && w->tail > 0 && !w->show_logs)
		ret = gdn_job_logs(b, t, job_id, w->tail, w->on_line, w->payload, err);
	return ret;
}

int gdn_job_logs(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		 long tail, gdn_line_fn on_line, void *payload, struct gdn_err *err)
{
	struct shim_call c = SHIM_CALL_INIT;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct sbuf dir = SBUF_INIT;
	char tail_text[32];
	size_t off = 0;
	int ret;

	ret = gdn_check_job_id(job_id, GDN_EUSAGE, err);
	if (ret)
		goto out;
	job_dir(t, job_id, &dir);
	snprintf(tail_text, sizeof(tail_text), "%ld", tail > 0 ? tail : 0);
	ret = shim_op(b, t, GDN_EV_SPAWN, (const char *const[]){"logs", dir.buf, tail_text, NULL},
		      SHIM_TIMEOUT_MS, &c, &st, &off, err);
	if (ret || b->dry_run)
		goto out;
	if (!strcmp(st.native, "MISSING")) {
		ret = no_such_job(b, job_id, dir.buf, err);
		goto out;
	}
	if (off < c.p.out.len)
		gdn_emit_lines(c.p.out.buf + off, c.p.out.len - off, 0, on_line, payload);
out:
	shim_call_release(&c);
	sbuf_release(&dir);
	return ret;
}

int gdn_job_stop(struct gdn_backend *b, const struct gdn_job_target *t, const char *job_id,
		 bool create, struct gdn_job_status *st, struct gdn_err *err)
{
	struct shim_call c = SHIM_CALL_INIT;
	struct sbuf dir = SBUF_INIT;
	char grace[32];
	long grace_s = (t->kill_grace_ms + 999) / 1000;
	size_t off = 0;
	int ret;

	ret = gdn_check_job_id(job_id, GDN_EUSAGE, err);
	if (ret)
		goto out;
	job_dir(t, job_id, &dir);
	snprintf(grace, sizeof(grace), "%ld", grace_s > 0 ? grace_s : 1);
	ret = shim_op(b, t, GDN_EV_SPAWN,
		      (const char *const[]){"stop", dir.buf, grace, create ? "1" : "0", NULL},
		      SHIM_TIMEOUT_MS + grace_s * 1000, &c, st, &off, err);
	if (ret || b->dry_run)
		goto out;
	if (!strcmp(st->native, "MISSING") && !create)
		ret = no_such_job(b, job_id, dir.buf, err);
	else if (!strcmp(st->message, "already finished"))
		gdn_backend_event(b, GDN_EV_INFO, "job %s had already finished: %s", job_id,
				  st->native);
	else if (!create)
		gdn_backend_event(b, GDN_EV_INFO, "stopped job %s on %s", job_id, b->name);
out:
	shim_call_release(&c);
	sbuf_release(&dir);
	return ret;
}

/* After the foreground connection ended abnormally: stop the job where it runs. */
static int stop_after(struct gdn_backend *b, const struct gdn_job_target *t, const char *id,
		      struct gdn_err *err)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	int ret;

	gdn_backend_event(b, GDN_EV_INFO, "stopping job %s on %s", id, b->name);
	ret = gdn_job_stop(b, t, id, true, &st, err);
	if (ret)
		gdn_err_prefix(err, "could not stop job %s on %s", id, b->name);
	return ret;
}

int gdn_job_run_fg(struct gdn_backend *b, const struct gdn_job_target *t, const char *run_dir,
		   const struct gdn_run_spec *spec, struct gdn_job_status *st, struct gdn_err *err)
{
	struct shim_call c = SHIM_CALL_INIT, r = SHIM_CALL_INIT;
	struct sbuf dir = SBUF_INIT, dur = SBUF_INIT;
	struct gdn_job_status rst = GDN_JOB_STATUS_INIT;
	char id[64];
	size_t off;
	int ret;

	shim_run_prepare(b, t, run_dir, spec, "fg", id, sizeof(id), &dir, &c);
	c.p.on_line = spec->on_line;
	c.p.payload = spec->payload;
	c.p.on_tick = spec->on_tick;
	c.p.tick_ms = spec->tick_ms;
	c.p.timeout_ms = (int)spec->timeout_ms;
	ret = gdn_backend_spawn(b, GDN_EV_SPAWN, &c.p, err);
	if (ret || b->dry_run)
		goto out;
	snprintf(st->job_id, sizeof(st->job_id), "%s", id);
	switch (c.p.status_kind) {
	case GDN_PROC_EXITED:
		if (c.p.code == 0) {
			gdn_job_status_set(st, GDN_JOB_SUCCEEDED, "COMPLETED", 0);
		} else if (c.p.code != 255) {
			gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", c.p.code);
		} else {
			/* 255: the command's own status, or the connection failed */
			ret = shim_op(b, t, GDN_EV_SPAWN,
				      (const char *const[]){"reap", dir.buf, NULL}, SHIM_TIMEOUT_MS,
				      &r, &rst, &off, err);
			if (!ret && rst.final && rst.exit_code == 255) {
				gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", 255);
			} else if (!ret) {
				ret = gdn_err_set(err, GDN_EBACKEND,
						  "'%s' failed with exit status 255 before the job "
						  "finished (see its message above)",
						  c.argv.v[0]);
				stop_after(b, t, id, NULL);
			}
		}
		break;
	case GDN_PROC_TIMEOUT:
	case GDN_PROC_IDLE:
		ret = stop_after(b, t, id, err);
		gdn_format_duration(spec->timeout_ms, &dur);
		gdn_job_status_set(st, GDN_JOB_TIMEOUT, "TIMEOUT", 124);
		snprintf(st->message, sizeof(st->message), "stopped after the timeout of %s",
			 dur.buf);
		break;
	case GDN_PROC_STOPPED:
		ret = stop_after(b, t, id, err);
		gdn_job_status_set(st, GDN_JOB_STOPPED, "STOPPED",
				   128 + (c.p.stop_signal ? c.p.stop_signal : SIGINT));
		break;
	default:
		stop_after(b, t, id, NULL);
		ret = gdn_err_set(err, GDN_EBACKEND, "'%s' was killed by signal %d", c.argv.v[0],
				  c.p.signo);
		break;
	}
out:
	shim_call_release(&c);
	shim_call_release(&r);
	sbuf_release(&dir);
	sbuf_release(&dur);
	return ret;
}
