/*
 * gdnctl loop --workers N (docs/loop-workers.md): each worker's iteration
 * runs in a forked child of the loop, in the worker's own worktree; the
 * parent decides the outcomes one at a time (promotions serialized, a
 * candidate re-checked on the champion of its turn), and while candidates
 * keep passing a new one is validated on the train's tip.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "engine_impl.h"

/* --workers N: worker K (a worktree, and a forked child while it works). */
struct worker {
	long k;
	char *dir, *hlog, *result;
	char *headfile;		/* where its child writes the candidate it put at the train's tip */
	struct gdn_loop_opts o; /* the run's options, with this worktree */
	struct gdn_repo *repo;
	pid_t pid; /* its child (0: idle) */
	long it;   /* the iteration it works on (0: none) */
	/* the child re-checks `cand` (built on `base`) on the newest champion */
	bool recheck;
	char *base, *cand;
	bool cancelled; /* stopped by the loop (the run ends): no decision */
	/*
	 * Its child's outcome (c, step, err), and whether it waits in the
	 * queue (process_queue): a passed candidate (or one that failed on
	 * the train) waiting for the verdict on the candidate ahead of it,
	 * or for its turn to be re-checked on the champion; seq is its turn.
	 */
	bool queued;
	long seq;
	struct iter c;
	enum step step;
	struct gdn_err err;
	char *note;	  /* for its next prompt */
	int64_t ready_ms; /* --sleep: not before */
};

#define WORKER_STOP_MS	30000 /* after a stop, a child that has not ended gets SIGKILL */
#define WORKER_TICK_MS	50
#define OTHERS_LINE_MAX 160

/* Handle worker w (NULL: none): its options, worktree, repository and tag. */
static void use_worker(struct loop *l, struct worker *w)
{
	l->o = w ? &w->o : l->o0;
	l->git.workdir = l->o->workdir;
	l->wgit.workdir = l->o->workdir;
	if (w)
		l->repo = w->repo;
	l->tag = w ? w->k : 0;
	l->clean_known = false;
}

static void worker_init(struct loop *l, struct worker *w, long k)
{
	const struct gdn_loop_opts *o = l->o0;
	size_t n = strlen(o->workdir);

	w->k = k;
	w->dir = o->worktree_dir ? xstrfmt("%s/w%ld", o->worktree_dir, k)
				 : xstrfmt("%s/workers/w%ld", o->log_dir, k);
	w->result = xstrfmt("%s/workers/w%ld.result.json", o->log_dir, k);
	w->headfile = xstrfmt("%s/workers/w%ld.head", o->log_dir, k);
	/* the running log in the agent's worktree: the same file in this one */
	if (o->hillclimb_log && !strncmp(o->hillclimb_log, o->workdir, n) &&
	    o->hillclimb_log[n] == '/')
		w->hlog = xstrfmt("%s%s", w->dir, o->hillclimb_log + n);
	else if (o->hillclimb_log)
		w->hlog = xstrdup(o->hillclimb_log);
	w->o = *o;
	w->o.workdir = w->dir;
	w->o.hillclimb_log = w->hlog;
}

static void worker_release(struct loop *l, struct worker *w)
{
	free(w->dir);
	free(w->hlog);
	free(w->result);
	free(w->headfile);
	free(w->base);
	free(w->cand);
	free(w->note);
	l->steps->iter_release(&w->c);
	gdn_repo_free(w->repo);
}

/* The workers' files (<log dir>/workers), and where the running log lies in a worktree. */
static int workers_files(struct loop *l, struct gdn_err *err)
{
	const struct gdn_loop_opts *o = l->o0;
	char *dir = xstrfmt("%s/workers", o->log_dir);
	size_t n = strlen(o->workdir);
	int ret = 0;

	if (mkdir(dir, 0755) && errno != EEXIST)
		ret = gdn_err_errno(err, GDN_EIO, "cannot create '%s'", dir);
	if (!l->log_rel && o->hillclimb_log && !strncmp(o->hillclimb_log, o->workdir, n) &&
	    o->hillclimb_log[n] == '/')
		l->log_rel = xstrdup(o->hillclimb_log + n + 1);
	free(dir);
	return ret;
}

/* `git show REV:PATH` into out (reset first); *found: it exists. */
static int show_blob(struct loop *l, const char *rev, const char *path, struct sbuf *out,
		     bool *found, struct gdn_err *err)
{
	char *spec = xstrfmt("%s:%s", rev, path);
	int rc = 0, ret;

	sbuf_reset(out);
	ret = gdn_git_runl(&l->wgit, &rc, out, err, "show", spec, NULL);
	*found = !ret && !rc;
	if (!*found)
		sbuf_reset(out);
	free(spec);
	return ret;
}

/*
 * A cherry-pick of `sha` stopped: when the running log is the only file in
 * conflict and the commit only appended to it, the champion's log gets the
 * commit's new lines at its end and the pick goes on (*resolved).
 */
