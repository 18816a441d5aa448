/*
 * Unit tests for the libgit2 reads the loop engine uses (src/repo/repo.c):
 * HEAD and branch, dirty check, descendant check, commit counting, stash
 * lookup by id and by name, and "is this stash already in the tree".
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

static char dir[] = "/tmp/gdnctl-test-loop-repo-XXXXXX";

/* Run a command in dir; returns its trimmed output (owned). */
static char *sh(const char *const *argv)
{
	struct sbuf out = SBUF_INIT;

	assert_int_equal(unit_run(dir, argv, &out), 0);
	return sbuf_detach(&out, NULL);
}

static char *git(const char *a, const char *b, const char *c, const char *d, const char *e)
{
	const char *argv[] = {"git", a, b, c, d, e, NULL};

	return sh(argv);
}

static void remove_file(const char *name)
{
	char *path = xstrfmt("%s/%s", dir, name);

	unlink(path);
	free(path);
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	free(git("init", "-q", "-b", "main", NULL));
	unit_write_file(dir, "a.txt", "one\n", 0644);
	free(git("add", "a.txt", NULL, NULL, NULL));
	free(git("commit", "-qm", "one", NULL, NULL));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_rm_rf(dir);
	return 0;
}

static void test_head_dirty_descendant_count(void **unused)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec ids = STRVEC_INIT;
	struct gdn_repo *r = NULL;
	char *sha = NULL, *branch = NULL, *first, *second, *third;
	bool dirty = true, desc = false;
	long count = -1;

	(void)unused;
	first = git("rev-parse", "HEAD", NULL, NULL, NULL);
	assert_int_equal(gdn_repo_head_at(dir, &sha, &branch, &err), 0);
	assert_string_equal(sha, first);
	assert_string_equal(branch, "main");
	free(sha);
	free(branch);
	assert_int_equal(gdn_repo_dirty_at(dir, &dirty, &err), 0);
	assert_false(dirty);
	/* one handle for the rest: it sees what git commands change meanwhile */
	assert_int_equal(gdn_repo_open(dir, &r, &err), 0);
	assert_string_equal(gdn_repo_root(r), dir);
	assert_int_equal(gdn_repo_head(r, &sha, &branch, &err), 0);
	assert_string_equal(sha, first);
	assert_string_equal(branch, "main");
	free(sha);
	free(branch);
	assert_int_equal(gdn_repo_dirty(r, &dirty, &err), 0);
	assert_false(dirty);
	unit_write_file(dir, "untracked.txt", "u\n", 0644);
	assert_int_equal(gdn_repo_dirty(r, &dirty, &err), 0);
	assert_true(dirty);
	assert_int_equal(gdn_repo_dirty_at(dir, &dirty, &err), 0);
	assert_true(dirty);
	remove_file("untracked.txt");
	assert_int_equal(gdn_repo_dirty(r, &dirty, &err), 0);
	assert_false(dirty);
	/* a change staged by git, then committed by git: dirty, then clean at the new HEAD */
	unit_write_file(dir, "a.txt", "staged\n", 0644);
	free(git("add", "a.txt", NULL, NULL, NULL));
	assert_int_equal(gdn_repo_dirty(r, &dirty, &err), 0);
	assert_true(dirty);
	free(git("commit", "-qm", "staged", NULL, NULL));
	assert_int_equal(gdn_repo_dirty(r, &dirty, &err), 0);
	assert_false(dirty);
	assert_int_equal(gdn_repo_head(r, &sha, NULL, &err), 0);
	assert_string_not_equal(sha, first);
	free(sha);
	free(git("reset", "-q", "--hard", first, NULL));
	assert_int_equal(gdn_repo_head(r, &sha, NULL, &err), 0);
	assert_string_equal(sha, first);
	free(sha);

	unit_write_file(dir, "a.txt", "two\n", 0644);
	free(git("commit", "-qam", "two", NULL, NULL));
	unit_write_file(dir, "a.txt", "three\n", 0644);
	free(git("commit", "-qam", "three", NULL, NULL));
	second = git("rev-parse", "HEAD~1", NULL, NULL, NULL);
	third = git("rev-parse", "HEAD", NULL, NULL, NULL);
	assert_int_equal(gdn_repo_descendant(r, third, first, &desc, &err), 0);
	assert_true(desc);
	assert_int_equal(gdn_repo_descendant(r, first, third, &desc, &err), 0);
	assert_false(desc);
	assert_int_equal(gdn_repo_descendant(r, first, first, &desc, &err), 0);
	assert_false(desc);
	assert_int_equal(gdn_repo_count_commits(r, first, third, &count, &ids, 10, &err), 0);
	assert_int_equal(count, 2);
	assert_int_equal(ids.nr, 2);
	assert_string_equal(ids.v[0], third);
	assert_string_equal(ids.v[1], second);
	strvec_clear(&ids);
	assert_int_equal(gdn_repo_count_commits(r, first, third, &count, &ids, 1, &err), 0);
	assert_int_equal(count, 2);
	assert_int_equal(ids.nr, 1);
	assert_int_equal(gdn_repo_count_commits(r, third, first, &count, NULL, 0, &err), 0);
	assert_int_equal(count, 0);
	assert_int_equal(gdn_repo_descendant(r, "0000000", first, &desc, &err), GDN_ENOTFOUND);
	free(first);
	free(second);
	free(third);
	strvec_clear(&ids);
	gdn_repo_free(r);
}

