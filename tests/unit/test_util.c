/* Unit tests for sbuf, strvec, the error helpers, files and the clock. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/file.h"
#include "gdnctl/json.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static void sbuf_never_null(void **state)
{
	struct sbuf sb = SBUF_INIT;

	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, "");
	sbuf_adds(&sb, "abc");
	sbuf_addch(&sb, 'd');
	sbuf_addf(&sb, "-%d-%s", 42, "x");
	assert_string_equal(sb.buf, "abcd-42-x");
	assert_int_equal(sb.len, 9);
	sbuf_release(&sb);
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, "");
	assert_int_equal(sb.len, 0);
}

static void sbuf_grows_past_initial(void **state)
{
	struct sbuf sb = SBUF_INIT;

	for (int i = 0; i < 10000; i++)
		sbuf_addf(&sb, "%04d", i % 10000);
	assert_int_equal(sb.len, 40000);
	assert_memory_equal(sb.buf + 39996, "9999", 4);
	assert_int_equal(sb.buf[sb.len], '\0');
	sbuf_release(&sb);
}

static void sbuf_limit_truncates(void **state)
{
	struct sbuf sb = SBUF_INIT;

	sb.limit = 5;
	assert_int_equal(sbuf_adds(&sb, "abc"), 0);
	assert_int_equal(sbuf_adds(&sb, "defg"), -1);
	assert_string_equal(sb.buf, "abcde");
	assert_int_equal(sbuf_addch(&sb, 'z'), -1);
	assert_int_equal(sbuf_addf(&sb, "%s", "more"), -1);
	assert_string_equal(sb.buf, "abcde");
	sbuf_release(&sb);
	assert_int_equal(sb.limit, 5);
}

static void sbuf_detach_and_trim(void **state)
{
	struct sbuf sb = SBUF_INIT;
	size_t len;
	char *s;

	sbuf_adds(&sb, "  \t hello world \n");
	sbuf_trim(&sb);
	assert_string_equal(sb.buf, "hello world");
	assert_true(sbuf_starts_with(&sb, "hello"));
	assert_false(sbuf_starts_with(&sb, "world"));
	s = sbuf_detach(&sb, &len);
	assert_string_equal(s, "hello world");
	assert_int_equal(len, 11);
	assert_string_equal(sb.buf, "");
	free(s);
	/* detaching an empty buffer still gives an owned string */
	s = sbuf_detach(&sb, NULL);
	assert_string_equal(s, "");
	free(s);
}

static void sbuf_shell_quoting(void **state)
{
	struct sbuf sb = SBUF_INIT;

	sbuf_add_shell_quoted(&sb, "plain-word_1.2/x");
	sbuf_addch(&sb, ' ');
	sbuf_add_shell_quoted(&sb, "a b");
	sbuf_addch(&sb, ' ');
	sbuf_add_shell_quoted(&sb, "it's");
	sbuf_addch(&sb, ' ');
	sbuf_add_shell_quoted(&sb, "");
	sbuf_addch(&sb, ' ');
	sbuf_add_shell_quoted(&sb, "$(touch pwned); `id`");
	assert_string_equal(sb.buf, "plain-word_1.2/x 'a b' 'it'\\''s' '' '$(touch pwned); `id`'");
	sbuf_release(&sb);
}

static void sbuf_read_file_errors(void **state)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char path[] = "/tmp/gdnctl-test-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello\n", 6), 6);
	close(fd);
	assert_int_equal(sbuf_read_file(&sb, path, 0, &err), 0);
	assert_string_equal(sb.buf, "hello\n");
	sbuf_reset(&sb);
	assert_int_equal(sbuf_read_file(&sb, path, 3, &err), GDN_EIO);
	assert_non_null(strstr(err.msg, "larger than 3 bytes"));
	unlink(path);
	sbuf_reset(&sb);
	assert_int_equal(sbuf_read_file(&sb, path, 0, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "No such file or directory"));
	assert_non_null(strstr(err.msg, path));
	assert_int_equal(sbuf_read_file(&sb, "/", 0, &err), GDN_EIO);
	sbuf_release(&sb);
}

