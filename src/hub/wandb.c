/*
 * Weights & Biases client over the GraphQL API (POST <base>/graphql,
 * HTTP Basic with user "api" and the API key): run lookup by id or
 * display name, discovery of the newest run by name prefix, summary
 * values and history-window aggregates (median or mean over steps
 * A..B, with a minimum number of finite points).
 *
 * Values are reported as they are: a key that is absent, not a number,
 * NaN/Infinity, or has too few points in the window gets that status and
 * no value. W&B writes NaN and Infinity as bare tokens (Python's
 * json.dumps); they are turned into marked strings before jansson sees
 * them.
 */
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/http.h"
#include "gdnctl/wandb.h"
#include "gdnctl/json.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define NETRC_MAX	 ((size_t)1 << 20)
#define RUNS_PER_PAGE	 100
#define DEFAULT_MAX_RUNS 1000
#define DEFAULT_SAMPLES	 1000
#define NONFINITE_MARK	 '\x01'
#define PUBLIC_APP_URL	 "https://wandb.ai"

/* "ok", "missing", "non-finite", "not-numeric", "too-few-points". */
static const struct gdn_enum metric_status_enum[] = {
    {"ok", GDN_METRIC_OK, "a finite number"},
    {"missing", GDN_METRIC_MISSING, "no such key, or no point in the window"},
    {"non-finite", GDN_METRIC_NONFINITE, "NaN or +-Infinity, or only such points"},
    {"not-numeric", GDN_METRIC_NOT_NUMERIC, "a string, object, list or bool"},
    {"too-few-points", GDN_METRIC_TOO_FEW, "fewer finite points than min_points"},
    GDN_ENUM_END,
};

const char *gdn_metric_status_name(enum gdn_metric_status s)
{
	return gdn_enum_name(metric_status_enum, (int)s);
}

void gdn_wandb_run_release(struct gdn_wandb_run *r)
{
	free(r->entity);
	free(r->project);
	free(r->name);
	free(r->display_name);
	free(r->state);
	free(r->created_at);
	free(r->summary_json);
	free(r->url);
	memset(r, 0, sizeof(*r));
}

void gdn_metric_set_release(struct gdn_metric_set *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->v[i].key);
	free(s->v);
	gdn_wandb_run_release(&s->run);
	free(s->source);
	memset(s, 0, sizeof(*s));
}

const struct gdn_metric *gdn_metric_set_get(const struct gdn_metric_set *s, const char *key)
{
	for (size_t i = 0; i < s->nr; i++)
		if (!strcmp(s->v[i].key, key))
			return &s->v[i];
	return NULL;
}

static struct gdn_metric *add_metric(struct gdn_metric_set *s, const char *key)
{
	struct gdn_metric *m;

	ALLOC_GROW(s->v, s->nr + 1, s->alloc);
	m = &s->v[s->nr++];
	memset(m, 0, sizeof(*m));
	m->key = xstrdup(key);
	m->status = GDN_METRIC_MISSING;
	return m;
}

/* ---- run references ---- */

int gdn_wandb_parse_run_ref(const char *ref, char **entity, char **project, char **run,
			    struct gdn_err *err)
{
	struct strvec seg = STRVEC_INIT;
	const char *p = ref, *scheme = strstr(ref, "://");
	char *path = NULL, *q = NULL;
	bool url = scheme != NULL;
	int ret = 0;

	*entity = *project = *run = NULL;
	for (const char *c = ref; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "the W&B run reference has control characters");
			goto out;
		}
	}
	if (url) {
		p = scheme + 3;
		p += strcspn(p, "/"); /* skip the host */
	}
	path = xstrndup(p, strcspn(p, "?#"));
	strvec_split(&seg, path, '/');
	if ((url && seg.nr >= 4 && !strcmp(seg.v[2], "runs")) ||
	    (!url && seg.nr == 4 && !strcmp(seg.v[2], "runs"))) {
		*entity = xstrdup(seg.v[0]);
		*project = xstrdup(seg.v[1]);
		*run = xstrdup(seg.v[3]);
	} else if (!url && seg.nr == 3) {
		*entity = xstrdup(seg.v[0]);
		*project = xstrdup(seg.v[1]);
		*run = xstrdup(seg.v[2]);
	} else {
		q = gdn_one_line(ref, 200);
		ret =
		    gdn_err_set(err, GDN_EUSAGE,
				"cannot parse the W&B run '%s': expected a run URL "
				"(https://wandb.ai/ENTITY/PROJECT/runs/RUN) or ENTITY/PROJECT/RUN",
				q);
	}
