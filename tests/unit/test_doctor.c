/* Unit tests for the pure parts of gdnctl doctor (src/doctor/doctor.c). */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/doctor.h"
#include "gdnctl/err.h"
#include "gdnctl/json.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

static char tmpdir[] = "/tmp/test_doctor.XXXXXX";

static bool report_contains(const struct gdn_doctor_report *r, const char *needle)
{
	for (size_t i = 0; i < r->nr; i++) {
		if (strstr(r->v[i].name, needle) || strstr(r->v[i].detail, needle) ||
		    (r->v[i].fix && strstr(r->v[i].fix, needle)))
			return true;
	}
	return false;
}

static const struct gdn_doctor_result *find(const struct gdn_doctor_report *r, const char *name)
{
	for (size_t i = 0; i < r->nr; i++)
		if (!strcmp(r->v[i].name, name))
			return &r->v[i];
	return NULL;
}

static void result_list(void **state)
{
	struct gdn_doctor_report r = GDN_DOCTOR_REPORT_INIT;

	(void)state;
	gdn_doctor_add(&r, GDN_DOCTOR_OK, "git", NULL, "version %d", 2);
	gdn_doctor_add(&r, GDN_DOCTOR_WARN, "token: hf", "export HF_TOKEN", "not set");
	gdn_doctor_add(&r, GDN_DOCTOR_FAIL, "backend box", "fix it\nsecond line",
		       "line one\nline two");
	gdn_doctor_add(&r, GDN_DOCTOR_SKIP, "agent", NULL, "--no-agent");
	gdn_doctor_add(&r, GDN_DOCTOR_FAIL, "ctl", "", "a\tb");
	assert_int_equal(r.nr, 5);
	assert_string_equal(r.v[0].detail, "version 2");
	assert_string_equal(r.v[2].detail, "line one");
	assert_string_equal(r.v[2].fix, "fix it");
	assert_null(r.v[3].fix);
	assert_null(r.v[4].fix);
	assert_string_equal(r.v[4].detail, "a b");
	assert_int_equal(gdn_doctor_count(&r, GDN_DOCTOR_OK), 1);
	assert_int_equal(gdn_doctor_count(&r, GDN_DOCTOR_WARN), 1);
	assert_int_equal(gdn_doctor_count(&r, GDN_DOCTOR_FAIL), 2);
	assert_int_equal(gdn_doctor_count(&r, GDN_DOCTOR_SKIP), 1);
	assert_string_equal(gdn_doctor_status_name(GDN_DOCTOR_OK), "ok");
	assert_string_equal(gdn_doctor_status_name(GDN_DOCTOR_WARN), "warn");
	assert_string_equal(gdn_doctor_status_name(GDN_DOCTOR_FAIL), "FAIL");
	assert_string_equal(gdn_doctor_status_name(GDN_DOCTOR_SKIP), "skip");
	gdn_doctor_report_release(&r);
	assert_int_equal(r.nr, 0);
	assert_null(r.v);
}

static void long_detail_is_cut(void **state)
{
	struct gdn_doctor_report r = GDN_DOCTOR_REPORT_INIT;
	char big[2000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	gdn_doctor_add(&r, GDN_DOCTOR_WARN, "n", big, "%s", big);
	assert_true(strlen(r.v[0].detail) <= 400);
	assert_true(strlen(r.v[0].fix) <= 400);
	assert_string_equal(r.v[0].detail + strlen(r.v[0].detail) - 3, "...");
	gdn_doctor_report_release(&r);
}

static void json_document(void **state)
{
	struct gdn_doctor_report r = GDN_DOCTOR_REPORT_INIT;
	json_t *doc, *checks, *c;

	(void)state;
	gdn_doctor_add(&r, GDN_DOCTOR_OK, "git", NULL, "fine");
	gdn_doctor_add(&r, GDN_DOCTOR_WARN, "disk: tmp", "free space", "low");
	doc = gdn_doctor_report_json(&r);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")), "gdnctl.doctor.v1");
	assert_true(json_is_true(json_object_get(doc, "ok")));
	json_decref(doc);

	gdn_doctor_add(&r, GDN_DOCTOR_FAIL, "backend box: reachable", "start sshd", "refused");
	doc = gdn_doctor_report_json(&r);
	assert_true(json_is_false(json_object_get(doc, "ok")));
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(doc, "counts"), "fail")), 1);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(doc, "counts"), "warn")), 1);
	checks = json_object_get(doc, "checks");
	assert_int_equal(json_array_size(checks), 3);
	c = json_array_get(checks, 0);
	assert_true(json_is_null(json_object_get(c, "fix")));
	c = json_array_get(checks, 2);
	assert_string_equal(json_string_value(json_object_get(c, "status")), "fail");
	assert_string_equal(json_string_value(json_object_get(c, "name")),
			    "backend box: reachable");
	assert_string_equal(json_string_value(json_object_get(c, "fix")), "start sshd");
	json_decref(doc);
	gdn_doctor_report_release(&r);
}

