/*
 * One holder at a time (src/util/lock.c): an exclusive flock(2) on a file,
 * held through a close-on-exec descriptor for as long as the holder lives
 * (children do not inherit it; a crash or kill -9 releases it), with the
 * holder's pid written in the file so that the refused can name it.
 */
#ifndef GDNCTL_LOCK_H
#define GDNCTL_LOCK_H

#include "gdnctl/compat.h"

struct gdn_err;

struct gdn_lock {
	int fd; /* -1: not held */
	char *path;
};
#define GDN_LOCK_INIT    \
	{                \
		-1, NULL \
	}

/*
 * Take the lock on `path` (created 0644 when missing; its directory must
 * exist) without waiting, and write our pid in it. Returns 0; GDN_EFAILED
 * when another process holds it, with *holder (may be NULL) its pid as
 * written in the file (0 when unknown) and err "'PATH' is locked by pid N";
 * GDN_EIO when the file cannot be opened or locked. A holder that looks
 * gone (no pid yet, or a pid that no longer runs: a `gdn_lock_probe` from
 * someone else, or a holder that just exited) is given a moment (about
 * 300 ms) before the answer is "locked".
 */
int gdn_lock_take(struct gdn_lock *l, const char *path, pid_t *holder, struct gdn_err *err);
/* Whether l is held by us. */
bool gdn_lock_held(const struct gdn_lock *l);
/* Release (close) the lock and free the path; the file stays. NULL or unheld is fine. */
void gdn_lock_release(struct gdn_lock *l);
/*
 * In a forked child (not exec'd): close the descriptors of the locks the
 * parent holds, so that they are released when the parent ends, whatever
 * its children still do.
 */
void gdn_lock_drop_inherited(void);
/*
 * Whether someone holds the lock on `path`: 1 (and *holder, may be NULL,
 * its pid as written in the file, 0 when unknown), 0 when nobody does or
 * there is no such file. It takes a shared lock for an instant to tell.
 */
int gdn_lock_probe(const char *path, pid_t *holder);

#endif
