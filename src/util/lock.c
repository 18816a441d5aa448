/*
 * Exclusive locks on files with flock(2), for "one gdnctl loop per tree":
 * the descriptor is close-on-exec and kept open while the lock is held, so
 * the kernel releases it when the holder dies, however it dies.
 */
#include "gdnctl/compat.h"
#include <sys/file.h>
#include "gdnctl/err.h"
#include "gdnctl/lock.h"
#include "gdnctl/proc.h"
#include "gdnctl/xalloc.h"

#define LOCK_RETRY_MS 300
#define LOCK_TICK_MS  20

/* The pid written in the lock file open as fd (0 when none). */
static pid_t read_holder(int fd)
{
	char buf[32];
	ssize_t n;
	long pid;
	char *end;

	do {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
	} while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	if (end == buf || (*end && *end != '\n') || pid <= 0 || pid > INT_MAX)
		return 0;
	return (pid_t)pid;
}

static int flock_retry(int fd, int op)
{
	int rc;

	do {
		rc = flock(fd, op);
	} while (rc < 0 && errno == EINTR);
	return rc;
}

static int write_pid(int fd)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	if (ftruncate(fd, 0) < 0)
		return -1;
	return pwrite(fd, buf, (size_t)len, 0) == len ? 0 : -1;
}

/* The descriptors of the locks this process holds (for gdn_lock_drop_inherited). */
#define LOCKS_MAX 16
static int held_fds[LOCKS_MAX] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

static void remember(int fd, int was)
{
	for (int i = 0; i < LOCKS_MAX; i++)
		if (held_fds[i] == was) {
			held_fds[i] = fd;
			return;
		}
}

void gdn_lock_drop_inherited(void)
{
	for (int i = 0; i < LOCKS_MAX; i++)
		if (held_fds[i] >= 0) {
			close(held_fds[i]);
			held_fds[i] = -1;
		}
}

int gdn_lock_take(struct gdn_lock *l, const char *path, pid_t *holder, struct gdn_err *err)
{
	int64_t until = gdn_now_ms() + LOCK_RETRY_MS;
	pid_t who = 0;
	int fd;

	if (holder)
		*holder = 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open lock file '%s'", path);
	for (;;) {
		if (!flock_retry(fd, LOCK_EX | LOCK_NB))
			break;
		if (errno != EWOULDBLOCK) {
			int ret = gdn_err_errno(err, GDN_EIO, "cannot lock '%s'", path);

			close(fd);
			return ret;
		}
		who = read_holder(fd);
		/* a live holder with its pid written: locked; else look again a moment later */
		if ((who > 0 && gdn_proc_started(who) >= 0) || gdn_now_ms() >= until) {
			close(fd);
			if (holder)
				*holder = who;
			if (who > 0)
				return gdn_err_set(err, GDN_EFAILED, "'%s' is locked by pid %ld",
						   path, (long)who);
			return gdn_err_set(err, GDN_EFAILED, "'%s' is locked", path);
		}
		poll(NULL, 0, LOCK_TICK_MS);
	}
	if (write_pid(fd) < 0) {
		int ret = gdn_err_errno(err, GDN_EIO, "cannot write lock file '%s'", path);

		close(fd);
		return ret;
	}
	gdn_lock_release(l);
	l->fd = fd;
	remember(fd, -1);
	l->path = xstrdup(path);
	return 0;
}

bool gdn_lock_held(const struct gdn_lock *l)
{
	return l && l->fd >= 0;
}

void gdn_lock_release(struct gdn_lock *l)
{
	if (!l)
		return;
	if (l->fd >= 0) {
		remember(-1, l->fd);
		close(l->fd);
	}
	l->fd = -1;
	FREE_AND_NULL(l->path);
}

int gdn_lock_probe(const char *path, pid_t *holder)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), held = 0;

	if (holder)
		*holder = 0;
	if (fd < 0)
		return 0;
	if (flock_retry(fd, LOCK_SH | LOCK_NB) < 0) {
		held = errno == EWOULDBLOCK;
		if (held && holder)
			*holder = read_holder(fd);
	}
	close(fd); /* also drops our shared lock */
	return held;
}
