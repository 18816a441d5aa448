/* Unit tests for the interleaved A/B statistics (abstat.c). */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <math.h>
#include <cmocka.h>
#include "gdnctl/abstat.h"

static void test_exact_ratio(void **unused)
{
	const double a[] = {100, 200, 50}, b[] = {110, 220, 55};
	struct gdn_abstat s;

	(void)unused;
	assert_int_equal(gdn_abstat_ratio_ci(a, b, 3, false, 0.95, 1, &s), 0);
	assert_int_equal(s.pairs, 3);
	assert_true(fabs(s.improvement_pct - 10.0) < 1e-9);
	assert_true(fabs(s.lo_pct - 10.0) < 1e-9 && fabs(s.hi_pct - 10.0) < 1e-9);
	/* lower is better: B takes 80% of A's time, a 25% improvement */
	{
		const double c[] = {80, 160, 40};

		assert_int_equal(gdn_abstat_ratio_ci(a, c, 3, true, 0.95, 1, &s), 0);
		assert_true(fabs(s.improvement_pct - 25.0) < 1e-9);
	}
}

static void test_geometric_mean_and_interval(void **unused)
{
	/* ratios 1.02 and 1.08: geometric mean sqrt(1.1016) */
	const double a[] = {1, 1, 1, 1}, b[] = {1.02, 1.08, 1.02, 1.08};
	struct gdn_abstat s, t;

	(void)unused;
	assert_int_equal(gdn_abstat_ratio_ci(a, b, 4, false, 0.95, 42, &s), 0);
	assert_true(fabs(s.improvement_pct - (sqrt(1.02 * 1.08) - 1) * 100) < 1e-9);
	assert_true(s.lo_pct < s.improvement_pct && s.improvement_pct < s.hi_pct);
	/* about the range of the single ratios, widened for 4 pairs (t(3) / z) */
	assert_true(s.lo_pct >= -2.0 && s.hi_pct <= 12.0);
	/* seeded: the same interval every time; another seed, nearly the same */
	assert_int_equal(gdn_abstat_ratio_ci(a, b, 4, false, 0.95, 42, &t), 0);
	assert_true(s.lo_pct == t.lo_pct && s.hi_pct == t.hi_pct);
	assert_int_equal(gdn_abstat_ratio_ci(a, b, 4, false, 0.95, 7, &t), 0);
	assert_true(fabs(s.lo_pct - t.lo_pct) < 0.5);
	/* a higher confidence gives a wider interval */
	assert_int_equal(gdn_abstat_ratio_ci(a, b, 4, false, 0.5, 42, &t), 0);
	assert_true(t.hi_pct - t.lo_pct < s.hi_pct - s.lo_pct);
}

static void test_invalid(void **unused)
{
	const double a[] = {1, 0}, b[] = {1, 1};
	struct gdn_abstat s;

	(void)unused;
	assert_int_equal(gdn_abstat_ratio_ci(a, b, 0, false, 0.95, 1, &s), -1);
	assert_int_equal(gdn_abstat_ratio_ci(a, b, 2, false, 0.95, 1, &s), -1);
	assert_int_equal(gdn_abstat_ratio_ci(b, a, 2, false, 0.95, 1, &s), -1);
}

static void test_classify(void **unused)
{
	struct gdn_abstat s = {0};

	(void)unused;
	s.pairs = 1, s.lo_pct = 5, s.hi_pct = 5;
	assert_int_equal(gdn_abstat_classify(&s, 0.25, 1.0), GDN_AB_INCONCLUSIVE);
	s.pairs = 2, s.lo_pct = 0.5, s.hi_pct = 9;
	assert_int_equal(gdn_abstat_classify(&s, 0.25, 1.0), GDN_AB_PROMOTE);
	s.lo_pct = 0.2, s.hi_pct = 9;
	assert_int_equal(gdn_abstat_classify(&s, 0.25, 1.0), GDN_AB_INCONCLUSIVE);
	s.lo_pct = -3, s.hi_pct = -1.5;
	assert_int_equal(gdn_abstat_classify(&s, 0.25, 1.0), GDN_AB_REGRESSION);
	s.lo_pct = -0.5, s.hi_pct = 0.2;
	assert_int_equal(gdn_abstat_classify(&s, 0.25, 1.0), GDN_AB_WITHIN);
	s.lo_pct = -1.1, s.hi_pct = 0.2; /* width 1.3 > 1.25 */
	assert_int_equal(gdn_abstat_classify(&s, 0.25, 1.0), GDN_AB_INCONCLUSIVE);
	assert_string_equal(gdn_abstat_verdict_name(GDN_AB_INCONCLUSIVE), "inconclusive");
	assert_true(fabs(gdn_abstat_look_confidence(0.95, 5) - 0.99) < 1e-12);
	assert_true(gdn_abstat_look_confidence(0.95, 1) == 0.95);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exact_ratio),
	    cmocka_unit_test(test_geometric_mean_and_interval),
	    cmocka_unit_test(test_invalid),
	    cmocka_unit_test(test_classify),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
