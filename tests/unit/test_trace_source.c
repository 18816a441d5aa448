/*
 * Unit tests for where the loop's trace comes from (src/loop/trace_source.c):
 * what a profile printed (a gs:// profile URI, a hosted-XProf link, a W&B
 * run), and the remote listing command of the copy back
 * (src/backend/copyback.c).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/backend.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace_source.h"
#include "gdnctl/xalloc.h"

static void scan(const char *out, struct gdn_trace_refs *r)
{
	gdn_trace_refs_scan(out, strlen(out), NULL, r);
}

static void gcs_uri_cut_after_session(void **state)
{
	struct gdn_trace_refs r;

	(void)state;
	scan("I 12:00 Uploaded XProf session to gs://b/ttl=30d/xprof/run1/plugins/profile/"
	     "steps-5-to-30.\n"
	     "then gs://b/x/plugins/profile/2024_01_01/host.xplane.pb, done\n",
	     &r);
	assert_string_equal(r.gcs, "gs://b/x/plugins/profile/2024_01_01");
	assert_string_equal(r.gcs_from, "uri");
	assert_null(r.wandb);
	gdn_trace_refs_release(&r);

	scan("'gs://b/ttl=30d/xprof/run1/plugins/profile/steps-5-to-30/'\n", &r);
	assert_string_equal(r.gcs, "gs://b/ttl=30d/xprof/run1/plugins/profile/steps-5-to-30");
	gdn_trace_refs_release(&r);

	scan("(gs://b/run/plugins/profile)", &r);
	assert_string_equal(r.gcs, "gs://b/run/plugins/profile");
	gdn_trace_refs_release(&r);
}

/* A URI a NUL byte cuts short is no URI (the session "se" of "se\0ss"). */
static void uri_cut_by_nul(void **state)
{
	static const char gcs[] = "gs://b/x/plugins/profile/se\0ss/host.xplane.pb\n";
	static const char link[] = "https://xprof.example/?uri=gs://b/x/plugins/profile/se\0ss\n";
	struct gdn_trace_refs r;

	(void)state;
	gdn_trace_refs_scan(gcs, sizeof(gcs) - 1, NULL, &r);
	assert_null(r.gcs);
	gdn_trace_refs_release(&r);
	gdn_trace_refs_scan(link, sizeof(link) - 1, NULL, &r);
	assert_null(r.gcs);
	gdn_trace_refs_release(&r);
}

static void gcs_not_a_profile(void **state)
{
	static const char *const bad[] = {
	    "gs://bucket/checkpoints/step-100",
	    "gs:///plugins/profile/x",
	    "gs://b/run/plugins/profileX/y",
	    "gs://plugins/profile/x", /* the bucket is not a path */
	    "see https://iris.oa.dev/proxy/xprof/open?uri=gs%3A%2F%2Fb",     /* a bare bucket */
	    "https://iris.oa.dev/proxy/xprof/open?uri=gs%3A%2F%2Fb%0Ax%2Fy", /* a newline */
	    "https://iris.oa.dev/proxy/xprof/open?uri=s3%3A%2F%2Fb%2Fx",     /* not gs */
	    "",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct gdn_trace_refs r;

		scan(bad[i], &r);
		if (r.gcs)
			fail_msg("'%s' gave '%s'", bad[i], r.gcs);
		gdn_trace_refs_release(&r);
	}
}

static void xprof_link(void **state)
{
	struct gdn_trace_refs r;

	(void)state;
	scan("INFO XProf profile: https://iris.oa.dev/proxy/xprof/open?uri="
	     "gs%3A%2F%2Fmarin-tmp%2Fttl%3D30d%2Fxprof%2Frun-7&x=1\n",
	     &r);
	assert_string_equal(r.gcs, "gs://marin-tmp/ttl=30d/xprof/run-7/plugins/profile");
	assert_string_equal(r.gcs_from, "xprof-link");
	gdn_trace_refs_release(&r);

	/* a direct session URI wins over a link, wherever it is */
	scan("gs://b/r/plugins/profile/s1\n"
	     "https://x/open?uri=gs%3A%2F%2Fb%2Fr2\n",
	     &r);
	assert_string_equal(r.gcs, "gs://b/r/plugins/profile/s1");
	assert_string_equal(r.gcs_from, "uri");
	gdn_trace_refs_release(&r);

	/* a link to a session */
	scan("https://x/open?a=b&uri=gs%3A%2F%2Fb%2Fr%2Fplugins%2Fprofile%2Fs9%2Fh.xplane.pb", &r);
	assert_string_equal(r.gcs, "gs://b/r/plugins/profile/s9");
	gdn_trace_refs_release(&r);
}

static void wandb_run(void **state)
{
	struct gdn_trace_refs r;

	(void)state;
	scan("wandb: View run at: https://wandb.ai/marin/gdn/runs/abc123?nw=1\n", &r);
	assert_string_equal(r.wandb, "wandb:marin/gdn/abc123");
	assert_string_equal(r.wandb_url, "https://wandb.ai/marin/gdn/runs/abc123");
	assert_null(r.gcs);
	gdn_trace_refs_release(&r);
	gdn_trace_refs_scan("see http://127.0.0.1:9/e/p/runs/r2", 34, "http://127.0.0.1:9", &r);
	assert_string_equal(r.wandb, "wandb:e/p/r2");
	gdn_trace_refs_release(&r);
}

static void remote_list_command(void **state)
{
	struct sbuf sb = SBUF_INIT;

	(void)state;
	gdn_copy_remote_list_command(&sb, "~/wd", "tra ces", 1);
	assert_string_equal(sb.buf,
			    "cd -- \"$HOME\"/wd || exit 3; if test -d 'tra ces'; then cd "
			    "-- 'tra ces' && exec find . -mindepth 1 -maxdepth 1 -type f "
			    "-printf 'gdnctl-file %T@ %s %P\\n'; elif test -f 'tra ces'; then "
			    "exec find 'tra ces' -maxdepth 0 -printf 'gdnctl-one %T@ %s "
			    "%p\\n'; else echo gdnctl-missing; fi");
	sbuf_reset(&sb);
	gdn_copy_remote_list_command(&sb, NULL, "x'; rm -rf ~; '", 0);
	assert_non_null(strstr(sb.buf, "test -d 'x'\\''; rm -rf ~; '\\'''"));
	assert_non_null(strstr(sb.buf, "find . -mindepth 1 -type f")); /* no depth limit */
	assert_null(strstr(sb.buf, "cd -- \"$HOME\""));
	sbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gcs_uri_cut_after_session),
	    cmocka_unit_test(gcs_not_a_profile),
	    cmocka_unit_test(uri_cut_by_nul),
	    cmocka_unit_test(xprof_link),
	    cmocka_unit_test(wandb_run),
	    cmocka_unit_test(remote_list_command),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
