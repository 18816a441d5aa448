/*
 * `gdnctl metrics`: read run metrics from Weights & Biases, the way the
 * loop's performance policy does (src/hub/wandb.c): summary values, or an
 * aggregate (median or mean) over a window of history steps with a
 * minimum number of points. The run is a URL or ENTITY/PROJECT/RUN, or
 * the newest run whose name starts with "<prefix>_". Missing and
 * non-finite values are reported as such. See docs/gdnctl-metrics.md.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/cmd_net.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/http.h"
#include "gdnctl/wandb.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define JSON_SCHEMA	"gdnctl.metrics.v1"
#define DEFAULT_KEYS	"throughput/mfu,throughput/tokens_per_second,throughput/duration"
#define DEFAULT_ENTITY	"marin-community"
#define DEFAULT_PROJECT "marin"
#define DEFAULT_STEPS	"10:18"

static const struct opt_usage usage = {
    "gdnctl metrics --run URL|ENTITY/PROJECT/RUN [--keys K,...] [--summary | --history]\n"
    "gdnctl metrics --prefix PREFIX [--entity E] [--project P] [options]",
    "Read run metrics from Weights & Biases: summary values or a history-window aggregate.",
    "The run is --run (a run URL, ENTITY/PROJECT/RUN, or a display name in place of\n"
    "RUN), or the newest run of --entity/--project whose name or display name starts\n"
    "with PREFIX_ (--prefix). --summary (the default) reads the run summary; --history\n"
    "aggregates the points logged at steps A..B (inclusive) with --agg, and needs at\n"
    "least --min-points finite points per key. Values that are missing, not numbers,\n"
    "NaN/Infinity, or have too few points are reported with that status, never made up.\n"
    "API: WANDB_BASE_URL (default https://api.wandb.ai); key: WANDB_API_KEY, else the\n"
    "password of 'machine <host>' in ~/.netrc ($NETRC); it is never printed.\n"
    "Exit status: 0 every key has a value; 1 some key has none, or the run does not\n"
    "exist; 2 usage; 5 network failure after the retries; 124 --deadline passed.",
};

struct metrics_args {
	const char *run, *entity, *project, *prefix, *steps;
	int agg; /* enum gdn_agg */
	struct strvec keys;
	int summary, history, json;
	long min_points, samples, max_runs;
	struct gdn_net_args net;
};

static const struct opt *find_opt(const struct opt *opts, const char *long_name)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, long_name))
			return o;
	BUG("metrics has no option '--%s'", long_name);
}

static void fmt_value(struct sbuf *out, const struct gdn_metric *m)
{
	if (m->status == GDN_METRIC_OK)
		sbuf_addf(out, "%.6g", m->value);
	else
		sbuf_adds(out, "-");
}

static void print_table(const struct gdn_metric_set *s)
{
	size_t kw = 3, vw = 5;
	struct sbuf v = SBUF_INIT;

	for (size_t i = 0; i < s->nr; i++) {
		sbuf_reset(&v);
		fmt_value(&v, &s->v[i]);
		if (strlen(s->v[i].key) > kw)
			kw = strlen(s->v[i].key);
		if (v.len > vw)
			vw = v.len;
	}
	printf("%-*s  %*s  %-14s  %s\n", (int)kw, "KEY", (int)vw, "VALUE", "STATUS", "POINTS");
	for (size_t i = 0; i < s->nr; i++) {
		const struct gdn_metric *m = &s->v[i];

		sbuf_reset(&v);
		fmt_value(&v, m);
		printf("%-*s  %*s  %-14s  %zu", (int)kw, m->key, (int)vw, v.buf,
		       gdn_metric_status_name(m->status), m->points);
		if (m->nonfinite)
			printf(" (+%zu non-finite)", m->nonfinite);
		putchar('\n');
	}
	sbuf_release(&v);
}

