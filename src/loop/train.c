/*
 * The train (--workers, docs/loop-workers.md): a candidate carried onto
 * the newest code before its validation, the tip of the train (the last
 * candidate to join it, refs/gdnctl/tip/<run>: a speculative pipeline of
 * any depth, joined one child at a time under a lock) or, with a
 * performance decision, the champion's; the running log's appended
 * entries merged on the way. Also whether children join the train, and
 * the tip put back when a candidate on it will not be promoted.
 */
#include "gdnctl/compat.h"
#include <limits.h>
#include <math.h>
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/lock.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"

#define TRAIN_LOCK_MS 120000 /* the longest a child waits for its turn to join the train */
#define TRAIN_TICK_MS 10
#define TRAIN_TRIES   8 /* compare-and-swap of the tip (the parent may put it back) */

/*
 * A cherry-pick of `sha` stopped: when the running log is the only file in
 * conflict and the commit only appended to it, the champion's log gets the
 * commit's new lines at its end and the pick goes on (*resolved).
 */
static int resolve_log(struct ictx *x, const struct train *t, const char *sha, bool *resolved,
		       struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT, ours = SBUF_INIT, prev = SBUF_INIT, mine = SBUF_INIT;
	char *parent = xstrfmt("%s^", sha), *path = NULL;
	bool f1 = false, f2 = false, f3 = false;
	int rc = 0, ret;

	*resolved = false;
	ret =
	    gdn_git_runl(&x->wgit, &rc, &out, err, "diff", "--name-only", "--diff-filter=U", NULL);
	sbuf_trim(&out);
	if (ret || rc || !t->log_rel || strcmp(out.buf, t->log_rel))
		goto out;
	ret = gdn_git_blob(&x->wgit, ":2", t->log_rel, &ours, &f1, err);
	if (!ret)
		ret = gdn_git_blob(&x->wgit, parent, t->log_rel, &prev, &f2, err);
	if (!ret)
		ret = gdn_git_blob(&x->wgit, sha, t->log_rel, &mine, &f3, err);
	if (ret || !f1 || !f3 || mine.len < prev.len || memcmp(mine.buf, prev.buf, prev.len))
		goto out;
	sbuf_add(&ours, mine.buf + prev.len, mine.len - prev.len);
	path = xstrfmt("%s/%s", x->o->workdir, t->log_rel);
	ret = gdn_write_file_atomic(path, ours.buf, ours.len, err);
	if (!ret)
		ret = gdn_git_runl(&x->wgit, &rc, &out, err, "add", "--", t->log_rel, NULL);
	if (!ret && !rc)
		ret = gdn_git_runl(&x->wgit, &rc, &out, err, "-c", "core.editor=true",
				   "cherry-pick", "--continue", NULL);
	*resolved = !ret && !rc;
out:
	(void)f2;
	free(parent);
	free(path);
	sbuf_release(&out);
	sbuf_release(&ours);
	sbuf_release(&prev);
	sbuf_release(&mine);
	return ret;
}

/*
 * The commits from..to picked onto the worktree's HEAD one at a time, the
 * running log's entries appended after the champion's. Returns 0 (*why
 * empty: carried; else why not, the worktree back at HEAD) or an error.
 */
