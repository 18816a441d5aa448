/*
 * The HTTP layer of the hub clients, src/hub/http.c: one small libcurl layer with
 * retries, exponential backoff, Retry-After, stall detection and an overall deadline.
 *
 * Nothing here prints or exits. Progress and per-file events reach the
 * caller through callbacks; errors are one line in a struct gdn_err.
 * Credentials are registered with gdn_secret_add_value() when they are
 * read, never appear in error messages, and are never sent to another
 * host: a bearer token goes through CURLOPT_XOAUTH2_BEARER and Basic
 * credentials through CURLOPT_USERNAME/PASSWORD, which libcurl drops on a
 * redirect to another host, port or scheme (CURLOPT_UNRESTRICTED_AUTH off).
 */
#ifndef GDNCTL_HTTP_H
#define GDNCTL_HTTP_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

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

/*
 * A session: options and one connection cache (keep-alive across requests).
 * NULL, with err set, when libcurl cannot be loaded (see curl_load.h).
 */
struct gdn_http;
struct gdn_http *gdn_http_new(const struct gdn_http_opts *opts, struct gdn_err *err);
void gdn_http_free(struct gdn_http *h);
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

#endif
