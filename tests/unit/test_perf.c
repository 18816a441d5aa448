/* Unit tests for the performance policy: extraction, gates, noise, decisions, state file. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/wandb.h"
#include "gdnctl/perf.h"
#include "gdnctl/abstat.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"

static const char *const all_policies[] = {"revert-count-failure", "revert-continue", "fail",
					   "count-failure", "continue"};

static int cli(const char *text, const char *metric, double *v)
{
	return gdn_perf_parse_cli_metric(text, strlen(text), metric, v);
}

static void test_cli_parse(void **unused)
{
	const char *levanter =
	    "INFO step 10 {'throughput/mfu': 40.1, 'throughput/tokens_per_second': 12345.6}\n"
	    "wandb:    throughput/duration 0.16709\n"
	    "INFO step 20 {'throughput/mfu': 41.23, 'throughput/tokens_per_second': 12500,\n"
	    "wandb: Run summary: throughput/mfu 0.4123\n";
	double v = 0;

	(void)unused;
	assert_int_equal(cli("throughput/mfu 0.4123", "throughput/mfu", &v), 0);
	assert_true(v == 0.4123);
	assert_int_equal(cli("'throughput/mfu': 41.23,", "throughput/mfu", &v), 0);
	assert_true(v == 41.23);
	assert_int_equal(cli(levanter, "throughput/mfu", &v), 0);
	assert_true(v == 0.4123);
	assert_int_equal(cli(levanter, "throughput/tokens_per_second", &v), 0);
	assert_true(v == 12500);
	assert_int_equal(cli(levanter, "throughput/duration", &v), 0);
	assert_true(v == 0.16709);
	assert_int_equal(cli("throughput/mfu=5.1", "throughput/mfu", &v), 0);
	assert_true(v == 5.1);
	assert_int_equal(cli("throughput/mfu: 5.1e-1", "throughput/mfu", &v), 0);
	assert_true(v == 0.51);
	assert_int_equal(cli("throughput/mfu=-.5e+2x", "throughput/mfu", &v), 0);
	assert_true(v == -50);
	/* the skip class stops at 'e': "reached" does not parse */
	assert_int_equal(cli("throughput/mfu reached 5.1", "throughput/mfu", &v), GDN_ENOTFOUND);
	/* a later non-matching occurrence does not hide the earlier match */
	assert_int_equal(cli("throughput/mfu 3\nthroughput/mfu reached", "throughput/mfu", &v), 0);
	assert_true(v == 3);
	assert_int_equal(cli("throughput/mfu 1e999", "throughput/mfu", &v), GDN_ENOTFOUND);
	assert_int_equal(cli("nothing here", "throughput/mfu", &v), GDN_ENOTFOUND);
	assert_int_equal(cli("throughput/mfu", "throughput/mfu", &v), GDN_ENOTFOUND);
	assert_int_equal(cli("x 1", "", &v), GDN_ENOTFOUND);
}

/* ---- helpers ---- */

static void add_values(struct gdn_perf_measurement *m, const double *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		gdn_perf_sample_set_value(gdn_perf_measurement_add(m), "cli", v[i]);
}

/* Decide on one commit with the given values; returns the decision. */
static enum gdn_perf_decision decide_v(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				       const char *commit, const double *v, size_t n,
				       struct gdn_perf_verdict *out)
{
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	add_values(&m, v, n);
	m.timestamp_unix = 1700000000;
	gdn_perf_verdict_release(out);
	assert_int_equal(gdn_perf_decide(c, st, commit, &m, out, &err), 0);
	gdn_perf_measurement_release(&m);
	return out->decision;
}

static enum gdn_perf_decision decide1(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				      const char *commit, double v, struct gdn_perf_verdict *out)
{
	return decide_v(c, st, commit, &v, 1, out);
}

static const char *champion_commit(const struct gdn_perf_state *st)
{
	return json_string_value(json_object_get(gdn_perf_state_champion(st), "commit"));
}

static json_t *last_record(const struct gdn_perf_state *st)
{
	json_t *h = json_object_get(st->doc, "history");

	return json_array_get(h, json_array_size(h) - 1);
}

static bool has_reason(const struct gdn_perf_verdict *v, const char *needle)
{
	size_t i;

	for (i = 0; i < v->reasons.nr; i++)
		if (strstr(v->reasons.v[i], needle))
			return true;
	return false;
}

/* ---- decisions ---- */