out:
	free(q);
	free(path);
	strvec_clear(&seg);
	return ret;
}

static int bad_steps(struct gdn_err *err, const char *s, const char *why)
{
	char *q = gdn_one_line(s, 100);
	int ret = gdn_err_set(err, GDN_EUSAGE, "invalid step window '%s'%s", q, why);

	free(q);
	return ret;
}

int gdn_history_parse_steps(const char *s, struct gdn_history_window *w, struct gdn_err *err)
{
	const char *colon = strchr(s, ':');
	int64_t v[2] = {INT64_MIN, INT64_MAX};
	const char *part[2];
	size_t len[2];

	if (!colon)
		return bad_steps(err, s, ": expected A:B");
	part[0] = s;
	len[0] = (size_t)(colon - s);
	part[1] = colon + 1;
	len[1] = strlen(colon + 1);
	for (int i = 0; i < 2; i++) {
		int64_t n = 0;
		size_t j = 0;
		bool neg = false;

		if (!len[i])
			continue;
		if (part[i][0] == '-') {
			neg = true;
			j = 1;
		}
		if (j == len[i])
			return bad_steps(err, s, "");
		for (; j < len[i]; j++) {
			if (!isdigit((unsigned char)part[i][j]) || n > (INT64_MAX - 9) / 10)
				return bad_steps(err, s, "");
			n = n * 10 + (part[i][j] - '0');
		}
		v[i] = neg ? -n : n;
	}
	if (v[0] > v[1])
		return bad_steps(err, s, ": the start is after the end");
	w->step_min = v[0];
	w->step_max = v[1];
	return 0;
}

/* ---- values ---- */

/*
 * Copy JSON text, turning the bare tokens NaN, Infinity and -Infinity
 * (outside strings) into strings that start with NONFINITE_MARK.
 */
static void mark_nonfinite(const char *in, size_t len, struct sbuf *out)
{
	static const char *const words[] = {"-Infinity", "Infinity", "NaN"};
	bool in_str = false;

	sbuf_grow(out, len + 16);
	for (size_t i = 0; i < len; i++) {
		char c = in[i];
		bool replaced = false;

		if (in_str) {
			if (c == '\\' && i + 1 < len) {
				sbuf_addch(out, c);
				c = in[++i];
			} else if (c == '"') {
				in_str = false;
			}
			sbuf_addch(out, c);
			continue;
		}
		if (c == '"') {
			in_str = true;
			sbuf_addch(out, c);
			continue;
		}
		for (size_t w = 0; w < ARRAY_SIZE(words) && !replaced; w++) {
			size_t wl = strlen(words[w]);

			if (len - i >= wl && !memcmp(in + i, words[w], wl)) {
				sbuf_addf(out, "\"\\u0001%s\"", words[w]);
				i += wl - 1;
				replaced = true;
			}
		}
		if (!replaced)
			sbuf_addch(out, c);
	}
}

static bool nonfinite_text(const char *s)
{
	static const char *const names[] = {"nan",	"inf",	     "-inf",	 "+inf",
					    "infinity", "-infinity", "+infinity"};

	if (s[0] == NONFINITE_MARK)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcasecmp(s, names[i]))
			return true;
	return false;
}

/* Classify one JSON value as a metric. */
static enum gdn_metric_status metric_value(const json_t *v, double *out)
{
	double d;

	if (!v || json_is_null(v))
		return GDN_METRIC_MISSING;
	if (json_is_integer(v) || json_is_real(v)) {
		d = json_number_value(v);
		if (!isfinite(d))
			return GDN_METRIC_NONFINITE;
		*out = d;
		return GDN_METRIC_OK;
	}
	if (json_is_string(v) && nonfinite_text(json_string_value(v)))
		return GDN_METRIC_NONFINITE;
	return GDN_METRIC_NOT_NUMERIC;
}

