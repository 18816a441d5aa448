/* Unit tests for the iteration revert and the running-log commits, on real repositories. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <git2.h>
#include "gdnctl/err.h"
#include "gdnctl/repo.h"
#include "gdnctl/revert.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

struct fixture {
	char dir[64];
	git_repository *repo;
	char seed[GIT_OID_HEXSZ + 1];
};

static char *read_file(struct fixture *f, const char *rel)
{
	struct sbuf path = SBUF_INIT, sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	sbuf_addf(&path, "%s/%s", f->dir, rel);
	if (sbuf_read_file(&sb, path.buf, 1 << 20, &err)) {
		sbuf_release(&path);
		sbuf_release(&sb);
		return NULL;
	}
	sbuf_release(&path);
	return sbuf_detach(&sb, NULL);
}

static bool exists(struct fixture *f, const char *rel)
{
	struct sbuf path = SBUF_INIT;
	bool ok;

	sbuf_addf(&path, "%s/%s", f->dir, rel);
	ok = access(path.buf, F_OK) == 0;
	sbuf_release(&path);
	return ok;
}

/* Stage everything (removals too) and commit on HEAD; the id goes to `hex`. */
static void commit_all(struct fixture *f, const char *message, char *hex)
{
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	git_object *head = NULL;
	git_oid tree_id, id;
	const git_commit *parents[1];
	char *paths[] = {"*"};
	git_strarray spec = {paths, 1};

	assert_int_equal(git_repository_index(&index, f->repo), 0);
	assert_int_equal(git_index_read(index, 1), 0);
	assert_int_equal(git_index_add_all(index, &spec, 0, NULL, NULL), 0);
	assert_int_equal(git_index_update_all(index, &spec, NULL, NULL), 0);
	assert_int_equal(git_index_write(index), 0);
	assert_int_equal(git_index_write_tree(&tree_id, index), 0);
	assert_int_equal(git_tree_lookup(&tree, f->repo, &tree_id), 0);
	assert_int_equal(git_signature_now(&sig, "Test", "test@example.com"), 0);
	if (git_revparse_single(&head, f->repo, "HEAD") == 0) {
		parents[0] = (const git_commit *)head;
		assert_int_equal(git_commit_create(&id, f->repo, "HEAD", sig, sig, NULL, message,
						   tree, 1, parents),
				 0);
	} else {
		assert_int_equal(
		    git_commit_create(&id, f->repo, "HEAD", sig, sig, NULL, message, tree, 0, NULL),
		    0);
	}
	git_oid_tostr(hex, GIT_OID_HEXSZ + 1, &id);
	git_object_free(head);
	git_signature_free(sig);
	git_tree_free(tree);
	git_index_free(index);
}

static char *head(struct fixture *f)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *sha = NULL;

	assert_int_equal(gdn_repo_head_at(f->dir, &sha, NULL, &err), 0);
	return sha;
}

static bool dirty(struct fixture *f)
{
	struct gdn_err err = GDN_ERR_INIT;
	bool d = true;

	assert_int_equal(gdn_repo_dirty_at(f->dir, &d, &err), 0);
	return d;
}

static void tree_of(struct fixture *f, const char *rev, git_oid *tree)
{
	git_object *obj = NULL;
	git_commit *c = NULL;

	assert_int_equal(git_revparse_single(&obj, f->repo, rev), 0);
	assert_int_equal(git_object_peel((git_object **)&c, obj, GIT_OBJECT_COMMIT), 0);
	git_oid_cpy(tree, git_commit_tree_id(c));
	git_commit_free(c);
	git_object_free(obj);
}

