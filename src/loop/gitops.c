/*
 * git through the child-process API, with the original's retries on
 * transient lock errors (another git process holding index.lock).
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

/* Unable to create '<at least one char, no newline>.lock' */
static bool unable_to_create_lock(const char *s)
{
	static const char head[] = "Unable to create '";

	for (const char *p = strstr(s, head); p; p = strstr(p + 1, head)) {
		const char *q = p + sizeof(head) - 1;
		const char *end = strchrnul(q, '\n');

		/* `.+?` needs one character before ".lock'" and never crosses a newline. */
		for (const char *r = q + 1; r + 6 <= end; r++)
			if (!strncmp(r, ".lock'", 6))
				return true;
	}
	return false;
}

bool gdn_git_transient_error(const char *out)
{
	return strstr(out, "index.lock") ||
	       strstr(out, "Another git process seems to be running") || unable_to_create_lock(out);
}

static void say(const struct gdn_git *g, enum gdn_loop_level level, const char *msg)
{
	if (g->say)
		g->say(level, msg, g->payload);
}

int gdn_git_run(const struct gdn_git *g, const char *const *args, int *rc, struct sbuf *out,
		struct gdn_err *err)
{
	struct strvec argv = STRVEC_INIT;
	struct sbuf line = SBUF_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = 0, attempts = g->retries + 1;

	strvec_push(&argv, "git");
	strvec_pushv(&argv, args);
	sbuf_adds(&line, "$ ");
	gdn_argv_format(&line, argv.v);
	say(g, GDN_LOOP_INFO, line.buf);
	for (int attempt = 1; attempt <= attempts; attempt++) {
		gdn_proc_release(&p);
		p = (struct gdn_proc)GDN_PROC_INIT;
		p.argv = argv.v;
		p.dir = g->workdir;
		p.capture = true;
		p.out.limit = 4 * 1024 * 1024;
		ret = gdn_proc_run(&p, err);
		if (ret)
			goto out;
		*rc = gdn_proc_exit_code(&p);
		if (!*rc || attempt == attempts || !gdn_git_transient_error(p.out.buf) ||
		    gdn_proc_interrupted())
			break;
		sbuf_reset(&line);
		sbuf_addf(&line, "transient git error detected; retrying %d/%d after %.1fs",
			  attempt, attempts, g->retry_sleep_ms / 1000.0);
		say(g, GDN_LOOP_NOTE, line.buf);
		gdn_sleep_cleanup(g->retry_sleep_ms);
	}
	if (out) {
		sbuf_reset(out);
		sbuf_add(out, p.out.buf, p.out.len);
	}
out:
	gdn_proc_release(&p);
	sbuf_release(&line);
	strvec_clear(&argv);
	return ret;
}
