/*
 * Parsers of what Marin's Iris job CLI prints (include/gdnctl/iris.h),
 * from the strings in ../shared/reference/iris-cli.md: the job id of a
 * submission, `job describe`'s State line, `job list --json`, the
 * subcommands in `job --help`, and the prefix of `job logs` lines.
 */
#include "gdnctl/compat.h"
#include <jansson.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/iris.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

#define QUOTE_MAX 160

/* The output's first non-empty line, escaped and cut, for a message. */
static void quote_output(const char *out, size_t len, struct sbuf *sb)
{
	struct sbuf text = SBUF_INIT;

	sbuf_add(&text, out, len);
	gdn_backend_first_line(&text, sb);
	sbuf_release(&text);
}

static bool id_char(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '@' || c == '+' ||
	       c == '/';
}

bool gdn_iris_valid_id(const char *text, size_t len)
{
	size_t parts = 0;

	if (len < 4 || len > GDN_IRIS_ID_MAX || text[0] != '/')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!id_char((unsigned char)text[i]))
			return false;
		if (text[i] == '/') {
			/* no empty component, no trailing slash */
			if (i + 1 == len || text[i + 1] == '/')
				return false;
			parts++;
		}
	}
	return parts >= 2;
}

int gdn_iris_parse_submit(const char *out, size_t len, char **id, struct gdn_err *err)
{
	const char *end, *line, *found = NULL, *mark = "Job submitted:";
	size_t found_len = 0, mlen = strlen(mark);
	struct sbuf q = SBUF_INIT;
	int ret = 0;

	*id = NULL;
	end = memchr(out, '\0', len);
	if (end)
		len = (size_t)(end - out); /* a NUL cuts the output: nothing after it counts */
	/* the last line that is exactly a job id (stdout) */
	for (line = out; line < out + len;) {
		const char *nl = memchr(line, '\n', (size_t)(out + len - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(out + len - line);
		size_t a = 0, b = n;

		while (a < b && isspace((unsigned char)line[a]))
			a++;
		while (b > a && isspace((unsigned char)line[b - 1]))
			b--;
		if (gdn_iris_valid_id(line + a, b - a)) {
			found = line + a;
			found_len = b - a;
		}
		line += n + 1;
	}
	/* else the first `Job submitted: ID` log line (the oldest CLI) */
	for (line = out; !found && line < out + len;) {
		const char *nl = memchr(line, '\n', (size_t)(out + len - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(out + len - line);
		const char *m = memmem(line, n, mark, mlen);

		if (m) {
			const char *s = m + mlen, *e;

			while (s < line + n && isspace((unsigned char)*s))
				s++;
			for (e = s; e < line + n && !isspace((unsigned char)*e); e++)
				;
			if (gdn_iris_valid_id(s, (size_t)(e - s))) {
				found = s;
				found_len = (size_t)(e - s);
			}
		}
		line += n + 1;
	}
	if (found) {
		*id = xstrndup(found, found_len);
		goto out;
	}
	quote_output(out, len, &q);
	ret = gdn_err_set(err, GDN_EPARSE,
			  "the submission printed no job id (a '/<user>/<name>' line or 'Job "
			  "submitted: <id>'): %s",
			  q.buf);
out:
	sbuf_release(&q);
	return ret;
}

static const struct {
	const char *name; /* lower case, as the text output spells it */
	int number;	  /* JobState in job.proto */
	enum gdn_job_state state;
} states[] = {
    {"pending", 1, GDN_JOB_PENDING},	   {"building", 2, GDN_JOB_PENDING},
    {"running", 3, GDN_JOB_RUNNING},	   {"succeeded", 4, GDN_JOB_SUCCEEDED},
    {"failed", 5, GDN_JOB_FAILED},	   {"killed", 6, GDN_JOB_STOPPED},
    {"worker_failed", 7, GDN_JOB_STOPPED}, {"unschedulable", 8, GDN_JOB_STOPPED},
};

bool gdn_iris_state(const char *name, size_t len, struct gdn_job_status *st)
{
	char up[32];
	size_t pre = strlen("JOB_STATE_");

	if (len > pre && !strncasecmp(name, "JOB_STATE_", pre)) {
		name += pre;
		len -= pre;
	}
	for (size_t i = 0; i < ARRAY_SIZE(states); i++) {
		char num[8];
		size_t n = strlen(states[i].name);

		snprintf(num, sizeof(num), "%d", states[i].number);
		if (!((len == n && !strncasecmp(name, states[i].name, n)) ||
		      (len == strlen(num) && !memcmp(name, num, len))))
			continue;
		for (n = 0; states[i].name[n] && n + 1 < sizeof(up); n++)
			up[n] = (char)toupper((unsigned char)states[i].name[n]);
		up[n] = '\0';
		st->state = states[i].state;
		st->final = states[i].number >= 4;
		snprintf(st->native, sizeof(st->native), "%s", up);
		if (states[i].state == GDN_JOB_STOPPED)
			snprintf(st->message, sizeof(st->message), "%s",
				 "infrastructure outcome, not the command's failure");
		return true;
	}
	return false;
}

bool gdn_iris_infrastructure(const struct gdn_job_status *st)
{
	return st->state == GDN_JOB_STOPPED &&
	       (!strcmp(st->native, "KILLED") || !strcmp(st->native, "WORKER_FAILED") ||
		!strcmp(st->native, "UNSCHEDULABLE"));
}

/* A decimal number at s (an optional '-'): its value, and where it ends; false for none. */
static bool read_long(const char *s, const char *end, long *v, const char **stop)
{
	const char *p = s;
	bool neg = false;
	long n = 0;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= end || !isdigit((unsigned char)*p))
		return false;
	for (; p < end && isdigit((unsigned char)*p); p++)
		n = n > 100000000 ? n : n * 10 + (*p - '0');
	*v = neg ? -n : n;
	*stop = p;
	return true;
}

/* The value after `key` ("exit=") in [s, end): a number, or -1 ("-" or absent). */
static long field(const char *s, const char *end, const char *key)
{
	const char *m = memmem(s, (size_t)(end - s), key, strlen(key)), *stop;
	long v;

	if (!m || !read_long(m + strlen(key), end, &v, &stop))
		return -1;
	return v;
}

int gdn_iris_parse_describe(const char *out, size_t len, struct gdn_job_status *st,
			    long *preemptions, struct gdn_err *err)
{
	const char *line = out, *end = out + len;
	struct sbuf q = SBUF_INIT;
	int ret;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *s = line, *w;

		while (s < le && (*s == ' ' || *s == '\t'))
			s++;
		if ((size_t)(le - s) > 6 && !memcmp(s, "State:", 6)) {
			s += 6;
			while (s < le && *s == ' ')
				s++;
			for (w = s; w < le && !isspace((unsigned char)*w); w++)
				;
			if (!gdn_iris_state(s, (size_t)(w - s), st))
				break;
			st->exit_code = (int)field(w, le, "exit=");
			if (preemptions)
				*preemptions = field(w, le, "preemptions=");
			return 0;
		}
		line = le + 1;
	}
	quote_output(out, len, &q);
	ret = gdn_err_set(err, GDN_EPARSE,
			  "no 'State: <state>  exit=<code>' line in 'iris job describe' output: %s",
			  q.buf);
	sbuf_release(&q);
	return ret;
}

/* A JSON integer or a string of digits (protobuf's int64). */
static bool json_long(json_t *v, long *out)
{
	const char *s, *stop;

	if (json_is_integer(v)) {
		*out = (long)json_integer_value(v);
		return true;
	}
	s = json_string_value(v);
	if (!s || !read_long(s, s + strlen(s), out, &stop) || *stop)
		return false;
	return true;
}

int gdn_iris_parse_list_json(const char *out, size_t len, const char *id, struct gdn_job_status *st,
			     long *preemptions, struct gdn_err *err)
{
	const char *start = memchr(out, '[', len);
	json_t *root = NULL, *job, *state;
	json_error_t jerr;
	size_t i;
	int ret = 0;

	/* text before the array (a warning on the merged stream) is skipped */
	while (start) {
		const char *nl;

		if (start == out || start[-1] == '\n')
			break;
		nl = memchr(start, '\n', (size_t)(out + len - start));
		start = nl ? memchr(nl, '[', (size_t)(out + len - nl)) : NULL;
	}
	if (start)
		root = json_loadb(start, (size_t)(out + len - start),
				  JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &jerr);
	if (!json_is_array(root)) {
		ret =
		    gdn_err_set(err, GDN_EPARSE, "'iris job list --json' printed no JSON array%s%s",
				root || !start ? "" : ": ", root || !start ? "" : jerr.text);
		goto out;
	}
	json_array_foreach(root, i, job)
	{
		const char *jid = json_string_value(json_object_get(job, "job_id"));
		json_t *v;
		long n;

		if (!jid || strcmp(jid, id))
			continue;
		state = json_object_get(job, "state");
		if (json_is_integer(state)) {
			char num[24];

			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(state));
			if (!gdn_iris_state(num, strlen(num), st))
				state = NULL;
		} else if (!json_is_string(state) ||
			   !gdn_iris_state(json_string_value(state), json_string_length(state),
					   st)) {
			state = NULL;
		}
		if (!state) {
			ret = gdn_err_set(err, GDN_EPARSE,
					  "job '%s' has no state gdnctl knows in 'iris job list "
					  "--json'",
					  id);
			goto out;
		}
		v = json_object_get(job, "exit_code");
		if (json_long(v, &n))
			st->exit_code = (int)n;
		else
			st->exit_code = st->final ? 0 : -1;
		v = json_object_get(job, "error");
		if (json_is_string(v) && json_string_length(v))
			snprintf(st->message, sizeof(st->message), "%s", json_string_value(v));
		if (preemptions &&
		    !json_long(json_object_get(job, "preemption_count"), preemptions))
			*preemptions = 0;
		goto out;
	}
	ret = gdn_err_set(err, GDN_ENOTFOUND, "job '%s' is not in 'iris job list'", id);
out:
	json_decref(root);
	return ret;
}

enum gdn_iris_generation gdn_iris_parse_help(const char *out, size_t len, struct gdn_iris_cli *cli,
					     struct gdn_err *err)
{
	const char *line = out, *end = out + len;
	bool in = false;

	memset(cli, 0, sizeof(*cli));
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *le = nl ? nl : end, *s = line, *w;
		size_t n;

		if ((size_t)(le - line) >= 9 && !memcmp(line, "Commands:", 9)) {
			in = true;
		} else if (in && s < le && !isspace((unsigned char)*s)) {
			in = false; /* the next section */
		} else if (in) {
			while (s < le && isspace((unsigned char)*s))
				s++;
			for (w = s; w < le && !isspace((unsigned char)*w); w++)
				;
			n = (size_t)(w - s);
#define IS(word) (n == strlen(word) && !memcmp(s, word, n))
			cli->run |= IS("run");
			cli->cancel |= IS("cancel");
			cli->stop |= IS("stop");
			cli->describe |= IS("describe");
			cli->list |= IS("list");
			cli->logs |= IS("logs");
			cli->wait |= IS("wait");
			cli->summary |= IS("summary");
#undef IS
		}
		line = le + 1;
	}
	if (!cli->run || !cli->logs) {
		gdn_err_set(err, GDN_EBACKEND,
			    "the Iris CLI's 'job --help' lists no 'job %s' command: not an Iris "
			    "job CLI gdnctl knows",
			    !cli->run ? "run" : "logs");
		return GDN_IRIS_GEN_UNKNOWN;
	}
	if (cli->cancel && cli->describe)
		return GDN_IRIS_GEN_CANCEL;
	if (cli->stop && cli->list)
		return GDN_IRIS_GEN_STOP;
	{
		struct sbuf missing = SBUF_INIT;
		const bool have[] = {cli->cancel, cli->describe, cli->stop, cli->list};
		const char *names[] = {"cancel", "describe", "stop", "list"};

		for (size_t i = 0; i < ARRAY_SIZE(names); i++)
			if (!have[i])
				sbuf_addf(&missing, "%s%s", missing.len ? ", " : "", names[i]);
		gdn_err_set(err, GDN_EBACKEND,
			    "the Iris CLI's 'job --help' lists neither 'job cancel' with 'job "
			    "describe' nor 'job stop' with 'job list': not an Iris job CLI gdnctl "
			    "knows (missing: %s)",
			    missing.buf);
		sbuf_release(&missing);
	}
	return GDN_IRIS_GEN_UNKNOWN;
}

