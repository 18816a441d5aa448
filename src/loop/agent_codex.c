/*
 * The Codex CLI driver: `codex exec --json` with the prompt on stdin. The
 * JSON events go to the transcript as they are; the user sees a rendering
 * in the manner of codex's plain output (exec, codex, thinking, ...), and
 * turn.completed's usage is the run's input and output tokens. Lines that
 * are not JSON (what codex prints on stderr) are shown through the plain
 * output filter.
 *
 * Binary: --codex-bin (with a '/': that file, which must exist; else a
 * PATH lookup), then $GDNCTL_CODEX, then `codex` in PATH, then the macOS
 * app bundles when they exist. With --reasoning-effort, each candidate is
 * probed for the values it accepts (the first that accepts the value
 * wins; an unparseable answer is tried with a warning). Probes run with a
 * short timeout in a fresh empty CODEX_HOME/HOME (also their working
 * directory, which is no git repository) and without API keys, so codex
 * cannot reach a model.
 */
#include "gdnctl/compat.h"
#include <jansson.h>
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "agent_impl.h"

#define PROBE_VALUE   "__gdnctl_invalid_reasoning_effort_probe__"
#define PROBE_OUT_MAX (256 * 1024)

void agent_json_quote(struct sbuf *out, const char *s)
{
	sbuf_addch(out, '"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			sbuf_addf(out, "\\%c", c);
		else if (c == '\n')
			sbuf_adds(out, "\\n");
		else if (c == '\t')
			sbuf_adds(out, "\\t");
		else if (c == '\r')
			sbuf_adds(out, "\\r");
		else if (c < 0x20)
			sbuf_addf(out, "\\u%04x", c);
		else
			sbuf_addch(out, c);
	}
	sbuf_addch(out, '"');
}

static const char *find_mem(const char *hay, size_t len, const char *needle)
{
	return memmem(hay, len, needle, strlen(needle));
}

/* An effort value: letters, digits, '_', '-', '.' (never blanks, quotes or NUL). */
static bool is_word(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && (!s[i] || !strchr("_-.", s[i])))
			return false;
	return len > 0;
}

bool agent_codex_parse_efforts(const char *text, size_t len, struct strvec *values)
{
	static const char key[] = "in `model_reasoning_effort`";
	const char *end = text + len, *p, *q, *stop;
	size_t before = values->nr;

	for (p = text; (p = find_mem(p, (size_t)(end - p), "unknown variant `")); p++) {
		q = p + strlen("unknown variant `");
		q = memchr(q, '`', (size_t)(end - q));
		if (!q)
			return false;
		q++;
		if ((size_t)(end - q) < 2 || q[0] != ',')
			continue;
		q++;
		while (q < end && isspace((unsigned char)*q))
			q++;
		if ((size_t)(end - q) >= 15 && !memcmp(q, "expected one of", 15))
			q += 15;
		else if ((size_t)(end - q) >= 8 && !memcmp(q, "expected", 8))
			q += 8;
		else
			continue;
		stop = find_mem(q, (size_t)(end - q), key);
		if (!stop)
			continue;
		/* the backticked tokens between "expected" and "in `model_reasoning_effort`" */
		while (q < stop) {
			const char *open = memchr(q, '`', (size_t)(stop - q)), *close;

			if (!open)
				break;
			close = memchr(open + 1, '`', (size_t)(stop - open - 1));
			if (!close)
				break;
			if (close > open + 1 && is_word(open + 1, (size_t)(close - open - 1))) {
				char *v = xstrndup(open + 1, (size_t)(close - open - 1));

				if (!strvec_contains(values, v))
					strvec_push(values, v);
				free(v);
			}
			q = close + 1;
		}
		if (values->nr > before)
			return true;
	}
	return false;
}