/* Borrowed: the value of key in obj, flat ("throughput/mfu"), else nested by '.'. */
static json_t *lookup_key(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key); /* borrowed */
	const char *p = key;

	if (v || !strchr(key, '.'))
		return v;
	v = obj;
	while (v && *p) {
		size_t len = strcspn(p, ".");
		char *part = xstrndup(p, len);

		v = json_is_object(v) ? json_object_get(v, part) : NULL;
		free(part);
		p += len;
		if (*p)
			p++;
	}
	return v;
}

/* A JSON syntax error as one line (jansson quotes the input near the error). */
static int json_fail(struct gdn_err *err, const char *what, const json_error_t *jerr)
{
	char *q = gdn_one_line(jerr->text, 200);
	int ret = gdn_err_set(err, GDN_EPARSE, "invalid %s: %s", what, q);

	free(q);
	return ret;
}

/* New reference: JSON text parsed with bare NaN/Infinity accepted. */
static json_t *load_lenient(const char *text, size_t len, json_error_t *jerr)
{
	struct sbuf sb = SBUF_INIT;
	json_t *j; /* new, returned */

	mark_nonfinite(text, len, &sb);
	/* Integers as reals: a huge integer is a value, not a syntax error. */
	j = json_loadb(sb.buf, sb.len, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL,
		       jerr);
	sbuf_release(&sb);
	return j;
}

