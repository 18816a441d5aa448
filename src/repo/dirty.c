/*
 * gdn_repo_dirty with a change feed (gdn_repo_watch): after one full look
 * that found the tree clean, an answer needs only what changed since.
 *
 * Clean means: no untracked file, the working tree equals the index, the
 * index equals HEAD's tree. When the last answer was clean, then for a
 * path the feed did not report and whose index entry did not change, the
 * file still equals its entry; so only these are looked at:
 *   - the index entries that changed (a merge of the entries against the
 *     snapshot taken at the last clean answer, in memory),
 *   - HEAD's tree against the index, at the paths where either changed
 *     (the old and new trees are compared by libgit2, which skips equal
 *     subtrees by id),
 *   - the working tree at the paths the feed reported and the changed
 *     entries, by libgit2's status limited to those paths.
 * Anything the feed cannot vouch for (see fswatch.h), a changed
 * .git/info/exclude, an unborn HEAD, conflicts or submodules: the full
 * look, as without a feed.
 */
#include "gdnctl/compat.h"
#include <git2.h>
#include "gdnctl/err.h"
#include "gdnctl/fswatch.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "repo_impl.h"

/* More changed paths than this: the full look is as cheap. */
#define FEED_MAX_PATHS 2000

static void snap_clear(struct gdn_repo *r)
{
	for (size_t i = 0; i < r->nsnap; i++)
		free(r->snap[i].path);
	r->nsnap = 0;
}

/* The full look: libgit2's status over the whole working tree. */
static int status_all(struct gdn_repo *r, bool *dirty, struct gdn_err *err)
{
	const char *root = r->root;
	git_status_list *list = NULL;
	git_status_options so;
	int ret = 0;

	*dirty = false;
	r->full_looks++;
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
	if (git_status_list_new(&list, r->git, &so) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read the status of '%s': %s", root,
				  gdn_repo_git_msg());
		goto out;
	}
	*dirty = git_status_list_entrycount(list) > 0;
out:
	git_status_list_free(list);
	return ret;
}

void gdn_repo_unwatch(struct gdn_repo *r)
{
	gdn_fswatch_free(r->watch);
	r->watch = NULL;
	snap_clear(r);
	free(r->snap);
	r->snap = NULL;
	r->asnap = 0;
	r->watching = r->clean = false;
}

/* Ignored directories that hold no tracked file are not watched. */
static bool skip_dir(const char *rel, void *payload)
{
	struct gdn_repo *r = payload;
	git_index *idx = NULL;
	struct sbuf dir = SBUF_INIT;
	int ignored = 0;
	size_t pos;
	bool skip = false;

	sbuf_addf(&dir, "%s/", rel);
	if (git_ignore_path_is_ignored(&ignored, r->git, dir.buf) < 0 || !ignored)
		goto out;
	if (git_repository_index(&idx, r->git) < 0)
		goto out;
	skip = git_index_find_prefix(&pos, idx, dir.buf) == GIT_ENOTFOUND;
out:
	git_index_free(idx);
	sbuf_release(&dir);
	return skip;
}

static void exclude_stamp(struct gdn_repo *r, struct timespec *mtime, off_t *size)
{
	struct sbuf p = SBUF_INIT;
	struct stat st;

	sbuf_addf(&p, "%sinfo/exclude", git_repository_commondir(r->git));
	if (stat(p.buf, &st)) {
		memset(mtime, 0, sizeof(*mtime));
		*size = -1;
	} else {
		*mtime = st.st_mtim;
		*size = st.st_size;
	}
	sbuf_release(&p);
}

/* HEAD's tree id; -1 when HEAD is unborn or unreadable. */
static int head_tree(struct gdn_repo *r, git_oid *out)
{
	git_object *tree = NULL;
	int ret = gdn_repo_revparse(&tree, r->git, "HEAD^{tree}");

	if (!ret)
		git_oid_cpy(out, git_object_id(tree));
	git_object_free(tree);
	return ret < 0 ? -1 : 0;
}

