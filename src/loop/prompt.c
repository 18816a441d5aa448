/*
 * The prompt of one iteration: the template with its placeholders
 * replaced, then the session directives in the original's framing; and
 * the running-log helpers (last entry for {{LOG_TAIL}}, commit stamping).
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/prompt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define DIRECTIVES_HEADER                                                                    \
	"Session directives for this codex-loop run (must follow unless they conflict with " \
	"tests/correctness):"

void gdn_prompt_render(const char *tmpl, const struct gdn_prompt_vars *v,
		       const struct strvec *directives, struct sbuf *out)
{
	struct sbuf body = SBUF_INIT;
	char num[32], total[32];
	const struct {
		const char *name, *value;
	} vars[] = {
	    {"{{ITERATION}}", num},
	    {"{{TOTAL_ITERATIONS}}", total},
	    {"{{HEAD_SHA}}", v->head_sha ? v->head_sha : ""},
	    {"{{BRANCH}}", v->branch ? v->branch : ""},
	    {"{{LOG_TAIL}}", v->log_tail ? v->log_tail : ""},
	    {"{{LOOP_NOTE}}", v->note ? v->note : ""},
	    {"{{LOG_FILE}}", v->log_file ? v->log_file : GDN_PROMPT_NO_LOG_FILE},
	};

	snprintf(num, sizeof(num), "%ld", v->iteration);
	snprintf(total, sizeof(total), "%ld", v->total);
	/* One pass: a value that contains a placeholder is not expanded again. */
	for (const char *p = tmpl; *p;) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(vars); i++)
			if (!strncmp(p, vars[i].name, strlen(vars[i].name)))
				break;
		if (i < ARRAY_SIZE(vars)) {
			sbuf_adds(&body, vars[i].value);
			p += strlen(vars[i].name);
		} else {
			sbuf_addch(&body, *p++);
		}
	}
	if (v->note && *v->note && !strstr(tmpl, "{{LOOP_NOTE}}")) {
		sbuf_rtrim(&body);
		sbuf_addf(&body, "\n\nNote from gdnctl loop: %s\n", v->note);
	}
	if (directives && directives->nr) {
		sbuf_rtrim(&body);
		sbuf_adds(&body, "\n\n" DIRECTIVES_HEADER "\n\n");
		for (size_t i = 0; i < directives->nr; i++)
			sbuf_addf(&body, "%s[Directive %zu]\n%s", i ? "\n" : "", i + 1,
				  directives->v[i]);
		sbuf_addch(&body, '\n');
	}
	sbuf_add(out, body.buf, body.len);
	sbuf_release(&body);
}

const char *gdn_prompt_log_file(const char *log, const char *workdir)
{
	size_t n = workdir ? strlen(workdir) : 0;

	while (n > 1 && workdir[n - 1] == '/')
		n--;
	if (log && n && !strncmp(log, workdir, n) && log[n] == '/' && log[n + 1])
		return log + n + 1;
	return log;
}

int gdn_prompt_add_directive_file(struct strvec *directives, const char *path, const char *source,
				  struct gdn_err *err)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	ret = sbuf_read_file(&sb, path, 4 * 1024 * 1024, err);
	if (ret == GDN_ENOTFOUND) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "directive file not found for %s: %s", source,
				  path);
		goto out;
	}
	if (ret)
		goto out;
	sbuf_trim(&sb);
	if (!sb.len) {
		ret = gdn_err_set(err, GDN_EUSAGE, "directive file is empty for %s: %s", source,
				  path);
		goto out;
	}
	strvec_push(directives, sb.buf);
out:
	sbuf_release(&sb);
	return ret;
}

char *gdn_prompt_find(const char *const *dirs, const char *rel)
{
	for (; *dirs; dirs++) {
		char *path;

		if (!**dirs)
			continue;
		path = xstrfmt("%s/%s", *dirs, rel);
		if (!access(path, R_OK))
			return path;
		free(path);
	}
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void gdn_prompt_list_presets(const char *const *dirs, struct strvec *out)
{
	for (; *dirs; dirs++) {
		struct dirent *e;
		DIR *d;

		if (!**dirs || !(d = opendir(*dirs)))
			continue;
		while ((e = readdir(d))) {
			size_t n = strlen(e->d_name);
			char *name;

			if (n <= 3 || e->d_name[0] == '.' || strcmp(e->d_name + n - 3, ".md"))
				continue;
			name = xstrndup(e->d_name, n - 3);
			if (!strvec_contains(out, name))
				strvec_push(out, name);
			free(name);
		}
		closedir(d);
	}
	if (out->nr > 1)
		qsort(out->v, out->nr, sizeof(*out->v), cmp_str);
}

bool gdn_prompt_preset_name_ok(const char *name)
{
	if (!*name || *name == '.' || strlen(name) > 200)
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
			return false;
	return true;
}

/* Offset of the last line starting with "### Iteration ", or len when none. */
static size_t last_entry(const char *log, size_t len)
{
	size_t found = len;

	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(log + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - log) : len;

		if (end - pos >= 14 && !memcmp(log + pos, "### Iteration ", 14))
			found = pos;
		pos = end + 1;
	}
	return found;
}

