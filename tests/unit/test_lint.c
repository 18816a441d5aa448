/*
 * Unit tests for the running-log rules: the text helpers directly, and
 * every case under tests/data/lint/<case>/ through lint_log_buffer:
 *   input.md  the log
 *   args      options, one a line: --scope all, --allow-pending,
 *             --allow-this-commit, --allow-non-monotonic, --require-fields,
 *             --require-field NAME, --since N, --check-commits, and for the
 *             fake commit lookup --known-commit SHA, --commit-error ID,
 *             --repo-name NAME
 *   expected  one finding a line as rule:line:message, or error:<message>,
 *             or nothing for a pass
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include "gdnctl/err.h"
#include "gdnctl/lint.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/* ---- UTF-8 validation ---- */

static void check_utf8(const char *buf, size_t len, enum lint_utf8_status want, size_t want_off)
{
	size_t off = 12345;
	enum lint_utf8_status got = lint_utf8_check(buf, len, &off);

	assert_int_equal(got, want);
	if (want != LINT_UTF8_OK)
		assert_int_equal(off, want_off);
}

#define U8(lit, want, off) check_utf8(lit, sizeof(lit) - 1, want, off)

static void utf8_valid(void **state)
{
	U8("", LINT_UTF8_OK, 0);
	U8("plain ascii text that is longer than eight bytes", LINT_UTF8_OK, 0);
	U8("\xC2\x80 \xDF\xBF", LINT_UTF8_OK, 0);		  /* U+0080, U+07FF */
	U8("\xE0\xA0\x80 \xEF\xBF\xBF", LINT_UTF8_OK, 0);	  /* U+0800, U+FFFF */
	U8("\xED\x9F\xBF \xEE\x80\x80", LINT_UTF8_OK, 0);	  /* around the surrogates */
	U8("\xF0\x90\x80\x80 \xF4\x8F\xBF\xBF", LINT_UTF8_OK, 0); /* U+10000, U+10FFFF */
	U8("\xEF\xBB\xBF# BOM", LINT_UTF8_OK, 0);
	U8("caf\xC3\xA9 \xE2\x80\x99 \xC3\x97", LINT_UTF8_OK, 0);
}

static void utf8_invalid(void **state)
{
	U8("abc\x80", LINT_UTF8_INVALID, 3);		 /* stray continuation */
	U8("abcdefghij\xC0\xAF", LINT_UTF8_INVALID, 10); /* overlong '/' */
	U8("\xC1\xBF", LINT_UTF8_INVALID, 0);		 /* overlong */
	U8("x\xE0\x80\xAF", LINT_UTF8_INVALID, 1);	 /* 3-byte overlong */
	U8("xy\xF0\x8F\xBF\xBF", LINT_UTF8_INVALID, 2);	 /* 4-byte overlong */
	U8("\xED\xA0\x80", LINT_UTF8_INVALID, 0);	 /* U+D800 */
	U8("ab\xED\xBF\xBF", LINT_UTF8_INVALID, 2);	 /* U+DFFF */
	U8("\xF4\x90\x80\x80", LINT_UTF8_INVALID, 0);	 /* U+110000 */
	U8("\xF5\x80\x80\x80", LINT_UTF8_INVALID, 0);	 /* lead F5 */
	U8("\xFF", LINT_UTF8_INVALID, 0);
	U8("ok \xE2\x82", LINT_UTF8_INVALID, 3);      /* truncated at EOF */
	U8("ok \xF0\x9F\x98", LINT_UTF8_INVALID, 3);  /* truncated at EOF */
	U8("\xC3", LINT_UTF8_INVALID, 0);	      /* truncated, 1 byte */
	U8("\xE2\x28\xA1", LINT_UTF8_INVALID, 0);     /* bad second byte */
	U8("\xE2\x82\x28", LINT_UTF8_INVALID, 0);     /* bad third byte */
	U8("\xF0\x9F\x98\x28", LINT_UTF8_INVALID, 0); /* bad fourth byte */
}

static void utf8_nul(void **state)
{
	U8("\0", LINT_UTF8_NUL, 0);
	U8("hello\0world", LINT_UTF8_NUL, 5);
	U8("0123456789abcdef\0", LINT_UTF8_NUL, 16); /* found by the 8-byte fast path */
	U8("\xC3\xA9\0", LINT_UTF8_NUL, 2);
	U8("\xC3\0", LINT_UTF8_INVALID, 0); /* a truncated sequence comes first */
}

/* ---- line splitting ---- */

