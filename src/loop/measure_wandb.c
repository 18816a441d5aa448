/*
 * The W&B metric source: the value of the metric in the run the profile
 * printed (its URL, or the run name W&B printed) or found by prefix, as a
 * summary or a history-window aggregate through the hub client.
 */
#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/err.h"
#include "gdnctl/http.h"
#include "gdnctl/wandb.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "measure_impl.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Length of a path segment at p (up to '/', white space, or one of `stop`). */
static size_t segment(const char *p, const char *end, const char *stop)
{
	size_t n = 0;

	while (p + n < end && p[n] != '/' && !is_space(p[n]) && !strchr(stop, p[n]))
		n++;
	return n;
}

/* Match "E/P/runs/ID" at p; fills ref ("E/P/ID") and returns the length matched, or 0. */
static size_t match_run_path(const char *p, const char *end, struct sbuf *ref)
{
	const char *q = p;
	size_t e, pr, id;

	e = segment(q, end, "");
	if (!e || q + e >= end || q[e] != '/')
		return 0;
	q += e + 1;
	pr = segment(q, end, "");
	if (!pr || q + pr + 6 > end || memcmp(q + pr, "/runs/", 6))
		return 0;
	q += pr + 6;
	id = segment(q, end, "?#");
	if (!id || (q + id < end && !q[id]))
		return 0; /* no id, or one a NUL byte cut short */
	sbuf_reset(ref);
	sbuf_add(ref, p, e);
	sbuf_addch(ref, '/');
	sbuf_add(ref, p + e + 1, pr);
	sbuf_addch(ref, '/');
	sbuf_add(ref, q, id);
	return (size_t)(q + id - p);
}

char *gdn_measure_find_run_url(const char *out, size_t len, const char *base_url, char **url)
{
	const char *hosts[3] = {"https://wandb.ai/", NULL, NULL};
	const char *end = out + len, *best = NULL;
	struct sbuf ref = SBUF_INIT, best_ref = SBUF_INIT;
	char *base = NULL;
	size_t best_len = 0;

	*url = NULL;
	if (base_url && *base_url) {
		size_t n = strlen(base_url);

		while (n && base_url[n - 1] == '/')
			n--;
		base = xstrfmt("%.*s/", (int)n, base_url);
		if (strcmp(base, hosts[0]))
			hosts[1] = base;
	}
	for (size_t h = 0; hosts[h]; h++) {
		size_t hl = strlen(hosts[h]);

		for (const char *p = out; p + hl <= end; p++) {
			size_t m;

			if (memcmp(p, hosts[h], hl))
				continue;
			m = match_run_path(p + hl, end, &ref);
			if (m && (!best || p > best)) {
				best = p;
				best_len = hl + m;
				sbuf_reset(&best_ref);
				sbuf_add(&best_ref, ref.buf, ref.len);
			}
		}
	}
	free(base);
	sbuf_release(&ref);
	if (!best) {
		sbuf_release(&best_ref);
		return NULL;
	}
	*url = xstrndup(best, best_len);
	return sbuf_detach(&best_ref, NULL);
}

/* The word after `marker` on the line at p (within end), or 0 length. */
static size_t word_after(const char *p, const char *end, const char *marker, const char **w)
{
	size_t ml = strlen(marker), n = 0;

	if ((size_t)(end - p) < ml || memcmp(p, marker, ml))
		return 0;
	p += ml;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (p + n < end && p[n] && !is_space(p[n]))
		n++;
	if (p + n < end && !p[n])
		return 0; /* a word a NUL byte cut short is no name */
	*w = p;
	return n;
}

char *gdn_measure_find_run_name(const char *out, size_t len)
{
	const char *end = out + len, *name = NULL;
	size_t name_len = 0;

	for (const char *line = out; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		const char *p;

		if (!eol)
			eol = end;
		p = line;
		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		if ((size_t)(eol - p) > 6 && !memcmp(p, "wandb:", 6)) {
			const char *w = NULL;
			size_t n;

			p += 6;
			for (const char *q = p; q < eol; q++) {
				n = word_after(q, eol, "Syncing run", &w);
				if (!n)
					n = word_after(q, eol, "View run", &w);
				if (n && (size_t)(eol - (w + n)) >= 3 && !memcmp(w + n, " at", 3)) {
					name = w;
					name_len = n;
					break;
				}
				if (n && (size_t)(eol - q) >= 11 && !memcmp(q, "Syncing run", 11)) {
					name = w;
					name_len = n;
					break;
				}
			}
		}
		line = eol + 1;
	}
	return name ? xstrndup(name, name_len) : NULL;
}

