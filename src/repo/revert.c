/*
 * Reverting an iteration, and committing running-log edits, with libgit2.
 * See include/gdnctl/revert.h and docs/revert.md.
 */
#include "gdnctl/compat.h"
#include <git2.h>
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/repo.h"
#include "gdnctl/revert.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "repo_impl.h"

#define ITERATION_HEADING "### Iteration "
#define DISCARDED_PREFIX  "refs/gdnctl/discarded/"

const struct gdn_enum gdn_revert_mode_enum[] = {
    {"commit", GDN_REVERT_COMMIT, "a revert commit on top (the original's way)"},
    {"reset", GDN_REVERT_RESET, "move the branch back (unpushed commits only)"},
    GDN_ENUM_END,
};

void gdn_revert_result_release(struct gdn_revert_result *res)
{
	for (size_t i = 0; i < res->nr_reverted; i++)
		free(res->reverted[i]);
	free(res->reverted);
	free(res->discarded_ref);
	free(res->head);
	*res = (struct gdn_revert_result)GDN_REVERT_RESULT_INIT;
}

static int open_repo(const char *root, git_repository **repo, struct gdn_err *err)
{
	gdn_repo_global_init();
	if (git_repository_open(repo, root) < 0)
		return gdn_err_set(err, GDN_EIO, "cannot open repository '%s': %s", root,
				   gdn_repo_git_msg());
	if (git_repository_is_bare(*repo))
		return gdn_err_set(err, GDN_EIO, "repository '%s' is bare", root);
	return 0;
}

/* Resolve `rev` to a commit; GDN_ENOTFOUND when it names none. */
static int resolve_commit(git_repository *repo, const char *rev, git_commit **commit,
			  struct gdn_err *err)
{
	git_object *obj = NULL;
	int ret = 0, rc;

	*commit = NULL;
	rc = gdn_repo_revparse(&obj, repo, rev);
	if (rc == GIT_ENOTFOUND) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no commit '%s'", rev);
		goto out;
	}
	if (rc < 0 || git_object_peel((git_object **)commit, obj, GIT_OBJECT_COMMIT) < 0) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "'%s' is not a commit: %s", rev,
				  gdn_repo_git_msg());
		goto out;
	}
out:
	git_object_free(obj);
	return ret;
}

static void signature(git_repository *repo, git_signature **sig)
{
	if (git_signature_default(sig, repo) < 0 &&
	    git_signature_now(sig, "gdnctl", "gdnctl@localhost") < 0)
		BUG("cannot make a git signature: %s", gdn_repo_git_msg());
}

/* Name of the ref HEAD updates (its branch, or "HEAD" when detached), and its target. */
static int head_target(git_repository *repo, char **name, git_oid *oid, struct gdn_err *err)
{
	git_reference *head = NULL, *resolved = NULL;
	int ret = 0;

	*name = NULL;
	if (git_reference_lookup(&head, repo, "HEAD") < 0 ||
	    git_reference_resolve(&resolved, head) < 0) {
		ret =
		    gdn_err_set(err, GDN_EFAILED, "cannot resolve 'HEAD': %s", gdn_repo_git_msg());
		goto out;
	}
	*name = xstrdup(git_reference_type(head) == GIT_REFERENCE_SYMBOLIC
			    ? git_reference_symbolic_target(head)
			    : "HEAD");
	git_oid_cpy(oid, git_reference_target(resolved));
out:
	git_reference_free(resolved);
	git_reference_free(head);
	return ret;
}

static int tree_dirty(git_repository *repo, bool *dirty, struct gdn_err *err)
{
	git_status_list *list = NULL;
	git_status_options so;
	int ret = 0;

	git_status_options_init(&so, GIT_STATUS_OPTIONS_VERSION);
	so.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	so.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS;
	if (git_status_list_new(&list, repo, &so) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read the status of '%s': %s",
				  git_repository_workdir(repo), gdn_repo_git_msg());
		goto out;
	}
	*dirty = git_status_list_entrycount(list) > 0;
out:
	git_status_list_free(list);
	return ret;
}