int gdn_wandb_summary_from_json(const char *summary_json, const char *const *keys,
				struct gdn_metric_set *out, struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = NULL; /* new */
	int ret = 0;

	if (summary_json && *summary_json) {
		doc = load_lenient(summary_json, strlen(summary_json), &jerr);
		if (!doc) {
			ret = json_fail(err, "run summary", &jerr);
			goto out;
		}
		if (!json_is_object(doc)) {
			ret = gdn_err_set(err, GDN_EPARSE, "invalid run summary: not an object");
			goto out;
		}
	}
	for (size_t i = 0; keys && keys[i]; i++) {
		struct gdn_metric *m = add_metric(out, keys[i]);

		m->status =
		    doc ? metric_value(lookup_key(doc, keys[i]), &m->value) : GDN_METRIC_MISSING;
		m->points = m->status == GDN_METRIC_OK;
		m->nonfinite = m->status == GDN_METRIC_NONFINITE;
	}
	free(out->source);
	out->source = xstrdup("wandb-summary");
out:
	json_decref(doc);
	return ret;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

const struct gdn_enum gdn_agg_enum[] = {
    {"median", GDN_AGG_MEDIAN, "the median of the points"},
    {"mean", GDN_AGG_MEAN, "their mean"},
    GDN_ENUM_END,
};

double gdn_agg_values(double *v, size_t n, enum gdn_agg agg)
{
	double sum = 0;

	if (!n)
		return NAN;
	if (agg == GDN_AGG_MEAN) {
		/* Kahan summation: windows are small, but keep it exact-ish. */
		double c = 0;

		for (size_t i = 0; i < n; i++) {
			double y = v[i] - c, t = sum + y;

			c = (t - sum) - y;
			sum = t;
		}
		return sum / (double)n;
	}
	qsort(v, n, sizeof(*v), dbl_cmp);
	if (n % 2)
		return v[n / 2];
	return v[n / 2 - 1] / 2 + v[n / 2] / 2;
}

/* A row's _step as an integer; false when absent or not integral. */
static bool row_step(const json_t *row, int64_t *step)
{
	const json_t *s = json_object_get(row, "_step"); /* borrowed */

	if (json_is_integer(s)) {
		*step = json_integer_value(s);
		return true;
	}
	if (json_is_real(s)) {
		double d = json_real_value(s);

		if (d == floor(d) && fabs(d) < 9.2e18) {
			*step = (int64_t)d;
			return true;
		}
	}
	return false;
}

static const char *agg_name(enum gdn_agg a)
{
	return a == GDN_AGG_MEAN ? "mean" : "median";
}

static void window_label(struct sbuf *out, const struct gdn_history_window *w)
{
	sbuf_addf(out, "wandb-history-%s[", agg_name(w->agg));
	if (w->step_min != INT64_MIN)
		sbuf_addf(out, "%" PRId64, w->step_min);
	sbuf_addch(out, ':');
	if (w->step_max != INT64_MAX)
		sbuf_addf(out, "%" PRId64, w->step_max);
	sbuf_addch(out, ']');
}

int gdn_wandb_history_from_json(const char *rows_json, const char *const *keys,
				const struct gdn_history_window *w, struct gdn_metric_set *out,
				struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = NULL; /* new */
	double *vals = NULL;
	size_t nvals = 0, alloc = 0, nkeys = 0, min_points;
	struct sbuf label = SBUF_INIT;
	int ret = 0;

	while (keys && keys[nkeys])
		nkeys++;
	min_points = w->min_points ? w->min_points : 1;
	doc = load_lenient(rows_json, strlen(rows_json), &jerr);
	if (!doc) {
		ret = json_fail(err, "run history", &jerr);
		goto out;
	}
	if (!json_is_array(doc) || json_array_size(doc) != nkeys) {
		ret =
		    gdn_err_set(err, GDN_EPARSE, "invalid run history: expected %zu list%s of rows",
				nkeys, nkeys == 1 ? "" : "s");
		goto out;
	}
	for (size_t k = 0; k < nkeys; k++) {
		json_t *rows = json_array_get(doc, k); /* borrowed */
		struct gdn_metric *m = add_metric(out, keys[k]);
		json_t *row; /* borrowed */
		size_t i;

		if (!json_is_array(rows)) {
			ret = gdn_err_set(err, GDN_EPARSE,
					  "invalid run history for '%s': not a list of rows",
					  keys[k]);
			goto out;
		}
		nvals = 0;
		json_array_foreach(rows, i, row)
		{
			int64_t step;
			double d;
			enum gdn_metric_status st;

			if (!json_is_object(row) || !row_step(row, &step) || step < w->step_min ||
			    step > w->step_max)
				continue;
			st = metric_value(lookup_key(row, keys[k]), &d);
			if (st == GDN_METRIC_NONFINITE) {
				m->nonfinite++;
			} else if (st == GDN_METRIC_OK) {
				ALLOC_GROW(vals, nvals + 1, alloc);
				vals[nvals++] = d;
			}
		}
		m->points = nvals;
		if (!nvals)
			m->status = m->nonfinite ? GDN_METRIC_NONFINITE : GDN_METRIC_MISSING;
		else if (nvals < min_points)
			m->status = GDN_METRIC_TOO_FEW;
		else {
			m->status = GDN_METRIC_OK;
			m->value = gdn_agg_values(vals, nvals, w->agg);
		}
	}
	window_label(&label, w);
	free(out->source);
	out->source = sbuf_detach(&label, NULL);
out:
	free(vals);
	sbuf_release(&label);
	json_decref(doc);
	return ret;
}

int gdn_graphql_parse(const char *body, size_t len, json_t **data, struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = load_lenient(body, len, &jerr); /* new */
	json_t *errors, *d;			      /* borrowed */
	int ret = 0;

	*data = NULL;
	if (!doc) {
		ret = json_fail(err, "W&B API answer", &jerr);
		goto out;
	}
	if (!json_is_object(doc)) {
		ret = gdn_err_set(err, GDN_EPARSE, "invalid W&B API answer: not a JSON object");
		goto out;
	}
	errors = json_object_get(doc, "errors");
	if (json_is_array(errors) && json_array_size(errors)) {
		json_t *msg = json_object_get(json_array_get(errors, 0), "message"); /* borrowed */
		struct sbuf m = SBUF_INIT;

		sbuf_adds(&m, json_is_string(msg) ? json_string_value(msg) : "unknown error");
		for (size_t i = 0; i < m.len; i++)
			if ((unsigned char)m.buf[i] < 0x20)
				m.buf[i] = ' ';
		if (m.len > 300)
			sbuf_setlen(&m, 300);
		gdn_secret_mask(&m);
		ret = gdn_err_set(err, GDN_EFAILED, "the W&B API answered: %s", m.buf);
		sbuf_release(&m);
		goto out;
	}
	d = json_object_get(doc, "data");
	if (!json_is_object(d)) {
		ret = gdn_err_set(err, GDN_EPARSE, "invalid W&B API answer: no 'data'");
		goto out;
	}
	*data = json_incref(d);
out:
	json_decref(doc);
	return ret;
}

/* ---- the client ---- */

static char *netrc_password(const char *host)
{
	const char *path = getenv("NETRC"), *home = getenv("HOME");
	char *file = NULL, *login = NULL, *password = NULL;
	struct sbuf sb = SBUF_INIT;
	struct gdn_err ignored = GDN_ERR_INIT;

	if (path && *path)
		file = xstrdup(path);
	else
		file = xstrfmt("%s/.netrc", home && *home ? home : ".");
	if (!sbuf_read_file(&sb, file, NETRC_MAX, &ignored))
		gdn_netrc_lookup(sb.buf, sb.len, host, &login, &password);
	free(login);
	free(file);
	sbuf_release(&sb);
	return password;
}

int gdn_wandb_init(struct gdn_wandb *c, const char *base_url, const char *api_key,
		   const struct gdn_http_opts *opts, struct gdn_err *err)
{
	const char *b = base_url, *k = api_key;
	size_t len;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	if (!b || !*b)
		b = getenv("WANDB_BASE_URL");
	if (!b || !*b)
		b = GDN_WANDB_DEFAULT_BASE_URL;
	len = strlen(b);
	while (len && b[len - 1] == '/')
		len--;
	c->base_url = xstrndup(b, len);
	if (strncmp(c->base_url, "http://", 7) && strncmp(c->base_url, "https://", 8)) {
		ret = gdn_err_set(err, GDN_EUSAGE, "the W&B base URL '%s' is not an http(s) URL",
				  c->base_url);
		goto out;
	}
	if (k && *k) {
		c->api_key = xstrdup(k);
		c->key_source = xstrdup("argument");
	} else if ((k = getenv("WANDB_API_KEY")) && *k) {
		c->api_key = xstrdup(k);
		c->key_source = xstrdup("WANDB_API_KEY");
	} else {
		char *host = gdn_url_host(c->base_url);

		if (host)
			c->api_key = netrc_password(host);
		if (c->api_key && !*c->api_key)
			FREE_AND_NULL(c->api_key);
		if (c->api_key)
			c->key_source = xstrfmt("netrc machine %s", host);
		free(host);
	}
	gdn_secret_add_value(c->api_key);
	c->http = gdn_http_new(opts, err);
	if (!c->http)
		ret = err->code;
out:
	if (ret)
		gdn_wandb_release(c);
	return ret;
}

void gdn_wandb_release(struct gdn_wandb *c)
{
	free(c->base_url);
	free(c->api_key);
	free(c->key_source);
	gdn_http_free(c->http);
	memset(c, 0, sizeof(*c));
}

/* Run a query; *data (new reference) is the answer's "data" object. `vars` is stolen. */
static int graphql(struct gdn_wandb *c, const char *query, json_t *vars, json_t **data,
		   struct gdn_err *err)
{
	json_t *body = json_object(); /* new */
	struct gdn_http_req req = {0};
	struct gdn_http_req *reqs[1] = {&req};
	char *text = NULL, *url = xstrfmt("%s/graphql", c->base_url);
	int ret;

	req.resp = (struct sbuf)SBUF_INIT;
	json_object_set_new(body, "query", json_string(query));
	json_object_set_new(body, "variables", vars);
	text = json_dumps(body, JSON_COMPACT);
	req.url = url;
	req.post = text;
	req.content_type = "application/json";
	req.basic_user = c->api_key ? "api" : NULL;
	req.basic_password = c->api_key;
	ret = gdn_http_run(c->http, reqs, 1, 1, err);
	if (!ret)
		ret = gdn_graphql_parse(req.resp.buf, req.resp.len, data, err);
	gdn_http_req_release(&req);
	free(text);
	free(url);
	json_decref(body);
	return ret;
}

int gdn_wandb_graphql(struct gdn_wandb *c, const char *query, json_t *vars, json_t **data,
		      struct gdn_err *err)
{
	return graphql(c, query, vars, data, err);
}

/*
 * A JSON string with no NUL byte in it, else NULL: the answers are read
 * with JSON_ALLOW_NUL (see load_lenient), and a value that a NUL cuts
 * short is no value.
 */
static const char *text_of(const json_t *v)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

static char *dup_str(const json_t *v)
{
	const char *s = text_of(v);

	return s ? xstrdup(s) : NULL;
}

/* A run node's id (its "name"): non-empty text, else NULL (no usable run). */
static const char *run_id_of(const json_t *node)
{
	const char *s = text_of(json_object_get(node, "name"));

	return s && *s ? s : NULL;
}

/* out from a run node that has an id (run_id_of). */
static void fill_run(struct gdn_wandb *c, const json_t *node, const char *entity,
		     const char *project, struct gdn_wandb_run *out)
{
	const char *base;

	gdn_wandb_run_release(out);
	out->entity = xstrdup(entity);
	out->project = xstrdup(project);
	out->name = xstrdup(run_id_of(node));
	out->display_name = dup_str(json_object_get(node, "displayName"));
	out->state = dup_str(json_object_get(node, "state"));
	out->created_at = dup_str(json_object_get(node, "createdAt"));
	out->summary_json = dup_str(json_object_get(node, "summaryMetrics"));
	base = strcmp(c->base_url, GDN_WANDB_DEFAULT_BASE_URL) ? c->base_url : PUBLIC_APP_URL;
	out->url = xstrfmt("%s/%s/%s/runs/%s", base, entity, project, out->name);
}

static const char run_query[] =
    "query Run($entity: String!, $project: String!, $name: String!) {"
    " project(name: $project, entityName: $entity) {"
    " run(name: $name) { name displayName state createdAt summaryMetrics } } }";

static const char runs_query[] =
    "query Runs($entity: String!, $project: String!, $cursor: String, $per: Int!,"
    " $filters: JSONString, $order: String) {"
    " project(name: $project, entityName: $entity) {"
    " runs(first: $per, after: $cursor, filters: $filters, order: $order) {"
    " edges { node { name displayName state createdAt } }"
    " pageInfo { hasNextPage endCursor } } } }";

static const char history_query[] =
    "query RunSampledHistory($entity: String!, $project: String!, $name: String!,"
    " $specs: [JSONString!]!) {"
    " project(name: $project, entityName: $entity) {"
    " run(name: $name) { sampledHistory(specs: $specs) } } }";

/* The run by id: 0 and *found; GDN_ENOTFOUND for a missing project. */
static int run_by_id(struct gdn_wandb *c, const char *entity, const char *project, const char *name,
		     struct gdn_wandb_run *out, bool *found, struct gdn_err *err)
{
	json_t *data = NULL, *proj, *run; /* new, borrowed, borrowed */
	int ret;

	*found = false;
	ret = graphql(
	    c, run_query,
	    json_pack("{s:s, s:s, s:s}", "entity", entity, "project", project, "name", name), &data,
	    err);
	if (ret)
		goto out;
	proj = json_object_get(data, "project");
	if (!json_is_object(proj)) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B project '%s/%s'", entity, project);
		goto out;
	}
	run = json_object_get(proj, "run");
	if (json_is_object(run) && run_id_of(run)) {
		fill_run(c, run, entity, project, out);
		*found = true;
	}
out:
	json_decref(data);
	return ret;
}

