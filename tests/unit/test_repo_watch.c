/*
 * Unit tests for the dirty check with a change feed (src/repo/dirty.c,
 * src/repo/fswatch.c), on a real repository changed by real git commands:
 * after each change, the watched handle's answer must equal the full
 * look's (a fresh handle) and the expected one, and the changes a feed can
 * vouch for must be answered without a full look.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/fswatch.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

static char dir[] = "/tmp/gdnctl-test-repo-watch-XXXXXX";

/* Run a shell script in dir; fails the test when it fails. */
static void sh(const char *script)
{
	struct sbuf out = SBUF_INIT;

	if (unit_run(dir, (const char *const[]){"bash", "-ec", script, NULL}, &out))
		fail_msg("script failed: %s\n%s", script, out.buf);
	sbuf_release(&out);
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	sh("git init -q -b main && mkdir -p d1 d2/sub keep build && "
	   "for i in 1 2 3; do echo $i >d1/f$i.txt; echo $i >d2/sub/g$i.txt; done && "
	   "echo tracked >keep/t.txt && echo out >build/o.txt && "
	   "printf 'build/\\nkeep/\\n*.log\\n' >.gitignore && "
	   "git add -A && git add -f keep/t.txt && git commit -qm base && "
	   "git tag base");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unit_rm_rf(dir);
	return 0;
}

static bool full_look(void)
{
	struct gdn_err err = GDN_ERR_INIT;
	bool dirty = true;

	assert_int_equal(gdn_repo_dirty_at(dir, &dirty, &err), 0);
	return dirty;
}

/* The watched answer: checked against the full look and `want`; returns the full looks it took. */
static unsigned long answer(struct gdn_repo *r, bool want, const char *what)
{
	struct gdn_err err = GDN_ERR_INIT;
	unsigned long before = gdn_repo_full_looks(r);
	bool dirty = !want;

	assert_int_equal(gdn_repo_dirty(r, &dirty, &err), 0);
	if (dirty != want || full_look() != want)
		fail_msg("%s: watched %s, full look %s, want %s", what, dirty ? "dirty" : "clean",
			 full_look() ? "dirty" : "clean", want ? "dirty" : "clean");
	return gdn_repo_full_looks(r) - before;
}

static const struct change {
	const char *what, *script;
	bool dirty, by_feed; /* by_feed: answered without a full look */
	const char *before;  /* run and answered (clean) first, when set */
} changes[] = {
    {"nothing", ":", false, true, NULL},
    {"a tracked file appended to", "echo more >>d1/f1.txt", true, true, NULL},
    {"an untracked file", "echo new >d2/sub/new.txt", true, true, NULL},
    {"an ignored file", "echo x >d1/debug.log", false, true, NULL},
    {"a file in an ignored, unwatched directory", "echo y >build/o2.txt", false, true, NULL},
    {"a tracked file in an ignored directory", "echo z >>keep/t.txt", true, true, NULL},
    {"a mode change", "chmod +x d1/f2.txt", true, true, NULL},
    {"a tracked file removed", "rm d2/sub/g1.txt", true, true, NULL},
    {"a commit of a change", "echo c >>d1/f3.txt && git commit -qam c", false, true, NULL},
    {"a file removed from the index only", "git rm -q --cached d1/f1.txt", true, true, NULL},
    {"a soft reset", "echo s >>d1/f3.txt && git commit -qam s && git reset -q --soft HEAD~1", true,
     true, NULL},
    {"a mixed reset", "echo m >>d1/f3.txt && git commit -qam m && git reset -q HEAD~1", true, true,
     NULL},
    {"a mixed reset of a commit answered before (no file touched)", "git reset -q HEAD~1", true,
     true, "echo m >>d1/f3.txt && git commit -qam m"},
    {"a soft reset of a commit answered before", "git reset -q --soft HEAD~1", true, true,
     "echo m >>d1/f3.txt && git commit -qam m"},
    {"a mode changed in the index only", "git update-index --chmod=+x d1/f1.txt", true, true, NULL},
    {"an empty commit", "git commit -q --allow-empty -m e", false, true, NULL},
    {"a commit on a branch, then back",
     "git checkout -q -b side && echo b >d1/b.txt && "
     "git add d1/b.txt && git commit -qm b && git checkout -q main",
     false, true, NULL},
    {"a rename, committed", "git mv d1/f1.txt d1/f1-moved.txt && git commit -qm mv", false, true,
     NULL},
    {"an untracked symlink", "ln -s f2.txt d1/link", true, true, NULL},
    {"a stash of a change", "echo st >>d1/f2.txt && git stash -q", false, true, NULL},
    {"a new directory with a file", "mkdir d3 && echo n >d3/n.txt", true, false, NULL},
    {"an empty new directory", "mkdir d4", false, false, NULL},
    {"a .gitignore that stops ignoring build/", "printf 'keep/\\n*.log\\n' >.gitignore", true,
     false, NULL},
    {"an untracked file excluded by .git/info/exclude",
     "echo u >d1/u.txt && echo d1/u.txt >>.git/info/exclude", false, false, NULL},
};

