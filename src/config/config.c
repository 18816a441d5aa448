/*
 * Configuration loading: built-in defaults, YAML files (libyaml event
 * API), the environment and -c, every value typed against the schema and
 * remembering where it came from.
 *
 * Layers are applied lowest precedence first; a higher layer replaces
 * the value of a lower one. Within one YAML file a key may be given only
 * once (nested or dotted spelling alike). Anchors, aliases and tags are
 * rejected, so no input can expand beyond its own size; input size and
 * nesting depth are capped (GDN_CFG_MAX_*).
 */
#include "gdnctl/compat.h"
#include <yaml.h>
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/suggest.h"
#include "gdnctl/xalloc.h"

#define EXCERPT_MAX 80

/* ---- small helpers ---------------------------------------------------- */

/*
 * Append user text for a one-line message: control bytes as \xNN, cut
 * after about `max` bytes (at a UTF-8 character boundary) with "...".
 */
static void add_excerpt(struct sbuf *sb, const char *s, size_t len, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (n >= max && (c & 0xc0) != 0x80) {
			sbuf_adds(sb, "...");
			return;
		}
		if (c < 0x20 || c == 0x7f) {
			sbuf_addf(sb, "\\x%02x", c);
			n += 4;
		} else {
			sbuf_addch(sb, c);
			n++;
		}
	}
}

/* Reset tmp to a printable excerpt of s and return it (borrowed from tmp). */
static const char *excerpt(struct sbuf *tmp, const char *s)
{
	sbuf_reset(tmp);
	add_excerpt(tmp, s, strlen(s), EXCERPT_MAX);
	return tmp->buf;
}

static bool has_star(const char *key)
{
	for (const char *p = key; *p; p = strchrnul(p, '.')) {
		if (*p == '.')
			p++;
		if (p[0] == '*' && (!p[1] || p[1] == '.'))
			return true;
	}
	return false;
}

static size_t ncomp(const char *key)
{
	size_t n = 1;

	for (; *key; key++)
		n += *key == '.';
	return n;
}

/* The rest of `key` after its first n components ("" when none are left). */
static const char *skip_comps(const char *key, size_t n)
{
	while (n--) {
		key = strchrnul(key, '.');
		if (*key)
			key++;
	}
	return key;
}

/*
 * Whether concrete `key` matches the first components of pattern `pat`
 * ("*" matches any one component). *whole: the pattern has no more.
 */
static bool prefix_match(const char *pat, const char *key, bool *whole)
{
	for (;;) {
		const char *pe = strchrnul(pat, '.'), *ke = strchrnul(key, '.');
		size_t pl = (size_t)(pe - pat), kl = (size_t)(ke - key);

		if (!(pl == 1 && *pat == '*') && (pl != kl || memcmp(pat, key, kl)))
			return false;
		if (!*ke) {
			*whole = !*pe;
			return true;
		}
		if (!*pe)
			return false;
		pat = pe + 1;
		key = ke + 1;
	}
}

/*
 * A key as the user may write it: non-empty dotted components, no
 * control characters, no NUL, no component "*". With `pattern`, "*"
 * components are allowed (schema keys).
 */
static bool valid_key(const char *k, size_t len, bool pattern)
{
	size_t comp = 0;

	if (!len || strlen(k) != len)
		return false;
	for (size_t i = 0; i <= len; i++) {
		unsigned char c = (unsigned char)k[i];

		if (i == len || c == '.') {
			if (i == comp)
				return false;
			if (!pattern && i == comp + 1 && k[comp] == '*')
				return false;
			comp = i + 1;
		} else if (c < 0x20 || c == 0x7f) {
			return false;
		}
	}
	return true;
}

