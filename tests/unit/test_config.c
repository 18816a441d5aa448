/*
 * Unit tests for configuration loading: every layer and their precedence,
 * every value type, exact file:line:col messages, MAP sections (with a
 * test-local schema), YAML features we refuse, limits, secrets, and that
 * docs/configuration.md documents every key.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static const struct gdn_enum modes[] = {{"fast", 0, NULL}, {"slow", 1, NULL}, GDN_ENUM_END};
static const struct gdn_enum kinds[] = {{"ssh", 0, NULL}, {"ray", 1, NULL}, GDN_ENUM_END};

static const struct gdn_cfg_key test_schema[] = {
    {"name", GDN_CFG_STRING, "anon", "T_NAME", NULL, "a string", false},
    {"mode", GDN_CFG_STRING, "fast", "T_MODE", modes, "a choice", false},
    {"count", GDN_CFG_INT, "3", "T_COUNT", NULL, "an int", false},
    {"ratio", GDN_CFG_FLOAT, "0.5", "T_RATIO", NULL, "a float", false},
    {"verbose", GDN_CFG_BOOL, "false", "T_VERBOSE", NULL, "a bool", false},
    {"timeout", GDN_CFG_DURATION, "90s", "T_TIMEOUT", NULL, "a duration", false},
    {"fields", GDN_CFG_LIST, NULL, "T_FIELDS", NULL, "a list", false},
    {"token", GDN_CFG_STRING, NULL, "T_TOKEN", NULL, "a secret", true},
    {"deep.er.key", GDN_CFG_INT, NULL, NULL, NULL, "three levels down", false},
    {"backends", GDN_CFG_MAP, NULL, NULL, NULL, "named backends", false},
    {"backends.*.type", GDN_CFG_STRING, "ssh", NULL, kinds, "backend kind", false},
    {"backends.*.host", GDN_CFG_STRING, NULL, NULL, NULL, "host name", false},
    {"backends.*.port", GDN_CFG_INT, "22", NULL, NULL, "port", false},
    {"backends.*.password", GDN_CFG_STRING, NULL, NULL, NULL, "secret in a map", true},
    {"backends.*.env", GDN_CFG_MAP, NULL, NULL, NULL, "environment of a backend", false},
    {"backends.*.env.*", GDN_CFG_STRING, NULL, NULL, NULL, "one variable", false},
    {"secrets", GDN_CFG_LIST, NULL, "T_SECRETS", NULL, "secret names", false},
};

static const char *const no_env[] = {NULL};

/* ---- helpers ---------------------------------------------------------- */

static int load_test(struct gdn_config *cfg, const char *yaml, struct gdn_err *err)
{
	gdn_config_init(cfg, test_schema, ARRAY_SIZE(test_schema));
	return gdn_config_load_buffer(cfg, "t.yaml", yaml, strlen(yaml), GDN_SRC_REPO_FILE, err);
}

static int load_global(struct gdn_config *cfg, const char *yaml, struct gdn_err *err)
{
	*cfg = (struct gdn_config)GDN_CONFIG_INIT;
	return gdn_config_load_buffer(cfg, "t.yaml", yaml, strlen(yaml), GDN_SRC_REPO_FILE, err);
}

/* The YAML must fail with exactly `msg` (test schema). */
static void expect_error(const char *yaml, const char *msg)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	if (load_test(&cfg, yaml, &err) != GDN_ECONFIG)
		fail_msg("no error for: %s", yaml);
	assert_int_equal(err.code, GDN_ECONFIG);
	assert_string_equal(err.msg, msg);
	gdn_config_release(&cfg);
}

static void expect_global_error(const char *yaml, const char *msg)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	if (load_global(&cfg, yaml, &err) != GDN_ECONFIG)
		fail_msg("no error for: %s", yaml);
	assert_string_equal(err.msg, msg);
	gdn_config_release(&cfg);
}

static void expect_ok(const char *yaml)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	if (load_test(&cfg, yaml, &err))
		fail_msg("unexpected error for '%s': %s", yaml, err.msg);
	gdn_config_release(&cfg);
}

static void assert_value(const struct gdn_config *cfg, const char *key, const char *str,
			 enum gdn_cfg_source src, const char *origin)
{
	const struct gdn_cfg_value *v = gdn_config_get(cfg, key);

	if (!v)
		fail_msg("'%s' is unset", key);
	assert_string_equal(v->str, str);
	assert_int_equal(v->source, src);
	assert_string_equal(v->origin, origin);
}

/* A scratch directory with files, removed by scratch_free. */
struct scratch {
	char dir[64];
	struct strvec files; /* created, deepest last */
};

