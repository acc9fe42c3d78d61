/* tests/kernel/prof.c — a program with a known profile for `perf record -g`:
 * two threads, each spending its time in known functions (spin_long,
 * spin_short under work; getppid() calls, whose kernel frames perf records
 * too). Built with frame pointers so that perf's callchains reach main. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_long(void)
{
	for (unsigned long i = 0; i < 3000000; i++)
		sink += i * i;
}

__attribute__((noinline)) static void spin_short(void)
{
	for (unsigned long i = 0; i < 1000000; i++)
		sink ^= i;
}

__attribute__((noinline)) static void calls(void)
{
	for (int i = 0; i < 2000; i++)
		sink += (unsigned long)getppid();
}

__attribute__((noinline)) static void work(double seconds)
{
	double end = now() + seconds;
	while (now() < end) {
		spin_long();
		spin_short();
		calls();
	}
	__asm__ volatile("" ::: "memory");
}

static void *thread(void *arg)
{
	(void)arg;
	work(0.3);
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, thread, NULL) != 0)
		return 1;
	work(0.3);
	pthread_join(t, NULL);
	printf("%lu\n", sink & 1);
	return 0;
}
