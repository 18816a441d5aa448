/*
 * Where `gdnctl loop` validates (loop_setup.h): the held dev TPU
 * (--hold-dev-tpu) and the validation targets from the options, per
 * worker with --workers; their checks, their refresh and their end.
 */
#include "gdnctl/compat.h"
#include <ctype.h>
#include <dirent.h>
#include "gdnctl/backend.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/loop.h"
#include "gdnctl/hold.h"
#include "gdnctl/targets.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/marin.h"
#include "gdnctl/marin_gate.h"
#include "gdnctl/perf.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

const char *gdn_loop_where_check(struct gdn_loop_where *w, const struct strvec *given)
{
	bool max = strvec_contains(given, "validation-max-attempts");

	/* the dev TPU and validation retry flags */
	if (!(w->ready_timeout > 0))
		return "--dev-tpu-ready-timeout must be > 0.";
	if (w->attempts <= 0)
		return "--dev-tpu-allocate-attempts must be > 0.";
	if (w->retry_sleep < 0)
		return "--dev-tpu-allocate-retry-sleep must be >= 0.";
	if (!(w->stop_timeout > 0))
		return "--dev-tpu-stop-timeout must be > 0.";
	if (w->validation_attempts < 1)
		return "--validation-attempts must be >= 1.";
	if (w->validation_retry_sleep < 0)
		return "--validation-retry-sleep must be >= 0.";
	if (w->reacquire_ms < 0)
		return "--dev-tpu-reacquire-interval must be >= 0.";
	/* the other --validation-* flags, then --validation-max-attempts (-1: unlimited) */
	if (max && (w->max_attempts == 0 || w->max_attempts < -1))
		return "--validation-max-attempts must be -1 (unlimited) or >= 1.";
	if (strvec_contains(given, "validation-ray-test-timeout") && !(w->ray_test_timeout > 0))
		return "--validation-ray-test-timeout must be > 0 when set.";
	if (strvec_contains(given, "validation-ray-profile-timeout") &&
	    !(w->ray_profile_timeout > 0))
		return "--validation-ray-profile-timeout must be > 0 when set.";
	if (strvec_contains(given, "validation-ray-log-tail") && w->ray_log_tail <= 0)
		return "--validation-ray-log-tail must be > 0.";
	if (max && strvec_contains(given, "validation-attempts") &&
	    w->max_attempts != w->validation_attempts)
		return "--validation-max-attempts and --validation-attempts are the same setting; "
		       "give one.";
	if (max)
		w->validation_attempts = w->max_attempts;
	return NULL;
}

/*
 * The --dev-tpu-* flags given, as options of a spec over backends.NAME
 * (the configuration is left alone). `texts` owns the values and origins.
 */
static void dev_flags(struct gdn_loop_setup *s, struct gdn_backend_option *spec_opts, size_t *nr,
		      struct strvec *texts, const char *name, long k)
{
	struct gdn_loop_where *w = &s->w;
	const char *tpu_name = k ? w->wv[k - 1].tpu_name : NULL;
	struct sbuf key = SBUF_INIT, v = SBUF_INIT;
	const struct {
		const char *flag, *key;
		const double *f;
		const long *n;
		const char *s;
	} flags[] = {
	    {"dev-tpu-name", "tpu_name", NULL, NULL, w->name},
	    {"dev-tpu-cluster", "cluster", NULL, NULL, w->cluster},
	    {"dev-tpu-type", "tpu_type", NULL, NULL, w->type},
	    {"dev-tpu-sync-path", "sync_path", NULL, NULL, w->sync_path},
	    {"dev-tpu-allocate-log", "allocate_log", NULL, NULL, w->alloc_log},
	    {"dev-tpu-ready-timeout", "ready_timeout", &w->ready_timeout, NULL, NULL},
	    {"dev-tpu-allocate-retry-sleep", "retry_sleep", &w->retry_sleep, NULL, NULL},
	    {"dev-tpu-stop-timeout", "stop_timeout", &w->stop_timeout, NULL, NULL},
	    {"dev-tpu-allocate-attempts", "attempts", NULL, &w->attempts, NULL},
	    {"dev-tpu-verbose", "verbose", NULL, NULL, w->verbose ? "true" : NULL},
	    {"validation-dev-no-sync", "no_sync", NULL, NULL, w->dev_no_sync ? "true" : NULL},
	};
	bool sync_path = false, alloc_log = false;

