/*
 * clock.c — the trace clock.
 *
 * The TSC when the CPU declares it invariant (constant rate, not stopped in
 * deep C-states): one instruction on the fast path. Its frequency is
 * measured against CLOCK_MONOTONIC: over a short busy wait at start-up,
 * then again over the whole run at exit, when the metadata is rewritten
 * with the better figure. The clock's offset places tick 0 on the
 * CLOCK_REALTIME scale so that readers print wall-clock times.
 * Otherwise: CLOCK_MONOTONIC in nanoseconds.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "internal.h"

static struct {
	int tsc;
	uint64_t c0;       /* ticks at the anchor */
	uint64_t m0;       /* CLOCK_MONOTONIC ns at the anchor */
	uint64_t r0;       /* CLOCK_REALTIME ns at the anchor */
	uint64_t freq;
} clk;

static uint64_t ns_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t reef__clock_slow(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

static int tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

/* (tsc, monotonic) taken as close together as possible: keep the pair
 * whose two TSC reads bracket the clock_gettime most tightly. */
static void sample(uint64_t *tsc, uint64_t *mono)
{
#if defined(__x86_64__) || defined(__i386__)
	uint64_t best = UINT64_MAX;
	int i;
	for (i = 0; i < 8; i++) {
		uint64_t a = __builtin_ia32_rdtsc();
		uint64_t m = ns_of(CLOCK_MONOTONIC);
		uint64_t b = __builtin_ia32_rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*mono = m;
		}
	}
#else
	*tsc = 0;
	*mono = ns_of(CLOCK_MONOTONIC);
#endif
}

void reef__clock_init(enum reef_clock which)
{
	int want_tsc = which != REEF_CLOCK_MONOTONIC && tsc_invariant();
	if (which == REEF_CLOCK_TSC) {
#if defined(__x86_64__) || defined(__i386__)
		want_tsc = 1;
#endif
	}
	clk.tsc = want_tsc;
	if (!want_tsc) {
		clk.m0 = ns_of(CLOCK_MONOTONIC);
		clk.r0 = ns_of(CLOCK_REALTIME);
		clk.c0 = clk.m0;
		clk.freq = 1000000000u;
		reef__shared.use_tsc = 0;
		return;
	}
	{
		uint64_t c1, m1;
		sample(&clk.c0, &clk.m0);
		clk.r0 = ns_of(CLOCK_REALTIME) - (ns_of(CLOCK_MONOTONIC) - clk.m0);
		do {
			sample(&c1, &m1);
		} while (m1 - clk.m0 < 2000000u); /* 2 ms */
		clk.freq = (uint64_t)((long double)(c1 - clk.c0) * 1e9L / (long double)(m1 - clk.m0));
	}
	reef__shared.use_tsc = 1;
}

void reef__clock_refine(void)
{
	uint64_t c1, m1;
	if (!clk.tsc)
		return;
	sample(&c1, &m1);
	if (m1 - clk.m0 > 50000000u) /* 50 ms: better than start-up */
		clk.freq = (uint64_t)((long double)(c1 - clk.c0) * 1e9L / (long double)(m1 - clk.m0));
}

void reef__clock_params(uint64_t *freq, int64_t *offset_s, uint64_t *offset)
{
	/* Real time of tick 0: r0 - c0 / freq seconds. */
	long double zero_ns = (long double)clk.r0 - (long double)clk.c0 * 1e9L / (long double)clk.freq;
	long double s = zero_ns / 1e9L;
	int64_t whole = (int64_t)s;
	long double rem_ns;
	if ((long double)whole > s)
		whole--;
	rem_ns = zero_ns - (long double)whole * 1e9L;
	*freq = clk.freq;
	*offset_s = whole;
	*offset = (uint64_t)(rem_ns * (long double)clk.freq / 1e9L);
	if (*offset >= clk.freq)
		*offset = clk.freq - 1;
}

const char *reef__clock_name(void)
{
	return clk.tsc ? "tsc" : "clock_gettime(CLOCK_MONOTONIC)";
}
