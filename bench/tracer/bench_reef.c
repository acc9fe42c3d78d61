/* libreef: one EV4 event (4 x u64). Disabled: run with REEF_SUBSYSTEMS=none. */
#include "bench.h"
#include "harness.h"

static void trace_one(uint64_t i)
{
	reef_bench_ev4(i, i + 1, i + 2, i + 3);
}

static void thread_setup(unsigned index) { (void)index; }
static void thread_teardown(unsigned index) { (void)index; }

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
