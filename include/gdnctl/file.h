/*
 * Writing files so that nothing partial is ever seen at a final path.
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

#endif
