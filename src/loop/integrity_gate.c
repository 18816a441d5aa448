/*
 * The integrity gate on the loop's side (integrity.h): the candidate's
 * diff, the sealed holdout run, the rules, the journal and the action.
 */
#include "gdnctl/compat.h"
#include <fcntl.h>
#include <math.h>
#include <unistd.h>
#include "gdnctl/err.h"
#include "gdnctl/gitops.h"
#include "gdnctl/integrity.h"
#include "gdnctl/loop.h"
#include "gdnctl/perf.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define DIFF_MAX (16 << 20) /* bytes of the candidate's diff that are scanned */

void gdn_integrity_release(struct gdn_integrity *g)
{
	FREE_AND_NULL(g->reason);
}

/* The device time per step of every sample's trace: its steps, else its step_ms. */
static void steps_of(json_t *trace, double **v, size_t *n, size_t *alloc)
{
	json_t *per = json_object_get(trace, "step_samples_ms"), *x;
	size_t i;

	if (json_array_size(per)) {
		json_array_foreach(per, i, x) if (json_number_value(x) > 0)
		{
			ALLOC_GROW(*v, *n + 1, *alloc);
			(*v)[(*n)++] = json_number_value(x);
		}
	} else if (json_number_value(json_object_get(trace, "step_ms")) > 0) {
		ALLOC_GROW(*v, *n + 1, *alloc);
		(*v)[(*n)++] = json_number_value(json_object_get(trace, "step_ms"));
	}
}

/* The traces of a measurement, or of a perf record's "samples" (m NULL). */
struct traces {
	json_t *v[256];
	size_t nr;
};
static void traces_of(const struct gdn_perf_measurement *m, json_t *rec, struct traces *t)
{
	json_t *s;
	size_t i;

	t->nr = 0;
	for (i = 0; m && i < m->nr && t->nr < ARRAY_SIZE(t->v); i++)
		if (m->v[i].trace)
			t->v[t->nr++] = m->v[i].trace;
	if (m)
		return;
	json_array_foreach(json_object_get(rec, "samples"), i, s)
	{
		json_t *tr = json_object_get(s, "trace");

		if (json_is_object(tr) && t->nr < ARRAY_SIZE(t->v))
			t->v[t->nr++] = tr;
	}
	if (!t->nr && json_is_object(json_object_get(rec, "trace")))
		t->v[t->nr++] = json_object_get(rec, "trace");
}

static json_t *work_of(const struct traces *t)
{
	for (size_t i = 0; i < t->nr; i++)
		if (json_is_object(json_object_get(t->v[i], "work")))
			return json_object_get(t->v[i], "work");
	return NULL;
}

/* The speed ratio the metric claims (> 1: faster), NAN when the metric is the trace's own. */
static double metric_ratio(const struct gdn_perf_config *pc, const struct gdn_perf_verdict *v)
{
	bool lower = gdn_perf_direction_resolve(pc->direction, pc->metric) == GDN_PERF_LOWER;

	if (gdn_perf_is_trace_metric(pc->metric))
		return NAN;
	if (v->ab && isfinite(v->improvement_pct))
		return 1 + v->improvement_pct / 100;
	if (!(v->candidate > 0) || !(v->champion > 0))
		return NAN;
	return lower ? v->champion / v->candidate : v->candidate / v->champion;
}

static int check_diff(const struct gdn_integrity *g, const struct gdn_loop_iter *it,
		      struct gdn_integrity_findings *f, struct gdn_err *err)
{
	struct gdn_git git = {.workdir = g->workdir, .quiet = true};
	struct strvec hits = STRVEC_INIT;
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret;

