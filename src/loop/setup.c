/*
 * `gdnctl loop` set up from its options in named steps (loop_setup.h):
 * the original codex-loop's defaults and startup checks (same messages),
 * the paths, the agent, the validation gate and performance policy, the
 * engine's options and the gate's hooks. Never prints: a failed step
 * leaves its message in s->err for the command.
 */
#include "gdnctl/compat.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/file.h"
#include "gdnctl/journal.h"
#include "gdnctl/json.h"
#include "gdnctl/marin.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/prompt.h"
#include "gdnctl/repo.h"
#include "gdnctl/gitops.h"
#include "gdnctl/targets.h"
#include "gdnctl/xalloc.h"

#define MARIN_TARGETS "--hold-dev-tpu, --validation-ray-cluster, --validation-ray-cluster-auto"

/* -1 for an error a module filled in s->err. */
static int failed(struct gdn_loop_setup *s, enum gdn_loop_setup_style style)
{
	s->style = style;
	if (!s->err.code)
		s->err.code = GDN_EFAILED;
	return -1;
}

/* A directive file named on the command line is missing or empty: the original's message. */
static int failed_directive(struct gdn_loop_setup *s)
{
	if (s->err.code == GDN_ENOTFOUND)
		s->err.code = GDN_EUSAGE;
	return failed(s, GDN_SETUP_PLAIN);
}

/* An unknown --backend is a usage error, an unknown loop.backend a configuration error. */
static int failed_backend(struct gdn_loop_setup *s)
{
	if (s->err.code == GDN_ENOTFOUND)
		s->err.code = s->a.backend ? GDN_EUSAGE : GDN_ECONFIG;
	return failed(s, GDN_SETUP_ERROR);
}

/* The same, shown as a usage error whatever the module's code. */
static int failed_usage(struct gdn_loop_setup *s)
{
	s->style = GDN_SETUP_ERROR;
	s->err.code = GDN_EUSAGE;
	return -1;
}

static bool nonempty(const char *s)
{
	return s && *s;
}

/* An absolute path: `p` resolved against `base` (not required to exist). */
static char *abspath(const char *base, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xstrfmt("%s/%s", base, p);
}

void gdn_loop_setup_init(struct gdn_loop_setup *s, const char *cwd, const char *repo_root,
			 struct gdn_config *cfg)
{
	struct gdn_err e = GDN_ERR_INIT;

	memset(s, 0, sizeof(*s));
	s->a = (struct gdn_loop_args){
	    .ephemeral = 1,
	    .sleep_seconds = 5.0,
	    .codex_timeout = 7200.0,
	    .codex_idle_timeout = 900.0,
	    .retry_sleep = 20.0,
	    .agent_timeout_ms = -1,
	    .agent_idle_timeout_ms = -1,
	    .kill_grace_ms = 10000,
	    .heartbeat_ms = 60000,
	    .post_check_policy = GDN_POLICY_FAIL,
	    .no_commit_policy = GDN_POLICY_FAIL,
	    .iteration_error_policy = GDN_POLICY_FAIL,
	    .dirty_policy = GDN_DIRTY_FAIL,
	    .isolation = GDN_ISOLATION_WORKTREE,
	    .restore_policy = GDN_RESTORE_WARN_KEEP,
	    .sync_policy = GDN_SYNC_OFF,
	    .sync_remote = "origin",
	    .sync_branch = "main",
	    .sync_conflict = GDN_SYNC_CONFLICT_FAIL,
	    .validation_mode = GDN_GATE_OFF,
	    .validation_policy = GDN_POLICY_COUNT_FAILURE,
	    .validation_timeout_ms = 30 * 60 * 1000,
	    .perf_on = 0,
	    .perf_metric = NULL, /* gdn_perf_ruler() */
	    .perf_direction = GDN_PERF_AUTO,
	    .perf_policy = GDN_PERF_REVERT_COUNT_FAILURE,
	    .perf_within = GDN_PERF_WITHIN_KEEP,
	    .perf_stat = GDN_PERF_STAT_MEDIAN,
	    .perf_min_improvement = 0.25,
	    .perf_max_regression = 1.0,
	    .perf_repeats = 1,
	    .perf_ab = -1,
	    .perf_confidence = 0.95,
	    .perf_source = GDN_MEASURE_AUTO,
	    .perf_history = 1,
	    .perf_history_agg = GDN_AGG_MEDIAN,
	    .perf_step_start = 10,
	    .perf_step_end = 18,
	    .perf_min_points = 5,
	    .perf_wandb_retries = 4,
	    .perf_wandb_timeout_ms = 120000,
	    .perf_wandb_entity = "marin-community",
	    .perf_wandb_project = "marin",
	    .agent = GDN_AGENT_DEFAULT,
	    .workers = 1,
	};
	strvec_init(&s->a.backends);
	strvec_init(&s->a.directives);
	strvec_init(&s->a.protect);
	strvec_init(&s->protected_paths);
	gdn_integrity_config_init(&s->integrity_cfg); /* integrity gate (issue 28) */
	strvec_init(&s->a.directive_files);
	strvec_init(&s->a.presets);
	strvec_init(&s->a.post_checks);
	strvec_init(&s->a.perf_gates);
	s->w = (struct gdn_loop_where){
	    .hold_required = 1,
	    .ready_timeout = 900.0,
	    .retry_sleep = 30.0,
	    .stop_timeout = 120.0,
	    .attempts = 1,
	    .validation_attempts = 1,
	    .validation_retry_sleep = 120.0,
	    .reacquire_ms = 5 * 60 * 1000,
	    .profile_tpu = GDN_MARIN_PROFILE_TPU,
	};
	strvec_init(&s->w.fallbacks);
	strvec_init(&s->w.clusters);
	strvec_init(&s->w.excludes);
	strvec_init(&s->w.dev_clusters);
	strvec_init(&s->w.profile_env);
	gdn_marin_gate_init(&s->w.mg);
	s->cwd = cwd;
	s->repo_root = repo_root;
	s->cfg = cfg;
	sbuf_init(&s->tmpl, 0);
	strvec_init(&s->directives);
	strvec_init(&s->warnings);
	strvec_init(&s->resume_argv);
	s->hooks = (struct gdn_loop_hooks){.validate = gdn_gate_validate,
					   .payload = &s->gate,
					   .policy = GDN_POLICY_COUNT_FAILURE,
					   .worker_state = gdn_gate_worker_state};
	s->worker_hooks = (struct gdn_loop_hooks){.payload = &s->gate};
	gdn_perf_config_init(&s->pc);
	s->ps = (struct gdn_perf_state)GDN_PERF_STATE_INIT;
	s->repo_lock = (struct gdn_lock)GDN_LOCK_INIT;
	s->dir_lock = (struct gdn_lock)GDN_LOCK_INIT;
	gdn_measure_opts_init(&s->mo);
	s->from = json_object();
	s->err = e;
}

void gdn_loop_setup_release(struct gdn_loop_setup *s)
{
	gdn_lock_release(&s->dir_lock);
	gdn_lock_release(&s->repo_lock);
	gdn_loop_where_release(&s->w);
	gdn_gate_release(&s->gate);
	gdn_integrity_release(&s->integrity); /* integrity gate (issue 28) */
	gdn_integrity_config_release(&s->integrity_cfg);
	gdn_perf_state_release(&s->ps);
	gdn_perf_config_release(&s->pc);
	strvec_clear(&s->a.perf_gates);
	strvec_clear(&s->a.backends);
	gdn_backend_free(s->backend);
	gdn_agent_free(s->agent);
	strvec_clear(&s->a.directives);
	strvec_clear(&s->a.protect);
	strvec_clear(&s->protected_paths);
	strvec_clear(&s->a.directive_files);
	strvec_clear(&s->a.presets);
	strvec_clear(&s->a.post_checks);
	strvec_clear(&s->directives);
	strvec_clear(&s->warnings);
	sbuf_release(&s->tmpl);
	free(s->workdir);
	free(s->agent_dir);
	free(s->worktree_dir);
	free(s->worker_dir);
	free(s->log_dir);
	free(s->hlog);
	free(s->prompt_path);
	free(s->marin_tests);
	free(s->marin_profile);
	free(s->wandb_prefix);
	json_decref(s->options);
	strvec_clear(&s->resume_argv);
	free(s->resume_run);
	json_decref(s->overridden);
	json_decref(s->from);
	json_decref(s->plan);
}

/* ---- the run's decision options, and --resume ---- */

/* A duration in its largest exact unit ("90s", "30m", "1500ms"), as the parser reads it. */
static char *duration_str(long ms)
{
	static const struct {
		long ms;
		const char *unit;
	} units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};

	if (!ms)
		return xstrdup("0s");
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (ms % units[i].ms == 0)
			return xstrfmt("%ld%s", ms / units[i].ms, units[i].unit);
	return xstrfmt("%ldms", ms);
}

/*
 * Repeatable options that were not always: given once, journaled as their
 * one value (as before), so that the journals of either version resume.
 */
static const char *const once_as_string[] = {"backend", NULL};

static bool is_once_as_string(const struct opt *o)
{
	for (size_t i = 0; o->long_name && once_as_string[i]; i++)
		if (!strcmp(o->long_name, once_as_string[i]))
			return o->type == OPT_LIST;
	return false;
}