/* Escape s for a regular expression (W&B filters use $regex). */
static void regex_quote(struct sbuf *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\^$.|?*+()[]{}", *s))
			sbuf_addch(out, '\\');
		sbuf_addch(out, *s);
	}
}

typedef bool (*run_match_fn)(const json_t *node, const char *want);

/*
 * Walk the project's runs, newest first, at most max_runs; the first for
 * which match() holds fills out. filters: a JSON string or NULL.
 */
static int scan_runs(struct gdn_wandb *c, const char *entity, const char *project,
		     const char *filters, int max_runs, run_match_fn match, const char *want,
		     struct gdn_wandb_run *out, bool *found, struct gdn_err *err)
{
	char *cursor = NULL;
	int seen = 0, ret = 0;

	*found = false;
	if (max_runs <= 0)
		max_runs = DEFAULT_MAX_RUNS;
	while (!*found && seen < max_runs) {
		/* new, stolen by graphql() */
		json_t *vars = json_pack("{s:s, s:s, s:i, s:s}", "entity", entity, "project",
					 project, "per", RUNS_PER_PAGE, "order", "-created_at");
		json_t *data = NULL;		 /* new */
		json_t *runs, *edges, *info, *e; /* borrowed */
		const char *next;		 /* borrowed */
		size_t i;
		bool more;

		json_object_set_new(vars, "cursor", cursor ? json_string(cursor) : json_null());
		json_object_set_new(vars, "filters", filters ? json_string(filters) : json_null());
		ret = graphql(c, runs_query, vars, &data, err);
		if (ret)
			break;
		runs = json_object_get(json_object_get(data, "project"), "runs");
		if (!json_is_object(json_object_get(data, "project"))) {
			json_decref(data);
			ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B project '%s/%s'", entity,
					  project);
			break;
		}
		edges = json_object_get(runs, "edges");
		json_array_foreach(edges, i, e)
		{
			const json_t *node = json_object_get(e, "node"); /* borrowed */

			if (seen++ >= max_runs)
				break;
			if (json_is_object(node) && run_id_of(node) && match(node, want)) {
				fill_run(c, node, entity, project, out);
				*found = true;
				break;
			}
		}
		info = json_object_get(runs, "pageInfo");
		next = text_of(json_object_get(info, "endCursor"));
		more = json_is_true(json_object_get(info, "hasNextPage")) && next && *next &&
		       json_array_size(edges) > 0;
		free(cursor);
		cursor = more ? xstrdup(next) : NULL;
		json_decref(data);
		if (!more)
			break;
	}
	free(cursor);
	return ret;
}