static void test_baseline_then_promoted(void **unused)
{
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

	(void)unused;
	gdn_perf_config_init(&c);
	gdn_perf_gates_add_defaults(&c.gates);
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(decide1(&c, &st, "aaaaaaaaaaaaaaaa", 4.0, &v), GDN_PERF_BASELINE);
	assert_false(v.action.revert || v.action.count_failure || v.action.stop);
	assert_string_equal(champion_commit(&st), "aaaaaaaaaaaaaaaa");
	assert_true(
	    has_reason(&v, "performance baseline initialized: throughput/mfu=4 @ aaaaaaaaaaaa"));
	assert_int_equal(decide1(&c, &st, "bbbb", 4.2, &v), GDN_PERF_PROMOTED);
	assert_true(fabs(v.improvement_pct - 5.0) < 1e-9);
	assert_string_equal(champion_commit(&st), "bbbb");
	assert_string_equal(v.champion_commit, "aaaaaaaaaaaaaaaa");
	assert_string_equal(json_string_value(json_object_get(last_record(&st), "decision")),
			    "promoted");
	/* the 5% win skipped the gates (no traces anyway) */
	assert_true(has_reason(&v, "gate: skipped"));
	assert_false(v.action.revert || v.action.count_failure || v.action.stop);
	assert_int_equal(json_array_size(json_object_get(st.doc, "history")), 2);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

static void ab_fill(struct gdn_perf_measurement *m, const double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gdn_perf_sample_set_value(gdn_perf_measurement_add(m), "cli", v[i]);
}

/* --perf-ab: the interval decides, and the record keeps it under "ab" */
static void test_ab_decisions(void **unused)
{
	static const double champ[] = {1.00, 1.10, 0.95, 1.05};
	static const double win[] = {1.08, 1.19, 1.03, 1.13};  /* +8% pair by pair */
	static const double noop[] = {1.01, 1.09, 0.96, 1.04}; /* within +-1% */
	static const double loss[] = {0.90, 0.99, 0.86, 0.95}; /* -10% */
	const double *cands[] = {win, noop, loss};
	const enum gdn_perf_decision want[] = {GDN_PERF_PROMOTED, GDN_PERF_WITHIN_THRESHOLD,
					       GDN_PERF_REGRESSION};
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

	(void)unused;
	gdn_perf_config_init(&c);
	for (size_t k = 0; k < 3; k++) {
		struct gdn_perf_measurement cm = {0}, m = {0};
		struct gdn_abstat ab;
		json_t *rec;
		int verdict;

		gdn_perf_state_init(&st, NULL);
		assert_int_equal(decide1(&c, &st, "aaaa", 1.0, &v), GDN_PERF_BASELINE);
		ab_fill(&cm, champ, 4);
		ab_fill(&m, cands[k], 4);
		assert_int_equal(gdn_perf_ab_stat(&c, &cm, &m, 0.95, 1, &ab, &verdict), 0);
		assert_int_equal(ab.pairs, 4);
		assert_int_equal(
		    gdn_perf_decide_ab(&c, &st, "bbbb", &m, &cm, &ab, verdict, &v, NULL), 0);
		assert_int_equal(v.decision, want[k]);
		assert_true(v.ab && v.pairs == 4 && v.ci_low_pct <= v.improvement_pct &&
			    v.improvement_pct <= v.ci_high_pct);
		rec = last_record(&st);
		assert_int_equal(
		    json_integer_value(json_object_get(json_object_get(rec, "ab"), "pairs")), 4);
		assert_int_equal(json_array_size(json_object_get(json_object_get(rec, "ab"),
								 "champion_samples")),
				 4);
		assert_true(has_reason(&v, "A/B pairs"));
		if (k == 0)
			assert_string_equal(champion_commit(&st), "bbbb");
		else
			assert_string_equal(champion_commit(&st), "aaaa");
		gdn_perf_measurement_release(&cm);
		gdn_perf_measurement_release(&m);
		gdn_perf_state_release(&st);
	}
	gdn_perf_verdict_release(&v);
	gdn_perf_config_release(&c);
}

static void test_regression_reverts(void **unused)
{
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

	(void)unused;
	gdn_perf_config_init(&c);
	gdn_perf_state_init(&st, NULL);
	decide1(&c, &st, "base", 4.0, &v);
	assert_int_equal(decide1(&c, &st, "bad", 3.0, &v), GDN_PERF_REGRESSION);
	assert_true(fabs(v.delta_pct + 25.0) < 1e-9);
	assert_true(v.action.revert && v.action.count_failure && !v.action.stop);
	assert_string_equal(champion_commit(&st), "base");
	assert_true(has_reason(&v, "performance regression detected vs champion: 4 -> 3 (-25.00%"));
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

struct boundary_case {
	const char *metric;
	enum gdn_perf_direction dir;
	double champ, cand;
	enum gdn_perf_decision want;
};

static void test_thresholds_at_boundary(void **unused)
{
	static const struct boundary_case cases[] = {
	    {"throughput/mfu", GDN_PERF_AUTO, 100, 100.25, GDN_PERF_PROMOTED},
	    {"throughput/mfu", GDN_PERF_AUTO, 100, 100.24, GDN_PERF_WITHIN_THRESHOLD},
	    {"throughput/mfu", GDN_PERF_AUTO, 100, 99.0, GDN_PERF_REGRESSION},
	    {"throughput/mfu", GDN_PERF_AUTO, 100, 99.01, GDN_PERF_WITHIN_THRESHOLD},
	    {"throughput/mfu", GDN_PERF_AUTO, 100, 100, GDN_PERF_WITHIN_THRESHOLD},
	    {"throughput/mfu", GDN_PERF_LOWER, 100, 99.75, GDN_PERF_PROMOTED},
	    {"throughput/mfu", GDN_PERF_LOWER, 100, 101, GDN_PERF_REGRESSION},
	    {"throughput/duration", GDN_PERF_AUTO, 0.2, 0.1995, GDN_PERF_PROMOTED},
	    {"throughput/duration", GDN_PERF_AUTO, 0.2, 0.202, GDN_PERF_REGRESSION},
	    {"throughput/duration", GDN_PERF_HIGHER, 0.2, 0.202, GDN_PERF_PROMOTED},
	    {"trace/step_ms", GDN_PERF_AUTO, 160, 150, GDN_PERF_PROMOTED},
	    {"trace/step_ms", GDN_PERF_AUTO, 160, 170, GDN_PERF_REGRESSION},
	    {"trace/category/while_ms", GDN_PERF_AUTO, 10, 10.01, GDN_PERF_WITHIN_THRESHOLD},
	    {"trace/op/fusion.1_ms", GDN_PERF_HIGHER, 10, 9, GDN_PERF_REGRESSION},
	    {"throughput/mfu", GDN_PERF_AUTO, 0, 0, GDN_PERF_WITHIN_THRESHOLD},
	    {"throughput/mfu", GDN_PERF_AUTO, 0, 1, GDN_PERF_PROMOTED},
	    {"throughput/mfu", GDN_PERF_AUTO, -2, -1, GDN_PERF_PROMOTED},
	};
	size_t i;

	(void)unused;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct gdn_perf_config c;
		struct gdn_perf_state st;
		struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

		gdn_perf_config_init(&c);
		c.metric = cases[i].metric;
		c.direction = cases[i].dir;
		gdn_perf_state_init(&st, NULL);
		decide1(&c, &st, "champ", cases[i].champ, &v);
		if (decide1(&c, &st, "cand", cases[i].cand, &v) != cases[i].want)
			fail_msg("case %zu: %s %g -> %g gave %s", i, cases[i].metric,
				 cases[i].champ, cases[i].cand, gdn_perf_decision_name(v.decision));
		gdn_perf_verdict_release(&v);
		gdn_perf_state_release(&st);
	}
}

static void test_policy_actions(void **unused)
{
	/* revert, count_failure, stop for each policy (order of all_policies) */
	static const bool want[][3] = {
	    {true, true, false},  {true, false, false},	 {false, true, true},
	    {false, true, false}, {false, false, false},
	};
	static const enum gdn_perf_decision bad[] = {GDN_PERF_REGRESSION, GDN_PERF_GATE_REGRESSION,
						     GDN_PERF_UNSCORED};
	static const enum gdn_perf_decision good[] = {GDN_PERF_BASELINE, GDN_PERF_PROMOTED,
						      GDN_PERF_WITHIN_THRESHOLD};
	size_t p, d;

	(void)unused;
	for (p = 0; p < ARRAY_SIZE(all_policies); p++) {
		int pol;

		assert_int_equal(gdn_enum_parse(gdn_perf_policy_enum, all_policies[p], &pol), 0);
		assert_string_equal(gdn_perf_policy_name(pol), all_policies[p]);
		for (d = 0; d < ARRAY_SIZE(bad); d++) {
			struct gdn_perf_action a = gdn_perf_action_for(bad[d], pol);

			assert_int_equal(a.revert, want[p][0]);
			assert_int_equal(a.count_failure, want[p][1]);
			assert_int_equal(a.stop, want[p][2]);
		}
		for (d = 0; d < ARRAY_SIZE(good); d++) {
			struct gdn_perf_action a = gdn_perf_action_for(good[d], pol);

			assert_false(a.revert || a.count_failure || a.stop);
		}
	}
	assert_int_equal(gdn_enum_parse(gdn_perf_policy_enum, "revert", &(int){0}), -1);
}

static void test_policies_end_to_end(void **unused)
{
	size_t p;

	(void)unused;
	for (p = 0; p < ARRAY_SIZE(all_policies); p++) {
		struct gdn_perf_config c;
		struct gdn_perf_state st;
		struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
		struct gdn_perf_action want;

		int pol;

		gdn_perf_config_init(&c);
		assert_int_equal(gdn_enum_parse(gdn_perf_policy_enum, all_policies[p], &pol), 0);
		c.policy = (enum gdn_perf_policy)pol;
		gdn_perf_state_init(&st, NULL);
		decide1(&c, &st, "base", 4.0, &v);
		/* regression */
		assert_int_equal(decide1(&c, &st, "reg", 3.0, &v), GDN_PERF_REGRESSION);
		want = gdn_perf_action_for(GDN_PERF_REGRESSION, c.policy);
		assert_memory_equal(&v.action, &want, sizeof(want));
		/*
		 * missing metric: follows the policy, never aborts unless "fail"
		 * (docs/compatibility.md, "Bugs of the original that gdnctl fixes")
		 */
		assert_int_equal(decide_v(&c, &st, "miss", NULL, 0, &v), GDN_PERF_UNSCORED);
		assert_int_equal(v.action.stop, c.policy == GDN_PERF_FAIL);
		assert_int_equal(v.action.revert, p < 2);
		assert_true(
		    has_reason(&v, "required performance metric is unavailable: throughput/mfu"));
		assert_string_equal(champion_commit(&st), "base");
		assert_string_equal(
		    json_string_value(json_object_get(last_record(&st), "decision")), "unscored");
		assert_true(json_is_null(json_object_get(last_record(&st), "metric_value")));
		/* within the hold band: kept under every policy */
		assert_int_equal(decide1(&c, &st, "hold", 4.001, &v), GDN_PERF_WITHIN_THRESHOLD);
		assert_false(v.action.revert || v.action.count_failure || v.action.stop);
		assert_string_equal(champion_commit(&st), "base");
		gdn_perf_verdict_release(&v);
		gdn_perf_state_release(&st);
		gdn_perf_config_release(&c);
	}
}

/* --perf-repeat-stat best: the highest (or, lower-is-better, the lowest) sample decides. */
static void test_repeat_stat_best(void **unused)
{
	/* two noisy slow-downs among five runs: the median moves, the best does not */
	double base[] = {10.0, 6.0, 10.1, 5.9, 9.9}, cand[] = {10.2, 10.0, 6.1, 10.1, 6.0};
	int s = GDN_PERF_STAT_MEDIAN;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	struct gdn_perf_config c;
	struct gdn_perf_state st;

	(void)unused;
	assert_int_equal(gdn_enum_parse(gdn_perf_stat_enum, "best", &s), 0);
	assert_int_equal(s, GDN_PERF_STAT_BEST);
	assert_int_equal(gdn_enum_parse(gdn_perf_stat_enum, "mean", &s), -1);
	assert_string_equal(gdn_perf_stat_name(GDN_PERF_STAT_MEDIAN), "median");
	gdn_perf_config_init(&c);
	assert_int_equal(c.repeat_stat, GDN_PERF_STAT_MEDIAN);
	c.min_improvement_pct = 5;
	c.max_regression_pct = 5;
	/* median: 9.9 -> 10.0, within; an unlucky champion median would have promoted */
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(decide_v(&c, &st, "base", base, 5, &v), GDN_PERF_BASELINE);
	assert_true(v.candidate == 9.9);
	gdn_perf_state_release(&st);
	c.repeat_stat = GDN_PERF_STAT_BEST;
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(decide_v(&c, &st, "base", base, 5, &v), GDN_PERF_BASELINE);
	assert_true(v.candidate == 10.1);
	assert_true(json_number_value(
			json_object_get(gdn_perf_state_champion(&st), "metric_value")) == 10.1);
	assert_int_equal(decide_v(&c, &st, "cand", cand, 5, &v), GDN_PERF_WITHIN_THRESHOLD);
	assert_true(v.candidate == 10.2 && v.champion == 10.1);
	gdn_perf_state_release(&st);
	/* lower is better: the lowest sample is the best */
	c.metric = "trace/step_ms";
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(decide_v(&c, &st, "base", base, 5, &v), GDN_PERF_BASELINE);
	assert_true(v.candidate == 5.9);
	gdn_perf_state_release(&st);
	gdn_perf_verdict_release(&v);
	gdn_perf_config_release(&c);
}

/* --perf-within-threshold-policy: keep (the default, the original) or revert without a failure. */
static void test_within_threshold_policy(void **unused)
{
	int w = GDN_PERF_WITHIN_KEEP;
	size_t p;

	(void)unused;
	assert_int_equal(gdn_enum_parse(gdn_perf_within_enum, "revert", &w), 0);
	assert_int_equal(w, GDN_PERF_WITHIN_REVERT);
	assert_int_equal(gdn_enum_parse(gdn_perf_within_enum, "keep", &w), 0);
	assert_int_equal(w, GDN_PERF_WITHIN_KEEP);
	assert_int_equal(gdn_enum_parse(gdn_perf_within_enum, "discard", &w), -1);
	assert_string_equal(gdn_perf_within_name(GDN_PERF_WITHIN_REVERT), "revert");
	for (p = 0; p < ARRAY_SIZE(all_policies); p++) {
		struct gdn_perf_config c;
		struct gdn_perf_state st;
		struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
		struct gdn_perf_action want;
		int pol;

		gdn_perf_config_init(&c);
		assert_int_equal(c.within_policy, GDN_PERF_WITHIN_KEEP);
		assert_int_equal(gdn_enum_parse(gdn_perf_policy_enum, all_policies[p], &pol), 0);
		c.policy = (enum gdn_perf_policy)pol;
		c.within_policy = GDN_PERF_WITHIN_REVERT;
		gdn_perf_state_init(&st, NULL);
		assert_int_equal(decide1(&c, &st, "base", 4.0, &v), GDN_PERF_BASELINE);
		assert_false(v.action.revert);
		/* within the band: reverted, never counted or stopped */
		assert_int_equal(decide1(&c, &st, "hold", 4.001, &v), GDN_PERF_WITHIN_THRESHOLD);
		assert_true(v.action.revert);
		assert_false(v.action.count_failure || v.action.stop);
		assert_string_equal(champion_commit(&st), "base");
		/* a promotion is still kept; a regression still follows the policy */
		assert_int_equal(decide1(&c, &st, "fast", 8.0, &v), GDN_PERF_PROMOTED);
		assert_false(v.action.revert || v.action.count_failure || v.action.stop);
		assert_string_equal(champion_commit(&st), "fast");
		assert_int_equal(decide1(&c, &st, "slow", 2.0, &v), GDN_PERF_REGRESSION);
		want = gdn_perf_action_for(GDN_PERF_REGRESSION, c.policy);
		assert_memory_equal(&v.action, &want, sizeof(want));
		/* keep: the same hold is kept */
		c.within_policy = GDN_PERF_WITHIN_KEEP;
		assert_int_equal(decide1(&c, &st, "hold2", 8.001, &v), GDN_PERF_WITHIN_THRESHOLD);
		assert_false(v.action.revert || v.action.count_failure || v.action.stop);
		want = gdn_perf_action_config(GDN_PERF_WITHIN_THRESHOLD, &c);
		assert_memory_equal(&v.action, &want, sizeof(want));
		gdn_perf_verdict_release(&v);
		gdn_perf_state_release(&st);
		gdn_perf_config_release(&c);
	}
}

static void test_missing_metric_without_champion(void **unused)
{
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_metric wm = {0};

	(void)unused;
	gdn_perf_config_init(&c);
	c.policy = GDN_PERF_CONTINUE;
	gdn_perf_state_init(&st, NULL);
	/* a W&B metric that is not ok and a cli output without it: unscored */
	wm.status = GDN_METRIC_NONFINITE;
	assert_int_equal(gdn_perf_sample_set_wandb(gdn_perf_measurement_add(&m), &wm),
			 GDN_ENOTFOUND);
	assert_int_equal(gdn_perf_sample_set_cli(gdn_perf_measurement_add(&m), c.metric, "x", 1),
			 GDN_ENOTFOUND);
	assert_int_equal(gdn_perf_decide(&c, &st, "c1", &m, &v, &err), 0);
	assert_int_equal(v.decision, GDN_PERF_UNSCORED);
	assert_false(v.action.stop || v.action.revert || v.action.count_failure);
	assert_null(gdn_perf_state_champion(&st));
	/* then a W&B value scores the next commit as the baseline */
	gdn_perf_measurement_release(&m);
	wm.status = GDN_METRIC_OK;
	wm.value = 41.5;
	assert_int_equal(gdn_perf_sample_set_wandb(gdn_perf_measurement_add(&m), &wm), 0);
	gdn_perf_verdict_release(&v);
	assert_int_equal(gdn_perf_decide(&c, &st, "c2", &m, &v, &err), 0);
	assert_int_equal(v.decision, GDN_PERF_BASELINE);
	assert_string_equal(
	    json_string_value(json_object_get(gdn_perf_state_champion(&st), "metric_source")),
	    "wandb");
	gdn_perf_measurement_release(&m);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

/* ---- gates ---- */

/* A sample with a value and trace figures. */
static void add_traced(struct gdn_perf_measurement *m, double value, double step_ms,
		       double while_ms, double cond_ms)
{
	struct gdn_perf_sample *s = gdn_perf_measurement_add(m);
	json_t *cats = json_pack("{s:f, s:f}", "while", while_ms, "fusion", 20.0);

	if (cond_ms >= 0)
		json_object_set_new(cats, "conditional", json_real(cond_ms));
	gdn_perf_sample_set_value(s, "cli", value);
	s->trace = json_pack("{s:i, s:f, s:o, s:{s:f}}", "steps", 3, "step_ms", step_ms,
			     "categories", cats, "ops", "fusion.7", 1.5);
}

static enum gdn_perf_decision gate_run(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				       double value, double while_ms, double cond_ms,
				       struct gdn_perf_verdict *v)
{
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	add_traced(&m, value, 160, while_ms, cond_ms);
	gdn_perf_verdict_release(v);
	assert_int_equal(gdn_perf_decide(c, st, "cand", &m, v, &err), 0);
	gdn_perf_measurement_release(&m);
	return v->decision;
}

static void gate_setup(struct gdn_perf_config *c, struct gdn_perf_state *st, double cond_ms)
{
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

	gdn_perf_config_init(c);
	gdn_perf_gates_add_defaults(&c->gates);
	gdn_perf_state_init(st, NULL);
	assert_int_equal(gate_run(c, st, 4.0, 0.0, cond_ms, &v), GDN_PERF_BASELINE);
	gdn_perf_verdict_release(&v);
}

static void test_gate_while_growth(void **unused)
{
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	json_t *gr;

	(void)unused;
	gate_setup(&c, &st, -1);
	/* +1% would promote, but `while` grew 31.5 ms/step */
	assert_int_equal(gate_run(&c, &st, 4.04, 31.5, -1, &v), GDN_PERF_GATE_REGRESSION);
	assert_true(
	    has_reason(&v, "gate: `while` grew 31.500 ms/step (0.000 -> 31.500, limit 5.000)"));
	assert_true(has_reason(&v, "performance gate triggered vs champion"));
	assert_true(v.action.revert && v.action.count_failure);
	assert_string_equal(champion_commit(&st), "cand"); /* the baseline, also "cand" */
	assert_int_equal(json_array_size(json_object_get(last_record(&st), "control_gate_reasons")),
			 1);
	gr = json_array_get(json_object_get(last_record(&st), "control_gate_reasons"), 0);
	assert_non_null(strstr(json_string_value(gr), "`while` grew"));
	/* growth at the limit passes */
	assert_int_equal(gate_run(&c, &st, 4.0, 5.0, -1, &v), GDN_PERF_WITHIN_THRESHOLD);
	/* a regression with a gate failure is a gate_regression */
	assert_int_equal(gate_run(&c, &st, 3.0, 30, -1, &v), GDN_PERF_GATE_REGRESSION);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

static void test_gate_new_bucket(void **unused)
{
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

	(void)unused;
	gate_setup(&c, &st, -1);
	assert_int_equal(gate_run(&c, &st, 4.02, 0, 12.0, &v), GDN_PERF_GATE_REGRESSION);
	assert_true(
	    has_reason(&v, "gate: `conditional` is a new bucket of 12.000 ms/step (limit 5.000)"));
	/* small new bucket: fine */
	assert_int_equal(gate_run(&c, &st, 4.005, 0, 4.0, &v), GDN_PERF_WITHIN_THRESHOLD);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);

	/* present in the champion: not new, even when large */
	gate_setup(&c, &st, 1.0);
	assert_int_equal(gate_run(&c, &st, 4.005, 0, 12.0, &v), GDN_PERF_WITHIN_THRESHOLD);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

static void test_gate_override_by_large_win(void **unused)
{
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

	(void)unused;
	gate_setup(&c, &st, -1);
	assert_int_equal(gate_run(&c, &st, 4.3, 31.5, 12, &v), GDN_PERF_PROMOTED);
	assert_true(has_reason(&v, "gate: skipped, metric win +7.50% >= 5.00%"));
	assert_false(has_reason(&v, "grew"));
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

static void test_gate_without_traces(void **unused)
{
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;

	(void)unused;
	gdn_perf_config_init(&c);
	gdn_perf_gates_add_defaults(&c.gates);
	gdn_perf_state_init(&st, NULL);
	decide1(&c, &st, "a", 4.0, &v);
	assert_int_equal(decide1(&c, &st, "b", 4.04, &v), GDN_PERF_PROMOTED);
	assert_true(has_reason(&v, "gate: not evaluated, no trace figures for the candidate"));
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

static void test_gate_parse(void **unused)
{
	static const char *const bad[] = {
	    "",
	    "category:while",
	    "while max_increase_ms=5",
	    "category: max_increase_ms=5",
	    "category:while max_increase=5",
	    "category:while max_increase_ms=-1",
	    "category:while max_increase_ms=abc",
	    "category:while max_increase_ms=",
	    "category:while max_increase_ms=inf",
	    "metric_win_pct=x",
	    "foo=1",
	};
	struct gdn_perf_gates g = GDN_PERF_GATES_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec desc = STRVEC_INIT;
	size_t i;

	(void)unused;
	assert_int_equal(
	    gdn_perf_gate_parse(&g, "category:loop fusion max_increase_ms=2 new_max_ms=1", &err),
	    0);
	assert_int_equal(gdn_perf_gate_parse(&g, "op:fusion.7 new_max_ms=0.5", &err), 0);
	assert_int_equal(gdn_perf_gate_parse(&g, "step max_increase_ms=3", &err), 0);
	assert_int_equal(gdn_perf_gate_parse(&g, "metric_win_pct=7.5", &err), 0);
	assert_int_equal(g.nr, 4);
	assert_true(g.override_pct == 7.5);
	assert_string_equal(g.v[0].name, "loop fusion");
	assert_int_equal(g.v[1].kind, GDN_PERF_GATE_NEW_MAX_MS);
	assert_int_equal(g.v[2].bucket, GDN_PERF_BUCKET_OP);
	assert_null(g.v[3].name);
	for (i = 0; i < g.nr; i++)
		gdn_perf_gate_describe(&g.v[i], &desc);
	assert_string_equal(desc.v[0], "category:loop fusion max_increase_ms=2");
	assert_string_equal(desc.v[2], "op:fusion.7 new_max_ms=0.5");
	assert_string_equal(desc.v[3], "step max_increase_ms=3");
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		gdn_err_clear(&err);
		if (gdn_perf_gate_parse(&g, bad[i], &err) != GDN_EUSAGE)
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(strstr(err.msg, "gate rule '"));
	}
	assert_int_equal(g.nr, 4);
	gdn_perf_gate_parse(&g, "category:while max_increase=5", &err);
	assert_string_equal(err.msg, "gate rule 'category:while max_increase=5': unknown setting "
				     "'max_increase' (max_increase_ms, new_max_ms)");
	strvec_clear(&desc);
	gdn_perf_gates_release(&g);
}

/* ---- noise ---- */

static void test_noise_medians_and_confidence(void **unused)
{
	static const double champ[] = {4.0, 4.1, 3.9};
	static const double noisy[] = {4.3, 3.9, 4.15};
	static const double tight[] = {4.2, 4.21, 9.0};
	struct gdn_perf_config c;
	struct gdn_perf_state st;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	json_t *samples;

	(void)unused;
	gdn_perf_config_init(&c);
	c.min_confidence = 2.0;
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(decide_v(&c, &st, "base", champ, 3, &v), GDN_PERF_BASELINE);
	assert_true(v.candidate == 4.0);
	/* +3.75% on medians, but the spread is wider: held */
	assert_int_equal(decide_v(&c, &st, "noisy", noisy, 3, &v), GDN_PERF_WITHIN_THRESHOLD);
	assert_true(v.candidate == 4.15);
	assert_false(v.confident);
	/* 2 * 1.4826 * (0.15 + 0.1) / sqrt(3) */
	assert_true(fabs(v.noise - 2 * 1.4826 * 0.25 / sqrt(3.0)) < 1e-9);
	assert_true(has_reason(&v, "difference within noise"));
	samples = json_object_get(last_record(&st), "samples");
	assert_int_equal(json_array_size(samples), 3);
	assert_true(json_real_value(json_object_get(json_array_get(samples, 0), "value")) == 4.3);
	/* the outlier does not move the median: 4.21 (+5.25%), confident */
	assert_int_equal(decide_v(&c, &st, "tight", tight, 3, &v), GDN_PERF_PROMOTED);
	assert_true(v.candidate == 4.21);
	assert_true(v.confident);
	/* without the confidence rule the noisy win is promoted */
	c.min_confidence = 0;
	assert_int_equal(decide_v(&c, &st, "noisy2", (const double[]){4.5, 4.0, 4.4}, 3, &v),
			 GDN_PERF_PROMOTED);
	/* a noisy regression within noise is not a regression */
	c.min_confidence = 3;
	assert_int_equal(decide_v(&c, &st, "noisyreg", (const double[]){3.0, 4.4, 4.3}, 3, &v),
			 GDN_PERF_WITHIN_THRESHOLD);
	/* champion re-profiles widen the champion's spread and change its median */
	add_values(&m, (const double[]){5.0, 5.2}, 2);
	assert_int_equal(gdn_perf_champion_add_samples(&c, &st, &m, &err), 0);
	assert_int_equal(json_array_size(json_object_get(gdn_perf_state_champion(&st), "samples")),
			 5);
	assert_true(json_number_value(
			json_object_get(gdn_perf_state_champion(&st), "metric_value")) == 4.5);
	gdn_perf_measurement_release(&m);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(gdn_perf_champion_add_samples(&c, &st, &m, &err), GDN_ENOTFOUND);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

static void test_median_mad(void **unused)
{
	double a[] = {3, 1, 2}, b[] = {4, 1, 3, 2}, c[] = {1, 1, 2, 2, 4, 6, 9};

	(void)unused;
	assert_true(gdn_perf_median(a, 3) == 2);
	assert_true(gdn_perf_median(b, 4) == 2.5);
	assert_true(gdn_perf_mad(c, 7) == 1);
}

/* ---- trace metrics ---- */

static void test_trace_metrics(void **unused)
{
	struct gdn_trace_row cats[] = {
	    {"while", "", "", "", 4, 30 * GDN_PS_PER_US * 1000, 24 * GDN_PS_PER_US * 1000},
	    {"fusion", "", "", "", 9, 10 * GDN_PS_PER_US * 1000, 10 * GDN_PS_PER_US * 1000},
	};
	struct gdn_trace_row ops[] = {
	    {"fusion.7", "fusion", "", "", 9, 6 * GDN_PS_PER_US * 1000, 6 * GDN_PS_PER_US * 1000},
	    {"copy.1", "fusion", "", "", 9, 4 * GDN_PS_PER_US * 1000, 4 * GDN_PS_PER_US * 1000},
	};
	struct gdn_trace_summary s = GDN_TRACE_SUMMARY_INIT;
	struct gdn_perf_config c;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_perf_sample *smp;
	double v = -1;

	(void)unused;
	s.path = "t.json.gz";
	s.steps = 2;
	s.self = 34 * GDN_PS_PER_US * 1000;
	s.categories.v = cats;
	s.categories.nr = 2;
	s.ops.v = ops;
	s.ops.nr = 2;
	assert_int_equal(gdn_perf_trace_metric(&s, "trace/step_ms", &v, &err), 0);
	assert_true(v == 17);
	assert_int_equal(gdn_perf_trace_metric(&s, "trace/category/while_ms", &v, &err), 0);
	assert_true(v == 12);
	assert_int_equal(gdn_perf_trace_metric(&s, "trace/op/fusion.7_ms", &v, &err), 0);
	assert_true(v == 3);
	assert_int_equal(gdn_perf_trace_metric(&s, "trace/category/conditional_ms", &v, &err), 0);
	assert_true(v == 0);
	assert_int_equal(gdn_perf_trace_metric(&s, "trace/bogus", &v, &err), GDN_EUSAGE);
	assert_int_equal(gdn_perf_trace_metric(&s, "trace/op/_ms", &v, &err), GDN_EUSAGE);

	gdn_perf_config_init(&c);
	c.metric = "trace/op/copy.1_ms";
	assert_int_equal(gdn_perf_config_check(&c, &err), 0);
	assert_int_equal(gdn_perf_direction_resolve(c.direction, c.metric), GDN_PERF_LOWER);
	assert_int_equal(gdn_perf_gate_parse(&c.gates, "op:fusion.7 max_increase_ms=1", &err), 0);
	smp = gdn_perf_measurement_add(&m);
	assert_int_equal(gdn_perf_sample_set_trace(smp, &c, &s, &err), 0);
	assert_true(smp->has_value && smp->value == 2);
	assert_string_equal(smp->source, "trace");
	assert_true(json_number_value(json_object_get(smp->trace, "step_ms")) == 17);
	assert_true(json_number_value(
			json_object_get(json_object_get(smp->trace, "categories"), "fusion")) == 5);
	/* only the ops named by the gates and the metric are kept */
	assert_int_equal(json_object_size(json_object_get(smp->trace, "ops")), 2);
	s.steps = 0;
	smp = gdn_perf_measurement_add(&m);
	assert_int_equal(gdn_perf_sample_set_trace(smp, &c, &s, &err), GDN_ENOTFOUND);
	assert_string_equal(err.msg, "trace 't.json.gz' has no steps");
	assert_false(smp->has_value);
	assert_int_equal(gdn_perf_trace_metric(&s, "trace/step_ms", &v, &err), GDN_ENOTFOUND);
	c.metric = "trace/category/x";
	assert_int_equal(gdn_perf_config_check(&c, &err), GDN_EUSAGE);
	c.metric = "throughput/mfu";
	c.max_regression_pct = -1;
	assert_int_equal(gdn_perf_config_check(&c, &err), GDN_EUSAGE);
	gdn_perf_measurement_release(&m);
	gdn_perf_config_release(&c);
}

/* ---- state file ---- */

static int parse_str(struct gdn_perf_state *st, const char *text, struct gdn_err *err)
{
	return gdn_perf_state_parse(st, text, strlen(text), "s.json", err);
}

static char *tmpdir_path(char *dir, const char *name)
{
	return xstrfmt("%s/%s", dir, name);
}

/* trace/step_ms: a run's steps are its samples; without a metric the baseline picks the ruler */
static void test_steps_as_samples(void **unused)
{
	struct gdn_trace_step steps[] = {
	    {0, 0, 3 * GDN_PS_PER_US * 1000, 2},
	    {1, 10, 5 * GDN_PS_PER_US * 1000, 2},
	    {2, 20, 4 * GDN_PS_PER_US * 1000, 2},
	};
	struct gdn_trace_summary s = GDN_TRACE_SUMMARY_INIT;
	struct gdn_perf_config c;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_perf_sample *smp;
	const char *why = NULL;
	bool decide = true;

	(void)unused;
	s.path = "t.xplane.pb";
	s.steps = 3;
	s.self = 12 * GDN_PS_PER_US * 1000;
	s.step_v = steps;
	s.step_nr = 3;
	gdn_perf_config_init(&c);
	c.metric = "trace/step_ms";
	smp = gdn_perf_measurement_add(&m);
	assert_int_equal(gdn_perf_sample_set_trace(smp, &c, &s, &err), 0);
	assert_true(smp->value == 4);
	assert_int_equal(gdn_perf_measurement_split_steps(&m, &c), 3);
	assert_int_equal(m.nr, 3);
	assert_true(m.v[0].value == 3 && m.v[1].value == 5 && m.v[2].value == 4);
	assert_non_null(m.v[0].trace);
	assert_null(m.v[1].trace);
	assert_string_equal(m.v[2].source, "trace");
	gdn_perf_measurement_release(&m);

	/* other metrics: one sample a run */
	c.metric = "trace/category/while_ms";
	smp = gdn_perf_measurement_add(&m);
	assert_int_equal(gdn_perf_sample_set_trace(smp, &c, &s, &err), 0);
	assert_int_equal(gdn_perf_measurement_split_steps(&m, &c), 1);
	assert_int_equal(m.nr, 1);
	gdn_perf_measurement_release(&m);

	/* the ruler */
	assert_string_equal(gdn_perf_ruler("x/y", false, true, &decide, &why), "x/y");
	assert_false(decide);
	assert_string_equal(why, "configured");
	assert_string_equal(gdn_perf_ruler(NULL, true, true, &decide, &why), "throughput/mfu");
	assert_false(decide);
	assert_string_equal(gdn_perf_ruler(NULL, false, true, &decide, &why), "throughput/mfu");
	assert_true(decide);
	c.metric = "throughput/mfu";
	smp = gdn_perf_measurement_add(&m);
	assert_int_equal(gdn_perf_sample_set_trace(smp, &c, &s, &err), 0);
	assert_false(smp->has_value);
	assert_true(gdn_perf_ruler_pick(&c, &m));
	assert_string_equal(c.metric, "trace/step_ms");
	assert_int_equal(m.nr, 3);
	assert_true(m.v[0].has_value && m.v[0].value == 3 && m.v[1].value == 5);
	gdn_perf_measurement_release(&m);
	/* a value printed by the profile keeps throughput/mfu */
	c.metric = "throughput/mfu";
	gdn_perf_sample_set_value(gdn_perf_measurement_add(&m), "cli", 7);
	assert_false(gdn_perf_ruler_pick(&c, &m));
	assert_string_equal(c.metric, "throughput/mfu");
	gdn_perf_measurement_release(&m);
	gdn_perf_config_release(&c);
}

static void test_state_round_trip(void **unused)
{
	char dir[] = "/tmp/gdnctl-test-perf-XXXXXX";
	struct gdn_perf_config c;
	struct gdn_perf_state st = GDN_PERF_STATE_INIT, back = GDN_PERF_STATE_INIT;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;
	char *path;
	json_t *champ, *rec;
	DIR *d;
	struct dirent *de;
	int files = 0;
	static const char *const v2_keys[] = {
	    "iteration",
	    "commit",
	    "metric",
	    "metric_value",
	    "metric_source",
	    "metric_points",
	    "metrics",
	    "run_url",
	    "timestamp_unix",
	    "decision",
	    "delta_vs_champion_pct",
	    "control_gate_reasons",
	    "samples",
	    "trace",
	    "reasons",
	};
	size_t i;

	(void)unused;
	assert_non_null(mkdtemp(dir));
	path = tmpdir_path(dir, "perf_state.json");
	gdn_perf_config_init(&c);
	gdn_perf_gates_add_defaults(&c.gates);
	assert_int_equal(gdn_perf_state_load(&st, path, &err), 0); /* missing: empty */
	assert_null(gdn_perf_state_champion(&st));
	m.iteration = 0;
	m.run_url = xstrdup("https://wandb.ai/e/p/runs/abc_1");
	add_traced(&m, 4.0, 160, 1, -1);
	add_traced(&m, 4.1, 161, 1, -1);
	assert_int_equal(gdn_perf_decide(&c, &st, "base", &m, &v, &err), 0);
	gdn_perf_measurement_release(&m);
	m.iteration = 1;
	add_traced(&m, 4.2, 159, 1, -1);
	gdn_perf_verdict_release(&v);
	assert_int_equal(gdn_perf_decide(&c, &st, "next", &m, &v, &err), 0);
	gdn_perf_measurement_release(&m);
	assert_int_equal(v.decision, GDN_PERF_PROMOTED);
	assert_int_equal(gdn_perf_state_save(&st, &err), 0);
	assert_int_equal(gdn_perf_state_save(&st, &err), 0); /* over an existing file */

	assert_int_equal(sbuf_read_file(&sb, path, 0, &err), 0);
	assert_true(sb.len > 2 && sb.buf[sb.len - 1] == '\n' && sb.buf[sb.len - 2] == '}');
	assert_non_null(strstr(sb.buf, "\n  \"champion\": {"));
	d = opendir(dir);
	while ((de = readdir(d)))
		files += de->d_name[0] != '.';
	closedir(d);
	assert_int_equal(files, 1); /* no temporary file left */

	assert_int_equal(gdn_perf_state_load(&back, path, &err), 0);
	assert_true(json_equal(back.doc, st.doc));
	assert_int_equal(json_integer_value(json_object_get(back.doc, "version")), 2);
	champ = gdn_perf_state_champion(&back);
	assert_string_equal(json_string_value(json_object_get(champ, "commit")), "next");
	rec = json_array_get(json_object_get(back.doc, "history"), 0);
	for (i = 0; i < ARRAY_SIZE(v2_keys); i++)
		if (!json_object_get(rec, v2_keys[i]) &&
		    strcmp(v2_keys[i], "delta_vs_champion_pct"))
			fail_msg("baseline record lacks '%s'", v2_keys[i]);
	assert_string_equal(json_string_value(json_object_get(rec, "decision")), "baseline");
	assert_true(json_number_value(json_object_get(rec, "metric_value")) == 4.05);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "metric_points"),
							    "throughput/mfu")),
			 2);
	assert_true(json_number_value(json_object_get(json_object_get(rec, "trace"), "step_ms")) ==
		    160.5);
	assert_string_equal(json_string_value(json_object_get(rec, "run_url")),
			    "https://wandb.ai/e/p/runs/abc_1");
	rec = json_array_get(json_object_get(back.doc, "history"), 1);
	for (i = 0; i < ARRAY_SIZE(v2_keys); i++)
		if (!json_object_get(rec, v2_keys[i]))
			fail_msg("promoted record lacks '%s'", v2_keys[i]);
	assert_string_equal(json_string_value(json_object_get(rec, "champion_commit")), "base");

	/* the loaded state decides like the saved one */
	gdn_perf_verdict_release(&v);
	assert_int_equal(decide1(&c, &back, "later", 3.0, &v), GDN_PERF_REGRESSION);

	unlink(path);
	rmdir(dir);
	free(path);
	sbuf_release(&sb);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_state_release(&back);
	gdn_perf_config_release(&c);
}

static void test_state_original_v2_and_v1(void **unused)
{
	/* a state file written by the Python tool */
	const char *orig =
	    "{\n  \"champion\": {\"commit\": \"c0ffee\", \"decision\": \"baseline\", \"metric\": "
	    "\"throughput/mfu\", \"metric_value\": 4.0, \"metric_source\": \"cli-output\", "
	    "\"hotspot_metrics\": {\"while_ms\": 0.0}},\n  \"history\": [{\"commit\": "
	    "\"c0ffee\"}],\n"
	    "  \"version\": 2\n}\n";
	struct gdn_perf_config c;
	struct gdn_perf_state st = GDN_PERF_STATE_INIT;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	(void)unused;
	gdn_perf_config_init(&c);
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(gdn_perf_state_parse(&st, orig, strlen(orig), "s.json", &err), 0);
	assert_int_equal(decide1(&c, &st, "new", 4.2, &v), GDN_PERF_PROMOTED);
	/* its unknown keys survive in the history */
	assert_non_null(
	    json_object_get(json_array_get(json_object_get(st.doc, "history"), 0), "commit"));
	gdn_perf_state_release(&st);

	/* version 1, no history, re-profiled champion without samples */
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(parse_str(&st,
				   "{\"version\": 1, \"champion\": {\"commit\": "
				   "\"x\", \"metric_value\": 2}}",
				   &err),
			 0);
	assert_int_equal(json_integer_value(json_object_get(st.doc, "version")), 2);
	assert_true(json_is_array(json_object_get(st.doc, "history")));
	add_values(&m, (const double[]){4.0}, 1);
	assert_int_equal(gdn_perf_champion_add_samples(&c, &st, &m, &err), 0);
	assert_true(
	    json_number_value(json_object_get(gdn_perf_state_champion(&st), "metric_value")) == 3);
	gdn_perf_measurement_release(&m);
	gdn_perf_state_release(&st);

	/* an invalid champion is replaced */
	gdn_perf_state_init(&st, NULL);
	assert_int_equal(parse_str(&st,
				   "{\"version\": 2, \"champion\": {\"commit\": "
				   "\"x\", \"metric_value\": \"4\"}}",
				   &err),
			 0);
	assert_int_equal(decide1(&c, &st, "y", 1.0, &v), GDN_PERF_BASELINE);
	assert_true(has_reason(&v, "champion record was invalid"));
	assert_string_equal(champion_commit(&st), "y");
	/* so is a champion of another metric */
	c.metric = "throughput/tokens_per_second";
	assert_int_equal(decide1(&c, &st, "z", 1.0, &v), GDN_PERF_BASELINE);
	gdn_perf_verdict_release(&v);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

static void test_state_corrupt(void **unused)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
	    {"", "perf state 'p.json' is not valid JSON"},
	    {"{\"version\": 2,", "perf state 'p.json' is not valid JSON"},
	    {"[]", "perf state 'p.json' is not a JSON object"},
	    {"{}", "perf state 'p.json' has no integer version"},
	    {"{\"version\": \"2\"}", "perf state 'p.json' has no integer version"},
	    {"{\"version\": 3}", "perf state 'p.json' has unknown version 3 (expected 2)"},
	    {"{\"version\": 2, \"champion\": 1}", "perf state 'p.json': champion is not an object"},
	    {"{\"version\": 2, \"history\": {}}", "perf state 'p.json': history is not a list"},
	    {"{\"version\": 2, \"history\": [{}, 3]}",
	     "perf state 'p.json': history entry 2 is not an object"},
	    {"{\"version\": 2, \"version\": 2}", "perf state 'p.json' is not valid JSON"},
	};
	char dir[] = "/tmp/gdnctl-test-perf-XXXXXX";
	struct gdn_perf_state st = GDN_PERF_STATE_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *path;
	size_t i;
	FILE *f;

	(void)unused;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		gdn_perf_state_init(&st, NULL);
		gdn_err_clear(&err);
		assert_int_equal(
		    gdn_perf_state_parse(&st, cases[i].text, strlen(cases[i].text), "p.json", &err),
		    GDN_EPARSE);
		if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)))
			fail_msg("case %zu: '%s'", i, err.msg);
		/* the state is left as it was */
		assert_null(gdn_perf_state_champion(&st));
		gdn_perf_state_release(&st);
	}
	assert_non_null(mkdtemp(dir));
	path = tmpdir_path(dir, "perf_state.json");
	f = fopen(path, "w");
	fputs("{\"version\": 7}", f);
	fclose(f);
	assert_int_equal(gdn_perf_state_load(&st, path, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, path));
	gdn_perf_state_release(&st);
	/* saving into a missing directory fails cleanly */
	unlink(path);
	rmdir(dir);
	gdn_perf_state_init(&st, path);
	assert_int_equal(gdn_perf_state_save(&st, &err), GDN_EIO);
	assert_non_null(strstr(err.msg, "cannot create"));
	gdn_perf_state_release(&st);
	free(path);
}

