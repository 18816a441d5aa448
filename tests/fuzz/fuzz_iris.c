/*
 * Fuzz the parsers of Iris job CLI output (src/backend/iris_parse.c): the
 * job id of a submission, `job describe`, `job list --json`, `job --help`,
 * job states and the prefix of `job logs` lines. The input is copied
 * without a terminating NUL, so reading past `len` is a sanitizer error.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/iris.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_status(const struct gdn_job_status *st)
{
	if (strnlen(st->native, sizeof(st->native)) >= sizeof(st->native) ||
	    strnlen(st->message, sizeof(st->message)) >= sizeof(st->message))
		BUG("status strings are not terminated");
}

static void each_line(const char *text, size_t size)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	size_t off = 0;

	while (off < size) {
		const char *line = text + off, *nl = memchr(line, '\n', size - off);
		size_t len = nl ? (size_t)(nl - line) : size - off;
		const char *d;
		size_t n;

		if (gdn_iris_log_data(line, len, &d, &n) && (d < line || d + n > line + len))
			BUG("log data outside its line");
		gdn_iris_state(line, len, &st);
		check_status(&st);
		off += len + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xmalloc(size ? size : 1);
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_iris_cli cli;
	char *id = NULL;
	long pre;

	memcpy(text, data, size);
	if (!gdn_iris_parse_submit(text, size, &id, &err) &&
	    (!gdn_iris_valid_id(id, strlen(id)) || strlen(id) > GDN_IRIS_ID_MAX))
		BUG("bad job id");
	free(id);
	gdn_iris_parse_describe(text, size, &st, &pre, &err);
	check_status(&st);
	gdn_iris_parse_list_json(text, size, "/alice/x", &st, &pre, &err);
	check_status(&st);
	gdn_iris_parse_help(text, size, &cli, &err);
	each_line(text, size);
	free(text);
	return 0;
}
