/*
 * Where a loop keeps its files by default: outside the working tree, in
 * the repository's common git directory, which `git clean` (even -fdx),
 * `git checkout` and `git reset --hard` never touch, and which every
 * worktree of the repository shares.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

/* A copy of dir without its trailing slashes (not the root's). */
static char *strip_slash(const char *dir)
{
	char *s = xstrdup(dir);
	size_t n = strlen(s);

	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

char *gdn_loop_common_dir(const char *repo, struct gdn_err *err)
{
	struct gdn_repo *r = NULL;
	char *dir = NULL;

	if (!gdn_repo_open(repo, &r, err))
		dir = strip_slash(gdn_repo_commondir(r));
	gdn_repo_free(r);
	return dir;
}

/* One path component for a branch name: '/' and '%' percent-encoded. */
static void add_branch_component(struct sbuf *sb, const char *branch)
{
	for (const char *p = branch; *p; p++) {
		if (*p == '/' || *p == '%')
			sbuf_addf(sb, "%%%02X", (unsigned char)*p);
		else
			sbuf_addch(sb, *p);
	}
}

char *gdn_loop_default_log_dir(const char *repo, const char *branch, struct gdn_err *err)
{
	struct gdn_repo *r = NULL;
	struct sbuf sb = SBUF_INIT;
	char *head_branch = NULL, *common = NULL, *dir = NULL;

	if (gdn_repo_open(repo, &r, err))
		goto out;
	if (!branch || !*branch) {
		if (gdn_repo_head(r, NULL, &head_branch, err))
			goto out;
		branch = head_branch ? head_branch : "HEAD";
	}
	common = strip_slash(gdn_repo_commondir(r));
	sbuf_addf(&sb, "%s/gdnctl/", common);
	add_branch_component(&sb, branch);
	dir = sbuf_detach(&sb, NULL);
out:
	gdn_repo_free(r);
	sbuf_release(&sb);
	free(head_branch);
	free(common);
	return dir;
}