bool agent_codex_help_has_search(const char *text, size_t len)
{
	const char *end = text + len, *p;

	for (p = text; (p = find_mem(p, (size_t)(end - p), "--search")); p++) {
		const char *after = p + 8;

		if (p > text && !isspace((unsigned char)p[-1]))
			continue;
		if (after < end && !isspace((unsigned char)*after))
			continue;
		return true;
	}
	return false;
}

/* Remove a directory tree the probe may have written into (best effort, no symlinks followed). */
static void remove_tree(const char *path, int depth)
{
	DIR *d;
	struct dirent *de;
	struct sbuf sub = SBUF_INIT;
	struct stat st;

	if (depth > 32)
		return;
	d = opendir(path);
	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			sbuf_reset(&sub);
			sbuf_addf(&sub, "%s/%s", path, de->d_name);
			if (!lstat(sub.buf, &st) && S_ISDIR(st.st_mode))
				remove_tree(sub.buf, depth + 1);
			else
				unlink(sub.buf);
		}
		closedir(d);
	}
	rmdir(path);
	sbuf_release(&sub);
}

/* Run one probe: argv in a fresh empty home; output captured into `out`. 0 when it ran. */
static int run_probe(const struct gdn_agent *a, const char *const *argv, bool isolated,
		     struct sbuf *out, int *exit_code)
{
	const char *tmp = getenv("TMPDIR");
	struct strvec env = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *dir = NULL;
	int ret = -1;

