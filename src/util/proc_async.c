/*
 * Children that keep running while gdnctl works (a dev TPU allocation held
 * through a loop): gdn_proc_run() on a thread of its own, plus a way to
 * stop that one child's process group from the caller's thread. Built
 * only on what proc.c exports, so every rule of the child-process API
 * (process groups, the registry, signal forwarding, tracing) holds.
 *
 * The child's process group is learnt race-free from the first output
 * line (on_line runs on the worker thread after gdn_proc_run has set
 * p->pid); a child that printed nothing yet is found by an atomic read of
 * p->pid, which gdn_proc_run writes once, right after fork().
 */
#include "gdnctl/compat.h"
#include "gdnctl/proc.h"
#include "gdnctl/err.h"
#include "gdnctl/xalloc.h"

#define TICK_MS 20

struct gdn_proc_async {
	struct gdn_proc *p;
	gdn_line_fn on_line; /* the caller's, or NULL */
	void *payload;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;	  /* gdn_proc_run returned */
	int sig_at_start; /* gdn_proc_interrupted() when it started */
	bool stop_on_any; /* the caller's p->stop_on_any_signal */
	pid_t pgid;	  /* the child's group, once known */
	int ret;
	struct gdn_err err;
};

static int async_line(const char *line, size_t len, void *payload)
{
	struct gdn_proc_async *a = payload;

	pthread_mutex_lock(&a->lock);
	if (!a->pgid)
		a->pgid = a->p->pid;
	pthread_mutex_unlock(&a->lock);
	return a->on_line ? a->on_line(line, len, a->payload) : 0;
}

static void *async_main(void *arg)
{
	struct gdn_proc_async *a = arg;
	struct gdn_err err = GDN_ERR_INIT;
	int ret = gdn_proc_run(a->p, &err);

	pthread_mutex_lock(&a->lock);
	a->ret = ret;
	a->err = err;
	a->done = true;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int gdn_proc_start(struct gdn_proc *p, struct gdn_proc_async **out, struct gdn_err *err)
{
	struct gdn_proc_async *a = xcalloc(1, sizeof(*a));
	pthread_condattr_t attr;
	int e;

	*out = NULL;
	p->pid = 0; /* no stale pid for gdn_proc_stop() before the fork */
	a->p = p;
	a->sig_at_start = gdn_proc_interrupted();
	/*
	 * gdn_proc_stop() leaves a signal from now on to the run; the thread
	 * may start after it, so the run must not miss one that came before.
	 */
	a->stop_on_any = p->stop_on_any_signal;
	if (!a->sig_at_start)
		p->stop_on_any_signal = true;
	a->on_line = p->on_line;
	a->payload = p->payload;
	if (!p->inherit_output) {
		p->on_line = async_line;
		p->payload = a;
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &attr);
	pthread_condattr_destroy(&attr);
	e = pthread_create(&a->thread, NULL, async_main, a);
	if (e) {
		p->stop_on_any_signal = a->stop_on_any;
		p->on_line = a->on_line;
		p->payload = a->payload;
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		free(a);
		errno = e;
		return gdn_err_errno(err, GDN_EIO, "cannot run '%s': cannot start a thread",
				     p->argv && p->argv[0] ? p->argv[0] : "");
	}
	*out = a;
	return 0;
}

/* Wait on the condition until done or wait_ms passed; called with the lock held. */
static void wait_locked(struct gdn_proc_async *a, int wait_ms)
{
	struct timespec ts;

	if (a->done || wait_ms <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += wait_ms / 1000;
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (!a->done && pthread_cond_timedwait(&a->cond, &a->lock, &ts) != ETIMEDOUT)
		;
}

bool gdn_proc_poll(struct gdn_proc_async *a, int wait_ms)
{
	bool done;

	pthread_mutex_lock(&a->lock);
	wait_locked(a, wait_ms);
	done = a->done;
	pthread_mutex_unlock(&a->lock);
	return done;
}

/* The child's group (0: not started, or it never ran); *done as of now. */
static pid_t group_of(struct gdn_proc_async *a, bool *done)
{
	pid_t pg;

	pthread_mutex_lock(&a->lock);
	if (!a->pgid && !a->done)
		a->pgid = __atomic_load_n(&a->p->pid, __ATOMIC_ACQUIRE);
	if (a->done && !a->pgid)
		a->pgid = a->p->pid; /* may be 0: exec failed */
	pg = a->pgid;
	*done = a->done;
	pthread_mutex_unlock(&a->lock);
	return pg;
}

/* Whether the run has ended and its group is empty (reaping members that are ours). */
static bool all_gone(struct gdn_proc_async *a, pid_t pg)
{
	bool done;

	group_of(a, &done);
	if (!done)
		return false;
	if (pg <= 0)
		return true;
	while (waitpid(-pg, NULL, WNOHANG) > 0)
		;
	return kill(-pg, 0) < 0 && errno == ESRCH;
}

void gdn_proc_stop(struct gdn_proc_async *a, int int_grace_ms, int term_grace_ms)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGKILL};
	int64_t until = gdn_now_ms() + 1000;
	bool done = false;
	pid_t pg = group_of(a, &done);

	/*
	 * gdnctl got SIGINT/SIGTERM while the child ran: gdn_proc_run is
	 * stopping its group already (kill_grace_ms apart). A second SIGINT
	 * could cut the child's own cleanup short, so only wait.
	 */
	if (!a->sig_at_start && gdn_proc_interrupted()) {
		while (!gdn_proc_poll(a, 1000))
			;
		return;
	}
	/* Just started: give the thread a moment to fork. */
	while (!pg && !done && gdn_now_ms() < until) {
		gdn_proc_poll(a, TICK_MS);
		pg = group_of(a, &done);
	}
	for (size_t s = 0; s < ARRAY_SIZE(sigs); s++) {
		int grace = s == 0 ? int_grace_ms : term_grace_ms;

		if (all_gone(a, pg))
			return;
		if (pg > 0)
			kill(-pg, sigs[s]);
		until = gdn_now_ms() + (grace > 0 ? grace : 0);
		do {
			if (all_gone(a, pg))
				return;
			gdn_proc_poll(a, TICK_MS);
		} while (gdn_now_ms() < until);
	}
}

int gdn_proc_finish(struct gdn_proc_async *a, struct gdn_err *err)
{
	int ret;

	pthread_join(a->thread, NULL);
	ret = a->ret;
	if (ret && err)
		*err = a->err;
	a->p->stop_on_any_signal = a->stop_on_any;
	if (!a->p->inherit_output) {
		a->p->on_line = a->on_line;
		a->p->payload = a->payload;
	}
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
	return ret;
}
