/* Unit tests for the libgit2 wrapper, on real repositories made here. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <git2.h>
#include "gdnctl/err.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

struct fixture {
	char dir[64];
	char sha[GIT_OID_HEXSZ + 1];
	char blob[GIT_OID_HEXSZ + 1];
};

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	git_repository *repo = NULL;
	git_index *index = NULL;
	git_oid tree_id, commit_id, blob_id;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	struct sbuf path = SBUF_INIT;
	FILE *fp;

	gdn_repo_global_init();
	snprintf(f->dir, sizeof(f->dir), "/tmp/gdnctl-repo-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(git_repository_init(&repo, f->dir, 0), 0);
	sbuf_addf(&path, "%s/file.txt", f->dir);
	fp = fopen(path.buf, "w");
	assert_non_null(fp);
	fputs("hello\n", fp);
	fclose(fp);
	assert_int_equal(git_repository_index(&index, repo), 0);
	assert_int_equal(git_index_add_bypath(index, "file.txt"), 0);
	assert_int_equal(git_index_write_tree(&tree_id, index), 0);
	assert_int_equal(git_tree_lookup(&tree, repo, &tree_id), 0);
	assert_int_equal(git_signature_now(&sig, "Test", "test@example.com"), 0);
	assert_int_equal(
	    git_commit_create_v(&commit_id, repo, "HEAD", sig, sig, NULL, "seed", tree, 0), 0);
	git_oid_tostr(f->sha, sizeof(f->sha), &commit_id);
	assert_int_equal(git_blob_create_from_buffer(&blob_id, repo, "x", 1), 0);
	git_oid_tostr(f->blob, sizeof(f->blob), &blob_id);
	sbuf_reset(&path);
	sbuf_addf(&path, "%s/sub", f->dir);
	assert_int_equal(mkdir(path.buf, 0755), 0);
	sbuf_adds(&path, "/dir");
	assert_int_equal(mkdir(path.buf, 0755), 0);
	git_signature_free(sig);
	git_tree_free(tree);
	git_index_free(index);
	git_repository_free(repo);
	sbuf_release(&path);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	unit_rm_rf(f->dir);
	free(f);
	return 0;
}

static void discovers_root_from_subdir(void **state)
{
	struct fixture *f = *state;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sub = SBUF_INIT;
	char *root = NULL;
	char real[PATH_MAX];

	sbuf_addf(&sub, "%s/sub/dir", f->dir);
	assert_int_equal(gdn_repo_discover(sub.buf, &root, &err), 0);
	assert_non_null(realpath(f->dir, real));
	assert_string_equal(root, real);
	free(root);
	sbuf_release(&sub);
}

static void no_repository_is_not_found(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *root = (char *)1;
	char dir[] = "/tmp/gdnctl-norepo-XXXXXX";

	assert_non_null(mkdtemp(dir));
	/* /tmp itself is not in a repository on any sane test machine */
	assert_int_equal(gdn_repo_discover(dir, &root, &err), GDN_ENOTFOUND);
	assert_null(root);
	assert_non_null(strstr(err.msg, "no git repository"));
	rmdir(dir);
}

static void commit_lookup(void **state)
{
	struct fixture *f = *state;
	struct gdn_err err = GDN_ERR_INIT;
	char abbrev[9];
	char *full = NULL;
	int exists = -1;

	assert_int_equal(gdn_repo_commit_exists(f->dir, f->sha, &exists, &full, &err), 0);
	assert_int_equal(exists, 1);
	assert_string_equal(full, f->sha);
	free(full);

	memcpy(abbrev, f->sha, 8);
	abbrev[8] = 0;
	assert_int_equal(gdn_repo_commit_exists(f->dir, abbrev, &exists, &full, &err), 0);
	assert_int_equal(exists, 1);
	assert_string_equal(full, f->sha);
	free(full);

	/* a well-formed id that names nothing */
	assert_int_equal(
	    gdn_repo_commit_exists(f->dir, "0123456789abcdef0123", &exists, NULL, &err), 0);
	assert_int_equal(exists, 0);

	/* a blob is not a commit */
	assert_int_equal(gdn_repo_commit_exists(f->dir, f->blob, &exists, NULL, &err), 0);
	assert_int_equal(exists, 0);

	/* not hex at all */
	assert_int_equal(gdn_repo_commit_exists(f->dir, "HEAD~1", &exists, NULL, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, "'HEAD~1' is not a hexadecimal commit id"));

	/* not a repository */
	assert_int_equal(gdn_repo_commit_exists("/nonexistent/dir", f->sha, &exists, NULL, &err),
			 GDN_EIO);
	assert_non_null(strstr(err.msg, "cannot open repository '/nonexistent/dir'"));
}

