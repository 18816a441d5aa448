/*
 * The bottom of the loop's stack (docs/loop-map.md): what every step
 * uses, given the context it works in: say (a worker's "[wK]" first),
 * journal (its "worker" field), keep a commit under refs/gdnctl/, the
 * iteration's files, the hooks' reporting.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"

void loop_say(struct ictx *x, enum gdn_loop_level level, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (x->tag)
		sbuf_addf(&sb, "[w%ld] ", x->tag);
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	if (x->o->say)
		x->o->say(level, sb.buf, x->o->payload);
	sbuf_release(&sb);
}

void loop_heading(struct ictx *x, long it)
{
	const struct gdn_loop_opts *o = x->o;

	if (o->original_exit_codes || !o->agent_name)
		loop_say(x, GDN_LOOP_HEADING, "=== codex iteration %ld/%ld ===", it, x->r->total);
	else if (x->tag)
		loop_say(x, GDN_LOOP_HEADING, "=== iteration %ld/%ld (%s, worker %ld) ===", it,
			 x->r->total, o->agent_name, x->tag);
	else
		loop_say(x, GDN_LOOP_HEADING, "=== iteration %ld/%ld (%s) ===", it, x->r->total,
			 o->agent_name);
}

/* Journal an event (ev stolen). A failing journal is reported once; the loop goes on. */
void loop_journal(struct ictx *x, const char *event, json_t *ev)
{
	struct run *r = x->r;
	struct gdn_err err = GDN_ERR_INIT;

	if (x->tag && json_is_object(ev))
		json_object_set_new(ev, "worker", json_integer(x->tag));
	if (gdn_journal_write(&r->j, event, ev, &err) && !r->journal_warned) {
		r->journal_warned = true;
		loop_say(x, GDN_LOOP_WARN, "%s; --resume will not see this run's progress",
			 err.msg);
	}
}

/* The hooks' reporting (struct gdn_loop_iter): through say and the journal. */
void loop_hook_report(void *ctx, enum gdn_loop_level level, const char *msg)
{
	loop_say(ctx, level, "%s", msg);
}

void gdn_loop_reportf(const struct gdn_loop_iter *it, enum gdn_loop_level level, const char *fmt,
		      ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	it->report(it->ctx, level, sb.buf);
	sbuf_release(&sb);
}

void loop_hook_journal(void *ctx, const char *event, json_t *ev)
{
	loop_journal(ctx, event, ev);
}

void loop_ictx_init(struct ictx *x, struct run *r, const struct gdn_loop_opts *o)
{
	*x = (struct ictx){0};
	x->r = r;
	x->o = o;
	x->git.workdir = o->workdir;
	x->git.retries = 3;
	x->git.retry_sleep_ms = o->git_retry_sleep_ms;
	x->git.say = o->say;
	x->git.payload = o->payload;
	x->wgit = x->git;
	x->wgit.quiet = true;
	x->stash.git = &x->git;
	x->stash.restore_policy = o->restore_policy;
	x->stash.kept = &r->sum->stashes_kept;
	x->stash.refs = &r->sum->refs_kept;
	x->stash.journal = loop_hook_journal;
	x->stash.ctx = x;
	x->stash.pin_run = r->sum->run_id;
}

void loop_ictx_release(struct ictx *x)
{
	gdn_repo_free(x->repo);
	x->repo = x->stash.repo = NULL;
	FREE_AND_NULL(x->note);
}

void loop_usage_mark(struct run *r, int64_t tokens)
{
	ALLOC_GROW(r->hour, r->hour_nr + 1, r->hour_alloc);
	r->hour[r->hour_nr].when = time(NULL);
	r->hour[r->hour_nr++].tokens = tokens;
}

/* "5m12s", "42s" */
static void add_elapsed(struct sbuf *sb, int64_t ms)
{
	int64_t s = ms / 1000;

	if (s >= 3600)
		sbuf_addf(sb, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		sbuf_addf(sb, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else
		sbuf_addf(sb, "%llds", (long long)s);
}

void gdn_loop_heartbeat_text(struct sbuf *sb, const char *what, int64_t elapsed_ms, int64_t idle_ms)
{
	sbuf_addf(sb, "still running: %s, ", what);
	add_elapsed(sb, elapsed_ms);
	sbuf_adds(sb, ", last output ");
	add_elapsed(sb, idle_ms);
	sbuf_adds(sb, " ago");
}

bool loop_isolated(const struct ictx *x)
{
	return x->o->isolation == GDN_ISOLATION_WORKTREE;
}

enum step loop_fail(struct iter *c, enum gdn_loop_failure kind, int rc, enum gdn_loop_policy policy,
		    const char *msg)
{
	c->kind = kind;
	c->rc = rc;
	c->policy = policy;
	sbuf_reset(&c->msg);
	sbuf_adds(&c->msg, msg);
	return STEP_FAIL;
}

/*
 * Keep `sha` under refs/gdnctl/<kind><it> (or <it>-2, ...; kind ends in '/'
 * or '-'): said, journaled
 * (`ref_kept`) and listed in the summary. Never fails the iteration: a ref
 * that cannot be written is a warning naming the commit.
 */
void loop_keep_ref(struct ictx *x, long it, const char *kind, const char *sha, const char *what)
{
	struct run *r = x->r;
	struct gdn_err err = GDN_ERR_INIT;
	char *base = xstrfmt("refs/gdnctl/%s%ld", kind, it), *ref = NULL;
	json_t *ev;

	if (gdn_git_keep_ref(&r->ugit, base, sha, &ref, &err)) {
		loop_say(x, GDN_LOOP_WARN, "%s (%.12s) could not be kept under %s: %s", what, sha,
			 base, err.msg);
		goto out;
	}
	loop_say(x, GDN_LOOP_WARN, "%s: kept at %s (%.12s)", what, ref, sha);
	ev = gdn_journal_iteration(it);
	json_object_set_new(ev, "kind", json_stringn(kind, strcspn(kind, "/")));
	json_object_set_new(ev, "ref", json_string(ref));
	json_object_set_new(ev, "sha", json_string(sha));
	json_object_set_new(ev, "what", json_string(what));
	loop_journal(x, "ref_kept", ev);
	strvec_pushf(&r->sum->refs_kept, "%s %s", ref, what);
out:
	free(base);
	free(ref);
}

char *loop_iter_path(struct ictx *x, long it, const char *what)
{
	return xstrfmt("%s/iteration-%03ld-%s", x->o->log_dir, it, what);
}

void loop_iter_release(struct iter *c)
{
	free(c->head_before);
	free(c->head_after);
	free(c->branch);
	free(c->branch_after);
	sbuf_release(&c->msg);
	strvec_clear(&c->ids);
}
