/*
 * sharing.c — checks that two threads' fast paths write no common cache line.
 *
 * sharing_events.c (every event kind of types.reef) is compiled with
 * -fsanitize=thread and linked without the TSan run time; this file, not
 * instrumented, defines the __tsan_* hooks the compiler calls before every
 * load and store of that file. Two threads register (one untimed event
 * each), then record EVENTS rounds while the hooks note, per thread, the
 * 64-byte lines read and the lines written. A line written by one thread and
 * read or written by the other is reported and the program exits 1.
 *
 * Sanity checks, so that a hook that records nothing cannot pass: each
 * thread must have written its own reef__tls line and at least
 * MIN_WRITTEN lines (its packets), and read the line of reef__shared that
 * holds the state bytes. Exit 2 if not.
 *
 *   sharing [EVENTS]      (REEF_OUTPUT names the trace directory)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reef.h"
#include "sharing.h"

#define LINE_SHIFT 6
#define SET_BITS 20
#define MIN_WRITTEN 1000

enum { READ, WRITE };

/* Open-addressing set of line numbers (stored + 1; 0 is empty). */
struct set {
	uint64_t *slot;
	size_t count;
	int full;
};

static struct set sets[2][2]; /* [thread][READ/WRITE] */
static __thread int recording = -1; /* thread index while recording */
static pthread_barrier_t barrier;
static uint64_t events = 20000;
static uintptr_t tls_addr[2];

static void set_add(struct set *s, uint64_t line)
{
	size_t mask = ((size_t)1 << SET_BITS) - 1, i = (size_t)(line * 0x9E3779B97F4A7C15ull >> 20) & mask;
	uint64_t key = line + 1;
	while (s->slot[i] && s->slot[i] != key)
		i = (i + 1) & mask;
	if (!s->slot[i]) {
		if (s->count >= mask / 2) {
			s->full = 1;
			return;
		}
		s->slot[i] = key;
		s->count++;
	}
}

static int set_has(const struct set *s, uint64_t line)
{
	size_t mask = ((size_t)1 << SET_BITS) - 1, i = (size_t)(line * 0x9E3779B97F4A7C15ull >> 20) & mask;
	uint64_t key = line + 1;
	while (s->slot[i]) {
		if (s->slot[i] == key)
			return 1;
		i = (i + 1) & mask;
	}
	return 0;
}

static void note(int kind, const volatile void *addr, size_t size)
{
	uintptr_t a = (uintptr_t)addr, l;
	int t = recording;
	if (t < 0 || !size)
		return;
	for (l = a >> LINE_SHIFT; l <= (a + size - 1) >> LINE_SHIFT; l++)
		set_add(&sets[t][kind], l);
}

/* ---- the hooks GCC's -fsanitize=thread instrumentation calls ---------- */

#define RW(n)                                                                         \
	void __tsan_read##n(void *p);                                                 \
	void __tsan_write##n(void *p);                                                \
	void __tsan_read##n(void *p) { note(READ, p, n); }                            \
	void __tsan_write##n(void *p) { note(WRITE, p, n); }
RW(1)
RW(2)
RW(4)
RW(8)
RW(16)
#define URW(n)                                                                        \
	void __tsan_unaligned_read##n(void *p);                                       \
	void __tsan_unaligned_write##n(void *p);                                      \
	void __tsan_unaligned_read##n(void *p) { note(READ, p, n); }                  \
	void __tsan_unaligned_write##n(void *p) { note(WRITE, p, n); }
URW(2)
URW(4)
URW(8)
URW(16)

void __tsan_read_range(void *p, size_t n);
void __tsan_write_range(void *p, size_t n);
void __tsan_read_range(void *p, size_t n) { note(READ, p, n); }
void __tsan_write_range(void *p, size_t n) { note(WRITE, p, n); }

#define ATOMIC(n, T)                                                                  \
	T __tsan_atomic##n##_load(const volatile T *p, int mo);                       \
	void __tsan_atomic##n##_store(volatile T *p, T v, int mo);                    \
	T __tsan_atomic##n##_fetch_add(volatile T *p, T v, int mo);                   \
	T __tsan_atomic##n##_fetch_sub(volatile T *p, T v, int mo);                   \
	T __tsan_atomic##n##_exchange(volatile T *p, T v, int mo);                    \
	T __tsan_atomic##n##_load(const volatile T *p, int mo)                        \
	{                                                                             \
		(void)mo;                                                             \
		note(READ, p, n / 8);                                                 \
		return __atomic_load_n(p, __ATOMIC_SEQ_CST);                          \
	}                                                                             \
	void __tsan_atomic##n##_store(volatile T *p, T v, int mo)                     \
	{                                                                             \
		(void)mo;                                                             \
		note(WRITE, p, n / 8);                                                \
		__atomic_store_n(p, v, __ATOMIC_SEQ_CST);                             \
	}                                                                             \
	T __tsan_atomic##n##_fetch_add(volatile T *p, T v, int mo)                    \
	{                                                                             \
		(void)mo;                                                             \
		note(WRITE, p, n / 8);                                                \
		return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                    \
	}                                                                             \
	T __tsan_atomic##n##_fetch_sub(volatile T *p, T v, int mo)                    \
	{                                                                             \
		(void)mo;                                                             \
		note(WRITE, p, n / 8);                                                \
		return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);                    \
	}                                                                             \
	T __tsan_atomic##n##_exchange(volatile T *p, T v, int mo)                     \
	{                                                                             \
		(void)mo;                                                             \
		note(WRITE, p, n / 8);                                                \
		return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);                   \
	}
