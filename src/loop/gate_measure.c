/*
 * The validation gate, its measurements (gate_impl.h): the profile's
 * samples from the metric sources, repeated, and --perf-ab's champion arm
 * in its own worktree.
 */
#include "gdnctl/compat.h"
#include <fnmatch.h>
#include <glob.h>
#include <math.h>
#include <sys/stat.h>
#include "gdnctl/backend.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/loop.h"
#include "gdnctl/gate.h"
#include "gate_impl.h"
#include "gdnctl/abstat.h"
#include "gdnctl/gitops.h"
#include "gdnctl/targets.h"
#include "gdnctl/trace_source.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/proc.h"
#include "gdnctl/revert.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

/* Where the metric sources report (gdn_measure_sample) while one sample is taken. */
struct sample_ctx {
	const struct gdn_gate *g;
	const struct gdn_loop_iter *it;
	long k;
	struct gdn_perf_measurement *m;
	const char *arm;    /* --perf-ab: "champion" or "candidate"; NULL otherwise */
	struct sbuf warned; /* the last warning of the sources */
};

static void on_measure_warn(const char *line, void *payload)
{
	struct sample_ctx *c = payload;

	gdn_loop_reportf(c->it, GDN_LOOP_WARN, "%s", line);
	sbuf_reset(&c->warned);
	sbuf_adds(&c->warned, line);
}

/* Why sample s of a profile run (exit rc, its trace or NULL) has no value, in words. */
static char *unscored_why(const struct sample_ctx *sc, int rc, const char *trace)
{
	const struct gdn_gate *g = sc->g;
	const char *metric = g->perf_config->metric;
	const char *glob = g->trace_source ? g->trace_source->trace_glob : g->trace_glob;

	if (rc)
		return xstrfmt("the profile exited %d", rc);
	if (sc->warned.len)
		return xstrdup(sc->warned.buf);
	if (gdn_perf_is_trace_metric(metric) && !trace)
		return glob && *glob
			   ? xstrfmt("no trace matching project.trace_glob '%s' was written", glob)
			   : xstrdup("no trace was found");
	if (gdn_perf_is_trace_metric(metric))
		return xstrfmt("the trace '%s' gives no %s", trace, metric);
	return xstrfmt("the profile printed no '%s' (a line such as '%s=1.5')", metric, metric);
}

static void on_measure_run_url(const char *url, void *payload)
{
	struct sample_ctx *c = payload;

	if (!c->m->run_url)
		c->m->run_url = xstrdup(url);
}

static void on_measure_detail(json_t *detail, void *payload)
{
	struct sample_ctx *c = payload;

	json_object_set_new(detail, "iteration", json_integer(c->it->iteration));
	json_object_set_new(detail, "attempt", json_integer(c->k));
	if (c->arm)
		json_object_set_new(detail, "arm", json_string(c->arm));
	json_object_set_new(detail, "metric", json_string(c->g->perf_config->metric));
	c->it->journal(c->it->ctx, "measurement", detail);
}

/*
 * Profile once (attempt k) and, with the performance policy, add a sample
 * to m (may be NULL): the CLI metric from the output, the trace figures of
 * the newest trace the run wrote. Returns 0 (*rc: the profile's exit
 * code) or a negative gdn_errcode.
 */
static int profile_arm(const struct gdn_gate *g, const struct gdn_loop_iter *it, const char *phase,
		       const char *arm, long k, struct gdn_perf_measurement *m, int *rc,
		       struct gdn_err *err);

int gate_profile_once(const struct gdn_gate *g, const struct gdn_loop_iter *it, long k,
		      struct gdn_perf_measurement *m, int *rc, struct gdn_err *err)
{
	return profile_arm(g, it, "profile", NULL, k, m, rc, err);
}