	if (!g->c->pats.nr || g->c->policy[GDN_RULE_DIFF] == GDN_INTEGRITY_OFF)
		return 0;
	out.limit = DIFF_MAX;
	ret = gdn_git_runl(&git, &rc, &out, err, "-c", "core.quotepath=off", "diff", "--no-color",
			   "--no-ext-diff", "--no-renames", it->head_before, it->head_after, NULL);
	if (!ret && rc)
		ret = gdn_err_set(err, GDN_EIO, "git diff %s %s failed (exit %d)", it->head_before,
				  it->head_after, rc);
	if (!ret)
		gdn_diffpat_scan(&g->c->pats, out.buf, out.len, &hits);
	for (size_t i = 0; i < hits.nr; i++)
		gdn_integrity_add(f, g->c, GDN_RULE_DIFF, "suspicious diff: %s", hits.v[i]);
	strvec_clear(&hits);
	sbuf_release(&out);
	return ret;
}

/* A seed nobody saw before: /dev/urandom, else the clock and the pid. */
static unsigned long long fresh_seed(void)
{
	unsigned long long s = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &s, sizeof(s)) != (ssize_t)sizeof(s)) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		s = (unsigned long long)t.tv_nsec ^ ((unsigned long long)t.tv_sec << 20) ^
		    (unsigned long long)getpid();
	}
	if (fd >= 0)
		close(fd);
	return s % 4294967291ULL;
}

static int run_holdout(const struct gdn_integrity *g, const struct gdn_loop_iter *it,
		       struct gdn_integrity_findings *f, json_t *ev, struct gdn_err *err)
{
	const struct gdn_integrity_config *c = g->c;
	struct gdn_proc p = GDN_PROC_INIT;
	/* the user's own command string (project.holdout_command) */
	const char *argv[] = {"bash", "-c", c->holdout_command, NULL};
	char hex[65];
	char *env[3];
	unsigned long long seed = fresh_seed();
	int ret;

	if (!c->holdout_command || c->policy[GDN_RULE_HOLDOUT] == GDN_INTEGRITY_OFF)
		return 0;
	ret = gdn_integrity_hash_file(c->holdout_file, hex, err);
	if (ret || strcmp(hex, c->holdout_sha256)) {
		gdn_integrity_add(
		    f, c, GDN_RULE_HOLDOUT,
		    "holdout failed: '%s' changed since the start (sha256 %s, was %.12s)",
		    c->holdout_file, ret ? "unreadable" : hex, c->holdout_sha256);
		gdn_err_clear(err);
		return 0;
	}
	env[0] = xstrfmt("GDNCTL_HOLDOUT_FILE=%s", c->holdout_file);
	env[1] = xstrfmt("GDNCTL_HOLDOUT_SEED=%llu", seed);
	env[2] = NULL;
	p.argv = argv;
	p.dir = g->workdir;
	p.env = (const char *const *)env;
	p.timeout_ms = (int)c->holdout_timeout_ms;
	p.capture = true;
	p.out.limit = 64 << 10;
	gdn_loop_reportf(it, GDN_LOOP_INFO, "holdout check (seed %llu): %s", seed,
			 c->holdout_command);
	ret = gdn_proc_run(&p, err);
	if (!ret) {
		int code = gdn_proc_exit_code(&p);
		const char *last = p.out.buf + p.out.len;

		json_object_set_new(ev, "holdout",
				    json_pack("{sIsIss}", "exit", (json_int_t)code, "seed",
					      (json_int_t)seed, "sha256", hex));
		while (last > p.out.buf && last[-1] == '\n')
			last--;
		while (last > p.out.buf && last[-1] != '\n' && p.out.buf + p.out.len - last < 160)
			last--;
		if (code)
			gdn_integrity_add(f, c, GDN_RULE_HOLDOUT,
					  "holdout failed: exit %d with seed %llu (%.*s)", code,
					  seed, (int)strcspn(last, "\n"), last);
	}
	gdn_proc_release(&p);
	free(env[0]);
	free(env[1]);
	return ret;
}

