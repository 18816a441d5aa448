/*
 * The workers of --workers N > 1 (docs/loop-workers.md): each one's
 * worktree and context, made at the start and retired at the end; its
 * child, forked for one iteration (or the re-check of a candidate), which
 * composes the steps in the worker's context (propose, catch up, validate)
 * and writes the outcome to a result file that the parent reads back.
 */
#include "gdnctl/compat.h"
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
#include "workers.h"

#define OTHERS_LINE_MAX 160
#define TOKEN_TICK_MS	20 /* a child waiting for an agent's or a target's turn looks again */

/* Worker k's files and options, and its context (tag k) in its worktree. */
static void worker_init(struct pool *p, struct worker *w, long k)
{
	const struct gdn_loop_opts *o = p->x0->r->o;
	size_t n = strlen(o->workdir);

	w->p = p;
	w->k = k;
	w->dir = o->worktree_dir ? xstrfmt("%s/w%ld", o->worktree_dir, k)
				 : xstrfmt("%s/workers/w%ld", o->log_dir, k);
	w->result = xstrfmt("%s/workers/w%ld.result.json", o->log_dir, k);
	w->headfile = xstrfmt("%s/workers/w%ld.head", o->log_dir, k);
	w->readyfile = xstrfmt("%s/workers/w%ld.ready", o->log_dir, k);
	/* the running log in the agent's worktree: the same file in this one */
	if (o->hillclimb_log && !strncmp(o->hillclimb_log, o->workdir, n) &&
	    o->hillclimb_log[n] == '/')
		w->hlog = xstrfmt("%s%s", w->dir, o->hillclimb_log + n);
	else if (o->hillclimb_log)
		w->hlog = xstrdup(o->hillclimb_log);
	w->o = *o;
	w->o.workdir = w->dir;
	w->o.hillclimb_log = w->hlog;
	loop_ictx_init(&w->x, p->x0->r, &w->o);
	w->x.tag = k;
	w->c = ITER_INIT(0);
}

static void worker_release(struct worker *w)
{
	free(w->dir);
	free(w->hlog);
	free(w->result);
	free(w->headfile);
	free(w->readyfile);
	free(w->base);
	free(w->cand);
	loop_iter_release(&w->c);
	loop_ictx_release(&w->x);
}

/* The pool and its workers (not their worktrees yet). */
static struct pool *pool_new(struct ictx *x0)
{
	struct pool *p = xcalloc(1, sizeof(*p));
	long total = x0->r->total;

	p->x0 = x0;
	p->nw = x0->r->o->workers;
	p->w = xcalloc((size_t)p->nw, sizeof(*p->w));
	for (long k = 0; k < p->nw; k++)
		worker_init(p, &p->w[k], k + 1);
	p->done = xcalloc((size_t)(total > 0 ? total : 0) + 1, 1);
	return p;
}

/* The workers' files (<log dir>/workers), and where the running log lies in a worktree. */
static int workers_files(struct pool *p, struct gdn_err *err)
{
	const struct gdn_loop_opts *o = p->x0->r->o;
	char *dir = xstrfmt("%s/workers", o->log_dir);
	size_t n = strlen(o->workdir);
	int ret = 0;

	if (mkdir(dir, 0755) && errno != EEXIST)
		ret = gdn_err_errno(err, GDN_EIO, "cannot create '%s'", dir);
	for (long k = 0; k < p->nw; k++) /* a crashed run's */
		unlink(p->w[k].readyfile);
	if (!p->t.log_rel && o->hillclimb_log && !strncmp(o->hillclimb_log, o->workdir, n) &&
	    o->hillclimb_log[n] == '/')
		p->t.log_rel = xstrdup(o->hillclimb_log + n + 1);
	if (!p->t.lock_path)
		p->t.lock_path = xstrfmt("%s/train.lock", dir);
	if (!p->t.share_path)
		p->t.share_path = xstrfmt("%s/train.share", dir);
	unlink(p->t.share_path); /* a crashed run's */
	free(dir);
	return ret;
}