static bool parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1", NULL};
	static const char *const no[] = {"false", "no", "off", "0", NULL};

	for (size_t i = 0; yes[i]; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* "an integer", "one of a, b", ... for "'KEY' expects ..." messages. */
static void add_expects(struct sbuf *sb, const struct gdn_cfg_key *e)
{
	switch (e->type) {
	case GDN_CFG_STRING:
		if (e->choices) {
			sbuf_adds(sb, "one of ");
			gdn_enum_join(e->choices, ", ", sb);
		} else {
			sbuf_adds(sb, "a string");
		}
		break;
	case GDN_CFG_INT:
		sbuf_adds(sb, "an integer");
		break;
	case GDN_CFG_FLOAT:
		sbuf_adds(sb, "a number");
		break;
	case GDN_CFG_BOOL:
		sbuf_adds(sb, "a boolean (true/false, yes/no, on/off, 1/0)");
		break;
	case GDN_CFG_DURATION:
		sbuf_adds(sb, "a duration like 90s, 15m or 2h");
		break;
	case GDN_CFG_LIST:
		sbuf_adds(sb, "a list");
		break;
	case GDN_CFG_MAP:
		sbuf_adds(sb, "a mapping");
		break;
	}
}

/* "ORIGIN: 'KEY' expects TYPE, got GOT" (got already formatted, e.g. "'abc'" or "a mapping"). */
static int type_error(struct gdn_err *err, const char *origin, const char *key,
		      const struct gdn_cfg_key *e, const char *got)
{
	struct sbuf msg = SBUF_INIT;
	int ret;

	sbuf_addf(&msg, "%s: '", origin);
	add_excerpt(&msg, key, strlen(key), EXCERPT_MAX);
	sbuf_adds(&msg, "' expects ");
	add_expects(&msg, e);
	sbuf_addf(&msg, ", got %s", got);
	ret = gdn_err_set(err, GDN_ECONFIG, "%s", msg.buf);
	sbuf_release(&msg);
	return ret;
}

static const char *env_lookup(const char *const *env, const char *name)
{
	size_t n = strlen(name);

	if (!env)
		return getenv(name);
	for (; *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

/* ---- schema and values ------------------------------------------------ */

void gdn_config_init(struct gdn_config *cfg, const struct gdn_cfg_key *schema, size_t schema_nr)
{
	*cfg = (struct gdn_config)GDN_CONFIG_INIT;
	cfg->schema = schema;
	cfg->schema_nr = schema ? schema_nr : 0;
}

static void value_release(struct gdn_cfg_value *v)
{
	free(v->key);
	free(v->origin);
	free(v->str);
	strvec_clear(&v->list);
}

void gdn_config_release(struct gdn_config *cfg)
{
	for (size_t i = 0; i < cfg->nr; i++)
		value_release(&cfg->v[i]);
	free(cfg->v);
	cfg->v = NULL;
	cfg->nr = cfg->alloc = 0;
	strvec_clear(&cfg->sections);
	FREE_AND_NULL(cfg->repo_file);
	FREE_AND_NULL(cfg->user_file);
}

const struct gdn_cfg_key *gdn_config_schema(const struct gdn_config *cfg, size_t *nr)
{
	if (cfg->schema) {
		*nr = cfg->schema_nr;
		return cfg->schema;
	}
	*nr = gdn_cfg_schema_nr;
	return gdn_cfg_schema;
}

enum node_kind {
	NODE_UNKNOWN,
	NODE_LEAF,    /* a value of the entry's type */
	NODE_SECTION, /* a mapping of further keys (fixed, or names under a MAP) */
};

/*
 * What the concrete key `key` is in the schema. *entry: the leaf's entry,
 * or for a section any entry below it (its "*" positions are those of
 * every entry below it, gdn_cfg_schema_check makes sure).
 */
static enum node_kind resolve(const struct gdn_config *cfg, const char *key,
			      const struct gdn_cfg_key **entry)
{
	size_t nr;
	const struct gdn_cfg_key *schema = gdn_config_schema(cfg, &nr);
	const struct gdn_cfg_key *leaf = NULL, *section = NULL;

	for (size_t i = 0; i < nr; i++) {
		const struct gdn_cfg_key *e = &schema[i];
		bool whole;

		if (!prefix_match(e->key, key, &whole))
			continue;
		if (!whole || e->type == GDN_CFG_MAP) {
			if (!section)
				section = e;
		} else if (!leaf || (has_star(leaf->key) && !has_star(e->key))) {
			leaf = e;
		}
	}
	*entry = leaf ? leaf : section;
	return leaf ? NODE_LEAF : section ? NODE_SECTION : NODE_UNKNOWN;
}

const struct gdn_cfg_key *gdn_config_schema_find(const struct gdn_config *cfg, const char *key)
{
	const struct gdn_cfg_key *e = NULL;

	if (!valid_key(key, strlen(key), false))
		return NULL;
	return resolve(cfg, key, &e) == NODE_LEAF ? e : NULL;
}

static struct gdn_cfg_value *find_value(const struct gdn_config *cfg, const char *key)
{
	for (size_t i = 0; i < cfg->nr; i++)
		if (!strcmp(cfg->v[i].key, key))
			return &cfg->v[i];
	return NULL;
}

/*
 * "; did you mean 'KEY'?" for an unknown key, when a key (or section) of the
 * schema with as many components is close; its "*" components are the
 * typed ones ("backends.box.hots": "backends.box.host").
 */
void gdn_config_suggest_key(const struct gdn_config *cfg, const char *key, struct sbuf *out)
{
	struct gdn_suggest sg = GDN_SUGGEST_INIT(key);
	struct sbuf cand = SBUF_INIT;
	size_t nr, n = ncomp(key);
	const struct gdn_cfg_key *schema = gdn_config_schema(cfg, &nr);

	for (size_t i = 0; i < nr; i++) {
		const char *p = schema[i].key, *k = key;
		size_t c;

		if (ncomp(p) < n)
			continue;
		sbuf_reset(&cand);
		for (c = 0; c < n; c++) {
			const char *pe = strchrnul(p, '.'), *ke = strchrnul(k, '.');

			if (c)
				sbuf_addch(&cand, '.');
			if (pe - p == 1 && *p == '*')
				sbuf_add(&cand, k, (size_t)(ke - k));
			else
				sbuf_add(&cand, p, (size_t)(pe - p));
			p = *pe ? pe + 1 : pe;
			k = *ke ? ke + 1 : ke;
		}
		gdn_suggest_add(&sg, cand.buf);
	}
	gdn_suggest_format(&sg, NULL, out);
	gdn_suggest_release(&sg);
	sbuf_release(&cand);
}

/*
 * Record the MAP sections that concrete `key` (matching pattern `pat`)
 * passes through: "backends.box" for "backends.box.host".
 */
static int note_sections(struct gdn_config *cfg, const char *key, const char *pat,
			 const char *origin, struct gdn_err *err)
{
	const char *k = key, *p = pat;
	int ret = 0;

	while (*k && *p) {
		const char *ke = strchrnul(k, '.'), *pe = strchrnul(p, '.');

		if (pe - p == 1 && *p == '*') {
			char *name = xstrndup(key, (size_t)(ke - key));

			if (!strvec_contains(&cfg->sections, name)) {
				if (cfg->sections.nr >= GDN_CFG_MAX_VALUES)
					ret = gdn_err_set(err, GDN_ECONFIG,
							  "%s: too many sections (limit %d)",
							  origin, GDN_CFG_MAX_VALUES);
				else
					strvec_push(&cfg->sections, name);
			}
			free(name);
			if (ret)
				break;
		}
		k = *ke ? ke + 1 : ke;
		p = *pe ? pe + 1 : pe;
	}
	return ret;
}

/*
 * Type `text` (or the sequence `items`, emptied) as entry e and store it
 * under concrete `key`, replacing a value from a lower layer.
 */
static int store(struct gdn_config *cfg, const struct gdn_cfg_key *e, const char *key,
		 const char *text, struct strvec *items, enum gdn_cfg_source src,
		 const char *origin, struct gdn_err *err)
{
	struct gdn_cfg_value nv = {0};
	struct gdn_cfg_value *old;
	struct sbuf tmp = SBUF_INIT, got = SBUF_INIT;
	bool bad = false;
	int ret = 0;

	strvec_init(&nv.list);
	if (!text)
		text = "";
	switch (e->type) {
	case GDN_CFG_STRING:
		if (e->choices)
			bad = !gdn_enum_find(e->choices, text);
		break;
	case GDN_CFG_INT: {
		long n = 0;

		bad = opt_parse_long(text, &n) != 0;
		nv.i = n;
		nv.f = (double)n;
		break;
	}
	case GDN_CFG_FLOAT:
		bad = opt_parse_double(text, &nv.f) != 0;
		break;
	case GDN_CFG_BOOL: {
		bool b = false;

		bad = !parse_bool(text, &b);
		nv.i = b;
		if (!bad)
			text = b ? "true" : "false";
		break;
	}
	case GDN_CFG_DURATION: {
		long ms = 0;

		bad = opt_parse_duration_ms(text, &ms) != 0;
		nv.i = ms;
		break;
	}
	case GDN_CFG_LIST:
		if (items) {
			nv.list = *items; /* moved */
			strvec_init(items);
		} else {
			strvec_split(&nv.list, text, ',');
		}
		for (size_t i = 0; i < nv.list.nr; i++)
			sbuf_addf(&tmp, "%s%s", i ? "," : "", nv.list.v[i]);
		text = tmp.buf;
		break;
	case GDN_CFG_MAP:
		BUG("storing a value for map key '%s'", e->key);
	}
	if (bad) {
		sbuf_addch(&got, '\'');
		add_excerpt(&got, text, strlen(text), EXCERPT_MAX);
		sbuf_addch(&got, '\'');
		ret = type_error(err, origin, key, e, got.buf);
		goto out;
	}
	nv.str = xstrdup(text);
	nv.key = xstrdup(key);
	nv.origin = xstrdup(origin);
	nv.schema = e;
	nv.source = src;
	old = find_value(cfg, key);
	if (old) {
		value_release(old);
		*old = nv;
	} else if (cfg->nr >= GDN_CFG_MAX_VALUES) {
		ret = gdn_err_set(err, GDN_ECONFIG, "%s: too many keys (limit %d)", origin,
				  GDN_CFG_MAX_VALUES);
		goto out;
	} else {
		ALLOC_GROW(cfg->v, cfg->nr + 1, cfg->alloc);
		cfg->v[cfg->nr++] = nv;
	}
	nv = (struct gdn_cfg_value){0};
	strvec_init(&nv.list);
out:
	value_release(&nv);
	sbuf_release(&tmp);
	sbuf_release(&got);
	return ret;
}

int gdn_config_set(struct gdn_config *cfg, const char *key, const char *text,
		   enum gdn_cfg_source source, const char *origin, struct gdn_err *err)
{
	const struct gdn_cfg_key *e = NULL;
	struct sbuf q = SBUF_INIT;
	int ret = 0;

	if (!valid_key(key, strlen(key), false)) {
		ret =
		    gdn_err_set(err, GDN_ECONFIG, "%s: invalid key '%s'", origin, excerpt(&q, key));
		goto out;
	}
	switch (resolve(cfg, key, &e)) {
	case NODE_UNKNOWN: {
		struct sbuf hint = SBUF_INIT;

		gdn_config_suggest_key(cfg, key, &hint);
		ret = gdn_err_set(err, GDN_ECONFIG, "%s: unknown key '%s'%s", origin,
				  excerpt(&q, key), hint.buf);
		sbuf_release(&hint);
		break;
	}
	case NODE_SECTION:
		ret = gdn_err_set(err, GDN_ECONFIG, "%s: '%s' is a section, not a value", origin,
				  excerpt(&q, key));
		break;
	case NODE_LEAF:
		ret = note_sections(cfg, key, e->key, origin, err);
		if (!ret)
			ret = store(cfg, e, key, text, NULL, source, origin, err);
		break;
	}
out:
	sbuf_release(&q);
	return ret;
}

/* ---- YAML ------------------------------------------------------------- */

struct loader {
	struct gdn_config *cfg;
	const char *name;
	const char *buf;
	size_t len;
	enum gdn_cfg_source source;
	yaml_parser_t parser;
	struct strvec leaves; /* keys this buffer set: a second time is a duplicate */
	struct gdn_err *err;
};

static void add_mark(struct sbuf *sb, const struct loader *ld, yaml_mark_t m)
{
	sbuf_addf(sb, "%s:%zu:%zu", ld->name, m.line + 1, m.column + 1);
}

static int err_at(struct loader *ld, yaml_mark_t m, const char *fmt, ...) GDN_PRINTF(3, 4);
static int err_at(struct loader *ld, yaml_mark_t m, const char *fmt, ...)
{
	struct sbuf msg = SBUF_INIT;
	va_list ap;
	int ret;

	add_mark(&msg, ld, m);
	sbuf_adds(&msg, ": ");
	va_start(ap, fmt);
	sbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	ret = gdn_err_set(ld->err, GDN_ECONFIG, "%s", msg.buf);
	sbuf_release(&msg);
	return ret;
}

static int syntax_error(struct loader *ld)
{
	const yaml_parser_t *p = &ld->parser;
	yaml_mark_t m = p->problem_mark;
	const char *problem = p->problem ? p->problem : "malformed YAML";

	if (p->error == YAML_MEMORY_ERROR) {
		problem = "out of memory";
	} else if (p->error == YAML_READER_ERROR) {
		/* reader errors carry a byte offset, not a mark */
		size_t end = p->problem_offset < ld->len ? p->problem_offset : ld->len;

		m.line = m.column = 0;
		for (size_t i = 0; i < end; i++) {
			if (ld->buf[i] == '\n') {
				m.line++;
				m.column = 0;
			} else {
				m.column++;
			}
		}
	}
	return err_at(ld, m, "%s", problem);
}

/* The next event, with anchors, aliases and tags refused. The caller deletes *ev. */
static int next_event(struct loader *ld, yaml_event_t *ev)
{
	const yaml_char_t *anchor = NULL, *tag = NULL;
	int ret = 0;

	if (!yaml_parser_parse(&ld->parser, ev)) {
		memset(ev, 0, sizeof(*ev));
		return syntax_error(ld);
	}
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		ret = err_at(ld, ev->start_mark, "aliases are not supported");
		break;
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
		break;
	default:
		break;
	}
	if (!ret && anchor)
		ret = err_at(ld, ev->start_mark, "anchors are not supported");
	else if (!ret && tag)
		ret = err_at(ld, ev->start_mark, "tags are not supported");
	return ret;
}

static const char *scalar(const yaml_event_t *ev)
{
	return (const char *)ev->data.scalar.value;
}

static bool is_null(const yaml_event_t *ev)
{
	const char *s = scalar(ev);

	return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
		!strcmp(s, "NULL"));
}

/* What a node is, for "got ..." in messages. */
static void add_got(struct sbuf *sb, const yaml_event_t *ev)
{
	if (ev->type == YAML_SEQUENCE_START_EVENT) {
		sbuf_adds(sb, "a sequence");
	} else if (ev->type == YAML_MAPPING_START_EVENT) {
		sbuf_adds(sb, "a mapping");
	} else if (is_null(ev)) {
		sbuf_adds(sb, "null");
	} else {
		sbuf_addch(sb, '\'');
		add_excerpt(sb, scalar(ev), ev->data.scalar.length, EXCERPT_MAX);
		sbuf_addch(sb, '\'');
	}
}

static int node_type_error(struct loader *ld, const yaml_event_t *ev, const char *key,
			   const struct gdn_cfg_key *e)
{
	struct sbuf origin = SBUF_INIT, got = SBUF_INIT;
	int ret;

	add_mark(&origin, ld, ev->start_mark);
	add_got(&got, ev);
	ret = type_error(ld->err, origin.buf, key, e, got.buf);
	sbuf_release(&origin);
	sbuf_release(&got);
	return ret;
}

/* A scalar holding a NUL byte cannot be a C string. */
static int check_nul(struct loader *ld, const yaml_event_t *ev, const char *key)
{
	struct sbuf q = SBUF_INIT;
	int ret = 0;

	if (strlen(scalar(ev)) != ev->data.scalar.length)
		ret = err_at(ld, ev->start_mark, "'%s' contains a NUL character", excerpt(&q, key));
	sbuf_release(&q);
	return ret;
}

/* The value node of leaf `key` (entry e) starts with *vev; *kev is its key. */
static int load_leaf(struct loader *ld, const struct gdn_cfg_key *e, const char *key,
		     const yaml_event_t *kev, const yaml_event_t *vev)
{
	struct strvec items = STRVEC_INIT;
	struct sbuf origin = SBUF_INIT, q = SBUF_INIT;
	yaml_event_t ev = {0};
	int ret = 0;

	if (strvec_contains(&ld->leaves, key)) {
		ret = err_at(ld, kev->start_mark, "duplicate key '%s'", excerpt(&q, key));
		goto out;
	}
	strvec_push(&ld->leaves, key);
	add_mark(&origin, ld, vev->start_mark);

	if (vev->type == YAML_SCALAR_EVENT && is_null(vev) && e->type == GDN_CFG_LIST) {
		ret = store(ld->cfg, e, key, NULL, &items, ld->source, origin.buf, ld->err);
	} else if (vev->type == YAML_SCALAR_EVENT && !is_null(vev)) {
		ret = check_nul(ld, vev, key);
		if (!ret)
			ret = store(ld->cfg, e, key, scalar(vev), NULL, ld->source, origin.buf,
				    ld->err);
	} else if (vev->type == YAML_SEQUENCE_START_EVENT && e->type == GDN_CFG_LIST) {
		for (;;) {
			yaml_event_delete(&ev);
			ret = next_event(ld, &ev);
			if (ret || ev.type == YAML_SEQUENCE_END_EVENT)
				break;
			if (ev.type != YAML_SCALAR_EVENT || is_null(&ev)) {
				struct sbuf got = SBUF_INIT;

				add_got(&got, &ev);
				ret = err_at(ld, ev.start_mark,
					     "'%s' expects a list of scalars, got %s",
					     excerpt(&q, key), got.buf);
				sbuf_release(&got);
				break;
			}
			ret = check_nul(ld, &ev, key);
			if (ret)
				break;
			strvec_push(&items, scalar(&ev));
		}
		if (!ret)
			ret = store(ld->cfg, e, key, NULL, &items, ld->source, origin.buf, ld->err);
	} else {
		ret = node_type_error(ld, vev, key, e);
	}
out:
	yaml_event_delete(&ev);
	strvec_clear(&items);
	sbuf_release(&origin);
	sbuf_release(&q);
	return ret;
}

/* The keys of a mapping whose MAPPING_START was read; `prefix` is its dotted path or NULL. */
static int load_mapping(struct loader *ld, const char *prefix, int depth)
{
	struct strvec keys = STRVEC_INIT;
	struct sbuf full = SBUF_INIT, q = SBUF_INIT, origin = SBUF_INIT;
	yaml_event_t kev = {0}, vev = {0};
	int ret = 0;

	for (;;) {
		const struct gdn_cfg_key *e = NULL;
		enum node_kind kind;

		yaml_event_delete(&kev);
		yaml_event_delete(&vev);
		ret = next_event(ld, &kev);
		if (ret || kev.type == YAML_MAPPING_END_EVENT)
			break;
		if (kev.type != YAML_SCALAR_EVENT) {
			ret = err_at(ld, kev.start_mark, "mapping keys must be scalars");
			break;
		}
		sbuf_reset(&full);
		if (prefix)
			sbuf_addf(&full, "%s.", prefix);
		sbuf_add(&full, scalar(&kev), kev.data.scalar.length);
		if (!valid_key(scalar(&kev), kev.data.scalar.length, false) ||
		    full.len != strlen(full.buf)) {
			sbuf_reset(&q);
			add_excerpt(&q, full.buf, full.len, EXCERPT_MAX);
			ret = err_at(ld, kev.start_mark, "invalid key '%s'", q.buf);
			break;
		}
		if (strvec_contains(&keys, full.buf)) {
			ret =
			    err_at(ld, kev.start_mark, "duplicate key '%s'", excerpt(&q, full.buf));
			break;
		}
		strvec_push(&keys, full.buf);
		kind = resolve(ld->cfg, full.buf, &e);
		if (kind == NODE_UNKNOWN) {
			struct sbuf hint = SBUF_INIT;

			gdn_config_suggest_key(ld->cfg, full.buf, &hint);
			ret = err_at(ld, kev.start_mark, "unknown key '%s'%s",
				     excerpt(&q, full.buf), hint.buf);
			sbuf_release(&hint);
			break;
		}
		sbuf_reset(&origin);
		add_mark(&origin, ld, kev.start_mark);
		ret = note_sections(ld->cfg, full.buf, e->key, origin.buf, ld->err);
		if (ret)
			break;
		ret = next_event(ld, &vev);
		if (ret)
			break;
		if (kind == NODE_LEAF) {
			ret = load_leaf(ld, e, full.buf, &kev, &vev);
		} else if (vev.type == YAML_MAPPING_START_EVENT) {
			if (depth >= GDN_CFG_MAX_DEPTH)
				ret = err_at(ld, vev.start_mark, "nested deeper than %d levels",
					     GDN_CFG_MAX_DEPTH);
			else
				ret = load_mapping(ld, full.buf, depth + 1);
		} else if (!is_null(&vev)) {
			struct gdn_cfg_key section = {.key = full.buf, .type = GDN_CFG_MAP};

			ret = node_type_error(ld, &vev, full.buf, &section);
		}
		if (ret)
			break;
	}
	yaml_event_delete(&kev);
	yaml_event_delete(&vev);
	strvec_clear(&keys);
	sbuf_release(&full);
	sbuf_release(&q);
	sbuf_release(&origin);
	return ret;
}

/* The root node of the document starts with *ev. */
static int load_root(struct loader *ld, const yaml_event_t *ev)
{
	struct sbuf got = SBUF_INIT;
	int ret = 0;

	if (ev->type == YAML_MAPPING_START_EVENT) {
		ret = load_mapping(ld, NULL, 1);
	} else if (!is_null(ev)) {
		add_got(&got, ev);
		ret =
		    err_at(ld, ev->start_mark, "the top level must be a mapping, got %s", got.buf);
	}
	sbuf_release(&got);
	return ret;
}

static int load_stream(struct loader *ld)
{
	yaml_event_t ev = {0};
	int docs = 0;
	int ret;

	ret = next_event(ld, &ev); /* STREAM-START */
	while (!ret) {
		yaml_event_delete(&ev);
		ret = next_event(ld, &ev);
		if (ret || ev.type == YAML_STREAM_END_EVENT)
			break;
		if (ev.type != YAML_DOCUMENT_START_EVENT)
			BUG("libyaml: expected a document start, got event %d", (int)ev.type);
		if (docs++) {
			ret = err_at(ld, ev.start_mark, "only one YAML document is allowed");
			break;
		}
		yaml_event_delete(&ev);
		ret = next_event(ld, &ev);
		if (!ret)
			ret = load_root(ld, &ev);
		if (ret)
			break;
		yaml_event_delete(&ev);
		ret = next_event(ld, &ev); /* DOCUMENT-END */
	}
	yaml_event_delete(&ev);
	return ret;
}

int gdn_config_load_buffer(struct gdn_config *cfg, const char *name, const char *buf, size_t len,
			   enum gdn_cfg_source source, struct gdn_err *err)
{
	struct loader ld = {.cfg = cfg,
			    .name = name,
			    .buf = buf ? buf : "",
			    .len = len,
			    .source = source,
			    .err = err};
	int ret;

	if (len > GDN_CFG_MAX_FILE_SIZE)
		return gdn_err_set(err, GDN_ECONFIG, "%s: larger than %d bytes", name,
				   GDN_CFG_MAX_FILE_SIZE);
	if (!yaml_parser_initialize(&ld.parser))
		return gdn_err_set(err, GDN_ECONFIG, "%s: out of memory", name);
	strvec_init(&ld.leaves);
	yaml_parser_set_input_string(&ld.parser, (const unsigned char *)ld.buf, len);
	ret = load_stream(&ld);
	yaml_parser_delete(&ld.parser);
	strvec_clear(&ld.leaves);
	return ret;
}

/* ---- layers ----------------------------------------------------------- */

static int load_file(struct gdn_config *cfg, const char *path, enum gdn_cfg_source source,
		     struct gdn_err *err)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err rerr = GDN_ERR_INIT;
	struct stat st;
	int ret = 0;

	if (stat(path, &st)) {
		if (errno != ENOENT && errno != ENOTDIR)
			ret = gdn_err_errno(err, GDN_ECONFIG, "cannot read '%s'", path);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = gdn_err_set(err, GDN_ECONFIG, "cannot read '%s': Is a directory", path);
		goto out;
	}
	if (st.st_size > GDN_CFG_MAX_FILE_SIZE) {
		ret = gdn_err_set(err, GDN_ECONFIG, "%s: larger than %d bytes", path,
				  GDN_CFG_MAX_FILE_SIZE);
		goto out;
	}
	ret = sbuf_read_file(&sb, path, GDN_CFG_MAX_FILE_SIZE, &rerr);
	if (ret == GDN_ENOTFOUND) {
		ret = 0; /* removed since stat() */
		goto out;
	}
	if (ret) {
		ret = gdn_err_set(err, GDN_ECONFIG, "%s", rerr.msg);
		goto out;
	}
	ret = gdn_config_load_buffer(cfg, path, sb.buf, sb.len, source, err);
out:
	sbuf_release(&sb);
	return ret;
}

