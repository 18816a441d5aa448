/*
 * The loop journal: <log dir>/loop.jsonl, one JSON object per state
 * transition, appended with one write(2) on an O_APPEND descriptor and
 * fsync(2)ed, so that a crash or kill -9 leaves at most one torn last
 * line. gdn_journal_parse() rebuilds what --resume needs.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/journal.h"
#include "gdnctl/json.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

/* The failure kinds' names, as the journal and the summary write them. */
static const struct gdn_enum failure_enum[] = {
    {"agent", GDN_FAIL_AGENT, "the agent failed or timed out"},
    {"post_check", GDN_FAIL_POST_CHECK, "a post-check failed"},
    {"no_commit", GDN_FAIL_NO_COMMIT, "the iteration made no commit"},
    {"hook", GDN_FAIL_HOOK, "the validation gate or the performance policy failed"},
    {"iteration_error", GDN_FAIL_ITERATION_ERROR, "the iteration could not run"},
    {"history", GDN_FAIL_HISTORY, "the agent rewrote history or moved the loop branch"},
    GDN_ENUM_END,
};

const char *gdn_loop_failure_name(enum gdn_loop_failure f)
{
	return gdn_enum_name(failure_enum, (int)f);
}

/* Count a journaled "failure" name (an unknown one is ignored). */
static void count_failure(struct gdn_loop_state *st, const char *kind)
{
	int k;

	if (kind && !gdn_enum_parse(failure_enum, kind, &k))
		st->fail_kinds[k]++;
}

int gdn_journal_open(struct gdn_journal *j, const char *log_dir, const char *run_id,
		     struct gdn_err *err)
{
	j->path = xstrfmt("%s/loop.jsonl", log_dir);
	j->run_id = xstrdup(run_id);
	/* readable too: a journal whose directory vanished is copied from it (reopen()) */
	j->fd = open(j->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (j->fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open journal '%s'", j->path);
	return 0;
}

/*
 * The journal file is gone (an agent's `rm -rf`, a `git clean -fdx` of a
 * log dir inside the tree) or replaced: make its directory again and put
 * a file with everything ours held (still readable through our
 * descriptor) at its path, atomically (a rename), so that the next line
 * lands where --resume looks.
 */
static int reopen(struct gdn_journal *j, struct gdn_err *err)
{
	char buf[65536], *tmp = xstrfmt("%s.%ld.tmp", j->path, (long)getpid());
	off_t off = 0;
	int fd = -1, ret = 0;

	if (gdn_mkdir_parents(j->path, 0755, err)) {
		ret = gdn_err_prefix(err, "cannot recreate the journal's directory");
		goto out;
	}
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot recreate journal '%s'", j->path);
		goto out;
	}
	for (;;) {
		ssize_t n = pread(j->fd, buf, sizeof(buf), off), w;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		do {
			w = write(fd, buf, (size_t)n);
		} while (w < 0 && errno == EINTR);
		if (w != n) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot recreate journal '%s'", j->path);
			goto out;
		}
		off += n;
	}
	if (rename(tmp, j->path)) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot recreate journal '%s'", j->path);
		goto out;
	}
	close(j->fd);
	j->fd = fd;
	fd = -1;
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return ret;
}

/* Whether the journal's path still names the file we write to. */
static bool still_there(const struct gdn_journal *j)
{
	struct stat a, b;

	if (stat(j->path, &a))
		return errno != ENOENT && errno != ENOTDIR;
	return fstat(j->fd, &b) || (a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static void utc_now(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long)(ts.tv_nsec / 1000000L) % 1000);
}

int gdn_journal_write(struct gdn_journal *j, const char *event, json_t *ev, struct gdn_err *err)
{
	json_t *line = json_object();
	char ts[80], *text = NULL;
	const char *key;
	json_t *val;
	size_t len;
	ssize_t n;
	int ret = 0;

	utc_now(ts, sizeof(ts));
	json_object_set_new(line, "ts", json_string(ts));
	json_object_set_new(line, "run", json_string(j->run_id));
	json_object_set_new(line, "event", json_string(event));
	if (ev)
		json_object_foreach(ev, key, val) json_object_set(line, key, val);
	text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	if (!text) {
		ret = gdn_err_set(err, GDN_EIO, "cannot encode journal event '%s'", event);
		goto out;
	}
	len = strlen(text);
	text[len++] = '\n'; /* replaces the NUL; written with its length */
	if (!still_there(j)) {
		ret = reopen(j, err);
		if (ret)
			goto out;
	}
	do {
		n = write(j->fd, text, len);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot write journal '%s'", j->path);
		goto out;
	}
	if (fsync(j->fd) && errno != EINVAL) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot sync journal '%s'", j->path);
		goto out;
	}
