/*
 * modes.c — scenarios for tests/tracer/run.sh, one per argv[1]:
 *
 *   burst N        t:SEQ n = 0..N-1 in a tight loop (mode tests)
 *   snapshot N     SEQ 0..N-1, reef_snapshot(), SEQ N..2N-1
 *   trigger        MARK 0..9, START, MARK 10..19, STOP, MARK 20..29 under
 *                  reef_control(START, STOP)
 *   control        run-time enable/disable (see below)
 *   subsys         MARK 1 and off:X 1 (with REEF_SUBSYSTEMS from the test)
 *   signal N       SEQ 0..N-1 while a 50 us timer's handler traces MARK
 *   fork           MARK 1, fork (child: MARK 2), MARK 3
 *   flush          MARK 1, reef_flush(), check a stream file has data
 *   threads N      N threads, each MARK its index once, then exit
 *   consumer N     a thread pinned to one CPU records MARK 1 (the first
 *                  event: it starts the consumer); print the scheduling
 *                  policy and nice value of the main thread and of the
 *                  consumer thread and how many CPUs the consumer may use;
 *                  then, on that CPU, SEQ 0..N-1 and print the CPU and the
 *                  consumer's affinity: "main POLICY NICE consumer POLICY
 *                  NICE CPUS cpu CPU has CPU_IN_AFFINITY of COUNT"
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "modes.h"

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	(void)sig;
	reef_t_mark((uint32_t)handled);
	handled++;
}

/* The consumer's thread id (its name is "reef-consumer"), or -1. */
static pid_t consumer_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = -1;
	while (d && tid < 0 && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strcmp(comm, "reef-consumer\n"))
			tid = (pid_t)atoi(e->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

static void *one_mark(void *arg)
{
	reef_t_mark((uint32_t)(uintptr_t)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 0, i;

	if (!strcmp(what, "burst")) {
		for (i = 0; i < n; i++)
			reef_t_seq(i);
	} else if (!strcmp(what, "snapshot")) {
		for (i = 0; i < n; i++)
			reef_t_seq(i);
		if (reef_snapshot())
			return 1;
		for (; i < 2 * n; i++)
			reef_t_seq(i);
	} else if (!strcmp(what, "trigger")) {
		reef_control(TRACE_EVENT_T_START, TRACE_EVENT_T_STOP);
		for (i = 0; i < 10; i++)
			reef_t_mark((uint32_t)i);
		reef_t_start(0);
		for (; i < 20; i++)
			reef_t_mark((uint32_t)i);
		reef_t_stop(0);
		for (; i < 30; i++)
			reef_t_mark((uint32_t)i);
	} else if (!strcmp(what, "control")) {
		/* Recorded: X 1, MARK 2, MARK 4, X 3. */
		reef_off_x(1);
		reef_disable(TRACE_SUBSYS_T);
		reef_t_mark(1);
		reef_enable(TRACE_SUBSYS_T);
		reef_t_mark(2);
		reef_disable_all();
		reef_t_mark(3);
		reef_off_x(2);
		reef_enable_all();
		reef_t_mark(4);
		reef_off_x(3);
	} else if (!strcmp(what, "subsys")) {
		reef_t_mark(1);
		reef_off_x(1);
	} else if (!strcmp(what, "signal")) {
		struct sigaction sa;
		struct itimerval it = { { 0, 50 }, { 0, 50 } };
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		reef_t_mark(1000000); /* register the thread outside the handler */
		setitimer(ITIMER_REAL, &it, NULL);
		for (i = 0; i < n; i++)
			reef_t_seq(i);
		memset(&it, 0, sizeof(it));
		setitimer(ITIMER_REAL, &it, NULL);
		fprintf(stderr, "modes: %d signals handled\n", (int)handled);
	} else if (!strcmp(what, "fork")) {
		pid_t pid;
		int status;
		reef_t_mark(1);
		pid = fork();
		if (pid == 0) {
			reef_t_mark(2);
			reef_flush();
			exit(0);
		}
		waitpid(pid, &status, 0);
		reef_t_mark(3);
	} else if (!strcmp(what, "flush")) {
		char path[4200];
		struct stat st;
		reef_t_mark(1);
		if (reef_flush())
			return 1;
		snprintf(path, sizeof(path), "%s/stream_0", reef_trace_dir());
		if (stat(path, &st) || st.st_size <= 100) {
			fprintf(stderr, "modes: nothing written by reef_flush()\n");
			return 1;
		}
		reef_t_mark(2);
	} else if (!strcmp(what, "threads")) {
		pthread_t th[64];
		if (n > 64)
			n = 64;
		for (i = 0; i < n; i++)
			pthread_create(&th[i], NULL, one_mark, (void *)(uintptr_t)i);
		for (i = 0; i < n; i++)
			pthread_join(th[i], NULL);
	} else if (!strcmp(what, "consumer")) {
		pid_t tid = -1;
		int tries, policy = -1, nice = 0;
		cpu_set_t first, theirs;
		pthread_attr_t attr;
		pthread_t th;
		int here = sched_getcpu();
		if (here < 0)
			return 1;
		CPU_ZERO(&first);
		CPU_SET(here, &first);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(first), &first);
		if (pthread_create(&th, &attr, one_mark, (void *)(uintptr_t)1))
			return 1;
		pthread_join(th, NULL);
		pthread_attr_destroy(&attr);
		/* The consumer takes its name once it has set its priority. */
		for (tries = 0; tries < 500 && tid < 0; tries++) {
			usleep(10000);
			tid = consumer_tid();
		}
		if (tid >= 0) {
			policy = sched_getscheduler(tid);
			nice = getpriority(PRIO_PROCESS, (id_t)tid);
		}
		CPU_ZERO(&theirs);
		if (tid < 0 || sched_getaffinity(tid, sizeof(theirs), &theirs))
			return 1;
		printf("main %d %d consumer %d %d %d", sched_getscheduler(0), getpriority(PRIO_PROCESS, 0),
		       policy, nice, CPU_COUNT(&theirs));
		/* The burst from the first thread's CPU: each wake-up of the
		 * consumer takes that CPU out of its affinity before it returns. */
		if (sched_setaffinity(0, sizeof(first), &first))
			return 1;
		for (i = 0; i < n; i++)
			reef_t_seq(i);
		CPU_ZERO(&theirs);
		if (sched_getaffinity(tid, sizeof(theirs), &theirs))
			return 1;
		printf(" cpu %d has %d of %d\n", here, CPU_ISSET(here, &theirs) ? 1 : 0, CPU_COUNT(&theirs));
	} else {
		fprintf(stderr, "usage: modes burst|snapshot|trigger|control|subsys|signal|fork|flush|threads|consumer [N]\n");
		return 2;
	}
	return 0;
}
