/*
 * Where the validation gate runs its phases (the original's
 * _run_validation_gate_for_iteration, §3.10): the held dev TPU first,
 * then Ray fallback clusters (explicit, or discovered from
 * <repo>/infra/marin-*.yaml with the original's filters), or the one
 * configured backend. Passes, retry sleep, bad-cluster memory, and the
 * dev TPU's health check and re-acquire (hold.c). A Ray job that passes
 * the phase timeout is stopped by the ray backend's run (stop-job).
 * Never prints: the iteration's report and journal callbacks.
 * The `gdnctl loop` wiring of the held dev TPU and the targets from its
 * options is in where.c.
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

#define BAD_CLUSTER_TEXT "No cluster config found for region"

/* ---- discovery ---- */

void gdn_strvec_add_unique(struct strvec *out, const struct strvec *in)
{
	for (size_t i = 0; in && i < in->nr; i++)
		if (*in->v[i] && !strvec_contains(out, in->v[i]))
			strvec_push(out, in->v[i]);
}

void gdn_tpu_slice_key(const char *tpu, struct sbuf *out)
{
	size_t start;
	bool gap = false;

	sbuf_adds(out, "tpu_slice_");
	start = out->len;
	for (const char *p = tpu; p && *p; p++) {
		int c = tolower((unsigned char)*p);

		if (!isascii(c) || !isalnum(c)) {
			gap = true;
			continue;
		}
		if (gap && out->len > start)
			sbuf_addch(out, '_');
		gap = false;
		sbuf_addch(out, c);
	}
}

bool gdn_cluster_matches(const char *name, const char *text, const struct gdn_cluster_filter *f)
{
	static const char *const modern[] = {"tpu_slice_v5p_", "tpu_slice_v5e_", "tpu_slice_v6e_"};
	struct sbuf key = SBUF_INIT;
	bool ok = true;

	for (size_t i = 0; f->excludes && i < f->excludes->nr && ok; i++) {
		struct sbuf ex = SBUF_INIT;

		sbuf_adds(&ex, f->excludes->v[i]);
		sbuf_trim(&ex);
		if (ex.len && strcasestr(name, ex.buf))
			ok = false;
		sbuf_release(&ex);
	}
	if (!ok)
		goto out;
	if (f->modern) {
		ok = false;
		for (size_t i = 0; i < ARRAY_SIZE(modern) && !ok; i++)
			ok = strstr(text, modern[i]) != NULL;
		goto out;
	}
	ok = strstr(text, "tpu_slice_") != NULL;
	if (ok && f->tpu && *f->tpu && strcmp(f->tpu, "auto")) {
		gdn_tpu_slice_key(f->tpu, &key);
		ok = strstr(text, key.buf) != NULL;
	}
out:
	sbuf_release(&key);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int gdn_clusters_discover(const char *repo, const struct gdn_cluster_filter *f, struct strvec *out,
			  struct gdn_err *err)
{
	char *dir = xstrfmt("%s/infra", repo);
	struct strvec files = STRVEC_INIT;
	struct dirent *de;
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d) {
		if (errno != ENOENT && errno != ENOTDIR)
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", dir);
		goto out;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > strlen("marin-.yaml") && !strncmp(de->d_name, "marin-", 6) &&
		    !strcmp(de->d_name + n - 5, ".yaml"))
			strvec_push(&files, de->d_name);
	}
	closedir(d);
	qsort(files.v, files.nr, sizeof(*files.v), cmp_str);
	for (size_t i = 0; i < files.nr; i++) {
		struct sbuf text = SBUF_INIT;
		struct gdn_err sub = GDN_ERR_INIT;
		char *path = xstrfmt("%s/%s", dir, files.v[i]);
		char *name = xstrndup(files.v[i] + 6, strlen(files.v[i]) - 6 - 5);

		if (!sbuf_read_file(&text, path, 16 << 20, &sub) &&
		    gdn_cluster_matches(name, text.buf, f) && !strvec_contains(out, name))
			strvec_push(out, name);
		sbuf_release(&text);
		free(path);
		free(name);
	}
out:
	strvec_clear(&files);
	free(dir);
	return ret;
}

/* ---- the targets ---- */

struct target {
	char *cluster;			     /* ray: the cluster; NULL: the one backend */
	struct gdn_backend *tests, *profile; /* owned for ray targets */
	bool for_tests, for_profile;
	bool bad;
};