ATOMIC(8, uint8_t)
ATOMIC(16, uint16_t)
ATOMIC(32, uint32_t)
ATOMIC(64, uint64_t)

void __tsan_atomic_thread_fence(int mo);
void __tsan_atomic_signal_fence(int mo);
void __tsan_init(void);
void __tsan_func_entry(void *pc);
void __tsan_func_exit(void);
void __tsan_atomic_thread_fence(int mo) { (void)mo; __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int mo) { (void)mo; __atomic_signal_fence(__ATOMIC_SEQ_CST); }
void __tsan_init(void) {}
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void) {}

/* ---- the run ------------------------------------------------------------ */

static void *thread_main(void *arg)
{
	unsigned index = (unsigned)(uintptr_t)arg;
	uint64_t i;
	sharing_events(index, 0); /* registration: first event, not checked */
	tls_addr[index] = (uintptr_t)&reef__tls;
	pthread_barrier_wait(&barrier);
	recording = (int)index;
	for (i = 1; i <= events; i++)
		sharing_events(index, i);
	recording = -1;
	pthread_barrier_wait(&barrier); /* both buffers stay live until here */
	return NULL;
}

static int report(unsigned a)
{
	unsigned b = 1 - a;
	size_t i, n = 0;
	const struct set *w = &sets[a][WRITE];
	for (i = 0; i < ((size_t)1 << SET_BITS); i++) {
		uint64_t line;
		if (!w->slot[i])
			continue;
		line = w->slot[i] - 1;
		if (set_has(&sets[b][WRITE], line) || set_has(&sets[b][READ], line)) {
			uintptr_t addr = (uintptr_t)(line << LINE_SHIFT);
			uintptr_t sh = (uintptr_t)&reef__shared;
			if (n++ < 10)
				printf("shared line %#lx: written by thread %u, %s by thread %u%s\n",
				       (unsigned long)addr, a, set_has(&sets[b][WRITE], line) ? "written" : "read",
				       b,
				       addr + 64 > sh && addr < sh + sizeof(reef__shared) ? " (reef__shared)" : "");
		}
	}
	return (int)n;
}

int main(int argc, char **argv)
{
	pthread_t th[2];
	unsigned t, k;
	int conflicts = 0, insane = 0;
	uint64_t state_line = (uintptr_t)&reef__shared.state[0] >> LINE_SHIFT;
	if (argc > 1)
		events = strtoull(argv[1], NULL, 0);
	for (t = 0; t < 2; t++)
		for (k = 0; k < 2; k++)
			if (!(sets[t][k].slot = calloc((size_t)1 << SET_BITS, sizeof(uint64_t))))
				return 3;
	pthread_barrier_init(&barrier, NULL, 2);
	for (t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, thread_main, (void *)(uintptr_t)t);
	for (t = 0; t < 2; t++)
		pthread_join(th[t], NULL);

	for (t = 0; t < 2; t++) {
		const struct set *w = &sets[t][WRITE], *r = &sets[t][READ];
		printf("thread %u: %zu lines written, %zu read\n", t, w->count, r->count);
		if (w->full || r->full) {
			printf("thread %u: too many lines for the set\n", t);
			insane = 1;
		}
		if (w->count < MIN_WRITTEN) {
			printf("thread %u: fewer than %d lines written: is the instrumentation on?\n", t,
			       MIN_WRITTEN);
			insane = 1;
		}
		if (!set_has(w, tls_addr[t] >> LINE_SHIFT)) {
			printf("thread %u: its reef__tls line was never written\n", t);
			insane = 1;
		}
		if (!set_has(r, state_line)) {
			printf("thread %u: the state bytes of reef__shared were never read\n", t);
			insane = 1;
		}
	}
	for (t = 0; t < 2; t++)
		conflicts += report(t);
	printf("lines one thread's fast path writes and the other's touches (counted per writer): %d\n", conflicts);
	if (insane)
		return 2;
	return conflicts ? 1 : 0;
}
