/*
 * Cold verification of a loop run's kept commits (verify.h): fresh
 * interleaved A/B runs of the profile command, baseline and candidate
 * each in a worktree of its own, the paired statistic of abstat.h.
 */
#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/abstat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/gitops.h"
#include "gdnctl/perf.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/trace_source.h"
#include "gdnctl/verify.h"
#include "gdnctl/xalloc.h"

#define VERIFY_SEED 0x5eedf00dULL

void gdn_verify_result_release(struct gdn_verify_result *r)
{
	for (size_t i = 0; i < r->nr; i++)
		free(r->v[i].commit);
	free(r->v);
	free(r->baseline);
	free(r->metric);
	memset(r, 0, sizeof(*r));
}

static void say(const struct gdn_verify_opts *o, const char *fmt, ...) GDN_PRINTF(2, 3);
static void say(const struct gdn_verify_opts *o, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (!o->say)
		return;
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	o->say(sb.buf, o->payload);
	sbuf_release(&sb);
}

/* The metric of a trace the run wrote in `dir` since `since`. */
static int trace_value(const struct gdn_verify_opts *o, const char *dir, const char *metric,
		       const struct timespec *since, double *value, struct gdn_err *err)
{
	struct gdn_trace_opts topts = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary sum = GDN_TRACE_SUMMARY_INIT;
	char *trace = o->trace_glob ? gdn_trace_newest_local(dir, o->trace_glob, since) : NULL;
	int ret;

	if (!trace)
		return gdn_err_set(err, GDN_EFAILED,
				   "the profile in '%s' wrote no trace matching '%s'", dir,
				   o->trace_glob ? o->trace_glob : "(no project.trace_glob)");
	ret = gdn_trace_summarize_file(trace, &topts, &sum, err);
	if (!ret)
		ret = gdn_perf_trace_metric(&sum, metric, value, err);
	gdn_trace_summary_release(&sum);
	free(trace);
	return ret;
}

