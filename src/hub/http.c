/*
 * A small HTTP layer over libcurl's multi interface, shared by the hub
 * clients: several requests at once, each retried on its own with
 * exponential backoff (connection errors, 408, 429, 5xx, stalls),
 * Retry-After honoured, a stall detector (no byte for stall_ms), an
 * overall deadline, and SIGINT/SIGTERM noticed within 100 ms.
 *
 * Credentials: a bearer token goes through CURLOPT_XOAUTH2_BEARER with
 * CURLAUTH_BEARER and Basic credentials through CURLOPT_USERNAME and
 * CURLOPT_PASSWORD, with CURLOPT_UNRESTRICTED_AUTH off. libcurl sends
 * them only while the host, port and scheme are those of the first
 * request, so a redirect to a CDN never carries them. No custom
 * Authorization header is ever set (libcurl would keep it on a redirect
 * to the same host name only since 7.58, and not for every case).
 */
#include "gdnctl/compat.h"
#include <curl/curl.h>
#include "gdnctl/curl_load.h"
#include "gdnctl/err.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/http.h"
#include "gdnctl/json.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define DEFAULT_BODY_MAX ((size_t)64 << 20)
#define ERROR_BODY_MAX	 4096
#define HEADER_VALUE_MAX 8192
#define TICK_MS		 100
#define DOWNLOAD_BUFSIZE (256L << 10)
#define MAX_REDIRECTS	 10L
#define DETAIL_MAX	 200

struct gdn_http {
	struct gdn_http_opts o;
	CURLM *multi;
	char *user_agent;
	uint64_t rng;
};

enum xfer_state {
	X_WAITING,
	X_RUNNING,
	X_DONE,
};

/* The layer's state of one request while gdn_http_run runs. */
struct xfer {
	struct gdn_http *h;
	struct gdn_http_req *r;
	CURL *easy;
	struct curl_slist *headers;
	enum xfer_state state;
	int64_t next_at;       /* start of the next attempt (gdn_now_ms) */
	int64_t last_activity; /* last byte (header or body) of this attempt */
	/* The answer being received (reset at each status line). */
	long status;
	bool saw_body;
	uint64_t at; /* offset of the next body byte in the resource */
	long retry_after_ms;
	bool has_content_range;
	uint64_t cr_start;
	struct sbuf link;
	struct sbuf ctype;
	/* How the attempt ended, besides curl's code. */
	bool stalled;
	bool too_large;
	int hook_code;
	struct gdn_err hook_err;
	struct sbuf last_error; /* why the last attempt failed (for the final message) */
	char errbuf[CURL_ERROR_SIZE];
	char range[32];
};

struct gdn_http *gdn_http_new(const struct gdn_http_opts *opts, struct gdn_err *err)
{
	struct gdn_http *h;
	struct gdn_http_opts def = GDN_HTTP_OPTS_INIT;

	if (gdn_curl_load(err))
		return NULL;
	h = xcalloc(1, sizeof(*h));
	h->o = opts ? *opts : def;
	if (h->o.retries < 0)
		h->o.retries = 0;
	h->user_agent = xstrdup(h->o.user_agent ? h->o.user_agent : "gdnctl/" GDNCTL_VERSION);
	h->o.user_agent = h->user_agent;
	h->multi = curl_multi_init();
	if (!h->multi)
		BUG("curl_multi_init failed");
	h->rng = (uint64_t)gdn_now_ms() * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
	return h;
}

void gdn_http_free(struct gdn_http *h)
{
	if (!h)
		return;
	curl_multi_cleanup(h->multi);
	free(h->user_agent);
	free(h);
}

void gdn_http_set_tick(struct gdn_http *h, void (*tick)(void *ctx), void *ctx)
{
	h->o.tick = tick;
	h->o.tick_ctx = ctx;
}

void gdn_http_req_release(struct gdn_http_req *r)
{
	sbuf_release(&r->resp);
	FREE_AND_NULL(r->link_next);
	FREE_AND_NULL(r->content_type_got);
}

bool gdn_http_status_retryable(long status)
{
	return status == 408 || status == 429 || (status >= 500 && status <= 599);
}

