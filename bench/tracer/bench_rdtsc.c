/* Baseline: one TSC read per "event" (the floor of any TSC-stamped tracer). */
#include "harness.h"

static volatile uint64_t sink;

static void trace_one(uint64_t i)
{
	sink = __builtin_ia32_rdtsc() + i;
}

static void thread_setup(unsigned index) { (void)index; }
static void thread_teardown(unsigned index) { (void)index; }

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
