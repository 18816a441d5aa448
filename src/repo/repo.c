/* Thin libgit2 wrapper: repository discovery and commit lookup. */
#include "gdnctl/compat.h"
#include <git2.h>
#include "gdnctl/err.h"
#include "gdnctl/repo.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "repo_impl.h"

static void shutdown_libgit2(void)
{
	git_libgit2_shutdown();
}

void gdn_repo_global_init(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	git_libgit2_init();
	atexit(shutdown_libgit2);
}

int gdn_repo_discover(const char *start, char **root, struct gdn_err *err)
{
	git_buf found = {0};
	git_repository *repo = NULL;
	const char *workdir;
	int ret = 0, rc;

	*root = NULL;
	gdn_repo_global_init();
	rc = git_repository_discover(&found, start ? start : ".", 0, NULL);
	if (rc == GIT_ENOTFOUND) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no git repository at or above '%s'",
				  start ? start : ".");
		goto out;
	}
	if (rc < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot discover a git repository: %s",
				  gdn_repo_git_msg());
		goto out;
	}
	if (git_repository_open(&repo, found.ptr) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot open repository '%s': %s", found.ptr,
				  gdn_repo_git_msg());
		goto out;
	}
	workdir = git_repository_workdir(repo);
	if (!workdir) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "repository '%s' is bare", found.ptr);
		goto out;
	}
	*root = xstrdup(workdir);
	/* libgit2 returns the workdir with a trailing slash; drop it. */
	if (strlen(*root) > 1 && (*root)[strlen(*root) - 1] == '/')
		(*root)[strlen(*root) - 1] = '\0';
out:
	git_repository_free(repo);
	git_buf_dispose(&found);
	return ret;
}

static bool is_hex_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 4 || n > GIT_OID_HEXSZ)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

int gdn_repo_commit_exists(const char *root, const char *rev, int *exists, char **full,
			   struct gdn_err *err)
{
	git_repository *repo = NULL;
	git_object *obj = NULL;
	git_oid prefix;
	int ret = 0, rc;

	*exists = 0;
	if (full)
		*full = NULL;
	gdn_repo_global_init();
	if (!is_hex_id(rev)) {
		ret = gdn_err_set(err, GDN_EPARSE, "'%s' is not a hexadecimal commit id", rev);
		goto out;
	}
	if (git_repository_open(&repo, root) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot open repository '%s': %s", root,
				  gdn_repo_git_msg());
		goto out;
	}
	if (git_oid_fromstrn(&prefix, rev, strlen(rev)) < 0) {
		ret = gdn_err_set(err, GDN_EPARSE, "'%s' is not a hexadecimal commit id", rev);
		goto out;
	}
	rc = git_object_lookup_prefix(&obj, repo, &prefix, strlen(rev), GIT_OBJECT_COMMIT);
	if (rc == GIT_ENOTFOUND) {
		goto out;
	} else if (rc == GIT_EAMBIGUOUS) {
		ret =
		    gdn_err_set(err, GDN_EPARSE, "commit id '%s' is ambiguous in '%s'", rev, root);
		goto out;
	} else if (rc < 0) {
		/* A prefix naming a non-commit object is "not a commit", not an error. */
		if (git_error_last() && git_error_last()->klass == GIT_ERROR_INVALID)
			goto out;
		ret = gdn_err_set(err, GDN_EIO, "cannot look up '%s' in '%s': %s", rev, root,
				  gdn_repo_git_msg());
		goto out;
	}
	*exists = 1;
	if (full) {
		char hex[GIT_OID_HEXSZ + 1];

		git_oid_tostr(hex, sizeof(hex), git_object_id(obj));
		*full = xstrdup(hex);
	}
out:
	git_object_free(obj);
	git_repository_free(repo);
	return ret;
}

/* ---- a repository handle for a whole run ---- */

int gdn_repo_open(const char *root, struct gdn_repo **out, struct gdn_err *err)
{
	git_repository *git = NULL;

	*out = NULL;
	gdn_repo_global_init();
	if (git_repository_open(&git, root) < 0)
		return gdn_err_set(err, GDN_EIO, "cannot open repository '%s': %s", root,
				   gdn_repo_git_msg());
	*out = xcalloc(1, sizeof(**out));
	(*out)->git = git;
	(*out)->root = xstrdup(root);
	return 0;
}

