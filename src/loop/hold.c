/*
 * The held dev TPU of `gdnctl loop --hold-dev-tpu` (the original's
 * _hold_dev_tpu_for_loop and _try_reacquire_managed_dev_tpu): acquired
 * before the baseline through a dev-tpu backend's hold op, health-checked
 * before each validation (ops->status without a job id: is the allocation
 * process alive?), re-acquired at most once per interval, and released at
 * the end whatever happened (the original leaked a re-acquired allocation
 * after a best-effort start: docs/compatibility.md, "Bugs of the original that gdnctl fixes").
 * The session directive that names the
 * held cluster is rewritten after a re-acquire (the original computed it
 * once). Never prints: messages go through the say callback.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/gate.h"
#include "gdnctl/hold.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

const struct gdn_enum gdn_hold_policy_enum[] = {
    {"required", 1, "abort (exit 1) when the allocation fails"},
    {"best-effort", 0, "continue without the dev TPU"},
    GDN_ENUM_END,
};

struct gdn_hold {
	struct gdn_hold_opts o;
	char *cluster; /* held now, or NULL */
	bool tried_reacquire;
	int64_t last_reacquire_ms;
	long directive;	 /* index in o.directives, -1: none */
	json_t *pending; /* [[event, object], ...] not journaled yet */
	bool forked;	 /* in a forked worker: the allocation is the parent's */
};

static void say(struct gdn_hold *h, enum gdn_loop_level level, const char *fmt, ...)
    GDN_PRINTF(3, 4);
static void say(struct gdn_hold *h, enum gdn_loop_level level, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (!h->o.say)
		return;
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	h->o.say(level, sb.buf, h->o.payload);
	sbuf_release(&sb);
}

/* A `dev_tpu` event: to the iteration's journal, or kept until one is there. */
static void journal(struct gdn_hold *h, const struct gdn_loop_iter *it, const char *action,
		    const char *reason)
{
	json_t *ev = json_pack("{ssss*ss*ss*}", "action", action, "tpu_name", h->o.tpu_name,
			       "cluster", h->cluster, "reason", reason);

	if (it) {
		json_object_set_new(ev, "iteration", json_integer(it->iteration));
		for (size_t i = 0; i < json_array_size(h->pending); i++) {
			json_t *p = json_array_get(h->pending, i);

			it->journal(it->ctx, json_string_value(json_array_get(p, 0)),
				    json_incref(json_array_get(p, 1)));
		}
		json_array_clear(h->pending);
		it->journal(it->ctx, "dev_tpu", ev);
		return;
	}
	json_array_append_new(h->pending, json_pack("[so]", "dev_tpu", ev));
}

struct gdn_hold *gdn_hold_new(const struct gdn_hold_opts *o)
{
	struct gdn_hold *h = xcalloc(1, sizeof(*h));

	h->o = *o;
	h->directive = -1;
	h->pending = json_array();
	return h;
}

void gdn_hold_directive(const char *cluster, const char *tpu_name, const char *tpu_type,
			enum gdn_gate_mode mode, struct sbuf *out)
{
	const char *evidence = mode == GDN_GATE_REQUIRED
				   ? "both validation tests and a profile result"
			       : mode == GDN_GATE_PROFILE_ONLY
				   ? "a profile result (profile-only)"
				   : "post-check/profile evidence configured for this run (off)";

	sbuf_addf(out,
		  "Managed dev TPU mode is active for this run.\n"
		  "\n"
		  "- Prefer dev TPU commands for validation/profiling on `--cluster %s` and "
		  "`--tpu-name %s`; if dev TPU fails/unavailable, fall back to Ray TPU commands.\n"
		  "- Preferred first:\n"
		  "  - `gdnctl dev-tpu-test --cluster %s --tpu-name %s --tests both`\n"
		  "  - `gdnctl dev-tpu-profile --cluster %s --tpu-name %s --tpu %s ...`\n"
		  "- Fallback if dev TPU path fails:\n"
		  "  - `gdnctl ray-test --cluster <cluster> --tpu auto --tests both`\n"
		  "  - `gdnctl ray-profile --cluster <cluster> --tpu v5p-8 ...`\n"
		  "- Do not finish an iteration without %s.",
		  cluster, tpu_name, cluster, tpu_name, cluster, tpu_name,
		  tpu_type && *tpu_type ? tpu_type : "v5p-8", evidence);
}

/* Add or rewrite the directive naming the cluster held now. */
static void update_directive(struct gdn_hold *h)
{
	struct sbuf text = SBUF_INIT;
	struct strvec *d = h->o.directives;

	if (!d || !h->cluster)
		return;
	gdn_hold_directive(h->cluster, h->o.tpu_name, h->o.tpu_type, h->o.mode, &text);
	if (h->directive < 0) {
		strvec_push(d, text.buf);
		h->directive = (long)d->nr - 1;
	} else if ((size_t)h->directive < d->nr) {
		free((char *)d->v[h->directive]);
		d->v[h->directive] = sbuf_detach(&text, NULL);
	}
	sbuf_release(&text);
}

/* Allocate (over the backend's clusters and attempts). 0 or the backend's error. */
static int allocate(struct gdn_hold *h, struct gdn_err *err)
{
	struct gdn_backend *b = h->o.backend;
	const char *c;
	int ret;

	FREE_AND_NULL(h->cluster);
	ret = b->ops->hold(b, err);
	if (ret)
		return ret;
	c = gdn_devtpu_cluster(b);
	h->cluster = xstrdup(c ? c : "");
	return 0;
}

