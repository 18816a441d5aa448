/*
 * libcurl that cannot be loaded (tests/CMakeLists.txt compiles
 * src/hub/curl_load.c into this test with a SONAME that does not exist):
 * gdn_curl_load() says so with GDN_EIO, every time; the forwarders fail
 * as libcurl fails, without crashing; an HTTP session is refused with the
 * same one-line reason.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "gdnctl/curl_load.h"
#include "gdnctl/err.h"
#include "gdnctl/http.h"

static void load_fails_clearly(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	for (int i = 0; i < 2; i++) {
		gdn_err_clear(&err);
		assert_int_equal(gdn_curl_load(&err), GDN_EIO);
		assert_int_equal(err.code, GDN_EIO);
		assert_non_null(strstr(err.msg, "cannot load libcurl (" GDN_LIBCURL_SONAME "): "));
		assert_null(strchr(err.msg, '\n'));
	}
}

static void forwarders_fail_as_libcurl(void **state)
{
	char *part = NULL;

	(void)state;
	assert_int_equal(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_FAILED_INIT);
	assert_null(curl_easy_init());
	assert_null(curl_multi_init());
	assert_null(curl_url());
	assert_null(curl_slist_append(NULL, "X: y"));
	assert_int_equal(curl_easy_setopt(NULL, CURLOPT_URL, "http://x/"), CURLE_FAILED_INIT);
	assert_int_equal(curl_easy_setopt(NULL, CURLOPT_TIMEOUT_MS, 1L), CURLE_FAILED_INIT);
	assert_int_equal(curl_url_get(NULL, CURLUPART_HOST, &part, 0), CURLUE_OUT_OF_MEMORY);
	assert_null(part);
	assert_string_equal(curl_easy_strerror(CURLE_OK), "libcurl could not be loaded");
	curl_easy_cleanup(NULL);
	curl_slist_free_all(NULL);
	curl_url_cleanup(NULL);
	curl_free(NULL);
}

static void http_session_refused(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	assert_null(gdn_http_new(NULL, &err));
	assert_int_equal(err.code, GDN_EIO);
	assert_non_null(strstr(err.msg, "cannot load libcurl"));
}

int main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(load_fails_clearly),
		cmocka_unit_test(forwarders_fail_as_libcurl),
		cmocka_unit_test(http_session_refused),
	};
	/* clang-format on */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
