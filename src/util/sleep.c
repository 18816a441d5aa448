/* Sleeps that know about Ctrl-C (declared in gdnctl/compat.h, next to gdn_now_ms). */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"

/* The longest single nap of gdn_sleep_interruptible: how late a set flag is noticed. */
#define SLEEP_TICK_MS 100

int gdn_sleep_interruptible(long ms)
{
	int64_t end = gdn_add_sat_i64(gdn_now_ms(), ms > 0 ? ms : 0);

	for (;;) {
		int64_t left = end - gdn_now_ms();

		if (gdn_proc_interrupted())
			return GDN_EINTR;
		if (left <= 0)
			return 0;
		/* poll() as a sleep: a signal (EINTR) just ends this nap early */
		poll(NULL, 0, left > SLEEP_TICK_MS ? SLEEP_TICK_MS : (int)left);
	}
}

void gdn_sleep_cleanup(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (ms > 0 && nanosleep(&ts, &ts) && errno == EINTR && !gdn_proc_interrupted())
		;
}
