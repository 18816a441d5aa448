/*
 * Agent drivers: what every driver shares (opening, the run through
 * proc.h with the transcript and the output filter, judging how the
 * process ended). The drivers are in agent_drivers.c's table; this file
 * names none of them.
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "agent_impl.h"

static const struct agent_driver *find_driver(const char *name)
{
	for (size_t i = 0; agent_drivers[i]; i++)
		if (!strcmp(agent_drivers[i]->info.name, name))
			return agent_drivers[i];
	return NULL;
}

const struct gdn_agent_info *gdn_agent_find(const char *name)
{
	const struct agent_driver *drv = name ? find_driver(name) : NULL;

	return drv ? &drv->info : NULL;
}

const char *const *gdn_agent_names(void)
{
	static const char *names[32];

	if (!names[0]) {
		size_t i;

		for (i = 0; agent_drivers[i]; i++) {
			if (i + 1 >= ARRAY_SIZE(names))
				BUG("more than %zu agent drivers", ARRAY_SIZE(names) - 1);
			names[i] = agent_drivers[i]->info.name;
		}
		names[i] = NULL;
	}
	return names;
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

int gdn_agent_open(const struct gdn_agent_opts *o, struct gdn_agent **out, struct strvec *warnings,
		   struct gdn_err *err)
{
	const struct agent_driver *drv = NULL;
	const char *name = o->driver && *o->driver ? o->driver : GDN_AGENT_DEFAULT;
	struct gdn_agent *a = NULL;
	struct strvec dropped = STRVEC_INIT;
	struct strvec known = STRVEC_INIT;
	struct sbuf list = SBUF_INIT;
	int ret = 0;

	*out = NULL;
	drv = find_driver(name);
	if (!drv) {
		/* sorted, whatever the table's order */
		strvec_pushv(&known, gdn_agent_names());
		qsort(known.v, known.nr, sizeof(*known.v), cmp_names);
		for (size_t i = 0; i < known.nr; i++)
			sbuf_addf(&list, "%s%s", i ? ", " : "", known.v[i]);
		ret =
		    gdn_err_set(err, GDN_EUSAGE, "unknown agent '%s' (known: %s)", name, list.buf);
		strvec_clear(&known);
		sbuf_release(&list);
		return ret;
	}

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

static void on_child_spawn(pid_t pgid, void *payload)
{
	struct agent_run *r = payload;

	if (r->req->on_spawn)
		r->req->on_spawn(pgid, r->req->spawn_payload);
}

static void on_child_tick(int64_t elapsed_ms, int64_t idle_ms, void *payload)
{
	struct agent_run *r = payload;

	r->req->on_tick(elapsed_ms, idle_ms, r->req->spawn_payload);
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
	sbuf_addf(&head, "==== gdnctl: %s agent started %s in %s: ", r->a->drv->info.name, stamp,
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
	    .usage = GDN_AGENT_USAGE_NONE,
	};
	struct strvec argv = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct sbuf tail = SBUF_INIT;
	struct strvec env = STRVEC_INIT;
	char *mark = req->mark ? xstrdup(req->mark) : agent_new_mark();
	long long not_before;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	res->usage = r.usage;
	r.filter.show_all = a->show_file_updates;
	if (a->drv->run_create)
		r.state = a->drv->run_create(a);
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
	strvec_pushv(&env, a->env.v);
	strvec_push(&env, mark);
	p.env = env.v;
	p.stdin_text = req->prompt ? req->prompt : "";
	p.timeout_ms = a->timeout_ms > INT_MAX ? INT_MAX : (int)a->timeout_ms;
	p.idle_timeout_ms = a->idle_timeout_ms > INT_MAX ? INT_MAX : (int)a->idle_timeout_ms;
	p.kill_grace_ms = a->kill_grace_ms > INT_MAX ? INT_MAX : (int)a->kill_grace_ms;
	p.on_line = on_child_line;
	p.on_spawn = on_child_spawn;
	if (req->on_tick && req->tick_ms > 0) {
		p.on_tick = on_child_tick;
		p.tick_ms = req->tick_ms;
	}
	p.payload = &r;
	not_before = gdn_proc_started_now();
	ret = gdn_proc_run(&p, err);
	if (!ret && p.pid > 0)
		gdn_proc_stop_leftovers(p.pid, mark, not_before, p.kill_grace_ms, &res->leftovers);
	res->status = p.status_kind;
	res->exit_code = gdn_proc_exit_code(&p);
	res->duration_ms = p.duration_ms;
	if (ret < 0) {
		gdn_err_prefix(err, "%s agent", a->drv->info.name);
		goto out;
	}
	if (r.transcript_fd >= 0) {
		sbuf_addf(&tail, "==== gdnctl: %s agent ended: exit %d after %lld ms ====\n",
			  a->drv->info.name, res->exit_code, (long long)res->duration_ms);
		write_all(r.transcript_fd, tail.buf, tail.len);
	}
	a->drv->finish(&r, res);
out:
	res->usage = r.usage;
	if (r.transcript_fd >= 0)
		close(r.transcript_fd);
	agent_filter_release(&r.filter);
	if (a->drv->run_release)
		a->drv->run_release(r.state);
	strvec_clear(&argv);
	strvec_clear(&env);
	free(mark);
	sbuf_release(&tail);
	gdn_proc_release(&p);
	return ret;
}

void gdn_agent_result_release(struct gdn_agent_result *res)
{
	if (!res)
		return;
	FREE_AND_NULL(res->last_message);
	gdn_proc_leftovers_release(&res->leftovers);
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