struct gdn_targets {
	struct gdn_hold *hold;
	struct gdn_backend *dev;
	struct target *v;
	size_t nr, alloc;
	long passes, retry_sleep_ms; /* passes < 0: unlimited */
	long ray_tests_timeout_ms, ray_profile_timeout_ms, ray_log_tail;
	gdn_phase_command_fn phase_command;
	void *phase_payload;
	struct gdn_backend *last; /* the backend of the last try (borrowed) */
};

size_t gdn_targets_nr(const struct gdn_targets *t)
{
	return t->nr;
}

const struct gdn_backend *gdn_targets_profile(const struct gdn_targets *t, size_t i)
{
	return i < t->nr && t->v[i].for_profile ? t->v[i].profile : NULL;
}

struct gdn_backend *gdn_targets_last(const struct gdn_targets *t)
{
	return t ? t->last : NULL;
}

static void say(const struct gdn_targets_opts *o, const char *fmt, ...) GDN_PRINTF(2, 3);
static void say(const struct gdn_targets_opts *o, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (!o->say)
		return;
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	o->say(GDN_LOOP_INFO, sb.buf, o->payload);
	sbuf_release(&sb);
}

/* Open a ray backend NAME for cluster with tpu, from a spec (the configuration is left alone). */
static int open_ray(const struct gdn_config *cfg, const struct gdn_targets_opts *o,
		    const char *name, const char *cluster, const char *tpu,
		    struct gdn_backend **out, struct gdn_err *err)
{
	const struct gdn_backend_option opts[] = {
	    {"cluster", cluster, NULL},
	    {"tpu", tpu && *tpu ? tpu : NULL, NULL},
	};
	const struct gdn_backend_spec spec = {
	    .name = name,
	    .type = "ray",
	    .options = opts,
	    .options_nr = ARRAY_SIZE(opts),
	    .origin = o->auto_discover && !(o->clusters && o->clusters->nr)
			  ? "--validation-ray-cluster-auto"
			  : "--validation-ray-cluster",
	};
	int ret = gdn_backend_open_spec(cfg, &spec, out, err);

	if (!ret) {
		(*out)->repo_root = o->repo;
		(*out)->on_event = o->on_event;
		(*out)->event_payload = o->event_payload;
	}
	return ret;
}

static struct target *add_target(struct gdn_targets *t)
{
	ALLOC_GROW(t->v, t->nr + 1, t->alloc);
	memset(&t->v[t->nr], 0, sizeof(t->v[t->nr]));
	return &t->v[t->nr++];
}

static void report_list(const struct gdn_targets_opts *o, const char *purpose,
			const struct strvec *found)
{
	struct sbuf sb = SBUF_INIT;

	for (size_t i = 0; i < found->nr; i++)
		sbuf_addf(&sb, "%s%s", i ? ", " : "", found->v[i]);
	say(o, "auto-discovered validation Ray clusters (%s): %s", purpose,
	    found->nr ? sb.buf : "(none)");
	sbuf_release(&sb);
}

int gdn_targets_new(struct gdn_config *cfg, const struct gdn_targets_opts *o,
		    struct gdn_targets **out, struct gdn_err *err)
{
	struct gdn_targets *t = xcalloc(1, sizeof(*t));
	struct strvec tests = STRVEC_INIT, profile = STRVEC_INIT, all = STRVEC_INIT;
	struct strvec excludes = STRVEC_INIT;
	int ret = 0;

