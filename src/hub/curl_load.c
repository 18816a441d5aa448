/*
 * libcurl, loaded when the first request needs it.
 *
 * gdnctl is not linked with libcurl: loading it and the 28 libraries it
 * needs (TLS, LDAP, Kerberos, SSH, IDN, ...) took 20 of the 32 ms that every
 * start of gdnctl cost, while most commands (trace, lint-log, loop, report,
 * config) never open a connection. So this file defines the few libcurl
 * functions the hub clients call, each forwarding to the real one, which
 * gdn_curl_load() finds with dlopen(GDN_LIBCURL_SONAME) and dlsym() once.
 * The prototypes are libcurl's own (from <curl/curl.h>, which pkg-config
 * finds at build time), so a mismatch does not compile.
 *
 * The variadic setters forward their one argument with its real type,
 * chosen the way libcurl does: by the option's number range (long, object
 * pointer, function pointer, curl_off_t, blob pointer). Every getinfo
 * argument is a pointer.
 */
#define CURL_DISABLE_TYPECHECK /* the forwarders below are the functions themselves */
#include "gdnctl/compat.h"
#include <curl/curl.h>
#include <dlfcn.h>
#include "gdnctl/curl_load.h"
#include "gdnctl/err.h"

#ifndef GDN_LIBCURL_SONAME
#define GDN_LIBCURL_SONAME "libcurl.so.4"
#endif

typedef void (*fnptr)(void);

/* The libcurl functions gdnctl calls. */
struct curl_api {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_perform)(CURLM *, int *);
	CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd[], unsigned int, int, int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	CURLUcode (*url_get)(CURLU *, CURLUPart, char **, unsigned int);
	void (*free)(void *);
};
static struct curl_api api;

/* Each function's name in libcurl, and where its address goes in api. */
#define SYM(field, name)                                \
	{                                               \
#name, offsetof(struct curl_api, field) \
	}
static const struct {
	const char *name;
	size_t offset;
} syms[] = {
    SYM(global_init, curl_global_init),
    SYM(easy_init, curl_easy_init),
    SYM(easy_cleanup, curl_easy_cleanup),
    SYM(easy_setopt, curl_easy_setopt),
    SYM(easy_getinfo, curl_easy_getinfo),
    SYM(easy_strerror, curl_easy_strerror),
    SYM(multi_init, curl_multi_init),
    SYM(multi_cleanup, curl_multi_cleanup),
    SYM(multi_add_handle, curl_multi_add_handle),
    SYM(multi_remove_handle, curl_multi_remove_handle),
    SYM(multi_perform, curl_multi_perform),
    SYM(multi_poll, curl_multi_poll),
    SYM(multi_info_read, curl_multi_info_read),
    SYM(slist_append, curl_slist_append),
    SYM(slist_free_all, curl_slist_free_all),
    SYM(url, curl_url),
    SYM(url_cleanup, curl_url_cleanup),
    SYM(url_set, curl_url_set),
    SYM(url_get, curl_url_get),
    SYM(free, curl_free),
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512]; /* empty once loaded */

static void load(void)
{
	void *lib = dlopen(GDN_LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!lib) {
		e = dlerror();
		snprintf(load_error, sizeof(load_error), "%s", e ? e : "dlopen failed");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(syms); i++) {
		void *sym = dlsym(lib, syms[i].name);

		if (!sym) {
			snprintf(load_error, sizeof(load_error), "%s has no %s", GDN_LIBCURL_SONAME,
				 syms[i].name);
			memset(&api, 0, sizeof(api));
			return; /* the library stays loaded: harmless, and unloading it is not */
		}
		/* POSIX: a dlsym result converts to a function pointer */
		memcpy((char *)&api + syms[i].offset, &sym, sizeof(sym));
	}
	if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(load_error, sizeof(load_error), "curl_global_init failed");
		memset(&api, 0, sizeof(api));
	}
}

int gdn_curl_load(struct gdn_err *err)
{
	pthread_once(&load_once, load);
	if (!load_error[0])
		return 0;
	return gdn_err_set(err, GDN_EIO, "cannot load libcurl (%s): %s", GDN_LIBCURL_SONAME,
			   load_error);
}

/* The forwarders: each loads libcurl first, and fails as libcurl would when it cannot. */
static bool loaded(void)
{
	pthread_once(&load_once, load);
	return !load_error[0];
}

CURLcode curl_global_init(long flags)
{
	(void)flags; /* done once by load() */
	return loaded() ? CURLE_OK : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	return loaded() ? api.easy_init() : NULL;
}

void curl_easy_cleanup(CURL *curl)
{
	if (curl && loaded())
		api.easy_cleanup(curl);
}

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	va_list ap;
	CURLcode rc;

	if (!loaded())
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		rc = api.easy_setopt(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		rc = api.easy_setopt(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		rc = api.easy_setopt(curl, option, va_arg(ap, fnptr));
	else if (option < CURLOPTTYPE_BLOB)
		rc = api.easy_setopt(curl, option, va_arg(ap, curl_off_t));
	else
		rc = api.easy_setopt(curl, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	va_list ap;
	CURLcode rc;

	if (!loaded())
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = api.easy_getinfo(curl, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

const char *curl_easy_strerror(CURLcode code)
{
	return loaded() ? api.easy_strerror(code) : "libcurl could not be loaded";
}

CURLM *curl_multi_init(void)
{
	return loaded() ? api.multi_init() : NULL;
}

CURLMcode curl_multi_cleanup(CURLM *multi)
{
	return loaded() ? api.multi_cleanup(multi) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_add_handle(CURLM *multi, CURL *curl)
{
	return loaded() ? api.multi_add_handle(multi, curl) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_remove_handle(CURLM *multi, CURL *curl)
{
	return loaded() ? api.multi_remove_handle(multi, curl) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_perform(CURLM *multi, int *running)
{
	return loaded() ? api.multi_perform(multi, running) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_poll(CURLM *multi, struct curl_waitfd extra_fds[], unsigned int extra_nfds,
			  int timeout_ms, int *ret)
{
	return loaded() ? api.multi_poll(multi, extra_fds, extra_nfds, timeout_ms, ret)
			: CURLM_BAD_HANDLE;
}

CURLMsg *curl_multi_info_read(CURLM *multi, int *msgs_in_queue)
{
	return loaded() ? api.multi_info_read(multi, msgs_in_queue) : NULL;
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *data)
{
	return loaded() ? api.slist_append(list, data) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (list && loaded())
		api.slist_free_all(list);
}

CURLU *curl_url(void)
{
	return loaded() ? api.url() : NULL;
}

void curl_url_cleanup(CURLU *handle)
{
	if (handle && loaded())
		api.url_cleanup(handle);
}

CURLUcode curl_url_set(CURLU *handle, CURLUPart what, const char *part, unsigned int flags)
{
	return loaded() ? api.url_set(handle, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_get(CURLU *handle, CURLUPart what, char **part, unsigned int flags)
{
	return loaded() ? api.url_get(handle, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

void curl_free(void *p)
{
	if (p && loaded())
		api.free(p);
}