void gdn_prompt_log_tail(const char *log, size_t len, struct sbuf *out)
{
	size_t start = last_entry(log, len);

	sbuf_add(out, log + start, len - start);
}

/* N of a "### Iteration N..." line (-1: none). */
static long heading_number(const char *l)
{
	if (strncmp(l, "### Iteration ", 14) || !isdigit((unsigned char)l[14]))
		return -1;
	return strtol(l + 14, NULL, 10);
}

/*
 * The lines of sb into lines (universal newlines, as Python's splitlines);
 * the index of the line that starts at byte `start` (0: none does).
 */
static size_t split_lines(const struct sbuf *sb, size_t start, struct strvec *lines)
{
	struct sbuf line = SBUF_INIT;
	size_t entry_line = 0;

	for (size_t pos = 0; pos < sb->len;) {
		size_t end = pos;

		while (end < sb->len && sb->buf[end] != '\n' && sb->buf[end] != '\r')
			end++;
		if (pos == start)
			entry_line = lines->nr;
		sbuf_reset(&line);
		sbuf_add(&line, sb->buf + pos, end - pos);
		strvec_push(lines, line.buf);
		if (end < sb->len && sb->buf[end] == '\r' && end + 1 < sb->len &&
		    sb->buf[end + 1] == '\n')
			end++;
		pos = end + 1;
	}
	sbuf_release(&line);
	return entry_line;
}

int gdn_prompt_stamp_log(const char *path, const char *sha, long worker, long iteration,
			 struct gdn_err *err)
{
	struct sbuf sb = SBUF_INIT, res = SBUF_INIT;
	struct strvec lines = STRVEC_INIT;
	size_t start, hit = SIZE_MAX, entry_line;
	int ret = 0;

	if (access(path, F_OK))
		goto out;
	ret = sbuf_read_file(&sb, path, 64 * 1024 * 1024, err);
	if (ret)
		goto out;
	start = last_entry(sb.buf, sb.len);
	if (start == sb.len)
		goto out;
	entry_line = split_lines(&sb, start, &lines);
	for (size_t i = lines.nr; i-- > entry_line;) {
		const char *l = lines.v[i];

		while (isspace((unsigned char)*l))
			l++;
		if (!strncmp(l, "- Commit:", 9)) {
			struct sbuf val = SBUF_INIT;

			sbuf_adds(&val, strchr(l, ':') + 1);
			sbuf_trim(&val);
			if (!strcmp(val.buf, "this commit") || !strcmp(val.buf, "(pending)"))
				hit = i;
			sbuf_release(&val);
			break;
		}
	}
	if (hit == SIZE_MAX)
		goto out;
	/*
	 * --workers: entries land in promotion order, not in the order their
	 * iterations began; a heading that would not increase takes the next
	 * number (its iteration is on the Worker line).
	 */
	if (worker > 0) {
		long prev = -1, num = heading_number(lines.v[entry_line]);

		for (size_t i = 0; i < entry_line; i++)
			if (heading_number(lines.v[i]) >= 0)
				prev = heading_number(lines.v[i]);
		if (num >= 0 && prev >= 0 && num <= prev) {
			const char *rest = lines.v[entry_line] + 14;

			while (isdigit((unsigned char)*rest))
				rest++;
			sbuf_reset(&res);
			sbuf_addf(&res, "### Iteration %ld%s", prev + 1, rest);
			free((char *)lines.v[entry_line]);
			lines.v[entry_line] = sbuf_detach(&res, NULL);
		}
	}
	sbuf_reset(&res);
	for (size_t i = 0; i < lines.nr; i++) {
		const char *l = lines.v[i];

		if (i == hit) {
			size_t ind = 0;

			while (isspace((unsigned char)l[ind]))
				ind++;
			sbuf_add(&res, l, ind);
			sbuf_addf(&res, "- Commit: %s", sha);
			if (worker > 0) {
				sbuf_addch(&res, '\n');
				sbuf_add(&res, l, ind);
				sbuf_addf(&res, "- Worker: %ld (iteration %ld)", worker, iteration);
			}
		} else {
			sbuf_adds(&res, l);
		}
		sbuf_addch(&res, '\n');
	}
	ret = gdn_write_file_atomic(path, res.buf, res.len, err);
	if (!ret)
		ret = 1;
out:
	strvec_clear(&lines);
	sbuf_release(&res);
	sbuf_release(&sb);
	return ret;
}