static int print_json(const struct metrics_args *a, const struct gdn_metric_set *s,
		      const struct gdn_history_window *w, bool ok)
{
	json_t *doc = gdn_json_doc(JSON_SCHEMA);	 /* new */
	json_t *run = json_object(), *ms = json_array(); /* new, stolen by doc */

	json_object_set_new(run, "entity", gdn_json_string_lossy(s->run.entity));
	json_object_set_new(run, "project", gdn_json_string_lossy(s->run.project));
	json_object_set_new(run, "name", gdn_json_string_lossy(s->run.name));
	json_object_set_new(run, "display_name", gdn_json_string_lossy(s->run.display_name));
	json_object_set_new(run, "state", gdn_json_string_lossy(s->run.state));
	json_object_set_new(run, "created_at", gdn_json_string_lossy(s->run.created_at));
	json_object_set_new(run, "url", gdn_json_string_lossy(s->run.url));
	json_object_set_new(doc, "run", run);
	json_object_set_new(doc, "mode", json_string(a->history ? "history" : "summary"));
	json_object_set_new(doc, "source", gdn_json_string_lossy(s->source));
	if (a->history) {
		json_t *window = json_object(); /* new, stolen by doc */

		json_object_set_new(window, "step_min",
				    w->step_min == INT64_MIN ? json_null()
							     : json_integer(w->step_min));
		json_object_set_new(window, "step_max",
				    w->step_max == INT64_MAX ? json_null()
							     : json_integer(w->step_max));
		json_object_set_new(window, "agg",
				    json_string(gdn_enum_name(gdn_agg_enum, a->agg)));
		json_object_set_new(window, "min_points", json_integer((json_int_t)w->min_points));
		json_object_set_new(doc, "window", window);
	}
	for (size_t i = 0; i < s->nr; i++) {
		const struct gdn_metric *m = &s->v[i];
		json_t *o = json_object(); /* new, stolen by ms */

		json_object_set_new(o, "key", gdn_json_string_lossy(m->key));
		json_object_set_new(o, "status", json_string(gdn_metric_status_name(m->status)));
		json_object_set_new(o, "value",
				    m->status == GDN_METRIC_OK ? json_real(m->value) : json_null());
		json_object_set_new(o, "points", json_integer((json_int_t)m->points));
		json_object_set_new(o, "nonfinite_points", json_integer((json_int_t)m->nonfinite));
		json_array_append_new(ms, o);
	}
	json_object_set_new(doc, "metrics", ms);
	json_object_set_new(doc, "ok", json_boolean(ok));
	return gdn_json_print(doc);
}

/* The original's warnings for keys without a value. */
static void warn_missing(const struct gdn_metric_set *s, const struct gdn_history_window *w,
			 bool history)
{
	struct sbuf few = SBUF_INIT;

	for (size_t i = 0; i < s->nr; i++) {
		const struct gdn_metric *m = &s->v[i];

		if (m->status == GDN_METRIC_TOO_FEW)
			sbuf_addf(&few, "%s%s(%zu<%zu)", few.len ? ", " : "", m->key, m->points,
				  w->min_points);
		else if (m->status != GDN_METRIC_OK)
			gdn_warn("%s: %s", m->key, gdn_metric_status_name(m->status));
	}
	if (history && few.len) {
		struct sbuf win = SBUF_INIT;

		sbuf_addch(&win, '[');
		if (w->step_min != INT64_MIN)
			sbuf_addf(&win, "%" PRId64, w->step_min);
		sbuf_adds(&win, ", ");
		if (w->step_max != INT64_MAX)
			sbuf_addf(&win, "%" PRId64, w->step_max);
		sbuf_addch(&win, ']');
		gdn_warn("wandb history window had insufficient samples for: %s in steps %s",
			 few.buf, win.buf);
		sbuf_release(&win);
	}
	sbuf_release(&few);
}

