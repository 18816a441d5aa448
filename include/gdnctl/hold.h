/*
 * The dev TPU held for the whole loop (--hold-dev-tpu, src/loop/hold.c).
 */
#ifndef GDNCTL_HOLD_H
#define GDNCTL_HOLD_H

#include "gdnctl/compat.h"
#include "gdnctl/gate.h"
#include "gdnctl/loop.h"

struct gdn_config;
struct gdn_hold;

/* --hold-dev-tpu-policy: "required" (1), "best-effort" (0); the value is gdn_hold_opts.required. */
extern const struct gdn_enum gdn_hold_policy_enum[];

/*
 * A dev TPU held for the whole loop (--hold-dev-tpu) through a dev-tpu
 * backend's hold/release ops. Progress goes to `say` (the original's
 * messages); journal events (`dev_tpu`: action acquired, failed, lost,
 * reacquire, rate_limited, released) go to the iteration's journal when
 * one is given, else they wait in the hold until gdn_hold_flush().
 */
struct gdn_hold_opts {
	struct gdn_backend *backend; /* type dev-tpu (borrowed) */
	const char *tpu_name;	     /* for messages and the directive */
	const char *tpu_type;	     /* NULL: v5p-8 in the directive */
	bool required;		     /* --hold-dev-tpu-policy required (else best-effort) */
	long reacquire_interval_ms;  /* at most one re-acquire this often */
	enum gdn_gate_mode mode;     /* the directive's last line */
	/*
	 * The session directives the engine renders each iteration (borrowed):
	 * the managed dev TPU directive is appended once held, and rewritten
	 * to name the cluster actually held after a re-acquire.
	 */
	struct strvec *directives;
	gdn_loop_say_fn say;
	void *payload;
};
struct gdn_hold *gdn_hold_new(const struct gdn_hold_opts *o);
/*
 * Acquire before the loop. Returns 0 when held, or, best-effort, when not
 * (a warning said so); GDN_EBACKEND with the allocation's last error under
 * the required policy; GDN_EINTR when interrupted.
 */
int gdn_hold_acquire(struct gdn_hold *h, struct gdn_err *err);
/*
 * The health check: whether the allocation is held and its process still
 * alive. A dead one is journaled (`lost`) and forgotten. it may be NULL.
 */
bool gdn_hold_alive(struct gdn_hold *h, const struct gdn_loop_iter *it);
/*
 * Re-acquire (stop what is left, allocate again) unless one was tried less
 * than reacquire_interval_ms ago. Returns true when held afterwards.
 */
bool gdn_hold_reacquire(struct gdn_hold *h, const struct gdn_loop_iter *it, const char *reason);
/* The cluster held now, or NULL. */
const char *gdn_hold_cluster(const struct gdn_hold *h);
/*
 * Release whatever is held, also a re-acquired allocation (which the
 * original leaked: docs/compatibility.md, "Bugs of the original that gdnctl fixes"). Idempotent.
 */
int gdn_hold_release(struct gdn_hold *h, struct gdn_err *err);
/*
 * In a process forked from the one that acquired the hold (a worker of
 * `gdnctl loop --workers N`): the allocation stays the parent's. From now
 * on this copy never checks, re-acquires or releases it (alive: whether
 * the parent held it at the fork; reacquire: false; release: nothing),
 * and the events waiting are dropped (the parent journals them).
 */
void gdn_hold_forked(struct gdn_hold *h);
/* Write the events still waiting to <log_dir>/loop.jsonl under run_id. */
void gdn_hold_flush(struct gdn_hold *h, const char *log_dir, const char *run_id);
/* Release (errors ignored) and free. NULL is fine. */
void gdn_hold_free(struct gdn_hold *h);
/* The managed dev TPU directive for cluster C (the original's text, gdnctl commands). */
void gdn_hold_directive(const char *cluster, const char *tpu_name, const char *tpu_type,
			enum gdn_gate_mode mode, struct sbuf *out);

#endif
