/*
 * Agent drivers: the table, and what every driver shares (opening,
 * the run through proc.h with the transcript and the output filter,
 * judging how the process ended).
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "agent_impl.h"

static const struct agent_driver *const drivers[] = {
    &agent_claude_driver,
    &agent_codex_driver,
    &agent_command_driver,
};

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

char *agent_find_program(const char *name)
{
	const char *path = getenv("PATH"), *p;
	struct sbuf cand = SBUF_INIT;
	struct stat st;
	char *found = NULL;

	if (!name || !*name)
		return NULL;
	if (strchr(name, '/')) {
		if (!stat(name, &st) && S_ISREG(st.st_mode) && !access(name, X_OK))
			found = xstrdup(name);
		goto out;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		size_t len = strcspn(p, ":");

		sbuf_reset(&cand);
		if (len)
			sbuf_addf(&cand, "%.*s/%s", (int)len, p, name);
		else
			sbuf_addf(&cand, "./%s", name);
		if (!stat(cand.buf, &st) && S_ISREG(st.st_mode) && !access(cand.buf, X_OK)) {
			found = sbuf_detach(&cand, NULL);
			goto out;
		}
		p += len;
		if (!*p)
			break;
	}
out:
	sbuf_release(&cand);
	return found;
}

char *agent_read_message(const char *path)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *msg = NULL;

	if (!path || access(path, F_OK))
		goto out;
	if (sbuf_read_file(&sb, path, AGENT_MESSAGE_MAX, &err) < 0)
		goto out;
	sbuf_rtrim(&sb);
	if (sb.len)
		msg = sbuf_detach(&sb, NULL);
out:
	sbuf_release(&sb);
	return msg;
}

static void set_reason(struct gdn_agent_result *res, const char *fmt, ...) GDN_PRINTF(2, 3);
static void set_reason(struct gdn_agent_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
	va_end(ap);
}

void agent_reason_from_status(const struct gdn_agent *a, struct gdn_agent_result *res)
{
	switch (res->status) {
	case GDN_PROC_TIMEOUT:
		set_reason(res, "timed out after %ld s (runtime limit); process group killed",
			   a->timeout_ms / 1000);
		break;
	case GDN_PROC_IDLE:
		set_reason(res, "no output for %ld s (idle limit); process group killed",
			   a->idle_timeout_ms / 1000);
		break;
	case GDN_PROC_STOPPED:
		set_reason(res, "stopped (exit %d)", res->exit_code);
		break;
	case GDN_PROC_SIGNALED:
		set_reason(res, "killed by signal %d", res->exit_code - 128);
		break;
	case GDN_PROC_EXITED:
		if (res->exit_code)
			set_reason(res, "exited with code %d", res->exit_code);
		break;
	case GDN_PROC_NOT_RUN:
		set_reason(res, "did not run");
		break;
	}
}

int gdn_agent_open(const struct gdn_agent_opts *o, struct gdn_agent **out, struct strvec *warnings,
		   struct gdn_err *err)
{
	const struct agent_driver *drv = NULL;
	const char *name = o->driver && *o->driver ? o->driver : "codex";
	struct gdn_agent *a = NULL;
	struct strvec dropped = STRVEC_INIT;
	size_t i;
	int ret = 0;

	*out = NULL;
	for (i = 0; i < ARRAY_SIZE(drivers); i++)
		if (!strcmp(drivers[i]->name, name))
			drv = drivers[i];
	if (!drv)
		return gdn_err_set(err, GDN_EUSAGE,
				   "unknown agent '%s' (known: claude, codex, command)", name);

	a = xcalloc(1, sizeof(*a));
	a->drv = drv;
	a->command = dup_or_null(o->command);
	a->model = dup_or_null(o->model);
	a->effort = dup_or_null(o->reasoning_effort);
	a->profile = dup_or_null(o->profile);
	a->search = o->search;
	a->ephemeral = o->ephemeral;
	a->show_file_updates = o->show_file_updates;
	a->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
	a->idle_timeout_ms = o->idle_timeout_ms > 0 ? o->idle_timeout_ms : 0;
	a->kill_grace_ms = o->kill_grace_ms > 0 ? o->kill_grace_ms : 0;
	a->probe_timeout_ms =
	    o->probe_timeout_ms > 0 ? o->probe_timeout_ms : AGENT_PROBE_TIMEOUT_MS;
	strvec_init(&a->env);
	strvec_init(&a->words);
	if (o->env)
		strvec_pushv(&a->env, o->env);
	if (o->bin && *o->bin)
		a->bin = xstrdup(o->bin); /* the driver resolves it */

	ret = drv->open(a, warnings ? warnings : &dropped, err);
	if (ret < 0)
		goto out;
	*out = a;
	a = NULL;
out:
	strvec_clear(&dropped);
	gdn_agent_free(a);
	return ret;
}

const char *gdn_agent_bin(const struct gdn_agent *a)
{
	return a->bin;
}

const char *gdn_agent_efforts(const struct gdn_agent *a)
{
	return a->efforts;
}

bool gdn_agent_search(const struct gdn_agent *a)
{
	return a->search_ok;
}