/* Print the error (with a hint for an unauthenticated 401) and return the exit code. */
static int fail(const struct gdn_wandb *c, const struct gdn_err *err)
{
	int code = gdn_die_err(err);

	if (strstr(err->msg, "HTTP 401"))
		fprintf(stderr, "[gdnctl] hint: %s\n",
			c->api_key
			    ? "the W&B API key was refused"
			    : "set WANDB_API_KEY, or add 'machine <host> login user password "
			      "KEY' to ~/.netrc");
	return code;
}

static void metrics_args_init(struct metrics_args *a)
{
	memset(a, 0, sizeof(*a));
	a->keys = (struct strvec)STRVEC_INIT;
	a->entity = DEFAULT_ENTITY;
	a->project = DEFAULT_PROJECT;
	a->steps = DEFAULT_STEPS;
	a->agg = GDN_AGG_MEDIAN;
	a->min_points = 5;
	a->samples = 1000;
	a->max_runs = 1000;
	gdn_net_args_init(&a->net, 30000, 120000);
}

/* the combinations of options that make no sense; 0 or the usage exit code */
static int check_args(const struct metrics_args *a, const struct opt *opts)
{
	if (!!a->run == !!a->prefix) {
		gdn_error("give either --run or --prefix");
		return GDN_EXIT_USAGE;
	}
	if (a->summary && a->history) {
		gdn_error("--summary and --history cannot be combined");
		return GDN_EXIT_USAGE;
	}
	if (!a->history &&
	    (find_opt(opts, "steps")->seen || find_opt(opts, "agg")->seen ||
	     find_opt(opts, "min-points")->seen || find_opt(opts, "samples")->seen)) {
		gdn_error("--steps, --agg, --min-points and --samples need --history");
		return GDN_EXIT_USAGE;
	}
	if (a->run && (find_opt(opts, "entity")->seen || find_opt(opts, "project")->seen)) {
		gdn_error("--entity and --project go with --prefix, not --run");
		return GDN_EXIT_USAGE;
	}
	return 0;
}

/* the history window, the keys and the --run reference; 0 or the exit code */
static int prepare(const struct metrics_args *a, struct gdn_history_window *w, struct strvec *keys)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_wandb_run ref = {0};
	int code = 0;

	if (a->history && gdn_history_parse_steps(a->steps, w, &err))
		return gdn_die_err(&err);
	w->agg = (enum gdn_agg)a->agg;
	w->min_points = (size_t)a->min_points;
	w->samples = (int)a->samples;
	for (size_t i = 0; i < a->keys.nr; i++)
		strvec_split(keys, a->keys.v[i], ',');
	if (!keys->nr)
		strvec_split(keys, DEFAULT_KEYS, ',');
	if (a->run && gdn_wandb_parse_run_ref(a->run, &ref.entity, &ref.project, &ref.name, &err))
		code = gdn_die_err(&err);
	gdn_wandb_run_release(&ref);
	return code;
}

/* ENTITY/PROJECT/RUN of --run, or of the newest run --prefix finds; 0 or the exit code */
static int resolve_run(struct gdn_wandb *c, const struct metrics_args *a,
		       struct gdn_wandb_run *found, struct sbuf *run_ref)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (!a->prefix) {
		sbuf_adds(run_ref, a->run);
		return 0;
	}
	if (gdn_wandb_find_run(c, a->entity, a->project, a->prefix, (int)a->max_runs, found, &err))
		return fail(c, &err);
	sbuf_addf(run_ref, "%s/%s/%s", found->entity, found->project, found->name);
	return 0;
}

