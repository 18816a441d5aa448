/* Helpers shared by the unit tests (tests/unit/testlib.h). */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

int unit_run(const char *dir, const char *const *argv, struct sbuf *out)
{
	static const char *const env[] = {"GIT_AUTHOR_NAME=t",	   "GIT_AUTHOR_EMAIL=t@e",
					  "GIT_COMMITTER_NAME=t",  "GIT_COMMITTER_EMAIL=t@e",
					  "GIT_CONFIG_NOSYSTEM=1", NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int rc;

	p.argv = argv;
	p.dir = dir;
	p.env = env;
	p.capture = true;
	if (gdn_proc_run(&p, &err))
		fail_msg("cannot run '%s': %s", argv[0], err.msg);
	rc = gdn_proc_exit_code(&p);
	if (out) {
		sbuf_reset(out);
		sbuf_add(out, p.out.buf, p.out.len);
		sbuf_trim(out);
	}
	gdn_proc_release(&p);
	return rc;
}

void unit_rm_rf(const char *path)
{
	assert_int_equal(unit_run(NULL, (const char *const[]){"rm", "-rf", path, NULL}, NULL), 0);
}

void unit_write_mem(const char *dir, const char *name, const void *buf, size_t len, mode_t mode)
{
	char *path = dir ? xstrfmt("%s/%s", dir, name) : xstrdup(name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		fail_msg("cannot create '%s': %s", path, strerror(errno));
	assert_int_equal(gdn_write_all(fd, buf, len), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, mode), 0);
	free(path);
}

void unit_write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	unit_write_mem(dir, name, text, strlen(text), mode);
}

/* ---- protobuf writers for hand-made XSpaces ---- */

void pb_varint(struct sbuf *sb, uint64_t v)
{
	do {
		sbuf_addch(sb, (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v);
}

void pb_uint(struct sbuf *sb, unsigned field, uint64_t v)
{
	pb_varint(sb, (uint64_t)field << 3);
	pb_varint(sb, v);
}

void pb_double(struct sbuf *sb, unsigned field, double d)
{
	char b[8];

	pb_varint(sb, (uint64_t)field << 3 | 1);
	memcpy(b, &d, 8);
	sbuf_add(sb, b, 8);
}

void pb_bytes(struct sbuf *sb, unsigned field, const char *p, size_t n)
{
	pb_varint(sb, (uint64_t)field << 3 | 2);
	pb_varint(sb, n);
	sbuf_add(sb, p, n);
}

void pb_msg(struct sbuf *sb, unsigned field, struct sbuf *m)
{
	pb_bytes(sb, field, m->buf, m->len);
	sbuf_reset(m);
}