static int load_defaults(struct gdn_config *cfg, struct gdn_err *err)
{
	size_t nr;
	const struct gdn_cfg_key *schema = gdn_config_schema(cfg, &nr);
	int ret = 0;

	for (size_t i = 0; i < nr && !ret; i++) {
		const struct gdn_cfg_key *e = &schema[i];

		if (e->type == GDN_CFG_MAP || has_star(e->key))
			continue;
		if (e->defval || e->type == GDN_CFG_LIST)
			ret =
			    store(cfg, e, e->key, e->defval, NULL, GDN_SRC_DEFAULT, "default", err);
	}
	return ret;
}

/* Defaults of "*" keys, for every section that exists ("backends.box" gets "backends.*.type"). */
static int load_section_defaults(struct gdn_config *cfg, struct gdn_err *err)
{
	size_t nr;
	const struct gdn_cfg_key *schema = gdn_config_schema(cfg, &nr);
	struct sbuf key = SBUF_INIT;
	int ret = 0;

	for (size_t s = 0; s < cfg->sections.nr && !ret; s++) {
		const char *sec = cfg->sections.v[s];

		for (size_t i = 0; i < nr && !ret; i++) {
			const struct gdn_cfg_key *e = &schema[i];
			const char *rest;
			bool whole;

			if (e->type == GDN_CFG_MAP || !(e->defval || e->type == GDN_CFG_LIST) ||
			    !prefix_match(e->key, sec, &whole) || whole)
				continue;
			rest = skip_comps(e->key, ncomp(sec));
			if (has_star(rest))
				continue;
			sbuf_reset(&key);
			sbuf_addf(&key, "%s.%s", sec, rest);
			if (!find_value(cfg, key.buf))
				ret = store(cfg, e, key.buf, e->defval, NULL, GDN_SRC_DEFAULT,
					    "default", err);
		}
	}
	sbuf_release(&key);
	return ret;
}