/*
 * The workers' worktrees at the champion (each journaled first), their
 * repositories, and the hooks pointed at worker 1 in this process (the
 * baseline runs there; every child points them at its own).
 */
static int workers_begin(struct pool *p, struct gdn_err *err)
{
	struct run *r = p->x0->r;
	int ret = workers_files(p, err);

	if (!p->t.tip_ref)
		p->t.tip_ref = xstrfmt(TIP_REFS "%s", r->sum->run_id);
	if (!ret)
		ret = gdn_git_set_ref(&r->ugit, p->t.tip_ref, r->champion, NULL, err);
	for (long k = 0; k < p->nw && !ret; k++) {
		struct worker *w = &p->w[k];

		ret = loop_worktree_add(&w->x, err);
		if (!ret)
			ret = gdn_repo_open(w->dir, &w->x.repo, err);
	}
	if (!ret && r->hooks && r->hooks->worker)
		ret = r->hooks->worker(r->hooks->payload, 1, p->w[0].dir, err);
	return ret;
}

int loop_parallel_begin(struct ictx *x0, struct pool **pool, struct gdn_err *err)
{
	*pool = pool_new(x0);
	return workers_begin(*pool, err);
}

struct gdn_repo *loop_parallel_repo(struct pool *p)
{
	return p->w[0].x.repo;
}

/* --targets: <log dir>/workers/<what>K.lock, token K of `what`, or (k = 0) <what>.queue */
static char *token_file(const struct gdn_loop_opts *o, const char *what, long k)
{
	return k ? xstrfmt("%s/workers/%s%ld.lock", o->log_dir, what, k)
		 : xstrfmt("%s/workers/%s.queue", o->log_dir, what);
}

/*
 * --targets, in the child: one of `n` tokens (<log dir>/workers/<what>K.lock,
 * K = 1..n) taken, the first free one, waiting for it; the kernel frees it
 * when the child ends, however. One waiter at a time looks at the tokens
 * (it holds <what>.queue); the others only try that lock at each tick, so
 * that waiting costs one lock a tick, not n (with 64 agents and 64 targets,
 * 64 waiters would have tried 200,000 locks a second). *k: its number.
 * Returns 0, or -1 when interrupted.
 */
static int take_token(struct worker *w, const char *what, long n, struct gdn_lock *l, long *k)
{
	const struct gdn_loop_opts *o = w->x.r->o;
	char *queue = token_file(o, what, 0);
	struct gdn_lock turn = GDN_LOCK_INIT;
	int ret = -1;

	for (;;) {
		struct gdn_err ignored = GDN_ERR_INIT;

		if (gdn_lock_held(&turn) || !gdn_lock_take(&turn, queue, NULL, &ignored)) {
			for (long i = 1; i <= n; i++) {
				char *path = token_file(o, what, i);
				int rc = gdn_lock_take(l, path, NULL, &ignored);

				free(path);
				if (!rc) {
					*k = i;
					ret = 0;
					goto out;
				}
			}
		}
		if (gdn_proc_interrupted())
			goto out;
		gdn_sleep_interruptible(TOKEN_TICK_MS);
	}
out:
	gdn_lock_release(&turn);
	free(queue);
	return ret;
}

/*
 * In the child, before its candidate joins the train: the target it
 * validates on, its own, or with --targets M below the workers a free one
 * of the M (waiting for it, held until the child ends), the hooks pointed
 * there; journaled `target` with --targets. Returns STEP_OK, or STEP_INTR.
 */
static enum step take_target(struct worker *w, struct gdn_lock *l, struct gdn_err *err)
{
	const struct gdn_loop_opts *o = w->x.r->o;
	const struct gdn_loop_hooks *h = w->x.r->hooks;
	int64_t t0 = gdn_now_ms();
	long k = w->k;
	char id[24];

