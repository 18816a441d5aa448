/*
 * What a crashed (kill -9) run left running: its agent's process group,
 * what that agent started outside its group, git commands still at work
 * in a tree, and the stale locks a killed git left.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"

/*
 * What a crashed run's agent left running outside its group (setsid
 * children, re-parented to init): found by the attempt's journaled mark.
 */
static void stop_marked(struct ictx *x, const struct gdn_loop_state *st)
{
	struct gdn_proc_leftovers killed = GDN_PROC_LEFTOVERS_INIT;

	if (!st->agent_mark)
		return;
	gdn_proc_stop_leftovers(0, st->agent_mark, -1, 2000, &killed);
	if (killed.nr) {
		loop_say(
		    x, GDN_LOOP_WARN,
		    "stopped %zu process(es) the agent of interrupted iteration %ld left running",
		    killed.nr, st->open_iter);
		loop_journal(x, "agent_leftovers",
			     gdn_journal_leftovers(st->open_iter, 0, &killed));
	}
	gdn_proc_leftovers_release(&killed);
}

/*
 * The agent of an iteration whose gdnctl was killed (kill -9) keeps
 * running in its own process group and would go on editing the tree the
 * resumed run works in. Stop it: SIGINT, SIGTERM, SIGKILL to its group,
 * but only when its leader is still the process that was journaled (same
 * pid and start time), never a stranger that reused the number.
 */
void loop_stop_orphan_agent(struct ictx *x, const struct gdn_loop_state *st)
{
	pid_t pg = (pid_t)st->agent_pgid;

	if (!st->open_iter)
		return;
	if (pg > 1 && st->agent_started >= 0 && gdn_proc_started(pg) == st->agent_started) {
		loop_say(
		    x, GDN_LOOP_WARN,
		    "the agent of interrupted iteration %ld is still running (process group %ld); "
		    "stopping it",
		    st->open_iter, (long)pg);
		gdn_proc_stop_group(pg, st->agent_started, 2000);
		loop_journal(x, "orphan_agent_stopped",
			     json_pack("{sIsI}", "iteration", (json_int_t)st->open_iter, "pgid",
				       (json_int_t)pg));
	}
	stop_marked(x, st);
}

/* Wait (at most 10 s) until no git (nor a gdnctl between fork and exec) runs in `dir`. */
static void wait_for_git_in(const char *dir, const char *prefix)
{
	static const char *const names[] = {"git", "gdnctl", NULL};
	int64_t deadline = gdn_now_ms() + 10000;

	while (gdn_proc_running_in(names, dir, prefix) && gdn_now_ms() < deadline)
		gdn_sleep_interruptible(20);
}

/*
 * git commands started by the crashed gdnctl run in their own process
 * groups and survive it: wait (at most 10 s) until none runs in the tree
 * (nor in a stash preflight).
 */
void loop_wait_for_git(struct ictx *x)
{
	wait_for_git_in(x->o->workdir, gdn_stash_preflight_prefix());
}

/*
 * Each of `locks` (paths under `gitdir`) that is there once no git runs
 * in `dir` (waited for at most 10 s) is stale: removed, and said.
 */
static void clear_locks(struct ictx *x, const char *gitdir, const struct strvec *locks,
			const char *dir, const char *prefix)
{
	for (size_t i = 0; i < locks->nr; i++) {
		char *path = xstrfmt("%s%s", gitdir, locks->v[i]);

		if (!access(path, F_OK)) {
			wait_for_git_in(dir, prefix);
			if (!access(path, F_OK) && !unlink(path)) {
				loop_say(x, GDN_LOOP_WARN,
					 "removed stale '%s' left by a killed git process", path);
				loop_journal(x, "stale_lock", json_pack("{ss}", "path", path));
			}
		}
		free(path);
	}
}

/*
 * A git command killed with its agent's process group (or with a crashed
 * gdnctl) leaves index.lock or HEAD.lock behind, and every later git
 * command fails.
 */
void loop_clear_stale_locks(struct ictx *x)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec locks = STRVEC_INIT;
	char *branch = NULL;

	strvec_pushl(&locks, "index.lock", "HEAD.lock", "refs/stash.lock", NULL);
	if (!gdn_repo_head(x->repo, NULL, &branch, &err) && branch)
		strvec_pushf(&locks, "refs/heads/%s.lock", branch);
	clear_locks(x, gdn_repo_gitdir(x->repo), &locks, x->o->workdir,
		    gdn_stash_preflight_prefix());
	gdn_err_clear(&err);
	strvec_clear(&locks);
	free(branch);
}

void loop_clear_stale_ref_locks(struct ictx *x, const char *run_id, const char *branch)
{
	const char *dir = x->r->ugit.workdir;
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec locks = STRVEC_INIT;
	struct gdn_repo *user = NULL;

	if (gdn_repo_open(dir, &user, &err)) {
		gdn_err_clear(&err); /* the resume's own reads say what is wrong */
		return;
	}
	/* names read from the journal: never a path out of refs/ */
	if (!strchr(run_id, '/') && !strstr(run_id, "..")) {
		strvec_pushf(&locks, CHAMPION_REFS "%s.lock", run_id);
		strvec_pushf(&locks, TIP_REFS "%s.lock", run_id);
	}
	if (branch && !strstr(branch, ".."))
		strvec_pushf(&locks, "refs/heads/%s.lock", branch);
	clear_locks(x, gdn_repo_commondir(user), &locks, dir, NULL);
	strvec_clear(&locks);
	gdn_repo_free(user);
}

/*
 * --resume of a run with workers: git still at work in the crashed run's
 * worker trees waited for (at most 10 s), and what each open iteration's
 * agent left running (found by its journaled mark) stopped.
 */
void loop_stop_worker_orphans(struct ictx *x, const struct gdn_loop_state *st)
{
	static const char *const names[] = {"git", "gdnctl", NULL};
	struct gdn_proc_leftovers killed = GDN_PROC_LEFTOVERS_INIT;
	int64_t deadline = gdn_now_ms() + 10000;

	for (long k = 1; k <= GDN_LOOP_SLOTS_MAX; k++)
		while (st->worker_tree[k] && gdn_now_ms() < deadline &&
		       gdn_proc_running_in(names, st->worker_tree[k], NULL))
			gdn_sleep_interruptible(20);
	for (size_t i = 0; i < st->open_marks.nr; i++) {
		const char *mark = strchr(st->open_marks.v[i], ' ');
		long it = strtol(st->open_marks.v[i], NULL, 10);

		gdn_proc_stop_leftovers(0, mark ? mark + 1 : "", -1, 2000, &killed);
		if (killed.nr) {
			loop_say(
			    x, GDN_LOOP_WARN,
			    "stopped %zu process(es) the agent of interrupted iteration %ld left "
			    "running",
			    killed.nr, it);
			loop_journal(x, "agent_leftovers", gdn_journal_leftovers(it, 0, &killed));
		}
		gdn_proc_leftovers_release(&killed);
		killed = (struct gdn_proc_leftovers)GDN_PROC_LEFTOVERS_INIT;
	}
}