static bool decision_row(const struct opt *o)
{
	return o->long_name && o->type != OPT_GROUP && !(o->flags & OPT_INVOCATION);
}

static const struct opt *find_row(const struct opt *opts, const char *name)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, name))
			return o;
	return NULL;
}

json_t *gdn_loop_option_value(const struct opt *o)
{
	switch (o->type) {
	case OPT_BOOL:
		return json_boolean(*(const int *)o->value);
	case OPT_INT:
		return json_integer(*(const long *)o->value);
	case OPT_FLOAT:
	case OPT_SECONDS:
		return json_real(*(const double *)o->value);
	case OPT_DURATION: {
		long ms = *(const long *)o->value;
		char *d;
		json_t *v;

		if (ms < 0)
			return json_null(); /* a "not given" sentinel */
		d = duration_str(ms);
		v = json_string(d);
		free(d);
		return v;
	}
	case OPT_STRING:
	case OPT_CHOICE: {
		const char *v = *(const char *const *)o->value;

		return v ? json_string(v) : json_null();
	}
	case OPT_ENUM: {
		const char *n = gdn_enum_name(o->enums, *(const int *)o->value);

		return n ? json_string(n) : json_null();
	}
	case OPT_LIST:
	case OPT_KV: {
		const struct strvec *sv = o->value;
		json_t *a;

		if (sv->nr == 1 && is_once_as_string(o))
			return json_string(sv->v[0]);
		a = json_array();

		for (size_t i = 0; i < sv->nr; i++)
			json_array_append_new(a, json_string(sv->v[i]));
		return a;
	}
	default:
		return json_null();
	}
}

json_t *gdn_loop_options_json(const struct opt *opts)
{
	json_t *all = json_object();

	for (const struct opt *o = opts; o->type != OPT_END; o++) {
		json_t *v;

		if (!decision_row(o) || !o->seen)
			continue;
		v = gdn_loop_option_value(o);
		if (v && !json_is_null(v))
			json_object_set_new(all, o->long_name, v);
		else
			json_decref(v); /* NULL: a string that is not UTF-8 */
	}
	return all;
}

static int bad_option(const char *name, const char *why, struct gdn_err *err)
{
	return gdn_err_set(err, GDN_EPARSE, "option '--%s' of the run %s", name, why);
}

int gdn_loop_options_argv(const struct opt *opts, json_t *options, struct strvec *argv,
			  struct gdn_err *err)
{
	const char *name;
	json_t *v, *item;
	size_t i;

	json_object_foreach(options, name, v)
	{
		const struct opt *o = find_row(opts, name);

		if (!o || !decision_row(o))
			return bad_option(name, "is not an option a run keeps", err);
		if (json_is_null(v))
			continue;
		if (o->type == OPT_BOOL) {
			if (!json_is_boolean(v))
				return bad_option(name, "is not true or false", err);
			if (json_is_true(v))
				strvec_pushf(argv, "--%s", name);
			else if (o->flags & OPT_NEGATABLE)
				strvec_pushf(argv, "--no-%s", name);
			continue;
		}
		if ((o->type == OPT_LIST || o->type == OPT_KV) &&
		    !(json_is_string(v) && is_once_as_string(o))) {
			if (!json_is_array(v))
				return bad_option(name, "is not a list", err);
			json_array_foreach(v, i, item)
			{
				if (!json_is_string(item))
					return bad_option(name, "is not a list of strings", err);
				strvec_pushf(argv, "--%s", name);
				strvec_push(argv, json_string_value(item));
			}
			continue;
		}
		if (json_is_string(v)) {
			strvec_pushf(argv, "--%s", name);
			strvec_push(argv, json_string_value(v));
		} else if (json_is_integer(v)) {
			strvec_pushf(argv, "--%s", name);
			strvec_pushf(argv, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		} else if (json_is_real(v)) {
			strvec_pushf(argv, "--%s", name);
			strvec_pushf(argv, "%.17g", json_real_value(v));
		} else {
			return bad_option(name, "is not a value", err);
		}
	}
	return 0;
}

/* The log dir of the options (its default: gdn_loop_default_log_dir), or NULL. */
static char *log_dir_path(const struct gdn_loop_setup *s)
{
	struct gdn_err ignored = GDN_ERR_INIT;

	return s->a.log_dir ? abspath(s->cwd, s->a.log_dir)
			    : gdn_loop_default_log_dir(s->workdir, NULL, &ignored);
}

static int find_workdir(struct gdn_loop_setup *s);

/*
 * The run --resume continues, from the journal of the log dir: 1 with st
 * filled, 0 when there is none to read (the engine says why), -1 on an
 * error (s->err).
 */
static int read_run(struct gdn_loop_setup *s, struct gdn_loop_state *st)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err ignored = GDN_ERR_INIT;
	char *dir, *path;
	pid_t holder = 0;
	int ret = 0;

	if (!s->workdir && find_workdir(s))
		return -1;
	dir = log_dir_path(s);
	if (!dir)
		return 0;
	/* a run that lives is refused as such, before its options are compared */
	path = xstrfmt("%s/loop.lock", dir);
	if (gdn_lock_probe(path, &holder) == 1)
		ret = holder > 0
			  ? gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
						"another gdnctl loop (pid %ld) is running on "
						"this tree",
						(long)holder)
			  : gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
						"another gdnctl loop is running on this tree");
	free(path);
	path = xstrfmt("%s/loop.jsonl", dir);
	if (!ret && !sbuf_read_file(&sb, path, 256 * 1024 * 1024, &ignored) &&
	    !gdn_journal_parse(sb.buf, sb.len, st, &ignored) && st->run_id)
		ret = 1;
	free(dir);
	free(path);
	sbuf_release(&sb);
	return ret;
}

/* The setup from its defaults again, before the table is parsed again. */
static void restart(struct gdn_loop_setup *s)
{
	const char *cwd = s->cwd, *root = s->repo_root;
	struct gdn_config *cfg = s->cfg;

	gdn_loop_setup_release(s);
	gdn_loop_setup_init(s, cwd, root, cfg);
}

/* Parse the table from argv (after restart). */
static int parse_again(struct gdn_loop_setup *s, struct opt *opts, const struct strvec *argv)
{
	static const struct opt_usage none = {"gdnctl loop", NULL, NULL};
	struct strvec rest = STRVEC_INIT;
	struct sbuf help = SBUF_INIT;
	int ret;

	restart(s);
	ret = opt_parse(opts, &none, (int)argv->nr, argv->v, OPT_PARSE_NO_POSITIONAL, &rest, &help,
			&s->err);
	if (ret == OPT_HELP_REQUESTED)
		ret = gdn_err_set(&s->err, GDN_EUSAGE, "the run's options ask for help");
	strvec_clear(&rest);
	sbuf_release(&help);
	return ret;
}

/* "--NAME VALUE" as the command line would give the value v of row o; "" for none. */
static void option_text(struct sbuf *out, const struct opt *o, json_t *v)
{
	json_t *item;
	size_t i;

	if (json_is_boolean(v)) {
		if (json_is_true(v) || (o->flags & OPT_NEGATABLE))
			sbuf_addf(out, "--%s%s", json_is_true(v) ? "" : "no-", o->long_name);
		return;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
		{
			sbuf_addf(out, "%s--%s ", i ? " " : "", o->long_name);
			sbuf_add_shell_quoted(out, json_string_value(item));
		}
		return;
	}
	if (json_is_null(v))
		return;
	sbuf_addf(out, "--%s ", o->long_name);
	if (json_is_string(v))
		sbuf_add_shell_quoted(out, json_string_value(v));
	else if (json_is_integer(v))
		sbuf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		sbuf_addf(out, "%.17g", json_real_value(v));
}

/* "--X a contradicts the run's --X b" (or "..., which had no --X") to msg. */
static void contradiction(struct sbuf *msg, const struct opt *o, json_t *mine, json_t *theirs)
{
	struct sbuf t = SBUF_INIT;

	if (msg->len)
		sbuf_adds(msg, "; ");
	option_text(msg, o, mine);
	option_text(&t, o, theirs);
	if (t.len)
		sbuf_addf(msg, " contradicts the run's %s", t.buf);
	else
		sbuf_addf(msg, " contradicts the run, which had no --%s", o->long_name);
	sbuf_release(&t);
}

