/*
 * Hub clients: the Hugging Face Hub (tree listing, resumable verified
 * downloads) and Weights & Biases (GraphQL: run lookup, summary, history
 * windows), over one small libcurl layer with retries, exponential
 * backoff, Retry-After, stall detection and an overall deadline.
 *
 * Nothing here prints or exits. Progress and per-file events reach the
 * caller through callbacks; errors are one line in a struct gdn_err.
 * Credentials are registered with gdn_secret_add_value() when they are
 * read, never appear in error messages, and are never sent to another
 * host: a bearer token goes through CURLOPT_XOAUTH2_BEARER and Basic
 * credentials through CURLOPT_USERNAME/PASSWORD, which libcurl drops on a
 * redirect to another host, port or scheme (CURLOPT_UNRESTRICTED_AUTH off).
 */
#ifndef GDNCTL_HUB_H
#define GDNCTL_HUB_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/json.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

/* ---------------------------------------------------------------------- */
/* SHA-256 (FIPS 180-4), src/hub/sha256.c. */

#define GDN_SHA256_LEN 32

struct gdn_sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	unsigned char buf[64];
	size_t nbuf;
};

void gdn_sha256_init(struct gdn_sha256 *c);
void gdn_sha256_update(struct gdn_sha256 *c, const void *data, size_t len);
void gdn_sha256_final(struct gdn_sha256 *c, unsigned char out[GDN_SHA256_LEN]);
/* Lower-case hex of a digest; out holds 65 bytes. */
void gdn_sha256_hex(const unsigned char d[GDN_SHA256_LEN], char out[65]);
/*
 * The block function in use: "sha-ni" (x86 SHA extensions, chosen at run
 * time when the CPU has them) or "portable". Tests force the portable one.
 */
const char *gdn_sha256_impl(void);
void gdn_sha256_force_portable(bool on);
/* Hash a whole file (or its first `limit` bytes when limit != UINT64_MAX). */
int gdn_sha256_file(const char *path, uint64_t limit, struct gdn_sha256 *c, uint64_t *hashed,
		    struct gdn_err *err);

/* ---------------------------------------------------------------------- */
/* Text helpers, src/hub/parse.c (pure functions, fuzzed). */

/*
 * Percent-encode s: unreserved characters (A-Z a-z 0-9 - . _ ~) are kept,
 * and '/' too when keep_slash (repository paths); everything else is %XX.
 */
void gdn_url_encode(struct sbuf *out, const char *s, bool keep_slash);
/*
 * The target of the rel="next" link in a Link header value (RFC 8288:
 * comma-separated `<URI>; param=value` items; rel may list several
 * space-separated types, quoted or not). Returns a new string or NULL.
 */
char *gdn_link_next(const char *value);
/*
 * A Retry-After value in milliseconds from `now`: delta-seconds or an
 * HTTP-date (IMF-fixdate, RFC 850, asctime); a date in the past is 0.
 * Returns -1 when it cannot be parsed.
 */
long gdn_retry_after_ms(const char *value, time_t now);
/*
 * Look `host` up in the text of a .netrc file: the first `machine HOST`
 * entry, else the `default` entry. Tokens are separated by white space;
 * "quoted strings" with backslash escapes are accepted; `macdef` bodies
 * (up to an empty line) are skipped. *login and *password (new strings, or
 * NULL when the entry lacks them) are set when it returns 1; 0: no entry.
 */
int gdn_netrc_lookup(const char *text, size_t len, const char *host, char **login, char **password);
/*
 * Untrusted text for a one-line message: control bytes become '?', and
 * more than `max` bytes end in "...". A new string.
 */
char *gdn_one_line(const char *s, size_t max);
/* The host part of an http(s) URL ("api.wandb.ai"); a new string or NULL. */
char *gdn_url_host(const char *url);

/* ---------------------------------------------------------------------- */
/* The HTTP layer, src/hub/http.c. */

struct gdn_http_opts {
	int retries;	    /* attempts after the first (connection errors, 5xx, 429, stalls) */
	long retry_base_ms; /* first backoff; doubled per attempt, with jitter */
	long retry_max_ms;  /* backoff cap (Retry-After may ask for more, up to the deadline) */
	long stall_ms;	    /* abandon an attempt that moves no byte for this long; 0: never */
	long connect_timeout_ms; /* per connection attempt */
	int64_t deadline; /* absolute gdn_now_ms() time after which everything fails; 0: none */
	const char *user_agent; /* NULL: "gdnctl/VERSION" */
	/* Called about every 100 ms while requests run (progress display). */
	void (*tick)(void *ctx);
	void *tick_ctx;
};
#define GDN_HTTP_OPTS_INIT                                        \
	{                                                         \
		4, 1000, 30000, 60000, 15000, 0, NULL, NULL, NULL \
	}

