/* tests/profile/plug.c — a library late.c loads with dlopen(). */
#include <stdint.h>
#include <time.h>
static volatile uint64_t sink;
__attribute__((noinline)) void plug_burn(double secs)
{
	struct timespec a, b;
	uint64_t x = sink;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 < secs);
	sink = x;
}
