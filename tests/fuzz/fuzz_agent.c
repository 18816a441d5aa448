/*
 * Fuzz the agent drivers' parsers with one input: the claude stream-json
 * and codex --json event parsers and the output filter (line by line), the codex
 * reasoning-effort probe parser, the --search help detection, and the
 * command word splitter with placeholder substitution, the "gdnctl-usage:"
 * line parser.
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "../../src/loop/agent_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The usage-line parser: never reads past the line; what it accepts is sane. */
static void check_usage_line(const char *line, size_t len)
{
	struct gdn_agent_usage u = GDN_AGENT_USAGE_NONE, sum = GDN_AGENT_USAGE_NONE;

	if (!gdn_agent_parse_usage_line(line, len, &u))
		return;
	if (!gdn_agent_usage_known(&u) || u.input_tokens < -1 || u.output_tokens < -1 ||
	    !(u.cost_usd >= 0 || u.cost_usd == -1.0) || !memmem(line, len, "gdnctl-usage:", 13))
		abort();
	gdn_agent_usage_add(&sum, &u);
	gdn_agent_usage_add(&sum, &u);
	if (sum.input_tokens < u.input_tokens || sum.output_tokens < u.output_tokens)
		abort();
}

static void feed_lines(const char *text, size_t size, bool full)
{
	struct agent_claude_stream st = AGENT_CLAUDE_STREAM_INIT;
	struct agent_codex_stream cx = AGENT_CODEX_STREAM_INIT;
	struct agent_filter f = AGENT_FILTER_INIT;
	struct strvec show = STRVEC_INIT;
	size_t off = 0;

	f.show_all = full;
	while (off < size) {
		const char *nl = memchr(text + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (text + off)) : size - off;
		char *line = xmalloc(len + 1); /* may hold NUL bytes: keep them */

		memcpy(line, text + off, len);
		line[len] = '\0';

		agent_filter_show(&f, line, len);
		check_usage_line(line, len);
		agent_claude_feed(&st, line, len, full, &show);
		if (st.result_success && (!st.have_result || st.is_error))
			abort();
		if (agent_codex_feed(&cx, line, len, &show) && !memchr(line, '{', len))
			abort();
		if (cx.input_tokens < -1 || cx.output_tokens < -1 || cx.cached_input_tokens < -1 ||
		    cx.reasoning_output_tokens < -1)
			abort();
		free(line);
		off += len + 1;
	}
	strvec_clear(&show);
	agent_claude_stream_release(&st);
	agent_filter_release(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	char *copy = xstrndup(text, size);
	struct strvec values = STRVEC_INIT, words = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf w = SBUF_INIT;
	struct gdn_agent_request req = {
	    .workdir = "/w", .prompt_file = "/p", .last_message_file = NULL};
	size_t i;

	if (agent_codex_parse_efforts(text, size, &values) && !values.nr)
		abort();
	for (i = 0; i < values.nr; i++)
		if (!*values.v[i] || strchr(values.v[i], '`'))
			abort();
	agent_codex_help_has_search(text, size);
	if (agent_split_words(copy, &words, &err) == 0) {
		for (i = 0; i < words.nr; i++) {
			sbuf_reset(&w);
			agent_subst_word(&w, words.v[i], &req);
		}
	} else if (!err.msg[0]) {
		abort();
	}
	feed_lines(text, size, false);
	feed_lines(text, size, true);
	sbuf_release(&w);
	strvec_clear(&values);
	strvec_clear(&words);
	free(copy);
	return 0;
}