static void test_stash_find_and_in_tree(void **unused)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *ours, *theirs, *found = NULL;
	struct gdn_repo *r = NULL;
	long index = -1;
	bool in_tree = true;

	(void)unused;
	assert_int_equal(gdn_repo_open(dir, &r, &err), 0);
	assert_int_equal(gdn_repo_stash_find(r, "abc", "x", &index, &found, &err), 0);
	assert_int_equal(index, -1);
	unit_write_file(dir, "a.txt", "user change\n", 0644);
	unit_write_file(dir, "note.txt", "note\n", 0644);
	free(git("stash", "push", "-u", "-m", "gdnctl-loop: r iteration 1"));
	ours = git("rev-parse", "stash@{0}", NULL, NULL, NULL);
	unit_write_file(dir, "b.txt", "agent\n", 0644);
	free(git("stash", "push", "-u", "-m", "gdnctl-loop: r iteration 11"));
	theirs = git("rev-parse", "stash@{0}", NULL, NULL, NULL);

	assert_int_equal(gdn_repo_stash_find(r, ours, NULL, &index, &found, &err), 0);
	assert_int_equal(index, 1);
	assert_string_equal(found, ours);
	free(found);
	/* by name: "iteration 1" is not a suffix match of "iteration 11" */
	assert_int_equal(
	    gdn_repo_stash_find(r, NULL, "gdnctl-loop: r iteration 1", &index, &found, &err), 0);
	assert_int_equal(index, 1);
	assert_string_equal(found, ours);
	free(found);
	assert_int_equal(
	    gdn_repo_stash_find(r, theirs, "gdnctl-loop: r iteration 1", &index, NULL, &err), 0);
	assert_int_equal(index, 0);

	/* not applied yet */
	assert_int_equal(gdn_repo_stash_in_tree(r, ours, &in_tree, &err), 0);
	assert_false(in_tree);
	free(git("stash", "apply", ours, NULL, NULL));
	assert_int_equal(gdn_repo_stash_in_tree(r, ours, &in_tree, &err), 0);
	assert_true(in_tree);
	/* the untracked part counts too */
	remove_file("note.txt");
	assert_int_equal(gdn_repo_stash_in_tree(r, ours, &in_tree, &err), 0);
	assert_false(in_tree);
	free(ours);
	free(theirs);
	gdn_repo_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_head_dirty_descendant_count),
	    cmocka_unit_test(test_stash_find_and_in_tree),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
