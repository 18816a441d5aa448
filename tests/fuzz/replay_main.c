/*
 * Replays a fuzz corpus without libFuzzer: every file under the given
 * directories (or the files given) is fed to LLVMFuzzerTestOneInput.
 * Targets that care about chunk boundaries split their input themselves.
 * Crashes and sanitizer reports fail the test.
 */
#include "gdnctl/compat.h"
#include <dirent.h>
#include "gdnctl/sbuf.h"
#include "gdnctl/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, int *count)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (sbuf_read_file(&sb, path, 64 << 20, &err)) {
		fprintf(stderr, "replay: %s\n", err.msg);
		sbuf_release(&sb);
		return 1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)sb.buf, sb.len);
	sbuf_release(&sb);
	(*count)++;
	return 0;
}

static int run_path(const char *path, int *count)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int ret = 0;

	if (stat(path, &st)) {
		fprintf(stderr, "replay: cannot stat '%s': %s\n", path, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path, count);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		struct sbuf child = SBUF_INIT;

		if (de->d_name[0] == '.')
			continue;
		sbuf_addf(&child, "%s/%s", path, de->d_name);
		ret |= run_path(child.buf, count);
		sbuf_release(&child);
	}
	closedir(d);
	return ret;
}

int main(int argc, char **argv)
{
	int ret = 0, count = 0;

	for (int i = 1; i < argc; i++)
		ret |= run_path(argv[i], &count);
	if (!count) {
		fprintf(stderr, "replay: no corpus inputs found\n");
		return 1;
	}
	printf("replayed %d inputs\n", count);
	return ret;
}