	for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
		sbuf_reset(&v);
		if (tpu_name && !strcmp(flags[i].key, "tpu_name")) {
			/* worker K's allocation: <dev-tpu-name>-w<K> */
			spec_opts[(*nr)++] = (struct gdn_backend_option){
			    "tpu_name", tpu_name, "--dev-tpu-name, --workers"};
			continue;
		}
		if (!strvec_contains(&s->given, flags[i].flag))
			continue;
		if (flags[i].f)
			sbuf_addf(&v, "%lldms", (long long)(*flags[i].f * 1000.0));
		else if (flags[i].n)
			sbuf_addf(&v, "%ld", *flags[i].n);
		else if (flags[i].s)
			sbuf_adds(&v, flags[i].s);
		else
			continue;
		spec_opts[(*nr)++] =
		    (struct gdn_backend_option){flags[i].key, strvec_push(texts, v.buf),
						strvec_pushf(texts, "--%s", flags[i].flag)};
		sync_path |= !strcmp(flags[i].key, "sync_path");
		alloc_log |= !strcmp(flags[i].key, "allocate_log");
	}
	if (w->fallbacks.nr) {
		sbuf_reset(&v);
		for (size_t i = 0; i < w->fallbacks.nr; i++)
			sbuf_addf(&v, "%s%s", i ? "," : "", w->fallbacks.v[i]);
		spec_opts[(*nr)++] = (struct gdn_backend_option){
		    "fallback_clusters", strvec_push(texts, v.buf), "--dev-tpu-fallback-cluster"};
	}
	/* the original's defaults: --sync-path ., <log-dir>/dev_tpu_allocate.log */
	sbuf_addf(&key, "backends.%s.sync_path", name);
	if (!sync_path && !gdn_config_str(s->cfg, key.buf))
		spec_opts[(*nr)++] =
		    (struct gdn_backend_option){"sync_path", ".", "--dev-tpu-sync-path"};
	sbuf_reset(&key);
	sbuf_addf(&key, "backends.%s.allocate_log", name);
	/* worker K's: <log-dir>/dev_tpu_allocate-w<K>.log */
	if (!alloc_log && !gdn_config_str(s->cfg, key.buf))
		spec_opts[(*nr)++] = (struct gdn_backend_option){
		    "allocate_log",
		    k ? strvec_pushf(texts, "%s/dev_tpu_allocate-w%ld.log", s->log_dir, k)
		      : strvec_pushf(texts, "%s/dev_tpu_allocate.log", s->log_dir),
		    "--dev-tpu-allocate-log"};
	sbuf_release(&key);
	sbuf_release(&v);
}

/* The most options dev_flags() gives: its flags, the fallbacks and two defaults. */
#define DEV_SPEC_MAX 14

/* Worker k's (1..N) or, k = 0, the one. */
static struct gdn_loop_where_worker *worker(struct gdn_loop_where *w, long k)
{
	return k ? &w->wv[k - 1] : NULL;
}

/*
 * Open the dev-tpu backend from a spec: the flags over backends.NAME (NAME: --dev-tpu-backend or
 * dev-tpu); worker k's (k > 0) names its allocation <dev-tpu-name>-w<K>.
 */
