/* tests/profile/calls.c — built with -finstrument-functions: main calls
 * a() twice and c() once; a() calls b() three times and c() once; each
 * function burns about 1 ms of CPU itself. The call tree this implies:
 * main (1) > a (2) > b (6), c (2); main > c (1). */
#include <stdint.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((no_instrument_function)) static void spin(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 1000000L);
	sink++;
}

__attribute__((noinline)) void b(void) { spin(); }
__attribute__((noinline)) void c(void) { spin(); }
__attribute__((noinline)) void a(void)
{
	spin();
	for (int i = 0; i < 3; i++)
		b();
	c();
}

int main(void)
{
	spin();
	a();
	a();
	c();
	return 0;
}