static void check_lines(const char *buf, size_t len, const char *want)
{
	struct lint_lines it;
	struct sbuf got = SBUF_INIT;
	const char *line;
	size_t llen, n = 0;

	lint_lines_init(&it, buf, len);
	while (lint_lines_next(&it, &line, &llen)) {
		n++;
		assert_int_equal(it.lineno, n);
		sbuf_addf(&got, "[%.*s]", (int)llen, line);
	}
	assert_string_equal(got.buf, want);
	assert_false(lint_lines_next(&it, &line, &llen));
	sbuf_release(&got);
}

#define LINES(lit, want) check_lines(lit, sizeof(lit) - 1, want)

static void lines_split(void **state)
{
	LINES("", "");
	LINES("a", "[a]");
	LINES("a\n", "[a]");
	LINES("\n", "[]");
	LINES("\n\n", "[][]");
	LINES("a\nb", "[a][b]");
	LINES("a\r\nb\r\n", "[a][b]");
	LINES("a\rb\r", "[a][b]");
	LINES("a\r\r\nb", "[a][][b]");
	LINES("a\n\rb", "[a][][b]");
	LINES("a\r\n\r\n", "[a][]");
	LINES("x\ry\nz\r\nw", "[x][y][z][w]");
	/* Not line breaks here (Python's splitlines would split on them). */
	LINES("a\vb\fc\x1c"
	      "d\xC2\x85"
	      "e\xE2\x80\xA8"
	      "f",
	      "[a\vb\fc\x1c"
	      "d\xC2\x85"
	      "e\xE2\x80\xA8"
	      "f]");
}

/* ---- the heading matcher ---- */

static void check_heading(const char *s, bool match, const char *num, const char *suffix)
{
	struct lint_heading h;
	bool got = lint_parse_heading(s, strlen(s), &h);

	assert_int_equal(got, match);
	if (!match)
		return;
	assert_int_equal(h.num_len, strlen(num));
	assert_memory_equal(h.num, num, h.num_len);
	assert_int_equal(h.suffix_len, strlen(suffix));
	assert_memory_equal(h.suffix, suffix, h.suffix_len);
}

static void heading_parse(void **state)
{
	check_heading("### Iteration 12 - x", true, "12", "");
	check_heading("### Iteration 12a - x", true, "12", "a");
	check_heading("### Iteration 5B", true, "5", "B");
	check_heading("### Iteration 12.5 - x", true, "12", "");
	check_heading("### Iteration 7 (loop 1/20) - x", true, "7", "");
	check_heading("### Iteration 12:", true, "12", "");
	check_heading("### Iteration 007", true, "7", "");
	check_heading("### Iteration 0", true, "", "");
	check_heading("### Iteration 000", true, "", "");
	check_heading("### Iteration 123456789012345678901234567890", true,
		      "123456789012345678901234567890", "");
	check_heading("### Iteration 12a2", false, NULL, NULL);
	check_heading("### Iteration 12_", false, NULL, NULL);
	check_heading("### Iteration 12ab9", false, NULL, NULL);
	check_heading("### Iteration <N> - <short title>", false, NULL, NULL);
	check_heading("### Iteration ", false, NULL, NULL);
	check_heading("### Iteration", false, NULL, NULL);
	check_heading("### Iteration x1", false, NULL, NULL);
	check_heading("###  Iteration 1", false, NULL, NULL);
	check_heading("### iteration 1", false, NULL, NULL);
	check_heading("#### Iteration 1", false, NULL, NULL);
	check_heading("### Iteration\t1", false, NULL, NULL);
	/* \b before non-ASCII: punctuation ends the word, letters do not. */
	check_heading("### Iteration 7\xE2\x80\x94"
		      "dash",
		      true, "7", "");					 /* em dash */
	check_heading("### Iteration 7\xC2\xA0x", true, "7", "");	 /* no-break space */
	check_heading("### Iteration 7\xC3\x97", true, "7", "");	 /* multiplication sign */
	check_heading("### Iteration 7b\xE2\x80\x99", true, "7", "b");	 /* right quote */
	check_heading("### Iteration 7\xC3\xA9", false, NULL, NULL);	 /* e acute */
	check_heading("### Iteration 7\xC2\xB2", false, NULL, NULL);	 /* superscript two */
	check_heading("### Iteration 7\xE2\x91\xA0", false, NULL, NULL); /* circled one */
	check_heading("### Iteration 7\xE4\xB8\x80", false, NULL, NULL); /* CJK one */
	check_heading("### Iteration 7\xF0\x9F\x9A\x80", true, "7", ""); /* rocket */
}

