/*
 * Fuzz the parsers of Ray job CLI and Marin wrapper output
 * (src/backend/marin.c): the submission id in submit output, status
 * lines of `ray job status`, Marin's wait-job lines and list-jobs JSON.
 * The input is copied without a terminating NUL, so reading past `len`
 * is a sanitizer error.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/marin.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void each_line(const char *text, size_t size)
{
	struct gdn_job_status st = {0};
	size_t off = 0;

	while (off < size) {
		const char *line = text + off, *nl = memchr(line, '\n', size - off);
		size_t len = nl ? (size_t)(nl - line) : size - off;

		gdn_ray_parse_status_line(line, len, NULL, &st);
		gdn_ray_parse_status_line(line, len, "raysubmit_abc", &st);
		gdn_marin_parse_wait_line(line, len, NULL, &st);
		gdn_marin_parse_wait_line(line, len, "ray-run-demo", &st);
		if (strnlen(st.native, sizeof(st.native)) >= sizeof(st.native) ||
		    strnlen(st.message, sizeof(st.message)) >= sizeof(st.message))
			BUG("status strings are not terminated");
		off += len + 1;
	}
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
	char *text = xmalloc(size ? size : 1);
	struct gdn_job_status st = {0};
	struct gdn_err err = GDN_ERR_INIT;
	enum gdn_job_state state;
	char *id;

	memcpy(text, data, size);
	id = gdn_ray_parse_submission_id(text, size);
	if (id && (!*id || strlen(id) > GDN_RAY_ID_MAX || !occurs_whole(text, size, id)))
		BUG("bad submission id");
	free(id);
	gdn_ray_state_from_name(text, size, &state);
	each_line(text, size);
	st.exit_code = -1;
	gdn_ray_parse_job_list(text, size, "raysubmit_abc", &st, &err);
	free(text);
	return 0;
}
