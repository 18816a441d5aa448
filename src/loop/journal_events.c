/*
 * The journal's event table (journal.h): each event a reader reads, with
 * its fields and readers; gdn_journal_event() turns a line's name into
 * the enum the readers switch on.
 */
#include "gdnctl/compat.h"
#include "gdnctl/journal.h"

const struct gdn_event_def gdn_journal_events[GDN_EV_NR] = {
    [GDN_EV_AGENT] = {"agent", "agent waited_ms", GDN_EV_READ_REPORT,
		      "--targets: the agent (1..N) a worker's iteration thinks on"},
    [GDN_EV_AGENT_END] = {"agent_end", "duration_ms",
			  GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
			  "the agent returned"},
    [GDN_EV_AGENT_PID] = {"agent_pid", "pgid started", GDN_EV_READ_STATE,
			  "the agent's process group (a resume stops an orphan)"},
    [GDN_EV_AGENT_START] = {"agent_start", "attempt mark",
			    GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
			    "the agent starts (an attempt)"},
    [GDN_EV_CHECK] = {"check", "", GDN_EV_READ_STATUS, "a post-check ran"},
    [GDN_EV_CONFLICT] = {"conflict", "reason", GDN_EV_READ_REPORT,
			 "the candidate did not apply on a newer champion"},
    [GDN_EV_DECISION] = {"decision", "commits failures consecutive failure counted champion",
			 GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
			 "the iteration's decision: commits kept, the failure counts"},
    [GDN_EV_ERROR] = {"error", "message", GDN_EV_READ_REPORT, "an iteration error"},
    [GDN_EV_FAILURE] = {"failure", "failures consecutive failure message",
			GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
			"a counted failure"},
    [GDN_EV_HEAD] = {"head", "after commits ids", GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
		     "the candidate's head and commits, before validation"},
    [GDN_EV_INTERRUPTED] = {"interrupted", "", GDN_EV_READ_STATUS, "a signal stopped the loop"},
    [GDN_EV_ITERATION_END] = {"iteration_end", "", GDN_EV_READ_STATE | GDN_EV_READ_STATUS,
			      "the iteration is over"},
    [GDN_EV_ITERATION_START] = {"iteration_start", "head",
				GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
				"an iteration starts (its worker, the head it starts from)"},
    [GDN_EV_MEASUREMENT] = {"measurement", "phase", GDN_EV_READ_STATUS, "a sample of the metric"},
    [GDN_EV_PERF_AB] = {"perf_ab", "ci_low_pct ci_high_pct confidence pairs", GDN_EV_READ_REPORT,
			"--perf-ab's interval"},
    [GDN_EV_PERF_DECISION] =
	{"perf_decision",
	 "decision metric direction commit candidate champion improvement_pct reasons",
	 GDN_EV_READ_STATUS | GDN_EV_READ_REPORT, "the performance policy's decision"},
    [GDN_EV_PREFLIGHT_WORKTREE] = {"preflight_worktree", "path", GDN_EV_READ_STATE,
				   "the pre-flight's worktree (removed on resume)"},
    [GDN_EV_PROMOTE] = {"promote", "champion", GDN_EV_READ_STATE | GDN_EV_READ_REPORT,
			"a candidate became the champion"},
    [GDN_EV_REBASE] = {"rebase", "result head reason", GDN_EV_READ_REPORT,
		       "a candidate carried onto a newer champion"},
    [GDN_EV_RECHECK] = {"recheck", "", GDN_EV_READ_REPORT, "a carried candidate validated again"},
    [GDN_EV_REF_KEPT] = {"ref_kept", "kind ref", GDN_EV_READ_REPORT, "a commit kept under refs/"},
    [GDN_EV_RESUME_OVERRIDE] = {"resume_override", "options was", GDN_EV_READ_STATE,
				"options a resume changed (--resume-override)"},
    [GDN_EV_REVERT] = {"revert", "ok reason commits discarded_ref",
		       GDN_EV_READ_STATUS | GDN_EV_READ_REPORT, "the iteration's commits reverted"},
    [GDN_EV_RUN_END] = {"run_end", "reason exit_code",
			GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
			"the run ended"},
    [GDN_EV_RUN_RESUME] = {"run_resume", "iterations max_failures stop_after_failures workers",
			   GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
			   "the run resumed"},
    [GDN_EV_RUN_START] = {"run_start",
			  "iterations workers worktree loop_branch champion options workdir branch "
			  "head max_failures stop_after_failures plan",
			  GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
			  "a run starts (its options and plan)"},
    [GDN_EV_STAMP] = {"stamp", "commit", GDN_EV_READ_STATUS | GDN_EV_READ_REPORT,
		      "the running log's entry stamped in a commit"},
    [GDN_EV_STASH_FORGOTTEN] = {"stash_forgotten", "kind message sha", GDN_EV_READ_STATE,
				"a stash dropped from the record"},
    [GDN_EV_STASH_KEPT] = {"stash_kept", "kind message sha", GDN_EV_READ_STATE,
			   "a stash kept for the user"},
    [GDN_EV_STASH_RESTORED] = {"stash_restored", "kind", GDN_EV_READ_STATE,
			       "the user's stash restored"},
    [GDN_EV_STASH_RESTORING] = {"stash_restoring", "kind", GDN_EV_READ_STATE,
				"the user's stash being restored"},
    [GDN_EV_STASH_SAVED] = {"stash_saved", "kind message sha", GDN_EV_READ_STATE,
			    "the user's changes stashed"},
    [GDN_EV_STASH_SAVING] = {"stash_saving", "kind message", GDN_EV_READ_STATE,
			     "the user's changes being stashed"},
    [GDN_EV_STOP] = {"stop", "reason", GDN_EV_READ_STATUS, "a stop condition holds"},
    [GDN_EV_TARGET] = {"target", "target waited_ms", GDN_EV_READ_REPORT,
		       "--targets: the target a worker's candidate validates on"},
    [GDN_EV_TRACE] = {"trace", "file origin path reason source", GDN_EV_READ_REPORT,
		      "the profile's trace"},
    [GDN_EV_USAGE] = {"usage", "input_tokens output_tokens tokens cost_usd",
		      GDN_EV_READ_STATE | GDN_EV_READ_REPORT, "the agent's tokens and cost"},
    [GDN_EV_VALIDATION] = {"validation", "phase state attempt duration_ms",
			   GDN_EV_READ_STATUS | GDN_EV_READ_REPORT, "a validation phase ran"},
    [GDN_EV_WORKER_END] = {"worker_end", "", GDN_EV_READ_REPORT,
			   "a worker's iteration handed back"},
    [GDN_EV_WORKTREE_ADD] = {"worktree_add", "path", GDN_EV_READ_STATE,
			     "a worktree added (the agent's, or a worker's)"},
};

static int cmp_name(const void *key, const void *row)
{
	return strcmp(key, ((const struct gdn_event_def *)row)->name);
}

enum gdn_event gdn_journal_event(const char *name)
{
	const struct gdn_event_def *row;

	if (!name)
		return GDN_EV_UNKNOWN;
	row = bsearch(name, gdn_journal_events + 1, GDN_EV_NR - 1, sizeof(*row), cmp_name);
	return row ? (enum gdn_event)(row - gdn_journal_events) : GDN_EV_UNKNOWN;
}