static int carry_commits(struct ictx *x, const struct train *t, const char *from, const char *to,
			 struct sbuf *why, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	struct strvec shas = STRVEC_INIT;
	char *range = xstrfmt("%s..%s", from, to);
	int rc = 0,
	    ret = gdn_git_runl(&x->wgit, &rc, &out, err, "rev-list", "--reverse", range, NULL);

	if (!ret && rc)
		ret = gdn_err_set(err, GDN_EFAILED, "cannot list %s", range);
	if (!ret)
		strvec_split(&shas, out.buf, '\n');
	for (size_t i = 0; !ret && !why->len && i < shas.nr; i++) {
		bool resolved = false;

		ret = gdn_git_runl(&x->wgit, &rc, &out, err, "cherry-pick", shas.v[i], NULL);
		if (ret || !rc)
			continue;
		ret = resolve_log(x, t, shas.v[i], &resolved, err);
		if (ret || resolved)
			continue;
		if (strstr(out.buf, "CONFLICT"))
			sbuf_add(why, strstr(out.buf, "CONFLICT"),
				 strcspn(strstr(out.buf, "CONFLICT"), "\n"));
		else if (strstr(out.buf, "empty"))
			sbuf_addf(why, "its commit %.12s changes nothing on it", shas.v[i]);
		else
			sbuf_add(why, out.buf, strcspn(out.buf, "\n"));
		if (!why->len)
			sbuf_adds(why, "git cherry-pick failed");
		gdn_git_runl(&x->wgit, &rc, NULL, err, "cherry-pick", "--abort", NULL);
		gdn_err_clear(err);
	}
	free(range);
	strvec_clear(&shas);
	sbuf_release(&out);
	return ret;
}

/* In a worker's child: the shared state as the parent last saved it. */
int loop_fork_state(struct ictx *x, struct gdn_err *err)
{
	const struct gdn_loop_hooks *h = x->r->hooks;

	if (!h || !h->worker_state)
		return 0;
	return h->worker_state(h->payload, x->tag, GDN_WORKER_FORK, false, err);
}

/*
 * The commits base..cand picked onto `onto` in memory, oldest first (no
 * git process, no worktree: what the train's lock holds is short): *head
 * (the caller's) is the last one, or NULL when one does not apply cleanly,
 * or there are too many (the worktree's cherry-pick then merges the running
 * log, or says why not).
 */
static void carry_in_memory(struct ictx *x, const char *onto, const char *base, const char *cand,
			    char **head)
{
	struct strvec ids = STRVEC_INIT;
	struct gdn_err ignored = GDN_ERR_INIT;
	char *cur = xstrdup(onto);
	long n = 0;

	*head = NULL;
	if (!x->repo ||
	    gdn_repo_count_commits(x->repo, base, cand, &n, &ids, MAX_IDS_JOURNALED, &ignored) ||
	    n != (long)ids.nr)
		goto out;
	for (size_t i = ids.nr; cur && i-- > 0;) {
		char *next = NULL;

		if (gdn_repo_cherry_pick(x->repo, cur, ids.v[i], &next, &ignored))
			FREE_AND_NULL(next);
		free(cur);
		cur = next;
	}
	*head = cur;
	cur = NULL;
out:
	gdn_err_clear(&ignored);
	free(cur);
	strvec_clear(&ids);
}

/*
 * Carry the candidate (base..cand) onto `onto`: in memory (*checkout: the
 * worktree is still to be put at c->head_after), else in the worktree. c
 * then names the carried commits, journaled as `rebase`; or, when they do
 * not apply (*why says why), the worktree is back at the candidate.
 */
static int carry(struct ictx *x, const struct train *t, struct iter *c, const char *onto,
		 bool on_tip, const char *base, const char *cand, struct sbuf *why, bool *checkout,
		 struct gdn_err *err)
{
	char *head = NULL;
	json_t *ev;
	int ret = 0;