out:
	free(text);
	json_decref(line);
	json_decref(ev);
	return ret;
}

void gdn_journal_close(struct gdn_journal *j)
{
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	FREE_AND_NULL(j->path);
	FREE_AND_NULL(j->run_id);
}

void gdn_loop_state_release(struct gdn_loop_state *st)
{
	free(st->run_id);
	free(st->end_reason);
	free(st->open_head);
	free(st->stash_msg);
	free(st->stash_sha);
	free(st->leftover_msg);
	free(st->leftover_sha);
	free(st->worktree);
	free(st->loop_branch);
	free(st->champion);
	free(st->preflight);
	free(st->agent_mark);
	json_decref(st->options);
	strvec_clear(&st->kept);
	strvec_clear(&st->open_marks);
	free(st->decided);
	for (int k = 0; k <= GDN_LOOP_SLOTS_MAX; k++)
		free(st->worker_tree[k]);
	memset(st, 0, sizeof(*st));
	strvec_init(&st->kept);
	strvec_init(&st->open_marks);
}

/* Iteration numbers a journal may mark decided (an untrusted file: bounded). */
#define DECIDED_MAX (1L << 20)

bool gdn_loop_state_decided(const struct gdn_loop_state *st, long it)
{
	return it > 0 && (size_t)it < st->decided_nr && st->decided[it];
}

static void mark_decided(struct gdn_loop_state *st, long it)
{
	if (it <= 0 || it >= DECIDED_MAX)
		return;
	if ((size_t)it >= st->decided_nr) {
		size_t n = st->decided_nr ? st->decided_nr : 64;

		while (n <= (size_t)it)
			n *= 2;
		st->decided = xrealloc(st->decided, n);
		memset(st->decided + st->decided_nr, 0, n - st->decided_nr);
		st->decided_nr = n;
	}
	st->decided[it] = 1;
}

/* Forget the running agent mark of iteration `it` (workers). */
static void drop_mark(struct gdn_loop_state *st, long it)
{
	char *prefix = xstrfmt("%ld ", it);

	for (size_t i = 0; i < st->open_marks.nr;) {
		if (!strncmp(st->open_marks.v[i], prefix, strlen(prefix)))
			strvec_remove(&st->open_marks, i);
		else
			i++;
	}
	free(prefix);
}

static const char *str_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/*
 * The integer at key (0 when absent or not an integer), clamped to
 * +-2^62: the journal is untrusted input, and the loop goes on counting
 * from what it says (last iteration + 1, failures + 1, sums).
 */
