/*
 * The measured performance policy: metric extraction (cli, wandb, trace),
 * gates over per-step milliseconds of measured traces, medians and the
 * MAD confidence rule over repeated samples, and the decision with the
 * action it implies. docs/performance-policy.md describes the rules.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/wandb.h"
#include "gdnctl/perf.h"
#include "gdnctl/abstat.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"

/* Slack when comparing a percentage with a threshold (0.25 may compute as 0.2499999...). */
#define PCT_EPS	  1e-9
#define MAD_SCALE 1.4826

/* ---- names ---- */

const struct gdn_enum gdn_perf_mode_enum[] = {
    {"on", 1, "measure each iteration with project.profile_command and decide"},
    {"required", 1, "the same as on"},
    {"off", 0, "no performance policy"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_perf_direction_enum[] = {
    {"auto", GDN_PERF_AUTO,
     "from the metric's name: times (*_ms, *_s, duration, latency) lower, rates (*_per_s, "
     "throughput, mfu, tflops, speedup) higher; a name that says neither is refused"},
    {"higher", GDN_PERF_HIGHER, "higher is better"},
    {"lower", GDN_PERF_LOWER, "lower is better"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_perf_policy_enum[] = {
    {"revert-count-failure", GDN_PERF_REVERT_COUNT_FAILURE,
     "revert the iteration's commits and count one failure"},
    {"revert-continue", GDN_PERF_REVERT_CONTINUE, "revert the commits, count nothing"},
    {"fail", GDN_PERF_FAIL, "stop the loop (exit 1), commits kept"},
    {"count-failure", GDN_PERF_COUNT_FAILURE, "keep the commits, count one failure"},
    {"continue", GDN_PERF_CONTINUE, "keep the commits, count nothing"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_perf_within_enum[] = {
    {"keep", GDN_PERF_WITHIN_KEEP, "keep the commit"},
    {"revert", GDN_PERF_WITHIN_REVERT, "revert it without counting a failure"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_perf_stat_enum[] = {
    {"median", GDN_PERF_STAT_MEDIAN, "the median of the samples"},
    {"best", GDN_PERF_STAT_BEST, "the best sample (for noise that only slows down)"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_perf_decision_enum[] = {
    {"baseline", GDN_PERF_BASELINE, NULL},
    {"promoted", GDN_PERF_PROMOTED, NULL},
    {"within_threshold", GDN_PERF_WITHIN_THRESHOLD, NULL},
    {"regression", GDN_PERF_REGRESSION, NULL},
    {"gate_regression", GDN_PERF_GATE_REGRESSION, NULL},
    {"unscored", GDN_PERF_UNSCORED, NULL},
    GDN_ENUM_END,
};

const char *gdn_perf_direction_name(enum gdn_perf_direction d)
{
	return gdn_enum_name(gdn_perf_direction_enum, (int)d);
}

bool gdn_perf_is_trace_metric(const char *metric)
{
	return !strncmp(metric, "trace/", 6);
}

/* ---- the direction a metric's name says ---- */

static bool word_in(const char *w, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(w, *list))
			return true;
	return false;
}

/* units of time: a value in one is a time */
static const char *const time_units[] = {
    "ns",   "us",  "ms",   "s",	     "sec",	"secs", "second", "seconds", "msec",
    "usec", "min", "mins", "minute", "minutes", "hour", "hours",  NULL,
};
/* words that name a time */
static const char *const time_words[] = {
    "time", "duration", "latency", "elapsed", "runtime", "walltime", NULL,
};
/* words that name a rate (or a ratio of speeds) */
static const char *const rate_words[] = {
    "throughput", "mfu", "hfu", "tflops", "gflops", "pflops", "speedup", "qps", "goodput", NULL,
};
/* qualifiers after the word that says what the value is (latency_p99, mfu_pct) */
static const char *const qualifiers[] = {
    "avg", "average", "mean", "median", "min", "max", "pct", "percent", NULL,
};

static bool is_qualifier(const char *w)
{
	size_t n = strlen(w);

	/* p50, p90, p99, p999 */
	if (n >= 2 && w[0] == 'p' && strspn(w + 1, "0123456789") == n - 1)
		return true;
	return word_in(w, qualifiers);
}

#define MAX_WORDS 16

/*
 * The words of a name's last path component, lower-cased: split at '_',
 * '-', '.', ' ' and where a lower-case letter meets an upper-case one
 * (tokensPerSecond). Returns their number (at most MAX_WORDS: the last ones).
 */
static size_t name_words(const char *comp, char buf[128], const char *w[MAX_WORDS])
{
	size_t n = 0, len = 0;
	bool in = false;

	for (const char *p = comp; *p && len + 2 < 128; p++) {
		unsigned char ch = (unsigned char)*p;
		bool sep = ch == '_' || ch == '-' || ch == '.' || ch == ' ';
		bool hump = in && isupper(ch) && islower((unsigned char)p[-1]);

		if (sep || hump) {
			if (in)
				buf[len++] = '\0';
			in = false;
			if (sep)
				continue;
		}
		if (!in) {
			if (n == MAX_WORDS) {
				memmove(w, w + 1, (MAX_WORDS - 1) * sizeof(*w));
				n--;
			}
			w[n++] = buf + len;
			in = true;
		}
		buf[len++] = (char)tolower(ch);
	}
	buf[len] = '\0';
	return n;
}

enum gdn_perf_direction gdn_perf_direction_classify(const char *metric, const char **why)
{
	const char *comp = strrchr(metric, '/'), *w[MAX_WORDS], *last;
	char buf[128];
	size_t n, i;

	*why = NULL;
	if (gdn_perf_is_trace_metric(metric)) {
		*why = "a trace metric is milliseconds per step";
		return GDN_PERF_LOWER;
	}
	comp = comp ? comp + 1 : metric;
	n = name_words(comp, buf, w);
	/* X_per_<time> is a rate; <time>_per_X a time */
	for (i = n; i-- > 1;) {
		if (strcmp(w[i], "per") || i + 1 >= n)
			continue;
		if (word_in(w[i + 1], time_units)) {
			*why = "its name reads as a rate (per unit of time)";
			return GDN_PERF_HIGHER;
		}
		if (word_in(w[i - 1], time_units) || word_in(w[i - 1], time_words)) {
			*why = "its name reads as a time";
			return GDN_PERF_LOWER;
		}
		return GDN_PERF_AUTO;
	}
	/* "tokens/s": a bare unit of time after another component is a rate */
	if (n == 1 && comp != metric &&
	    (!strcmp(w[0], "s") || !strcmp(w[0], "sec") || !strcmp(w[0], "second"))) {
		*why = "its name reads as a rate (per unit of time)";
		return GDN_PERF_HIGHER;
	}
	/* the last word that says what the value is decides (step_time_ms: ms) */
	while (n > 1 && is_qualifier(w[n - 1]))
		n--;
	if (!n)
		return GDN_PERF_AUTO;
	last = w[n - 1];
	if (word_in(last, time_units) || word_in(last, time_words)) {
		*why = "its name reads as a time";
		return GDN_PERF_LOWER;
	}
	if (word_in(last, rate_words)) {
		*why = "its name reads as a rate";
		return GDN_PERF_HIGHER;
	}
	return GDN_PERF_AUTO;
}

enum gdn_perf_direction gdn_perf_direction_resolve(enum gdn_perf_direction d, const char *metric)
{
	const char *why;

	if (d != GDN_PERF_AUTO)
		return d;
	d = gdn_perf_direction_classify(metric, &why);
	/* a name that says neither: the loop refuses it at start-up; records of old runs */
	return d == GDN_PERF_AUTO ? GDN_PERF_HIGHER : d;
}

const char *gdn_perf_policy_name(enum gdn_perf_policy p)
{
	return gdn_enum_name(gdn_perf_policy_enum, (int)p);
}

const char *gdn_perf_within_name(enum gdn_perf_within w)
{
	return gdn_enum_name(gdn_perf_within_enum, (int)w);
}

const char *gdn_perf_stat_name(enum gdn_perf_stat s)
{
	return gdn_enum_name(gdn_perf_stat_enum, (int)s);
}

const char *gdn_perf_decision_name(enum gdn_perf_decision d)
{
	return gdn_enum_name(gdn_perf_decision_enum, (int)d);
}

/* ---- configuration ---- */

void gdn_perf_gates_release(struct gdn_perf_gates *g)
{
	size_t i;

	for (i = 0; i < g->nr; i++)
		free(g->v[i].name);
	FREE_AND_NULL(g->v);
	g->nr = g->alloc = 0;
	g->override_pct = -1.0;
}

static void gates_push(struct gdn_perf_gates *g, enum gdn_perf_bucket bucket, const char *name,
		       enum gdn_perf_gate_kind kind, double limit)
{
	struct gdn_perf_gate *gate;

	ALLOC_GROW(g->v, g->nr + 1, g->alloc);
	gate = &g->v[g->nr++];
	gate->bucket = bucket;
	gate->name = name ? xstrdup(name) : NULL;
	gate->kind = kind;
	gate->limit_ms = limit;
}

static int parse_limit(const char *value, double *out)
{
	char *end;
	double v;

	if (!*value || isspace((unsigned char)*value))
		return -1;
	errno = 0;
	v = strtod(value, &end);
	if (errno || *end || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

int gdn_perf_gate_parse(struct gdn_perf_gates *g, const char *spec, struct gdn_err *err)
{
	struct strvec words = STRVEC_INIT;
	struct sbuf subject = SBUF_INIT;
	enum gdn_perf_bucket bucket = GDN_PERF_BUCKET_STEP;
	const char *name = NULL;
	size_t first, i;
	double limit;
	int ret = 0;

	strvec_split(&words, spec, ' ');
	for (first = words.nr; first > 0 && strchr(words.v[first - 1], '='); first--)
		;
	for (i = 0; i < first; i++) {
		if (i)
			sbuf_addch(&subject, ' ');
		sbuf_adds(&subject, words.v[i]);
	}
	if (first == words.nr) {
		ret = gdn_err_set(err, GDN_EUSAGE, "gate rule '%s' has no SETTING=VALUE", spec);
		goto out;
	}
	if (!subject.len) {
		if (words.nr != 1 || strncmp(words.v[0], "metric_win_pct=", 15)) {
			ret = gdn_err_set(
			    err, GDN_EUSAGE,
			    "gate rule '%s' names no subject (step, category:NAME or op:NAME)",
			    spec);
			goto out;
		}
		if (parse_limit(words.v[0] + 15, &limit)) {
			ret =
			    gdn_err_set(err, GDN_EUSAGE,
					"gate rule '%s': metric_win_pct needs a number >= 0", spec);
			goto out;
		}
		g->override_pct = limit;
		goto out;
	}
	if (!strcmp(subject.buf, "step")) {
		bucket = GDN_PERF_BUCKET_STEP;
	} else if (!strncmp(subject.buf, "category:", 9) && subject.buf[9]) {
		bucket = GDN_PERF_BUCKET_CATEGORY;
		name = subject.buf + 9;
	} else if (!strncmp(subject.buf, "op:", 3) && subject.buf[3]) {
		bucket = GDN_PERF_BUCKET_OP;
		name = subject.buf + 3;
	} else {
		ret = gdn_err_set(
		    err, GDN_EUSAGE,
		    "gate rule '%s': unknown subject '%s' (step, category:NAME or op:NAME)", spec,
		    subject.buf);
		goto out;
	}
	for (i = first; i < words.nr; i++) {
		const char *w = words.v[i];
		const char *eq = strchr(w, '=');
		enum gdn_perf_gate_kind kind;

		if ((size_t)(eq - w) == 15 && !strncmp(w, "max_increase_ms", 15)) {
			kind = GDN_PERF_GATE_MAX_INCREASE_MS;
		} else if ((size_t)(eq - w) == 10 && !strncmp(w, "new_max_ms", 10)) {
			kind = GDN_PERF_GATE_NEW_MAX_MS;
		} else {
			ret = gdn_err_set(
			    err, GDN_EUSAGE,
			    "gate rule '%s': unknown setting '%.*s' (max_increase_ms, new_max_ms)",
			    spec, (int)(eq - w), w);
			goto out;
		}
		if (parse_limit(eq + 1, &limit)) {
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "gate rule '%s': '%s' needs a number >= 0", spec, w);
			goto out;
		}
		gates_push(g, bucket, name, kind, limit);
	}
out:
	strvec_clear(&words);
	sbuf_release(&subject);
	return ret;
}

void gdn_perf_gates_add_defaults(struct gdn_perf_gates *g)
{
	gates_push(g, GDN_PERF_BUCKET_CATEGORY, "while", GDN_PERF_GATE_MAX_INCREASE_MS, 5.0);
	gates_push(g, GDN_PERF_BUCKET_CATEGORY, "conditional", GDN_PERF_GATE_NEW_MAX_MS, 5.0);
	g->override_pct = 5.0;
}

static void subject_fmt(const struct gdn_perf_gate *gate, struct sbuf *out)
{
	if (gate->bucket == GDN_PERF_BUCKET_STEP)
		sbuf_adds(out, "step");
	else
		sbuf_addf(out, "%s:%s", gate->bucket == GDN_PERF_BUCKET_OP ? "op" : "category",
			  gate->name);
}

void gdn_perf_gate_describe(const struct gdn_perf_gate *gate, struct strvec *out)
{
	struct sbuf sb = SBUF_INIT;

	subject_fmt(gate, &sb);
	sbuf_addf(&sb, " %s=%g",
		  gate->kind == GDN_PERF_GATE_NEW_MAX_MS ? "new_max_ms" : "max_increase_ms",
		  gate->limit_ms);
	strvec_push(out, sb.buf);
	sbuf_release(&sb);
}

void gdn_perf_config_init(struct gdn_perf_config *c)
{
	memset(c, 0, sizeof(*c));
	c->metric = GDN_PERF_DEFAULT_METRIC;
	c->direction = GDN_PERF_AUTO;
	c->min_improvement_pct = 0.25;
	c->max_regression_pct = 1.0;
	c->policy = GDN_PERF_REVERT_COUNT_FAILURE;
	c->gates.override_pct = -1.0;
	c->min_confidence = 0;
	c->within_policy = GDN_PERF_WITHIN_KEEP;
}

void gdn_perf_config_release(struct gdn_perf_config *c)
{
	gdn_perf_gates_release(&c->gates);
}

int gdn_perf_config_check(const struct gdn_perf_config *c, struct gdn_err *err)
{
	if (!c->metric || !*c->metric)
		return gdn_err_set(err, GDN_EUSAGE, "no performance metric configured");
	if (!isfinite(c->min_improvement_pct) || c->min_improvement_pct < 0)
		return gdn_err_set(err, GDN_EUSAGE, "'--perf-min-improvement-pct' must be >= 0");
	if (!isfinite(c->max_regression_pct) || c->max_regression_pct < 0)
		return gdn_err_set(err, GDN_EUSAGE, "'--perf-max-regression-pct' must be >= 0");
	if (!isfinite(c->min_confidence) || c->min_confidence < 0)
		return gdn_err_set(err, GDN_EUSAGE, "'--perf-min-confidence' must be >= 0");
	if (gdn_perf_is_trace_metric(c->metric) && !strcmp(c->metric, "trace/step_ms"))
		return 0;
	if (gdn_perf_is_trace_metric(c->metric)) {
		size_t len = strlen(c->metric);
		bool cat = !strncmp(c->metric, "trace/category/", 15);
		bool op = !strncmp(c->metric, "trace/op/", 9);
		size_t pre = cat ? 15 : 9;

		if ((!cat && !op) || len <= pre + 3 || strcmp(c->metric + len - 3, "_ms"))
			return gdn_err_set(err, GDN_EUSAGE,
					   "unknown trace metric '%s' (trace/step_ms, "
					   "trace/category/NAME_ms, trace/op/NAME_ms)",
					   c->metric);
	}
	return 0;
}

/* ---- metric extraction ---- */

/* Length of a number `[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?` at p, or 0. */
static size_t number_len(const char *p, const char *end)
{
	const char *q = p, *digits;
	bool any = false;

	if (q < end && (*q == '+' || *q == '-'))
		q++;
	digits = q;
	while (q < end && isdigit((unsigned char)*q))
		q++;
	any = q > digits;
	if (q < end && *q == '.') {
		const char *frac = ++q;

		while (q < end && isdigit((unsigned char)*q))
			q++;
		if (!any && q == frac)
			return 0;
		any = true;
	}
	if (!any)
		return 0;
	if (q < end && (*q == 'e' || *q == 'E')) {
		const char *e = q + 1;

		if (e < end && (*e == '+' || *e == '-'))
			e++;
		if (e < end && isdigit((unsigned char)*e)) {
			while (e < end && isdigit((unsigned char)*e))
				e++;
			q = e;
		}
	}
	return (size_t)(q - p);
}

static bool skippable(char ch)
{
	return !(isdigit((unsigned char)ch) || ch == 'e' || ch == 'E' || ch == '+' || ch == '-');
}

int gdn_perf_parse_cli_metric(const char *output, size_t len, const char *metric, double *value)
{
	size_t mlen = strlen(metric), pos = 0;
	const char *end = output + len, *last = NULL;
	size_t last_len = 0;
	char buf[128];
	double v;

	if (!mlen)
		return GDN_ENOTFOUND;
	while (pos < len) {
		const char *hit = memmem(output + pos, len - pos, metric, mlen);
		const char *p;
		size_t n;

		if (!hit)
			break;
		p = hit + mlen;
		while (p < end && skippable(*p))
			p++;
		n = number_len(p, end);
		if (!n) {
			pos = (size_t)(hit - output) + 1;
			continue;
		}
		last = p;
		last_len = n;
		pos = (size_t)(p + n - output);
	}
	if (!last || last_len >= sizeof(buf))
		return GDN_ENOTFOUND;
	memcpy(buf, last, last_len);
	buf[last_len] = '\0';
	v = strtod(buf, NULL);
	if (!isfinite(v))
		return GDN_ENOTFOUND;
	*value = v;
	return 0;
}

/* The bucket a trace metric names: 0, with *bucket and *name (owned) set. */
static int trace_metric_bucket(const char *metric, enum gdn_perf_bucket *bucket, char **name)
{
	size_t len = strlen(metric), pre;

	*name = NULL;
	if (!strcmp(metric, "trace/step_ms")) {
		*bucket = GDN_PERF_BUCKET_STEP;
		return 0;
	}
	if (!strncmp(metric, "trace/category/", 15)) {
		*bucket = GDN_PERF_BUCKET_CATEGORY;
		pre = 15;
	} else if (!strncmp(metric, "trace/op/", 9)) {
		*bucket = GDN_PERF_BUCKET_OP;
		pre = 9;
	} else {
		return -1;
	}
	if (len <= pre + 3 || strcmp(metric + len - 3, "_ms"))
		return -1;
	*name = xstrndup(metric + pre, len - pre - 3);
	return 0;
}

static double ps_per_step_ms(gdn_ps v, uint64_t steps)
{
	return gdn_ps_to_us(v) / 1000.0 / (double)steps;
}

int gdn_perf_trace_metric(const struct gdn_trace_summary *s, const char *metric, double *value,
			  struct gdn_err *err)
{
	enum gdn_perf_bucket bucket;
	const struct gdn_trace_rows *rows;
	char *name = NULL;
	size_t i;
	int ret = 0;

	if (trace_metric_bucket(metric, &bucket, &name)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "unknown trace metric '%s' (trace/step_ms, "
				  "trace/category/NAME_ms, trace/op/NAME_ms)",
				  metric);
		goto out;
	}
	if (!s->steps) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "trace '%s' has no steps",
				  s->path ? s->path : "-");
		goto out;
	}
	if (bucket == GDN_PERF_BUCKET_STEP) {
		*value = ps_per_step_ms(s->self, s->steps);
		goto out;
	}
	rows = bucket == GDN_PERF_BUCKET_OP ? &s->ops : &s->categories;
	*value = 0;
	for (i = 0; i < rows->nr; i++) {
		if (!strcmp(rows->v[i].key, name)) {
			*value = ps_per_step_ms(rows->v[i].self, s->steps);
			break;
		}
	}
out:
	free(name);
	return ret;
}

/* ---- samples ---- */

void gdn_perf_measurement_release(struct gdn_perf_measurement *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++) {
		free(m->v[i].source);
		free(m->v[i].why);
		json_decref(m->v[i].trace);
	}
	FREE_AND_NULL(m->v);
	m->nr = m->alloc = 0;
	FREE_AND_NULL(m->run_url);
}

struct gdn_perf_sample *gdn_perf_measurement_add(struct gdn_perf_measurement *m)
{
	struct gdn_perf_sample *s;

	ALLOC_GROW(m->v, m->nr + 1, m->alloc);
	s = &m->v[m->nr++];
	memset(s, 0, sizeof(*s));
	return s;
}

void gdn_perf_sample_set_value(struct gdn_perf_sample *s, const char *source, double value)
{
	free(s->source);
	s->source = source ? xstrdup(source) : NULL;
	s->has_value = isfinite(value);
	s->value = s->has_value ? value : 0;
}

int gdn_perf_sample_set_cli(struct gdn_perf_sample *s, const char *metric, const char *output,
			    size_t len)
{
	double v;
	int ret = gdn_perf_parse_cli_metric(output, len, metric, &v);

	if (!ret)
		gdn_perf_sample_set_value(s, "cli", v);
	return ret;
}

int gdn_perf_sample_set_wandb(struct gdn_perf_sample *s, const struct gdn_metric *m)
{
	if (m->status != GDN_METRIC_OK)
		return GDN_ENOTFOUND;
	gdn_perf_sample_set_value(s, "wandb", m->value);
	return s->has_value ? 0 : GDN_ENOTFOUND;
}

/* New reference: {NAME: per-step ms} of rows; with `only`, just those names. */
static json_t *rows_json(const struct gdn_trace_rows *rows, uint64_t steps,
			 const struct strvec *only)
{
	json_t *o = json_object(); /* new */
	size_t i;

	for (i = 0; i < rows->nr; i++) {
		if (only && !strvec_contains(only, rows->v[i].key))
			continue;
		json_object_set_new(o, rows->v[i].key,
				    json_real(ps_per_step_ms(rows->v[i].self, steps)));
	}
	return o;
}

/* The value of a trace metric in figures (absent bucket: 0). */
static double figures_value(json_t *fig, enum gdn_perf_bucket bucket, const char *name)
{
	json_t *v;

	if (bucket == GDN_PERF_BUCKET_STEP)
		v = json_object_get(fig, "step_ms"); /* borrowed */
	else
		v = json_object_get(
		    json_object_get(fig, bucket == GDN_PERF_BUCKET_OP ? "ops" : "categories"),
		    name);
	return json_is_number(v) ? json_number_value(v) : 0;
}

static bool figures_has(json_t *fig, enum gdn_perf_bucket bucket, const char *name)
{
	if (bucket == GDN_PERF_BUCKET_STEP)
		return json_is_number(json_object_get(fig, "step_ms"));
	return json_is_number(json_object_get(
	    json_object_get(fig, bucket == GDN_PERF_BUCKET_OP ? "ops" : "categories"), name));
}

int gdn_perf_sample_set_trace(struct gdn_perf_sample *s, const struct gdn_perf_config *c,
			      const struct gdn_trace_summary *t, struct gdn_err *err)
{
	struct strvec ops = STRVEC_INIT;
	enum gdn_perf_bucket bucket = GDN_PERF_BUCKET_STEP;
	char *name = NULL;
	json_t *fig = NULL;
	size_t i;
	int ret = 0;

	if (!t->steps) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "trace '%s' has no steps",
				  t->path ? t->path : "-");
		goto out;
	}
	for (i = 0; i < c->gates.nr; i++)
		if (c->gates.v[i].bucket == GDN_PERF_BUCKET_OP)
			strvec_push(&ops, c->gates.v[i].name);
	if (gdn_perf_is_trace_metric(c->metric) && trace_metric_bucket(c->metric, &bucket, &name)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "unknown trace metric '%s' (trace/step_ms, "
				  "trace/category/NAME_ms, trace/op/NAME_ms)",
				  c->metric);
		goto out;
	}
	if (name && bucket == GDN_PERF_BUCKET_OP)
		strvec_push(&ops, name);
	fig = json_object(); /* new */
	json_object_set_new(fig, "steps", json_integer((json_int_t)t->steps));
	json_object_set_new(fig, "step_ms", json_real(ps_per_step_ms(t->self, t->steps)));
	if (t->step_nr) {
		json_t *per = json_array(); /* new, stolen below */

		for (i = 0; i < t->step_nr; i++)
			json_array_append_new(per,
					      json_real(gdn_ps_to_us(t->step_v[i].self) / 1000.0));
		json_object_set_new(fig, "step_samples_ms", per);
	}
	json_object_set_new(fig, "categories", rows_json(&t->categories, t->steps, NULL));
	json_object_set_new(fig, "ops", rows_json(&t->ops, t->steps, &ops));
	if (gdn_perf_is_trace_metric(c->metric))
		gdn_perf_sample_set_value(s, "trace", figures_value(fig, bucket, name));
	json_decref(s->trace);
	s->trace = fig;
	fig = NULL;
out:
	json_decref(fig);
	free(name);
	strvec_clear(&ops);
	return ret;
}

size_t gdn_perf_measurement_split_steps(struct gdn_perf_measurement *m,
					const struct gdn_perf_config *c)
{
	struct gdn_perf_sample *s;
	json_t *per;
	size_t n;

	if (!m->nr)
		return 0;
	s = &m->v[m->nr - 1];
	per = json_object_get(s->trace, "step_samples_ms"); /* borrowed */
	n = json_array_size(per);
	if (strcmp(c->metric, "trace/step_ms") || !s->has_value || !s->source ||
	    strcmp(s->source, "trace") || n < 2)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (!json_is_number(json_array_get(per, i)))
			return 1;
	gdn_perf_sample_set_value(s, "trace", json_number_value(json_array_get(per, 0)));
	/* the figures (and per) stay with the first sample; add may move m->v, not them */
	for (size_t i = 1; i < n; i++)
		gdn_perf_sample_set_value(gdn_perf_measurement_add(m), "trace",
					  json_number_value(json_array_get(per, i)));
	return n;
}

const char *gdn_perf_ruler(const char *configured, bool marin, bool trace, bool *decide,
			   const char **why)
{
	const char *w = "default";

	*decide = false;
	if (configured && *configured) {
		if (why)
			*why = "configured";
		return configured;
	}
	if (marin) {
		w = "Marin default";
	} else if (trace) {
		w = "no --perf-metric: from the profile's output, else trace/step_ms, the device "
		    "time per step of its trace, decided at the baseline";
		*decide = true;
	}
	if (why)
		*why = w;
	return GDN_PERF_DEFAULT_METRIC;
}

void gdn_perf_ruler_use_steps(struct gdn_perf_config *c)
{
	c->metric = "trace/step_ms";
	/* the direction resolved for the default metric was a rate's: a time's now */
	c->direction = GDN_PERF_LOWER;
}

bool gdn_perf_ruler_pick(struct gdn_perf_config *c, struct gdn_perf_measurement *m)
{
	struct gdn_perf_measurement old = *m;
	bool steps = false;

	for (size_t i = 0; i < m->nr; i++) {
		if (m->v[i].has_value)
			return false;
		steps |= json_is_number(json_object_get(m->v[i].trace, "step_ms"));
	}
	if (!steps)
		return false;
	gdn_perf_ruler_use_steps(c);
	m->v = NULL;
	m->nr = m->alloc = 0;
	for (size_t i = 0; i < old.nr; i++) {
		struct gdn_perf_sample *s = gdn_perf_measurement_add(m);
		json_t *ms = json_object_get(old.v[i].trace, "step_ms");

		s->trace = old.v[i].trace; /* moved */
		if (json_is_number(ms)) {
			gdn_perf_sample_set_value(s, "trace", json_number_value(ms));
			gdn_perf_measurement_split_steps(m, c);
		}
		free(old.v[i].source);
		free(old.v[i].why); /* the default metric's: it had no value */
	}
	free(old.v);
	return true;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double gdn_perf_median(double *v, size_t n)
{
	if (!n)
		BUG("median of nothing");
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double gdn_perf_mad(const double *v, size_t n)
{
	double *tmp = xmalloc(st_mult(n, sizeof(*tmp)));
	double med, mad;
	size_t i;

	memcpy(tmp, v, n * sizeof(*tmp));
	med = gdn_perf_median(tmp, n);
	for (i = 0; i < n; i++)
		tmp[i] = fabs(v[i] - med);
	mad = gdn_perf_median(tmp, n);
	free(tmp);
	return mad;
}

/* ---- records ---- */

/* Values of a record's "samples" (or its metric_value), as a new array in *out. */
static size_t record_values(json_t *rec, double **out)
{
	json_t *samples = json_object_get(rec, "samples"); /* borrowed */
	json_t *mv = json_object_get(rec, "metric_value");
	size_t i, n = 0;
	json_t *s;

	*out = xmalloc(st_mult(json_array_size(samples) + 1, sizeof(**out)));
	json_array_foreach(samples, i, s)
	{
		json_t *v = json_object_get(s, "value");

		if (json_is_number(v) && isfinite(json_number_value(v)))
			(*out)[n++] = json_number_value(v);
	}
	if (!n && json_is_number(mv))
		(*out)[n++] = json_number_value(mv);
	return n;
}

/* New reference: the median figures of the samples with a trace, or NULL. */
static json_t *median_figures(const struct gdn_perf_measurement *m)
{
	static const char *const groups[] = {"categories", "ops"};
	json_t *fig = NULL, *first = NULL;
	double *vals = xmalloc(st_mult(m->nr + 1, sizeof(*vals)));
	size_t i, g, n = 0;

	for (i = 0; i < m->nr; i++) {
		if (!m->v[i].trace)
			continue;
		if (!first)
			first = m->v[i].trace;
		vals[n++] = figures_value(m->v[i].trace, GDN_PERF_BUCKET_STEP, NULL);
	}
	if (!first)
		goto out;
	fig = json_object(); /* new */
	json_object_set(fig, "steps", json_object_get(first, "steps"));
	json_object_set_new(fig, "step_ms", json_real(gdn_perf_median(vals, n)));
	for (g = 0; g < ARRAY_SIZE(groups); g++) {
		json_t *out = json_object(); /* new, stolen below */
		size_t j;

		for (i = 0; i < m->nr; i++) {
			const char *key;
			json_t *v;

			if (!m->v[i].trace)
				continue;
			json_object_foreach(json_object_get(m->v[i].trace, groups[g]), key, v)
			{
				if (json_object_get(out, key))
					continue;
				n = 0;
				for (j = 0; j < m->nr; j++) {
					json_t *x;

					if (!m->v[j].trace)
						continue;
					x = json_object_get(
					    json_object_get(m->v[j].trace, groups[g]), key);
					vals[n++] = json_is_number(x) ? json_number_value(x) : 0;
				}
				json_object_set_new(out, key, json_real(gdn_perf_median(vals, n)));
			}
		}
		json_object_set_new(fig, groups[g], out);
	}
out:
	free(vals);
	return fig;
}

/* The figure of n > 0 values under c->repeat_stat (v is reordered). */
static double repeat_stat(const struct gdn_perf_config *c, double *v, size_t n)
{
	bool lower = gdn_perf_direction_resolve(c->direction, c->metric) == GDN_PERF_LOWER;
	double best = v[0];

	if (c->repeat_stat == GDN_PERF_STAT_MEDIAN)
		return gdn_perf_median(v, n);
	for (size_t i = 1; i < n; i++)
		if (lower ? v[i] < best : v[i] > best)
			best = v[i];
	return best;
}

/* Set the metric fields of a record from its values. */
static void record_set_metric(json_t *rec, const struct gdn_perf_config *c, double *vals, size_t n)
{
	json_t *points = json_object(), *metrics = json_object(); /* new, stolen below */
	const char *metric = c->metric;

	json_object_set_new(points, metric, json_integer((json_int_t)n));
	if (n) {
		double mad = gdn_perf_mad(vals, n);
		double med = repeat_stat(c, vals, n);

		json_object_set_new(rec, "metric_value", json_real(med));
		json_object_set_new(rec, "metric_mad", json_real(mad));
		json_object_set_new(metrics, metric, json_real(med));
	} else {
		json_object_set_new(rec, "metric_value", json_null());
		json_object_set_new(rec, "metric_mad", json_null());
	}
	json_object_set_new(rec, "metric_points", points);
	json_object_set_new(rec, "metrics", metrics);
}

/* New reference: [{"value": X|null, "source": S|null, "trace": {...}|null}, ...]. */
static json_t *samples_json(const struct gdn_perf_measurement *m)
{
	json_t *a = json_array(); /* new */
	size_t i;

	for (i = 0; i < m->nr; i++) {
		const struct gdn_perf_sample *s = &m->v[i];

		json_array_append_new(a, json_pack("{s:o, s:o, s:O?}", "value",
						   s->has_value ? json_real(s->value) : json_null(),
						   "source",
						   s->source ? json_string(s->source) : json_null(),
						   "trace", s->trace));
	}
	return a;
}

static const char *first_source(const struct gdn_perf_measurement *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (m->v[i].has_value && m->v[i].source)
			return m->v[i].source;
	return NULL;
}

/* ---- the decision ---- */

void gdn_perf_verdict_release(struct gdn_perf_verdict *v)
{
	FREE_AND_NULL(v->champion_commit);
	strvec_clear(&v->reasons);
}

struct gdn_perf_action gdn_perf_action_for(enum gdn_perf_decision d, enum gdn_perf_policy p)
{
	struct gdn_perf_action a = {false, false, false};

	if (d != GDN_PERF_REGRESSION && d != GDN_PERF_GATE_REGRESSION && d != GDN_PERF_UNSCORED)
		return a;
	switch (p) {
	case GDN_PERF_REVERT_COUNT_FAILURE:
		a.revert = a.count_failure = true;
		break;
	case GDN_PERF_REVERT_CONTINUE:
		a.revert = true;
		break;
	case GDN_PERF_FAIL:
		a.stop = a.count_failure = true;
		break;
	case GDN_PERF_COUNT_FAILURE:
		a.count_failure = true;
		break;
	case GDN_PERF_CONTINUE:
		break;
	}
	return a;
}

struct gdn_perf_action gdn_perf_action_config(enum gdn_perf_decision d,
					      const struct gdn_perf_config *c)
{
	struct gdn_perf_action a = gdn_perf_action_for(d, c->policy);

	if (d == GDN_PERF_WITHIN_THRESHOLD && c->within_policy == GDN_PERF_WITHIN_REVERT)
		a.revert = true;
	return a;
}

/* Evaluate the gates; failing rules add a reason each. Returns whether any failed. */
static bool eval_gates(const struct gdn_perf_gates *g, json_t *champ, json_t *cand,
		       struct strvec *reasons)
{
	struct sbuf subj = SBUF_INIT;
	bool failed = false;
	size_t i;

	for (i = 0; i < g->nr; i++) {
		const struct gdn_perf_gate *gate = &g->v[i];
		double before = figures_value(champ, gate->bucket, gate->name);
		double after = figures_value(cand, gate->bucket, gate->name);

		sbuf_reset(&subj);
		if (gate->bucket == GDN_PERF_BUCKET_CATEGORY)
			sbuf_adds(&subj, gate->name);
		else
			subject_fmt(gate, &subj);
		if (gate->kind == GDN_PERF_GATE_MAX_INCREASE_MS &&
		    after - before > gate->limit_ms) {
			strvec_pushf(reasons,
				     "gate: `%s` grew %.3f ms/step (%.3f -> %.3f, limit %.3f)",
				     subj.buf, after - before, before, after, gate->limit_ms);
			failed = true;
		} else if (gate->kind == GDN_PERF_GATE_NEW_MAX_MS &&
			   !figures_has(champ, gate->bucket, gate->name) &&
			   after > gate->limit_ms) {
			strvec_pushf(reasons,
				     "gate: `%s` is a new bucket of %.3f ms/step (limit %.3f)",
				     subj.buf, after, gate->limit_ms);
			failed = true;
		}
	}
	sbuf_release(&subj);
	return failed;
}

static void short_sha(char *buf, size_t size, const char *sha)
{
	snprintf(buf, size, "%.12s", sha ? sha : "?");
}

static void verdict_reset(struct gdn_perf_verdict *out)
{
	gdn_perf_verdict_release(out);
	out->decision = GDN_PERF_UNSCORED;
	out->candidate = out->champion = NAN;
	out->delta_pct = out->improvement_pct = NAN;
	out->noise = 0;
	out->confident = false;
	out->samples = 0;
	out->ab = false;
	out->pairs = 0;
	out->ci_low_pct = out->ci_high_pct = out->confidence = NAN;
	out->ab_verdict = NULL;
}

/* the history record of the candidate, before the comparison; returns a new reference */
static json_t *candidate_record(const struct gdn_perf_config *c, enum gdn_perf_direction dir,
				const char *commit, const struct gdn_perf_measurement *cand,
				const char *src, json_t *cfig, double *vals, size_t n)
{
	json_t *rec = json_object(); /* new */

	json_object_set_new(rec, "iteration", json_integer(cand->iteration));
	json_object_set_new(rec, "commit", commit ? json_string(commit) : json_null());
	json_object_set_new(rec, "metric", json_string(c->metric));
	json_object_set_new(rec, "direction", json_string(gdn_perf_direction_name(dir)));
	if (c->command)
		json_object_set_new(rec, "command", json_string(c->command));
	json_object_set_new(rec, "metric_source", src ? json_string(src) : json_null());
	json_object_set_new(rec, "run_url",
			    cand->run_url ? json_string(cand->run_url) : json_null());
	json_object_set_new(
	    rec, "timestamp_unix",
	    json_integer(cand->timestamp_unix ? cand->timestamp_unix : (json_int_t)time(NULL)));
	json_object_set_new(rec, "samples", samples_json(cand));
	json_object_set(rec, "trace", cfig ? cfig : json_null());
	record_set_metric(rec, c, vals, n);
	return rec;
}

/* delta, improvement and noise band of the candidate against the champion's values */
static void measure_delta(const struct gdn_perf_config *c, enum gdn_perf_direction dir, double diff,
			  double cand_mad, double champ_mad, double k, struct gdn_perf_verdict *out)
{
	if (out->champion != 0)
		out->delta_pct = diff / fabs(out->champion) * 100.0;
	else
		out->delta_pct = diff == 0 ? 0 : diff > 0 ? INFINITY : -INFINITY;
	out->improvement_pct = dir == GDN_PERF_LOWER ? -out->delta_pct : out->delta_pct;
	if (c->min_confidence > 0) {
		out->noise = c->min_confidence * MAD_SCALE * (cand_mad + champ_mad) / sqrt(k);
		out->confident = fabs(diff) > out->noise;
	} else {
		out->confident = true;
	}
}

/* the trace gates, or why they were not evaluated; true when one triggered */
static bool check_gates(const struct gdn_perf_config *c, json_t *champ, json_t *cfig, double imp,
			bool confident, struct strvec *detail)
{
	json_t *hfig = json_object_get(champ, "trace"); /* borrowed */

	if (!c->gates.nr)
		return false;
	if (c->gates.override_pct >= 0 && imp >= c->gates.override_pct - PCT_EPS && confident)
		strvec_pushf(detail, "gate: skipped, metric win %+.2f%% >= %.2f%%", imp,
			     c->gates.override_pct);
	else if (!json_is_object(hfig) || !cfig)
		strvec_pushf(detail, "gate: not evaluated, no trace figures for the %s",
			     !cfig ? "candidate" : "champion");
	else
		return eval_gates(&c->gates, hfig, cfig, detail);
	return false;
}

static enum gdn_perf_decision pick_decision(const struct gdn_perf_config *c, bool gated,
					    bool confident, double imp)
{
	if (gated)
		return GDN_PERF_GATE_REGRESSION;
	if (confident && imp >= c->min_improvement_pct - PCT_EPS)
		return GDN_PERF_PROMOTED;
	if (confident && imp <= -c->max_regression_pct + PCT_EPS)
		return GDN_PERF_REGRESSION;
	return GDN_PERF_WITHIN_THRESHOLD;
}

/* the candidate against a valid champion: decision, reasons and the record's comparison */
static void compare_to_champion(const struct gdn_perf_config *c, enum gdn_perf_direction dir,
				json_t *champ, json_t *cfig, double *cvals, size_t cn, size_t n,
				const char *src, const char *csha, json_t *rec,
				struct gdn_perf_verdict *out)
{
	double champ_mad = gdn_perf_mad(cvals, cn);
	double cand_mad = json_number_value(json_object_get(rec, "metric_mad"));
	double k = (double)(n < cn ? n : cn);
	double diff, imp;
	struct strvec detail = STRVEC_INIT;
	bool gated;

	out->champion = repeat_stat(c, cvals, cn);
	diff = out->candidate - out->champion;
	measure_delta(c, dir, diff, cand_mad, champ_mad, k, out);
	imp = out->improvement_pct;
	gated = check_gates(c, champ, cfig, imp, out->confident, &detail);
	if (!out->confident &&
	    (imp >= c->min_improvement_pct - PCT_EPS || imp <= -c->max_regression_pct + PCT_EPS))
		strvec_pushf(&detail,
			     "difference within noise: |%.6g - %.6g| = %.6g <= %.6g (z=%g, "
			     "MAD %.6g + %.6g, K=%.0f)",
			     out->candidate, out->champion, fabs(diff), out->noise,
			     c->min_confidence, cand_mad, champ_mad, k);
	out->decision = pick_decision(c, gated, out->confident, imp);
	strvec_pushf(&out->reasons, "%s: %.6g -> %.6g (%+.2f%%, source=%s, champion %s)",
		     out->decision == GDN_PERF_PROMOTED ? "performance champion promoted"
		     : out->decision == GDN_PERF_REGRESSION
			 ? "performance regression detected vs champion"
		     : out->decision == GDN_PERF_GATE_REGRESSION
			 ? "performance gate triggered vs champion"
			 : "performance within hold band vs champion",
		     out->champion, out->candidate, imp, src ? src : "?", csha);
	strvec_pushv(&out->reasons, detail.v);
	json_object_set_new(rec, "delta_vs_champion_pct",
			    isfinite(out->delta_pct) ? json_real(out->delta_pct) : json_null());
	json_object_set_new(rec, "improvement_pct", isfinite(imp) ? json_real(imp) : json_null());
	json_object_set_new(rec, "noise", json_real(out->noise));
	json_object_set_new(rec, "confident", json_boolean(out->confident));
	strvec_clear(&detail);
}

/* the decision, its reasons and the action, ends the record and appends it to the history */
static void record_decision(struct gdn_perf_state *st, json_t *rec,
			    const struct gdn_perf_verdict *out)
{
	json_t *gate_reasons = json_array(); /* new, stolen below */
	json_t *reasons = json_array();	     /* new, stolen below */
	size_t i;

	for (i = 0; i < out->reasons.nr; i++)
		if (!strncmp(out->reasons.v[i], "gate: `", 7))
			json_array_append_new(gate_reasons, json_string(out->reasons.v[i]));
	json_object_set_new(rec, "decision", json_string(gdn_perf_decision_name(out->decision)));
	json_object_set_new(rec, "control_gate_reasons", gate_reasons);
	for (i = 0; i < out->reasons.nr; i++)
		json_array_append_new(reasons, json_string(out->reasons.v[i]));
	json_object_set_new(rec, "reasons", reasons);
	json_array_append(json_object_get(st->doc, "history"), rec);
	if (out->decision == GDN_PERF_BASELINE || out->decision == GDN_PERF_PROMOTED)
		json_object_set_new(st->doc, "champion", json_deep_copy(rec));
}

/* New reference: the values of a measurement ([X|null, ...]). */
static json_t *values_json(const struct gdn_perf_measurement *m)
{
	json_t *a = json_array();

	for (size_t i = 0; i < m->nr; i++)
		json_array_append_new(a,
				      m->v[i].has_value ? json_real(m->v[i].value) : json_null());
	return a;
}

int gdn_perf_ab_stat(const struct gdn_perf_config *c, const struct gdn_perf_measurement *champion,
		     const struct gdn_perf_measurement *cand, double confidence, long looks,
		     struct gdn_abstat *stat, int *verdict)
{
	size_t n = champion->nr < cand->nr ? champion->nr : cand->nr, k = 0;
	double *a = xmalloc(st_mult(n + 1, sizeof(*a))), *b = xmalloc(st_mult(n + 1, sizeof(*b)));
	bool lower = gdn_perf_direction_resolve(c->direction, c->metric) == GDN_PERF_LOWER;
	int ret = -1;

	for (size_t i = 0; i < n; i++)
		if (champion->v[i].has_value && cand->v[i].has_value && champion->v[i].value > 0 &&
		    cand->v[i].value > 0) {
			a[k] = champion->v[i].value;
			b[k++] = cand->v[i].value;
		}
	if (k && !gdn_abstat_ratio_ci(a, b, k, lower, gdn_abstat_look_confidence(confidence, looks),
				      0x6764e5eedULL + k, stat)) {
		*verdict =
		    (int)gdn_abstat_classify(stat, c->min_improvement_pct, c->max_regression_pct);
		ret = 0;
	}
	free(a);
	free(b);
	return ret;
}

/* the candidate against the champion measured alternately with it (--perf-ab) */
static void compare_ab(const struct gdn_perf_config *c, json_t *champ, json_t *cfig,
		       const struct gdn_perf_measurement *cm, const struct gdn_abstat *stat,
		       int verdict, const char *src, const char *csha, json_t *rec,
		       struct gdn_perf_verdict *out)
{
	double *v = xmalloc(st_mult(cm->nr + 1, sizeof(*v)));
	size_t n = 0;
	struct strvec detail = STRVEC_INIT;
	bool gated;
	json_t *ab;

	for (size_t i = 0; i < cm->nr; i++)
		if (cm->v[i].has_value)
			v[n++] = cm->v[i].value;
	out->champion = n ? repeat_stat(c, v, n) : NAN;
	free(v);
	out->ab = true;
	out->pairs = stat->pairs;
	out->ci_low_pct = stat->lo_pct;
	out->ci_high_pct = stat->hi_pct;
	out->confidence = stat->confidence;
	out->ab_verdict = gdn_abstat_verdict_name((enum gdn_abstat_verdict)verdict);
	out->improvement_pct = stat->improvement_pct;
	out->delta_pct = gdn_perf_direction_resolve(c->direction, c->metric) == GDN_PERF_LOWER
			     ? -stat->improvement_pct
			     : stat->improvement_pct;
	out->confident = verdict != GDN_AB_INCONCLUSIVE;
	gated =
	    check_gates(c, champ, cfig, out->improvement_pct, verdict == GDN_AB_PROMOTE, &detail);
	out->decision = gated			       ? GDN_PERF_GATE_REGRESSION
			: verdict == GDN_AB_PROMOTE    ? GDN_PERF_PROMOTED
			: verdict == GDN_AB_REGRESSION ? GDN_PERF_REGRESSION
						       : GDN_PERF_WITHIN_THRESHOLD;
	strvec_pushf(&out->reasons,
		     "%s: %.6g -> %.6g (%+.2f%%, %.4g%% interval [%+.2f%%, %+.2f%%] over %zu "
		     "A/B pair%s: %s; source=%s, champion %s)",
		     out->decision == GDN_PERF_PROMOTED ? "performance champion promoted"
		     : out->decision == GDN_PERF_REGRESSION
			 ? "performance regression detected vs champion"
		     : out->decision == GDN_PERF_GATE_REGRESSION
			 ? "performance gate triggered vs champion"
			 : "performance within hold band vs champion",
		     out->champion, out->candidate, stat->improvement_pct, stat->confidence * 100,
		     stat->lo_pct, stat->hi_pct, stat->pairs, stat->pairs == 1 ? "" : "s",
		     out->ab_verdict, src ? src : "?", csha);
	strvec_pushv(&out->reasons, detail.v);
	strvec_clear(&detail);
	json_object_set_new(rec, "delta_vs_champion_pct", json_real(out->delta_pct));
	json_object_set_new(rec, "improvement_pct", json_real(stat->improvement_pct));
	json_object_set_new(rec, "noise", json_real(0));
	json_object_set_new(rec, "confident", json_boolean(out->confident));
	ab = json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:I, s:s, s:o, s:o}", "statistic",
		       "paired log-ratio, bootstrap interval", "pairs", (json_int_t)stat->pairs,
		       "improvement_pct", stat->improvement_pct, "ci_low_pct", stat->lo_pct,
		       "ci_high_pct", stat->hi_pct, "confidence", stat->confidence, "resamples",
		       (json_int_t)stat->resamples, "verdict", out->ab_verdict, "champion_samples",
		       values_json(cm), "champion_value",
		       isfinite(out->champion) ? json_real(out->champion) : json_null());
	json_object_set_new(rec, "ab", ab);
}

struct ab_in {
	const struct gdn_perf_measurement *champion;
	const struct gdn_abstat *stat;
	int verdict;
};

static int decide(const struct gdn_perf_config *c, struct gdn_perf_state *st, const char *commit,
		  const struct gdn_perf_measurement *cand, const struct ab_in *ab,
		  struct gdn_perf_verdict *out, struct gdn_err *err);

int gdn_perf_decide(const struct gdn_perf_config *c, struct gdn_perf_state *st, const char *commit,
		    const struct gdn_perf_measurement *cand, struct gdn_perf_verdict *out,
		    struct gdn_err *err)
{
	return decide(c, st, commit, cand, NULL, out, err);
}

int gdn_perf_decide_ab(const struct gdn_perf_config *c, struct gdn_perf_state *st,
		       const char *commit, const struct gdn_perf_measurement *cand,
		       const struct gdn_perf_measurement *champion, const struct gdn_abstat *stat,
		       int verdict, struct gdn_perf_verdict *out, struct gdn_err *err)
{
	struct ab_in ab = {champion, stat, verdict};

	return decide(c, st, commit, cand, &ab, out, err);
}

static int decide(const struct gdn_perf_config *c, struct gdn_perf_state *st, const char *commit,
		  const struct gdn_perf_measurement *cand, const struct ab_in *ab,
		  struct gdn_perf_verdict *out, struct gdn_err *err)
{
	enum gdn_perf_direction dir = gdn_perf_direction_resolve(c->direction, c->metric);
	double *vals = xmalloc(st_mult(cand->nr + 1, sizeof(*vals))), *cvals = NULL;
	json_t *rec = NULL, *champ, *cfig = NULL;
	const char *src = first_source(cand), *cmetric;
	char sha[16], csha[16];
	size_t i, n = 0, cn = 0;
	bool champ_ok;
	int ret;

	verdict_reset(out);
	ret = gdn_perf_config_check(c, err);
	if (ret)
		goto out;
	if (!st->doc)
		BUG("perf state not initialised");
	for (i = 0; i < cand->nr; i++)
		if (cand->v[i].has_value)
			vals[n++] = cand->v[i].value;
	out->samples = n;
	short_sha(sha, sizeof(sha), commit);

	cfig = median_figures(cand);					  /* new */
	rec = candidate_record(c, dir, commit, cand, src, cfig, vals, n); /* new */
	if (n)
		out->candidate = json_number_value(json_object_get(rec, "metric_value"));

	champ = gdn_perf_state_champion(st); /* borrowed */
	cmetric = json_string_value(json_object_get(champ, "metric"));
	if (champ) {
		const char *s = json_string_value(json_object_get(champ, "commit"));

		out->champion_commit = s ? xstrdup(s) : NULL;
		json_object_set_new(rec, "champion_commit", s ? json_string(s) : json_null());
	}
	short_sha(csha, sizeof(csha), out->champion_commit);
	champ_ok = champ && json_is_number(json_object_get(champ, "metric_value")) &&
		   (!cmetric || !strcmp(cmetric, c->metric));
	if (champ_ok) {
		cn = record_values(champ, &cvals);
		champ_ok = cn > 0;
	}

	if (!n) {
		out->decision = GDN_PERF_UNSCORED;
		strvec_pushf(&out->reasons, "required performance metric is unavailable: %s",
			     c->metric);
	} else if (!champ) {
		out->decision = GDN_PERF_BASELINE;
		strvec_pushf(
		    &out->reasons,
		    "performance baseline initialized: %s=%.6g @ %s (source=%s, %zu sample%s)",
		    c->metric, out->candidate, sha, src ? src : "?", n, n == 1 ? "" : "s");
	} else if (!champ_ok) {
		out->decision = GDN_PERF_BASELINE;
		strvec_pushf(&out->reasons,
			     "champion record was invalid (no %s value); replaced with current "
			     "candidate: %s=%.6g @ %s",
			     c->metric, c->metric, out->candidate, sha);
	} else if (ab) {
		compare_ab(c, champ, cfig, ab->champion, ab->stat, ab->verdict, src, csha, rec,
			   out);
	} else {
		compare_to_champion(c, dir, champ, cfig, cvals, cn, n, src, csha, rec, out);
	}
	out->action = gdn_perf_action_config(out->decision, c);
	record_decision(st, rec, out);
out:
	json_decref(rec);
	json_decref(cfig);
	free(vals);
	free(cvals);
	return ret;
}

int gdn_perf_champion_add_samples(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				  const struct gdn_perf_measurement *m, struct gdn_err *err)
{
	json_t *champ = gdn_perf_state_champion(st); /* borrowed */
	json_t *samples, *add = NULL;
	double *vals = NULL;
	size_t n;
	int ret = 0;

	if (!champ) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no performance champion to re-profile");
		goto out;
	}
	samples = json_object_get(champ, "samples");
	if (!json_is_array(samples)) {
		/* an original record: its metric_value becomes the first sample */
		json_t *mv = json_object_get(champ, "metric_value");

		samples = json_array(); /* new, stolen below */
		if (json_is_number(mv))
			json_array_append_new(samples,
					      json_pack("{s:O, s:O?}", "value", mv, "source",
							json_object_get(champ, "metric_source")));
		json_object_set_new(champ, "samples", samples);
	}
	add = samples_json(m); /* new */
	json_array_extend(samples, add);
	n = record_values(champ, &vals);
	record_set_metric(champ, c, vals, n);
	json_object_set_new(champ, "reprofiled", json_true());
out:
	json_decref(add);
	free(vals);
	return ret;
}

int gdn_perf_champion_reprofile(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				const char *commit, const struct gdn_perf_measurement *m,
				struct gdn_err *err)
{
	json_t *champ = gdn_perf_state_champion(st); /* borrowed */
	json_t *fig;
	double *vals = NULL;
	size_t n;

	if (!champ)
		return gdn_err_set(err, GDN_ENOTFOUND, "no performance champion to re-profile");
	if (!json_is_string(json_object_get(champ, "reprofiled_from")))
		json_object_set(champ, "reprofiled_from", json_object_get(champ, "commit"));
	json_object_set_new(champ, "commit", json_string(commit));
	json_object_set_new(champ, "samples", samples_json(m));
	fig = median_figures(m); /* new */
	json_object_set_new(champ, "trace", fig ? fig : json_null());
	n = record_values(champ, &vals);
	record_set_metric(champ, c, vals, n);
	json_object_set_new(champ, "reprofiled", json_true());
	free(vals);
	return 0;
}
