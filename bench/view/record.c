/*
 * record.c — records a large libreef trace for bench/view: a server-like
 * program whose threads handle "requests", each a req:BEGIN, a few
 * lock:ACQUIRE/RELEASE pairs around io:READ or io:WRITE, some computing
 * between events, and a req:END; now and then a stat:SAMPLE.
 *
 *   REEF_OUTPUT=DIR REEF_MODE=block ./record [BYTES] [WORKERS]
 *
 * BYTES (default 1 GiB; suffix K/M/G) is the amount of event data to
 * record (headers and payloads; the stream files are a little larger);
 * WORKERS (default 6) long-lived threads share the work with a series of
 * short-lived ones that the main thread starts one after the other (each
 * records 1/1000 of BYTES), so the trace has a few long streams and about
 * a hundred short ones. Run it in block mode so that nothing is dropped.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define H REEF_EVENT_HEADER_SIZE

static uint64_t target;
static _Atomic uint64_t recorded, requests;
static _Atomic int stop;
static pthread_mutex_t locks[4] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
				   PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static const char *paths[] = {"/", "/index.html", "/api/v1/items", "/api/v1/items/42", "/static/app.js",
			      "/static/style.css", "/login", "/api/v1/users/me", "/favicon.ico",
			      "/api/v1/search?q=reef"};
static volatile uint64_t sink;

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Some computing between events: n rounds of a multiply-add chain. */
static void spin(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	sink = x;
}

/* Handles requests until `budget` bytes were recorded (0: until stop). */
static void serve(uint64_t seed, uint64_t budget)
{
	uint64_t s = seed | 1, mine = 0, unflushed = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed) && (!budget || mine < budget)) {
		uint64_t r = next_rand(&s);
		uint64_t id = atomic_fetch_add_explicit(&requests, 1, memory_order_relaxed);
		const char *path = paths[r % 10];
		uint64_t bytes = 0;
		reef_req_begin(id, (uint8_t)((r >> 8) % 4), path);
		unsigned steps = 1 + (unsigned)((r >> 16) % 7);
		uint64_t n = H + 10 + strlen(path);
		for (unsigned i = 0; i < steps; i++) {
			uint64_t q = next_rand(&s);
			pthread_mutex_t *m = &locks[q % 4];
			pthread_mutex_lock(m);
			reef_lock_acquire(m, (uint32_t)(q >> 40) % 2000);
			uint32_t size = 512u << ((q >> 8) % 6);
			if ((q >> 20) % 3)
				reef_io_read((uint32_t)(3 + (q >> 24) % 16), (q >> 28) % (1u << 30), size);
			else
				reef_io_write((uint32_t)(3 + (q >> 24) % 16), (q >> 28) % (1u << 30), size);
			spin((q >> 32) % 128);
			reef_lock_release(m);
			pthread_mutex_unlock(m);
			bytes += size;
			n += (H + 12) + (H + 16) + (H + 8);
			spin((q >> 48) % 256);
		}
		spin(500 + (r >> 32) % 4000);
		reef_req_end(id, (r >> 20) % 50 ? 200 : 500, bytes);
		n += H + 20;
		if (r % 64 == 0) {
			reef_stat_sample((double)(r % 1000) / 100.0, (uint32_t)(r % 37));
			n += H + 12;
		}
		mine += n;
		unflushed += n;
		if (unflushed >= 1 << 20) {
			if (atomic_fetch_add_explicit(&recorded, unflushed, memory_order_relaxed) + unflushed >= target)
				atomic_store(&stop, 1);
			unflushed = 0;
		}
	}
	if (atomic_fetch_add_explicit(&recorded, unflushed, memory_order_relaxed) + unflushed >= target)
		atomic_store(&stop, 1);
}

struct job {
	unsigned n;
	uint64_t budget;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	char name[16];
	snprintf(name, sizeof(name), j->budget ? "task-%u" : "worker-%u", j->n % 1000);
	pthread_setname_np(pthread_self(), name);
	serve(0x9E3779B97F4A7C15u * (j->n + 1), j->budget);
	return NULL;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (uint64_t)v;
}

int main(int argc, char **argv)
{
	target = argc > 1 ? parse_size(argv[1]) : 1ull << 30;
	unsigned nworkers = argc > 2 ? (unsigned)atoi(argv[2]) : 6;
	if (!target || nworkers < 1 || nworkers > 256) {
		fprintf(stderr, "usage: record [BYTES] [WORKERS]\n");
		return 2;
	}
	pthread_t th[256];
	struct job jobs[256];
	reef_app_start(nworkers, target);
	for (unsigned i = 0; i < nworkers; i++) {
		jobs[i] = (struct job){i, 0};
		if (pthread_create(&th[i], NULL, worker, &jobs[i])) {
			perror("pthread_create");
			return 1;
		}
	}
	/* short-lived tasks, one at a time, until the target is reached */
	for (unsigned k = 0; !atomic_load(&stop); k++) {
		pthread_t t;
		struct job j = {k, target / 1000};
		if (pthread_create(&t, NULL, worker, &j)) {
			perror("pthread_create");
			return 1;
		}
		pthread_join(t, NULL);
	}
	for (unsigned i = 0; i < nworkers; i++)
		pthread_join(th[i], NULL);
	reef_app_stop(atomic_load(&requests));
	printf("recorded %" PRIu64 " bytes of events, %" PRIu64 " requests\n", atomic_load(&recorded),
	       atomic_load(&requests));
	return 0;
}