	*out = t;
	t->hold = o->hold;
	t->dev = o->dev;
	t->passes = o->passes > 0 ? o->passes : o->passes < 0 ? -1 : 1;
	t->retry_sleep_ms = o->retry_sleep_ms;
	t->ray_tests_timeout_ms = o->ray_tests_timeout_ms;
	t->ray_profile_timeout_ms = o->ray_profile_timeout_ms;
	t->ray_log_tail = o->ray_log_tail;
	t->phase_command = o->phase_command;
	t->phase_payload = o->phase_payload;
	if (o->clusters && o->clusters->nr) {
		gdn_strvec_add_unique(&tests, o->clusters);
		gdn_strvec_add_unique(&profile, o->clusters);
	} else if (o->auto_discover) {
		struct gdn_cluster_filter pf = {&excludes, o->profile_tpu, false};
		struct gdn_cluster_filter tf = {&excludes, o->profile_tpu, o->cross_tpu_tests};
		struct strvec found = STRVEC_INIT;

		strvec_pushl(&excludes, "vllm", "big-run", NULL);
		gdn_strvec_add_unique(&excludes, o->excludes);
		if (o->hold) {
			gdn_strvec_add_unique(&tests, o->dev_clusters);
			gdn_strvec_add_unique(&profile, o->dev_clusters);
		}
		ret = gdn_clusters_discover(o->infra_repo ? o->infra_repo : o->repo, &pf, &found,
					    err);
		if (ret)
			goto out;
		report_list(o, "profile", &found);
		gdn_strvec_add_unique(&profile, &found);
		strvec_clear(&found);
		ret = gdn_clusters_discover(o->infra_repo ? o->infra_repo : o->repo, &tf, &found,
					    err);
		if (ret)
			goto out;
		report_list(o, o->cross_tpu_tests ? "test-modern" : "test", &found);
		gdn_strvec_add_unique(&tests, &found);
		strvec_clear(&found);
	} else {
		struct target *x = add_target(t);

		x->tests = x->profile = o->backend;
		x->for_tests = x->for_profile = true;
		goto out;
	}
	gdn_strvec_add_unique(&all, &tests);
	gdn_strvec_add_unique(&all, &profile);
	for (size_t i = 0; i < all.nr && !ret; i++) {
		struct target *x = add_target(t);
		char *tname = xstrfmt("validation-tests-%zu", i);
		char *pname = xstrfmt("validation-profile-%zu", i);

		x->cluster = xstrdup(all.v[i]);
		x->for_tests = strvec_contains(&tests, all.v[i]);
		x->for_profile = strvec_contains(&profile, all.v[i]);
		ret = open_ray(cfg, o, tname, x->cluster, o->test_tpu, &x->tests, err);
		if (!ret)
			ret = open_ray(cfg, o, pname, x->cluster, o->profile_tpu, &x->profile, err);
		free(tname);
		free(pname);
	}
out:
	strvec_clear(&tests);
	strvec_clear(&profile);
	strvec_clear(&all);
	strvec_clear(&excludes);
	return ret;
}

void gdn_targets_set_repo(struct gdn_targets *t, const char *repo)
{
	for (size_t i = 0; t && i < t->nr; i++) {
		if (!t->v[i].cluster)
			continue;
		t->v[i].tests->repo_root = repo;
		t->v[i].profile->repo_root = repo;
	}
}

void gdn_targets_free(struct gdn_targets *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr; i++) {
		if (t->v[i].cluster) {
			gdn_backend_free(t->v[i].tests);
			gdn_backend_free(t->v[i].profile);
		}
		free(t->v[i].cluster);
	}
	free(t->v);
	free(t);
}

/* ---- running a phase ---- */

struct watch {
	const struct gdn_run_spec *spec;
	bool bad_cluster;
	/* --validation-ray-log-tail: the last `tail` lines, passed on at the end */
	long tail;
	char **ring;
	long head, nr;
};

static int watch_line(const char *line, size_t len, void *payload)
{
	struct watch *w = payload;

	if (strstr(line, BAD_CLUSTER_TEXT))
		w->bad_cluster = true;
	if (w->tail > 0) {
		long slot = (w->head + w->nr) % w->tail;

		if (w->nr == w->tail) {
			free(w->ring[w->head]);
			w->head = (w->head + 1) % w->tail;
		} else {
			w->nr++;
		}
		w->ring[slot] = xstrndup(line, len);
		return 0;
	}
	return w->spec->on_line ? w->spec->on_line(line, len, w->spec->payload) : 0;
}

/* Pass the kept lines on, oldest first, and free them. */
static void watch_flush(struct watch *w)
{
	for (long i = 0; i < w->nr; i++) {
		char *line = w->ring[(w->head + i) % w->tail];

		if (w->spec->on_line)
			w->spec->on_line(line, strlen(line), w->spec->payload);
		free(line);
	}
	free(w->ring);
	w->ring = NULL;
	w->nr = 0;
}

/* What one phase run needs, and where it stands. */
struct phase {
	struct gdn_targets *t;
	const struct gdn_loop_iter *it;
	const char *name; /* "tests", "profile" */
	long attempt, pass;
	const char *command, *workdir;
	const char *root, *suffix; /* a second tree (gdn_targets_run_tree), or NULL */
	const struct gdn_run_spec *spec;
	int rc;
};

/*
 * One try on backend b (target `label`, cluster or NULL). 0 (p->rc set,
 * *bad when the cluster has no configuration), GDN_EINTR, or another
 * error when the backend could not run it (reported, p->rc = 1).
 */