int gdn_loop_setup_resume(struct gdn_loop_setup *s, struct opt *opts, int argc, const char **argv)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct strvec jargv = STRVEC_INIT, merged = STRVEC_INIT;
	struct sbuf msg = SBUF_INIT;
	json_t *mine = json_object(), *was = json_object(), *keep = NULL, *v;
	const char *name;
	bool override = s->a.resume_override;
	int ret = 0;

	if (!s->a.resume)
		goto out;
	ret = read_run(s, &st);
	if (ret <= 0)
		goto out;
	ret = 0;
	if (!st.options) {
		strvec_pushf(&s->warnings,
			     "run %s journaled no options (an older gdnctl): it resumes with the "
			     "options of this command line",
			     st.run_id);
		goto out;
	}
	/* what this command line gives, then what the run had for the same options */
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (decision_row(o) && o->seen)
			json_object_set_new(mine, o->long_name, gdn_loop_option_value(o));
	strvec_push(&jargv, argv[0]);
	ret = gdn_loop_options_argv(opts, st.options, &jargv, &s->err);
	if (!ret)
		ret = parse_again(s, opts, &jargv);
	if (ret) {
		char *why = xstrdup(s->err.msg);

		gdn_err_set(&s->err, GDN_EUSAGE, "cannot resume run %s: %s", st.run_id, why);
		free(why);
		ret = failed_usage(s);
		goto out;
	}
	json_object_foreach(mine, name, v)
	{
		const struct opt *o = find_row(opts, name);
		json_t *theirs = gdn_loop_option_value(o);

		if (!json_equal(v, theirs)) {
			contradiction(&msg, o, v, theirs);
			json_object_set(was, name, theirs);
		}
		json_decref(theirs);
	}
	if (msg.len && !override) {
		ret = gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					  "%s (use --resume-override to change it)", msg.buf);
		goto out;
	}
	/* the run's options but those given, then the command line */
	keep = json_deep_copy(st.options);
	json_object_foreach(mine, name, v) json_object_del(keep, name);
	strvec_push(&merged, argv[0]);
	ret = gdn_loop_options_argv(opts, keep, &merged, &s->err);
	for (int i = 1; i < argc; i++)
		strvec_push(&merged, argv[i]);
	if (!ret)
		ret = parse_again(s, opts, &merged);
	if (ret) {
		ret = failed_usage(s);
		goto out;
	}
	s->resume_argv = merged;
	strvec_init(&merged);
	s->resume_run = xstrdup(st.run_id);
	if (json_object_size(was)) {
		s->overridden = json_pack("{sO}", "was", was);
	}
out:
	gdn_loop_state_release(&st);
	strvec_clear(&jargv);
	strvec_clear(&merged);
	sbuf_release(&msg);
	json_decref(mine);
	json_decref(was);
	json_decref(keep);
	return ret;
}

/*
 * Drop a torn last line (a crash during a write) from the journal at path,
 * so that the next event starts a line of its own. 0 or -1 (errno).
 */
static int drop_torn_line(const char *path)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err ignored = GDN_ERR_INIT;
	const char *nl;
	int ret = 0;

	if (!sbuf_read_file(&sb, path, 256 * 1024 * 1024, &ignored) && sb.len &&
	    sb.buf[sb.len - 1] != '\n') {
		nl = memrchr(sb.buf, '\n', sb.len);
		ret = truncate(path, nl ? (off_t)(nl - sb.buf) + 1 : 0);
	}
	sbuf_release(&sb);
	return ret;
}

int gdn_loop_setup_journal_override(struct gdn_loop_setup *s)
{
	struct gdn_journal j = GDN_JOURNAL_INIT;
	json_t *was = json_object_get(s->overridden, "was"), *now, *v;
	const char *name;
	int ret;

	if (!s->overridden || !s->resume_run)
		return 0;
	ret = gdn_journal_open(&j, s->log_dir, s->resume_run, &s->err);
	if (!ret && drop_torn_line(j.path))
		ret = gdn_err_errno(&s->err, GDN_EIO, "cannot truncate journal '%s'", j.path);
	if (!ret) {
		now = json_object();
		json_object_foreach(was, name, v)
		{
			json_t *n = json_object_get(s->options, name);

			json_object_set(now, name, n ? n : json_null());
		}
		ret = gdn_journal_write(&j, "resume_override",
					json_pack("{sosO}", "options", now, "was", was), &s->err);
	}
	gdn_journal_close(&j);
	return ret ? failed(s, GDN_SETUP_ERROR) : 0;
}

/* ---- check ---- */

/* "2026-11-21T18:00:00Z" (UTC) or "+DURATION" from now. Returns 0 or -1. */
static int parse_until(const char *s, time_t *out)
{
	struct tm tm = {0};
	const char *end;
	long ms;

	if (s[0] == '+') {
		if (opt_parse_duration_ms(s + 1, &ms))
			return -1;
		*out = time(NULL) + ms / 1000;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M", &tm);
	if (end && *end == ':')
		end = strptime(end, ":%S", &tm);
	if (!end || strcmp(end, "Z"))
		return -1;
	*out = timegm(&tm);
	return 0;
}

/* The original's --resilient preset (without the validation/perf items: the gate is off). */
static void apply_resilient(struct gdn_loop_args *a)
{
	if (a->max_failures >= 0)
		a->max_failures = -1;
	if (a->dirty_policy == GDN_DIRTY_FAIL)
		a->dirty_policy = GDN_DIRTY_STASH;
	if (a->no_commit_policy == GDN_POLICY_FAIL)
		a->no_commit_policy = GDN_POLICY_COUNT_FAILURE;
	if (a->post_check_policy == GDN_POLICY_FAIL)
		a->post_check_policy = GDN_POLICY_COUNT_FAILURE;
	if (a->iteration_error_policy == GDN_POLICY_FAIL)
		a->iteration_error_policy = GDN_POLICY_COUNT_FAILURE;
	if (a->sync_conflict == GDN_SYNC_CONFLICT_FAIL)
		a->sync_conflict = GDN_SYNC_CONFLICT_SKIP;
	a->restore_policy = GDN_RESTORE_WARN_KEEP;
	if (a->codex_retries < 2)
		a->codex_retries = 2;
	if (a->post_check_retries < 2)
		a->post_check_retries = 2;
}

/* The original's startup checks (exit 1, exact messages). */
static const char *validate(const struct gdn_loop_args *a)
{
	if (a->codex_retries < 0)
		return "--codex-retries must be >= 0.";
	if (a->post_check_retries < 0)
		return "--post-check-retries must be >= 0.";
	if (a->retry_sleep < 0)
		return "--retry-sleep-seconds must be >= 0.";
	if (!(a->codex_timeout > 0))
		return "--codex-timeout-seconds must be > 0 when set.";
	if (!(a->codex_idle_timeout > 0))
		return "--codex-idle-timeout-seconds must be > 0 when set.";
	if (a->sync_policy != GDN_SYNC_OFF && !*a->sync_remote)
		return "--sync-main-remote must be non-empty.";
	if (a->sync_policy != GDN_SYNC_OFF && !*a->sync_branch)
		return "--sync-main-branch must be non-empty.";
	if (a->sleep_seconds < 0)
		return "--sleep-seconds must be >= 0.";
	if (a->max_agent_minutes < 0)
		return "--max-agent-minutes must be >= 0.";
	if (a->stop_after_failures < 0)
		return "--stop-after-failures must be >= 0.";
	if (a->max_tokens < 0)
		return "--max-tokens must be >= 0.";
	if (a->max_tokens_per_hour < 0)
		return "--max-tokens-per-hour must be >= 0.";
	if (a->max_cost_usd < 0)
		return "--max-cost-usd must be >= 0.";
	return NULL;
}

/*
 * --workers (else loop.workers), --worktree-dir and the number of
 * --backend: once (shared by the workers) or once per worker.
 */
static int check_workers(struct gdn_loop_setup *s, const struct opt *opts)
{
	struct gdn_loop_args *a = &s->a;
	bool given = opt_seen(opts, "workers");
	const struct gdn_cfg_value *v = given ? NULL : gdn_config_get(s->cfg, "loop.workers");
	const char *what = v && v->source != GDN_SRC_DEFAULT ? "loop.workers" : "--workers";

	if (!given) {
		long long n = gdn_config_int(s->cfg, "loop.workers", 1);

		if (n < 1 || n > LONG_MAX)
			return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG,
						   "%s: loop.workers: %lld is out of range 1..",
						   v && v->origin ? v->origin : "config", n);
		a->workers = (long)n;
		if (a->workers > 1) /* the run keeps its workers (--resume) */
			json_object_set_new(s->options, "workers", json_integer(a->workers));
	} else if (a->workers < 1) {
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "option '--workers': %ld is out of range 1..",
					   a->workers);
	}
	if (a->workers > 1 && a->isolation != GDN_ISOLATION_WORKTREE)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "%s %ld needs --isolation worktree (a worktree per "
					   "worker), not --isolation %s",
					   what, a->workers,
					   gdn_enum_name(gdn_isolation_enum, a->isolation));
	if (a->worktree_dir && a->workers == 1)
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--worktree-dir needs --workers N > 1 (one agent works in "
		    "<log dir>/worktree)");
	if (a->backends.nr > 1 && (long)a->backends.nr != a->workers)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--backend given %zu times with %s %ld: give it once "
					   "(shared by the workers) or once per worker",
					   a->backends.nr, what, a->workers);
	a->backend = a->backends.nr ? a->backends.v[0] : NULL;
	return 0;
}

const struct gdn_loop_config_option gdn_loop_config_options[] = {
    {"loop.validation_mode", "validation-mode"},
    {"loop.perf.mode", "perf-mode"},
    {"loop.perf.metric", "perf-metric"},
    {"loop.perf.direction", "perf-direction"},
    {"loop.perf.min_improvement_pct", "perf-min-improvement-pct"},
    {"loop.perf.max_regression_pct", "perf-max-regression-pct"},
    {"loop.perf.repeats", "perf-repeats"},
    {NULL, NULL},
};

static void set_from(struct gdn_loop_setup *s, const char *option, const char *why)
{
	json_object_set_new(s->from, option, json_string(why));
}