struct gdn_http_req;

/* Returned by a prepare hook: nothing to fetch (the request succeeds at once). */
#define GDN_HTTP_SKIP 1
/* Returned by a complete hook: the response was not enough; retry (counts as an attempt). */
#define GDN_HTTP_AGAIN 2

struct gdn_http_hooks {
	/*
	 * Before each attempt: may set r->offset (sent as "Range: bytes=N-"
	 * when > 0), or return GDN_HTTP_SKIP. Negative: the request fails.
	 */
	int (*prepare)(struct gdn_http_req *r, struct gdn_err *err);
	/*
	 * Body bytes of a 2xx answer; `at` is the offset of data[0] in the
	 * resource: r->offset for a matching 206, 0 when the server sent the
	 * whole resource (the sink restarts). Negative: the request fails,
	 * unless the code is GDN_ENETWORK (then the attempt is retried).
	 */
	int (*body)(struct gdn_http_req *r, uint64_t at, const char *data, size_t len,
		    struct gdn_err *err);
	/* After a complete 2xx answer: 0 done, GDN_HTTP_AGAIN, or negative (fails). */
	int (*complete)(struct gdn_http_req *r, struct gdn_err *err);
	/* The request is over (r->result and r->err say how); may start nothing. */
	void (*finished)(struct gdn_http_req *r);
};

struct gdn_http_req {
	/* Set by the caller. */
	const char *url;
	const char *post;	  /* POST this body; NULL: GET */
	size_t post_len;	  /* 0: strlen(post) */
	const char *content_type; /* of the POST body */
	const char *bearer;	  /* "Authorization: Bearer" (never to another host) */
	const char *basic_user;	  /* HTTP Basic (never to another host) */
	const char *basic_password;
	bool follow_redirects;		    /* http/https only, at most 10 */
	size_t body_max;		    /* without a body hook: cap of resp (0: 64 MiB) */
	const struct gdn_http_hooks *hooks; /* NULL: the body goes to resp */
	void *data;			    /* the caller's */

	/* Per attempt. */
	uint64_t offset; /* Range start, set by prepare */

	/* Results. */
	int result; /* 0 or a negative gdn_errcode */
	struct gdn_err err;
	long status;		/* HTTP status of the last answer (0: none) */
	int attempts;		/* attempts made */
	int64_t bytes;		/* body bytes received over every attempt */
	struct sbuf resp;	/* the body (no hooks), or the start of an error body */
	char *link_next;	/* rel="next" of the last 2xx answer, resolved (owned) */
	char *content_type_got; /* Content-Type of the last answer (owned) */
	bool skipped;		/* prepare returned GDN_HTTP_SKIP */
	int64_t last_byte_ms;	/* gdn_now_ms() of the last body byte (stall detection) */
	void *priv;		/* the layer's state while running */
};

/* A session: options and one connection cache (keep-alive across requests). */
struct gdn_http;
struct gdn_http *gdn_http_new(const struct gdn_http_opts *opts);
void gdn_http_free(struct gdn_http *h);
const struct gdn_http_opts *gdn_http_opts(const struct gdn_http *h);
/* Replace the tick callback (a client's own progress while it runs requests). */
void gdn_http_set_tick(struct gdn_http *h, void (*tick)(void *ctx), void *ctx);

/*
 * Run requests, at most `jobs` at a time (libcurl multi), each retried on
 * its own. Every request gets a result. Returns 0 when all succeeded, else
 * the code of the first failed request (in array order) with its message
 * in err. GDN_EINTR when gdnctl got SIGINT/SIGTERM (every request stops);
 * GDN_ETIMEOUT when the deadline passed; GDN_ENETWORK after the retries.
 */
int gdn_http_run(struct gdn_http *h, struct gdn_http_req *const *reqs, size_t nr, int jobs,
		 struct gdn_err *err);
/* Free what a request owns (resp, link_next); the request can be run again. */
void gdn_http_req_release(struct gdn_http_req *r);

/*
 * Whether an HTTP status is worth retrying (408, 429, 5xx), and the
 * backoff before attempt `attempt` (1-based retry number) without jitter.
 */