static char *ref_target(struct fixture *f, const char *name)
{
	git_reference *ref = NULL;
	char *hex = NULL;

	if (git_reference_lookup(&ref, f->repo, name) == 0)
		hex = xstrdup(git_oid_tostr_s(git_reference_target(ref)));
	git_reference_free(ref);
	return hex;
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	gdn_repo_global_init();
	snprintf(f->dir, sizeof(f->dir), "/tmp/gdnctl-revert-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(git_repository_init(&f->repo, f->dir, 0), 0);
	unit_write_file(f->dir, "a.txt", "alpha\n", 0644);
	unit_write_file(f->dir, "gone.txt", "to be deleted\n", 0644);
	unit_write_file(f->dir, "log.md", "# Log\n\n### Iteration 1\n- Commit: 0123\n", 0644);
	commit_all(f, "seed", f->seed);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	git_repository_free(f->repo);
	unit_rm_rf(f->dir);
	free(f);
	return 0;
}

static void reverts_one_commit(void **state)
{
	struct fixture *f = *state;
	struct gdn_revert_opts o = GDN_REVERT_OPTS_INIT;
	struct gdn_revert_result res = GDN_REVERT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char new[GIT_OID_HEXSZ + 1];
	git_oid t_old, t_head;
	git_commit *c = NULL;
	git_oid id;
	char *sha, *text, *kept;

	unit_write_file(f->dir, "a.txt", "beta\n", 0644);
	commit_all(f, "iteration 7 change", new);
	o.root = f->dir;
	o.iteration = 7;
	o.old_head = f->seed;
	o.new_head = new;
	o.reason = "regression: throughput/mfu -1.8%";
	assert_int_equal(gdn_revert_iteration(&o, &res, &err), 0);
	sha = head(f);
	assert_string_equal(sha, res.head);
	tree_of(f, f->seed, &t_old);
	tree_of(f, "HEAD", &t_head);
	assert_true(git_oid_equal(&t_old, &t_head));
	assert_int_equal(res.nr_reverted, 1);
	assert_string_equal(res.reverted[0], new);
	assert_string_equal(res.discarded_ref, "refs/gdnctl/discarded/7");
	kept = ref_target(f, "refs/gdnctl/discarded/7");
	assert_string_equal(kept, new);
	assert_false(dirty(f));
	text = read_file(f, "a.txt");
	assert_string_equal(text, "alpha\n");

	assert_int_equal(git_oid_fromstr(&id, sha), 0);
	assert_int_equal(git_commit_lookup(&c, f->repo, &id), 0);
	assert_int_equal(git_commit_parentcount(c), 1);
	assert_string_equal(git_oid_tostr_s(git_commit_parent_id(c, 0)), new);
	assert_string_equal(git_commit_summary(c),
			    "gdnctl: revert iteration 7 (regression: throughput/mfu -1.8%)");
	assert_non_null(strstr(git_commit_message(c), new));
	git_commit_free(c);
	free(text);
	free(kept);
	free(sha);
	gdn_revert_result_release(&res);
}

static void unlink_file(struct fixture *f, const char *rel)
{
	struct sbuf path = SBUF_INIT;

	sbuf_addf(&path, "%s/%s", f->dir, rel);
	assert_int_equal(unlink(path.buf), 0);
	sbuf_release(&path);
}

static void make_dir(struct fixture *f, const char *rel)
{
	struct sbuf path = SBUF_INIT;

	sbuf_addf(&path, "%s/%s", f->dir, rel);
	assert_int_equal(mkdir(path.buf, 0755), 0);
	sbuf_release(&path);
}

static void reverts_three_commits_as_one(void **state)
{
	struct fixture *f = *state;
	struct gdn_revert_opts o = GDN_REVERT_OPTS_INIT;
	struct gdn_revert_result res = GDN_REVERT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char c1[GIT_OID_HEXSZ + 1], c2[GIT_OID_HEXSZ + 1], c3[GIT_OID_HEXSZ + 1];
	git_oid t_old, t_head;
	git_commit *c = NULL;
	git_oid id;
	struct gdn_repo *repo = NULL;
	long count = 0;
	char *sha, *text;

	unit_write_file(f->dir, "a.txt", "one\n", 0644);
	commit_all(f, "first", c1);
	make_dir(f, "new");
	unit_write_file(f->dir, "new/added.txt", "added\n", 0644);
	commit_all(f, "second", c2);
	unlink_file(f, "gone.txt");
	commit_all(f, "third", c3);

	o.root = f->dir;
	o.iteration = 3;
	o.old_head = f->seed;
	o.new_head = c3;
	o.reason = "validation failed";
	assert_int_equal(gdn_revert_iteration(&o, &res, &err), 0);
	tree_of(f, f->seed, &t_old);
	tree_of(f, "HEAD", &t_head);
	assert_true(git_oid_equal(&t_old, &t_head));
	assert_false(dirty(f));
	assert_false(exists(f, "new/added.txt"));
	text = read_file(f, "gone.txt");
	assert_string_equal(text, "to be deleted\n");
	free(text);
	text = read_file(f, "a.txt");
	assert_string_equal(text, "alpha\n");
	free(text);

	/* exactly one new commit on top of c3 */
	assert_int_equal(gdn_repo_open(f->dir, &repo, &err), 0);
	assert_int_equal(gdn_repo_count_commits(repo, c3, "HEAD", &count, NULL, 0, &err), 0);
	gdn_repo_free(repo);
	assert_int_equal(count, 1);
	assert_int_equal(res.nr_reverted, 3);
	assert_string_equal(res.reverted[0], c3);
	assert_string_equal(res.reverted[1], c2);
	assert_string_equal(res.reverted[2], c1);
	sha = head(f);
	assert_int_equal(git_oid_fromstr(&id, sha), 0);
	assert_int_equal(git_commit_lookup(&c, f->repo, &id), 0);
	assert_string_equal(git_commit_summary(c),
			    "gdnctl: revert iteration 3 (validation failed)");
	assert_non_null(strstr(git_commit_message(c), c1));
	assert_non_null(strstr(git_commit_message(c), c2));
	assert_non_null(strstr(git_commit_message(c), c3));
	assert_non_null(strstr(git_commit_message(c), "refs/gdnctl/discarded/3"));
	git_commit_free(c);
	free(sha);
	gdn_revert_result_release(&res);
}

static void discarded_ref_is_unique(void **state)
{
	struct fixture *f = *state;
	struct gdn_revert_opts o = GDN_REVERT_OPTS_INIT;
	struct gdn_revert_result res = GDN_REVERT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char base[GIT_OID_HEXSZ + 1], c[GIT_OID_HEXSZ + 1];
	char *b;
	static const char *const want[] = {"refs/gdnctl/discarded/7", "refs/gdnctl/discarded/7-2",
					   "refs/gdnctl/discarded/7-3"};

	o.root = f->dir;
	o.iteration = 7;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		char *kept;

		b = head(f);
		memcpy(base, b, sizeof(base));
		free(b);
		unit_write_file(f->dir, "a.txt", i % 2 ? "odd\n" : "even\n", 0644);
		commit_all(f, "attempt", c);
		o.old_head = base;
		o.new_head = c;
		assert_int_equal(gdn_revert_iteration(&o, &res, &err), 0);
		assert_string_equal(res.discarded_ref, want[i]);
		kept = ref_target(f, want[i]);
		assert_string_equal(kept, c);
		free(kept);
		gdn_revert_result_release(&res);
	}
}

