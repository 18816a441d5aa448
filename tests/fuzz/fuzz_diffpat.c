/*
 * Fuzz the suspicious-diff patterns (src/loop/integrity_diff.c): the input
 * is a unified diff scanned with the default patterns, and its lines are
 * also parsed as NAME:SIDE:GLOB:REGEX patterns and scanned with.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gdn_diffpats d = {0}, mine = {0};
	struct strvec hits = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *text = xstrndup((const char *)data, size), *save = NULL;

	gdn_diffpats_add_defaults(&d);
	gdn_diffpat_scan(&d, (const char *)data, size, &hits);
	if (hits.nr > d.nr)
		BUG("%zu matches for %zu patterns", hits.nr, d.nr);
	for (size_t i = 0; i < hits.nr; i++)
		if (!strstr(hits.v[i], " in "))
			BUG("a match without its file: %s", hits.v[i]);
	strvec_clear(&hits);
	for (char *l = strtok_r(text, "\n", &save); l && mine.nr < 8;
	     l = strtok_r(NULL, "\n", &save))
		if (gdn_diffpat_parse(&mine, l, &err) && !err.msg[0])
			BUG("pattern error without a message");
	gdn_diffpat_scan(&mine, (const char *)data, size, &hits);
	strvec_clear(&hits);
	gdn_diffpats_release(&mine);
	gdn_diffpats_release(&d);
	free(text);
	return 0;
}