static int profile_arm(const struct gdn_gate *g, const struct gdn_loop_iter *it, const char *phase,
		       const char *arm, long k, struct gdn_perf_measurement *m, int *rc,
		       struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	struct timespec since;
	struct gdn_perf_sample *s;
	struct gdn_measure_input in = {0};
	struct sample_ctx sc = {g, it, k, m, arm, SBUF_INIT};
	const struct gdn_measure_sink sink = {on_measure_warn, on_measure_run_url,
					      on_measure_detail, &sc};
	char *trace = NULL;
	int ret;

	clock_gettime(CLOCK_REALTIME, &since);
	since.tv_sec -= 1; /* file systems with coarse timestamps */
	ret = gate_run_phase_retry(g, it, phase, k, g->profile_command, rc, m ? &out : NULL, err);
	if (ret || !m)
		goto out;
	s = gdn_perf_measurement_add(m);
	if (g->trace_source) /* local, the backend's workdir, GCS or W&B: trace_source.c */
		trace = gdn_trace_source_find(g->trace_source, it, k, (int64_t)since.tv_sec,
					      out.buf, out.len);
	else if (g->trace_glob && *g->trace_glob)
		trace = gdn_trace_newest_local(g->workdir, g->trace_glob, &since);
	in.metric = g->perf_config->metric;
	in.perf_config = g->perf_config;
	in.iteration = it->iteration;
	in.out = out.buf;
	in.len = out.len;
	in.exit_code = *rc;
	in.trace = trace;
	gdn_measure_sample(g->measure, &in, s, &sink);
	if (!s->has_value)
		s->why = unscored_why(&sc, *rc, trace);
	if (!*rc && g->perf_config) {
		/* trace/step_ms: one sample per step of the trace (perf.h) */
		size_t n = gdn_perf_measurement_split_steps(m, g->perf_config);

		if (n > 1)
			gdn_loop_reportf(it, GDN_LOOP_INFO,
					 "profile run %ld: %zu steps in the trace, %zu samples of "
					 "%s",
					 k, n, n, g->perf_config->metric);
	}
	if (*rc)
		gdn_loop_reportf(it, GDN_LOOP_WARN, "profile run %ld failed with exit %d", k, *rc);
out:
	free(trace);
	sbuf_release(&out);
	sbuf_release(&sc.warned);
	return ret;
}

void gate_drop_measured(struct gdn_gate *g)
{
	if (g->measured) {
		gdn_perf_measurement_release(g->measured);
		free(g->measured);
		g->measured = NULL;
	}
	if (g->measured_champion) {
		gdn_perf_measurement_release(g->measured_champion);
		free(g->measured_champion);
		g->measured_champion = NULL;
	}
	g->measured_iter = 0;
}

void gdn_gate_release(struct gdn_gate *g)
{
	gate_drop_measured(g);
	if (g->champion_dir) {
		/* the agent's worktree may be gone: git from the common dir */
		struct gdn_git git = {
		    .workdir = g->champion_gitdir ? g->champion_gitdir : g->workdir, .quiet = true};
		struct gdn_err err = GDN_ERR_INIT;

		gdn_git_worktree_remove(&git, g->champion_dir, &err);
		free(g->champion_dir);
		g->champion_dir = NULL;
	}
	free(g->champion_dir_commit);
	g->champion_dir_commit = NULL;
	free(g->champion_gitdir);
	g->champion_gitdir = NULL;
	FREE_AND_NULL(g->perf_main_path);
}

/*
 * --perf-ab applies to this iteration: the champion's commit (borrowed
 * from the state), or NULL for a plain measurement.
 */
static const char *ab_champion(const struct gdn_gate *g, const struct gdn_loop_iter *it)
{
	json_t *champ;
	const char *sha;

	/* where the champion cannot run from its own tree, setup refused (targets.c) */
	if (!g->perf_ab || !g->perf_config || !g->log_dir || it->iteration <= 0)
		return NULL;
	champ = gdn_perf_state_champion(g->perf_state);
	sha = json_string_value(json_object_get(champ, "commit"));
	if (!sha || !json_is_number(json_object_get(champ, "metric_value")) ||
	    (it->head_after && !strcmp(sha, it->head_after)))
		return NULL;
	return sha;
}

/* The champion's worktree at `sha` (made, or moved, under the log dir). */
static int champion_worktree(struct gdn_gate *g, const struct gdn_loop_iter *it, const char *sha,
			     struct gdn_err *err)
{
	struct gdn_git git = {.workdir = g->workdir, .quiet = true};
	int ret;

	if (g->champion_dir && g->champion_dir_commit && !strcmp(g->champion_dir_commit, sha))
		return 0;
	if (!g->champion_dir)
		g->champion_dir =
		    xstrfmt("%s/%s", g->log_dir, g->champion_name ? g->champion_name : "champion");
	ret = gdn_git_worktree_add(&git, g->champion_dir, sha, err);
	if (ret) {
		free(g->champion_dir);
		g->champion_dir = NULL;
		return ret;
	}
	free(g->champion_dir_commit);
	g->champion_dir_commit = xstrdup(sha);
	if (!g->champion_gitdir) {
		struct sbuf out = SBUF_INIT;
		int rc = 0;

		if (!gdn_git_runl(&git, &rc, &out, err, "rev-parse", "--path-format=absolute",
				  "--git-common-dir", NULL) &&
		    !rc) {
			sbuf_trim(&out);
			g->champion_gitdir = sbuf_detach(&out, NULL);
		}
		sbuf_release(&out);
		gdn_err_clear(err);
	}
	it->journal(it->ctx, "champion_worktree",
		    json_pack("{sIssss}", "iteration", (json_int_t)it->iteration, "path",
			      g->champion_dir, "commit", sha));
	gdn_loop_reportf(it, GDN_LOOP_INFO, "champion worktree at %.12s: %s", sha, g->champion_dir);
	return 0;
}

