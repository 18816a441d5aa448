#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/json.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

json_t *gdn_json_string_lossy(const char *s)
{
	json_t *j;
	char *copy;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	copy = xstrdup(s);
	for (unsigned char *p = (unsigned char *)copy; *p; p++)
		if (*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

json_t *gdn_json_doc(const char *schema)
{
	json_t *doc = json_object();

	json_object_set_new(doc, "schema", json_string(schema));
	return doc;
}

static int dump_cb(const char *buffer, size_t size, void *data)
{
	sbuf_add(data, buffer, size);
	return 0;
}

void gdn_json_dump_precision(struct sbuf *out, const json_t *doc, int digits)
{
	json_dump_callback(doc, dump_cb, out,
			   JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(digits));
	sbuf_addch(out, '\n');
}

void gdn_json_dump(struct sbuf *out, const json_t *doc)
{
	gdn_json_dump_precision(out, doc, 17);
}

void gdn_json_round_reals(json_t *v, int decimals)
{
	double scale = pow(10.0, decimals), x;
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, key, item) gdn_json_round_reals(item, decimals);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) gdn_json_round_reals(item, decimals);
	} else if (json_is_real(v)) {
		x = json_real_value(v);
		/* past 1e9 the decimals are below a double's precision anyway */
		if (isfinite(x) && fabs(x) < 1e9)
			json_real_set(v, round(x * scale) / scale);
	}
}
