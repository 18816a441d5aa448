/*
 * The loop's policies, failure kinds and progress levels (src/loop/policy.c;
 * the failure names are the journal's, src/loop/journal.c).
 */
#ifndef GDNCTL_LOOP_POLICY_H
#define GDNCTL_LOOP_POLICY_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"

/* --post-check-policy, --no-commit-policy, --iteration-error-policy */
enum gdn_loop_policy {
	GDN_POLICY_FAIL = 0,
	GDN_POLICY_COUNT_FAILURE,
	GDN_POLICY_CONTINUE,
};
/* "fail", "count-failure", "continue" (src/loop/policy.c: the names of this section's enums). */
extern const struct gdn_enum gdn_loop_policy_enum[];
const char *gdn_loop_policy_name(enum gdn_loop_policy p);

enum gdn_loop_verdict {
	GDN_VERDICT_EXIT = 0, /* stop the loop with the failure's exit code */
	GDN_VERDICT_NEXT,     /* skip the rest of the iteration, go on */
};
/*
 * Apply a policy to a failure: fail exits; count-failure adds one to
 * *failures and exits when max_failures >= 0 and *failures > max_failures;
 * continue goes on. *counted says whether the failure was counted.
 */
enum gdn_loop_verdict gdn_loop_policy_apply(enum gdn_loop_policy p, long *failures,
					    long max_failures, bool *counted);

enum gdn_dirty_policy { GDN_DIRTY_FAIL = 0, GDN_DIRTY_STASH };
enum gdn_restore_policy { GDN_RESTORE_WARN_KEEP = 0, GDN_RESTORE_FAIL };
enum gdn_sync_policy { GDN_SYNC_OFF = 0, GDN_SYNC_ONCE, GDN_SYNC_EACH };
enum gdn_sync_conflict { GDN_SYNC_CONFLICT_FAIL = 0, GDN_SYNC_CONFLICT_SKIP };
/* --dirty-policy, --stash-restore-policy, --sync-main-policy, --sync-main-conflict-policy */
extern const struct gdn_enum gdn_dirty_policy_enum[], gdn_restore_policy_enum[];
extern const struct gdn_enum gdn_sync_policy_enum[], gdn_sync_conflict_enum[];

/* Failure kinds, counted in the summary. */
enum gdn_loop_failure {
	GDN_FAIL_AGENT = 0,
	GDN_FAIL_POST_CHECK,
	GDN_FAIL_NO_COMMIT,
	GDN_FAIL_HOOK,
	GDN_FAIL_ITERATION_ERROR,
	GDN_FAIL_NR,
};
/* "agent", "post_check", "no_commit", "hook", "iteration_error" (journal.c: the journal's names).
 */
const char *gdn_loop_failure_name(enum gdn_loop_failure f);

/* The original codex-loop's exit codes of two failures (kept by the codex-loop alias). */
#define GDN_LOOP_ORIGINAL_ITERATION_ERROR 2
#define GDN_LOOP_ORIGINAL_NO_COMMIT	  3
/*
 * The exit code of a run stopped by a failure of `kind` whose own code is
 * `rc` (the agent's or a check's exit code; for a missing commit and an
 * iteration error the original's 3 and 2). `original` (codex-loop): rc as
 * it is, the original's codes. Else gdnctl's table (exitcode.h): the
 * agent's failure 4 (124 when it timed out), a validation timeout 124,
 * every other failure 1.
 */
int gdn_loop_exit_code(enum gdn_loop_failure kind, int rc, bool original);

enum gdn_loop_level {
	GDN_LOOP_INFO = 0, /* stdout: "[gdnctl] msg" */
	GDN_LOOP_HEADING,  /* stdout: "\n[gdnctl] msg" */
	GDN_LOOP_NOTE,	   /* stderr: "[gdnctl] msg" (the original's failure messages) */
	GDN_LOOP_WARN,	   /* stderr: "[gdnctl] WARNING: msg" */
};
typedef void (*gdn_loop_say_fn)(enum gdn_loop_level level, const char *msg, void *payload);

#endif