static int load_env(struct gdn_config *cfg, const char *const *env, struct gdn_err *err)
{
	size_t nr;
	const struct gdn_cfg_key *schema = gdn_config_schema(cfg, &nr);
	int ret = 0;

	for (size_t i = 0; i < nr && !ret; i++) {
		const struct gdn_cfg_key *e = &schema[i];
		const char *val;

		if (!e->env || e->type == GDN_CFG_MAP || has_star(e->key))
			continue;
		val = env_lookup(env, e->env);
		if (val && *val) /* empty counts as unset */
			ret = store(cfg, e, e->key, val, NULL, GDN_SRC_ENV, e->env, err);
	}
	return ret;
}

static int load_cmdline(struct gdn_config *cfg, const char *const *cmdline, struct gdn_err *err)
{
	struct sbuf q = SBUF_INIT;
	int ret = 0;

	for (; cmdline && *cmdline && !ret; cmdline++) {
		const char *eq = strchr(*cmdline, '=');
		char *key;

		if (!eq) {
			ret = gdn_err_set(err, GDN_ECONFIG, "-c: expected KEY=VALUE, got '%s'",
					  excerpt(&q, *cmdline));
			break;
		}
		key = xstrndup(*cmdline, (size_t)(eq - *cmdline));
		ret = gdn_config_set(cfg, key, eq + 1, GDN_SRC_CMDLINE, "-c", err);
		free(key);
	}
	sbuf_release(&q);
	return ret;
}