/*
 * The loop.* keys (gdnctl.yaml, the user's file, GDNCTL_LOOP_*, -c) for the
 * options argv does not give, journaled with the run's options; then the
 * validation gate's default: on with a test command (not for codex-loop,
 * which keeps the original's defaults). A resumed run keeps its options.
 */
static int apply_config(struct gdn_loop_setup *s, const struct opt *opts)
{
	const struct gdn_loop_config_option *c;

	for (c = gdn_loop_config_options; c->key; c++) {
		const struct gdn_cfg_value *v = gdn_config_get(s->cfg, c->key);
		const struct opt *o = find_row(opts, c->option);
		struct gdn_err e = GDN_ERR_INIT;
		char *given;

		if (!o)
			BUG("no option '--%s' for %s", c->option, c->key);
		if (o->seen) {
			given = xstrfmt("--%s", c->option);
			set_from(s, c->option, given);
			free(given);
			continue;
		}
		if (s->resume_run || !v || v->source == GDN_SRC_DEFAULT || !v->str)
			continue;
		if (opt_set(opts, c->option, v->str, &e))
			return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG, "%s: %s: %s",
						   v->origin ? v->origin : "config", c->key, e.msg);
		set_from(s, c->option, v->origin ? v->origin : c->key);
		json_object_set_new(s->options, c->option, gdn_loop_option_value(o));
	}
	if (!json_object_get(s->from, "validation-mode") && !s->original && !s->resume_run &&
	    nonempty(gdn_config_str(s->cfg, "project.test_command"))) {
		s->a.validation_mode = GDN_GATE_REQUIRED;
		set_from(s, "validation-mode", "project.test_command");
		json_object_set_new(s->options, "validation-mode", json_string("required"));
	}
	return 0;
}

int gdn_loop_setup_check(struct gdn_loop_setup *s, const struct opt *opts)
{
	struct gdn_loop_args *a = &s->a;
	const char *msg;

	json_decref(s->options);
	s->options = gdn_loop_options_json(opts);
	json_object_clear(s->from);
	if (apply_config(s, opts))
		return -1;
	if (a->resume_override && !a->resume)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--resume-override needs --resume");
	if (a->iterations <= 0 && !a->resume && !opt_seen(opts, "iterations"))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "option '--iterations' is required (or --resume)");
	if (a->iterations < 1 && opt_seen(opts, "iterations"))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "option '--iterations': %ld is out of range 1..",
					   a->iterations);
	/* --agent-cmd names the command driver's program: it implies --agent command */
	if (a->agent_cmd && !opt_seen(opts, "agent"))
		a->agent = "command";
	else if (a->agent_cmd && !gdn_agent_find(a->agent)->needs_command)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--agent-cmd runs a command of your own, which is "
					   "--agent command; --agent %s does not take it",
					   a->agent);
	if (gdn_agent_find(a->agent)->needs_command && !a->agent_cmd)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--agent %s needs --agent-cmd", a->agent);
	if (check_workers(s, opts))
		return -1;
	if (a->resilient)
		apply_resilient(a);
	msg = validate(a);
	if (!msg)
		msg = gdn_loop_where_check(&s->w, opts);
	if (msg)
		return gdn_loop_setup_fail(s, GDN_SETUP_PLAIN, GDN_EUSAGE, "%s", msg);
	s->lo.until_time = 0;
	if (a->until_time && parse_until(a->until_time, &s->lo.until_time))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--until-time: expected YYYY-MM-DDTHH:MM[:SS]Z or +DURATION, got '%s'",
		    a->until_time);
	if (a->until_time && a->until_time[0] == '+') {
		/* the run keeps the time it stops at, not a time from when it resumes */
		char when[32];
		struct tm tm;

		gmtime_r(&s->lo.until_time, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_object_set_new(s->options, "until-time", json_string(when));
	}
	return 0;
}

/* ---- paths ---- */

static const char *const *data_dirs(const char *workdir, const char **buf)
{
	buf[0] = workdir;
	buf[1] = GDNCTL_DATADIR;
	buf[2] = GDNCTL_SOURCE_DATADIR;
	buf[3] = NULL;
	return buf;
}

/*
 * Where --directive-preset NAME is looked for, in order: project.directives_dir,
 * the Marin checkout's scripts/gdn/session_directives, the working tree's
 * session_directives, then the installed (and the source tree's) ones.
 */
static void preset_dirs(const struct gdn_loop_setup *s, struct strvec *dirs)
{
	char *cfg = gdn_config_path(s->cfg, "project.directives_dir", s->workdir);

	if (cfg)
		strvec_push(dirs, cfg);
	free(cfg);
	strvec_pushf(dirs, "%s/%s", s->workdir, GDN_MARIN_DIRECTIVES_DIR);
	strvec_pushf(dirs, "%s/session_directives", s->workdir);
	strvec_pushf(dirs, "%s/session_directives", GDNCTL_DATADIR);
	strvec_pushf(dirs, "%s/session_directives", GDNCTL_SOURCE_DATADIR);
}

/* --directive-preset NAME: its file (a new string), or -1 with a usage error. */
static int find_preset(struct gdn_loop_setup *s, const struct strvec *dirs, const char *name,
		       char **path)
{
	struct strvec names = STRVEC_INIT;
	struct sbuf list = SBUF_INIT;
	char *rel;
	int ret;

	*path = NULL;
	if (gdn_prompt_preset_name_ok(name)) {
		rel = xstrfmt("%s.md", name);
		*path = gdn_prompt_find(dirs->v, rel);
		free(rel);
		if (*path)
			return 0;
	}
	gdn_prompt_list_presets(dirs->v, &names);
	for (size_t i = 0; i < names.nr; i++)
		sbuf_addf(&list, "%s%s", i ? ", " : "", names.v[i]);
	if (names.nr)
		ret = gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "option '--directive-preset': invalid choice '%s' (choose from %s)", name,
		    list.buf);
	else
		ret = gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					  "option '--directive-preset': no presets in %s/%s or "
					  "session_directives/ (nor project.directives_dir)",
					  s->workdir, GDN_MARIN_DIRECTIVES_DIR);
	strvec_clear(&names);
	sbuf_release(&list);
	return ret;
}

/*
 * The session directives, in the original's order: each preset, each
 * --directive-file (relative to the working tree, the original's
 * repository root), each non-empty --directive.
 */
static int load_directives(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct strvec dirs = STRVEC_INIT;
	int ret = 0;

	preset_dirs(s, &dirs);
	for (size_t i = 0; i < a->presets.nr && !ret; i++) {
		char *source = xstrfmt("preset %s", a->presets.v[i]);
		char *path = NULL;

		ret = find_preset(s, &dirs, a->presets.v[i], &path);
		if (!ret && gdn_prompt_add_directive_file(&s->directives, path, source, &s->err))
			ret = failed_directive(s);
		free(path);
		free(source);
	}
	for (size_t i = 0; i < a->directive_files.nr && !ret; i++) {
		char *path = abspath(s->workdir, a->directive_files.v[i]);

		if (gdn_prompt_add_directive_file(&s->directives, path, a->directive_files.v[i],
						  &s->err))
			ret = failed_directive(s);
		free(path);
	}
	for (size_t i = 0; i < a->directives.nr && !ret; i++) {
		struct sbuf sb = SBUF_INIT;

		sbuf_adds(&sb, a->directives.v[i]);
		sbuf_trim(&sb);
		if (sb.len)
			strvec_push(&s->directives, sb.buf);
		sbuf_release(&sb);
	}
	strvec_clear(&dirs);
	return ret;
}

/*
 * The prompt template without --prompt-file: project.prompt_file, else the
 * Marin checkout's scripts/gdn/codex_iteration_prompt.md, else
 * prompts/iteration.md in the working tree, else the installed one.
 */
static int default_prompt(struct gdn_loop_setup *s)
{
	const char *dirs[4];
	char *path = gdn_config_path(s->cfg, "project.prompt_file", s->workdir);

	if (path) {
		const struct gdn_cfg_value *v = gdn_config_get(s->cfg, "project.prompt_file");

		s->prompt_path = path;
		if (access(path, R_OK))
			return gdn_loop_setup_fail(
			    s, GDN_SETUP_ERROR, GDN_ECONFIG, "%s: project.prompt_file '%s': %s",
			    v && v->origin ? v->origin : "config", path, strerror(errno));
		return 0;
	}
	path = xstrfmt("%s/%s", s->workdir, GDN_MARIN_PROMPT);
	if (!access(path, R_OK)) {
		s->prompt_path = path;
		return 0;
	}
	free(path);
	s->prompt_path = gdn_prompt_find(data_dirs(s->workdir, dirs), "prompts/iteration.md");
	if (!s->prompt_path)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
					   "no prompt template: pass --prompt-file (looked for "
					   "%s and prompts/iteration.md in '%s', '%s', '%s')",
					   GDN_MARIN_PROMPT, s->workdir, GDNCTL_DATADIR,
					   GDNCTL_SOURCE_DATADIR);
	return 0;
}