void gdn_repo_free(struct gdn_repo *r)
{
	if (!r)
		return;
	gdn_repo_unwatch(r);
	git_repository_free(r->git);
	free(r->root);
	free(r);
}

const char *gdn_repo_root(const struct gdn_repo *r)
{
	return r->root;
}

static int resolve_commit(git_repository *repo, const char *rev, git_oid *oid, struct gdn_err *err)
{
	git_object *obj = NULL;
	int ret = 0;

	if (gdn_repo_revparse(&obj, repo, rev) < 0) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "cannot resolve '%s': %s", rev,
				  gdn_repo_git_msg());
		goto out;
	}
	git_oid_cpy(oid, git_object_id(obj));
out:
	git_object_free(obj);
	return ret;
}

int gdn_repo_head(struct gdn_repo *r, char **sha, char **branch, struct gdn_err *err)
{
	const char *root = r->root;
	git_reference *head = NULL;
	int ret = 0, rc;

	if (sha)
		*sha = NULL;
	if (branch)
		*branch = NULL;
	rc = git_repository_head(&head, r->git);
	if (rc == GIT_EUNBORNBRANCH || rc == GIT_ENOTFOUND)
		goto out;
	if (rc < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read HEAD in '%s': %s", root,
				  gdn_repo_git_msg());
		goto out;
	}
	if (sha) {
		char hex[GIT_OID_HEXSZ + 1];

		git_oid_tostr(hex, sizeof(hex), git_reference_target(head));
		*sha = xstrdup(hex);
	}
	if (branch && git_reference_is_branch(head))
		*branch = xstrdup(git_reference_shorthand(head));
out:
	git_reference_free(head);
	return ret;
}

int gdn_repo_head_at(const char *root, char **sha, char **branch, struct gdn_err *err)
{
	struct gdn_repo *r = NULL;
	int ret;

	if (sha)
		*sha = NULL;
	if (branch)
		*branch = NULL;
	ret = gdn_repo_open(root, &r, err);
	if (!ret)
		ret = gdn_repo_head(r, sha, branch, err);
	gdn_repo_free(r);
	return ret;
}

int gdn_repo_dirty_at(const char *root, bool *dirty, struct gdn_err *err)
{
	struct gdn_repo *r = NULL;
	int ret;

	*dirty = false;
	ret = gdn_repo_open(root, &r, err);
	if (!ret)
		ret = gdn_repo_dirty(r, dirty, err);
	gdn_repo_free(r);
	return ret;
}

int gdn_repo_descendant(struct gdn_repo *r, const char *desc, const char *anc, bool *is_desc,
			struct gdn_err *err)
{
	git_repository *repo = r->git;
	git_oid d, a;
	int ret, rc;

	*is_desc = false;
	ret = resolve_commit(repo, desc, &d, err);
	if (!ret)
		ret = resolve_commit(repo, anc, &a, err);
	if (ret)
		goto out;
	rc = git_graph_descendant_of(repo, &d, &a);
	if (rc < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot compare '%s' and '%s': %s", desc, anc,
				  gdn_repo_git_msg());
		goto out;
	}
	*is_desc = rc == 1;
out:
	return ret;
}

int gdn_repo_count_commits(struct gdn_repo *r, const char *from, const char *to, long *count,
			   struct strvec *ids, size_t max, struct gdn_err *err)
{
	git_repository *repo = r->git;
	const char *root = r->root;
	git_revwalk *walk = NULL;
	git_oid f, t, oid;
	int ret;

	*count = 0;
	ret = resolve_commit(repo, to, &t, err);
	if (!ret && from)
		ret = resolve_commit(repo, from, &f, err);
	if (ret)
		goto out;
	if (git_revwalk_new(&walk, repo) < 0 || git_revwalk_push(walk, &t) < 0 ||
	    (from && git_revwalk_hide(walk, &f) < 0)) {
		ret = gdn_err_set(err, GDN_EIO, "cannot walk commits in '%s': %s", root,
				  gdn_repo_git_msg());
		goto out;
	}
	git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_TIME);
	while (git_revwalk_next(&oid, walk) == 0) {
		if (ids && (size_t)*count < max) {
			char hex[GIT_OID_HEXSZ + 1];

			git_oid_tostr(hex, sizeof(hex), &oid);
			strvec_push(ids, hex);
		}
		(*count)++;
	}
out:
	git_revwalk_free(walk);
	return ret;
}

