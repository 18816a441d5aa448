/* Unit tests for the loop report: the model of a journal + state, and its renderers. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/report.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define EV(run, rest) "{\"ts\":\"2026-11-21T07:00:00.000Z\",\"run\":\"" run "\"," rest "}"

/* Run r2: baseline 1.0; 1 promoted to 2.0; 2 fails its tests; 3 regresses; 4 no commit. */
static const char *const journal_lines[] = {
    EV("r1", "\"event\":\"run_start\",\"iterations\":1,\"workdir\":\"/nonexistent\""),
    EV("r1", "\"event\":\"iteration_start\",\"iteration\":1"),
    EV("r1", "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\",\"commits\":0"),
    "{\"ts\":\"2026-11-21T08:00:00.000Z\",\"run\":\"r2\",\"event\":\"run_start\","
    "\"iterations\":4,\"workdir\":\"/nonexistent\",\"branch\":\"main\"}",
    EV("r2", "\"event\":\"validation\",\"iteration\":0,\"state\":\"succeeded\","
	     "\"duration_ms\":100"),
    EV("r2", "\"event\":\"perf_decision\",\"iteration\":0,\"commit\":\"c0\",\"metric\":"
	     "\"throughput/mfu\",\"decision\":\"baseline\",\"candidate\":1.0,\"champion\":null,"
	     "\"reasons\":[\"baseline <b>\"]"),
    EV("r2", "\"event\":\"iteration_start\",\"iteration\":1"),
    EV("r2", "\"event\":\"agent_end\",\"iteration\":1,\"duration_ms\":1000"),
    EV("r2", "\"event\":\"head\",\"iteration\":1,\"after\":\"c1\",\"commits\":1,\"ids\":[\"c1\"]"),
    EV("r2", "\"event\":\"validation\",\"iteration\":1,\"state\":\"succeeded\","
	     "\"duration_ms\":200"),
    EV("r2", "\"event\":\"perf_decision\",\"iteration\":1,\"commit\":\"c1\",\"decision\":"
	     "\"promoted\",\"candidate\":2.0,\"champion\":1.0"),
    EV("r2", "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\",\"commits\":1"),
    EV("r2", "\"event\":\"iteration_start\",\"iteration\":2"),
    EV("r2", "\"event\":\"agent_end\",\"iteration\":2,\"duration_ms\":2000"),
    EV("r2", "\"event\":\"head\",\"iteration\":2,\"after\":\"c2\",\"commits\":2,"
	     "\"ids\":[\"c2\",\"c2a\"]"),
    EV("r2", "\"event\":\"validation\",\"iteration\":2,\"state\":\"failed\","
	     "\"duration_ms\":300"),
    EV("r2", "\"event\":\"revert\",\"iteration\":2,\"reason\":\"validation failed: <img src=x>\","
	     "\"ok\":true,\"discarded_ref\":\"refs/gdnctl/discarded/2\",\"commits\":2"),
    EV("r2", "\"event\":\"decision\",\"iteration\":2,\"outcome\":\"failed\",\"failure\":"
	     "\"hook\",\"commits\":0"),
    EV("r2", "\"event\":\"iteration_start\",\"iteration\":3"),
    EV("r2", "\"event\":\"head\",\"iteration\":3,\"after\":\"c3\",\"commits\":1"),
    EV("r2", "\"event\":\"perf_decision\",\"iteration\":3,\"commit\":\"c3\",\"decision\":"
	     "\"regression\",\"candidate\":1.5,\"champion\":2.0"),
    EV("r2", "\"event\":\"revert\",\"iteration\":3,\"ok\":true,\"commits\":1"),
    EV("r2", "\"event\":\"decision\",\"iteration\":3,\"outcome\":\"failed\",\"failure\":"
	     "\"hook\",\"commits\":0"),
    EV("r2", "\"event\":\"iteration_start\",\"iteration\":4"),
    EV("r2", "\"event\":\"head\",\"iteration\":4,\"commits\":0"),
    "{\"ts\":\"2026-11-21T08:01:30.500Z\",\"run\":\"r2\",\"event\":\"decision\","
    "\"iteration\":4,\"outcome\":\"ok\",\"commits\":0}",
};
static struct sbuf journal = SBUF_INIT;

static int setup(void **unused)
{
	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(journal_lines); i++)
		sbuf_addf(&journal, "%s\n", journal_lines[i]);
	return 0;
}

static int teardown(void **unused)
{
	(void)unused;
	sbuf_release(&journal);
	return 0;
}

/* The state: trace figures of the champion (c1) and the regression (c3). */
static const char state[] =
    "{\"version\":2,\"champion\":null,\"history\":["
    "{\"commit\":\"c0\",\"iteration\":0,\"decision\":\"baseline\",\"metric\":\"throughput/mfu\","
    "\"direction\":\"higher\",\"trace\":{\"steps\":2,\"step_ms\":30,\"categories\":{\"while\":10,"
    "\"conv\":20},\"ops\":{}}},"
    "{\"commit\":\"c1\",\"iteration\":1,\"decision\":\"promoted\",\"champion_commit\":\"c0\","
    "\"metric\":\"throughput/mfu\",\"direction\":\"higher\",\"trace\":{\"steps\":2,\"step_ms\":25,"
    "\"categories\":{\"while\":5,\"conv\":20},\"ops\":{\"gone\":1}}},"
    "{\"commit\":\"c3\",\"iteration\":3,\"decision\":\"regression\",\"champion_commit\":\"c1\","
    "\"metric\":\"throughput/mfu\",\"direction\":\"higher\",\"trace\":{\"steps\":2,\"step_ms\":40,"
    "\"categories\":{\"while\":5,\"conv\":20,\"new\":15},\"ops\":{}}}]}";

static void load(struct gdn_report *r, const char *run)
{
	struct gdn_err err = GDN_ERR_INIT;

	gdn_report_init(r);
	assert_int_equal(gdn_report_load_journal(r, journal.buf, journal.len, run, "j", &err), 0);
}

static void test_model(void **unused)
{
	struct gdn_report r;
	struct gdn_err err = GDN_ERR_INIT;
	static const enum gdn_report_outcome want[] = {GDN_REPORT_BASELINE, GDN_REPORT_PROMOTED,
						       GDN_REPORT_FAILED_TESTS,
						       GDN_REPORT_REGRESSION, GDN_REPORT_NO_COMMIT};

	(void)unused;
	load(&r, NULL);
	assert_string_equal(r.run_id, "r2");
	assert_int_equal(r.runs.nr, 2);
	assert_string_equal(r.metric, "throughput/mfu");
	assert_int_equal(r.nr, 5);
	for (size_t i = 0; i < r.nr; i++) {
		assert_int_equal(r.v[i].iteration, (long)i);
		assert_int_equal(r.v[i].outcome, want[i]);
	}
	assert_true(r.v[1].has_metric);
	assert_true(fabs(r.v[1].delta_pct - 100.0) < 1e-9);
	assert_true(fabs(r.v[3].delta_pct + 25.0) < 1e-9);
	assert_true(isnan(r.v[2].delta_pct));
	/* the champion: 1 after the baseline, 2 from the promotion on */
	assert_true(r.v[0].champion_after == 1.0);
	assert_true(r.v[2].champion_before == 2.0 && r.v[4].champion_after == 2.0);
	assert_string_equal(r.v[2].discarded_ref, "refs/gdnctl/discarded/2");
	assert_true(r.v[2].reverted);
	assert_int_equal(r.v[2].ids.nr, 2);
	assert_null(r.v[4].commit);
	assert_int_equal(r.totals.iterations, 4);
	assert_int_equal(r.totals.agent_ms, 3000);
	assert_int_equal(r.totals.validation_ms, 600);
	assert_int_equal(r.totals.commits_kept, 1);
	assert_int_equal(r.totals.commits_reverted, 3);
	assert_int_equal(r.totals.failures, 2);
	assert_int_equal(r.totals.promoted, 1);
	assert_int_equal(r.totals.wall_ms, 90500);
	assert_false(r.torn_last_line);

	/* trace deltas: iteration 3 against c1 (the champion), biggest first */
	assert_int_equal(gdn_report_add_state(&r, state, strlen(state), "s", &err), 0);
	assert_int_equal(r.v[3].nr_deltas, 3);
	assert_string_equal(r.v[3].deltas[0].kind, "step");
	assert_true(r.v[3].deltas[0].delta_ms == 15.0);
	assert_string_equal(r.v[3].deltas[1].name, "new");
	assert_string_equal(r.v[3].deltas[2].name, "gone");
	assert_true(r.v[3].deltas[2].delta_ms == -1.0);
	/* iteration 1 against the baseline c0 */
	assert_int_equal(r.v[1].nr_deltas, 3);
	assert_true(r.v[1].deltas[0].delta_ms == -5.0);
	assert_int_equal(r.v[0].nr_deltas, 0);
	gdn_report_release(&r);
}