/* The prefix with "{iteration}" expanded; new string. */
static char *expand_prefix(const char *prefix, long iteration)
{
	struct sbuf sb = SBUF_INIT;
	const char *p = prefix, *hit;

	while ((hit = strstr(p, "{iteration}"))) {
		sbuf_add(&sb, p, (size_t)(hit - p));
		sbuf_addf(&sb, "%03ld", iteration);
		p = hit + strlen("{iteration}");
	}
	sbuf_adds(&sb, p);
	return sbuf_detach(&sb, NULL);
}

static void warn_status(const struct gdn_measure_opts *o, const struct gdn_metric *m,
			const char *run, struct strvec *warnings)
{
	if (m->status == GDN_METRIC_TOO_FEW)
		strvec_pushf(warnings,
			     "wandb history window had insufficient samples for: %s(%zu<%zu) in "
			     "steps [%" PRId64 ", %" PRId64 "] of %s; the sample is unscored",
			     m->key, m->points, o->window.min_points, o->window.step_min,
			     o->window.step_max, run);
	else
		strvec_pushf(warnings, "W&B run %s: %s is %s; the sample is unscored", run, m->key,
			     gdn_metric_status_name(m->status));
}

/*
 * Steps 2 and 3 of gdn_measure_wandb: the run W&B's output names, or the
 * newest of --perf-wandb-run-prefix. 1: found (*ref, *url new strings, *why
 * static); 0: nothing names a run and --perf-source auto keeps the output's
 * value; -1: the sample is unscored (*status, a warning).
 */
static int find_run(struct gdn_wandb *c, bool *inited, const char *base,
		    const struct gdn_http_opts *ho, const struct gdn_measure_opts *o,
		    long iteration, const char *out, size_t len, char **ref, char **url,
		    const char **why, const char **status, struct strvec *warnings)
{
	struct gdn_wandb_run run = {0};
	struct gdn_err err = GDN_ERR_INIT;
	char *name = gdn_measure_find_run_name(out, len), *prefix = NULL;
	int ret;

	if (!name && !o->run_prefix) {
		if (o->source == GDN_MEASURE_AUTO)
			return 0; /* nothing names a run: the output's value stands */
		strvec_push(warnings, "--perf-source wandb: the profile printed no W&B run URL or "
				      "run name and --perf-wandb-run-prefix is not set; the sample "
				      "is unscored");
		*status = "no-run";
		return -1;
	}
	ret = gdn_wandb_init(c, base, NULL, ho, &err);
	*inited = !ret;
	if (!ret && name) {
		char *r = xstrfmt("%s/%s/%s", o->entity, o->project, name);

		*why = "run name in the profile output";
		ret = gdn_wandb_get_run(c, r, &run, &err);
		free(r);
	} else if (!ret) {
		prefix = expand_prefix(o->run_prefix, iteration);
		*why = "run prefix";
		ret = gdn_wandb_find_run(c, o->entity, o->project, prefix, 0, &run, &err);
	}
	if (ret == GDN_ENOTFOUND && o->source == GDN_MEASURE_AUTO) {
		strvec_pushf(warnings, "no W&B run found for the %s: %s; using the profile output",
			     *why, err.msg);
		ret = 0;
	} else if (ret) {
		strvec_pushf(warnings, "W&B run lookup failed (%s): %s; the sample is unscored",
			     *why ? *why : "client", err.msg);
		*status = "lookup-failed";
		ret = -1;
	} else {
		*ref = xstrfmt("%s/%s/%s", run.entity, run.project, run.name);
		*url = xstrdup(run.url ? run.url : *ref);
		ret = 1;
	}
	gdn_wandb_run_release(&run);
	free(name);
	free(prefix);
	return ret;
}

/* The metric of run `ref`: its history window (else, missing there, its summary) into set. */
static int fetch_metric(struct gdn_wandb *c, const struct gdn_measure_opts *o, const char *ref,
			const char *metric, const char *url, struct gdn_metric_set *set,
			struct strvec *warnings, struct gdn_err *err)
{
	const char *keys[2] = {metric, NULL};
	const struct gdn_metric *m;
	int ret;

	if (!o->history)
		return gdn_wandb_summary(c, ref, keys, set, err);
	ret = gdn_wandb_history_agg(c, ref, keys, &o->window, set, err);
	m = ret ? NULL : gdn_metric_set_get(set, metric);
	if (m && m->status == GDN_METRIC_MISSING) {
		/* the original's fallback: a run that logs no history for the key */
		strvec_pushf(warnings,
			     "wandb history-window aggregation unavailable for %s in %s; "
			     "falling back to summary metrics for performance scoring.",
			     metric, url);
		gdn_metric_set_release(set);
		memset(set, 0, sizeof(*set));
		ret = gdn_wandb_summary(c, ref, keys, set, err);
	}
	return ret;
}