/* First-parent commits in old..new, newest first, as hex ids in `ids`. */
static int collect_range(git_repository *repo, const git_oid *old, const git_oid *new,
			 struct strvec *ids, struct gdn_err *err)
{
	git_revwalk *walk = NULL;
	git_oid oid;
	char hex[GIT_OID_HEXSZ + 1];
	int ret = 0;

	if (git_revwalk_new(&walk, repo) < 0 || git_revwalk_push(walk, new) < 0 ||
	    git_revwalk_hide(walk, old) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot walk the iteration's commits: %s",
				  gdn_repo_git_msg());
		goto out;
	}
	git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL);
	git_revwalk_simplify_first_parent(walk);
	while (git_revwalk_next(&oid, walk) == 0)
		strvec_push(ids, git_oid_tostr(hex, sizeof(hex), &oid));
out:
	git_revwalk_free(walk);
	return ret;
}

/* Whether one of `ids` is reachable from a remote-tracking ref; *which gets that ref's name. */
static int pushed(git_repository *repo, const struct strvec *ids, char **which, struct gdn_err *err)
{
	git_reference_iterator *it = NULL;
	git_reference *ref = NULL, *resolved = NULL;
	int ret = 0, rc;

	*which = NULL;
	if (git_reference_iterator_glob_new(&it, repo, "refs/remotes/*") < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot list remote-tracking refs: %s",
				  gdn_repo_git_msg());
		goto out;
	}
	while (!*which && (rc = git_reference_next(&ref, it)) == 0) {
		if (git_reference_resolve(&resolved, ref) == 0) {
			const git_oid *tip = git_reference_target(resolved);

			for (size_t i = 0; tip && i < ids->nr && !*which; i++) {
				git_oid id;

				if (git_oid_fromstr(&id, ids->v[i]) < 0)
					BUG("bad commit id '%s'", ids->v[i]);
				if (git_oid_equal(tip, &id) ||
				    git_graph_descendant_of(repo, tip, &id) == 1)
					*which = xstrdup(git_reference_name(ref));
			}
		}
		git_reference_free(resolved);
		resolved = NULL;
		git_reference_free(ref);
		ref = NULL;
	}
out:
	git_reference_iterator_free(it);
	return ret;
}

/* Create refs/gdnctl/discarded/<it>, or <it>-2, <it>-3, ... at `target`. */
static int keep_discarded(git_repository *repo, long iteration, const git_oid *target, char **name,
			  struct gdn_err *err)
{
	git_reference *ref = NULL;
	struct sbuf sb = SBUF_INIT;
	int ret = 0, rc = GIT_EEXISTS;

	*name = NULL;
	for (long n = 1; rc == GIT_EEXISTS && n < 1000; n++) {
		sbuf_reset(&sb);
		sbuf_addf(&sb, DISCARDED_PREFIX "%ld", iteration);
		if (n > 1)
			sbuf_addf(&sb, "-%ld", n);
		rc = git_reference_create(&ref, repo, sb.buf, target, 0,
					  "gdnctl: keep discarded candidate");
	}
	if (rc < 0) {
		ret = gdn_err_set(err, GDN_EFAILED, "cannot create '%s': %s", sb.buf,
				  gdn_repo_git_msg());
		goto out;
	}
	*name = sbuf_detach(&sb, NULL);
out:
	git_reference_free(ref);
	sbuf_release(&sb);
	return ret;
}

static void revert_message(struct sbuf *msg, const struct gdn_revert_opts *o, git_repository *repo,
			   const struct strvec *ids, const char *old_hex, const char *discarded)
{
	sbuf_addf(msg, "gdnctl: revert iteration %ld", o->iteration);
	if (o->reason && *o->reason)
		sbuf_addf(msg, " (%s)", o->reason);
	sbuf_addf(msg,
		  "\n\nRevert the %zu commit%s of iteration %ld, restoring the tree of %s:\n\n",
		  ids->nr, ids->nr == 1 ? "" : "s", o->iteration, old_hex);
	for (size_t i = 0; i < ids->nr; i++) {
		git_commit *c = NULL;
		git_oid id;
		const char *summary = NULL;

		if (!git_oid_fromstr(&id, ids->v[i]) && !git_commit_lookup(&c, repo, &id))
			summary = git_commit_summary(c);
		sbuf_addf(msg, "  %s %s\n", ids->v[i], summary ? summary : "");
		git_commit_free(c);
	}
	sbuf_addf(msg, "\nThe candidate is kept as %s.\n", discarded);
}