static void test_runs_and_errors(void **unused)
{
	struct gdn_report r;
	struct gdn_err err = GDN_ERR_INIT;
	const char *bad = EV("a", "\"event\":\"run_start\"") "\n{\"event\":1}\n";
	const char *notjson = EV("a", "\"event\":\"run_start\"") "\n\n{oops\n";
	const char *torn = EV("a", "\"event\":\"run_start\"") "\n{\"ts\":";

	(void)unused;
	load(&r, "r1");
	assert_string_equal(r.run_id, "r1");
	assert_int_equal(r.nr, 1);
	assert_int_equal(r.v[0].outcome, GDN_REPORT_NO_COMMIT);
	gdn_report_release(&r);

	assert_int_equal(gdn_report_load_journal(&r, journal.buf, journal.len, "r9", "j", &err),
			 GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "'r9'"));
	assert_int_equal(gdn_report_load_journal(&r, bad, strlen(bad), NULL, "J", &err),
			 GDN_EPARSE);
	assert_non_null(strstr(err.msg, "journal 'J' line 2: "));
	assert_int_equal(gdn_report_load_journal(&r, notjson, strlen(notjson), NULL, "J", &err),
			 GDN_EPARSE);
	assert_non_null(strstr(err.msg, "line 3: "));
	assert_int_equal(gdn_report_load_journal(&r, "", 0, NULL, "J", &err), GDN_ENOTFOUND);
	assert_int_equal(gdn_report_load_journal(&r, torn, strlen(torn), NULL, "J", &err), 0);
	assert_true(r.torn_last_line);
	assert_int_equal(gdn_report_add_state(&r, "{\"version\":7}", 13, "S", &err), GDN_EPARSE);
	gdn_report_release(&r);

	/* journal text reaches the terminal without escape sequences */
	{
		const char *esc = "{\"run\":\"\\u001b[31mred\",\"event\":\"run_start\"}\n";
		struct sbuf sb = SBUF_INIT;

		assert_int_equal(gdn_report_load_journal(&r, esc, strlen(esc), NULL, "J", &err), 0);
		gdn_report_render_text(&r, &sb);
		assert_null(strchr(sb.buf, '\033'));
		assert_non_null(strstr(sb.buf, "run ?[31mred: 0 iterations, not ended\n"));
		sbuf_release(&sb);
	}
	gdn_report_release(&r);
}

static void test_resume_and_direction(void **unused)
{
	/* iteration 1 interrupted, the run resumed, iteration 1 redone; a lower-is-better metric */
	static const char *const lines[] = {
	    EV("r", "\"event\":\"run_start\",\"iterations\":1"),
	    EV("r", "\"event\":\"perf_decision\",\"iteration\":0,\"metric\":\"trace/step_ms\","
		    "\"decision\":\"baseline\",\"candidate\":40,\"commit\":\"c0\""),
	    EV("r", "\"event\":\"iteration_start\",\"iteration\":1"),
	    EV("r", "\"event\":\"agent_end\",\"iteration\":1,\"duration_ms\":500"),
	    EV("r", "\"event\":\"interrupted\",\"iteration\":1,\"signal\":2"),
	    EV("r", "\"event\":\"run_end\",\"reason\":\"interrupted\",\"exit_code\":130"),
	    EV("r", "\"event\":\"run_resume\",\"iterations\":1,\"after\":0"),
	    EV("r", "\"event\":\"iteration_start\",\"iteration\":1"),
	    EV("r", "\"event\":\"agent_end\",\"iteration\":1,\"duration_ms\":700"),
	    EV("r", "\"event\":\"head\",\"iteration\":1,\"after\":\"c1\",\"commits\":1"),
	    EV("r", "\"event\":\"perf_decision\",\"iteration\":1,\"commit\":\"c1\",\"decision\":"
		    "\"promoted\",\"candidate\":30,\"champion\":40"),
	    EV("r", "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\",\"commits\":1"),
	    EV("r", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct gdn_report r;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		sbuf_addf(&sb, "%s\n", lines[i]);
	gdn_report_init(&r);
	assert_int_equal(gdn_report_load_journal(&r, sb.buf, sb.len, NULL, "j", &err), 0);
	assert_int_equal(r.nr, 2);
	assert_int_equal(r.v[1].agent_ms, 700); /* the redone attempt */
	assert_int_equal(r.totals.agent_ms, 1200);
	assert_int_equal(r.v[1].outcome, GDN_REPORT_PROMOTED);
	assert_true(r.lower_is_better);
	assert_true(fabs(r.v[1].delta_pct + 25.0) < 1e-9);
	assert_string_equal(r.end_reason, "completed");
	assert_int_equal(r.exit_code, 0);
	sbuf_reset(&sb);
	gdn_report_render_text(&r, &sb);
	assert_non_null(
	    strstr(sb.buf, "metric trace/step_ms (lower is better), champion 30 @ c1\n"));
	gdn_report_release(&r);
	sbuf_release(&sb);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_html_escapes_and_elements(void **unused)
{
	char dir[] = "/tmp/gdnctl-test-report-XXXXXX";
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;
	char *path;
	FILE *f;

	(void)unused;
	sbuf_reset(&sb);
	gdn_report_html_escape(&sb, "a<b>&\"c'\n\x01");
	assert_string_equal(sb.buf, "a&lt;b&gt;&amp;&quot;c&#39;&#10; ");

	/* the agent's last message as the hypothesis (no repository): escaped */
	assert_non_null(mkdtemp(dir));
	path = xstrfmt("%s/iteration-001-last-message.txt", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("\n  <script>alert(\"x\")</script> & 'q'\nsecond line\n", f);
	fclose(f);
	load(&r, NULL);
	gdn_report_add_hypotheses(&r, "/nonexistent", dir);
	unlink(path);
	rmdir(dir);
	free(path);
	assert_string_equal(r.v[1].hypothesis, "<script>alert(\"x\")</script> & 'q'");

	sbuf_reset(&sb);
	gdn_report_render_html(&r, &sb);
	assert_null(strstr(sb.buf, "<script"));
	assert_null(strstr(sb.buf, "<img"));
	assert_null(strstr(sb.buf, "<b>"));
	assert_non_null(strstr(sb.buf, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; "
				       "&amp; &#39;q&#39;"));
	assert_non_null(strstr(sb.buf, "validation failed: &lt;img src=x&gt;"));
	assert_int_equal(count(sb.buf, "class=\"point "), 5);
	assert_int_equal(count(sb.buf, "<title>iteration "), 5);
	assert_int_equal(count(sb.buf, "class=\"point decision-promoted\""), 1);
	assert_int_equal(count(sb.buf, "class=\"point unmeasured decision-failed_tests\""), 1);
	assert_int_equal(count(sb.buf, "id=\"champion-line\""), 1);
	assert_int_equal(count(sb.buf, "class=\"iter-row "), 5);
	assert_non_null(strstr(sb.buf, "id=\"total-commits-reverted\" data-value=\"3\""));
	assert_null(strstr(sb.buf, "http:"));
	assert_null(strstr(sb.buf, "https:"));
	assert_null(strstr(sb.buf, " src=\""));
	assert_null(strstr(sb.buf, "href="));
	assert_null(strstr(sb.buf, "url("));
	gdn_report_release(&r);
	sbuf_release(&sb);
}

static void test_text_and_json(void **unused)
{
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;
	json_t *doc, *it;

	(void)unused;
	load(&r, NULL);
	gdn_report_render_text(&r, &sb);
	assert_non_null(strstr(sb.buf, "run r2: 4 iterations, not ended\n"));
	assert_non_null(
	    strstr(sb.buf, "metric throughput/mfu (higher is better), champion 2 @ c1\n"));
	assert_non_null(strstr(sb.buf, "    1  promoted                    2   +100.00%  c1"));
	assert_non_null(strstr(sb.buf, "    3  regression                1.5    -25.00%  c3"));
	assert_non_null(strstr(sb.buf, "    2  failed tests                -          -  c2"));
	assert_non_null(strstr(sb.buf,
			       "totals: time in agent 3.000 s, time in validation 0.600 s, "
			       "commits kept 1, commits reverted 3, failures 2, promoted 1, "
			       "wall 90.500 s\n"));

	doc = gdn_report_json(&r);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")), GDN_REPORT_SCHEMA);
	assert_int_equal(json_array_size(json_object_get(doc, "iterations")), 5);
	it = json_array_get(json_object_get(doc, "iterations"), 3);
	assert_string_equal(json_string_value(json_object_get(it, "decision")), "regression");
	assert_true(json_real_value(json_object_get(it, "delta_pct")) == -25.0);
	assert_true(json_is_null(
	    json_object_get(json_array_get(json_object_get(doc, "iterations"), 2), "metric")));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(doc, "totals"), "commits_reverted")),
	    3);
	assert_true(json_real_value(json_object_get(json_object_get(doc, "champion"), "value")) ==
		    2.0);
	json_decref(doc);
	gdn_report_release(&r);
	sbuf_release(&sb);
}

/* Figures near INT64_MAX from an untrusted journal saturate their sums, never wrap round. */
#define MAX "9223372036854775807"
static const char *const huge_lines[] = {
    EV("h", "\"event\":\"run_start\",\"iterations\":2"),
    EV("h", "\"event\":\"iteration_start\",\"iteration\":1"),
    EV("h", "\"event\":\"agent_end\",\"iteration\":1,\"duration_ms\":" MAX),
    EV("h", "\"event\":\"agent_end\",\"iteration\":1,\"duration_ms\":" MAX),
    EV("h", "\"event\":\"validation\",\"iteration\":1,\"state\":\"ok\",\"duration_ms\":" MAX),
    EV("h", "\"event\":\"validation\",\"iteration\":1,\"state\":\"ok\",\"duration_ms\":" MAX),
    EV("h", "\"event\":\"revert\",\"iteration\":1,\"ok\":true,\"commits\":" MAX),
    EV("h", "\"event\":\"revert\",\"iteration\":1,\"ok\":true,\"commits\":" MAX),
    EV("h", "\"event\":\"decision\",\"iteration\":1,\"commits\":" MAX),
    EV("h", "\"event\":\"iteration_start\",\"iteration\":2"),
    EV("h", "\"event\":\"agent_end\",\"iteration\":2,\"duration_ms\":5"),
    EV("h", "\"event\":\"decision\",\"iteration\":2,\"commits\":" MAX),
};

static void test_huge_figures_saturate(void **unused)
{
	struct sbuf j = SBUF_INIT;
	struct gdn_report r;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;
	json_t *doc, *totals;

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(huge_lines); i++)
		sbuf_addf(&j, "%s\n", huge_lines[i]);
	gdn_report_init(&r);
	assert_int_equal(gdn_report_load_journal(&r, j.buf, j.len, NULL, "j", &err), 0);
	assert_int_equal(r.nr, 2);
	assert_true(r.v[0].agent_ms == INT64_MAX);
	assert_true(r.v[0].validation_ms == INT64_MAX);
	assert_true(r.v[1].agent_ms == 5);
	assert_true(r.totals.agent_ms == INT64_MAX);
	assert_true(r.totals.validation_ms == INT64_MAX);
	assert_true(r.totals.commits_reverted == LONG_MAX);
	assert_true(r.totals.commits_kept == LONG_MAX);
	doc = gdn_report_json(&r);
	totals = json_object_get(doc, "totals");
	assert_true(json_integer_value(json_object_get(totals, "agent_ms")) == INT64_MAX);
	assert_true(json_integer_value(json_object_get(totals, "commits_kept")) == INT64_MAX);
	json_decref(doc);
	gdn_report_render_text(&r, &sb);
	assert_non_null(strstr(sb.buf, "time in agent 9223372036854775.807 s"));
	gdn_report_release(&r);
	sbuf_release(&sb);
	sbuf_release(&j);
}