static int open_dev(struct gdn_loop_setup *s, long k, struct gdn_backend **dev)
{
	struct gdn_loop_where *w = &s->w;
	const char *name = w->backend ? w->backend : "dev-tpu";
	struct gdn_backend_option spec_opts[DEV_SPEC_MAX];
	struct gdn_backend_spec spec = {name, NULL, spec_opts, 0, NULL};
	struct strvec texts = STRVEC_INIT;
	const char *c;
	int ret = 0;

	dev_flags(s, spec_opts, &spec.options_nr, &texts, name, k);
	if (gdn_backend_open_spec(s->cfg, &spec, dev, &s->err)) {
		s->style = GDN_SETUP_ERROR;
		ret = -1;
		goto out;
	}
	if (strcmp((*dev)->ops->type, "dev-tpu")) {
		ret = gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					  "--dev-tpu-backend %s is a %s backend, not dev-tpu", name,
					  (*dev)->ops->type);
		goto out;
	}
	(*dev)->repo_root = s->agent_dir;
	(*dev)->on_event = s->on_event;
	(*dev)->event_payload = s->payload;
	if (w->dev_clusters.nr) /* the workers' allocations: the same clusters */
		goto out;
	c = gdn_backend_setting(*dev, "cluster");
	strvec_push(&w->dev_clusters, c ? c : GDN_MARIN_CLUSTER);
	gdn_strvec_add_unique(&w->dev_clusters,
			      gdn_backend_setting_list(*dev, "fallback_clusters"));
out:
	strvec_clear(&texts);
	return ret;
}

/* --hold-dev-tpu: open the dev-tpu backend and acquire the allocation (worker k's, k > 0). */
static int acquire_dev(struct gdn_loop_setup *s, long k)
{
	struct gdn_loop_where *w = &s->w;
	struct gdn_loop_where_worker *x = worker(w, k);
	struct gdn_backend **dev = x ? &x->dev : &w->dev;
	struct gdn_hold **h = x ? &x->h : &w->h;
	struct gdn_hold_opts ho = {0};

	if (open_dev(s, k, dev))
		return -1;
	ho.tpu_name = gdn_backend_setting(*dev, "tpu_name");
	ho.tpu_type = gdn_backend_setting(*dev, "tpu_type");
	ho.backend = *dev;
	ho.required = w->hold_required && !s->a.resilient;
	ho.reacquire_interval_ms = w->reacquire_ms;
	ho.mode = s->gate.mode;
	/* a worker's directive names its own allocation: added in its process */
	ho.directives = x ? &x->directives : &s->directives;
	ho.say = s->say;
	ho.payload = s->payload;
	*h = gdn_hold_new(&ho);
	/* the agent's worktree is made when the run starts: the allocation syncs the checkout */
	(*dev)->repo_root = s->workdir;
	if (gdn_hold_acquire(*h, &s->err)) {
		s->style = gdn_proc_interrupted() ? GDN_SETUP_SIGNAL : GDN_SETUP_PLAIN;
		if (!s->err.code || s->err.code == GDN_EFAILED)
			s->err.code = GDN_EBACKEND; /* the allocation failed */
		return -1;
	}
	/* a worker's re-acquire (in the loop's process) syncs its worktree */
	(*dev)->repo_root = x ? x->dir : s->agent_dir;
	return 0;
}

/* The gate's targets (worker k's, k > 0): the held dev TPU, then the Ray fallback clusters. */
static int open_targets(struct gdn_loop_setup *s, long k)
{
	struct gdn_loop_where *w = &s->w;
	struct gdn_loop_where_worker *x = worker(w, k);
	struct gdn_targets_opts to = {0};

	to.repo = s->agent_dir;
	to.infra_repo = s->workdir; /* the agent's worktree does not exist yet */
	to.hold = x ? x->h : w->h;
	to.dev = x ? x->dev : w->dev;
	to.clusters = &w->clusters;
	to.auto_discover = w->auto_clusters;
	to.excludes = &w->excludes;
	to.dev_clusters = &w->dev_clusters;
	to.test_tpu = w->ray_tpu;
	to.profile_tpu = w->profile_tpu;
	to.cross_tpu_tests = w->cross_tpu;
	to.backend = x && x->backend ? x->backend : s->gate.backend;
	to.passes = w->validation_attempts;
	to.retry_sleep_ms = (long)(w->validation_retry_sleep * 1000.0);
	to.ray_tests_timeout_ms = (long)(w->ray_test_timeout * 1000.0);
	to.ray_profile_timeout_ms = (long)(w->ray_profile_timeout * 1000.0);
	to.ray_log_tail = w->ray_log_tail;
	if (w->mg.tests || w->mg.profile) {
		to.phase_command = gdn_marin_gate_phase;
		to.phase_payload = &w->mg;
	}
	to.on_event = s->on_event;
	to.event_payload = s->payload;
	/* the discovered clusters are the same for every worker: said once */
	to.say = k <= 1 ? s->say : NULL;
	to.payload = s->payload;
	if (gdn_targets_new(s->cfg, &to, x ? &x->targets : &w->targets, &s->err)) {
		s->style = GDN_SETUP_ERROR;
		return -1;
	}
	if (k <= 1)
		s->gate.targets = x ? x->targets : w->targets;
	return 0;
}