static void reset_mode(void **state)
{
	struct fixture *f = *state;
	struct gdn_revert_opts o = GDN_REVERT_OPTS_INIT;
	struct gdn_revert_result res = GDN_REVERT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char c1[GIT_OID_HEXSZ + 1], c2[GIT_OID_HEXSZ + 1];
	git_reference *remote = NULL;
	git_oid id;
	char *sha, *kept;
	int mode;

	unit_write_file(f->dir, "a.txt", "one\n", 0644);
	commit_all(f, "first", c1);
	unit_write_file(f->dir, "a.txt", "two\n", 0644);
	commit_all(f, "second", c2);
	assert_int_equal(gdn_enum_parse(gdn_revert_mode_enum, "reset", &mode), 0);
	assert_int_equal(mode, GDN_REVERT_RESET);
	assert_int_equal(gdn_enum_parse(gdn_revert_mode_enum, "rebase", &mode), -1);
	o.mode = GDN_REVERT_RESET;
	o.root = f->dir;
	o.iteration = 4;
	o.old_head = f->seed;
	o.new_head = c2;

	/* the first commit was pushed: refused, nothing changed */
	assert_int_equal(git_oid_fromstr(&id, c1), 0);
	assert_int_equal(
	    git_reference_create(&remote, f->repo, "refs/remotes/origin/main", &id, 0, "test"), 0);
	assert_int_equal(gdn_revert_iteration(&o, &res, &err), GDN_EFAILED);
	assert_non_null(strstr(err.msg, "refs/remotes/origin/main"));
	sha = head(f);
	assert_string_equal(sha, c2);
	free(sha);
	assert_null(ref_target(f, "refs/gdnctl/discarded/4"));
	assert_false(dirty(f));

	/* the remote is behind the iteration: allowed */
	git_reference_free(remote);
	remote = NULL;
	assert_int_equal(git_oid_fromstr(&id, f->seed), 0);
	assert_int_equal(
	    git_reference_create(&remote, f->repo, "refs/remotes/origin/main", &id, 1, "test"), 0);
	assert_int_equal(gdn_revert_iteration(&o, &res, &err), 0);
	sha = head(f);
	assert_string_equal(sha, f->seed);
	assert_string_equal(res.head, f->seed);
	kept = ref_target(f, "refs/gdnctl/discarded/4");
	assert_string_equal(kept, c2);
	assert_false(dirty(f));
	free(kept);
	free(sha);
	git_reference_free(remote);
	gdn_revert_result_release(&res);
}

