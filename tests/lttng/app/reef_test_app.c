/*
 * Test application for reef: emits reef_test:* LTTng-UST events from several
 * threads. Every payload value is a deterministic function of the thread
 * index and the iteration number, so that a recorded trace can be checked
 * field by field (only timestamps, CPU ids and contexts vary between runs).
 *
 * Usage: reef_test_app [ITERATIONS]   (default 10)
 *
 * REEF_TEST_APP_DELAY_US=N makes each thread sleep N microseconds after each
 * iteration (a program that runs for a while, for the live tests).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reef_test_tp.h"

#define NTHREADS 3

struct worker {
	pthread_t tid;
	int index;
	int iterations;
	unsigned delay_us;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[32];
	int iter;

	snprintf(name, sizeof(name), "worker-%d", w->index);
	lttng_ust_tracepoint(reef_test, thread_start, w->index, name);

	for (iter = 0; iter < w->iterations; iter++) {
		int32_t a32[4] = { iter, -iter, INT32_MIN, INT32_MAX };
		uint8_t a8[3] = { (uint8_t) w->index, (uint8_t) iter, 0xFF };
		uint16_t seq16[4] = { (uint16_t) iter, (uint16_t) w->index, 0xFFFF, 7 };
		int64_t seq64[3] = { INT64_MIN, -1, (int64_t) iter * 1000000000000LL };
		/* network byte order, as lttng_ust_field_array_network() expects */
		uint16_t net16[2] = { htobe16((uint16_t) (0x0100 + iter)), htobe16(0xABCD) };
		char text[64];
		int text_len;

		text_len = snprintf(text, sizeof(text), "t%d/i%d \"q\" \\ \t?", w->index, iter);

		lttng_ust_tracepoint(reef_test, integers, w->index, iter);
		lttng_ust_tracepoint(reef_test, hex_network, w->index, iter);
		lttng_ust_tracepoint(reef_test, floats, w->index, iter);
		lttng_ust_tracepoint(reef_test, strings, w->index, name);
		lttng_ust_tracepoint(reef_test, arrays, w->index, iter, a32, a8,
			seq16, (size_t) (iter % 5), net16, seq64, text, (size_t) text_len);
		lttng_ust_tracepoint(reef_test, enums, w->index, iter);
		if (w->delay_us)
			usleep(w->delay_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct worker workers[NTHREADS];
	int iterations = 10;
	const char *delay = getenv("REEF_TEST_APP_DELAY_US");
	int i, ret;

	if (argc > 1) {
		iterations = atoi(argv[1]);
		if (iterations < 0) {
			fprintf(stderr, "reef_test_app: bad iteration count '%s'\n", argv[1]);
			return 2;
		}
	}

	lttng_ust_tracepoint(reef_test, empty);
	lttng_ust_tracepoint(reef_test, special_floats, INFINITY, NAN);

	for (i = 0; i < NTHREADS; i++) {
		workers[i].index = i;
		workers[i].iterations = iterations;
		workers[i].delay_us = delay ? (unsigned) strtoul(delay, NULL, 10) : 0;
		ret = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);
		if (ret) {
			fprintf(stderr, "reef_test_app: pthread_create: %s\n", strerror(ret));
			return 1;
		}
	}
	for (i = 0; i < NTHREADS; i++) {
		ret = pthread_join(workers[i].tid, NULL);
		if (ret) {
			fprintf(stderr, "reef_test_app: pthread_join: %s\n", strerror(ret));
			return 1;
		}
	}

	lttng_ust_tracepoint(reef_test, empty);
	printf("reef_test_app: %d threads x %d iterations done\n", NTHREADS, iterations);
	return 0;
}
