/*
 * The red-team project's benchmark: RUNS steps (default 8) at n=N (default 64) on fixed inputs,
 * each right after a run of reference.c. Prints throughput/speedup (best
 * reference CPU time / best kernel CPU time, this thread's clock) and
 * writes out/trace.json.gz: a Steps track and the ops the kernel reported
 * (with model_flops and bytes_accessed) on an XLA Ops track of
 * /device:CPU:0. The CPU is this project's device: the trace's clock is
 * the process's CPU time (the time spent computing, whichever thread did
 * it, and not the time other programs of a shared host took), in units of
 * the reference matmul. A real device's clock keeps its pace; a shared
 * CPU's does not: on the 2-core VMs this runs on, the same binary's steps
 * took 90 ms in one run and 127 ms in the next, seconds apart (a busy
 * sibling hyperthread, a host that takes the VM away), and the loop
 * compares traces taken seconds to minutes apart. So right before each
 * step, REF_CALLS reference matmuls are timed on the same clock, and that
 * step's times are scaled by REF_NOMINAL_US over their mean (the trace's
 * steps are laid end to end, without the reference runs between them).
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

#define DEVICE_CLOCK   CLOCK_PROCESS_CPUTIME_ID
#define MAX_SPANS      4096
#define MAX_RUNS       100
#define REF_CALLS      16    /* reference matmuls before each step: the CPU's pace */
#define REF_NOMINAL_US 100.0 /* one reference matmul at n=64, idle, in us */
static struct span {
	const char *name;
	int tid, step;
	double t0, t1, flops, bytes;
} spans[MAX_SPANS];
static int nspans, open_span = -1, cur_step;
static double pace[MAX_RUNS]; /* step i's scale: REF_NOMINAL_US / its reference's mean */

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
	spans[nspans] = (struct span){name, tid, cur_step, clock_us(DEVICE_CLOCK), 0, flops, bytes};
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

/*
 * Step i's spans, from the start of its step span, scaled by pace[i]; the
 * steps follow each other from 0 (a span before the first step starts at 0).
 */
static int write_trace(const char *path)
{
	gzFile f = gzopen(path, "wb");
	double base = 0, t0 = 0, next = 0;
	int step = -1;

	if (!f)
		return -1;
	gzprintf(f,
		 "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\","
		 "\"args\":{\"name\":\"/device:CPU:0\"}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":1,"
		 "\"name\":\"thread_name\",\"args\":{\"name\":\"Steps\"}},\n{\"ph\":\"M\","
		 "\"pid\":1,\"tid\":2,\"name\":\"thread_name\",\"args\":{\"name\":\"XLA Ops\"}}");
	for (int i = 0; i < nspans; i++) {
		const struct span *s = &spans[i];
		double k, ts, dur;

		if (s->tid == 1) { /* a step: its spans follow it */
			step = s->step, base = next, t0 = s->t0;
			next = base + (s->t1 - s->t0) * pace[step];
		}
		k = step >= 0 ? pace[step] : 1;
		ts = step >= 0 ? base + (s->t0 - t0) * k : 0;
		dur = (s->t1 - s->t0) * k;
		if (s->tid == 1)
			gzprintf(f,
				 ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,"
				 "\"name\":\"%d\"}",
				 ts, dur, s->step);
		else
			gzprintf(f,
				 ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":%.3f,\"dur\":%.3f,"
				 "\"name\":\"%s\",\"args\":{\"model_flops\":\"%.0f\","
				 "\"bytes_accessed\":\"%.0f\"}}",
				 ts, dur, s->name, s->flops, s->bytes);
	}
	gzprintf(f, "\n]}\n");
	return gzclose(f) == Z_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64, runs = argc > 2 ? atoi(argv[2]) : 8;
	float *a, *b, *c, *cref;
	double best = 1e300, ref = 1e300, mean_pace = 0;
	volatile double sink = 0;

	if (n < 1 || n > 1024 || runs < 1 || runs > MAX_RUNS)
		return 2;
	a = malloc(sizeof(float) * n * n), b = malloc(sizeof(float) * n * n);
	c = malloc(sizeof(float) * n * n), cref = malloc(sizeof(float) * n * n);
	for (int i = 0; i < n * n; i++) {
		a[i] = (float)(i % 7) - 3.0f;
		b[i] = (float)(i % 5) * 0.5f;
	}
	for (int r = 0; r < runs; r++) {
		double c0 = clock_us(CLOCK_THREAD_CPUTIME_ID), sum = 0, d0;
		int st, ck;

		matmul_reference(n, a, b, cref);
		if (clock_us(CLOCK_THREAD_CPUTIME_ID) - c0 < ref)
			ref = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
		d0 = clock_us(DEVICE_CLOCK);
		for (int i = 0; i < REF_CALLS; i++)
			matmul_reference(n, a, b, cref);
		pace[r] = REF_NOMINAL_US * REF_CALLS / (clock_us(DEVICE_CLOCK) - d0 + 1e-3);
		mean_pace += pace[r] / runs;
		cur_step = r;
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
	printf("bench: n=%d runs=%d best=%.3f us reference=%.3f us checksum=%g device pace "
	       "x%.3f\n",
	       n, runs, best, ref, (double)sink, mean_pace);
	printf("throughput/speedup=%.6g\n", ref / best);
	mkdir("out", 0777);
	if (write_trace("out/trace.json.gz"))
		return 1;
	return 0;
}
