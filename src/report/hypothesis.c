/*
 * What each iteration tried, for the report's hover titles and table: the
 * subjects of the iteration's commits (read with libgit2; reverted commits
 * stay reachable from refs/gdnctl/discarded/<n>), or else the first line
 * of the agent's last message (<log dir>/iteration-NNN-last-message.txt).
 * Best effort: a missing repository or file leaves the hypothesis empty.
 */
#include "gdnctl/compat.h"
#include <git2.h>
#include "gdnctl/err.h"
#include "gdnctl/repo.h"
#include "gdnctl/report.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define HYPOTHESIS_MAX 300

/* Control characters to spaces, trimmed, capped at HYPOTHESIS_MAX bytes. */
static char *finish(struct sbuf *sb)
{
	for (size_t i = 0; i < sb->len; i++)
		if ((unsigned char)sb->buf[i] < 0x20 || sb->buf[i] == 0x7f)
			sb->buf[i] = ' ';
	if (sb->len > HYPOTHESIS_MAX)
		sbuf_setlen(sb, HYPOTHESIS_MAX);
	sbuf_trim(sb);
	if (!sb->len)
		return NULL;
	return sbuf_detach(sb, NULL);
}

/* The subjects of the iteration's commits, oldest first, joined by " / ". */
static char *subjects(git_repository *repo, const struct gdn_report_iter *it)
{
	struct sbuf sb = SBUF_INIT;

	for (size_t i = it->ids.nr; i > 0 && sb.len < HYPOTHESIS_MAX; i--) {
		git_commit *c = NULL;
		git_oid oid;
		const char *s;

		if (git_oid_fromstr(&oid, it->ids.v[i - 1]) < 0 ||
		    git_commit_lookup(&c, repo, &oid) < 0)
			continue;
		s = git_commit_summary(c);
		if (s && *s && strncmp(s, "gdnctl: ", 8)) {
			if (sb.len)
				sbuf_adds(&sb, " / ");
			sbuf_adds(&sb, s);
		}
		git_commit_free(c);
	}
	return finish(&sb);
}

/* The first non-empty line of the agent's last message. */
static char *last_message(const char *log_dir, long n)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT, line = SBUF_INIT;
	char *path = xstrfmt("%s/iteration-%03ld-last-message.txt", log_dir, n);
	char *ret = NULL;
	const char *p, *end;

	if (sbuf_read_file(&sb, path, 1 << 16, &err))
		goto out;
	for (p = sb.buf; *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, '\n');
		sbuf_reset(&line);
		sbuf_add(&line, p, (size_t)(end - p));
		sbuf_trim(&line);
		if (line.len) {
			ret = finish(&line);
			break;
		}
	}
out:
	free(path);
	sbuf_release(&line);
	sbuf_release(&sb);
	return ret;
}

void gdn_report_add_hypotheses(struct gdn_report *r, const char *repo_root, const char *log_dir)
{
	const char *root = repo_root ? repo_root : r->workdir;
	git_repository *repo = NULL;

	if (root) {
		gdn_repo_global_init();
		if (git_repository_open_ext(&repo, root, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
			repo = NULL;
	}
	for (size_t i = 0; i < r->nr; i++) {
		struct gdn_report_iter *it = &r->v[i];

		FREE_AND_NULL(it->hypothesis);
		if (repo && !it->ids.nr && it->commit && it->outcome == GDN_REPORT_BASELINE)
			strvec_push(&it->ids, it->commit);
		if (repo && it->ids.nr)
			it->hypothesis = subjects(repo, it);
		if (!it->hypothesis && log_dir && it->iteration > 0)
			it->hypothesis = last_message(log_dir, it->iteration);
	}
	git_repository_free(repo);
}