/* The index, read again when it changed on disk; NULL when it cannot be read. */
static git_index *fresh_index(struct gdn_repo *r)
{
	git_index *idx = NULL;

	if (git_repository_index(&idx, r->git) < 0)
		return NULL;
	if (git_index_read(idx, 0) < 0) {
		git_index_free(idx);
		return NULL;
	}
	return idx;
}

/*
 * The snapshot of a clean answer: HEAD's tree, the index's checksum and
 * entries. Returns -1 when the feed cannot serve this repository (an
 * unborn HEAD, a submodule, a conflict).
 */
static int take_snapshot(struct gdn_repo *r)
{
	git_index *idx = fresh_index(r);
	size_t n;
	int ret = -1;

	snap_clear(r);
	if (!idx || head_tree(r, &r->head_tree) || git_index_has_conflicts(idx))
		goto out;
	n = git_index_entrycount(idx);
	ALLOC_GROW(r->snap, n, r->asnap);
	for (size_t i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);

		if (e->mode == GIT_FILEMODE_COMMIT)
			goto out;
		r->snap[r->nsnap].path = xstrdup(e->path);
		git_oid_cpy(&r->snap[r->nsnap].id, &e->id);
		r->snap[r->nsnap++].mode = e->mode;
	}
	git_oid_cpy(&r->index_sum, git_index_checksum(idx));
	exclude_stamp(r, &r->exclude_mtime, &r->exclude_size);
	ret = 0;
out:
	if (ret)
		snap_clear(r);
	git_index_free(idx);
	return ret;
}

/* The paths whose index entry differs from the snapshot's, appended to `out`. */
static int index_changes(struct gdn_repo *r, git_index *idx, struct strvec *out)
{
	size_t n = git_index_entrycount(idx), i = 0, j = 0;

	while (i < n || j < r->nsnap) {
		const git_index_entry *e = i < n ? git_index_get_byindex(idx, i) : NULL;
		const struct repo_snap_entry *s = j < r->nsnap ? &r->snap[j] : NULL;
		int c = !e ? 1 : !s ? -1 : strcmp(e->path, s->path);

		if (e && (GIT_INDEX_ENTRY_STAGE(e) || e->mode == GIT_FILEMODE_COMMIT))
			return -1;
		if (c < 0)
			strvec_push(out, e->path), i++;
		else if (c > 0)
			strvec_push(out, s->path), j++;
		else {
			if (e->mode != s->mode || !git_oid_equal(&e->id, &s->id))
				strvec_push(out, e->path);
			i++, j++;
		}
	}
	return 0;
}

static int collect_delta(const git_diff_delta *d, float progress, void *payload)
{
	(void)progress;
	strvec_push(payload, d->old_file.path);
	if (strcmp(d->old_file.path, d->new_file.path))
		strvec_push(payload, d->new_file.path);
	return 0;
}

/* The paths where HEAD's tree moved, appended to `out`. */
static int tree_changes(struct gdn_repo *r, const git_oid *from, const git_oid *to,
			struct strvec *out)
{
	git_tree *a = NULL, *b = NULL;
	git_diff *diff = NULL;
	int ret = -1;

	if (git_tree_lookup(&a, r->git, from) < 0 || git_tree_lookup(&b, r->git, to) < 0 ||
	    git_diff_tree_to_tree(&diff, r->git, a, b, NULL) < 0 ||
	    git_diff_foreach(diff, collect_delta, NULL, NULL, NULL, out) < 0)
		goto out;
	ret = 0;
out:
	git_diff_free(diff);
	git_tree_free(a);
	git_tree_free(b);
	return ret;
}

/* Whether the index and HEAD's tree differ at one of `paths`: 1, 0, or -1. */
static int index_vs_head(struct gdn_repo *r, git_index *idx, const git_oid *tree_id,
			 const struct strvec *paths)
{
	git_tree *tree = NULL;
	int ret = 0;

	if (git_tree_lookup(&tree, r->git, tree_id) < 0)
		return -1;
	for (size_t i = 0; i < paths->nr && !ret; i++) {
		const git_index_entry *e = git_index_get_bypath(idx, paths->v[i], 0);
		git_tree_entry *t = NULL;
		int rc = git_tree_entry_bypath(&t, tree, paths->v[i]);

		if (rc < 0 && rc != GIT_ENOTFOUND)
			ret = -1;
		else if (!e != !t)
			ret = 1;
		else if (e && (e->mode != (uint32_t)git_tree_entry_filemode(t) ||
			       !git_oid_equal(&e->id, git_tree_entry_id(t))))
			ret = 1;
		git_tree_entry_free(t);
	}
	git_tree_free(tree);
	return ret;
}