/* The journal's figures of both rulers and of the work. */
static void figures(json_t *ev, const struct gdn_integrity_input *in, double conf)
{
	double r, lo, hi;

	json_object_set_new(ev, "metric_ratio",
			    isfinite(in->metric_ratio) ? json_real(in->metric_ratio) : json_null());
	if (!gdn_integrity_device_ratio(in, conf, &r, &lo, &hi))
		json_object_set_new(ev, "device",
				    json_pack("{sfsfsfsIsI}", "ratio", r, "lo", lo, "hi", hi,
					      "steps_champion", (json_int_t)in->n_champion,
					      "steps_candidate", (json_int_t)in->n_candidate));
	if (in->work_champion)
		json_object_set(ev, "work_champion", in->work_champion);
	if (in->work_candidate)
		json_object_set(ev, "work_candidate", in->work_candidate);
}

/* Reject: the state's champion back, the record marked, the verdict reverting. */
static void reject(struct gdn_integrity *g, struct gdn_perf_state *st, json_t *champ,
		   struct gdn_perf_verdict *v, const struct gdn_integrity_finding *d)
{
	json_t *hist = json_object_get(st->doc, "history");
	json_t *rec = json_array_get(hist, json_array_size(hist) - 1);
	const char *rule = gdn_enum_name(gdn_integrity_rule_enum, d->rule);
	struct strvec reasons = STRVEC_INIT;

	if (v->decision == GDN_PERF_PROMOTED)
		json_object_set(st->doc, "champion", champ ? champ : json_null());
	if (rec) {
		json_object_set_new(rec, "decision", json_string("gate_regression"));
		json_object_set_new(rec, "integrity",
				    json_pack("{ssssss}", "rule", rule, "action",
					      gdn_enum_name(gdn_integrity_policy_enum, d->policy),
					      "reason", d->reason));
	}
	v->decision = GDN_PERF_GATE_REGRESSION;
	v->action.revert = true;
	v->action.count_failure = v->action.stop = false;
	g->reason = d->policy == GDN_INTEGRITY_HOLD
			? xstrfmt("held for review: integrity (%s): %s", rule, d->reason)
			: xstrfmt("integrity (%s): %s", rule, d->reason);
	strvec_push(&reasons, g->reason);
	strvec_pushv(&reasons, (const char *const *)v->reasons.v);
	strvec_clear(&v->reasons);
	v->reasons = reasons;
	if (rec) { /* the state's history says why, as the journal does */
		json_t *why = json_array();

		for (size_t i = 0; i < v->reasons.nr; i++)
			json_array_append_new(why, json_string(v->reasons.v[i]));
		json_object_set_new(rec, "reasons", why);
	}
}

/* Fill the rules' input from the measurements (the arrays are the caller's to free). */
static void gather(const struct gdn_perf_config *pc, const struct gdn_perf_verdict *v,
		   json_t *champ, const struct gdn_perf_measurement *cand,
		   const struct gdn_perf_measurement *champ_m, struct gdn_integrity_input *in,
		   double **a, double **b)
{
	struct traces tc, tk;
	size_t na = 0, aa = 0, nb = 0, ab = 0;

	traces_of(champ_m, champ, &tc);
	traces_of(cand, NULL, &tk);
	for (size_t i = 0; i < tc.nr; i++)
		steps_of(tc.v[i], a, &na, &aa);
	for (size_t i = 0; i < tk.nr; i++)
		steps_of(tk.v[i], b, &nb, &ab);
	in->metric_ratio = metric_ratio(pc, v);
	in->dev_champion = *a;
	in->n_champion = na;
	in->dev_candidate = *b;
	in->n_candidate = nb;
	in->work_champion = work_of(&tc);
	in->work_candidate = work_of(&tk);
}