/* Make the index and working tree `to`, treating them as `from` now. */
static int checkout(git_repository *repo, git_commit *from, git_commit *to, struct gdn_err *err)
{
	git_checkout_options co;
	git_tree *base = NULL, *target = NULL;
	int ret = 0;

	git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION);
	co.checkout_strategy = GIT_CHECKOUT_FORCE;
	if (git_commit_tree(&base, from) < 0 || git_commit_tree(&target, to) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read a commit's tree: %s",
				  gdn_repo_git_msg());
		goto out;
	}
	co.baseline = base;
	if (git_checkout_tree(repo, (git_object *)target, &co) < 0) {
		ret = gdn_err_set(err, GDN_EFAILED, "cannot check out the tree of %.12s: %s",
				  git_oid_tostr_s(git_commit_id(to)), gdn_repo_git_msg());
		goto out;
	}
out:
	git_tree_free(target);
	git_tree_free(base);
	return ret;
}

/* The refusals: dirty tree, HEAD moved, not an ancestor, nothing to revert, pushed commits. */
static int revert_check(git_repository *repo, const struct gdn_revert_opts *o, git_commit *oldc,
			git_commit *newc, const git_oid *head, const struct strvec *ids,
			struct gdn_err *err)
{
	char *remote = NULL;
	bool dirty = false;
	int ret = 0;

	if (!git_oid_equal(head, git_commit_id(newc))) {
		ret = gdn_err_set(err, GDN_EFAILED,
				  "HEAD moved: it is %.12s, not the iteration's '%s'",
				  git_oid_tostr_s(head), o->new_head);
		goto out;
	}
	if (git_oid_equal(git_commit_id(oldc), git_commit_id(newc))) {
		ret = gdn_err_set(err, GDN_EFAILED, "nothing to revert: '%s' is HEAD itself",
				  o->old_head);
		goto out;
	}
	if (git_graph_descendant_of(repo, git_commit_id(newc), git_commit_id(oldc)) != 1) {
		ret = gdn_err_set(err, GDN_EFAILED, "'%s' is not an ancestor of '%s'", o->old_head,
				  o->new_head);
		goto out;
	}
	ret = tree_dirty(repo, &dirty, err);
	if (ret)
		goto out;
	if (dirty) {
		ret = gdn_err_set(err, GDN_EFAILED,
				  "working tree '%s' has uncommitted changes; stash them first",
				  o->root);
		goto out;
	}
	if (o->mode == GDN_REVERT_RESET) {
		ret = pushed(repo, ids, &remote, err);
		if (!ret && remote)
			ret = gdn_err_set(err, GDN_EFAILED,
					  "cannot reset: the iteration's commits are reachable "
					  "from '%s'; use the commit mode",
					  remote);
	}
out:
	free(remote);
	return ret;
}

int gdn_revert_iteration(const struct gdn_revert_opts *o, struct gdn_revert_result *res,
			 struct gdn_err *err)
{
	git_repository *repo = NULL;
	git_commit *oldc = NULL, *newc = NULL, *target = NULL;
	git_tree *old_tree = NULL;
	git_signature *sig = NULL;
	git_reference *moved = NULL, *discarded_ref = NULL;
	struct strvec ids = STRVEC_INIT;
	struct sbuf msg = SBUF_INIT, logmsg = SBUF_INIT;
	char *branch = NULL, *discarded = NULL;
	char old_hex[GIT_OID_HEXSZ + 1];
	git_oid head, revert_id;
	bool checked_out = false;
	int ret;

	ret = open_repo(o->root, &repo, err);
	if (ret)
		goto out;
	ret = resolve_commit(repo, o->old_head, &oldc, err);
	if (!ret)
		ret = resolve_commit(repo, o->new_head, &newc, err);
	if (!ret)
		ret = head_target(repo, &branch, &head, err);
	if (ret)
		goto out;
	git_oid_tostr(old_hex, sizeof(old_hex), git_commit_id(oldc));
	ret = collect_range(repo, git_commit_id(oldc), git_commit_id(newc), &ids, err);
	if (!ret)
		ret = revert_check(repo, o, oldc, newc, &head, &ids, err);
	if (!ret)
		ret = keep_discarded(repo, o->iteration, git_commit_id(newc), &discarded, err);
	if (ret)
		goto out;

