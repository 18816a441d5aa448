/*
 * First include of every source file: feature macros, the system headers
 * the project uses, small helpers, and finally banned.h (which must come
 * after every system header that declares a banned function).
 */
#ifndef GDNCTL_COMPAT_H
#define GDNCTL_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <limits.h>
#include <ctype.h>
#include <time.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/time.h>
#include <dirent.h>
#include <regex.h>
#include <math.h>
#include <pthread.h>
#include <sys/syscall.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define GDN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define GDN_NORETURN	 __attribute__((noreturn))
#define GDN_UNUSED	 __attribute__((unused))
#define GDN_NOINLINE	 __attribute__((noinline))
#else
#define GDN_PRINTF(f, a)
#define GDN_NORETURN
#define GDN_UNUSED
#define GDN_NOINLINE
#endif

/* Broken invariant: print where, then abort. Never for user input. */
GDN_NORETURN void gdn_bug(const char *file, int line, const char *fmt, ...) GDN_PRINTF(3, 4);
#define BUG(...) gdn_bug(__FILE__, __LINE__, __VA_ARGS__)

/* Monotonic clock in milliseconds. */
int64_t gdn_now_ms(void);
/* Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian, m 1..12); thread-safe. */
int64_t gdn_days_from_civil(int64_t y, int m, int d);
/*
 * Sleep ms milliseconds unless gdnctl is interrupted (src/util/sleep.c):
 * gdn_proc_interrupted() is checked before, at least every 100 ms during,
 * and at the end of the sleep. Returns 0, or GDN_EINTR (gdnctl/err.h) when
 * interrupted.
 */
int gdn_sleep_interruptible(long ms);
/*
 * Sleep ms milliseconds, also after an interruption, so that a cleanup
 * after Ctrl-C still waits between its retries; a signal that arrives
 * while gdnctl is interrupted (a second Ctrl-C) cuts the sleep short.
 */
void gdn_sleep_cleanup(long ms);

/* a + b, saturated at INT64_MIN and INT64_MAX: sums of untrusted figures never overflow. */
static inline int64_t gdn_add_sat_i64(int64_t a, int64_t b)
{
	int64_t sum;

	if (!__builtin_add_overflow(a, b, &sum))
		return sum;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

#include "gdnctl/banned.h"

#endif