bool gdn_http_status_retryable(long status);
long gdn_http_backoff_ms(const struct gdn_http_opts *o, int attempt);

/* ---------------------------------------------------------------------- */
/* Hugging Face Hub, src/hub/hf.c. */

#define GDN_HF_DEFAULT_ENDPOINT "https://huggingface.co"
/*
 * The default file pattern (POSIX extended regex, searched in the repo
 * path): what the original tool meant before its over-escaping bug.
 */
#define GDN_HF_DEFAULT_PATTERN "(perfetto_trace\\.json\\.gz$|trace\\.json\\.gz$|profile\\.json$)"
#define GDN_HF_XPLANE_PATTERN  "xplane\\.pb$"

enum gdn_hf_repo_type {
	GDN_HF_DATASET,
	GDN_HF_MODEL,
	GDN_HF_SPACE,
};
/* "dataset", "model", "space" (--repo-type). */
extern const struct gdn_enum gdn_hf_repo_type_enum[];
/* The type named `s`; returns -1 for anything else. */
int gdn_hf_repo_type_parse(const char *s);
const char *gdn_hf_repo_type_name(enum gdn_hf_repo_type t);

enum gdn_hf_state {
	GDN_HF_PENDING = 0,
	GDN_HF_DOWNLOADED, /* fetched, verified, renamed into place */
	GDN_HF_PRESENT,	   /* already there and verified: not fetched */
	GDN_HF_FAILED,	   /* result and error say why */
};

struct gdn_hf_file {
	char *path;	 /* repository path (owned) */
	uint64_t size;	 /* bytes (lfs.size for LFS files) */
	char *oid;	 /* git blob id, or NULL (owned) */
	bool lfs;	 /* sha256 below is known */
	char sha256[65]; /* lfs.oid, lower-case hex, when lfs */
	bool has_xet;	 /* listing carried a xetHash */
	/* Download results. */
	char *local_path; /* absolute (owned) */
	enum gdn_hf_state state;
	int result;	  /* negative gdn_errcode when FAILED */
	char *error;	  /* one line when FAILED (owned) */
	uint64_t resumed; /* bytes reused from an earlier .part */
	int attempts;	  /* HTTP attempts */
	int64_t fetch_ms; /* time spent fetching */
	uint64_t fetched; /* body bytes received */
};

struct gdn_hf_files {
	struct gdn_hf_file *v;
	size_t nr, alloc;
	size_t ignored; /* directories and entries of other types */
	size_t pages;	/* listing pages read */
};

void gdn_hf_files_release(struct gdn_hf_files *f);

/*
 * Parse one page of the tree listing (a JSON array of {type, path, size,
 * oid, lfs{oid,size,pointerSize}, xetHash}) and append its files. Entries
 * of other types are counted in out->ignored; malformed entries are errors.
 */
int gdn_hf_parse_tree(const char *json, size_t len, struct gdn_hf_files *out, struct gdn_err *err);

/*
 * Whether a repository path can be written under a directory: relative,
 * non-empty components, no "." or "..", no backslash or control byte.
 */
bool gdn_hf_path_safe(const char *path);

struct gdn_hf_select {
	const char *path_prefix; /* keep files equal to or under it ('/' trimmed); NULL: all */
	const void *regex;	 /* a compiled regex_t searched in the path; NULL: all */
	long limit;		 /* keep the first N after sorting; <= 0: all */
};
/*
 * Filter by prefix and regex, drop unsafe paths (appended to `unsafe`),
 * sort by path (byte order, as Python's sorted()), and cut to the limit.
 */
void gdn_hf_select_files(struct gdn_hf_files *files, const struct gdn_hf_select *sel,
			 struct strvec *unsafe);

/* URLs. The revision is one encoded segment ("refs%2Fpr%2F1"); paths keep '/'. */
void gdn_hf_tree_url(struct sbuf *out, const char *endpoint, enum gdn_hf_repo_type type,
		     const char *repo_id, const char *revision);
void gdn_hf_resolve_url(struct sbuf *out, const char *endpoint, enum gdn_hf_repo_type type,
			const char *repo_id, const char *revision, const char *path);

/*
 * The endpoint: HF_ENDPOINT, else https://huggingface.co (a new string, no
 * trailing '/'). The token: `explicit`, else HF_TOKEN, else
 * HUGGING_FACE_HUB_TOKEN, else the token file (HF_TOKEN_PATH, else
 * $HF_HOME/token, else $XDG_CACHE_HOME/huggingface/token, else
 * ~/.cache/huggingface/token). *token is a new string or NULL (anonymous);
 * *source (new string) names where it came from, never the value. A token
 * with control characters or spaces is a GDN_EUSAGE error.
 */
