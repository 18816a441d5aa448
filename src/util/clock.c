/* Time: the monotonic clock, interruptible sleeps, civil dates (declared in gdnctl/compat.h). */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"

/* The longest single nap of gdn_sleep_interruptible: how late a set flag is noticed. */
#define SLEEP_TICK_MS 100

int64_t gdn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gdn_days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

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