/* The working tree: --workdir, else the repository. */
static int find_workdir(struct gdn_loop_setup *s)
{
	char *p;

	if (!s->a.workdir) {
		if (!s->repo_root)
			return gdn_loop_setup_fail(
			    s, GDN_SETUP_ERROR, GDN_EUSAGE,
			    "not inside a git repository: '%s' (use --workdir)", s->cwd);
		s->workdir = xstrdup(s->repo_root);
		return 0;
	}
	p = abspath(s->cwd, s->a.workdir);
	s->workdir = realpath(p, NULL);
	free(p);
	if (!s->workdir)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "cannot use --workdir '%s': %s", s->a.workdir,
					   strerror(errno));
	return 0;
}

/* mkdir -p the log dir. */
static int make_log_dir(struct gdn_loop_setup *s)
{
	char *log_dir = s->log_dir;
	struct stat st;

	if (gdn_mkdir_p(log_dir, 0755, NULL) || stat(log_dir, &st) || !S_ISDIR(st.st_mode))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
					   "cannot create log directory '%s': %s", log_dir,
					   strerror(errno));
	return 0;
}

/*
 * Where the agent and the gate work: the checkout in place; with
 * --isolation worktree the engine's worktree under the log dir, the
 * running log's path moved into it.
 */
static int agent_dir(struct gdn_loop_setup *s)
{
	size_t n = strlen(s->workdir);
	char *p = NULL;

	if (s->a.isolation != GDN_ISOLATION_WORKTREE) {
		s->agent_dir = xstrdup(s->workdir);
		return 0;
	}
	if (gdn_repo_discover(s->workdir, &p, NULL) || !p || strcmp(p, s->workdir)) {
		free(p);
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--isolation worktree needs the top of a git "
					   "repository as the working tree ('%s' is not); use "
					   "--isolation in-place",
					   s->workdir);
	}
	free(p);
	s->agent_dir = xstrfmt("%s/worktree", s->log_dir);
	if (s->hlog && !strncmp(s->hlog, s->workdir, n) && s->hlog[n] == '/') {
		p = xstrfmt("%s%s", s->agent_dir, s->hlog + n);
		free(s->hlog);
		s->hlog = p;
	}
	return 0;
}

/*
 * A dirty tree that the iterations would refuse (no --allow-dirty, --dirty-policy
 * fail) is refused before the run starts (codex-loop: in iteration 1, an
 * iteration error, as the original). Not on --resume: the engine knows
 * what an interrupted iteration left. A tree git cannot read is the engine's.
 */
static int check_clean(struct gdn_loop_setup *s)
{
	struct gdn_err ignored = GDN_ERR_INIT;
	bool dirty = false;

	if (s->original || s->a.isolation == GDN_ISOLATION_WORKTREE || s->a.allow_dirty ||
	    s->a.resume || s->a.dirty_policy != GDN_DIRTY_FAIL)
		return 0;
	if (gdn_repo_dirty_at(s->workdir, &dirty, &ignored) || !dirty)
		return 0;
	return gdn_loop_setup_fail(
	    s, GDN_SETUP_ERROR, GDN_EUSAGE,
	    "the working tree '%s' is dirty: commit or stash the changes, or "
	    "rerun with --allow-dirty or --dirty-policy stash",
	    s->workdir);
}

/*
 * --resume with the default log dir, which holds no journal, while the
 * old default inside the tree does (a run of an earlier gdnctl): say where
 * it is rather than "nothing to resume".
 */
static int legacy_journal(struct gdn_loop_setup *s)
{
	char *now = xstrfmt("%s/loop.jsonl", s->log_dir);
	char *old = xstrfmt("%s/" GDN_LOOP_LEGACY_LOG_DIR "/loop.jsonl", s->workdir);
	int ret = 0;

	if (access(now, F_OK) && !access(old, F_OK))
		ret = gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ENOTFOUND,
					  "nothing to resume: no journal at '%s' (the journal of "
					  "a run of an earlier gdnctl is at '%s': pass --log-dir "
					  "'%s/" GDN_LOOP_LEGACY_LOG_DIR "')",
					  now, old, s->workdir);
	free(now);
	free(old);
	return ret;
}

/* Take one of the run's locks; refused: "another gdnctl loop (pid N) ...". */
static int take_lock(struct gdn_loop_setup *s, struct gdn_lock *l, const char *path)
{
	struct gdn_err e = GDN_ERR_INIT;
	pid_t holder = 0;
	int ret = gdn_lock_take(l, path, &holder, &e);

	if (ret == GDN_EFAILED && holder > 0)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
					   "another gdnctl loop (pid %ld) is running on this tree",
					   (long)holder);
	if (ret == GDN_EFAILED)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EFAILED,
					   "another gdnctl loop is running on this tree (%s)",
					   e.msg);
	if (ret) {
		s->err = e;
		return failed(s, GDN_SETUP_ERROR);
	}
	return 0;
}

/*
 * One run per tree, for the whole run: the repository's lock (any log
 * dir, any worktree), then the log dir's (any repository using it).
 */
static int lock_run(struct gdn_loop_setup *s)
{
	struct gdn_err e = GDN_ERR_INIT;
	char *common = gdn_loop_common_dir(s->workdir, &e), *path = NULL;
	int ret = 0;

	/* not a repository: the engine says so when it opens it */
	if (common) {
		path = xstrfmt("%s/gdnctl.lock", common);
		ret = take_lock(s, &s->repo_lock, path);
		free(path);
	}
	if (!ret) {
		path = xstrfmt("%s/loop.lock", s->log_dir);
		ret = take_lock(s, &s->dir_lock, path);
		free(path);
	}
	free(common);
	return ret;
}

/*
 * The running log: --hillclimb-log-file, else log_file when configured, else
 * its default (Marin's running log) in a Marin checkout only; elsewhere none.
 */
static void running_log(struct gdn_loop_setup *s)
{
	const struct gdn_cfg_value *v = gdn_config_get(s->cfg, "log_file");

	s->hlog_why = NULL;
	if (s->a.hillclimb_log) {
		s->hlog = abspath(s->cwd, s->a.hillclimb_log);
		return;
	}
	if ((v && v->source != GDN_SRC_DEFAULT) || gdn_marin_checkout(s->workdir))
		s->hlog = gdn_config_path(s->cfg, "log_file", s->workdir);
	if (!s->hlog)
		s->hlog_why = v && v->source != GDN_SRC_DEFAULT
				  ? "log_file is set empty"
				  : "not a Marin checkout, and no log_file configured";
}

int gdn_loop_setup_paths(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;

	/* the working tree, then everything in it (docs/compatibility.md: one tree for all) */
	free(s->workdir);
	s->workdir = NULL;
	if (find_workdir(s))
		return -1;
	s->log_dir = a->log_dir ? abspath(s->cwd, a->log_dir)
				: gdn_loop_default_log_dir(s->workdir, NULL, &s->err);
	if (!s->log_dir)
		return failed(s, GDN_SETUP_ERROR);
	if (a->resume && !a->log_dir && legacy_journal(s))
		return -1;
	if (a->worktree_dir)
		s->worktree_dir = abspath(s->cwd, a->worktree_dir);
	running_log(s);
	if (a->prompt_file)
		s->prompt_path = abspath(s->cwd, a->prompt_file);
	else if (default_prompt(s))
		return -1;
	if (sbuf_read_file(&s->tmpl, s->prompt_path, 16 * 1024 * 1024, &s->err)) {
		if (a->prompt_file && s->err.code == GDN_ENOTFOUND)
			s->err.code = GDN_EUSAGE; /* a file named on the command line */
		return failed(s, GDN_SETUP_PLAIN);
	}
	if (load_directives(s))
		return -1;
	if (agent_dir(s) || check_clean(s))
		return -1;
	if (a->dry_run)
		return 0;
	if (make_log_dir(s))
		return -1;
	gdn_proc_set_subreaper();
	return lock_run(s);
}

/* ---- agent ---- */

int gdn_loop_setup_agent(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	const struct gdn_agent_info *info = gdn_agent_find(a->agent);
	struct gdn_agent_opts ao = {0};

	ao.driver = a->agent;
	ao.bin = a->codex_bin;
	ao.command = a->agent_cmd;
	ao.model = a->model ? (*a->model ? a->model : NULL) : info->default_model;
	ao.reasoning_effort = a->reasoning_effort
				  ? (*a->reasoning_effort ? a->reasoning_effort : NULL)
				  : info->default_effort;
	ao.profile = a->codex_profile;
	ao.search = a->search;
	ao.ephemeral = a->ephemeral;
	ao.show_file_updates = a->show_file_updates;
	ao.timeout_ms =
	    a->agent_timeout_ms >= 0 ? a->agent_timeout_ms : (long)(a->codex_timeout * 1000.0);
	ao.idle_timeout_ms = a->agent_idle_timeout_ms >= 0 ? a->agent_idle_timeout_ms
							   : (long)(a->codex_idle_timeout * 1000.0);
	ao.kill_grace_ms = a->kill_grace_ms;
	if (gdn_agent_open(&ao, &s->agent, &s->warnings, &s->err)) {
		if (s->err.code == GDN_ENOTFOUND) /* the agent's program is missing */
			s->err.code = GDN_EBACKEND;
		return failed(s, GDN_SETUP_ERROR);
	}
	return 0;
}

/* ---- validation and the performance policy ---- */

