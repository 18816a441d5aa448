/*
 * Trace inputs: resolving a profile directory to one trace file, and
 * reading a file through the pipeline with inflate on a second thread.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/* ---- profile directories ---- */

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted names of the entries of dir (directories or regular files). */
static int list_dir(const char *dir, bool dirs, struct strvec *out, struct gdn_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct sbuf path = SBUF_INIT;

	if (!d)
		return gdn_err_errno(err, GDN_EIO, "cannot open directory '%s'", dir);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		sbuf_reset(&path);
		sbuf_addf(&path, "%s/%s", dir, de->d_name);
		if (is_dir(path.buf) == dirs)
			strvec_push(out, de->d_name);
	}
	closedir(d);
	sbuf_release(&path);
	qsort(out->v, out->nr, sizeof(*out->v), cmp_str);
	return 0;
}

/* A profiler run directory is named like 2026_01_11_21_26_41. */
static bool is_timestamp(const char *s)
{
	size_t digits = 0;

	for (; *s; s++) {
		if (isdigit((unsigned char)*s))
			digits++;
		else if (*s != '_' && *s != '-')
			return false;
	}
	return digits >= 8;
}

static int newest_run(const char *dir, struct sbuf *out, struct gdn_err *err)
{
	struct strvec subs = STRVEC_INIT;
	const char *best = NULL;
	int ret = list_dir(dir, true, &subs, err);

	for (size_t i = 0; !ret && i < subs.nr; i++)
		if (is_timestamp(subs.v[i]))
			best = subs.v[i]; /* sorted: the last is the newest */
	if (!ret && best)
		sbuf_addf(out, "%s/%s", dir, best);
	strvec_clear(&subs);
	return ret;
}

static int pick_file(const char *dir, enum gdn_trace_input input, char **path,
		     struct strvec *xplanes, struct gdn_err *err)
{
	static const char *const suffixes[] = {".trace.json.gz", ".trace.json", ".json.gz", ".json",
					       NULL};
	struct strvec files = STRVEC_INIT;
	const char *pick = NULL;
	int ret = list_dir(dir, false, &files, err);

	if (!ret && xplanes && input != GDN_TRACE_INPUT_JSON)
		for (size_t i = 0; i < files.nr; i++)
			if (ends_with(files.v[i], ".xplane.pb") ||
			    ends_with(files.v[i], ".xplane.pb.gz"))
				strvec_pushf(xplanes, "%s/%s", dir, files.v[i]);
	if (!ret && xplanes && xplanes->nr) {
		/* every host's XPlane: what the JSON is converted from */
		strvec_clear(&files);
		*path = xstrdup(xplanes->v[0]);
		return 0;
	}
	for (size_t i = 0; !ret && i < files.nr && !pick && input != GDN_TRACE_INPUT_XPLANE; i++)
		if (!strcmp(files.v[i], "perfetto_trace.json.gz"))
			pick = files.v[i];
	for (const char *const *sfx = suffixes;
	     !ret && !pick && *sfx && input != GDN_TRACE_INPUT_XPLANE; sfx++)
		for (size_t i = 0; i < files.nr && !pick; i++)
			if (ends_with(files.v[i], *sfx))
				pick = files.v[i];
	if (!ret && !pick)
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no %s in '%s'",
				  input == GDN_TRACE_INPUT_XPLANE ? "XPlane file (*.xplane.pb)"
				  : input == GDN_TRACE_INPUT_JSON
				      ? "trace-event JSON (perfetto_trace.json.gz, "
					"*.trace.json.gz, *.json)"
				      : "trace file (perfetto_trace.json.gz, *.trace.json.gz, "
					"*.json, *.xplane.pb)",
				  dir);
	if (!ret)
		*path = xstrfmt("%s/%s", dir, pick);
	strvec_clear(&files);
	return ret;
}

const struct gdn_enum gdn_trace_input_enum[] = {
    {"auto", GDN_TRACE_INPUT_AUTO, "the XPlane when the directory has one, else the JSON"},
    {"xplane", GDN_TRACE_INPUT_XPLANE, "the XPlane files (*.xplane.pb)"},
    {"json", GDN_TRACE_INPUT_JSON,
     "the trace-event JSON (perfetto_trace.json.gz, *.trace.json.gz)"},
    GDN_ENUM_END,
};

