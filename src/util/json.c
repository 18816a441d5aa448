#include "gdnctl/compat.h"
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

void gdn_json_dump(struct sbuf *out, const json_t *doc)
{
	json_dump_callback(doc, dump_cb, out,
			   JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	sbuf_addch(out, '\n');
}
