/*
 * XPlane reader: a serialized XSpace protobuf (the JAX/TensorFlow
 * profiler's <host>.xplane.pb, plain or gzip) streamed into the trace
 * aggregator in bounded memory.
 *
 * Our own wire-format reader, not protobuf-c: protobuf-c unpacks a whole
 * message (an XSpace is one message: the whole file) into memory, so a
 * 1 GB file would take several GB. Here the bytes pass through one 256 KB
 * buffer and only the metadata (names and per-op stats) is kept.
 *
 * The serializer writes an XPlane's lines before its event_metadata and
 * stat_metadata, so the file is read three times (plain files skip what a
 * pass does not need with lseek; gzip is inflated again):
 *   pass 0: plane ids and names, stat_metadata names, hostnames;
 *   pass 1: event_metadata (name and the per-op stats, now that the stat
 *           names are known);
 *   pass 2: the events of every line, handed to the aggregator as complete
 *           events (pid = plane, tid = line).
 * Nothing is handed on before the file has been read through once without
 * error, so an invalid file never yields a partial summary.
 *
 * Schema (openxla/xla tsl/profiler/protobuf/xplane.proto):
 *   XSpace{planes=1, errors=2, warnings=3, hostnames=4}
 *   XPlane{id=1, name=2, lines=3, event_metadata=4 (map), stat_metadata=5 (map), stats=6}
 *   XLine{id=1, name=2, timestamp_ns=3, events=4, duration_ps=9, display_id=10,
 *         display_name=11}
 *   XEvent{metadata_id=1, offset_ps=2 | num_occurrences=5, duration_ps=3, stats=4}
 *   XStat{metadata_id=1, double=2, uint64=3, int64=4, str=5, bytes=6, ref=7,
 *         compressed_str=8}
 *   XEventMetadata{id=1, name=2, metadata=3, display_name=4, stats=5, child_id=6}
 *   XStatMetadata{id=1, name=2, description=3}
 *   map entry{key=1, value=2}
 */
#include "gdnctl/compat.h"
#include <zlib.h>
#include "gdnctl/trace.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace_work.h"
#include "gdnctl/xalloc.h"

#define XP_BUF	       (256u << 10)
#define XP_POOL_MAX    ((size_t)16 << 20) /* bytes of kept metadata strings */
#define XP_ENTRIES_MAX 400000u		  /* kept metadata entries (stat + event) */

/* ---- interned strings (ids; 0 is "") ---- */

struct xstr {
	char *pool;
	size_t len, alloc;
	uint32_t *off; /* string id -> offset in pool */
	size_t nr, offalloc;
	uint32_t *slots; /* id + 1 */
	size_t mask;
};

