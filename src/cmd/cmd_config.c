/*
 * `gdnctl config [show|get|keys]`: the effective configuration, where
 * each value came from, and the keys gdnctl knows. main() has loaded the
 * configuration (CMD_NEEDS_CONFIG) before we run.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define CONFIG_JSON_SCHEMA "gdnctl.config.v1"
#define KEYS_JSON_SCHEMA   "gdnctl.config-keys.v1"

static const struct opt_usage config_usage = {
    "gdnctl config [show] [--json] [--origin]\n"
    "gdnctl config get KEY\n"
    "gdnctl config keys [--json]",
    "Show the effective configuration and where each value came from.",
    "'show' (the default) lists every key with its effective value and its source:\n"
    "default, user (~/.config/gdnctl/config.yaml), repo (gdnctl.yaml), env or\n"
    "command-line (gdnctl -c KEY=VALUE). Secret values are shown as ***.\n"
    "'get' prints one value: exit 1 when it is unset, 2 for an unknown key.\n"
    "'keys' lists every key gdnctl knows. See docs/configuration.md.",
};

struct row {
	const char *key;
	const struct gdn_cfg_key *schema;
	const struct gdn_cfg_value *v; /* NULL: unset */
};

static int row_cmp(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->key, ((const struct row *)b)->key);
}

/* Every fixed key of the schema and every key set under a map, sorted. Returns a new array. */
static struct row *collect_rows(const struct gdn_config *cfg, size_t *nr_out)
{
	size_t snr, nr = 0, alloc = 0;
	const struct gdn_cfg_key *schema = gdn_config_schema(cfg, &snr);
	struct row *rows = NULL;

	for (size_t i = 0; i < snr; i++) {
		const struct gdn_cfg_key *e = &schema[i];

		if (e->type == GDN_CFG_MAP || gdn_config_schema_find(cfg, e->key) != e)
			continue; /* maps and "*" keys: listed through their values */
		ALLOC_GROW(rows, nr + 1, alloc);
		rows[nr++] = (struct row){e->key, e, gdn_config_get(cfg, e->key)};
	}
	for (size_t i = 0; i < cfg->nr; i++) {
		const struct gdn_cfg_value *v = &cfg->v[i];

		if (!strcmp(v->key, v->schema->key))
			continue;
		ALLOC_GROW(rows, nr + 1, alloc);
		rows[nr++] = (struct row){v->key, v->schema, v};
	}
	if (nr)
		qsort(rows, nr, sizeof(*rows), row_cmp);
	*nr_out = nr;
	return rows;
}

/* Text for a table cell: control characters escaped so a row stays one line. */
static void add_cell(struct sbuf *sb, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\n')
			sbuf_adds(sb, "\\n");
		else if (c < 0x20 || c == 0x7f)
			sbuf_addf(sb, "\\x%02x", c);
		else
			sbuf_addch(sb, c);
	}
}

/* New reference: a JSON string, with bytes that are not valid UTF-8 replaced by '?'. */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	char *copy;

	if (j)
		return j;
	copy = xstrdup(s);
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* New reference: the typed value (null when unset, "***" for secrets). */
static json_t *value_json(const struct gdn_cfg_value *v)
{
	json_t *a;

	if (!v)
		return json_null();
	if (v->schema->secret && v->str[0])
		return json_string("***");
	switch (v->schema->type) {
	case GDN_CFG_INT:
	case GDN_CFG_DURATION:
		return json_integer(v->i);
	case GDN_CFG_FLOAT:
		return json_real(v->f);
	case GDN_CFG_BOOL:
		return json_boolean(v->i);
	case GDN_CFG_LIST:
		a = json_array();
		for (size_t i = 0; i < v->list.nr; i++)
			json_array_append_new(a, json_text(v->list.v[i]));
		return a;
	default:
		return json_text(v->str);
	}
}