int gdn_hold_acquire(struct gdn_hold *h, struct gdn_err *err)
{
	struct gdn_err sub = GDN_ERR_INIT;
	int ret;

	say(h, GDN_LOOP_INFO, "starting managed dev TPU allocation for codex-loop");
	ret = allocate(h, &sub);
	if (!ret) {
		journal(h, NULL, "acquired", NULL);
		update_directive(h);
		return 0;
	}
	journal(h, NULL, "failed", sub.msg);
	if (ret == GDN_EINTR || gdn_proc_interrupted())
		return gdn_err_set(err, GDN_EINTR, "%s", sub.msg);
	if (h->o.required)
		return gdn_err_set(err, GDN_EBACKEND, "managed dev TPU allocation failed: %s",
				   sub.msg);
	say(h, GDN_LOOP_WARN,
	    "managed dev TPU allocation failed; continuing without held dev TPU.\n%s", sub.msg);
	say(h, GDN_LOOP_NOTE,
	    "managed dev TPU hold is not active for this run; continuing without hold-specific "
	    "directives.");
	return 0;
}

bool gdn_hold_alive(struct gdn_hold *h, const struct gdn_loop_iter *it)
{
	struct gdn_backend *b = h->o.backend;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (!h->cluster)
		return false;
	if (h->forked) /* the allocation process is the parent's: it checks it */
		return true;
	if (!b->ops->status(b, NULL, &st, &err) && st.state == GDN_JOB_RUNNING)
		return true;
	say(h, GDN_LOOP_WARN, "managed dev TPU allocation dev-tpu-%s (cluster %s) is gone: %s",
	    h->o.tpu_name, h->cluster, st.message[0] ? st.message : err.msg);
	journal(h, it, "lost", st.message[0] ? st.message : err.msg);
	FREE_AND_NULL(h->cluster);
	return false;
}

bool gdn_hold_reacquire(struct gdn_hold *h, const struct gdn_loop_iter *it, const char *reason)
{
	struct gdn_backend *b = h->o.backend;
	struct gdn_err err = GDN_ERR_INIT;
	int64_t now = gdn_now_ms();

	if (gdn_proc_interrupted() || h->forked)
		return false;
	if (h->tried_reacquire && now - h->last_reacquire_ms < h->o.reacquire_interval_ms) {
		say(h, GDN_LOOP_NOTE,
		    "managed dev TPU re-acquire is rate-limited; skipping for %llds (reason=%s).",
		    (long long)((h->o.reacquire_interval_ms - (now - h->last_reacquire_ms) + 999) /
				1000),
		    reason);
		journal(h, it, "rate_limited", reason);
		return false;
	}
	h->tried_reacquire = true;
	h->last_reacquire_ms = now;
	say(h, GDN_LOOP_NOTE, "attempting managed dev TPU re-acquire (%s)", reason);
	if (b->ops->release(b, &err))
		say(h, GDN_LOOP_WARN, "%s", err.msg);
	if (allocate(h, &err)) {
		journal(h, it, "reacquire_failed", reason);
		if (!gdn_proc_interrupted())
			say(h, GDN_LOOP_NOTE,
			    "managed dev TPU re-acquire failed; continuing with Ray fallback.\n%s",
			    err.msg);
		return false;
	}
	say(h, GDN_LOOP_INFO, "managed dev TPU re-acquire is active: dev-tpu-%s (cluster %s)",
	    h->o.tpu_name, h->cluster);
	journal(h, it, "reacquired", reason);
	update_directive(h);
	return true;
}

const char *gdn_hold_cluster(const struct gdn_hold *h)
{
	return h ? h->cluster : NULL;
}

int gdn_hold_release(struct gdn_hold *h, struct gdn_err *err)
{
	struct gdn_backend *b = h->o.backend;
	const char *c = gdn_devtpu_cluster(b);
	gdn_backend_event_fn on_event = b->on_event;
	int ret;

	if (h->forked)
		return 0;
	if (c)
		say(h, GDN_LOOP_INFO,
		    "releasing managed dev TPU allocation: dev-tpu-%s (cluster %s)", h->o.tpu_name,
		    c);
	b->on_event = NULL; /* the line above says it, in the original's words */
	ret = b->ops->release(b, err);
	b->on_event = on_event;
	if (c && !ret)
		journal(h, NULL, "released", NULL);
	FREE_AND_NULL(h->cluster);
	return ret;
}

void gdn_hold_forked(struct gdn_hold *h)
{
	if (!h)
		return;
	h->forked = true;
	json_array_clear(h->pending); /* the parent journals them */
}

void gdn_hold_flush(struct gdn_hold *h, const char *log_dir, const char *run_id)
{
	struct gdn_journal j = GDN_JOURNAL_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (!h || !json_array_size(h->pending) || !log_dir || !run_id)
		return;
	if (gdn_journal_open(&j, log_dir, run_id, &err))
		return;
	for (size_t i = 0; i < json_array_size(h->pending); i++) {
		json_t *p = json_array_get(h->pending, i);

		gdn_journal_write(&j, json_string_value(json_array_get(p, 0)),
				  json_incref(json_array_get(p, 1)), &err);
	}
	json_array_clear(h->pending);
	gdn_journal_close(&j);
}

void gdn_hold_free(struct gdn_hold *h)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (!h)
		return;
	gdn_hold_release(h, &err);
	json_decref(h->pending);
	free(h->cluster);
	free(h);
}