	sbuf_addf(&logmsg, "gdnctl: revert iteration %ld", o->iteration);
	if (o->mode == GDN_REVERT_COMMIT) {
		signature(repo, &sig);
		revert_message(&msg, o, repo, &ids, old_hex, discarded);
		if (git_commit_tree(&old_tree, oldc) < 0 ||
		    git_commit_create(&revert_id, repo, NULL, sig, sig, NULL, msg.buf, old_tree, 1,
				      (const git_commit **)&newc) < 0 ||
		    git_commit_lookup(&target, repo, &revert_id) < 0) {
			ret = gdn_err_set(err, GDN_EFAILED, "cannot create the revert commit: %s",
					  gdn_repo_git_msg());
			goto fail;
		}
	} else if (git_commit_dup(&target, oldc) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot copy a commit: %s", gdn_repo_git_msg());
		goto fail;
	}
	ret = checkout(repo, newc, oldc, err);
	checked_out = true;
	if (ret)
		goto fail;
	if (git_reference_create_matching(&moved, repo, branch, git_commit_id(target), 1,
					  git_commit_id(newc), logmsg.buf) < 0) {
		ret = gdn_err_set(err, GDN_EFAILED, "cannot move '%s' to %.12s: %s", branch,
				  git_oid_tostr_s(git_commit_id(target)), gdn_repo_git_msg());
		goto fail;
	}
	if (res) {
		res->discarded_ref = discarded;
		discarded = NULL;
		res->head = xstrdup(git_oid_tostr_s(git_commit_id(target)));
		res->nr_reverted = ids.nr;
		res->reverted = (char **)strvec_detach(&ids);
	}
	goto out;

fail:
	/* Put index and working tree back to new_head; HEAD has not moved. */
	if (checked_out) {
		struct gdn_err again = GDN_ERR_INIT;
		char first[GDN_ERR_MSG_MAX];

		snprintf(first, sizeof(first), "%s", err ? err->msg : "revert failed");
		if (checkout(repo, oldc, newc, &again))
			ret = gdn_err_set(err, GDN_EIO, "%s; restoring the tree failed too: %s",
					  first, again.msg);
	}
	if (discarded && git_reference_lookup(&discarded_ref, repo, discarded) == 0)
		git_reference_delete(discarded_ref);
out:
	git_reference_free(discarded_ref);
	git_reference_free(moved);
	git_signature_free(sig);
	git_tree_free(old_tree);
	git_commit_free(target);
	git_commit_free(newc);
	git_commit_free(oldc);
	git_repository_free(repo);
	strvec_clear(&ids);
	sbuf_release(&msg);
	sbuf_release(&logmsg);
	free(branch);
	free(discarded);
	return ret;
}

/* ---- running-log commits ---- */

/* The log's full path and its path relative to the working tree. */
static int log_paths(git_repository *repo, const char *log, struct sbuf *full, struct sbuf *rel,
		     struct gdn_err *err)
{
	const char *workdir = git_repository_workdir(repo);
	char *wd = NULL, *real = NULL;
	size_t n;
	int ret = 0;

	if (log[0] != '/') {
		sbuf_addf(full, "%s%s", workdir, log);
		sbuf_adds(rel, log);
		goto out;
	}
	sbuf_adds(full, log);
	wd = realpath(workdir, NULL);
	real = realpath(log, NULL);
	if (!wd || !real) {
		ret = gdn_err_errno(err, GDN_ENOTFOUND, "cannot resolve '%s'", log);
		goto out;
	}
	n = strlen(wd);
	if (strncmp(real, wd, n) || real[n] != '/') {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "running log '%s' is outside the repository '%s'", log, wd);
		goto out;
	}
	sbuf_adds(rel, real + n + 1);
out:
	free(wd);
	free(real);
	return ret;
}

