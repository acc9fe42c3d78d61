/* A workload of known behaviour for the kernel-input tests: threads that
 * spin for set times, sleep, wake each other through a pipe and make
 * a known number of getppid() calls. Each thread prints, as it ends:
 *   TID NAME CPU_NS GETPPID_CALLS
 * its CPU time read from CLOCK_THREAD_CPUTIME_ID.
 *
 * A SCHED_IDLE filler thread per CPU keeps every CPU busy from before the
 * workers start until after they end, so that every switch is from one
 * task to another: on some kernels (this machine's among them) a switch
 * away from the idle task records no sched_switch, in ftrace and perf
 * alike, and a thread woken on an idle CPU would run unrecorded until its
 * next switch. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int pipefd[2];
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static long long thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Busy for `ns` of wall-clock time, read from CLOCK_MONOTONIC (the vDSO:
 * no system call, so the recording holds only the calls counted here). */
static void spin(long long ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long end = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + ns;
    volatile unsigned x = 0;
    for (;;) {
        for (int i = 0; i < 1000; i++)
            x += (unsigned)i;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if ((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec >= end)
            break;
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int calls(int n)
{
    for (int i = 0; i < n; i++)
        syscall(SYS_getppid);
    return n;
}

static void report(const char *name, int ncalls)
{
    long long ns = thread_ns();
    pthread_mutex_lock(&out_lock);
    printf("%ld %s %lld %d\n", (long)syscall(SYS_gettid), name, ns, ncalls);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

/* Spins 60 ms, sleeps 20 ms, spins 40 ms; wakes the sleeper 20 times. */
static void *spinner(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "wl-spinner");
    int n = calls(101);
    spin(60000000LL);
    sleep_ms(20);
    for (int i = 0; i < 20; i++) {
        spin(2000000LL);
        if (write(pipefd[1], "x", 1) != 1)
            abort();
    }
    report("wl-spinner", n);
    return NULL;
}

static void *spinner2(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "wl-spin30");
    int n = calls(57);
    spin(30000000LL);
    sleep_ms(10);
    spin(10000000LL);
    report("wl-spin30", n);
    return NULL;
}

/* Sleeps in read() until woken, 20 times, then spins 5 ms. */
static void *sleeper(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "wl-sleeper");
    int n = calls(23);
    char c;
    for (int i = 0; i < 20; i++)
        if (read(pipefd[0], &c, 1) != 1)
            abort();
    spin(5000000LL);
    report("wl-sleeper", n);
    return NULL;
}

static volatile int stop_fillers;

static void *filler(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "wl-filler");
    struct sched_param sp = {0};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
        abort();
    volatile unsigned x = 0;
    while (!stop_fillers)
        x++;
    report("wl-filler", 0);
    return NULL;
}

int main(void)
{
    if (pipe(pipefd) != 0)
        return 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1 || ncpu > 256)
        ncpu = 1;
    pthread_t f[256];
    for (long i = 0; i < ncpu; i++)
        pthread_create(&f[i], NULL, filler, NULL);
    sleep_ms(20);
    pthread_t t[3];
    pthread_create(&t[0], NULL, sleeper, NULL);
    pthread_create(&t[1], NULL, spinner, NULL);
    pthread_create(&t[2], NULL, spinner2, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    sleep_ms(20);
    stop_fillers = 1;
    for (long i = 0; i < ncpu; i++)
        pthread_join(f[i], NULL);
    return 0;
}