	carry_in_memory(x, onto, base, cand, &head);
	*checkout = head != NULL;
	if (!head) {
		ret = gdn_git_reset_clean(&x->wgit, onto, err);
		if (!ret)
			ret = carry_commits(x, t, base, cand, why, err);
		if (!ret && why->len) /* as it was: the candidate, on its own base */
			ret = gdn_git_reset_clean(&x->wgit, cand, err);
		if (ret || why->len)
			return ret;
		ret = gdn_git_rev(&x->wgit, "HEAD", &head, err);
	}
	if (!ret && !head)
		ret = gdn_err_set(err, GDN_EFAILED, "HEAD has no commit after the cherry-pick");
	strvec_clear(&c->ids);
	if (!ret)
		ret = gdn_repo_count_commits(x->repo, onto, head, &c->commits, &c->ids,
					     MAX_IDS_JOURNALED, err);
	if (ret) {
		free(head);
		return ret;
	}
	ev = gdn_journal_iteration(c->it);
	json_object_set_new(ev, "from", json_string(c->head_before));
	json_object_set_new(ev, "onto", json_string(onto));
	json_object_set_new(ev, "candidate", json_string(cand));
	json_object_set_new(ev, "result", json_string("clean"));
	json_object_set_new(ev, "head", json_string(head));
	json_object_set_new(ev, "commits", json_integer(c->commits));
	json_object_set_new(ev, "ids", gdn_journal_ids(&c->ids));
	json_object_set_new(ev, "train", json_boolean(on_tip));
	loop_journal(x, "rebase", ev);
	free(c->head_before);
	c->head_before = xstrdup(onto);
	free(c->head_after);
	c->head_after = head;
	return 0;
}

/*
 * One child at a time joins the train: 0 with the lock taken, or -1 (err
 * set) when interrupted or after TRAIN_LOCK_MS (the child then carries its
 * candidate onto the champion).
 */
static int train_lock(const struct train *t, struct gdn_lock *l, struct gdn_err *err)
{
	int64_t until = gdn_now_ms() + TRAIN_LOCK_MS;

	for (;;) {
		if (!gdn_lock_take(l, t->lock_path, NULL, err))
			return 0;
		if (gdn_proc_interrupted() || gdn_now_ms() >= until)
			return -1;
		gdn_err_clear(err);
		gdn_sleep_interruptible(TRAIN_TICK_MS);
	}
}

/* The candidate could not be carried onto `onto` (why): discarded, kept under refs. */
static void discard(struct ictx *x, struct iter *c, const char *base, const char *onto,
		    const char *cand, const char *why)
{
	json_t *ev = gdn_journal_iteration(c->it);

	json_object_set_new(ev, "from", json_string(base));
	json_object_set_new(ev, "onto", json_string(onto));
	json_object_set_new(ev, "candidate", json_string(cand));
	json_object_set_new(ev, "result", json_string("conflict"));
	json_object_set_new(ev, "reason", json_string(why));
	loop_journal(x, "rebase", ev);
	loop_keep_ref(x, c->it, "discarded/", cand,
		      "a candidate that conflicts with the newer champion");
	sbuf_reset(&c->msg);
	sbuf_addf(&c->msg,
		  "iteration %ld conflicts with the champion %.12s another worker "
		  "promoted meanwhile (%s); it was discarded",
		  c->it, onto, why);
	c->conflict = true;
	c->commits = 0;
}

/*
 * The train's tip does not lead to the champion: a candidate validated on
 * the champion was promoted meanwhile, and the train behind it is built on
 * the former champion (its candidates will be redone). The tip goes to the
 * champion, for the caller to read again: joining it there is validating
 * on the champion, not on a base that can never land.
 */
static bool stale_tip(struct ictx *x, const struct train *t, const char *tip)
{
	struct gdn_err ignored = GDN_ERR_INIT;
	char *champion = NULL;
	bool leads = true;

	if (gdn_git_rev(&x->r->ugit, x->r->champion_ref, &champion, &ignored) || !champion ||
	    gdn_git_is_ancestor(&x->r->ugit, champion, tip, &leads, &ignored) || leads)
		goto out;
	loop_say(x, GDN_LOOP_INFO,
		 "the train's tip %.12s is behind the champion %.12s: joining from the champion",
		 tip, champion);
	gdn_git_set_ref(&x->r->ugit, t->tip_ref, champion, tip, &ignored);
out:
	gdn_err_clear(&ignored);
	free(champion);
	return !leads;
}

