/* tests/profile/storm.c — the program's own signals and fork() while
 * libreef samples it: a SIGPROF interval timer at 200 us, 20,000 queued
 * real-time signals from a child process, and children forked from the
 * sampled thread that must exit normally. Prints its counts; exit status 0
 * when every signal arrived and every child exited with 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define QUEUED 20000
static volatile sig_atomic_t profs, queued;
static volatile uint64_t sink;

static void on_prof(int s) { (void)s; profs++; }
static void on_rt(int s) { (void)s; queued++; }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) void burn(double secs)
{
	double end = now() + secs;
	uint64_t x = sink;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

int main(void)
{
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	int sig = SIGRTMIN + 1, bad = 0;
	pid_t sender, kids[4];
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	sa.sa_handler = on_rt;
	sigaction(sig, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	sender = fork();
	if (sender == 0) {
		union sigval v = { 0 };
		for (int i = 0; i < QUEUED; i++)
			while (sigqueue(getppid(), sig, v) && errno == EAGAIN)
				usleep(100);
		_exit(0);
	}
	for (int k = 0; k < 4; k++) {
		burn(0.25);
		kids[k] = fork();
		if (kids[k] == 0) {
			burn(0.05);
			_exit(0);
		}
	}
	burn(0.5);
	for (int k = 0; k < 4; k++) {
		int st;
		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "storm: child %d: status 0x%x\n", k, st);
			bad = 1;
		}
	}
	{
		int st;
		waitpid(sender, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	/* Let the last queued signals arrive. */
	for (int i = 0; i < 100 && queued < QUEUED; i++)
		usleep(10000);
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_PROF, &it, NULL);
	printf("sigprof %d queued %d of %d\n", (int)profs, (int)queued, QUEUED);
	return bad || queued != QUEUED || profs < 100;
}
