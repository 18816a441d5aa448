/*
 * Unit tests for where validation runs (src/loop/targets.c, hold.c): the
 * original's Ray cluster discovery filters (§3.10.1: stem minus "marin-",
 * case-insensitive excludes, tpu_slice_ keys, the modern families), the
 * passes over the targets, and the held dev TPU's health check,
 * rate-limited re-acquire, directive rewrite and release, against fake
 * backends.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/loop.h"
#include "gdnctl/gate.h"
#include "gdnctl/hold.h"
#include "gdnctl/targets.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

static void test_slice_key(void **state)
{
	static const char *const cases[][2] = {
	    {"v5p-8", "tpu_slice_v5p_8"},
	    {"V6E-256", "tpu_slice_v6e_256"},
	    {"--v5e..4--", "tpu_slice_v5e_4"},
	    {"v4 / 32", "tpu_slice_v4_32"},
	    {"", "tpu_slice_"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sbuf sb = SBUF_INIT;

		gdn_tpu_slice_key(cases[i][0], &sb);
		assert_string_equal(sb.buf, cases[i][1]);
		sbuf_release(&sb);
	}
}

static void test_matches(void **state)
{
	struct strvec ex = STRVEC_INIT;
	struct gdn_cluster_filter f = {&ex, "v5p-8", false};
	struct gdn_cluster_filter any = {&ex, "auto", false};
	struct gdn_cluster_filter modern = {&ex, "v5p-8", true};

	(void)state;
	strvec_pushl(&ex, "vllm", "big-run", " Asia ", "", NULL);
	assert_true(gdn_cluster_matches("us-central2", "x:\n  tpu_slice_v5p_8:\n", &f));
	/* excludes: case-insensitive substrings, trimmed; empty ones ignored */
	assert_false(gdn_cluster_matches("us-east5-VLLM", "tpu_slice_v5p_8", &f));
	assert_false(gdn_cluster_matches("big-run", "tpu_slice_v5p_8", &f));
	assert_false(gdn_cluster_matches("asia-northeast1", "tpu_slice_v5p_8", &f));
	/* the TPU type's key must appear; "auto" needs any slice */
	assert_false(gdn_cluster_matches("eu-west4", "tpu_slice_v6e_8", &f));
	assert_true(gdn_cluster_matches("eu-west4", "tpu_slice_v6e_8", &any));
	assert_false(gdn_cluster_matches("eu-west4", "no slices", &any));
	/* modern families for tests */
	assert_true(gdn_cluster_matches("eu-west4", "tpu_slice_v6e_8", &modern));
	assert_true(gdn_cluster_matches("x", "tpu_slice_v5e_16", &modern));
	assert_false(gdn_cluster_matches("x", "tpu_slice_v4_8", &modern));
	assert_false(gdn_cluster_matches("vllm-x", "tpu_slice_v6e_8", &modern));
	strvec_clear(&ex);
}

static void test_discover(void **state)
{
	char tmpl[] = "/tmp/gdnctl-targets-XXXXXX";
	char *root = mkdtemp(tmpl), *infra;
	struct strvec ex = STRVEC_INIT, out = STRVEC_INIT;
	struct gdn_cluster_filter f = {&ex, "v5p-8", false};
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	assert_non_null(root);
	/* no infra/: nothing, no error */
	assert_int_equal(gdn_clusters_discover(root, &f, &out, &err), 0);
	assert_int_equal(out.nr, 0);
	infra = xstrfmt("%s/infra", root);
	assert_int_equal(mkdir(infra, 0755), 0);
	strvec_pushl(&ex, "vllm", "big-run", NULL);
	unit_write_file(infra, "marin-us-west4.yaml", "tpu_slice_v5p_8:\n", 0644);
	unit_write_file(infra, "marin-us-central2.yaml", "tpu_slice_v5p_8:\n", 0644);
	unit_write_file(infra, "marin-us-east5-vllm.yaml", "tpu_slice_v5p_8:\n", 0644);
	unit_write_file(infra, "marin-eu-west4.yaml", "tpu_slice_v6e_8:\n", 0644);
	unit_write_file(infra, "marin-.yaml", "tpu_slice_v5p_8:\n", 0644);
	unit_write_file(infra, "cluster-x.yaml", "tpu_slice_v5p_8:\n", 0644);
	unit_write_file(infra, "marin-us-east1.yml", "tpu_slice_v5p_8:\n", 0644);
	strvec_push(&out, "us-west4"); /* already there: not added again */
	assert_int_equal(gdn_clusters_discover(root, &f, &out, &err), 0);
	assert_int_equal(out.nr, 2);
	assert_string_equal(out.v[0], "us-west4");
	assert_string_equal(out.v[1], "us-central2");
	strvec_clear(&out);
	assert_int_equal(gdn_clusters_discover(root, &f, &out, &err), 0);
	assert_int_equal(out.nr, 2);
	assert_string_equal(out.v[0], "us-central2"); /* sorted by file name */
	assert_string_equal(out.v[1], "us-west4");
	strvec_clear(&out);
	f.modern = true;
	assert_int_equal(gdn_clusters_discover(root, &f, &out, &err), 0);
	assert_int_equal(out.nr, 3);
	assert_string_equal(out.v[0], "eu-west4");
	strvec_clear(&out);
	strvec_clear(&ex);
	{
		char *cmd[] = {"rm", "-rf", root, NULL};
		pid_t pid = fork();

		if (!pid) {
			execvp(cmd[0], cmd);
			_exit(127);
		}
		waitpid(pid, NULL, 0);
	}
	free(infra);
}

