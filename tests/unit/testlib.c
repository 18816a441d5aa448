/* Helpers shared by the unit tests (tests/unit/testlib.h). */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>
#include "gdnctl/file.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

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