/* --perf-ab decisions: the text's delta carries the interval, the column widens for it. */
static const char *const ab_lines[] = {
    EV("ab", "\"event\":\"run_start\",\"iterations\":3"),
    EV("ab", "\"event\":\"perf_decision\",\"iteration\":0,\"commit\":\"c0\",\"decision\":"
	     "\"baseline\",\"candidate\":1.0,\"champion\":null"),
    EV("ab", "\"event\":\"iteration_start\",\"iteration\":1"),
    EV("ab", "\"event\":\"head\",\"iteration\":1,\"after\":\"c1\",\"commits\":1"),
    EV("ab", "\"event\":\"perf_decision\",\"iteration\":1,\"commit\":\"c1\",\"decision\":"
	     "\"promoted\",\"candidate\":1.081,\"champion\":1.0"),
    EV("ab", "\"event\":\"perf_ab\",\"iteration\":1,\"commit\":\"c1\",\"pairs\":4,"
	     "\"improvement_pct\":8.07,\"ci_low_pct\":6.0,\"ci_high_pct\":10.204,"
	     "\"confidence\":0.95,\"verdict\":\"promote\",\"decision\":\"promoted\""),
    EV("ab", "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\",\"commits\":1"),
    EV("ab", "\"event\":\"iteration_start\",\"iteration\":2"),
    EV("ab", "\"event\":\"head\",\"iteration\":2,\"after\":\"c2\",\"commits\":1"),
    EV("ab", "\"event\":\"perf_decision\",\"iteration\":2,\"commit\":\"c2\",\"decision\":"
	     "\"within_threshold\",\"candidate\":1.0702,\"champion\":1.081"),
    EV("ab", "\"event\":\"perf_ab\",\"iteration\":2,\"commit\":\"c2\",\"pairs\":6,"
	     "\"improvement_pct\":-1.2,\"ci_low_pct\":-3.456,\"ci_high_pct\":0.5,"
	     "\"confidence\":0.95,\"verdict\":\"within band\",\"decision\":\"within_threshold\""),
    EV("ab", "\"event\":\"decision\",\"iteration\":2,\"outcome\":\"ok\",\"commits\":1"),
    EV("ab", "\"event\":\"iteration_start\",\"iteration\":3"),
    EV("ab", "\"event\":\"head\",\"iteration\":3,\"commits\":0"),
    EV("ab", "\"event\":\"decision\",\"iteration\":3,\"outcome\":\"ok\",\"commits\":0"),
};

static void test_text_ab_interval(void **unused)
{
	struct sbuf j = SBUF_INIT, sb = SBUF_INIT;
	struct gdn_report r;
	struct gdn_err err = GDN_ERR_INIT;

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(ab_lines); i++)
		sbuf_addf(&j, "%s\n", ab_lines[i]);
	gdn_report_init(&r);
	assert_int_equal(gdn_report_load_journal(&r, j.buf, j.len, NULL, "j", &err), 0);
	gdn_report_render_text(&r, &sb);
	assert_non_null(strstr(sb.buf,
			       " iter  decision               metric                   delta  "
			       "commit        hypothesis\n"));
	assert_non_null(strstr(sb.buf,
			       "    0  baseline                    1                       -  "
			       "c0"));
	assert_non_null(strstr(sb.buf,
			       "    1  promoted                1.081  +8.10% [+6.00, +10.20]  "
			       "c1"));
	assert_non_null(strstr(sb.buf,
			       "    2  within band            1.0702   -1.00% [-3.46, +0.50]  "
			       "c2"));
	assert_non_null(strstr(sb.buf,
			       "    3  no commit                   -                       -  "
			       "-"));
	gdn_report_release(&r);
	sbuf_release(&sb);
	sbuf_release(&j);
}

#define TS(t, run, rest) "{\"ts\":\"2026-11-21T" t "Z\",\"run\":\"" run "\"," rest "}"

/*
 * The story: a headline, the duration without the idle gap before a
 * resume, reasons in words, round ticks on a log axis when the values
 * span more than 5x, the values on the points.
 */