/*
 * The Marin defaults (marin_gate.h): a phase without its project.* command
 * runs the original's when validation runs on Marin targets (a held dev
 * TPU, Ray fallback clusters). The profile values are checked even when
 * unused, as the original did at startup.
 */
static int marin_defaults(struct gdn_loop_setup *s)
{
	struct gdn_loop_where *w = &s->w;
	enum gdn_gate_mode mode = s->gate.mode;
	struct gdn_marin_gate all;
	bool marin = w->hold || w->clusters.nr || w->auto_clusters;

	w->mg.p.tpu = w->profile_tpu;
	w->mg.p.all_transformer = w->all_transformer;
	w->mg.p.extra = (const char *const *)w->profile_env.v;
	w->mg.dry_run = w->profile_dry_run;
	w->mg.repo = s->agent_dir;
	w->mg.tests = marin && mode == GDN_GATE_REQUIRED &&
		      !nonempty(gdn_config_str(s->cfg, "project.test_command"));
	w->mg.profile = marin && (mode != GDN_GATE_OFF || s->a.perf_on) &&
			!nonempty(gdn_config_str(s->cfg, "project.profile_command"));
	all = w->mg;
	all.tests = all.profile = true;
	if (gdn_marin_gate_check(&all, &s->err))
		return failed(s, GDN_SETUP_PLAIN);
	return 0;
}

/* The W&B source and --log-measurements. */
static int setup_measure(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_measure_opts *mo = &s->mo;

	mo->source = (enum gdn_measure_source)a->perf_source;
	if (!gdn_measure_source_takes(mo->source, s->pc.metric))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-source %s does not go with --perf-metric %s (trace/... "
		    "metrics come from the trace)",
		    gdn_enum_name(gdn_measure_source_enum, a->perf_source), s->pc.metric);
	if (a->perf_step_end < a->perf_step_start)
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-history-step-end must be >= --perf-history-step-start");
	mo->history = a->perf_history;
	mo->window.step_min = a->perf_step_start;
	mo->window.step_max = a->perf_step_end;
	mo->window.agg = (enum gdn_agg)a->perf_history_agg;
	mo->window.min_points = (size_t)a->perf_min_points;
	mo->entity = a->perf_wandb_entity;
	mo->project = a->perf_wandb_project;
	mo->run_prefix = nonempty(a->perf_wandb_prefix) ? a->perf_wandb_prefix : NULL;
	mo->http.retries = (int)a->perf_wandb_retries;
	mo->fetch_timeout_ms = a->perf_wandb_timeout_ms;
	mo->log_trace_deltas = 3;
	if (a->log_measurements) {
		if (!s->hlog)
			return gdn_loop_setup_fail(
			    s, GDN_SETUP_ERROR, GDN_EUSAGE,
			    "--log-measurements needs a running log (--hillclimb-log-file "
			    "or log_file)");
		mo->log_file = s->hlog;
	}
	if (s->w.mg.profile && !nonempty(a->perf_wandb_prefix)) {
		s->wandb_prefix = gdn_marin_gate_wandb_prefix(&s->w.mg);
		mo->run_prefix = s->wandb_prefix;
	}
	if (s->w.mg.profile && strcmp(s->w.mg.p.wandb_mode, "online")) {
		/* the original fetched W&B metrics only for online runs */
		if (mo->source == GDN_MEASURE_WANDB)
			return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
						   "--perf-source wandb needs "
						   "--validation-profile-wandb-mode online");
		if (mo->source == GDN_MEASURE_AUTO)
			mo->source = GDN_MEASURE_CLI;
	}
	return 0;
}

/* project.trace_source: where each profile run's trace comes from (trace_source.c). */
static int setup_trace_source(struct gdn_loop_setup *s)
{
	struct gdn_trace_source *ts = &s->ts;
	const char *mode = gdn_config_str(s->cfg, "project.trace_source");
	int m = GDN_TRACE_SRC_AUTO;

	if (nonempty(mode) && gdn_enum_parse(gdn_trace_source_enum, mode, &m))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG,
					   "project.trace_source '%s' is not one of auto, local, "
					   "backend, wandb, gcs, none",
					   mode);
	ts->mode = (enum gdn_trace_source_mode)m;
	ts->trace_glob = s->gate.trace_glob;
	ts->workdir = s->agent_dir;
	ts->keep_local = s->a.isolation == GDN_ISOLATION_WORKTREE;
	ts->log_dir = s->log_dir;
	ts->wandb_base_url = s->mo.base_url ? s->mo.base_url : getenv("WANDB_BASE_URL");
	ts->fetch_timeout_ms = s->mo.fetch_timeout_ms;
	ts->expected = gdn_perf_is_trace_metric(s->pc.metric) || nonempty(ts->trace_glob);
	s->gate.trace_source = ts;
	/*
	 * A trace metric needs a trace: from project.trace_glob, from what the
	 * profile prints (project.trace_source gcs or wandb), or the Marin
	 * profile's W&B run. Without any, every sample would be unscored.
	 */
	if (gdn_perf_is_trace_metric(s->pc.metric) &&
	    (ts->mode == GDN_TRACE_SRC_NONE ||
	     (!nonempty(ts->trace_glob) && !s->w.mg.profile &&
	      (ts->mode == GDN_TRACE_SRC_AUTO || ts->mode == GDN_TRACE_SRC_LOCAL ||
	       ts->mode == GDN_TRACE_SRC_BACKEND))))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-metric %s is read from the profile's trace, and %s: set "
		    "project.trace_glob (where the profile writes its trace) or "
		    "project.trace_source "
		    "(gcs, wandb)",
		    s->pc.metric,
		    ts->mode == GDN_TRACE_SRC_NONE ? "project.trace_source is none"
						   : "no project.trace_glob says where it is");
	return 0;
}

/* --perf-mode on: the policy's configuration, its state file and the metric source. */
static int setup_policy(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_perf_config *pc = &s->pc;
	char *spath;
	int ret;

	if (!s->w.mg.profile && !nonempty(gdn_config_str(s->cfg, "project.profile_command")))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-mode on needs project.profile_command in the configuration "
		    "(or Marin targets: " MARIN_TARGETS ")");
	{
		const char *ts = gdn_config_str(s->cfg, "project.trace_source");
		/* --perf-source cli or wandb: that source's value, never the trace */
		bool trace = a->perf_source == GDN_MEASURE_AUTO &&
			     (nonempty(gdn_config_str(s->cfg, "project.trace_glob")) ||
			      (nonempty(ts) && strcmp(ts, "none") && strcmp(ts, "auto")));

		bool decide;

		pc->metric = gdn_perf_ruler(a->perf_metric,
					    s->w.mg.profile || gdn_marin_checkout(s->agent_dir),
					    trace, &decide, &s->ruler_why);
		s->gate.ruler_auto = decide ? pc : NULL;
	}
	pc->direction = (enum gdn_perf_direction)a->perf_direction;
	s->direction_why = NULL;
	if (pc->direction == GDN_PERF_AUTO) {
		/* never a guess: a name that says neither a time nor a rate is refused */
		pc->direction = gdn_perf_direction_classify(pc->metric, &s->direction_why);
		if (pc->direction == GDN_PERF_AUTO)
			return gdn_loop_setup_fail(
			    s, GDN_SETUP_ERROR, GDN_EUSAGE,
			    "--perf-direction auto cannot tell from the name of --perf-metric '%s' "
			    "whether higher or lower is better: pass --perf-direction higher or "
			    "--perf-direction lower (or set loop.perf.direction)",
			    pc->metric);
	}
	pc->policy = (enum gdn_perf_policy)a->perf_policy;
	pc->within_policy = (enum gdn_perf_within)a->perf_within;
	pc->repeat_stat = (enum gdn_perf_stat)a->perf_stat;
	pc->min_improvement_pct = a->perf_min_improvement;
	pc->max_regression_pct = a->perf_max_regression;
	pc->min_confidence = a->perf_min_confidence;
	for (size_t i = 0; i < a->perf_gates.nr; i++)
		if (gdn_perf_gate_parse(&pc->gates, a->perf_gates.v[i], &s->err))
			return failed_usage(s);
	if (!a->perf_gates.nr)
		gdn_perf_gates_add_defaults(&pc->gates);
	if (gdn_perf_config_check(pc, &s->err))
		return failed_usage(s);
	spath = a->perf_state_file ? abspath(s->cwd, a->perf_state_file)
				   : xstrfmt("%s/perf_state.json", s->log_dir);
	ret = gdn_perf_state_load(&s->ps, spath, &s->err);
	free(spath);
	if (ret)
		return failed(s, GDN_SETUP_ERROR);
	s->gate.perf_config = pc;
	s->gate.perf_state = &s->ps;
	s->gate.perf_repeats = a->perf_repeats;
	if (!(a->perf_confidence > 0 && a->perf_confidence < 1))
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--perf-confidence must lie between 0 and 1");
	s->gate.perf_ab = a->perf_ab < 0 ? a->perf_repeats > 1 : a->perf_ab > 0;
	s->gate.perf_max_repeats =
	    a->perf_max_repeats > 0 ? a->perf_max_repeats : 4 * a->perf_repeats;
	s->gate.perf_confidence = a->perf_confidence;
	s->gate.log_dir = s->log_dir;
	s->gate.trace_glob = gdn_config_str(s->cfg, "project.trace_glob");
	if (setup_measure(s) || setup_trace_source(s))
		return -1;
	s->gate.measure = &s->mo;
	return 0;
}