static int try_on(struct phase *p, struct gdn_backend *b, const char *label, const char *cluster,
		  bool *bad, struct gdn_err *err)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_run_spec s = *p->spec;
	struct sbuf shell = SBUF_INIT, command = SBUF_INIT, passes = SBUF_INIT;
	struct strvec env = STRVEC_INIT;
	struct watch w = {p->spec, false, 0, NULL, 0, 0};
	struct gdn_err sub = GDN_ERR_INIT;
	bool dev = b == p->t->dev, tests = !strcmp(p->name, "tests");
	bool ray = cluster && !dev;
	int64_t start = gdn_now_ms();
	const char *root = b->repo_root, *suffix = b->copy_suffix;
	int ret;

	p->t->last = b;
	if (p->t->phase_command) {
		/* "profile-champion" (--perf-ab) is the profile from another tree */
		ret = p->t->phase_command(p->t->phase_payload, p->it,
					  strncmp(p->name, "profile", 7) ? p->name : "profile", dev,
					  cluster, &command, &env, err);
		if (ret)
			goto out;
		if (env.nr)
			s.env = (const char *const *)env.v;
	}
	if (!strcmp(b->ops->type, "local")) {
		sbuf_adds(&shell, "cd -- ");
		gdn_sh_add_path(&shell, p->workdir);
		sbuf_adds(&shell, " && ");
	}
	sbuf_adds(&shell, command.len ? command.buf : p->command);
	s.argv = NULL;
	s.shell = shell.buf;
	s.on_line = watch_line;
	s.payload = &w;
	if (ray && (tests ? p->t->ray_tests_timeout_ms : p->t->ray_profile_timeout_ms) > 0)
		s.timeout_ms = tests ? p->t->ray_tests_timeout_ms : p->t->ray_profile_timeout_ms;
	if (ray && p->t->ray_log_tail > 0) {
		w.tail = p->t->ray_log_tail;
		w.ring = xcalloc((size_t)w.tail, sizeof(*w.ring));
	}
	if (p->t->passes > 0)
		sbuf_addf(&passes, "/%ld", p->t->passes);
	gdn_loop_reportf(p->it, GDN_LOOP_INFO, "validation %s on %s (pass %ld%s)", p->name, label,
			 p->pass, passes.buf);
	if (p->root && strcmp(b->ops->type, "local")) { /* the second tree, for this run only */
		b->repo_root = p->root;
		b->copy_suffix = p->suffix;
	}
	ret = b->ops->run(b, &s, &st, &sub);
	b->repo_root = root;
	b->copy_suffix = suffix;
	if (w.tail > 0)
		watch_flush(&w);
	if (ret == GDN_EINTR || gdn_proc_interrupted()) {
		ret = gdn_err_set(err, GDN_EINTR, "interrupted during validation %s on %s", p->name,
				  label);
		goto out;
	}
	if (ret) {
		gdn_loop_reportf(p->it, GDN_LOOP_WARN, "validation %s on %s could not run: %s",
				 p->name, label, sub.msg);
		st.state = GDN_JOB_FAILED;
		st.exit_code = 1;
		ret = 0;
	}
	p->rc = st.state == GDN_JOB_SUCCEEDED ? 0 : gdn_job_exit_code(&st);
	if (st.state != GDN_JOB_SUCCEEDED && !p->rc)
		p->rc = 1;
	*bad = cluster && p->rc && w.bad_cluster;
	p->it->journal(p->it->ctx, "validation",
		       json_pack("{sIsssIsIssss*sisssIsb}", "iteration",
				 (json_int_t)p->it->iteration, "phase", p->name, "attempt",
				 (json_int_t)p->attempt, "pass", (json_int_t)p->pass, "target",
				 label, "cluster", cluster, "rc", p->rc, "state",
				 gdn_job_state_name(st.state), "duration_ms",
				 (json_int_t)(gdn_now_ms() - start), "bad_cluster", *bad));
out:
	sbuf_release(&shell);
	sbuf_release(&command);
	sbuf_release(&passes);
	strvec_clear(&env);
	return ret;
}

/* A try on the held dev TPU (when held). 0 with p->rc (-1: not held), or GDN_EINTR. */
static int try_dev(struct phase *p, struct gdn_err *err)
{
	const char *c = gdn_hold_cluster(p->t->hold);
	char *label;
	bool bad = false;
	int ret;

	p->rc = -1;
	if (!c)
		return 0;
	label = xstrfmt("dev TPU (cluster %s)", c);
	ret = try_on(p, p->t->dev, label, c, &bad, err);
	free(label);
	return ret;
}

