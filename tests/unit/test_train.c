/*
 * Unit tests for when a worker's candidate joins the speculative train
 * (loop_may_speculate, src/loop/train.c): the expected waste of joining
 * against that of validating on the champion, from the last decisions
 * (a re-check's, loop_may_speculate_recheck, from the last re-checks).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "../../src/loop/steps.h"

/* A train whose last n decisions were `bits` (the newest in bit 0; 1: promoted). */
static struct train history(unsigned bits, unsigned n)
{
	struct train t = {0};

	t.recent = bits;
	t.recent_nr = n;
	return t;
}

/*
 * The deepest `ahead` (up to 64) at which `may` (loop_may_speculate or
 * loop_may_speculate_recheck) still joins; 0 when never with one ahead.
 */
static long deepest_by(bool (*may)(const struct run *, const struct train *, long),
		       const struct run *r, const struct train *t)
{
	long d = 0;

	while (d < 64 && may(r, t, d + 1))
		d++;
	return d;
}

static long deepest(const struct run *r, const struct train *t)
{
	return deepest_by(loop_may_speculate, r, t);
}

static long deepest_recheck(const struct run *r, const struct train *t)
{
	return deepest_by(loop_may_speculate_recheck, r, t);
}

static void joins_by_expected_waste(void **state)
{
	struct run r = {0};
	struct train none = history(0, 0), all = history(0xff, 8), night = history(0x21, 8);
	struct train half = history(0x55, 8), old_passes = history(0xff00, 16);

	(void)state;
	/* nothing ahead: the tip is the champion, always joined */
	assert_true(loop_may_speculate(&r, &night, 0));
	/* no decision yet (p = 0.8): up to seven ahead, as docs/loop-workers.md says */
	assert_int_equal(deepest(&r, &none), 7);
	/* every one promoted (p = 0.96): as deep as sixteen workers go */
	assert_true(deepest(&r, &all) >= 15);
	/* the night's pass rate (2 of 8, p = 0.36): not even one ahead */
	assert_int_equal(deepest(&r, &night), 0);
	/* half promoted (p = 0.56): not worth it either, 1 - p > p * p */
	assert_int_equal(deepest(&r, &half), 0);
	/* only the last eight count: passes before them are forgotten */
	assert_int_equal(deepest(&r, &old_passes), 0);
}

/* A re-check goes by the re-checks decided, not by every candidate. */
static void rechecks_by_their_own_record(void **state)
{
	struct run r = {0};
	struct train night = history(0x21, 8), t;

	(void)state;
	/* the night's candidates never join, but their re-checks (p = 0.95) do, deep */
	assert_int_equal(deepest(&r, &night), 0);
	assert_true(deepest_recheck(&r, &night) >= 15);
	/* re-checks that kept failing (0 of 8, p = 0.19): not even one ahead */
	t = night;
	t.rechecks = 0;
	t.rechecks_nr = 8;
	assert_int_equal(deepest_recheck(&r, &t), 0);
	/* passing re-checks say nothing of new candidates */
	t.rechecks = 0xff;
	assert_int_equal(deepest(&r, &t), 0);
	assert_true(deepest_recheck(&r, &t) >= 15);
	assert_true(loop_may_speculate_recheck(&r, &t, 0));
}

static int no_decide(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		     struct gdn_err *err)
{
	(void)payload, (void)it, (void)out, (void)err;
	return 0;
}

static void never_with_a_performance_decision(void **state)
{
	struct gdn_loop_hooks hooks = {0};
	struct run r = {0};
	struct train all = history(0xff, 8);

	(void)state;
	hooks.decide = no_decide;
	r.hooks = &hooks;
	assert_false(loop_may_speculate(&r, &all, 1));
	assert_false(loop_may_speculate(&r, &all, 0));
	assert_false(loop_may_speculate_recheck(&r, &all, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(joins_by_expected_waste),
	    cmocka_unit_test(rechecks_by_their_own_record),
	    cmocka_unit_test(never_with_a_performance_decision),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