static void refusals(void **state)
{
	struct fixture *f = *state;
	struct gdn_revert_opts o = GDN_REVERT_OPTS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char c1[GIT_OID_HEXSZ + 1], c2[GIT_OID_HEXSZ + 1], side[GIT_OID_HEXSZ + 1];
	git_signature *sig = NULL;
	git_commit *seed = NULL;
	git_tree *tree = NULL;
	git_oid id;
	char *sha;

	unit_write_file(f->dir, "a.txt", "one\n", 0644);
	commit_all(f, "first", c1);
	unit_write_file(f->dir, "a.txt", "two\n", 0644);
	commit_all(f, "second", c2);
	o.root = f->dir;
	o.iteration = 9;
	o.old_head = f->seed;
	o.new_head = c2;

	/* modified tracked file */
	unit_write_file(f->dir, "a.txt", "dirty\n", 0644);
	assert_int_equal(gdn_revert_iteration(&o, NULL, &err), GDN_EFAILED);
	assert_non_null(strstr(err.msg, "uncommitted changes"));
	unit_write_file(f->dir, "a.txt", "two\n", 0644);
	/* untracked file */
	unit_write_file(f->dir, "stray.txt", "x\n", 0644);
	assert_int_equal(gdn_revert_iteration(&o, NULL, &err), GDN_EFAILED);
	assert_non_null(strstr(err.msg, "uncommitted changes"));
	unlink_file(f, "stray.txt");

	/* HEAD is not new_head */
	o.new_head = c1;
	assert_int_equal(gdn_revert_iteration(&o, NULL, &err), GDN_EFAILED);
	assert_non_null(strstr(err.msg, "HEAD moved"));
	o.new_head = c2;

	/* old_head not an ancestor: a commit on a side line */
	assert_int_equal(git_oid_fromstr(&id, f->seed), 0);
	assert_int_equal(git_commit_lookup(&seed, f->repo, &id), 0);
	assert_int_equal(git_commit_tree(&tree, seed), 0);
	assert_int_equal(git_signature_now(&sig, "Test", "test@example.com"), 0);
	assert_int_equal(git_commit_create(&id, f->repo, NULL, sig, sig, NULL, "side", tree, 1,
					   (const git_commit **)&seed),
			 0);
	git_oid_tostr(side, sizeof(side), &id);
	o.old_head = side;
	assert_int_equal(gdn_revert_iteration(&o, NULL, &err), GDN_EFAILED);
	assert_non_null(strstr(err.msg, "not an ancestor"));

	/* nothing made (--allow-no-commit): never revert someone else's commit */
	o.old_head = c2;
	assert_int_equal(gdn_revert_iteration(&o, NULL, &err), GDN_EFAILED);
	assert_non_null(strstr(err.msg, "nothing to revert"));

	/* unknown commit */
	o.old_head = "0123456789abcdef0123456789abcdef01234567";
	assert_int_equal(gdn_revert_iteration(&o, NULL, &err), GDN_ENOTFOUND);

	sha = head(f);
	assert_string_equal(sha, c2);
	assert_null(ref_target(f, "refs/gdnctl/discarded/9"));
	free(sha);
	git_signature_free(sig);
	git_tree_free(tree);
	git_commit_free(seed);
}