const char *gdn_iris_generation_name(enum gdn_iris_generation g)
{
	switch (g) {
	case GDN_IRIS_GEN_CANCEL:
		return "job cancel/describe (newer CLI)";
	case GDN_IRIS_GEN_STOP:
		return "job stop/list --json (older CLI)";
	case GDN_IRIS_GEN_UNKNOWN:
		break;
	}
	return "unknown";
}

bool gdn_iris_log_data(const char *line, size_t len, const char **data, size_t *data_len)
{
	const char *end = line + len, *close, *bar;

	*data = line;
	*data_len = len;
	if (len < 2 || line[0] != '[')
		return false;
	close = memchr(line, ']', len);
	if (!close || end - close < 7 || memcmp(close, "] ", 2))
		return false;
	/* task=... [attempt=...] or worker=... task=..., then " | " */
	if (memcmp(close + 2, "task=", 5) && (end - close < 9 || memcmp(close + 2, "worker=", 7)))
		return false;
	bar = memmem(close, (size_t)(end - close), " | ", 3);
	if (!bar) {
		/* "... | " with nothing after it: an empty line of output */
		if (end - close >= 2 && !memcmp(end - 2, " |", 2)) {
			*data = end;
			*data_len = 0;
			return true;
		}
		return false;
	}
	*data = bar + 3;
	*data_len = (size_t)(end - bar - 3);
	return true;
}

char *gdn_iris_job_name(const char *name)
{
	char stamp[64];
	struct sbuf sb = SBUF_INIT;

	gdn_job_new_id(stamp, sizeof(stamp));
	for (const char *p = name && *name ? name : GDN_IRIS_JOB_NAME; *p && sb.len < 60; p++) {
		unsigned char c = (unsigned char)tolower((unsigned char)*p);

		sbuf_addch(&sb, isalnum(c) || c == '_' || c == '.' || c == '-' ? c : '-');
	}
	sbuf_addch(&sb, '-');
	for (const char *p = stamp; *p; p++)
		sbuf_addch(&sb, tolower((unsigned char)*p));
	return sbuf_detach(&sb, NULL);
}