/* The working tree against the index at `paths` only: 1 (a difference or an untracked file), 0, -1.
 */
static int workdir_at(struct gdn_repo *r, struct strvec *paths)
{
	git_status_list *list = NULL;
	git_status_options so;
	int ret;

	if (!paths->nr)
		return 0;
	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		   GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
	so.pathspec.strings = (char **)paths->v;
	so.pathspec.count = paths->nr;
	if (git_status_list_new(&list, r->git, &so) < 0)
		return -1;
	ret = git_status_list_entrycount(list) > 0;
	git_status_list_free(list);
	return ret;
}

/* The answer from the feed: 1 dirty, 0 clean, -1 when the full look must answer. */
static int from_feed(struct gdn_repo *r, struct strvec *paths)
{
	struct strvec moved = STRVEC_INIT;
	git_index *idx = NULL;
	git_oid tree;
	struct timespec mt;
	off_t sz;
	int ret = -1;
	bool index_moved;

	exclude_stamp(r, &mt, &sz);
	if (sz != r->exclude_size || mt.tv_sec != r->exclude_mtime.tv_sec ||
	    mt.tv_nsec != r->exclude_mtime.tv_nsec || head_tree(r, &tree) ||
	    !(idx = fresh_index(r)) || git_index_has_conflicts(idx))
		goto out;
	index_moved = !git_oid_equal(git_index_checksum(idx), &r->index_sum);
	if (index_moved && index_changes(r, idx, &moved))
		goto out;
	for (size_t i = 0; i < moved.nr; i++)
		strvec_push(paths, moved.v[i]);
	if (!git_oid_equal(&tree, &r->head_tree) && tree_changes(r, &r->head_tree, &tree, &moved))
		goto out;
	if (paths->nr > FEED_MAX_PATHS || moved.nr > FEED_MAX_PATHS)
		goto out;
	ret = index_vs_head(r, idx, &tree, &moved);
	if (!ret)
		ret = workdir_at(r, paths);
	if (!ret && (index_moved || !git_oid_equal(&tree, &r->head_tree)) && take_snapshot(r))
		ret = -1;
out:
	git_index_free(idx);
	strvec_clear(&moved);
	return ret;
}

void gdn_repo_watch(struct gdn_repo *r)
{
	gdn_repo_unwatch(r);
	r->watching = true; /* the feed starts with the next answer's full look */
}

unsigned long gdn_repo_full_looks(const struct gdn_repo *r)
{
	return r->full_looks;
}

int gdn_repo_dirty(struct gdn_repo *r, bool *dirty, struct gdn_err *err)
{
	struct strvec paths = STRVEC_INIT;
	struct gdn_err ignored = GDN_ERR_INIT;
	int full, ret = 0;

	*dirty = false;
	if (!r->watching)
		return status_all(r, dirty, err);
	full = !r->watch || gdn_fswatch_drain(r->watch, &paths) || !r->clean;
	if (!full) {
		int rc = from_feed(r, &paths);

		if (rc >= 0) {
			*dirty = rc;
			r->clean = !rc;
			goto out;
		}
	}
	/* the full look, with a fresh feed started before it */
	gdn_fswatch_free(r->watch);
	r->watch = NULL;
	if (gdn_fswatch_open(&r->watch, r->root, skip_dir, r, &ignored)) {
		gdn_repo_unwatch(r);
		ret = status_all(r, dirty, err);
		goto out;
	}
	ret = status_all(r, dirty, err);
	r->clean = !ret && !*dirty && !take_snapshot(r);
out:
	gdn_err_clear(&ignored);
	strvec_clear(&paths);
	return ret;
}
