/* Atomic file replacement (include/gdnctl/file.h). */
#include "gdnctl/compat.h"
#include <sys/stat.h>
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/proc.h"
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

/*
 * Open `path` for reading without blocking in open() (a FIFO without a
 * writer would wait there, deaf to SIGINT/SIGTERM); *stream: not a regular
 * file, so each read waits in gdn_proc_wait_input() first.
 */
static int open_input(const char *path, bool *stream)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	*stream = fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode));
	return fd;
}

/*
 * read(2) that a signal ends: a stream (FIFO, pipe, terminal) is read once
 * it has input, and SIGINT/SIGTERM while it has none returns -1 with
 * *intr set. A regular file never waits (and is read after a signal too,
 * for the cleanups).
 */
static ssize_t read_input(int fd, bool stream, void *buf, size_t len, bool *intr)
{
	for (;;) {
		int ready = stream ? gdn_proc_wait_input(fd) : 1;
		ssize_t n;

		if (!ready) {
			*intr = true;
			return -1;
		}
		n = ready < 0 ? -1 : read(fd, buf, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		return n;
	}
}

int sbuf_read_file(struct sbuf *sb, const char *path, size_t max, struct gdn_err *err)
{
	int fd = -1, ret = 0;
	bool stream = false, intr = false;
	struct stat st;

	fd = open_input(path, &stream);
	if (fd < 0) {
		ret = gdn_err_errno(err, errno == ENOENT ? GDN_ENOTFOUND : GDN_EIO,
				    "cannot open '%s'", path);
		goto out;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read '%s': Is a directory", path);
		goto out;
	}
	if (fstat(fd, &st) == 0 && st.st_size > 0)
		sbuf_grow(sb, (size_t)st.st_size);
	for (;;) {
		ssize_t n;

		sbuf_grow(sb, 65536);
		n = read_input(fd, stream, sb->buf + sb->len, sb->alloc - sb->len - 1, &intr);
		if (intr) {
			ret = gdn_err_set(err, GDN_EINTR, "interrupted while reading '%s'", path);
			goto out;
		}
		if (n < 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", path);
			goto out;
		}
		if (n == 0)
			break;
		sbuf_setlen(sb, sb->len + (size_t)n);
		if (max && sb->len > max) {
			ret = gdn_err_set(err, GDN_EIO, "'%s' is larger than %zu bytes", path, max);
			goto out;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

int gdn_read_chunks(const char *path, uint64_t limit,
		    void (*fn)(const void *buf, size_t len, void *ctx), void *ctx,
		    uint64_t *done_out, struct gdn_err *err)
{
	size_t bufsz = 1 << 20;
	char *buf = NULL;
	uint64_t done = 0;
	bool stream = false, intr = false;
	int fd, ret = 0;

	fd = open_input(path, &stream);
	if (fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open '%s'", path);
	buf = malloc(bufsz);
	if (!buf) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read '%s': out of memory", path);
		goto out;
	}
	while (done < limit) {
		size_t want = limit - done < bufsz ? (size_t)(limit - done) : bufsz;
		ssize_t n = read_input(fd, stream, buf, want, &intr);

		if (intr) {
			ret = gdn_err_set(err, GDN_EINTR, "interrupted while reading '%s'", path);
			goto out;
		}
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
