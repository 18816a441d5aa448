/* Atomic file replacement (include/gdnctl/file.h). */
#include "gdnctl/compat.h"
#include <sys/stat.h>
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

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

/* mkdir(2) each directory of `path` from the top down; the last component too unless parents_only.
 */
static int make_dirs(const char *path, mode_t mode, bool parents_only, struct gdn_err *err)
{
	char *dir = xstrdup(path);
	int ret = 0, saved = 0;

	for (char *p = dir + (*dir ? 1 : 0); *dir && !ret; p++) {
		bool last = !*p;

		if (!last && *p != '/')
			continue;
		if (last && parents_only)
			break;
		*p = '\0';
		if (mkdir(dir, mode) && errno != EEXIST) {
			saved = errno;
			ret = gdn_err_errno(err, GDN_EIO, "cannot create directory '%s'", dir);
		}
		if (last)
			break;
		*p = '/';
	}
	free(dir);
	if (ret)
		errno = saved;
	return ret;
}

int gdn_mkdir_p(const char *dir, mode_t mode, struct gdn_err *err)
{
	return make_dirs(dir, mode, false, err);
}

int gdn_mkdir_parents(const char *path, mode_t mode, struct gdn_err *err)
{
	return make_dirs(path, mode, true, err);
}

int gdn_read_chunks(const char *path, uint64_t limit,
		    void (*fn)(const void *buf, size_t len, void *ctx), void *ctx,
		    uint64_t *done_out, struct gdn_err *err)
{
	size_t bufsz = 1 << 20;
	char *buf = NULL;
	uint64_t done = 0;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open '%s'", path);
	buf = malloc(bufsz);
	if (!buf) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read '%s': out of memory", path);
		goto out;
	}
	while (done < limit) {
		size_t want = limit - done < bufsz ? (size_t)(limit - done) : bufsz;
		ssize_t n = read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", path);
			goto out;
		}
		if (!n)
			break;
		fn(buf, (size_t)n, ctx);
		done += (uint64_t)n;
	}
	if (done_out)
		*done_out = done;
out:
	free(buf);
	close(fd);
	return ret;
}
