/*
 * The performance state file perf_state.json: the original's version-2
 * shape {"version": 2, "champion": {...}|null, "history": [...]}, read
 * strictly and written atomically (temporary file, fsync, rename).
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/perf.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define PERF_STATE_MAX ((size_t)256 << 20)

/* New reference: an empty state document. */
static json_t *empty_doc(void)
{
	return json_pack("{s:i, s:n, s:[]}", "version", GDN_PERF_STATE_VERSION, "champion",
			 "history");
}

void gdn_perf_state_init(struct gdn_perf_state *st, const char *path)
{
	st->path = path ? xstrdup(path) : NULL;
	st->doc = empty_doc();
	if (!st->doc)
		BUG("json_pack failed");
}

void gdn_perf_state_release(struct gdn_perf_state *st)
{
	FREE_AND_NULL(st->path);
	json_decref(st->doc);
	st->doc = NULL;
}

json_t *gdn_perf_state_champion(const struct gdn_perf_state *st)
{
	json_t *c = st->doc ? json_object_get(st->doc, "champion") : NULL; /* borrowed */

	return json_is_object(c) ? c : NULL;
}

static int check_doc(json_t *doc, const char *name, struct gdn_err *err)
{
	json_t *version = json_object_get(doc, "version"); /* borrowed */
	json_t *champion = json_object_get(doc, "champion");
	json_t *history = json_object_get(doc, "history");
	size_t i;
	json_t *rec;

	if (!json_is_object(doc))
		return gdn_err_set(err, GDN_EPARSE, "perf state '%s' is not a JSON object", name);
	if (!json_is_integer(version))
		return gdn_err_set(err, GDN_EPARSE, "perf state '%s' has no integer version", name);
	if (json_integer_value(version) != 1 && json_integer_value(version) != 2)
		return gdn_err_set(err, GDN_EPARSE,
				   "perf state '%s' has unknown version %" JSON_INTEGER_FORMAT
				   " (expected 2)",
				   name, json_integer_value(version));
	if (champion && !json_is_null(champion) && !json_is_object(champion))
		return gdn_err_set(err, GDN_EPARSE, "perf state '%s': champion is not an object",
				   name);
	if (history && !json_is_array(history))
		return gdn_err_set(err, GDN_EPARSE, "perf state '%s': history is not a list", name);
	json_array_foreach(history, i, rec)
	{
		if (!json_is_object(rec))
			return gdn_err_set(err, GDN_EPARSE,
					   "perf state '%s': history entry %zu is not an object",
					   name, i + 1);
	}
	return 0;
}

int gdn_perf_state_parse(struct gdn_perf_state *st, const char *buf, size_t len, const char *name,
			 struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr); /* new */
	int ret = 0;

	if (!doc) {
		ret = gdn_err_set(err, GDN_EPARSE, "perf state '%s' is not valid JSON: line %d: %s",
				  name, jerr.line, jerr.text);
		goto out;
	}
	ret = check_doc(doc, name, err);
	if (ret)
		goto out;
	json_object_set_new(doc, "version", json_integer(GDN_PERF_STATE_VERSION));
	if (!json_object_get(doc, "champion"))
		json_object_set_new(doc, "champion", json_null());
	if (!json_object_get(doc, "history"))
		json_object_set_new(doc, "history", json_array());
	json_decref(st->doc);
	st->doc = doc;
	doc = NULL;
out:
	json_decref(doc);
	return ret;
}

int gdn_perf_state_load(struct gdn_perf_state *st, const char *path, struct gdn_err *err)
{
	struct sbuf sb = SBUF_INIT;
	struct stat sbst;
	int ret = 0;

	gdn_perf_state_release(st);
	gdn_perf_state_init(st, path);
	if (stat(path, &sbst) && errno == ENOENT)
		goto out;
	ret = sbuf_read_file(&sb, path, PERF_STATE_MAX, err);
	if (ret)
		goto out;
	ret = gdn_perf_state_parse(st, sb.buf, sb.len, path, err);
out:
	sbuf_release(&sb);
	return ret;
}

int gdn_perf_state_save(const struct gdn_perf_state *st, struct gdn_err *err)
{
	char *text;
	struct sbuf sb = SBUF_INIT;
	int ret;

	if (!st->path || !st->doc)
		BUG("saving a perf state without a path");
	text = json_dumps(st->doc, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!text)
		BUG("json_dumps failed");
	sbuf_adds(&sb, text);
	sbuf_addch(&sb, '\n');
	ret = gdn_write_file_atomic(st->path, sb.buf, sb.len, err);
	sbuf_release(&sb);
	free(text);
	return ret;
}