/* Stage `rel` and commit it on top of HEAD. */
static int commit_file(git_repository *repo, const char *rel, const char *message, char **commit,
		       struct gdn_err *err)
{
	git_index *index = NULL;
	git_tree *tree = NULL;
	git_commit *parent = NULL;
	git_signature *sig = NULL;
	git_oid tree_id, id;
	int ret = 0;

	if (git_repository_index(&index, repo) < 0 || git_index_add_bypath(index, rel) < 0 ||
	    git_index_write(index) < 0 || git_index_write_tree(&tree_id, index) < 0 ||
	    git_tree_lookup(&tree, repo, &tree_id) < 0) {
		ret =
		    gdn_err_set(err, GDN_EFAILED, "cannot stage '%s': %s", rel, gdn_repo_git_msg());
		goto out;
	}
	ret = resolve_commit(repo, "HEAD", &parent, err);
	if (ret)
		goto out;
	signature(repo, &sig);
	if (git_commit_create(&id, repo, "HEAD", sig, sig, NULL, message, tree, 1,
			      (const git_commit **)&parent) < 0) {
		ret = gdn_err_set(err, GDN_EFAILED, "cannot commit '%s': %s", rel,
				  gdn_repo_git_msg());
		goto out;
	}
	if (commit)
		*commit = xstrdup(git_oid_tostr_s(&id));
out:
	git_signature_free(sig);
	git_commit_free(parent);
	git_tree_free(tree);
	git_index_free(index);
	return ret;
}

/*
 * Write `text` as the new content of the log and commit it; on a failed
 * commit the old content `orig` is written back and re-staged.
 */
static int write_and_commit(git_repository *repo, const struct sbuf *full, const char *rel,
			    const struct sbuf *orig, const struct sbuf *text, const char *message,
			    char **commit, struct gdn_err *err)
{
	git_index *index = NULL;
	int ret;

	ret = gdn_write_file_atomic(full->buf, text->buf, text->len, err);
	if (ret)
		goto out;
	ret = commit_file(repo, rel, message, commit, err);
	if (ret && !gdn_write_file_atomic(full->buf, orig->buf, orig->len, NULL) &&
	    !git_repository_index(&index, repo) && !git_index_add_bypath(index, rel))
		git_index_write(index);
out:
	git_index_free(index);
	return ret;
}

