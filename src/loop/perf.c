/*
 * The measured performance policy, its names and configuration (perf.h):
 * the direction a metric's name says, the gates over per-step milliseconds
 * of measured traces, the configuration's checks. The samples are in
 * perf_sample.c, the decision in perf_decide.c; docs/performance-policy.md
 * describes the rules.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/wandb.h"
#include "gdnctl/perf.h"
#include "perf_impl.h"
#include "gdnctl/abstat.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"

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

void perf_gate_subject(const struct gdn_perf_gate *gate, struct sbuf *out)
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

	perf_gate_subject(gate, &sb);
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