	strvec_pushv(&env, a->env.v);
	if (isolated) {
		dir = xstrfmt("%s/gdnctl-codex-probe-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir))
			goto out;
		strvec_pushf(&env, "CODEX_HOME=%s", dir);
		strvec_pushf(&env, "HOME=%s", dir);
		strvec_pushl(&env, "OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL",
			     "XDG_CONFIG_HOME", NULL);
		p.dir = dir;
	}
	p.argv = argv;
	p.env = env.v;
	p.timeout_ms = (int)(a->probe_timeout_ms > INT_MAX ? INT_MAX : a->probe_timeout_ms);
	p.kill_grace_ms = 1000;
	p.capture = true;
	p.out.limit = PROBE_OUT_MAX;
	if (gdn_proc_run(&p, &err) < 0)
		goto out;
	sbuf_add(out, p.out.buf, p.out.len);
	*exit_code = p.status_kind == GDN_PROC_EXITED ? p.code : -1;
	ret = 0;
out:
	if (dir) {
		remove_tree(dir, 0);
		free(dir);
	}
	gdn_proc_release(&p);
	strvec_clear(&env);
	return ret;
}

/* The values `bin` accepts for model_reasoning_effort: true and `values` when known. */
static bool probe_efforts(const struct gdn_agent *a, const char *bin, struct strvec *values)
{
	const char *argv[] = {bin,     "exec", "-c", "model_reasoning_effort=\"" PROBE_VALUE "\"",
			      "probe", NULL};
	struct sbuf out = SBUF_INIT;
	int code = 0;
	bool known = false;

	if (!run_probe(a, argv, true, &out, &code))
		known = agent_codex_parse_efforts(out.buf, out.len, values);
	sbuf_release(&out);
	return known;
}

static bool probe_search(const struct gdn_agent *a, const char *bin)
{
	const char *argv[] = {bin, "exec", "--help", NULL};
	struct sbuf out = SBUF_INIT;
	int code = -1;
	bool ok = false;

	if (!run_probe(a, argv, false, &out, &code))
		ok = code == 0 && agent_codex_help_has_search(out.buf, out.len);
	sbuf_release(&out);
	return ok;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return !strcmp(a, b);
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void add_candidate(struct strvec *cands, char *path)
{
	size_t i;

	if (!path)
		return;
	for (i = 0; i < cands->nr; i++)
		if (same_file(cands->v[i], path))
			break;
	if (i == cands->nr)
		strvec_push(cands, path);
	free(path);
}

/* Candidates in order; an explicitly named binary that does not exist is an error. */
static int codex_candidates(const struct gdn_agent *a, struct strvec *cands, struct gdn_err *err)
{
	const char *envbin = getenv("GDNCTL_CODEX"), *home = getenv("HOME");
	char *path;

	if (a->bin) {
		path = agent_find_program(a->bin);
		if (!path && strchr(a->bin, '/'))
			return gdn_err_set(err, GDN_ENOTFOUND,
					   "codex binary '%s' does not exist or is not executable",
					   a->bin);
		if (!path)
			return gdn_err_set(err, GDN_ENOTFOUND,
					   "codex binary '%s' not found in PATH", a->bin);
		add_candidate(cands, path);
	}
	if (envbin && *envbin) {
		path = agent_find_program(envbin);
		if (!path)
			return gdn_err_set(err, GDN_ENOTFOUND,
					   "codex binary '%s' (from GDNCTL_CODEX) not found",
					   envbin);
		add_candidate(cands, path);
	}
	add_candidate(cands, agent_find_program("codex"));
	add_candidate(cands,
		      agent_find_program("/Applications/Codex.app/Contents/Resources/codex"));
	if (home && *home) {
		path = xstrfmt("%s/Applications/Codex.app/Contents/Resources/codex", home);
		add_candidate(cands, agent_find_program(path));
		free(path);
	}
	if (!cands->nr)
		return gdn_err_set(err, GDN_ENOTFOUND,
				   "could not find a 'codex' binary: install the Codex CLI (npm "
				   "install -g @openai/codex) or pass --codex-bin /path/to/codex");
	return 0;
}

static void join_values(struct sbuf *sb, const struct strvec *values)
{
	size_t i;

	for (i = 0; i < values->nr; i++)
		sbuf_addf(sb, "%s%s", i ? ", " : "", values->v[i]);
}

static int codex_open(struct gdn_agent *a, struct strvec *warnings, struct gdn_err *err)
{
	struct strvec cands = STRVEC_INIT, values = STRVEC_INIT;
	struct sbuf seen = SBUF_INIT, list = SBUF_INIT;
	const char *chosen = NULL, *unknown = NULL;
	char *chosen_efforts = NULL;
	size_t i;
	int ret;

	ret = codex_candidates(a, &cands, err);
	if (ret < 0)
		goto out;
	if (!a->effort)
		chosen = cands.v[0];
	for (i = 0; a->effort && i < cands.nr && !chosen; i++) {
		strvec_clear(&values);
		if (!probe_efforts(a, cands.v[i], &values)) {
			if (!unknown)
				unknown = cands.v[i];
			sbuf_addf(&seen, "%s'%s': unknown", seen.len ? "; " : "", cands.v[i]);
			continue;
		}
		sbuf_reset(&list);
		join_values(&list, &values);
		sbuf_addf(&seen, "%s'%s': %s", seen.len ? "; " : "", cands.v[i], list.buf);
		if (strvec_contains(&values, a->effort)) {
			chosen = cands.v[i];
			chosen_efforts = xstrdup(list.buf);
		}
	}
	if (a->effort && !chosen && unknown) {
		chosen = unknown;
		strvec_pushf(warnings,
			     "could not determine supported reasoning-effort values for %s; trying "
			     "it for --reasoning-effort=%s",
			     chosen, a->effort);
	}
	if (!chosen) {
		ret = gdn_err_set(err, GDN_EBACKEND,
				  "no codex binary supports --reasoning-effort '%s' (%s): install "
				  "a newer Codex CLI and/or pass --codex-bin",
				  a->effort, seen.buf);
		goto out;
	}
	free(a->bin);
	a->bin = xstrdup(chosen);
	a->efforts = chosen_efforts;
	chosen_efforts = NULL;
	if (a->search) {
		a->search_ok = probe_search(a, a->bin);
		if (!a->search_ok)
			strvec_pushf(
			    warnings,
			    "'%s exec --help' does not list --search; continuing without it",
			    a->bin);
	}
out:
	free(chosen_efforts);
	strvec_clear(&cands);
	strvec_clear(&values);
	sbuf_release(&seen);
	sbuf_release(&list);
	return ret;
}

static void codex_argv(const struct gdn_agent *a, const struct gdn_agent_request *req,
		       struct strvec *argv)
{
	struct sbuf kv = SBUF_INIT;

	strvec_pushl(argv, a->bin, "exec", "--json", "-C", req->workdir ? req->workdir : ".",
		     "--dangerously-bypass-approvals-and-sandbox", NULL);
	if (req->last_message_file)
		strvec_pushl(argv, "-o", req->last_message_file, NULL);
	if (a->ephemeral)
		strvec_push(argv, "--ephemeral");
	if (a->model)
		strvec_pushl(argv, "-m", a->model, NULL);
	if (a->effort) {
		sbuf_adds(&kv, "model_reasoning_effort=");
		agent_json_quote(&kv, a->effort);
		strvec_pushl(argv, "-c", kv.buf, NULL);
	}
	if (a->profile)
		strvec_pushl(argv, "-p", a->profile, NULL);
	if (a->search && a->search_ok)
		strvec_push(argv, "--search");
	strvec_push(argv, "-");
	sbuf_release(&kv);
}

/* ---- codex exec --json events ---- */

#define SHOW_LINE_MAX	 4096
#define SHOW_OUTPUT_MAX	 20 /* lines of a command's output shown */
#define SHOW_MESSAGE_MAX 5000

static const char *jstr(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

/* A token count: a non-negative integer, else -1. */
static int64_t count_of(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v)
								: -1;
}

/* Push the lines of text (at most `max`, each cut at SHOW_LINE_MAX) with a prefix. */
static void push_lines(struct strvec *show, const char *prefix, const char *text, int max)
{
	const char *p = text;
	int n = 0;

	while (*p) {
		size_t len = strcspn(p, "\n");

		if (n++ == max) {
			int more = 1;

			for (p += len; *p; p++)
				more += *p == '\n' && p[1];
			strvec_pushf(show, "%s... (%d more lines)", prefix, more);
			return;
		}
		if (len > SHOW_LINE_MAX)
			strvec_pushf(show, "%s%.*s...", prefix, SHOW_LINE_MAX, p);
		else
			strvec_pushf(show, "%s%.*s", prefix, (int)len, p);
		p += len;
		if (*p == '\n')
			p++;
	}
}

/* The usage figures of a turn.completed usage or token_count object: true when any. */
static bool read_usage(const json_t *u, int64_t v[4])
{
	static const char *const keys[] = {"input_tokens", "cached_input_tokens", "output_tokens",
					   "reasoning_output_tokens"};
	bool any = false;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		v[i] = count_of(u, keys[i]);
		any |= v[i] >= 0;
	}
	return any;
}

static int64_t *usage_field(struct agent_codex_stream *st, size_t i)
{
	int64_t *f[] = {&st->input_tokens, &st->cached_input_tokens, &st->output_tokens,
			&st->reasoning_output_tokens};

	return f[i];
}

/* A running total replaces what was known; per-request figures add up. */
static void set_usage(struct agent_codex_stream *st, const int64_t v[4], bool total)
{
	size_t i;

	for (i = 0; i < 4; i++) {
		int64_t *f = usage_field(st, i);

		if (total)
			*f = v[i];
		else if (v[i] >= 0)
			*f = gdn_add_sat_i64(*f < 0 ? 0 : *f, v[i]);
	}
}

static void show_usage(const struct agent_codex_stream *st, struct strvec *show)
{
	struct sbuf sb = SBUF_INIT;

	sbuf_addf(&sb, "usage: input %lld",
		  (long long)(st->input_tokens > 0 ? st->input_tokens : 0));
	if (st->cached_input_tokens >= 0)
		sbuf_addf(&sb, " (%lld cached)", (long long)st->cached_input_tokens);
	sbuf_addf(&sb, ", output %lld", (long long)(st->output_tokens > 0 ? st->output_tokens : 0));
	if (st->reasoning_output_tokens >= 0)
		sbuf_addf(&sb, " (%lld reasoning)", (long long)st->reasoning_output_tokens);
	sbuf_adds(&sb, " tokens");
	strvec_push(show, sb.buf);
	sbuf_release(&sb);
}

static void set_error(struct agent_codex_stream *st, const char *msg)
{
	size_t i;

	snprintf(st->error, sizeof(st->error), "%s", *msg ? msg : "(no message)");
	for (i = 0; st->error[i]; i++)
		if (st->error[i] == '\n' || st->error[i] == '\r')
			st->error[i] = ' ';
}

static void show_exec_start(struct agent_codex_stream *st, const json_t *item, struct strvec *show)
{
	strvec_push(show, "exec");
	push_lines(show, "", jstr(item, "command"), 5);
	snprintf(st->last_exec, sizeof(st->last_exec), "%s", jstr(item, "id"));
}

static void show_exec_end(struct agent_codex_stream *st, const json_t *item, struct strvec *show)
{
	const json_t *code = json_object_get(item, "exit_code");
	const char *status = jstr(item, "status");

	if (!*st->last_exec || strcmp(st->last_exec, jstr(item, "id")))
		show_exec_start(st, item, show);
	st->last_exec[0] = '\0';
	if (json_is_integer(code))
		strvec_pushf(show, " %s (exit %" JSON_INTEGER_FORMAT "):",
			     json_integer_value(code) ? "failed" : "succeeded",
			     json_integer_value(code));
	else
		strvec_pushf(show, " %s:", *status ? status : "ended");
	push_lines(show, "", jstr(item, "aggregated_output"), SHOW_OUTPUT_MAX);
}

static void show_todo(const json_t *item, struct strvec *show)
{
	const json_t *items = json_object_get(item, "items");
	size_t i;

	strvec_push(show, "Plan update");
	for (i = 0; i < json_array_size(items) && i < 50; i++) {
		const json_t *t = json_array_get(items, i);

		strvec_pushf(show, "  [%c] %.*s",
			     json_is_true(json_object_get(t, "completed")) ? 'x' : ' ', 200,
			     jstr(t, "text"));
	}
}

static void feed_item(struct agent_codex_stream *st, const char *what, const json_t *item,
		      struct strvec *show)
{
	const char *type = jstr(item, "type");
	bool started = !strcmp(what, "started"), completed = !strcmp(what, "completed");