	if (o->targets && o->targets < o->workers && take_token(w, "target", o->targets, l, &k))
		return STEP_INTR;
	if (k != w->k && h && h->worker && h->worker(h->payload, k, w->dir, err))
		return STEP_ERROR;
	snprintf(id, sizeof(id), "%ld", k);
	setenv("GDNCTL_TARGET", id, 1);
	if (o->targets)
		loop_journal(&w->x, "target",
			     json_pack("{sIsIsI}", "iteration", (json_int_t)w->it, "target",
				       (json_int_t)k, "waited_ms",
				       (json_int_t)(gdn_now_ms() - t0)));
	return STEP_OK;
}

/*
 * In the child: its candidate is ready (its agent done), to be decided after
 * the others' that were ready before it (the parent removes the mark once
 * it is decided).
 */
static void mark_ready(const struct worker *w)
{
	struct gdn_err ignored = GDN_ERR_INIT;

	gdn_write_file_atomic(w->readyfile, "", 0, &ignored);
}

/*
 * In the child, its candidate ready to join: whether it joins the train,
 * with the candidates ready before it and not decided yet as the ones
 * ahead. The parent's count when it forked the child also took in the
 * others still thinking, who are decided after it, and with --targets the
 * child may have waited for an agent since: at the start of a run with
 * --workers 16 --targets 16, 31 against about 3.
 */
static void decide_join(struct worker *w)
{
	struct pool *p = w->p;
	long ahead = 0;

	for (long k = 0; k < p->nw; k++)
		ahead += &p->w[k] != w && !access(p->w[k].readyfile, F_OK);
	loop_train_load_share(&p->t);
	p->t.spec = loop_may_speculate(w->x.r, &p->t, ahead);
}

/* The worktree checked out at `sha` (it is, or made so). */
static int worktree_at(struct ictx *x, const char *sha, struct gdn_err *err)
{
	char *head = NULL;
	int ret = gdn_git_rev(&x->wgit, "HEAD", &head, err);

	if (!ret && (!head || strcmp(head, sha)))
		ret = gdn_git_reset_clean(&x->wgit, sha, err);
	free(head);
	return ret;
}

/* In the child: a candidate that beat its base, checked again on the newest champion. */
static enum step recheck(struct worker *w, struct gdn_lock *target, struct iter *c,
			 struct gdn_err *err)
{
	struct ictx *x = &w->x;
	enum step step;

	c->head_before = xstrdup(w->base);
	c->head_after = xstrdup(w->cand);
	if (gdn_repo_count_commits(x->repo, c->head_before, c->head_after, &c->commits, &c->ids,
				   MAX_IDS_JOURNALED, err))
		return STEP_ERROR;
	loop_say(x, GDN_LOOP_INFO, "iteration %ld: re-checking %.7s on the newer champion", c->it,
		 c->head_after);
	mark_ready(w);
	step = take_target(w, target, err);
	if (step == STEP_OK)
		step = loop_catch_up(x, &w->p->t, c, w->headfile, err);
	if (step != STEP_OK || c->conflict)
		return step;
	/* not carried (its base is the champion): its own commits, checked out */
	if (!strcmp(c->head_after, w->cand) && worktree_at(x, c->head_after, err))
		return STEP_ERROR;
	return loop_validate(x, c, err);
}

/* In the child: the iteration, propose, catch up, validate (the parent decides). */
static enum step iteration(struct worker *w, struct gdn_lock *target, struct iter *c,
			   struct gdn_err *err)
{
	struct ictx *x = &w->x;
	const struct gdn_loop_opts *o = x->r->o;
	struct gdn_lock agent = GDN_LOCK_INIT;
	int64_t t0 = gdn_now_ms();
	long k = 0;
	enum step step;