/* A commit on `parent` that sets file `path` to `text` (a flat tree); *hex: its id. */
static void commit_file(git_repository *repo, const char *parent, const char *path,
			const char *text, const char *msg, char *hex)
{
	git_oid p, blob, tree_id, id;
	git_commit *pc = NULL;
	git_tree *pt = NULL, *tree = NULL;
	git_treebuilder *tb = NULL;
	git_signature *sig = NULL;

	assert_int_equal(git_oid_fromstr(&p, parent), 0);
	assert_int_equal(git_commit_lookup(&pc, repo, &p), 0);
	assert_int_equal(git_commit_tree(&pt, pc), 0);
	assert_int_equal(git_blob_create_from_buffer(&blob, repo, text, strlen(text)), 0);
	assert_int_equal(git_treebuilder_new(&tb, repo, pt), 0);
	assert_int_equal(git_treebuilder_insert(NULL, tb, path, &blob, GIT_FILEMODE_BLOB), 0);
	assert_int_equal(git_treebuilder_write(&tree_id, tb), 0);
	assert_int_equal(git_tree_lookup(&tree, repo, &tree_id), 0);
	assert_int_equal(git_signature_now(&sig, "Agent", "agent@example.com"), 0);
	assert_int_equal(git_commit_create_v(&id, repo, NULL, sig, sig, NULL, msg, tree, 1, pc), 0);
	git_oid_tostr(hex, GIT_OID_HEXSZ + 1, &id);
	git_signature_free(sig);
	git_tree_free(tree);
	git_treebuilder_free(tb);
	git_tree_free(pt);
	git_commit_free(pc);
}

/* gdn_repo_cherry_pick: onto a commit in memory; NULL on a conflict or an empty pick. */
static void cherry_pick_in_memory(void **state)
{
	struct fixture *f = *state;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_repo *r = NULL;
	git_repository *repo = NULL;
	char onto[GIT_OID_HEXSZ + 1], pick[GIT_OID_HEXSZ + 1], clash[GIT_OID_HEXSZ + 1];
	char same[GIT_OID_HEXSZ + 1], edit[GIT_OID_HEXSZ + 1], edit2[GIT_OID_HEXSZ + 1];
	char *out = NULL;
	git_oid id;
	git_commit *c = NULL, *parent = NULL;
	git_tree *tree = NULL;

	assert_int_equal(git_repository_open(&repo, f->dir), 0);
	commit_file(repo, f->sha, "a.txt", "a\n", "onto: a", onto);
	commit_file(repo, f->sha, "b.txt", "b\n", "agent: b", pick);
	commit_file(repo, f->sha, "a.txt", "other\n", "agent: a clash", clash);
	commit_file(repo, f->sha, "a.txt", "a\n", "agent: the same a", same);
	commit_file(repo, f->sha, "file.txt", "one edit\n", "onto: file", edit);
	commit_file(repo, f->sha, "file.txt", "another edit\n", "agent: file", edit2);
	assert_int_equal(gdn_repo_open(f->dir, &r, &err), 0);

	assert_int_equal(gdn_repo_cherry_pick(r, onto, pick, &out, &err), 0);
	assert_non_null(out);
	assert_int_equal(git_oid_fromstr(&id, out), 0);
	assert_int_equal(git_commit_lookup(&c, repo, &id), 0);
	assert_string_equal(git_commit_message(c), "agent: b");
	assert_string_equal(git_commit_author(c)->name, "Agent");
	assert_int_equal(git_commit_parentcount(c), 1);
	assert_int_equal(git_commit_parent(&parent, c, 0), 0);
	assert_string_equal(git_oid_tostr_s(git_commit_id(parent)), onto);
	assert_int_equal(git_commit_tree(&tree, c), 0);
	assert_non_null(git_tree_entry_byname(tree, "a.txt"));
	assert_non_null(git_tree_entry_byname(tree, "b.txt"));
	assert_non_null(git_tree_entry_byname(tree, "file.txt"));
	free(out);

	/* both add a.txt, differently: a conflict, for the worktree's cherry-pick to say */
	assert_int_equal(gdn_repo_cherry_pick(r, onto, clash, &out, &err), 0);
	assert_null(out);
	/* both change file.txt, differently: a content conflict (the merge driver's) */
	assert_int_equal(gdn_repo_cherry_pick(r, edit, edit2, &out, &err), 0);
	assert_null(out);
	/* it changes nothing there */
	assert_int_equal(gdn_repo_cherry_pick(r, onto, same, &out, &err), 0);
	assert_null(out);
	/* no such commit */
	assert_int_equal(gdn_repo_cherry_pick(r, onto, "0123456789abcdef0123", &out, &err),
			 GDN_ENOTFOUND);
	assert_null(out);

	git_tree_free(tree);
	git_commit_free(parent);
	git_commit_free(c);
	gdn_repo_free(r);
	git_repository_free(repo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(discovers_root_from_subdir),
	    cmocka_unit_test(no_repository_is_not_found),
	    cmocka_unit_test(commit_lookup),
	    cmocka_unit_test(cherry_pick_in_memory),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
