/* The reader benchmark's trace producer: two threads, each recording
 * ITERATIONS times a 4 x u64 event and a string event. Built twice: with
 * LTTng-UST (-DUSE_LTTNG, reader_tp.h) and with libreef (reader.reef). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef USE_LTTNG
#include "reader_tp.h"
#define QUAD(a, b, c, d) tracepoint(reef_reader, quad, a, b, c, d)
#define MSG(s) tracepoint(reef_reader, msg, s)
#else
#include "reader.h"
#define QUAD(a, b, c, d) reef_reader_quad(a, b, c, d)
#define MSG(s) reef_reader_msg(s)
#endif

static uint64_t iterations;

static const char *const texts[4] = {
	"hello", "reader benchmark", "a somewhat longer message, with a comma", "x",
};

static void *work(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg << 40;
	for (uint64_t i = 0; i < iterations; i++) {
		QUAD(base + i, i * 3, i ^ 0x5555, (uint64_t)1 << (i & 63));
		MSG(texts[i & 3]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s ITERATIONS_PER_THREAD\n", argv[0]);
		return 2;
	}
	iterations = strtoull(argv[1], NULL, 10);
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, work, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
