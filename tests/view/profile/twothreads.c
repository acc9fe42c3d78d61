/* tests/view/profile/twothreads.c — tests/profile/tenfunc.c (compiled with
 * -Dmain=tenfunc_main: ten functions burning 50, 20, 15, 5, 5, 1 x 5 % of
 * the main thread's CPU) with a second thread that burns in side_burn()
 * meanwhile: two threads, so two rows of `reef view`, each with its own
 * samples (a thread is sampled once it records an event: the second one
 * records tests/profile/prof.reef's app:MARK first). Runs for argv[1]
 * seconds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "prof.h"

int tenfunc_main(int argc, char **argv);

static atomic_int stop;
static volatile uint64_t side_sink;

__attribute__((noinline)) void side_burn(void)
{
	uint64_t x = side_sink;
	for (long i = 0; i < 100000; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	side_sink = x;
}

static void *side(void *arg)
{
	(void)arg;
	reef_app_mark(2);
	while (!atomic_load(&stop))
		side_burn();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	if (pthread_create(&t, NULL, side, NULL) != 0)
		return 1;
	int rc = tenfunc_main(argc, argv);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	return rc;
}