static void num_compare(void **state)
{
	assert_int_equal(lint_num_cmp("", 0, "", 0), 0);
	assert_int_equal(lint_num_cmp("", 0, "1", 1), -1);
	assert_int_equal(lint_num_cmp("9", 1, "10", 2), -1);
	assert_int_equal(lint_num_cmp("10", 2, "9", 1), 1);
	assert_int_equal(lint_num_cmp("12", 2, "12", 2), 0);
	assert_int_equal(lint_num_cmp("13", 2, "12", 2), 1);
	assert_int_equal(
	    lint_num_cmp("99999999999999999999999", 23, "100000000000000000000000", 24), -1);
}

static void names(void **state)
{
	int sc = LINT_SCOPE_ALL;
	const char *want[] = {"pending",	"this-commit",	  "non-monotonic",
			      "missing-fields", "unknown-commit", "bad-commit"};

	for (int r = 0; r < LINT_RULE_NR; r++) {
		assert_string_equal(lint_rule_name((enum lint_rule)r), want[r]);
		assert_non_null(lint_rule_title((enum lint_rule)r));
		if (r)
			assert_true(lint_rule_group((enum lint_rule)r) >=
				    lint_rule_group((enum lint_rule)(r - 1)));
	}
	assert_string_equal(lint_rule_title(LINT_PENDING),
			    "unresolved `Commit: (pending)` entries");
	assert_string_equal(lint_rule_title(LINT_NON_MONOTONIC),
			    "non-monotonic iteration headings");
	assert_int_equal(lint_rule_group(LINT_BAD_COMMIT), lint_rule_group(LINT_UNKNOWN_COMMIT));
	assert_int_equal(gdn_enum_parse(lint_scope_enum, "last-entry", &sc), 0);
	assert_int_equal(sc, LINT_SCOPE_LAST_ENTRY);
	assert_int_equal(gdn_enum_parse(lint_scope_enum, "all", &sc), 0);
	assert_int_equal(sc, LINT_SCOPE_ALL);
	assert_int_equal(gdn_enum_parse(lint_scope_enum, "last", &sc), -1);
	assert_int_equal(gdn_enum_parse(lint_scope_enum, NULL, &sc), -1);
	assert_string_equal(lint_scope_name(LINT_SCOPE_LAST_ENTRY), "last-entry");
}

/* ---- the fake commit lookup ---- */

struct fake_repo {
	struct strvec known;  /* full ids */
	struct strvec errors; /* ids whose lookup fails */
	int calls;
};