long gdn_http_backoff_ms(const struct gdn_http_opts *o, int attempt)
{
	long d = o->retry_base_ms > 0 ? o->retry_base_ms : 0;

	for (int i = 1; i < attempt && d < o->retry_max_ms; i++)
		d *= 2;
	if (o->retry_max_ms > 0 && d > o->retry_max_ms)
		d = o->retry_max_ms;
	return d;
}

static uint64_t next_rand(struct gdn_http *h)
{
	/* xorshift64*: jitter only, nothing secret. */
	h->rng ^= h->rng >> 12;
	h->rng ^= h->rng << 25;
	h->rng ^= h->rng >> 27;
	return h->rng * 2685821657736338717ULL;
}

/* The URL without query or fragment, for messages (signed URLs stay out of logs). */
static void url_for_message(struct sbuf *out, const char *url)
{
	sbuf_add(out, url, strcspn(url, "?#"));
}

/* ---- libcurl callbacks ---- */

static void reset_answer(struct xfer *x)
{
	x->status = 0;
	x->saw_body = false;
	x->retry_after_ms = -1;
	x->has_content_range = false;
	x->cr_start = 0;
	sbuf_reset(&x->link);
	sbuf_reset(&x->ctype);
}

static bool header_is(const char *line, size_t len, const char *name, const char **value,
		      size_t *vlen)
{
	size_t nl = strlen(name);
	const char *v, *end = line + len;

	if (len <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return false;
	v = line + nl + 1;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*value = v;
	*vlen = (size_t)(end - v);
	return true;
}

static size_t on_header(char *line, size_t size, size_t n, void *data)
{
	struct xfer *x = data;
	size_t len = size * n;
	const char *v;
	size_t vlen;

	x->last_activity = gdn_now_ms();
	if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
		const char *sp = memchr(line, ' ', len);

		reset_answer(x);
		if (sp) {
			long st = 0;

			for (sp++; sp < line + len && isdigit((unsigned char)*sp); sp++)
				st = st * 10 + (*sp - '0');
			x->status = st;
		}
		return len;
	}
	if ((header_is(line, len, "Link", &v, &vlen) ||
	     header_is(line, len, "Retry-After", &v, &vlen)) &&
	    memchr(v, '\0', vlen)) {
		; /* a NUL byte would cut the value short (a URL, a number): ignored */
	} else if (header_is(line, len, "Link", &v, &vlen)) {
		if (x->link.len)
			sbuf_addch(&x->link, ',');
		sbuf_add(&x->link, v, vlen);
	} else if (header_is(line, len, "Retry-After", &v, &vlen)) {
		char *val = xstrndup(v, vlen < 64 ? vlen : 64);

		x->retry_after_ms = gdn_retry_after_ms(val, time(NULL));
		free(val);
	} else if (header_is(line, len, "Content-Range", &v, &vlen)) {
		/* "bytes START-END/TOTAL" */
		const char *p = v, *end = v + vlen;
		uint64_t start = 0;
		bool digits = false;

		if (vlen > 6 && !strncasecmp(p, "bytes ", 6)) {
			for (p += 6; p < end && isdigit((unsigned char)*p); p++) {
				start = start * 10 + (uint64_t)(*p - '0');
				digits = true;
			}
			if (digits && p < end && *p == '-') {
				x->has_content_range = true;
				x->cr_start = start;
			}
		}
	} else if (header_is(line, len, "Content-Type", &v, &vlen)) {
		sbuf_reset(&x->ctype);
		sbuf_add(&x->ctype, v, vlen);
	}
	return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	struct gdn_http_req *r = x->r;
	size_t len = size * n;

	x->last_activity = gdn_now_ms();
	r->last_byte_ms = x->last_activity;
	r->bytes += (int64_t)len;
	if (x->status < 200 || x->status > 299) {
		/* An error answer: keep its start for the message. */
		if (r->resp.len < ERROR_BODY_MAX)
			sbuf_add(&r->resp, data,
				 len < ERROR_BODY_MAX - r->resp.len ? len
								    : ERROR_BODY_MAX - r->resp.len);
		return len;
	}
	if (!r->hooks || !r->hooks->body) {
		size_t max = r->body_max ? r->body_max : DEFAULT_BODY_MAX;

		if (r->resp.len + len > max) {
			x->too_large = true;
			return 0;
		}
		sbuf_add(&r->resp, data, len);
		return len;
	}
	if (!x->saw_body) {
		x->saw_body = true;
		if (x->status == 206) {
			if (!x->has_content_range || x->cr_start != r->offset) {
				x->hook_code = gdn_err_set(
				    &x->hook_err, GDN_ENETWORK,
				    "the server answered a range request from byte %" PRIu64
				    " with another range",
				    r->offset);
				return 0;
			}
			x->at = r->offset;
		} else {
			x->at = 0; /* the whole resource: the sink starts over */
		}
	}
	x->hook_code = r->hooks->body(r, x->at, data, len, &x->hook_err);
	if (x->hook_code < 0)
		return 0;
	x->hook_code = 0;
	x->at += len;
	return len;
}