	if (!strcmp(type, "command_execution")) {
		if (started)
			show_exec_start(st, item, show);
		else if (completed)
			show_exec_end(st, item, show);
	} else if (!strcmp(type, "todo_list")) {
		if (!completed)
			show_todo(item, show);
	} else if (!completed) {
		return; /* the rest is shown once, when done */
	} else if (!strcmp(type, "agent_message")) {
		strvec_push(show, "codex");
		push_lines(show, "", jstr(item, "text"), SHOW_MESSAGE_MAX);
	} else if (!strcmp(type, "reasoning")) {
		strvec_push(show, "thinking");
		push_lines(show, "", jstr(item, "text"), SHOW_MESSAGE_MAX);
	} else if (!strcmp(type, "file_change")) {
		const json_t *changes = json_object_get(item, "changes");
		size_t i;

		for (i = 0; i < json_array_size(changes) && i < 200; i++) {
			const json_t *c = json_array_get(changes, i);
			const char *kind = jstr(c, "kind");

			strvec_pushf(show, "file update: %s %.*s",
				     !strcmp(kind, "add")      ? "A"
				     : !strcmp(kind, "delete") ? "D"
							       : "M",
				     SHOW_LINE_MAX, jstr(c, "path"));
		}
	} else if (!strcmp(type, "mcp_tool_call")) {
		strvec_pushf(show, "tool %.200s.%.200s: %s", jstr(item, "server"),
			     jstr(item, "tool"),
			     *jstr(item, "status") ? jstr(item, "status") : "done");
	} else if (!strcmp(type, "web_search")) {
		strvec_pushf(show, "web search: %.*s", SHOW_LINE_MAX, jstr(item, "query"));
	} else if (!strcmp(type, "error")) {
		/* a non-fatal error surfaced as an item (codex's plain output: "warning: ...") */
		push_lines(show, "warning: ", jstr(item, "message"), 20);
	}
}

/* The {"id", "msg": {"type", ...}} events of older codex exec --json versions. */
static void feed_legacy(struct agent_codex_stream *st, const json_t *msg, struct strvec *show)
{
	const char *type = jstr(msg, "type");
	const json_t *info = json_object_get(msg, "info");
	int64_t v[4];

	if (!strcmp(type, "token_count")) {
		if (read_usage(json_object_get(info, "total_token_usage"), v))
			set_usage(st, v, true);
		else if (read_usage(json_object_get(info, "last_token_usage"), v) ||
			 read_usage(msg, v))
			set_usage(st, v, false);
		else
			return;
		show_usage(st, show);
	} else if (!strcmp(type, "agent_message")) {
		strvec_push(show, "codex");
		push_lines(show, "", jstr(msg, "message"), SHOW_MESSAGE_MAX);
	} else if (!strcmp(type, "error") || !strcmp(type, "stream_error")) {
		set_error(st, jstr(msg, "message"));
		push_lines(show, "error: ", jstr(msg, "message"), 20);
	} else if (!strcmp(type, "task_complete")) {
		st->turns_completed++;
	}
}

bool agent_codex_feed(struct agent_codex_stream *st, const char *line, size_t len,
		      struct strvec *show)
{
	json_t *ev = NULL;
	json_error_t jerr;
	const char *type;
	int64_t v[4];
	size_t i = 0;

