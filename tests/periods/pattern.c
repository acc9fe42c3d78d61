/*
 * pattern.c — records a pattern whose intervals are known by construction,
 * for the `reef periods` / `reef activities` tests.
 *
 *   ./pattern [rounds]
 *
 * NTHREADS threads (ids 0..NTHREADS-1) each do, for round r in
 * 0..rounds-1:
 *   ROUND(t, r)
 *   ENTER(t, r, 0) ENTER(t, r, 1) LEAVE(t, r, 1) ENTER(t, r, 2) LEAVE(t, r, 2)
 *   LEAVE(t, r, 0)
 *   LOCK(A) LOCK(B) UNLOCK(B) UNLOCK(A)         (A, B shared by all threads)
 *   LABEL("even"|"odd", r / 2.0)
 * with busy work of growing length between events, then a LEAVE with no
 * ENTER and an ENTER that is never left. So per thread: 3 * rounds nested
 * sections (each depth-0 section holds two depth-1/2 sections), 2 * rounds
 * lock holds per mutex, one unmatched end, one unfinished begin.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pattern.h"

#define NTHREADS 3

static pthread_mutex_t mutex_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mutex_b = PTHREAD_MUTEX_INITIALIZER;
static unsigned rounds = 50;
static volatile uint64_t sink;

static void work(unsigned n)
{
	unsigned i;

	for (i = 0; i < n * 50; i++)
		sink += i;
}

static void *thread(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	uint32_t r;

	for (r = 0; r < rounds; r++) {
		reef_p_round(t, r);
		work(r);
		reef_p_enter(t, r, 0);
		work(r + t);
		reef_p_enter(t, r, 1);
		work(r);
		reef_p_leave(t, r, 1);
		reef_p_enter(t, r, 2);
		work(2 * r);
		reef_p_leave(t, r, 2);
		work(t);
		reef_p_leave(t, r, 0);

		pthread_mutex_lock(&mutex_a);
		reef_p_lock(&mutex_a, t);
		work(r);
		pthread_mutex_lock(&mutex_b);
		reef_p_lock(&mutex_b, t);
		work(r + 1);
		reef_p_unlock(&mutex_b, t);
		pthread_mutex_unlock(&mutex_b);
		reef_p_unlock(&mutex_a, t);
		pthread_mutex_unlock(&mutex_a);

		reef_p_label(r % 2 ? "odd" : "even", r / 2.0);
	}
	reef_p_leave(t, rounds, 9);
	reef_p_enter(t, rounds, 9);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[NTHREADS];
	unsigned i;

	if (argc > 1)
		rounds = (unsigned)atoi(argv[1]);
	for (i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, thread, (void *)(uintptr_t)i);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	return 0;
}