/* ---- attempts ---- */

static void finish(struct xfer *x, int result)
{
	struct gdn_http_req *r = x->r;

	x->state = X_DONE;
	r->result = result;
	if (!result)
		gdn_err_clear(&r->err);
	if (x->easy) {
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
	}
	curl_slist_free_all(x->headers);
	x->headers = NULL;
	if (r->hooks && r->hooks->finished)
		r->hooks->finished(r);
}

static int setup_easy(struct xfer *x)
{
	struct gdn_http_req *r = x->r;
	const struct gdn_http_opts *o = &x->h->o;
	CURL *e = curl_easy_init();

	if (!e)
		return -1;
	x->easy = e;
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, r->follow_redirects ? 1L : 0L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
	curl_easy_setopt(e, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, o->user_agent);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	if (o->connect_timeout_ms > 0)
		curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
	if (r->bearer && *r->bearer) {
		curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, r->bearer);
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
	} else if (r->basic_user || r->basic_password) {
		curl_easy_setopt(e, CURLOPT_USERNAME, r->basic_user ? r->basic_user : "");
		curl_easy_setopt(e, CURLOPT_PASSWORD, r->basic_password ? r->basic_password : "");
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	}
	if (r->hooks && r->hooks->body) {
		curl_easy_setopt(e, CURLOPT_BUFFERSIZE, DOWNLOAD_BUFSIZE);
	} else {
		/* Bodies kept in memory (listings, GraphQL): compression welcome. */
		curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
		x->headers = curl_slist_append(x->headers, "Accept: application/json");
	}
	if (r->post) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->post);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(r->post_len ? r->post_len : strlen(r->post)));
		if (r->content_type) {
			char *h = xstrfmt("Content-Type: %s", r->content_type);

			x->headers = curl_slist_append(x->headers, h);
			free(h);
		}
		x->headers = curl_slist_append(x->headers, "Expect:");
	}
	if (x->headers)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
	return 0;
}

static void start_attempt(struct xfer *x)
{
	struct gdn_http_req *r = x->r;
	const struct gdn_http_opts *o = &x->h->o;
	int64_t now = gdn_now_ms();
	int rc = 0;

	r->offset = 0;
	x->stalled = false;
	x->too_large = false;
	x->hook_code = 0;
	x->errbuf[0] = '\0';
	gdn_err_clear(&x->hook_err);
	reset_answer(x);
	sbuf_reset(&r->resp);
	if (r->hooks && r->hooks->prepare)
		rc = r->hooks->prepare(r, &x->hook_err);
	if (rc == GDN_HTTP_SKIP) {
		r->skipped = true;
		finish(x, 0);
		return;
	}
	if (rc < 0) {
		r->err = x->hook_err;
		finish(x, rc);
		return;
	}
	if (!x->easy && setup_easy(x)) {
		finish(x, gdn_err_set(&r->err, GDN_EIO, "cannot set up a transfer (libcurl)"));
		return;
	}
	if (r->offset > 0) {
		snprintf(x->range, sizeof(x->range), "%" PRIu64 "-", r->offset);
		curl_easy_setopt(x->easy, CURLOPT_RANGE, x->range);
	} else {
		curl_easy_setopt(x->easy, CURLOPT_RANGE, NULL);
	}
	if (o->deadline > 0)
		curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS,
				 (long)(o->deadline > now ? o->deadline - now : 1));
	r->attempts++;
	x->last_activity = now;
	if (curl_multi_add_handle(x->h->multi, x->easy) != CURLM_OK) {
		finish(x, gdn_err_set(&r->err, GDN_EIO, "cannot start a transfer (libcurl)"));
		return;
	}
	x->state = X_RUNNING;
}

