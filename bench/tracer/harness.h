/*
 * harness.h — the timing loop shared by the bench programs.
 *
 * Each program defines `trace_one(uint64_t i)` (one event of the tracer
 * under test) and optional per-thread setup/teardown, then calls
 * bench_main(). Every thread records one warm-up event (registration,
 * buffer allocation), waits at a barrier, then times ITERS events with
 * CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID. Prints one line:
 *
 *   WALL THREAD_CPU PROCESS_CPU
 *
 * WALL: mean over threads of wall-clock ns/event; THREAD_CPU: mean over
 * threads of the thread's CPU ns/event (time on a core only: insensitive to
 * the thread being descheduled on a busy machine); PROCESS_CPU: the whole
 * process's user + system CPU time (every thread, including a tracer's
 * consumer thread writing the trace meanwhile) from the start barrier until
 * every thread has finished its loop, divided by THREADS x ITERS. Work left
 * for after the loop, and work of other processes (LTTng's consumer
 * daemon), is not included. The line is printed at exit, after the
 * tracer's own exit handlers have run.
 *
 *   prog THREADS ITERS
 */
#ifndef BENCH_HARNESS_H
#define BENCH_HARNESS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static void trace_one(uint64_t i);
static void thread_setup(unsigned index);
static void thread_teardown(unsigned index);

static pthread_barrier_t bench_barrier;
static uint64_t bench_iters;
static double bench_ns[64], bench_cpu_ns[64];
static unsigned bench_threads;
static double bench_wall, bench_cpu;

static uint64_t bench_clock(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t bench_now(void)
{
	return bench_clock(CLOCK_MONOTONIC);
}

static double bench_proc0, bench_proc1;

static double bench_process_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

/* Registered before any tracer initialises, so it runs after their exit
 * handlers (atexit runs handlers in reverse order). */
static void bench_report(void)
{
	printf("%.3f %.3f %.3f\n", bench_wall, bench_cpu,
	       (bench_proc1 - bench_proc0) / ((double)bench_threads * (double)bench_iters));
}

static void *bench_thread(void *arg)
{
	unsigned index = (unsigned)(uintptr_t)arg;
	uint64_t i, t0, t1, c0, c1;
	thread_setup(index);
	trace_one(0);
	pthread_barrier_wait(&bench_barrier);
	if (index == 0)
		bench_proc0 = bench_process_cpu();
	c0 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
	t0 = bench_now();
	for (i = 0; i < bench_iters; i++)
		trace_one(i);
	t1 = bench_now();
	c1 = bench_clock(CLOCK_THREAD_CPUTIME_ID);
	bench_ns[index] = (double)(t1 - t0) / (double)bench_iters;
	bench_cpu_ns[index] = (double)(c1 - c0) / (double)bench_iters;
	pthread_barrier_wait(&bench_barrier);
	if (index == 0)
		bench_proc1 = bench_process_cpu();
	thread_teardown(index);
	return NULL;
}

static int bench_main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1, i;
	pthread_t th[64];
	double sum = 0, sum_cpu = 0;
	bench_iters = argc > 2 ? strtoull(argv[2], NULL, 0) : 1000000;
	if (n < 1 || n > 64)
		n = 1;
	bench_threads = n;
	atexit(bench_report);
	pthread_barrier_init(&bench_barrier, NULL, n);
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, bench_thread, (void *)(uintptr_t)i);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < n; i++) {
		sum += bench_ns[i];
		sum_cpu += bench_cpu_ns[i];
	}
	bench_wall = sum / n;
	bench_cpu = sum_cpu / n;
	return 0;
}

#endif