	/* --targets M: N agents at once */
	if (o->agents && o->agents < o->workers) {
		if (take_token(w, "agent", o->agents, &agent, &k))
			return STEP_INTR;
		loop_journal(x, "agent",
			     json_pack("{sIsIsI}", "iteration", (json_int_t)w->it, "agent",
				       (json_int_t)k, "waited_ms",
				       (json_int_t)(gdn_now_ms() - t0)));
	}
	step = loop_propose(x, c, err);
	/* the loop branch is the parent's to check, once the child ended */
	step = loop_examine(x, c, step, false, err);
	gdn_lock_release(&agent);
	if (step == STEP_OK && c->commits > 0) {
		/* what a re-check rebuilds from, whatever the train does to it */
		free(w->base);
		free(w->cand);
		w->base = xstrdup(c->head_before);
		w->cand = xstrdup(c->head_after);
		mark_ready(w);
		step = take_target(w, target, err);
		decide_join(w);
	}
	if (step == STEP_OK)
		step = loop_catch_up(x, &w->p->t, c, w->headfile, err);
	if (step == STEP_OK && !c->conflict)
		step = loop_validate(x, c, err);
	return step;
}

static json_t *usage_delta(const struct gdn_agent_usage *now, const struct gdn_agent_usage *was)
{
	json_t *u = json_object();

#define DELTA(f) json_object_set_new(u, #f, json_integer(now->f - (was->f > 0 ? was->f : 0)))
	if (now->input_tokens >= 0)
		DELTA(input_tokens);
	if (now->output_tokens >= 0)
		DELTA(output_tokens);
	if (now->tokens >= 0)
		DELTA(tokens);
#undef DELTA
	if (now->cost_usd >= 0)
		json_object_set_new(
		    u, "cost_usd",
		    json_real(now->cost_usd - (was->cost_usd > 0 ? was->cost_usd : 0)));
	return u;
}

/* The child of worker w: its iteration (or re-check), the outcome to its result file. */
static int worker_main(void *payload)
{
	struct worker *w = payload;
	struct ictx *x = &w->x;
	struct run *r = x->r;
	struct iter c = ITER_INIT(w->it);
	struct gdn_err err = GDN_ERR_INIT, ignored = GDN_ERR_INIT;
	struct gdn_lock target = GDN_LOCK_INIT;
	int64_t agent_ms = r->sum->agent_ms;
	struct gdn_agent_usage usage = r->sum->usage;
	long usage_its = r->sum->usage_iterations;
	size_t refs = r->sum->refs_kept.nr;
	enum step step;
	json_t *res, *kept = json_array();
	char *text;

	char id[24];

	/* where a resume looks for what a crashed run still runs */
	if (chdir(w->dir)) {
		/* the worktree is checked again below */
	}
	/* the agent and the phases know which worker they are */
	snprintf(id, sizeof(id), "%ld", w->k);
	setenv("GDNCTL_WORKER", id, 1);
	loop_journal(x, "worker_start",
		     json_pack("{sIsb}", "iteration", (json_int_t)c.it, "recheck", w->recheck));
	if ((r->hooks && r->hooks->worker &&
	     r->hooks->worker(r->hooks->payload, w->k, w->dir, &err)) ||
	    loop_fork_state(x, &err))
		step = STEP_ERROR;
	else
		step = w->recheck ? recheck(w, &target, &c, &err) : iteration(w, &target, &c, &err);
	if ((step == STEP_FAIL || step == STEP_ERROR) && gdn_proc_interrupted())
		step = STEP_INTR;
	for (size_t i = refs; i < r->sum->refs_kept.nr; i++)
		json_array_append_new(kept, json_string(r->sum->refs_kept.v[i]));
	res = json_pack(
	    "{sisisisisssbsIsbsssIsoss?ss?ss?ss?}", "step", (int)step, "kind", (int)c.kind, "rc",
	    c.rc, "policy", (int)c.policy, "msg", c.msg.buf, "agent_note", c.agent_note, "commits",
	    (json_int_t)c.commits, "conflict", c.conflict, "error", err.msg, "agent_ms",
	    (json_int_t)(r->sum->agent_ms - agent_ms), "refs_kept", kept, "head_before",
	    c.head_before, "head_after", c.head_after, "base", w->base, "cand", w->cand);
	json_object_set_new(res, "note", x->note ? json_string(x->note) : json_null());
	if (r->sum->usage_iterations > usage_its)
		json_object_set_new(res, "usage", usage_delta(&r->sum->usage, &usage));
	text = json_dumps(res, JSON_COMPACT);
	if (!text || gdn_write_file_atomic(w->result, text, strlen(text), &ignored))
		loop_say(x, GDN_LOOP_WARN, "cannot write '%s': %s", w->result, ignored.msg);
	loop_journal(x, "worker_end",
		     json_pack("{sIss}", "iteration", (json_int_t)c.it, "step",
			       step == STEP_INTR ? "interrupted" : "done"));
	free(text);
	json_decref(res);
	loop_iter_release(&c);
	gdn_lock_release(&target);
	return 0;
}

