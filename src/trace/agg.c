/*
 * Aggregator: interned strings, tracks keyed by (pid, tid), per-track
 * self time, and the final selection and grouping into a summary.
 *
 * Selection needs process and thread names, which may arrive after the
 * events that use them, so everything is aggregated per stream first: a
 * stream is one track and one class (class 1: the event's category is one
 * of the selected or Kineto device categories; class 0: the rest). Memory
 * is proportional to streams and to distinct (stream, op) pairs.
 *
 * Self time per stream: events pass through a reorder window (sorted by
 * start, then longest first; GDN_TRACE_WINDOW events deep) into a nesting
 * stack. An event's self time is its duration minus the union of its
 * direct children's intervals clipped to it. An event that overlaps the
 * top of the stack only partly is not its child: the top is charged with
 * the overlap and closed, so the later event owns the shared time. No time
 * is counted twice and no self time is negative. Events that arrive behind
 * the window (already-closed time) and events nested deeper than
 * GDN_TRACE_NEST_MAX get a self time of 0 and are counted in the summary.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/* ---- interned strings ---- */

struct strtab {
	char *pool;
	size_t pool_len, pool_alloc;
	struct sent {
		uint64_t hash;
		size_t off, len;
	} * ents;
	size_t nr, alloc;
	uint32_t *slots; /* index + 1; 0: empty */
	size_t mask;
};

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;

	while (len >= 8) {
		uint64_t w;

		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
		s += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;

		memcpy(&w, s, len);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
		h ^= h >> 29;
	}
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static void strtab_grow(struct strtab *st)
{
	size_t n = st->mask ? (st->mask + 1) * 2 : 1024;

	free(st->slots);
	st->slots = xcalloc(n, sizeof(*st->slots));
	st->mask = n - 1;
	for (size_t i = 0; i < st->nr; i++) {
		size_t j = st->ents[i].hash & st->mask;

		while (st->slots[j])
			j = (j + 1) & st->mask;
		st->slots[j] = (uint32_t)(i + 1);
	}
}

/* Id of the string (0 is always ""). */
static uint32_t strtab_intern(struct strtab *st, const char *s, size_t len)
{
	uint64_t h;
	size_t j;

	if (!len)
		return 0;
	if (!st->nr) {
		/* id 0: the empty string */
		ALLOC_GROW(st->ents, 1, st->alloc);
		ALLOC_GROW(st->pool, 1, st->pool_alloc);
		st->pool[0] = '\0';
		st->pool_len = 1;
		st->ents[0].hash = hash_bytes("", 0);
		st->ents[0].off = 0;
		st->ents[0].len = 0;
		st->nr = 1;
	}
	if ((st->nr + 1) * 2 > st->mask + 1)
		strtab_grow(st);
	h = hash_bytes(s, len);
	for (j = h & st->mask; st->slots[j]; j = (j + 1) & st->mask) {
		const struct sent *e = &st->ents[st->slots[j] - 1];

		if (e->hash == h && e->len == len && !memcmp(st->pool + e->off, s, len))
			return st->slots[j] - 1;
	}
	if (st->nr >= UINT32_MAX - 1)
		BUG("too many distinct strings");
	ALLOC_GROW(st->ents, st->nr + 1, st->alloc);
	ALLOC_GROW(st->pool, st_add(st->pool_len, st_add(len, 1)), st->pool_alloc);
	memcpy(st->pool + st->pool_len, s, len);
	st->pool[st->pool_len + len] = '\0';
	st->ents[st->nr].hash = h;
	st->ents[st->nr].off = st->pool_len;
	st->ents[st->nr].len = len;
	st->pool_len += len + 1;
	st->slots[j] = (uint32_t)(st->nr + 1);
	return (uint32_t)st->nr++;
}

/* Id of the string, or UINT32_MAX when it was never interned. */
static uint32_t strtab_find(const struct strtab *st, const char *s, size_t len)
{
	uint64_t h;

	if (!len)
		return 0;
	if (!st->mask)
		return UINT32_MAX;
	h = hash_bytes(s, len);
	for (size_t j = h & st->mask; st->slots[j]; j = (j + 1) & st->mask) {
		const struct sent *e = &st->ents[st->slots[j] - 1];

		if (e->hash == h && e->len == len && !memcmp(st->pool + e->off, s, len))
			return st->slots[j] - 1;
	}
	return UINT32_MAX;
}

static const char *strtab_str(const struct strtab *st, uint32_t id)
{
	if (!st->nr)
		return "";
	return st->pool + st->ents[id].off;
}

static void strtab_release(struct strtab *st)
{
	free(st->pool);
	free(st->ents);
	free(st->slots);
	memset(st, 0, sizeof(*st));
}

/* ---- a small open-addressing map: three 64-bit words -> index ---- */

struct hkey {
	uint64_t a, b, c;
};

struct hent {
	struct hkey k;
	uint32_t val; /* index + 1; 0: empty */
};

struct hmap {
	struct hent *e;
	size_t mask, nr;
};

static uint64_t hash_key(const struct hkey *k)
{
	uint64_t h = k->a * 0x9e3779b97f4a7c15ULL;

	h ^= (h >> 31) ^ (k->b * 0xc2b2ae3d27d4eb4fULL);
	h = (h ^ (h >> 29)) * 0xff51afd7ed558ccdULL;
	h ^= k->c * 0x165667b19e3779f9ULL;
	h ^= h >> 32;
	return h * 0xd6e8feb86659fd93ULL;
}

static bool key_eq(const struct hkey *x, const struct hkey *y)
{
	return x->a == y->a && x->b == y->b && x->c == y->c;
}

static void hmap_grow(struct hmap *m)
{
	size_t oldn = m->e ? m->mask + 1 : 0, n = oldn ? oldn * 2 : 64;
	struct hent *old = m->e;

	m->e = xcalloc(n, sizeof(*m->e));
	m->mask = n - 1;
	for (size_t i = 0; i < oldn; i++) {
		size_t j;

		if (!old[i].val)
			continue;
		for (j = hash_key(&old[i].k) & m->mask; m->e[j].val; j = (j + 1) & m->mask)
			;
		m->e[j] = old[i];
	}
	free(old);
}

/* The index stored for k, or `fresh` (stored) when k is new; *isnew says which. */
static uint32_t hmap_get(struct hmap *m, const struct hkey *k, uint32_t fresh, bool *isnew)
{
	size_t j;

	if (!m->e || (m->nr + 1) * 4 > (m->mask + 1) * 3)
		hmap_grow(m);
	for (j = hash_key(k) & m->mask; m->e[j].val; j = (j + 1) & m->mask) {
		if (key_eq(&m->e[j].k, k)) {
			*isnew = false;
			return m->e[j].val - 1;
		}
	}
	m->e[j].k = *k;
	m->e[j].val = fresh + 1;
	m->nr++;
	*isnew = true;
	return fresh;
}

/* The index stored for k, or UINT32_MAX. */
static uint32_t hmap_find(const struct hmap *m, const struct hkey *k)
{
	if (!m->e)
		return UINT32_MAX;
	for (size_t j = hash_key(k) & m->mask; m->e[j].val; j = (j + 1) & m->mask)
		if (key_eq(&m->e[j].k, k))
			return m->e[j].val - 1;
	return UINT32_MAX;
}