#define JOURNAL_INT_MAX ((json_int_t)1 << 62)
static long long int_of(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > JOURNAL_INT_MAX ? JOURNAL_INT_MAX : v < -JOURNAL_INT_MAX ? -JOURNAL_INT_MAX : v;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

static void forget_stash(struct gdn_loop_state *st)
{
	FREE_AND_NULL(st->stash_msg);
	FREE_AND_NULL(st->stash_sha);
	st->stash_restoring = false;
	st->stash_iter = 0;
}

/* Start a new run's state. */
static void new_run(struct gdn_loop_state *st, json_t *o)
{
	gdn_loop_state_release(st);
	set_str(&st->run_id, str_of(o, "run"));
	st->iterations = (long)int_of(o, "iterations");
	st->workers = (long)int_of(o, "workers");
	set_str(&st->worktree, str_of(o, "worktree"));
	set_str(&st->loop_branch, str_of(o, "loop_branch"));
	set_str(&st->champion, str_of(o, "champion"));
	if (json_is_object(json_object_get(o, "options")))
		st->options = json_deep_copy(json_object_get(o, "options"));
}

static void on_iteration_start(struct gdn_loop_state *st, json_t *o, long it)
{
	if (int_of(o, "worker") > 0 && int_of(o, "worker") <= GDN_LOOP_SLOTS_MAX)
		st->worker_open[int_of(o, "worker")] = it;
	st->open_iter = it;
	set_str(&st->open_head, str_of(o, "head"));
	st->open_agent = false;
	st->agent_pgid = 0;
	st->open_decided = false;
	st->open_restored = false;
}

static void on_agent_start(struct gdn_loop_state *st, json_t *o, long it)
{
	if (it == st->open_iter)
		st->open_agent = true;
	set_str(&st->agent_mark, str_of(o, "mark"));
	if (str_of(o, "mark")) {
		drop_mark(st, it);
		strvec_pushf(&st->open_marks, "%ld %s", it, str_of(o, "mark"));
	}
}

static void on_usage(struct gdn_loop_state *st, json_t *o)
{
	const json_t *c = json_object_get(o, "cost_usd");
	struct gdn_agent_usage u = {int_of(o, "input_tokens"), int_of(o, "output_tokens"),
				    json_is_number(c) ? json_number_value(c) : -1, -1};
	long long rest = int_of(o, "tokens") - (u.input_tokens > 0 ? u.input_tokens : 0) -
			 (u.output_tokens > 0 ? u.output_tokens : 0);

	u.tokens = rest > 0 ? rest : -1; /* a total without the split */

	gdn_agent_usage_add(&st->usage, &u);
	st->usage_iterations++;
}

static void on_decision(struct gdn_loop_state *st, json_t *o, long it)
{
	if (it == st->open_iter)
		st->open_decided = true;
	if (it > st->last_done)
		st->last_done = it;
	mark_decided(st, it);
	for (int k = 1; k <= GDN_LOOP_SLOTS_MAX; k++)
		if (st->worker_open[k] == it)
			st->worker_open[k] = 0;
	st->iterations_run++;
	st->commits = (long)gdn_add_sat_i64(st->commits, int_of(o, "commits"));
	st->failures = (long)int_of(o, "failures");
	st->consecutive = (long)int_of(o, "consecutive");
	count_failure(st, str_of(o, "failure"));
	if (str_of(o, "champion"))
		set_str(&st->champion, str_of(o, "champion"));
}

static void on_stash_kept(struct gdn_loop_state *st, json_t *o)
{
	if (str_of(o, "sha"))
		strvec_pushf(&st->kept, "%s %s", str_of(o, "sha"),
			     str_of(o, "message") ? str_of(o, "message") : "");
	if (st->stash_sha && str_of(o, "sha") && !strcmp(st->stash_sha, str_of(o, "sha")))
		forget_stash(st);
	if (st->leftover_msg && str_of(o, "message") &&
	    !strcmp(st->leftover_msg, str_of(o, "message"))) {
		FREE_AND_NULL(st->leftover_msg);
		FREE_AND_NULL(st->leftover_sha);
	}
}

/* The stash_* events: the user's stash, or an interrupted agent's leftovers. */
static void on_stash(struct gdn_loop_state *st, enum gdn_event ev, json_t *o, long it)
{
	if (str_of(o, "kind") && !strcmp(str_of(o, "kind"), "leftovers")) {
		/* an interrupted agent's work: reported kept, never restored */
		if (ev == GDN_EV_STASH_SAVING || ev == GDN_EV_STASH_SAVED) {
			set_str(&st->leftover_msg, str_of(o, "message"));
			set_str(&st->leftover_sha, str_of(o, "sha"));
		}
		return;
	}
	switch (ev) {
	case GDN_EV_STASH_SAVING:
		forget_stash(st);
		set_str(&st->stash_msg, str_of(o, "message"));
		st->stash_iter = it;
		break;
	case GDN_EV_STASH_SAVED:
		set_str(&st->stash_msg, str_of(o, "message"));
		set_str(&st->stash_sha, str_of(o, "sha"));
		st->stash_iter = it;
		break;
	case GDN_EV_STASH_RESTORING:
		st->stash_restoring = true;
		break;
	case GDN_EV_STASH_RESTORED:
		if (it == st->open_iter)
			st->open_restored = true;
		forget_stash(st);
		break;
	case GDN_EV_STASH_KEPT:
		on_stash_kept(st, o);
		break;
	default:
		break;
	}
}

static void on_worktree_add(struct gdn_loop_state *st, json_t *o)
{
	if (int_of(o, "worker") <= 0)
		set_str(&st->worktree, str_of(o, "path"));
	else if (int_of(o, "worker") <= GDN_LOOP_SLOTS_MAX && str_of(o, "path"))
		set_str(&st->worker_tree[int_of(o, "worker")], str_of(o, "path"));
}

/* Options a resume changed: the run's from then on. */
static void on_resume_override(struct gdn_loop_state *st, json_t *o)
{
	if (json_is_object(json_object_get(o, "options"))) {
		if (!st->options)
			st->options = json_object();
		json_object_update(st->options, json_object_get(o, "options"));
	}
}

static void apply_event(struct gdn_loop_state *st, const char *name, json_t *o)
{
	enum gdn_event ev = gdn_journal_event(name);
	long it = (long)int_of(o, "iteration");

	if (ev == GDN_EV_RUN_START) {
		new_run(st, o);
		return;
	}
	if (!st->run_id || strcmp(st->run_id, str_of(o, "run") ? str_of(o, "run") : ""))
		return; /* an event of no run, or of an older run interleaved */
	switch (ev) {
	case GDN_EV_RUN_RESUME:
		st->ended = false;
		FREE_AND_NULL(st->end_reason);
		if (int_of(o, "iterations") > 0)
			st->iterations = (long)int_of(o, "iterations");
		break;
	case GDN_EV_ITERATION_START:
		on_iteration_start(st, o, it);
		break;
	case GDN_EV_AGENT_START:
		on_agent_start(st, o, it);
		break;
	case GDN_EV_AGENT_PID:
		if (it == st->open_iter) {
			long long pg = int_of(o, "pgid");

			st->agent_pgid =
			    pg > 0 && pg <= INT_MAX ? (long)pg : 0; /* a pid_t, or none */
			st->agent_started = int_of(o, "started");
		}
		break;
	case GDN_EV_AGENT_END:
		st->agent_pgid = 0;
		FREE_AND_NULL(st->agent_mark);
		drop_mark(st, it);
		st->agent_ms = gdn_add_sat_i64(st->agent_ms, int_of(o, "duration_ms"));
		break;
	case GDN_EV_USAGE:
		on_usage(st, o);
		break;
	case GDN_EV_DECISION:
		on_decision(st, o, it);
		break;
	case GDN_EV_FAILURE:
		st->failures = (long)int_of(o, "failures");
		st->consecutive = (long)int_of(o, "consecutive");
		count_failure(st, str_of(o, "failure"));
		break;
	case GDN_EV_ITERATION_END:
		if (it == st->open_iter) {
			st->open_iter = 0;
			FREE_AND_NULL(st->open_head);
		}
		break;
	case GDN_EV_STASH_FORGOTTEN:
	case GDN_EV_STASH_KEPT:
	case GDN_EV_STASH_RESTORED:
	case GDN_EV_STASH_RESTORING:
	case GDN_EV_STASH_SAVED:
	case GDN_EV_STASH_SAVING:
		on_stash(st, ev, o, it);
		break;
	case GDN_EV_PROMOTE:
		set_str(&st->champion, str_of(o, "champion"));
		break;
	case GDN_EV_PREFLIGHT_WORKTREE:
		set_str(&st->preflight, str_of(o, "path"));
		break;
	case GDN_EV_WORKTREE_ADD:
		on_worktree_add(st, o);
		break;
	case GDN_EV_RESUME_OVERRIDE:
		on_resume_override(st, o);
		break;
	case GDN_EV_RUN_END:
		st->ended = true;
		set_str(&st->end_reason, str_of(o, "reason"));
		break;
	default:
		break;
	}
}

int gdn_journal_each(const char *buf, size_t len, const char *name, gdn_journal_event_fn fn,
		     void *payload, bool *torn, struct gdn_err *err)
{
	size_t pos = 0, lineno = 0;

	if (torn)
		*torn = false;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		json_error_t jerr;
		json_t *o;
		const char *ev;

		lineno++;
		if (!nl) {
			if (torn)
				*torn = true; /* the write did not finish */
			break;
		}
		if (nl == buf + pos) {
			pos++;
			continue;
		}
		o = json_loadb(buf + pos, (size_t)(nl - (buf + pos)), JSON_REJECT_DUPLICATES,
			       &jerr);
		pos = (size_t)(nl - buf) + 1;
		if (!o || !json_is_object(o) || !(ev = str_of(o, "event"))) {
			json_decref(o);
			return gdn_err_set(err, GDN_EPARSE, "journal %s%s%sline %zu: %s",
					   name ? "'" : "", name ? name : "", name ? "' " : "",
					   lineno, o ? "not an event object" : jerr.text);
		}
		fn(ev, o, payload);
		json_decref(o);
	}
	return 0;
}

