/*
 * What the agent drivers share (src/loop/agent_*.c) and agent.c uses:
 * finding a program, reading the message an agent wrote, the reason a
 * run failed, passing output on. Calls into no driver.
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "agent_impl.h"

char *agent_find_program(const char *name)
{
	const char *path = getenv("PATH"), *p;
	struct sbuf cand = SBUF_INIT;
	struct stat st;
	char *found = NULL;

	if (!name || !*name)
		return NULL;
	if (strchr(name, '/')) {
		if (!stat(name, &st) && S_ISREG(st.st_mode) && !access(name, X_OK))
			found = xstrdup(name);
		goto out;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p++) {
		size_t len = strcspn(p, ":");

		sbuf_reset(&cand);
		if (len)
			sbuf_addf(&cand, "%.*s/%s", (int)len, p, name);
		else
			sbuf_addf(&cand, "./%s", name);
		if (!stat(cand.buf, &st) && S_ISREG(st.st_mode) && !access(cand.buf, X_OK)) {
			found = sbuf_detach(&cand, NULL);
			goto out;
		}
		p += len;
		if (!*p)
			break;
	}
out:
	sbuf_release(&cand);
	return found;
}

char *agent_read_message(const char *path)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *msg = NULL;

	if (!path || access(path, F_OK))
		goto out;
	if (sbuf_read_file(&sb, path, AGENT_MESSAGE_MAX, &err) < 0)
		goto out;
	sbuf_rtrim(&sb);
	if (sb.len)
		msg = sbuf_detach(&sb, NULL);
out:
	sbuf_release(&sb);
	return msg;
}

char *agent_new_mark(void)
{
	static unsigned long counter;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return xstrfmt("GDNCTL_AGENT_RUN=%ld.%lu.%lld.%09ld", (long)getpid(),
		       __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED), (long long)ts.tv_sec,
		       ts.tv_nsec);
}

static void set_reason(struct gdn_agent_result *res, const char *fmt, ...) GDN_PRINTF(2, 3);
static void set_reason(struct gdn_agent_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
	va_end(ap);
}

void agent_reason_from_status(const struct gdn_agent *a, struct gdn_agent_result *res)
{
	switch (res->status) {
	case GDN_PROC_TIMEOUT:
		set_reason(res, "timed out after %ld s (runtime limit); process group killed",
			   a->timeout_ms / 1000);
		break;
	case GDN_PROC_IDLE:
		set_reason(res, "no output for %ld s (idle limit); process group killed",
			   a->idle_timeout_ms / 1000);
		break;
	case GDN_PROC_STOPPED:
		set_reason(res, "stopped (exit %d)", res->exit_code);
		break;
	case GDN_PROC_SIGNALED:
		set_reason(res, "killed by signal %d", res->exit_code - 128);
		break;
	case GDN_PROC_EXITED:
		if (res->exit_code)
			set_reason(res, "exited with code %d", res->exit_code);
		break;
	case GDN_PROC_NOT_RUN:
		set_reason(res, "did not run");
		break;
	}
}

int agent_emit(struct agent_run *r, const char *line, size_t len)
{
	if (!r->req->on_line || r->consumer_stopped)
		return r->consumer_stopped;
	if (r->req->on_line(line, len, r->req->payload))
		r->consumer_stopped = true;
	return r->consumer_stopped;
}

void gdn_agent_usage_add(struct gdn_agent_usage *a, const struct gdn_agent_usage *b)
{
	if (b->input_tokens >= 0)
		a->input_tokens =
		    gdn_add_sat_i64(a->input_tokens < 0 ? 0 : a->input_tokens, b->input_tokens);
	if (b->output_tokens >= 0)
		a->output_tokens =
		    gdn_add_sat_i64(a->output_tokens < 0 ? 0 : a->output_tokens, b->output_tokens);
	if (b->cost_usd >= 0)
		a->cost_usd = (a->cost_usd < 0 ? 0 : a->cost_usd) + b->cost_usd;
	if (b->tokens >= 0)
		a->tokens = gdn_add_sat_i64(a->tokens < 0 ? 0 : a->tokens, b->tokens);
}

bool gdn_agent_usage_known(const struct gdn_agent_usage *u)
{
	return u->input_tokens >= 0 || u->output_tokens >= 0 || u->cost_usd >= 0 || u->tokens >= 0;
}

/* A decimal count in [s, e): true and *out when it is all digits and fits. */
static bool parse_count(const char *s, const char *e, int64_t *out)
{
	int64_t v = 0;

	if (s == e || e - s > 18)
		return false;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return true;
}

/* A non-negative decimal ("12", "0.5", "3.25") in [s, e), no exponent. */
static bool parse_cost(const char *s, const char *e, double *out)
{
	double v = 0, scale = 1;
	bool dot = false, digits = false;

	if (e - s > 32)
		return false;
	for (; s < e; s++) {
		if (*s == '.' && !dot) {
			dot = true;
			continue;
		}
		if (*s < '0' || *s > '9')
			return false;
		digits = true;
		if (dot) {
			scale /= 10;
			v += (*s - '0') * scale;
		} else
			v = v * 10 + (*s - '0');
	}
	if (!digits)
		return false;
	*out = v;
	return true;
}

bool gdn_agent_parse_usage_line(const char *line, size_t len, struct gdn_agent_usage *u)
{
	static const char tag[] = "gdnctl-usage:";
	const char *p = line, *end = line + len;
	struct gdn_agent_usage got = GDN_AGENT_USAGE_NONE;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(end - p) < sizeof(tag) - 1 || memcmp(p, tag, sizeof(tag) - 1))
		return false;
	p += sizeof(tag) - 1;
	for (;;) {
		const char *key, *eq, *val;

		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p == end)
			break;
		key = p;
		while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
			p++;
		eq = memchr(key, '=', (size_t)(p - key));
		if (!eq)
			return false;
		val = eq + 1;
		if (eq - key == 5 && !memcmp(key, "input", 5)) {
			if (!parse_count(val, p, &got.input_tokens))
				return false;
		} else if (eq - key == 6 && !memcmp(key, "output", 6)) {
			if (!parse_count(val, p, &got.output_tokens))
				return false;
		} else if (eq - key == 8 && !memcmp(key, "cost_usd", 8)) {
			if (!parse_cost(val, p, &got.cost_usd))
				return false;
		} /* other keys: ignored (room to grow) */
	}
	if (!gdn_agent_usage_known(&got))
		return false;
	*u = got;
	return true;
}