char *gdn_hf_endpoint(void);
int gdn_hf_find_token(const char *explicit_token, char **token, char **source, struct gdn_err *err);

struct gdn_hf {
	char *endpoint;
	char *token; /* NULL: anonymous */
	struct gdn_http *http;
};

int gdn_hf_init(struct gdn_hf *hf, const char *endpoint, const char *token,
		const struct gdn_http_opts *opts, struct gdn_err *err);
void gdn_hf_release(struct gdn_hf *hf);

/*
 * List every file of a repository revision (recursive tree listing,
 * following Link rel="next" pages on the same host). A 404 is
 * GDN_ENOTFOUND, another refusal (401, 403) GDN_EFAILED, both with the
 * server's message; network failures after the retries GDN_ENETWORK,
 * the deadline GDN_ETIMEOUT, a malformed page GDN_EPARSE.
 */
int gdn_hf_list(struct gdn_hf *hf, enum gdn_hf_repo_type type, const char *repo_id,
		const char *revision, struct gdn_hf_files *out, struct gdn_err *err);

struct gdn_hf_progress {
	size_t files_total, files_done, files_failed;
	uint64_t bytes_total; /* sizes of the files to fetch */
	uint64_t bytes_done;  /* verified or received bytes */
	int active;	      /* transfers running now */
	int64_t elapsed_ms;
};

struct gdn_hf_download_opts {
	enum gdn_hf_repo_type type;
	const char *repo_id;
	const char *revision;
	const char *output_dir; /* absolute; created as needed */
	int jobs;		/* parallel transfers (>= 1) */
	/* A file finished (downloaded, present or failed); in completion order. */
	void (*on_file)(void *ctx, const struct gdn_hf_file *f);
	/* About every 100 ms and after each file. */
	void (*on_progress)(void *ctx, const struct gdn_hf_progress *p);
	void *ctx;
};

/*
 * Download every file into output_dir/<path>: written to <path>.part,
 * resumed with Range after an interruption (also from an earlier run),
 * verified against the listing's size and LFS sha256, fsync'ed and renamed
 * into place. A file already there and verified is left alone. Every file
 * gets a state. Returns 0 when none failed; else the most serious code
 * (GDN_EINTR, GDN_ETIMEOUT, GDN_ENETWORK, then a verification failure
 * GDN_EFAILED, then others) with the first such file's error in err.
 */
int gdn_hf_download(struct gdn_hf *hf, struct gdn_hf_files *files,
		    const struct gdn_hf_download_opts *o, struct gdn_err *err);

/* ---------------------------------------------------------------------- */
/* Weights & Biases, src/hub/wandb.c. */

#define GDN_WANDB_DEFAULT_BASE_URL "https://api.wandb.ai"

enum gdn_metric_status {
	GDN_METRIC_OK = 0,
	GDN_METRIC_MISSING,	/* no such key, or no point in the window */
	GDN_METRIC_NONFINITE,	/* NaN or +-Infinity (summary), or only such points (history) */
	GDN_METRIC_NOT_NUMERIC, /* a string, object, list or bool */
	GDN_METRIC_TOO_FEW,	/* fewer finite points in the window than min_points */
};
/* "ok", "missing", "non-finite", "not-numeric", "too-few-points". */
extern const struct gdn_enum gdn_metric_status_enum[];
const char *gdn_metric_status_name(enum gdn_metric_status s);

struct gdn_metric {
	char *key;
	enum gdn_metric_status status;
	double value;	  /* only meaningful when status is OK */
	size_t points;	  /* finite points used (history); 1 or 0 (summary) */
	size_t nonfinite; /* non-finite points seen in the window (skipped) */
};

struct gdn_wandb_run {
	char *entity, *project;
	char *name;	    /* the run id ("3xk2q1ab") */
	char *display_name; /* or NULL */
	char *state;	    /* running, finished, crashed, failed, killed; or NULL */
	char *created_at;   /* ISO 8601 as the server wrote it; or NULL */
	char *summary_json; /* summaryMetrics: a JSON string (decoded once); or NULL */
	char *url;	    /* https://wandb.ai/<entity>/<project>/runs/<name> */
};
void gdn_wandb_run_release(struct gdn_wandb_run *r);

