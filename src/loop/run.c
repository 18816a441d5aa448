/*
 * The top of the loop's stack (docs/loop-map.md): a run started or
 * resumed, its scheduler picked (serial, or parallel with --workers N > 1)
 * and run, then ended. Below it, the schedulers compose the steps; the
 * steps never call a scheduler.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"
#include "workers.h"

/* --workers N > 1: the parallel scheduler. */
static bool parallel(const struct run *r)
{
	return r->o->workers > 1;
}

static char *new_run_id(void)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	return xstrfmt("%04d%02d%02dT%02d%02d%02dZ-%ld", tm.tm_year + 1900, tm.tm_mon + 1,
		       tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)getpid());
}

/* Keep the log directory's files out of `git status` when it lies inside the tree. */
static void ignore_log_dir(const char *log_dir)
{
	char *path = xstrfmt("%s/.gitignore", log_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd >= 0) {
		if (write(fd, "*\n", 2) != 2) {
			/* best effort */
		}
		close(fd);
	}
	free(path);
}

/* run_start: the run's plan, where it works and, with isolation, its branch and champion. */
static json_t *run_start_event(struct ictx *x)
{
	struct run *r = x->r;
	const struct gdn_loop_opts *o = x->o;
	json_t *ev =
	    json_pack("{sIssss}", "iterations", (json_int_t)r->total, "workdir",
		      o->user_workdir ? o->user_workdir : o->workdir, "log_dir", o->log_dir);

	struct gdn_err ignored = GDN_ERR_INIT;
	char *head = NULL, *branch = NULL;

	if (loop_isolated(x)) {
		head = xstrdup(r->champion);
		branch = xstrdup(r->branch);
	} else {
		gdn_repo_head_at(o->workdir, &head, &branch, &ignored);
	}
	json_object_set_new(ev, "head", head ? json_string(head) : json_null());
	json_object_set_new(ev, "branch", branch ? json_string(branch) : json_null());
	free(head);
	free(branch);
	json_object_set_new(ev, "max_failures", json_integer(o->max_failures));
	json_object_set_new(ev, "stop_after_failures", json_integer(o->stop_after_failures));
	json_object_set_new(ev, "isolation",
			    json_string(gdn_enum_name(gdn_isolation_enum, (int)o->isolation)));
	if (loop_isolated(x)) {
		json_object_set_new(ev, "worktree", json_string(o->workdir));
		json_object_set_new(ev, "loop_branch", json_string(r->branch));
		json_object_set_new(ev, "champion", json_string(r->champion));
	}
	if (parallel(r))
		json_object_set_new(ev, "workers", json_integer(o->workers));
	if (parallel(r) && o->targets) {
		json_object_set_new(ev, "agents", json_integer(o->agents));
		json_object_set_new(ev, "targets", json_integer(o->targets));
	}
	if (o->options)
		json_object_set(ev, "options", o->options);
	if (o->plan)
		json_object_set(ev, "plan", o->plan);
	return ev;
}

/*
 * The run's repository handle, for the engine and its stash operations.
 * A one-worker run answers "did the agent leave the tree dirty?" from a
 * change feed (gdn_repo_watch; GDNCTL_FSWATCH=0 turns it off); parallel
 * workers fork, and a feed's queue is not to be shared.
 */
static int open_repo(struct ictx *x, struct gdn_err *err)
{
	const char *feed = getenv("GDNCTL_FSWATCH");
	int ret = gdn_repo_open(x->o->workdir, &x->repo, err);

	x->stash.repo = x->repo;
	if (!ret && !parallel(x->r) && !(feed && !strcmp(feed, "0")))
		gdn_repo_watch(x->repo);
	return ret;
}

/* The resumed run's counters and the stashes it kept (still in the stash list). */
static void resume_counts(struct ictx *x, struct gdn_repo *repo, struct gdn_loop_state *st)
{
	struct run *r = x->r;
	struct gdn_err ignored = GDN_ERR_INIT;

	r->failures = st->failures;
	r->consecutive = st->consecutive;
	r->sum->commits = st->commits;
	r->sum->iterations_run = st->iterations_run;
	r->sum->agent_ms = st->agent_ms;
	r->sum->usage = st->usage;
	r->sum->usage_iterations = st->usage_iterations;
	memcpy(r->sum->fail_kinds, st->fail_kinds, sizeof(r->sum->fail_kinds));
	for (size_t i = 0; i < st->kept.nr; i++) {
		long index = -1;
		char *sha = xstrndup(st->kept.v[i], strcspn(st->kept.v[i], " "));

		if (!gdn_repo_stash_find(repo, sha, NULL, &index, NULL, &ignored) && index >= 0 &&
		    !strvec_contains(&r->sum->stashes_kept, st->kept.v[i]))
			strvec_push(&r->sum->stashes_kept, st->kept.v[i]);
		free(sha);
	}
	r->first = st->last_done + 1;
}

