/* Helpers shared by the unit tests (tests/unit/testlib.h). */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>
#include "gdnctl/file.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

void unit_rm_rf(const char *path)
{
	const char *argv[] = {"rm", "-rf", path, NULL};
	pid_t pid = fork();
	int st = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
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
