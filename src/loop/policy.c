/*
 * The names of the loop's policies (include/gdnctl/loop_policy.h), one table per
 * enum: the command line, help, man pages and completion read these rows.
 */
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/loop_policy.h"

const struct gdn_enum gdn_loop_policy_enum[] = {
    {"fail", GDN_POLICY_FAIL, "stop the loop with the failure's exit code"},
    {"count-failure", GDN_POLICY_COUNT_FAILURE,
     "count one failure (stop when --max-failures is exceeded) and go on"},
    {"continue", GDN_POLICY_CONTINUE, "go on without counting it"},
    GDN_ENUM_END,
};

const char *gdn_loop_policy_name(enum gdn_loop_policy p)
{
	return gdn_enum_name(gdn_loop_policy_enum, (int)p);
}

const struct gdn_enum gdn_dirty_policy_enum[] = {
    {"fail", GDN_DIRTY_FAIL, "stop the loop"},
    {"stash", GDN_DIRTY_STASH, "stash it, run the iteration, restore the stash by its commit id"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_restore_policy_enum[] = {
    {"warn-keep", GDN_RESTORE_WARN_KEEP, "warn and keep the stash for manual recovery"},
    {"fail", GDN_RESTORE_FAIL, "stop the loop"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_sync_policy_enum[] = {
    {"off", GDN_SYNC_OFF, "never merge"},
    {"once", GDN_SYNC_ONCE, "before the first iteration"},
    {"each-iteration", GDN_SYNC_EACH, "before every iteration"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_sync_conflict_enum[] = {
    {"fail", GDN_SYNC_CONFLICT_FAIL, "stop the loop"},
    {"skip", GDN_SYNC_CONFLICT_SKIP, "abort the merge and go on without it"},
    GDN_ENUM_END,
};

int gdn_loop_exit_code(enum gdn_loop_failure kind, int rc, bool original)
{
	if (original)
		return rc;
	switch (kind) {
	case GDN_FAIL_AGENT:
		return rc == GDN_EXIT_TIMEOUT ? GDN_EXIT_TIMEOUT : GDN_EXIT_BACKEND;
	case GDN_FAIL_HOOK:
		return rc == GDN_EXIT_TIMEOUT ? GDN_EXIT_TIMEOUT : GDN_EXIT_FAILED;
	default:
		return GDN_EXIT_FAILED;
	}
}