static void test_names(void **unused)
{
	int d;

	(void)unused;
	assert_int_equal(gdn_enum_parse(gdn_perf_direction_enum, "lower", &d), 0);
	assert_int_equal(d, GDN_PERF_LOWER);
	assert_int_equal(gdn_enum_parse(gdn_perf_direction_enum, "down", &d), -1);
	assert_string_equal(gdn_perf_direction_name(GDN_PERF_HIGHER), "higher");
	assert_int_equal(gdn_perf_direction_resolve(GDN_PERF_AUTO, "throughput/mfu"),
			 GDN_PERF_HIGHER);
	assert_string_equal(gdn_perf_decision_name(GDN_PERF_GATE_REGRESSION), "gate_regression");
	assert_string_equal(gdn_perf_decision_name(GDN_PERF_WITHIN_THRESHOLD), "within_threshold");
}

/* --perf-direction auto: what each name says, and the names that say neither */
static void test_direction_from_name(void **unused)
{
	static const struct {
		const char *metric;
		enum gdn_perf_direction want;
	} cases[] = {
	    /* times: lower is better */
	    {"throughput/duration_ms", GDN_PERF_LOWER},
	    {"throughput/duration", GDN_PERF_LOWER},
	    {"step_ms", GDN_PERF_LOWER},
	    {"trace/step_ms", GDN_PERF_LOWER},
	    {"trace/op/fusion.7_ms", GDN_PERF_LOWER},
	    {"kernel_us", GDN_PERF_LOWER},
	    {"wall_s", GDN_PERF_LOWER},
	    {"epoch_seconds", GDN_PERF_LOWER},
	    {"latency", GDN_PERF_LOWER},
	    {"serve/latency_p99", GDN_PERF_LOWER},
	    {"time", GDN_PERF_LOWER},
	    {"throughput/hook_time", GDN_PERF_LOWER},
	    {"perf/stepTimeMs", GDN_PERF_LOWER},
	    {"ms_per_step", GDN_PERF_LOWER},
	    {"bench.duration-ms", GDN_PERF_LOWER},
	    /* rates: higher is better */
	    {"throughput/mfu", GDN_PERF_HIGHER},
	    {"throughput/tokens_per_second", GDN_PERF_HIGHER},
	    {"throughput/examples_per_second", GDN_PERF_HIGHER},
	    {"items_per_s", GDN_PERF_HIGHER},
	    {"throughput", GDN_PERF_HIGHER},
	    {"throughput/tflops", GDN_PERF_HIGHER},
	    {"throughput/speedup", GDN_PERF_HIGHER},
	    {"tokensPerSecond", GDN_PERF_HIGHER},
	    {"train/MFU", GDN_PERF_HIGHER},
	    {"mfu_pct", GDN_PERF_HIGHER},
	    {"tokens/s", GDN_PERF_HIGHER},
	    /* neither: refused, never guessed */
	    {"throughput/x", GDN_PERF_AUTO},
	    {"score", GDN_PERF_AUTO},
	    {"train/loss", GDN_PERF_AUTO},
	    {"throughput/total_tokens", GDN_PERF_AUTO},
	    {"tokens_per_step", GDN_PERF_AUTO},
	    {"timer", GDN_PERF_AUTO},
	    {"mss", GDN_PERF_AUTO},
	    {"", GDN_PERF_AUTO},
	    {"throughput/", GDN_PERF_AUTO},
	};
	const char *why;

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		enum gdn_perf_direction d = gdn_perf_direction_classify(cases[i].metric, &why);

		if (d != cases[i].want)
			fail_msg("%s: %s, want %s", cases[i].metric, gdn_perf_direction_name(d),
				 gdn_perf_direction_name(cases[i].want));
		assert_true((d == GDN_PERF_AUTO) == !why);
	}
	/* a given direction wins; auto resolves by the name */
	assert_int_equal(gdn_perf_direction_resolve(GDN_PERF_HIGHER, "step_ms"), GDN_PERF_HIGHER);
	assert_int_equal(gdn_perf_direction_resolve(GDN_PERF_AUTO, "throughput/duration_ms"),
			 GDN_PERF_LOWER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_direction_from_name),
	    cmocka_unit_test(test_cli_parse),
	    cmocka_unit_test(test_baseline_then_promoted),
	    cmocka_unit_test(test_ab_decisions),
	    cmocka_unit_test(test_regression_reverts),
	    cmocka_unit_test(test_thresholds_at_boundary),
	    cmocka_unit_test(test_policy_actions),
	    cmocka_unit_test(test_policies_end_to_end),
	    cmocka_unit_test(test_within_threshold_policy),
	    cmocka_unit_test(test_repeat_stat_best),
	    cmocka_unit_test(test_missing_metric_without_champion),
	    cmocka_unit_test(test_gate_while_growth),
	    cmocka_unit_test(test_gate_new_bucket),
	    cmocka_unit_test(test_gate_override_by_large_win),
	    cmocka_unit_test(test_gate_without_traces),
	    cmocka_unit_test(test_gate_parse),
	    cmocka_unit_test(test_noise_medians_and_confidence),
	    cmocka_unit_test(test_median_mad),
	    cmocka_unit_test(test_trace_metrics),
	    cmocka_unit_test(test_steps_as_samples),
	    cmocka_unit_test(test_state_round_trip),
	    cmocka_unit_test(test_state_original_v2_and_v1),
	    cmocka_unit_test(test_state_corrupt),
	    cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