struct stash_find {
	const char *sha, *msg;
	long by_sha, by_msg;
	git_oid sha_oid, msg_oid;
};

static int stash_cb(size_t index, const char *message, const git_oid *id, void *payload)
{
	struct stash_find *f = payload;
	char hex[GIT_OID_HEXSZ + 1];

	git_oid_tostr(hex, sizeof(hex), id);
	if (f->sha && f->by_sha < 0 && !strcmp(hex, f->sha)) {
		f->by_sha = (long)index;
		git_oid_cpy(&f->sha_oid, id);
	}
	if (f->msg && f->by_msg < 0 && message) {
		size_t ml = strlen(message), l = strlen(f->msg);

		if (!strcmp(message, f->msg) || (ml > l + 2 && !strcmp(message + ml - l, f->msg) &&
						 !strncmp(message + ml - l - 2, ": ", 2))) {
			f->by_msg = (long)index;
			git_oid_cpy(&f->msg_oid, id);
		}
	}
	return 0;
}

int gdn_repo_stash_find(struct gdn_repo *r, const char *sha, const char *msg, long *index,
			char **found, struct gdn_err *err)
{
	const char *root = r->root;
	struct stash_find f;
	char hex[GIT_OID_HEXSZ + 1];
	int ret = 0, rc;

	memset(&f, 0, sizeof(f));
	f.sha = sha;
	f.msg = msg;
	f.by_sha = f.by_msg = -1;
	*index = -1;
	if (found)
		*found = NULL;
	rc = git_stash_foreach(r->git, stash_cb, &f);
	if (rc < 0 && rc != GIT_ENOTFOUND) {
		ret = gdn_err_set(err, GDN_EIO, "cannot list stashes in '%s': %s", root,
				  gdn_repo_git_msg());
		goto out;
	}
	if (f.by_sha >= 0) {
		*index = f.by_sha;
		git_oid_tostr(hex, sizeof(hex), &f.sha_oid);
	} else if (f.by_msg >= 0) {
		*index = f.by_msg;
		git_oid_tostr(hex, sizeof(hex), &f.msg_oid);
	}
	if (*index >= 0 && found)
		*found = xstrdup(hex);
out:
	return ret;
}

/* Whether the working-tree file `path` has blob `id`'s content (absent: the zero id). */
static int file_matches(git_repository *repo, const char *root, const git_diff_file *df,
			bool *match, struct gdn_err *err)
{
	char *full = xstrfmt("%s/%s", root, df->path);
	struct stat st;
	git_oid oid;
	int ret = 0;

	if (lstat(full, &st)) {
		*match = git_oid_is_zero(&df->id);
		goto out;
	}
	if (git_oid_is_zero(&df->id)) {
		*match = false;
		goto out;
	}
	if (git_odb_hashfile(&oid, full, GIT_OBJECT_BLOB) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot hash '%s': %s", full, gdn_repo_git_msg());
		goto out;
	}
	*match = git_oid_equal(&oid, &df->id);
out:
	(void)repo;
	free(full);
	return ret;
}

/* Compare the changes between two trees (old may be NULL: all added) with the working tree. */
static int diff_in_tree(git_repository *repo, const char *root, git_tree *old, git_tree *new,
			bool *in_tree, struct gdn_err *err)
{
	git_diff *diff = NULL;
	int ret = 0;

	if (git_diff_tree_to_tree(&diff, repo, old, new, NULL) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot diff a stash: %s", gdn_repo_git_msg());
		goto out;
	}
	for (size_t i = 0; i < git_diff_num_deltas(diff) && *in_tree; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);
		bool match = false;

		ret = file_matches(repo, root, &d->new_file, &match, err);
		if (ret)
			goto out;
		if (!match)
			*in_tree = false;
	}
out:
	git_diff_free(diff);
	return ret;
}

int gdn_repo_stash_in_tree(struct gdn_repo *r, const char *sha, bool *in_tree, struct gdn_err *err)
{
	git_repository *repo = r->git;
	const char *root = r->root;
	git_commit *stash = NULL, *base = NULL, *untracked = NULL;
	git_tree *st = NULL, *bt = NULL, *ut = NULL;
	git_oid oid;
	int ret;

	*in_tree = true;
	ret = resolve_commit(repo, sha, &oid, err);
	if (ret)
		goto out;
	if (git_commit_lookup(&stash, repo, &oid) < 0 || git_commit_parent(&base, stash, 0) < 0 ||
	    git_commit_tree(&st, stash) < 0 || git_commit_tree(&bt, base) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read stash '%s': %s", sha,
				  gdn_repo_git_msg());
		goto out;
	}
	ret = diff_in_tree(repo, root, bt, st, in_tree, err);
	if (ret || !*in_tree || git_commit_parentcount(stash) < 3)
		goto out;
	if (git_commit_parent(&untracked, stash, 2) < 0 || git_commit_tree(&ut, untracked) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read stash '%s': %s", sha,
				  gdn_repo_git_msg());
		goto out;
	}
	ret = diff_in_tree(repo, root, NULL, ut, in_tree, err);