static void hmap_release(struct hmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* ---- tracks, streams, accumulators ---- */

#define NONE UINT32_MAX

struct proc {
	uint32_t name;	  /* +1; 0: no process_name seen */
	bool selected;	  /* has a selected track (finish) */
	bool gpu_streams; /* a /device:GPU process with "Stream #N" tracks (finish) */
};

struct bopen {
	gdn_ps start;
	uint32_t tuple;
};

struct track {
	int64_t pid, tid;
	uint32_t pid_str, tid_str; /* interned id + 1 for string ids; 0: integer */
	uint32_t proc;
	uint32_t thread_name; /* +1; 0: none */
	uint32_t stream[2];   /* NONE or index */
	uint64_t n_events;
	struct bopen *b; /* open B events */
	size_t nb, balloc;
	/* resolved at finish */
	uint32_t device; /* interned device label */
	bool selected_pid;
	bool gpu_stream; /* a "Stream #N" thread/line of a /device:GPU process/plane */
};

struct wentry {
	gdn_ps start, end;
	uint32_t acc;
};

struct sentry {
	gdn_ps start, end, cover_end, covered;
	uint32_t acc;
};

struct stream {
	uint32_t track;
	unsigned cls;
	struct wentry *win; /* ring */
	size_t head, len, cap;
	struct sentry *stk;
	size_t nstk, stkalloc;
	gdn_ps released; /* start of the last event that left the window */
	uint64_t late, deep;
	bool any_released;
	bool selected;
	int8_t logged; /* its closed events go to the step log: 0 not known yet, 1 yes, -1 no */
};

struct tuple {
	uint32_t name, cat, hlo, src, tfop, dedup;
};

/* The accumulator a tuple last went to: events of a track come in runs */
struct tlast {
	uint32_t stream; /* + 1; 0: none yet */
	uint32_t acc;
};

struct acc {
	uint32_t stream, tuple;
	uint64_t count;
	gdn_ps total, self;
};

/* A host step annotation: the earliest start of (name, step_num). */
struct stepann {
	uint32_t name;
	uint64_t num;
	gdn_ps start;
};

/* A closed event of a device stream, for the per-step figures. */
struct logent {
	int64_t start; /* ps after log_base */
	int64_t self;
	uint32_t acc;
};

struct gdn_trace_agg {
	struct strtab st;
	const char *const *devices, *const *threads, *const *cats;
	size_t window;
	struct hmap procmap, trackmap, tuplemap, accmap;
	struct proc *procs;
	size_t nprocs, procalloc;
	struct track *tracks;
	size_t ntracks, trackalloc;
	struct stream *streams;
	size_t nstreams, streamalloc;
	struct tuple *tuples;
	size_t ntuples, tuplealloc;
	struct tlast *tlast; /* per tuple: the stream and acc it last went to */
	size_t tlastalloc;
	struct acc *accs;
	size_t naccs, accalloc;
	uint64_t elements, complete, metadata, invalid, unmatched, late, deep, other;
	uint64_t capped; /* events of tracks beyond GDN_TRACE_TRACK_MAX */
	uint32_t id_process_name, id_thread_name;
	bool xplane, multi_host, device_span;
	size_t window_entries; /* allocated, over all streams */
	size_t nest_entries;   /* nesting stack entries allocated, over all streams */
	struct hmap stepmap;   /* (name, step_num) -> steps index */
	struct stepann *steps;
	size_t nsteps, stepalloc;
	uint64_t steps_dropped; /* annotations beyond GDN_TRACE_STEP_MAX */
	struct logent *log;	/* closed events of device streams, GDN_TRACE_STEP_LOG at most */
	size_t nlog, logalloc;
	gdn_ps log_base;
	bool log_based, log_full;
};

void gdn_trace_agg_set_xplane(struct gdn_trace_agg *a, bool multi_host)
{
	a->xplane = true;
	a->multi_host = multi_host;
}

static bool list_nonempty(const char *const *l)
{
	return l && l[0];
}

static bool list_has(const char *const *l, const char *s, size_t len)
{
	for (; l && *l; l++)
		if (strlen(*l) == len && !memcmp(*l, s, len))
			return true;
	return false;
}

struct gdn_trace_agg *gdn_trace_agg_new(const struct gdn_trace_opts *opts)
{
	struct gdn_trace_agg *a = xcalloc(1, sizeof(*a));

	a->devices = opts ? opts->devices : NULL;
	a->threads = opts ? opts->threads : NULL;
	a->cats = opts ? opts->cats : NULL;
	a->window = opts && opts->window ? opts->window : GDN_TRACE_WINDOW;
	a->device_span = opts && opts->device_span;
	strtab_intern(&a->st, "", 0);
	return a;
}

void gdn_trace_agg_free(struct gdn_trace_agg *a)
{
	if (!a)
		return;
	strtab_release(&a->st);
	hmap_release(&a->procmap);
	hmap_release(&a->trackmap);
	hmap_release(&a->tuplemap);
	hmap_release(&a->accmap);
	hmap_release(&a->stepmap);
	free(a->steps);
	free(a->log);
	free(a->procs);
	for (size_t i = 0; i < a->ntracks; i++)
		free(a->tracks[i].b);
	free(a->tracks);
	for (size_t i = 0; i < a->nstreams; i++) {
		free(a->streams[i].win);
		free(a->streams[i].stk);
	}
	free(a->streams);
	free(a->tuples);
	free(a->tlast);
	free(a->accs);
	free(a);
}

void gdn_trace_agg_count_element(struct gdn_trace_agg *a)
{
	a->elements++;
}

void gdn_trace_agg_count_elements(struct gdn_trace_agg *a, uint64_t n)
{
	a->elements += n;
}

static uint32_t intern(struct gdn_trace_agg *a, const char *s, size_t len)
{
	return s ? strtab_intern(&a->st, s, len) : 0;
}

static uint32_t id_str(struct gdn_trace_agg *a, const struct gdn_trace_id *id)
{
	return id->str ? strtab_intern(&a->st, id->str, id->len) + 1 : 0;
}

/* An id's string part without interning it: 0, id + 1, or NONE (never seen). */
static uint32_t id_find(struct gdn_trace_agg *a, const struct gdn_trace_id *id)
{
	uint32_t i;

	if (!id->str)
		return 0;
	i = strtab_find(&a->st, id->str, id->len);
	return i == UINT32_MAX ? NONE : i + 1;
}

/* The process, or NONE beyond the cap. */
static uint32_t get_proc(struct gdn_trace_agg *a, const struct gdn_trace_id *pid)
{
	struct hkey k = {(uint64_t)pid->num, 0, 0};
	bool isnew;
	uint32_t i;

	if (a->nprocs >= GDN_TRACE_TRACK_MAX) {
		uint32_t ps = id_find(a, pid);

		if (ps == NONE)
			return NONE;
		k.c = ps;
		return hmap_find(&a->procmap, &k);
	}
	k.c = id_str(a, pid);
	i = hmap_get(&a->procmap, &k, (uint32_t)a->nprocs, &isnew);
	if (isnew) {
		ALLOC_GROW(a->procs, a->nprocs + 1, a->procalloc);
		a->procs[a->nprocs].name = 0;
		a->procs[a->nprocs].gpu_streams = false;
		a->procs[a->nprocs++].selected = false;
	}
	return i;
}

/*
 * The track, or NONE beyond GDN_TRACE_TRACK_MAX tracks (memory stays bounded
 * for hostile traces: a million distinct tids).
 */
static uint32_t get_track(struct gdn_trace_agg *a, const struct gdn_trace_id *pid,
			  const struct gdn_trace_id *tid)
{
	uint32_t ps, ts, i, proc;
	struct hkey k;
	bool isnew;

	if (a->ntracks >= GDN_TRACE_TRACK_MAX) {
		ps = id_find(a, pid);
		ts = id_find(a, tid);
		if (ps == NONE || ts == NONE)
			return NONE;
		k.a = (uint64_t)pid->num;
		k.b = (uint64_t)tid->num;
		k.c = ((uint64_t)ps << 32) | ts;
		return hmap_find(&a->trackmap, &k);
	}
	proc = get_proc(a, pid);
	if (proc == NONE)
		return NONE;
	ps = id_str(a, pid);
	ts = id_str(a, tid);
	k.a = (uint64_t)pid->num;
	k.b = (uint64_t)tid->num;
	k.c = ((uint64_t)ps << 32) | ts;
	i = hmap_get(&a->trackmap, &k, (uint32_t)a->ntracks, &isnew);
	if (isnew) {
		struct track *t;

		ALLOC_GROW(a->tracks, a->ntracks + 1, a->trackalloc);
		t = &a->tracks[a->ntracks++];
		memset(t, 0, sizeof(*t));
		t->pid = pid->num;
		t->tid = tid->num;
		t->pid_str = ps;
		t->tid_str = ts;
		t->stream[0] = t->stream[1] = NONE;
		t->proc = proc;
	}
	return i;
}

static uint32_t get_stream(struct gdn_trace_agg *a, uint32_t track, unsigned cls)
{
	struct stream *s;

	if (a->tracks[track].stream[cls] != NONE)
		return a->tracks[track].stream[cls];
	ALLOC_GROW(a->streams, a->nstreams + 1, a->streamalloc);
	s = &a->streams[a->nstreams];
	memset(s, 0, sizeof(*s));
	s->track = track;
	s->cls = cls;
	a->tracks[track].stream[cls] = (uint32_t)a->nstreams;
	return (uint32_t)a->nstreams++;
}

static uint32_t get_tuple(struct gdn_trace_agg *a, const struct gdn_trace_event *ev)
{
	struct tuple tp;
	struct hkey k;
	bool isnew;
	uint32_t i;

	tp.name = intern(a, ev->name, ev->name_len);
	tp.cat = intern(a, ev->cat, ev->cat_len);
	tp.hlo = intern(a, ev->hlo_category, ev->hlo_category_len);
	tp.src = intern(a, ev->source, ev->source_len);
	tp.tfop = intern(a, ev->tf_op, ev->tf_op_len);
	tp.dedup = intern(a, ev->dedup, ev->dedup_len);
	k.a = tp.name | ((uint64_t)tp.cat << 32);
	k.b = tp.hlo | ((uint64_t)tp.src << 32);
	k.c = tp.tfop | ((uint64_t)tp.dedup << 32);
	i = hmap_get(&a->tuplemap, &k, (uint32_t)a->ntuples, &isnew);
	if (isnew) {
		ALLOC_GROW(a->tuples, a->ntuples + 1, a->tuplealloc);
		ALLOC_GROW(a->tlast, a->ntuples + 1, a->tlastalloc);
		a->tlast[a->ntuples].stream = 0;
		a->tuples[a->ntuples++] = tp;
	}
	return i;
}

static uint32_t get_acc(struct gdn_trace_agg *a, uint32_t stream, uint32_t tuple)
{
	struct hkey k = {stream, tuple, 0};
	bool isnew;
	uint32_t i;

	if (tuple < a->ntuples && a->tlast[tuple].stream == stream + 1)
		return a->tlast[tuple].acc;
	i = hmap_get(&a->accmap, &k, (uint32_t)a->naccs, &isnew);
	if (tuple < a->ntuples) {
		a->tlast[tuple].stream = stream + 1;
		a->tlast[tuple].acc = i;
	}
	if (isnew) {
		struct acc *c;

		ALLOC_GROW(a->accs, a->naccs + 1, a->accalloc);
		c = &a->accs[a->naccs++];
		memset(c, 0, sizeof(*c));
		c->stream = stream;
		c->tuple = tuple;
	}
	return i;
}

/* ---- self time ---- */

/* Charge [s, e) clipped to the parent, counting only time not yet covered. */
static void charge(struct sentry *p, gdn_ps s, gdn_ps e)
{
	if (s < p->cover_end)
		s = p->cover_end;
	if (e > p->end)
		e = p->end;
	if (e > s) {
		p->covered += e - s;
		p->cover_end = e;
	}
}

static const char *proc_name(struct gdn_trace_agg *a, const struct track *t);

/*
 * Whether a stream's events go to the step log: device categories, tracks of
 * "/device:" processes, and tracks whose process is not named yet (names may
 * come later); with --thread or --cat, every track.
 */
static bool stream_logged(struct gdn_trace_agg *a, struct stream *s)
{
	const struct track *t = &a->tracks[s->track];

	if (s->logged)
		return s->logged > 0;
	if (s->cls == 1 || list_nonempty(a->threads) || list_nonempty(a->cats)) {
		s->logged = 1;
		return true;
	}
	if (!a->procs[t->proc].name)
		return true;
	s->logged = strstr(proc_name(a, t), "/device:") ? 1 : -1;
	return s->logged > 0;
}

static void log_closed(struct gdn_trace_agg *a, struct stream *s, gdn_ps start, gdn_ps self,
		       uint32_t acc)
{
	struct logent *e;

	if (a->log_full || !stream_logged(a, s))
		return;
	if (!a->log_based) {
		a->log_base = start;
		a->log_based = true;
	}
	if (a->nlog >= GDN_TRACE_STEP_LOG || start - a->log_base > INT64_MAX ||
	    start - a->log_base < INT64_MIN || self > INT64_MAX) {
		a->log_full = true;
		return;
	}
	ALLOC_GROW(a->log, a->nlog + 1, a->logalloc);
	e = &a->log[a->nlog++];
	e->start = (int64_t)(start - a->log_base);
	e->self = (int64_t)self;
	e->acc = acc;
}

static void close_top(struct gdn_trace_agg *a, struct stream *s)
{
	struct sentry *t = &s->stk[--s->nstk];
	gdn_ps self = (t->end - t->start) - t->covered;

	a->accs[t->acc].self += self;
	log_closed(a, s, t->start, self, t->acc);
}

static void nest(struct gdn_trace_agg *a, struct stream *s, const struct wentry *w)
{
	struct sentry *top;

	while (s->nstk && s->stk[s->nstk - 1].end <= w->start)
		close_top(a, s);
	/* partial overlap: not a child; the top gives up the shared time */
	while (s->nstk && w->end > s->stk[s->nstk - 1].end) {
		top = &s->stk[s->nstk - 1];
		charge(top, w->start, top->end);
		close_top(a, s);
	}
	if (s->nstk)
		charge(&s->stk[s->nstk - 1], w->start, w->end);
	/*
	 * At most GDN_TRACE_NEST_MAX open events per track, and all the tracks'
	 * stacks together hold at most GDN_TRACE_NEST_BUDGET (a hostile trace
	 * with 16384 tracks nested 4096 deep would otherwise take 2.5 GB).
	 */
	if (s->nstk >= GDN_TRACE_NEST_MAX ||
	    (s->nstk == s->stkalloc && a->nest_entries >= GDN_TRACE_NEST_BUDGET)) {
		s->deep++;
		return;
	}
	a->nest_entries -= s->stkalloc;
	ALLOC_GROW(s->stk, s->nstk + 1, s->stkalloc);
	a->nest_entries += s->stkalloc;
	top = &s->stk[s->nstk++];
	top->start = w->start;
	top->end = w->end;
	top->cover_end = w->start;
	top->covered = 0;
	top->acc = w->acc;
}

/* (head + i) % cap for i <= cap, without a division */
static size_t ring(const struct stream *s, size_t i)
{
	size_t j = s->head + i;

	return j >= s->cap ? j - s->cap : j;
}

static void release_one(struct gdn_trace_agg *a, struct stream *s)
{
	struct wentry w = s->win[s->head];

	s->head = ring(s, 1);
	s->len--;
	s->released = w.start;
	s->any_released = true;
	nest(a, s, &w);
}

/* Order in the window: start ascending, then end descending (parents first). */
static bool before(const struct wentry *x, const struct wentry *y)
{
	return x->start < y->start || (x->start == y->start && x->end > y->end);
}

static void window_add(struct gdn_trace_agg *a, struct stream *s, const struct wentry *w)
{
	size_t i;

	/*
	 * All windows together hold at most GDN_TRACE_WINDOW_BUDGET events: with
	 * many busy tracks a window stops growing (memory stays bounded; events
	 * further out of order count as late).
	 */
	if (s->len == a->window ||
	    (s->len && s->len == s->cap && a->window_entries + s->cap > GDN_TRACE_WINDOW_BUDGET))
		release_one(a, s);
	if (s->any_released && w->start < s->released) {
		s->late++; /* behind already-closed time: self time 0 */
		return;
	}
	if (s->len == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		struct wentry *nw;

		if (ncap > a->window)
			ncap = a->window;
		a->window_entries += ncap - s->cap;
		nw = xmalloc(st_mult(ncap, sizeof(*nw)));
		for (i = 0; i < s->len; i++)
			nw[i] = s->win[ring(s, i)];
		free(s->win);
		s->win = nw;
		s->head = 0;
		s->cap = ncap;
	}
	/* insertion from the back: O(1) for sorted input */
	i = s->len;
	while (i && before(w, &s->win[ring(s, i - 1)])) {
		s->win[ring(s, i)] = s->win[ring(s, i - 1)];
		i--;
	}
	s->win[ring(s, i)] = *w;
	s->len++;
}

static void flush_stream(struct gdn_trace_agg *a, struct stream *s)
{
	while (s->len)
		release_one(a, s);
	while (s->nstk)
		close_top(a, s);
}

/* ---- intake ---- */

static bool is_device_cat(struct gdn_trace_agg *a, const char *cat, size_t len)
{
	static const char *const kineto[] = {"kernel", "gpu_memcpy", "gpu_memset", NULL};

	if (list_nonempty(a->cats))
		return list_has(a->cats, cat, len);
	if (list_nonempty(a->threads))
		return false;
	return cat && list_has(kineto, cat, len);
}

static void complete(struct gdn_trace_agg *a, uint32_t track, unsigned cls, uint32_t tuple,
		     gdn_ps start, gdn_ps dur)
{
	uint32_t si = get_stream(a, track, cls);
	struct wentry w;
	struct acc *c;

	w.acc = get_acc(a, si, tuple);
	c = &a->accs[w.acc];
	c->count++;
	c->total += dur;
	a->complete++;
	a->tracks[track].n_events++;
	w.start = start;
	w.end = start + dur;
	window_add(a, &a->streams[si], &w);
}

/* A host step annotation: keep the earliest start of each (name, step_num). */
static void step_note(struct gdn_trace_agg *a, uint32_t name, uint64_t num, gdn_ps ts)
{
	struct hkey k = {name, num, 1};
	bool isnew;
	uint32_t i;

	if (a->nsteps >= GDN_TRACE_STEP_MAX) {
		i = hmap_find(&a->stepmap, &k);
		if (i == UINT32_MAX) {
			a->steps_dropped++;
			return;
		}
	} else {
		i = hmap_get(&a->stepmap, &k, (uint32_t)a->nsteps, &isnew);
		if (isnew) {
			ALLOC_GROW(a->steps, a->nsteps + 1, a->stepalloc);
			a->steps[a->nsteps].name = name;
			a->steps[a->nsteps].num = num;
			a->steps[a->nsteps++].start = ts;
			return;
		}
	}
	if (ts < a->steps[i].start)
		a->steps[i].start = ts;
}

void gdn_trace_agg_step(struct gdn_trace_agg *a, uint32_t tuple, uint64_t step_num, gdn_ps ts)
{
	if (tuple < a->ntuples)
		step_note(a, a->tuples[tuple].name, step_num, ts);
}

uint32_t gdn_trace_agg_tuple(struct gdn_trace_agg *a, const struct gdn_trace_event *ev)
{
	return get_tuple(a, ev);
}

uint32_t gdn_trace_agg_track(struct gdn_trace_agg *a, const struct gdn_trace_id *pid,
			     const struct gdn_trace_id *tid)
{
	return get_track(a, pid, tid);
}

void gdn_trace_agg_complete(struct gdn_trace_agg *a, uint32_t track, uint32_t tuple, gdn_ps ts,
			    gdn_ps dur)
{
	if (track == NONE) {
		a->capped++;
		return;
	}
	if (dur < 0) {
		a->invalid++;
		return;
	}
	complete(a, track, is_device_cat(a, NULL, 0), tuple, ts, dur);
}

void gdn_trace_agg_event(struct gdn_trace_agg *a, const struct gdn_trace_event *ev)
{
	uint32_t tr, tp;

	switch (ev->ph) {
	case 'X':
		if (!ev->has_ts || !ev->has_dur || ev->dur < 0) {
			a->invalid++;
			return;
		}
		tr = get_track(a, &ev->pid, &ev->tid);
		if (tr == NONE) {
			a->capped++;
			return;
		}
		tp = get_tuple(a, ev);
		if (a->device_span && ev->has_dev_ts && ev->has_dev_dur)
			complete(a, tr, is_device_cat(a, ev->cat, ev->cat_len), tp, ev->dev_ts,
				 ev->dev_dur);
		else
			complete(a, tr, is_device_cat(a, ev->cat, ev->cat_len), tp, ev->ts,
				 ev->dur);
		if (ev->has_step_num)
			step_note(a, a->tuples[tp].name, ev->step_num, ev->ts);
		return;
	case 'B': {
		struct track *t;

		if (!ev->has_ts) {
			a->invalid++;
			return;
		}
		tr = get_track(a, &ev->pid, &ev->tid);
		if (tr == NONE) {
			a->capped++;
			return;
		}
		t = &a->tracks[tr];
		if (t->nb >= GDN_TRACE_NEST_MAX) {
			a->unmatched++;
			return;
		}
		ALLOC_GROW(t->b, t->nb + 1, t->balloc);
		t->b[t->nb].start = ev->ts;
		/* the category class of a B/E pair comes from its B event */
		t->b[t->nb].tuple = get_tuple(a, ev) << 1 | is_device_cat(a, ev->cat, ev->cat_len);
		t->nb++;
		return;
	}
	case 'E': {
		struct track *t;
		struct bopen b;

		tr = get_track(a, &ev->pid, &ev->tid);
		if (tr == NONE) {
			a->capped++;
			return;
		}
		t = &a->tracks[tr];
		if (!t->nb) {
			a->unmatched++;
			return;
		}
		b = t->b[--t->nb];
		if (!ev->has_ts || ev->ts < b.start) {
			a->invalid++;
			return;
		}
		complete(a, tr, b.tuple & 1, b.tuple >> 1, b.start, ev->ts - b.start);
		return;
	}
	case 'M':
		a->metadata++;
		if (!ev->has_meta_name || !ev->name)
			return;
		if (ev->name_len == 12 && !memcmp(ev->name, "process_name", 12)) {
			uint32_t p = get_proc(a, &ev->pid);

			if (p != NONE)
				a->procs[p].name = intern(a, ev->meta_name, ev->meta_name_len) + 1;
		} else if (ev->name_len == 11 && !memcmp(ev->name, "thread_name", 11)) {
			tr = get_track(a, &ev->pid, &ev->tid);
			if (tr != NONE)
				a->tracks[tr].thread_name =
				    intern(a, ev->meta_name, ev->meta_name_len) + 1;
		}
		return;
	default:
		a->other++;
		return;
	}
}

/* ---- finish: selection and grouping ---- */

static const char *proc_name(struct gdn_trace_agg *a, const struct track *t)
{
	uint32_t n = a->procs[t->proc].name;

	return n ? strtab_str(&a->st, n - 1) : "";
}

static const char *thread_name(struct gdn_trace_agg *a, const struct track *t)
{
	return t->thread_name ? strtab_str(&a->st, t->thread_name - 1) : "";
}

static void pid_text(struct gdn_trace_agg *a, const struct track *t, struct sbuf *out)
{
	if (t->pid_str)
		sbuf_adds(out, strtab_str(&a->st, t->pid_str - 1));
	else
		sbuf_addf(out, "%lld", (long long)t->pid);
}

static uint32_t device_label(struct gdn_trace_agg *a, const struct track *t)
{
	const char *pn = proc_name(a, t), *dev = strstr(pn, "/device:");
	struct sbuf sb = SBUF_INIT;
	uint32_t id;

	if (dev && a->multi_host && dev > pn) {
		/* "<host> /device:TPU:0" -> "<host>/TPU:0" */
		sbuf_add(&sb, pn, (size_t)(dev - pn));
		while (sb.len && sb.buf[sb.len - 1] == ' ')
			sbuf_setlen(&sb, sb.len - 1);
		sbuf_addf(&sb, "/%s", dev + 8);
	} else if (dev) {
		sbuf_adds(&sb, dev + 8);
	} else {
		if (*pn)
			sbuf_addf(&sb, "%s (pid ", pn);
		else
			sbuf_adds(&sb, "pid ");
		pid_text(a, t, &sb);
		if (*pn)
			sbuf_addch(&sb, ')');
	}
	id = strtab_intern(&a->st, sb.buf, sb.len);
	sbuf_release(&sb);
	return id;
}

static bool device_ok(struct gdn_trace_agg *a, const struct track *t)
{
	struct sbuf pid = SBUF_INIT;
	bool ok = false;

	if (!list_nonempty(a->devices))
		return true;
	pid_text(a, t, &pid);
	for (const char *const *d = a->devices; *d && !ok; d++)
		ok = !strcmp(strtab_str(&a->st, t->device), *d) || strstr(proc_name(a, t), *d) ||
		     !strcmp(pid.buf, *d);
	sbuf_release(&pid);
	return ok;
}

/*
 * The one meaning of "device op" for every format (XPlane lines and the
 * threads of its JSON twins, <host>.trace.json.gz and perfetto_trace.json.gz,
 * alike), as xprof: the "Stream #N(...)" (kernel) lines of /device:GPU
 * processes; the "XLA Ops" and "Sparse Core Ops" lines of the other
 * /device: processes (TPU, and GPU processes without streams). Traces without
 * them (Kineto) select by category.
 */
static bool is_gpu_stream(const char *pn, const char *tn)
{
	return strstr(pn, "/device:GPU") && !strncmp(tn, "Stream #", 8);
}

static bool is_xla_ops(struct gdn_trace_agg *a, const struct track *t)
{
	const char *tn = thread_name(a, t), *pn = proc_name(a, t);

	if (a->procs[t->proc].gpu_streams)
		return is_gpu_stream(pn, tn);
	return strstr(pn, "/device:") && (!strcmp(tn, "XLA Ops") || !strcmp(tn, "Sparse Core Ops"));
}

/* Strip a trailing ".N" (the HLO instance number): "fusion.321" -> "fusion". */
static size_t family_len(const char *s)
{
	size_t n = strlen(s), i = n;

	while (i && isdigit((unsigned char)s[i - 1]))
		i--;
	if (i < n && i > 1 && s[i - 1] == '.')
		return i - 1;
	return n;
}

struct flat {
	uint32_t key, attr; /* group, and the attribute whose most common value is wanted */
	uint64_t count;
	gdn_ps total, self;
};

/*
 * Sort by (key, attr): LSD radix, a byte at a time, passing over the bytes
 * that are the same everywhere (ids are small: usually 4 passes of 8).
 * The order among equal (key, attr) does not matter: group() sums them.
 */
static void sort_flat(struct flat *f, size_t n)
{
	struct flat *tmp, *src = f, *dst;

	if (n < 2)
		return;
	tmp = xmalloc(st_mult(n, sizeof(*tmp)));
	dst = tmp;
	for (int pass = 0; pass < 8; pass++) {
		size_t count[256] = {0}, pos = 0;
		int shift = (pass & 3) * 8;
		bool attr = pass < 4;

		for (size_t i = 0; i < n; i++)
			count[((attr ? src[i].attr : src[i].key) >> shift) & 0xff]++;
		if (count[((attr ? src[0].attr : src[0].key) >> shift) & 0xff] == n)
			continue; /* this byte is the same in all */
		for (int b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[((attr ? src[i].attr : src[i].key) >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == f ? tmp : f;
	}
	if (src != f)
		memcpy(f, src, n * sizeof(*f));
	free(tmp);
}

static int cmp_rows(const void *x, const void *y)
{
	const struct gdn_trace_row *a = x, *b = y;

	if (a->self != b->self)
		return a->self > b->self ? -1 : 1;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return strcmp(a->key, b->key);
}

/*
 * Group `f` by key; per group sum, and the most common attr (by count, then
 * total, then the smallest id). Calls back for each group.
 */
typedef void (*group_fn)(void *ctx, uint32_t key, uint32_t best_attr, uint64_t count, gdn_ps total,
			 gdn_ps self);

static void group(struct flat *f, size_t n, group_fn fn, void *ctx)
{
	size_t i = 0;

	sort_flat(f, n);
	while (i < n) {
		uint32_t key = f[i].key, best = f[i].attr;
		uint64_t count = 0, bestc = 0;
		gdn_ps total = 0, self = 0, bestt = 0;

		while (i < n && f[i].key == key) {
			uint32_t attr = f[i].attr;
			uint64_t c = 0;
			gdn_ps t = 0;

			while (i < n && f[i].key == key && f[i].attr == attr) {
				c += f[i].count;
				t += f[i].total;
				count += f[i].count;
				total += f[i].total;
				self += f[i].self;
				i++;
			}
			/* a value beats none (id 0); then count, then time */
			if ((!best && attr) ||
			    ((!attr) == (!best) && (c > bestc || (c == bestc && t > bestt)))) {
				best = attr;
				bestc = c;
				bestt = t;
			}
		}
		fn(ctx, key, best, count, total, self);
	}
}

struct build {
	struct gdn_trace_rows *rows;
	int which;     /* 0 key only; 1 category; 2 source; 3 tf_op */
	size_t cursor; /* passes 2 and 3 revisit the rows of pass 1, in the same order */
};

static void group_cb(void *ctx, uint32_t key, uint32_t best, uint64_t count, gdn_ps total,
		     gdn_ps self)
{
	struct build *b = ctx;
	struct gdn_trace_row *r;

	if (b->which <= 1) {
		ALLOC_GROW(b->rows->v, b->rows->nr + 1, b->rows->alloc);
		r = &b->rows->v[b->rows->nr++];
		memset(r, 0, sizeof(*r));
		/* ids are stored as pointers until pointers are resolved */
		r->key = (const char *)(uintptr_t)key;
		r->count = count;
		r->total = total;
		r->self = self;
	} else {
		if (b->cursor >= b->rows->nr ||
		    (uint32_t)(uintptr_t)b->rows->v[b->cursor].key != key)
			BUG("trace rows out of step");
		r = &b->rows->v[b->cursor++];
	}
	switch (b->which) {
	case 1:
		r->category = (const char *)(uintptr_t)best;
		break;
	case 2:
		r->source = (const char *)(uintptr_t)best;
		break;
	case 3:
		r->tf_op = (const char *)(uintptr_t)best;
		break;
	}
}

static void resolve_rows(struct gdn_trace_agg *a, struct gdn_trace_rows *rows, bool attrs)
{
	for (size_t i = 0; i < rows->nr; i++) {
		struct gdn_trace_row *r = &rows->v[i];

		r->key = strtab_str(&a->st, (uint32_t)(uintptr_t)r->key);
		r->category = attrs ? strtab_str(&a->st, (uint32_t)(uintptr_t)r->category) : "";
		r->source = attrs ? strtab_str(&a->st, (uint32_t)(uintptr_t)r->source) : "";
		r->tf_op = attrs ? strtab_str(&a->st, (uint32_t)(uintptr_t)r->tf_op) : "";
	}
	if (rows->nr)
		qsort(rows->v, rows->nr, sizeof(*rows->v), cmp_rows);
}

/* The op's name without its ".N" suffix, interned. */
static uint32_t stripped_name_id(struct gdn_trace_agg *a, const struct tuple *tp)
{
	struct sbuf copy = SBUF_INIT;
	const char *name = strtab_str(&a->st, tp->name);
	size_t n = family_len(name);
	uint32_t id;

	if (n == strlen(name))
		return tp->name;
	/* interning may move the pool: copy the name first */
	sbuf_add(&copy, name, n);
	id = strtab_intern(&a->st, copy.buf, copy.len);
	sbuf_release(&copy);
	return id;
}

/*
 * An op's category: hlo_category, else cat; else on a GPU stream Kineto's
 * (the XPlane reader sets it so; the JSON twins have no cat), else the name
 * without ".N".
 */
static uint32_t derived_category(struct gdn_trace_agg *a, const struct tuple *tp, bool gpu)
{
	const char *name, *cat;

	if (tp->hlo)
		return tp->hlo;
	if (tp->cat)
		return tp->cat;
	if (!gpu)
		return stripped_name_id(a, tp);
	name = strtab_str(&a->st, tp->name);
	cat = !strncmp(name, "Memcpy", 6)   ? "gpu_memcpy"
	      : !strncmp(name, "Memset", 6) ? "gpu_memset"
					    : "kernel";
	return strtab_intern(&a->st, cat, strlen(cat));
}

static bool acc_gpu(const struct gdn_trace_agg *a, const struct acc *c)
{
	return a->tracks[a->streams[c->stream].track].gpu_stream;
}

/* The op family: deduplicated_name when the trace has it, else the name without ".N". */
static uint32_t family_id(struct gdn_trace_agg *a, const struct tuple *tp)
{
	return tp->dedup ? tp->dedup : stripped_name_id(a, tp);
}

/* Where the step windows come from (find_steps), for the per-step figures. */
struct step_src {
	enum { WIN_NONE, WIN_TRACK, WIN_ANN, WIN_ACC } kind;
	uint32_t id; /* a track (the Steps line), a name (annotations) or an acc (module) */
};

static int cmp_u32(const void *x, const void *y)
{
	uint32_t p = *(const uint32_t *)x, q = *(const uint32_t *)y;

	return p < q ? -1 : p > q;
}

/* The host step annotations: the name with the most distinct step numbers; 0 when none. */
static uint64_t annotation_steps(struct gdn_trace_agg *a, uint32_t *name)
{
	uint32_t *names;
	uint64_t best = 0;
	size_t i = 0;

	if (!a->nsteps)
		return 0;
	names = xmalloc(st_mult(a->nsteps, sizeof(*names)));
	for (size_t j = 0; j < a->nsteps; j++)
		names[j] = a->steps[j].name;
	qsort(names, a->nsteps, sizeof(*names), cmp_u32);
	while (i < a->nsteps) {
		size_t j = i;

		while (j < a->nsteps && names[j] == names[i])
			j++;
		if (j - i > best) {
			best = j - i;
			*name = names[i];
		}
		i = j;
	}
	free(names);
	return best;
}

static void find_steps(struct gdn_trace_agg *a, struct gdn_trace_summary *out, struct sbuf *from,
		       struct step_src *src)
{
	uint64_t steps = 0;
	uint32_t best_name = 0;
	gdn_ps best_total = -1;

	for (size_t i = 0; i < a->ntracks; i++) {
		const struct track *t = &a->tracks[i];

		if (t->selected_pid && !strcmp(thread_name(a, t), "Steps") && t->n_events > steps) {
			steps = t->n_events;
			src->kind = WIN_TRACK;
			src->id = (uint32_t)i;
		}
	}
	if (steps) {
		out->steps = steps;
		sbuf_adds(from, "Steps");
		return;
	}
	/* the host's step annotations (jax.profiler.StepTraceAnnotation) */
	steps = annotation_steps(a, &best_name);
	if (steps) {
		out->steps = steps;
		src->kind = WIN_ANN;
		src->id = best_name;
		sbuf_addf(from, "host step annotations \"%s\"", strtab_str(&a->st, best_name));
		return;
	}
	/* the dominant XLA Modules module: largest total time; its largest count */
	for (size_t i = 0; i < a->naccs; i++) {
		const struct acc *c = &a->accs[i];
		const struct track *t = &a->tracks[a->streams[c->stream].track];

		if (!t->selected_pid || strcmp(thread_name(a, t), "XLA Modules"))
			continue;
		if (c->total > best_total) {
			best_total = c->total;
			best_name = a->tuples[c->tuple].name;
		}
	}
	if (best_total < 0)
		return;
	for (size_t i = 0; i < a->naccs; i++) {
		const struct acc *c = &a->accs[i];
		const struct track *t = &a->tracks[a->streams[c->stream].track];

		if (t->selected_pid && !strcmp(thread_name(a, t), "XLA Modules") &&
		    a->tuples[c->tuple].name == best_name && c->count > steps) {
			steps = c->count;
			src->kind = WIN_ACC;
			src->id = (uint32_t)i;
		}
	}
	out->steps = steps;
	sbuf_addf(from, "XLA Modules %s", strtab_str(&a->st, best_name));
}

static int cmp_step(const void *x, const void *y)
{
	const struct gdn_trace_step *p = x, *q = y;

	if (p->start != q->start)
		return p->start < q->start ? -1 : 1;
	return p->number < q->number ? -1 : p->number > q->number;
}

/* Whether a log entry starts a step window of src. */
static bool log_opens_step(const struct gdn_trace_agg *a, const struct logent *e,
			   const struct step_src *src)
{
	if (src->kind == WIN_ACC)
		return e->acc == src->id;
	return src->kind == WIN_TRACK && a->streams[a->accs[e->acc].stream].track == src->id;
}

/*
 * The per-step figures: the windows (a step's start to the next one's), and
 * in each the self time of the selected device ops that start in it.
 */
static void per_step(struct gdn_trace_agg *a, struct gdn_trace_summary *out,
		     const struct step_src *src)
{
	struct gdn_trace_step *v = NULL;
	size_t n = 0, alloc = 0;

	if (src->kind == WIN_NONE)
		return;
	if (a->log_full) {
		strvec_pushf(&out->warnings,
			     "more than %zu device events: no per-step figures (only the "
			     "per-step mean)",
			     GDN_TRACE_STEP_LOG);
		return;
	}
	if (src->kind == WIN_ANN) {
		for (size_t i = 0; i < a->nsteps; i++) {
			if (a->steps[i].name != src->id)
				continue;
			ALLOC_GROW(v, n + 1, alloc);
			memset(&v[n], 0, sizeof(v[n]));
			v[n].number = a->steps[i].num;
			v[n++].start = a->steps[i].start;
		}
	} else {
		for (size_t i = 0; i < a->nlog; i++) {
			if (!log_opens_step(a, &a->log[i], src))
				continue;
			ALLOC_GROW(v, n + 1, alloc);
			memset(&v[n], 0, sizeof(v[n]));
			v[n++].start = a->log_base + a->log[i].start;
		}
	}
	if (!n)
		return;
	qsort(v, n, sizeof(*v), cmp_step);
	if (src->kind != WIN_ANN)
		for (size_t i = 0; i < n; i++)
			v[i].number = i;
	for (size_t i = 0; i < a->nlog; i++) {
		const struct logent *e = &a->log[i];
		gdn_ps start = a->log_base + e->start;
		size_t lo = 0, hi = n;

		if (!a->streams[a->accs[e->acc].stream].selected || start < v[0].start)
			continue;
		/* the last window that starts at or before the op */
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (v[mid].start <= start)
				lo = mid;
			else
				hi = mid;
		}
		v[lo].self += e->self;
		v[lo].ops++;
	}
	out->step_v = v;
	out->step_nr = n;
}

static void add_warnings(struct gdn_trace_agg *a, struct gdn_trace_summary *out)
{
	uint64_t nonmeta = a->complete + a->other + a->unmatched + a->invalid;

	if (a->complete == GDN_TRACE_EVENT_CAP1 || a->complete == GDN_TRACE_EVENT_CAP2 ||
	    nonmeta == GDN_TRACE_EVENT_CAP1 || nonmeta == GDN_TRACE_EVENT_CAP2) {
		out->truncated = true;
		strvec_pushf(&out->warnings,
			     "the trace has exactly %llu events: it looks truncated by the "
			     "profiler's event cap (TF_PROFILER_TRACE_VIEWER_MAX_EVENTS); the last "
			     "steps are missing",
			     (unsigned long long)(a->complete == GDN_TRACE_EVENT_CAP1 ||
							  a->complete == GDN_TRACE_EVENT_CAP2
						      ? a->complete
						      : nonmeta));
	}
	if (a->late)
		strvec_pushf(&out->warnings,
			     "%llu selected events came more than %zu events out of time order on "
			     "their track; their self time is counted as 0",
			     (unsigned long long)a->late, a->window);
	if (a->deep)
		strvec_pushf(&out->warnings,
			     "%llu selected events were nested deeper than %u levels (or past %zu "
			     "open events on all tracks); their self time is counted as 0",
			     (unsigned long long)a->deep, GDN_TRACE_NEST_MAX,
			     GDN_TRACE_NEST_BUDGET);
	if (a->capped)
		strvec_pushf(
		    &out->warnings,
		    "the trace has more than %u tracks (pid, tid) or processes: %llu events "
		    "of the tracks beyond were ignored",
		    GDN_TRACE_TRACK_MAX, (unsigned long long)a->capped);
	if (a->steps_dropped)
		strvec_pushf(&out->warnings,
			     "more than %u distinct step annotations: %llu more were ignored",
			     GDN_TRACE_STEP_MAX, (unsigned long long)a->steps_dropped);
	if (a->unmatched)
		strvec_pushf(&out->warnings, "%llu B/E events had no partner and were ignored",
			     (unsigned long long)a->unmatched);
	if (a->invalid)
		strvec_pushf(&out->warnings,
			     "%llu events had no usable ts or dur (or a negative one) and were "
			     "ignored",
			     (unsigned long long)a->invalid);
}

/* B events still open at the end, then the events each stream still holds */
static void close_streams(struct gdn_trace_agg *a)
{
	for (size_t i = 0; i < a->ntracks; i++)
		a->unmatched += a->tracks[i].nb;
	for (size_t i = 0; i < a->nstreams; i++)
		flush_stream(a, &a->streams[i]);
}

/* labels the devices and tells whether the trace has XLA op tracks */
static bool label_devices(struct gdn_trace_agg *a, bool custom)
{
	bool xla = false;

	for (size_t i = 0; i < a->ntracks; i++) {
		struct track *t = &a->tracks[i];

		t->device = device_label(a, t);
		t->gpu_stream = is_gpu_stream(proc_name(a, t), thread_name(a, t));
		if (t->gpu_stream)
			a->procs[t->proc].gpu_streams = true;
	}
	for (size_t i = 0; i < a->ntracks; i++)
		if (!custom && is_xla_ops(a, &a->tracks[i]))
			xla = true;
	return xla;
}

static bool stream_wanted(struct gdn_trace_agg *a, const struct stream *s, bool xla)
{
	const struct track *t = &a->tracks[s->track];
	const char *tn = thread_name(a, t);

	if (!device_ok(a, t))
		return false;
	if (list_nonempty(a->threads) && !list_has(a->threads, tn, strlen(tn)))
		return false;
	if (list_nonempty(a->cats))
		return s->cls == 1;
	if (list_nonempty(a->threads))
		return true;
	if (xla)
		return is_xla_ops(a, t);
	return s->cls == 1;
}

static void select_streams(struct gdn_trace_agg *a, struct gdn_trace_summary *out, bool xla)
{
	for (size_t i = 0; i < a->nstreams; i++) {
		struct stream *s = &a->streams[i];
		const struct track *t = &a->tracks[s->track];
		bool sel = stream_wanted(a, s, xla);

		s->selected = sel;
		if (sel) {
			a->procs[t->proc].selected = true;
			a->late += s->late;
			a->deep += s->deep;
		}
	}
	/* every track of a process with a selected track counts for steps */
	for (size_t i = 0; i < a->ntracks; i++)
		a->tracks[i].selected_pid = a->procs[a->tracks[i].proc].selected;
	for (size_t i = 0; i < a->ntracks; i++) {
		const struct track *t = &a->tracks[i];
		bool any = false;

		for (int c = 0; c < 2; c++)
			any |= t->stream[c] != NONE && a->streams[t->stream[c]].selected;
		out->tracks_selected += any;
	}
}

/* the selected accumulators, keyed by acc index; returns the array, caller frees */
static struct flat *flatten_selected(struct gdn_trace_agg *a, struct gdn_trace_summary *out,
				     size_t *nr)
{
	struct flat *f = NULL;
	size_t nf = 0, falloc = 0;

	for (size_t i = 0; i < a->naccs; i++) {
		const struct acc *c = &a->accs[i];

		if (!a->streams[c->stream].selected)
			continue;
		ALLOC_GROW(f, nf + 1, falloc);
		f[nf].count = c->count;
		f[nf].total = c->total;
		f[nf].self = c->self;
		f[nf].key = (uint32_t)i; /* acc index, mapped below */
		nf++;
		out->events_selected += c->count;
		out->total += c->total;
		out->self += c->self;
	}
	*nr = nf;
	return f;
}

/* ops and families: with the most common category, source and tf_op */
static void group_ops(struct gdn_trace_agg *a, struct gdn_trace_summary *out, const struct flat *f,
		      struct flat *g, size_t n)
{
	struct build b = {NULL, 0, 0};

	for (int rows_ix = 0; rows_ix < 2; rows_ix++)
		for (int which = 1; which <= 3; which++) {
			for (size_t i = 0; i < n; i++) {
				const struct acc *c = &a->accs[f[i].key];
				const struct tuple *tp = &a->tuples[c->tuple];

				g[i] = f[i];
				g[i].key = rows_ix ? family_id(a, tp) : tp->name;
				g[i].attr = which == 1	 ? derived_category(a, tp, acc_gpu(a, c))
					    : which == 2 ? tp->src
							 : tp->tfop;
			}
			b.rows = rows_ix ? &out->families : &out->ops;
			b.which = which;
			b.cursor = 0;
			group(g, n, group_cb, &b);
		}
}

/* categories, sources, devices, framework ops */
static void group_attrs(struct gdn_trace_agg *a, struct gdn_trace_summary *out,
			const struct flat *f, struct flat *g, size_t n)
{
	struct build b = {NULL, 0, 0};

	for (int which = 0; which < 5; which++) {
		if (which == 3)
			continue; /* families: group_ops */
		for (size_t i = 0; i < n; i++) {
			const struct acc *c = &a->accs[f[i].key];
			const struct tuple *tp = &a->tuples[c->tuple];

			g[i] = f[i];
			g[i].attr = 0;
			g[i].key = which == 0	? derived_category(a, tp, acc_gpu(a, c))
				   : which == 1 ? tp->src
				   : which == 2 ? a->tracks[a->streams[c->stream].track].device
				   : which == 3 ? family_id(a, tp)
						: tp->tfop;
		}
		b.rows = which == 0   ? &out->categories
			 : which == 1 ? &out->sources
			 : which == 2 ? &out->devices
			 : which == 3 ? &out->families
				      : &out->framework_ops;
		b.which = 0;
		group(g, n, group_cb, &b);
	}
}

static void group_selected(struct gdn_trace_agg *a, struct gdn_trace_summary *out,
			   const struct flat *f, size_t n)
{
	struct flat *g = xmalloc(st_mult(n ? n : 1, sizeof(*g)));

	group_ops(a, out, f, g, n);
	group_attrs(a, out, f, g, n);
	free(g);
}

/* what the trace has, for a filter that matched nothing: every event */
static void group_available(struct gdn_trace_agg *a, struct gdn_trace_summary *out)
{
	struct build b = {NULL, 0, 0};
	struct flat *g = xmalloc(st_mult(a->naccs ? a->naccs : 1, sizeof(*g)));

	for (int which = 0; which < 3; which++) {
		size_t n = 0;

		for (size_t i = 0; i < a->naccs; i++) {
			const struct acc *c = &a->accs[i];
			const struct track *t = &a->tracks[a->streams[c->stream].track];
			uint32_t key = which == 0   ? t->device
				       : which == 1 ? (t->thread_name ? t->thread_name - 1 : 0)
						    : a->tuples[c->tuple].cat;

			if (!key)
				continue;
			g[n].key = key;
			g[n].attr = 0;
			g[n].count = c->count;
			g[n].total = g[n].self = c->total;
			n++;
		}
		b.rows = which == 0   ? &out->have_devices
			 : which == 1 ? &out->have_threads
				      : &out->have_cats;
		b.which = 0;
		group(g, n, group_cb, &b);
	}
	free(g);
}

static void resolve_all_rows(struct gdn_trace_agg *a, struct gdn_trace_summary *out)
{
	resolve_rows(a, &out->ops, true);
	resolve_rows(a, &out->categories, false);
	resolve_rows(a, &out->sources, false);
	resolve_rows(a, &out->devices, false);
	resolve_rows(a, &out->families, true);
	resolve_rows(a, &out->framework_ops, false);
	resolve_rows(a, &out->have_devices, false);
	resolve_rows(a, &out->have_threads, false);
	resolve_rows(a, &out->have_cats, false);
}

static void copy_counts(const struct gdn_trace_agg *a, struct gdn_trace_summary *out)
{
	out->events_total = a->elements;
	out->events_complete = a->complete;
	out->events_metadata = a->metadata;
	out->events_invalid = a->invalid;
	out->events_unmatched = a->unmatched;
	out->events_late = a->late;
	out->events_deep = a->deep;
	out->events_capped = a->capped;
}

/* the summary keeps the strings: move the table, with steps_from after it */
static void keep_strings(struct gdn_trace_agg *a, struct gdn_trace_summary *out,
			 const struct sbuf *from)
{
	struct strtab *keep = xmalloc(sizeof(*keep) + from->len + 1);

	*keep = a->st;
	memcpy((char *)(keep + 1), from->buf, from->len + 1);
	out->steps_from = (const char *)(keep + 1);
	out->priv = keep;
	memset(&a->st, 0, sizeof(a->st));
}

int gdn_trace_agg_finish(struct gdn_trace_agg *a, struct gdn_trace_summary *out,
			 struct gdn_err *err)
{
	struct flat *f = NULL;
	size_t nf = 0;
	struct sbuf from = SBUF_INIT;
	struct step_src src = {WIN_NONE, 0};
	bool custom = list_nonempty(a->cats) || list_nonempty(a->threads), xla;

	close_streams(a);
	xla = label_devices(a, custom);
	out->mode =
	    custom ? GDN_TRACE_MODE_CUSTOM : (xla ? GDN_TRACE_MODE_XLA : GDN_TRACE_MODE_KINETO);
	select_streams(a, out, xla);
	f = flatten_selected(a, out, &nf);
	group_selected(a, out, f, nf);
	if (!out->events_selected)
		group_available(a, out);
	find_steps(a, out, &from, &src);
	per_step(a, out, &src);
	/* interning is over: pointers into the pool are stable from here */
	out->steps_from = NULL;
	resolve_all_rows(a, out);
	copy_counts(a, out);
	if (!out->events_selected)
		out->mode = custom ? GDN_TRACE_MODE_CUSTOM : GDN_TRACE_MODE_NONE;
	add_warnings(a, out);
	keep_strings(a, out, &from);
	free(f);
	sbuf_release(&from);
	(void)err;
	return 0;
}

void gdn_trace_summary_init(struct gdn_trace_summary *s)
{
	memset(s, 0, sizeof(*s));
	strvec_init(&s->warnings);
	strvec_init(&s->hosts);
	s->steps_from = "";
}

void gdn_trace_summary_release(struct gdn_trace_summary *s)
{
	struct strtab *st = s->priv;

	free(s->path);
	free(s->ops.v);
	free(s->categories.v);
	free(s->sources.v);
	free(s->devices.v);
	free(s->families.v);
	free(s->framework_ops.v);
	free(s->have_devices.v);
	free(s->have_threads.v);
	free(s->have_cats.v);
	free(s->step_v);
	strvec_clear(&s->warnings);
	strvec_clear(&s->hosts);
	if (st) {
		strtab_release(st);
		free(st);
	}
	gdn_trace_summary_init(s);
}