/* Whether the gate validates through targets (worker k's hold, k > 0). */
static bool wants_targets(struct gdn_loop_setup *s, long k)
{
	struct gdn_loop_where *w = &s->w;
	struct gdn_hold *h = k ? w->wv[k - 1].h : w->h;

	return s->gate_on &&
	       (h || w->clusters.nr || w->auto_clusters || w->validation_attempts != 1);
}

/*
 * --perf-ab runs the champion from its own tree on the same targets: a
 * usage error, before anything is allocated, where they cannot (the
 * held dev TPU; a backend that cannot keep a second tree apart; a trace
 * metric where only the candidate's trace is copied back).
 */
static bool ab_on(const struct gdn_loop_setup *s)
{
	const struct gdn_gate *g = &s->gate;

	return s->gate_on && g->perf_ab && g->perf_config && g->log_dir && g->profile_command &&
	       *g->profile_command;
}

/* The refusal for backend b (reported, -1), or 0. */
static int check_ab_backend(struct gdn_loop_setup *s, const struct gdn_backend *b)
{
	const char *why = gdn_backend_second_tree_refusal(b);
	const char *metric = s->gate.perf_config->metric;

	if (why)
		return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					   "--perf-ab cannot run the champion from its own copy on "
					   "backend %s (%s): %s; give --no-perf-ab",
					   b->name, b->ops->type, why);
	/* the champion's trace is read in its local worktree only (gate.c) */
	if (gdn_perf_is_trace_metric(metric) &&
	    (!strcmp(b->ops->type, "ssh") || !strcmp(b->ops->type, "ray") ||
	     !strcmp(b->ops->type, "iris")))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-ab cannot measure the champion's %s on backend %s (%s): its trace is "
		    "read only in its local worktree; give --no-perf-ab",
		    metric, b->name, b->ops->type);
	return 0;
}

static int check_ab_where(struct gdn_loop_setup *s)
{
	struct gdn_loop_where *w = &s->w;

	if (!ab_on(s))
		return 0;
	if (w->hold)
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--perf-ab cannot run the champion from its own copy on the held dev TPU "
		    "(dev_tpu.py execute syncs every tree to one remote directory); give "
		    "--no-perf-ab");
	if (w->clusters.nr || w->auto_clusters || !s->backend)
		return 0; /* Ray targets: checked once open (check_ab_targets) */
	return check_ab_backend(s, s->backend);
}

static int check_ab_targets(struct gdn_loop_setup *s)
{
	const struct gdn_targets *t = s->w.targets;

	if (!t || !ab_on(s))
		return 0;
	for (size_t i = 0; i < gdn_targets_nr(t); i++)
		if (gdn_targets_profile(t, i) && check_ab_backend(s, gdn_targets_profile(t, i)))
			return -1;
	return 0;
}

