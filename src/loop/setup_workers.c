/*
 * The setup of `gdnctl loop`, its workers (loop_setup.h): the hooks, a
 * worker's directory and paths in its process, and the end of the run.
 */
#include "gdnctl/compat.h"
#include "gdnctl/loop_setup.h"
#include "setup_impl.h"
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/file.h"
#include "gdnctl/journal.h"
#include "gdnctl/json.h"
#include "gdnctl/marin.h"
#include "gdnctl/proc.h"
#include "gdnctl/prompt.h"
#include "gdnctl/repo.h"
#include "gdnctl/gitops.h"
#include "gdnctl/targets.h"
#include "gdnctl/xalloc.h"

/* ---- workers ---- */

const struct gdn_loop_hooks *gdn_loop_setup_hooks(struct gdn_loop_setup *s)
{
	if (s->gate_on)
		return &s->hooks;
	return s->worker_hooks.worker ? &s->worker_hooks : NULL;
}

char *gdn_loop_setup_worker_dir(const struct gdn_loop_setup *s, long k)
{
	if (s->worktree_dir)
		return xstrfmt("%s/w%ld", s->worktree_dir, k);
	return xstrfmt("%s/workers/w%ld", s->log_dir, k);
}

char *gdn_loop_worker_path(const char *path, const char *from, const char *to)
{
	size_t n = strlen(from);

	while (n > 1 && from[n - 1] == '/')
		n--;
	if (!path || strncmp(path, from, n) || path[n] != '/')
		return NULL;
	return xstrfmt("%s%s", to, path + n);
}

/* The setup whose gate `payload` is (the hooks' payload). */
static struct gdn_loop_setup *setup_of(void *payload)
{
	return (struct gdn_loop_setup *)(void *)((char *)payload -
						 offsetof(struct gdn_loop_setup, gate));
}

/* *path (owned) moved from the agent's worktree to the worker's, when below it. */
static void move_path(char **path, const char *from, const char *to)
{
	char *p = *path ? gdn_loop_worker_path(*path, from, to) : NULL;

	if (p) {
		free(*path);
		*path = p;
	}
}

int gdn_loop_setup_worker(void *payload, long k, const char *workdir, struct gdn_err *err)
{
	struct gdn_loop_setup *s = setup_of(payload);
	struct gdn_loop_where *w = &s->w;
	struct gdn_gate *gate = &s->gate;
	struct gdn_loop_where_worker *x;
	char *from;

	if (!w->wv || k < 1 || k > w->workers)
		return gdn_err_set(err, GDN_EUSAGE, "no worker %ld (--workers %ld)", k,
				   s->a.workers);
	x = &w->wv[k - 1];
	gdn_loop_where_forked(w);
	/* again in the same process (a re-validation): from where the last call pointed */
	from = s->worker_dir ? s->worker_dir : xstrdup(s->agent_dir);
	s->worker_dir = xstrdup(workdir);
	/* the running log: <agent dir>/REL is <workdir>/REL */
	move_path(&s->hlog, from, s->worker_dir);
	free(from);
	s->lo.hillclimb_log = s->hlog;
	if (s->mo.log_file)
		s->mo.log_file = s->hlog;
	/* the gate: its tree, its backend, its champion worktree */
	gate->workdir = s->worker_dir;
	if (s->gate_on || x->backend)
		gate->backend = x->backend ? x->backend : s->backend;
	if (s->backend)
		s->backend->repo_root = s->worker_dir;
	if (gate->backend)
		gate->backend->repo_root = s->worker_dir;
	gate->champion_name = x->champion_name;
	/* where validation runs: its dev TPU, its hold, its targets */
	w->dev = x->dev;
	w->h = x->h;
	w->targets = x->targets;
	if (x->dev)
		x->dev->repo_root = s->worker_dir;
	gdn_targets_set_repo(x->targets, s->worker_dir);
	gate->targets = x->targets;
	w->mg.repo = s->worker_dir;
	s->ts.workdir = s->worker_dir;
	s->ts.backend = gate->backend;
	s->ts.targets = gate->targets;
	/* its hold's managed dev TPU directive (once) */
	if (s->worker_k != k) {
		while (s->worker_k && s->directives.nr > s->worker_base)
			strvec_pop(&s->directives);
		s->worker_base = s->directives.nr;
		for (size_t i = 0; i < x->directives.nr; i++)
			strvec_push(&s->directives, x->directives.v[i]);
		s->worker_k = k;
	}
	return 0;
}

int gdn_loop_setup_worker_state(void *payload, long k, int what, bool promoted, struct gdn_err *err)
{
	struct gdn_loop_setup *s = setup_of(payload);
	int ret = gdn_gate_worker_state(payload, k, what, promoted, err);

	/* worker k's next iteration holds its dev TPU again when it was lost */
	if (what == GDN_WORKER_ADOPT)
		gdn_loop_where_refresh(&s->w, k);
	return ret;
}

void gdn_loop_setup_end(struct gdn_loop_setup *s, const char *run_id, char **warning)
{
	struct gdn_git git = {.workdir = s->workdir, .quiet = true};

	gdn_loop_where_end(&s->w, s->log_dir, run_id, warning);
	/* the workers' --perf-ab champion worktrees (each made in a worker's process) */
	for (long k = 1; s->w.wv && !s->w.forked && k <= s->w.workers; k++) {
		char *dir = xstrfmt("%s/%s", s->log_dir, s->w.wv[k - 1].champion_name);
		struct gdn_err ignored = GDN_ERR_INIT;

		if (!access(dir, F_OK))
			gdn_git_worktree_remove(&git, dir, &ignored);
		free(dir);
	}
}
