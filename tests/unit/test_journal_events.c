/*
 * Unit tests for the journal's event table (journal.h, journal_events.c):
 * one row per enum value, sorted by name (gdn_journal_event bisects it),
 * each read by some reader; names of no row are GDN_EV_UNKNOWN.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/journal.h"

static void test_rows(void **unused)
{
	(void)unused;
	assert_null(gdn_journal_events[GDN_EV_UNKNOWN].name);
	for (int ev = 1; ev < GDN_EV_NR; ev++) {
		const struct gdn_event_def *d = &gdn_journal_events[ev];

		assert_non_null(d->name);
		assert_non_null(d->fields);
		assert_non_null(d->about);
		assert_true(d->readers != 0);
		assert_true((d->readers & ~(unsigned)(GDN_EV_READ_STATE | GDN_EV_READ_STATUS |
						      GDN_EV_READ_REPORT)) == 0);
		if (ev > 1)
			assert_true(strcmp(gdn_journal_events[ev - 1].name, d->name) < 0);
		/* every name finds its own row */
		assert_int_equal(gdn_journal_event(d->name), ev);
	}
}

static void test_lookup(void **unused)
{
	(void)unused;
	assert_int_equal(gdn_journal_event("run_start"), GDN_EV_RUN_START);
	assert_int_equal(gdn_journal_event("worktree_add"), GDN_EV_WORKTREE_ADD);
	assert_int_equal(gdn_journal_event("agent_end"), GDN_EV_AGENT_END);
	assert_int_equal(gdn_journal_event("stash_"), GDN_EV_UNKNOWN);
	assert_int_equal(gdn_journal_event("run_start "), GDN_EV_UNKNOWN);
	assert_int_equal(gdn_journal_event("zzz"), GDN_EV_UNKNOWN);
	assert_int_equal(gdn_journal_event(""), GDN_EV_UNKNOWN);
	assert_int_equal(gdn_journal_event(NULL), GDN_EV_UNKNOWN);
	/* the readers the table names for the events every reader needs */
	assert_int_equal(gdn_journal_events[GDN_EV_RUN_START].readers,
			 GDN_EV_READ_STATE | GDN_EV_READ_STATUS | GDN_EV_READ_REPORT);
	assert_int_equal(gdn_journal_events[GDN_EV_AGENT_PID].readers, GDN_EV_READ_STATE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows),
	    cmocka_unit_test(test_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
