/*
 * harness.h — the timing loop shared by the bench programs.
 *
 * Each program defines `trace_one(uint64_t i)` (one event of the tracer
 * under test) and optional per-thread setup/teardown, then calls
 * bench_main(). Every thread records one warm-up event (registration,
 * buffer allocation), waits at a barrier, then times ITERS events with
 * CLOCK_MONOTONIC. Prints the mean over threads of ns/event.
 *
 *   prog THREADS ITERS
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void trace_one(uint64_t i);
static void thread_setup(unsigned index);
static void thread_teardown(unsigned index);

static pthread_barrier_t bench_barrier;
static uint64_t bench_iters;
static double bench_ns[64];

static uint64_t bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *bench_thread(void *arg)
{
	unsigned index = (unsigned)(uintptr_t)arg;
	uint64_t i, t0, t1;
	thread_setup(index);
	trace_one(0);
	pthread_barrier_wait(&bench_barrier);
	t0 = bench_now();
	for (i = 0; i < bench_iters; i++)
		trace_one(i);
	t1 = bench_now();
	bench_ns[index] = (double)(t1 - t0) / (double)bench_iters;
	thread_teardown(index);
	return NULL;
}

static int bench_main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1, i;
	pthread_t th[64];
	double sum = 0;
	bench_iters = argc > 2 ? strtoull(argv[2], NULL, 0) : 1000000;
	if (n < 1 || n > 64)
		n = 1;
	pthread_barrier_init(&bench_barrier, NULL, n);
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, bench_thread, (void *)(uintptr_t)i);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < n; i++)
		sum += bench_ns[i];
	printf("%.3f\n", sum / n);
	return 0;
}

#endif