static void strvec_basics(void **state)
{
	struct strvec sv = STRVEC_INIT;
	const char **det;

	assert_non_null(sv.v);
	assert_null(sv.v[0]);
	strvec_push(&sv, "a");
	strvec_pushf(&sv, "%s=%d", "K", 1);
	strvec_pushl(&sv, "x", "y", NULL);
	assert_int_equal(sv.nr, 4);
	assert_string_equal(sv.v[1], "K=1");
	assert_null(sv.v[4]);
	assert_true(strvec_contains(&sv, "y"));
	assert_false(strvec_contains(&sv, "z"));
	strvec_pop(&sv);
	assert_int_equal(sv.nr, 3);
	assert_null(sv.v[3]);
	det = strvec_detach(&sv);
	assert_string_equal(det[0], "a");
	assert_int_equal(sv.nr, 0);
	for (size_t i = 0; det[i]; i++)
		free((char *)det[i]);
	free(det);
	strvec_clear(&sv);
}

static void strvec_split_trims(void **state)
{
	struct strvec sv = STRVEC_INIT;

	strvec_split(&sv, " Date , Commit,,  Hypothesis ,", ',');
	assert_int_equal(sv.nr, 3);
	assert_string_equal(sv.v[0], "Date");
	assert_string_equal(sv.v[1], "Commit");
	assert_string_equal(sv.v[2], "Hypothesis");
	strvec_clear(&sv);
	strvec_split(&sv, "", ',');
	assert_int_equal(sv.nr, 0);
	strvec_clear(&sv);
}

static int fails_with_context(struct gdn_err *err)
{
	errno = ENOENT;
	gdn_err_errno(err, GDN_EIO, "cannot open '%s'", "x.md");
	return gdn_err_prefix(err, "loading config");
}

static void err_messages_and_codes(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_err_set(&err, GDN_EUSAGE, "bad '%s'", "x"), GDN_EUSAGE);
	assert_string_equal(err.msg, "bad 'x'");
	assert_int_equal(fails_with_context(&err), GDN_EIO);
	assert_string_equal(err.msg,
			    "loading config: cannot open 'x.md': No such file or directory");
	assert_int_equal(gdn_err_set(NULL, GDN_ECONFIG, "ignored"), GDN_ECONFIG);
	assert_int_equal(gdn_exit_for_error(GDN_OK), 0);
	assert_int_equal(gdn_exit_for_error(GDN_EFAILED), 1);
	assert_int_equal(gdn_exit_for_error(GDN_EUSAGE), 2);
	assert_int_equal(gdn_exit_for_error(GDN_ECONFIG), 3);
	assert_int_equal(gdn_exit_for_error(GDN_EBACKEND), 4);
	assert_int_equal(gdn_exit_for_error(GDN_ENETWORK), 5);
	assert_int_equal(gdn_exit_for_error(GDN_ETIMEOUT), 124);
	assert_int_equal(gdn_exit_for_error(GDN_EINTR), 130);
	assert_int_equal(gdn_exit_for_error(GDN_EPARSE), 1);
	assert_string_equal(gdn_errcode_name(GDN_ENETWORK), "network");
}

static void xalloc_helpers(void **state)
{
	char *s = xstrfmt("%s-%05d", "id", 42);

	assert_string_equal(s, "id-00042");
	free(s);
	s = xstrndup("abcdef", 3);
	assert_string_equal(s, "abc");
	free(s);
	assert_int_equal(st_mult(3, 7), 21);
	assert_int_equal(st_add(3, 7), 10);
}