/* Word at a time: metadata strings (long_name, source) are long. */
static uint64_t xhash(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	while (n >= 8) {
		uint64_t w;

		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
		s += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;

		memcpy(&w, s, n);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
		h ^= h >> 29;
	}
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static const char *xstr_get(const struct xstr *t, uint32_t id)
{
	return t->nr ? t->pool + t->off[id] : "";
}

static void xstr_rehash(struct xstr *t)
{
	size_t n = t->mask ? (t->mask + 1) * 2 : 1024;

	free(t->slots);
	t->slots = xcalloc(n, sizeof(*t->slots));
	t->mask = n - 1;
	for (size_t i = 0; i < t->nr; i++) {
		const char *s = t->pool + t->off[i];
		size_t j = xhash(s, strlen(s)) & t->mask;

		while (t->slots[j])
			j = (j + 1) & t->mask;
		t->slots[j] = (uint32_t)(i + 1);
	}
}

/* -1 when the pool is full. Strings must not contain NUL (cut there). */
static int64_t xstr_intern(struct xstr *t, const char *s, size_t n)
{
	size_t j;
	const char *nul = memchr(s, '\0', n);

	if (nul)
		n = (size_t)(nul - s);
	if (!t->nr) {
		ALLOC_GROW(t->pool, 1, t->alloc);
		t->pool[0] = '\0';
		t->len = 1;
		ALLOC_GROW(t->off, 1, t->offalloc);
		t->off[0] = 0;
		t->nr = 1;
		xstr_rehash(t);
	}
	if (!n)
		return 0;
	if ((t->nr + 1) * 2 > t->mask + 1)
		xstr_rehash(t);
	for (j = xhash(s, n) & t->mask; t->slots[j]; j = (j + 1) & t->mask) {
		const char *e = t->pool + t->off[t->slots[j] - 1];

		if (!strncmp(e, s, n) && e[n] == '\0')
			return t->slots[j] - 1;
	}
	if (t->len + n + 1 > XP_POOL_MAX)
		return -1;
	ALLOC_GROW(t->pool, t->len + n + 1, t->alloc);
	memcpy(t->pool + t->len, s, n);
	t->pool[t->len + n] = '\0';
	ALLOC_GROW(t->off, t->nr + 1, t->offalloc);
	t->off[t->nr] = (uint32_t)t->len;
	t->len += n + 1;
	t->slots[j] = (uint32_t)(t->nr + 1);
	return (int64_t)t->nr++;
}

static void xstr_release(struct xstr *t)
{
	free(t->pool);
	free(t->off);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* ---- a map (plane, id) -> index ---- */

struct xent {
	uint64_t id;
	uint32_t plane, val; /* val: index + 1; 0 empty */
};

struct xmap {
	struct xent *e;
	size_t mask, nr;
};

static size_t xmap_slot(const struct xmap *m, uint32_t plane, uint64_t id)
{
	uint64_t h = (id * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)plane * 0xc2b2ae3d27d4eb4fULL);

	h ^= h >> 31;
	return (size_t)(h * 0xff51afd7ed558ccdULL >> 17) & m->mask;
}

static uint32_t xmap_find(const struct xmap *m, uint32_t plane, uint64_t id)
{
	if (!m->e)
		return 0;
	for (size_t j = xmap_slot(m, plane, id); m->e[j].val; j = (j + 1) & m->mask)
		if (m->e[j].id == id && m->e[j].plane == plane)
			return m->e[j].val;
	return 0;
}

/* Store val (index + 1) for (plane, id); an existing entry is replaced. */
static void xmap_put(struct xmap *m, uint32_t plane, uint64_t id, uint32_t val)
{
	size_t j;

	if (!m->e || (m->nr + 1) * 4 > (m->mask + 1) * 3) {
		size_t oldn = m->e ? m->mask + 1 : 0, n = oldn ? oldn * 2 : 256;
		struct xent *old = m->e;

		m->e = xcalloc(n, sizeof(*m->e));
		m->mask = n - 1;
		for (size_t i = 0; i < oldn; i++) {
			if (!old[i].val)
				continue;
			for (j = xmap_slot(m, old[i].plane, old[i].id); m->e[j].val;
			     j = (j + 1) & m->mask)
				;
			m->e[j] = old[i];
		}
		free(old);
	}
	for (j = xmap_slot(m, plane, id); m->e[j].val; j = (j + 1) & m->mask) {
		if (m->e[j].id == id && m->e[j].plane == plane) {
			m->e[j].val = val;
			return;
		}
	}
	m->e[j].id = id;
	m->e[j].plane = plane;
	m->e[j].val = val;
	m->nr++;
}

static void xmap_release(struct xmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ---- the model ---- */

enum stat_kind {
	SK_OTHER,
	SK_HLO,	    /* hlo_category */
	SK_TFOP,    /* tf_op */
	SK_LEVEL0,  /* "level 0": the TF op of a GPU kernel */
	SK_SOURCE,  /* source */
	SK_LONG,    /* long_name */
	SK_DEDUP,   /* deduplicated_name */
	SK_PROGRAM, /* program_id */
	SK_SYMBOL,  /* symbol_id */
	SK_FLOPS,   /* flops */
	SK_MFLOPS,  /* model_flops */
	SK_BYTES,   /* bytes_accessed */
	SK_DEVOFF,  /* device_offset_ps */
	SK_DEVDUR,  /* device_duration_ps */
	SK_STEPNUM, /* step_num: a host step annotation */
};

static enum stat_kind stat_kind(const char *s)
{
	static const struct {
		const char *name;
		enum stat_kind kind;
	} kinds[] = {
	    {"hlo_category", SK_HLO},
	    {"tf_op", SK_TFOP},
	    {"level 0", SK_LEVEL0},
	    {"source", SK_SOURCE},
	    {"long_name", SK_LONG},
	    {"deduplicated_name", SK_DEDUP},
	    {"program_id", SK_PROGRAM},
	    {"symbol_id", SK_SYMBOL},
	    {"flops", SK_FLOPS},
	    {"model_flops", SK_MFLOPS},
	    {"bytes_accessed", SK_BYTES},
	    {"device_offset_ps", SK_DEVOFF},
	    {"device_duration_ps", SK_DEVDUR},
	    {"step_num", SK_STEPNUM},
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(s, kinds[i].name))
			return kinds[i].kind;
	return SK_OTHER;
}

struct smeta {
	uint32_t name; /* interned */
	uint8_t kind;
};

/* facts.work: which work figures (trace_work.h) are set */
#define WK_FLOPS  1u
#define WK_MFLOPS 2u /* flops holds model_flops, which wins over flops */
#define WK_BYTES  4u

/* What an XEventMetadata or XEvent says; string ids + 1 (0: not set). */
struct facts {
	uint32_t hlo, tfop, source, dedup, longname;
	uint64_t devoff, devdur, stepnum;
	bool has_devoff, has_devdur, has_stepnum;
	uint8_t work;
	/* last: set and read only where work says (read_event clears what is above) */
	double flops, bytes;
};

struct emeta {
	uint32_t name;	   /* interned */
	uint32_t tuple[2]; /* the aggregator's tuple + 1 (pass 2 cache), [GPU stream line] */
	struct facts f;
};

struct plane {
	uint64_t id;
	uint32_t name; /* interned */
	bool dup_id;
	uint64_t lines_end; /* where its last XLine ends (pass 0) */
	/* pass 2: event metadata id -> emetas index + 1, when the ids are dense */
	uint32_t *dense;
	size_t ndense;
};

struct xp_file {
	const char *label; /* the file name (borrowed) or NULL */
	int fd;
	const unsigned char *mem;
	size_t memlen;
};

struct xp {
	/* input */
	struct xp_file f;
	size_t mempos;
	bool gz, zinit, in_member;
	z_stream zs;
	unsigned char *raw, *buf;
	size_t pos, len;
	uint64_t base;	/* decoded offset of buf[0] */
	uint64_t limit; /* decoded size when known, else UINT64_MAX */
	bool eof;
	/* model */
	struct xstr strs;
	struct plane *planes;
	size_t nplanes, planealloc;
	struct smeta *smetas;
	size_t nsmetas, smetaalloc;
	struct emeta *emetas;
	size_t nemetas, emetaalloc;
	struct xmap smap, emap;
	struct strvec hosts;
	/* pass 2 */
	int pass;
	uint32_t host; /* index of the file among several */
	bool multi;
	const char *host_name;
	struct gdn_trace_agg *agg;   /* NULL: only the work figures are read */
	struct gdn_trace_work *work; /* NULL: not read */
	struct sbuf tmp, tmp2;
	uint64_t events, aggregated, no_meta, dropped;
	/*
	 * long_name is never shown: unless keep_long, it is skipped, not interned.
	 * long_bytes bounds what it would have taken of the pool; need_exact says
	 * that the pool might have filled up with it (or that a skipped text was
	 * wanted after all), and the files are read again with keep_long, so that
	 * what is kept and dropped stays the same.
	 */
	bool keep_long, need_exact;
	uint64_t long_bytes;
	/* the message being read, for errors */
	const char *in;
};

/* ---- input ---- */

static uint64_t xp_off(const struct xp *x)
{
	return x->base + x->pos;
}

static int bad(struct xp *x, struct gdn_err *err, uint64_t off, const char *fmt, const char *arg)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	sbuf_addf(&sb, fmt, arg);
	ret = gdn_err_set(err, GDN_EPARSE, "invalid XPlane at byte offset %llu%s: %s",
			  (unsigned long long)off, x->gz ? " (uncompressed)" : "", sb.buf);
	sbuf_release(&sb);
	return ret;
}

static int truncated(struct xp *x, struct gdn_err *err)
{
	return gdn_err_set(err, GDN_EPARSE,
			   "truncated XPlane at byte offset %llu%s: the input ends inside %s",
			   (unsigned long long)xp_off(x), x->gz ? " (uncompressed)" : "",
			   x->in ? x->in : "a field");
}

static ssize_t raw_read(struct xp *x, unsigned char *dst, size_t n)
{
	if (x->f.mem) {
		size_t k = x->f.memlen - x->mempos;

		if (k > n)
			k = n;
		memcpy(dst, x->f.mem + x->mempos, k);
		x->mempos += k;
		return (ssize_t)k;
	}
	for (;;) {
		int ready = gdn_proc_wait_input(x->f.fd);
		ssize_t r;

		if (!ready) {
			errno = EINTR;
			return -1;
		}
		r = read(x->f.fd, dst, n);
		if (r < 0 && errno == EINTR && !gdn_proc_interrupted())
			continue;
		return r;
	}
}

/* A read failed: interrupted by SIGINT/SIGTERM, or an OS error. */
static int read_failed(struct gdn_err *err)
{
	if (gdn_proc_interrupted())
		return gdn_err_set(err, GDN_EINTR, "interrupted while reading");
	return gdn_err_errno(err, GDN_EIO, "cannot read");
}

/* Make bytes available: 1 ok, 0 end of input, or a negative error. */
static int fill(struct xp *x, struct gdn_err *err)
{
	if (x->pos < x->len)
		return 1;
	if (x->eof)
		return 0;
	x->base += x->len;
	x->pos = x->len = 0;
	if (!x->gz) {
		ssize_t r = raw_read(x, x->buf, XP_BUF);

		if (r < 0)
			return read_failed(err);
		if (!r) {
			x->eof = true;
			return 0;
		}
		x->len = (size_t)r;
		return 1;
	}
	while (!x->len) {
		int zr;

		if (!x->zs.avail_in) {
			ssize_t r = raw_read(x, x->raw, XP_BUF);

			if (r < 0)
				return read_failed(err);
			if (!r) {
				x->eof = true;
				if (x->in_member)
					return gdn_err_set(err, GDN_EPARSE,
							   "truncated gzip data after %llu "
							   "uncompressed bytes",
							   (unsigned long long)x->base);
				return 0;
			}
			x->zs.next_in = x->raw;
			x->zs.avail_in = (uInt)r;
		}
		if (!x->in_member) {
			if (inflateReset(&x->zs) != Z_OK)
				return gdn_err_set(err, GDN_EPARSE, "gzip: cannot reset");
			x->in_member = true;
		}
		x->zs.next_out = x->buf;
		x->zs.avail_out = XP_BUF;
		zr = inflate(&x->zs, Z_NO_FLUSH);
		x->len = XP_BUF - x->zs.avail_out;
		if (zr == Z_STREAM_END)
			x->in_member = false;
		else if (zr != Z_OK && !(zr == Z_BUF_ERROR && x->len))
			return gdn_err_set(
			    err, GDN_EPARSE, "invalid gzip data after %llu uncompressed bytes: %s",
			    (unsigned long long)x->base, x->zs.msg ? x->zs.msg : "inflate failed");
	}
	return 1;
}

static int xp_open(struct xp *x, struct gdn_err *err)
{
	unsigned char head[2];
	size_t nhead = 0;

	x->mempos = 0;
	x->base = x->pos = x->len = 0;
	x->eof = false;
	x->gz = false;
	x->in_member = false;
	x->limit = UINT64_MAX;
	if (!x->f.mem && lseek(x->f.fd, 0, SEEK_SET) < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot rewind");
	if (!x->buf)
		x->buf = xmalloc(XP_BUF);
	/* gzip by magic bytes */
	while (nhead < 2) {
		ssize_t r = raw_read(x, head + nhead, 2 - nhead);

		if (r < 0)
			return read_failed(err);
		if (!r)
			break;
		nhead += (size_t)r;
	}
	if (nhead == 2 && head[0] == 0x1f && head[1] == 0x8b) {
		x->gz = true;
		if (!x->raw)
			x->raw = xmalloc(XP_BUF);
		if (!x->zinit) {
			memset(&x->zs, 0, sizeof(x->zs));
			if (inflateInit2(&x->zs, 15 + 16) != Z_OK)
				return gdn_err_set(err, GDN_EIO, "cannot start inflate");
			x->zinit = true;
		}
		memcpy(x->raw, head, 2);
		x->zs.next_in = x->raw;
		x->zs.avail_in = 2;
		return 0;
	}
	memcpy(x->buf, head, nhead);
	x->len = nhead;
	if (x->f.mem) {
		x->limit = x->f.memlen;
	} else {
		struct stat st;

		if (!fstat(x->f.fd, &st) && S_ISREG(st.st_mode))
			x->limit = (uint64_t)st.st_size;
	}
	return 0;
}

/* ---- wire format ---- */

static int need(struct xp *x, uint64_t end, struct gdn_err *err)
{
	int r;

	if (xp_off(x) >= end)
		return bad(x, err, xp_off(x), "%s ends inside a field",
			   x->in ? x->in : "a message");
	r = fill(x, err);
	if (r < 0)
		return r;
	if (!r)
		return truncated(x, err);
	return 0;
}

static int varint_slow(struct xp *x, uint64_t end, uint64_t *v, struct gdn_err *err);

/* Fast path: the whole varint at hand, inside the message. */
static inline int varint(struct xp *x, uint64_t end, uint64_t *v, struct gdn_err *err)
{
	uint64_t off = xp_off(x);
	size_t avail = x->len - x->pos;

	if (end > off) {
		const unsigned char *p = x->buf + x->pos;
		uint64_t r = 0;

		if (end - off < avail)
			avail = (size_t)(end - off);
		if (avail > 10)
			avail = 10;
		for (size_t i = 0; i < avail; i++) {
			r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
			if (!(p[i] & 0x80)) {
				if (i == 9 && p[i] > 1)
					break;
				x->pos += i + 1;
				*v = r;
				return 0;
			}
		}
	}
	return varint_slow(x, end, v, err);
}

static int varint_slow(struct xp *x, uint64_t end, uint64_t *v, struct gdn_err *err)
{
	uint64_t start = xp_off(x), r = 0;

	for (int i = 0; i < 10; i++) {
		int ret = need(x, end, err);
		unsigned c;

		if (ret)
			return ret;
		c = x->buf[x->pos++];
		if (i == 9 && c > 1)
			return bad(x, err, start, "%s", "a varint longer than 64 bits");
		r |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return bad(x, err, start, "%s", "a varint longer than 10 bytes");
}

static int fixed(struct xp *x, uint64_t end, unsigned n, uint64_t *v, struct gdn_err *err)
{
	uint64_t r = 0;

	for (unsigned i = 0; i < n; i++) {
		int ret = need(x, end, err);

		if (ret)
			return ret;
		r |= (uint64_t)x->buf[x->pos++] << (8 * i);
	}
	*v = r;
	return 0;
}

static int skip(struct xp *x, uint64_t n, struct gdn_err *err)
{
	while (n) {
		size_t k = x->len - x->pos;
		int r;

		if (k) {
			if (k > n)
				k = (size_t)n;
			x->pos += k;
			n -= k;
			continue;
		}
		if (!x->gz && !x->f.mem && x->limit != UINT64_MAX && n > XP_BUF) {
			/* plain regular file: seek over it (the bound was checked) */
			if (lseek(x->f.fd, (off_t)n, SEEK_CUR) < 0)
				return gdn_err_errno(err, GDN_EIO, "cannot seek");
			x->base += x->len + n;
			x->pos = x->len = 0;
			return 0;
		}
		if (!x->gz && x->f.mem && x->mempos + n <= x->f.memlen) {
			x->mempos += (size_t)n;
			x->base += x->len + n;
			x->pos = x->len = 0;
			return 0;
		}
		r = fill(x, err);
		if (r < 0)
			return r;
		if (!r)
			return truncated(x, err);
	}
	return 0;
}

struct field {
	uint32_t num;
	unsigned wt;
	uint64_t off;	/* of the tag */
	uint64_t v;	/* varint/fixed value, or the length */
	uint64_t start; /* LEN: offset of the first byte of the value */
};

/* Read a tag and, for scalars, the value; LEN values are left to read. */
static int next_field(struct xp *x, uint64_t end, struct field *f, struct gdn_err *err)
{
	uint64_t tag;
	int ret;

	f->off = xp_off(x);
	ret = varint(x, end, &tag, err);
	if (ret)
		return ret;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (unsigned)(tag & 7);
	if (!f->num || tag >> 3 > 536870911u)
		return bad(x, err, f->off, "%s", "field number 0 or too large");
	switch (f->wt) {
	case 0:
		return varint(x, end, &f->v, err);
	case 1:
		return fixed(x, end, 8, &f->v, err);
	case 5:
		return fixed(x, end, 4, &f->v, err);
	case 2:
		ret = varint(x, end, &f->v, err);
		if (ret)
			return ret;
		f->start = xp_off(x);
		if (f->v > end - f->start || f->v > x->limit - f->start) {
			struct sbuf sb = SBUF_INIT;

			sbuf_addf(&sb, "a length of %llu bytes goes past the end of %s",
				  (unsigned long long)f->v, x->in ? x->in : "the input");
			ret = bad(x, err, f->off, "%s", sb.buf);
			sbuf_release(&sb);
			return ret;
		}
		return 0;
	case 3:
	case 4:
		return bad(x, err, f->off, "%s", "wire type 3/4 (groups) is not used by XPlane");
	default: {
		char w[2] = {(char)('0' + f->wt), 0};

		return bad(x, err, f->off, "invalid wire type %s", w);
	}
	}
}

static int skip_value(struct xp *x, const struct field *f, struct gdn_err *err)
{
	return f->wt == 2 ? skip(x, f->v, err) : 0;
}

/*
 * What a pass does with one field of a message: 0 when it took the field,
 * FIELD_SKIP to pass over its value, or a negative error.
 */
#define FIELD_SKIP 1
typedef int field_fn(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err);

/*
 * Hand each field of the message that ends at end to fn; in names the message
 * in errors. At the top (the XSpace: end is x->limit) the walk ends with the
 * input. Inline so that fn is a direct call in each pass.
 */
static inline int walk(struct xp *x, uint64_t end, bool top, const char *in, field_fn *fn,
		       void *ctx, struct gdn_err *err)
{
	struct field f;
	int ret;

	for (;;) {
		if (top) {
			ret = fill(x, err);
			if (ret <= 0)
				return ret;
		} else if (xp_off(x) >= end) {
			return 0;
		}
		x->in = in;
		ret = next_field(x, end, &f, err);
		if (!ret)
			ret = fn(x, &f, ctx, err);
		if (ret == FIELD_SKIP)
			ret = skip_value(x, &f, err);
		if (ret)
			return ret;
	}
}

/* Read a LEN value as text into sb (cut at GDN_TRACE_FIELD_MAX, the rest skipped). */
static int read_str(struct xp *x, const struct field *f, struct sbuf *sb, struct gdn_err *err)
{
	uint64_t keep = f->v < GDN_TRACE_FIELD_MAX ? f->v : GDN_TRACE_FIELD_MAX, left = keep;

	sbuf_reset(sb);
	while (left) {
		size_t k;
		int r = fill(x, err);

		if (r < 0)
			return r;
		if (!r)
			return truncated(x, err);
		k = x->len - x->pos;
		if (k > left)
			k = (size_t)left;
		sbuf_add(sb, (const char *)x->buf + x->pos, k);
		x->pos += k;
		left -= k;
	}
	return skip(x, f->v - keep, err);
}

/* gzip or zlib compressed text (compressed_str_value) into sb, capped. */
static void inflate_str(struct sbuf *in, struct sbuf *out)
{
	z_stream zs;
	unsigned char chunk[4096];
	int zr = Z_OK;

	sbuf_reset(out);
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return;
	zs.next_in = (unsigned char *)in->buf;
	zs.avail_in = (uInt)in->len;
	while (zr == Z_OK && out->len < GDN_TRACE_FIELD_MAX) {
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		zr = inflate(&zs, Z_NO_FLUSH);
		sbuf_add(out, (const char *)chunk, sizeof(chunk) - zs.avail_out);
		if (zr == Z_BUF_ERROR)
			break;
	}
	inflateEnd(&zs);
}

/* Beyond the caps metadata is not kept (counted and said in a warning). */
static int too_much(struct xp *x, struct gdn_err *err)
{
	(void)err;
	x->dropped++;
	return 0;
}

/* A string beyond the cap reads as "" (counted). */
/* The pool's length, as if the skipped long names were in it (an upper bound). */
static bool pool_might_fill(const struct xp *x, uint64_t n)
{
	uint64_t len = x->strs.len ? x->strs.len : 1;

	return !x->keep_long && len + x->long_bytes + n > XP_POOL_MAX;
}

/* A long_name not interned: at most n bytes of the pool. */
static void skip_long(struct xp *x, uint64_t n)
{
	x->long_bytes += n;
	if (pool_might_fill(x, 0))
		x->need_exact = true;
}

/* The most a compressed_str_value takes of the pool, once inflated (inflate_str). */
#define XP_INFLATED_MAX (GDN_TRACE_FIELD_MAX + 4096 + 1)

static int intern(struct xp *x, const char *s, size_t n, uint32_t *id, struct gdn_err *err)
{
	int64_t r;

	(void)err;
	if (pool_might_fill(x, (uint64_t)n + 1))
		x->need_exact = true;
	r = xstr_intern(&x->strs, s, n);
	if (r < 0) {
		x->dropped++;
		r = 0;
	}
	*id = (uint32_t)r;
	return 0;
}

/* ---- stats (pass 1 on metadata, pass 2 on events) ---- */

struct stat_walk {
	uint32_t plane;
	uint64_t num;
	double dnum; /* double_value, as it is */
	bool has_num, has_str, compressed, is_double, negative;
	uint32_t ref;
	bool has_ref;
	enum stat_kind kind;
	bool kind_known;
	bool skipped; /* a text skipped as a long_name */
};

/* Whether a stat of this kind is kept when its value is text. */
static bool text_kind(const struct xp *x, enum stat_kind kind)
{
	switch (kind) {
	case SK_OTHER:
	case SK_DEVOFF:
	case SK_DEVDUR:
	case SK_PROGRAM:
	case SK_SYMBOL:
		return false;
	case SK_FLOPS:
	case SK_MFLOPS:
	case SK_BYTES:
		return x->work != NULL; /* a figure written as text, read for the work figures */
	default:
		return true;
	}
}

static int stat_field(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err)
{
	struct stat_walk *s = ctx;
	enum stat_kind kind = s->kind;
	int ret;

	if (f->num == 1 && f->wt == 0) {
		uint32_t m = xmap_find(&x->smap, s->plane, f->v);

		s->kind = m ? (enum stat_kind)x->smetas[m - 1].kind : SK_OTHER;
		s->kind_known = true;
	} else if ((f->num == 3 || f->num == 4) && f->wt == 0) {
		s->num = f->v;
		s->has_num = true;
		s->is_double = false;
		s->negative = f->num == 4 && (int64_t)f->v < 0;
	} else if (f->num == 2 && f->wt == 1) {
		double d;

		memcpy(&d, &f->v, sizeof(d));
		s->num = d > 0 && d < 1.8e19 ? (uint64_t)d : 0;
		s->has_num = true;
		s->dnum = d;
		s->is_double = true;
	} else if (f->num == 7 && f->wt == 0) {
		uint32_t m = xmap_find(&x->smap, s->plane, f->v);

		s->has_ref = m != 0;
		s->ref = m ? x->smetas[m - 1].name : 0;
	} else if ((f->num == 5 || f->num == 8) && f->wt == 2 && s->kind_known && kind == SK_LONG &&
		   !x->keep_long) {
		skip_long(x, f->num == 8
				 ? XP_INFLATED_MAX
				 : (f->v < GDN_TRACE_FIELD_MAX ? f->v : GDN_TRACE_FIELD_MAX) + 1);
		s->skipped = true;
		return FIELD_SKIP;
	} else if ((f->num == 5 || f->num == 8) && f->wt == 2 &&
		   (!s->kind_known || text_kind(x, kind))) {
		ret = read_str(x, f, &x->tmp, err);
		s->has_str = !ret;
		s->compressed = f->num == 8;
		return ret;
	} else {
		return FIELD_SKIP;
	}
	return 0;
}

/* A work figure: a number, or a text holding one; finite and >= 0 (else not kept). */
static void work_stat(const struct xp *x, const struct stat_walk *s, struct facts *fa)
{
	double v;

	if (s->has_num && s->is_double) {
		v = s->dnum;
	} else if (s->has_num) {
		if (s->negative)
			return;
		v = (double)s->num;
	} else if (s->has_str && !s->compressed && x->tmp.len && x->tmp.len < 64 &&
		   strlen(x->tmp.buf) == x->tmp.len) {
		char *end;

		errno = 0;
		v = strtod(x->tmp.buf, &end);
		if (*end || errno)
			return;
	} else {
		return;
	}
	if (!isfinite(v) || v < 0)
		return;
	if (s->kind == SK_BYTES) {
		fa->bytes = v;
		fa->work |= WK_BYTES;
	} else if (s->kind == SK_MFLOPS || !(fa->work & WK_MFLOPS)) {
		fa->flops = v;
		fa->work |= s->kind == SK_MFLOPS ? WK_FLOPS | WK_MFLOPS : WK_FLOPS;
	}
}

static int read_stat(struct xp *x, uint32_t plane, uint64_t end, struct facts *fa,
		     struct gdn_err *err)
{
	struct stat_walk s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.plane = plane;
	s.kind = SK_OTHER;
	ret = walk(x, end, false, "an XStat", stat_field, &s, err);
	if (ret)
		return ret;
	if (s.skipped && s.kind != SK_LONG)
		x->need_exact = true; /* its kind changed after the text: odd, but read it */
	if (s.kind == SK_LONG && !x->keep_long) {
		if (s.has_str && !s.has_ref)
			skip_long(x, s.compressed ? XP_INFLATED_MAX : (uint64_t)x->tmp.len + 1);
		return 0;
	}
	switch (s.kind) {
	case SK_FLOPS:
	case SK_MFLOPS:
	case SK_BYTES:
		if (x->work) /* not read for a summary alone */
			work_stat(x, &s, fa);
		return 0;
	case SK_DEVOFF:
		fa->devoff = s.num;
		fa->has_devoff = s.has_num;
		return 0;
	case SK_DEVDUR:
		fa->devdur = s.num;
		fa->has_devdur = s.has_num;
		return 0;
	case SK_STEPNUM:
		if (s.has_num) {
			fa->stepnum = s.num;
			fa->has_stepnum = true;
		} else if (s.has_str && !s.compressed && x->tmp.len && x->tmp.len < 20 &&
			   strspn(x->tmp.buf, "0123456789") == x->tmp.len) {
			fa->stepnum = strtoull(x->tmp.buf, NULL, 10);
			fa->has_stepnum = true;
		}
		return 0;
	case SK_HLO:
	case SK_TFOP:
	case SK_LEVEL0:
	case SK_SOURCE:
	case SK_LONG:
	case SK_DEDUP: {
		enum stat_kind kind = s.kind;
		uint32_t id = 0, *dst;

		if (s.has_ref) {
			id = s.ref;
		} else if (s.has_str) {
			const struct sbuf *str = &x->tmp;

			if (s.compressed) {
				inflate_str(&x->tmp, &x->tmp2);
				str = &x->tmp2;
			}
			ret = intern(x, str->buf, str->len, &id, err);
			if (ret)
				return ret;
		} else {
			return 0;
		}
		dst = kind == SK_HLO	  ? &fa->hlo
		      : kind == SK_TFOP	  ? &fa->tfop
		      : kind == SK_LEVEL0 ? (fa->tfop ? NULL : &fa->tfop)
		      : kind == SK_SOURCE ? &fa->source
		      : kind == SK_DEDUP  ? &fa->dedup
					  : &fa->longname;
		if (dst)
			*dst = id + 1;
		return 0;
	}
	default:
		return 0;
	}
}

/* ---- metadata map entries: stat_metadata (pass 0), event_metadata (pass 1) ---- */

/* A map entry {key=1, value=2} whose value is an XStatMetadata or XEventMetadata. */
struct md_entry {
	uint32_t plane;
	const char *value_in; /* the value's name in errors */
	uint64_t key, id;
	bool has_id;
	uint32_t name;	     /* interned */
	struct facts *stats; /* XEventMetadata: its stats (5) go here; NULL: skipped */
};

static int md_value_field(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err)
{
	struct md_entry *e = ctx;
	int ret;

	if (f->num == 1 && f->wt == 0) {
		e->id = f->v;
		e->has_id = true;
		return 0;
	}
	if (f->num == 2 && f->wt == 2) {
		ret = read_str(x, f, &x->tmp, err);
		return ret ? ret : intern(x, x->tmp.buf, x->tmp.len, &e->name, err);
	}
	if (e->stats && f->num == 5 && f->wt == 2)
		return read_stat(x, e->plane, f->start + f->v, e->stats, err);
	return FIELD_SKIP;
}

static int md_entry_field(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err)
{
	struct md_entry *e = ctx;

	if (f->num == 1 && f->wt == 0) {
		e->key = f->v;
		return 0;
	}
	if (f->num == 2 && f->wt == 2)
		return walk(x, f->start + f->v, false, e->value_in, md_value_field, e, err);
	return FIELD_SKIP;
}

/*
 * Read a map entry into e (its id: the value's id, else the key): 1 to keep it,
 * 0 when the caps are reached (counted), or a negative error.
 */
static int md_entry(struct xp *x, uint64_t end, const char *in, struct md_entry *e,
		    struct gdn_err *err)
{
	int ret = walk(x, end, false, in, md_entry_field, e, err);

	if (ret)
		return ret;
	if (!e->has_id)
		e->id = e->key;
	if (x->nsmetas + x->nemetas >= XP_ENTRIES_MAX)
		return too_much(x, err);
	return 1;
}

static int stat_md_entry(struct xp *x, uint32_t plane, uint64_t end, struct gdn_err *err)
{
	struct md_entry e = {plane, "an XStatMetadata", 0, 0, false, 0, NULL};
	int ret = md_entry(x, end, "a stat_metadata entry", &e, err);

	if (ret <= 0)
		return ret;
	ALLOC_GROW(x->smetas, x->nsmetas + 1, x->smetaalloc);
	x->smetas[x->nsmetas].name = e.name;
	x->smetas[x->nsmetas].kind = (uint8_t)stat_kind(xstr_get(&x->strs, e.name));
	x->nsmetas++;
	xmap_put(&x->smap, plane, e.id, (uint32_t)x->nsmetas);
	return 0;
}

static int event_md_entry(struct xp *x, uint32_t plane, uint64_t end, struct gdn_err *err)
{
	struct emeta em;
	struct md_entry e = {plane, "an XEventMetadata", 0, 0, false, 0, &em.f};
	int ret;

	memset(&em, 0, sizeof(em));
	ret = md_entry(x, end, "an event_metadata entry", &e, err);
	if (ret <= 0)
		return ret;
	em.name = e.name;
	ALLOC_GROW(x->emetas, x->nemetas + 1, x->emetaalloc);
	x->emetas[x->nemetas++] = em;
	xmap_put(&x->emap, plane, e.id, (uint32_t)x->nemetas);
	return 0;
}
/* ---- pass 2: events ---- */

static void plane_pid(struct xp *x, uint32_t plane, struct gdn_trace_id *pid, struct sbuf *sb)
{
	const struct plane *p = &x->planes[plane];

	memset(pid, 0, sizeof(*pid));
	if (!p->dup_id && !x->host) {
		pid->num = (int64_t)p->id;
		return;
	}
	sbuf_reset(sb);
	if (x->host)
		sbuf_addf(sb, "host%u:", x->host);
	sbuf_addf(sb, "%llu#%u", (unsigned long long)p->id, plane);
	pid->str = sb->buf;
	pid->len = sb->len;
}

static void emit_meta(struct xp *x, uint32_t plane, bool thread, uint64_t line, const char *name,
		      size_t len)
{
	struct gdn_trace_event ev;
	struct sbuf pidbuf = SBUF_INIT, full = SBUF_INIT;

	if (!x->agg)
		return;
	if (!thread && x->multi) {
		/* several hosts: "<host> /device:TPU:0" (the device label says the host) */
		sbuf_addf(&full, "%s %.*s", x->host_name, (int)len, name);
		name = full.buf;
		len = full.len;
	}
	memset(&ev, 0, sizeof(ev));
	ev.ph = 'M';
	plane_pid(x, plane, &ev.pid, &pidbuf);
	ev.tid.num = (int64_t)line;
	ev.name = thread ? "thread_name" : "process_name";
	ev.name_len = strlen(ev.name);
	ev.meta_name = name;
	ev.meta_name_len = len;
	ev.has_meta_name = true;
	gdn_trace_agg_event(x->agg, &ev);
	sbuf_release(&pidbuf);
	sbuf_release(&full);
}

struct line_ctx {
	uint32_t plane;
	uint32_t track;	 /* + 1; 0: not yet */
	bool gpu_stream; /* a "Stream #" line of a GPU plane: kernels and copies */
	uint64_t id;
	int64_t ts_ns;
	bool has_ts, saw_events;
	uint64_t end; /* of the XLine */
	struct sbuf pid;
	bool device_span;
	struct sbuf name;
	bool has_name;
};

static void set_str(const struct xp *x, uint32_t id1, const char **s, size_t *len)
{
	if (id1) {
		*s = xstr_get(&x->strs, id1 - 1);
		*len = strlen(*s);
	}
}

struct event_walk {
	uint32_t plane;
	uint64_t mid, off, dur;
	bool aggregated;
	struct facts *fa; /* apart, so that the rest can stay in registers */
};

static int event_field(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err)
{
	struct event_walk *w = ctx;

	if (f->num == 1 && f->wt == 0)
		w->mid = f->v;
	else if (f->num == 2 && f->wt == 0)
		w->off = f->v;
	else if (f->num == 5 && f->wt == 0)
		w->aggregated = true;
	else if (f->num == 3 && f->wt == 0)
		w->dur = f->v;
	else if (f->num == 4 && f->wt == 2)
		return read_stat(x, w->plane, f->start + f->v, w->fa, err);
	else
		return FIELD_SKIP;
	return 0;
}

/*
 * The common XEvent (metadata_id, offset_ps or num_occurrences, duration_ps;
 * no stats) read straight from the buffer when it is all there. Anything
 * else (stats, other fields, odd encodings) returns false with nothing
 * consumed, and the general walk reads it (and says what is wrong).
 */
/*
 * A varint from p when it ends within 8 bytes (8 bytes readable from p): its
 * length, or 0 (longer: the byte loop reads it).
 */
static inline unsigned varint8(const unsigned char *p, uint64_t *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t w, stop;
	unsigned n;

	memcpy(&w, p, 8);
	stop = ~w & 0x8080808080808080ULL;
	if (!stop)
		return 0;
	n = (unsigned)__builtin_ctzll(stop) / 8 + 1;
	if (n < 8)
		w &= (1ULL << (8 * n)) - 1;
	/* the 7-bit groups together: in pairs, then fours, then all eight */
	w = ((w & 0x7f007f007f007f00ULL) >> 1) | (w & 0x007f007f007f007fULL);
	w = ((w & 0x3fff00003fff0000ULL) >> 2) | (w & 0x00003fff00003fffULL);
	w = ((w & 0x0fffffff00000000ULL) >> 4) | (w & 0x000000000fffffffULL);
	*v = w;
	return n;
#else
	uint64_t r = 0;

	for (unsigned i = 0; i < 8; i++) {
		r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
#endif
}

/*
 * The common XEvent (metadata_id, offset_ps or num_occurrences, duration_ps;
 * no stats) read straight from the buffer when it is all there. Anything
 * else (stats, other fields, odd encodings) returns false with nothing
 * consumed, and the general walk reads it (and says what is wrong).
 */
static bool event_fast(struct xp *x, uint64_t end, struct event_walk *w)
{
	size_t n = x->len - x->pos;
	const unsigned char *p = x->buf + x->pos, *e, *bufend = x->buf + x->len;

	if (end - xp_off(x) > n)
		return false;
	e = p + (size_t)(end - xp_off(x));
	while (p < e) {
		unsigned tag = *p++, k = 0;
		uint64_t v = 0;

		if (tag != 0x08 && tag != 0x10 && tag != 0x18 && tag != 0x28)
			return false;
		if (bufend - p >= 8)
			k = varint8(p, &v);
		if (k) {
			p += k;
			if (p > e)
				return false;
		} else {
			unsigned i;

			for (i = 0;; i++) {
				if (p == e || i == 10)
					return false;
				v |= (uint64_t)(*p & 0x7f) << (7 * i);
				if (!(*p++ & 0x80))
					break;
			}
			if (i == 9 && p[-1] > 1)
				return false;
		}
		if (tag == 0x08)
			w->mid = v;
		else if (tag == 0x10)
			w->off = v;
		else if (tag == 0x18)
			w->dur = v;
		else
			w->aggregated = true;
	}
	x->pos = (size_t)(p - x->buf);
	return true;
}

static uint32_t emeta_find(const struct xp *x, uint32_t plane, uint64_t id)
{
	const struct plane *p = &x->planes[plane];

	if (p->dense)
		return id < p->ndense ? p->dense[id] : 0;
	return xmap_find(&x->emap, plane, id);
}

/* An event's work figures: its own stats win over its metadata's, figure by figure. */
static void add_work(struct xp *x, const struct emeta *em, const struct facts *fa, uint64_t dur)
{
	static const struct facts none;
	const struct facts *m = em ? &em->f : &none;
	const struct facts *f = fa->work & WK_FLOPS ? fa : m, *b = fa->work & WK_BYTES ? fa : m;
	struct gdn_trace_work_event ev = {
	    .name = em ? xstr_get(&x->strs, em->name) : "",
	    .flops = f->flops,
	    .bytes = b->bytes,
	    .dur_us = (double)dur / 1e6, /* duration_ps, as the JSON's dur */
	    .has_flops = (f->work & WK_FLOPS) != 0,
	    .has_bytes = (b->work & WK_BYTES) != 0,
	    .has_dur = true,
	};

	gdn_trace_work_add(x->work, &ev);
}

static int read_event(struct xp *x, struct line_ctx *lc, uint64_t end, struct gdn_err *err)
{
	struct event_walk w;
	struct facts fa;
	struct gdn_trace_event ev;
	struct emeta *em = NULL;
	uint32_t e, tuple;
	gdn_ps ts, dur_ps;
	bool own;
	int ret;

	memset(&w, 0, sizeof(w));
	memset(&fa, 0, offsetof(struct facts, flops)); /* the hot path: not the work figures */
	w.plane = lc->plane;
	w.fa = &fa;
	if (!event_fast(x, end, &w)) {
		memset(&w, 0, sizeof(w));
		w.plane = lc->plane;
		w.fa = &fa;
		ret = walk(x, end, false, "an XEvent", event_field, &w, err);
		if (ret)
			return ret;
	}
	x->events++; /* handed to the aggregator as a count before finish */
	if (w.aggregated) {
		x->aggregated++; /* an aggregate, not a timeline event */
		return 0;
	}
	e = emeta_find(x, lc->plane, w.mid);
	if (!e)
		x->no_meta++;
	else
		em = &x->emetas[e - 1];
	if (x->work && (fa.work || (em && em->f.work)))
		add_work(x, em, &fa, w.dur);
	if (!x->agg)
		return 0;
	if (!lc->track) {
		struct gdn_trace_id pid, tid;

		plane_pid(x, lc->plane, &pid, &lc->pid);
		memset(&tid, 0, sizeof(tid));
		tid.num = (int64_t)lc->id;
		lc->track = gdn_trace_agg_track(x->agg, &pid, &tid) + 1;
	}
	if (em) {
		if (!fa.has_devoff && em->f.has_devoff) {
			fa.has_devoff = true;
			fa.devoff = em->f.devoff;
		}
		if (!fa.has_devdur && em->f.has_devdur) {
			fa.has_devdur = true;
			fa.devdur = em->f.devdur;
		}
		if (!fa.has_stepnum && em->f.has_stepnum) {
			fa.has_stepnum = true;
			fa.stepnum = em->f.stepnum;
		}
	}
	if (lc->device_span && fa.has_devoff && fa.has_devdur) {
		ts = (gdn_ps)fa.devoff;
		dur_ps = (gdn_ps)fa.devdur;
	} else {
		ts = (gdn_ps)lc->ts_ns * 1000 + (gdn_ps)w.off;
		dur_ps = (gdn_ps)w.dur;
	}
	own = fa.hlo || fa.tfop || fa.source || fa.dedup;
	if (em && !own && em->tuple[lc->gpu_stream]) {
		gdn_trace_agg_complete(x->agg, lc->track - 1, em->tuple[lc->gpu_stream] - 1, ts,
				       dur_ps);
		if (fa.has_stepnum)
			gdn_trace_agg_step(x->agg, em->tuple[lc->gpu_stream] - 1, fa.stepnum, ts);
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.ph = 'X';
	if (em) {
		set_str(x, em->name + 1, &ev.name, &ev.name_len);
		/* the event's own stats win over its metadata's */
		set_str(x, fa.hlo ? fa.hlo : em->f.hlo, &ev.hlo_category, &ev.hlo_category_len);
		set_str(x, fa.tfop ? fa.tfop : em->f.tfop, &ev.tf_op, &ev.tf_op_len);
		set_str(x, fa.source ? fa.source : em->f.source, &ev.source, &ev.source_len);
		set_str(x, fa.dedup ? fa.dedup : em->f.dedup, &ev.dedup, &ev.dedup_len);
	} else {
		set_str(x, fa.hlo, &ev.hlo_category, &ev.hlo_category_len);
		set_str(x, fa.tfop, &ev.tf_op, &ev.tf_op_len);
		set_str(x, fa.source, &ev.source, &ev.source_len);
		set_str(x, fa.dedup, &ev.dedup, &ev.dedup_len);
	}
	if (!ev.name) {
		ev.name = "";
		ev.name_len = 0;
	}
	if (lc->gpu_stream) {
		/* the category of a GPU op without hlo_category, as Kineto's cat */
		ev.cat = !strncmp(ev.name, "Memcpy", 6)	  ? "gpu_memcpy"
			 : !strncmp(ev.name, "Memset", 6) ? "gpu_memset"
							  : "kernel";
		ev.cat_len = strlen(ev.cat);
	}
	tuple = gdn_trace_agg_tuple(x->agg, &ev);
	if (em && !own)
		em->tuple[lc->gpu_stream] = tuple + 1;
	gdn_trace_agg_complete(x->agg, lc->track - 1, tuple, ts, dur_ps);
	if (fa.has_stepnum)
		gdn_trace_agg_step(x->agg, tuple, fa.stepnum, ts);
	return 0;
}

static int line_field(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err)
{
	struct line_ctx *lc = ctx;
	int ret = 0;

	if (f->num == 1 && f->wt == 0) {
		if (lc->saw_events && lc->id != f->v)
			ret = bad(x, err, f->off, "%s", "an XLine id after its events");
		lc->id = f->v;
	} else if (f->num == 2 && f->wt == 2) {
		ret = read_str(x, f, &lc->name, err);
		lc->has_name = !ret;
		lc->gpu_stream =
		    lc->has_name && !strncmp(lc->name.buf, "Stream #", 8) &&
		    strstr(xstr_get(&x->strs, x->planes[lc->plane].name), "/device:GPU");
	} else if (f->num == 3 && f->wt == 0) {
		if (lc->saw_events && (!lc->has_ts || lc->ts_ns != (int64_t)f->v))
			ret = bad(x, err, f->off, "%s", "an XLine timestamp_ns after its events");
		lc->ts_ns = (int64_t)f->v;
		lc->has_ts = true;
	} else if (f->num == 4 && f->wt == 2) {
		lc->saw_events = true;
		ret = read_event(x, lc, f->start + f->v, err);
		/* the events that follow, while their tag and length are at hand */
		while (!ret && x->pos + 11 <= x->len && x->buf[x->pos] == 0x22 &&
		       xp_off(x) < lc->end) {
			const unsigned char *p = x->buf + x->pos + 1;
			uint64_t v = *p & 0x7f, start;

			if (*p & 0x80) {
				if (p[1] & 0x80)
					break; /* 3 bytes or more: the general way */
				v |= (uint64_t)p[1] << 7;
				p++;
			}
			start = xp_off(x) + (size_t)(p + 1 - (x->buf + x->pos));
			if (start > lc->end || v > lc->end - start || v > x->limit - start)
				break;
			x->pos = (size_t)(p + 1 - x->buf);
			ret = read_event(x, lc, start + v, err);
		}
	} else {
		ret = FIELD_SKIP;
	}
	return ret;
}

static int read_line(struct xp *x, uint32_t plane, uint64_t end, bool device_span,
		     struct gdn_err *err)
{
	struct line_ctx lc;
	int ret;

	memset(&lc, 0, sizeof(lc));
	lc.plane = plane;
	lc.end = end;
	lc.device_span = device_span;
	sbuf_init(&lc.pid, 0);
	sbuf_init(&lc.name, 0);
	ret = walk(x, end, false, "an XLine", line_field, &lc, err);
	if (!ret && lc.has_name)
		emit_meta(x, plane, true, lc.id, lc.name.buf, lc.name.len);
	sbuf_release(&lc.name);
	sbuf_release(&lc.pid);
	return ret;
}

/* ---- planes and the space ---- */

struct space_walk {
	uint32_t plane; /* the XPlane being read; in the XSpace, the next one */
	bool device_span;
	uint64_t end; /* of the XPlane */
};

static int plane_field(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err)
{
	const struct space_walk *s = ctx;
	uint32_t plane = s->plane;
	int ret;

	if (x->pass == 0 && f->num == 1 && f->wt == 0) {
		x->planes[plane].id = f->v;
		return 0;
	}
	if (x->pass == 0 && f->num == 2 && f->wt == 2) {
		ret = read_str(x, f, &x->tmp, err);
		return ret ? ret : intern(x, x->tmp.buf, x->tmp.len, &x->planes[plane].name, err);
	}
	if (x->pass == 0 && f->num == 5 && f->wt == 2)
		return stat_md_entry(x, plane, f->start + f->v, err);
	if (x->pass == 0 && f->num == 3 && f->wt == 2)
		x->planes[plane].lines_end = f->start + f->v;
	if (x->pass == 2 && f->off >= x->planes[plane].lines_end)
		return skip(x, s->end - xp_off(x), err); /* no line after: the rest at once */
	if (x->pass == 1 && f->num == 4 && f->wt == 2)
		return event_md_entry(x, plane, f->start + f->v, err);
	if (x->pass == 2 && f->num == 3 && f->wt == 2)
		return read_line(x, plane, f->start + f->v, s->device_span, err);
	return FIELD_SKIP;
}

static int read_plane(struct xp *x, uint32_t plane, uint64_t end, bool device_span,
		      struct gdn_err *err)
{
	struct space_walk s = {plane, device_span, end};

	if (x->pass == 0) {
		ALLOC_GROW(x->planes, x->nplanes + 1, x->planealloc);
		memset(&x->planes[x->nplanes], 0, sizeof(x->planes[0]));
		x->nplanes++;
	} else if (x->pass == 2) {
		const struct plane *p = &x->planes[plane];
		const char *pn = xstr_get(&x->strs, p->name);

		emit_meta(x, plane, false, 0, pn, strlen(pn));
	}
	return walk(x, end, false, "an XPlane", plane_field, &s, err);
}

static int space_field(struct xp *x, const struct field *f, void *ctx, struct gdn_err *err)
{
	struct space_walk *s = ctx;
	int ret;

	if (f->num == 1 && f->wt == 2) {
		if (x->pass && s->plane >= x->nplanes)
			BUG("xplane: plane count changed between passes");
		return read_plane(x, s->plane++, f->start + f->v, s->device_span, err);
	}
	if (x->pass == 0 && f->num == 4 && f->wt == 2) {
		ret = read_str(x, f, &x->tmp, err);
		if (!ret)
			strvec_push(&x->hosts, x->tmp.buf);
		return ret;
	}
	return FIELD_SKIP;
}

static int read_space(struct xp *x, bool device_span, struct gdn_err *err)
{
	struct space_walk s = {0, device_span, 0};
	int ret = xp_open(x, err);

	if (!ret)
		ret = walk(x, x->limit, true, "the XSpace", space_field, &s, err);
	if (!ret && x->pass == 0 && !x->nplanes && xp_off(x) == 0)
		ret = gdn_err_set(err, GDN_EPARSE, "invalid XPlane at byte offset 0: empty input");
	return ret;
}

static void mark_dup_ids(struct xp *x)
{
	struct xmap seen = {NULL, 0, 0};

	for (size_t i = 0; i < x->nplanes; i++) {
		uint32_t j = xmap_find(&seen, 0, x->planes[i].id);

		if (j) {
			x->planes[i].dup_id = true;
			x->planes[j - 1].dup_id = true;
		} else {
			xmap_put(&seen, 0, x->planes[i].id, (uint32_t)(i + 1));
		}
	}
	xmap_release(&seen);
}

/*
 * Event metadata ids are small integers in practice: after pass 1, planes
 * whose ids are dense enough get an array instead of the hash (all planes
 * together at most XP_DENSE_MAX entries; the others keep the hash).
 */
#define XP_DENSE_MAX ((size_t)4 * XP_ENTRIES_MAX)

static void build_dense(struct xp *x)
{
	size_t *count = xcalloc(x->nplanes ? x->nplanes : 1, sizeof(*count)), budget = XP_DENSE_MAX;
	uint64_t *max = xcalloc(x->nplanes ? x->nplanes : 1, sizeof(*max));
	const struct xmap *m = &x->emap;

	for (size_t j = 0; m->e && j <= m->mask; j++) {
		const struct xent *t = &m->e[j];

		if (!t->val || t->plane >= x->nplanes)
			continue;
		count[t->plane]++;
		if (t->id > max[t->plane])
			max[t->plane] = t->id;
	}
	for (size_t i = 0; i < x->nplanes; i++) {
		struct plane *p = &x->planes[i];

		if (!count[i] || max[i] >= (uint64_t)count[i] * 4 + 64 || max[i] + 1 > budget)
			continue;
		p->ndense = (size_t)max[i] + 1;
		p->dense = xcalloc(p->ndense, sizeof(*p->dense));
		budget -= p->ndense;
	}
	for (size_t j = 0; m->e && j <= m->mask; j++) {
		const struct xent *t = &m->e[j];

		if (t->val && t->plane < x->nplanes && x->planes[t->plane].dense)
			x->planes[t->plane].dense[t->id] = t->val;
	}
	free(count);
	free(max);
}

static void xp_reset_model(struct xp *x)
{
	for (size_t i = 0; i < x->nplanes; i++)
		free(x->planes[i].dense);
	xstr_release(&x->strs);
	free(x->planes);
	free(x->smetas);
	free(x->emetas);
	x->planes = NULL;
	x->smetas = NULL;
	x->emetas = NULL;
	x->nplanes = x->planealloc = x->nsmetas = x->smetaalloc = 0;
	x->nemetas = x->emetaalloc = 0;
	xmap_release(&x->smap);
	xmap_release(&x->emap);
}

static void xp_release(struct xp *x)
{
	xp_reset_model(x);
	if (x->zinit)
		inflateEnd(&x->zs);
	free(x->raw);
	free(x->buf);
	sbuf_release(&x->tmp);
	sbuf_release(&x->tmp2);
}

/* Read one file's three passes into agg. */
static int read_one(struct xp *x, bool device_span, struct gdn_err *err)
{
	size_t h0 = x->hosts.nr;
	int ret;

	xp_reset_model(x);
	x->aggregated = x->no_meta = x->dropped = 0;
	x->long_bytes = 0; /* the pool is per file */
	for (x->pass = 0; x->pass < 3; x->pass++) {
		ret = read_space(x, device_span, err);
		if (ret)
			return ret;
		if (x->pass == 1)
			build_dense(x);
		if (x->pass)
			continue;
		mark_dup_ids(x);
		if (x->hosts.nr == h0) {
			/* no hostnames: the file name without .xplane.pb */
			const char *l = x->f.label ? x->f.label : "", *b = strrchr(l, '/');
			const char *dot;

			b = b ? b + 1 : l;
			dot = strstr(b, ".xplane.pb");
			strvec_pushf(&x->hosts, "%.*s", (int)(dot ? (size_t)(dot - b) : strlen(b)),
				     b);
		}
		/* one host per file: its first hostname, made unique ("h (2)") */
		while (x->hosts.nr > h0 + 1)
			strvec_pop(&x->hosts);
		for (unsigned k = 2;; k++) {
			bool clash = false;

			for (size_t i = 0; i < h0 && !clash; i++)
				clash = !strcmp(x->hosts.v[i], x->hosts.v[h0]);
			if (!clash)
				break;
			if (k > 2) {
				char *p = strrchr(x->hosts.v[h0], ' ');

				if (p)
					*p = '\0';
			}
			{
				char *name = xstrfmt("%s (%u)", x->hosts.v[h0], k);

				strvec_pop(&x->hosts);
				strvec_push(&x->hosts, name);
				free(name);
			}
		}
		x->host_name = x->hosts.v[h0];
	}
	return 0;
}

/* ---- sniffing ---- */

static bool json_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool gdn_xplane_sniff(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i = 0;

	if (!len)
		return false;
	if (p[0] != 0x0a && p[0] != 0x12 && p[0] != 0x1a && p[0] != 0x22)
		return false;
	if (p[0] != 0x0a)
		return p[0] != 0x22; /* '"': a JSON string, not a trace either way */
	/* 0x0a is also a newline: JSON is whitespace, then { or [ and a JSON byte */
	while (i < len && json_ws(p[i]))
		i++;
	if (i == len)
		return false;
	if ((p[i] == '{' || p[i] == '[') && i + 1 < len) {
		unsigned char c = p[i + 1];

		if (json_ws(c) || c == '"' || c == '}' || c == ']' || c == '{' || c == '[' ||
		    c == '-' || isdigit(c) || c == 't' || c == 'f' || c == 'n')
			return false;
	}
	return true;
}

bool gdn_xplane_sniff_raw(const void *data, size_t len)
{
	const unsigned char *raw = data;
	unsigned char out[64];
	z_stream zs;
	bool yes;

	if (len < 2 || raw[0] != 0x1f || raw[1] != 0x8b)
		return gdn_xplane_sniff(data, len);
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return false;
	zs.next_in = (unsigned char *)raw;
	zs.avail_in = (uInt)(len < 512 ? len : 512);
	zs.next_out = out;
	zs.avail_out = sizeof(out);
	(void)inflate(&zs, Z_NO_FLUSH);
	yes = gdn_xplane_sniff(out, sizeof(out) - zs.avail_out);
	inflateEnd(&zs);
	return yes;
}

int gdn_xplane_sniff_file(const char *path, bool *is_xplane, struct gdn_err *err)
{
	unsigned char raw[512];
	ssize_t n;
	/* O_NONBLOCK: a FIFO would wait for a writer in open(), deaf to SIGINT/SIGTERM */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	*is_xplane = false;
	if (fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open '%s'", path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd); /* only a regular file can be an XPlane (read twice, with seeks) */
		return 0;
	}
	do
		n = read(fd, raw, sizeof(raw));
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot read '%s'", path);
	*is_xplane = gdn_xplane_sniff_raw(raw, (size_t)n);
	return 0;
}

/* ---- entry points ---- */

static void add_xplane_info(struct xp *x, struct gdn_trace_summary *out)
{
	if (x->aggregated)
		strvec_pushf(&out->warnings,
			     "%llu aggregated XEvents (num_occurrences) are not timeline events "
			     "and were not counted",
			     (unsigned long long)x->aggregated);
	if (x->dropped)
		strvec_pushf(
		    &out->warnings,
		    "the XPlane has more metadata than gdnctl keeps (16 MB of names, 400,000 "
		    "entries): %llu names or entries were not kept, their events count with "
		    "an empty name",
		    (unsigned long long)x->dropped);
	if (x->no_meta)
		strvec_pushf(&out->warnings,
			     "%llu XEvents name no event_metadata of their plane; they count "
			     "with an empty name",
			     (unsigned long long)x->no_meta);
}

/* *again: read them again with keep_long (nothing was put in out) */
static int summarize_once(struct xp_file *files, size_t n, const struct gdn_trace_opts *opts,
			  bool keep_long, bool *again, struct gdn_trace_summary *out,
			  struct gdn_err *err)
{
	struct xp x;
	struct strvec hosts = STRVEC_INIT;
	uint64_t aggregated = 0, no_meta = 0, dropped = 0;
	bool device_span = opts && opts->device_span;
	int ret = 0;

	memset(&x, 0, sizeof(x));
	strvec_init(&x.hosts);
	sbuf_init(&x.tmp, 0);
	sbuf_init(&x.tmp2, 0);
	x.agg = gdn_trace_agg_new(opts);
	x.work = opts ? opts->work : NULL;
	if (x.work)
		gdn_trace_work_release(x.work); /* a second read starts again */
	x.keep_long = keep_long;
	x.multi = n > 1;
	gdn_trace_agg_set_xplane(x.agg, x.multi);
	for (size_t i = 0; i < n && !ret; i++) {
		x.f = files[i];
		x.host = (uint32_t)i;
		ret = read_one(&x, device_span, err);
		if (ret && files[i].label)
			gdn_err_prefix(err, "'%s'", files[i].label);
		aggregated += x.aggregated;
		no_meta += x.no_meta;
		dropped += x.dropped;
	}
	*again = !ret && x.need_exact && !keep_long;
	gdn_trace_agg_count_elements(x.agg, x.events);
	if (!ret && !*again)
		ret = gdn_trace_agg_finish(x.agg, out, err);
	if (!ret && !*again) {
		x.aggregated = aggregated;
		x.no_meta = no_meta;
		x.dropped = dropped;
		add_xplane_info(&x, out);
		out->format = "xplane";
		for (size_t i = 0; i < x.hosts.nr; i++)
			strvec_push(&out->hosts, x.hosts.v[i]);
	}
	gdn_trace_agg_free(x.agg);
	strvec_clear(&x.hosts);
	strvec_clear(&hosts);
	xp_release(&x);
	return ret;
}

static int summarize(struct xp_file *files, size_t n, const struct gdn_trace_opts *opts,
		     struct gdn_trace_summary *out, struct gdn_err *err)
{
	bool again = false;
	int ret = summarize_once(files, n, opts, false, &again, out, err);

	if (again)
		ret = summarize_once(files, n, opts, true, &again, out, err);
	return ret;
}

int gdn_xplane_summarize_mem(const void *data, size_t len, const struct gdn_trace_opts *opts,
			     struct gdn_trace_summary *out, struct gdn_err *err)
{
	struct xp_file f = {NULL, -1, data, len};

	if (!data)
		f.mem = (const unsigned char *)"";
	return summarize(&f, 1, opts, out, err);
}

/* Only the work figures of one file: no aggregator, long names skipped. */
static int work_only(const struct xp_file *f, struct gdn_trace_work *out, struct gdn_err *err)
{
	struct xp x;
	int ret;

	memset(&x, 0, sizeof(x));
	strvec_init(&x.hosts);
	sbuf_init(&x.tmp, 0);
	sbuf_init(&x.tmp2, 0);
	x.f = *f;
	x.work = out;
	ret = read_one(&x, false, err);
	if (ret && f->label)
		gdn_err_prefix(err, "'%s'", f->label);
	strvec_clear(&x.hosts);
	xp_release(&x);
	return ret;
}

int gdn_xplane_work_mem(const void *data, size_t len, struct gdn_trace_work *out,
			struct gdn_err *err)
{
	struct xp_file f = {NULL, -1, data, len};

	if (!data)
		f.mem = (const unsigned char *)"";
	return work_only(&f, out, err);
}

int gdn_xplane_work_file(const char *path, struct gdn_trace_work *out, struct gdn_err *err)
{
	struct xp_file f = {path, -1, NULL, 0};
	int ret;

	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f.fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open '%s'", path);
	ret = work_only(&f, out, err);
	close(f.fd);
	return ret;
}

int gdn_xplane_summarize_files(const char *const *paths, size_t n,
			       const struct gdn_trace_opts *opts, struct gdn_trace_summary *out,
			       struct gdn_err *err)
{
	struct xp_file *files = xcalloc(n ? n : 1, sizeof(*files));
	int ret = 0;
	size_t opened = 0;

	for (; opened < n; opened++) {
		files[opened].label = paths[opened];
		files[opened].fd = open(paths[opened], O_RDONLY | O_CLOEXEC);
		if (files[opened].fd < 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot open '%s'", paths[opened]);
			break;
		}
	}
	if (!ret)
		ret = summarize(files, n, opts, out, err);
	for (size_t i = 0; i < opened; i++)
		close(files[i].fd);
	free(files);
	if (!ret) {
		free(out->path);
		out->path = xstrdup(n ? paths[0] : "");
	}
	return ret;
}
