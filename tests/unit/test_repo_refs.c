/*
 * Unit tests for the references read in process (src/repo/refs.c), on a
 * real repository made with the git command line, and checked against
 * git's own answers (rev-parse, merge-base --is-ancestor, worktree list).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

struct fixture {
	char dir[64];
	char *repo, *wt, *link;
	char a[41], b[41], c[41];
};

/* git ARGS... in dir; its output (trimmed) in *out when out is given; the exit code. */
static int git_in(const char *dir, struct sbuf *out, const char *const *args)
{
	const char *argv[16] = {"git"};
	size_t n = 1;

	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	return unit_run(dir, argv, out);
}

#define GIT(dir, ...) \
	assert_int_equal(git_in(dir, NULL, (const char *const[]){__VA_ARGS__, NULL}), 0)

static void git_sha(const char *dir, const char *rev, char sha[41])
{
	struct sbuf out = SBUF_INIT;

	assert_int_equal(git_in(dir, &out, (const char *const[]){"rev-parse", rev, NULL}), 0);
	assert_int_equal(out.len, 40);
	memcpy(sha, out.buf, 41);
	sbuf_release(&out);
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/gdnctl-refs-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->repo = xstrfmt("%s/repo", f->dir);
	f->wt = xstrfmt("%s/wt", f->dir);
	f->link = xstrfmt("%s/link", f->dir);
	GIT(f->dir, "-c", "init.defaultBranch=main", "init", "-q", f->repo);
	unit_write_file(f->repo, "a.txt", "a\n", 0644);
	GIT(f->repo, "add", "a.txt");
	GIT(f->repo, "commit", "-qm", "A");
	git_sha(f->repo, "HEAD", f->a);
	GIT(f->repo, "tag", "-am", "annotated", "v1");
	unit_write_file(f->repo, "b.txt", "b\n", 0644);
	GIT(f->repo, "add", "b.txt");
	GIT(f->repo, "commit", "-qm", "B");
	git_sha(f->repo, "HEAD", f->b);
	/* C: a side branch off A, checked out in a linked worktree */
	GIT(f->repo, "worktree", "add", "-q", "-b", "side", f->wt, f->a);
	unit_write_file(f->wt, "c.txt", "c\n", 0644);
	GIT(f->wt, "add", "c.txt");
	GIT(f->wt, "commit", "-qm", "C");
	git_sha(f->wt, "HEAD", f->c);
	assert_int_equal(symlink(f->wt, f->link), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	unit_rm_rf(f->dir);
	free(f->repo);
	free(f->wt);
	free(f->link);
	free(f);
	return 0;
}

static void rev_is(const char *dir, const char *rev, const char *want)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *sha = (char *)"unset";

	assert_int_equal(gdn_repo_rev_at(dir, rev, &sha, &err), 0);
	if (want)
		assert_string_equal(sha, want);
	else
		assert_null(sha);
	free(sha);
}

static void rev_answers_as_git_rev_parse(void **state)
{
	struct fixture *f = *state;
	struct sbuf blob = SBUF_INIT, sub = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *sha = NULL;

	rev_is(f->repo, "HEAD", f->b);
	rev_is(f->repo, "refs/heads/main", f->b);
	rev_is(f->repo, "main~1", f->a);
	rev_is(f->repo, "v1", f->a); /* an annotated tag, peeled to its commit */
	rev_is(f->repo, "refs/heads/side", f->c);
	rev_is(f->wt, "HEAD", f->c); /* a worktree's own HEAD */
	rev_is(f->repo, "refs/gdnctl/none", NULL);
	rev_is(f->repo, "no such thing", NULL);
	assert_int_equal(
	    git_in(f->repo, &blob, (const char *const[]){"rev-parse", "HEAD:a.txt", NULL}), 0);
	rev_is(f->repo, blob.buf, NULL); /* a blob is no commit */
	sbuf_addf(&sub, "%s/sub", f->repo);
	assert_int_equal(mkdir(sub.buf, 0755), 0);
	rev_is(sub.buf, "HEAD", f->b); /* found from below the top, as git does */
	assert_int_not_equal(gdn_repo_rev_at(f->dir, "HEAD", &sha, &err), 0);
	assert_null(sha);
	assert_non_null(strstr(err.msg, f->dir));
	gdn_err_clear(&err);
	sbuf_release(&blob);
	sbuf_release(&sub);
}