static void apply_event_cb(const char *event, json_t *ev, void *payload)
{
	apply_event(payload, event, ev);
}

int gdn_journal_parse(const char *buf, size_t len, struct gdn_loop_state *st, struct gdn_err *err)
{
	return gdn_journal_each(buf, len, NULL, apply_event_cb, st, NULL, err);
}

json_t *gdn_journal_ids(const struct strvec *ids)
{
	json_t *a = json_array();

	for (size_t i = 0; i < ids->nr; i++)
		json_array_append_new(a, json_string(ids->v[i]));
	return a;
}

json_t *gdn_journal_iteration(long it)
{
	json_t *o = json_object();

	json_object_set_new(o, "iteration", json_integer(it));
	return o;
}

json_t *gdn_journal_leftovers(long it, long attempt, const struct gdn_proc_leftovers *l)
{
	json_t *o = gdn_journal_iteration(it), *procs = json_array();

	json_object_set_new(o, "attempt", json_integer(attempt));
	for (size_t i = 0; l && i < l->nr; i++)
		json_array_append_new(procs,
				      json_pack("{sIso}", "pid", (json_int_t)l->v[i].pid, "argv0",
						gdn_json_string_lossy(l->v[i].argv0)));
	json_object_set_new(o, "processes", procs);
	return o;
}