/*
 * --perf-ab: champion and candidate alternately (A B A B ...), at least
 * perf_repeats pairs, then one pair more at a time up to perf_max_repeats
 * while the interval is inconclusive. *rc: the candidate's first failing
 * exit code (the champion's failures leave its sample without a value).
 */
static int measure_ab(struct gdn_gate *g, const struct gdn_loop_iter *it, const char *sha,
		      struct gdn_perf_measurement *m, int *rc, struct gdn_err *err)
{
	struct gdn_perf_measurement *cm = xcalloc(1, sizeof(*cm));
	struct gdn_gate cg;
	long k = g->perf_repeats > 0 ? g->perf_repeats : 1;
	long max = g->perf_max_repeats > k ? g->perf_max_repeats : k;
	const char *base;
	char *suffix = NULL;
	int ret;

	cm->iteration = it->iteration;
	g->measured_champion = cm;
	ret = champion_worktree(g, it, sha, err);
	if (ret)
		return ret;
	cg = *g;
	cg.workdir = g->champion_dir;
	cg.trace_source = NULL;
	/*
	 * A remote backend (or target) runs it from the champion's worktree,
	 * its copy there named after the worktree: ".gdnctl-champion".
	 */
	base = strrchr(g->champion_dir, '/');
	suffix = xstrfmt(".gdnctl-%s", base ? base + 1 : g->champion_dir);
	cg.copy_suffix = suffix;
	for (long i = 1; i <= max && !ret; i++) {
		int one = 0, crc = 0;
		struct gdn_abstat st;
		int verdict;

		ret = profile_arm(&cg, it, "profile-champion", "champion", i, cm, &crc, err);
		if (!ret && crc && cm->nr)
			cm->v[cm->nr - 1].has_value = false;
		if (!ret && !gdn_proc_interrupted())
			ret = profile_arm(g, it, "profile", "candidate", i, m, &one, err);
		if (one && !*rc)
			*rc = one;
		if (!ret && gdn_proc_interrupted())
			ret = gdn_err_set(err, GDN_EINTR, "interrupted during the profile");
		if (!ret && *rc && i >= k)
			break; /* the candidate failed: no more pairs */
		if (ret || *rc || i < k)
			continue;
		if (gdn_perf_ab_stat(g->perf_config, cm, m, g->perf_confidence, max - k + 1, &st,
				     &verdict))
			continue;
		it->journal(it->ctx, "perf_ab_look",
			    json_pack("{sIsIsfsfsfsfss}", "iteration", (json_int_t)it->iteration,
				      "pairs", (json_int_t)st.pairs, "improvement_pct",
				      st.improvement_pct, "ci_low_pct", st.lo_pct, "ci_high_pct",
				      st.hi_pct, "confidence", st.confidence, "verdict",
				      gdn_abstat_verdict_name((enum gdn_abstat_verdict)verdict)));
		if (verdict != GDN_AB_INCONCLUSIVE)
			break;
		if (i < max)
			gdn_loop_reportf(it, GDN_LOOP_INFO,
					 "A/B inconclusive after %zu pairs ([%+.2f%%, %+.2f%%]): "
					 "one pair more",
					 st.pairs, st.lo_pct, st.hi_pct);
	}
	free(suffix);
	return ret;
}

/* Profile perf_repeats times into a new measurement (kept in g->measured). */
int gate_measure(struct gdn_gate *g, const struct gdn_loop_iter *it, int *rc, struct gdn_err *err)
{
	return gate_measure_opt(g, it, true, rc, err);
}

/* ab: --perf-ab may apply (not when the champion itself is re-profiled) */
int gate_measure_opt(struct gdn_gate *g, const struct gdn_loop_iter *it, bool ab, int *rc,
		     struct gdn_err *err)
{
	struct gdn_perf_measurement *m;
	long k = g->perf_repeats > 0 ? g->perf_repeats : 1;
	int ret = 0;

	const char *sha = ab ? ab_champion(g, it) : NULL;

	gate_drop_measured(g);
	m = xcalloc(1, sizeof(*m));
	m->iteration = it->iteration;
	g->measured = m;
	g->measured_iter = it->iteration;
	*rc = 0;
	if (sha)
		return measure_ab(g, it, sha, m, rc, err);
	for (long i = 1; i <= k && !ret; i++) {
		int one = 0;

		ret = gate_profile_once(g, it, i, m, &one, err);
		if (one && !*rc)
			*rc = one;
		/* SIGINT/SIGTERM: no further runs, and no decision on a partial measurement */
		if (!ret && gdn_proc_interrupted())
			ret = gdn_err_set(err, GDN_EINTR, "interrupted during the profile");
	}
	return ret;
}
