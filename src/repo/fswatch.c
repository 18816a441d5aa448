/*
 * A working tree's change feed (fswatch.h): one inotify descriptor, one
 * watch per directory, added before the directory is read so that an entry
 * created during the walk is either seen by the walk or queued as an event.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/fswatch.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#ifdef __linux__
#include <sys/inotify.h>
#endif

struct dirwatch {
	int wd;
	char *rel; /* "" for the root */
};

struct gdn_fswatch {
	int fd;
	char *root;
	struct dirwatch *v; /* sorted by wd */
	size_t nr, alloc;
};

size_t gdn_fswatch_count(const struct gdn_fswatch *w)
{
	return w ? w->nr : 0;
}

void gdn_fswatch_free(struct gdn_fswatch *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->nr; i++)
		free(w->v[i].rel);
	free(w->v);
	free(w->root);
	free(w);
}

#ifdef __linux__

#define WATCH_MASK                                                                        \
	(IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | \
	 IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW |      \
	 IN_EXCL_UNLINK)

static const char *rel_of(const struct gdn_fswatch *w, int wd)
{
	size_t lo = 0, hi = w->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->v[mid].wd == wd)
			return w->v[mid].rel;
		if (w->v[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void remember(struct gdn_fswatch *w, int wd, const char *rel)
{
	size_t at = w->nr;

	if (rel_of(w, wd))
		return; /* the same directory reached twice (a bind mount) */
	while (at > 0 && w->v[at - 1].wd > wd)
		at--;
	ALLOC_GROW(w->v, w->nr + 1, w->alloc);
	memmove(w->v + at + 1, w->v + at, (w->nr - at) * sizeof(*w->v));
	w->v[at].wd = wd;
	w->v[at].rel = xstrdup(rel);
	w->nr++;
}

/* Watch `rel` (a directory under the root), then queue its subdirectories on `todo`. */
static int watch_dir(struct gdn_fswatch *w, const char *rel, struct strvec *todo,
		     gdn_fswatch_skip_fn skip, void *payload, struct gdn_err *err)
{
	struct sbuf path = SBUF_INIT, sub = SBUF_INIT;
	DIR *d = NULL;
	struct dirent *e;
	int wd, ret = 0;

	sbuf_addf(&path, "%s%s%s", w->root, *rel ? "/" : "", rel);
	wd = inotify_add_watch(w->fd, path.buf, WATCH_MASK);
	if (wd < 0) {
		ret =
		    gdn_err_set(err, GDN_EIO, "cannot watch '%s': %s%s", path.buf, strerror(errno),
				errno == ENOSPC ? " (fs.inotify.max_user_watches reached)" : "");
		goto out;
	}
	remember(w, wd, rel);
	d = opendir(path.buf);
	if (!d) {
		ret = gdn_err_set(err, GDN_EIO, "cannot read the directory '%s': %s", path.buf,
				  strerror(errno));
		goto out;
	}
	while ((e = readdir(d))) {
		bool is_dir = e->d_type == DT_DIR;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, ".git"))
			continue;
		sbuf_reset(&sub);
		sbuf_addf(&sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		if (e->d_type == DT_UNKNOWN) {
			struct stat st;
			struct sbuf full = SBUF_INIT;

			sbuf_addf(&full, "%s/%s", w->root, sub.buf);
			is_dir = !lstat(full.buf, &st) && S_ISDIR(st.st_mode);
			sbuf_release(&full);
		}
		if (is_dir && !(skip && skip(sub.buf, payload)))
			strvec_push(todo, sub.buf);
	}
out:
	if (d)
		closedir(d);
	sbuf_release(&path);
	sbuf_release(&sub);
	return ret;
}

int gdn_fswatch_open(struct gdn_fswatch **out, const char *root, gdn_fswatch_skip_fn skip,
		     void *payload, struct gdn_err *err)
{
	struct gdn_fswatch *w = xcalloc(1, sizeof(*w));
	struct strvec todo = STRVEC_INIT;
	int ret = 0;

	*out = NULL;
	w->root = xstrdup(root);
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		ret =
		    gdn_err_set(err, GDN_EIO, "cannot start an inotify watch: %s", strerror(errno));
		goto out;
	}
	strvec_push(&todo, "");
	while (todo.nr) {
		char *rel = xstrdup(todo.v[todo.nr - 1]);

		strvec_pop(&todo);
		ret = watch_dir(w, rel, &todo, skip, payload, err);
		free(rel);
		if (ret)
			goto out;
	}
	*out = w;
	w = NULL;
out:
	strvec_clear(&todo);
	gdn_fswatch_free(w);
	return ret;
}

int gdn_fswatch_drain(struct gdn_fswatch *w, struct strvec *paths)
{
	/* aligned for struct inotify_event, as inotify(7) shows */
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	int full = 0;

	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return 1;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
			const char *dir;

			p += sizeof(*ev) + ev->len;
			if (ev->mask &
			    (IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
				full = 1;
				continue;
			}
			if (ev->mask & IN_ISDIR) {
				/* a directory's own mode or times: git does not track them */
				if (ev->mask &
				    (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO))
					full = 1;
				continue;
			}
			dir = rel_of(w, ev->wd);
			if (!dir || !ev->len || !strcmp(ev->name, ".gitignore")) {
				full = 1;
				continue;
			}
			strvec_pushf(paths, "%s%s%s", dir, *dir ? "/" : "", ev->name);
		}
	}
	return full;
}

#else /* !__linux__ */

int gdn_fswatch_open(struct gdn_fswatch **out, const char *root, gdn_fswatch_skip_fn skip,
		     void *payload, struct gdn_err *err)
{
	(void)root, (void)skip, (void)payload;
	*out = NULL;
	return gdn_err_set(err, GDN_EIO, "no file change feed on this system");
}

int gdn_fswatch_drain(struct gdn_fswatch *w, struct strvec *paths)
{
	(void)w, (void)paths;
	return 1;
}

#endif
