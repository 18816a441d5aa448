/*
 * The "command" driver: any program, from --agent-cmd 'prog arg
 * {prompt_file}'. The string is split into words with shell-like quoting
 * but no shell; {prompt_file}, {workdir} and {last_message_file} are
 * substituted inside words. The prompt is also on stdin; exit 0 is ok.
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "agent_impl.h"

int agent_split_words(const char *s, struct strvec *words, struct gdn_err *err)
{
	struct sbuf w = SBUF_INIT;
	const char *p = s;
	bool in_word = false;
	int ret = 0;

	while (*p) {
		char c = *p;

		if (c == ' ' || c == '\t' || c == '\n') {
			if (in_word)
				strvec_push(words, w.buf);
			sbuf_reset(&w);
			in_word = false;
			p++;
		} else if (c == '\'') {
			const char *end = strchr(p + 1, '\'');

			if (!end) {
				ret =
				    gdn_err_set(err, GDN_EUSAGE,
						"unbalanced single quote in agent command '%s'", s);
				goto out;
			}
			sbuf_add(&w, p + 1, (size_t)(end - p - 1));
			in_word = true;
			p = end + 1;
		} else if (c == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1] == '\n') {
					p++;
				} else if (*p == '\\' && p[1] && strchr("\"\\$`", p[1])) {
					sbuf_addch(&w, *++p);
				} else {
					sbuf_addch(&w, *p);
				}
			}
			if (!*p) {
				ret =
				    gdn_err_set(err, GDN_EUSAGE,
						"unbalanced double quote in agent command '%s'", s);
				goto out;
			}
			in_word = true;
			p++;
		} else if (c == '\\') {
			if (!p[1]) {
				ret = gdn_err_set(err, GDN_EUSAGE,
						  "trailing backslash in agent command '%s'", s);
				goto out;
			}
			if (p[1] != '\n') {
				sbuf_addch(&w, p[1]);
				in_word = true;
			}
			p += 2;
		} else {
			sbuf_addch(&w, c);
			in_word = true;
			p++;
		}
	}
	if (in_word)
		strvec_push(words, w.buf);
out:
	sbuf_release(&w);
	return ret;
}

void agent_subst_word(struct sbuf *out, const char *word, const struct gdn_agent_request *req)
{
	static const char *const names[] = {"{prompt_file}", "{workdir}", "{last_message_file}"};
	const char *p = word;

	while (*p) {
		const char *values[] = {req->prompt_file, req->workdir, req->last_message_file};
		size_t i, n = 0;

		for (i = 0; i < ARRAY_SIZE(names); i++) {
			n = strlen(names[i]);
			if (!strncmp(p, names[i], n))
				break;
		}
		if (i < ARRAY_SIZE(names)) {
			sbuf_adds(out, values[i] ? values[i] : "");
			p += n;
		} else {
			sbuf_addch(out, *p++);
		}
	}
}

static int command_open(struct gdn_agent *a, struct strvec *warnings, struct gdn_err *err)
{
	char *path = NULL;
	int ret = 0;

	(void)warnings;
	if (!a->command)
		return gdn_err_set(err, GDN_EUSAGE,
				   "the command agent needs a command line (--agent-cmd)");
	ret = agent_split_words(a->command, &a->words, err);
	if (ret < 0)
		goto out;
	if (!a->words.nr) {
		ret = gdn_err_set(err, GDN_EUSAGE, "agent command '%s' has no program", a->command);
		goto out;
	}
	path = agent_find_program(a->words.v[0]);
	if (!path) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "agent program '%s' not found%s",
				  a->words.v[0], strchr(a->words.v[0], '/') ? "" : " in PATH");
		goto out;
	}
	free(a->bin);
	a->bin = path;
	path = NULL;
out:
	free(path);
	return ret;
}

static void command_argv(const struct gdn_agent *a, const struct gdn_agent_request *req,
			 struct strvec *argv)
{
	struct sbuf w = SBUF_INIT;
	size_t i;

	for (i = 0; i < a->words.nr; i++) {
		sbuf_reset(&w);
		agent_subst_word(&w, a->words.v[i], req);
		strvec_push(argv, w.buf);
	}
	sbuf_release(&w);
}

static int command_line(struct agent_run *r, const char *line, size_t len)
{
	struct gdn_agent_usage u;

	if (gdn_agent_parse_usage_line(line, len, &u))
		gdn_agent_usage_add(&r->usage, &u); /* one line per model call, or one in all */
	if (!agent_filter_show(&r->filter, line, len))
		return 0;
	return agent_emit(r, line, len);
}

static void command_finish(struct agent_run *r, struct gdn_agent_result *res)
{
	res->last_message = agent_read_message(r->req->last_message_file);
	res->ok = res->status == GDN_PROC_EXITED && res->exit_code == 0;
	agent_reason_from_status(r->a, res);
}

const struct agent_driver agent_command_driver = {
    .info =
	{
	    .name = "command",
	    .help = "any program (--agent-cmd 'prog arg {prompt_file}')",
	    .needs_command = true,
	    .command_hint = "pass --agent-cmd 'prog arg {prompt_file}' (as to gdnctl loop)",
	    .install_hint = "check --agent-cmd: its program must be in PATH",
	    .login_skip = "the command driver's login is its own business",
	},
    .open = command_open,
    .argv = command_argv,
    .line = command_line,
    .finish = command_finish,
};
