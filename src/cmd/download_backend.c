/*
 * `gdnctl download-trace BACKEND:PATH`: copy traces back from where a
 * configured backend ran the work (ssh, dev-tpu, slurm, local), through
 * gdn_backend_copy_back (src/backend/copyback.c). cmd_download_trace()
 * hands its arguments here first; this file answers for the spelling
 * whose prefix names a configured backend and leaves the rest alone.
 * See docs/gdnctl-download-trace.md.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/hf.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define JSON_SCHEMA "gdnctl.download_trace.v1"

static const struct opt_usage usage = {
    "gdnctl download-trace BACKEND:PATH [options]",
    "Copy profiler traces back from a configured backend (ssh, dev-tpu, slurm, local).",
    "PATH is a file, a directory or a glob on the backend, relative to its workdir\n"
    "unless absolute or ~/...; ssh and dev-tpu copy with rsync over the backend's\n"
    "ssh options; slurm reads the shared file system, else its login host\n"
    "(backends.NAME.host); local reads in place. Files go to --output-dir/<path\n"
    "under PATH> through a staging copy renamed into place; one already there with\n"
    "the same size and time is not copied again.\n"
    "Exit status: 0 done (also when nothing matched); 1 not found; 2 usage;\n"
    "3 configuration; 4 backend error (ssh, rsync); 124 --deadline passed;\n"
    "130, 143 interrupted.",
};

/* The options of the Hugging Face form that take a separate value (to skip it). */
static bool takes_value(const char *arg)
{
	static const char *const names[] = {
	    "--repo-id",       "--repo-type",	    "--revision",	  "--path-prefix",
	    "--pattern",       "--limit",	    "--output-dir",	  "--token",
	    "--jobs",	       "--retries",	    "--retry-base-delay", "--retry-max-delay",
	    "--stall-timeout", "--connect-timeout", "--deadline",
	};

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcmp(arg, names[i]))
			return true;
	return false;
}

/* "NAME:..." with NAME a possible backend name (not a URL scheme gdnctl reads itself). */
static bool backend_spelling(const char *s, struct sbuf *name)
{
	static const char *const schemes[] = {"hf",   "gs",    "wandb", "wandb-artifact",
					      "http", "https", "file"};
	const char *colon = strchr(s, ':');

	if (!colon || colon == s || s[0] == '-')
		return false;
	for (const char *p = s; p < colon; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
			return false;
	sbuf_reset(name);
	sbuf_add(name, s, (size_t)(colon - s));
	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++)
		if (!strcmp(name->buf, schemes[i]))
			return false;
	return true;
}

/* The positional BACKEND:PATH argument, or -1. */
static int find_source(int argc, const char **argv, struct sbuf *name)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return i + 1 < argc && backend_spelling(argv[i + 1], name) ? i + 1 : -1;
		if (argv[i][0] == '-') {
			if (!strchr(argv[i], '=') && takes_value(argv[i]))
				i++;
			continue;
		}
		if (backend_spelling(argv[i], name))
			return i;
	}
	return -1;
}

/* Load the configuration (download-trace does not need it otherwise). 0 or an exit code. */
static int load_config(struct gdn_ctx *ctx)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_config_load_opts lo = {0};
	int ret;

	if (ctx->config.schema)
		return 0;
	ret = gdn_repo_discover(NULL, &ctx->repo_root, &err);
	if (ret && ret != GDN_ENOTFOUND)
		return gdn_die_err(&err);
	gdn_err_clear(&err);
	lo.repo_root = ctx->repo_root;
	lo.cmdline = ctx->cfg_overrides.v;
	if (gdn_config_load(&ctx->config, &lo, &err))
		return gdn_die_err(&err);
	return 0;
}

static bool is_configured(const struct gdn_config *cfg, const char *name)
{
	struct strvec names = STRVEC_INIT;
	bool yes;

	gdn_config_map_names(cfg, "backends", &names);
	yes = strvec_contains(&names, name) || !strcmp(name, "local");
	strvec_clear(&names);
	return yes;
}