/*
 * --workers, in the child, before validation (a re-check too): the
 * candidate carried onto the newest code. That is the tip of the train
 * (t->spec): the last candidate to join it, validated or still in
 * validation, which this one joins in turn (refs/gdnctl/tip/<run>, one
 * child at a time under t->lock_path): the k-th in the train is
 * validated on top of the k-1 ahead of it, and the parent waits for their
 * verdicts before deciding it. With a performance decision (no train), it
 * is the champion. A candidate that does not apply on the champion (a
 * conflict, or a change the champion has already) is kept under
 * refs/gdnctl/discarded/<it> and c->conflict is set with the reason in
 * c->msg.
 */
enum step loop_catch_up(struct ictx *x, const struct train *t, struct iter *c, const char *headfile,
			struct gdn_err *err)
{
	struct sbuf why = SBUF_INIT;
	struct gdn_lock lock = GDN_LOCK_INIT;
	char *onto = NULL, *base = xstrdup(c->head_before), *cand = xstrdup(c->head_after);
	bool spec = t->spec && t->lock_path, checkout = false;
	enum step step = STEP_ERROR;

	if (c->commits <= 0) {
		step = STEP_OK;
		goto out;
	}
	if (spec && train_lock(t, &lock, err)) {
		loop_say(x, GDN_LOOP_WARN, "not joining the train: %s", err->msg);
		gdn_err_clear(err);
		spec = false;
	}
	for (int tries = 0;; tries++) {
		sbuf_reset(&why);
		FREE_AND_NULL(onto);
		if (gdn_git_rev(&x->r->ugit, spec ? t->tip_ref : x->r->champion_ref, &onto, err))
			goto out;
		if (!onto && spec) {
			spec = false;
			continue;
		}
		if (spec && stale_tip(x, t, onto)) {
			if (tries >= TRAIN_TRIES)
				spec = false;
			continue;
		}
		if (!onto) {
			gdn_err_set(err, GDN_EFAILED, "no champion at %s", x->r->champion_ref);
			goto out;
		}
		if (strcmp(onto, c->head_before)) {
			if (carry(x, t, c, onto, spec, base, cand, &why, &checkout, err))
				goto out;
			if (why.len && spec) {
				/* it may apply on the champion: the train's tip is not that yet */
				spec = false;
				continue;
			}
			if (why.len)
				break;
			loop_say(x, GDN_LOOP_INFO, "carried onto %s %.12s (%.7s -> %.7s)",
				 spec ? "the train's tip" : "the newer champion", onto, cand,
				 c->head_after);
		}
		if (!spec)
			break;
		/* its tip is this candidate now (the parent may have put it back meanwhile) */
		if (!gdn_git_set_ref(&x->r->ugit, t->tip_ref, c->head_after, onto, err)) {
			gdn_write_file_atomic(headfile, c->head_after, strlen(c->head_after), err);
			gdn_err_clear(err);
			break;
		}
		gdn_err_clear(err);
		if (tries >= TRAIN_TRIES)
			break;
	}
	gdn_lock_release(&lock);
	/* carried in memory: the worktree there now, out of the lock */
	if (checkout && !why.len && gdn_git_reset_clean(&x->wgit, c->head_after, err))
		goto out;
	if (why.len) {
		discard(x, c, base, onto, cand, why.buf);
		step = STEP_OK;
		goto out;
	}
	if (strcmp(base, c->head_before) && loop_fork_state(x, err))
		goto out;
	step = STEP_OK;
out:
	gdn_lock_release(&lock);
	sbuf_release(&why);
	free(onto);
	free(base);
	free(cand);
	return step;
}

/*
 * Whether the next child joins the train: not with a performance decision
 * (it compares with the champion's measurement, which a candidate still in
 * validation does not have), and only where joining wastes less than
 * staying on the champion, with `ahead` candidates to be decided first and
 * p the share promoted (the last eight decisions, with a prior of 0.8
 * worth two decisions):
 * - in the train, its validation is redone unless all `ahead` are
 *   promoted (a failure behind an undecided one is not final either):
 *   wasted with probability 1 - p^ahead;
 * - on the champion, a failure is final, and a pass is redone when one
 *   ahead was promoted: wasted with probability p (1 - (1 - p)^ahead).
 * When every candidate is promoted the train is joined at any depth; when
 * most are rejected, at none (docs/loop-workers.md).
 */