void gdn_agent_argv(const struct gdn_agent *a, const struct gdn_agent_request *req,
		    struct strvec *argv)
{
	a->drv->argv(a, req, argv);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int agent_emit(struct agent_run *r, const char *line, size_t len)
{
	if (!r->req->on_line || r->consumer_stopped)
		return r->consumer_stopped;
	if (r->req->on_line(line, len, r->req->payload))
		r->consumer_stopped = true;
	return r->consumer_stopped;
}

static void on_child_spawn(pid_t pgid, void *payload)
{
	struct agent_run *r = payload;

	if (r->req->on_spawn)
		r->req->on_spawn(pgid, r->req->spawn_payload);
}

static int on_child_line(const char *line, size_t len, void *payload)
{
	struct agent_run *r = payload;

	if (r->transcript_fd >= 0) {
		/* best effort: a full disk must not kill the agent */
		if (write_all(r->transcript_fd, line, len) ||
		    write_all(r->transcript_fd, "\n", 1)) {
			close(r->transcript_fd);
			r->transcript_fd = -1;
		}
	}
	return r->a->drv->line(r, line, len);
}

static int open_transcript(struct agent_run *r, const struct strvec *argv, struct gdn_err *err)
{
	const char *path = r->req->transcript_file;
	struct sbuf head = SBUF_INIT;
	char stamp[32] = "";
	struct tm tm;
	time_t now = time(NULL);
	int ret = 0;

	if (!path)
		goto out;
	r->transcript_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (r->transcript_fd < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot open transcript '%s'", path);
		goto out;
	}
	if (gmtime_r(&now, &tm))
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	sbuf_addf(&head, "==== gdnctl: %s agent started %s in %s: ", r->a->drv->name, stamp,
		  r->req->workdir ? r->req->workdir : ".");
	gdn_argv_format(&head, argv->v);
	sbuf_adds(&head, " ====\n");
	if (write_all(r->transcript_fd, head.buf, head.len))
		ret = gdn_err_errno(err, GDN_EIO, "cannot write transcript '%s'", path);
out:
	sbuf_release(&head);
	return ret;
}

int gdn_agent_run(struct gdn_agent *a, const struct gdn_agent_request *req,
		  struct gdn_agent_result *res, struct gdn_err *err)
{
	struct agent_run r = {
	    .a = a,
	    .req = req,
	    .transcript_fd = -1,
	    .filter = AGENT_FILTER_INIT,
	    .claude = AGENT_CLAUDE_STREAM_INIT,
	};
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct sbuf tail = SBUF_INIT;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	strvec_init(&r.show);
	r.filter.show_all = a->show_file_updates;
	a->drv->argv(a, req, &argv);

	if (req->last_message_file && unlink(req->last_message_file) && errno != ENOENT) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot remove stale last message '%s'",
				    req->last_message_file);
		goto out;
	}
	ret = open_transcript(&r, &argv, err);
	if (ret < 0)
		goto out;

	p.argv = argv.v;
	p.dir = req->workdir;
	p.env = a->env.nr ? a->env.v : NULL;
	p.stdin_text = req->prompt ? req->prompt : "";
	p.timeout_ms = a->timeout_ms > INT_MAX ? INT_MAX : (int)a->timeout_ms;
	p.idle_timeout_ms = a->idle_timeout_ms > INT_MAX ? INT_MAX : (int)a->idle_timeout_ms;
	p.kill_grace_ms = a->kill_grace_ms > INT_MAX ? INT_MAX : (int)a->kill_grace_ms;
	p.on_line = on_child_line;
	p.on_spawn = on_child_spawn;
	p.payload = &r;
	ret = gdn_proc_run(&p, err);
	res->status = p.status_kind;
	res->exit_code = gdn_proc_exit_code(&p);
	res->duration_ms = p.duration_ms;
	if (ret < 0) {
		gdn_err_prefix(err, "%s agent", a->drv->name);
		goto out;
	}
	if (r.transcript_fd >= 0) {
		sbuf_addf(&tail, "==== gdnctl: %s agent ended: exit %d after %lld ms ====\n",
			  a->drv->name, res->exit_code, (long long)res->duration_ms);
		write_all(r.transcript_fd, tail.buf, tail.len);
	}
	a->drv->finish(&r, res);
out:
	if (r.transcript_fd >= 0)
		close(r.transcript_fd);
	agent_filter_release(&r.filter);
	agent_claude_stream_release(&r.claude);
	strvec_clear(&r.show);
	strvec_clear(&argv);
	sbuf_release(&tail);
	gdn_proc_release(&p);
	return ret;
}

void gdn_agent_result_release(struct gdn_agent_result *res)
{
	if (!res)
		return;
	FREE_AND_NULL(res->last_message);
}

void gdn_agent_free(struct gdn_agent *a)
{
	if (!a)
		return;
	free(a->bin);
	free(a->command);
	free(a->model);
	free(a->effort);
	free(a->profile);
	free(a->efforts);
	strvec_clear(&a->env);
	strvec_clear(&a->words);
	free(a);
}