static int fake_commit_exists(const char *id, int *exists, void *payload, struct gdn_err *err)
{
	struct fake_repo *f = payload;

	f->calls++;
	*exists = 0;
	for (size_t i = 0; i < strlen(id); i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return gdn_err_set(err, GDN_EPARSE, "fake: bad id '%s'", id);
	if (strvec_contains(&f->errors, id))
		return gdn_err_set(err, GDN_EPARSE, "commit id '%s' is ambiguous in 'fake'", id);
	for (size_t i = 0; i < f->known.nr; i++)
		if (!strncmp(f->known.v[i], id, strlen(id)))
			*exists = 1;
	return 0;
}

static void direct_api(void **state)
{
	const char log[] = "## Entry Template\n"
			   "- Date:\n"
			   "- Commit:\n"
			   "## Iterations\n"
			   "### Iteration 1 - a\n"
			   "- Date: today\n"
			   "- Commit: `ABCDEF1`\n"
			   "### Iteration 2 - b\n"
			   "- Commit: 1234567 (a note)\n"
			   "- Commit: `none`\n";
	struct fake_repo f = {STRVEC_INIT, STRVEC_INIT, 0};
	struct lint_opts o = LINT_OPTS_INIT;
	struct lint_result res = LINT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	strvec_push(&f.known, "abcdef1000000000000000000000000000000000");
	o.scope = LINT_SCOPE_ALL;
	o.require_fields = true;
	o.commit_exists = fake_commit_exists;
	o.payload = &f;
	o.repo_name = "/repo";
	assert_int_equal(lint_log_buffer(log, sizeof(log) - 1, &o, &res, &err), 0);
	assert_int_equal(res.lines, 10);
	assert_int_equal(res.scope_line, 1);
	assert_int_equal(res.entries, 2);
	assert_int_equal(res.fields.nr, 2);
	assert_string_equal(res.fields.v[0], "Date");
	assert_string_equal(res.fields.v[1], "Commit");
	assert_int_equal(f.calls, 2);
	assert_int_equal(res.nr, 2);
	assert_int_equal(res.findings[0].rule, LINT_MISSING_FIELDS);
	assert_string_equal(res.findings[0].message, "line 8 `### Iteration 2 - b`: missing Date");
	assert_int_equal(res.findings[1].rule, LINT_UNKNOWN_COMMIT);
	assert_int_equal(res.findings[1].line, 9);
	assert_string_equal(res.findings[1].message, "line 9: commit 1234567 not found in /repo");
	lint_result_release(&res);
	assert_int_equal(res.nr, 0);

	/* The callback's error stops the lint, with the line in front. */
	strvec_push(&f.errors, "1234567");
	o.require_fields = false;
	assert_int_equal(lint_log_buffer(log, sizeof(log) - 1, &o, &res, &err), GDN_EPARSE);
	assert_string_equal(err.msg, "line 9: commit id '1234567' is ambiguous in 'fake'");
	lint_result_release(&res);

	/* The last-entry scope and an empty buffer. */
	o.scope = LINT_SCOPE_LAST_ENTRY;
	o.commit_exists = NULL;
	assert_int_equal(lint_log_buffer(log, sizeof(log) - 1, &o, &res, &err), 0);
	assert_int_equal(res.scope_line, 8);
	assert_int_equal(res.entries, 1);
	lint_result_release(&res);
	assert_int_equal(lint_log_buffer("", 0, &o, &res, &err), 0);
	assert_int_equal(res.lines, 0);
	assert_int_equal(res.scope_line, 0);
	assert_int_equal(res.nr, 0);
	lint_result_release(&res);
	strvec_clear(&f.known);
	strvec_clear(&f.errors);
}

/* ---- data-driven cases ---- */

static char *data_dir(void)
{
	const char *src = getenv("GDNCTL_SOURCE_DIR");

	return xstrfmt("%s/tests/data/lint", src && *src ? src : GDNCTL_SOURCE_DATADIR);
}

static void read_case_file(const char *dir, const char *name, struct sbuf *sb, bool must)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *path = xstrfmt("%s/%s", dir, name);
	int ret = sbuf_read_file(sb, path, 16 << 20, &err);

	if (ret && (must || ret != GDN_ENOTFOUND))
		fail_msg("%s", err.msg);
	free(path);
}