/*
 * The one key with a side effect: names listed in `secrets` are
 * registered with the secret masker, as are the values of secret keys.
 */
static int register_secrets(struct gdn_config *cfg, struct gdn_err *err)
{
	const struct gdn_cfg_value *v = gdn_config_get(cfg, "secrets");
	struct sbuf q = SBUF_INIT;
	int ret = 0;

	if (v && v->schema->type == GDN_CFG_LIST) {
		for (size_t i = 0; i < v->list.nr && !ret; i++)
			if (!opt_is_env_name(v->list.v[i], strlen(v->list.v[i])))
				ret = gdn_err_set(err, GDN_ECONFIG,
						  "%s: 'secrets' expects environment variable "
						  "names, got '%s'",
						  v->origin, excerpt(&q, v->list.v[i]));
		for (size_t i = 0; i < v->list.nr && !ret; i++)
			gdn_secret_add_name(v->list.v[i]);
	}
	for (size_t i = 0; i < cfg->nr && !ret; i++)
		if (cfg->v[i].schema->secret && cfg->v[i].str[0])
			gdn_secret_add_value(cfg->v[i].str);
	sbuf_release(&q);
	return ret;
}

static char *user_file_path(const struct gdn_config_load_opts *o)
{
	const char *xdg = env_lookup(o->environ_, "XDG_CONFIG_HOME");
	const char *home = env_lookup(o->environ_, "HOME");

	if (o->user_file)
		return xstrdup(o->user_file);
	if (xdg && xdg[0] == '/') /* the XDG spec ignores relative paths */
		return xstrfmt("%s/gdnctl/config.yaml", xdg);
	if (home && *home)
		return xstrfmt("%s/.config/gdnctl/config.yaml", home);
	return NULL;
}

