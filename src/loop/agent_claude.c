/*
 * The Claude Code driver: `claude -p --output-format stream-json
 * --verbose --dangerously-skip-permissions [--model M] [--effort E]`,
 * prompt on stdin. Output is one JSON object per line: a system/init
 * event, assistant and user messages, rate_limit_event lines and a final
 * result event. The result decides success (subtype "success" and
 * is_error false); exit 0 without a result is a failed iteration. The
 * user sees a rendering (text, tool calls, the result), the transcript
 * the raw lines; the result text becomes the last message.
 */
#include "gdnctl/compat.h"
#include <jansson.h>
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "agent_impl.h"

#define SHOW_INPUT_MAX 200
#define SHOW_LINE_MAX  4096

void agent_claude_stream_release(struct agent_claude_stream *st)
{
	FREE_AND_NULL(st->result);
}

static const char *jstr(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

/* Push each line of text (at most a few thousand) onto show. */
static void push_lines(struct strvec *show, const char *prefix, const char *text)
{
	const char *p = text;
	int n = 0;

	while (*p && n++ < 5000) {
		size_t len = strcspn(p, "\n");

		strvec_pushf(show, "%s%.*s", prefix, (int)len, p);
		p += len;
		if (*p == '\n')
			p++;
	}
}

/* A one-line summary of a tool call's input. */
static void tool_summary(struct sbuf *sb, const json_t *input, bool full)
{
	static const char *const keys[] = {"command", "file_path", "path",   "pattern",
					   "url",     "query",	   "prompt", "description"};
	const char *v = NULL;
	size_t i;
	char *dump = NULL;

	for (i = 0; !full && !v && i < ARRAY_SIZE(keys); i++)
		v = json_string_value(json_object_get(input, keys[i]));
	if (v) {
		sbuf_adds(sb, v);
	} else if (input) {
		dump = json_dumps(input, JSON_COMPACT | JSON_ENSURE_ASCII);
		sbuf_adds(sb, dump ? dump : "");
		free(dump);
	}
	for (i = 0; i < sb->len; i++)
		if (sb->buf[i] == '\n' || sb->buf[i] == '\r')
			sb->buf[i] = ' ';
	if (!full && sb->len > SHOW_INPUT_MAX) {
		sbuf_setlen(sb, SHOW_INPUT_MAX);
		sbuf_adds(sb, "...");
	}
}

static bool is_edit_tool(const char *name)
{
	return !strcmp(name, "Edit") || !strcmp(name, "MultiEdit") || !strcmp(name, "Write") ||
	       !strcmp(name, "NotebookEdit");
}

static void render_assistant(const json_t *ev, bool show_file_updates, struct strvec *show)
{
	const json_t *content = json_object_get(json_object_get(ev, "message"), "content");
	struct sbuf sb = SBUF_INIT;
	size_t i;

	if (json_is_string(content))
		push_lines(show, "", json_string_value(content));
	for (i = 0; i < json_array_size(content); i++) {
		const json_t *item = json_array_get(content, i);
		const char *type = jstr(item, "type");

		if (!strcmp(type, "text")) {
			push_lines(show, "", jstr(item, "text"));
		} else if (!strcmp(type, "tool_use")) {
			const char *name = jstr(item, "name");

			sbuf_reset(&sb);
			tool_summary(&sb, json_object_get(item, "input"),
				     show_file_updates && is_edit_tool(name));
			strvec_pushf(show, "tool %s: %s", *name ? name : "?", sb.buf);
		}
	}
	sbuf_release(&sb);
}

static void render_result(const struct agent_claude_stream *st, struct strvec *show)
{
	struct sbuf sb = SBUF_INIT;

	sbuf_addf(&sb, "result: %s%s", st->subtype[0] ? st->subtype : "(no subtype)",
		  st->is_error ? " (error)" : "");
	if (st->num_turns >= 0)
		sbuf_addf(&sb, ", %ld turns", st->num_turns);
	if (st->duration_ms >= 0)
		sbuf_addf(&sb, ", %.3f s", (double)st->duration_ms / 1000.0);
	if (st->cost_usd >= 0)
		sbuf_addf(&sb, ", $%.4f", st->cost_usd);
	strvec_push(show, sb.buf);
	sbuf_release(&sb);
}

/*
 * A duration in ms from the agent's stream (untrusted): -1 when absent,
 * not a number, not finite or negative; saturated at INT64_MAX (a double
 * outside int64's range must never reach the cast).
 */
static int64_t duration_ms(const json_t *v)
{
	double d;

	if (json_is_integer(v))
		return json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
	if (!json_is_real(v))
		return -1;
	d = json_real_value(v);
	if (!isfinite(d) || d < 0)
		return -1;
	if (d >= 9223372036854775807.0) /* 2^63: the first double beyond INT64_MAX */
		return INT64_MAX;
	return (int64_t)d;
}

/* A token count: a non-negative integer, else -1. */
static int64_t count_of(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v)
								: -1;
}