int gdn_loop_where_open(struct gdn_loop_setup *s)
{
	struct gdn_loop_where *w = &s->w;
	/* the targets held and opened: with --targets M below the workers, a child
	 * validates on target K of M (a token), so M; else one per worker */
	long slots = s->a.targets && s->a.targets < w->workers ? s->a.targets : w->workers;

	if (w->hold) {
		char *k = xstrfmt("backends.%s.tpu_name", w->backend ? w->backend : "dev-tpu");
		const char *name = w->name ? w->name : gdn_config_str(s->cfg, k);

		free(k);
		if (!name && s->a.resilient) {
			s->say(
			    GDN_LOOP_WARN,
			    "--hold-dev-tpu requested without --dev-tpu-name; continuing without "
			    "managed dev TPU due to --resilient.",
			    s->payload);
			w->hold = 0;
		} else if (!name) {
			return gdn_loop_setup_fail(s, GDN_SETUP_PLAIN, GDN_EUSAGE,
						   "--hold-dev-tpu requires --dev-tpu-name.");
		}
		for (long i = 0; w->hold && w->wv && i < slots; i++)
			w->wv[i].tpu_name = xstrfmt("%s-w%ld", name, i + 1);
	}
	if (check_ab_where(s))
		return -1;
	if (s->a.dry_run) /* the pre-flight: checked, nothing started */
		return 0;
	w->pid = getpid();
	if (!w->wv) {
		if (w->hold && acquire_dev(s, 0))
			return -1;
		if (wants_targets(s, 0))
			return open_targets(s, 0) || check_ab_targets(s) ? -1 : 0;
		return 0;
	}
	/*
	 * every worker's allocation before the loop starts, then every worker's
	 * targets; with --targets M below the workers, targets 1..M only
	 */
	for (long k = 1; w->hold && k <= slots; k++)
		if (acquire_dev(s, k))
			return -1;
	for (long k = 1; k <= slots; k++)
		if (wants_targets(s, k) && open_targets(s, k))
			return -1;
	/* the run's own (the baseline, the plan): worker 1's */
	w->dev = w->wv[0].dev;
	w->h = w->wv[0].h;
	w->targets = w->wv[0].targets;
	if (check_ab_targets(s)) /* every worker's targets are alike */
		return -1;
	return 0;
}

void gdn_loop_where_refresh(struct gdn_loop_where *w, long k)
{
	struct gdn_hold *h = w->wv && k >= 1 && k <= w->workers ? w->wv[k - 1].h : NULL;
	char *why;

	/* interrupted: the allocations are stopping, the end releases them */
	if (!h || w->forked || gdn_proc_interrupted() || gdn_hold_alive(h, NULL))
		return;
	why = xstrfmt("worker %ld's held dev TPU is not active", k);
	gdn_hold_reacquire(h, NULL, why);
	free(why);
}

void gdn_loop_where_forked(struct gdn_loop_where *w)
{
	if (!w->pid || w->pid == getpid())
		return; /* the process that acquired them keeps them */
	w->forked = true;
	gdn_hold_forked(w->h);
	for (long i = 0; w->wv && i < w->workers; i++)
		gdn_hold_forked(w->wv[i].h);
}

/* Release one hold and journal its events; the first failure's message in *warning. */
static void end_hold(struct gdn_hold *h, const char *log_dir, const char *run_id, char **warning)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (!h)
		return;
	if (gdn_hold_release(h, &err) && !*warning)
		*warning = xstrdup(err.msg);
	gdn_hold_flush(h, log_dir, run_id);
}

void gdn_loop_where_end(struct gdn_loop_where *w, const char *log_dir, const char *run_id,
			char **warning)
{
	*warning = NULL;
	if (!w->wv) {
		end_hold(w->h, log_dir, run_id, warning);
		return;
	}
	for (long i = 0; i < w->workers; i++)
		end_hold(w->wv[i].h, log_dir, run_id, warning);
}

void gdn_loop_where_release(struct gdn_loop_where *w)
{
	if (w->wv) {
		for (long i = 0; i < w->workers; i++) {
			struct gdn_loop_where_worker *x = &w->wv[i];

			gdn_targets_free(x->targets);
			gdn_hold_free(x->h);
			if (!w->forked) /* freeing it would stop the parent's allocation */
				gdn_backend_free(x->dev);
			gdn_backend_free(x->backend);
			free(x->dir);
			free(x->tpu_name);
			free(x->champion_name);
			strvec_clear(&x->directives);
		}
		FREE_AND_NULL(w->wv);
		w->dev = NULL;
		w->h = NULL;
		w->targets = NULL;
	}
	gdn_targets_free(w->targets);
	gdn_hold_free(w->h);
	if (!w->forked)
		gdn_backend_free(w->dev);
	w->targets = NULL;
	w->h = NULL;
	w->dev = NULL;
	strvec_clear(&w->fallbacks);
	strvec_clear(&w->clusters);
	strvec_clear(&w->excludes);
	strvec_clear(&w->dev_clusters);
	strvec_clear(&w->profile_env);
}