/* One pass. 0 (p->rc: 0 passed), GDN_EINTR or an error. *none: no target was left. */
static int one_pass(struct phase *p, bool *none, struct gdn_err *err)
{
	struct gdn_targets *t = p->t;
	struct sbuf why = SBUF_INIT;
	bool tried_fallback = false, any = false;
	bool tests = !strcmp(p->name, "tests");
	int ret = 0;

	*none = false;
	p->rc = 1;
	if (t->hold) {
		if (!gdn_hold_alive(t->hold, p->it)) {
			sbuf_addf(&why, "validation %s starting without an active held dev TPU",
				  p->name);
			gdn_hold_reacquire(t->hold, p->it, why.buf);
		}
		ret = try_dev(p, err);
		if (ret || !p->rc)
			goto out;
		if (p->rc > 0 && !gdn_hold_alive(t->hold, p->it)) {
			/* the allocation died under the phase: once more on a new one */
			sbuf_reset(&why);
			sbuf_addf(&why, "validation %s failed on held dev TPU", p->name);
			if (gdn_hold_reacquire(t->hold, p->it, why.buf)) {
				ret = try_dev(p, err);
				if (ret || !p->rc)
					goto out;
			}
		}
		if (p->rc > 0)
			gdn_loop_reportf(
			    p->it, GDN_LOOP_NOTE,
			    "validation %s failed on held dev TPU; trying Ray fallback.", p->name);
		if (p->rc < 0)
			p->rc = 1;
	}
	for (size_t i = 0; i < t->nr; i++) {
		struct target *x = &t->v[i];
		bool bad = false;

		if (x->bad || !(tests ? x->for_tests : x->for_profile))
			continue;
		any = true;
		tried_fallback = true;
		if (x->cluster) {
			char *label = xstrfmt("Ray cluster %s", x->cluster);

			ret =
			    try_on(p, tests ? x->tests : x->profile, label, x->cluster, &bad, err);
			free(label);
		} else {
			struct gdn_backend *b = tests ? x->tests : x->profile;
			char *label = xstrfmt("backend %s", b->name);

			ret = try_on(p, b, label, NULL, &bad, err);
			free(label);
		}
		if (ret || !p->rc)
			goto out;
		if (bad) {
			x->bad = true;
			gdn_loop_reportf(
			    p->it, GDN_LOOP_NOTE,
			    "validation Ray cluster is invalid and will be skipped in future "
			    "retries: %s",
			    x->cluster);
			p->it->journal(p->it->ctx, "validation_cluster_bad",
				       json_pack("{sIssss}", "iteration",
						 (json_int_t)p->it->iteration, "phase", p->name,
						 "cluster", x->cluster));
		}
	}
	if (!any && t->nr && t->v[0].cluster)
		gdn_loop_reportf(p->it, GDN_LOOP_NOTE,
				 "no valid Ray clusters remain for validation %s.", p->name);
	if (t->hold && tried_fallback) {
		sbuf_reset(&why);
		sbuf_addf(&why, "validation %s Ray fallback failed", p->name);
		if (gdn_hold_reacquire(t->hold, p->it, why.buf)) {
			ret = try_dev(p, err);
			if (ret || !p->rc)
				goto out;
			if (p->rc < 0)
				p->rc = 1;
		}
	}
	*none = !any && !gdn_hold_cluster(t->hold);
out:
	sbuf_release(&why);
	return ret;
}

int gdn_targets_run(struct gdn_targets *t, const struct gdn_loop_iter *it, const char *phase,
		    long attempt, const char *command, const char *workdir,
		    const struct gdn_run_spec *spec, int *rc, struct gdn_err *err)
{
	return gdn_targets_run_tree(t, it, phase, attempt, command, workdir, NULL, NULL, spec, rc,
				    err);
}

int gdn_targets_run_tree(struct gdn_targets *t, const struct gdn_loop_iter *it, const char *phase,
			 long attempt, const char *command, const char *workdir, const char *root,
			 const char *suffix, const struct gdn_run_spec *spec, int *rc,
			 struct gdn_err *err)
{
	struct phase p = {t, it, phase, attempt, 0, command, workdir, root, suffix, spec, 1};
	int ret = 0;

	for (p.pass = 1; t->passes < 0 || p.pass <= t->passes; p.pass++) {
		bool none = false;

		ret = one_pass(&p, &none, err);
		if (ret || !p.rc || none)
			break;
		if (t->passes < 0 || p.pass < t->passes) {
			gdn_loop_reportf(it, GDN_LOOP_NOTE,
					 "validation %s failed; waiting %lds before retry.", phase,
					 (t->retry_sleep_ms + 999) / 1000);
			ret = gdn_sleep_interruptible(t->retry_sleep_ms);
			if (ret) {
				gdn_err_set(err, GDN_EINTR, "interrupted during validation %s",
					    phase);
				break;
			}
		}
	}
	*rc = p.rc;
	return ret;
}
