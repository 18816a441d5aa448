/* Unit tests for `loop status` (src/loop/status.c): the journal's last run read back. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

#define TS(t, run, rest) "{\"ts\":\"2026-11-21T" t "Z\",\"run\":\"" run "\"," rest "}\n"
#define AT(t)		 gdn_loop_ts_ms("2026-11-21T" t "Z")

static const char journal[] = TS("07:00:00.000", "old", "\"event\":\"run_start\",\"iterations\":9")
    TS("08:00:00.000", "r",
       "\"event\":\"run_start\",\"iterations\":4,\"workdir\":\"/w\",\"max_failures\":3,"
       "\"stop_after_failures\":0")
	TS("08:00:01.000", "r",
	   "\"event\":\"perf_decision\",\"iteration\":0,\"metric\":\"throughput/x\","
	   "\"decision\":\"baseline\",\"candidate\":1.5,\"commit\":\"c0c0c0c0c0c0c0c0\"")
	    TS("08:00:02.000", "r", "\"event\":\"iteration_start\",\"iteration\":1") TS(
		"08:00:03.000", "r",
		"\"event\":\"perf_decision\",\"iteration\":1,\"commit\":\"c1\",\"decision\":"
		"\"within_threshold\",\"candidate\":1.51,\"champion\":1.5,"
		"\"improvement_pct\":0.67")
		TS("08:00:04.000", "r",
		   "\"event\":\"revert\",\"iteration\":1,\"reason\":\"performance "
		   "within_threshold: throughput/x\",\"ok\":true,\"commits\":1")
		    TS("08:00:05.000", "r",
		       "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\","
		       "\"failure\":null,\"commits\":0,\"failures\":0")
			TS("08:00:05.000", "old",
			   "\"event\":\"decision\",\"iteration\":7,\"commits\":0")
			    TS("08:00:06.000", "r", "\"event\":\"iteration_end\",\"iteration\":1")
    /* killed here; resumed an hour later */
    TS("09:00:06.000", "r",
       "\"event\":\"run_resume\",\"iterations\":4,\"after\":1,\"max_failures\":3")
	TS("09:00:07.000", "r", "\"event\":\"iteration_start\",\"iteration\":2")
	    TS("09:00:08.000", "r", "\"event\":\"agent_start\",\"iteration\":2,\"attempt\":1")
		TS("09:00:20.000", "r",
		   "\"event\":\"decision\",\"iteration\":2,\"outcome\":\"failed\",\"failure\":"
		   "\"no_commit\",\"counted\":true,\"commits\":0,\"failures\":1")
		    TS("09:00:21.000", "r", "\"event\":\"iteration_end\",\"iteration\":2")
			TS("09:00:22.000", "r", "\"event\":\"iteration_start\",\"iteration\":3")
			    TS("09:00:23.000", "r",
			       "\"event\":\"agent_start\",\"iteration\":3,\"attempt\":1");

static void load(struct gdn_loop_status *st, const char *buf)
{
	struct gdn_err err = GDN_ERR_INIT;

	gdn_loop_status_init(st);
	assert_int_equal(gdn_loop_status_load(st, buf, strlen(buf), "j", &err), 0);
}

static void test_running(void **unused)
{
	struct gdn_loop_status st;
	struct sbuf sb = SBUF_INIT;
	long long now = AT("09:00:33.000");
	json_t *doc;

	(void)unused;
	load(&st, journal);
	assert_string_equal(st.run_id, "r");
	assert_false(st.ended);
	assert_int_equal(st.iteration, 3);
	assert_true(st.in_iteration);
	assert_string_equal(st.phase, "agent");
	assert_int_equal(st.done, 2);
	assert_int_equal(st.reverted, 1);
	assert_int_equal(st.failures, 1);
	assert_int_equal(st.max_failures, 3);
	assert_true(st.has_champion && st.champion == 1.5);
	/* 6 s before the kill, 27 s since the resume; the hour in between is not counted */
	assert_int_equal(gdn_loop_status_elapsed_ms(&st, now), 33000);
	assert_int_equal(st.nr_last, 3);
	assert_string_equal(st.last[0].text, "baseline, 1.5");
	assert_string_equal(st.last[1].text, "reverted: within the noise band (throughput/x)");
	assert_string_equal(st.last[2].text, "failed: the agent made no commit; a counted failure");
	gdn_loop_status_render_text(&st, now, &sb);
	assert_string_equal(sb.buf,
			    "run r: running for 33 s (resumed 1 time; idle time not counted)\n"
			    "iteration 3 of 4: agent for 10 s (the iteration for 11 s); 2 done: 0 "
			    "kept, 1 reverted\n"
			    "champion: throughput/x 1.5 @ c0c0c0c0c0c0 (iteration 0)\n"
			    "failures: 1 counted; 2 more allowed (--max-failures 3)\n"
			    "last decisions:\n"
			    "  iteration 0: baseline, 1.5\n"
			    "  iteration 1: reverted: within the noise band (throughput/x)\n"
			    "  iteration 2: failed: the agent made no commit; a counted failure\n"
			    "agent: (no output yet)\n");
	doc = gdn_loop_status_json(&st, now);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")),
			    GDN_LOOP_STATUS_SCHEMA);
	assert_true(json_is_true(json_object_get(doc, "running")));
	assert_int_equal(json_integer_value(json_object_get(doc, "phase_ms")), 10000);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(doc, "failures"), "left")), 2);
	json_decref(doc);
	gdn_loop_status_release(&st);
	sbuf_release(&sb);
}

