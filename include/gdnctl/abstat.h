#ifndef GDNCTL_ABSTAT_H
#define GDNCTL_ABSTAT_H

/*
 * Interleaved A/B measurement (--perf-ab): the champion (A) and the
 * candidate (B) profiled alternately, A B A B ..., give n pairs. The
 * estimate is the geometric mean of the paired ratios B_i / A_i (slow
 * drift cancels within a pair), with a seeded, deterministic percentile
 * bootstrap confidence interval over the pairs, widened on few pairs as
 * Student's t is (sqrt(n / (n - 1)) x t(n - 1) / z). Pure: no I/O.
 */
#include "gdnctl/compat.h"

enum gdn_abstat_verdict {
	GDN_AB_WITHIN = 0,   /* the interval lies inside the band */
	GDN_AB_PROMOTE,	     /* entirely above +min_improvement_pct */
	GDN_AB_REGRESSION,   /* entirely below -max_regression_pct */
	GDN_AB_INCONCLUSIVE, /* neither, and wider than the band */
};
const char *gdn_abstat_verdict_name(enum gdn_abstat_verdict v);

struct gdn_abstat {
	size_t pairs;
	double improvement_pct; /* point estimate; positive is better */
	double lo_pct, hi_pct;	/* the confidence interval of the improvement */
	double confidence;	/* of the interval (after the sequential adjustment) */
	long resamples;
};

#define GDN_ABSTAT_RESAMPLES 4000

/*
 * The improvement of B over A from n pairs (a[i], b[i] > 0; n >= 1):
 * (B/A - 1) x 100 when higher is better, (A/B - 1) x 100 when lower is.
 * `confidence` in (0, 1); `seed` makes the bootstrap deterministic.
 * Returns 0, or -1 when n is 0 or a value is not finite and positive.
 */
int gdn_abstat_ratio_ci(const double *a, const double *b, size_t n, bool lower_is_better,
			double confidence, unsigned long long seed, struct gdn_abstat *out);

/*
 * Classify an interval against the band [-max_regression_pct,
 * +min_improvement_pct]; always inconclusive on fewer than 2 pairs.
 */
enum gdn_abstat_verdict gdn_abstat_classify(const struct gdn_abstat *s, double min_improvement_pct,
					    double max_regression_pct);

/*
 * The per-look confidence when up to `looks` intervals are computed in a
 * sequential test (Bonferroni): 1 - (1 - confidence) / looks.
 */
double gdn_abstat_look_confidence(double confidence, long looks);

#endif