static void test_add_unique(void **state)
{
	struct strvec a = STRVEC_INIT, b = STRVEC_INIT;

	(void)state;
	strvec_pushl(&a, "x", NULL);
	strvec_pushl(&b, "y", "", "x", "y", "z", NULL);
	gdn_strvec_add_unique(&a, &b);
	assert_int_equal(a.nr, 3);
	assert_string_equal(a.v[1], "y");
	assert_string_equal(a.v[2], "z");
	strvec_clear(&a);
	strvec_clear(&b);
}

/* ---- fake backends ---- */

struct fake {
	int runs, fail_runs; /* the first fail_runs runs fail */
	int holds, releases, fail_holds;
	bool held, dead;
	const char *cluster;
};
static struct fake fk;

static int fake_run(struct gdn_backend *b, const struct gdn_run_spec *spec,
		    struct gdn_job_status *st, struct gdn_err *err)
{
	(void)b;
	(void)spec;
	(void)err;
	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	fk.runs++;
	st->state = fk.runs <= fk.fail_runs ? GDN_JOB_FAILED : GDN_JOB_SUCCEEDED;
	st->exit_code = fk.runs <= fk.fail_runs ? 3 : 0;
	snprintf(st->native, sizeof(st->native), "%s", fk.runs <= fk.fail_runs ? "FAILED" : "OK");
	return 0;
}

static int fake_hold(struct gdn_backend *b, struct gdn_err *err)
{
	(void)b;
	fk.holds++;
	if (fk.holds <= fk.fail_holds)
		return gdn_err_set(err, GDN_EBACKEND, "no capacity");
	fk.held = true;
	fk.dead = false;
	return 0;
}

static int fake_release(struct gdn_backend *b, struct gdn_err *err)
{
	(void)b;
	(void)err;
	if (fk.held)
		fk.releases++;
	fk.held = false;
	return 0;
}

static int fake_status(struct gdn_backend *b, const char *job_id, struct gdn_job_status *st,
		       struct gdn_err *err)
{
	(void)b;
	(void)job_id;
	*st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	if (!fk.held)
		return gdn_err_set(err, GDN_ENOTFOUND, "not held");
	st->state = fk.dead ? GDN_JOB_FAILED : GDN_JOB_RUNNING;
	if (fk.dead) {
		snprintf(st->message, sizeof(st->message), "the allocation process exited");
		fk.held = false;
	}
	return 0;
}

static const struct gdn_backend_ops fake_ops = {
    .type = "fake",
    .run = fake_run,
    .status = fake_status,
    .hold = fake_hold,
    .release = fake_release,
};

struct events {
	struct strvec msgs, journal;
};

static void on_report(void *ctx, enum gdn_loop_level level, const char *msg)
{
	(void)level;
	strvec_push(&((struct events *)ctx)->msgs, msg);
}

static void on_journal(void *ctx, const char *event, json_t *ev)
{
	char *text = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);

	strvec_pushf(&((struct events *)ctx)->journal, "%s %s", event, text);
	free(text);
	json_decref(ev);
}

static void on_say(enum gdn_loop_level level, const char *msg, void *payload)
{
	on_report(payload, level, msg);
}

static bool has(const struct strvec *v, const char *needle)
{
	for (size_t i = 0; i < v->nr; i++)
		if (strstr(v->v[i], needle))
			return true;
	return false;
}