int gdn_trace_resolve_inputs(const char *arg, enum gdn_trace_input input, char **path,
			     struct strvec *xplanes, bool *from_dir, struct gdn_err *err)
{
	struct sbuf dir = SBUF_INIT, run = SBUF_INIT;
	int ret = 0;

	*path = NULL;
	*from_dir = false;
	if (!strcmp(arg, "-") || !is_dir(arg)) {
		struct stat st;

		if (strcmp(arg, "-") && stat(arg, &st))
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", arg);
		else
			*path = xstrdup(arg);
		goto out;
	}
	*from_dir = true;
	sbuf_adds(&dir, arg);
	while (dir.len > 1 && dir.buf[dir.len - 1] == '/')
		sbuf_setlen(&dir, dir.len - 1);
	/* <logdir>/plugins/profile/<run>/, plugins/profile itself, or a run directory */
	sbuf_addf(&run, "%s/plugins/profile", dir.buf);
	if (is_dir(run.buf)) {
		sbuf_reset(&dir);
		sbuf_add(&dir, run.buf, run.len);
	}
	sbuf_reset(&run);
	ret = newest_run(dir.buf, &run, err);
	if (!ret)
		ret = pick_file(run.len ? run.buf : dir.buf, input, path, xplanes, err);
out:
	sbuf_release(&dir);
	sbuf_release(&run);
	return ret;
}

/* ---- reading with inflate on a second thread ---- */

#define READ_SIZE  (256u << 10)
#define BLOCK_SIZE (512u << 10)
#define NBLOCKS	   4

struct block {
	char *data;
	size_t len;
};

/*
 * The producer reads and inflates into a ring of NBLOCKS blocks; the
 * consumer (the calling thread) tokenises and aggregates them in order.
 */
struct reader {
	int fd;
	const char *label;
	struct gdn_gz *gz;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct block blocks[NBLOCKS];
	size_t head, full; /* full blocks: [head, head + full) */
	struct block *cur; /* being filled by the producer */
	bool eof, stop;
	int prod_ret;
	struct gdn_err prod_err;
};

