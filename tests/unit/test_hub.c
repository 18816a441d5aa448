/*
 * Unit tests for the hub clients' pure parts: SHA-256 (FIPS 180-2 /
 * NIST CAVS vectors, both block functions), URL encoding and hub URLs,
 * Link and Retry-After headers, .netrc, the HF tree listing and file
 * selection (including the default pattern), W&B answers (summaryMetrics
 * is JSON inside JSON), history aggregation and run references.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "gdnctl/curl_load.h"
#include "gdnctl/err.h"
#include "gdnctl/gcs.h"
#include "gdnctl/md5.h"
#include "gdnctl/sha256.h"
#include "gdnctl/source.h"
#include "gdnctl/wandb_artifact.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/http.h"
#include "gdnctl/hf.h"
#include "gdnctl/wandb.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/* ---- SHA-256 ---- */

static void sha_hex(const void *data, size_t len, char out[65])
{
	struct gdn_sha256 c;
	unsigned char d[GDN_SHA256_LEN];

	gdn_sha256_init(&c);
	gdn_sha256_update(&c, data, len);
	gdn_sha256_final(&c, d);
	gdn_sha256_hex(d, out);
}

static void check_vectors(void)
{
	static const struct {
		const char *msg;
		const char *hex;
	} v[] = {
	    {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	    {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	    {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	    {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmn"
	     "opqrlmnopqrsmnopqrstnopqrstu",
	     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
	    {"The quick brown fox jumps over the lazy dog",
	     "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592"},
	};
	char hex[65];

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		sha_hex(v[i].msg, strlen(v[i].msg), hex);
		assert_string_equal(hex, v[i].hex);
	}
}

static void check_million_a(void)
{
	struct gdn_sha256 c;
	unsigned char d[GDN_SHA256_LEN];
	char block[1000], hex[65];

	memset(block, 'a', sizeof(block));
	gdn_sha256_init(&c);
	for (int i = 0; i < 1000; i++)
		gdn_sha256_update(&c, block, sizeof(block));
	gdn_sha256_final(&c, d);
	gdn_sha256_hex(d, hex);
	assert_string_equal(hex,
			    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void sha256_vectors(void **state)
{
	gdn_sha256_force_portable(true);
	assert_string_equal(gdn_sha256_impl(), "portable");
	check_vectors();
	check_million_a();
	gdn_sha256_force_portable(false);
	check_vectors();
	check_million_a();
}

/* Padding edge cases: lengths around 55/56/64 bytes, chunked updates, both implementations. */
static void sha256_lengths_and_chunks(void **state)
{
	unsigned char buf[300];
	char a[65], b[65];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 131 + 7);
	for (size_t len = 0; len <= sizeof(buf); len++) {
		struct gdn_sha256 c;
		unsigned char d[GDN_SHA256_LEN];

		gdn_sha256_force_portable(true);
		sha_hex(buf, len, a);
		gdn_sha256_force_portable(false);
		sha_hex(buf, len, b);
		assert_string_equal(a, b);
		/* Odd chunks: 1, 2, 3, ... bytes at a time. */
		gdn_sha256_init(&c);
		for (size_t off = 0, step = 1; off < len; off += step, step++)
			gdn_sha256_update(&c, buf + off, step < len - off ? step : len - off);
		gdn_sha256_final(&c, d);
		gdn_sha256_hex(d, b);
		assert_string_equal(a, b);
	}
}

static void sha256_file(void **state)
{
	char path[] = "/tmp/gdnctl-test-hub-XXXXXX";
	int fd = mkstemp(path);
	struct gdn_sha256 c;
	struct gdn_err err = GDN_ERR_INIT;
	unsigned char d[GDN_SHA256_LEN];
	uint64_t n = 0;
	char hex[65];

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abcdef", 6), 6);
	close(fd);
	gdn_sha256_init(&c);
	assert_int_equal(gdn_sha256_file(path, 3, &c, &n, &err), 0);
	assert_int_equal(n, 3);
	gdn_sha256_final(&c, d);
	gdn_sha256_hex(d, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	unlink(path);
	gdn_sha256_init(&c);
	assert_int_equal(gdn_sha256_file(path, UINT64_MAX, &c, &n, &err), GDN_EIO);
	assert_non_null(strstr(err.msg, "cannot open"));
}

/* ---- URLs ---- */

static void url_encoding(void **state)
{
	struct sbuf sb = SBUF_INIT;

	gdn_url_encode(&sb, "refs/pr/1", false);
	assert_string_equal(sb.buf, "refs%2Fpr%2F1");
	sbuf_reset(&sb);
	gdn_url_encode(&sb, "main", false);
	assert_string_equal(sb.buf, "main");
	sbuf_reset(&sb);
	gdn_url_encode(&sb, "run 1/a+b?c#d%e.json", true);
	assert_string_equal(sb.buf, "run%201/a%2Bb%3Fc%23d%25e.json");
	sbuf_reset(&sb);
	gdn_url_encode(&sb, "caf\xc3\xa9/x~y_z-1.2", true);
	assert_string_equal(sb.buf, "caf%C3%A9/x~y_z-1.2");
	sbuf_release(&sb);
}

static void hub_urls(void **state)
{
	struct sbuf sb = SBUF_INIT;

	gdn_hf_tree_url(&sb, "https://huggingface.co", GDN_HF_DATASET, "org/traces", "refs/pr/1");
	assert_string_equal(sb.buf, "https://huggingface.co/api/datasets/org/traces/tree/"
				    "refs%2Fpr%2F1?recursive=true&expand=false");
	sbuf_reset(&sb);
	gdn_hf_tree_url(&sb, "http://h:1", GDN_HF_MODEL, "gpt2", "main");
	assert_string_equal(sb.buf,
			    "http://h:1/api/models/gpt2/tree/main?recursive=true&expand=false");
	sbuf_reset(&sb);
	gdn_hf_resolve_url(&sb, "https://hf.co", GDN_HF_DATASET, "o/r", "v1.0",
			   "run 1/perfetto_trace.json.gz");
	assert_string_equal(
	    sb.buf, "https://hf.co/datasets/o/r/resolve/v1.0/run%201/perfetto_trace.json.gz");
	sbuf_reset(&sb);
	gdn_hf_resolve_url(&sb, "https://hf.co", GDN_HF_MODEL, "o/r", "refs/pr/2", "a/b");
	assert_string_equal(sb.buf, "https://hf.co/o/r/resolve/refs%2Fpr%2F2/a/b");
	sbuf_reset(&sb);
	gdn_hf_resolve_url(&sb, "https://hf.co", GDN_HF_SPACE, "o/r", "main", "x");
	assert_string_equal(sb.buf, "https://hf.co/spaces/o/r/resolve/main/x");
	sbuf_release(&sb);
	assert_int_equal(gdn_hf_repo_type_parse("space"), GDN_HF_SPACE);
	assert_int_equal(gdn_hf_repo_type_parse("datasets"), -1);
}

static void one_line(void **state)
{
	char *s = gdn_one_line("a\nb\tc\x7f", 100);

	assert_string_equal(s, "a?b?c?");
	free(s);
	s = gdn_one_line("abcdef", 3);
	assert_string_equal(s, "abc...");
	free(s);
}

static void url_hosts(void **state)
{
	static const struct {
		const char *url, *host;
	} v[] = {
	    {"https://api.wandb.ai", "api.wandb.ai"},
	    {"https://api.wandb.ai/graphql", "api.wandb.ai"},
	    {"http://127.0.0.1:8080/x", "127.0.0.1"},
	    {"http://user:pw@host.example:1/", "host.example"},
	    {"http://[::1]:80/", "[::1]"},
	    {"https://h?q=1", "h"},
	    {"no-scheme", NULL},
	    {"http://", NULL},
	};

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		char *h = gdn_url_host(v[i].url);

		if (v[i].host)
			assert_string_equal(h, v[i].host);
		else
			assert_null(h);
		free(h);
	}
}

/* ---- headers ---- */

static void link_header(void **state)
{
	static const struct {
		const char *value, *next;
	} v[] = {
	    {"<https://hf.co/api/x?cursor=abc>; rel=\"next\"", "https://hf.co/api/x?cursor=abc"},
	    {"<https://a/1>; rel=\"prev\", <https://a/3>; rel=\"next\"", "https://a/3"},
	    {"<https://a/3>; rel=next", "https://a/3"},
	    {"<https://a/3> ; title=\"a, b; c\" ; rel=\"first next\"", "https://a/3"},
	    {"<https://a/3>; REL=\"NEXT\"", "https://a/3"},
	    {"<https://a/1>; rel=\"prev\"", NULL},
	    {"<https://a/1>; rel=\"nextpage\"", NULL},
	    {"<https://a/1>; relx=\"next\"", NULL},
	    {"https://a/1; rel=\"next\"", NULL},
	    {"<https://a/1; rel=\"next\"", NULL},
	    {"", NULL},
	    {"<>; rel=next", NULL},
	    {"</api/x?cursor=2>; rel=\"next\"", "/api/x?cursor=2"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		char *n = gdn_link_next(v[i].value);

		if (v[i].next) {
			assert_non_null(n);
			assert_string_equal(n, v[i].next);
		} else {
			assert_null(n);
		}
		free(n);
	}
}

static void retry_after(void **state)
{
	/* 1994-11-06 08:49:37 UTC */
	time_t t = 784111777;

	assert_int_equal(gdn_retry_after_ms("5", t), 5000);
	assert_int_equal(gdn_retry_after_ms(" 10 ", t), 10000);
	assert_int_equal(gdn_retry_after_ms("0", t), 0);
	assert_int_equal(gdn_retry_after_ms("Sun, 06 Nov 1994 08:49:40 GMT", t), 3000);
	assert_int_equal(gdn_retry_after_ms("Sunday, 06-Nov-94 08:49:47 GMT", t), 10000);
	assert_int_equal(gdn_retry_after_ms("Sun Nov  6 08:50:37 1994", t), 60000);
	assert_int_equal(gdn_retry_after_ms("Sun, 06 Nov 1994 08:00:00 GMT", t), 0);
	assert_int_equal(gdn_retry_after_ms("soon", t), -1);
	assert_int_equal(gdn_retry_after_ms("5s", t), -1);
	assert_int_equal(gdn_retry_after_ms("-1", t), -1);
	assert_int_equal(gdn_retry_after_ms("Sun, 32 Nov 1994 08:49:40 GMT", t), -1);
	assert_int_equal(gdn_retry_after_ms(NULL, t), -1);
	assert_true(gdn_retry_after_ms("99999999999999999999", t) > 0);
}

static void backoff(void **state)
{
	struct gdn_http_opts o = GDN_HTTP_OPTS_INIT;

	o.retry_base_ms = 100;
	o.retry_max_ms = 1000;
	assert_int_equal(gdn_http_backoff_ms(&o, 1), 100);
	assert_int_equal(gdn_http_backoff_ms(&o, 2), 200);
	assert_int_equal(gdn_http_backoff_ms(&o, 4), 800);
	assert_int_equal(gdn_http_backoff_ms(&o, 5), 1000);
	assert_int_equal(gdn_http_backoff_ms(&o, 60), 1000);
	assert_true(gdn_http_status_retryable(500));
	assert_true(gdn_http_status_retryable(503));
	assert_true(gdn_http_status_retryable(429));
	assert_true(gdn_http_status_retryable(408));
	assert_false(gdn_http_status_retryable(404));
	assert_false(gdn_http_status_retryable(401));
	assert_false(gdn_http_status_retryable(200));
}

/* ---- netrc ---- */

static void check_netrc(const char *text, const char *host, int found, const char *login,
			const char *password)
{
	char *l = NULL, *p = NULL;

	assert_int_equal(gdn_netrc_lookup(text, strlen(text), host, &l, &p), found);
	if (login)
		assert_string_equal(l, login);
	else
		assert_null(l);
	if (password)
		assert_string_equal(p, password);
	else
		assert_null(p);
	free(l);
	free(p);
}

static void netrc(void **state)
{
	const char *t = "machine example.com login me password secret\n"
			"machine api.wandb.ai\n  login user\n  password KEY123\n"
			"default login anon password guest\n";

	check_netrc(t, "api.wandb.ai", 1, "user", "KEY123");
	check_netrc(t, "API.WANDB.AI", 1, "user", "KEY123");
	check_netrc(t, "example.com", 1, "me", "secret");
	check_netrc(t, "other.host", 1, "anon", "guest");
	check_netrc("machine a login x password y", "b", 0, NULL, NULL);
	check_netrc("", "b", 0, NULL, NULL);
	check_netrc("machine h password \"with space\\\"q\" login l", "h", 1, "l", "with space\"q");
	check_netrc("machine h login only", "h", 1, "only", NULL);
	check_netrc("macdef init\ncd /\nmachine h password bad\n\nmachine h password good", "h", 1,
		    NULL, "good");
	check_netrc("machine h account acct password p", "h", 1, NULL, "p");
	check_netrc("machine h\tlogin\tl\r\npassword\tp\r\n", "h", 1, "l", "p");
	check_netrc("machine", "h", 0, NULL, NULL);
	check_netrc("machine h password", "h", 1, NULL, NULL);
	/* The first matching entry wins. */
	check_netrc("machine h password one machine h password two", "h", 1, NULL, "one");
	/* an empty value or one a NUL byte cuts short is no value */
	check_netrc("machine h login \"\" password \"\"", "h", 1, NULL, NULL);
	{
		static const char cut[] = "machine h login l\0x password p\0q";
		char *l = NULL, *p = NULL;

		assert_int_equal(gdn_netrc_lookup(cut, sizeof(cut) - 1, "h", &l, &p), 1);
		assert_null(l);
		assert_null(p);
	}
	{
		/* "h\0x" is not the machine "h" */
		static const char host[] = "machine h\0x login l password p";
		char *l = NULL, *p = NULL;

		assert_int_equal(gdn_netrc_lookup(host, sizeof(host) - 1, "h", &l, &p), 0);
		assert_null(l);
		assert_null(p);
	}
}

/* ---- tree listing ---- */

static const char tree_page[] =
    "[{\"type\":\"directory\",\"oid\":\"abc\",\"size\":0,\"path\":\"profiles\"},"
    " {\"type\":\"file\",\"oid\":\"1111\",\"size\":12,\"path\":\"README.md\"},"
    " {\"type\":\"file\",\"oid\":\"2222\",\"size\":48213377,"
    "\"path\":\"profiles/run1/perfetto_trace.json.gz\","
    "  \"lfs\":{\"oid\":\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\","
    "\"size\":48213377,\"pointerSize\":134},\"xetHash\":\"xx\"},"
    " {\"type\":\"submodule\",\"path\":\"sub\"},"
    " {\"type\":\"file\",\"size\":5.0,\"path\":\"float-size\",\"lfs\":null}]";

static void tree_parse(void **state)
{
	struct gdn_hf_files f = {0};
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_hf_parse_tree(tree_page, strlen(tree_page), &f, &err), 0);
	assert_int_equal(f.nr, 3);
	assert_int_equal(f.ignored, 2);
	assert_string_equal(f.v[0].path, "README.md");
	assert_int_equal(f.v[0].size, 12);
	assert_false(f.v[0].lfs);
	assert_string_equal(f.v[0].oid, "1111");
	assert_string_equal(f.v[1].path, "profiles/run1/perfetto_trace.json.gz");
	assert_true(f.v[1].lfs);
	assert_true(f.v[1].has_xet);
	assert_int_equal(f.v[1].size, 48213377);
	assert_string_equal(f.v[1].sha256,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	assert_int_equal(f.v[2].size, 5);
	assert_false(f.v[2].lfs);
	assert_null(f.v[2].oid);
	/* An empty page adds nothing. */
	assert_int_equal(gdn_hf_parse_tree("[]", 2, &f, &err), 0);
	assert_int_equal(f.nr, 3);
	gdn_hf_files_release(&f);
}

static void tree_parse_errors(void **state)
{
	static const char *const bad[] = {
	    "{\"error\":\"nope\"}",
	    "[1]",
	    "[{\"path\":\"a\",\"size\":1}]",
	    "[{\"type\":\"file\",\"size\":1}]",
	    "[{\"type\":\"file\",\"path\":\"a\"}]",
	    "[{\"type\":\"file\",\"path\":\"a\",\"size\":-1}]",
	    "[{\"type\":\"file\",\"path\":\"a\",\"size\":\"1\"}]",
	    "[{\"type\":\"file\",\"path\":\"a\",\"size\":1,\"lfs\":{\"oid\":\"abc\",\"size\":1}}]",
	    "[{\"type\":\"file\",\"path\":\"a\",\"size\":1,\"lfs\":{\"oid\":"
	    "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}}]",
	    "[{\"type\":\"file\",\"path\":\"a\",\"size\":1,\"lfs\":[]}]",
	    "[{\"type\":\"file\",\"path\":\"a\\u0000b\",\"size\":1}]",
	    "[{\"type\":\"file\",\"path\":\"\",\"size\":1}]",
	    "[{\"type\":\"file\",\"path\":\"a\",\"size\":1},",
	    "",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct gdn_hf_files f = {0};
		struct gdn_err err = GDN_ERR_INIT;
		const char *good = "[{\"type\":\"file\",\"path\":\"keep\",\"size\":1}]";

		assert_int_equal(gdn_hf_parse_tree(good, strlen(good), &f, &err), 0);
		assert_int_equal(gdn_hf_parse_tree(bad[i], strlen(bad[i]), &f, &err), GDN_EPARSE);
		assert_true(err.msg[0] != '\0');
		assert_null(strchr(err.msg, '\n'));
		assert_int_equal(f.nr, 1); /* earlier pages are kept; the bad page adds nothing */
		gdn_hf_files_release(&f);
	}
}

static void path_safety(void **state)
{
	assert_true(gdn_hf_path_safe("a"));
	assert_true(gdn_hf_path_safe("a/b/c.json.gz"));
	assert_true(gdn_hf_path_safe("..a/b.."));
	assert_true(gdn_hf_path_safe("run 1/x"));
	assert_false(gdn_hf_path_safe(""));
	assert_false(gdn_hf_path_safe("/etc/passwd"));
	assert_false(gdn_hf_path_safe("../x"));
	assert_false(gdn_hf_path_safe("a/../../x"));
	assert_false(gdn_hf_path_safe("a/./x"));
	assert_false(gdn_hf_path_safe("a//x"));
	assert_false(gdn_hf_path_safe("a/"));
	assert_false(gdn_hf_path_safe("a\\..\\x"));
	assert_false(gdn_hf_path_safe("a\nb"));
	assert_false(gdn_hf_path_safe(".."));
}

static void add_file(struct gdn_hf_files *f, const char *path)
{
	ALLOC_GROW(f->v, f->nr + 1, f->alloc);
	memset(&f->v[f->nr], 0, sizeof(f->v[0]));
	f->v[f->nr++].path = xstrdup(path);
}

static bool default_match(const char *path, bool xplane)
{
	struct sbuf pat = SBUF_INIT;
	regex_t re;
	bool m;

	if (xplane)
		sbuf_addf(&pat, "(%s)|(%s)", GDN_HF_DEFAULT_PATTERN, GDN_HF_XPLANE_PATTERN);
	else
		sbuf_adds(&pat, GDN_HF_DEFAULT_PATTERN);
	assert_int_equal(regcomp(&re, pat.buf, REG_EXTENDED | REG_NOSUB), 0);
	m = !regexec(&re, path, 0, NULL, 0);
	regfree(&re);
	sbuf_release(&pat);
	return m;
}

static void default_pattern(void **state)
{
	assert_true(default_match("perfetto_trace.json.gz", false));
	assert_true(default_match("x/perfetto_trace.json.gz", false));
	assert_true(default_match("plugins/profile/2025_01_01/host.trace.json.gz", false));
	assert_true(default_match("x.trace.json.gz", false));
	assert_true(default_match("profile.json", false));
	assert_true(default_match("runs/a/profile.json", false));
	assert_false(default_match("trace.json", false));
	assert_false(default_match("x.trace.json", false));
	assert_false(default_match("host.xplane.pb", false));
	assert_false(default_match("perfetto_trace.json.gz.bak", false));
	assert_false(default_match("profile.jsonl", false));
	assert_false(default_match("perfetto_traceXjsonXgz", false));
	assert_true(default_match("host.xplane.pb", true));
	assert_true(default_match("x.trace.json.gz", true));
	assert_false(default_match("trace.json", true));
	assert_false(default_match("xplane.pb.old", true));
}

static void select_files(void **state)
{
	struct gdn_hf_files f = {0};
	struct strvec unsafe = STRVEC_INIT;
	struct gdn_hf_select sel = {0};
	regex_t re;

	add_file(&f, "b/perfetto_trace.json.gz");
	add_file(&f, "a/x.trace.json.gz");
	add_file(&f, "a/notes.md");
	add_file(&f, "ab/profile.json");
	add_file(&f, "a/../../evil.trace.json.gz");
	add_file(&f, "a/x.trace.json.gz"); /* listed twice by overlapping pages */
	add_file(&f, "a/sub/profile.json");
	add_file(&f, "a");
	assert_int_equal(regcomp(&re, GDN_HF_DEFAULT_PATTERN, REG_EXTENDED | REG_NOSUB), 0);
	sel.regex = &re;
	sel.path_prefix = "/a/";
	gdn_hf_select_files(&f, &sel, &unsafe);
	assert_int_equal(f.nr, 2);
	assert_string_equal(f.v[0].path, "a/sub/profile.json");
	assert_string_equal(f.v[1].path, "a/x.trace.json.gz");
	assert_int_equal(unsafe.nr, 1);
	assert_string_equal(unsafe.v[0], "a/../../evil.trace.json.gz");
	sel.path_prefix = NULL;
	sel.limit = 1;
	gdn_hf_select_files(&f, &sel, NULL);
	assert_int_equal(f.nr, 1);
	assert_string_equal(f.v[0].path, "a/sub/profile.json");
	gdn_hf_files_release(&f);

	/* Sorted by bytes, as Python's sorted(); prefix equal to a file keeps it. */
	add_file(&f, "b");
	add_file(&f, "B");
	add_file(&f, "a/z");
	add_file(&f, "a");
	memset(&sel, 0, sizeof(sel));
	gdn_hf_select_files(&f, &sel, NULL);
	assert_int_equal(f.nr, 4);
	assert_string_equal(f.v[0].path, "B");
	assert_string_equal(f.v[1].path, "a");
	assert_string_equal(f.v[2].path, "a/z");
	sel.path_prefix = "a";
	gdn_hf_select_files(&f, &sel, NULL);
	assert_int_equal(f.nr, 2);
	gdn_hf_files_release(&f);
	regfree(&re);
	strvec_clear(&unsafe);
}

static void token_lookup(void **state)
{
	char dir[] = "/tmp/gdnctl-test-hub-XXXXXX";
	struct gdn_err err = GDN_ERR_INIT;
	char *tok = NULL, *src = NULL, *path;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	unsetenv("HF_TOKEN");
	unsetenv("HUGGING_FACE_HUB_TOKEN");
	unsetenv("HF_TOKEN_PATH");
	setenv("HF_HOME", dir, 1);
	assert_int_equal(gdn_hf_find_token(NULL, &tok, &src, &err), 0);
	assert_null(tok);
	path = xstrfmt("%s/token", dir);
	f = fopen(path, "w");
	fputs("  hf_fromfile\n", f);
	fclose(f);
	assert_int_equal(gdn_hf_find_token(NULL, &tok, &src, &err), 0);
	assert_string_equal(tok, "hf_fromfile");
	assert_string_equal(src, path);
	FREE_AND_NULL(tok);
	FREE_AND_NULL(src);
	setenv("HUGGING_FACE_HUB_TOKEN", "hf_legacy", 1);
	assert_int_equal(gdn_hf_find_token(NULL, &tok, &src, &err), 0);
	assert_string_equal(tok, "hf_legacy");
	assert_string_equal(src, "HUGGING_FACE_HUB_TOKEN");
	FREE_AND_NULL(tok);
	FREE_AND_NULL(src);
	setenv("HF_TOKEN", "hf_env", 1);
	assert_int_equal(gdn_hf_find_token(NULL, &tok, &src, &err), 0);
	assert_string_equal(tok, "hf_env");
	FREE_AND_NULL(tok);
	FREE_AND_NULL(src);
	assert_int_equal(gdn_hf_find_token("hf_arg", &tok, &src, &err), 0);
	assert_string_equal(tok, "hf_arg");
	assert_string_equal(src, "--token");
	FREE_AND_NULL(tok);
	FREE_AND_NULL(src);
	assert_int_equal(gdn_hf_find_token("bad token", &tok, &src, &err), GDN_EUSAGE);
	assert_null(strstr(err.msg, "bad token"));
	assert_null(tok);
	unsetenv("HF_TOKEN");
	unsetenv("HUGGING_FACE_HUB_TOKEN");
	unsetenv("HF_HOME");
	unlink(path);
	rmdir(dir);
	free(path);
}

/* ---- W&B ---- */

static void run_refs(void **state)
{
	static const struct {
		const char *ref, *e, *p, *r;
	} ok[] = {
	    {"https://wandb.ai/marin-community/marin/runs/abc123", "marin-community", "marin",
	     "abc123"},
	    {"https://wandb.ai/e/p/runs/r1?nw=x#frag", "e", "p", "r1"},
	    {"https://wandb.ai/e/p/runs/r_1-x/overview", "e", "p", "r_1-x"},
	    {"http://localhost:8080/e/p/runs/r/", "e", "p", "r"},
	    {"e/p/r", "e", "p", "r"},
	    {"e/p/runs/r", "e", "p", "r"},
	};
	static const char *const bad[] = {
	    "e/p", "e/p/r/x", "https://wandb.ai/e/p/r", "https://wandb.ai/e/p/runs", "", "e//r"};
	struct gdn_err err = GDN_ERR_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		char *e, *p, *r;

		assert_int_equal(gdn_wandb_parse_run_ref(ok[i].ref, &e, &p, &r, &err), 0);
		assert_string_equal(e, ok[i].e);
		assert_string_equal(p, ok[i].p);
		assert_string_equal(r, ok[i].r);
		free(e);
		free(p);
		free(r);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *e, *p, *r;

		assert_int_equal(gdn_wandb_parse_run_ref(bad[i], &e, &p, &r, &err), GDN_EUSAGE);
		assert_null(e);
	}
}

static void steps(void **state)
{
	struct gdn_history_window w = {0};
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_history_parse_steps("10:18", &w, &err), 0);
	assert_int_equal(w.step_min, 10);
	assert_int_equal(w.step_max, 18);
	assert_int_equal(gdn_history_parse_steps(":5", &w, &err), 0);
	assert_true(w.step_min == INT64_MIN);
	assert_int_equal(w.step_max, 5);
	assert_int_equal(gdn_history_parse_steps("7:", &w, &err), 0);
	assert_true(w.step_max == INT64_MAX);
	assert_int_equal(gdn_history_parse_steps("3:3", &w, &err), 0);
	assert_int_equal(gdn_history_parse_steps("5:3", &w, &err), GDN_EUSAGE);
	assert_int_equal(gdn_history_parse_steps("5", &w, &err), GDN_EUSAGE);
	assert_int_equal(gdn_history_parse_steps("a:3", &w, &err), GDN_EUSAGE);
	assert_int_equal(gdn_history_parse_steps("1:99999999999999999999", &w, &err), GDN_EUSAGE);
	assert_int_equal(gdn_history_parse_steps("-:3", &w, &err), GDN_EUSAGE);
}

/* A GraphQL answer with summaryMetrics as a JSON string inside the JSON. */
static const char run_answer[] =
    "{\"data\":{\"project\":{\"run\":{\"name\":\"abc\",\"displayName\":\"gdn_tinyprof_1\","
    "\"state\":\"finished\",\"summaryMetrics\":"
    "\"{\\\"throughput/mfu\\\": 5.25, \\\"loss\\\": NaN, \\\"inf\\\": -Infinity, "
    "\\\"s\\\": \\\"text\\\", \\\"n\\\": null, \\\"obj\\\": {\\\"a\\\": {\\\"b\\\": 2}}, "
    "\\\"i\\\": 7, \\\"t\\\": true, \\\"sNaN\\\": \\\"NaN\\\"}\"}}}}";

static void summary_answer(void **state)
{
	const char *keys[] = {"throughput/mfu", "loss",	  "inf", "s", "n", "obj.a.b", "i", "t",
			      "sNaN",		"absent", "obj", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_metric_set set = {0};
	json_t *data = NULL, *sm;

	assert_int_equal(gdn_graphql_parse(run_answer, strlen(run_answer), &data, &err), 0);
	sm = json_object_get(json_object_get(json_object_get(data, "project"), "run"),
			     "summaryMetrics");
	assert_true(json_is_string(sm));
	assert_int_equal(gdn_wandb_summary_from_json(json_string_value(sm), keys, &set, &err), 0);
	assert_int_equal(set.nr, 11);
	assert_int_equal(set.v[0].status, GDN_METRIC_OK);
	assert_true(set.v[0].value == 5.25);
	assert_int_equal(set.v[0].points, 1);
	assert_int_equal(set.v[1].status, GDN_METRIC_NONFINITE);
	assert_int_equal(set.v[2].status, GDN_METRIC_NONFINITE);
	assert_int_equal(set.v[3].status, GDN_METRIC_NOT_NUMERIC);
	assert_int_equal(set.v[4].status, GDN_METRIC_MISSING);
	assert_int_equal(set.v[5].status, GDN_METRIC_OK);
	assert_true(set.v[5].value == 2);
	assert_int_equal(set.v[6].status, GDN_METRIC_OK);
	assert_int_equal(set.v[7].status, GDN_METRIC_NOT_NUMERIC);
	assert_int_equal(set.v[8].status, GDN_METRIC_NONFINITE);
	assert_int_equal(set.v[9].status, GDN_METRIC_MISSING);
	assert_int_equal(set.v[10].status, GDN_METRIC_NOT_NUMERIC);
	assert_string_equal(set.source, "wandb-summary");
	assert_string_equal(gdn_metric_status_name(set.v[8].status), "non-finite");
	assert_non_null(gdn_metric_set_get(&set, "loss"));
	assert_null(gdn_metric_set_get(&set, "nope"));
	gdn_metric_set_release(&set);
	json_decref(data);

	/* No summary at all: every key missing. */
	assert_int_equal(gdn_wandb_summary_from_json(NULL, keys, &set, &err), 0);
	assert_int_equal(set.v[0].status, GDN_METRIC_MISSING);
	gdn_metric_set_release(&set);
	assert_int_equal(gdn_wandb_summary_from_json("[1]", keys, &set, &err), GDN_EPARSE);
	gdn_metric_set_release(&set);
	assert_int_equal(gdn_wandb_summary_from_json("{\"a\": NaNx}", keys, &set, &err),
			 GDN_EPARSE);
	gdn_metric_set_release(&set);
}

static void graphql_errors(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;
	json_t *data = NULL;
	const char *e1 = "{\"errors\":[{\"message\":\"project not found\"}],\"data\":null}";
	const char *e2 = "{\"data\":null}";
	const char *e3 = "<html>";

	assert_int_equal(gdn_graphql_parse(e1, strlen(e1), &data, &err), GDN_EFAILED);
	assert_string_equal(err.msg, "the W&B API answered: project not found");
	assert_null(data);
	assert_int_equal(gdn_graphql_parse(e2, strlen(e2), &data, &err), GDN_EPARSE);
	assert_int_equal(gdn_graphql_parse(e3, strlen(e3), &data, &err), GDN_EPARSE);
}

static void aggregates(void **state)
{
	double a[] = {5, 1, 3};
	double b[] = {4, 1, 3, 2};
	double c[] = {1, 2, 3, 4};
	double d[] = {1e308, 1e308};

	assert_true(gdn_agg_values(a, 3, GDN_AGG_MEDIAN) == 3);
	assert_true(gdn_agg_values(b, 4, GDN_AGG_MEDIAN) == 2.5);
	assert_true(gdn_agg_values(c, 4, GDN_AGG_MEAN) == 2.5);
	assert_true(gdn_agg_values(d, 2, GDN_AGG_MEDIAN) == 1e308); /* no overflow */
	assert_true(isnan(gdn_agg_values(NULL, 0, GDN_AGG_MEAN)));
}

static void history(void **state)
{
	/* Key 1: steps 0..20 with value = step; key 2: NaN and inf in the window. */
	struct sbuf rows = SBUF_INIT;
	const char *keys[] = {"perf/mfu", "loss", "absent", "few", NULL};
	struct gdn_history_window w = {10, 18, GDN_AGG_MEDIAN, 5, 0};
	struct gdn_metric_set set = {0};
	struct gdn_err err = GDN_ERR_INIT;

	sbuf_addch(&rows, '[');
	sbuf_addch(&rows, '[');
	for (int s = 0; s <= 20; s++)
		sbuf_addf(&rows, "%s{\"_step\": %d, \"perf/mfu\": %d}", s ? "," : "", s, s);
	sbuf_adds(&rows, "],[{\"_step\": 10, \"loss\": NaN}, {\"_step\": 11, \"loss\": Infinity},"
			 " {\"_step\": 12, \"loss\": \"-Infinity\"}, {\"_step\": 25, \"loss\": 1}],"
			 " [{\"_step\": 10}, {\"x\": 1}, 3],"
			 " [{\"_step\": 10.0, \"few\": 1.5}, {\"_step\": 12, \"few\": 2.5},"
			 "  {\"_step\": 13, \"few\": NaN}, {\"_step\": 9, \"few\": 100}]]");
	assert_int_equal(gdn_wandb_history_from_json(rows.buf, keys, &w, &set, &err), 0);
	assert_int_equal(set.nr, 4);
	assert_int_equal(set.v[0].status, GDN_METRIC_OK);
	assert_int_equal(set.v[0].points, 9);
	assert_true(set.v[0].value == 14);
	assert_int_equal(set.v[1].status, GDN_METRIC_NONFINITE);
	assert_int_equal(set.v[1].nonfinite, 3);
	assert_int_equal(set.v[1].points, 0);
	assert_int_equal(set.v[2].status, GDN_METRIC_MISSING);
	assert_int_equal(set.v[3].status, GDN_METRIC_TOO_FEW);
	assert_int_equal(set.v[3].points, 2);
	assert_int_equal(set.v[3].nonfinite, 1);
	assert_string_equal(set.source, "wandb-history-median[10:18]");
	gdn_metric_set_release(&set);

	/* Mean over an open window, two points needed. */
	w.step_min = INT64_MIN;
	w.step_max = 2;
	w.agg = GDN_AGG_MEAN;
	w.min_points = 2;
	assert_int_equal(gdn_wandb_history_from_json(rows.buf, keys, &w, &set, &err), 0);
	assert_int_equal(set.v[0].status, GDN_METRIC_OK);
	assert_int_equal(set.v[0].points, 3);
	assert_true(set.v[0].value == 1);
	assert_string_equal(set.source, "wandb-history-mean[:2]");
	gdn_metric_set_release(&set);

	/* Wrong shape: one list per key. */
	assert_int_equal(gdn_wandb_history_from_json("[[]]", keys, &w, &set, &err), GDN_EPARSE);
	gdn_metric_set_release(&set);
	assert_int_equal(gdn_wandb_history_from_json("[1,2,3,4]", keys, &w, &set, &err),
			 GDN_EPARSE);
	gdn_metric_set_release(&set);
	sbuf_release(&rows);
}

/* RFC 1321 test suite, as base64 (what GCS and W&B give). */
static void md5_vectors(void **state)
{
	static const struct {
		const char *in, *hex;
	} v[] = {
	    {"", "d41d8cd98f00b204e9800998ecf8427e"},
	    {"a", "0cc175b9c0f1b6a831c399e269772661"},
	    {"abc", "900150983cd24fb0d6963f7d28e17f72"},
	    {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
	    {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
	    {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
	     "57edf4a22be3c955ac49da2e2107b67a"},
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		struct gdn_md5 c;
		unsigned char d[GDN_MD5_LEN];
		char hex[33], b64[GDN_MD5_B64_SIZE];
		size_t len = strlen(v[i].in);

		/* In two pieces, to cross block boundaries. */
		gdn_md5_init(&c);
		gdn_md5_update(&c, v[i].in, len / 3);
		gdn_md5_update(&c, v[i].in + len / 3, len - len / 3);
		gdn_md5_final(&c, d);
		for (int j = 0; j < GDN_MD5_LEN; j++)
			snprintf(hex + 2 * j, 3, "%02x", d[j]);
		assert_string_equal(hex, v[i].hex);
		gdn_md5_b64(d, b64);
		assert_true(gdn_md5_b64_valid(b64));
	}
	{
		struct gdn_md5 c;
		unsigned char d[GDN_MD5_LEN];
		char b64[GDN_MD5_B64_SIZE];

		gdn_md5_init(&c);
		gdn_md5_final(&c, d);
		gdn_md5_b64(d, b64);
		assert_string_equal(b64, "1B2M2Y8AsgTpgAmY7PhCfg==");
	}
	assert_false(gdn_md5_b64_valid("1B2M2Y8AsgTpgAmY7PhCfh=="));
	assert_false(gdn_md5_b64_valid("1B2M2Y8AsgTpgAmY7PhCfg="));
	assert_false(gdn_md5_b64_valid("1B2M2Y8AsgTpgAmY7PhC!g=="));
}

static void gcs_urls_and_pages(void **state)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_hf_files f = {0};
	struct gdn_err err = GDN_ERR_INIT;
	char *next = NULL, *b = NULL, *p = NULL;
	const char page[] = "{\"items\":[{\"name\":\"x/a b.trace.json.gz\",\"size\":\"12\","
			    "\"md5Hash\":\"1B2M2Y8AsgTpgAmY7PhCfg==\"},{\"name\":\"x/d/\",\"size\":"
			    "\"0\"}],\"nextPageToken\":\"T/1=\"}";

	(void)state;
	gdn_gcs_media_url(&sb, "http://h:1", "bkt", "x/a b.trace.json.gz");
	assert_string_equal(
	    sb.buf, "http://h:1/download/storage/v1/b/bkt/o/x%2Fa%20b.trace.json.gz?alt=media");
	sbuf_reset(&sb);
	gdn_gcs_list_url(&sb, "http://h:1", "bkt", "x/", "T/1=");
	assert_string_equal(sb.buf, "http://h:1/storage/v1/b/bkt/o?prefix=x%2F&fields=items(name,"
				    "size,md5Hash),nextPageToken&pageToken=T%2F1%3D");
	assert_int_equal(
	    gdn_gcs_parse_list(page, strlen(page), "http://h:1", "bkt", &f, &next, &err), 0);
	assert_int_equal(f.nr, 1);
	assert_int_equal(f.ignored, 1);
	assert_int_equal(f.v[0].size, 12);
	assert_true(f.v[0].has_md5);
	assert_string_equal(next, "T/1=");
	free(next);
	assert_int_equal(gdn_gcs_parse_list("{\"items\":[{\"name\":\"y\",\"size\":\"x\"}]}", 36,
					    NULL, "bkt", &f, &next, &err),
			 GDN_EPARSE);
	assert_int_equal(f.nr, 1);
	assert_int_equal(gdn_gcs_parse_uri("gs://bkt/a/b", &b, &p, &err), 0);
	assert_string_equal(b, "bkt");
	assert_string_equal(p, "a/b");
	free(b);
	free(p);
	assert_int_equal(gdn_gcs_parse_uri("gs://Bad/x", &b, &p, &err), GDN_EUSAGE);
	assert_int_equal(gdn_gcs_parse_uri("gs:///x", &b, &p, &err), GDN_EUSAGE);
	setenv("STORAGE_EMULATOR_HOST", "localhost:9023/", 1);
	p = gdn_gcs_endpoint();
	assert_string_equal(p, "http://localhost:9023");
	free(p);
	unsetenv("STORAGE_EMULATOR_HOST");
	p = gdn_gcs_endpoint();
	assert_string_equal(p, "https://storage.googleapis.com");
	free(p);
	gdn_hf_files_release(&f);
	sbuf_release(&sb);
}

static void artifact_choice(void **state)
{
	const char nodes[] =
	    "[{\"id\":\"A1\",\"artifactType\":{\"name\":\"jax_profile\"},\"aliases\":[{\"alias\":"
	    "\"v0\"}],\"updatedAt\":\"2025-01-03\",\"versionIndex\":0},"
	    "{\"id\":\"A2\",\"artifactType\":{\"name\":\"model\"},\"aliases\":[{\"alias\":"
	    "\"latest\"}],\"updatedAt\":\"2025-02-01\"},"
	    "{\"id\":\"A3\",\"artifactType\":{\"name\":\"jax_profile\"},\"aliases\":[{\"alias\":"
	    "\"latest\"}],\"updatedAt\":\"2025-01-02\",\"versionIndex\":1.0}]";
	json_t *doc = json_loads(nodes, 0, NULL); /* new */
	struct gdn_wandb_artifact a = {0};
	struct gdn_err err = GDN_ERR_INIT;
	char *e, *p, *n, *al;

	(void)state;
	assert_int_equal(gdn_wandb_pick_artifact(doc, "jax_profile", NULL, &a, &err), 1);
	assert_string_equal(a.id, "A3"); /* the alias "latest" */
	assert_string_equal(a.version, "v1");
	assert_int_equal(gdn_wandb_pick_artifact(doc, "jax_profile", "nosuch", &a, &err), 1);
	assert_string_equal(a.id, "A1"); /* else the most recently updated */
	assert_int_equal(gdn_wandb_pick_artifact(doc, "dataset", NULL, &a, &err), 0);
	gdn_wandb_artifact_release(&a);
	json_decref(doc);
	assert_int_equal(gdn_wandb_parse_artifact_ref("e/p/name:v3", &e, &p, &n, &al, &err), 0);
	assert_string_equal(n, "name");
	assert_string_equal(al, "v3");
	free(e);
	free(p);
	free(n);
	free(al);
	assert_int_equal(
	    gdn_source_parse_wandb_run("wandb:e/p/r1@best", NULL, NULL, &e, &p, &n, &al, &err), 0);
	assert_string_equal(n, "r1");
	assert_string_equal(al, "best");
	free(e);
	free(p);
	free(n);
	free(al);
	assert_int_equal(gdn_source_parse_wandb_run("r2", "ent", "proj", &e, &p, &n, &al, &err), 0);
	assert_string_equal(e, "ent");
	assert_null(al);
	free(e);
	free(p);
	free(n);
	assert_int_equal(gdn_source_parse_hf("hf:org/repo/a/b", &e, &p, &err), 0);
	assert_string_equal(e, "org/repo");
	assert_string_equal(p, "a/b");
	free(e);
	free(p);
	assert_int_equal(gdn_source_parse_hf("hf:org", &e, &p, &err), GDN_EUSAGE);
	assert_true(gdn_source_is_wandb_run("https://wandb.ai/e/p/runs/x"));
	assert_false(gdn_source_is_wandb_run("https://example.com/x"));
}

/* ---- libcurl, loaded at the first use (tests/unit/curl_missing.c: when it cannot be) ---- */

static void curl_loaded_on_demand(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;
	CURLU *u;
	char *host = NULL;
	CURL *easy;
	long code = -1;

	(void)state;
	assert_int_equal(gdn_curl_load(&err), 0);
	u = curl_url();
	assert_non_null(u);
	assert_int_equal(curl_url_set(u, CURLUPART_URL, "https://huggingface.co:8443/api", 0),
			 CURLUE_OK);
	assert_int_equal(curl_url_get(u, CURLUPART_HOST, &host, 0), CURLUE_OK);
	assert_string_equal(host, "huggingface.co");
	curl_free(host);
	curl_url_cleanup(u);
	/* each kind of setopt argument, forwarded with its own type */
	easy = curl_easy_init();
	assert_non_null(easy);
	assert_int_equal(curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 1000L), CURLE_OK);
	assert_int_equal(curl_easy_setopt(easy, CURLOPT_URL, "http://127.0.0.1:1/"), CURLE_OK);
	assert_int_equal(curl_easy_setopt(easy, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)1 << 40),
			 CURLE_OK);
	assert_int_equal(curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, (curl_write_callback)NULL),
			 CURLE_OK);
	assert_int_equal(curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code), CURLE_OK);
	assert_int_equal(code, 0);
	assert_string_equal(curl_easy_strerror(CURLE_COULDNT_CONNECT),
			    "Couldn't connect to server");
	curl_easy_cleanup(easy);
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sha256_vectors),
		cmocka_unit_test(sha256_lengths_and_chunks),
		cmocka_unit_test(sha256_file),
		cmocka_unit_test(md5_vectors),
		cmocka_unit_test(gcs_urls_and_pages),
		cmocka_unit_test(artifact_choice),
		cmocka_unit_test(url_encoding),
		cmocka_unit_test(hub_urls),
		cmocka_unit_test(url_hosts),
		cmocka_unit_test(one_line),
		cmocka_unit_test(link_header),
		cmocka_unit_test(retry_after),
		cmocka_unit_test(backoff),
		cmocka_unit_test(netrc),
		cmocka_unit_test(tree_parse),
		cmocka_unit_test(tree_parse_errors),
		cmocka_unit_test(path_safety),
		cmocka_unit_test(default_pattern),
		cmocka_unit_test(select_files),
		cmocka_unit_test(token_lookup),
		cmocka_unit_test(run_refs),
		cmocka_unit_test(steps),
		cmocka_unit_test(summary_answer),
		cmocka_unit_test(graphql_errors),
		cmocka_unit_test(aggregates),
		cmocka_unit_test(history),
		cmocka_unit_test(curl_loaded_on_demand),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, NULL, NULL);
}
