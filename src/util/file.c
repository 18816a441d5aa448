/* Atomic file replacement (include/gdnctl/file.h). */
#include "gdnctl/compat.h"
#include <sys/stat.h>
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/sbuf.h"

int gdn_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (!n) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int gdn_write_file_atomic(const char *path, const void *buf, size_t len, struct gdn_err *err)
{
	struct sbuf tmp = SBUF_INIT, dir = SBUF_INIT;
	const char *slash = strrchr(path, '/');
	struct stat st;
	int fd, dfd, ret = 0;

	sbuf_addf(&tmp, "%s.tmp.XXXXXX", path);
	fd = mkstemp(tmp.buf);
	if (fd < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot create '%s'", tmp.buf);
		sbuf_reset(&tmp);
		goto out;
	}
	if (fchmod(fd, stat(path, &st) ? 0644 : st.st_mode & 07777) ||
	    gdn_write_all(fd, buf, len) || fsync(fd)) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", tmp.buf);
		close(fd);
		goto out;
	}
	if (close(fd)) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", tmp.buf);
		goto out;
	}
	if (rename(tmp.buf, path)) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot rename '%s' to '%s'", tmp.buf, path);
		goto out;
	}
	sbuf_reset(&tmp);
	/* the rename is durable once the directory is: best effort */
	sbuf_add(&dir, path, slash ? (size_t)(slash - path) + 1 : 0);
	sbuf_addch(&dir, '.');
	dfd = open(dir.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	if (tmp.len)
		unlink(tmp.buf);
	sbuf_release(&tmp);
	sbuf_release(&dir);
	return ret;
}
