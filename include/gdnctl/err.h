/*
 * Error convention. Modules never print or exit: they return 0 or a
 * negative enum gdn_errcode and describe the failure in one line in a
 * struct gdn_err (lower-case start, no final full stop, the subject in
 * quotes, ": strerror(errno)" for OS errors). Only src/cmd/ prints and
 * maps error codes to exit codes (include/gdnctl/exitcode.h).
 */
#ifndef GDNCTL_ERR_H
#define GDNCTL_ERR_H

#include "gdnctl/compat.h"

enum gdn_errcode {
	GDN_OK = 0,
	GDN_EFAILED = -1,   /* ran, and the answer is "failed" (lint findings, job failed) */
	GDN_EUSAGE = -2,    /* bad command line */
	GDN_ECONFIG = -3,   /* bad configuration */
	GDN_EBACKEND = -4,  /* a backend or agent program misbehaved */
	GDN_ENETWORK = -5,  /* network failure */
	GDN_EIO = -6,	    /* local file or OS error */
	GDN_ENOTFOUND = -7, /* a named file, key or object does not exist */
	GDN_EPARSE = -8,    /* malformed input data */
	GDN_ETIMEOUT = -9,  /* a deadline passed */
	GDN_EINTR = -10,    /* interrupted by SIGINT/SIGTERM */
};

#define GDN_ERR_MSG_MAX 1024

struct gdn_err {
	int code;
	char msg[GDN_ERR_MSG_MAX];
};
#define GDN_ERR_INIT      \
	{                 \
		0,        \
		{         \
			0 \
		}         \
	}

/* Fill err (if non-NULL) and return code, so `return gdn_err_set(...)` fits one line. */
int gdn_err_set(struct gdn_err *err, int code, const char *fmt, ...) GDN_PRINTF(3, 4);
/* Same, appending ": strerror(errno)" (errno read before anything else). */
int gdn_err_errno(struct gdn_err *err, int code, const char *fmt, ...) GDN_PRINTF(3, 4);
/* Add context in front of an existing message: "context: old message". Returns err->code. */
int gdn_err_prefix(struct gdn_err *err, const char *fmt, ...) GDN_PRINTF(2, 3);
void gdn_err_clear(struct gdn_err *err);
/* Short name of a code ("usage", "config", ...), for JSON output. */
const char *gdn_errcode_name(int code);

#endif
