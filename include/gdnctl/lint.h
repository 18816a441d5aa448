/*
 * Running-log rules (`gdnctl lint-log`): a pure module that checks a
 * markdown log held in memory. It never prints, exits or touches files;
 * commit lookups go through a callback so that the rules stay testable.
 *
 * The rules (docs/gdnctl-lint-log.md has the full text):
 *   pending        a line whose stripped text is exactly `- Commit: (pending)`
 *   this-commit    a line whose stripped text is exactly `- Commit: this commit`
 *   non-monotonic  `### Iteration <N><suffix>` headings that do not increase
 *                  (whole file, whatever the scope)
 *   missing-fields a numbered entry without one of the required `- Name:` fields
 *   bad-commit     a `- Commit:` value that is neither a commit id nor `none...`
 *   unknown-commit a `- Commit:` id that is not a commit of the repository
 *
 * Text handling: the buffer must be UTF-8 without NUL bytes (a leading BOM
 * is skipped). Lines end at "\n", "\r\n" or "\r"; line numbers are 1-based
 * over the whole file. "Stripped" means without leading and trailing ASCII
 * whitespace (space, \t, \v, \f).
 */
#ifndef GDNCTL_LINT_H
#define GDNCTL_LINT_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/strvec.h"

struct gdn_err;

enum lint_scope {
	LINT_SCOPE_LAST_ENTRY = 0, /* from the last line starting with "### Iteration " to EOF */
	LINT_SCOPE_ALL,		   /* the whole file */
};

/* The rules, in the order their groups are reported. */
enum lint_rule {
	LINT_PENDING = 0,
	LINT_THIS_COMMIT,
	LINT_NON_MONOTONIC,
	LINT_MISSING_FIELDS,
	LINT_UNKNOWN_COMMIT,
	LINT_BAD_COMMIT,
	LINT_RULE_NR,
};

/* "pending", "this-commit", ... (the JSON `rule` value). */
const char *lint_rule_name(enum lint_rule rule);
/*
 * The title of the rule's report group, printed as "<title> in <path>:".
 * unknown-commit and bad-commit share one group (and title).
 */
const char *lint_rule_title(enum lint_rule rule);
/* Report-group index: findings are sorted by (group, line). */
int lint_rule_group(enum lint_rule rule);
/* "last-entry", "all" (--scope, lint.scope). */
extern const struct gdn_enum lint_scope_enum[];
const char *lint_scope_name(enum lint_scope scope);

/*
 * Whether the hexadecimal id `id` (7-40 lower-case hex digits) names a
 * commit: set *exists to 0 or 1 and return 0, or return a negative
 * gdn_errcode with err filled (the lint then stops with that error).
 */
typedef int (*lint_commit_fn)(const char *id, int *exists, void *payload, struct gdn_err *err);

struct lint_opts {
	enum lint_scope scope;
	bool allow_pending;
	bool allow_this_commit;
	bool allow_non_monotonic;
	/*
	 * Check that every numbered entry in scope has the fields in `fields`
	 * or, when `fields` is NULL or empty, the unindented `- Name:` fields
	 * of the log's own "## Entry Template" section.
	 */
	bool require_fields;
	const struct strvec *fields; /* borrowed */
	long since;		     /* entries numbered below this skip the fields check */
	/* Non-NULL: check `- Commit:` values of numbered entries in scope. */
	lint_commit_fn commit_exists;
	void *payload;
	const char *repo_name; /* in unknown-commit messages; NULL: "the repository" */
};
#define LINT_OPTS_INIT                                                                       \
	{                                                                                    \
		LINT_SCOPE_LAST_ENTRY, false, false, false, false, NULL, 0, NULL, NULL, NULL \
	}

struct lint_finding {
	enum lint_rule rule;
	size_t line;   /* 1-based: the placeholder, the later heading, the entry heading */
	char *message; /* owned; exactly the text printed under the group title:
			* pending/this-commit "line 12";
			* non-monotonic "<reason>: line 3 `### ...` -> line 9 `### ...`";
			* missing-fields "line 12 `### Iteration 4 - x`: missing Date, Commit";
			* bad-commit "line 14: not a commit id or none (`text`)";
			* unknown-commit "line 14: commit abc1234 not found in <repo>" */
};

struct lint_result {
	struct lint_finding *findings; /* sorted by (group, line) */
	size_t nr, alloc;
	size_t lines;	      /* lines in the file */
	size_t scope_line;    /* first line of the scope, 0 when the scope is empty */
	size_t entries;	      /* numbered entries whose heading is in scope */
	struct strvec fields; /* the fields required (when opts.require_fields) */
};
#define LINT_RESULT_INIT                         \
	{                                        \
		NULL, 0, 0, 0, 0, 0, STRVEC_INIT \
	}

/*
 * Lint `len` bytes at `buf` (need not be NUL-terminated). Returns 0 with
 * the findings in res (none: the log passed); GDN_EPARSE for a buffer that
 * is not UTF-8 or holds a NUL byte ("invalid UTF-8 at byte offset N",
 * "NUL byte at byte offset N", 0-based offsets into buf); GDN_ENOTFOUND
 * when the fields check needs the Entry Template and the log has none
 * (or it lists no fields); or the callback's error, prefixed with
 * "line N". res is filled as far as the lint got; release it in any case.
 */
int lint_log_buffer(const char *buf, size_t len, const struct lint_opts *o, struct lint_result *res,
		    struct gdn_err *err);
void lint_result_release(struct lint_result *res);

/* ---- text helpers, exposed for unit tests ---- */

enum lint_utf8_status {
	LINT_UTF8_OK = 0,
	LINT_UTF8_INVALID, /* ill-formed: bad lead byte, overlong, surrogate, > U+10FFFF, truncated
			    */
	LINT_UTF8_NUL,	   /* a NUL byte (U+0000) */
};
/* Validate; on failure *offset is the 0-based offset of the first byte of the bad sequence. */
enum lint_utf8_status lint_utf8_check(const char *buf, size_t len, size_t *offset);

/* Iterate over lines ending at "\n", "\r\n", "\r" or the end of the buffer. */
struct lint_lines {
	const char *buf;
	size_t len, pos;
	size_t lineno;	/* 1-based number of the line last returned */
	size_t next_cr; /* offset of the next '\r' at or after pos (len: none) */
};
void lint_lines_init(struct lint_lines *it, const char *buf, size_t len);
/* The next line without its terminator; false at the end. A final terminator ends no extra line. */
bool lint_lines_next(struct lint_lines *it, const char **line, size_t *len);

/*
 * Match `^### Iteration (\d+)([A-Za-z]*)\b` against the stripped line
 * `s[0..len)`. Digits are ASCII; `\b` treats ASCII alphanumerics, '_' and
 * non-ASCII letters and digits as word characters (see the docs for the
 * exact ranges). On a match, fill the digit and suffix spans and return true.
 */
struct lint_heading {
	const char *num;
	size_t num_len; /* leading zeros removed; 0 for the number 0 */
	const char *suffix;
	size_t suffix_len;
};
bool lint_parse_heading(const char *s, size_t len, struct lint_heading *h);
/* Compare two decimal digit strings without leading zeros: <0, 0, >0. Any length. */
int lint_num_cmp(const char *a, size_t alen, const char *b, size_t blen);

#endif