static void test_story(void **unused)
{
	static const char *const lines[] = {
	    TS("08:00:00.000", "r", "\"event\":\"run_start\",\"iterations\":3"),
	    TS("08:00:01.000", "r",
	       "\"event\":\"perf_decision\",\"iteration\":0,\"metric\":\"throughput/x\","
	       "\"decision\":\"baseline\",\"candidate\":1.0204,\"commit\":\"c0\""),
	    TS("08:00:02.000", "r", "\"event\":\"iteration_start\",\"iteration\":1"),
	    TS("08:00:03.000", "r",
	       "\"event\":\"head\",\"iteration\":1,\"after\":\"c1\",\"commits\":1"),
	    TS("08:00:04.000", "r",
	       "\"event\":\"perf_decision\",\"iteration\":1,\"commit\":\"c1\",\"decision\":"
	       "\"within_threshold\",\"candidate\":1.03,\"champion\":1.0204"),
	    TS("08:00:04.500", "r",
	       "\"event\":\"revert\",\"iteration\":1,\"reason\":\"performance within_threshold: "
	       "throughput/x\",\"ok\":true,\"commits\":1"),
	    TS("08:00:05.000", "r",
	       "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\",\"commits\":0"),
	    /* killed here; resumed two hours later: the gap is not counted */
	    TS("10:00:05.000", "r", "\"event\":\"run_resume\",\"iterations\":3,\"after\":1"),
	    TS("10:00:06.000", "r", "\"event\":\"iteration_start\",\"iteration\":2"),
	    TS("10:00:07.000", "r",
	       "\"event\":\"head\",\"iteration\":2,\"after\":\"c2\",\"commits\":1"),
	    TS("10:00:09.000", "r",
	       "\"event\":\"perf_decision\",\"iteration\":2,\"commit\":\"c2\",\"decision\":"
	       "\"promoted\",\"candidate\":14.3512,\"champion\":1.0204"),
	    TS("10:00:10.000", "r",
	       "\"event\":\"decision\",\"iteration\":2,\"outcome\":\"ok\",\"commits\":1"),
	    TS("10:00:11.000", "r", "\"event\":\"iteration_start\",\"iteration\":3"),
	    TS("10:00:12.000", "r",
	       "\"event\":\"decision\",\"iteration\":3,\"outcome\":\"failed\",\"failure\":"
	       "\"no_commit\",\"commits\":0"),
	    TS("10:00:13.000", "r",
	       "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct gdn_report r;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;
	json_t *doc;

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		sbuf_addf(&sb, "%s\n", lines[i]);
	gdn_report_init(&r);
	assert_int_equal(gdn_report_load_journal(&r, sb.buf, sb.len, NULL, "j", &err), 0);
	assert_int_equal(r.totals.wall_ms, 2 * 3600000LL + 13000);
	assert_int_equal(r.totals.idle_ms, 2 * 3600000LL);
	assert_int_equal(r.totals.active_ms, 13000);
	assert_int_equal(r.totals.resumes, 1);
	assert_int_equal(r.totals.iters_kept, 1);
	assert_int_equal(r.totals.iters_reverted, 1);
	assert_int_equal(r.totals.iters_no_commit, 1);
	/* the reasons in words, the tokens kept for programs */
	assert_string_equal(r.v[1].reason, "performance within_threshold: throughput/x");
	assert_string_equal(r.v[1].reason_text, "within the noise band (throughput/x)");
	assert_string_equal(r.v[3].reason_text, "the agent made no commit");
	sbuf_reset(&sb);
	gdn_report_headline(&r, &sb);
	assert_string_equal(sb.buf, "baseline 1.02 -> 14.35 (x14.1) in 3 iterations: 1 kept, 1 "
				    "reverted, 1 without a commit, 13 s");
	sbuf_reset(&sb);
	gdn_report_render_text(&r, &sb);
	assert_non_null(strstr(sb.buf,
			       "\nbaseline 1.02 -> 14.35 (x14.1) in 3 iterations: 1 kept, 1 "
			       "reverted, 1 without a commit, 13 s (resumed 1 time: 2 h 0 "
			       "min idle not counted)\n"));
	sbuf_reset(&sb);
	gdn_report_render_html(&r, &sb);
	assert_non_null(strstr(sb.buf, "<p id=\"headline\" class=\"headline\">baseline 1.02 -&gt; "
				       "14.35 (x14.1) in 3 iterations"));
	assert_non_null(strstr(sb.buf, "ran <span id=\"duration\" data-ms=\"13000\">13 s (resumed "
				       "1 time: 2 h 0 min idle not counted)</span>"));
	assert_null(strstr(sb.buf, "within_threshold"));
	assert_non_null(strstr(sb.buf, "within the noise band (throughput/x)"));
	/* 1.02 .. 14.35: more than 5x, a log axis with 1-2-5 ticks */
	assert_non_null(strstr(sb.buf, "data-scale=\"log\""));
	assert_non_null(strstr(sb.buf, "text-anchor=\"end\">1</text>"));
	assert_non_null(strstr(sb.buf, "text-anchor=\"end\">2</text>"));
	assert_non_null(strstr(sb.buf, "text-anchor=\"end\">5</text>"));
	assert_non_null(strstr(sb.buf, "text-anchor=\"end\">10</text>"));
	assert_non_null(strstr(sb.buf, "(log scale)"));
	/* each measured value on the chart, no hover needed */
	assert_int_equal(count(sb.buf, "class=\"value-label\""), 3);
	assert_non_null(strstr(sb.buf, "text-anchor=\"middle\">14.35</text>"));
	doc = gdn_report_json(&r);
	assert_string_equal(json_string_value(json_object_get(doc, "headline")),
			    "baseline 1.02 -> 14.35 (x14.1) in 3 iterations: 1 kept, 1 reverted, "
			    "1 without a commit, 13 s");
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(doc, "totals"), "active_ms")),
	    13000);
	json_decref(doc);
	gdn_report_release(&r);
	sbuf_release(&sb);
}

static void test_ticks(void **unused)
{
	double t[64];
	size_t n;

	(void)unused;
	n = gdn_report_ticks(0, 10, false, t, 64);
	assert_int_equal(n, 6);
	for (size_t i = 0; i < n; i++)
		assert_true(fabs(t[i] - 2.0 * (double)i) < 1e-12);
	n = gdn_report_ticks(1.2, 3.7, false, t, 64);
	assert_int_equal(n, 5);
	assert_true(fabs(t[0] - 1.5) < 1e-12 && fabs(t[4] - 3.5) < 1e-12);
	n = gdn_report_ticks(0.5, 20, true, t, 64);
	assert_int_equal(n, 6);
	assert_true(t[0] == 0.5 && t[1] == 1 && t[2] == 2 && t[3] == 5 && t[4] == 10 && t[5] == 20);
	/* many decades: powers of ten only */
	n = gdn_report_ticks(1, 1e6, true, t, 64);
	assert_int_equal(n, 7);
	assert_int_equal(gdn_report_ticks(1, 1, false, t, 64), 0);
	assert_int_equal(gdn_report_ticks(0, 10, true, t, 64), 0);
	assert_int_equal(gdn_report_ticks(0, 10, false, t, 3), 3);
}

/* The default run r2 (1 -> 2, within 5x): a linear axis with round ticks. */
static void test_linear_axis(void **unused)
{
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;

	(void)unused;
	load(&r, NULL);
	gdn_report_render_html(&r, &sb);
	assert_non_null(strstr(sb.buf, "data-scale=\"linear\""));
	assert_non_null(strstr(sb.buf, "text-anchor=\"end\">1.0</text>"));
	assert_non_null(strstr(sb.buf, "text-anchor=\"end\">1.5</text>"));
	assert_non_null(strstr(sb.buf, "text-anchor=\"end\">2.0</text>"));
	assert_null(strstr(sb.buf, "(log scale)"));
	gdn_report_release(&r);
	sbuf_release(&sb);
}

/* Trace deltas under the noise (|delta| < 0.01 ms or < 0.1 %) are not shown. */
static void test_noise_deltas(void **unused)
{
	static const char st[] =
	    "{\"version\":2,\"champion\":null,\"history\":["
	    "{\"commit\":\"c1\",\"iteration\":1,\"decision\":\"promoted\",\"champion_commit\":"
	    "\"c0\","
	    "\"metric\":\"throughput/mfu\",\"direction\":\"higher\",\"trace\":{\"steps\":2,"
	    "\"step_ms\":100,\"categories\":{\"tiny\":0.5,\"rel\":100,\"real\":50},\"ops\":{}}},"
	    "{\"commit\":\"c3\",\"iteration\":3,\"decision\":\"regression\",\"champion_commit\":"
	    "\"c1\","
	    "\"metric\":\"throughput/mfu\",\"direction\":\"higher\",\"trace\":{\"steps\":2,"
	    "\"step_ms\":100.05,\"categories\":{\"tiny\":0.505,\"rel\":100.09,\"real\":50.5},"
	    "\"ops\":{\"new\":0.004}}}]}";
	struct gdn_report r;
	struct gdn_err err = GDN_ERR_INIT;

	(void)unused;
	load(&r, NULL);
	assert_int_equal(gdn_report_add_state(&r, st, strlen(st), "s", &err), 0);
	/* step +0.05 % and rel +0.09 % (relative), tiny +0.005 ms and new +0.004 ms (absolute) */
	assert_int_equal(r.v[3].nr_deltas, 1);
	assert_string_equal(r.v[3].deltas[0].name, "real");
	gdn_report_release(&r);
}

/* ---- parallel workers: the lanes ---- */

/* An event of run "w" at 2026-11-21T07:MM:SS.mmm (ts "MM:SS.mmm"). */
#define EW(ts, rest) "{\"ts\":\"2026-11-21T07:" ts "Z\",\"run\":\"w\"," rest "}"

static void load_lines(struct gdn_report *r, const char *const *lines, size_t n)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;

	for (size_t i = 0; i < n; i++)
		sbuf_addf(&sb, "%s\n", lines[i]);
	gdn_report_init(r);
	assert_int_equal(gdn_report_load_journal(r, sb.buf, sb.len, NULL, "j", &err), 0);
	sbuf_release(&sb);
}

/*
 * Two workers over 11 s: the baseline's validation [0, 1] (no "worker":
 * worker 1); worker 1: agent [1, 5], validation [5, 7], promoted at 7;
 * worker 2: agent [1, 9], validation [9, 10], promoted at 10.
 */