static int read_all(int fd, const char *label, struct gdn_gz *gz, struct gdn_err *err)
{
	char *buf = xmalloc(READ_SIZE);
	int ret = 0;

	for (;;) {
		int ready = gdn_proc_wait_input(fd);
		ssize_t n;

		if (!ready) {
			ret = gdn_err_set(err, GDN_EINTR, "interrupted while reading '%s'", label);
			break;
		}
		n = ready < 0 ? -1 : read(fd, buf, READ_SIZE);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", label);
			break;
		}
		if (!n) {
			ret = gdn_gz_finish(gz, err);
			break;
		}
		ret = gdn_gz_feed(gz, buf, (size_t)n, err);
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

/* Producer: wait for a free block; NULL when the consumer stopped. */
static struct block *free_block(struct reader *r)
{
	struct block *b = NULL;

	pthread_mutex_lock(&r->mu);
	while (r->full == NBLOCKS && !r->stop)
		pthread_cond_wait(&r->cv, &r->mu);
	if (!r->stop) {
		b = &r->blocks[(r->head + r->full) % NBLOCKS];
		b->len = 0;
	}
	pthread_mutex_unlock(&r->mu);
	return b;
}

static void publish(struct reader *r)
{
	pthread_mutex_lock(&r->mu);
	r->full++;
	r->cur = NULL;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static int to_queue(void *ctx, const char *data, size_t len, struct gdn_err *err)
{
	struct reader *r = ctx;

	while (len) {
		size_t n;

		if (!r->cur) {
			r->cur = free_block(r);
			if (!r->cur)
				return gdn_err_set(err, GDN_EINTR, "stopped");
		}
		n = BLOCK_SIZE - r->cur->len;
		if (n > len)
			n = len;
		memcpy(r->cur->data + r->cur->len, data, n);
		r->cur->len += n;
		data += n;
		len -= n;
		if (r->cur->len == BLOCK_SIZE)
			publish(r);
	}
	return 0;
}

static void *producer(void *arg)
{
	struct reader *r = arg;
	int ret = read_all(r->fd, r->label, r->gz, &r->prod_err);

	if (!ret && r->cur && r->cur->len)
		publish(r);
	pthread_mutex_lock(&r->mu);
	r->prod_ret = ret;
	r->eof = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static int run_threaded(int fd, const char *label, struct gdn_trace *t, struct gdn_err *err)
{
	struct reader r;
	pthread_t th;
	int ret = 0;
	bool started = false;

	memset(&r, 0, sizeof(r));
	r.fd = fd;
	r.label = label;
	r.gz = gdn_gz_new(to_queue, &r);
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	for (int i = 0; i < NBLOCKS; i++)
		r.blocks[i].data = xmalloc(BLOCK_SIZE);
	if (pthread_create(&th, NULL, producer, &r)) {
		ret = gdn_err_set(err, GDN_EIO, "cannot start a thread");
		goto out;
	}
	started = true;
	for (;;) {
		struct block *b;

		pthread_mutex_lock(&r.mu);
		while (!r.full && !r.eof)
			pthread_cond_wait(&r.cv, &r.mu);
		b = r.full ? &r.blocks[r.head] : NULL;
		pthread_mutex_unlock(&r.mu);
		if (!b) {
			/* eof: the producer's own error, if any, comes after all its data */
			if (r.prod_ret) {
				ret = r.prod_ret;
				if (err)
					*err = r.prod_err;
			}
			break;
		}
		ret = gdn_trace_feed_json(t, b->data, b->len, err);
		pthread_mutex_lock(&r.mu);
		r.head = (r.head + 1) % NBLOCKS;
		r.full--;
		if (ret)
			r.stop = true;
		pthread_cond_broadcast(&r.cv);
		pthread_mutex_unlock(&r.mu);
		if (ret)
			break;
	}
out:
	if (started)
		pthread_join(th, NULL);
	gdn_gz_free(r.gz);
	for (int i = 0; i < NBLOCKS; i++)
		free(r.blocks[i].data);
	pthread_mutex_destroy(&r.mu);
	pthread_cond_destroy(&r.cv);
	return ret;
}

static int to_trace(void *ctx, const char *data, size_t len, struct gdn_err *err)
{
	return gdn_trace_feed_json(ctx, data, len, err);
}

int gdn_trace_summarize_file(const char *path, const struct gdn_trace_opts *opts,
			     struct gdn_trace_summary *out, struct gdn_err *err)
{
	bool is_stdin = !strcmp(path, "-");
	/* O_NONBLOCK: opening a FIFO waits for a writer in gdn_proc_wait_input(), not here */
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct gdn_trace *t = NULL;
	struct gdn_gz *gz = NULL;
	struct stat st;
	int ret = 0;

	/* only a regular file can be an XPlane (read twice, with seeks); a stream is JSON */
	if (!is_stdin && (fd < 0 || (!fstat(fd, &st) && S_ISREG(st.st_mode)))) {
		bool xplane = false;

		ret = gdn_xplane_sniff_file(path, &xplane, err);
		if (ret)
			return ret;
		if (xplane) {
			if (fd >= 0)
				close(fd);
			return gdn_xplane_summarize_files(&path, 1, opts, out, err);
		}
	}
	if (fd < 0) {
		ret = gdn_err_errno(err, GDN_EIO, "cannot open '%s'", path);
		goto out;
	}
	t = gdn_trace_new(opts);
	if (opts && opts->no_thread) {
		gz = gdn_gz_new(to_trace, t);
		ret = read_all(fd, path, gz, err);
	} else {
		ret = run_threaded(fd, path, t, err);
	}
	if (!ret)
		ret = gdn_trace_finish(t, out, err);
	if (ret == GDN_EPARSE)
		gdn_err_prefix(err, "'%s'", path);
	if (!ret) {
		free(out->path);
		out->path = xstrdup(path);
	}
out:
	if (fd > STDIN_FILENO)
		close(fd);
	gdn_gz_free(gz);
	gdn_trace_free(t);
	return ret;
}