static void on_event(enum gdn_backend_event ev, const char *text, void *payload)
{
	bool quiet = *(bool *)payload;

	if (quiet)
		return;
	if (ev == GDN_EV_SPAWN || ev == GDN_EV_POLL)
		fprintf(stderr, "[gdnctl] $ %s\n", text);
	else
		fprintf(stderr, "[gdnctl] %s\n", text);
}

/* --output-dir as an absolute path (a new string). */
static char *absolute_dir(const char *dir, const char *cwd)
{
	struct sbuf sb = SBUF_INIT;

	if (dir[0] == '/')
		sbuf_adds(&sb, dir);
	else
		sbuf_addf(&sb, "%s/%s", cwd, dir);
	while (sb.len > 1 && sb.buf[sb.len - 1] == '/')
		sbuf_setlen(&sb, sb.len - 1);
	return sbuf_detach(&sb, NULL);
}

static int exit_code_of(int ret)
{
	if (ret == GDN_EINTR && gdn_proc_interrupted())
		return GDN_EXIT_SIGNAL + gdn_proc_interrupted();
	if (ret == GDN_ENOTFOUND)
		return GDN_EXIT_FAILED;
	return gdn_exit_for_error(ret);
}

bool gdn_download_backend_source(int argc, const char **argv, struct gdn_ctx *ctx, int *code)
{
	const char *output_dir = NULL, *pattern = NULL;
	int include_xplane = 0, json = 0, dry_run = 0;
	long limit = 0, jobs = 1, deadline_ms = 0;
	struct opt opts[] = {
	    OPT_STRING_(0, "pattern", &pattern, "REGEX",
			"keep files whose path under PATH matches (POSIX extended regex)",
			"perfetto_trace.json.gz, *trace.json.gz, profile.json"),
	    OPT_BOOL_(0, "include-xplane", &include_xplane, "also keep xplane.pb files"),
	    OPT_INT_(0, "limit", &limit, "N", "keep the first N files (sorted by path)", NULL, 1,
		     LONG_MAX),
	    OPT_STRING_(0, "output-dir", &output_dir, "DIR", "where files go (created)",
			".profiles/BACKEND"),
	    OPT_INT_(0, "jobs", &jobs, "N", "accepted for the other sources (one rsync stream)",
		     "1", 1, 64),
	    OPT_BOOL_(0, "dry-run", &dry_run, "list the files that would be copied"),
	    OPT_BOOL_(0, "json", &json, "print a JSON document (schema " JSON_SCHEMA ")"),
	    OPT_DURATION_(0, "deadline", &deadline_ms, "give up after this long (0: never)", "0"),
	    OPT_END_(),
	};
	struct gdn_copy_opts co = {0};
	struct gdn_copy_files files = {0};
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec rest = STRVEC_INIT, local = STRVEC_INIT;
	struct sbuf name = SBUF_INIT, pat = SBUF_INIT;
	const char *path;
	char *outdir = NULL, *dflt = NULL;
	json_t *doc = NULL, *arr = NULL; /* new, new */
	bool quiet;
	int at = find_source(argc, argv, &name), ret = 0;

	if (at < 0)
		goto not_ours;
	*code = load_config(ctx);
	if (*code)
		goto done;
	if (!is_configured(&ctx->config, name.buf))
		goto not_ours;
	*code = 0;
	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, 0, &rest, code))
		goto done;
	if (rest.nr != 1) {
		*code = gdn_usage_error("download-trace", "expected one BACKEND:PATH, got %zu",
					rest.nr);
		goto done;
	}
	path = strchr(rest.v[0], ':') + 1;
	quiet = json;
	sbuf_adds(&pat, pattern ? pattern : GDN_HF_DEFAULT_PATTERN);
	if (include_xplane) {
		char *p = sbuf_detach(&pat, NULL);

		sbuf_addf(&pat, "(%s)|(%s)", p, GDN_HF_XPLANE_PATTERN);
		free(p);
	}
	ret = gdn_backend_open(&ctx->config, name.buf, &b, &err);
	if (ret) {
		*code = gdn_die_err(&err);
		goto done;
	}
	b->repo_root = ctx->repo_root;
	b->on_event = on_event;
	b->event_payload = &quiet;
	dflt = xstrfmt(".profiles/%s", name.buf);
	outdir = absolute_dir(output_dir ? output_dir : dflt, ctx->cwd ? ctx->cwd : ".");
	co.pattern = pat.buf;
	co.deadline_ms = deadline_ms ? gdn_now_ms() + deadline_ms : 0;
	ret = gdn_backend_copy_list(b, path, &co, &files, &err);
	if (!ret && limit > 0 && files.nr > (size_t)limit) {
		for (size_t i = (size_t)limit; i < files.nr; i++)
			free(files.v[i].name);
		files.nr = (size_t)limit;
	}
	if (!ret && !files.nr && !json)
		gdn_say("No matching files found.");
	if (!ret && files.nr && dry_run && !json)
		for (size_t i = 0; i < files.nr; i++)
			gdn_say("would download %s (%" PRId64 " bytes)", files.v[i].name,
				files.v[i].size);
	if (!ret && files.nr && !dry_run) {
		struct sbuf one = SBUF_INIT;

		if (!json)
			gdn_say("downloading %zu files to %s", files.nr, outdir);
		if (limit > 0) { /* copy exactly the listed names: anchor each one */
			for (size_t i = 0; i < files.nr; i++) {
				sbuf_addf(&one, "%s^", i ? "|" : "");
				for (const char *c = files.v[i].name; *c; c++) {
					if (strchr("\\^$.|?*+()[]{}", *c))
						sbuf_addch(&one, '\\');
					sbuf_addch(&one, *c);
				}
				sbuf_addch(&one, '$');
			}
			co.pattern = one.buf;
		}
		ret = gdn_backend_copy_back(b, path, outdir, &co, &local, &err);
		for (size_t i = 0; !ret && !json && i < local.nr; i++)
			gdn_say("%s -> %s", files.v[i].name, local.v[i]);
		sbuf_release(&one);
	}
	if (ret) {
		if (!json)
			gdn_error("%s", err.msg);
		*code = exit_code_of(ret);
	}
	if (json) {
		doc = gdn_json_doc(JSON_SCHEMA);
		arr = json_array();
		json_object_set_new(doc, "source", gdn_json_string_lossy(rest.v[0]));
		json_object_set_new(doc, "backend", gdn_json_string_lossy(name.buf));
		json_object_set_new(doc, "path", gdn_json_string_lossy(path));
		json_object_set_new(doc, "output_dir", gdn_json_string_lossy(outdir));
		json_object_set_new(doc, "pattern", gdn_json_string_lossy(pat.buf));
		json_object_set_new(doc, "dry_run", json_boolean(dry_run));
		for (size_t i = 0; i < files.nr; i++) {
			json_t *o = json_object(); /* new, stolen by arr */

			json_object_set_new(o, "path", gdn_json_string_lossy(files.v[i].name));
			json_object_set_new(o, "local_path",
					    i < local.nr ? gdn_json_string_lossy(local.v[i])
							 : json_null());
			json_object_set_new(o, "size", json_integer((json_int_t)files.v[i].size));
			json_object_set_new(o, "state",
					    json_string(i < local.nr ? "downloaded"
							: dry_run    ? "pending"
								     : "failed"));
			json_array_append_new(arr, o);
		}
		json_object_set_new(doc, "files", arr);
		json_object_set_new(doc, "ok", json_boolean(!*code));
		json_object_set_new(doc, "exit_code", json_integer(*code));
		if (*code && err.msg[0])
			json_object_set_new(doc, "error", gdn_json_string_lossy(err.msg));
		if (gdn_json_print(doc) && !*code)
			*code = GDN_EXIT_FAILED;
	}
done:
	gdn_backend_free(b);
	gdn_copy_files_release(&files);
	strvec_clear(&rest);
	strvec_clear(&local);
	sbuf_release(&name);
	sbuf_release(&pat);
	free(outdir);
	free(dflt);
	return true;
not_ours:
	sbuf_release(&name);
	return false;
}
