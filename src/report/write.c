/* Atomic file output for the report: temporary file, fsync(2), rename(2). */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/report.h"
#include "gdnctl/xalloc.h"

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int gdn_report_write_file(const char *path, const char *buf, size_t len, struct gdn_err *err)
{
	char *tmp = xstrfmt("%s.tmp.XXXXXX", path), *dir = xstrdup(path), *slash;
	int fd = mkstemp(tmp), dfd = -1, ret = 0;

	if (fd < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot create '%s'", tmp);
		FREE_AND_NULL(tmp);
		goto out;
	}
	if (fchmod(fd, 0644) || write_all(fd, buf, len) || fsync(fd)) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", tmp);
		goto out;
	}
	if (close(fd)) {
		fd = -1;
		ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", tmp);
		goto out;
	}
	fd = -1;
	if (rename(tmp, path)) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot rename '%s' to '%s'", tmp, path);
		goto out;
	}
	FREE_AND_NULL(tmp);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		dir[0] = '.', dir[1] = '\0';
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd); /* best effort: the rename is durable on most file systems */
		close(dfd);
	}
out:
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	free(dir);
	return ret;
}
