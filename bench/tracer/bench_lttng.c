/* LTTng-UST: one reef_bench:ev4 tracepoint. Disabled: no session enables it. */
#include "bench_tp.h"
#include "harness.h"

static void trace_one(uint64_t i)
{
	tracepoint(reef_bench, ev4, i, i + 1, i + 2, i + 3);
}

static void thread_setup(unsigned index) { (void)index; }
static void thread_teardown(unsigned index) { (void)index; }

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