static const char *const two_workers[] = {
    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":2,\"workers\":2"),
    EW("00:01.000", "\"event\":\"validation\",\"iteration\":0,\"phase\":\"profile\","
		    "\"state\":\"succeeded\",\"duration_ms\":1000"),
    EW("00:01.000", "\"event\":\"perf_decision\",\"iteration\":0,\"commit\":\"c0\",\"metric\":"
		    "\"throughput/mfu\",\"decision\":\"baseline\",\"candidate\":1.0"),
    EW("00:01.000", "\"event\":\"iteration_start\",\"iteration\":1,\"worker\":1"),
    EW("00:01.000", "\"event\":\"agent_start\",\"iteration\":1,\"worker\":1"),
    EW("00:01.000", "\"event\":\"iteration_start\",\"iteration\":2,\"worker\":2"),
    EW("00:01.000", "\"event\":\"agent_start\",\"iteration\":2,\"worker\":2"),
    EW("00:05.000", "\"event\":\"agent_end\",\"iteration\":1,\"worker\":1,\"duration_ms\":4000"),
    EW("00:05.001", "\"event\":\"head\",\"iteration\":1,\"worker\":1,\"after\":\"c1\","
		    "\"commits\":1"),
    EW("00:07.000", "\"event\":\"validation\",\"iteration\":1,\"worker\":1,\"phase\":\"tests\","
		    "\"state\":\"succeeded\",\"duration_ms\":2000"),
    EW("00:07.000", "\"event\":\"perf_decision\",\"iteration\":1,\"worker\":1,\"commit\":"
		    "\"c1\",\"decision\":\"promoted\",\"candidate\":2.0,\"champion\":1.0"),
    EW("00:07.000", "\"event\":\"decision\",\"iteration\":1,\"worker\":1,\"outcome\":\"ok\","
		    "\"commits\":1"),
    EW("00:07.000", "\"event\":\"promote\",\"iteration\":1,\"worker\":1,\"champion\":\"s1\""),
    EW("00:09.000", "\"event\":\"agent_end\",\"iteration\":2,\"worker\":2,\"duration_ms\":8000"),
    EW("00:09.001", "\"event\":\"head\",\"iteration\":2,\"worker\":2,\"after\":\"c2\","
		    "\"commits\":1"),
    EW("00:10.000", "\"event\":\"validation\",\"iteration\":2,\"worker\":2,\"phase\":\"tests\","
		    "\"state\":\"succeeded\",\"duration_ms\":1000"),
    EW("00:10.000", "\"event\":\"perf_decision\",\"iteration\":2,\"worker\":2,\"commit\":"
		    "\"c2\",\"decision\":\"promoted\",\"candidate\":3.0,\"champion\":2.0"),
    EW("00:10.000", "\"event\":\"promote\",\"iteration\":2,\"worker\":2,\"champion\":\"s2\""),
    EW("00:10.000", "\"event\":\"decision\",\"iteration\":2,\"worker\":2,\"outcome\":\"ok\","
		    "\"commits\":1"),
    EW("00:11.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
};

static void test_lanes_durations(void **unused)
{
	struct gdn_report r;
	const struct gdn_report_lane *l;

	(void)unused;
	load_lines(&r, two_workers, ARRAY_SIZE(two_workers));
	assert_true(gdn_report_parallel(&r));
	assert_int_equal(r.workers, 2);
	assert_int_equal(r.nr_lanes, 2);
	assert_int_equal(r.totals.active_ms, 11000);
	l = &r.lanes[0];
	assert_int_equal(l->worker, 1);
	assert_int_equal(l->iterations, 1);
	assert_int_equal(l->agent_ms, 4000);
	assert_int_equal(l->validation_ms, 3000); /* the baseline's and its own */
	assert_int_equal(l->busy_ms, 7000);
	assert_int_equal(l->idle_ms, 4000);
	assert_true(fabs(l->busy - 7.0 / 11) < 1e-12);
	assert_true(fabs(l->accel_busy - 3.0 / 11) < 1e-12);
	assert_int_equal(l->nr, 3);
	assert_int_equal(l->v[0].kind, GDN_REPORT_SPAN_VALIDATION);
	assert_int_equal(l->v[0].start_ms, 0);
	assert_int_equal(l->v[0].end_ms, 1000);
	assert_int_equal(l->v[1].kind, GDN_REPORT_SPAN_AGENT);
	assert_int_equal(l->v[1].iteration, 1);
	assert_int_equal(l->v[1].start_ms, 1000);
	assert_int_equal(l->v[1].end_ms, 5000);
	l = &r.lanes[1];
	assert_int_equal(l->agent_ms, 8000);
	assert_int_equal(l->validation_ms, 1000);
	assert_int_equal(l->idle_ms, 2000);
	assert_true(fabs(l->busy - 9.0 / 11) < 1e-12);
	assert_true(fabs(l->accel_busy - 1.0 / 11) < 1e-12);
	assert_true(fabs(r.busy - 16.0 / 22) < 1e-12);
	assert_true(fabs(r.accel_busy - 4.0 / 22) < 1e-12);
	/* the promotions, in order, with their worker, time and metric */
	assert_int_equal(r.nr_promotions, 2);
	assert_int_equal(r.promotions[0].order, 1);
	assert_int_equal(r.promotions[0].iteration, 1);
	assert_int_equal(r.promotions[0].worker, 1);
	assert_int_equal(r.promotions[0].at_ms, 7000);
	assert_string_equal(r.promotions[0].champion, "s1");
	assert_true(r.promotions[0].metric == 2.0);
	assert_int_equal(r.promotions[1].worker, 2);
	assert_int_equal(r.promotions[1].at_ms, 10000);
	assert_true(r.promotions[1].metric == 3.0);
	assert_int_equal(r.lanes[0].promotions, 1);
	assert_int_equal(r.lanes[1].promotions, 1);
	/* each iteration's worker */
	assert_int_equal(r.nr, 3);
	assert_int_equal(r.v[0].worker, 1);
	assert_int_equal(r.v[1].worker, 1);
	assert_int_equal(r.v[2].worker, 2);
	gdn_report_release(&r);
}

