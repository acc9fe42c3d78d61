/* bench/profile/foobarbaz.c — calls of depth 10 through foo, bar and baz
 * (foo calls bar, bar baz, baz foo), a little work at each level, repeated
 * argv[1] times (default 6000000). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static volatile uint64_t sink;

static __attribute__((noinline)) uint64_t work(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

uint64_t foo(int d, uint64_t x);
uint64_t bar(int d, uint64_t x);
uint64_t baz(int d, uint64_t x);

__attribute__((noinline)) uint64_t foo(int d, uint64_t x)
{
	x = work(x, 20);
	return d ? bar(d - 1, x) : work(x, 60);
}
__attribute__((noinline)) uint64_t bar(int d, uint64_t x)
{
	x = work(x, 20);
	return d ? baz(d - 1, x) : work(x, 60);
}
__attribute__((noinline)) uint64_t baz(int d, uint64_t x)
{
	x = work(x, 20);
	return d ? foo(d - 1, x) : work(x, 60);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 6000000;
	uint64_t x = 1;
	for (long i = 0; i < n; i++)
		x = foo(10, x);
	sink = x;
	printf("%llu\n", (unsigned long long)(x & 0xff));
	return 0;
}
