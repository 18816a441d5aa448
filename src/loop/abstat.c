/*
 * The statistics of interleaved A/B measurement (abstat.h): the paired
 * log-ratio mean and its percentile bootstrap interval, with a seeded
 * xorshift generator so that a decision is reproducible.
 */
#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/abstat.h"
#include "gdnctl/xalloc.h"

const char *gdn_abstat_verdict_name(enum gdn_abstat_verdict v)
{
	static const char *const names[] = {"within", "promote", "regression", "inconclusive"};

	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

static unsigned long long next_rand(unsigned long long *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* the q-quantile (0 <= q <= 1) of sorted v[0..n-1], linear interpolation */
static double quantile(const double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)floor(pos);
	double f = pos - (double)i;

	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + f * (v[i + 1] - v[i]);
}

/* the standard normal quantile of p in (0, 1), by bisection on erfc */
static double normal_quantile(double p)
{
	double lo = -40, hi = 40;

	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (0.5 * erfc(-mid / M_SQRT2) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* Student's t quantile from the normal one z, nu degrees of freedom (Cornish-Fisher) */
static double t_from_z(double z, double nu)
{
	double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;

	return z + (z3 + z) / (4 * nu) + (5 * z5 + 16 * z3 + 3 * z) / (96 * nu * nu) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * nu * nu * nu);
}

static double to_pct(double mean_log, bool lower_is_better)
{
	return (exp(lower_is_better ? -mean_log : mean_log) - 1.0) * 100.0;
}

int gdn_abstat_ratio_ci(const double *a, const double *b, size_t n, bool lower_is_better,
			double confidence, unsigned long long seed, struct gdn_abstat *out)
{
	double *lr, *means, sum = 0, scale;
	unsigned long long s = seed ? seed : 0x9e3779b97f4a7c15ULL;
	long r, nres = GDN_ABSTAT_RESAMPLES;

	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(a[i]) || !isfinite(b[i]) || a[i] <= 0 || b[i] <= 0)
			return -1;
	lr = xmalloc(st_mult(n, sizeof(*lr)));
	means = xmalloc(st_mult((size_t)nres, sizeof(*means)));
	for (size_t i = 0; i < n; i++) {
		lr[i] = log(b[i] / a[i]);
		sum += lr[i];
	}
	out->pairs = n;
	out->improvement_pct = to_pct(sum / (double)n, lower_is_better);
	out->confidence = confidence;
	out->resamples = nres;
	/*
	 * The percentile bootstrap is too narrow on few pairs: the resampled
	 * deviations are widened by sqrt(n / (n - 1)) (the unbiased variance)
	 * and by t(n - 1) / z at the interval's quantile (Student's t).
	 */
	scale = 1.0;
	if (n > 1) {
		double z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);

		scale = sqrt((double)n / (double)(n - 1)) * t_from_z(z, (double)(n - 1)) / z;
	}
	for (r = 0; r < nres; r++) {
		double m = 0;

		for (size_t i = 0; i < n; i++)
			m += lr[next_rand(&s) % n];
		m /= (double)n;
		means[r] = sum / (double)n + (m - sum / (double)n) * scale;
	}
	qsort(means, (size_t)nres, sizeof(*means), cmp_double);
	{
		double lo = quantile(means, (size_t)nres, (1.0 - confidence) / 2.0);
		double hi = quantile(means, (size_t)nres, 1.0 - (1.0 - confidence) / 2.0);
		double plo = to_pct(lo, lower_is_better), phi = to_pct(hi, lower_is_better);

		out->lo_pct = plo < phi ? plo : phi;
		out->hi_pct = plo < phi ? phi : plo;
	}
	free(lr);
	free(means);
	return 0;
}

enum gdn_abstat_verdict gdn_abstat_classify(const struct gdn_abstat *s, double min_improvement_pct,
					    double max_regression_pct)
{
	if (s->pairs < 2) /* one pair says nothing of the noise */
		return GDN_AB_INCONCLUSIVE;
	if (s->lo_pct > min_improvement_pct)
		return GDN_AB_PROMOTE;
	if (s->hi_pct < -max_regression_pct)
		return GDN_AB_REGRESSION;
	if (s->hi_pct - s->lo_pct > min_improvement_pct + max_regression_pct)
		return GDN_AB_INCONCLUSIVE;
	return GDN_AB_WITHIN;
}

double gdn_abstat_look_confidence(double confidence, long looks)
{
	return looks > 1 ? 1.0 - (1.0 - confidence) / (double)looks : confidence;
}
