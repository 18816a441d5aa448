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

struct sbuf;
/*
 * Run argv (PATH-resolved) in dir (NULL: here) through the proc API, with a
 * fixed git identity and no system git configuration; its output (stdout
 * and stderr, trimmed) in *out when out is not NULL. Returns the exit code;
 * fails the test when the program cannot be run.
 */
int unit_run(const char *dir, const char *const *argv, struct sbuf *out);
/* rm -rf path (a scratch directory of the test). */
void unit_rm_rf(const char *path);

/*
 * Protobuf writers for hand-made XSpaces: a varint, field `field` as a
 * varint (wire type 0), a double (1), bytes (2), and message m as bytes
 * (m is emptied for the next one).
 */
void pb_varint(struct sbuf *sb, uint64_t v);
void pb_uint(struct sbuf *sb, unsigned field, uint64_t v);
void pb_double(struct sbuf *sb, unsigned field, double d);
void pb_bytes(struct sbuf *sb, unsigned field, const char *p, size_t n);
void pb_msg(struct sbuf *sb, unsigned field, struct sbuf *m);

#endif