/* "- worker 2, iteration 5: <the first line its agent said>" for the others at work. */
static void others_note(const struct pool *p, const struct worker *me, struct sbuf *sb)
{
	bool any = false;

	for (long k = 0; k < p->nw; k++) {
		const struct worker *w = &p->w[k];
		struct sbuf text = SBUF_INIT;
		struct gdn_err ignored = GDN_ERR_INIT;
		char *path;
		const char *line = NULL;

		if (w == me || !w->pid || w->recheck)
			continue;
		path = loop_iter_path(p->x0, w->it, "transcript.log");
		if (!sbuf_read_file(&text, path, 64 * 1024, &ignored)) {
			for (char *s = text.buf; *s && !line;
			     s += strcspn(s, "\n") + !!s[strcspn(s, "\n")]) {
				size_t n = strcspn(s, "\n");

				while (n && isspace((unsigned char)*s)) {
					s++;
					n--;
				}
				if (n && strncmp(s, "====", 4)) /* not gdnctl's own header */
					line = s;
			}
		}
		if (!any)
			sbuf_addf(sb,
				  "%sOther workers are working on these right now; do not "
				  "duplicate their ideas:\n",
				  sb->len ? "\n\n" : "");
		any = true;
		if (line)
			sbuf_addf(sb, "- worker %ld, iteration %ld: %.*s\n", w->k, w->it,
				  (int)(strcspn(line, "\n") < OTHERS_LINE_MAX ? strcspn(line, "\n")
									      : OTHERS_LINE_MAX),
				  line);
		else
			sbuf_addf(sb, "- worker %ld, iteration %ld: (just started)\n", w->k, w->it);
		free(path);
		sbuf_release(&text);
	}
}

/* The candidates at work or waiting for their turn, other than w's: decided before it. */
static long undecided_others(const struct pool *p, const struct worker *w)
{
	long n = 0;

	for (long k = 0; k < p->nw; k++)
		n += &p->w[k] != w && (p->w[k].pid || p->w[k].queued);
	return n;
}