/* A locked branch makes the ref update fail after the checkout: all is put back. */
static void failure_leaves_tree_clean(void **state)
{
	struct fixture *f = *state;
	struct gdn_revert_opts o = GDN_REVERT_OPTS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char c1[GIT_OID_HEXSZ + 1];
	struct sbuf lock = SBUF_INIT;
	char *branch = NULL, *sha, *text;
	int fd;

	make_dir(f, "new");
	unit_write_file(f->dir, "new/added.txt", "added\n", 0644);
	unit_write_file(f->dir, "a.txt", "one\n", 0644);
	unlink_file(f, "gone.txt");
	commit_all(f, "first", c1);
	assert_int_equal(gdn_repo_head_at(f->dir, NULL, &branch, &err), 0);
	sbuf_addf(&lock, "%s/.git/refs/heads/%s.lock", f->dir, branch);
	fd = open(lock.buf, O_CREAT | O_WRONLY | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);

	o.root = f->dir;
	o.iteration = 5;
	o.old_head = f->seed;
	o.new_head = c1;
	for (int mode = GDN_REVERT_COMMIT; mode <= GDN_REVERT_RESET; mode++) {
		o.mode = (enum gdn_revert_mode)mode;
		assert_int_equal(gdn_revert_iteration(&o, NULL, &err), GDN_EFAILED);
		assert_non_null(strstr(err.msg, "cannot move"));
		sha = head(f);
		assert_string_equal(sha, c1);
		free(sha);
		assert_false(dirty(f));
		text = read_file(f, "a.txt");
		assert_string_equal(text, "one\n");
		free(text);
		assert_true(exists(f, "new/added.txt"));
		assert_false(exists(f, "gone.txt"));
		assert_null(ref_target(f, "refs/gdnctl/discarded/5"));
	}
	unlink(lock.buf);
	sbuf_release(&lock);
	free(branch);
}

/* A detached HEAD moves itself, no branch involved. */
static void detached_head(void **state)
{
	struct fixture *f = *state;
	struct gdn_revert_opts o = GDN_REVERT_OPTS_INIT;
	struct gdn_revert_result res = GDN_REVERT_RESULT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char c1[GIT_OID_HEXSZ + 1];
	char *branch = (char *)1, *sha;
	git_oid id, t_old, t_head;

	unit_write_file(f->dir, "a.txt", "one\n", 0644);
	commit_all(f, "first", c1);
	assert_int_equal(git_oid_fromstr(&id, c1), 0);
	assert_int_equal(git_repository_set_head_detached(f->repo, &id), 0);
	o.root = f->dir;
	o.iteration = 2;
	o.old_head = f->seed;
	o.new_head = c1;
	assert_int_equal(gdn_revert_iteration(&o, &res, &err), 0);
	assert_int_equal(gdn_repo_head_at(f->dir, &sha, &branch, &err), 0);
	assert_null(branch);
	assert_string_equal(sha, res.head);
	tree_of(f, f->seed, &t_old);
	tree_of(f, "HEAD", &t_head);
	assert_true(git_oid_equal(&t_old, &t_head));
	assert_false(dirty(f));
	free(sha);
	gdn_revert_result_release(&res);
}

