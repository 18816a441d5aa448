/*
 * A working tree's change feed (Linux inotify): what git's fsmonitor does,
 * inside the process. The loop asks "did the agent leave the tree dirty?"
 * after every iteration; with a watch it needs to look only at the paths
 * that changed since the last clean answer instead of stat'ing every
 * tracked file (10,000 files: ~50 ms of system time per question on a VM).
 *
 * Every directory under the root is watched except `.git` and those the
 * caller's skip function names (ignored directories holding no tracked
 * file). Writes through a shared mmap and changes on a network file
 * system made by other hosts raise no event: GDNCTL_FSWATCH=0 turns the
 * feed off (see docs/gdnctl.md#environment).
 */
#ifndef GDNCTL_FSWATCH_H
#define GDNCTL_FSWATCH_H

#include "gdnctl/compat.h"

struct gdn_err;
struct strvec;
struct gdn_fswatch;

/* Whether the directory `rel` (relative to the root, no trailing slash) is left unwatched. */
typedef bool (*gdn_fswatch_skip_fn)(const char *rel, void *payload);

/*
 * Watch every directory under `root`. Returns 0, or GDN_EIO (no inotify,
 * the user's watch limit reached, an unreadable directory) with nothing
 * left open.
 */
int gdn_fswatch_open(struct gdn_fswatch **out, const char *root, gdn_fswatch_skip_fn skip,
		     void *payload, struct gdn_err *err);
void gdn_fswatch_free(struct gdn_fswatch *w);

/*
 * Read the changes queued since the last call: the relative paths of the
 * files created, written, changed in mode, moved or removed are appended
 * to `paths` (duplicates possible). Returns 0 when that list is complete,
 * 1 when it is not and the caller must look at the whole tree (the queue
 * overflowed, a directory was created, moved or removed, a `.gitignore`
 * changed, a watch was lost); a watch that must look at the whole tree is
 * reopened by the caller.
 */
int gdn_fswatch_drain(struct gdn_fswatch *w, struct strvec *paths);

/* Directories watched (for tests and the bench). */
size_t gdn_fswatch_count(const struct gdn_fswatch *w);

#endif