static void test_passes(void **state)
{
	struct gdn_backend b = {.ops = &fake_ops, .name = (char *)"fake"};
	struct gdn_targets_opts o = {0};
	struct gdn_targets *t = NULL;
	struct events ev = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_loop_iter it = {4, "a", "b", 1, on_report, on_journal, &ev};
	struct gdn_run_spec spec = {0};
	struct gdn_err err = GDN_ERR_INIT;
	int rc = -1;

	(void)state;
	memset(&fk, 0, sizeof(fk));
	fk.fail_runs = 2;
	o.backend = &b;
	o.passes = 3;
	assert_int_equal(gdn_targets_new(NULL, &o, &t, &err), 0);
	assert_int_equal(gdn_targets_run(t, &it, "tests", 1, "true", "/", &spec, &rc, &err), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(fk.runs, 3);
	assert_true(has(&ev.msgs, "validation tests failed; waiting 0s before retry."));
	assert_true(has(&ev.journal,
			"validation {\"iteration\":4,\"phase\":\"tests\",\"attempt\":1,"
			"\"pass\":3,\"target\":\"backend fake\",\"rc\":0"));
	/* all passes fail: the last exit code */
	memset(&fk, 0, sizeof(fk));
	fk.fail_runs = 10;
	assert_int_equal(gdn_targets_run(t, &it, "profile", 1, "true", "/", &spec, &rc, &err), 0);
	assert_int_equal(rc, 3);
	assert_int_equal(fk.runs, 3);
	gdn_targets_free(t);
	strvec_clear(&ev.msgs);
	strvec_clear(&ev.journal);
}

static void test_hold(void **state)
{
	struct gdn_backend dev = {.ops = &fake_ops, .name = (char *)"dev"};
	struct gdn_backend plain = {.ops = &fake_ops, .name = (char *)"plain"};
	struct strvec directives = STRVEC_INIT;
	struct events ev = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_loop_iter it = {1, "a", "b", 1, on_report, on_journal, &ev};
	struct gdn_hold_opts ho = {0};
	struct gdn_targets_opts o = {0};
	struct gdn_targets *t = NULL;
	struct gdn_run_spec spec = {0};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_hold *h;
	int rc = -1;

	(void)state;
	memset(&fk, 0, sizeof(fk));
	strvec_push(&directives, "base");
	ho.backend = &dev;
	ho.tpu_name = "me";
	ho.required = false;
	ho.reacquire_interval_ms = 60 * 60 * 1000;
	ho.mode = GDN_GATE_REQUIRED;
	ho.directives = &directives;
	ho.say = on_say;
	ho.payload = &ev;
	fk.fail_holds = 1;
	h = gdn_hold_new(&ho);
	/* best-effort: the failed start is a warning, no directive */
	assert_int_equal(gdn_hold_acquire(h, &err), 0);
	assert_true(has(&ev.msgs, "managed dev TPU allocation failed; continuing without held"));
	assert_int_equal(directives.nr, 1);
	assert_false(gdn_hold_alive(h, &it));
	o.hold = h;
	o.dev = &dev;
	o.backend = &plain;
	o.passes = 1;
	assert_int_equal(gdn_targets_new(NULL, &o, &t, &err), 0);
	/* a validation re-acquires first (not rate-limited yet), then runs on the dev TPU */
	assert_int_equal(gdn_targets_run(t, &it, "tests", 1, "true", "/", &spec, &rc, &err), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(fk.holds, 2);
	assert_int_equal(fk.runs, 1);
	assert_true(has(&ev.msgs, "attempting managed dev TPU re-acquire (validation tests "
				  "starting without an active held dev TPU)"));
	assert_int_equal(directives.nr, 2); /* the directive appears once held */
	assert_non_null(strstr(directives.v[1], "Managed dev TPU mode is active"));
	assert_true(has(&ev.journal, "\"action\":\"reacquired\""));
	assert_true(gdn_hold_alive(h, &it));
	/* the allocation dies: lost, and the next re-acquire is rate-limited */
	fk.dead = true;
	fk.fail_runs = 1;
	fk.runs = 0;
	assert_int_equal(gdn_targets_run(t, &it, "profile", 1, "true", "/", &spec, &rc, &err), 0);
	assert_true(has(&ev.journal, "\"action\":\"lost\""));
	assert_true(has(&ev.msgs, "managed dev TPU re-acquire is rate-limited; skipping for"));
	assert_int_equal(fk.holds, 2);
	assert_int_equal(rc, 3);	    /* the fallback ran (and failed) */
	assert_int_equal(directives.nr, 2); /* the stale directive is kept, not duplicated */
	/*
	 * a re-acquired allocation is released at the end (docs/compatibility.md,
	 * "Bugs of the original that gdnctl fixes")
	 */
	fk.held = true;
	assert_int_equal(gdn_hold_release(h, &err), 0);
	assert_false(fk.held);
	gdn_targets_free(t);
	gdn_hold_free(h);
	strvec_clear(&directives);
	strvec_clear(&ev.msgs);
	strvec_clear(&ev.journal);
}

static void test_directive(void **state)
{
	struct sbuf sb = SBUF_INIT;

	(void)state;
	gdn_hold_directive("us-east5", "me", NULL, GDN_GATE_PROFILE_ONLY, &sb);
	assert_non_null(strstr(sb.buf, "`--cluster us-east5` and `--tpu-name me`"));
	assert_non_null(strstr(sb.buf, "--tpu v5p-8 ..."));
	assert_non_null(strstr(sb.buf, "without a profile result (profile-only)."));
	sbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slice_key), cmocka_unit_test(test_matches),
	    cmocka_unit_test(test_discover),  cmocka_unit_test(test_add_unique),
	    cmocka_unit_test(test_passes),    cmocka_unit_test(test_hold),
	    cmocka_unit_test(test_directive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