struct gdn_metric_set {
	struct gdn_metric *v;
	size_t nr, alloc;
	struct gdn_wandb_run run; /* the run the values came from */
	char *source;		  /* "wandb-summary" or "wandb-history-median[10:18]" */
};
void gdn_metric_set_release(struct gdn_metric_set *s);
const struct gdn_metric *gdn_metric_set_get(const struct gdn_metric_set *s, const char *key);

/*
 * A run reference: a URL (https://wandb.ai/E/P/runs/R, any host, with or
 * without query, fragment or trailing path), E/P/R or E/P/runs/R. The
 * three parts are new strings. GDN_EUSAGE with a message otherwise.
 */
int gdn_wandb_parse_run_ref(const char *ref, char **entity, char **project, char **run,
			    struct gdn_err *err);

enum gdn_agg {
	GDN_AGG_MEDIAN,
	GDN_AGG_MEAN,
};
/* "median", "mean" */
extern const struct gdn_enum gdn_agg_enum[];

struct gdn_history_window {
	int64_t step_min, step_max; /* inclusive; INT64_MIN/INT64_MAX: open */
	enum gdn_agg agg;
	size_t min_points; /* fewer finite points: GDN_METRIC_TOO_FEW */
	int samples;	   /* sampledHistory samples per key; 0: 1000 */
};
/* "A:B" (either side may be empty: open) into step_min/step_max. */
int gdn_history_parse_steps(const char *s, struct gdn_history_window *w, struct gdn_err *err);

/*
 * Pure helpers (unit tested, fuzzed). Decode the summaryMetrics string and
 * fill one metric per key. Bare NaN/Infinity tokens in the JSON (Python's
 * json.dumps writes them) are accepted and reported as non-finite.
 */
int gdn_wandb_summary_from_json(const char *summary_json, const char *const *keys,
				struct gdn_metric_set *out, struct gdn_err *err);
/*
 * Aggregate sampledHistory rows for each key. `rows_json` is the GraphQL
 * "sampledHistory" value: one array of row objects per key, in key order
 * (each row has "_step" and the key). Rows outside the window are ignored.
 */
int gdn_wandb_history_from_json(const char *rows_json, const char *const *keys,
				const struct gdn_history_window *w, struct gdn_metric_set *out,
				struct gdn_err *err);
/* Median (average of the middle two) or mean of n values; sorts v. */
double gdn_agg_values(double *v, size_t n, enum gdn_agg agg);
/*
 * Parse a GraphQL answer body: check of "errors" (the
 * first message becomes the error) and "data". *data is a new reference.
 */
int gdn_graphql_parse(const char *body, size_t len, json_t **data, struct gdn_err *err);

struct gdn_wandb {
	char *base_url; /* no trailing '/' */
	char *api_key;	/* NULL: anonymous */
	char *key_source;
	struct gdn_http *http;
};

/*
 * base_url NULL: WANDB_BASE_URL, else https://api.wandb.ai. api_key NULL:
 * WANDB_API_KEY, else the password of `machine <host>` in $NETRC or
 * ~/.netrc, else anonymous.
 */
int gdn_wandb_init(struct gdn_wandb *c, const char *base_url, const char *api_key,
		   const struct gdn_http_opts *opts, struct gdn_err *err);
void gdn_wandb_release(struct gdn_wandb *c);

/*
 * Find a run by id, then (as the original tool did) by display name among
 * the project's newest runs. GDN_ENOTFOUND when there is none.
 */
int gdn_wandb_get_run(struct gdn_wandb *c, const char *run_ref, struct gdn_wandb_run *out,
		      struct gdn_err *err);
/*
 * The newest run (order -created_at) whose name or display name starts
 * with "<prefix>_", scanning at most max_runs runs (0: 1000).
 * GDN_ENOTFOUND when there is none.
 */
int gdn_wandb_find_run(struct gdn_wandb *c, const char *entity, const char *project,
		       const char *prefix, int max_runs, struct gdn_wandb_run *out,
		       struct gdn_err *err);
/* Summary values of `keys` (NULL-terminated) for a run reference. */
int gdn_wandb_summary(struct gdn_wandb *c, const char *run_ref, const char *const *keys,
		      struct gdn_metric_set *out, struct gdn_err *err);
/* History window aggregate of `keys` for a run reference. */
int gdn_wandb_history_agg(struct gdn_wandb *c, const char *run_ref, const char *const *keys,
			  const struct gdn_history_window *w, struct gdn_metric_set *out,
			  struct gdn_err *err);

#endif
