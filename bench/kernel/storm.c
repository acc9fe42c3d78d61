/* A system-call storm for bench/kernel: every CPU's thread calls getppid()
 * and a 1-byte read() of /dev/zero in a loop for the given seconds, so
 * that ftrace's buffers fill with raw_syscalls and syscalls events.
 * `storm 0 N`: each thread makes N rounds of 100 of each call instead,
 * and the wall time it took is printed (the recording-cost bench). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double seconds;
static long rounds;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *storm(void *arg)
{
    (void)arg;
    int fd = open("/dev/zero", O_RDONLY);
    char c;
    double end = now() + seconds;
    for (long r = 0; rounds ? r < rounds : now() < end; r++)
        for (int i = 0; i < 100; i++) {
            syscall(SYS_getppid);
            if (read(fd, &c, 1) != 1)
                abort();
        }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    seconds = argc > 1 ? atof(argv[1]) : 1.0;
    rounds = argc > 2 ? atol(argv[2]) : 0;
    double start = now();
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1 || n > 64)
        n = 1;
    pthread_t t[64];
    for (long i = 0; i < n; i++)
        pthread_create(&t[i], NULL, storm, NULL);
    for (long i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    if (rounds)
        printf("%.6f\n", now() - start);
    return 0;
}
