/*
 * `gdnctl loop status`: the last run of a loop journal read back into
 * where it is, for people (text) and programs (JSON); and the one table
 * that turns the journal's tokens into words (include/gdnctl/loop_status.h).
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/journal.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

/* ---- tokens in words: the one table ---- */

static const struct {
	const char *token, *words;
} token_words[] = {
    /* performance decisions (gdn_perf_decision_enum) and report outcomes */
    {"baseline", "the starting point, measured"},
    {"promoted", "faster: the new champion"},
    {"within_threshold", "within the noise band"},
    {"within_band", "within the noise band"},
    {"regression", "slower than the champion"},
    {"gate_regression", "a trace gate regressed"},
    {"unscored", "the metric could not be measured"},
    {"failed_tests", "the tests failed"},
    /* failure kinds (the journal's "failure") */
    {"no_commit", "the agent made no commit"},
    {"agent", "the agent failed or timed out"},
    {"post_check", "a post-check failed"},
    {"hook", "the validation gate or the performance policy failed"},
    {"iteration_error", "the iteration could not run"},
};

const char *gdn_loop_token_words(const char *token)
{
	for (size_t i = 0; token && i < ARRAY_SIZE(token_words); i++)
		if (!strcmp(token, token_words[i].token))
			return token_words[i].words;
	return NULL;
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || c == '_';
}

void gdn_loop_reason_words(struct sbuf *out, const char *reason)
{
	const char *w, *p;

	if (!reason)
		return;
	if ((w = gdn_loop_token_words(reason))) {
		sbuf_adds(out, w);
		return;
	}
	/* "performance TOKEN: METRIC" (the gate's revert reason) */
	if (!strncmp(reason, "performance ", 12)) {
		const char *t = reason + 12, *colon = strstr(t, ": ");
		char *tok = colon ? xstrndup(t, (size_t)(colon - t)) : NULL;

		w = gdn_loop_token_words(tok);
		free(tok);
		if (w) {
			sbuf_addf(out, "%s (%s)", w, colon + 2);
			return;
		}
	}
	for (p = reason; *p;) {
		size_t n = 0;

		while (token_char(p[n]))
			n++;
		if (n && (p == reason || !token_char(p[-1])) && memchr(p, '_', n)) {
			char *tok = xstrndup(p, n);

			w = gdn_loop_token_words(tok);
			free(tok);
			sbuf_adds(out, w ? w : "");
			if (!w)
				sbuf_add(out, p, n);
			p += n;
			continue;
		}
		if (!n)
			n = 1;
		sbuf_add(out, p, n);
		p += n;
	}
}

