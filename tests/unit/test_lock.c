/* util/lock.c: one holder at a time, named by its pid; children do not inherit it. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/lock.h"
#include "gdnctl/xalloc.h"

static char *tmp_path(const char *name, char **dir)
{
	*dir = xstrdup("/tmp/gdnctl-test-lock.XXXXXX");
	assert_non_null(mkdtemp(*dir));
	return xstrfmt("%s/%s", *dir, name);
}

static void second_taker_is_refused_with_the_pid(void **state)
{
	struct gdn_lock a = GDN_LOCK_INIT, b = GDN_LOCK_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *dir, *path = tmp_path("loop.lock", &dir), *want;
	pid_t holder = -1;
	int flags;
	FILE *f;
	long pid = 0;

	(void)state;
	assert_int_equal(gdn_lock_probe(path, &holder), 0); /* no file yet */
	assert_int_equal(holder, 0);
	assert_int_equal(gdn_lock_take(&a, path, &holder, &err), 0);
	assert_true(gdn_lock_held(&a));
	/* our pid in the file, and the descriptor is close-on-exec */
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &pid), 1);
	fclose(f);
	assert_int_equal(pid, (long)getpid());
	flags = fcntl(a.fd, F_GETFD);
	assert_true(flags >= 0 && (flags & FD_CLOEXEC));

	/* a second open file description is refused, even in this process */
	assert_int_equal(gdn_lock_take(&b, path, &holder, &err), GDN_EFAILED);
	assert_false(gdn_lock_held(&b));
	assert_int_equal(holder, getpid());
	want = xstrfmt("'%s' is locked by pid %ld", path, (long)getpid());
	assert_string_equal(err.msg, want);
	free(want);
	assert_int_equal(gdn_lock_probe(path, &holder), 1);
	assert_int_equal(holder, getpid());

	/* released: free again, and the next holder's pid replaces ours */
	gdn_lock_release(&a);
	assert_false(gdn_lock_held(&a));
	assert_int_equal(gdn_lock_probe(path, &holder), 0);
	gdn_err_clear(&err);
	assert_int_equal(gdn_lock_take(&b, path, &holder, &err), 0);
	gdn_lock_release(&b);
	gdn_lock_release(&b); /* twice is fine */

	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
}

/* Another process is refused while we hold it; it gets it once we let go. */
static void another_process_is_refused(void **state)
{
	struct gdn_lock a = GDN_LOCK_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *dir, *path = tmp_path("gdnctl.lock", &dir);
	int status = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(gdn_lock_take(&a, path, NULL, &err), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gdn_lock b = GDN_LOCK_INIT;
		pid_t holder = 0;
		int rc = gdn_lock_take(&b, path, &holder, &err);

		_exit(rc == GDN_EFAILED && holder == getppid() ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	gdn_lock_release(&a);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gdn_lock b = GDN_LOCK_INIT;

		_exit(gdn_lock_take(&b, path, NULL, &err) ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* a missing directory is an I/O error, not "locked" */
	assert_int_equal(gdn_lock_take(&a, "/nonexistent/dir/loop.lock", NULL, &err), GDN_EIO);
	assert_non_null(strstr(err.msg, "cannot open lock file '/nonexistent/dir/loop.lock'"));

	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(second_taker_is_refused_with_the_pid),
	    cmocka_unit_test(another_process_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
