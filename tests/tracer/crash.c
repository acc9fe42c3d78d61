/*
 * crash.c — a libreef program that dies, for tests/tracer/check.py.
 *
 *   crash THREADS SIDE_DIR run          trace until killed
 *   crash THREADS SIDE_DIR fast         the same without the side files
 *   crash THREADS SIDE_DIR segv N       thread 0 dereferences NULL after
 *                                       its event N
 *   crash THREADS SIDE_DIR handler N    the same, with the program's own
 *                                       SIGSEGV handler (installed before
 *                                       libreef starts) that writes
 *                                       SIDE_DIR/handled and exits 42
 *   crash THREADS SIDE_DIR abort N      thread 0 calls abort() after event N
 *   crash THREADS SIDE_DIR mapped N     as segv, each thread's n published
 *                                       through a shared mapping of its
 *                                       side file (a store per event, no
 *                                       system call: the threads run as
 *                                       fast as recording lets them)
 *
 * Thread i records c:STEP (thread = i, n = 0, 1, 2..., check = n * K ^ i),
 * and after each event writes its n to SIDE_DIR/thread_<i> (8 bytes at
 * offset 0): when the program dies, that file names the thread's last
 * complete event or the one before.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crash.h"

#define K 0x9E3779B97F4A7C15ull

static const char *side_dir;
static const char *mode;
static unsigned long long crash_at;
static int *volatile null_ptr;

static void on_segv(int sig)
{
	char path[4200];
	int fd;
	(void)sig;
	snprintf(path, sizeof(path), "%s/handled", side_dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd >= 0) {
		if (write(fd, "handled\n", 8) < 0) {
			/* the test notices */
		}
		close(fd);
	}
	_exit(42);
}

static void *worker(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	char path[4200];
	unsigned long long n;
	int fd, fast = !strcmp(mode, "fast"), mapped = !strcmp(mode, "mapped");
	volatile unsigned long long *published = NULL;
	snprintf(path, sizeof(path), "%s/thread_%u", side_dir, i);
	fd = open(path, (mapped ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC, 0666);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	if (mapped) {
		void *m;
		/* Not published yet: all ones (the test reads -1). */
		n = ~0ull;
		if (pwrite(fd, &n, sizeof(n), 0) != sizeof(n) ||
		    (m = mmap(NULL, sizeof(n), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
			perror(path);
			exit(2);
		}
		published = m;
	}
	for (n = 0;; n++) {
		reef_c_step(i, n, (n * K) ^ i);
		if (mapped)
			*published = n;
		else if (!fast && pwrite(fd, &n, sizeof(n), 0) != sizeof(n)) {
			perror("pwrite");
			exit(2);
		}
		if (i == 0 && n == crash_at) {
			if (!strcmp(mode, "abort"))
				abort();
			*null_ptr = 1;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads, i;
	pthread_t t[64];
	if (argc < 4) {
		fprintf(stderr, "usage: crash THREADS SIDE_DIR run|fast|segv N|mapped N|handler N|abort N\n");
		return 2;
	}
	threads = (unsigned)atoi(argv[1]);
	side_dir = argv[2];
	mode = argv[3];
	crash_at = argc > 4 ? strtoull(argv[4], NULL, 10) : ~0ull;
	if (!strcmp(mode, "run") || !strcmp(mode, "fast"))
		crash_at = ~0ull;
	if (!strcmp(mode, "handler"))
		signal(SIGSEGV, on_segv);
	if (threads < 1 || threads > 64)
		return 2;
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