static void test_lanes_overlaps(void **unused)
{
	static const char *const lines[] = {
	    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":3,\"workers\":2"),
	    /* [-0.5, 0.5]: clipped to the run's start */
	    EW("00:00.500", "\"event\":\"validation\",\"iteration\":0,\"duration_ms\":1000"),
	    EW("00:01.000", "\"event\":\"agent_start\",\"iteration\":2,\"worker\":2"),
	    /* worker 1: an agent_end without its start: its duration, [1, 3] */
	    EW("00:03.000", "\"event\":\"agent_end\",\"iteration\":1,\"worker\":1,"
			    "\"duration_ms\":2000"),
	    /* worker 2: a validation inside its agent's span counts once in busy */
	    EW("00:04.000", "\"event\":\"validation\",\"iteration\":2,\"worker\":2,"
			    "\"duration_ms\":2000"),
	    /* worker 1: an agent that never ended: until its worker_end */
	    EW("00:04.000", "\"event\":\"agent_start\",\"iteration\":1,\"worker\":1"),
	    EW("00:05.000", "\"event\":\"agent_end\",\"iteration\":2,\"worker\":2"),
	    /* an id out of range is nobody's */
	    EW("00:05.000", "\"event\":\"validation\",\"iteration\":2,\"worker\":999,"
			    "\"duration_ms\":5000"),
	    EW("00:05.000", "\"event\":\"iteration_start\",\"iteration\":3,\"worker\":2"),
	    EW("00:06.000", "\"event\":\"worker_end\",\"worker\":1,\"iteration\":1"),
	    /* a late worker_end of an older iteration does not end the newer agent: [7, 8] */
	    EW("00:07.000", "\"event\":\"agent_start\",\"iteration\":4,\"worker\":1"),
	    EW("00:07.500", "\"event\":\"worker_end\",\"worker\":1,\"iteration\":1"),
	    EW("00:08.000", "\"event\":\"agent_end\",\"iteration\":4,\"worker\":1"),
	    /* worker 2: two validations overlapping, [6, 8] and [7, 9]: 3 s */
	    EW("00:08.000", "\"event\":\"validation\",\"iteration\":3,\"worker\":2,"
			    "\"duration_ms\":2000"),
	    EW("00:09.000", "\"event\":\"validation\",\"iteration\":3,\"worker\":2,"
			    "\"duration_ms\":2000"),
	    /* beats its base, then conflicts with the newer champion: not promoted */
	    EW("00:09.000", "\"event\":\"perf_decision\",\"iteration\":3,\"worker\":2,\"commit\":"
			    "\"c3\",\"decision\":\"promoted\",\"candidate\":2.0,\"champion\":1.0"),
	    EW("00:09.000", "\"event\":\"conflict\",\"iteration\":3,\"worker\":2,\"reason\":"
			    "\"cherry-pick conflicts\""),
	    EW("00:09.000", "\"event\":\"decision\",\"iteration\":3,\"worker\":2,\"outcome\":"
			    "\"failed\",\"commits\":0"),
	    EW("00:10.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct gdn_report r;
	const struct gdn_report_lane *l;

	(void)unused;
	load_lines(&r, lines, ARRAY_SIZE(lines));
	assert_int_equal(r.workers, 2);
	assert_int_equal(r.totals.active_ms, 10000);
	l = &r.lanes[0];
	assert_int_equal(l->agent_ms, 5000); /* [1, 3] + [4, 6] + [7, 8] */
	assert_int_equal(l->validation_ms, 500);
	assert_int_equal(l->busy_ms, 5500);
	assert_int_equal(l->idle_ms, 4500);
	assert_true(fabs(l->busy - 0.55) < 1e-12);
	assert_true(fabs(l->accel_busy - 0.05) < 1e-12);
	l = &r.lanes[1];
	assert_int_equal(l->iterations, 1);
	assert_int_equal(l->agent_ms, 4000);
	assert_int_equal(l->validation_ms, 5000); /* [2, 4] + [6, 9] */
	assert_int_equal(l->busy_ms, 7000);	  /* [1, 5] + [6, 9] */
	assert_int_equal(l->idle_ms, 3000);
	assert_true(fabs(l->busy - 0.7) < 1e-12);
	assert_true(fabs(l->accel_busy - 0.5) < 1e-12);
	assert_int_equal(r.v[r.nr - 2].iteration, 3);
	assert_int_equal(r.v[r.nr - 2].outcome, GDN_REPORT_CONFLICT);
	assert_string_equal(r.v[r.nr - 2].reason, "cherry-pick conflicts");
	assert_int_equal(r.totals.promoted, 0);
	gdn_report_release(&r);
}

static void test_lanes_resume(void **unused)
{
	/* killed at 4 s with worker 1's agent running, resumed a minute later */
	static const char *const lines[] = {
	    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":2,\"workers\":2"),
	    EW("00:01.000", "\"event\":\"agent_start\",\"iteration\":1,\"worker\":1"),
	    EW("00:01.000", "\"event\":\"agent_start\",\"iteration\":2,\"worker\":2"),
	    EW("00:03.000", "\"event\":\"agent_end\",\"iteration\":2,\"worker\":2"),
	    EW("00:04.000", "\"event\":\"validation\",\"iteration\":2,\"worker\":2,"
			    "\"duration_ms\":1000"),
	    EW("01:04.000", "\"event\":\"run_resume\",\"iterations\":2,\"workers\":2"),
	    EW("01:05.000", "\"event\":\"agent_start\",\"iteration\":1,\"worker\":1"),
	    EW("01:09.000", "\"event\":\"agent_end\",\"iteration\":1,\"worker\":1"),
	    EW("01:10.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct gdn_report r;
	const struct gdn_report_lane *l;

	(void)unused;
	load_lines(&r, lines, ARRAY_SIZE(lines));
	assert_int_equal(r.totals.wall_ms, 70000);
	assert_int_equal(r.totals.idle_ms, 60000);
	assert_int_equal(r.totals.active_ms, 10000);
	assert_int_equal(r.nr_gaps, 1);
	l = &r.lanes[0];
	assert_int_equal(l->nr, 2);
	/* the killed agent ran until the last event before the resume */
	assert_int_equal(l->v[0].start_ms, 1000);
	assert_int_equal(l->v[0].end_ms, 4000);
	/* after the resume: on the active time line, the gap taken out */
	assert_int_equal(l->v[1].start_ms, 5000);
	assert_int_equal(l->v[1].end_ms, 9000);
	assert_int_equal(l->agent_ms, 7000);
	assert_int_equal(l->idle_ms, 3000);
	l = &r.lanes[1];
	assert_int_equal(l->agent_ms, 2000);
	assert_int_equal(l->validation_ms, 1000);
	assert_int_equal(l->idle_ms, 7000);
	assert_true(fabs(r.busy - 10.0 / 20) < 1e-12);
	assert_true(fabs(r.accel_busy - 1.0 / 20) < 1e-12);
	gdn_report_release(&r);
}

static void test_lanes_worker_of_iteration(void **unused)
{
	/* an event written without "worker" belongs to its iteration's worker, else to worker 1 */
	static const char *const lines[] = {
	    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":1,\"workers\":2"),
	    EW("00:00.000", "\"event\":\"iteration_start\",\"iteration\":1,\"worker\":2"),
	    EW("00:01.000", "\"event\":\"validation\",\"iteration\":0,\"duration_ms\":1000"),
	    EW("00:02.500", "\"event\":\"validation\",\"iteration\":1,\"duration_ms\":1500"),
	    EW("00:03.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct gdn_report r;

	(void)unused;
	load_lines(&r, lines, ARRAY_SIZE(lines));
	assert_int_equal(r.lanes[0].validation_ms, 1000);
	assert_int_equal(r.lanes[1].validation_ms, 1500);
	assert_int_equal(r.lanes[1].iterations, 1);
	assert_int_equal(r.lanes[0].iterations, 0);
	gdn_report_release(&r);
}

static void test_lanes_promotion_order(void **unused)
{
	/* iteration 3 is promoted first (2.0), then iteration 2 (2.5): the champion never drops */
	static const char *const lines[] = {
	    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":3,\"workers\":2"),
	    EW("00:00.000",
	       "\"event\":\"perf_decision\",\"iteration\":0,\"commit\":\"c0\","
	       "\"metric\":\"throughput/mfu\",\"decision\":\"baseline\",\"candidate\":1.0"),
	    EW("00:01.000", "\"event\":\"perf_decision\",\"iteration\":3,\"worker\":1,"
			    "\"commit\":\"c3\",\"decision\":\"promoted\",\"candidate\":2.0,"
			    "\"champion\":1.0"),
	    EW("00:01.000", "\"event\":\"promote\",\"iteration\":3,\"worker\":1,\"champion\":"
			    "\"s3\""),
	    EW("00:02.000", "\"event\":\"perf_decision\",\"iteration\":1,\"worker\":2,"
			    "\"commit\":\"c1\",\"decision\":\"regression\",\"candidate\":0.5,"
			    "\"champion\":1.0"),
	    EW("00:03.000", "\"event\":\"perf_decision\",\"iteration\":2,\"worker\":2,"
			    "\"commit\":\"c2\",\"decision\":\"promoted\",\"candidate\":2.5,"
			    "\"champion\":2.0"),
	    EW("00:03.000", "\"event\":\"promote\",\"iteration\":2,\"worker\":2,\"champion\":"
			    "\"s2\""),
	    /* kept within the band: the branch advances (promote), the best metric stays */
	    EW("00:03.500",
	       "\"event\":\"perf_decision\",\"iteration\":4,\"worker\":1,"
	       "\"commit\":\"c4\",\"decision\":\"within_threshold\",\"candidate\":2.49,"
	       "\"champion\":2.5"),
	    EW("00:03.500", "\"event\":\"promote\",\"iteration\":4,\"worker\":1,\"champion\":"
			    "\"s4\""),
	    /* the engine's conflict: a rebase that did not apply */
	    EW("00:03.700", "\"event\":\"perf_decision\",\"iteration\":5,\"worker\":2,"
			    "\"commit\":\"c5\",\"decision\":\"promoted\",\"candidate\":2.6,"
			    "\"champion\":2.0"),
	    EW("00:03.800",
	       "\"event\":\"rebase\",\"iteration\":5,\"worker\":2,\"result\":"
	       "\"conflict\",\"reason\":\"CONFLICT (content): Merge conflict in a.c\""),
	    EW("00:04.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;

	(void)unused;
	load_lines(&r, lines, ARRAY_SIZE(lines));
	assert_int_equal(r.nr, 6);
	assert_true(r.v[1].champion_after == 1.0);
	assert_true(r.v[2].champion_after == 2.5);
	assert_true(r.v[3].champion_after == 2.5);
	assert_true(r.v[4].champion_after == 2.5);
	assert_true(r.v[5].champion_after == 2.5);
	assert_int_equal(r.v[5].outcome, GDN_REPORT_CONFLICT);
	assert_string_equal(r.v[5].reason, "CONFLICT (content): Merge conflict in a.c");
	assert_int_equal(r.nr_promotions, 3);
	assert_int_equal(r.promotions[0].iteration, 3);
	assert_int_equal(r.promotions[1].iteration, 2);
	assert_true(r.promotions[1].best);
	assert_false(r.promotions[2].best);
	assert_true(r.promotions[2].metric == 2.49);
	/* the final champion: the last promotion's, not the last iteration's */
	gdn_report_render_text(&r, &sb);
	assert_non_null(strstr(sb.buf, "champion 2.5 @ c2\n"));
	gdn_report_release(&r);
	sbuf_release(&sb);
}

static void test_lanes_rendered(void **unused)
{
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;
	json_t *doc, *w, *lane;

	(void)unused;
	load_lines(&r, two_workers, ARRAY_SIZE(two_workers));
	gdn_report_render_text(&r, &sb);
	assert_non_null(strstr(sb.buf, " iter  worker  decision "));
	assert_non_null(strstr(sb.buf, "\n    2       2  promoted "));
	assert_non_null(
	    strstr(sb.buf, "metric throughput/mfu (higher is better), champion 3 @ c2\n"));
	assert_non_null(strstr(sb.buf, "\nworkers: 2, active time 11.000 s; busy 72.7% (agent + "
				       "validation), accelerators busy 18.2% (validation)\n"));
	assert_non_null(strstr(sb.buf, "\nworker  iterations         agent    validation"
				       "          idle    busy  accel busy  promotions\n"));
	assert_non_null(strstr(sb.buf, "\n     1           1       4.000 s       3.000 s       "
				       "4.000 s   63.6%       27.3%           1\n"));
	assert_non_null(strstr(sb.buf, "\n     2           1       8.000 s       1.000 s       "
				       "2.000 s   81.8%        9.1%           1\n"));
	assert_non_null(strstr(sb.buf, "\n   all           2      12.000 s       4.000 s       "
				       "6.000 s   72.7%       18.2%           2\n"));
	assert_non_null(strstr(sb.buf,
			       "\npromotions on the champion line, in order:\n"
			       "     1  iteration 1 by worker 1 at 7.000 s: champion 2 @ s1\n"
			       "     2  iteration 2 by worker 2 at 10.000 s: champion 3 @ s2\n"));

	sbuf_reset(&sb);
	gdn_report_render_html(&r, &sb);
	assert_int_equal(count(sb.buf, "<svg id=\"worker-lanes\""), 1);
	assert_int_equal(count(sb.buf, "<g class=\"lane\" "), 2);
	assert_non_null(strstr(sb.buf, "<g class=\"lane\" data-worker=\"1\" data-busy=\"0.6364\" "
				       "data-accelerator-busy=\"0.2727\">"));
	assert_int_equal(count(sb.buf, "class=\"span span-agent\""), 2);
	assert_int_equal(count(sb.buf, "class=\"span span-validation\""), 3);
	assert_int_equal(count(sb.buf, "class=\"promotion-mark\""), 2);
	assert_int_equal(count(sb.buf, "class=\"promotion-label\""), 4); /* chart and lanes */
	assert_int_equal(count(sb.buf, "<tr class=\"lane-row\""), 2);
	assert_non_null(strstr(sb.buf, "<td class=\"num busy\">81.8%</td><td class=\"num "
				       "accelerator-busy\">9.1%</td>"));
	assert_int_equal(count(sb.buf, "<li class=\"promotion\""), 2);
	assert_int_equal(count(sb.buf, "<div class=\"worker\">worker 2</div>"), 1);

	doc = gdn_report_json(&r);
	w = json_object_get(doc, "workers");
	assert_int_equal(json_integer_value(json_object_get(w, "count")), 2);
	assert_int_equal(json_array_size(json_object_get(w, "lanes")), 2);
	lane = json_array_get(json_object_get(w, "lanes"), 1);
	assert_int_equal(json_integer_value(json_object_get(lane, "agent_ms")), 8000);
	assert_int_equal(json_integer_value(json_object_get(lane, "idle_ms")), 2000);
	assert_true(fabs(json_real_value(json_object_get(lane, "busy_fraction")) - 9.0 / 11) <
		    1e-12);
	assert_true(fabs(json_real_value(json_object_get(lane, "accelerator_busy_fraction")) -
			 1.0 / 11) < 1e-12);
	assert_int_equal(json_array_size(json_object_get(lane, "spans")), 2);
	assert_true(fabs(json_real_value(json_object_get(w, "busy_fraction")) - 16.0 / 22) < 1e-12);
	assert_int_equal(json_integer_value(json_object_get(
			     json_array_get(json_object_get(doc, "promotions"), 1), "worker")),
			 2);
	assert_int_equal(json_integer_value(json_object_get(
			     json_array_get(json_object_get(doc, "iterations"), 2), "worker")),
			 2);
	json_decref(doc);
	gdn_report_release(&r);
	sbuf_release(&sb);
}

/* --targets 1 with two workers: both validations ran on target 1, one after the other. */
static const char *const one_target[] = {
    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":2,\"workers\":2"),
    EW("00:00.000", "\"event\":\"agent_start\",\"iteration\":1,\"worker\":1"),
    EW("00:00.000", "\"event\":\"agent_start\",\"iteration\":2,\"worker\":2"),
    EW("00:02.000", "\"event\":\"agent_end\",\"iteration\":1,\"worker\":1,\"duration_ms\":2000"),
    EW("00:02.000", "\"event\":\"agent_end\",\"iteration\":2,\"worker\":2,\"duration_ms\":2000"),
    EW("00:02.000", "\"event\":\"target\",\"iteration\":1,\"worker\":1,\"target\":1,"
		    "\"waited_ms\":0"),
    EW("00:05.000", "\"event\":\"validation\",\"iteration\":1,\"worker\":1,\"phase\":\"tests\","
		    "\"state\":\"succeeded\",\"duration_ms\":3000"),
    EW("00:05.000", "\"event\":\"worker_end\",\"iteration\":1,\"worker\":1"),
    EW("00:05.000", "\"event\":\"target\",\"iteration\":2,\"worker\":2,\"target\":1,"
		    "\"waited_ms\":3000"),
    EW("00:07.000", "\"event\":\"validation\",\"iteration\":2,\"worker\":2,\"phase\":\"tests\","
		    "\"state\":\"failed\",\"duration_ms\":2000"),
    EW("00:07.000", "\"event\":\"worker_end\",\"iteration\":2,\"worker\":2"),
    EW("00:08.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
};

static void test_target_lanes_html(void **unused)
{
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;

	(void)unused;
	load_lines(&r, one_target, ARRAY_SIZE(one_target));
	assert_int_equal(r.nr_lanes, 2);
	assert_int_equal(r.nr_tlanes, 1);
	gdn_report_render_html(&r, &sb);
	/* the workers' lanes as before, and one more: the target's, with both validations */
	assert_int_equal(count(sb.buf, "<g class=\"lane\" "), 2);
	assert_int_equal(count(sb.buf, "<g class=\"target-lane\" "), 1);
	assert_non_null(strstr(sb.buf, "<g class=\"target-lane\" data-target=\"1\" "
				       "data-busy=\"0.6250\" data-accelerator-busy=\"0.6250\">"));
	assert_non_null(strstr(sb.buf, ">target 1</text>"));
	assert_int_equal(count(sb.buf, "<title>target 1, iteration "), 2);
	assert_int_equal(count(sb.buf, "class=\"span span-validation\""), 4);
	assert_int_equal(count(sb.buf, "<tr class=\"lane-row\""), 2);
	assert_int_equal(count(sb.buf, "<tr class=\"target-row\""), 1);
	assert_non_null(strstr(sb.buf, "<td>t1</td>"));
	assert_non_null(strstr(sb.buf, "With --targets"));
	gdn_report_release(&r);
	sbuf_reset(&sb);
	/* without target events: no target lane, no note */
	load_lines(&r, two_workers, ARRAY_SIZE(two_workers));
	gdn_report_render_html(&r, &sb);
	assert_null(strstr(sb.buf, "target-lane"));
	assert_null(strstr(sb.buf, "target-row"));
	assert_null(strstr(sb.buf, "With --targets"));
	gdn_report_release(&r);
	sbuf_release(&sb);
}

/*
 * --workers 1 --targets 1: two worktrees, one agent. Worker 2's iteration
 * waited for agent 1 while worker 1's thought; agent 1 thought for both,
 * one after the other (an attempt of the same iteration stays on it).
 */
static const char *const one_agent[] = {
    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":2,\"workers\":2,\"agents\":1,"
		    "\"targets\":1"),
    EW("00:00.000", "\"event\":\"agent\",\"iteration\":1,\"worker\":1,\"agent\":1,"
		    "\"waited_ms\":0"),
    EW("00:00.000", "\"event\":\"agent_start\",\"iteration\":1,\"worker\":1"),
    EW("00:01.000", "\"event\":\"agent_start\",\"iteration\":1,\"worker\":1"),
    EW("00:02.000", "\"event\":\"agent_end\",\"iteration\":1,\"worker\":1,\"duration_ms\":1000"),
    EW("00:02.000", "\"event\":\"agent\",\"iteration\":2,\"worker\":2,\"agent\":1,"
		    "\"waited_ms\":2000"),
    EW("00:02.000", "\"event\":\"target\",\"iteration\":1,\"worker\":1,\"target\":1,"
		    "\"waited_ms\":0"),
    EW("00:02.000", "\"event\":\"agent_start\",\"iteration\":2,\"worker\":2"),
    EW("00:05.000", "\"event\":\"validation\",\"iteration\":1,\"worker\":1,\"phase\":\"tests\","
		    "\"state\":\"succeeded\",\"duration_ms\":3000"),
    EW("00:05.000", "\"event\":\"worker_end\",\"iteration\":1,\"worker\":1"),
    EW("00:06.000", "\"event\":\"agent_end\",\"iteration\":2,\"worker\":2,\"duration_ms\":4000"),
    EW("00:06.000", "\"event\":\"target\",\"iteration\":2,\"worker\":2,\"target\":1,"
		    "\"waited_ms\":0"),
    EW("00:07.000", "\"event\":\"validation\",\"iteration\":2,\"worker\":2,\"phase\":\"tests\","
		    "\"state\":\"succeeded\",\"duration_ms\":1000"),
    EW("00:07.000", "\"event\":\"worker_end\",\"iteration\":2,\"worker\":2"),
    EW("00:08.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
};

static void test_agent_lanes(void **unused)
{
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;
	json_t *doc, *agents;

	(void)unused;
	load_lines(&r, one_agent, ARRAY_SIZE(one_agent));
	assert_int_equal(r.nr_lanes, 2);
	assert_int_equal(r.nr_alanes, 1);
	assert_int_equal(r.nr_tlanes, 1);
	/* agent 1: 0-1 s and 1-2 s (two attempts), then 2-6 s: busy 6 of 8 s */
	assert_int_equal(r.alanes[0].nr, 3);
	assert_int_equal(r.alanes[0].agent_ms, 6000);
	assert_int_equal(r.alanes[0].validation_ms, 0);
	assert_int_equal(r.alanes[0].idle_ms, 2000);
	assert_int_equal(r.tlanes[0].validation_ms, 4000);
	gdn_report_render_text(&r, &sb);
	assert_non_null(strstr(sb.buf, "\n agent "));
	assert_non_null(strstr(sb.buf, "\n    a1 "));
	assert_non_null(strstr(sb.buf, "\n    t1 "));
	sbuf_reset(&sb);
	gdn_report_render_html(&r, &sb);
	assert_int_equal(count(sb.buf, "<g class=\"agent-lane\" data-agent=\"1\" "
				       "data-busy=\"0.7500\""),
			 1);
	assert_int_equal(count(sb.buf, "<tr class=\"agent-row\""), 1);
	assert_non_null(strstr(sb.buf, ">agent 1</text>"));
	doc = gdn_report_json(&r);
	assert_non_null(doc);
	agents = json_object_get(json_object_get(doc, "workers"), "agents");
	assert_int_equal(json_array_size(agents), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(agents, 0), "agent")),
			 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(agents, 0), "agent_ms")),
			 6000);
	assert_null(json_object_get(json_array_get(agents, 0), "worker"));
	json_decref(doc);
	gdn_report_release(&r);
	sbuf_reset(&sb);
	/* without agent events: no agent lane */
	load_lines(&r, one_target, ARRAY_SIZE(one_target));
	assert_int_equal(r.nr_alanes, 0);
	gdn_report_render_html(&r, &sb);
	assert_null(strstr(sb.buf, "agent-lane"));
	gdn_report_release(&r);
	sbuf_release(&sb);
}