int gdn_config_load(struct gdn_config *cfg, const struct gdn_config_load_opts *o,
		    struct gdn_err *err)
{
	static const struct gdn_config_load_opts no_opts;
	int ret;

	if (!o)
		o = &no_opts;
	ret = load_defaults(cfg, err);
	if (ret)
		goto out;
	free(cfg->user_file);
	cfg->user_file = user_file_path(o);
	if (cfg->user_file) {
		ret = load_file(cfg, cfg->user_file, GDN_SRC_USER_FILE, err);
		if (ret)
			goto out;
	}
	free(cfg->repo_file);
	cfg->repo_file = o->repo_root ? xstrfmt("%s/" GDN_CONFIG_REPO_FILE, o->repo_root) : NULL;
	if (cfg->repo_file) {
		ret = load_file(cfg, cfg->repo_file, GDN_SRC_REPO_FILE, err);
		if (ret)
			goto out;
	}
	ret = load_env(cfg, o->environ_, err);
	if (ret)
		goto out;
	ret = load_cmdline(cfg, o->cmdline, err);
	if (ret)
		goto out;
	ret = load_section_defaults(cfg, err);
	if (ret)
		goto out;
	ret = register_secrets(cfg, err);
out:
	return ret;
}

int gdn_config_load_under(struct gdn_config *cfg, const char *name, const char *buf, size_t len,
			  enum gdn_cfg_source source, struct gdn_err *err)
{
	struct gdn_config layer;
	int ret;

