/*
 * Processes we did not start, read from /proc (Linux; elsewhere nothing
 * is found): a process's start time, and whether some program runs in a
 * directory.
 */
#include "gdnctl/compat.h"
#include "gdnctl/proc.h"
#include "gdnctl/xalloc.h"

long long gdn_proc_started(pid_t pid)
{
	long long started = -1;
#ifdef __linux__
	char path[64], buf[1024];
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (p && p[1] == ' ' && p[2] == 'Z')
		return -1; /* a zombie: it has ended */
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		started = strtoll(p + 1, NULL, 10);
#else
	(void)pid;
#endif
	return started;
}

long long gdn_proc_started_now(void)
{
#ifdef __linux__
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
		return -1;
	/* /proc/PID/stat rounds down to a tick: one tick of margin */
	return (long long)ts.tv_sec * hz + (long long)ts.tv_nsec / (1000000000LL / hz) - 1;
#else
	return -1;
#endif
}

#ifdef __linux__
static bool name_matches(const char *comm, const char *const *names)
{
	for (; *names; names++)
		if (!strncmp(comm, *names, strlen(*names)))
			return true;
	return false;
}
#endif

bool gdn_proc_running_in(const char *const *names, const char *dir, const char *dir_prefix)
{
	bool found = false;
#ifdef __linux__
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && !found && (de = readdir(d))) {
		char path[300], cwd[PATH_MAX], comm[64] = "";
		ssize_t n;
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]) ||
		    strtol(de->d_name, NULL, 10) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		if (!name_matches(comm, names))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cwd", de->d_name);
		n = readlink(path, cwd, sizeof(cwd) - 1);
		if (n <= 0)
			continue;
		cwd[n] = '\0';
		found = !strcmp(cwd, dir) ||
			(dir_prefix && !strncmp(cwd, dir_prefix, strlen(dir_prefix)));
	}
	if (d)
		closedir(d);
#else
	(void)names;
	(void)dir;
	(void)dir_prefix;
#endif
	return found;
}

#ifdef __linux__
/* Read a small /proc file whole (NUL-terminated; at most size - 1 bytes); its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -1;
	while (got < size - 1) {
		ssize_t n = read(fd, buf + got, size - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Parse /proc/PID/stat: state, ppid, pgrp and start time. */
static bool read_stat(pid_t pid, struct gdn_proc_info *pi)
{
	char path[64], buf[1024];
	const char *p;
	char state;
	long ppid, pgrp;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return false;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3)
		return false;
	pi->pid = pid;
	pi->ppid = (pid_t)ppid;
	pi->pgid = (pid_t)pgrp;
	pi->zombie = state == 'Z' || state == 'X';
	pi->started = -1;
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		pi->started = strtoll(p + 1, NULL, 10);
	return true;
}
#endif

void gdn_proc_each(gdn_proc_each_fn fn, void *payload)
{
#ifdef __linux__
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid();

	while (d && (de = readdir(d))) {
		struct gdn_proc_info pi;
		char *end;
		long pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self || !read_stat((pid_t)pid, &pi))
			continue;
		fn(&pi, payload);
	}
	if (d)
		closedir(d);
#else
	(void)fn;
	(void)payload;
#endif
}

bool gdn_proc_env_has(pid_t pid, const char *entry)
{
	bool found = false;
#ifdef __linux__
	char path[64], buf[8192], carry[512] = "";
	size_t want = strlen(entry), clen = 0;
	int fd;

	if (!want || want >= sizeof(carry))
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/*
	 * NUL-separated "K=V" entries, read in chunks: an entry that spans
	 * two chunks is put together in `carry` (only its first `want` + 1
	 * bytes matter).
	 */
	while (!found) {
		ssize_t n = read(fd, buf, sizeof(buf));
		size_t i = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		while (i < (size_t)n && !found) {
			const char *nul = memchr(buf + i, '\0', (size_t)n - i);
			size_t len = nul ? (size_t)(nul - (buf + i)) : (size_t)n - i;

			if (clen < sizeof(carry)) {
				size_t take =
				    len < sizeof(carry) - clen ? len : sizeof(carry) - clen;

				memcpy(carry + clen, buf + i, take);
				clen += take;
			}
			if (nul) {
				found = clen == want && !memcmp(carry, entry, want);
				clen = 0;
				i += len + 1;
			} else {
				i += len;
			}
		}
	}
	if (!found && clen == want && !memcmp(carry, entry, want))
		found = true;
	close(fd);
#else
	(void)pid;
	(void)entry;
#endif
	return found;
}

char *gdn_proc_argv0(pid_t pid)
{
#ifdef __linux__
	char path[64], buf[512];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	n = read_small(path, buf, sizeof(buf));
	if (n > 0 && buf[0])
		return xstrdup(buf);
	snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
	n = read_small(path, buf, sizeof(buf));
	if (n > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (buf[0])
			return xstrdup(buf);
	}
#else
	(void)pid;
#endif
	return NULL;
}