/* Entries of dir other than . and .. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void write_file_atomic(void **state)
{
	char dir[] = "/tmp/gdnctl-test-util.XXXXXX";
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;
	struct stat st;
	char *path, *bad;

	(void)state;
	assert_non_null(mkdtemp(dir));
	path = xstrfmt("%s/f.txt", dir);
	bad = xstrfmt("%s/no/such/dir/f.txt", dir);
	/* a new file: 0644, the bytes, nothing else in the directory */
	assert_int_equal(gdn_write_file_atomic(path, "one\n", 4, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(sbuf_read_file(&sb, path, 100, &err), 0);
	assert_string_equal(sb.buf, "one\n");
	assert_int_equal(count_entries(dir), 1);
	/* a replaced file keeps its mode */
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(gdn_write_file_atomic(path, "two", 3, &err), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	sbuf_reset(&sb);
	assert_int_equal(sbuf_read_file(&sb, path, 100, &err), 0);
	assert_string_equal(sb.buf, "two");
	assert_int_equal(count_entries(dir), 1);
	/* a failure names the file and leaves nothing */
	assert_int_equal(gdn_write_file_atomic(bad, "x", 1, &err), GDN_EIO);
	assert_non_null(strstr(err.msg, "cannot create"));
	assert_non_null(strstr(err.msg, "/no/such/dir/f.txt.tmp."));
	assert_int_equal(count_entries(dir), 1);
	unlink(path);
	rmdir(dir);
	free(path);
	free(bad);
	sbuf_release(&sb);
}

static bool is_dir(const char *path, mode_t mode)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == mode;
}

static void mkdir_p_and_parents(void **state)
{
	char dir[] = "/tmp/gdnctl-test-util.XXXXXX";
	struct gdn_err err = GDN_ERR_INIT;
	char *deep, *file, *parent, *blocker, *blocked;
	mode_t old = umask(022);

	(void)state;
	assert_non_null(mkdtemp(dir));
	deep = xstrfmt("%s/a/b/c/", dir);
	file = xstrfmt("%s/p/q/f.txt", dir);
	parent = xstrfmt("%s/p/q", dir);
	blocker = xstrfmt("%s/a/b/c/x", dir);
	blocked = xstrfmt("%s/a/b/c/x/y", dir);
	/* every missing level, with the mode; a second call finds them all there */
	assert_int_equal(gdn_mkdir_p(deep, 0700, &err), 0);
	assert_true(is_dir(deep, 0700));
	assert_int_equal(gdn_mkdir_p(deep, 0700, &err), 0);
	/* the directories above a file, not the file */
	assert_int_equal(gdn_mkdir_parents(file, 0755, &err), 0);
	assert_true(is_dir(parent, 0755));
	assert_int_equal(access(file, F_OK), -1);
	assert_int_equal(gdn_mkdir_parents("f.txt", 0755, &err), 0); /* no directory part */
	assert_int_equal(gdn_mkdir_p("", 0755, &err), 0);
	/* a level that is a file: GDN_EIO naming it, errno from mkdir(2) */
	assert_int_equal(gdn_write_file_atomic(blocker, "", 0, &err), 0);
	assert_int_equal(gdn_mkdir_p(blocked, 0755, &err), GDN_EIO);
	assert_int_equal(errno, ENOTDIR);
	assert_non_null(strstr(err.msg, "cannot create directory '"));
	assert_non_null(strstr(err.msg, "/a/b/c/x/y': "));
	assert_int_equal(gdn_mkdir_p(blocked, 0755, NULL), GDN_EIO);
	umask(old);
	unlink(blocker);
	for (char *end; (end = strrchr(deep, '/')) && end >= deep + strlen(dir); *end = '\0')
		rmdir(deep);
	rmdir(parent);
	*strrchr(parent, '/') = '\0';
	rmdir(parent);
	assert_int_equal(rmdir(dir), 0);
	free(deep);
	free(file);
	free(parent);
	free(blocker);
	free(blocked);
}

static void add_sat_i64(void **state)
{
	(void)state;
	assert_true(gdn_add_sat_i64(2, 3) == 5);
	assert_true(gdn_add_sat_i64(-2, 3) == 1);
	assert_true(gdn_add_sat_i64(INT64_MAX, 1) == INT64_MAX);
	assert_true(gdn_add_sat_i64(INT64_MAX, INT64_MAX) == INT64_MAX);
	assert_true(gdn_add_sat_i64(INT64_MIN, -1) == INT64_MIN);
	assert_true(gdn_add_sat_i64(INT64_MIN, INT64_MAX) == -1);
	assert_true(gdn_add_sat_i64(INT64_MAX - 1, 1) == INT64_MAX);
}

static void sleep_interruptible(void **state)
{
	int64_t t0 = gdn_now_ms();

	(void)state;
	assert_int_equal(gdn_sleep_interruptible(0), 0);
	assert_int_equal(gdn_sleep_interruptible(-5), 0);
	assert_int_equal(gdn_sleep_interruptible(120), 0);
	assert_true(gdn_now_ms() - t0 >= 120);
	gdn_sleep_cleanup(30);
	assert_true(gdn_now_ms() - t0 >= 150);
	gdn_sleep_cleanup(0);
	/* interrupted: at once, whatever the length; the cleanup sleep still waits */
	gdn_proc_install_signal_handlers();
	assert_int_equal(raise(SIGINT), 0);
	assert_int_equal(gdn_proc_interrupted(), SIGINT);
	t0 = gdn_now_ms();
	assert_int_equal(gdn_sleep_interruptible(LONG_MAX), GDN_EINTR);
	assert_true(gdn_now_ms() - t0 < 1000);
	gdn_sleep_cleanup(30);
	assert_true(gdn_now_ms() - t0 >= 30);
}

/* gdnctl's JSON writer gives jansson's bytes (json_dump_callback, same flags) */
static unsigned long jrand_state = 12345;

static unsigned jrand(unsigned n)
{
	jrand_state = jrand_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((jrand_state >> 33) % n);
}

static json_t *jrand_string(void)
{
	static const char *const parts[] = {"a",
					    "op",
					    "fusion.123",
					    "\"",
					    "\\",
					    "/",
					    "\b",
					    "\f",
					    "\n",
					    "\r",
					    "\t",
					    "\x01",
					    "\x1f",
					    "\x7f",
					    " ",
					    "\xc3\xa9",
					    "\xe2\x82\xac",
					    "\xf0\x9f\x98\x80",
					    "\xed\x9f\xbf",
					    "{}[],:"};
	char buf[256];
	size_t n = 0, k = jrand(8);

	for (size_t i = 0; i < k; i++) {
		const char *p = parts[jrand(sizeof(parts) / sizeof(parts[0]))];

		memcpy(buf + n, p, strlen(p));
		n += strlen(p);
	}
	if (!jrand(10))
		buf[n++] = '\0'; /* a NUL inside */
	return json_stringn(buf, n);
}

static json_t *jrand_value(int depth)
{
	static const double reals[] = {0.0,	   -0.0,
				       1.0,	   -1.5,
				       0.1,	   1.0 / 3,
				       2.0 / 3,	   1e-7,
				       1e-5,	   123456.789,
				       1e15,	   1e16,
				       1e17,	   1e21,
				       1e22,	   1.5e300,
				       4.9e-324,   2.5e-308,
				       792.606317, 0.000123,
				       -3.25e-10,  12345678901234567890.0,
				       5e-324,	   1e100};
	unsigned t = jrand(depth > 4 ? 6 : 9);

	switch (t) {
	case 0:
		return json_null();
	case 1:
		return json_boolean(jrand(2));
	case 2: {
		static const json_int_t ints[] = {0, 1, -1, 42, -1000000007, LLONG_MAX, LLONG_MIN};

		return json_integer(ints[jrand(sizeof(ints) / sizeof(ints[0]))]);
	}
	case 3:
		return json_real(reals[jrand(sizeof(reals) / sizeof(reals[0]))] *
				 (jrand(2) ? 1.0 : (double)(jrand(1000) + 1) / 7));
	case 4:
	case 5:
		return jrand_string();
	case 6:
	case 7: {
		json_t *o = json_object();
		unsigned n = jrand(5);

		for (unsigned i = 0; i < n; i++) {
			json_t *k = jrand_string();

			json_object_setn_new(o, json_string_value(k), json_string_length(k),
					     jrand_value(depth + 1));
			json_decref(k);
		}
		return o;
	}
	default: {
		json_t *a = json_array();
		unsigned n = jrand(5);

		for (unsigned i = 0; i < n; i++)
			json_array_append_new(a, jrand_value(depth + 1));
		return a;
	}
	}
}

static int jansson_cb(const char *buffer, size_t size, void *data)
{
	sbuf_add(data, buffer, size);
	return 0;
}

static void json_dump_check(const json_t *doc, int digits, size_t limit)
{
	struct sbuf mine = SBUF_INIT, theirs = SBUF_INIT;

	mine.limit = theirs.limit = limit;
	sbuf_adds(&mine, "x");
	sbuf_adds(&theirs, "x");
	gdn_json_dump_precision(&mine, doc, digits);
	json_dump_callback(doc, jansson_cb, &theirs,
			   JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(digits));
	sbuf_addch(&theirs, '\n');
	assert_int_equal(mine.len, theirs.len);
	assert_memory_equal(mine.buf, theirs.buf, mine.len);
	sbuf_release(&mine);
	sbuf_release(&theirs);
}

static void json_dump_as_jansson(void **state)
{
	json_t *bad = json_array(), *deep = json_array(), *leaf = deep;

	for (int i = 0; i < 2000; i++) {
		json_t *doc = jrand_value(0);

		json_dump_check(doc, 15, 0);
		json_dump_check(doc, 17, 0);
		json_dump_check(doc, 0, 0);
		json_dump_check(doc, 9, 40);
		json_decref(doc);
	}
	/* reals as gdn_json_round_reals leaves them (9 decimals), all magnitudes */
	for (int i = 0; i < 200; i++) {
		json_t *doc = json_array();

		for (int j = 0; j < 100; j++) {
			double mag = pow(10.0, (double)jrand(1400) / 100.0 - 6.0);
			double r =
			    (double)jrand(1000000007) / 1000000007.0 * mag * (jrand(2) ? 1 : -1);

			json_array_append_new(doc, json_real(r));
			json_array_append_new(doc, json_real(round(r * 1e9) / 1e9));
			json_array_append_new(doc, json_real(round(r * 1e3) / 1e3));
			json_array_append_new(doc, json_real(round(r)));
		}
		json_dump_check(doc, 15, 0);
		json_dump_check(doc, 17, 0);
		json_decref(doc);
	}
	/* not UTF-8 (only a nocheck string can hold it), top-level scalars, NULL, deep nesting */
	json_array_append_new(bad, json_string("ok"));
	json_array_append_new(bad, json_stringn_nocheck("a\"b\xff", 4));
	json_dump_check(bad, 15, 0);
	json_decref(bad);
	json_dump_check(NULL, 15, 0);
	bad = json_real(1.5);
	json_dump_check(bad, 15, 0);
	json_decref(bad);
	for (int i = 0; i < 3000; i++) {
		json_t *a = json_array();

		json_array_append_new(leaf, a);
		leaf = a;
	}
	json_dump_check(deep, 15, 0);
	json_decref(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(sbuf_never_null),
	    cmocka_unit_test(sbuf_grows_past_initial),
	    cmocka_unit_test(sbuf_limit_truncates),
	    cmocka_unit_test(sbuf_detach_and_trim),
	    cmocka_unit_test(sbuf_shell_quoting),
	    cmocka_unit_test(sbuf_read_file_errors),
	    cmocka_unit_test(strvec_basics),
	    cmocka_unit_test(strvec_split_trims),
	    cmocka_unit_test(err_messages_and_codes),
	    cmocka_unit_test(xalloc_helpers),
	    cmocka_unit_test(write_file_atomic),
	    cmocka_unit_test(mkdir_p_and_parents),
	    cmocka_unit_test(add_sat_i64),
	    cmocka_unit_test(sleep_interruptible),
	    cmocka_unit_test(json_dump_as_jansson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
