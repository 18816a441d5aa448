/*
 * Writing files so that nothing partial is ever seen at a final path, and
 * making the directories they go in.
 */
#ifndef GDNCTL_FILE_H
#define GDNCTL_FILE_H

#include "gdnctl/compat.h"

struct gdn_err;

/* write(2) all of buf, retrying EINTR and short writes: 0, or -1 with errno set. */
int gdn_write_all(int fd, const void *buf, size_t len);

/*
 * Replace `path` by `len` bytes atomically: a temporary file next to it
 * (mkstemp), given the mode of the file it replaces (0644 for a new
 * one), written, fsync(2)ed, renamed over `path`, then the directory
 * fsync(2)ed (best effort). On failure `path` is untouched and the
 * temporary file removed. Returns 0 or GDN_EIO naming the file.
 */
int gdn_write_file_atomic(const char *path, const void *buf, size_t len, struct gdn_err *err);

/*
 * mkdir -p: create `dir` and every missing directory above it with `mode`
 * (less the umask); one that exists already is fine. Returns 0 or GDN_EIO
 * naming the directory that could not be made (errno is left as mkdir(2)
 * set it).
 */
int gdn_mkdir_p(const char *dir, mode_t mode, struct gdn_err *err);
/* The same for the directories above the file `path` (not `path` itself). */
int gdn_mkdir_parents(const char *path, mode_t mode, struct gdn_err *err);
/*
 * Read the first `limit` bytes of `path` (fewer at its end) in 1 MiB
 * chunks, each passed to fn(buf, len, ctx); *done (may be NULL) gets how
 * many. Returns 0, GDN_EIO (cannot open or read) or GDN_EINTR (SIGINT/SIGTERM
 * while a FIFO or pipe had no input).
 */
int gdn_read_chunks(const char *path, uint64_t limit,
		    void (*fn)(const void *buf, size_t len, void *ctx), void *ctx, uint64_t *done,
		    struct gdn_err *err);

#endif