int gdn_integrity_gate(struct gdn_integrity *g, const struct gdn_loop_iter *it,
		       const struct gdn_perf_config *pc, struct gdn_perf_state *st, json_t *champ,
		       const struct gdn_perf_measurement *cand,
		       const struct gdn_perf_measurement *champ_m, struct gdn_perf_verdict *v,
		       struct gdn_err *err)
{
	struct gdn_integrity_findings f = {0};
	struct gdn_integrity_input in = {0};
	const struct gdn_integrity_finding *d;
	double *a = NULL, *b = NULL;
	json_t *ev = NULL, *list;
	const char *action = "pass";
	int ret;

	FREE_AND_NULL(g->reason);
	if (!g->c || !g->c->on || it->iteration <= 0 || it->commits <= 0 || v->action.revert ||
	    v->action.stop)
		return 0;
	ev = json_pack("{sIss}", "iteration", (json_int_t)it->iteration, "commit", it->head_after);
	gather(pc, v, champ, cand, champ_m, &in, &a, &b);
	ret = check_diff(g, it, &f, err);
	if (!ret) {
		gdn_integrity_check_physics(g->c, &in, &f);
		gdn_integrity_check_work(g->c, &in, &f);
		gdn_integrity_check_rulers(g->c, &in, &f);
	}
	d = gdn_integrity_decisive(&f);
	if (!ret && (!d || d->policy == GDN_INTEGRITY_FLAG))
		ret = run_holdout(g, it, &f, ev, err);
	if (ret)
		goto out;
	figures(ev, &in, g->c->confidence);
	list = json_array();
	for (size_t i = 0; i < f.nr; i++)
		json_array_append_new(
		    list, json_pack("{ssssss}", "rule",
				    gdn_enum_name(gdn_integrity_rule_enum, f.v[i].rule), "policy",
				    gdn_enum_name(gdn_integrity_policy_enum, f.v[i].policy),
				    "reason", f.v[i].reason));
	json_object_set_new(ev, "findings", list);
	d = gdn_integrity_decisive(&f);
	if (d) {
		action = gdn_enum_name(gdn_integrity_policy_enum, d->policy);
		json_object_set_new(ev, "rule",
				    json_string(gdn_enum_name(gdn_integrity_rule_enum, d->rule)));
		json_object_set_new(ev, "reason", json_string(d->reason));
		gdn_loop_reportf(it, GDN_LOOP_NOTE, "integrity (%s, %s): %s",
				 gdn_enum_name(gdn_integrity_rule_enum, d->rule), action,
				 d->reason);
	}
	json_object_set_new(ev, "action", json_string(action));
	if (d && d->policy != GDN_INTEGRITY_FLAG)
		reject(g, st, champ, v, d);
	else if (d)
		strvec_pushf(&v->reasons, "integrity flag (%s): %s",
			     gdn_enum_name(gdn_integrity_rule_enum, d->rule), d->reason);
	it->journal(it->ctx, "integrity", ev);
	ev = NULL;
out:
	json_decref(ev);
	free(a);
	free(b);
	gdn_integrity_findings_release(&f);
	return ret;
}

void gdn_integrity_held(const char *buf, size_t len, struct strvec *out)
{
	char *reason = NULL;
	long held = -1;

	for (size_t off = 0; off < len;) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - buf - off) : len - off;
		json_t *o = json_loadb(buf + off, n, 0, NULL);
		const char *e = json_string_value(json_object_get(o, "event"));
		const char *act = json_string_value(json_object_get(o, "action"));
		const char *ref = json_string_value(json_object_get(o, "discarded_ref"));
		const char *why = json_string_value(json_object_get(o, "reason"));
		long it = (long)json_integer_value(json_object_get(o, "iteration"));

		off += n + 1;
		if (e && !strcmp(e, "integrity") && act && !strcmp(act, "hold")) {
			held = it;
			free(reason);
			reason = xstrdup(why ? why : "?");
		} else if (e && !strcmp(e, "revert") && it == held && reason) {
			strvec_pushf(out, "iteration %ld: %s (kept as %s)", it, reason,
				     ref ? ref : "?");
			held = -1;
		}
		json_decref(o);
	}
	free(reason);
}