/*
 * The protected paths (globs): --protect, else project.protected_paths,
 * else in a Marin checkout the GDN test files and the profile harness the
 * gate runs. An iteration that changes one is reverted, not validated.
 */
static void setup_protected(struct gdn_loop_setup *s)
{
	const struct strvec *cfg = gdn_config_list(s->cfg, "project.protected_paths");
	static const char *const marin[] = {GDN_MARIN_PROTECTED, NULL};

	strvec_clear(&s->protected_paths);
	if (s->a.protect.nr)
		strvec_pushv(&s->protected_paths, s->a.protect.v);
	else if (cfg && cfg->nr)
		strvec_pushv(&s->protected_paths, cfg->v);
	s->protect_explicit = s->protected_paths.nr > 0;
	if (!s->protected_paths.nr && gdn_marin_checkout(s->agent_dir))
		strvec_pushv(&s->protected_paths, marin);
	s->gate.protected_paths = &s->protected_paths;
}

int gdn_loop_setup_perf(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	const struct gdn_marin_gate *mg = &s->w.mg;

	s->gate.mode = (enum gdn_gate_mode)a->validation_mode;
	if (marin_defaults(s))
		return -1;
	if (s->gate.mode == GDN_GATE_REQUIRED && !mg->tests &&
	    !nonempty(gdn_config_str(s->cfg, "project.test_command")))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--validation-mode required needs project.test_command in the "
		    "configuration (or Marin targets: " MARIN_TARGETS ")");
	if (s->gate.mode == GDN_GATE_PROFILE_ONLY && !mg->profile &&
	    !nonempty(gdn_config_str(s->cfg, "project.profile_command")))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--validation-mode profile-only needs project.profile_command in the "
		    "configuration (or Marin targets: " MARIN_TARGETS ")");
	if (!a->perf_on && a->log_measurements)
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--log-measurements needs --perf-mode on (it logs the measured "
		    "figures)");
	setup_protected(s);
	/* integrity gate (issue 28) */
	if (gdn_integrity_configure(&s->integrity_cfg, s->cfg, s->repo_root, s->agent_dir, &s->err))
		return failed(s, GDN_SETUP_ERROR);
	if (s->integrity_cfg.on && !a->perf_on)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG,
					   "integrity.mode on needs --perf-mode on (it checks "
					   "the candidates the performance policy keeps)");
	s->integrity.c = &s->integrity_cfg;
	s->gate.integrity = s->integrity_cfg.on ? &s->integrity : NULL;
	s->gate_on = s->gate.mode != GDN_GATE_OFF || a->perf_on || s->protect_explicit;
	for (size_t i = 0; i < a->backends.nr; i++) {
		/* a name that does not exist is refused even when unused */
		struct gdn_backend *b = NULL;
		int ret = gdn_backend_open(s->cfg, a->backends.v[i], &b, &s->err);

		gdn_backend_free(b);
		if (ret)
			return failed_backend(s);
	}
	return a->perf_on ? setup_policy(s) : 0;
}

/* ---- the engine's options ---- */

void gdn_loop_setup_opts(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_loop_opts *lo = &s->lo;

	lo->workdir = s->agent_dir;
	lo->user_workdir = s->workdir;
	lo->isolation = (enum gdn_isolation)a->isolation;
	lo->workers = a->workers;
	lo->worktree_dir = s->worktree_dir;
	lo->branch = a->loop_branch;
	lo->agent_failure_commits = (enum gdn_agent_failure_commits)a->agent_failure_commits;
	lo->options = s->options;
	lo->log_dir = s->log_dir;
	lo->prompt_template = s->tmpl.buf;
	lo->directives = &s->directives;
	lo->hillclimb_log = s->hlog;
	lo->iterations = a->iterations;
	lo->sleep_ms = (long)(a->sleep_seconds * 1000.0);
	lo->post_checks = &a->post_checks;
	lo->post_check_policy = (enum gdn_loop_policy)a->post_check_policy;
	lo->no_commit_policy = (enum gdn_loop_policy)a->no_commit_policy;
	lo->iteration_error_policy = (enum gdn_loop_policy)a->iteration_error_policy;
	lo->max_failures = a->max_failures;
	lo->agent_retries = a->codex_retries;
	lo->post_check_retries = a->post_check_retries;
	lo->retry_sleep_ms = (long)(a->retry_sleep * 1000.0);
	lo->allow_dirty = a->allow_dirty;
	lo->original_exit_codes = s->original;
	lo->allow_no_commit = a->allow_no_commit;
	lo->dirty_policy = (enum gdn_dirty_policy)a->dirty_policy;
	lo->restore_policy = (enum gdn_restore_policy)a->restore_policy;
	lo->sync_policy = (enum gdn_sync_policy)a->sync_policy;
	lo->sync_remote = a->sync_remote;
	lo->sync_branch = a->sync_branch;
	lo->sync_conflict = (enum gdn_sync_conflict)a->sync_conflict;
	lo->max_agent_ms = (int64_t)(a->max_agent_minutes * 60000.0);
	if (a->max_agent_minutes > 0 && lo->max_agent_ms < 1)
		lo->max_agent_ms = 1;
	lo->stop_after_failures = a->stop_after_failures;
	lo->max_tokens = a->max_tokens;
	lo->max_tokens_per_hour = a->max_tokens_per_hour;
	lo->max_cost_usd = a->max_cost_usd;
	lo->resume = a->resume;
	lo->git_retry_sleep_ms = 2000;
	lo->heartbeat_ms = a->heartbeat_ms;
	lo->say = s->say;
	lo->on_agent_line = s->on_line;
	lo->payload = s->payload;
}

/* ---- the gate's backend and hooks ---- */

static int open_backend(struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	struct gdn_gate *gate = &s->gate;
	const char *bname = a->backend ? a->backend : gdn_config_str(s->cfg, "loop.backend");

	if (!bname || !*bname)
		bname = "local";
	if (gdn_backend_open(s->cfg, bname, &s->backend, &s->err))
		return failed_backend(s);
	s->backend->repo_root = s->agent_dir;
	/* --backend once per worker: worker K's is the K-th (worker 1's is s->backend too) */
	for (long k = 1; s->w.wv && a->backends.nr > 1 && k <= s->w.workers; k++) {
		struct gdn_backend **b = &s->w.wv[k - 1].backend;

		if (gdn_backend_open(s->cfg, a->backends.v[k - 1], b, &s->err))
			return failed_backend(s);
		(*b)->repo_root = s->agent_dir;
	}
	gate->workdir = s->agent_dir;
	gate->heartbeat_ms = a->heartbeat_ms;
	gate->revert_mode =
	    a->isolation == GDN_ISOLATION_WORKTREE ? GDN_REVERT_RESET : GDN_REVERT_COMMIT;
	gate->test_command = gdn_config_str(s->cfg, "project.test_command");
	gate->profile_command = gdn_config_str(s->cfg, "project.profile_command");
	if (s->w.mg.tests) {
		s->marin_tests = gdn_marin_gate_command(&s->w.mg, "tests");
		gate->test_command = s->marin_tests;
	}
	if (s->w.mg.profile) {
		s->marin_profile = gdn_marin_gate_command(&s->w.mg, "profile");
		gate->profile_command = s->marin_profile;
	}
	s->pc.command = gate->profile_command; /* recorded with each measurement */
	gate->timeout_ms = a->validation_timeout_ms;
	gate->backend = s->backend;
	gate->phase_retries = a->validation_retries;
	gate->retry_sleep_ms = (long)(a->retry_sleep * 1000.0);
	gate->on_line = s->on_line;
	gate->payload = s->payload;
	s->hooks.policy = (enum gdn_loop_policy)a->validation_policy;
	if (a->perf_on) {
		s->hooks.decide = gdn_gate_decide;
		s->hooks.start = gdn_gate_start;
		s->hooks.synced = gdn_gate_synced;
	}
	return 0;
}

/* --workers N > 1: one gdn_loop_where_worker per worker, and the worker hook. */
static void setup_workers(struct gdn_loop_setup *s)
{
	struct gdn_loop_where *w = &s->w;

	w->workers = s->a.workers;
	if (w->workers <= 1 || w->wv)
		return;
	w->wv = xcalloc((size_t)w->workers, sizeof(*w->wv));
	for (long k = 1; k <= w->workers; k++) {
		w->wv[k - 1].dir = gdn_loop_setup_worker_dir(s, k);
		w->wv[k - 1].champion_name = xstrfmt("champion-w%ld", k);
		strvec_init(&w->wv[k - 1].directives);
	}
	s->hooks.worker = gdn_loop_setup_worker;
	s->hooks.worker_state = gdn_loop_setup_worker_state;
	s->worker_hooks.worker = gdn_loop_setup_worker;
	s->worker_hooks.worker_state = gdn_loop_setup_worker_state;
}