/* A short, one-line, masked excerpt of an error body: JSON "error"/"message", else text. */
static void error_detail(struct sbuf *out, const struct sbuf *body)
{
	struct sbuf d = SBUF_INIT;
	json_t *j = NULL; /* new */
	const char *s = NULL;

	if (!body->len)
		return;
	j = json_loadb(body->buf, body->len, 0, NULL);
	if (json_is_object(j)) {
		json_t *e = json_object_get(j, "error"); /* borrowed */

		if (json_is_object(e)) /* Google APIs: {"error": {"code", "message"}} */
			e = json_object_get(e, "message");
		if (!json_is_string(e))
			e = json_object_get(j, "message");
		if (!json_is_string(e)) /* GraphQL: {"errors": [{"message": ...}]} */
			e = json_object_get(json_array_get(json_object_get(j, "errors"), 0),
					    "message");
		if (json_is_string(e))
			s = json_string_value(e);
	}
	if (s)
		sbuf_adds(&d, s);
	else if (!j)
		sbuf_add(&d, body->buf, body->len);
	for (size_t i = 0; i < d.len; i++)
		if ((unsigned char)d.buf[i] < 0x20 || d.buf[i] == 0x7f)
			d.buf[i] = ' ';
	sbuf_trim(&d);
	gdn_secret_mask(&d);
	if (d.len > DETAIL_MAX) {
		sbuf_setlen(&d, DETAIL_MAX);
		sbuf_adds(&d, "...");
	}
	if (d.len)
		sbuf_addf(out, ": %s", d.buf);
	json_decref(j);
	sbuf_release(&d);
}

static bool curl_code_retryable(CURLcode cc)
{
	switch (cc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_TOO_MANY_REDIRECTS:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_LOGIN_DENIED:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_OUT_OF_MEMORY:
	case CURLE_FILESIZE_EXCEEDED:
	case CURLE_WRITE_ERROR:
	case CURLE_ABORTED_BY_CALLBACK:
	case CURLE_FAILED_INIT:
		return false;
	default:
		return true;
	}
}

/* Plan the next attempt, or fail for good. `why` describes the failed attempt. */
static void retry_or_fail(struct xfer *x, const char *why, long retry_after_ms, long min_delay)
{
	struct gdn_http_req *r = x->r;
	const struct gdn_http_opts *o = &x->h->o;
	struct sbuf u = SBUF_INIT;
	int64_t now = gdn_now_ms();
	long delay;

	sbuf_reset(&x->last_error);
	sbuf_adds(&x->last_error, why);
	url_for_message(&u, r->url);
	if (r->attempts > o->retries) {
		finish(x, gdn_err_set(&r->err, GDN_ENETWORK, "cannot fetch '%s': %s (%d attempt%s)",
				      u.buf, why, r->attempts, r->attempts == 1 ? "" : "s"));
		goto out;
	}
	delay = gdn_http_backoff_ms(o, r->attempts);
	if (delay > 1)
		delay = delay / 2 + (long)(next_rand(x->h) % (uint64_t)(delay / 2 + 1));
	if (delay < min_delay)
		delay = min_delay;
	if (retry_after_ms > delay)
		delay = retry_after_ms;
	if (o->deadline > 0 && now + delay >= o->deadline) {
		finish(x, gdn_err_set(&r->err, GDN_ETIMEOUT,
				      "cannot fetch '%s': the deadline passed while retrying: %s",
				      u.buf, why));
		goto out;
	}
	x->next_at = now + delay;
	x->state = X_WAITING;
out:
	sbuf_release(&u);
}