static bool joins(const struct run *r, unsigned recent, unsigned nr, double prior, long ahead)
{
	unsigned n = nr < 8 ? nr : 8, passed = 0;
	double p;

	if (r->hooks && r->hooks->decide)
		return false;
	if (ahead <= 0)
		return true; /* nothing ahead: the train is the champion */
	for (unsigned last = recent & ((1u << n) - 1); last; last >>= 1)
		passed += last & 1;
	p = (passed + 2 * prior) / (n + 2.0);
	return 1 - pow(p, (double)ahead) < p * (1 - pow(1 - p, (double)ahead));
}

bool loop_may_speculate(const struct run *r, const struct train *t, long ahead)
{
	return joins(r, t->recent, t->recent_nr, 0.8, ahead);
}

/*
 * A re-check's candidate passed once, on a former champion: p is the share
 * of re-checks promoted (prior 0.95, worth two decisions), far above a new
 * candidate's on a night where most fail. Re-checks on the champion run
 * one at a time (each decides on the champion of its moment), so in the
 * train they also stop queuing behind one another.
 */
bool loop_may_speculate_recheck(const struct run *r, const struct train *t, long ahead)
{
	return joins(r, t->rechecks, t->rechecks_nr, 0.95, ahead);
}

void loop_train_save_share(const struct train *t)
{
	struct gdn_err ignored = GDN_ERR_INIT;
	json_t *o;
	char *text;

	if (!t->share_path)
		return;
	o = json_pack("{sIsIsIsI}", "recent", (json_int_t)t->recent, "recent_nr",
		      (json_int_t)t->recent_nr, "rechecks", (json_int_t)t->rechecks, "rechecks_nr",
		      (json_int_t)t->rechecks_nr);
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (text) /* when it cannot be written, the children decide on their fork's copy */
		gdn_write_file_atomic(t->share_path, text, strlen(text), &ignored);
	gdn_err_clear(&ignored);
	free(text);
	json_decref(o);
}

/* One share's field: a count the parent wrote, or -1. */
static json_int_t share_field(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);

	return json_is_integer(v) && json_integer_value(v) >= 0 &&
		       json_integer_value(v) <= (json_int_t)UINT_MAX
		   ? json_integer_value(v)
		   : -1;
}

void loop_train_load_share(struct train *t)
{
	json_int_t f[4];
	json_t *o;

	if (!t->share_path || !(o = json_load_file(t->share_path, 0, NULL)))
		return; /* nothing decided yet, or unreadable: the fork's copy */
	f[0] = share_field(o, "recent");
	f[1] = share_field(o, "recent_nr");
	f[2] = share_field(o, "rechecks");
	f[3] = share_field(o, "rechecks_nr");
	if (f[0] >= 0 && f[1] >= 0 && f[2] >= 0 && f[3] >= 0) {
		t->recent = (unsigned)f[0];
		t->recent_nr = (unsigned)f[1];
		t->rechecks = (unsigned)f[2];
		t->rechecks_nr = (unsigned)f[3];
	}
	json_decref(o);
}

/*
 * A candidate that will not be promoted: when the train's tip is it or
 * builds on it, the tip goes back to the champion (later candidates join
 * from there).
 */
void loop_untip(struct ictx *x, const struct train *t, const char *sha)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *tip = NULL;
	bool on = false;

	if (!sha || gdn_git_rev(&x->r->ugit, t->tip_ref, &tip, &err) || !tip ||
	    gdn_git_is_ancestor(&x->r->ugit, sha, tip, &on, &err) || !on ||
	    gdn_git_set_ref(&x->r->ugit, t->tip_ref, x->r->champion, tip, &err))
		gdn_err_clear(&err);
	free(tip);
}