static bool str_field_is(const json_t *node, const char *field, const char *want)
{
	const json_t *v = json_object_get(node, field); /* borrowed */

	return text_of(v) && !strcmp(text_of(v), want);
}

static bool match_name(const json_t *node, const char *want)
{
	return str_field_is(node, "name", want) || str_field_is(node, "displayName", want);
}

/* want is "<prefix>_" */
static bool match_prefix(const json_t *node, const char *want)
{
	static const char *const fields[] = {"name", "displayName"};

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		const json_t *v = json_object_get(node, fields[i]); /* borrowed */

		if (text_of(v) && !strncmp(text_of(v), want, strlen(want)))
			return true;
	}
	return false;
}

int gdn_wandb_get_run(struct gdn_wandb *c, const char *run_ref, struct gdn_wandb_run *out,
		      struct gdn_err *err)
{
	char *entity = NULL, *project = NULL, *name = NULL;
	struct gdn_wandb_run listed = {0};
	bool found = false;
	int ret;

	ret = gdn_wandb_parse_run_ref(run_ref, &entity, &project, &name, err);
	if (ret)
		goto out;
	ret = run_by_id(c, entity, project, name, out, &found, err);
	if (ret || found)
		goto out;
	/* As the original: the newest runs, by id or display name. */
	ret = scan_runs(c, entity, project, NULL, 0, match_name, name, &listed, &found, err);
	if (ret)
		goto out;
	if (!found) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B run '%s' in '%s/%s'", name, entity,
				  project);
		goto out;
	}
	ret = run_by_id(c, entity, project, listed.name, out, &found, err);
	if (!ret && !found)
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B run '%s' in '%s/%s'", name, entity,
				  project);