static void resolve_link(struct xfer *x)
{
	struct gdn_http_req *r = x->r;
	char *eff = NULL, *abs = NULL, *rel = NULL;
	CURLU *u = NULL;

	FREE_AND_NULL(r->link_next);
	if (!x->link.len)
		return;
	rel = gdn_link_next(x->link.buf);
	if (!rel)
		goto out;
	curl_easy_getinfo(x->easy, CURLINFO_EFFECTIVE_URL, &eff);
	u = curl_url();
	if (!u || curl_url_set(u, CURLUPART_URL, eff ? eff : r->url, 0) ||
	    curl_url_set(u, CURLUPART_URL, rel, 0) || curl_url_get(u, CURLUPART_URL, &abs, 0))
		goto out;
	r->link_next = xstrdup(abs);
out:
	curl_free(abs);
	curl_url_cleanup(u);
	free(rel);
}

/* An attempt ended with curl code cc (or was abandoned: stalled). */
static void attempt_done(struct xfer *x, CURLcode cc)
{
	struct gdn_http_req *r = x->r;
	const struct gdn_http_opts *o = &x->h->o;
	struct sbuf why = SBUF_INIT, u = SBUF_INIT;
	int rc;

	curl_multi_remove_handle(x->h->multi, x->easy);
	r->status = x->status;
	url_for_message(&u, r->url);
	FREE_AND_NULL(r->content_type_got);
	if (x->ctype.len)
		r->content_type_got = xstrdup(x->ctype.buf);
	if (x->stalled) {
		sbuf_addf(&why, "no data for %.1f s", (double)o->stall_ms / 1000.0);
		retry_or_fail(x, why.buf, -1, 0);
		goto out;
	}
	if (x->hook_code < 0) {
		if (x->hook_code == GDN_ENETWORK) {
			retry_or_fail(x, x->hook_err.msg, -1, 0);
		} else {
			r->err = x->hook_err;
			finish(x, x->hook_code);
		}
		goto out;
	}
	if (x->too_large) {
		finish(x, gdn_err_set(&r->err, GDN_EPARSE, "the answer from '%s' is too large",
				      u.buf));
		goto out;
	}
	if (cc == CURLE_OPERATION_TIMEDOUT && o->deadline > 0 && gdn_now_ms() >= o->deadline) {
		finish(x, gdn_err_set(&r->err, GDN_ETIMEOUT,
				      "cannot fetch '%s': the deadline passed", u.buf));
		goto out;
	}
	if (cc != CURLE_OK) {
		sbuf_adds(&why, x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc));
		gdn_secret_mask(&why);
		if (curl_code_retryable(cc))
			retry_or_fail(x, why.buf, -1, 0);
		else
			finish(x, gdn_err_set(&r->err, GDN_ENETWORK, "cannot fetch '%s': %s", u.buf,
					      why.buf));
		goto out;
	}
	if (x->status >= 200 && x->status <= 299) {
		resolve_link(x);
		rc = r->hooks && r->hooks->complete ? r->hooks->complete(r, &x->hook_err) : 0;
		if (rc == GDN_HTTP_AGAIN) {
			retry_or_fail(x, x->hook_err.msg[0] ? x->hook_err.msg : "incomplete answer",
				      -1, 0);
		} else if (rc < 0) {
			r->err = x->hook_err;
			finish(x, rc);
		} else {
			finish(x, 0);
		}
		goto out;
	}
	sbuf_addf(&why, "HTTP %ld", x->status);
	error_detail(&why, &r->resp);
	if (gdn_http_status_retryable(x->status)) {
		retry_or_fail(x, why.buf, x->retry_after_ms, 0);
	} else if (x->status == 416 && r->offset > 0) {
		/* The range no longer fits: prepare sees status 416 and starts over. */
		retry_or_fail(x, why.buf, -1, 0);
	} else {
		int code = x->status == 404 || x->status == 410 ? GDN_ENOTFOUND : GDN_EFAILED;

		finish(x, gdn_err_set(&r->err, code, "cannot fetch '%s': %s", u.buf, why.buf));
	}
out:
	sbuf_release(&why);
	sbuf_release(&u);
}

/* Stop a running attempt from the outside (stall, deadline, interrupt). */
static void abandon(struct xfer *x, int code, const char *msg)
{
	struct sbuf u = SBUF_INIT;

	if (x->state == X_RUNNING)
		curl_multi_remove_handle(x->h->multi, x->easy);
	url_for_message(&u, x->r->url);
	if (x->last_error.len && code == GDN_ETIMEOUT)
		gdn_err_set(&x->r->err, code, "cannot fetch '%s': %s (last error: %s)", u.buf, msg,
			    x->last_error.buf);
	else
		gdn_err_set(&x->r->err, code, "cannot fetch '%s': %s", u.buf, msg);
	finish(x, code);
	sbuf_release(&u);
}

