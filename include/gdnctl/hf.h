/*
 * The Hugging Face Hub client, src/hub/hf.c: tree listing, resumable
 * verified downloads (over http.h).
 */
#ifndef GDNCTL_HF_H
#define GDNCTL_HF_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/http.h"
#include "gdnctl/md5.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

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
	/*
	 * Never started: an interruption or the deadline stopped the queue
	 * first (result is GDN_EINTR or GDN_ETIMEOUT; on_file is not called).
	 */
	GDN_HF_CANCELLED,
};

struct gdn_hf_file {
	char *path;	 /* repository path (owned) */
	uint64_t size;	 /* bytes (lfs.size for LFS files) */
	char *oid;	 /* git blob id, or NULL (owned) */
	bool lfs;	 /* sha256 below is known */
	char sha256[65]; /* lfs.oid, lower-case hex, when lfs */
	bool has_xet;	 /* listing carried a xetHash */
	/*
	 * The other sources (src/hub/source.c) use the same record: the URL
	 * to fetch (else the hub's resolve URL), a base64 MD5 to verify (GCS
	 * md5Hash, W&B manifest digest), and no_auth for a signed URL on
	 * another host (no credential is ever sent with it).
	 */
	char *url; /* owned, or NULL */
	bool has_md5;
	char md5[GDN_MD5_B64_SIZE];
	bool no_auth;
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
 * The token: `explicit`, else HF_TOKEN, else
 * HUGGING_FACE_HUB_TOKEN, else the token file (HF_TOKEN_PATH, else
 * $HF_HOME/token, else $XDG_CACHE_HOME/huggingface/token, else
 * ~/.cache/huggingface/token). *token is a new string or NULL (anonymous);
 * *source (new string) names where it came from, never the value. A token
 * with control characters or spaces is a GDN_EUSAGE error.
 */
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
	/* HTTP Basic credentials for every file without no_auth (W&B); else the hub token. */
	const char *basic_user, *basic_password;
};

/*
 * Download every file into output_dir/<path>: written to <path>.part,
 * resumed with Range after an interruption (also from an earlier run),
 * verified against the listing's size and LFS sha256 (or MD5), fsync'ed and
 * renamed into place. A file already there and verified is left alone.
 * Files go in batches, so memory does not grow with the queue; when one
 * ends interrupted or past the deadline, the files not yet started are
 * CANCELLED at once. Every file gets a state. Returns 0 when none failed;
 * else the most serious code
 * (GDN_EINTR, GDN_ETIMEOUT, GDN_ENETWORK, then a verification failure
 * GDN_EFAILED, then others) with the first such file's error in err.
 */
int gdn_hf_download(struct gdn_hf *hf, struct gdn_hf_files *files,
		    const struct gdn_hf_download_opts *o, struct gdn_err *err);

#endif