static void test_lanes_one_worker(void **unused)
{
	static const char *const capped[] = {
	    EW("00:00.000", "\"event\":\"run_start\",\"iterations\":1,\"workers\":1000000000"),
	    EW("00:01.000", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct gdn_report r;
	struct sbuf sb = SBUF_INIT;
	json_t *doc;

	(void)unused;
	/* a journal without "worker": one lane, not shown */
	load(&r, NULL);
	assert_false(gdn_report_parallel(&r));
	assert_int_equal(r.workers, 1);
	assert_int_equal(r.nr_lanes, 1);
	assert_int_equal(r.nr_promotions, 0); /* that journal has no promote event */
	gdn_report_render_text(&r, &sb);
	assert_null(strstr(sb.buf, "worker"));
	assert_non_null(strstr(sb.buf, "\n iter  decision "));
	sbuf_reset(&sb);
	gdn_report_render_html(&r, &sb);
	assert_null(strstr(sb.buf, "lane"));
	assert_null(strstr(sb.buf, "worker"));
	assert_null(strstr(sb.buf, "promotion"));
	assert_null(strstr(sb.buf, "conflict"));
	doc = gdn_report_json(&r);
	assert_null(json_object_get(doc, "workers"));
	assert_null(json_object_get(doc, "promotions"));
	assert_null(
	    json_object_get(json_array_get(json_object_get(doc, "iterations"), 1), "worker"));
	json_decref(doc);
	gdn_report_release(&r);

	/* an absurd worker count is capped */
	load_lines(&r, capped, ARRAY_SIZE(capped));
	assert_int_equal(r.workers, GDN_REPORT_MAX_WORKERS);
	assert_int_equal(r.nr_lanes, GDN_REPORT_MAX_WORKERS);
	assert_int_equal(r.lanes[GDN_REPORT_MAX_WORKERS - 1].idle_ms, 1000);
	gdn_report_release(&r);
	sbuf_release(&sb);
}

/*
 * One champion, one name: a promoted commit whose running-log entry was
 * stamped in a commit of its own is named by that commit (the branch's,
 * the promotions') in the text, the JSON and the HTML, not the agent's.
 */
static void test_champion_stamped(void **unused)
{
	static const char *const lines[] = {
	    EV("s", "\"event\":\"run_start\",\"iterations\":1,\"workdir\":\"/nonexistent\""),
	    EV("s",
	       "\"event\":\"perf_decision\",\"iteration\":0,\"commit\":\"aaaa00000000ffff\","
	       "\"metric\":\"m\",\"decision\":\"baseline\",\"candidate\":1.0,\"champion\":null"),
	    EV("s", "\"event\":\"iteration_start\",\"iteration\":1"),
	    EV("s",
	       "\"event\":\"head\",\"iteration\":1,\"after\":\"bbbb11111111ffff\",\"commits\":1"),
	    EV("s",
	       "\"event\":\"perf_decision\",\"iteration\":1,\"commit\":\"bbbb11111111ffff\","
	       "\"metric\":\"m\",\"decision\":\"promoted\",\"candidate\":2.0,\"champion\":1.0"),
	    EV("s", "\"event\":\"stamp\",\"iteration\":1,\"commit\":\"cccc22222222ffff\""),
	    EV("s", "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\",\"commits\":1"),
	    EV("s", "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"),
	};
	struct sbuf j = SBUF_INIT, out = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_report r;
	json_t *doc;

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
		sbuf_addf(&j, "%s\n", lines[i]);
	gdn_report_init(&r);
	assert_int_equal(gdn_report_load_journal(&r, j.buf, j.len, NULL, "j", &err), 0);
	gdn_report_render_text(&r, &out);
	assert_non_null(strstr(out.buf, "champion 2 @ cccc22222222\n"));
	/* the iteration's own row keeps the agent's commit */
	assert_non_null(strstr(out.buf, "bbbb11111111"));
	sbuf_reset(&out);
	gdn_report_render_html(&r, &out);
	assert_non_null(strstr(out.buf, "champion 2 at <code>cccc22222222</code>"));
	doc = gdn_report_json(&r);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(doc, "champion"), "commit")),
	    "cccc22222222ffff");
	json_decref(doc);
	gdn_report_release(&r);
	sbuf_release(&out);
	sbuf_release(&j);
}

