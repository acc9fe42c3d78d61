/*
 * live.c — the traced program of the live-streaming tests and benchmark
 * (events of examples/demo.reef).
 *
 *   live burst THREADS N   each thread records N worker:ITEM events in a
 *                          tight loop; prints "attempted TOTAL"
 *   live ticks N MS        records app:STOP(i) for i < N, MS ms apart;
 *                          prints "tick I NS" (CLOCK_REALTIME just before
 *                          the event) for each, flushed
 *   live paced THREADS N US  each thread records N worker:ITEM events,
 *                          spinning US microseconds between them
 *   live config-ticks N MS the same, live streaming enabled by reef_init()
 *                          (listen "127.0.0.1:0", wait 20 s, 50 ms flush)
 *   live rate N            one thread, N worker:ITEM events in a tight
 *                          loop; prints "events N ns ELAPSED cpu_ns THREAD_CPU
 *                          maxrss_kb KB"
 *   live steady RATE SECS  one thread records data:TICK events at RATE per
 *                          second for SECS seconds (batches of 1000 on a
 *                          schedule, spinning between them); prints "events
 *                          N ns ELAPSED busy_ns RECORDING late_ms LATE
 *                          maxrss_kb KB" (RECORDING: time inside the
 *                          batches; LATE: how far behind the schedule it
 *                          fell at worst)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo.h"

static unsigned long long n_events, pace_ns;

static unsigned long long now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Peak resident memory of this program (VmHWM; getrusage's ru_maxrss
 * would include the parent's before exec). */
static long peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

static void *burst(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	unsigned long long i;
	for (i = 0; i < n_events; i++)
		reef_worker_item(id, (uint32_t)i, i, (int32_t)i, 0.5, i & 1);
	return NULL;
}

static void *paced(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	unsigned long long i;
	for (i = 0; i < n_events; i++) {
		unsigned long long t = now_ns(CLOCK_MONOTONIC);
		reef_worker_item(id, (uint32_t)i, i, (int32_t)i, 0.5, i & 1);
		while (now_ns(CLOCK_MONOTONIC) - t < pace_ns) {
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "paced")) {
		unsigned t, nthreads = (unsigned)atoi(argv[2]);
		pthread_t th[64];
		if (nthreads < 1 || nthreads > 64)
			return 2;
		n_events = strtoull(argv[3], NULL, 0);
		pace_ns = strtoull(argv[4], NULL, 0) * 1000u;
		reef_data_tick(0);
		for (t = 0; t < nthreads; t++)
			pthread_create(&th[t], NULL, paced, (void *)(uintptr_t)t);
		for (t = 0; t < nthreads; t++)
			pthread_join(th[t], NULL);
		printf("attempted %llu\n", n_events * nthreads + 1);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "burst")) {
		unsigned t, nthreads = (unsigned)atoi(argv[2]);
		pthread_t th[64];
		if (nthreads < 1 || nthreads > 64)
			return 2;
		n_events = strtoull(argv[3], NULL, 0);
		reef_data_tick(0); /* initialises the library (and waits for a client) */
		for (t = 0; t < nthreads; t++)
			pthread_create(&th[t], NULL, burst, (void *)(uintptr_t)t);
		for (t = 0; t < nthreads; t++)
			pthread_join(th[t], NULL);
		printf("attempted %llu\n", n_events * nthreads + 1);
		return 0;
	}
	if (argc == 4 && (!strcmp(argv[1], "ticks") || !strcmp(argv[1], "config-ticks"))) {
		unsigned i, n = (unsigned)atoi(argv[2]);
		long ms = atol(argv[3]);
		struct timespec gap = { ms / 1000, (ms % 1000) * 1000000L };
		if (!strcmp(argv[1], "config-ticks")) {
			/* Live streaming from the configuration struct. */
			struct reef_config cfg;
			reef_config_default(&cfg);
			cfg.listen = "127.0.0.1:0";
			cfg.listen_wait_ms = 20000;
			cfg.live_flush_ms = 50;
			if (reef_init(&cfg))
				return 3;
		}
		for (i = 0; i < n; i++) {
			unsigned long long t = now_ns(CLOCK_REALTIME);
			reef_app_stop(i);
			printf("tick %u %llu\n", i, t);
			fflush(stdout);
			nanosleep(&gap, NULL);
		}
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "rate")) {
		unsigned long long t0, t1, c0, c1;
		n_events = strtoull(argv[2], NULL, 0);
		reef_data_tick(0);
		t0 = now_ns(CLOCK_MONOTONIC);
		c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		burst(NULL);
		c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		t1 = now_ns(CLOCK_MONOTONIC);
		printf("events %llu ns %llu cpu_ns %llu maxrss_kb %ld\n", n_events, t1 - t0, c1 - c0,
		       peak_rss_kb());
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "steady")) {
		unsigned long long rate = strtoull(argv[2], NULL, 0), secs = strtoull(argv[3], NULL, 0);
		unsigned long long total = rate * secs, n = 0, t0, t, busy = 0, late = 0, j;
		t0 = now_ns(CLOCK_MONOTONIC);
		while (n < total) {
			unsigned long long due;
			t = now_ns(CLOCK_MONOTONIC);
			/* the time the next batch is due */
			due = t0 + (unsigned long long)((double)n / (double)rate * 1e9);
			if (t < due)
				continue;
			if (t - due > late)
				late = t - due;
			for (j = 0; j < 1000 && n < total; j++, n++)
				reef_data_tick((uint32_t)n);
			busy += now_ns(CLOCK_MONOTONIC) - t;
		}
		t = now_ns(CLOCK_MONOTONIC);
		printf("events %llu ns %llu busy_ns %llu late_ms %llu maxrss_kb %ld\n", n, t - t0, busy,
		       late / 1000000u, peak_rss_kb());
		return 0;
	}
	fprintf(stderr, "usage: live burst THREADS N | live ticks N MS | live rate N | live steady RATE SECS\n");
	return 2;
}
