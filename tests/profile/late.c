/* tests/profile/late.c — under REEF_SAMPLE: the main thread burns in
 * main_burn(), in quiet_burn() with sampling switched off
 * (reef_disable(REEF_SUBSYS_SAMPLE)), loads argv[1] with dlopen() and
 * burns in its plug_burn(), then starts a thread (after sampling started)
 * that records one event and burns in late_burn(). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "prof.h"

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define BURNER(name)                                                          \
	__attribute__((noinline)) void name(double secs)                      \
	{                                                                     \
		double end = now() + secs;                                    \
		uint64_t x = sink;                                            \
		while (now() < end)                                           \
			for (int i = 0; i < 10000; i++)                       \
				x = x * 6364136223846793005ull + 1442695040888963407ull; \
		sink = x;                                                     \
	}
BURNER(main_burn)
BURNER(late_burn)
BURNER(quiet_burn)

static void *thread_main(void *arg)
{
	(void)arg;
	reef_app_mark(1);
	late_burn(0.4);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *h;
	void (*plug)(double);
	main_burn(0.3);
	reef_disable(REEF_SUBSYS_SAMPLE);
	quiet_burn(0.2);
	reef_enable(REEF_SUBSYS_SAMPLE);
	if (argc < 2 || !(h = dlopen(argv[1], RTLD_NOW))) {
		fprintf(stderr, "late: dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&plug = dlsym(h, "plug_burn");
	plug(0.4);
	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
	return 0;
}