static void stamp_case(struct fixture *f, const char *before, const char *after_fmt)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf want = SBUF_INIT;
	char c1[GIT_OID_HEXSZ + 1];
	char *commit = NULL, *text, *sha, *subject;
	bool stamped = false;
	git_commit *c = NULL;
	git_oid id;

	unit_write_file(f->dir, "log.md", before, 0644);
	commit_all(f, "iteration with log", c1);
	assert_int_equal(gdn_revert_stamp_log(f->dir, "log.md", c1, &stamped, &commit, &err), 0);
	assert_true(stamped);
	sbuf_addf(&want, after_fmt, c1);
	text = read_file(f, "log.md");
	assert_string_equal(text, want.buf);
	assert_false(dirty(f));
	sha = head(f);
	assert_string_equal(sha, commit);
	assert_int_equal(git_oid_fromstr(&id, sha), 0);
	assert_int_equal(git_commit_lookup(&c, f->repo, &id), 0);
	subject = xstrfmt("gdnctl: stamp running log with %.12s", c1);
	assert_string_equal(git_commit_summary(c), subject);
	assert_string_equal(git_oid_tostr_s(git_commit_parent_id(c, 0)), c1);
	git_commit_free(c);
	free(subject);
	free(sha);
	free(text);
	free(commit);
	sbuf_release(&want);
}

static void stamps_placeholders(void **state)
{
	struct fixture *f = *state;

	stamp_case(f, "# Log\n\n### Iteration 1\n- Commit: (pending)\n- Result: ok\n",
		   "# Log\n\n### Iteration 1\n- Commit: %s\n- Result: ok\n");
	/* only the last entry; an earlier placeholder is left alone */
	stamp_case(f,
		   "### Iteration 1\n- Commit: (pending)\n\n### Iteration 2\n- Commit: this "
		   "commit\n",
		   "### Iteration 1\n- Commit: (pending)\n\n### Iteration 2\n- Commit: %s\n");
	/* indentation kept, trailing text of other lines kept, no final newline kept */
	stamp_case(f, "### Iteration 3\n  - Notes: x\n    - Commit:   (pending)  \n  - End",
		   "### Iteration 3\n  - Notes: x\n    - Commit: %s\n  - End");
	/* CRLF stays CRLF */
	stamp_case(f, "# Log\r\n\r\n### Iteration 4\r\n- Commit: this commit\r\n- Result: ok\r\n",
		   "# Log\r\n\r\n### Iteration 4\r\n- Commit: %s\r\n- Result: ok\r\n");
}

static void stamp_nothing_to_do(void **state)
{
	struct fixture *f = *state;
	struct gdn_err err = GDN_ERR_INIT;
	static const char *const logs[] = {
	    "### Iteration 1\n- Commit: abcdef012345\n",
	    /* the last Commit line is real: an earlier placeholder in the entry is not touched */
	    "### Iteration 1\n- Commit: (pending)\n- Commit: abcdef012345\n",
	    "# no entries\n- Commit: (pending)\n",
	    "### Iteration 2\n- Result: no commit line\n",
	};
	char c1[GIT_OID_HEXSZ + 1];

	for (size_t i = 0; i < ARRAY_SIZE(logs); i++) {
		char *commit = (char *)1, *sha, *text;
		bool stamped = true;

		unit_write_file(f->dir, "log.md", logs[i], 0644);
		commit_all(f, "entry", c1);
		assert_int_equal(
		    gdn_revert_stamp_log(f->dir, "log.md", c1, &stamped, &commit, &err), 0);
		assert_false(stamped);
		assert_null(commit);
		sha = head(f);
		assert_string_equal(sha, c1);
		text = read_file(f, "log.md");
		assert_string_equal(text, logs[i]);
		free(text);
		free(sha);
	}
	/* a missing log is an error, as is an unknown commit */
	assert_int_not_equal(
	    gdn_revert_stamp_log(f->dir, "missing.md", c1, &(bool){false}, NULL, &err), 0);
	assert_int_equal(gdn_revert_stamp_log(f->dir, "log.md", "0123456789abcdef0123",
					      &(bool){false}, NULL, &err),
			 GDN_ENOTFOUND);
}