/* Back to a clean tree at `base`, then one clean answer. */
static void restore(struct gdn_repo *r)
{
	sh("git checkout -q -f main && git reset -q --hard base && git clean -qfd && "
	   "git stash clear && rm -rf d3 d4 d1/u.txt && : >.git/info/exclude");
	answer(r, false, "restored (clean again)");
}

static void test_feed_matches_full_look(void **unused)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_repo *r = NULL;
	unsigned long looks;

	(void)unused;
	assert_int_equal(gdn_repo_open(dir, &r, &err), 0);
	gdn_repo_watch(r);
	answer(r, false, "the first answer");
	for (size_t i = 0; i < ARRAY_SIZE(changes); i++) {
		const struct change *c = &changes[i];

		if (c->before) {
			sh(c->before);
			answer(r, false, c->before);
		}
		sh(c->script);
		looks = answer(r, c->dirty, c->what);
		if (c->by_feed && looks)
			fail_msg("%s: answered by a full look, not the feed", c->what);
		if (!c->by_feed && !looks)
			fail_msg("%s: the feed answered; it cannot vouch for this", c->what);
		restore(r);
	}
	gdn_repo_free(r);
}

/* Without the feed, every answer is a full look (the counter the test above relies on). */
static void test_unwatched_looks_every_time(void **unused)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_repo *r = NULL;

	(void)unused;
	assert_int_equal(gdn_repo_open(dir, &r, &err), 0);
	assert_int_equal(answer(r, false, "unwatched, first"), 1);
	assert_int_equal(answer(r, false, "unwatched, second"), 1);
	gdn_repo_free(r);
}

/* The feed itself: file events come back as paths; a new directory asks for a full look. */
static void test_fswatch_paths(void **unused)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_fswatch *w = NULL;
	struct strvec paths = STRVEC_INIT;

	(void)unused;
	assert_int_equal(gdn_fswatch_open(&w, dir, NULL, NULL, &err), 0);
	assert_true(gdn_fswatch_count(w) >= 5); /* root, d1, d2, d2/sub, keep, build */
	assert_int_equal(gdn_fswatch_drain(w, &paths), 0);
	assert_int_equal(paths.nr, 0);
	sh("echo w >>d2/sub/g2.txt");
	assert_int_equal(gdn_fswatch_drain(w, &paths), 0);
	assert_true(paths.nr >= 1);
	assert_true(strvec_contains(&paths, "d2/sub/g2.txt"));
	sh("mkdir d5");
	assert_int_equal(gdn_fswatch_drain(w, &paths), 1);
	sh("rmdir d5 && git checkout -q -- d2/sub/g2.txt");
	strvec_clear(&paths);
	gdn_fswatch_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fswatch_paths),
	    cmocka_unit_test(test_unwatched_looks_every_time),
	    cmocka_unit_test(test_feed_matches_full_look),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
