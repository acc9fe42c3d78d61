/* tests/profile/tenfunc.c — ten functions that burn 50, 20, 15, 5, 5, 1,
 * 1, 1, 1, 1 % of the CPU: each round, f<k> runs SHARE(k) * UNIT iterations
 * of the same loop (one body for all, so an iteration costs the same in
 * each). Runs for argv[1] seconds (default 10). */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 2000
static volatile uint64_t sink;

#define BURN(name, share)                                                   \
	__attribute__((noinline)) void name(void)                           \
	{                                                                   \
		uint64_t x = sink;                                          \
		for (long i = 0; i < (long)(share) * UNIT; i++)             \
			x = x * 6364136223846793005ull + 1442695040888963407ull; \
		sink = x;                                                   \
	}

BURN(f50, 50)
BURN(f20, 20)
BURN(f15, 15)
BURN(f5a, 5)
BURN(f5b, 5)
BURN(f1a, 1)
BURN(f1b, 1)
BURN(f1c, 1)
BURN(f1d, 1)
BURN(f1e, 1)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10, end = now() + secs;
	while (now() < end) {
		for (int r = 0; r < 16; r++) {
			f50(); f20(); f15(); f5a(); f5b();
			f1a(); f1b(); f1c(); f1d(); f1e();
		}
	}
	return 0;
}