static void stamp_absolute_path(void **state)
{
	struct fixture *f = *state;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf path = SBUF_INIT;
	char c1[GIT_OID_HEXSZ + 1];
	bool stamped = false;

	unit_write_file(f->dir, "log.md", "### Iteration 1\n- Commit: (pending)\n", 0644);
	commit_all(f, "entry", c1);
	sbuf_addf(&path, "%s/log.md", f->dir);
	assert_int_equal(gdn_revert_stamp_log(f->dir, path.buf, c1, &stamped, NULL, &err), 0);
	assert_true(stamped);
	assert_false(dirty(f));
	assert_int_equal(gdn_revert_stamp_log(f->dir, "/etc/passwd", c1, &stamped, NULL, &err),
			 GDN_EUSAGE);
	sbuf_release(&path);
}

static void logs_measurements(void **state)
{
	struct fixture *f = *state;
	struct gdn_err err = GDN_ERR_INIT;
	static const char *const lines[] = {"  - top delta: fusion.12 -0.210 ms",
					    "  - top delta: while.3 +0.050 ms", NULL};
	struct gdn_measured m = {"throughput/mfu", 0.4123, 0.4189, lines};
	char c1[GIT_OID_HEXSZ + 1];
	char *commit = NULL, *text, *sha;

	unit_write_file(f->dir, "log.md", "### Iteration 1\r\n- Commit: abc\r\n", 0644);
	commit_all(f, "entry", c1);
	assert_int_equal(gdn_revert_log_measurements(f->dir, "log.md", &m, &commit, &err), 0);
	text = read_file(f, "log.md");
	assert_string_equal(text, "### Iteration 1\r\n- Commit: abc\r\n"
				  "- Measured: throughput/mfu 0.4123 -> 0.4189 (+1.60%)\r\n"
				  "  - top delta: fusion.12 -0.210 ms\r\n"
				  "  - top delta: while.3 +0.050 ms\r\n");
	free(text);
	sha = head(f);
	assert_string_equal(sha, commit);
	assert_false(dirty(f));
	free(sha);
	free(commit);

	/* no baseline, no final newline */
	unit_write_file(f->dir, "log.md", "### Iteration 2\n- Commit: abc", 0644);
	commit_all(f, "entry", c1);
	m.before = NAN;
	m.lines = NULL;
	assert_int_equal(gdn_revert_log_measurements(f->dir, "log.md", &m, NULL, &err), 0);
	text = read_file(f, "log.md");
	assert_string_equal(
	    text, "### Iteration 2\n- Commit: abc\n- Measured: throughput/mfu n/a -> 0.4189\n");
	free(text);
	assert_false(dirty(f));

	/* no entry: nothing written */
	unit_write_file(f->dir, "log.md", "# empty\n", 0644);
	commit_all(f, "entry", c1);
	assert_int_equal(gdn_revert_log_measurements(f->dir, "log.md", &m, NULL, &err),
			 GDN_ENOTFOUND);
	sha = head(f);
	assert_string_equal(sha, c1);
	free(sha);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(reverts_one_commit, setup, teardown),
	    cmocka_unit_test_setup_teardown(reverts_three_commits_as_one, setup, teardown),
	    cmocka_unit_test_setup_teardown(discarded_ref_is_unique, setup, teardown),
	    cmocka_unit_test_setup_teardown(reset_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(refusals, setup, teardown),
	    cmocka_unit_test_setup_teardown(failure_leaves_tree_clean, setup, teardown),
	    cmocka_unit_test_setup_teardown(detached_head, setup, teardown),
	    cmocka_unit_test_setup_teardown(stamps_placeholders, setup, teardown),
	    cmocka_unit_test_setup_teardown(stamp_nothing_to_do, setup, teardown),
	    cmocka_unit_test_setup_teardown(stamp_absolute_path, setup, teardown),
	    cmocka_unit_test_setup_teardown(logs_measurements, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