	gdn_config_init(&layer, cfg->schema, cfg->schema_nr);
	ret = gdn_config_load_buffer(&layer, name, buf, len, source, err);
	for (size_t i = 0; i < layer.nr && !ret; i++) {
		struct gdn_cfg_value *nv = &layer.v[i], *old = find_value(cfg, nv->key);
		struct strvec items = STRVEC_INIT;

		if (old && old->source >= source)
			continue; /* set by a higher layer: the environment, -c */
		strvec_pushv(&items, nv->list.v);
		ret = store(cfg, nv->schema, nv->key, nv->str,
			    nv->schema->type == GDN_CFG_LIST ? &items : NULL, source, nv->origin,
			    err);
		strvec_clear(&items);
	}
	for (size_t i = 0; i < layer.sections.nr && !ret; i++)
		if (!strvec_contains(&cfg->sections, layer.sections.v[i]))
			strvec_push(&cfg->sections, layer.sections.v[i]);
	if (!ret)
		ret = load_section_defaults(cfg, err);
	if (!ret)
		ret = register_secrets(cfg, err);
	gdn_config_release(&layer);
	return ret;
}

/* ---- lookups ---------------------------------------------------------- */

const struct gdn_cfg_value *gdn_config_get(const struct gdn_config *cfg, const char *key)
{
	return find_value(cfg, key);
}

const char *gdn_config_str(const struct gdn_config *cfg, const char *key)
{
	const struct gdn_cfg_value *v = find_value(cfg, key);

	return v ? v->str : NULL;
}

long long gdn_config_int(const struct gdn_config *cfg, const char *key, long long fallback)
{
	const struct gdn_cfg_value *v = find_value(cfg, key);

	if (!v || (v->schema->type != GDN_CFG_INT && v->schema->type != GDN_CFG_DURATION &&
		   v->schema->type != GDN_CFG_BOOL))
		return fallback;
	return v->i;
}

double gdn_config_float(const struct gdn_config *cfg, const char *key, double fallback)
{
	const struct gdn_cfg_value *v = find_value(cfg, key);

	if (!v || (v->schema->type != GDN_CFG_FLOAT && v->schema->type != GDN_CFG_INT))
		return fallback;
	return v->f;
}

bool gdn_config_bool(const struct gdn_config *cfg, const char *key, bool fallback)
{
	const struct gdn_cfg_value *v = find_value(cfg, key);

	if (!v || v->schema->type != GDN_CFG_BOOL)
		return fallback;
	return v->i != 0;
}