/* The report's trace links: the log dir seen from the output's directory. */
static void test_relative_dir(void **unused)
{
	static const struct {
		const char *from, *to, *want;
	} cases[] = {
	    {"/a/b", "/a/b", ""},
	    {"/a/b/", "/a/b", ""},
	    {"/a", "/a/logs", "logs/"},
	    {"/a/out/deep", "/a/logs", "../../logs/"},
	    {"/a/logs/sub", "/a/logs", "../"},
	    {"/", "/x/y", "x/y/"},
	    {"/x/y", "/", "../../"},
	    {"/ab", "/abc", "../abc/"},
	    {"//a//b", "/a/c", "../c/"},
	};
	char *got;

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		got = gdn_report_relative_dir(cases[i].from, cases[i].to);
		assert_non_null(got);
		assert_string_equal(got, cases[i].want);
		free(got);
	}
	assert_null(gdn_report_relative_dir("rel", "/a"));
	assert_null(gdn_report_relative_dir("/a", "rel"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_model),
	    cmocka_unit_test(test_runs_and_errors),
	    cmocka_unit_test(test_resume_and_direction),
	    cmocka_unit_test(test_html_escapes_and_elements),
	    cmocka_unit_test(test_text_and_json),
	    cmocka_unit_test(test_huge_figures_saturate),
	    cmocka_unit_test(test_text_ab_interval),
	    cmocka_unit_test(test_story),
	    cmocka_unit_test(test_ticks),
	    cmocka_unit_test(test_linear_axis),
	    cmocka_unit_test(test_noise_deltas),
	    cmocka_unit_test(test_lanes_durations),
	    cmocka_unit_test(test_lanes_overlaps),
	    cmocka_unit_test(test_lanes_resume),
	    cmocka_unit_test(test_lanes_worker_of_iteration),
	    cmocka_unit_test(test_lanes_promotion_order),
	    cmocka_unit_test(test_lanes_rendered),
	    cmocka_unit_test(test_target_lanes_html),
	    cmocka_unit_test(test_agent_lanes),
	    cmocka_unit_test(test_lanes_one_worker),
	    cmocka_unit_test(test_relative_dir),
	    cmocka_unit_test(test_champion_stamped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
