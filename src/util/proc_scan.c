/*
 * Processes we did not start, read from /proc (Linux; elsewhere nothing
 * is found): a process's start time, and whether some program runs in a
 * directory.
 */
#include "gdnctl/compat.h"
#include "gdnctl/proc.h"

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