/* Fork worker w's child for iteration `it` (or the re-check of w->cand). */
int loop_start_worker(struct worker *w, long it, bool recheck, struct gdn_err *err)
{
	struct pool *p = w->p;
	struct sbuf note = SBUF_INIT;
	char *kept = NULL;
	int ret;

	w->it = it;
	w->recheck = recheck;
	if (!recheck) { /* the child says what its agent made */
		FREE_AND_NULL(w->base);
		FREE_AND_NULL(w->cand);
	}
	w->retry = recheck && w->retry;
	w->cancelled = false;
	/* a new candidate decides when it is ready (decide_join); a re-check's is ready now */
	if (recheck && w->retry)
		p->t.spec = loop_may_speculate(p->x0->r, &p->t, undecided_others(p, w));
	else if (recheck)
		p->t.spec = loop_may_speculate_recheck(p->x0->r, &p->t, undecided_others(p, w));
	unlink(w->headfile);
	unlink(w->readyfile);
	if (unlink(w->result) && errno != ENOENT)
		return gdn_err_errno(err, GDN_EIO, "cannot remove '%s'", w->result);
	/* the child's prompt: the worker's note and what the others work on (none to re-check) */
	if (w->x.note && !recheck)
		sbuf_adds(&note, w->x.note);
	if (!recheck)
		others_note(p, w, &note);
	if (recheck)
		kept = w->x.note;
	else
		free(w->x.note);
	w->x.note = note.len && !recheck ? sbuf_detach(&note, NULL) : NULL;
	w->x.clean_known = false;
	ret = gdn_proc_fork_fn(worker_main, w, &w->pid, err);
	FREE_AND_NULL(w->x.note); /* the child's now */
	w->x.note = kept;
	sbuf_release(&note);
	return ret;
}

/* The child's outcome, as the parent's struct iter (and the summary's share). */
enum step loop_read_result(struct worker *w, int code)
{
	struct run *r = w->x.r;
	struct iter *c = &w->c;
	struct gdn_err *err = &w->err;
	struct sbuf sb = SBUF_INIT;
	json_error_t jerr;
	json_t *res = NULL, *v;
	enum step step = STEP_ERROR;
	size_t i;

	if (sbuf_read_file(&sb, w->result, 16 * 1024 * 1024, err) ||
	    !(res = json_loadb(sb.buf, sb.len, 0, &jerr))) {
		gdn_err_clear(err);
		gdn_err_set(err, GDN_EFAILED,
			    "worker %ld's process ended (%s %d) before iteration %ld was decided",
			    w->k, code > 128 ? "signal" : "exit", code > 128 ? code - 128 : code,
			    w->it);
		goto out;
	}
	step = (enum step)json_integer_value(json_object_get(res, "step"));
	c->kind = (enum gdn_loop_failure)json_integer_value(json_object_get(res, "kind"));
	c->rc = (int)json_integer_value(json_object_get(res, "rc"));
	c->policy = (enum gdn_loop_policy)json_integer_value(json_object_get(res, "policy"));
	sbuf_adds(&c->msg, json_string_value(json_object_get(res, "msg")) ?: "");
	c->agent_note = json_is_true(json_object_get(res, "agent_note"));
	c->commits = (long)json_integer_value(json_object_get(res, "commits"));
	c->conflict = json_is_true(json_object_get(res, "conflict"));
	if ((v = json_object_get(res, "head_before")) && json_is_string(v))
		c->head_before = xstrdup(json_string_value(v));
	if ((v = json_object_get(res, "head_after")) && json_is_string(v))
		c->head_after = xstrdup(json_string_value(v));
	/* the agent's own commits (absent: it made none, or they were not ready) */
	free(w->base);
	free(w->cand);
	w->base = w->cand = NULL;
	if ((v = json_object_get(res, "base")) && json_is_string(v))
		w->base = xstrdup(json_string_value(v));
	if ((v = json_object_get(res, "cand")) && json_is_string(v))
		w->cand = xstrdup(json_string_value(v));
	if (json_string_value(json_object_get(res, "error")))
		gdn_err_set(err, GDN_EFAILED, "%s",
			    json_string_value(json_object_get(res, "error")));
	r->sum->agent_ms =
	    gdn_add_sat_i64(r->sum->agent_ms, json_integer_value(json_object_get(res, "agent_ms")));
	json_array_foreach(json_object_get(res, "refs_kept"), i, v)
	    strvec_push(&r->sum->refs_kept, json_string_value(v) ?: "");
	if ((v = json_object_get(res, "usage"))) {
		json_t *in = json_object_get(v, "input_tokens"),
		       *o = json_object_get(v, "output_tokens");
		json_t *t = json_object_get(v, "tokens"), *cost = json_object_get(v, "cost_usd");
		struct gdn_agent_usage u = {
		    in ? json_integer_value(in) : -1, o ? json_integer_value(o) : -1,
		    cost ? json_number_value(cost) : -1, t ? json_integer_value(t) : -1};

		gdn_agent_usage_add(&r->sum->usage, &u);
		r->sum->usage_iterations++;
		loop_usage_mark(r, gdn_loop_usage_tokens(&u));
	}
	free(w->x.note);
	w->x.note = json_string_value(json_object_get(res, "note"))
			? xstrdup(json_string_value(json_object_get(res, "note")))
			: NULL;
out:
	json_decref(res);
	sbuf_release(&sb);
	if (step > STEP_INTR)
		step = STEP_ERROR;
	return step;
}