out:
	git_tree_free(ut);
	git_tree_free(bt);
	git_tree_free(st);
	git_commit_free(untracked);
	git_commit_free(base);
	git_commit_free(stash);
	return ret;
}

const char *gdn_repo_gitdir(const struct gdn_repo *r)
{
	return git_repository_path(r->git);
}

const char *gdn_repo_commondir(const struct gdn_repo *r)
{
	return git_repository_commondir(r->git);
}

int gdn_repo_commit_subject(struct gdn_repo *r, const char *sha, char **subject,
			    struct gdn_err *err)
{
	git_commit *c = NULL;
	git_oid id;
	const char *s;
	int ret = resolve_commit(r->git, sha, &id, err);

	*subject = NULL;
	if (ret)
		return ret;
	if (git_commit_lookup(&c, r->git, &id) < 0)
		return gdn_err_set(err, GDN_ENOTFOUND, "no commit '%s': %s", sha,
				   gdn_repo_git_msg());
	s = git_commit_summary(c); /* the subject's lines joined, as %s does */
	*subject = xstrdup(s ? s : "");
	git_commit_free(c);
	return 0;
}

/* The signature to commit with: the configured one, else `fallback`'s name and email, now. */
static int committer(git_repository *repo, const git_signature *fallback, git_signature **out)
{
	if (git_signature_default(out, repo) == 0)
		return 0;
	return git_signature_now(out, fallback->name, fallback->email);
}

int gdn_repo_cherry_pick(struct gdn_repo *r, const char *onto, const char *sha, char **out,
			 struct gdn_err *err)
{
	git_repository *repo = r->git;
	git_oid o, s, tree_oid, new_oid;
	git_commit *ours = NULL, *pick = NULL;
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	int ret = resolve_commit(repo, onto, &o, err);
	char hex[GIT_OID_HEXSZ + 1];

	*out = NULL;
	if (!ret)
		ret = resolve_commit(repo, sha, &s, err);
	if (ret)
		goto out;
	if (git_commit_lookup(&ours, repo, &o) < 0 || git_commit_lookup(&pick, repo, &s) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read %s or %s in '%s': %s", sha, onto,
				  r->root, gdn_repo_git_msg());
		goto out;
	}
	if (git_commit_parentcount(pick) != 1)
		goto out; /* a merge: not here */
	if (git_cherrypick_commit(&index, repo, pick, ours, 0, NULL) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot cherry-pick %s onto %s in '%s': %s", sha,
				  onto, r->root, gdn_repo_git_msg());
		goto out;
	}
	if (git_index_has_conflicts(index))
		goto out; /* not clean: *out stays NULL */
	if (git_index_write_tree_to(&tree_oid, index, repo) < 0 ||
	    git_tree_lookup(&tree, repo, &tree_oid) < 0 ||
	    committer(repo, git_commit_committer(pick), &sig) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot write the tree of %s onto %s in '%s': %s",
				  sha, onto, r->root, gdn_repo_git_msg());
		goto out;
	}
	if (git_oid_equal(&tree_oid, git_commit_tree_id(ours)))
		goto out; /* it changes nothing there: not clean either */
	if (git_commit_create(&new_oid, repo, NULL, git_commit_author(pick), sig,
			      git_commit_message_encoding(pick), git_commit_message(pick), tree, 1,
			      (const git_commit *[]){ours}) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot commit %s onto %s in '%s': %s", sha, onto,
				  r->root, gdn_repo_git_msg());
		goto out;
	}
	git_oid_tostr(hex, sizeof(hex), &new_oid);
	*out = xstrdup(hex);
out:
	git_signature_free(sig);
	git_tree_free(tree);
	git_index_free(index);
	git_commit_free(pick);
	git_commit_free(ours);
	return ret;
}