int gdn_loop_setup_gate(struct gdn_loop_setup *s, const struct opt *opts)
{
	setup_workers(s);
	if (s->gate_on && open_backend(s))
		return -1;
	if (gdn_loop_where_open(s, opts))
		return -1;
	s->ts.backend = s->backend; /* where the profile ran: the trace source's backend */
	s->ts.targets = s->gate.targets;
	if ((s->w.mg.tests || s->w.mg.profile) && !s->gate.targets &&
	    !(s->a.dry_run && (s->w.hold || s->w.clusters.nr || s->w.auto_clusters)))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "the Marin validation defaults need a held dev TPU or Ray fallback "
		    "clusters (or project.test_command and project.profile_command)");
	json_decref(s->plan);
	s->plan = gdn_loop_setup_plan(s);
	s->lo.plan = s->plan;
	return 0;
}

/* ---- the plan ---- */

/* Where the value of `option` came from: s->from, else "default". */
static const char *from_of(const struct gdn_loop_setup *s, const char *option)
{
	const char *why = json_string_value(json_object_get(s->from, option));

	return why ? why : "default";
}

/* A string of the user's (any bytes: lossy), or null for NULL or "". */
static json_t *str_or_null(const char *v)
{
	return v && *v ? gdn_json_string_lossy(v) : json_null();
}

json_t *gdn_loop_setup_plan(const struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	const struct gdn_perf_config *pc = &s->pc;
	const char *bname = a->backend ? a->backend : gdn_config_str(s->cfg, "loop.backend");
	const char *tests = s->gate.test_command, *profile = s->gate.profile_command;
	json_t *plan = json_object(), *val = json_object(), *perf;

	if (!s->gate_on) { /* no gate opened: what the configuration names */
		tests = gdn_config_str(s->cfg, "project.test_command");
		profile = gdn_config_str(s->cfg, "project.profile_command");
	}
	json_object_set_new(val, "mode",
			    json_string(gdn_enum_name(gdn_gate_mode_enum, a->validation_mode)));
	json_object_set_new(val, "from", str_or_null(from_of(s, "validation-mode")));
	json_object_set_new(val, "tests",
			    str_or_null(a->validation_mode == GDN_GATE_REQUIRED ? tests : NULL));
	json_object_set_new(
	    val, "profile",
	    str_or_null(a->validation_mode != GDN_GATE_OFF || a->perf_on ? profile : NULL));
	json_object_set_new(val, "backend", str_or_null(nonempty(bname) ? bname : "local"));
	json_object_set_new(plan, "validation", val);
	if (a->perf_on) {
		enum gdn_perf_direction d = gdn_perf_direction_resolve(pc->direction, pc->metric);

		perf = json_object();
		json_object_set_new(perf, "metric", str_or_null(pc->metric));
		json_object_set_new(perf, "metric_from", str_or_null(from_of(s, "perf-metric")));
		json_object_set_new(perf, "direction", json_string(gdn_perf_direction_name(d)));
		json_object_set_new(perf, "direction_from",
				    str_or_null(a->perf_direction == GDN_PERF_AUTO
						    ? "auto"
						    : from_of(s, "perf-direction")));
		json_object_set_new(perf, "direction_why", str_or_null(s->direction_why));
		json_object_set_new(perf, "min_improvement_pct",
				    json_real(pc->min_improvement_pct));
		json_object_set_new(perf, "max_regression_pct", json_real(pc->max_regression_pct));
		json_object_set_new(perf, "regression_policy",
				    json_string(gdn_perf_policy_name(pc->policy)));
		json_object_set_new(perf, "repeats", json_integer(a->perf_repeats));
		json_object_set_new(perf, "state_file", str_or_null(s->ps.path));
	} else {
		perf = json_null();
	}
	json_object_set_new(plan, "perf", perf);
	json_object_set_new(plan, "log_file", str_or_null(s->hlog));
	json_object_set_new(plan, "log_file_why", str_or_null(s->hlog_why));
	return plan;
}

void gdn_loop_setup_ruler(const struct gdn_loop_setup *s, struct sbuf *out)
{
	const struct gdn_perf_config *pc = &s->pc;
	enum gdn_perf_direction d = gdn_perf_direction_resolve(pc->direction, pc->metric);

	sbuf_addf(out, "%s, %s is better", pc->metric, d == GDN_PERF_LOWER ? "lower" : "higher");
	if (s->a.perf_direction == GDN_PERF_AUTO && s->direction_why)
		sbuf_addf(out, " (auto: %s)", s->direction_why);
	else
		sbuf_addf(out, " (%s)", from_of(s, "perf-direction"));
}

/* ---- workers ---- */

const struct gdn_loop_hooks *gdn_loop_setup_hooks(struct gdn_loop_setup *s)
{
	if (s->gate_on)
		return &s->hooks;
	return s->worker_hooks.worker ? &s->worker_hooks : NULL;
}

char *gdn_loop_setup_worker_dir(const struct gdn_loop_setup *s, long k)
{
	if (s->worktree_dir)
		return xstrfmt("%s/w%ld", s->worktree_dir, k);
	return xstrfmt("%s/workers/w%ld", s->log_dir, k);
}

char *gdn_loop_worker_path(const char *path, const char *from, const char *to)
{
	size_t n = strlen(from);

	while (n > 1 && from[n - 1] == '/')
		n--;
	if (!path || strncmp(path, from, n) || path[n] != '/')
		return NULL;
	return xstrfmt("%s%s", to, path + n);
}

/* The setup whose gate `payload` is (the hooks' payload). */
static struct gdn_loop_setup *setup_of(void *payload)
{
	return (struct gdn_loop_setup *)(void *)((char *)payload -
						 offsetof(struct gdn_loop_setup, gate));
}

/* *path (owned) moved from the agent's worktree to the worker's, when below it. */
static void move_path(char **path, const char *from, const char *to)
{
	char *p = *path ? gdn_loop_worker_path(*path, from, to) : NULL;

	if (p) {
		free(*path);
		*path = p;
	}
}

int gdn_loop_setup_worker(void *payload, long k, const char *workdir, struct gdn_err *err)
{
	struct gdn_loop_setup *s = setup_of(payload);
	struct gdn_loop_where *w = &s->w;
	struct gdn_gate *gate = &s->gate;
	struct gdn_loop_where_worker *x;
	char *from;

	if (!w->wv || k < 1 || k > w->workers)
		return gdn_err_set(err, GDN_EUSAGE, "no worker %ld (--workers %ld)", k,
				   s->a.workers);
	x = &w->wv[k - 1];
	gdn_loop_where_forked(w);
	/* again in the same process (a re-validation): from where the last call pointed */
	from = s->worker_dir ? s->worker_dir : xstrdup(s->agent_dir);
	s->worker_dir = xstrdup(workdir);
	/* the running log: <agent dir>/REL is <workdir>/REL */
	move_path(&s->hlog, from, s->worker_dir);
	free(from);
	s->lo.hillclimb_log = s->hlog;
	if (s->mo.log_file)
		s->mo.log_file = s->hlog;
	/* the gate: its tree, its backend, its champion worktree */
	gate->workdir = s->worker_dir;
	if (s->gate_on || x->backend)
		gate->backend = x->backend ? x->backend : s->backend;
	if (s->backend)
		s->backend->repo_root = s->worker_dir;
	if (gate->backend)
		gate->backend->repo_root = s->worker_dir;
	gate->champion_name = x->champion_name;
	/* where validation runs: its dev TPU, its hold, its targets */
	w->dev = x->dev;
	w->h = x->h;
	w->targets = x->targets;
	if (x->dev)
		x->dev->repo_root = s->worker_dir;
	gdn_targets_set_repo(x->targets, s->worker_dir);
	gate->targets = x->targets;
	w->mg.repo = s->worker_dir;
	s->ts.workdir = s->worker_dir;
	s->ts.backend = gate->backend;
	s->ts.targets = gate->targets;
	/* its hold's managed dev TPU directive (once) */
	if (s->worker_k != k) {
		while (s->worker_k && s->directives.nr > s->worker_base)
			strvec_pop(&s->directives);
		s->worker_base = s->directives.nr;
		for (size_t i = 0; i < x->directives.nr; i++)
			strvec_push(&s->directives, x->directives.v[i]);
		s->worker_k = k;
	}
	return 0;
}

int gdn_loop_setup_worker_state(void *payload, long k, int what, bool promoted, struct gdn_err *err)
{
	struct gdn_loop_setup *s = setup_of(payload);
	int ret = gdn_gate_worker_state(payload, k, what, promoted, err);

	/* worker k's next iteration holds its dev TPU again when it was lost */
	if (what == GDN_WORKER_ADOPT)
		gdn_loop_where_refresh(&s->w, k);
	return ret;
}

void gdn_loop_setup_end(struct gdn_loop_setup *s, const char *run_id, char **warning)
{
	struct gdn_git git = {.workdir = s->workdir, .quiet = true};

	gdn_loop_where_end(&s->w, s->log_dir, run_id, warning);
	/* the workers' --perf-ab champion worktrees (each made in a worker's process) */
	for (long k = 1; s->w.wv && !s->w.forked && k <= s->w.workers; k++) {
		char *dir = xstrfmt("%s/%s", s->log_dir, s->w.wv[k - 1].champion_name);
		struct gdn_err ignored = GDN_ERR_INIT;

		if (!access(dir, F_OK))
			gdn_git_worktree_remove(&git, dir, &ignored);
		free(dir);
	}
}