long long gdn_loop_ts_ms(const char *s)
{
	int y, mo, d, h, mi, sec, ms = 0, n = 0;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
		return -1;
	if (s[n] == '.' && sscanf(s + n + 1, "%3d", &ms) != 1)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || ms < 0 ||
	    y < 1970)
		return -1;
	return ((gdn_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000LL + sec * 1000LL + ms;
}

void gdn_loop_add_duration(struct sbuf *out, long long ms)
{
	long long s;

	if (ms < 0)
		ms = 0;
	if (ms < 1000) {
		sbuf_addf(out, "%lld ms", ms);
		return;
	}
	if (ms < 10000) {
		sbuf_addf(out, "%.1f s", (double)ms / 1000.0);
		return;
	}
	s = (ms + 500) / 1000;
	if (s < 60)
		sbuf_addf(out, "%lld s", s);
	else if (s < 3600)
		sbuf_addf(out, "%lld min %lld s", s / 60, s % 60);
	else
		sbuf_addf(out, "%lld h %lld min", s / 3600, s / 60 % 60);
}

/* ---- the status ---- */

void gdn_loop_status_init(struct gdn_loop_status *st)
{
	memset(st, 0, sizeof(*st));
	st->max_failures = -2;
	st->run_start_ms = st->iteration_start_ms = st->phase_start_ms = -1;
	st->last_event_ms = st->segment_start_ms = -1;
}

static void clear_pending(struct gdn_loop_status *st)
{
	FREE_AND_NULL(st->pending_perf);
	FREE_AND_NULL(st->pending_revert);
	FREE_AND_NULL(st->pending_summary);
	st->pending_reverted = false;
}

void gdn_loop_status_release(struct gdn_loop_status *st)
{
	free(st->run_id);
	free(st->workdir);
	free(st->end_reason);
	free(st->phase);
	free(st->metric);
	free(st->champion_commit);
	for (size_t i = 0; i < st->nr_last; i++)
		free(st->last[i].text);
	free(st->agent_line);
	clear_pending(st);
	gdn_loop_status_init(st);
}

static const char *str_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static long long int_of(json_t *o, const char *key, long long dflt)
{
	json_t *v = json_object_get(o, key);
	json_int_t i;

	if (!json_is_integer(v))
		return dflt;
	i = json_integer_value(v);
	return i > ((json_int_t)1 << 40) ? (long long)1 << 40 : i < -1000 ? -1000 : (long long)i;
}

/* Untrusted text for display: control characters become spaces, capped at max bytes. */
static char *clean(const char *s, size_t max)
{
	char *t = xstrndup(s, strnlen(s, max));

	for (char *p = t; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return t;
}

static void set_clean(char **dst, const char *s, size_t max)
{
	free(*dst);
	*dst = s ? clean(s, max) : NULL;
}

static void set_phase(struct gdn_loop_status *st, const char *key, const char *text, long long ts)
{
	if (strcmp(st->phase_key, key)) {
		snprintf(st->phase_key, sizeof(st->phase_key), "%s", key);
		st->phase_start_ms = ts;
	}
	free(st->phase);
	st->phase = clean(text, 200);
}

static void push_decision(struct gdn_loop_status *st, long it, char *text)
{
	if (st->nr_last == GDN_LOOP_STATUS_DECISIONS) {
		free(st->last[0].text);
		memmove(&st->last[0], &st->last[1], (st->nr_last - 1) * sizeof(st->last[0]));
		st->nr_last--;
	}
	st->last[st->nr_last].iteration = it;
	st->last[st->nr_last].text = text;
	st->nr_last++;
}

static void add_num(struct sbuf *out, double v)
{
	sbuf_addf(out, "%.6g", v);
}

static void apply_perf(struct gdn_loop_status *st, json_t *o, long it)
{
	const char *d = str_of(o, "decision"), *m = str_of(o, "metric"), *c = str_of(o, "commit");
	json_t *cand = json_object_get(o, "candidate"), *champ = json_object_get(o, "champion");
	json_t *pct = json_object_get(o, "improvement_pct");
	struct sbuf sb = SBUF_INIT;
	bool best = d && (!strcmp(d, "baseline") || !strcmp(d, "promoted"));

	if (m)
		set_clean(&st->metric, m, 200);
	if (best && json_is_number(cand)) {
		st->has_champion = true;
		st->champion = json_number_value(cand);
		set_clean(&st->champion_commit, c, 64);
		st->champion_iteration = it;
	} else if (!st->has_champion && json_is_number(champ)) {
		st->has_champion = true;
		st->champion = json_number_value(champ);
	}
	if (best)
		sbuf_adds(&sb, d); /* "baseline", "promoted": words already */
	else if (d)
		gdn_loop_reason_words(&sb, d);
	if (json_is_number(cand)) {
		sbuf_adds(&sb, ", ");
		add_num(&sb, json_number_value(cand));
		if (json_is_number(pct))
			sbuf_addf(&sb, " (%+.2f%%)", json_number_value(pct));
	}
	free(st->pending_perf);
	st->pending_perf = d ? clean(d, 64) : NULL;
	free(st->pending_summary);
	st->pending_summary = clean(sb.buf, 300);
	if (it == 0 && d) /* the baseline has no decision event */
		push_decision(st, 0, xstrfmt("%s", st->pending_summary));
	sbuf_release(&sb);
}

static void apply_decision(struct gdn_loop_status *st, json_t *o, long it)
{
	const char *failure = str_of(o, "failure");
	long long commits = int_of(o, "commits", 0);
	struct sbuf sb = SBUF_INIT;

	st->done++;
	st->failures = (long)int_of(o, "failures", st->failures);
	st->consecutive = (long)int_of(o, "consecutive", st->consecutive);
	if (st->pending_reverted) {
		st->reverted++;
		sbuf_adds(&sb, "reverted: ");
		if (st->pending_revert)
			gdn_loop_reason_words(&sb, st->pending_revert);
		else
			gdn_loop_reason_words(&sb, st->pending_perf);
	} else if (commits > 0) {
		st->kept++;
		sbuf_addf(&sb, "kept %lld commit%s", commits, commits == 1 ? "" : "s");
		if (st->pending_summary)
			sbuf_addf(&sb, ": %s", st->pending_summary);
	} else if (failure) {
		sbuf_adds(&sb, "failed: ");
		gdn_loop_reason_words(&sb, failure);
	} else {
		sbuf_adds(&sb, "no commit");
	}
	if (failure && json_is_true(json_object_get(o, "counted")))
		sbuf_adds(&sb, "; a counted failure");
	push_decision(st, it, clean(sb.buf, 400));
	clear_pending(st);
	sbuf_release(&sb);
}

static void new_run(struct gdn_loop_status *st, json_t *o, long long ts)
{
	gdn_loop_status_release(st);
	set_clean(&st->run_id, str_of(o, "run"), 200);
	set_clean(&st->workdir, str_of(o, "workdir"), 4096);
	st->planned = (long)int_of(o, "iterations", 0);
	st->max_failures = (long)int_of(o, "max_failures", -2);
	st->stop_after_failures = (long)int_of(o, "stop_after_failures", 0);
	st->run_start_ms = st->segment_start_ms = st->last_event_ms = ts;
	set_phase(st, "starting", "starting", ts);
}

static void on_run_resume(struct gdn_loop_status *st, json_t *o, long long ts, long long prev)
{
	/* the time between the last event before the resume and the resume was idle */
	if (prev >= 0 && st->segment_start_ms >= 0 && prev >= st->segment_start_ms)
		st->active_before_ms += prev - st->segment_start_ms;
	st->segment_start_ms = ts;
	st->resumes++;
	st->ended = false;
	st->has_exit = false;
	FREE_AND_NULL(st->end_reason);
	if (int_of(o, "iterations", 0) > 0)
		st->planned = (long)int_of(o, "iterations", 0);
	if (json_is_integer(json_object_get(o, "max_failures")))
		st->max_failures = (long)int_of(o, "max_failures", -2);
	if (json_is_integer(json_object_get(o, "stop_after_failures")))
		st->stop_after_failures = (long)int_of(o, "stop_after_failures", 0);
	set_phase(st, "resuming", "resuming", ts);
}

/* A validation phase or a measurement: the phase's text (new string). */
static char *validation_text(enum gdn_event ev, json_t *o, long it)
{
	const char *ph = str_of(o, "phase"), *state = str_of(o, "state");

	if (ev == GDN_EV_MEASUREMENT)
		return xstrfmt("%s: measuring", it == 0 ? "measuring the baseline" : "validation");
	return xstrfmt("%s: %s %s (attempt %lld)",
		       it == 0 ? "measuring the baseline" : "validation", ph ? ph : "step",
		       state ? state : "done", int_of(o, "attempt", 1));
}

static void apply(struct gdn_loop_status *st, const char *name, json_t *o)
{
	enum gdn_event ev = gdn_journal_event(name);
	long long ts = gdn_loop_ts_ms(str_of(o, "ts")), prev = st->last_event_ms;
	long it = (long)int_of(o, "iteration", -1);
	char *text = NULL;

	if (ev == GDN_EV_RUN_START) {
		new_run(st, o, ts);
		return;
	}
	if (!st->run_id || !str_of(o, "run") || strcmp(st->run_id, str_of(o, "run")))
		return; /* an event of no run, or of an older run */
	if (ts >= 0)
		st->last_event_ms = ts;
	switch (ev) {
	case GDN_EV_RUN_RESUME:
		on_run_resume(st, o, ts, prev);
		break;
	case GDN_EV_RUN_END:
		st->ended = true;
		st->in_iteration = false;
		set_clean(&st->end_reason, str_of(o, "reason"), 200);
		st->has_exit = json_is_integer(json_object_get(o, "exit_code"));
		st->exit_code = (int)int_of(o, "exit_code", 0);
		set_phase(st, "ended", "ended", ts);
		break;
	case GDN_EV_ITERATION_START:
		if (it <= 0)
			break;
		st->iteration = it;
		st->in_iteration = true;
		st->iteration_start_ms = ts;
		clear_pending(st);
		set_phase(st, "preparing", "preparing", ts);
		break;
	case GDN_EV_AGENT_START: {
		long long a = int_of(o, "attempt", 1);

		text = a > 1 ? xstrfmt("agent (attempt %lld)", a) : xstrdup("agent");
		set_phase(st, "agent", text, ts);
		break;
	}
	case GDN_EV_AGENT_END:
		set_phase(st, "commits", "looking for the agent's commits", ts);
		break;
	case GDN_EV_CHECK:
		set_phase(st, "post-checks", "post-checks", ts);
		break;
	case GDN_EV_HEAD:
		set_phase(st, "validation", "validation", ts);
		break;
	case GDN_EV_VALIDATION:
	case GDN_EV_MEASUREMENT:
		text = validation_text(ev, o, it);
		set_phase(st, it == 0 ? "baseline" : "validation", text, ts);
		break;
	case GDN_EV_PERF_DECISION:
		apply_perf(st, o, it);
		set_phase(st, "deciding", "deciding", ts);
		break;
	case GDN_EV_STAMP:
		/* the champion's running-log entry stamped on top: the commit the branch holds */
		if (st->has_champion && st->champion_iteration == it && str_of(o, "commit"))
			set_clean(&st->champion_commit, str_of(o, "commit"), 64);
		break;
	case GDN_EV_REVERT:
		st->pending_reverted = json_is_true(json_object_get(o, "ok"));
		set_clean(&st->pending_revert, str_of(o, "reason"), 300);
		set_phase(st, "deciding", "reverting", ts);
		break;
	case GDN_EV_DECISION:
		apply_decision(st, o, it);
		set_phase(st, "finishing", "finishing the iteration", ts);
		break;
	case GDN_EV_FAILURE:
		st->failures = (long)int_of(o, "failures", st->failures);
		st->consecutive = (long)int_of(o, "consecutive", st->consecutive);
		break;
	case GDN_EV_ITERATION_END:
		st->in_iteration = false;
		set_phase(st, "between", "between iterations", ts);
		break;
	case GDN_EV_INTERRUPTED:
		set_phase(st, "interrupted", "interrupted", ts);
		break;
	case GDN_EV_STOP:
		text = xstrfmt("stopping: %s", str_of(o, "reason") ? str_of(o, "reason") : "?");
		set_phase(st, "stopping", text, ts);
		break;
	default:
		break;
	}
	free(text);
}

static void apply_cb(const char *event, json_t *ev, void *payload)
{
	apply(payload, event, ev);
}

int gdn_loop_status_load(struct gdn_loop_status *st, const char *buf, size_t len, const char *name,
			 struct gdn_err *err)
{
	gdn_loop_status_release(st);
	return gdn_journal_each(buf, len, name, apply_cb, st, NULL, err);
}

#define TRANSCRIPT_TAIL 65536

void gdn_loop_status_read_agent_line(struct gdn_loop_status *st, const char *log_dir)
{
	char *path, buf[TRANSCRIPT_TAIL + 1];
	ssize_t n = 0, got;
	off_t size;
	int fd;

	FREE_AND_NULL(st->agent_line);
	if (!log_dir || st->iteration <= 0)
		return;
	path = xstrfmt("%s/iteration-%03ld-transcript.log", log_dir, st->iteration);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > 0 &&
	    lseek(fd, size > TRANSCRIPT_TAIL ? size - TRANSCRIPT_TAIL : 0, SEEK_SET) >= 0)
		while (n < TRANSCRIPT_TAIL &&
		       ((got = read(fd, buf + n, (size_t)(TRANSCRIPT_TAIL - n))) > 0 ||
			(got < 0 && errno == EINTR)))
			n += got > 0 ? got : 0;
	close(fd);
	buf[n] = '\0';
	/* the last non-empty line that is not one of gdnctl's "==== gdnctl: ..." markers */
	while (n > 0) {
		ssize_t end = n, start;
		struct sbuf line = SBUF_INIT;

		while (end > 0 && (buf[end - 1] == '\n' || buf[end - 1] == '\r'))
			end--;
		start = end;
		while (start > 0 && buf[start - 1] != '\n')
			start--;
		n = start;
		sbuf_add(&line, buf + start, (size_t)(end - start));
		sbuf_trim(&line);
		if (line.len && strncmp(line.buf, "==== gdnctl:", 12)) {
			st->agent_line = clean(line.buf, 300);
			sbuf_release(&line);
			return;
		}
		sbuf_release(&line);
	}
}

long long gdn_loop_status_elapsed_ms(const struct gdn_loop_status *st, long long now_ms)
{
	long long end = st->ended ? st->last_event_ms : now_ms;

	if (st->segment_start_ms < 0 || end < st->segment_start_ms)
		return st->active_before_ms;
	return st->active_before_ms + (end - st->segment_start_ms);
}

static long long since(long long start, long long now_ms)
{
	return start >= 0 && now_ms >= start ? now_ms - start : 0;
}

/* The failures budget in words; *left is -1 when unlimited or unknown. */
static void add_budget(struct sbuf *out, const struct gdn_loop_status *st, long *left)
{
	*left = -1;
	sbuf_addf(out, "%ld counted", st->failures);
	if (st->max_failures == -2) {
		sbuf_adds(out, "; the budget is not in the journal");
	} else if (st->max_failures < 0) {
		sbuf_adds(out, "; no limit (--max-failures -1)");
	} else {
		*left = st->max_failures >= st->failures ? st->max_failures - st->failures : 0;
		sbuf_addf(out, "; %ld more allowed (--max-failures %ld)", *left, st->max_failures);
	}
	if (st->stop_after_failures > 0)
		sbuf_addf(out, "; %ld in a row, the run stops at %ld", st->consecutive,
			  st->stop_after_failures);
}

void gdn_loop_status_render_text(const struct gdn_loop_status *st, long long now_ms,
				 struct sbuf *out)
{
	long left;

	if (!st->run_id) {
		sbuf_adds(out, "no run in the journal yet\n");
		return;
	}
	sbuf_addf(out, "run %s", st->run_id);
	if (st->ended) {
		sbuf_addf(out, ": ended (%s", st->end_reason ? st->end_reason : "?");
		if (st->has_exit)
			sbuf_addf(out, ", exit %d", st->exit_code);
		sbuf_adds(out, ") after ");
	} else {
		sbuf_adds(out, ": running for ");
	}
	gdn_loop_add_duration(out, gdn_loop_status_elapsed_ms(st, now_ms));
	if (st->resumes)
		sbuf_addf(out, " (resumed %ld time%s; idle time not counted)", st->resumes,
			  st->resumes == 1 ? "" : "s");
	sbuf_addch(out, '\n');
	if (st->iteration > 0)
		sbuf_addf(out, "iteration %ld of %ld", st->iteration, st->planned);
	else
		sbuf_addf(out, "iteration - of %ld", st->planned);
	if (!st->ended) {
		sbuf_addf(out, ": %s for ", st->phase ? st->phase : "?");
		gdn_loop_add_duration(out, since(st->phase_start_ms, now_ms));
		if (st->in_iteration) {
			sbuf_adds(out, " (the iteration for ");
			gdn_loop_add_duration(out, since(st->iteration_start_ms, now_ms));
			sbuf_adds(out, ")");
		}
	}
	sbuf_addf(out, "; %ld done: %ld kept, %ld reverted\n", st->done, st->kept, st->reverted);
	sbuf_adds(out, "champion: ");
	if (st->has_champion) {
		sbuf_addf(out, "%s ", st->metric ? st->metric : "metric");
		add_num(out, st->champion);
		if (st->champion_commit)
			sbuf_addf(out, " @ %.12s (iteration %ld)", st->champion_commit,
				  st->champion_iteration);
	} else {
		sbuf_adds(out, "none yet");
	}
	sbuf_addch(out, '\n');
	sbuf_adds(out, "failures: ");
	add_budget(out, st, &left);
	sbuf_addch(out, '\n');
	if (st->nr_last) {
		sbuf_adds(out, "last decisions:\n");
		for (size_t i = 0; i < st->nr_last; i++)
			sbuf_addf(out, "  iteration %ld: %s\n", st->last[i].iteration,
				  st->last[i].text);
	}
	sbuf_addf(out, "agent: %s\n", st->agent_line ? st->agent_line : "(no output yet)");
}

static json_t *ms_or_null(long long start, long long now_ms)
{
	return start >= 0 ? json_integer(since(start, now_ms)) : json_null();
}

json_t *gdn_loop_status_json(const struct gdn_loop_status *st, long long now_ms)
{
	json_t *doc = gdn_json_doc(GDN_LOOP_STATUS_SCHEMA), *dec = json_array(), *fail;
	struct sbuf sb = SBUF_INIT;
	long left;

	add_budget(&sb, st, &left);
	json_object_set_new(doc, "run", gdn_json_string_lossy(st->run_id));
	json_object_set_new(doc, "workdir", gdn_json_string_lossy(st->workdir));
	json_object_set_new(doc, "running", json_boolean(st->run_id && !st->ended));
	json_object_set_new(doc, "end_reason", gdn_json_string_lossy(st->end_reason));
	json_object_set_new(doc, "exit_code",
			    st->has_exit ? json_integer(st->exit_code) : json_null());
	json_object_set_new(doc, "elapsed_ms",
			    json_integer(gdn_loop_status_elapsed_ms(st, now_ms)));
	json_object_set_new(doc, "resumes", json_integer(st->resumes));
	json_object_set_new(doc, "planned", json_integer(st->planned));
	json_object_set_new(doc, "iteration", json_integer(st->iteration));
	json_object_set_new(doc, "in_iteration", json_boolean(st->in_iteration));
	json_object_set_new(doc, "phase", gdn_json_string_lossy(st->phase));
	json_object_set_new(doc, "phase_ms",
			    ms_or_null(st->ended ? -1 : st->phase_start_ms, now_ms));
	json_object_set_new(doc, "iteration_ms",
			    ms_or_null(st->in_iteration ? st->iteration_start_ms : -1, now_ms));
	json_object_set_new(doc, "done", json_integer(st->done));
	json_object_set_new(doc, "kept", json_integer(st->kept));
	json_object_set_new(doc, "reverted", json_integer(st->reverted));
	fail = json_object();
	json_object_set_new(fail, "counted", json_integer(st->failures));
	json_object_set_new(fail, "consecutive", json_integer(st->consecutive));
	json_object_set_new(fail, "max",
			    st->max_failures == -2 ? json_null() : json_integer(st->max_failures));
	json_object_set_new(fail, "left", left >= 0 ? json_integer(left) : json_null());
	json_object_set_new(fail, "text", gdn_json_string_lossy(sb.buf));
	json_object_set_new(doc, "failures", fail);
	if (st->has_champion && isfinite(st->champion))
		json_object_set_new(
		    doc, "champion",
		    json_pack("{sosfsosI}", "metric", gdn_json_string_lossy(st->metric), "value",
			      st->champion, "commit", gdn_json_string_lossy(st->champion_commit),
			      "iteration", (json_int_t)st->champion_iteration));
	else
		json_object_set_new(doc, "champion", json_null());
	for (size_t i = 0; i < st->nr_last; i++)
		json_array_append_new(dec, json_pack("{sIso}", "iteration",
						     (json_int_t)st->last[i].iteration, "text",
						     gdn_json_string_lossy(st->last[i].text)));
	json_object_set_new(doc, "decisions", dec);
	json_object_set_new(doc, "agent_line", gdn_json_string_lossy(st->agent_line));
	sbuf_release(&sb);
	return doc;
}