const struct strvec *gdn_config_list(const struct gdn_config *cfg, const char *key)
{
	static const struct strvec empty = STRVEC_INIT;
	const struct gdn_cfg_value *v = find_value(cfg, key);

	if (!v || v->schema->type != GDN_CFG_LIST)
		return &empty;
	return &v->list;
}

void gdn_config_map_names(const struct gdn_config *cfg, const char *map_key, struct strvec *out)
{
	size_t len = strlen(map_key);

	for (size_t i = 0; i < cfg->sections.nr; i++) {
		const char *s = cfg->sections.v[i];

		if (!strncmp(s, map_key, len) && s[len] == '.' && !strchr(s + len + 1, '.'))
			strvec_push(out, s + len + 1);
	}
}

char *gdn_config_path(const struct gdn_config *cfg, const char *key, const char *base)
{
	const char *s = gdn_config_str(cfg, key);
	const char *home = getenv("HOME");

	if (!s || !*s)
		return NULL;
	if (s[0] == '~' && s[1] == '/' && home && *home)
		return xstrfmt("%s/%s", home, s + 2);
	if (s[0] == '/' || !base)
		return xstrdup(s);
	return xstrfmt("%s/%s", base, s);
}

const char *gdn_cfg_source_name(enum gdn_cfg_source s)
{
	switch (s) {
	case GDN_SRC_DEFAULT:
		return "default";
	case GDN_SRC_USER_FILE:
		return "user";
	case GDN_SRC_REPO_FILE:
		return "repo";
	case GDN_SRC_ENV:
		return "env";
	case GDN_SRC_CMDLINE:
		return "command-line";
	}
	return "unknown";
}

const char *gdn_cfg_type_name(const struct gdn_cfg_key *k)
{
	switch (k->type) {
	case GDN_CFG_STRING:
		return k->choices ? "choice" : "string";
	case GDN_CFG_INT:
		return "int";
	case GDN_CFG_FLOAT:
		return "float";
	case GDN_CFG_BOOL:
		return "bool";
	case GDN_CFG_DURATION:
		return "duration";
	case GDN_CFG_LIST:
		return "list";
	case GDN_CFG_MAP:
		return "map";
	}
	return "unknown";
}

void gdn_config_value_format(const struct gdn_cfg_value *v, struct sbuf *out)
{
	if (!v || !v->str)
		return;
	if (v->schema && v->schema->secret && v->str[0])
		sbuf_adds(out, "***");
	else
		sbuf_adds(out, v->str);
}

/* ---- schema check ----------------------------------------------------- */

static const struct gdn_cfg_key *schema_exact(const struct gdn_cfg_key *schema, size_t nr,
					      const char *key, size_t len)
{
	for (size_t i = 0; i < nr; i++)
		if (strlen(schema[i].key) == len && !strncmp(schema[i].key, key, len))
			return &schema[i];
	return NULL;
}

static int check_entry(const struct gdn_cfg_key *schema, size_t nr, const struct gdn_cfg_key *e,
		       struct gdn_config *tmp, struct gdn_err *err)
{
	const struct gdn_cfg_key *m;

	if (!valid_key(e->key, strlen(e->key), true))
		return gdn_err_set(err, GDN_ECONFIG, "schema: invalid key '%s'", e->key);
	if (schema_exact(schema, nr, e->key, strlen(e->key)) != e)
		return gdn_err_set(err, GDN_ECONFIG, "schema: '%s' is listed twice", e->key);
	if (e->choices && e->type != GDN_CFG_STRING)
		return gdn_err_set(err, GDN_ECONFIG, "schema: '%s' has choices but is no string",
				   e->key);
	if ((e->env && (has_star(e->key) || e->type == GDN_CFG_MAP)) ||
	    (e->env && !opt_is_env_name(e->env, strlen(e->env))))
		return gdn_err_set(err, GDN_ECONFIG, "schema: '%s' cannot have env '%s'", e->key,
				   e->env);
	if (e->type == GDN_CFG_MAP && e->defval)
		return gdn_err_set(err, GDN_ECONFIG, "schema: map '%s' cannot have a default",
				   e->key);
	/* every proper prefix: never a leaf; a MAP exactly when "*" follows */
	for (const char *p = strchr(e->key, '.'); p; p = strchr(p + 1, '.')) {
		size_t len = (size_t)(p - e->key);
		bool star = p[1] == '*' && (!p[2] || p[2] == '.');

		m = schema_exact(schema, nr, e->key, len);
		if (m && m->type != GDN_CFG_MAP)
			return gdn_err_set(err, GDN_ECONFIG, "schema: '%s' is under value '%s'",
					   e->key, m->key);
		if (star != (m != NULL))
			return gdn_err_set(err, GDN_ECONFIG,
					   star ? "schema: '*' in '%s' is not under a map"
						: "schema: '%s' is under a map but has no '*'",
					   e->key);
	}
	if (e->key[0] == '*')
		return gdn_err_set(err, GDN_ECONFIG, "schema: '*' in '%s' is not under a map",
				   e->key);
	if (e->type != GDN_CFG_MAP && (e->defval || e->type == GDN_CFG_LIST))
		return store(tmp, e, e->key, e->defval, NULL, GDN_SRC_DEFAULT, "default", err);
	return 0;
}

int gdn_cfg_schema_check(const struct gdn_cfg_key *schema, size_t nr, struct gdn_err *err)
{
	struct gdn_config tmp;
	int ret = 0;

	gdn_config_init(&tmp, schema, nr);
	for (size_t i = 0; i < nr && !ret; i++)
		ret = check_entry(schema, nr, &schema[i], &tmp, err);
	gdn_config_release(&tmp);
	return ret;
}