static int resolve_log(struct loop *l, const char *sha, bool *resolved, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT, ours = SBUF_INIT, prev = SBUF_INIT, mine = SBUF_INIT;
	char *parent = xstrfmt("%s^", sha), *path = NULL;
	bool f1 = false, f2 = false, f3 = false;
	int rc = 0, ret;

	*resolved = false;
	ret =
	    gdn_git_runl(&l->wgit, &rc, &out, err, "diff", "--name-only", "--diff-filter=U", NULL);
	sbuf_trim(&out);
	if (ret || rc || !l->log_rel || strcmp(out.buf, l->log_rel))
		goto out;
	ret = show_blob(l, ":2", l->log_rel, &ours, &f1, err);
	if (!ret)
		ret = show_blob(l, parent, l->log_rel, &prev, &f2, err);
	if (!ret)
		ret = show_blob(l, sha, l->log_rel, &mine, &f3, err);
	if (ret || !f1 || !f3 || mine.len < prev.len || memcmp(mine.buf, prev.buf, prev.len))
		goto out;
	sbuf_add(&ours, mine.buf + prev.len, mine.len - prev.len);
	path = xstrfmt("%s/%s", l->o->workdir, l->log_rel);
	ret = gdn_write_file_atomic(path, ours.buf, ours.len, err);
	if (!ret)
		ret = gdn_git_runl(&l->wgit, &rc, &out, err, "add", "--", l->log_rel, NULL);
	if (!ret && !rc)
		ret = gdn_git_runl(&l->wgit, &rc, &out, err, "-c", "core.editor=true",
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
static int carry_commits(struct loop *l, const char *from, const char *to, struct sbuf *why,
			 struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	struct strvec shas = STRVEC_INIT;
	char *range = xstrfmt("%s..%s", from, to);
	int rc = 0,
	    ret = gdn_git_runl(&l->wgit, &rc, &out, err, "rev-list", "--reverse", range, NULL);

	if (!ret && rc)
		ret = gdn_err_set(err, GDN_EFAILED, "cannot list %s", range);
	if (!ret)
		strvec_split(&shas, out.buf, '\n');
	for (size_t i = 0; !ret && !why->len && i < shas.nr; i++) {
		bool resolved = false;

		ret = gdn_git_runl(&l->wgit, &rc, &out, err, "cherry-pick", shas.v[i], NULL);
		if (ret || !rc)
			continue;
		ret = resolve_log(l, shas.v[i], &resolved, err);
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
		gdn_git_runl(&l->wgit, &rc, NULL, err, "cherry-pick", "--abort", NULL);
		gdn_err_clear(err);
	}
	free(range);
	strvec_clear(&shas);
	sbuf_release(&out);
	return ret;
}

/*
 * The workers' worktrees at the champion (each journaled first), their
 * repositories, and the hooks pointed at worker 1 in this process (the
 * baseline runs there; every child points them at its own).
 */
int loop_workers_begin(struct loop *l, struct gdn_err *err)
{
	int ret = 0;

	if (!l->w) {
		l->w = xcalloc((size_t)l->nw, sizeof(*l->w));
		for (long k = 0; k < l->nw; k++)
			worker_init(l, &l->w[k], k + 1);
	}
	if (!l->done)
		l->done = xcalloc((size_t)(l->total > 0 ? l->total : 0) + 1, 1);
	ret = workers_files(l, err);
	if (!l->tip_ref)
		l->tip_ref = xstrfmt("refs/gdnctl/tip/%s", l->sum->run_id);
	if (!ret)
		ret = gdn_git_set_ref(&l->ugit, l->tip_ref, l->champion, NULL, err);
	for (long k = 0; k < l->nw && !ret; k++) {
		struct worker *w = &l->w[k];

		use_worker(l, w);
		ret = l->steps->iso_worktree(l, err);
		if (!ret)
			ret = gdn_repo_open(w->dir, &w->repo, err);
	}
	use_worker(l, NULL);
	l->repo = l->w[0].repo;
	if (!ret && l->hooks && l->hooks->worker)
		ret = l->hooks->worker(l->hooks->payload, 1, l->w[0].dir, err);
	return ret;
}

/* In a worker's child: the shared state as the parent last saved it. */
static int fork_state(struct loop *l, struct gdn_err *err)
{
	if (!l->hooks || !l->hooks->worker_state)
		return 0;
	return l->hooks->worker_state(l->hooks->payload, l->tag, GDN_WORKER_FORK, false, err);
}

/*
 * Carry the candidate (base..cand) onto `onto` in the worktree: c then
 * names the carried commits, journaled as `rebase`; or, when they do not
 * apply (*why says why), the worktree is back at the candidate.
 */
static int carry(struct loop *l, struct iter *c, const char *onto, const char *base,
		 const char *cand, struct sbuf *why, struct gdn_err *err)
{
	char *head = NULL;
	json_t *ev;
	int ret = gdn_git_reset_clean(&l->wgit, onto, err);

	if (!ret)
		ret = carry_commits(l, base, cand, why, err);
	if (!ret && why->len) /* as it was: the candidate, on its own base */
		ret = gdn_git_reset_clean(&l->wgit, cand, err);
	if (ret || why->len)
		return ret;
	ret = gdn_git_rev(&l->wgit, "HEAD", &head, err);
	if (!ret && !head)
		ret = gdn_err_set(err, GDN_EFAILED, "HEAD has no commit after the cherry-pick");
	strvec_clear(&c->ids);
	if (!ret)
		ret = gdn_repo_count_commits(l->repo, onto, head, &c->commits, &c->ids,
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
	l->steps->journal(l, "rebase", ev);
	free(c->head_before);
	c->head_before = xstrdup(onto);
	free(c->head_after);
	c->head_after = head;
	return 0;
}

/*
 * --workers, in the child, before validation: the candidate carried onto
 * the newest code. That is the champion, or, while candidates keep
 * passing (l->spec), the tip of the train: the last candidate another
 * worker is validating, which this one then joins (refs/gdnctl/tip/<run>,
 * moved by compare-and-swap); its verdict decides whether this one's
 * validation counts (the parent waits for it). A candidate that does not
 * apply on the champion (a conflict, or a change the champion has already)
 * is kept under refs/gdnctl/discarded/<it> and c->conflict is set with the
 * reason in c->msg.
 */
enum step loop_catch_up(struct loop *l, struct iter *c, struct gdn_err *err)
{
	struct worker *w = &l->w[l->tag - 1];
	struct sbuf why = SBUF_INIT;
	char *onto = NULL, *base = xstrdup(c->head_before), *cand = xstrdup(c->head_after);
	bool spec = l->spec && !w->recheck;
	enum step step = STEP_ERROR;
	json_t *ev;

	if (c->commits <= 0) {
		step = STEP_OK;
		goto out;
	}
	for (int tries = 0;; tries++) {
		sbuf_reset(&why);
		FREE_AND_NULL(onto);
		if (gdn_git_rev(&l->ugit, spec ? l->tip_ref : l->champion_ref, &onto, err))
			goto out;
		if (!onto && spec) {
			spec = false;
			continue;
		}
		if (!onto) {
			gdn_err_set(err, GDN_EFAILED, "no champion at %s", l->champion_ref);
			goto out;
		}
		if (strcmp(onto, c->head_before)) {
			if (carry(l, c, onto, base, cand, &why, err))
				goto out;
			if (why.len && spec) {
				/* it may apply on the champion: the train's tip is not that yet */
				spec = false;
				continue;
			}
			if (why.len)
				break;
			l->steps->say(l, GDN_LOOP_INFO, "carried onto %s %.12s (%.7s -> %.7s)",
				      spec ? "the train's tip" : "the newer champion", onto, cand,
				      c->head_after);
		}
		if (!spec)
			break;
		/* join the train: its tip is this candidate now, unless another got there first */
		if (!gdn_git_set_ref(&l->ugit, l->tip_ref, c->head_after, onto, err)) {
			gdn_write_file_atomic(w->headfile, c->head_after, strlen(c->head_after),
					      err);
			gdn_err_clear(err);
			break;
		}
		gdn_err_clear(err);
		if (tries >= 4)
			break;
	}
	if (why.len) {
		ev = gdn_journal_iteration(c->it);
		json_object_set_new(ev, "from", json_string(base));
		json_object_set_new(ev, "onto", json_string(onto));
		json_object_set_new(ev, "candidate", json_string(cand));
		json_object_set_new(ev, "result", json_string("conflict"));
		json_object_set_new(ev, "reason", json_string(why.buf));
		l->steps->journal(l, "rebase", ev);
		l->steps->keep_ref(l, c->it, "discarded/", cand,
				   "a candidate that conflicts with the newer champion");
		sbuf_reset(&c->msg);
		sbuf_addf(&c->msg,
			  "iteration %ld conflicts with the champion %.12s another worker "
			  "promoted meanwhile (%s); it was discarded",
			  c->it, onto, why.buf);
		c->conflict = true;
		c->commits = 0;
		step = STEP_OK;
		goto out;
	}
	if (strcmp(base, c->head_before) && fork_state(l, err))
		goto out;
	step = STEP_OK;
out:
	sbuf_release(&why);
	free(onto);
	free(base);
	free(cand);
	return step;
}

/* In the child: a candidate that beat its base, checked again on the newest champion. */
static enum step recheck_body(struct loop *l, struct iter *c, struct gdn_err *err)
{
	struct worker *w = &l->w[l->tag - 1];
	enum step step;

	c->head_before = xstrdup(w->base);
	c->head_after = xstrdup(w->cand);
	if (gdn_repo_count_commits(l->repo, c->head_before, c->head_after, &c->commits, &c->ids,
				   MAX_IDS_JOURNALED, err))
		return STEP_ERROR;
	l->steps->say(l, GDN_LOOP_INFO, "iteration %ld: re-checking %.7s on the newer champion",
		      c->it, c->head_after);
	step = loop_catch_up(l, c, err);
	if (step != STEP_OK || c->conflict)
		return step;
	return l->steps->gate_hooks(l, c, err);
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

/* The child of worker l->tag: its iteration (or re-check), the outcome to its result file. */
static int worker_main(void *payload)
{
	struct loop *l = payload;
	struct worker *w = &l->w[l->tag - 1];
	struct iter c = {.it = w->it, .msg = SBUF_INIT, .ids = STRVEC_INIT};
	struct gdn_err err = GDN_ERR_INIT, ignored = GDN_ERR_INIT;
	int64_t agent_ms = l->sum->agent_ms;
	struct gdn_agent_usage usage = l->sum->usage;
	long usage_its = l->sum->usage_iterations;
	size_t refs = l->sum->refs_kept.nr;
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
	l->steps->journal(
	    l, "worker_start",
	    json_pack("{sIsb}", "iteration", (json_int_t)c.it, "recheck", w->recheck));
	if ((l->hooks && l->hooks->worker &&
	     l->hooks->worker(l->hooks->payload, w->k, w->dir, &err)) ||
	    fork_state(l, &err))
		step = STEP_ERROR;
	else
		step =
		    w->recheck ? recheck_body(l, &c, &err) : l->steps->iteration_body(l, &c, &err);
	if ((step == STEP_FAIL || step == STEP_ERROR) && gdn_proc_interrupted())
		step = STEP_INTR;
	for (size_t i = refs; i < l->sum->refs_kept.nr; i++)
		json_array_append_new(kept, json_string(l->sum->refs_kept.v[i]));
	res =
	    json_pack("{sisisisisssbsIsbsssIsoss?ss?}", "step", (int)step, "kind", (int)c.kind,
		      "rc", c.rc, "policy", (int)c.policy, "msg", c.msg.buf, "agent_note",
		      c.agent_note, "commits", (json_int_t)c.commits, "conflict", c.conflict,
		      "error", err.msg, "agent_ms", (json_int_t)(l->sum->agent_ms - agent_ms),
		      "refs_kept", kept, "head_before", c.head_before, "head_after", c.head_after);
	json_object_set_new(res, "note", l->note ? json_string(l->note) : json_null());
	if (l->sum->usage_iterations > usage_its)
		json_object_set_new(res, "usage", usage_delta(&l->sum->usage, &usage));
	text = json_dumps(res, JSON_COMPACT);
	if (!text || gdn_write_file_atomic(w->result, text, strlen(text), &ignored))
		l->steps->say(l, GDN_LOOP_WARN, "cannot write '%s': %s", w->result, ignored.msg);
	l->steps->journal(l, "worker_end",
			  json_pack("{sIss}", "iteration", (json_int_t)c.it, "step",
				    step == STEP_INTR ? "interrupted" : "done"));
	free(text);
	json_decref(res);
	l->steps->iter_release(&c);
	return 0;
}

/* "- worker 2, iteration 5: <the first line its agent said>" for the others at work. */
static void others_note(struct loop *l, const struct worker *me, struct sbuf *sb)
{
	bool any = false;

	for (long k = 0; k < l->nw; k++) {
		const struct worker *w = &l->w[k];
		struct sbuf text = SBUF_INIT;
		struct gdn_err ignored = GDN_ERR_INIT;
		char *path;
		const char *line = NULL;

		if (w == me || !w->pid || w->recheck)
			continue;
		path = l->steps->iter_path(l, w->it, "transcript.log");
		if (!sbuf_read_file(&text, path, 64 * 1024, &ignored)) {
			for (char *p = text.buf; *p && !line;
			     p += strcspn(p, "\n") + !!p[strcspn(p, "\n")]) {
				size_t n = strcspn(p, "\n");

				while (n && isspace((unsigned char)*p)) {
					p++;
					n--;
				}
				if (n && strncmp(p, "====", 4)) /* not gdnctl's own header */
					line = p;
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

/*
 * Whether a child may join the train: not with a performance decision
 * (it compares with the champion's measurement), and only while at least
 * two of the last four candidates were promoted (a failing tip costs its
 * followers a re-check).
 */
static bool may_speculate(const struct loop *l)
{
	unsigned last = l->recent & 0xf, passed = 0;

	if (l->hooks && l->hooks->decide)
		return false;
	for (; last; last >>= 1)
		passed += last & 1;
	return l->recent_nr < 4 || passed >= 2;
}

/* Fork worker w's child for iteration `it` (or the re-check of w->cand). */
static int start_worker(struct loop *l, struct worker *w, long it, bool recheck,
			struct gdn_err *err)
{
	struct sbuf note = SBUF_INIT;
	int ret;

	w->it = it;
	w->recheck = recheck;
	w->cancelled = false;
	l->spec = may_speculate(l);
	unlink(w->headfile);
	if (unlink(w->result) && errno != ENOENT)
		return gdn_err_errno(err, GDN_EIO, "cannot remove '%s'", w->result);
	if (!recheck) {
		if (w->note)
			sbuf_adds(&note, w->note);
		others_note(l, w, &note);
		free(l->note);
		l->note = note.len ? sbuf_detach(&note, NULL) : NULL;
	}
	use_worker(l, w);
	ret = gdn_proc_fork_fn(worker_main, l, &w->pid, err);
	use_worker(l, NULL);
	if (!recheck) {
		FREE_AND_NULL(l->note); /* the child's now */
		FREE_AND_NULL(w->note);
	}
	sbuf_release(&note);
	return ret;
}

/* The iteration a worker takes next: the first one neither decided nor at work (0: none). */
static long next_iteration(struct loop *l)
{
	for (long it = 1; it <= l->total; it++) {
		bool busy = l->done[it];

		for (long k = 0; k < l->nw && !busy; k++)
			busy = (l->w[k].pid || l->w[k].queued) && l->w[k].it == it;
		if (!busy)
			return it;
	}
	return 0;
}

/* The child's outcome, as the parent's struct iter (and the summary's share). */
static enum step read_result(struct loop *l, struct worker *w, int code, struct iter *c,
			     struct gdn_err *err)
{
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
	if (json_string_value(json_object_get(res, "error")))
		gdn_err_set(err, GDN_EFAILED, "%s",
			    json_string_value(json_object_get(res, "error")));
	l->sum->agent_ms =
	    gdn_add_sat_i64(l->sum->agent_ms, json_integer_value(json_object_get(res, "agent_ms")));
	json_array_foreach(json_object_get(res, "refs_kept"), i, v)
	    strvec_push(&l->sum->refs_kept, json_string_value(v) ?: "");
	if ((v = json_object_get(res, "usage"))) {
		json_t *in = json_object_get(v, "input_tokens"),
		       *o = json_object_get(v, "output_tokens");
		json_t *t = json_object_get(v, "tokens"), *cost = json_object_get(v, "cost_usd");
		struct gdn_agent_usage u = {
		    in ? json_integer_value(in) : -1, o ? json_integer_value(o) : -1,
		    cost ? json_number_value(cost) : -1, t ? json_integer_value(t) : -1};

		gdn_agent_usage_add(&l->sum->usage, &u);
		l->sum->usage_iterations++;
		ALLOC_GROW(l->hour, l->hour_nr + 1, l->hour_alloc);
		l->hour[l->hour_nr].when = time(NULL);
		l->hour[l->hour_nr++].tokens = gdn_loop_usage_tokens(&u);
	}
	free(w->note);
	w->note = json_string_value(json_object_get(res, "note"))
		      ? xstrdup(json_string_value(json_object_get(res, "note")))
		      : NULL;
out:
	json_decref(res);
	sbuf_release(&sb);
	if (step > STEP_INTR)
		step = STEP_ERROR;
	return step;
}

/*
 * A candidate that will not be promoted: when the train's tip is it or
 * builds on it, the tip goes back to the champion (later candidates join
 * from there).
 */
static void untip(struct loop *l, const char *sha)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *tip = NULL;
	bool on = false;

	if (!sha || gdn_git_rev(&l->ugit, l->tip_ref, &tip, &err) || !tip ||
	    gdn_git_is_ancestor(&l->ugit, sha, tip, &on, &err) || !on ||
	    gdn_git_set_ref(&l->ugit, l->tip_ref, l->champion, tip, &err))
		gdn_err_clear(&err);
	free(tip);
}

/* Its candidate passed (or a policy kept it after validation). */
static bool accepted(const struct worker *w)
{
	return !w->c.conflict && w->c.commits > 0 && w->c.head_before &&
	       (w->step == STEP_OK || (w->step == STEP_FAIL && w->c.kind == GDN_FAIL_HOOK));
}

/*
 * Its candidate failed validation on a base that is not the champion: on
 * a candidate ahead of it in the train, whose fault it may be.
 */
static bool failed_on_train(const struct loop *l, const struct worker *w)
{
	return !w->c.conflict && w->step == STEP_FAIL && w->c.kind == GDN_FAIL_HOOK &&
	       w->c.head_before && w->c.head_after && strcmp(w->c.head_before, w->c.head_after) &&
	       strcmp(w->c.head_before, l->champion);
}

static void adopt_state(struct loop *l, struct worker *w, bool promoted)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (l->hooks && l->hooks->worker_state &&
	    l->hooks->worker_state(l->hooks->payload, w->k, GDN_WORKER_ADOPT, promoted, &err))
		l->steps->say(l, GDN_LOOP_WARN, "%s", err.msg);
}

/*
 * Worker w's outcome (w->c, w->step) decided: a candidate that passed on a
 * champion that has moved since (or, recheck_failed, failed on a train
 * candidate that was not promoted) is re-checked on the champion first
 * (its child forked again, l->rechecking); anything else is concluded,
 * promoted when accepted. Returns -1 to go on, or the loop's exit code.
 */
static int decide_worker(struct loop *l, struct worker *w, bool recheck_failed)
{
	char *champion = xstrdup(l->champion);
	bool recheck = strcmp(w->c.head_before ? w->c.head_before : "", l->champion) &&
		       (accepted(w) || (recheck_failed && failed_on_train(l, w)));
	int exit = -1;

	use_worker(l, w);
	if (recheck && gdn_proc_interrupted()) {
		w->step = STEP_INTR; /* never promoted unchecked */
		recheck = false;
	}
	if (recheck) {
		free(w->base);
		free(w->cand);
		w->base = xstrdup(w->c.head_before);
		w->cand = xstrdup(w->c.head_after);
		l->steps->say(
		    l, GDN_LOOP_INFO,
		    "iteration %ld passed on %.12s, but the champion is now %.12s: re-checking it "
		    "there",
		    w->c.it, w->c.head_before, l->champion);
		l->steps->journal(l, "recheck",
				  json_pack("{sIssss}", "iteration", (json_int_t)w->c.it, "base",
					    w->c.head_before, "champion", l->champion));
		adopt_state(l, w, false); /* what it decided on its base stays on record */
		if (!start_worker(l, w, w->it, true, &w->err)) {
			l->rechecking = w;
			goto out;
		}
		w->step = STEP_ERROR;
	}
	exit = l->steps->conclude(l, &w->c, w->step, &w->err);
	if (w->step != STEP_INTR && w->c.it <= l->total)
		l->done[w->c.it] = 1;
	if (strcmp(champion, l->champion))
		l->steps->say(l, GDN_LOOP_INFO, "iteration %ld promoted: the champion is now %.12s",
			      w->c.it, l->champion);
	adopt_state(l, w, strcmp(champion, l->champion) != 0);
	if (w->step != STEP_INTR) {
		l->recent = (l->recent << 1) | (strcmp(champion, l->champion) != 0);
		l->recent_nr++;
	}
	if (!strcmp(champion, l->champion))
		untip(l, w->c.head_after);
	w->ready_ms = gdn_now_ms() + (w->step == STEP_OK ? l->o->sleep_ms : 0);
	if (w->step != STEP_INTR)
		w->it = 0;
out:
	use_worker(l, NULL);
	free(champion);
	return exit;
}

/* The queued candidate whose turn it is (NULL: none). */
static struct worker *next_queued(struct loop *l)
{
	struct worker *first = NULL;

	for (long k = 0; k < l->nw; k++)
		if (l->w[k].queued && (!first || l->w[k].seq < first->seq))
			first = &l->w[k];
	return first;
}

/* `sha` is a candidate still to be decided: one at work in a child, or one waiting. */
static bool undecided(struct loop *l, const struct worker *me, const char *sha)
{
	for (long k = 0; k < l->nw; k++) {
		const struct worker *w = &l->w[k];
		struct sbuf head = SBUF_INIT;
		struct gdn_err ignored = GDN_ERR_INIT;
		bool yes = false;

		if (w == me)
			continue;
		if (w->queued && w->c.head_after)
			yes = !strcmp(w->c.head_after, sha);
		else if (w->pid && !w->recheck &&
			 !sbuf_read_file(&head, w->headfile, 128, &ignored))
			yes = !strcmp(head.buf, sha);
		sbuf_release(&head);
		if (yes)
			return true;
	}
	return false;
}

/*
 * The accepted candidates wait here, decided in turn: one on the champion
 * is promoted (not while another's re-check runs: that one decides on the
 * champion of the moment); one on a candidate still to be decided (it
 * joined the train) waits for that verdict; any other is re-checked on the
 * champion, one re-check at a time. Returns -1 to go on, or the exit code.
 */
static int process_queue(struct loop *l)
{
	int exit = -1;
	bool again = true;

	while (again && exit < 0) {
		struct worker *order[GDN_LOOP_WORKERS_MAX];
		size_t n = 0;

		again = false;
		for (long k = 0; k < l->nw; k++)
			if (l->w[k].queued)
				order[n++] = &l->w[k];
		for (size_t i = 1; i < n; i++) /* by turn: few items */
			for (size_t j = i; j > 0 && order[j]->seq < order[j - 1]->seq; j--) {
				struct worker *t = order[j];

				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		for (size_t i = 0; i < n && !again; i++) {
			struct worker *q = order[i];
			struct gdn_err ignored = GDN_ERR_INIT;
			bool on_champion = !strcmp(q->c.head_before, l->champion), was = false;

			if (l->rechecking || (!on_champion && undecided(l, q, q->c.head_before)))
				continue;
			/* a failure on a former champion stands; on a rejected candidate, not */
			if (!accepted(q) && !on_champion &&
			    gdn_git_is_ancestor(&l->ugit, q->c.head_before, l->champion, &was,
						&ignored))
				gdn_err_clear(&ignored);
			q->queued = false;
			exit = decide_worker(l, q, !was);
			again = true;
		}
	}
	return exit;
}

/*
 * Worker w's child ended with `code`: its outcome decided, or queued when
 * it passed (promotions are serialized: process_queue). Returns -1 to go
 * on, or the loop's exit code.
 */
static int worker_done(struct loop *l, struct worker *w, int code)
{
	bool moved = false, turn = l->rechecking == w;
	int exit = -1;

	l->steps->iter_release(&w->c);
	w->c = (struct iter){.it = w->it, .msg = SBUF_INIT, .ids = STRVEC_INIT};
	gdn_err_clear(&w->err);
	if (turn)
		l->rechecking = NULL;
	use_worker(l, w);
	w->step = read_result(l, w, code, &w->c, &w->err);
	unlink(w->headfile);
	if ((w->step == STEP_FAIL || w->step == STEP_ERROR) && gdn_proc_interrupted())
		w->step = STEP_INTR;
	if (w->cancelled) {
		l->steps->journal(l, "abandoned", gdn_journal_iteration(w->it));
		untip(l, w->c.head_after);
		goto out;
	}
	if (l->steps->check_branch(l, &w->c, &moved, &w->err)) {
		l->steps->say(l, GDN_LOOP_WARN, "%s", w->err.msg);
		gdn_err_clear(&w->err);
	} else if (moved) {
		l->steps->say(l, GDN_LOOP_WARN, "an agent moved %s; it is back at %.12s", l->branch,
			      l->btip);
	}
	if (w->c.conflict) {
		free(w->note);
		w->note = xstrfmt("%s. Start from the current code: your change must apply on "
				  "top of it.",
				  w->c.msg.buf);
		l->steps->say(l, GDN_LOOP_NOTE, "%s", w->c.msg.buf);
	}
	if (accepted(w) || failed_on_train(l, w)) {
		w->queued = true;
		w->seq = turn ? 0 : ++l->seq; /* a re-checked candidate has the turn */
	} else {
		exit = decide_worker(l, w, false);
	}
	use_worker(l, NULL);
	if (exit < 0)
		exit = process_queue(l);
out:
	use_worker(l, NULL);
	return exit;
}

static struct worker *idle_worker(struct loop *l)
{
	int64_t now = gdn_now_ms();

	for (long k = 0; k < l->nw; k++)
		if (!l->w[k].pid && !l->w[k].queued && l->w[k].ready_ms <= now)
			return &l->w[k];
	return NULL;
}

/* A child runs (queued: or a candidate waits for its turn). */
static bool workers_busy(const struct loop *l, bool queued)
{
	for (long k = 0; k < l->nw; k++)
		if (l->w[k].pid || (queued && l->w[k].queued))
			return true;
	return false;
}

/*
 * No child runs, candidates wait: the run is stopping (their re-check was
 * stopped). After a failure that ends the run they are abandoned; after
 * Ctrl-C they end as interrupted (one already on the champion is decided).
 */
static int flush_queue(struct loop *l, int exit)
{
	struct worker *q;

	while (!l->rechecking && (q = next_queued(l))) {
		int r;

		q->queued = false;
		if (exit >= 0 && !gdn_proc_interrupted()) {
			use_worker(l, q);
			l->steps->journal(l, "abandoned", gdn_journal_iteration(q->it));
			use_worker(l, NULL);
			continue;
		}
		r = decide_worker(l, q, false);
		if (r >= 0 && exit < 0)
			exit = r;
	}
	return exit;
}

/*
 * The loop with workers: iterations handed to idle workers in order, each
 * child's outcome decided here one at a time (promotions serialized).
 * A stop condition lets the running iterations finish; a failure that ends
 * the run stops them (abandoned, no decision); Ctrl-C or SIGTERM stops
 * them as interrupted. Returns the exit code, or -1 (completed).
 */
int loop_run_workers(struct loop *l)
{
	struct gdn_err err = GDN_ERR_INIT;
	bool launching = true;
	int exit = -1, stop_exit = -1;
	int64_t signalled = 0;

	for (;;) {
		bool reaped = false;

		while (launching && exit < 0 && !gdn_proc_interrupted()) {
			struct worker *w = idle_worker(l);
			const char *reason;
			long it;

			if (!w)
				break;
			it = next_iteration(l);
			if (!it) {
				launching = false;
				break;
			}
			reason = l->steps->stop_condition(l);
			if (reason) {
				l->steps->say(l, GDN_LOOP_INFO, "stopping before iteration %ld: %s",
					      it, reason);
				l->steps->journal(l, "stop",
						  json_pack("{sIss}", "iteration", (json_int_t)it,
							    "reason", reason));
				stop_exit = !strcmp(reason, "consecutive-failures") ? 1 : 0;
				l->sum->stop_reason = xstrdup(reason);
				launching = false;
				break;
			}
			if (start_worker(l, w, it, false, &err)) {
				l->steps->say(l, GDN_LOOP_NOTE, "%s", err.msg);
				exit = gdn_loop_exit_code(GDN_FAIL_ITERATION_ERROR,
							  GDN_LOOP_ORIGINAL_ITERATION_ERROR,
							  l->o->original_exit_codes);
				l->sum->stop_reason = xstrdup("failure");
				gdn_err_clear(&err);
			}
		}
		if (!workers_busy(l, false) && workers_busy(l, true))
			exit = flush_queue(l, exit);
		if (!workers_busy(l, true)) {
			if (!launching || exit >= 0 || gdn_proc_interrupted())
				break;
			gdn_sleep_interruptible(WORKER_TICK_MS);
			continue;
		}
		if ((gdn_proc_interrupted() || exit >= 0) && !signalled) {
			for (long k = 0; k < l->nw; k++) {
				struct worker *w = &l->w[k];

				if (!w->pid)
					continue;
				w->cancelled = !gdn_proc_interrupted();
				gdn_proc_fork_signal(w->pid, gdn_proc_interrupted()
								 ? gdn_proc_interrupted()
								 : SIGTERM);
			}
			signalled = gdn_now_ms();
		} else if (signalled && gdn_now_ms() - signalled > WORKER_STOP_MS) {
			for (long k = 0; k < l->nw; k++)
				gdn_proc_fork_signal(l->w[k].pid, SIGKILL);
		}
		for (long k = 0; k < l->nw; k++) {
			struct worker *w = &l->w[k];
			int code = 0, r;

			if (!w->pid || !gdn_proc_fork_poll(w->pid, &code))
				continue;
			w->pid = 0;
			reaped = true;
			r = worker_done(l, w, code);
			if (r >= 0 && exit < 0)
				exit = r;
		}
		if (!reaped)
			gdn_sleep_interruptible(WORKER_TICK_MS);
	}
	return exit >= 0 ? exit : stop_exit;
}

/* The end of a run with workers: each worktree retired (its work kept under refs). */
void loop_workers_end(struct loop *l)
{
	struct gdn_err err = GDN_ERR_INIT;

	for (long k = 0; l->w && k < l->nw; k++) {
		struct worker *w = &l->w[k];

		use_worker(l, w);
		l->steps->retire_worktree(l, w->it ? w->it : l->sum->iterations_run + 1);
		if (l->hooks && l->hooks->worker_state &&
		    l->hooks->worker_state(l->hooks->payload, w->k, GDN_WORKER_END, false, &err))
			l->steps->say(l, GDN_LOOP_WARN, "%s", err.msg);
		gdn_err_clear(&err);
		unlink(w->result);
		unlink(w->headfile);
	}
	use_worker(l, NULL);
	if (l->tip_ref)
		gdn_git_set_ref(&l->ugit, l->tip_ref, NULL, NULL, &err);
}

void loop_workers_release(struct loop *l)
{
	if (!l->w)
		return; /* one worker: nothing of ours (l->repo is the engine's) */
	for (long k = 0; k < l->nw; k++)
		worker_release(l, &l->w[k]);
	free(l->w);
	l->w = NULL;
	l->repo = NULL; /* worker 1's, freed with it */
	free(l->done);
	free(l->log_rel);
	free(l->tip_ref);
}

/*
 * --resume of a run with workers: the crashed run's children and agents
 * stopped, each worktree it had retired (what it held kept under refs),
 * then fresh ones at the champion.
 */
int loop_workers_resume(struct loop *l, struct gdn_loop_state *st, struct gdn_err *err)
{
	static const char *const names[] = {"git", "gdnctl", NULL};
	struct gdn_proc_leftovers killed = GDN_PROC_LEFTOVERS_INIT;
	struct worker tw = {0};
	int64_t deadline = gdn_now_ms() + 10000;

	for (long k = 1; k <= GDN_LOOP_WORKERS_MAX; k++)
		while (st->worker_tree[k] && gdn_now_ms() < deadline &&
		       gdn_proc_running_in(names, st->worker_tree[k], NULL))
			gdn_sleep_interruptible(20);
	for (size_t i = 0; i < st->open_marks.nr; i++) {
		const char *mark = strchr(st->open_marks.v[i], ' ');
		long it = strtol(st->open_marks.v[i], NULL, 10);

		gdn_proc_stop_leftovers(0, mark ? mark + 1 : "", 2000, &killed);
		if (killed.nr) {
			l->steps->say(
			    l, GDN_LOOP_WARN,
			    "stopped %zu process(es) the agent of interrupted iteration %ld left "
			    "running",
			    killed.nr, it);
			l->steps->journal(l, "agent_leftovers",
					  gdn_journal_leftovers(it, 0, &killed));
		}
		gdn_proc_leftovers_release(&killed);
		killed = (struct gdn_proc_leftovers)GDN_PROC_LEFTOVERS_INIT;
	}
	for (long k = 1; k <= GDN_LOOP_WORKERS_MAX; k++) {
		if (!st->worker_tree[k])
			continue;
		tw.k = k;
		tw.dir = st->worker_tree[k];
		tw.o = *l->o0;
		tw.o.workdir = tw.dir;
		if (!access(tw.dir, F_OK) && !gdn_repo_open(tw.dir, &tw.repo, err)) {
			use_worker(l, &tw);
			l->steps->clear_stale_locks(l);
		}
		gdn_err_clear(err);
		use_worker(l, &tw);
		l->steps->retire_worktree(l, st->worker_open[k] ? st->worker_open[k]
								: st->last_done + 1);
		gdn_repo_free(tw.repo);
		tw.repo = NULL;
	}
	use_worker(l, NULL);
	l->repo = NULL;
	l->done = xcalloc((size_t)(l->total > 0 ? l->total : 0) + 1, 1);
	for (long it = 1; it <= l->total; it++)
		l->done[it] = gdn_loop_state_decided(st, it);
	l->steps->advance_branch(l, st->last_done);
	return loop_workers_begin(l, err);
}