/* One profile run in `dir`: the metric's value. */
static int profile_value(const struct gdn_verify_opts *o, const char *command, const char *dir,
			 const char *metric, double *value, struct gdn_err *err)
{
	/* the user's own command string (project.profile_command) */
	const char *argv[] = {"bash", "-c", command, NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct timespec since;
	int ret;

	clock_gettime(CLOCK_REALTIME, &since);
	since.tv_sec -= 1;
	p.argv = argv;
	p.dir = dir;
	p.capture = true;
	p.out.limit = 16 << 20;
	p.timeout_ms = (int)o->timeout_ms;
	ret = gdn_proc_run(&p, err);
	if (!ret && gdn_proc_exit_code(&p))
		ret = gdn_err_set(err, GDN_EFAILED, "the profile in '%s' exited %d", dir,
				  gdn_proc_exit_code(&p));
	if (!ret && gdn_perf_is_trace_metric(metric))
		ret = trace_value(o, dir, metric, &since, value, err);
	else if (!ret && gdn_perf_parse_cli_metric(p.out.buf, p.out.len, metric, value))
		ret = gdn_err_set(err, GDN_EFAILED, "the profile in '%s' printed no '%s'", dir,
				  metric);
	gdn_proc_release(&p);
	return ret;
}

/* Interleaved pairs, baseline then candidate; the row's estimate. */
static int measure(const struct gdn_verify_opts *o, const char *command, const char *metric,
		   bool lower, const char *bdir, const char *cdir, struct gdn_verify_row *row,
		   struct gdn_err *err)
{
	long n = o->pairs >= 2 ? o->pairs : 2;
	double *a = xcalloc((size_t)n, sizeof(*a)), *b = xcalloc((size_t)n, sizeof(*b));
	struct gdn_abstat st;
	int ret = 0;

	for (long i = 0; i < n && !ret; i++) {
		ret = profile_value(o, command, bdir, metric, &a[i], err);
		if (!ret)
			ret = profile_value(o, command, cdir, metric, &b[i], err);
		if (!ret)
			say(o, "iteration %ld, pair %ld of %ld: baseline %s=%.6g, kept %.6g",
			    row->iteration, i + 1, n, metric, a[i], b[i]);
		if (!ret && gdn_proc_interrupted())
			ret = gdn_err_set(err, GDN_EINTR, "interrupted");
	}
	if (!ret &&
	    gdn_abstat_ratio_ci(a, b, (size_t)n, lower,
				gdn_abstat_look_confidence(o->confidence, 1), VERIFY_SEED, &st))
		ret = gdn_err_set(err, GDN_EFAILED, "%s: values that are not positive", metric);
	if (!ret) {
		row->verified_pct = st.improvement_pct;
		row->lo_pct = st.lo_pct;
		row->hi_pct = st.hi_pct;
		row->pairs = st.pairs;
		row->reproduced = row->claimed_pct >= st.lo_pct && row->claimed_pct <= st.hi_pct;
		row->faster = st.lo_pct > 0;
	}
	free(a);
	free(b);
	return ret;
}

/* The claimed improvement of a record over the baseline's value, percent. */
static double claimed(json_t *rec, double base, bool lower)
{
	double v = json_number_value(json_object_get(rec, "metric_value"));

	if (!(v > 0) || !(base > 0))
		return NAN;
	return (lower ? base / v - 1 : v / base - 1) * 100;
}

static int verify_commits(const struct gdn_verify_opts *o, json_t *hist, size_t from, json_t *base,
			  struct gdn_verify_result *res, struct gdn_err *err)
{
	struct gdn_git git = {.workdir = o->repo, .quiet = true};
	char *bdir = xstrfmt("%s/verify/baseline", o->log_dir);
	char *cdir = xstrfmt("%s/verify/kept", o->log_dir);
	const char *command =
	    o->command ? o->command : json_string_value(json_object_get(base, "command"));
	double bval = json_number_value(json_object_get(base, "metric_value"));
	json_t *rec;
	size_t i;
	int ret;

	if (!command || !*command)
		ret = gdn_err_set(err, GDN_ECONFIG,
				  "no profile command: the state recorded none "
				  "and project.profile_command is not set");
	else
		ret = gdn_git_worktree_add(&git, bdir, res->baseline, err);
	json_array_foreach(hist, i, rec)
	{
		const char *d = json_string_value(json_object_get(rec, "decision"));
		const char *sha = json_string_value(json_object_get(rec, "commit"));
		struct gdn_verify_row *row;

		if (ret || i < from || !d || strcmp(d, "promoted") || !sha)
			continue;
		ALLOC_GROW(res->v, res->nr + 1, res->alloc);
		row = &res->v[res->nr++];
		memset(row, 0, sizeof(*row));
		row->iteration = (long)json_integer_value(json_object_get(rec, "iteration"));
		row->commit = xstrdup(sha);
		row->claimed_pct = claimed(rec, bval, res->lower_is_better);
		say(o, "iteration %ld: %.12s against the baseline %.12s", row->iteration, sha,
		    res->baseline);
		ret = gdn_git_worktree_add(&git, cdir, sha, err);
		if (!ret)
			ret = measure(o, command, res->metric, res->lower_is_better, bdir, cdir,
				      row, err);
		gdn_git_worktree_remove(&git, cdir, NULL);
	}
	gdn_git_worktree_remove(&git, bdir, NULL);
	free(bdir);
	free(cdir);
	return ret;
}

int gdn_verify_run(const struct gdn_verify_opts *o, struct gdn_verify_result *res,
		   struct gdn_err *err)
{
	struct gdn_perf_state st = GDN_PERF_STATE_INIT;
	char *path = xstrfmt("%s/perf_state.json", o->log_dir), *out = NULL;
	json_t *hist, *rec, *base = NULL, *doc = NULL;
	size_t i, from = 0;
	int ret = gdn_perf_state_load(&st, path, err);

	hist = st.doc ? json_object_get(st.doc, "history") : NULL;
	json_array_foreach(hist, i, rec)
	{
		const char *d = json_string_value(json_object_get(rec, "decision"));

		/* the last run's: its baseline and what it promoted after it */
		if (d && !strcmp(d, "baseline") &&
		    json_string_value(json_object_get(rec, "commit"))) {
			base = rec;
			from = i;
		}
	}
	if (!ret && !base)
		ret = gdn_err_set(err, GDN_ENOTFOUND, "'%s' has no baseline", path);
	if (!ret) {
		res->baseline = xstrdup(json_string_value(json_object_get(base, "commit")));
		res->metric = xstrdup(json_string_value(json_object_get(base, "metric")) ?: "?");
		res->lower_is_better =
		    gdn_perf_direction_resolve(
			!strcmp(json_string_value(json_object_get(base, "direction")) ?: "",
				"lower")
			    ? GDN_PERF_LOWER
			    : GDN_PERF_HIGHER,
			res->metric) == GDN_PERF_LOWER;
		ret = verify_commits(o, hist, from, base, res, err);
	}
	if (!ret && !res->nr)
		ret = gdn_err_set(err, GDN_ENOTFOUND, "the run in '%s' kept no commit", o->log_dir);
	if (!ret) {
		doc = gdn_verify_json(res);
		out = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
		free(path);
		path = xstrfmt("%s/verify.json", o->log_dir);
		ret = gdn_write_file_atomic(path, out, strlen(out), err);
	}
	json_decref(doc);
	free(out);
	free(path);
	gdn_perf_state_release(&st);
	return ret;
}

static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *gdn_verify_json(const struct gdn_verify_result *r)
{
	json_t *rows = json_array();

	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_verify_row *x = &r->v[i];

		json_array_append_new(
		    rows,
		    json_pack("{sIsssososososIsbsb}", "iteration", (json_int_t)x->iteration,
			      "commit", x->commit, "claimed_pct", num(x->claimed_pct),
			      "verified_pct", num(x->verified_pct), "ci_low_pct", num(x->lo_pct),
			      "ci_high_pct", num(x->hi_pct), "pairs", (json_int_t)x->pairs,
			      "reproduced", x->reproduced, "faster", x->faster));
	}
	return json_pack("{sssssssss o}", "schema", GDN_VERIFY_SCHEMA, "baseline",
			 r->baseline ? r->baseline : "", "metric", r->metric ? r->metric : "",
			 "direction", r->lower_is_better ? "lower" : "higher", "rows", rows);
}