static void disk_threshold(void **state)
{
	(void)state;
	assert_int_equal(gdn_doctor_disk_status(999, 1000), GDN_DOCTOR_WARN);
	assert_int_equal(gdn_doctor_disk_status(1000, 1000), GDN_DOCTOR_OK);
	assert_int_equal(gdn_doctor_disk_status(0, 1), GDN_DOCTOR_WARN);
	/* 0: the default of 1 GiB */
	assert_int_equal(gdn_doctor_disk_status((1ULL << 30) - 1, 0), GDN_DOCTOR_WARN);
	assert_int_equal(gdn_doctor_disk_status(1ULL << 30, 0), GDN_DOCTOR_OK);
}

static void disk_check_real(void **state)
{
	struct gdn_doctor_report r = GDN_DOCTOR_REPORT_INIT;
	char *deep = xstrfmt("%s/not/yet/created", tmpdir);
	const struct gdn_doctor_result *res;

	(void)state;
	gdn_doctor_check_disk(&r, "log dir", deep, 1);
	gdn_doctor_check_disk(&r, "tmp", tmpdir, ULLONG_MAX);
	assert_int_equal(r.nr, 2);
	res = find(&r, "disk: log dir");
	assert_non_null(res);
	assert_int_equal(res->status, GDN_DOCTOR_OK);
	assert_null(res->fix);
	/* measured at the nearest existing parent */
	assert_non_null(strstr(res->detail, tmpdir));
	assert_null(strstr(res->detail, "not/yet"));
	assert_non_null(strstr(res->detail, " free of "));
	res = find(&r, "disk: tmp");
	assert_int_equal(res->status, GDN_DOCTOR_WARN);
	assert_non_null(res->fix);
	assert_non_null(strstr(res->fix, "free space"));
	gdn_doctor_report_release(&r);
	free(deep);
}

static void sizes(void **state)
{
	unsigned long long n = 0;
	struct sbuf sb = SBUF_INIT;

	(void)state;
	assert_int_equal(gdn_doctor_parse_size("10", &n), 0);
	assert_int_equal(n, 10);
	assert_int_equal(gdn_doctor_parse_size("500M", &n), 0);
	assert_int_equal(n, 500ULL << 20);
	assert_int_equal(gdn_doctor_parse_size("2G", &n), 0);
	assert_int_equal(n, 2ULL << 30);
	assert_int_equal(gdn_doctor_parse_size("2gib", &n), 0);
	assert_int_equal(n, 2ULL << 30);
	assert_int_equal(gdn_doctor_parse_size("3KB", &n), 0);
	assert_int_equal(n, 3072);
	assert_int_equal(gdn_doctor_parse_size("7B", &n), 0);
	assert_int_equal(n, 7);
	n = 42;
	assert_int_equal(gdn_doctor_parse_size("1.5G", &n), GDN_EUSAGE);
	assert_int_equal(gdn_doctor_parse_size("G", &n), GDN_EUSAGE);
	assert_int_equal(gdn_doctor_parse_size("-1", &n), GDN_EUSAGE);
	assert_int_equal(gdn_doctor_parse_size("", &n), GDN_EUSAGE);
	assert_int_equal(gdn_doctor_parse_size("5X", &n), GDN_EUSAGE);
	assert_int_equal(gdn_doctor_parse_size("5Gx", &n), GDN_EUSAGE);
	assert_int_equal(gdn_doctor_parse_size("99999999999999T", &n), GDN_EUSAGE);
	assert_int_equal(n, 42);

	gdn_doctor_format_bytes(512, &sb);
	assert_string_equal(sb.buf, "512 B");
	sbuf_reset(&sb);
	gdn_doctor_format_bytes(1536, &sb);
	assert_string_equal(sb.buf, "1.5 KiB");
	sbuf_reset(&sb);
	gdn_doctor_format_bytes(1ULL << 30, &sb);
	assert_string_equal(sb.buf, "1.0 GiB");
	sbuf_release(&sb);
}

static void find_program(void **state)
{
	char *p = gdn_doctor_find_program("sh");
	char *noexec = xstrfmt("%s/notexec", tmpdir), *exec = xstrfmt("%s/isexec", tmpdir);
	char *old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "");
	FILE *f;

	(void)state;
	assert_non_null(p);
	assert_true(p[0] == '/');
	free(p);
	assert_null(gdn_doctor_find_program("gdnctl-no-such-program-xyz"));
	assert_null(gdn_doctor_find_program("/nonexistent/dir/prog"));
	assert_null(gdn_doctor_find_program(""));
	f = fopen(noexec, "w");
	assert_non_null(f);
	fclose(f);
	f = fopen(exec, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(chmod(noexec, 0644), 0);
	assert_int_equal(chmod(exec, 0755), 0);
	setenv("PATH", tmpdir, 1);
	assert_null(gdn_doctor_find_program("notexec"));
	p = gdn_doctor_find_program("isexec");
	assert_non_null(p);
	assert_string_equal(p, exec);
	free(p);
	assert_null(gdn_doctor_find_program("sh")); /* only tmpdir in PATH now */
	setenv("PATH", old_path, 1);
	free(old_path);
	free(noexec);
	free(exec);
}

