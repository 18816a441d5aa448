/*
 * Benchmark of matmul(): R timed runs of an n x n product (default
 * n=256, R=15), each right after a run of the unchanged starting kernel
 * matmul_reference(). Times are this thread's CPU time
 * (clock_gettime(CLOCK_THREAD_CPUTIME_ID)), so other programs on a loaded
 * machine disturb them little. Prints metric lines the hill-climb loop
 * reads: `throughput/speedup=` (best reference run / best matmul run: the
 * two are measured interleaved, so a shared host that slows this machine
 * down for a few seconds, which can double both times, leaves the ratio
 * alone), `throughput/gflops=` and `throughput/reference_gflops=` (from the
 * best runs) and `throughput/wall_ms=` (best wall-clock matmul run). Writes a gzip Chrome trace of its phases,
 * out/trace.json.gz: one step per run on a `Steps` track and its ops
 * (matmul, checksum) on an `XLA Ops` track of a `/device:CPU:0` process,
 * the layout `gdnctl trace summary` reads, timed with
 * clock_gettime(CLOCK_MONOTONIC).
 *
 * usage: bench [N [RUNS [TRACE]]]
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>
#include "matmul.h"

#define MAX_RUNS 100

struct span {
	const char *name, *category;
	int tid;
	double ts_us, dur_us;
};

static struct span spans[3 * MAX_RUNS + 1];
static int nspans;

static double clock_us(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static double now_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
}

static void add_span(const char *name, const char *category, int tid, double t0, double t1)
{
	struct span *s = &spans[nspans++];

	s->name = name;
	s->category = category;
	s->tid = tid;
	s->ts_us = t0;
	s->dur_us = t1 - t0;
}

static int write_trace(const char *path, double origin)
{
	gzFile f = gzopen(path, "wb");
	int step = 0;

	if (!f)
		return -1;
	gzprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
	gzprintf(f, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\","
		    "\"args\":{\"name\":\"/device:CPU:0\"}},\n");
	gzprintf(f, "{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\","
		    "\"args\":{\"name\":\"Steps\"}},\n");
	gzprintf(f, "{\"ph\":\"M\",\"pid\":1,\"tid\":2,\"name\":\"thread_name\","
		    "\"args\":{\"name\":\"XLA Ops\"}}");
	for (int i = 0; i < nspans; i++) {
		const struct span *s = &spans[i];

		if (s->tid == 1)
			gzprintf(f,
				 ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,"
				 "\"name\":\"%d\"}",
				 s->ts_us - origin, s->dur_us, step++);
		else
			gzprintf(f,
				 ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":%.3f,\"dur\":%.3f,"
				 "\"name\":\"%s\",\"args\":{\"hlo_category\":\"%s\"}}",
				 s->ts_us - origin, s->dur_us, s->name, s->category);
	}
	gzprintf(f, "\n]}\n");
	return gzclose(f) == Z_OK ? 0 : -1;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 256;
	int runs = argc > 2 ? atoi(argv[2]) : 15;
	const char *trace = argc > 3 ? argv[3] : "out/trace.json.gz";
	double ms[MAX_RUNS], ref[MAX_RUNS], wall[MAX_RUNS], origin, t0, t1, t2, c0, best, flops;
	size_t nn;
	float *a, *b, *c, *cref;
	volatile double sink = 0;

	if (n < 1 || n > 4096 || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: bench [N (1..4096) [RUNS (1..%d) [TRACE]]]\n", MAX_RUNS);
		return 2;
	}
	nn = (size_t)n * n;
	a = malloc(nn * sizeof(*a));
	b = malloc(nn * sizeof(*b));
	c = malloc(nn * sizeof(*c));
	cref = malloc(nn * sizeof(*cref));
	if (!a || !b || !c || !cref) {
		fprintf(stderr, "bench: out of memory\n");
		return 1;
	}
	origin = now_us();
	for (size_t i = 0; i < nn; i++) {
		a[i] = (float)(i % 7) - 3.0f;
		b[i] = (float)(i % 5) * 0.5f;
	}
	add_span("fill", "init", 2, origin, now_us());
	for (int r = 0; r < runs; r++) {
		double sum = 0;

		c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
		matmul_reference(n, a, b, cref);
		ref[r] = (clock_us(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3;
		t0 = now_us();
		c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
		matmul(n, a, b, c);
		ms[r] = (clock_us(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3;
		t1 = now_us();
		for (size_t i = 0; i < nn; i++)
			sum += c[i];
		sink = sink + sum;
		t2 = now_us();
		add_span("step", NULL, 1, t0, t2);
		add_span("matmul", "matmul", 2, t0, t1);
		add_span("checksum", "reduce", 2, t1, t2);
		wall[r] = (t1 - t0) / 1e3;
	}
	qsort(ms, (size_t)runs, sizeof(ms[0]), cmp_double);
	qsort(wall, (size_t)runs, sizeof(wall[0]), cmp_double);
	qsort(ref, (size_t)runs, sizeof(ref[0]), cmp_double);
	best = ms[0];
	flops = 2.0 * n * (double)n * n;
	printf("bench: n=%d runs=%d best=%.3f ms median=%.3f ms (CPU time) checksum=%.6g\n", n,
	       runs, best, ms[runs / 2], (double)sink / runs);
	printf("throughput/best_ms=%.4f\n", best);
	printf("throughput/median_ms=%.4f\n", ms[runs / 2]);
	printf("throughput/wall_ms=%.4f\n", wall[0]);
	printf("throughput/gflops=%.4f\n", flops / (best * 1e6));
	printf("throughput/reference_gflops=%.4f\n", flops / (ref[0] * 1e6));
	printf("throughput/speedup=%.4f\n", ref[0] / best);
	if (!strncmp(trace, "out/", 4) && mkdir("out", 0777) && errno != EEXIST) {
		perror("bench: out");
		return 1;
	}
	if (write_trace(trace, origin)) {
		fprintf(stderr, "bench: cannot write %s\n", trace);
		return 1;
	}
	printf("bench: trace written to %s\n", trace);
	free(a);
	free(b);
	free(c);
	free(cref);
	return 0;
}
