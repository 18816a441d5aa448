/*
 * The loop's prompt (src/loop/prompt.c): template substitution, session
 * directives and the running log's placeholder stamp.
 */
#ifndef GDNCTL_PROMPT_H
#define GDNCTL_PROMPT_H

#include "gdnctl/compat.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

struct gdn_prompt_vars {
	long iteration;
	long total;
	const char *head_sha;
	const char *branch;   /* NULL: "" */
	const char *log_tail; /* NULL: "" */
	const char *note;     /* {{LOOP_NOTE}}, else appended after the template; NULL: none */
	const char *log_file; /* {{LOG_FILE}}: the running log (gdn_prompt_log_file); NULL: none */
};
/* What {{LOG_FILE}} says when the run keeps no running log. */
#define GDN_PROMPT_NO_LOG_FILE "none: this run keeps no running log; record in your commit message"
/*
 * The running log `log` as the agent working in `workdir` names it: relative
 * to workdir when below it, else as is (borrowed from log). NULL for NULL.
 */
const char *gdn_prompt_log_file(const char *log, const char *workdir);
/*
 * The prompt of one iteration, appended to out: the template with
 * {{ITERATION}}, {{TOTAL_ITERATIONS}}, {{HEAD_SHA}}, {{BRANCH}}, {{LOG_TAIL}}
 * and {{LOG_FILE}} (GDN_PROMPT_NO_LOG_FILE without one) replaced (every occurrence); with
 * directives, the original's framing: rstrip, "\n\nSession directives for this codex-loop run (must
 * follow unless they conflict with tests/correctness):\n\n", then
 * "[Directive N]\n<text>" blocks joined with "\n", then "\n".
 */
void gdn_prompt_render(const char *tmpl, const struct gdn_prompt_vars *v,
		       const struct strvec *directives, struct sbuf *out);
/*
 * Read one directive file (stripped) and append it to `directives`.
 * `source` names it in errors: "directive file not found for <source>:
 * <path>" (GDN_ENOTFOUND), "directive file is empty for <source>: <path>"
 * (GDN_EUSAGE).
 */
int gdn_prompt_add_directive_file(struct strvec *directives, const char *path, const char *source,
				  struct gdn_err *err);
/*
 * The first existing file `rel` (e.g. "prompts/iteration.md") under each
 * of `dirs` (NULL-terminated; "" entries skipped). Returns a new string
 * or NULL.
 */
char *gdn_prompt_find(const char *const *dirs, const char *rel);
/*
 * The presets in `dirs` (NULL-terminated; "" entries skipped): the names
 * of their *.md files without ".md", each once, sorted, appended to out.
 */
void gdn_prompt_list_presets(const char *const *dirs, struct strvec *out);
/* A preset name is letters, digits, '.', '_' and '-', not starting with '.'. */
bool gdn_prompt_preset_name_ok(const char *name);
/* The last entry of a running log ("### Iteration " heading to EOF), appended to out. */
void gdn_prompt_log_tail(const char *log, size_t len, struct sbuf *out);
/*
 * Replace a `- Commit: (pending)` / `- Commit: this commit` placeholder in
 * the last entry of a running log by `- Commit: <sha>` (the original's
 * stamping rules). With worker > 0 (the loop's --workers, where entries land
 * in promotion order) it is followed by `- Worker: <worker> (iteration
 * <iteration>)`, and an entry heading whose number would not increase takes
 * the previous heading's number + 1. Returns 1 when the file was rewritten,
 * 0 when there was nothing to stamp (or no file), or a gdn_errcode.
 */
int gdn_prompt_stamp_log(const char *path, const char *sha, long worker, long iteration,
			 struct gdn_err *err);

#endif
