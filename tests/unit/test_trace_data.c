/*
 * Data-driven trace cases: tests/data/trace/<case>/ holds `input.json` or
 * `input.json.gz`, optionally `opts` (lines "device X", "thread X", "cat X",
 * "window N"), and either `expected` (a canonical dump of the summary) or
 * `error` (the one-line error). Every case runs with chunk sizes 1, 2, 3,
 * 7, 4096 and whole, which must all agree. GDNCTL_UPDATE_EXPECTED=1
 * rewrites the expected files (review them before committing).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

static void dump_ps(struct sbuf *out, const char *name, gdn_ps v)
{
	unsigned __int128 m = v < 0 ? (unsigned __int128)-v : (unsigned __int128)v;

	sbuf_addf(out, " %s=%s%llu.%06llu", name, v < 0 ? "-" : "",
		  (unsigned long long)(m / 1000000), (unsigned long long)(m % 1000000));
}

static void dump_rows(struct sbuf *out, const char *what, const struct gdn_trace_rows *rows)
{
	for (size_t i = 0; i < rows->nr; i++) {
		const struct gdn_trace_row *r = &rows->v[i];

		sbuf_addf(out, "%s \"%s\" count=%llu", what, r->key, (unsigned long long)r->count);
		dump_ps(out, "total_us", r->total);
		dump_ps(out, "self_us", r->self);
		if (!strcmp(what, "op"))
			sbuf_addf(out, " category=\"%s\" source=\"%s\" tf_op=\"%s\"", r->category,
				  r->source, r->tf_op);
		sbuf_addch(out, '\n');
	}
}

static void dump(const struct gdn_trace_summary *s, struct sbuf *out)
{
	static const char *const modes[] = {"none", "xla", "kineto", "custom"};

	sbuf_addf(out, "mode %s\n", modes[s->mode]);
	sbuf_addf(out,
		  "events total=%llu complete=%llu selected=%llu metadata=%llu invalid=%llu "
		  "unmatched=%llu late=%llu deep=%llu\n",
		  (unsigned long long)s->events_total, (unsigned long long)s->events_complete,
		  (unsigned long long)s->events_selected, (unsigned long long)s->events_metadata,
		  (unsigned long long)s->events_invalid, (unsigned long long)s->events_unmatched,
		  (unsigned long long)s->events_late, (unsigned long long)s->events_deep);
	sbuf_addf(out, "tracks %llu", (unsigned long long)s->tracks_selected);
	dump_ps(out, "total_us", s->total);
	dump_ps(out, "self_us", s->self);
	sbuf_addf(out, "\nsteps %llu \"%s\"%s\n", (unsigned long long)s->steps, s->steps_from,
		  s->truncated ? " truncated" : "");
	dump_rows(out, "op", &s->ops);
	dump_rows(out, "category", &s->categories);
	dump_rows(out, "source", &s->sources);
	dump_rows(out, "device", &s->devices);
	for (size_t i = 0; i < s->warnings.nr; i++)
		sbuf_addf(out, "warning %s\n", s->warnings.v[i]);
}

static int run_case(const struct sbuf *in, size_t chunk, const struct gdn_trace_opts *o,
		    struct sbuf *out)
{
	struct gdn_trace *t = gdn_trace_new(o);
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	int ret = 0;

	gdn_trace_summary_init(&s);
	sbuf_reset(out);
	for (size_t off = 0; off < in->len && !ret; off += chunk) {
		size_t n = in->len - off < chunk ? in->len - off : chunk;
		char *copy = xmalloc(n);

		memcpy(copy, in->buf + off, n);
		ret = gdn_trace_feed(t, copy, n, &err);
		free(copy);
	}
	if (!ret)
		ret = gdn_trace_finish(t, &s, &err);
	if (ret)
		sbuf_addf(out, "%s\n", err.msg);
	else
		dump(&s, out);
	gdn_trace_summary_release(&s);
	gdn_trace_free(t);
	return ret;
}

static bool read_optional(const char *dir, const char *name, struct sbuf *sb)
{
	struct sbuf path = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	bool ok;

	sbuf_addf(&path, "%s/%s", dir, name);
	sbuf_reset(sb);
	ok = !access(path.buf, F_OK) && !sbuf_read_file(sb, path.buf, 1 << 24, &err);
	sbuf_release(&path);
	return ok;
}

static void one_case(const char *dir, const char *name)
{
	struct sbuf in = SBUF_INIT, optsb = SBUF_INIT, want = SBUF_INIT, got = SBUF_INIT,
		    first = SBUF_INIT;
	struct strvec devices = STRVEC_INIT, threads = STRVEC_INIT, cats = STRVEC_INIT,
		      lines = STRVEC_INIT;
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	size_t chunks[] = {1, 2, 3, 7, 4096, 0};
	bool is_error, update = getenv("GDNCTL_UPDATE_EXPECTED") != NULL;
	int first_ret = 0;

	if (!read_optional(dir, "input.json", &in) && !read_optional(dir, "input.json.gz", &in))
		fail_msg("%s: no input.json or input.json.gz", name);
	if (read_optional(dir, "opts", &optsb)) {
		strvec_split(&lines, optsb.buf, '\n');
		for (size_t i = 0; i < lines.nr; i++) {
			const char *l = lines.v[i], *sp = strchr(l, ' ');

			if (!sp)
				fail_msg("%s/opts: bad line '%s'", name, l);
			if (!strncmp(l, "device ", 7))
				strvec_push(&devices, sp + 1);
			else if (!strncmp(l, "thread ", 7))
				strvec_push(&threads, sp + 1);
			else if (!strncmp(l, "cat ", 4))
				strvec_push(&cats, sp + 1);
			else if (!strncmp(l, "window ", 7))
				o.window = (unsigned)strtoul(sp + 1, NULL, 10);
			else
				fail_msg("%s/opts: bad line '%s'", name, l);
		}
	}
	o.devices = devices.v;
	o.threads = threads.v;
	o.cats = cats.v;
	o.token_max = 4096;
	is_error = read_optional(dir, "error", &want);
	if (!is_error && !read_optional(dir, "expected", &want) && !update)
		fail_msg("%s: no expected or error file", name);
	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
		int ret = run_case(&in, chunks[i] ? chunks[i] : in.len + 1, &o, &got);

		if (!i) {
			first_ret = ret;
			sbuf_add(&first, got.buf, got.len);
		} else if (strcmp(got.buf, first.buf)) {
			fail_msg("%s: chunk size %zu differs from 1:\n%s\nvs\n%s", name, chunks[i],
				 got.buf, first.buf);
		}
	}
	if (update) {
		unit_write_mem(dir, first_ret ? "error" : "expected", first.buf, first.len, 0644);
	} else {
		if (!!first_ret != is_error)
			fail_msg("%s: %s", name,
				 first_ret ? first.buf : "succeeded, expected an error");
		if (strcmp(first.buf, want.buf))
			fail_msg("%s: got\n%s\nwant\n%s", name, first.buf, want.buf);
	}
	strvec_clear(&devices);
	strvec_clear(&threads);
	strvec_clear(&cats);
	strvec_clear(&lines);
	sbuf_release(&in);
	sbuf_release(&optsb);
	sbuf_release(&want);
	sbuf_release(&got);
	sbuf_release(&first);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void all_cases(void **state)
{
	const char *src = getenv("GDNCTL_SOURCE_DIR");
	struct sbuf root = SBUF_INIT, dir = SBUF_INIT;
	struct strvec names = STRVEC_INIT;
	DIR *d;
	struct dirent *de;

	sbuf_addf(&root, "%s/tests/data/trace", src && *src ? src : GDNCTL_SOURCE_DATADIR);
	d = opendir(root.buf);
	if (!d)
		fail_msg("cannot open %s", root.buf);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			strvec_push(&names, de->d_name);
	closedir(d);
	qsort(names.v, names.nr, sizeof(*names.v), cmp_names);
	assert_true(names.nr >= 10);
	for (size_t i = 0; i < names.nr; i++) {
		sbuf_reset(&dir);
		sbuf_addf(&dir, "%s/%s", root.buf, names.v[i]);
		one_case(dir.buf, names.v[i]);
	}
	print_message("%zu trace data cases\n", names.nr);
	strvec_clear(&names);
	sbuf_release(&root);
	sbuf_release(&dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(all_cases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
