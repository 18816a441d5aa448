/*
 * Fuzz the running-log rules: any bytes, several option sets (scopes,
 * allow flags, template and explicit fields, since, a fake commit lookup
 * that sometimes fails). Checks the result's invariants as well as
 * memory safety.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/lint.h"
#include "gdnctl/strvec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Ids starting with 0-7 exist; ids starting with "dead" fail the lookup. */
static int fake_commit_exists(const char *id, int *exists, void *payload, struct gdn_err *err)
{
	size_t len = strlen(id);

	(void)payload;
	if (len < 7 || len > 40)
		abort(); /* the module promised 7-40 hex digits */
	for (size_t i = 0; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			abort();
	if (!strncmp(id, "dead", 4))
		return gdn_err_set(err, GDN_EPARSE, "commit id '%s' is ambiguous", id);
	*exists = id[0] < '8';
	return 0;
}

static void check_result(const char *buf, size_t len, int ret, const struct lint_result *res)
{
	size_t off;
	bool valid = lint_utf8_check(buf, len, &off) == LINT_UTF8_OK;
	int group = -1;

	if (!valid && (ret != GDN_EPARSE || res->nr))
		abort(); /* text that is not UTF-8 is an error, never findings */
	for (size_t i = 0; i < res->nr; i++) {
		const struct lint_finding *f = &res->findings[i];

		if (!f->message || !f->line || f->line > res->lines)
			abort();
		if (lint_rule_group(f->rule) < group)
			abort(); /* sorted by report group */
		group = lint_rule_group(f->rule);
	}
	if (res->scope_line > res->lines)
		abort();
}

static void count_lines(const char *buf, size_t len)
{
	struct lint_lines it;
	const char *line;
	size_t llen, total = 0, n = 0;

	lint_lines_init(&it, buf, len);
	while (lint_lines_next(&it, &line, &llen)) {
		struct lint_heading h;

		n++;
		total += llen;
		if (memchr(line, '\n', llen) || memchr(line, '\r', llen))
			abort();
		if (lint_parse_heading(line, llen, &h) && (h.num_len > llen || h.suffix_len > llen))
			abort();
	}
	if (total > len || it.lineno != n)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct strvec fields = STRVEC_INIT;
	struct lint_opts sets[6];

	strvec_pushl(&fields, "Date", "Commit", "Hotspots observed", "x", NULL);
	for (size_t i = 0; i < ARRAY_SIZE(sets); i++)
		sets[i] = (struct lint_opts)LINT_OPTS_INIT;
	sets[1].scope = LINT_SCOPE_ALL;
	sets[2].scope = LINT_SCOPE_ALL;
	sets[2].allow_pending = sets[2].allow_this_commit = sets[2].allow_non_monotonic = true;
	sets[3].require_fields = true; /* the template's fields */
	sets[3].commit_exists = fake_commit_exists;
	sets[4].scope = LINT_SCOPE_ALL;
	sets[4].require_fields = true;
	sets[4].fields = &fields;
	sets[4].since = 3;
	sets[4].commit_exists = fake_commit_exists;
	sets[4].repo_name = "/fake";
	sets[5].scope = LINT_SCOPE_ALL;
	sets[5].require_fields = true;
	sets[5].since = 99999999;

	count_lines(buf, size);
	for (size_t i = 0; i < ARRAY_SIZE(sets); i++) {
		struct lint_result res = LINT_RESULT_INIT;
		struct gdn_err err = GDN_ERR_INIT;
		int ret = lint_log_buffer(buf, size, &sets[i], &res, &err);

		if (ret && !err.msg[0])
			abort();
		check_result(buf, size, ret, &res);
		lint_result_release(&res);
	}
	strvec_clear(&fields);
	return 0;
}