out:
	gdn_wandb_run_release(&listed);
	free(entity);
	free(project);
	free(name);
	return ret;
}

int gdn_wandb_find_run(struct gdn_wandb *c, const char *entity, const char *project,
		       const char *prefix, int max_runs, struct gdn_wandb_run *out,
		       struct gdn_err *err)
{
	struct sbuf want = SBUF_INIT, re = SBUF_INIT;
	json_t *filters = NULL; /* new */
	struct gdn_wandb_run listed = {0};
	char *ftext = NULL;
	bool found = false;
	int ret;

	for (const char *ch = prefix; *ch; ch++) {
		if ((unsigned char)*ch < 0x20 || *ch == 0x7f) {
			ret = gdn_err_set(err, GDN_EUSAGE, "the run prefix has control characters");
			goto out;
		}
	}
	sbuf_addf(&want, "%s_", prefix);
	sbuf_addch(&re, '^');
	regex_quote(&re, want.buf);
	/* Narrow the listing on the server; the match is checked here anyway. */
	filters = json_pack("{s:[{s:{s:s}},{s:{s:s}}]}", "$or", "display_name", "$regex", re.buf,
			    "name", "$regex", re.buf);
	ftext = json_dumps(filters, JSON_COMPACT);
	ret = scan_runs(c, entity, project, ftext, max_runs, match_prefix, want.buf, &listed,
			&found, err);
	if (ret)
		goto out;
	if (!found) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B run named '%s*' in '%s/%s'", want.buf,
				  entity, project);
		goto out;
	}
	ret = run_by_id(c, entity, project, listed.name, out, &found, err);
	if (!ret && !found)
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B run '%s' in '%s/%s'", listed.name,
				  entity, project);