void gdn_measure_wandb(const struct gdn_measure_opts *o, const char *metric, long iteration,
		       const char *out, size_t len, struct gdn_perf_sample *s, bool *used_wandb,
		       char **run_url, struct strvec *warnings, json_t **detail)
{
	struct gdn_wandb c = {0};
	struct gdn_metric_set set = {0};
	struct gdn_http_opts ho = o->http;
	struct gdn_err err = GDN_ERR_INIT;
	const struct gdn_metric *m = NULL;
	char *ref = NULL, *url = NULL;
	const char *base = o->base_url ? o->base_url : getenv("WANDB_BASE_URL");
	const char *why = NULL, *status = "unscored";
	bool wandb = false, inited = false;
	int ret;

	*used_wandb = false;
	*run_url = NULL;
	if (detail)
		*detail = NULL;
	if (o->source == GDN_MEASURE_CLI || o->source == GDN_MEASURE_TRACE ||
	    gdn_perf_is_trace_metric(metric))
		return;
	if (o->fetch_timeout_ms > 0)
		ho.deadline = gdn_now_ms() + o->fetch_timeout_ms;

	/* 1. a run URL the profile printed (the original's order) */
	ref = gdn_measure_find_run_url(out, len, base, &url);
	if (!ref) {
		/* 2. the run name W&B printed, or 3. discovery by prefix: both need a lookup */
		ret = find_run(&c, &inited, base, &ho, o, iteration, out, len, &ref, &url, &why,
			       &status, warnings);
		if (!ret)
			goto out;
		wandb = true;
		if (ret < 0)
			goto unscored;
	}
	wandb = true;
	if (!inited) {
		ret = gdn_wandb_init(&c, base, NULL, &ho, &err);
		inited = !ret;
		if (ret)
			goto failed;
	}
	if (fetch_metric(&c, o, ref, metric, url, &set, warnings, &err))
		goto failed;
	m = gdn_metric_set_get(&set, metric);
	if (set.run.url) {
		free(url);
		url = xstrdup(set.run.url);
	}
	if (!m || m->status != GDN_METRIC_OK) {
		struct gdn_metric none = {(char *)metric, GDN_METRIC_MISSING, 0, 0, 0};

		warn_status(o, m ? m : &none, url, warnings);
		status = gdn_metric_status_name(m ? m->status : GDN_METRIC_MISSING);
		goto unscored;
	}
	gdn_perf_sample_set_value(s, set.source, m->value);
	status = s->has_value ? "ok" : "non-finite";
	goto done;
failed:
	strvec_pushf(warnings, "W&B fetch failed for %s: %s; the sample is unscored", url, err.msg);
	status = "fetch-failed";
unscored:
	gdn_perf_sample_set_value(s, set.source ? set.source : "wandb", NAN);
done:
	if (detail)
		*detail =
		    json_pack("{s:s?, s:s?, s:s, s:I, s:o}", "source", s->source, "wandb_run", url,
			      "status", status, "points", (json_int_t)(m ? m->points : 0), "value",
			      s->has_value ? json_real(s->value) : json_null());
out:
	*used_wandb = wandb;
	*run_url = url;
	url = NULL;
	if (inited)
		gdn_wandb_release(&c);
	gdn_metric_set_release(&set);
	free(ref);
	free(url);
}

static bool wandb_takes(const char *metric)
{
	return !gdn_perf_is_trace_metric(metric);
}

/* After a profile that exited 0, when the options name W&B (or auto) for a non-trace metric. */
static void wandb_sample(const struct gdn_measure_opts *o, const struct gdn_measure_input *in,
			 struct gdn_perf_sample *s, const struct gdn_measure_sink *sink)
{
	struct strvec warnings = STRVEC_INIT;
	char *url = NULL;
	json_t *detail = NULL;
	bool used = false;

	if (!o || in->exit_code)
		return;
	gdn_measure_wandb(o, in->metric, in->iteration, in->out, in->len, s, &used, &url, &warnings,
			  &detail);
	for (size_t i = 0; i < warnings.nr; i++)
		if (sink->warn)
			sink->warn(warnings.v[i], sink->payload);
	if (used && url && sink->run_url)
		sink->run_url(url, sink->payload);
	if (detail && sink->detail)
		sink->detail(detail, sink->payload);
	else
		json_decref(detail);
	free(url);
	strvec_clear(&warnings);
}

const struct measure_source measure_wandb_source = {
    .id = GDN_MEASURE_WANDB,
    .takes = wandb_takes,
    .sample = wandb_sample,
};
