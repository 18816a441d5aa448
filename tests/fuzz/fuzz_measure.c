/*
 * Fuzz what the loop reads out of a profile run's output to find its W&B
 * run (a run URL on wandb.ai or under WANDB_BASE_URL, the run name W&B
 * printed) and the TPU slice key of the cluster filter: any bytes must
 * give a well-formed answer or none, never crash or leak.
 */
#include "gdnctl/compat.h"
#include "gdnctl/targets.h"
#include "gdnctl/measure.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_path(const char *path)
{
	/* "ENTITY/PROJECT/RUN": three non-empty parts */
	const char *a = strchr(path, '/'), *b = a ? strchr(a + 1, '/') : NULL;

	if (!a || !b || a == path || b == a + 1 || !b[1] || strchr(b + 1, '/'))
		BUG("run path '%s' is not ENTITY/PROJECT/RUN", path);
}

/* Whether s occurs in text[0, size) somewhere a NUL byte does not follow (a cut value). */
static bool occurs_whole(const char *text, size_t size, const char *s)
{
	size_t n = strlen(s);

	for (const char *p = text; (p = memmem(p, size - (size_t)(p - text), s, n)); p++)
		if (p + n == text + size || p[n] != '\0')
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const bases[] = {NULL, "http://127.0.0.1:8080", "http://h/x/"};
	const char *out = (const char *)data;
	char *text = xstrndup(out, size);
	struct sbuf key = SBUF_INIT;
	char *name;

	for (size_t i = 0; i < sizeof(bases) / sizeof(*bases); i++) {
		char *url = NULL, *path = gdn_measure_find_run_url(out, size, bases[i], &url);

		if (!path != !url)
			BUG("a run path without its URL or the reverse");
		if (path)
			check_path(path);
		if (url && !occurs_whole(out, size, url))
			BUG("run URL '%s' is cut short by a NUL byte", url);
		free(path);
		free(url);
	}
	name = gdn_measure_find_run_name(out, size);
	if (name && !*name)
		BUG("an empty run name");
	if (name && !occurs_whole(out, size, name))
		BUG("run name '%s' is cut short by a NUL byte", name);
	free(name);
	gdn_tpu_slice_key(text, &key);
	for (size_t i = 0; i < key.len; i++)
		if (!islower((unsigned char)key.buf[i]) && !isdigit((unsigned char)key.buf[i]) &&
		    key.buf[i] != '_')
			BUG("slice key '%s' has '%c'", key.buf, key.buf[i]);
	sbuf_release(&key);
	free(text);
	return 0;
}