static int show_json(const struct row *rows, size_t nr)
{
	json_t *doc = gdn_json_doc(CONFIG_JSON_SCHEMA); /* new */
	json_t *entries = json_array();			/* new, stolen by doc below */

	for (size_t i = 0; i < nr; i++) {
		const struct gdn_cfg_value *v = rows[i].v;
		json_t *o = json_object();

		json_object_set_new(o, "key", json_text(rows[i].key));
		json_object_set_new(o, "value", value_json(v));
		json_object_set_new(
		    o, "source", json_string(gdn_cfg_source_name(v ? v->source : GDN_SRC_DEFAULT)));
		json_object_set_new(o, "origin", json_text(v ? v->origin : "default"));
		json_array_append_new(entries, o);
	}
	json_object_set_new(doc, "entries", entries);
	return gdn_json_print(doc) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
}

static void print_table(struct strvec *cells, size_t ncol)
{
	size_t width[4] = {0};
	struct sbuf line = SBUF_INIT;

	for (size_t i = 0; i < cells->nr; i++) {
		size_t len = strlen(cells->v[i]);

		if (len > width[i % ncol])
			width[i % ncol] = len;
	}
	for (size_t i = 0; i < cells->nr; i++) {
		size_t col = i % ncol;

		sbuf_adds(&line, cells->v[i]);
		if (col + 1 < ncol) {
			sbuf_addf(&line, "%*s", (int)(width[col] - strlen(cells->v[i]) + 2), "");
		} else {
			sbuf_rtrim(&line);
			sbuf_addch(&line, '\n');
			fwrite(line.buf, 1, line.len, stdout);
			sbuf_reset(&line);
		}
	}
	sbuf_release(&line);
}

static int show_table(const struct row *rows, size_t nr, bool origin)
{
	struct strvec cells = STRVEC_INIT;
	struct sbuf val = SBUF_INIT, cell = SBUF_INIT;
	size_t ncol = origin ? 4 : 3;

	strvec_pushl(&cells, "KEY", "VALUE", "SOURCE", NULL);
	if (origin)
		strvec_push(&cells, "ORIGIN");
	for (size_t i = 0; i < nr; i++) {
		const struct gdn_cfg_value *v = rows[i].v;

		sbuf_reset(&cell);
		add_cell(&cell, rows[i].key);
		strvec_push(&cells, cell.buf);
		sbuf_reset(&val);
		sbuf_reset(&cell);
		if (v) {
			gdn_config_value_format(v, &val);
			add_cell(&cell, val.buf);
		} else {
			sbuf_adds(&cell, "(unset)");
		}
		strvec_push(&cells, cell.buf);
		strvec_push(&cells, gdn_cfg_source_name(v ? v->source : GDN_SRC_DEFAULT));
		if (origin) {
			sbuf_reset(&cell);
			add_cell(&cell, v ? v->origin : "default");
			strvec_push(&cells, cell.buf);
		}
	}
	print_table(&cells, ncol);
	strvec_clear(&cells);
	sbuf_release(&val);
	sbuf_release(&cell);
	return GDN_EXIT_OK;
}

static int config_show(const struct gdn_config *cfg, bool json, bool origin)
{
	size_t nr = 0;
	struct row *rows = collect_rows(cfg, &nr);
	int code;

	code = json ? show_json(rows, nr) : show_table(rows, nr, origin);
	free(rows);
	return code;
}

