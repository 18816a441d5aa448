/*
 * The gate's state across the loop's workers (--workers N): each worker's
 * iteration runs in a forked child, which decides against the perf state
 * the parent last saved and writes its own decisions beside it; the parent
 * takes them in when the child ends. Only the parent writes the run's
 * state file.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gate.h"
#include "gdnctl/gitops.h"
#include "gdnctl/perf.h"
#include "gdnctl/xalloc.h"

static int fork_state(struct gdn_gate *g, long k, struct gdn_err *err)
{
	struct gdn_perf_state *ps = g->perf_state;
	int ret;

	if (!g->perf_main_path)
		g->perf_main_path = xstrdup(ps->path);
	ret = gdn_perf_state_load(ps, g->perf_main_path, err);
	if (ret)
		return ret;
	json_object_set_new(
	    ps->doc, "worker_base",
	    json_integer((json_int_t)json_array_size(json_object_get(ps->doc, "history"))));
	free(ps->path);
	ps->path = xstrfmt("%s.w%ld", g->perf_main_path, k);
	if (unlink(ps->path) && errno != ENOENT)
		return gdn_err_errno(err, GDN_EIO, "cannot remove '%s'", ps->path);
	return 0;
}

static int adopt_state(struct gdn_gate *g, long k, bool promoted, struct gdn_err *err)
{
	struct gdn_perf_state *ps = g->perf_state, w = GDN_PERF_STATE_INIT;
	char *path = xstrfmt("%s.w%ld", ps->path, k);
	json_t *hist, *mine, *champ;
	size_t base;
	int ret = gdn_perf_state_load(&w, path, err);

	if (ret)
		goto out;
	hist = json_object_get(w.doc, "history");
	mine = json_object_get(ps->doc, "history");
	base = (size_t)json_integer_value(json_object_get(w.doc, "worker_base"));
	if (!json_array_size(hist))
		goto out; /* the child decided nothing (or there is no file) */
	for (size_t i = base; i < json_array_size(hist); i++)
		json_array_append_new(mine, json_deep_copy(json_array_get(hist, i)));
	champ = json_object_get(w.doc, "champion");
	if (promoted && json_is_object(champ))
		json_object_set_new(ps->doc, "champion", json_deep_copy(champ));
	ret = gdn_perf_state_save(ps, err);
	if (!ret && unlink(path) && errno != ENOENT)
		ret = gdn_err_errno(err, GDN_EIO, "cannot remove '%s'", path);
out:
	gdn_perf_state_release(&w);
	free(path);
	return ret;
}

static int end_worker(struct gdn_gate *g, long k, struct gdn_err *err)
{
	struct gdn_git git = {.workdir = g->workdir, .quiet = true};
	char *dir;
	int ret = 0;

	if (!g->log_dir || !g->workdir)
		return 0;
	dir = xstrfmt("%s/champion-w%ld", g->log_dir, k);
	if (!access(dir, F_OK))
		ret = gdn_git_worktree_remove(&git, dir, err);
	free(dir);
	return ret;
}

int gdn_gate_worker_state(void *payload, long k, int what, bool promoted, struct gdn_err *err)
{
	struct gdn_gate *g = payload;

	if (what == GDN_WORKER_END)
		return end_worker(g, k, err);
	if (!g->perf_config || !g->perf_state || !g->perf_state->path)
		return 0;
	return what == GDN_WORKER_FORK ? fork_state(g, k, err) : adopt_state(g, k, promoted, err);
}