	while (i < len && isspace((unsigned char)line[i]))
		i++;
	if (i < len && line[i] == '{')
		ev = json_loadb(line + i, len - i, JSON_DECODE_ANY, &jerr);
	if (!json_is_object(ev)) {
		json_decref(ev);
		return false;
	}
	st->events++;
	type = jstr(ev, "type");
	if (!strcmp(type, "thread.started")) {
		snprintf(st->thread_id, sizeof(st->thread_id), "%s", jstr(ev, "thread_id"));
		strvec_pushf(show, "codex session %s", st->thread_id);
	} else if (!strcmp(type, "turn.completed")) {
		st->turns_completed++;
		if (read_usage(json_object_get(ev, "usage"), v)) {
			set_usage(st, v, true);
			show_usage(st, show);
		}
	} else if (!strcmp(type, "turn.failed")) {
		st->turns_failed++;
		set_error(st, jstr(json_object_get(ev, "error"), "message"));
		strvec_pushf(show, "turn failed: %s", st->error);
	} else if (!strcmp(type, "error")) {
		set_error(st, jstr(ev, "message"));
		push_lines(show, "error: ", jstr(ev, "message"), 20);
	} else if (!strncmp(type, "item.", 5)) {
		feed_item(st, type + 5, json_object_get(ev, "item"), show);
	} else if (json_is_object(json_object_get(ev, "msg"))) {
		feed_legacy(st, json_object_get(ev, "msg"), show);
	}
	json_decref(ev);
	return true;
}

/* ---- the plain output (a codex without --json events, or what it prints besides) ---- */

/*
 * Codex's plain output ends a turn with "tokens used" and, on the next
 * line, the session's total ("1,234"; older versions: "tokens used: N"
 * on one line). The total is cumulative: the last one wins.
 */
static void codex_usage(struct agent_run *r, const char *line, size_t len)
{
	static const char tag[] = "tokens used";
	bool next = r->tokens_next;
	int64_t v = 0;
	size_t i = 0, digits = 0;

	r->tokens_next = len == sizeof(tag) - 1 && !memcmp(line, tag, len);
	if (!next) {
		if (len <= sizeof(tag) || memcmp(line, "tokens used: ", sizeof(tag)))
			return;
		i = sizeof(tag);
	}
	for (; i < len; i++) {
		if (line[i] == ' ' && !digits)
			continue;
		if (line[i] == ',' && digits)
			continue;
		if (line[i] < '0' || line[i] > '9' || ++digits > 18)
			return;
		v = v * 10 + (line[i] - '0');
	}
	if (digits)
		r->usage.tokens = v;
}

/* One run's state: the events so far, and the lines to show for the current one. */
struct codex_run {
	struct agent_codex_stream stream;
	struct strvec show;
};

static void *codex_run_create(const struct gdn_agent *a)
{
	struct codex_run *c = xcalloc(1, sizeof(*c));
	struct agent_codex_stream init = AGENT_CODEX_STREAM_INIT;

	(void)a;
	c->stream = init;
	strvec_init(&c->show);
	return c;
}

static void codex_run_release(void *state)
{
	struct codex_run *c = state;

	if (!c)
		return;
	strvec_clear(&c->show);
	free(c);
}

static int codex_line(struct agent_run *r, const char *line, size_t len)
{
	struct codex_run *c = r->state;
	size_t i;
	int stop = 0;

	strvec_clear(&c->show);
	if (agent_codex_feed(&c->stream, line, len, &c->show)) {
		for (i = 0; i < c->show.nr && !stop; i++)
			stop = agent_emit(r, c->show.v[i], strlen(c->show.v[i]));
		return stop;
	}
	codex_usage(r, line, len);
	if (!agent_filter_show(&r->filter, line, len))
		return 0;
	return agent_emit(r, line, len);
}

static void codex_finish(struct agent_run *r, struct gdn_agent_result *res)
{
	const struct agent_codex_stream *st = &((struct codex_run *)r->state)->stream;

	/* the events' split replaces a plain "tokens used" total */
	if (st->input_tokens >= 0 || st->output_tokens >= 0) {
		r->usage.tokens = -1;
		r->usage.input_tokens = st->input_tokens;
		r->usage.output_tokens = st->output_tokens;
	}
	res->last_message = agent_read_message(r->req->last_message_file);
	res->ok = res->status == GDN_PROC_EXITED && res->exit_code == 0;
	agent_reason_from_status(r->a, res);
	if (!res->ok && st->error[0]) {
		size_t n = strlen(res->reason);

		snprintf(res->reason + n, sizeof(res->reason) - n, "%s%s: %s", n ? "; " : "",
			 st->turns_failed ? "turn failed" : "error", st->error);
	}
}

static const char *const login_vars[] = {"CODEX_API_KEY", "OPENAI_API_KEY", NULL};

const struct agent_driver agent_codex_driver = {
    .info =
	{
	    .name = "codex",
	    .help = "the Codex CLI (codex exec)",
	    .default_model = "gpt-5.4",
	    .default_effort = "xhigh",
	    .install_hint = "install the Codex CLI (npm install -g @openai/codex) or pass "
			    "--codex-bin PATH",
	    .version_check = true,
	    .login_vars = login_vars,
	    .login_dir_var = "CODEX_HOME",
	    .login_file = "auth.json",
	    .login_home_file = ".codex/auth.json",
	    .login_file_kind = "auth file",
	    .login_hint = "run 'codex login', or export OPENAI_API_KEY",
	},
    .open = codex_open,
    .argv = codex_argv,
    .run_create = codex_run_create,
    .run_release = codex_run_release,
    .line = codex_line,
    .finish = codex_finish,
};