static int config_get(const struct gdn_config *cfg, const char *key)
{
	const struct gdn_cfg_value *v;
	struct sbuf out = SBUF_INIT;
	int code = GDN_EXIT_OK;

	if (!gdn_config_schema_find(cfg, key)) {
		gdn_config_suggest_key(cfg, key, &out);
		gdn_error("unknown configuration key '%s'; see 'gdnctl config keys'%s", key,
			  out.buf);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	v = gdn_config_get(cfg, key);
	if (!v) {
		code = GDN_EXIT_FAILED;
		goto out;
	}
	gdn_config_value_format(v, &out);
	sbuf_addch(&out, '\n');
	fwrite(out.buf, 1, out.len, stdout);
out:
	sbuf_release(&out);
	return code;
}

static int config_keys(const struct gdn_config *cfg, bool json)
{
	size_t nr;
	const struct gdn_cfg_key *schema = gdn_config_schema(cfg, &nr);
	json_t *doc = NULL, *keys = NULL;
	struct sbuf sb = SBUF_INIT;
	int code = GDN_EXIT_OK;

	if (json) {
		doc = gdn_json_doc(KEYS_JSON_SCHEMA); /* new */
		keys = json_array();		      /* new, stolen by doc */
		json_object_set_new(doc, "keys", keys);
	}
	for (size_t i = 0; i < nr; i++) {
		const struct gdn_cfg_key *e = &schema[i];

		if (json) {
			json_t *o = json_object(), *choices = json_array();

			for (size_t c = 0; e->choices && e->choices[c].name; c++)
				json_array_append_new(choices, json_string(e->choices[c].name));
			json_object_set_new(o, "key", json_string(e->key));
			json_object_set_new(o, "type", json_string(gdn_cfg_type_name(e)));
			json_object_set_new(o, "default",
					    e->defval ? json_string(e->defval) : json_null());
			json_object_set_new(o, "env", e->env ? json_string(e->env) : json_null());
			json_object_set_new(o, "choices", choices);
			json_object_set_new(o, "secret", json_boolean(e->secret));
			json_object_set_new(o, "help", json_string(e->help ? e->help : ""));
			json_array_append_new(keys, o);
			continue;
		}
		sbuf_addf(&sb, "%s (%s", e->key, gdn_cfg_type_name(e));
		for (size_t c = 0; e->choices && e->choices[c].name; c++)
			sbuf_addf(&sb, "%s%s", c ? "|" : ": ", e->choices[c].name);
		if (e->defval)
			sbuf_addf(&sb, ", default: %s", e->defval);
		if (e->env)
			sbuf_addf(&sb, ", env: %s", e->env);
		if (e->secret)
			sbuf_adds(&sb, ", secret");
		sbuf_addf(&sb, ")\n    %s\n", e->help ? e->help : "");
	}
	if (json)
		code = gdn_json_print(doc) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
	else
		fwrite(sb.buf, 1, sb.len, stdout);
	sbuf_release(&sb);
	return code;
}

int cmd_config(int argc, const char **argv, struct gdn_ctx *ctx)
{
	int json = 0, origin = 0, code = GDN_EXIT_OK;
	struct strvec rest = STRVEC_INIT;
	struct opt opts[] = {
	    OPT_BOOL_(0, "json", &json, "print JSON (schema " CONFIG_JSON_SCHEMA ")"),
	    OPT_BOOL_(0, "origin", &origin,
		      "also show where each value was set (file:line:col, variable, -c)"),
	    OPT_END_(),
	};
	const char *sub;

	if (!gdn_cmd_parse_opts(opts, &config_usage, argc, argv, 0, &rest, &code))
		goto out;
	sub = rest.nr ? rest.v[0] : "show";
	if (!strcmp(sub, "show")) {
		if (rest.nr > 1)
			code = gdn_usage_error("config", "unexpected argument '%s'", rest.v[1]);
		else
			code = config_show(&ctx->config, json, origin);
	} else if (!strcmp(sub, "get")) {
		if (rest.nr != 2)
			code = gdn_usage_error("config", "usage: gdnctl config get KEY");
		else if (json || origin)
			code = gdn_usage_error("config", "'%s' is only for 'config show'",
					       json ? "--json" : "--origin");
		else
			code = config_get(&ctx->config, rest.v[1]);
	} else if (!strcmp(sub, "keys")) {
		if (rest.nr > 1)
			code = gdn_usage_error("config", "unexpected argument '%s'", rest.v[1]);
		else if (origin)
			code =
			    gdn_usage_error("config", "'%s' is only for 'config show'", "--origin");
		else
			code = config_keys(&ctx->config, json);
	} else {
		code =
		    gdn_usage_error("config", "unknown subcommand '%s' (show, get or keys)", sub);
	}
out:
	strvec_clear(&rest);
	return code;
}