int gdn_http_run(struct gdn_http *h, struct gdn_http_req *const *reqs, size_t nr, int jobs,
		 struct gdn_err *err)
{
	struct xfer *xs = xcalloc(nr ? nr : 1, sizeof(*xs));
	const struct gdn_http_opts *o = &h->o;
	size_t remaining = nr;
	int64_t last_tick = 0;
	int running = 0, ret = 0;

	if (jobs < 1)
		jobs = 1;
	for (size_t i = 0; i < nr; i++) {
		struct xfer *x = &xs[i];

		x->h = h;
		x->r = reqs[i];
		x->state = X_WAITING;
		x->link = (struct sbuf)SBUF_INIT;
		x->ctype = (struct sbuf)SBUF_INIT;
		x->last_error = (struct sbuf)SBUF_INIT;
		x->link.limit = HEADER_VALUE_MAX;
		x->ctype.limit = 256;
		reqs[i]->result = 0;
		reqs[i]->attempts = 0;
		reqs[i]->status = 0;
		reqs[i]->bytes = 0;
		reqs[i]->skipped = false;
		reqs[i]->priv = x;
		gdn_err_clear(&reqs[i]->err);
	}
	while (remaining) {
		int64_t now = gdn_now_ms(), wait = TICK_MS;
		int still = 0, left;
		CURLMsg *msg;

		if (gdn_proc_interrupted() || (o->deadline > 0 && now >= o->deadline)) {
			bool intr = gdn_proc_interrupted() != 0;

			for (size_t i = 0; i < nr; i++)
				if (xs[i].state != X_DONE)
					abandon(&xs[i], intr ? GDN_EINTR : GDN_ETIMEOUT,
						intr ? "interrupted" : "the deadline passed");
			break;
		}
		/* Start what may start, in order. */
		for (size_t i = 0; i < nr && running < jobs; i++) {
			struct xfer *x = &xs[i];

			if (x->state != X_WAITING || x->next_at > now)
				continue;
			start_attempt(x);
			if (x->state == X_RUNNING)
				running++;
		}
		curl_multi_perform(h->multi, &still);
		while ((msg = curl_multi_info_read(h->multi, &left))) {
			struct xfer *x = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			if (!x || x->state != X_RUNNING)
				continue;
			running--;
			attempt_done(x, msg->data.result);
		}
		now = gdn_now_ms();
		for (size_t i = 0; i < nr && o->stall_ms > 0; i++) {
			struct xfer *x = &xs[i];

			if (x->state == X_RUNNING && now - x->last_activity > o->stall_ms) {
				x->stalled = true;
				running--;
				attempt_done(x, CURLE_OK);
			}
		}
		remaining = 0;
		for (size_t i = 0; i < nr; i++) {
			if (xs[i].state == X_DONE)
				continue;
			remaining++;
			if (xs[i].state == X_WAITING && running < jobs &&
			    xs[i].next_at - now < wait)
				wait = xs[i].next_at - now;
		}
		if (o->tick && now - last_tick >= TICK_MS) {
			last_tick = now;
			o->tick(o->tick_ctx);
		}
		if (!remaining)
			break;
		if (wait > 0)
			curl_multi_poll(h->multi, NULL, 0, (int)wait, NULL);
	}
	if (o->tick)
		o->tick(o->tick_ctx);
	for (size_t i = 0; i < nr; i++) {
		if (!ret && reqs[i]->result) {
			ret = reqs[i]->result;
			if (err)
				*err = reqs[i]->err;
		}
		if (xs[i].easy)
			curl_easy_cleanup(xs[i].easy);
		curl_slist_free_all(xs[i].headers);
		sbuf_release(&xs[i].link);
		sbuf_release(&xs[i].ctype);
		sbuf_release(&xs[i].last_error);
		reqs[i]->priv = NULL;
	}
	free(xs);
	return ret;
}