static void test_ended_and_agent_line(void **unused)
{
	struct gdn_loop_status st;
	struct sbuf sb = SBUF_INIT;
	char tmpl[] = "/tmp/gdnctl-status-XXXXXX", *dir = mkdtemp(tmpl), *path;
	FILE *f;

	(void)unused;
	assert_non_null(dir);
	path = xstrfmt("%s/iteration-003-transcript.log", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("==== gdnctl: command agent started ====\nthinking\n\n  patching x.c \x1b[1m \n\n"
	      "==== gdnctl: command agent ended: exit 0 ====\n",
	      f);
	fclose(f);
	sbuf_addf(&sb, "%s%s", journal,
		  TS("09:00:40.000", "r",
		     "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0"));
	load(&st, sb.buf);
	gdn_loop_status_read_agent_line(&st, dir);
	assert_string_equal(st.agent_line, "patching x.c  [1m");
	assert_true(st.ended);
	assert_false(st.in_iteration);
	/* the end is the last event, whatever the clock says now */
	assert_int_equal(gdn_loop_status_elapsed_ms(&st, AT("23:00:00.000")), 6000 + 34000);
	sbuf_reset(&sb);
	gdn_loop_status_render_text(&st, AT("23:00:00.000"), &sb);
	assert_non_null(strstr(sb.buf, "run r: ended (completed, exit 0) after 40 s"));
	gdn_loop_status_release(&st);
	sbuf_release(&sb);
	unlink(path);
	rmdir(dir);
	free(path);
}

static void test_budget_and_empty(void **unused)
{
	struct gdn_loop_status st;
	struct sbuf sb = SBUF_INIT;

	(void)unused;
	load(&st, TS("08:00:00.000", "r",
		     "\"event\":\"run_start\",\"iterations\":2,"
		     "\"max_failures\":-1,\"stop_after_failures\":2"));
	gdn_loop_status_render_text(&st, AT("08:00:01.000"), &sb);
	assert_non_null(strstr(sb.buf, "failures: 0 counted; no limit (--max-failures -1); 0 in a "
				       "row, the run stops at 2\n"));
	assert_non_null(strstr(sb.buf, "champion: none yet\n"));
	gdn_loop_status_release(&st);
	/* an older journal: no budget recorded */
	load(&st, TS("08:00:00.000", "r", "\"event\":\"run_start\",\"iterations\":2"));
	sbuf_reset(&sb);
	gdn_loop_status_render_text(&st, AT("08:00:01.000"), &sb);
	assert_non_null(strstr(sb.buf, "the budget is not in the journal"));
	gdn_loop_status_release(&st);
	load(&st, "");
	sbuf_reset(&sb);
	gdn_loop_status_render_text(&st, 0, &sb);
	assert_string_equal(sb.buf, "no run in the journal yet\n");
	gdn_loop_status_release(&st);
	sbuf_release(&sb);
}

static void test_words(void **unused)
{
	struct sbuf sb = SBUF_INIT;

	(void)unused;
	assert_string_equal(gdn_loop_token_words("within_threshold"), "within the noise band");
	assert_null(gdn_loop_token_words("nosuch"));
	gdn_loop_reason_words(&sb, "hook");
	assert_string_equal(sb.buf, "the validation gate or the performance policy failed");
	sbuf_reset(&sb);
	gdn_loop_reason_words(&sb, "performance gate_regression: trace/step_ms");
	assert_string_equal(sb.buf, "a trace gate regressed (trace/step_ms)");
	sbuf_reset(&sb);
	gdn_loop_reason_words(&sb, "kept: no_commit, my_var stays");
	assert_string_equal(sb.buf, "kept: the agent made no commit, my_var stays");
	sbuf_reset(&sb);
	gdn_loop_add_duration(&sb, 850);
	sbuf_adds(&sb, "|");
	gdn_loop_add_duration(&sb, 4200);
	sbuf_adds(&sb, "|");
	gdn_loop_add_duration(&sb, 250000);
	sbuf_adds(&sb, "|");
	gdn_loop_add_duration(&sb, 7500000);
	assert_string_equal(sb.buf, "850 ms|4.2 s|4 min 10 s|2 h 5 min");
	assert_int_equal(gdn_loop_ts_ms("1970-01-01T00:00:01.500Z"), 1500);
	assert_int_equal(gdn_loop_ts_ms("nonsense"), -1);
	sbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_running),
	    cmocka_unit_test(test_ended_and_agent_line),
	    cmocka_unit_test(test_budget_and_empty),
	    cmocka_unit_test(test_words),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
