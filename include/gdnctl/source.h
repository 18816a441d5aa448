/*
 * Trace sources over HTTP, src/hub/source.c: the Hugging Face Hub
 * (hf:ORG/REPO[/PATH]), Google Cloud Storage (gs://BUCKET/PREFIX), a W&B
 * run's profile artifact (wandb:ENTITY/PROJECT/RUN_ID[@ALIAS], or a run
 * URL) and a W&B artifact by name (wandb-artifact:ENTITY/PROJECT/NAME:ALIAS).
 *
 * Every source lists its files, keeps those the pattern selects, and
 * downloads them with one engine (hf.h): .part then rename, resume with
 * Range, the source's checksum verified, retries with backoff, --jobs,
 * the whole queue stopped at once by an interruption or the deadline.
 * Tokens are registered as secrets and never put in a message.
 *
 * The table of spellings (gdn_trace_fetch) is in include/gdnctl/trace_fetch.h.
 */
#ifndef GDNCTL_SOURCE_H
#define GDNCTL_SOURCE_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/hf.h"
#include "gdnctl/http.h"
#include "gdnctl/strvec.h"

struct gdn_config;
struct gdn_fetch_result;

struct gdn_fetch_opts {
	const char *pattern; /* POSIX ERE searched in each path; NULL: GDN_HF_DEFAULT_PATTERN */
	bool include_xplane; /* also keep *xplane.pb */
	long limit;	     /* the first N after sorting by path; <= 0: all */
	int jobs;	     /* parallel transfers; < 1: 1 */
	bool dry_run;	     /* list and select only */
	struct gdn_http_opts http; /* retries, stall, deadline (absolute gdn_now_ms(); 0: none) */
	/* hf: */
	const char *hf_token;	 /* NULL: HF_TOKEN, ..., the token file */
	int hf_repo_type;	 /* enum gdn_hf_repo_type */
	const char *hf_revision; /* NULL: main */
	/* W&B: */
	const char *wandb_entity, *wandb_project; /* for a bare run id */
	const char *wandb_alias;		  /* NULL: latest */
	const char *wandb_type;			  /* NULL: jax_profile */
	/* BACKEND:PATH (src/backend): the configuration naming the backends. */
	const struct gdn_config *config;
	/* Events (none may print from a module: they are the caller's). */
	void (*on_listed)(void *ctx, const struct gdn_fetch_result *r); /* before downloading */
	void (*on_file)(void *ctx, const struct gdn_hf_file *f);
	void (*on_progress)(void *ctx, const struct gdn_hf_progress *p);
	void *ctx;
};
#define GDN_FETCH_OPTS_INIT                                                                        \
	{                                                                                          \
		.jobs = 4, .http = GDN_HTTP_OPTS_INIT, .hf_repo_type = GDN_HF_DATASET, .limit = 0, \
	}

struct gdn_fetch_result {
	const char *kind;	   /* borrowed: "hf", "gcs", "wandb", "wandb-artifact", ... */
	char *source;		   /* the spelling asked for */
	char *endpoint;		   /* the API's URL, or NULL */
	char *resolved;		   /* what it resolved to ("ENTITY/PROJECT/NAME:v3"), or NULL */
	char *auth_source;	   /* where the credential came from (never its value), or NULL */
	char *pattern;		   /* the selection pattern used */
	char *dest_dir;		   /* where the files went */
	size_t listed;		   /* files the source listed */
	struct gdn_hf_files files; /* the selected ones, each with its state */
	struct strvec unsafe;	   /* paths skipped: not safe under dest_dir */
	struct strvec local_paths; /* files on disk after the fetch (downloaded or present) */
};
void gdn_fetch_result_init(struct gdn_fetch_result *r);
void gdn_fetch_result_release(struct gdn_fetch_result *r);

/*
 * The source fetchers (the entries of the spelling table): list `spec`,
 * select, and download into dest_dir (absolute). 0 when every selected
 * file is there (also when none matched); else the most serious code
 * (GDN_EINTR, GDN_ETIMEOUT, GDN_ENETWORK, GDN_EFAILED for a refusal or a
 * verification failure, GDN_ENOTFOUND, GDN_EUSAGE for a bad spelling)
 * with one line in err. res says what happened to each file.
 */
int gdn_source_fetch_hf(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
			struct gdn_fetch_result *res, struct gdn_err *err);
int gdn_source_fetch_gcs(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
			 struct gdn_fetch_result *res, struct gdn_err *err);
int gdn_source_fetch_wandb_run(const char *spec, const char *dest_dir,
			       const struct gdn_fetch_opts *o, struct gdn_fetch_result *res,
			       struct gdn_err *err);
int gdn_source_fetch_wandb_artifact(const char *spec, const char *dest_dir,
				    const struct gdn_fetch_opts *o, struct gdn_fetch_result *res,
				    struct gdn_err *err);

/* Spelling matchers (pure). */
bool gdn_source_is_hf(const char *spec);
bool gdn_source_is_gcs(const char *spec);
bool gdn_source_is_wandb_run(const char *spec); /* wandb:... or an http(s) URL with /runs/ */
bool gdn_source_is_wandb_artifact(const char *spec);

/*
 * Pure (fuzzed): "hf:ORG/REPO[/PATH]" into the repository and the path
 * prefix (new strings; *path NULL when absent).
 */
int gdn_source_parse_hf(const char *spec, char **repo_id, char **path, struct gdn_err *err);
/*
 * Pure (fuzzed): "wandb:ENTITY/PROJECT/RUN_ID[@ALIAS]", a run URL, or a
 * bare RUN_ID with default entity and project, into new strings (*alias
 * NULL when absent).
 */
int gdn_source_parse_wandb_run(const char *spec, const char *entity, const char *project, char **e,
			       char **p, char **r, char **alias, struct gdn_err *err);

/* The selection pattern of o (a new string). */
char *gdn_fetch_pattern(const struct gdn_fetch_opts *o);

#endif
