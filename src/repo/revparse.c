/*
 * Revisions resolved as git's rev-parse does, for src/repo/ only: libgit2's
 * git_revparse_single without its leak (below). It calls nothing of
 * gdnctl's, so every file of src/repo/ may call it.
 */
#include "gdnctl/compat.h"
#include <git2.h>
#include "gdnctl/xalloc.h"
#include "repo_impl.h"

/*
 * `name` as git's rev-parse tries a name: a full id, then a reference
 * (dwim: refs/, refs/tags/, refs/heads/, ...). *named: a reference by
 * that name exists (even when the object it names does not).
 */
static int lookup_name(git_object **out, git_repository *repo, const char *name, bool *named)
{
	git_reference *ref = NULL, *direct = NULL;
	git_oid oid;
	int rc;

	*named = false;
	if (strlen(name) == GIT_OID_HEXSZ && !git_oid_fromstr(&oid, name)) {
		rc = git_object_lookup(out, repo, &oid, GIT_OBJECT_ANY);
		if (rc != GIT_ENOTFOUND)
			return rc;
	}
	rc = git_reference_dwim(&ref, repo, name);
	if (!rc) {
		*named = true;
		rc = git_reference_resolve(&direct, ref);
		if (!rc)
			rc = git_object_lookup(out, repo, git_reference_target(direct),
					       GIT_OBJECT_ANY);
	}
	git_reference_free(direct);
	git_reference_free(ref);
	return rc;
}

/*
 * git_revparse_single without its leak: libgit2 1.5 drops the reference
 * it found when the object that reference names is missing (a branch
 * left at a commit that a concurrent `git gc --prune=now` removed; the
 * chaos test's agents do that). So a plain name is resolved here, and an
 * expression (main~1, HEAD^{tree}, @) whose leading name is such a
 * reference is refused before revparse sees it; the rest is revparse's.
 */
int gdn_repo_revparse(git_object **out, git_repository *repo, const char *spec)
{
	size_t n = strcspn(spec, "~^:@");
	git_object *probe = NULL;
	char *base;
	bool named;
	int rc;

	*out = NULL;
	if (!spec[n]) {
		rc = lookup_name(out, repo, spec, &named);
		if (named || (rc != GIT_ENOTFOUND && rc != GIT_EINVALIDSPEC))
			return rc;
		return git_revparse_single(out, repo, spec); /* an abbreviated id, ... */
	}
	if (!n && spec[0] == '@' && (!spec[1] || strchr("~^:", spec[1])))
		base = xstrdup("HEAD"); /* "@" alone is HEAD */
	else
		base = xstrndup(spec, n);
	rc = *base ? lookup_name(&probe, repo, base, &named) : (named = false, 0);
	git_object_free(probe);
	free(base);
	if (named && rc < 0)
		return rc;
	return git_revparse_single(out, repo, spec);
}