/* prints the metrics, as JSON or for people; returns the exit code */
static int report(const struct metrics_args *a, const struct gdn_metric_set *set,
		  const struct gdn_history_window *w)
{
	bool all_ok = true;

	for (size_t i = 0; i < set->nr; i++)
		all_ok &= set->v[i].status == GDN_METRIC_OK;
	if (a->json)
		return print_json(a, set, w, all_ok) || !all_ok ? GDN_EXIT_FAILED : GDN_EXIT_OK;
	gdn_say("run: %s%s%s%s", set->run.url, set->run.display_name ? " (" : "",
		set->run.display_name ? set->run.display_name : "",
		set->run.display_name ? ")" : "");
	if (set->run.state)
		gdn_say("state: %s", set->run.state);
	gdn_say("source: %s", set->source);
	print_table(set);
	warn_missing(set, w, a->history);
	return all_ok ? GDN_EXIT_OK : GDN_EXIT_FAILED;
}

int cmd_metrics(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct metrics_args a;
	struct opt opts[] = {
	    OPT_STRING_(0, "run", &a.run, "REF", "run URL, ENTITY/PROJECT/RUN", NULL),
	    OPT_STRING_(0, "prefix", &a.prefix, "PREFIX",
			"the newest run whose name starts with PREFIX_", NULL),
	    OPT_STRING_(0, "entity", &a.entity, "E", "W&B entity for --prefix", DEFAULT_ENTITY),
	    OPT_STRING_(0, "project", &a.project, "P", "W&B project for --prefix", DEFAULT_PROJECT),
	    OPT_INT_(0, "max-runs", &a.max_runs, "N", "newest runs --prefix looks at", "1000", 1,
		     1000000),
	    OPT_LIST_(0, "keys", &a.keys, "K,...", "metric keys (comma separated)"),
	    OPT_GROUP_("What to read"),
	    OPT_BOOL_(0, "summary", &a.summary, "the run summary values (the default)"),
	    OPT_BOOL_(0, "history", &a.history, "aggregate the history over --steps"),
	    OPT_STRING_(0, "steps", &a.steps, "A:B", "inclusive step window (a side may be empty)",
			DEFAULT_STEPS),
	    OPT_ENUM_(0, "agg", &a.agg, gdn_agg_enum, "aggregate of the window", "median"),
	    OPT_INT_(0, "min-points", &a.min_points, "N", "finite points needed per key", "5", 1,
		     1000000),
	    OPT_INT_(0, "samples", &a.samples, "N", "history points W&B samples per key", "1000", 1,
		     1000000),
	    OPT_GROUP_("Output"),
	    OPT_BOOL_(0, "json", &a.json, "print a JSON document (schema " JSON_SCHEMA ")"),
	    GDN_NET_OPTS(&a.net, "30s", "2m"),
	    OPT_END_(),
	};
	struct gdn_wandb c = {0};
	struct gdn_metric_set set = {0};
	struct gdn_history_window w = {INT64_MIN, INT64_MAX, GDN_AGG_MEDIAN, 5, 1000};
	struct gdn_http_opts ho = GDN_HTTP_OPTS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec rest = STRVEC_INIT, keys = STRVEC_INIT;
	struct sbuf run_ref = SBUF_INIT;
	struct gdn_wandb_run found = {0};
	int code = 0, ret;

	metrics_args_init(&a);
	(void)ctx;
	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		goto out;
	if ((code = check_args(&a, opts)) || (code = prepare(&a, &w, &keys)))
		goto out;
	gdn_net_args_apply(&a.net, &ho);
	if (gdn_wandb_init(&c, NULL, NULL, &ho, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	code = resolve_run(&c, &a, &found, &run_ref);
	if (code)
		goto out;
	if (a.history)
		ret = gdn_wandb_history_agg(&c, run_ref.buf, keys.v, &w, &set, &err);
	else
		ret = gdn_wandb_summary(&c, run_ref.buf, keys.v, &set, &err);
	code = ret ? fail(&c, &err) : report(&a, &set, &w);
out:
	gdn_metric_set_release(&set);
	gdn_wandb_run_release(&found);
	gdn_wandb_release(&c);
	strvec_clear(&a.keys);
	strvec_clear(&keys);
	strvec_clear(&rest);
	sbuf_release(&run_ref);
	return code;
}