/*
 * --resume: the last run's state from the journal, the champion (worktree),
 * the scheduler's trees, the counters, then the recovery of what the
 * interrupted iteration left.
 */
static int resume(struct ictx *x, struct pool **pool, struct gdn_loop_state *st,
		  struct gdn_err *err)
{
	struct run *r = x->r;
	int ret = loop_load_state(r, st, err);

	if (ret)
		return ret;
	free(r->sum->run_id);
	r->sum->run_id = xstrdup(st->run_id);
	free(r->j.run_id);
	r->j.run_id = xstrdup(st->run_id);
	x->stash.pin_run = r->sum->run_id;
	if (r->total <= 0)
		r->total = st->iterations;
	if (st->workers > 1 && !parallel(r)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "run %s was started with --workers %ld: resume it with --workers",
				  st->run_id, st->workers);
	} else if (loop_isolated(x) && (!st->worktree || !st->loop_branch)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "run %s was started with --isolation in-place: resume it with "
				  "--isolation in-place",
				  st->run_id);
	} else if (loop_isolated(x)) {
		loop_clear_stale_ref_locks(x, st->run_id, st->loop_branch);
		ret = loop_recover_champion(x, st, err);
	} else if (st->worktree) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "run %s was started with --isolation worktree: resume it with "
				  "--isolation worktree",
				  st->run_id);
	}
	if (!ret && parallel(r)) {
		/* a one-worker run's agent worktree, when it goes on with workers */
		if (!access(r->o->workdir, F_OK))
			loop_retire_worktree(x, st->open_iter ? st->open_iter : st->last_done + 1);
		ret = loop_parallel_resume(x, pool, st, err);
	} else if (!ret && loop_isolated(x)) {
		ret = loop_recover_worktree(x, st, err);
	}
	if (!ret && !parallel(r))
		ret = open_repo(x, err);
	if (ret)
		return ret;
	resume_counts(x, parallel(r) ? loop_parallel_repo(*pool) : x->repo, st);
	loop_say(x, GDN_LOOP_INFO, "resuming run %s after iteration %ld of %ld", st->run_id,
		 st->last_done, r->total);
	loop_journal(x, "run_resume",
		     json_pack("{sIsIsIsI}", "iterations", (json_int_t)r->total, "after",
			       (json_int_t)st->last_done, "max_failures",
			       (json_int_t)r->o->max_failures, "stop_after_failures",
			       (json_int_t)r->o->stop_after_failures));
	return parallel(r) ? 0 : loop_recover(x, st, err);
}

/*
 * The run's baseline (the `start` hook) on the starting commit. Returns
 * 0 (*exit: -1 to go on, or the exit code it ends the run with) or an
 * error.
 */
static int baseline(struct ictx *x, const char *head, int *exit, struct gdn_err *err)
{
	struct run *r = x->r;
	struct gdn_loop_iter gi = {0, head, head, 0, loop_hook_report, loop_hook_journal, x};
	int rc;

	if (!r->hooks || !r->hooks->start || !head || r->total < 1)
		return 0;
	rc = r->hooks->start(r->hooks->payload, &gi, err);
	if (rc && gdn_proc_interrupted()) {
		/* Ctrl-C during the baseline: the run stops as interrupted */
		loop_journal(x, "interrupted",
			     json_pack("{sIsi}", "iteration", (json_int_t)0, "signal",
				       gdn_proc_interrupted()));
		gdn_err_clear(err);
		*exit = 128 + gdn_proc_interrupted();
		r->sum->stop_reason = xstrdup("interrupted");
	} else if (rc < 0) {
		return rc;
	} else if (rc > 0) {
		loop_say(x, GDN_LOOP_NOTE, "%s", err->msg);
		*exit = gdn_loop_exit_code(GDN_FAIL_HOOK, rc, r->o->original_exit_codes);
		r->sum->stop_reason = xstrdup("start");
	}
	return 0;
}