/* Offset of the last line starting with "### Iteration ", or -1. */
static long last_entry(const struct sbuf *sb)
{
	long found = -1;

	for (size_t at = 0; at < sb->len;) {
		const char *nl = memchr(sb->buf + at, '\n', sb->len - at);

		if (!strncmp(sb->buf + at, ITERATION_HEADING, strlen(ITERATION_HEADING)))
			found = (long)at;
		at = nl ? (size_t)(nl - sb->buf) + 1 : sb->len;
	}
	return found;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * In the last entry, find the last "- Commit:" line; if it is a
 * placeholder, set [*start, *end) to the span to replace (the line
 * without its indentation and line ending).
 */
static bool find_placeholder(const struct sbuf *sb, size_t *start, size_t *end)
{
	long entry = last_entry(sb);
	size_t ls = 0, le = 0;
	bool have = false;

	if (entry < 0)
		return false;
	for (size_t at = (size_t)entry; at < sb->len;) {
		const char *nl = memchr(sb->buf + at, '\n', sb->len - at);
		size_t next = nl ? (size_t)(nl - sb->buf) + 1 : sb->len;
		size_t s = at, e = nl ? (size_t)(nl - sb->buf) : sb->len;

		while (s < e && is_space(sb->buf[s]))
			s++;
		if (e - s >= 9 && !strncmp(sb->buf + s, "- Commit:", 9)) {
			ls = s;
			le = e;
			have = true;
		}
		at = next;
	}
	if (!have)
		return false;
	if (le > ls && sb->buf[le - 1] == '\r')
		le--;
	{
		size_t vs = ls + 9, ve = le;

		while (vs < ve && is_space(sb->buf[vs]))
			vs++;
		while (ve > vs && is_space(sb->buf[ve - 1]))
			ve--;
		if (!((ve - vs == 9 && !strncmp(sb->buf + vs, "(pending)", 9)) ||
		      (ve - vs == 11 && !strncmp(sb->buf + vs, "this commit", 11))))
			return false;
	}
	*start = ls;
	*end = le;
	return true;
}

int gdn_revert_stamp_log(const char *root, const char *log, const char *sha, bool *stamped,
			 char **commit, struct gdn_err *err)
{
	git_repository *repo = NULL;
	git_commit *c = NULL;
	struct sbuf full = SBUF_INIT, rel = SBUF_INIT, orig = SBUF_INIT, text = SBUF_INIT,
		    msg = SBUF_INIT;
	const char *hex;
	size_t start, end;
	int ret;

	*stamped = false;
	if (commit)
		*commit = NULL;
	ret = open_repo(root, &repo, err);
	if (!ret)
		ret = resolve_commit(repo, sha, &c, err);
	if (!ret)
		ret = log_paths(repo, log, &full, &rel, err);
	if (!ret)
		ret = sbuf_read_file(&orig, full.buf, 64 * 1024 * 1024, err);
	if (ret || !find_placeholder(&orig, &start, &end))
		goto out;
	hex = git_oid_tostr_s(git_commit_id(c));
	sbuf_add(&text, orig.buf, start);
	sbuf_addf(&text, "- Commit: %s", hex);
	sbuf_add(&text, orig.buf + end, orig.len - end);
	sbuf_addf(&msg, "gdnctl: stamp running log with %.12s", hex);
	ret = write_and_commit(repo, &full, rel.buf, &orig, &text, msg.buf, commit, err);
	*stamped = !ret;
out:
	git_commit_free(c);
	git_repository_free(repo);
	sbuf_release(&full);
	sbuf_release(&rel);
	sbuf_release(&orig);
	sbuf_release(&text);
	sbuf_release(&msg);
	return ret;
}

static void add_number(struct sbuf *sb, double v)
{
	if (isnan(v))
		sbuf_adds(sb, "n/a");
	else
		sbuf_addf(sb, "%.6g", v);
}

int gdn_revert_log_measurements(const char *root, const char *log, const struct gdn_measured *m,
				char **commit, struct gdn_err *err)
{
	git_repository *repo = NULL;
	struct sbuf full = SBUF_INIT, rel = SBUF_INIT, orig = SBUF_INIT, text = SBUF_INIT,
		    msg = SBUF_INIT;
	const char *nl, *eol;
	int ret;

	if (commit)
		*commit = NULL;
	ret = open_repo(root, &repo, err);
	if (!ret)
		ret = log_paths(repo, log, &full, &rel, err);
	if (!ret)
		ret = sbuf_read_file(&orig, full.buf, 64 * 1024 * 1024, err);
	if (ret)
		goto out;
	if (last_entry(&orig) < 0) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no iteration entry in running log '%s'",
				  full.buf);
		goto out;
	}
	nl = memchr(orig.buf, '\n', orig.len);
	eol = nl && nl > orig.buf && nl[-1] == '\r' ? "\r\n" : "\n";
	sbuf_add(&text, orig.buf, orig.len);
	if (text.len && text.buf[text.len - 1] != '\n')
		sbuf_adds(&text, eol);
	sbuf_addf(&text, "- Measured: %s ", m->metric);
	add_number(&text, m->before);
	sbuf_adds(&text, " -> ");
	add_number(&text, m->after);
	if (!isnan(m->before) && !isnan(m->after) && m->before != 0)
		sbuf_addf(&text, " (%+.2f%%)", (m->after - m->before) / fabs(m->before) * 100.0);
	sbuf_adds(&text, eol);
	for (size_t i = 0; m->lines && m->lines[i]; i++)
		sbuf_addf(&text, "%s%s", m->lines[i], eol);
	sbuf_addf(&msg, "gdnctl: record measured figures for %s", m->metric);
	ret = write_and_commit(repo, &full, rel.buf, &orig, &text, msg.buf, commit, err);
out:
	git_repository_free(repo);
	sbuf_release(&full);
	sbuf_release(&rel);
	sbuf_release(&orig);
	sbuf_release(&text);
	sbuf_release(&msg);
	return ret;
}