static void feed_result(struct agent_claude_stream *st, const json_t *ev, struct strvec *show)
{
	const json_t *v;

	st->have_result = true;
	copy_str(st->subtype, sizeof(st->subtype), jstr(ev, "subtype"));
	st->is_error = json_is_true(json_object_get(ev, "is_error"));
	st->result_success = !strcmp(st->subtype, "success") && !st->is_error;
	FREE_AND_NULL(st->result);
	if (json_is_string(json_object_get(ev, "result")))
		st->result = xstrdup(jstr(ev, "result"));
	v = json_object_get(ev, "num_turns");
	st->num_turns = json_is_integer(v) ? (long)json_integer_value(v) : -1;
	st->duration_ms = duration_ms(json_object_get(ev, "duration_ms"));
	v = json_object_get(ev, "total_cost_usd");
	st->cost_usd =
	    json_is_number(v) && json_number_value(v) >= 0 && isfinite(json_number_value(v))
		? json_number_value(v)
		: -1;
	/* input counts every prompt token: uncached, cache writes and cache reads */
	v = json_object_get(ev, "usage");
	st->input_tokens = -1;
	st->output_tokens = count_of(json_object_get(v, "output_tokens"));
	{
		static const char *const in[] = {"input_tokens", "cache_creation_input_tokens",
						 "cache_read_input_tokens"};

		for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
			int64_t n = count_of(json_object_get(v, in[i]));

			if (n >= 0)
				st->input_tokens =
				    gdn_add_sat_i64(st->input_tokens < 0 ? 0 : st->input_tokens, n);
		}
	}
	render_result(st, show);
}

static void feed_rate_limit(struct agent_claude_stream *st, const json_t *ev, struct strvec *show)
{
	const json_t *info = json_object_get(ev, "rate_limit_info");
	const char *status = jstr(info, "status");
	const json_t *resets = json_object_get(info, "resetsAt");
	struct sbuf sb = SBUF_INIT;

	if (!strcmp(status, "allowed") || !*status)
		goto out;
	sbuf_adds(&sb, *jstr(info, "rateLimitType") ? jstr(info, "rateLimitType") : "limit");
	if (json_is_integer(resets))
		sbuf_addf(&sb, ", resets at %lld", (long long)json_integer_value(resets));
	if (!strcmp(status, "rejected")) {
		st->rate_limited = true;
		copy_str(st->rate_info, sizeof(st->rate_info), sb.buf);
	}
	strvec_pushf(show, "rate limit: %s (%s)", status, sb.buf);
out:
	sbuf_release(&sb);
}

void agent_claude_feed(struct agent_claude_stream *st, const char *line, size_t len,
		       bool show_file_updates, struct strvec *show)
{
	json_t *ev = NULL;
	json_error_t jerr;
	const char *type;
	size_t i = 0;

	while (i < len && isspace((unsigned char)line[i]))
		i++;
	if (i == len)
		goto out;
	if (line[i] == '{')
		ev = json_loadb(line + i, len - i, JSON_DECODE_ANY, &jerr);
	if (!json_is_object(ev)) {
		/* what the CLI printed besides events (errors); pieces of huge lines cut short */
		st->malformed++;
		if (len > SHOW_LINE_MAX)
			strvec_pushf(show, "%.*s...", SHOW_LINE_MAX, line);
		else
			strvec_pushf(show, "%.*s", (int)len, line);
		goto out;
	}
	st->events++;
	type = jstr(ev, "type");
	if (!strcmp(type, "system") && !strcmp(jstr(ev, "subtype"), "init")) {
		copy_str(st->session_id, sizeof(st->session_id), jstr(ev, "session_id"));
		strvec_pushf(show, "claude session %s (model %s)", st->session_id,
			     *jstr(ev, "model") ? jstr(ev, "model") : "default");
	} else if (!strcmp(type, "assistant")) {
		render_assistant(ev, show_file_updates, show);
	} else if (!strcmp(type, "result")) {
		feed_result(st, ev, show);
	} else if (!strcmp(type, "rate_limit_event")) {
		feed_rate_limit(st, ev, show);
	} else if (!strcmp(type, "system") && !strcmp(jstr(ev, "subtype"), "api_retry")) {
		/* the CLI backs off on API errors (up to 10 times by default): say so */
		strvec_pushf(show,
			     "api retry %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT
			     ": %s %" JSON_INTEGER_FORMAT ", next in %.1f s",
			     json_integer_value(json_object_get(ev, "attempt")),
			     json_integer_value(json_object_get(ev, "max_retries")),
			     *jstr(ev, "error") ? jstr(ev, "error") : "error",
			     json_integer_value(json_object_get(ev, "error_status")),
			     (double)json_integer_value(json_object_get(ev, "retry_delay_ms")) /
				 1000.0);
	}
out:
	json_decref(ev);
}