/*
 * A reference whose commit is missing (an agent's `git gc --prune=now`
 * raced a worker's commit): no answer and an error, and nothing leaked
 * (libgit2 1.5's git_revparse_single drops the reference it found then:
 * this is what t0625@workers4 caught under LeakSanitizer).
 */
static void rev_of_a_ref_to_a_missing_commit(void **state)
{
	struct fixture *f = *state;
	const char *gone = "0123456789abcdef0123456789abcdef01234567";
	char *dir = xstrfmt("%s/broken", f->dir), *line = xstrfmt("%s\n", gone);
	struct gdn_err err = GDN_ERR_INIT;
	bool yes = true;

	unit_write_file(f->repo, ".git/refs/heads/broken", line, 0644);
	rev_is(f->repo, "broken", NULL);
	rev_is(f->repo, "refs/heads/broken", NULL);
	rev_is(f->repo, "broken~1", NULL);
	rev_is(f->repo, "broken^{commit}", NULL);
	assert_int_equal(gdn_repo_is_ancestor_at(f->repo, f->a, "broken", &yes, &err), GDN_EFAILED);
	assert_false(yes);
	gdn_err_clear(&err);
	/* a checkout whose HEAD is such a branch */
	GIT(f->dir, "-c", "init.defaultBranch=broken", "init", "-q", dir);
	GIT(dir, "fetch", "-q", f->repo, "main");
	unit_write_file(dir, ".git/refs/heads/broken", line, 0644);
	rev_is(dir, "HEAD", NULL);
	rev_is(dir, "@", NULL);
	GIT(f->repo, "update-ref", "-d", "--no-deref", "refs/heads/broken");
	unit_rm_rf(dir);
	free(line);
	free(dir);
}

static void ancestry_as_merge_base_is_ancestor(void **state)
{
	struct fixture *f = *state;
	const char *pairs[][2] = {{f->a, f->b}, {f->b, f->a}, {f->a, f->a},   {f->c, f->b},
				  {f->b, f->c}, {f->a, f->c}, {"v1", "main"}, {"main", "side"}};

	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
		struct gdn_err err = GDN_ERR_INIT;
		bool yes = !true;
		int rc = git_in(f->repo, NULL,
				(const char *const[]){"merge-base", "--is-ancestor", pairs[i][0],
						      pairs[i][1], NULL});

		assert_int_equal(
		    gdn_repo_is_ancestor_at(f->repo, pairs[i][0], pairs[i][1], &yes, &err), 0);
		assert_int_equal(yes, rc == 0);
	}
	{
		struct gdn_err err = GDN_ERR_INIT;
		bool yes = true;

		assert_int_equal(gdn_repo_is_ancestor_at(f->repo, "nothing", f->a, &yes, &err),
				 GDN_EFAILED);
		assert_false(yes);
		gdn_err_clear(&err);
	}
}

static void checkout_of(const char *dir, const char *branch, const char *skip, const char *want)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *wt = NULL;

	assert_int_equal(gdn_repo_branch_checkout_at(dir, branch, skip, &wt, &err), 0);
	if (want) {
		assert_non_null(wt);
		assert_string_equal(wt, want);
	} else {
		assert_null(wt);
	}
	free(wt);
}

static void branch_checkout_as_worktree_list(void **state)
{
	struct fixture *f = *state;
	char *detached = xstrfmt("%s/detached", f->dir);

	checkout_of(f->repo, "main", NULL, f->repo);
	checkout_of(f->wt, "main", NULL, f->repo); /* asked from a linked worktree */
	checkout_of(f->repo, "side", NULL, f->wt);
	checkout_of(f->repo, "main", f->repo, NULL);
	checkout_of(f->repo, "side", f->link, NULL); /* skip names it through a symlink */
	checkout_of(f->repo, "nothing", NULL, NULL);
	/* a detached worktree at the tip of main has no branch checked out */
	GIT(f->repo, "checkout", "-q", "--detach");
	GIT(f->repo, "worktree", "add", "-q", "--detach", detached, "main");
	checkout_of(f->repo, "main", NULL, NULL);
	GIT(f->repo, "checkout", "-q", "main");
	checkout_of(f->repo, "main", NULL, f->repo);
	GIT(f->repo, "worktree", "remove", detached);
	free(detached);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(rev_answers_as_git_rev_parse),
	    cmocka_unit_test(ancestry_as_merge_base_is_ancestor),
	    cmocka_unit_test(branch_checkout_as_worktree_list),
	    cmocka_unit_test(rev_of_a_ref_to_a_missing_commit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
