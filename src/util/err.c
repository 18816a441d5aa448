#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"

/* Messages are capped at GDN_ERR_MSG_MAX on purpose: truncation is fine. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static void vset(struct gdn_err *err, const char *fmt, va_list ap)
{
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int gdn_err_set(struct gdn_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vset(err, fmt, ap);
	va_end(ap);
	return code;
}

int gdn_err_errno(struct gdn_err *err, int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t len;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vset(err, fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(saved));
	return code;
}

int gdn_err_prefix(struct gdn_err *err, const char *fmt, ...)
{
	char prefix[GDN_ERR_MSG_MAX];
	char old[GDN_ERR_MSG_MAX];
	va_list ap;

	if (!err)
		return GDN_EFAILED;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
	return err->code;
}

void gdn_err_clear(struct gdn_err *err)
{
	err->code = 0;
	err->msg[0] = '\0';
}

const char *gdn_errcode_name(int code)
{
	switch (code) {
	case GDN_OK:
		return "ok";
	case GDN_EFAILED:
		return "failed";
	case GDN_EUSAGE:
		return "usage";
	case GDN_ECONFIG:
		return "config";
	case GDN_EBACKEND:
		return "backend";
	case GDN_ENETWORK:
		return "network";
	case GDN_EIO:
		return "io";
	case GDN_ENOTFOUND:
		return "not-found";
	case GDN_EPARSE:
		return "parse";
	case GDN_ETIMEOUT:
		return "timeout";
	case GDN_EINTR:
		return "interrupted";
	}
	return "unknown";
}

int gdn_exit_for_error(int errcode)
{
	switch (errcode) {
	case GDN_OK:
		return GDN_EXIT_OK;
	case GDN_EUSAGE:
		return GDN_EXIT_USAGE;
	case GDN_ECONFIG:
		return GDN_EXIT_CONFIG;
	case GDN_EBACKEND:
		return GDN_EXIT_BACKEND;
	case GDN_ENETWORK:
		return GDN_EXIT_NETWORK;
	case GDN_ETIMEOUT:
		return GDN_EXIT_TIMEOUT;
	case GDN_EINTR:
		return GDN_EXIT_SIGNAL + SIGINT;
	default:
		return GDN_EXIT_FAILED;
	}
}