static void run_case(void **state)
{
	const char *dir = *state;
	struct sbuf input = SBUF_INIT, args = SBUF_INIT, expected = SBUF_INIT, got = SBUF_INIT;
	struct strvec fields = STRVEC_INIT, lines = STRVEC_INIT;
	struct fake_repo f = {STRVEC_INIT, STRVEC_INIT, 0};
	struct lint_opts o = LINT_OPTS_INIT;
	struct lint_result res = LINT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int ret;

	read_case_file(dir, "input.md", &input, true);
	read_case_file(dir, "args", &args, false);
	read_case_file(dir, "expected", &expected, true);
	strvec_split(&lines, args.buf, '\n');
	for (size_t i = 0; i < lines.nr; i++) {
		const char *a = lines.v[i], *sp = strchr(a, ' ');
		const char *val = sp ? sp + 1 : "";
		size_t nlen = sp ? (size_t)(sp - a) : strlen(a);

#define IS(name) (nlen == strlen(name) && !strncmp(a, name, nlen))
		if (IS("--scope")) {
			int sc;

			assert_int_equal(gdn_enum_parse(lint_scope_enum, val, &sc), 0);
			o.scope = (enum lint_scope)sc;
		} else if (IS("--allow-pending"))
			o.allow_pending = true;
		else if (IS("--allow-this-commit"))
			o.allow_this_commit = true;
		else if (IS("--allow-non-monotonic"))
			o.allow_non_monotonic = true;
		else if (IS("--require-fields"))
			o.require_fields = true;
		else if (IS("--require-field"))
			strvec_push(&fields, val);
		else if (IS("--since"))
			o.since = strtol(val, NULL, 10);
		else if (IS("--check-commits"))
			o.commit_exists = fake_commit_exists;
		else if (IS("--known-commit"))
			strvec_push(&f.known, val);
		else if (IS("--commit-error"))
			strvec_push(&f.errors, val);
		else if (IS("--repo-name"))
			o.repo_name = val;
		else
			fail_msg("%s/args: unknown option '%s'", dir, a);
#undef IS
	}
	o.fields = &fields;
	if (fields.nr)
		o.require_fields = true;
	o.payload = &f;

	ret = lint_log_buffer(input.buf, input.len, &o, &res, &err);
	if (ret) {
		sbuf_addf(&got, "error:%s\n", err.msg);
	} else {
		for (size_t i = 0; i < res.nr; i++)
			sbuf_addf(&got, "%s:%zu:%s\n", lint_rule_name(res.findings[i].rule),
				  res.findings[i].line, res.findings[i].message);
	}
	if (strcmp(got.buf, expected.buf)) {
		print_error("case %s\n--- expected\n%s--- got\n%s", dir, expected.buf, got.buf);
		fail();
	}
	lint_result_release(&res);
	sbuf_release(&input);
	sbuf_release(&args);
	sbuf_release(&expected);
	sbuf_release(&got);
	strvec_clear(&fields);
	strvec_clear(&lines);
	strvec_clear(&f.known);
	strvec_clear(&f.errors);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void list_cases(struct strvec *cases)
{
	char *dir = data_dir();
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d) {
		fprintf(stderr, "test_lint: cannot open '%s': %s\n", dir, strerror(errno));
		free(dir);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			strvec_pushf(cases, "%s/%s", dir, de->d_name);
	closedir(d);
	qsort(cases->v, cases->nr, sizeof(*cases->v), cmp_str);
	free(dir);
}

/* ---- the real log, when the shared material is present ---- */

static void real_log(void **state)
{
	const char *shared = getenv("GDNCTL_SHARED_DIR");
	char *path = xstrfmt("%s/logs/gdn_pallas_tpu_hillclimb.md",
			     shared && *shared ? shared : GDNCTL_SOURCE_DATADIR "/../shared");
	struct sbuf log = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct lint_opts o = LINT_OPTS_INIT;
	struct lint_result res = LINT_RESULT_INIT;

	if (sbuf_read_file(&log, path, 64 << 20, &err)) {
		free(path);
		sbuf_release(&log);
		skip();
	}
	assert_int_equal(lint_log_buffer(log.buf, log.len, &o, &res, &err), 0);
	assert_int_equal(res.nr, 0);
	assert_int_equal(res.lines, 10467);
	assert_int_equal(res.scope_line, 10235);
	assert_int_equal(res.entries, 1);
	lint_result_release(&res);
	o.scope = LINT_SCOPE_ALL;
	assert_int_equal(lint_log_buffer(log.buf, log.len, &o, &res, &err), 0);
	assert_int_equal(res.nr, 0);
	assert_int_equal(res.entries, 103);
	lint_result_release(&res);
	/* The template fields of the real log. */
	o.require_fields = true;
	assert_int_equal(lint_log_buffer(log.buf, log.len, &o, &res, &err), 0);
	assert_int_equal(res.fields.nr, 9);
	assert_string_equal(res.fields.v[0], "Date");
	assert_string_equal(res.fields.v[7], "MFU/throughput delta");
	assert_string_equal(res.fields.v[8], "Next hypothesis");
	lint_result_release(&res);
	sbuf_release(&log);
	free(path);
}

int main(void)
{
	const struct CMUnitTest unit[] = {
	    cmocka_unit_test(utf8_valid),    cmocka_unit_test(utf8_invalid),
	    cmocka_unit_test(utf8_nul),	     cmocka_unit_test(lines_split),
	    cmocka_unit_test(heading_parse), cmocka_unit_test(num_compare),
	    cmocka_unit_test(names),	     cmocka_unit_test(direct_api),
	    cmocka_unit_test(real_log),
	};
	struct strvec cases = STRVEC_INIT;
	struct CMUnitTest *data = NULL;
	int failed;

	failed = cmocka_run_group_tests_name("lint", unit, NULL, NULL);
	list_cases(&cases);
	if (cases.nr < 40) {
		fprintf(stderr,
			"test_lint: expected at least 40 cases under tests/data/lint, found %zu\n",
			cases.nr);
		failed++;
	}
	data = xcalloc(cases.nr ? cases.nr : 1, sizeof(*data));
	for (size_t i = 0; i < cases.nr; i++) {
		const char *slash = strrchr(cases.v[i], '/');

		data[i].name = slash ? slash + 1 : cases.v[i];
		data[i].test_func = run_case;
		data[i].initial_state = (void *)cases.v[i];
	}
	if (cases.nr)
		failed += _cmocka_run_group_tests("lint data", data, cases.nr, NULL, NULL);
	free(data);
	strvec_clear(&cases);
	return failed ? 1 : 0;
}
