/*
 * Growable string buffer. `buf` is never NULL and always NUL-terminated,
 * so a struct sbuf can be printed or compared at any time. `limit` (0: no
 * limit) caps growth for untrusted input: bytes past it are dropped and
 * the adding call returns -1.
 */
#ifndef GDNCTL_SBUF_H
#define GDNCTL_SBUF_H

#include "gdnctl/compat.h"

struct sbuf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t limit;
};

extern char sbuf_slopbuf[];
#define SBUF_INIT                     \
	{                             \
		sbuf_slopbuf, 0, 0, 0 \
	}

void sbuf_init(struct sbuf *sb, size_t hint);
/* Free the contents; the buffer is ready for reuse (as after SBUF_INIT, limit kept). */
void sbuf_release(struct sbuf *sb);
/* Hand the string to the caller (who frees it); sb is re-initialised. */
char *sbuf_detach(struct sbuf *sb, size_t *len);
/* Ensure room for `extra` more bytes. */
void sbuf_grow(struct sbuf *sb, size_t extra);
void sbuf_setlen(struct sbuf *sb, size_t len);
static inline void sbuf_reset(struct sbuf *sb)
{
	sbuf_setlen(sb, 0);
}

/* Adders return 0, or -1 when `limit` truncated the data. */
int sbuf_add(struct sbuf *sb, const void *data, size_t len);
int sbuf_adds(struct sbuf *sb, const char *s);
int sbuf_addch(struct sbuf *sb, int c);
int sbuf_addf(struct sbuf *sb, const char *fmt, ...) GDN_PRINTF(2, 3);
int sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap);
/* Append `s` quoted for a POSIX shell ('...' with '\'' for quotes; bare when safe). */
void sbuf_add_shell_quoted(struct sbuf *sb, const char *s);

void sbuf_rtrim(struct sbuf *sb);
void sbuf_ltrim(struct sbuf *sb);
static inline void sbuf_trim(struct sbuf *sb)
{
	sbuf_rtrim(sb);
	sbuf_ltrim(sb);
}
bool sbuf_starts_with(const struct sbuf *sb, const char *prefix);

/*
 * Read a whole file into sb (appending). Returns 0 or a negative gdn_errcode:
 * GDN_ENOTFOUND when it does not exist, GDN_EINTR when SIGINT/SIGTERM came
 * while a FIFO, pipe or terminal had no input (src/util/file.c).
 */
struct gdn_err;
int sbuf_read_file(struct sbuf *sb, const char *path, size_t max, struct gdn_err *err);

#endif