static void claude_argv(const struct gdn_agent *a, const struct gdn_agent_request *req,
			struct strvec *argv)
{
	(void)req;
	strvec_pushl(argv, a->bin, "-p", "--output-format", "stream-json", "--verbose",
		     "--dangerously-skip-permissions", NULL);
	if (a->model)
		strvec_pushl(argv, "--model", a->model, NULL);
	if (a->effort)
		strvec_pushl(argv, "--effort", a->effort, NULL);
}

static int claude_open(struct gdn_agent *a, struct strvec *warnings, struct gdn_err *err)
{
	const char *envbin = getenv("GDNCTL_CLAUDE");
	const char *want = a->bin ? a->bin : envbin && *envbin ? envbin : "claude";
	char *path = agent_find_program(want);

	if (geteuid() == 0 && strcmp(getenv("IS_SANDBOX") ? getenv("IS_SANDBOX") : "", "1"))
		strvec_push(warnings,
			    "running as root: Claude Code refuses --dangerously-skip-permissions "
			    "unless IS_SANDBOX=1 (set it only on an isolated machine)");
	if (!path)
		return gdn_err_set(
		    err, GDN_ENOTFOUND,
		    "claude binary '%s' not found: install Claude Code or pass its path", want);
	free(a->bin);
	a->bin = path;
	return 0;
}

/* One run's state: the stream so far, and the lines to show for the current one. */
struct claude_run {
	struct agent_claude_stream stream;
	struct strvec show;
};

static void *claude_run_create(const struct gdn_agent *a)
{
	struct claude_run *c = xcalloc(1, sizeof(*c));

	(void)a;
	strvec_init(&c->show);
	return c;
}

static void claude_run_release(void *state)
{
	struct claude_run *c = state;

	if (!c)
		return;
	agent_claude_stream_release(&c->stream);
	strvec_clear(&c->show);
	free(c);
}

static int claude_line(struct agent_run *r, const char *line, size_t len)
{
	struct claude_run *c = r->state;
	size_t i;
	int stop = 0;

	strvec_clear(&c->show);
	agent_claude_feed(&c->stream, line, len, r->a->show_file_updates, &c->show);
	for (i = 0; i < c->show.nr && !stop; i++)
		stop = agent_emit(r, c->show.v[i], strlen(c->show.v[i]));
	return stop;
}

static void write_message(const char *path, const char *text)
{
	int fd;
	size_t len = strlen(text), off = 0;

	if (!path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	if (off == len && len && text[len - 1] != '\n')
		off = write(fd, "\n", 1) == 1 ? off : 0; /* best effort */
	close(fd);
}

static void claude_finish(struct agent_run *r, struct gdn_agent_result *res)
{
	const struct agent_claude_stream *st = &((struct claude_run *)r->state)->stream;
	bool exited0 = res->status == GDN_PROC_EXITED && res->exit_code == 0;

	if (st->have_result) {
		struct gdn_agent_usage u = {st->input_tokens, st->output_tokens, st->cost_usd, -1};

		gdn_agent_usage_add(&r->usage, &u);
	}
	if (st->result) {
		res->last_message = xstrdup(st->result);
		write_message(r->req->last_message_file, st->result);
	}
	res->ok = exited0 && st->have_result && st->result_success;
	if (res->ok)
		return;
	/* how the process ended, then what a failed result said (claude exits 1 on API errors) */
	agent_reason_from_status(r->a, res);
	if (st->have_result && !st->result_success) {
		size_t n = strlen(res->reason);

		snprintf(res->reason + n, sizeof(res->reason) - n, "%sresult '%s'%s: %.120s",
			 n ? "; " : "", st->subtype[0] ? st->subtype : "?",
			 st->is_error ? " is_error" : "", st->result ? st->result : "");
	} else if (!res->reason[0])
		snprintf(res->reason, sizeof(res->reason),
			 "exited 0 without a result event (%ld events, %ld non-JSON lines)",
			 st->events, st->malformed);
	if (st->rate_limited) {
		char *why = xstrdup(res->reason);

		snprintf(res->reason, sizeof(res->reason),
			 "rate limited (rate_limit_event rejected: %s); %s", st->rate_info, why);
		free(why);
	}
}

static const char *const login_vars[] = {"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", NULL};

const struct agent_driver agent_claude_driver = {
    .info =
	{
	    .name = "claude",
	    .help = "Claude Code (claude -p, stream-json)",
	    .install_hint = "install Claude Code (npm install -g @anthropic-ai/claude-code) or "
			    "pass --codex-bin PATH",
	    .version_check = true,
	    .login_vars = login_vars,
	    .login_dir_var = "CLAUDE_CONFIG_DIR",
	    .login_file = ".credentials.json",
	    .login_home_file = ".claude/.credentials.json",
	    .login_file_kind = "credentials file",
	    .login_hint = "run 'claude' once and log in (/login), or export ANTHROPIC_API_KEY "
			  "(on macOS the login may live in the keychain: then ignore this)",
	},
    .open = claude_open,
    .argv = claude_argv,
    .run_create = claude_run_create,
    .run_release = claude_run_release,
    .line = claude_line,
    .finish = claude_finish,
};