static void scratch_init(struct scratch *s)
{
	snprintf(s->dir, sizeof(s->dir), "%s", "/tmp/gdn-test-config-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	strvec_init(&s->files);
}

static const char *scratch_mkdir(struct scratch *s, const char *rel)
{
	const char *path = strvec_pushf(&s->files, "%s/%s", s->dir, rel);

	assert_int_equal(mkdir(path, 0700), 0);
	return path;
}

static const char *scratch_write(struct scratch *s, const char *rel, const char *text)
{
	const char *path = strvec_pushf(&s->files, "%s/%s", s->dir, rel);
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void scratch_free(struct scratch *s)
{
	for (size_t i = s->files.nr; i-- > 0;)
		remove(s->files.v[i]);
	rmdir(s->dir);
	strvec_clear(&s->files);
}

/* ---- schema ----------------------------------------------------------- */

static void schemas_are_valid(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (gdn_cfg_schema_check(gdn_cfg_schema, gdn_cfg_schema_nr, &err))
		fail_msg("global schema: %s", err.msg);
	if (gdn_cfg_schema_check(test_schema, ARRAY_SIZE(test_schema), &err))
		fail_msg("test schema: %s", err.msg);
	/* sorted, one row each, so docs and `config keys` read well */
	for (size_t i = 1; i < gdn_cfg_schema_nr; i++)
		assert_true(strcmp(gdn_cfg_schema[i - 1].key, gdn_cfg_schema[i].key) < 0);
}

static void schema_check_finds_mistakes(void **state)
{
	static const struct gdn_cfg_key star_without_map[] = {
	    {"b.*.host", GDN_CFG_STRING, NULL, NULL, NULL, "", false},
	};
	static const struct gdn_cfg_key bad_default[] = {
	    {"n", GDN_CFG_INT, "ten", NULL, NULL, "", false},
	};
	static const struct gdn_cfg_key leaf_with_child[] = {
	    {"a", GDN_CFG_INT, NULL, NULL, NULL, "", false},
	    {"a.b", GDN_CFG_INT, NULL, NULL, NULL, "", false},
	};
	static const struct gdn_cfg_key map_without_star[] = {
	    {"m", GDN_CFG_MAP, NULL, NULL, NULL, "", false},
	    {"m.x", GDN_CFG_INT, NULL, NULL, NULL, "", false},
	};
	static const struct gdn_cfg_key env_on_star[] = {
	    {"m", GDN_CFG_MAP, NULL, NULL, NULL, "", false},
	    {"m.*.x", GDN_CFG_INT, NULL, "M_X", NULL, "", false},
	};
	static const struct gdn_cfg_key twice[] = {
	    {"a", GDN_CFG_INT, NULL, NULL, NULL, "", false},
	    {"a", GDN_CFG_INT, NULL, NULL, NULL, "", false},
	};
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_cfg_schema_check(star_without_map, 1, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "schema: '*' in 'b.*.host' is not under a map");
	assert_int_equal(gdn_cfg_schema_check(bad_default, 1, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "default: 'n' expects an integer, got 'ten'");
	assert_int_equal(gdn_cfg_schema_check(leaf_with_child, 2, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "schema: 'a.b' is under value 'a'");
	assert_int_equal(gdn_cfg_schema_check(map_without_star, 2, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "schema: 'm.x' is under a map but has no '*'");
	assert_int_equal(gdn_cfg_schema_check(env_on_star, 2, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "schema: 'm.*.x' cannot have env 'M_X'");
	assert_int_equal(gdn_cfg_schema_check(twice, 2, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "schema: 'a' is listed twice");
}

static void global_defaults(void **state)
{
	struct gdn_config cfg = GDN_CONFIG_INIT;
	struct gdn_config_load_opts o = {.user_file = "/nonexistent/gdnctl.yaml",
					 .environ_ = no_env};
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_config_load(&cfg, &o, &err), 0);
	assert_value(&cfg, "log_file", "lib/levanter/.agents/projects/gdn_pallas_tpu_hillclimb.md",
		     GDN_SRC_DEFAULT, "default");
	assert_value(&cfg, "lint.scope", "last-entry", GDN_SRC_DEFAULT, "default");
	assert_int_equal(gdn_config_int(&cfg, "lint.since", -1), 0);
	assert_false(gdn_config_bool(&cfg, "lint.check_commits", true));
	assert_int_equal(gdn_config_list(&cfg, "lint.require_fields")->nr, 0);
	assert_int_equal(gdn_config_list(&cfg, "secrets")->nr, 0);
	assert_null(cfg.repo_file);
	assert_string_equal(cfg.user_file, "/nonexistent/gdnctl.yaml");
	gdn_config_release(&cfg);
}

/* ---- types ------------------------------------------------------------ */

static void every_type_from_yaml(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	const struct strvec *l;

	assert_int_equal(load_test(&cfg,
				   "name: \"Ada Lovelace\"\n"
				   "mode: slow\n"
				   "count: -42\n"
				   "ratio: 2.5e-1\n"
				   "verbose: Yes\n"
				   "timeout: 1h30m\n"
				   "fields: [Date, 'Commit id']\n"
				   "deep: {er: {key: 7}}\n",
				   &err),
			 0);
	assert_value(&cfg, "name", "Ada Lovelace", GDN_SRC_REPO_FILE, "t.yaml:1:7");
	assert_value(&cfg, "mode", "slow", GDN_SRC_REPO_FILE, "t.yaml:2:7");
	assert_int_equal(gdn_config_int(&cfg, "count", 0), -42);
	assert_true(gdn_config_float(&cfg, "count", 0) == -42.0);
	assert_true(gdn_config_float(&cfg, "ratio", 0) == 0.25);
	assert_true(gdn_config_bool(&cfg, "verbose", false));
	assert_value(&cfg, "verbose", "true", GDN_SRC_REPO_FILE, "t.yaml:5:10");
	assert_int_equal(gdn_config_int(&cfg, "timeout", 0), 5400000);
	assert_value(&cfg, "timeout", "1h30m", GDN_SRC_REPO_FILE, "t.yaml:6:10");
	l = gdn_config_list(&cfg, "fields");
	assert_int_equal(l->nr, 2);
	assert_string_equal(l->v[0], "Date");
	assert_string_equal(l->v[1], "Commit id");
	assert_value(&cfg, "fields", "Date,Commit id", GDN_SRC_REPO_FILE, "t.yaml:7:9");
	assert_int_equal(gdn_config_int(&cfg, "deep.er.key", 0), 7);
	gdn_config_release(&cfg);
}

static void bools_and_durations(void **state)
{
	static const char *const yes[] = {"true", "True", "TRUE", "yes", "on", "ON", "1"};
	static const char *const no[] = {"false", "False", "no", "NO", "off", "Off", "0"};
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf y = SBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		sbuf_reset(&y);
		sbuf_addf(&y, "verbose: %s\n", yes[i]);
		assert_int_equal(load_test(&cfg, y.buf, &err), 0);
		assert_true(gdn_config_bool(&cfg, "verbose", false));
		assert_string_equal(gdn_config_str(&cfg, "verbose"), "true");
		gdn_config_release(&cfg);
		sbuf_reset(&y);
		sbuf_addf(&y, "verbose: %s\n", no[i]);
		assert_int_equal(load_test(&cfg, y.buf, &err), 0);
		assert_false(gdn_config_bool(&cfg, "verbose", true));
		assert_string_equal(gdn_config_str(&cfg, "verbose"), "false");
		gdn_config_release(&cfg);
	}
	/* a bare integer is seconds */
	assert_int_equal(load_test(&cfg, "timeout: 90\n", &err), 0);
	assert_int_equal(gdn_config_int(&cfg, "timeout", 0), 90000);
	gdn_config_release(&cfg);
	assert_int_equal(load_test(&cfg, "timeout: 1500ms\n", &err), 0);
	assert_int_equal(gdn_config_int(&cfg, "timeout", 0), 1500);
	gdn_config_release(&cfg);
	sbuf_release(&y);
}

static void lists_in_every_spelling(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(load_test(&cfg, "fields:\n  - a\n  - b c\n", &err), 0);
	assert_int_equal(gdn_config_list(&cfg, "fields")->nr, 2);
	assert_string_equal(gdn_config_list(&cfg, "fields")->v[1], "b c");
	gdn_config_release(&cfg);
	/* a scalar is split at commas, as from env and -c */
	assert_int_equal(load_test(&cfg, "fields: a, b,,c\n", &err), 0);
	assert_string_equal(gdn_config_str(&cfg, "fields"), "a,b,c");
	gdn_config_release(&cfg);
	/* [] and null are empty lists */
	assert_int_equal(load_test(&cfg, "fields: []\n", &err), 0);
	assert_int_equal(gdn_config_list(&cfg, "fields")->nr, 0);
	assert_string_equal(gdn_config_str(&cfg, "fields"), "");
	gdn_config_release(&cfg);
	assert_int_equal(load_test(&cfg, "fields:\n", &err), 0);
	assert_non_null(gdn_config_get(&cfg, "fields"));
	assert_int_equal(gdn_config_list(&cfg, "fields")->nr, 0);
	gdn_config_release(&cfg);
}

static void bad_values_name_file_line_col(void **state)
{
	expect_error("count: abc\n", "t.yaml:1:8: 'count' expects an integer, got 'abc'");
	expect_error("count: 1.5\n", "t.yaml:1:8: 'count' expects an integer, got '1.5'");
	expect_error("count: 99999999999999999999\n",
		     "t.yaml:1:8: 'count' expects an integer, got '99999999999999999999'");
	expect_error("\n\nratio:   x\n", "t.yaml:3:10: 'ratio' expects a number, got 'x'");
	expect_error("ratio: nan\n", "t.yaml:1:8: 'ratio' expects a number, got 'nan'");
	expect_error("verbose: maybe\n", "t.yaml:1:10: 'verbose' expects a boolean (true/false, "
					 "yes/no, on/off, 1/0), got 'maybe'");
	expect_error("timeout: 5x\n",
		     "t.yaml:1:10: 'timeout' expects a duration like 90s, 15m or 2h, got '5x'");
	expect_error("timeout: -5s\n",
		     "t.yaml:1:10: 'timeout' expects a duration like 90s, 15m or 2h, got '-5s'");
	expect_error("mode: medium\n",
		     "t.yaml:1:7: 'mode' expects one of fast, slow, got 'medium'");
	expect_error("name: [a]\n", "t.yaml:1:7: 'name' expects a string, got a sequence");
	expect_error("name:\n  first: a\n", "t.yaml:2:3: 'name' expects a string, got a mapping");
	expect_error("name:\n", "t.yaml:1:6: 'name' expects a string, got null");
	expect_error("name: ~\n", "t.yaml:1:7: 'name' expects a string, got null");
	expect_error("fields: {a: 1}\n", "t.yaml:1:9: 'fields' expects a list, got a mapping");
	expect_error("fields: [a, [b]]\n",
		     "t.yaml:1:13: 'fields' expects a list of scalars, got a sequence");
	expect_error("fields:\n  - a\n  -\n",
		     "t.yaml:3:4: 'fields' expects a list of scalars, got null");
	expect_error("deep: 5\n", "t.yaml:1:7: 'deep' expects a mapping, got '5'");
	expect_error("deep:\n  er: [1]\n",
		     "t.yaml:2:7: 'deep.er' expects a mapping, got a sequence");
	/* quoted text is still text: "5" is a fine integer, "" is no integer */
	expect_ok("count: \"5\"\nname: ''\n");
	expect_error("count: ''\n", "t.yaml:1:8: 'count' expects an integer, got ''");
	/* long and multi-line values are cut and escaped: the message stays one line */
	expect_error("count: |\n  one\n  two\n",
		     "t.yaml:1:8: 'count' expects an integer, got 'one\\x0atwo\\x0a'");
	expect_global_error("lint:\n  since: abc\n",
			    "t.yaml:2:10: 'lint.since' expects an integer, got 'abc'");
	expect_global_error("lint: {scope: everything}\n",
			    "t.yaml:1:15: 'lint.scope' expects one of last-entry, all, got "
			    "'everything'");
	expect_global_error("lint:\n  check_commits: sure\n",
			    "t.yaml:2:18: 'lint.check_commits' expects a boolean (true/false, "
			    "yes/no, on/off, 1/0), got 'sure'");
}

static void long_values_are_cut(void **state)
{
	struct sbuf y = SBUF_INIT;
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	sbuf_adds(&y, "count: ");
	for (int i = 0; i < 500; i++)
		sbuf_addch(&y, 'x');
	assert_int_equal(load_test(&cfg, y.buf, &err), GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "got 'xxxx"));
	assert_non_null(strstr(err.msg, "x...'"));
	assert_true(strlen(err.msg) < 200);
	assert_null(strchr(err.msg, '\n'));
	gdn_config_release(&cfg);
	sbuf_release(&y);
}

/* ---- keys ------------------------------------------------------------- */

static void unknown_keys_at_every_depth(void **state)
{
	expect_error("foo: 1\n", "t.yaml:1:1: unknown key 'foo'");
	expect_error("name: x\n  \nnope: 2\n", "t.yaml:3:1: unknown key 'nope'");
	expect_error("deep:\n  nope: 1\n", "t.yaml:2:3: unknown key 'deep.nope'");
	expect_error("deep:\n  er:\n    nope: 1\n", "t.yaml:3:5: unknown key 'deep.er.nope'");
	expect_error("deep: {er: {key: 1, x: 2}}\n", "t.yaml:1:21: unknown key 'deep.er.x'");
	expect_error("count.sub: 1\n", "t.yaml:1:1: unknown key 'count.sub'");
	expect_error("backends:\n  box:\n    nope: 1\n",
		     "t.yaml:3:5: unknown key 'backends.box.nope'");
	expect_global_error("lint:\n  foo: 1\n", "t.yaml:2:3: unknown key 'lint.foo'");
	expect_global_error("log-file: x\n",
			    "t.yaml:1:1: unknown key 'log-file'; did you mean 'log_file'?");
	expect_global_error("Lint: {}\n", "t.yaml:1:1: unknown key 'Lint'; did you mean 'lint'?");
	/* did you mean: a close key of the schema, with the typed name in a map's place */
	expect_global_error("backnd: ray\n",
			    "t.yaml:1:1: unknown key 'backnd'; did you mean 'backend'?");
	expect_global_error(
	    "backends:\n  box:\n    hots: x\n",
	    "t.yaml:3:5: unknown key 'backends.box.hots'; did you mean 'backends.box.host'?");
}

static void dotted_keys_are_nested_keys(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(load_global(&cfg, "lint.scope: all\nlint:\n  since: 4\n", &err), 0);
	assert_string_equal(gdn_config_str(&cfg, "lint.scope"), "all");
	assert_int_equal(gdn_config_int(&cfg, "lint.since", 0), 4);
	gdn_config_release(&cfg);
	assert_int_equal(load_test(&cfg, "deep.er: {key: 1}\n", &err), 0);
	assert_int_equal(gdn_config_int(&cfg, "deep.er.key", 0), 1);
	gdn_config_release(&cfg);
	expect_error("deep..er: 1\n", "t.yaml:1:1: invalid key 'deep..er'");
	expect_error(".name: 1\n", "t.yaml:1:1: invalid key '.name'");
	expect_error("\"\": 1\n", "t.yaml:1:1: invalid key ''");
	expect_error("backends:\n  '*': {}\n", "t.yaml:2:3: invalid key 'backends.*'");
	expect_error("\"na\\nme\": 1\n", "t.yaml:1:1: invalid key 'na\\x0ame'");
	expect_error("[a]: 1\n", "t.yaml:1:1: mapping keys must be scalars");
	expect_error("? {a: 1}\n: 2\n", "t.yaml:1:3: mapping keys must be scalars");
}

static void duplicate_keys(void **state)
{
	expect_error("count: 1\ncount: 2\n", "t.yaml:2:1: duplicate key 'count'");
	expect_error("deep: {}\ndeep: {}\n", "t.yaml:2:1: duplicate key 'deep'");
	expect_error("deep: {er: {key: 1, key: 2}}\n", "t.yaml:1:21: duplicate key 'deep.er.key'");
	/* the same key in nested and dotted spelling */
	expect_error("deep.er.key: 1\ndeep:\n  er:\n    key: 2\n",
		     "t.yaml:4:5: duplicate key 'deep.er.key'");
	expect_global_error("lint.scope: all\nlint: {scope: all}\n",
			    "t.yaml:2:8: duplicate key 'lint.scope'");
	/* the same section name twice in one map */
	expect_error("backends:\n  box: {host: a}\n  box: {port: 1}\n",
		     "t.yaml:3:3: duplicate key 'backends.box'");
	/* a key in two files is no duplicate: the later layer wins */
	{
		struct gdn_config cfg;
		struct gdn_err err = GDN_ERR_INIT;

		assert_int_equal(load_test(&cfg, "count: 1\n", &err), 0);
		assert_int_equal(gdn_config_load_buffer(&cfg, "u.yaml", "count: 2\n", 9,
							GDN_SRC_REPO_FILE, &err),
				 0);
		assert_value(&cfg, "count", "2", GDN_SRC_REPO_FILE, "u.yaml:1:8");
		gdn_config_release(&cfg);
	}
}

/* ---- YAML we refuse --------------------------------------------------- */

static void anchors_aliases_and_tags(void **state)
{
	expect_error("name: &a x\n", "t.yaml:1:7: anchors are not supported");
	expect_error("name: *a\n", "t.yaml:1:7: aliases are not supported");
	expect_error("deep: &d {er: {key: 1}}\n", "t.yaml:1:7: anchors are not supported");
	expect_error("fields: &f [a]\n", "t.yaml:1:9: anchors are not supported");
	expect_error("name: !!str x\n", "t.yaml:1:7: tags are not supported");
	expect_error("fields: !foo [a]\n", "t.yaml:1:9: tags are not supported");
	expect_error("<<: {name: x}\n", "t.yaml:1:1: unknown key '<<'");
	/* billion laughs: refused at the first anchor, nothing is expanded */
	expect_error(
	    "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
	    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
	    "t.yaml:1:1: unknown key 'a'");
	expect_error("fields: &a [\"lol\",\"lol\"]\nname: *a\n",
		     "t.yaml:1:9: anchors are not supported");
	expect_error("fields: [*a, *a]\n", "t.yaml:1:10: aliases are not supported");
}

static void top_level_and_documents(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	expect_error("- a\n- b\n", "t.yaml:1:1: the top level must be a mapping, got a sequence");
	expect_error("hello\n", "t.yaml:1:1: the top level must be a mapping, got 'hello'");
	expect_error("\"\"\n", "t.yaml:1:1: the top level must be a mapping, got ''");
	expect_error("name: a\n---\nname: b\n", "t.yaml:2:1: only one YAML document is allowed");
	/* empty files, comments, an empty document, null: no values, no error */
	expect_ok("");
	expect_ok("\n\n");
	expect_ok("# just a comment\n");
	expect_ok("---\n");
	expect_ok("--- ~\n...\n");
	expect_ok("null\n");
	expect_ok("{}\n");
	expect_ok("%YAML 1.1\n---\nname: x\n");
	expect_ok("deep:\n");
	expect_ok("\xef\xbb\xbfname: bom\n");
	assert_int_equal(load_test(&cfg, "", &err), 0);
	assert_int_equal(cfg.nr, 0);
	assert_null(gdn_config_get(&cfg, "name"));
	gdn_config_release(&cfg);
	/* a NULL buffer of length 0 is an empty file */
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	assert_int_equal(gdn_config_load_buffer(&cfg, "t.yaml", NULL, 0, GDN_SRC_USER_FILE, &err),
			 0);
	gdn_config_release(&cfg);
}

static void syntax_errors(void **state)
{
	expect_error("name: a: b\n", "t.yaml:1:8: mapping values are not allowed in this context");
	expect_error("fields: [a, b\n", "t.yaml:2:1: did not find expected ',' or ']'");
	expect_error("name: \"open\n", "t.yaml:2:1: found unexpected end of stream");
	expect_error("name: a\n\tcount: 1\n",
		     "t.yaml:2:1: found a tab character that violates indentation");
	expect_error("name: a\n count: 1\n",
		     "t.yaml:2:7: mapping values are not allowed in this context");
	/* reader errors carry an offset; we still give line:col */
	expect_error("name: a\ncount: \xff\n", "t.yaml:2:8: invalid leading UTF-8 octet");
	expect_error("name: \"a\\0b\"\n", "t.yaml:1:7: 'name' contains a NUL character");
	{
		static const char with_nul[] = "name: a\n\0\n";
		struct gdn_config cfg;
		struct gdn_err err = GDN_ERR_INIT;

		gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
		assert_int_equal(gdn_config_load_buffer(&cfg, "t.yaml", with_nul,
							sizeof(with_nul) - 1, GDN_SRC_USER_FILE,
							&err),
				 GDN_ECONFIG);
		assert_string_equal(err.msg, "t.yaml:2:1: control characters are not allowed");
		gdn_config_release(&cfg);
	}
}

static void limits(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_cfg_key *deep = xcalloc(GDN_CFG_MAX_DEPTH + 10, sizeof(*deep));
	struct sbuf y = SBUF_INIT, key = SBUF_INIT;
	char *big = xmalloc(GDN_CFG_MAX_FILE_SIZE + 1);

	/* size */
	memset(big, ' ', GDN_CFG_MAX_FILE_SIZE + 1);
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	assert_int_equal(gdn_config_load_buffer(&cfg, "t.yaml", big, GDN_CFG_MAX_FILE_SIZE + 1,
						GDN_SRC_USER_FILE, &err),
			 GDN_ECONFIG);
	assert_string_equal(err.msg, "t.yaml: larger than 1048576 bytes");
	assert_int_equal(gdn_config_load_buffer(&cfg, "t.yaml", big, GDN_CFG_MAX_FILE_SIZE,
						GDN_SRC_USER_FILE, &err),
			 0);
	gdn_config_release(&cfg);

	/* depth: a schema of maps in maps, m.*.*.*... */
	sbuf_adds(&key, "m");
	for (int i = 0; i < GDN_CFG_MAX_DEPTH + 10; i++) {
		deep[i].key = xstrdup(key.buf);
		deep[i].type = i + 1 < GDN_CFG_MAX_DEPTH + 10 ? GDN_CFG_MAP : GDN_CFG_INT;
		deep[i].help = "";
		sbuf_adds(&key, ".*");
	}
	if (gdn_cfg_schema_check(deep, GDN_CFG_MAX_DEPTH + 10, &err))
		fail_msg("deep schema: %s", err.msg);
	for (int i = 0; i < GDN_CFG_MAX_DEPTH + 5; i++)
		sbuf_addf(&y, "%s{k%d: ", i ? "" : "m: ", i);
	sbuf_addch(&y, '1');
	for (int i = 0; i < GDN_CFG_MAX_DEPTH + 5; i++)
		sbuf_addch(&y, '}');
	gdn_config_init(&cfg, deep, GDN_CFG_MAX_DEPTH + 10);
	assert_int_equal(
	    gdn_config_load_buffer(&cfg, "t.yaml", y.buf, y.len, GDN_SRC_USER_FILE, &err),
	    GDN_ECONFIG);
	assert_non_null(strstr(err.msg, ": nested deeper than 32 levels"));
	gdn_config_release(&cfg);

	/* number of keys */
	sbuf_reset(&y);
	sbuf_adds(&y, "backends:\n");
	for (int i = 0; i < GDN_CFG_MAX_VALUES + 1; i++)
		sbuf_addf(&y, "  b%d: {}\n", i);
	assert_int_equal(load_test(&cfg, y.buf, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "t.yaml:4098:3: too many sections (limit 4096)");
	gdn_config_release(&cfg);

	for (int i = 0; i < GDN_CFG_MAX_DEPTH + 10; i++)
		free((char *)deep[i].key);
	free(deep);
	free(big);
	sbuf_release(&y);
	sbuf_release(&key);
}

/* ---- MAP sections ----------------------------------------------------- */

static void map_sections(void **state)
{
	struct scratch s;
	struct gdn_config cfg;
	struct gdn_config_load_opts o = {.environ_ = no_env};
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec names = STRVEC_INIT;
	const char *cmdline[] = {"backends.box.port=2222", "backends.new.host=n.example", NULL};
	char *want;

	scratch_init(&s);
	o.user_file = scratch_write(&s, "config.yaml",
				    "backends:\n"
				    "  box:\n"
				    "    host: box.example\n"
				    "    env: {FOO: bar, BAZ: qux}\n"
				    "  tpu:\n"
				    "    type: ray\n"
				    "  empty: {}\n"
				    "  bare:\n"
				    "backends.dotted.host: d.example\n");
	o.cmdline = cmdline;
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	if (gdn_config_load(&cfg, &o, &err))
		fail_msg("%s", err.msg);
	gdn_config_map_names(&cfg, "backends", &names);
	assert_int_equal(names.nr, 6);
	assert_string_equal(names.v[0], "box");
	assert_string_equal(names.v[1], "tpu");
	assert_string_equal(names.v[2], "empty");
	assert_string_equal(names.v[3], "bare");
	assert_string_equal(names.v[4], "dotted");
	assert_string_equal(names.v[5], "new");
	strvec_clear(&names);
	gdn_config_map_names(&cfg, "backends.box.env", &names);
	assert_int_equal(names.nr, 2);
	assert_string_equal(names.v[0], "FOO");
	assert_string_equal(names.v[1], "BAZ");
	strvec_clear(&names);

	assert_string_equal(gdn_config_str(&cfg, "backends.box.host"), "box.example");
	assert_string_equal(gdn_config_str(&cfg, "backends.box.env.BAZ"), "qux");
	assert_string_equal(gdn_config_str(&cfg, "backends.dotted.host"), "d.example");
	/* defaults of "*" keys fill every section */
	assert_value(&cfg, "backends.box.type", "ssh", GDN_SRC_DEFAULT, "default");
	want = xstrfmt("%s:6:11", o.user_file);
	assert_value(&cfg, "backends.tpu.type", "ray", GDN_SRC_USER_FILE, want);
	free(want);
	assert_int_equal(gdn_config_int(&cfg, "backends.empty.port", 0), 22);
	assert_int_equal(gdn_config_int(&cfg, "backends.bare.port", 0), 22);
	assert_null(gdn_config_get(&cfg, "backends.tpu.host"));
	assert_value(&cfg, "backends.box.port", "2222", GDN_SRC_CMDLINE, "-c");
	assert_value(&cfg, "backends.new.host", "n.example", GDN_SRC_CMDLINE, "-c");
	assert_int_equal(gdn_config_int(&cfg, "backends.new.port", 0), 22);
	assert_ptr_equal(gdn_config_schema_find(&cfg, "backends.zzz.host"), &test_schema[11]);
	assert_null(gdn_config_schema_find(&cfg, "backends.zzz"));
	assert_null(gdn_config_schema_find(&cfg, "backends.*.host"));
	gdn_config_release(&cfg);
	scratch_free(&s);

	expect_error("backends: 5\n", "t.yaml:1:11: 'backends' expects a mapping, got '5'");
	expect_error("backends:\n  box: 3\n",
		     "t.yaml:2:8: 'backends.box' expects a mapping, got '3'");
	expect_error("backends:\n  box: {type: slurm}\n",
		     "t.yaml:2:15: 'backends.box.type' expects one of ssh, ray, got 'slurm'");
	expect_error("backends:\n  box:\n    port: http\n",
		     "t.yaml:3:11: 'backends.box.port' expects an integer, got 'http'");
	expect_error("backends:\n  box:\n    env: {FOO: [1]}\n",
		     "t.yaml:3:16: 'backends.box.env.FOO' expects a string, got a sequence");
	expect_ok("backends: {}\n");
	expect_ok("backends:\n");
}

/*
 * A repository file read after the fact (gdn_config_load_under, for a
 * resumed run whose working tree lost gdnctl.yaml): it overrides defaults
 * and the user file, never the environment or -c, and fills the defaults
 * of the sections it brings.
 */
static void layer_loaded_under(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	static const char yaml[] = "name: repo\ncount: 7\nmode: slow\nfields: [a, b]\n"
				   "backends:\n  box: {host: b.example}\n";

	(void)state;
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	assert_int_equal(
	    gdn_config_load_buffer(&cfg, "u.yaml", "name: user\n", 11, GDN_SRC_USER_FILE, &err), 0);
	assert_int_equal(gdn_config_set(&cfg, "count", "5", GDN_SRC_ENV, "T_COUNT", &err), 0);
	assert_int_equal(gdn_config_set(&cfg, "mode", "fast", GDN_SRC_CMDLINE, "-c", &err), 0);
	if (gdn_config_load_under(&cfg, "gdnctl.yaml at abc", yaml, strlen(yaml), GDN_SRC_REPO_FILE,
				  &err))
		fail_msg("%s", err.msg);
	assert_value(&cfg, "name", "repo", GDN_SRC_REPO_FILE, "gdnctl.yaml at abc:1:7");
	assert_value(&cfg, "count", "5", GDN_SRC_ENV, "T_COUNT");
	assert_value(&cfg, "mode", "fast", GDN_SRC_CMDLINE, "-c");
	assert_value(&cfg, "fields", "a,b", GDN_SRC_REPO_FILE, "gdnctl.yaml at abc:4:9");
	assert_int_equal(gdn_config_get(&cfg, "fields")->list.nr, 2);
	assert_string_equal(gdn_config_str(&cfg, "backends.box.host"), "b.example");
	assert_value(&cfg, "backends.box.type", "ssh", GDN_SRC_DEFAULT, "default");
	/* a file that does not parse: the error names it, cfg keeps its values */
	assert_int_equal(gdn_config_load_under(&cfg, "gdnctl.yaml at abc", "count: [", 8,
					       GDN_SRC_REPO_FILE, &err),
			 GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "gdnctl.yaml at abc:"));
	assert_value(&cfg, "count", "5", GDN_SRC_ENV, "T_COUNT");
	gdn_config_release(&cfg);
}

/* ---- layers ----------------------------------------------------------- */

static void layers_and_precedence(void **state)
{
	struct scratch s;
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec env = STRVEC_INIT;
	const char *cmdline[] = {"timeout=2m", "mode=slow", "mode=fast", NULL};
	struct gdn_config_load_opts o = {0};
	const char *user, *repo;
	char *want;

	scratch_init(&s);
	scratch_mkdir(&s, "xdg");
	scratch_mkdir(&s, "xdg/gdnctl");
	user = scratch_write(&s, "xdg/gdnctl/config.yaml",
			     "name: from-user\ncount: 1\nverbose: yes\ntimeout: 1s\n");
	scratch_mkdir(&s, "repo");
	repo = scratch_write(&s, "repo/gdnctl.yaml",
			     "# repository settings\ncount: 2\nverbose: no\ntimeout: 2s\n");
	strvec_pushf(&env, "XDG_CONFIG_HOME=%s/xdg", s.dir);
	strvec_push(&env, "HOME=/nonexistent");
	strvec_push(&env, "T_VERBOSE=on");
	strvec_push(&env, "T_TIMEOUT=3s");
	strvec_push(&env, "T_NAME="); /* empty: as if unset */
	o.repo_root = want = xstrfmt("%s/repo", s.dir);
	o.environ_ = env.v;
	o.cmdline = cmdline;

	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	if (gdn_config_load(&cfg, &o, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(cfg.user_file, user);
	assert_string_equal(cfg.repo_file, repo);
	free(want);

	want = xstrfmt("%s:1:7", user);
	assert_value(&cfg, "name", "from-user", GDN_SRC_USER_FILE, want);
	free(want);
	want = xstrfmt("%s:2:8", repo);
	assert_value(&cfg, "count", "2", GDN_SRC_REPO_FILE, want);
	free(want);
	assert_value(&cfg, "verbose", "true", GDN_SRC_ENV, "T_VERBOSE");
	assert_value(&cfg, "timeout", "2m", GDN_SRC_CMDLINE, "-c");
	assert_int_equal(gdn_config_int(&cfg, "timeout", 0), 120000);
	assert_value(&cfg, "mode", "fast", GDN_SRC_CMDLINE, "-c"); /* the last -c wins */
	assert_value(&cfg, "ratio", "0.5", GDN_SRC_DEFAULT, "default");
	assert_null(gdn_config_get(&cfg, "token"));
	gdn_config_release(&cfg);

	/* without XDG_CONFIG_HOME (or with a relative one): $HOME/.config */
	strvec_clear(&env);
	strvec_push(&env, "XDG_CONFIG_HOME=relative/dir");
	strvec_pushf(&env, "HOME=%s/home", s.dir);
	o.environ_ = env.v;
	o.repo_root = NULL;
	o.cmdline = NULL;
	scratch_mkdir(&s, "home");
	scratch_mkdir(&s, "home/.config");
	scratch_mkdir(&s, "home/.config/gdnctl");
	user = scratch_write(&s, "home/.config/gdnctl/config.yaml", "count: 9\n");
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	if (gdn_config_load(&cfg, &o, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(cfg.user_file, user);
	assert_null(cfg.repo_file);
	assert_int_equal(gdn_config_int(&cfg, "count", 0), 9);
	gdn_config_release(&cfg);

	/* an error in a file names that file */
	o.user_file = scratch_write(&s, "bad.yaml", "count: 1\ncolour: red\n");
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	assert_int_equal(gdn_config_load(&cfg, &o, &err), GDN_ECONFIG);
	want = xstrfmt("%s:2:1: unknown key 'colour'", o.user_file);
	assert_string_equal(err.msg, want);
	free(want);
	gdn_config_release(&cfg);

	/* a directory where a file should be, and a missing repository file */
	o.user_file = s.dir;
	o.repo_root = "/nonexistent";
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	assert_int_equal(gdn_config_load(&cfg, &o, &err), GDN_ECONFIG);
	want = xstrfmt("cannot read '%s': Is a directory", s.dir);
	assert_string_equal(err.msg, want);
	free(want);
	gdn_config_release(&cfg);
	o.user_file = "/nonexistent/x.yaml";
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	assert_int_equal(gdn_config_load(&cfg, &o, &err), 0);
	assert_string_equal(cfg.repo_file, "/nonexistent/gdnctl.yaml");
	gdn_config_release(&cfg);

	strvec_clear(&env);
	scratch_free(&s);
}

static int load_with(struct gdn_config *cfg, const char *const *env, const char *const *cmdline,
		     struct gdn_err *err)
{
	struct gdn_config_load_opts o = {
	    .user_file = "/nonexistent/config.yaml", .environ_ = env, .cmdline = cmdline};

	gdn_config_init(cfg, test_schema, ARRAY_SIZE(test_schema));
	return gdn_config_load(cfg, &o, err);
}

static void expect_env_error(const char *const *env, const char *const *cmdline, const char *msg)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(load_with(&cfg, env, cmdline, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, msg);
	gdn_config_release(&cfg);
}

static void env_and_cmdline_parsing(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	const char *env[] = {"T_FIELDS=a, b,,c", "T_COUNT=17", "T_RATIO=1e3",
			     "T_MODE=slow",	 "OTHER=x",    NULL};
	const char *cmd[] = {"fields=", "name=a=b", "deep.er.key=5", NULL};
	const char *bad_int[] = {"T_COUNT=abc", NULL};
	const char *bad_choice[] = {"T_MODE=medium", NULL};
	const char *c_bad_int[] = {"count=abc", NULL};
	const char *c_unknown[] = {"nope=1", NULL};
	const char *c_section[] = {"backends=1", NULL};
	const char *c_section2[] = {"deep.er=1", NULL};
	const char *c_star[] = {"backends.*.host=x", NULL};
	const char *c_noeq[] = {"count", NULL};
	const char *c_empty_key[] = {"=1", NULL};

	assert_int_equal(load_with(&cfg, env, NULL, &err), 0);
	assert_value(&cfg, "fields", "a,b,c", GDN_SRC_ENV, "T_FIELDS");
	assert_int_equal(gdn_config_list(&cfg, "fields")->nr, 3);
	assert_int_equal(gdn_config_int(&cfg, "count", 0), 17);
	assert_true(gdn_config_float(&cfg, "ratio", 0) == 1000.0);
	assert_value(&cfg, "mode", "slow", GDN_SRC_ENV, "T_MODE");
	gdn_config_release(&cfg);

	assert_int_equal(load_with(&cfg, env, cmd, &err), 0);
	assert_value(&cfg, "fields", "", GDN_SRC_CMDLINE, "-c");
	assert_int_equal(gdn_config_list(&cfg, "fields")->nr, 0);
	assert_value(&cfg, "name", "a=b", GDN_SRC_CMDLINE, "-c");
	assert_int_equal(gdn_config_int(&cfg, "deep.er.key", 0), 5);
	gdn_config_release(&cfg);

	expect_env_error(bad_int, NULL, "T_COUNT: 'count' expects an integer, got 'abc'");
	expect_env_error(bad_choice, NULL,
			 "T_MODE: 'mode' expects one of fast, slow, got 'medium'");
	expect_env_error(no_env, c_bad_int, "-c: 'count' expects an integer, got 'abc'");
	expect_env_error(no_env, c_unknown, "-c: unknown key 'nope'");
	expect_env_error(no_env, c_section, "-c: 'backends' is a section, not a value");
	expect_env_error(no_env, c_section2, "-c: 'deep.er' is a section, not a value");
	expect_env_error(no_env, c_star, "-c: invalid key 'backends.*.host'");
	expect_env_error(no_env, c_noeq, "-c: expected KEY=VALUE, got 'count'");
	expect_env_error(no_env, c_empty_key, "-c: invalid key ''");

	/* gdn_config_set is what -c uses */
	gdn_config_init(&cfg, test_schema, ARRAY_SIZE(test_schema));
	assert_int_equal(gdn_config_set(&cfg, "count", "4", GDN_SRC_CMDLINE, "here", &err), 0);
	assert_value(&cfg, "count", "4", GDN_SRC_CMDLINE, "here");
	assert_int_equal(gdn_config_set(&cfg, "count", "x", GDN_SRC_CMDLINE, "there", &err),
			 GDN_ECONFIG);
	assert_string_equal(err.msg, "there: 'count' expects an integer, got 'x'");
	assert_value(&cfg, "count", "4", GDN_SRC_CMDLINE, "here"); /* kept on error */
	gdn_config_release(&cfg);
}

/* ---- secrets and display ---------------------------------------------- */

static void secrets_are_masked(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT;
	const char *env[] = {"T_TOKEN=hunter2-abc", "T_SECRETS=MY_CFG_VAR, OTHER_CFG_VAR", NULL};
	const char *bad[] = {"T_SECRETS=not a name", NULL};

	assert_false(gdn_secret_name("MY_CFG_VAR", 10));
	assert_int_equal(load_with(&cfg, env, NULL, &err), 0);
	gdn_config_value_format(gdn_config_get(&cfg, "token"), &out);
	assert_string_equal(out.buf, "***");
	assert_string_equal(gdn_config_str(&cfg, "token"),
			    "hunter2-abc"); /* getters: the real value */
	sbuf_reset(&out);
	gdn_config_value_format(gdn_config_get(&cfg, "secrets"), &out);
	assert_string_equal(out.buf, "MY_CFG_VAR,OTHER_CFG_VAR");
	sbuf_reset(&out);
	gdn_config_value_format(gdn_config_get(&cfg, "count"), &out);
	assert_string_equal(out.buf, "3");
	sbuf_reset(&out);
	gdn_config_value_format(NULL, &out);
	assert_string_equal(out.buf, "");
	/* registered with the masker */
	assert_true(gdn_secret_name("MY_CFG_VAR", 10));
	assert_true(gdn_secret_name("OTHER_CFG_VAR", 13));
	sbuf_reset(&out);
	sbuf_adds(&out, "login hunter2-abc done");
	gdn_secret_mask(&out);
	assert_string_equal(out.buf, "login *** done");
	gdn_config_release(&cfg);

	/* secret keys inside a map section */
	assert_int_equal(load_test(&cfg, "backends: {box: {password: pw}}\ntoken: ''\n", &err), 0);
	sbuf_reset(&out);
	gdn_config_value_format(gdn_config_get(&cfg, "backends.box.password"), &out);
	assert_string_equal(out.buf, "***");
	sbuf_reset(&out);
	gdn_config_value_format(gdn_config_get(&cfg, "token"), &out);
	assert_string_equal(out.buf, ""); /* nothing to hide */
	gdn_config_release(&cfg);

	expect_env_error(
	    bad, NULL, "T_SECRETS: 'secrets' expects environment variable names, got 'not a name'");
	sbuf_release(&out);
}

static void getters_and_fallbacks(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;
	char *p;

	assert_int_equal(load_test(&cfg, "name: rel/log.md\ncount: 5\n", &err), 0);
	assert_null(gdn_config_get(&cfg, "nope"));
	assert_null(gdn_config_str(&cfg, "nope"));
	assert_int_equal(gdn_config_int(&cfg, "nope", 11), 11);
	assert_int_equal(gdn_config_int(&cfg, "name", 12), 12); /* not a number */
	assert_true(gdn_config_float(&cfg, "name", 1.5) == 1.5);
	assert_true(gdn_config_bool(&cfg, "count", true)); /* not a bool: fallback */
	assert_false(gdn_config_bool(&cfg, "nope", false));
	assert_non_null(gdn_config_list(&cfg, "nope"));
	assert_int_equal(gdn_config_list(&cfg, "name")->nr, 0);

	p = gdn_config_path(&cfg, "name", "/repo");
	assert_string_equal(p, "/repo/rel/log.md");
	free(p);
	p = gdn_config_path(&cfg, "name", NULL);
	assert_string_equal(p, "rel/log.md");
	free(p);
	assert_null(gdn_config_path(&cfg, "nope", "/repo"));
	gdn_config_release(&cfg);
	assert_int_equal(load_test(&cfg, "name: /abs/log.md\n", &err), 0);
	p = gdn_config_path(&cfg, "name", "/repo");
	assert_string_equal(p, "/abs/log.md");
	free(p);
	gdn_config_release(&cfg);

	assert_string_equal(gdn_cfg_source_name(GDN_SRC_DEFAULT), "default");
	assert_string_equal(gdn_cfg_source_name(GDN_SRC_USER_FILE), "user");
	assert_string_equal(gdn_cfg_source_name(GDN_SRC_REPO_FILE), "repo");
	assert_string_equal(gdn_cfg_source_name(GDN_SRC_ENV), "env");
	assert_string_equal(gdn_cfg_source_name(GDN_SRC_CMDLINE), "command-line");
	assert_string_equal(gdn_cfg_type_name(&test_schema[0]), "string");
	assert_string_equal(gdn_cfg_type_name(&test_schema[1]), "choice");
	assert_string_equal(gdn_cfg_type_name(&test_schema[5]), "duration");
	assert_string_equal(gdn_cfg_type_name(&test_schema[9]), "map");
}

static void release_and_reuse(void **state)
{
	struct gdn_config cfg;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(load_test(&cfg, "count: 1\nbackends: {a: {}}\n", &err), 0);
	gdn_config_release(&cfg);
	assert_int_equal(cfg.nr, 0);
	assert_int_equal(cfg.sections.nr, 0);
	assert_ptr_equal(cfg.schema, test_schema); /* kept */
	assert_int_equal(
	    gdn_config_load_buffer(&cfg, "t.yaml", "count: 2\n", 9, GDN_SRC_USER_FILE, &err), 0);
	assert_int_equal(gdn_config_int(&cfg, "count", 0), 2);
	gdn_config_release(&cfg);
	gdn_config_release(&cfg); /* twice is fine */
}

/* ---- docs ------------------------------------------------------------- */

static void docs_list_every_key(void **state)
{
	struct sbuf doc = SBUF_INIT, row = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (sbuf_read_file(&doc, GDNCTL_SOURCE_DATADIR "/docs/configuration.md", 0, &err))
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < gdn_cfg_schema_nr; i++) {
		const struct gdn_cfg_key *e = &gdn_cfg_schema[i];

		sbuf_reset(&row);
		sbuf_addf(&row, "| `%s` | %s |", e->key, gdn_cfg_type_name(e));
		if (!strstr(doc.buf, row.buf))
			fail_msg("docs/configuration.md has no row starting '%s'", row.buf);
		if (e->env) {
			sbuf_reset(&row);
			sbuf_addf(&row, "`%s`", e->env);
			if (!strstr(doc.buf, row.buf))
				fail_msg("docs/configuration.md does not name %s", e->env);
		}
	}
	sbuf_release(&doc);
	sbuf_release(&row);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(schemas_are_valid),
	    cmocka_unit_test(schema_check_finds_mistakes),
	    cmocka_unit_test(global_defaults),
	    cmocka_unit_test(every_type_from_yaml),
	    cmocka_unit_test(bools_and_durations),
	    cmocka_unit_test(lists_in_every_spelling),
	    cmocka_unit_test(bad_values_name_file_line_col),
	    cmocka_unit_test(long_values_are_cut),
	    cmocka_unit_test(unknown_keys_at_every_depth),
	    cmocka_unit_test(dotted_keys_are_nested_keys),
	    cmocka_unit_test(duplicate_keys),
	    cmocka_unit_test(anchors_aliases_and_tags),
	    cmocka_unit_test(top_level_and_documents),
	    cmocka_unit_test(syntax_errors),
	    cmocka_unit_test(limits),
	    cmocka_unit_test(map_sections),
	    cmocka_unit_test(layers_and_precedence),
	    cmocka_unit_test(env_and_cmdline_parsing),
	    cmocka_unit_test(secrets_are_masked),
	    cmocka_unit_test(getters_and_fallbacks),
	    cmocka_unit_test(release_and_reuse),
	    cmocka_unit_test(layer_loaded_under),
	    cmocka_unit_test(docs_list_every_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