/* A registered secret value is masked in every stored detail and fix. */
static void secret_masked_in_results(void **state)
{
	struct gdn_doctor_report r = GDN_DOCTOR_REPORT_INIT;

	(void)state;
	gdn_secret_add_value("s3cr3t-registered-value");
	gdn_doctor_add(&r, GDN_DOCTOR_FAIL, "x", "use s3cr3t-registered-value again",
		       "token s3cr3t-registered-value is bad");
	assert_false(report_contains(&r, "s3cr3t-registered-value"));
	assert_non_null(strstr(r.v[0].detail, "***"));
	assert_non_null(strstr(r.v[0].fix, "***"));
	gdn_doctor_report_release(&r);
}

/* The token checks name where a token came from, never its value. */
static void tokens_presence_only(void **state)
{
	struct gdn_doctor_report r = GDN_DOCTOR_REPORT_INIT;
	const struct gdn_doctor_result *hf, *wb;
	char *tokfile = xstrfmt("%s/hf-token", tmpdir), *nofile = xstrfmt("%s/none", tmpdir);
	char *expect = NULL;
	json_t *doc;
	struct sbuf dump = SBUF_INIT;
	FILE *f;

	(void)state;
	unsetenv("HUGGING_FACE_HUB_TOKEN");
	unsetenv("WANDB_BASE_URL");
	setenv("HF_TOKEN_PATH", nofile, 1);
	setenv("NETRC", nofile, 1);
	setenv("HF_TOKEN", "hf_unit-secret-value-1", 1);
	setenv("WANDB_API_KEY", "wandb-unit-secret-value-2", 1);
	gdn_doctor_check_tokens(&r);
	hf = find(&r, "token: hf");
	wb = find(&r, "token: wandb");
	assert_non_null(hf);
	assert_non_null(wb);
	assert_int_equal(hf->status, GDN_DOCTOR_OK);
	assert_string_equal(hf->detail, "set (from HF_TOKEN)");
	assert_int_equal(wb->status, GDN_DOCTOR_OK);
	assert_string_equal(wb->detail, "set (from WANDB_API_KEY)");
	doc = gdn_doctor_report_json(&r);
	gdn_json_dump(&dump, doc);
	json_decref(doc);
	assert_null(strstr(dump.buf, "unit-secret-value"));
	assert_false(report_contains(&r, "unit-secret-value"));
	gdn_doctor_report_release(&r);

	/* none set: warnings with a fix */
	unsetenv("HF_TOKEN");
	unsetenv("WANDB_API_KEY");
	gdn_doctor_check_tokens(&r);
	hf = find(&r, "token: hf");
	wb = find(&r, "token: wandb");
	assert_int_equal(hf->status, GDN_DOCTOR_WARN);
	assert_non_null(hf->fix);
	assert_int_equal(wb->status, GDN_DOCTOR_WARN);
	assert_non_null(wb->fix);
	gdn_doctor_report_release(&r);

	/* a token file: its path is the source */
	f = fopen(tokfile, "w");
	assert_non_null(f);
	fputs("hf_file-secret-value-3\n", f);
	fclose(f);
	setenv("HF_TOKEN_PATH", tokfile, 1);
	gdn_doctor_check_tokens(&r);
	hf = find(&r, "token: hf");
	expect = xstrfmt("set (from %s)", tokfile);
	assert_int_equal(hf->status, GDN_DOCTOR_OK);
	assert_string_equal(hf->detail, expect);
	assert_false(report_contains(&r, "file-secret-value"));
	gdn_doctor_report_release(&r);
	unsetenv("HF_TOKEN_PATH");
	unsetenv("NETRC");
	free(expect);
	free(tokfile);
	free(nofile);
	sbuf_release(&dump);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	const char *names[] = {"notexec", "isexec", "hf-token"};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char *p = xstrfmt("%s/%s", tmpdir, names[i]);

		unlink(p);
		free(p);
	}
	return rmdir(tmpdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(result_list),	    cmocka_unit_test(long_detail_is_cut),
	    cmocka_unit_test(json_document),	    cmocka_unit_test(disk_threshold),
	    cmocka_unit_test(disk_check_real),	    cmocka_unit_test(sizes),
	    cmocka_unit_test(find_program),	    cmocka_unit_test(secret_masked_in_results),
	    cmocka_unit_test(tokens_presence_only),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
