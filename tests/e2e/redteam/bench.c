/*
 * The red-team project's benchmark: RUNS steps (default 8) at n=N (default 64) on fixed inputs,
 * each right after a run of reference.c. Prints throughput/speedup (best
 * reference CPU time / best kernel CPU time, this thread's clock) and
 * writes out/trace.json.gz: a Steps track and the ops the kernel reported
 * (with model_flops and bytes_accessed) on an XLA Ops track of
 * /device:CPU:0. The CPU is this project's device: the trace's clock is
 * the process's CPU time (the time spent computing, whichever thread did
 * it, and not the time other programs of a shared host took).
 * usage: bench [N [RUNS]]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>
#include "dev.h"
#include "kernel.h"

void matmul_reference(int n, const float *a, const float *b, float *c);

#define DEVICE_CLOCK CLOCK_PROCESS_CPUTIME_ID
#define MAX_SPANS    4096
static struct span {
	const char *name;
	int tid;
	double t0, t1, flops, bytes;
} spans[MAX_SPANS];
static int nspans, open_span = -1;

static double clock_us(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int span(const char *name, int tid, double flops, double bytes)
{
	if (nspans >= MAX_SPANS)
		return -1;
	spans[nspans] = (struct span){name, tid, clock_us(DEVICE_CLOCK), 0, flops, bytes};
	return nspans++;
}

void dev_op_begin(const char *name, double flops, double bytes)
{
	open_span = span(name, 2, flops, bytes);
}

void dev_op_end(void)
{
	if (open_span >= 0)
		spans[open_span].t1 = clock_us(DEVICE_CLOCK);
	open_span = -1;
}

static int write_trace(const char *path, double origin)
{
	gzFile f = gzopen(path, "wb");
	int step = 0;

	if (!f)
		return -1;
	gzprintf(f,
		 "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\","
		 "\"args\":{\"name\":\"/device:CPU:0\"}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":1,"
		 "\"name\":\"thread_name\",\"args\":{\"name\":\"Steps\"}},\n{\"ph\":\"M\","
		 "\"pid\":1,\"tid\":2,\"name\":\"thread_name\",\"args\":{\"name\":\"XLA Ops\"}}");
	for (int i = 0; i < nspans; i++) {
		const struct span *s = &spans[i];

		if (s->tid == 1)
			gzprintf(f,
				 ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,"
				 "\"name\":\"%d\"}",
				 s->t0 - origin, s->t1 - s->t0, step++);
		else
			gzprintf(f,
				 ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":%.3f,\"dur\":%.3f,"
				 "\"name\":\"%s\",\"args\":{\"model_flops\":\"%.0f\","
				 "\"bytes_accessed\":\"%.0f\"}}",
				 s->t0 - origin, s->t1 - s->t0, s->name, s->flops, s->bytes);
	}
	gzprintf(f, "\n]}\n");
	return gzclose(f) == Z_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64, runs = argc > 2 ? atoi(argv[2]) : 8;
	float *a, *b, *c, *cref;
	double best = 1e300, ref = 1e300, origin = clock_us(DEVICE_CLOCK);
	volatile double sink = 0;

	if (n < 1 || n > 1024 || runs < 1 || runs > 100)
		return 2;
	a = malloc(sizeof(float) * n * n), b = malloc(sizeof(float) * n * n);
	c = malloc(sizeof(float) * n * n), cref = malloc(sizeof(float) * n * n);
	for (int i = 0; i < n * n; i++) {
		a[i] = (float)(i % 7) - 3.0f;
		b[i] = (float)(i % 5) * 0.5f;
	}
	for (int r = 0; r < runs; r++) {
		double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), sum = 0;
		int st, ck;

		matmul_reference(n, a, b, cref);
		if (clock_us(CLOCK_THREAD_CPUTIME_ID) - c0 < ref)
			ref = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
		st = span("step", 1, 0, 0);
		c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
		matmul(n, a, b, c);
		if (clock_us(CLOCK_THREAD_CPUTIME_ID) - c0 < best)
			best = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
		ck = span("checksum", 2, 0, 4.0 * n * n);
		for (int i = 0; i < n * n; i++)
			sum += c[i];
		sink = sink + sum;
		if (ck >= 0)
			spans[ck].t1 = clock_us(DEVICE_CLOCK);
		if (st >= 0)
			spans[st].t1 = clock_us(DEVICE_CLOCK);
	}
	if (best < 0.001)
		best = 0.001;
	printf("bench: n=%d runs=%d best=%.3f us reference=%.3f us checksum=%g\n", n, runs, best,
	       ref, (double)sink);
	printf("throughput/speedup=%.6g\n", ref / best);
	mkdir("out", 0777);
	if (write_trace("out/trace.json.gz", origin))
		return 1;
	return 0;
}
