/*
 * demo.c — libreef example: worker threads that take a mutex around a unit
 * of work, tracing a few subsystems.
 *
 *   ./demo [threads [items]]
 *
 * With DEMO_EXPECT=FILE it also writes, for the tests, each event it traced
 * the way babeltrace2 prints its name and payload.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static uint64_t shared_total;
static unsigned items = 1000;
static FILE *expect;
static pthread_mutex_t expect_lock = PTHREAD_MUTEX_INITIALIZER;

#define EXPECT(...)                                              \
	do {                                                     \
		if (expect) {                                    \
			pthread_mutex_lock(&expect_lock);        \
			fprintf(expect, __VA_ARGS__);            \
			pthread_mutex_unlock(&expect_lock);      \
		}                                                \
	} while (0)

static const char *phase_name(unsigned p)
{
	return p == TRACE_ENUM_PHASE_INIT ? "INIT" : p == TRACE_ENUM_PHASE_WORK ? "WORK" : "DONE";
}

static void *worker(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	uint64_t sum = 0;
	unsigned i;
	char name[16];

	snprintf(name, sizeof(name), "worker-%u", id);
	pthread_setname_np(pthread_self(), name);

	reef_worker_begin(id, TRACE_ENUM_PHASE_WORK);
	EXPECT("worker:BEGIN: { id = %u, ph = ( \"%s\" : container = %u ) }\n", id,
	       phase_name(TRACE_ENUM_PHASE_WORK), TRACE_ENUM_PHASE_WORK);
	for (i = 0; i < items; i++) {
		uint64_t value = (uint64_t)id * 1000000u + i;
		int32_t delta = (int32_t)i - (int32_t)(items / 2);
		double ratio = (double)i / 4.0;
		int odd = i & 1;

		pthread_mutex_lock(&mutex);
		reef_lock_acquire(&mutex, id);
		shared_total += value;
		reef_worker_item(id, i, value, delta, ratio, odd);
		reef_lock_release(&mutex, id);
		pthread_mutex_unlock(&mutex);

		EXPECT("lock:ACQUIRE: { mutex = 0x%" PRIX64 ", id = %u }\n", (uint64_t)(uintptr_t)&mutex, id);
		EXPECT("worker:ITEM: { id = %u, item = %u, value = %llu, delta = %d, ratio = %g, odd = ( \"%s\" : container = %d ) }\n",
		       id, i, (unsigned long long)value, delta, ratio, odd ? "true" : "false", odd);
		EXPECT("lock:RELEASE: { mutex = 0x%" PRIX64 ", id = %u }\n", (uint64_t)(uintptr_t)&mutex, id);
		sum += value;
	}
	reef_worker_end(id, sum, TRACE_ENUM_PHASE_DONE);
	EXPECT("worker:END: { id = %u, sum = %llu, ph = ( \"%s\" : container = %u ) }\n", id,
	       (unsigned long long)sum, phase_name(TRACE_ENUM_PHASE_DONE), TRACE_ENUM_PHASE_DONE);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
	pthread_t th[64];
	unsigned i;
	uint16_t fixed[3] = { 1, 2, 65535 };
	int8_t seq[4] = { -1, 0, 1, 127 };

	if (argc > 2)
		items = (unsigned)atoi(argv[2]);
	if (nthreads > 64)
		nthreads = 64;
	if (getenv("DEMO_EXPECT"))
		expect = fopen(getenv("DEMO_EXPECT"), "w");

	reef_app_start(nthreads, items, "demo \"quoted\"");
	EXPECT("app:START: { nthreads = %u, items = %u, name = \"demo \\\"quoted\\\"\" }\n", nthreads, items);
	reef_data_sample(fixed, 4, seq, 0.5f);
	EXPECT("data:SAMPLE: { fixed = [ [0] = 1, [1] = 2, [2] = 65535 ], seq_len = 4, seq = [ [0] = -1, [1] = 0, [2] = 1, [3] = 127 ], gain = 0.5 }\n");
	reef_data_tick(7);
	EXPECT("data:TICK: { arg = 7 }\n");

	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);

	reef_app_stop(shared_total);
	EXPECT("app:STOP: { total = %llu }\n", (unsigned long long)shared_total);
	if (expect)
		fclose(expect);
	printf("demo: %u threads x %u items, trace in %s\n", nthreads, items,
	       reef_trace_dir() ? reef_trace_dir() : "(not tracing)");
	return 0;
}
