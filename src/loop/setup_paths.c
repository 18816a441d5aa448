/*
 * The setup of `gdnctl loop`, its paths and agent (loop_setup.h): the
 * working tree, the log dir, the prompt and the session directives, the
 * run's locks, the agent driver.
 */
#include "gdnctl/compat.h"
#include "gdnctl/loop_setup.h"
#include "setup_impl.h"
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/file.h"
#include "gdnctl/journal.h"
#include "gdnctl/json.h"
#include "gdnctl/marin.h"
#include "gdnctl/proc.h"
#include "gdnctl/prompt.h"
#include "gdnctl/repo.h"
#include "gdnctl/gitops.h"
#include "gdnctl/targets.h"
#include "gdnctl/xalloc.h"

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
int setup_find_workdir(struct gdn_loop_setup *s)
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
	if (setup_find_workdir(s))
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