/* A new run: the champion (worktree), run_start, the scheduler's trees, the baseline. */
static int start(struct ictx *x, struct pool **pool, int *exit, struct gdn_err *err)
{
	struct run *r = x->r;
	char *head = NULL;
	int ret = 0;

	if (loop_isolated(x))
		ret = loop_champion_begin(x, err);
	if (ret)
		return ret;
	loop_journal(x, "run_start", run_start_event(x));
	if (parallel(r))
		ret = loop_parallel_begin(x, pool, err);
	else if (loop_isolated(x))
		ret = loop_worktree_add(x, err);
	if (!ret && !parallel(r))
		ret = open_repo(x, err);
	if (!ret)
		ret = gdn_repo_head(parallel(r) ? loop_parallel_repo(*pool) : x->repo, &head, NULL,
				    err);
	if (!ret)
		ret = baseline(x, head, exit, err);
	free(head);
	return ret;
}

/* Check the options the engine cannot run with. */
static int check_opts(const struct gdn_loop_opts *o, struct gdn_err *err)
{
	long n = o->agents ? o->agents : o->workers; /* --workers N (with --targets: N + M trees) */

	if (o->workers <= 1)
		return 0;
	if (n > GDN_LOOP_WORKERS_MAX)
		return gdn_err_set(err, GDN_EUSAGE, "--workers %ld: at most %d", n,
				   GDN_LOOP_WORKERS_MAX);
	if (o->isolation != GDN_ISOLATION_WORKTREE)
		return gdn_err_set(err, GDN_EUSAGE, "--workers %ld needs --isolation worktree", n);
	if (o->sync_policy != GDN_SYNC_OFF)
		return gdn_err_set(err, GDN_EUSAGE,
				   "--workers %ld does not go with a --sync-main-policy yet", n);
	return 0;
}

/* The scheduler's trees retired (worktree): their work kept under refs. */
static void retire(struct ictx *x, struct pool *pool)
{
	if (parallel(x->r))
		loop_parallel_end(pool);
	else if (loop_isolated(x))
		loop_retire_worktree(x, x->r->sum->iterations_run + 1);
}

int gdn_loop_run(const struct gdn_loop_opts *o, const struct gdn_loop_agent *agent,
		 const struct gdn_loop_hooks *hooks, struct gdn_loop_summary *sum,
		 struct gdn_err *err)
{
	struct run r = {.o = o, .agent = agent, .hooks = hooks, .sum = sum, .j = GDN_JOURNAL_INIT};
	struct ictx x = {0};
	struct pool *pool = NULL;
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	int ret = check_opts(o, err), exit = -1;
	bool retired = false;

	if (ret)
		return ret;
	ignore_log_dir(o->log_dir);
	sum->run_id = o->run_id ? xstrdup(o->run_id) : new_run_id();
	loop_ictx_init(&x, &r, o);
	r.ugit = x.wgit;
	r.ugit.workdir = o->user_workdir ? o->user_workdir : o->workdir;
	ret = gdn_journal_open(&r.j, o->log_dir, sum->run_id, err);
	if (ret)
		goto out;
	sum->journal = xstrdup(r.j.path);
	r.total = o->iterations;
	r.first = 1;
	ret = o->resume ? resume(&x, &pool, &st, err) : start(&x, &pool, &exit, err);
	if (ret)
		goto out;
	if (exit < 0)
		exit = parallel(&r) ? loop_run_parallel(pool) : loop_run_serial(&x);
	if (exit < 0) {
		exit = 0;
		free(sum->stop_reason);
		sum->stop_reason = xstrdup("completed");
	}
	sum->exit_code = exit;
	sum->failures = r.failures;
	retire(&x, pool);
	retired = true;
	loop_journal(&x, "run_end",
		     json_pack("{sssi}", "reason", sum->stop_reason, "exit_code", exit));
out:
	if (x.stash.sha) {
		struct gdn_err ignored = GDN_ERR_INIT;

		gdn_stash_restore(&x.stash, &ignored);
	}
	if (loop_isolated(&x) && r.champion) {
		if (!retired) /* a run that failed on the way */
			retire(&x, pool);
		sum->champion = xstrdup(r.champion);
		sum->champion_ref = xstrdup(r.champion_ref);
	}
	loop_parallel_free(pool);
	free(r.branch);
	free(r.champion);
	free(r.btip);
	free(r.champion_ref);
	free(r.hour);
	gdn_stash_forget(&x.stash);
	loop_ictx_release(&x);
	gdn_loop_state_release(&st);
	gdn_journal_close(&r.j);
	return ret;
}