out:
	gdn_wandb_run_release(&listed);
	free(ftext);
	json_decref(filters);
	sbuf_release(&want);
	sbuf_release(&re);
	return ret;
}

int gdn_wandb_summary(struct gdn_wandb *c, const char *run_ref, const char *const *keys,
		      struct gdn_metric_set *out, struct gdn_err *err)
{
	int ret = gdn_wandb_get_run(c, run_ref, &out->run, err);

	if (!ret)
		ret = gdn_wandb_summary_from_json(out->run.summary_json, keys, out, err);
	return ret;
}

int gdn_wandb_history_agg(struct gdn_wandb *c, const char *run_ref, const char *const *keys,
			  const struct gdn_history_window *w, struct gdn_metric_set *out,
			  struct gdn_err *err)
{
	json_t *specs = json_array(), *data = NULL, *hist; /* new, new, borrowed */
	char *rows = NULL;
	int ret;

	ret = gdn_wandb_get_run(c, run_ref, &out->run, err);
	if (ret)
		goto out;
	for (size_t i = 0; keys && keys[i]; i++) {
		/* new, dropped below */
		json_t *spec = json_pack("{s:[s,s], s:i}", "keys", "_step", keys[i], "samples",
					 w->samples > 0 ? w->samples : DEFAULT_SAMPLES);
		char *text;

		if (w->step_min != INT64_MIN)
			json_object_set_new(spec, "minStep", json_integer(w->step_min));
		if (w->step_max != INT64_MAX)
			json_object_set_new(spec, "maxStep", json_integer(w->step_max + 1));
		text = json_dumps(spec, JSON_COMPACT);
		json_array_append_new(specs, json_string(text));
		free(text);
		json_decref(spec);
	}
	ret = graphql(c, history_query,
		      json_pack("{s:s, s:s, s:s, s:O}", "entity", out->run.entity, "project",
				out->run.project, "name", out->run.name, "specs", specs),
		      &data, err);
	if (ret)
		goto out;
	hist = json_object_get(json_object_get(json_object_get(data, "project"), "run"),
			       "sampledHistory");
	if (!hist) {
		ret = gdn_err_set(err, GDN_EPARSE, "the W&B API sent no history for run '%s'",
				  out->run.name);
		goto out;
	}
	rows = json_dumps(hist, JSON_COMPACT | JSON_ENCODE_ANY);
	ret = gdn_wandb_history_from_json(rows ? rows : "null", keys, w, out, err);
out:
	free(rows);
	json_decref(data);
	json_decref(specs);
	return ret;
}
