/*
 * Helpers shared by the unit tests (tests/unit/testlib.c, linked into
 * every test binary). They fail the running cmocka test on any error.
 */
#ifndef GDNCTL_TESTLIB_H
#define GDNCTL_TESTLIB_H

#include "gdnctl/compat.h"

/*
 * Write len bytes of buf to the file dir/name (dir NULL: name is the whole
 * path), created or truncated, then chmod(2) it to mode.
 */
void unit_write_mem(const char *dir, const char *name, const void *buf, size_t len, mode_t mode);
/* The same with the NUL-terminated text. */
void unit_write_file(const char *dir, const char *name, const char *text, mode_t mode);

#endif