/* The end of a run with workers: each worktree retired (its work kept under refs). */
void loop_parallel_end(struct pool *p)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct run *r;

	if (!p)
		return;
	r = p->x0->r;
	for (long k = 0; k < p->nw; k++) {
		struct worker *w = &p->w[k];

		loop_retire_worktree(&w->x, w->it ? w->it : r->sum->iterations_run + 1);
		if (r->hooks && r->hooks->worker_state &&
		    r->hooks->worker_state(r->hooks->payload, w->k, GDN_WORKER_END, false, &err))
			loop_say(&w->x, GDN_LOOP_WARN, "%s", err.msg);
		gdn_err_clear(&err);
		unlink(w->result);
		unlink(w->headfile);
		unlink(w->readyfile);
	}
	if (p->t.tip_ref)
		gdn_git_set_ref(&r->ugit, p->t.tip_ref, NULL, NULL, &err);
	gdn_err_clear(&err);
	if (p->t.lock_path)
		unlink(p->t.lock_path);
	if (p->t.share_path)
		unlink(p->t.share_path);
	for (long k = 0; k <= p->nw; k++) { /* --targets: the tokens and (k = 0) their queues */
		char *agent = token_file(r->o, "agent", k), *target = token_file(r->o, "target", k);

		unlink(agent);
		unlink(target);
		free(agent);
		free(target);
	}
}

void loop_parallel_free(struct pool *p)
{
	if (!p)
		return;
	for (long k = 0; k < p->nw; k++)
		worker_release(&p->w[k]);
	free(p->w);
	free(p->done);
	free(p->t.log_rel);
	free(p->t.tip_ref);
	free(p->t.lock_path);
	free(p->t.share_path);
	free(p);
}

/*
 * --resume of a run with workers: the crashed run's children and agents
 * stopped, each worktree it had retired (what it held kept under refs),
 * then fresh ones at the champion.
 */
int loop_parallel_resume(struct ictx *x0, struct pool **pool, struct gdn_loop_state *st,
			 struct gdn_err *err)
{
	struct run *r = x0->r;
	struct pool *p;

	loop_stop_worker_orphans(x0, st);
	for (long k = 1; k <= GDN_LOOP_SLOTS_MAX; k++) {
		struct gdn_loop_opts o = *r->o;
		struct ictx tx;

		if (!st->worker_tree[k])
			continue;
		o.workdir = st->worker_tree[k];
		loop_ictx_init(&tx, r, &o);
		tx.tag = k;
		if (!access(o.workdir, F_OK) && !gdn_repo_open(o.workdir, &tx.repo, err))
			loop_clear_stale_locks(&tx);
		gdn_err_clear(err);
		loop_retire_worktree(&tx,
				     st->worker_open[k] ? st->worker_open[k] : st->last_done + 1);
		loop_ictx_release(&tx);
	}
	p = *pool = pool_new(x0);
	for (long it = 1; it <= r->total; it++)
		p->done[it] = gdn_loop_state_decided(st, it);
	loop_advance_branch(x0, st->last_done);
	return workers_begin(p, err);
}
