/*
 * core.c — initialisation, thread registration, the slow path of events,
 * run-time control, flush/snapshot/shutdown, thread exit and fork.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "internal.h"

/* The built-in subsystems start in ASK as a registered schema's do: the
 * first function entry (-finstrument-functions) initialises the library
 * even in a program without a schema. */
_Alignas(REEF_CACHELINE) struct reef__shared reef__shared = {
	.state = { [REEF_SUBSYS_FUNC] = REEF__ASK, [REEF_SUBSYS_SAMPLE] = REEF__ASK },
};
__thread struct reef__tls reef__tls __attribute__((tls_model("initial-exec")));
struct reef_state reef__st = {
	.registry_lock = PTHREAD_MUTEX_INITIALIZER,
	.drain_lock = PTHREAD_MUTEX_INITIALIZER,
	.wake_pipe = { -1, -1 },
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static const struct reef_config *init_cfg;
static int init_result;

/* Triggers. */
enum { TRIG_NONE, TRIG_ARMED, TRIG_RUNNING, TRIG_DONE };
static int trig_state = TRIG_NONE;
static uint32_t trig_start = REEF_EVENT_NONE, trig_stop = REEF_EVENT_NONE;

static pthread_mutex_t control_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- configuration ---------------------------------------------------- */

void reef_config_default(struct reef_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->mode = REEF_MODE_DISCARD;
	cfg->buffer_size = 1u << 20;
	cfg->packet_size = 64u << 10;
	cfg->clock = REEF_CLOCK_AUTO;
}

static size_t parse_size(const char *s, size_t fallback)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (end == s)
		return fallback;
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	default: break;
	}
	return (size_t)v;
}

static void warn(const char *msg, const char *arg)
{
	fprintf(stderr, "libreef: %s%s\n", msg, arg ? arg : "");
}

/* "all", "none", "a,b,-c". Unknown names are reported. */
static void apply_subsystems(const char *spec)
{
	const struct reef_schema *s = reef__st.schema;
	unsigned n = s ? s->num_subsystems : 0, i;
	const char *p = spec;
	int first = 1;
	while (*p) {
		const char *q = p;
		size_t len;
		int neg = 0;
		while (*q && *q != ',')
			q++;
		len = (size_t)(q - p);
		if (len && *p == '-') {
			neg = 1;
			p++;
			len--;
		}
		/* A list of names replaces the schema's subsystems; the
		 * built-in ones stay as they are unless named. */
		if (first && !neg)
			memset(reef__st.enabled, 0, REEF_SUBSYS_FUNC);
		first = 0;
		if (len == 3 && !strncmp(p, "all", 3)) {
			memset(reef__st.enabled, neg ? 0 : 1, sizeof(reef__st.enabled));
		} else if (len == 4 && !strncmp(p, "none", 4)) {
			memset(reef__st.enabled, 0, sizeof(reef__st.enabled));
		} else if (len == 6 && !strncmp(p, "sample", 6)) {
			reef__st.enabled[REEF_SUBSYS_SAMPLE] = !neg;
		} else if (len == 4 && !strncmp(p, "func", 4)) {
			reef__st.enabled[REEF_SUBSYS_FUNC] = !neg;
		} else if (len) {
			int found = 0;
			for (i = 0; i < n; i++) {
				if (strlen(s->subsystem_names[i]) == len && !strncmp(s->subsystem_names[i], p, len)) {
					reef__st.enabled[i] = !neg;
					found = 1;
				}
			}
			if (!found) {
				char name[128];
				snprintf(name, sizeof(name), "%.*s", (int)(len < 100 ? len : 100), p);
				warn("unknown subsystem in REEF_SUBSYSTEMS: ", name);
			}
		}
		p = *q ? q + 1 : q;
	}
}

/* ---- states ------------------------------------------------------------ */

/* A fatal signal: 0 none, 1 writing the trace, 2 written (the tracing
 * threads are still held), 3 released (see on_fatal()). */
enum { FATAL_NONE, FATAL_WRITING, FATAL_WRITTEN, FATAL_RELEASED };
static int fatal_state;

/* Derives the fast path's state bytes from `enabled` and the trigger. */
static void publish_states(void)
{
	unsigned i;
	uint32_t stop_sub = trig_stop == REEF_EVENT_NONE ? 256 : (trig_stop >> 8) & 255u;
	int fatal = __atomic_load_n(&fatal_state, __ATOMIC_ACQUIRE);
	if (fatal == FATAL_WRITING || fatal == FATAL_WRITTEN)
		return; /* every event waits in reef__gate() (on_fatal()) */
	for (i = 0; i < 256; i++) {
		uint8_t v = REEF__OFF;
		if (reef__st.enabled[i] && !reef__st.stop) {
			switch (trig_state) {
			case TRIG_NONE: v = REEF__ON; break;
			case TRIG_ARMED: v = REEF__ASK; break;
			case TRIG_RUNNING: v = i == stop_sub ? REEF__ASK : REEF__ON; break;
			default: v = REEF__OFF; break;
			}
		}
		__atomic_store_n(&reef__shared.state[i], v, __ATOMIC_RELAXED);
	}
}

void reef_register_schema(const struct reef_schema *schema)
{
	unsigned i;
	if (reef__st.schema) {
		if (reef__st.schema->hash != schema->hash)
			warn("a second, different schema is ignored: ", schema->name);
		return;
	}
	reef__st.schema = schema;
	/* ASK: the first event initialises the library. */
	for (i = 0; i < schema->num_subsystems && i < 256; i++)
		__atomic_store_n(&reef__shared.state[i], REEF__ASK, __ATOMIC_RELAXED);
}

/* ---- initialisation ---------------------------------------------------- */

static void make_uuid(void)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, reef__st.uuid, 16) : -1;
	if (fd >= 0)
		close(fd);
	if (got != 16) {
		uint64_t a = reef__clock_slow() ^ ((uint64_t)getpid() << 32), i;
		for (i = 0; i < 16; i++) {
			a = a * 6364136223846793005ull + 1442695040888963407ull;
			reef__st.uuid[i] = (uint8_t)(a >> 56);
		}
	}
	reef__st.uuid[6] = (uint8_t)((reef__st.uuid[6] & 0x0f) | 0x40);
	reef__st.uuid[8] = (uint8_t)((reef__st.uuid[8] & 0x3f) | 0x80);
	{
		const uint8_t *u = reef__st.uuid;
		snprintf(reef__st.uuid_str, sizeof(reef__st.uuid_str),
			 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			 u[12], u[13], u[14], u[15]);
	}
}

static int mkdir_p(const char *dir)
{
	char tmp[4096];
	char *p;
	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			if (mkdir(tmp, 0777) && errno != EEXIST)
				return -1;
			*p = '/';
		}
	}
	if (mkdir(tmp, 0777) && errno != EEXIST)
		return -1;
	return 0;
}

/* A previous trace in the same directory would mix with this one. */
static void remove_old_trace(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4352];
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, "metadata") || !strncmp(e->d_name, "stream_", 7)) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	}
	closedir(d);
	/* Rings an earlier run left (it crashed, nobody ran reef recover). */
	snprintf(path, sizeof(path), "%s/" REEF_RING_DIR, dir);
	if ((d = opendir(path))) {
		int warned = 0;
		while ((e = readdir(d))) {
			char ring[4608];
			if (strncmp(e->d_name, "ring_", 5))
				continue;
			if (!warned++)
				warn("removing the crash-safe rings of an earlier run (not recovered): ", path);
			snprintf(ring, sizeof(ring), "%s/%s", path, e->d_name);
			unlink(ring);
		}
		closedir(d);
	}
}

/* Fatal signals: write what is held, then the program's own handler or
 * the default action.
 *
 * The other threads go on running while the handler writes, and until
 * the process dies. An event one of them completes after recording was
 * switched off would be lost without a trace (the program cannot tell),
 * so instead of switching it off the handler holds them: every
 * subsystem's state becomes ASK, and reef__gate() (or the slow path, for
 * an event already past the state test) keeps a thread that comes there
 * waiting in fatal_park(). The handler waits until every other tracing
 * thread waits there (or 100 ms: a thread blocked elsewhere, in a system
 * call, records nothing meanwhile), so the packets it writes are final:
 * each thread's last event is either in them or was never completed.
 * After the write the threads stay held until the process dies (the
 * default action comes as soon as the handler returns) or for one second
 * at most (the program's own handler may survive the signal); then
 * recording is off for good. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction fatal_old[NFATAL];
static uint64_t fatal_release_ns; /* CLOCK_MONOTONIC: held threads go on */
static __thread int fatal_here __attribute__((tls_model("initial-exec"))); /* no __tls_get_addr in a handler */

#define FATAL_QUIESCE_MS 100
#define FATAL_HOLD_MS 1000

static void say(const char *a, const char *b, const char *c)
{
	/* write(2) only: async-signal-safe. */
	if (write(2, a, strlen(a)) < 0 || write(2, b, strlen(b)) < 0 || write(2, c, strlen(c)) < 0) {
		/* nothing to do */
	}
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };
	nanosleep(&ts, NULL);
}

/* A fatal signal is being handled, by another thread than this one. */
static int fatal_elsewhere(void)
{
	int s = __atomic_load_n(&fatal_state, __ATOMIC_ACQUIRE);
	return (s == FATAL_WRITING || s == FATAL_WRITTEN) && !fatal_here;
}

/* Holds the calling thread while a fatal signal is handled, and after
 * until the process dies or FATAL_HOLD_MS have passed (see above); then
 * recording is off. Async-signal-safe (a handler's event may come here). */
static void fatal_park(void)
{
	struct reef_buf *b = (struct reef_buf *)reef__tls.buf;
	int i;
	if (b)
		__atomic_store_n(&b->parked, 1, __ATOMIC_RELEASE);
	/* 10 s at most in all, whatever happens to the handler. */
	for (i = 0; i < 10000; i++) {
		int s = __atomic_load_n(&fatal_state, __ATOMIC_ACQUIRE);
		if (s == FATAL_RELEASED)
			break;
		if (s == FATAL_WRITTEN &&
		    monotonic_ns() >= __atomic_load_n(&fatal_release_ns, __ATOMIC_ACQUIRE)) {
			if (__atomic_compare_exchange_n(&fatal_state, &s, FATAL_RELEASED, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				memset(reef__shared.state, REEF__OFF, sizeof(reef__shared.state));
			break;
		}
		sleep_ms(1);
	}
	if (i == 10000) {
		__atomic_store_n(&fatal_state, FATAL_RELEASED, __ATOMIC_RELEASE);
		memset(reef__shared.state, REEF__OFF, sizeof(reef__shared.state));
	}
}

/* Until every other registered thread is held in fatal_park() (or has
 * exited), FATAL_QUIESCE_MS at most. Called by reef__emergency_write()
 * with the registry held (when it could take it): no buffer goes away. */
void reef__fatal_quiesce(void)
{
	int i;
	for (i = 0; i < FATAL_QUIESCE_MS * 10; i++) {
		struct reef_buf *b;
		int busy = 0;
		for (b = __atomic_load_n(&reef__st.buffers, __ATOMIC_ACQUIRE); b && !busy; b = b->next) {
			struct reef__tls *t = __atomic_load_n(&b->tls, __ATOMIC_ACQUIRE);
			busy = t && t != &reef__tls && !__atomic_load_n(&b->retired, __ATOMIC_ACQUIRE) &&
			       !__atomic_load_n(&b->parked, __ATOMIC_ACQUIRE);
		}
		if (!busy)
			return;
		{
			struct timespec ts = { 0, 100000 };
			nanosleep(&ts, NULL);
		}
	}
}

static void on_fatal(int sig, siginfo_t *info, void *uctx)
{
	unsigned k;
	int expect = FATAL_NONE, saved_errno = errno;
	(void)uctx;
	for (k = 0; k < NFATAL && fatal_signals[k] != sig; k++) {
	}
	if (k == NFATAL)
		return;
	if (!fatal_here && (int)getpid() == reef__st.pid) {
		fatal_here = 1;
		if (__atomic_compare_exchange_n(&fatal_state, &expect, FATAL_WRITING, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			int failed;
			/* Every new event waits in reef__gate(), no packet is
			 * opened or reused, the consumer stops. */
			memset(reef__shared.state, REEF__ASK, sizeof(reef__shared.state));
			__atomic_store_n(&reef__st.stop, 1, __ATOMIC_RELEASE);
			failed = reef__emergency_write();
			say("libreef: fatal signal: the trace so far is in ", reef__st.dir,
			    failed ? " (some packets could not be written)\n" : "\n");
			__atomic_store_n(&fatal_release_ns, monotonic_ns() + FATAL_HOLD_MS * 1000000ull,
					 __ATOMIC_RELEASE);
			__atomic_store_n(&fatal_state, FATAL_WRITTEN, __ATOMIC_RELEASE);
		} else if (expect == FATAL_WRITING) {
			/* Another thread is writing: let it finish (10 s at most),
			 * this thread counting as held meanwhile. */
			struct reef_buf *b = (struct reef_buf *)reef__tls.buf;
			int i;
			if (b)
				__atomic_store_n(&b->parked, 1, __ATOMIC_RELEASE);
			for (i = 0; i < 10000 && __atomic_load_n(&fatal_state, __ATOMIC_ACQUIRE) == FATAL_WRITING; i++)
				sleep_ms(1);
		}
	}
	/* The program's handler (or the default action) takes over: a fault
	 * happens again when this handler returns; a sent signal is sent
	 * again (pending until then, since it is blocked here). */
	sigaction(sig, &fatal_old[k], NULL);
	if (info->si_code <= 0)
		raise(sig);
	errno = saved_errno;
}

static void install_fatal_handlers(void)
{
	unsigned k;
	for (k = 0; k < NFATAL; k++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fatal;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigfillset(&sa.sa_mask);
		if (sigaction(fatal_signals[k], NULL, &fatal_old[k]))
			continue;
		/* A program that ignores the signal keeps ignoring it. */
		if (!(fatal_old[k].sa_flags & SA_SIGINFO) && fatal_old[k].sa_handler == SIG_IGN)
			continue;
		sigaction(fatal_signals[k], &sa, NULL);
	}
}

static void at_exit(void);
static void thread_exit(void *arg);
static void after_fork_child(void);

static void do_init(void)
{
	struct reef_config cfg;
	const char *env;
	sigset_t all, old;

	if (init_cfg)
		cfg = *init_cfg;
	else
		reef_config_default(&cfg);
	if (!cfg.buffer_size)
		cfg.buffer_size = 1u << 20;
	if (!cfg.packet_size)
		cfg.packet_size = 64u << 10;

	if ((env = getenv("REEF_OUTPUT")) && *env)
		cfg.output_dir = env;
	if ((env = getenv("REEF_MODE")) && *env) {
		if (!strcmp(env, "discard"))
			cfg.mode = REEF_MODE_DISCARD;
		else if (!strcmp(env, "overwrite"))
			cfg.mode = REEF_MODE_OVERWRITE;
		else if (!strcmp(env, "block"))
			cfg.mode = REEF_MODE_BLOCK;
		else
			warn("REEF_MODE must be discard, overwrite or block; ignored: ", env);
	}
	if ((env = getenv("REEF_BUFFER_SIZE")) && *env)
		cfg.buffer_size = parse_size(env, cfg.buffer_size);
	if ((env = getenv("REEF_PACKET_SIZE")) && *env)
		cfg.packet_size = parse_size(env, cfg.packet_size);
	if ((env = getenv("REEF_CRASH_SAFE")) && *env)
		cfg.crash_safe = strcmp(env, "0") != 0;
	if ((env = getenv("REEF_FATAL_SIGNALS")) && *env)
		cfg.no_fatal_handlers = !strcmp(env, "0");
	if ((env = getenv("REEF_CLOCK")) && *env) {
		if (!strcmp(env, "tsc"))
			cfg.clock = REEF_CLOCK_TSC;
		else if (!strcmp(env, "monotonic"))
			cfg.clock = REEF_CLOCK_MONOTONIC;
		else
			cfg.clock = REEF_CLOCK_AUTO;
	}
	if (cfg.packet_size < 4096)
		cfg.packet_size = 4096;
	if (cfg.packet_size > (1u << 30))
		cfg.packet_size = 1u << 30;
	if (cfg.buffer_size < 2 * cfg.packet_size)
		cfg.buffer_size = 2 * cfg.packet_size;

	reef__st.pid = (int)getpid();
#ifdef __GLIBC__
	snprintf(reef__st.procname, sizeof(reef__st.procname), "%s", program_invocation_short_name);
#else
	snprintf(reef__st.procname, sizeof(reef__st.procname), "unknown");
#endif
	if (gethostname(reef__st.hostname, sizeof(reef__st.hostname) - 1))
		snprintf(reef__st.hostname, sizeof(reef__st.hostname), "unknown");
	if (cfg.output_dir)
		snprintf(reef__st.dir, sizeof(reef__st.dir), "%s", cfg.output_dir);
	else
		snprintf(reef__st.dir, sizeof(reef__st.dir), "reef-trace-%s-%d", reef__st.procname,
			 reef__st.pid);
	cfg.output_dir = reef__st.dir;
	reef__st.cfg = cfg;

	memset(reef__st.enabled, 1, sizeof(reef__st.enabled));
	if (cfg.subsystems)
		apply_subsystems(cfg.subsystems);
	if ((env = getenv("REEF_SUBSYSTEMS")) && *env)
		apply_subsystems(env);

	make_uuid();
	reef__clock_init(cfg.clock);
	reef__profile_init(&cfg);

	if (mkdir_p(reef__st.dir)) {
		warn("cannot create the trace directory; not tracing: ", reef__st.dir);
		init_result = -1;
		reef__st.stop = 1;
		publish_states();
		return;
	}
	remove_old_trace(reef__st.dir);
	if (cfg.crash_safe) {
		char rings[4200];
		snprintf(rings, sizeof(rings), "%s/" REEF_RING_DIR, reef__st.dir);
		if (mkdir(rings, 0777) && errno != EEXIST) {
			warn("cannot create the crash-safe ring directory; rings stay in memory: ", rings);
			reef__st.cfg.crash_safe = 0;
		}
	}
	if (reef__write_metadata()) {
		init_result = -1;
		reef__st.stop = 1;
		publish_states();
		return;
	}
	if (pipe2(reef__st.wake_pipe, O_CLOEXEC | O_NONBLOCK))
		reef__st.wake_pipe[0] = reef__st.wake_pipe[1] = -1;
	pthread_key_create(&exit_key, thread_exit);
	pthread_atfork(NULL, NULL, after_fork_child);
	atexit(at_exit);
	if (!cfg.no_fatal_handlers)
		install_fatal_handlers();

	/* The consumer takes no signals: the program's handlers run on its
	 * own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&reef__st.consumer, NULL, reef__consumer_main, NULL))
		warn("cannot start the consumer thread; packets are written at flush and exit", NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	reef__net_start(); /* REEF_LISTEN: live clients (net.c) */

	__atomic_store_n(&reef__st.initialised, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&control_lock);
	publish_states();
	pthread_mutex_unlock(&control_lock);
	reef__profile_start(); /* REEF_SAMPLE: this thread, the objects */
}

int reef_init(const struct reef_config *cfg)
{
	int was = __atomic_load_n(&reef__st.initialised, __ATOMIC_ACQUIRE);
	if (was)
		return -1;
	init_cfg = cfg;
	pthread_once(&init_once, do_init);
	init_cfg = NULL;
	return init_result;
}

static void ensure_init(void)
{
	if (!__atomic_load_n(&reef__st.initialised, __ATOMIC_ACQUIRE))
		pthread_once(&init_once, do_init);
}

void reef__ensure_init(void)
{
	ensure_init();
}

const char *reef_trace_dir(void)
{
	return __atomic_load_n(&reef__st.initialised, __ATOMIC_ACQUIRE) ? reef__st.dir : NULL;
}

/* ---- control ----------------------------------------------------------- */

void reef_enable(unsigned subsystem)
{
	ensure_init();
	pthread_mutex_lock(&control_lock);
	reef__st.enabled[subsystem & 255u] = 1;
	publish_states();
	pthread_mutex_unlock(&control_lock);
}

void reef_disable(unsigned subsystem)
{
	ensure_init();
	pthread_mutex_lock(&control_lock);
	reef__st.enabled[subsystem & 255u] = 0;
	publish_states();
	pthread_mutex_unlock(&control_lock);
}

void reef_enable_all(void)
{
	ensure_init();
	pthread_mutex_lock(&control_lock);
	memset(reef__st.enabled, 1, sizeof(reef__st.enabled));
	publish_states();
	pthread_mutex_unlock(&control_lock);
}

void reef_disable_all(void)
{
	ensure_init();
	pthread_mutex_lock(&control_lock);
	memset(reef__st.enabled, 0, sizeof(reef__st.enabled));
	publish_states();
	pthread_mutex_unlock(&control_lock);
}

void reef_control(uint32_t start_event, uint32_t stop_event)
{
	ensure_init();
	pthread_mutex_lock(&control_lock);
	trig_start = start_event;
	trig_stop = stop_event;
	if (start_event != REEF_EVENT_NONE)
		__atomic_store_n(&trig_state, TRIG_ARMED, __ATOMIC_RELEASE);
	else if (stop_event != REEF_EVENT_NONE)
		__atomic_store_n(&trig_state, TRIG_RUNNING, __ATOMIC_RELEASE);
	else
		__atomic_store_n(&trig_state, TRIG_NONE, __ATOMIC_RELEASE);
	publish_states();
	pthread_mutex_unlock(&control_lock);
}

/* An event whose subsystem is in the ASK state: initialise if needed, then
 * apply the triggers. Lock-free: may run in a signal handler. */
int reef__gate(uint32_t event_id)
{
	unsigned sub = (event_id >> 8) & 255u;
	int ts;
	if (REEF_UNLIKELY(reef__tls.dead))
		return 0;
	if (REEF_UNLIKELY(__atomic_load_n(&fatal_state, __ATOMIC_ACQUIRE) != FATAL_NONE)) {
		if (fatal_elsewhere())
			fatal_park();
		return 0;
	}
	if (!__atomic_load_n(&reef__st.initialised, __ATOMIC_ACQUIRE)) {
		pthread_once(&init_once, do_init);
	}
	if (!reef__st.enabled[sub] || reef__st.stop)
		return 0;
	ts = __atomic_load_n(&trig_state, __ATOMIC_ACQUIRE);
	if (ts == TRIG_NONE)
		return 1;
	if (ts == TRIG_ARMED) {
		int expect = TRIG_ARMED;
		if (event_id != trig_start)
			return 0;
		if (!__atomic_compare_exchange_n(&trig_state, &expect, TRIG_RUNNING, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return expect == TRIG_RUNNING;
		/* Not under control_lock: a handler may be here. The derived
		 * states depend only on trig_state and `enabled`. */
		publish_states();
		if (event_id == trig_stop) {
			__atomic_store_n(&trig_state, TRIG_DONE, __ATOMIC_RELEASE);
			publish_states();
		}
		return 1;
	}
	if (ts == TRIG_RUNNING) {
		if (event_id == trig_stop) {
			int expect = TRIG_RUNNING;
			if (__atomic_compare_exchange_n(&trig_state, &expect, TRIG_DONE, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				publish_states();
		}
		return 1;
	}
	return 0;
}

/* ---- buffers and packets ----------------------------------------------- */

static uint32_t gettid_(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Crash-safe: the ring as a shared mapping of its file, after a header
 * that tells `reef recover` how to read it; NULL if that fails. */
static char *map_ring(struct reef_buf *b, size_t len)
{
	char path[4400];
	struct reef_ring_header h;
	size_t total = REEF_RING_HEADER + len;
	void *m;
	int fd;
	reef__ring_path(path, sizeof(path), b->instance_id);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)total)) {
		close(fd);
		unlink(path);
		return NULL;
	}
	m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		unlink(path);
		return NULL;
	}
	/* Every page now, so that the fast path takes no page fault. */
	memset((char *)m + REEF_RING_HEADER, 0, len);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, REEF_RING_MAGIC, 8);
	h.version = 1;
	h.header_size = REEF_RING_HEADER;
	h.packet_size = b->packet_size;
	h.npackets = b->npackets;
	h.instance_id = b->instance_id;
	h.base = (uint64_t)(uintptr_t)((char *)m + REEF_RING_HEADER);
	memcpy(h.uuid, reef__st.uuid, 16);
	h.tid = b->tid;
	h.pid = (uint32_t)reef__st.pid;
	memcpy(m, &h, sizeof(h));
	b->map = m;
	b->map_len = total;
	return (char *)m + REEF_RING_HEADER;
}

static struct reef_buf *register_thread(void)
{
	struct reef_buf *b;
	size_t ps = reef__st.cfg.packet_size;
	size_t n = reef__st.cfg.buffer_size / ps;
	void *mem = NULL;
	if (n < 2)
		n = 2;
	if (n > 1u << 20)
		n = 1u << 20;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->npackets = (uint32_t)n;
	b->wake_at = n >= 4 ? (uint32_t)(n / 4) : 1;
	b->packet_size = (uint32_t)ps;
	b->tid = gettid_();
	b->fd = -1;
	b->tls = &reef__tls;
	pthread_mutex_lock(&reef__st.registry_lock);
	b->instance_id = reef__st.next_instance++;
	pthread_mutex_unlock(&reef__st.registry_lock);
	if (!(b->slot_seq = calloc(n, sizeof(uint64_t)))) {
		free(b);
		return NULL;
	}
	if (reef__st.cfg.crash_safe && !(mem = map_ring(b, n * ps)))
		warn("cannot map a crash-safe ring; this thread's stays in memory", NULL);
	if (!mem) {
		if (posix_memalign(&mem, 4096, n * ps)) {
			free(b->slot_seq);
			free(b);
			return NULL;
		}
		/* Touch every page now so that the fast path takes no page fault. */
		memset(mem, 0, n * ps);
	}
	b->base = mem;
	pthread_mutex_lock(&reef__st.registry_lock);
	b->next = reef__st.buffers;
	__atomic_store_n(&reef__st.buffers, b, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reef__st.registry_lock);
	pthread_setspecific(exit_key, b);
	return b;
}

struct reef_buf *reef__thread_buf(void)
{
	struct reef__tls *t = &reef__tls;
	if (!t->buf && !t->dead && !reef__st.stop) {
		t->buf = register_thread();
		if (t->buf)
			reef__profile_thread_registered();
	}
	return (struct reef_buf *)t->buf;
}

static void discard_one(struct reef_buf *b)
{
	if (b)
		reef__count_discarded(b, 1);
	else
		__atomic_fetch_add(&reef__st.lost_unattributed, 1, __ATOMIC_RELAXED);
}

/* Discard mode, before a tracing thread wakes the sleeping consumer: let
 * the consumer run on any of its CPUs but this one. Left to itself, the
 * scheduler often places it on the waker's CPU even with another idle, and
 * the tracing thread then waits while it writes (tracer/README.md, "Why
 * the waking thread's CPU is kept free"). One system call per wake-up (a
 * quarter of the ring), none while the waker stays on the same CPU;
 * async-signal-safe. */
static void keep_consumer_off_this_cpu(void)
{
	int tid = __atomic_load_n(&reef__st.consumer_tid, __ATOMIC_ACQUIRE), cpu;
	cpu_set_t cpus;
	if (!tid || !__atomic_load_n(&reef__st.consumer_sleeping, __ATOMIC_ACQUIRE))
		return;
	cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &reef__st.consumer_cpus) ||
	    __atomic_exchange_n(&reef__st.consumer_off, cpu, __ATOMIC_RELAXED) == cpu)
		return;
	cpus = reef__st.consumer_cpus;
	CPU_CLR(cpu, &cpus);
	sched_setaffinity(tid, sizeof(cpus), &cpus);
}

/* Publishes the current packet (writer side). */
static void close_packet(struct reef_buf *b, char *pos)
{
	char *pkt = b->cur;
	uint32_t slot = (uint32_t)(b->head % b->npackets);
	reef__seal(pkt, (size_t)(pos - pkt), __atomic_load_n(&b->discarded, __ATOMIC_RELAXED));
	__atomic_store_n(&b->slot_seq[slot], b->seq, __ATOMIC_RELEASE);
	__atomic_store_n(&b->head, b->head + 1, __ATOMIC_RELEASE);
	b->seq++;
	b->cur = NULL;
	/* A sleeping consumer wakes on its timer, or here once a quarter of
	 * the ring waits: one wake-up per several packets, not per packet. */
	if (reef__st.cfg.mode != REEF_MODE_OVERWRITE &&
	    b->head - __atomic_load_n(&b->tail, __ATOMIC_RELAXED) >= b->wake_at) {
		keep_consumer_off_this_cpu();
		reef__wake_consumer();
	}
}

static void fill_packet_header(struct reef_buf *b, char *pkt)
{
	char name[17] = { 0 };
	reef__store32(pkt + REEF_OFF_MAGIC, REEF_CTF_MAGIC);
	memcpy(pkt + REEF_OFF_UUID, reef__st.uuid, 16);
	reef__store32(pkt + REEF_OFF_STREAM_ID, 0);
	reef__store64(pkt + REEF_OFF_INSTANCE_ID, b->instance_id);
	reef__store64(pkt + REEF_OFF_SEQ_NUM, b->seq);
	reef__store32(pkt + REEF_OFF_TID, b->tid);
	/* The name may change while the thread runs: read it per packet. */
	prctl(PR_GET_NAME, name, 0, 0, 0);
	memcpy(pkt + REEF_OFF_THREAD_NAME, name, 16);
	reef__store64(pkt + REEF_OFF_TS_BEGIN, reef__now());
}

/* Takes the next slot for the writer; 0 if none is free (discard mode). */
static int open_packet(struct reef_buf *b)
{
	uint64_t head = b->head;
	uint32_t slot = (uint32_t)(head % b->npackets);
	char *pkt = b->base + (size_t)slot * b->packet_size;
	enum reef_mode mode = reef__st.cfg.mode;
	for (;;) {
		uint64_t tail = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
		if (head - tail < b->npackets)
			break;
		if (mode == REEF_MODE_OVERWRITE) {
			/* Reclaim the oldest packet; a snapshot copying it sees
			 * slot_seq change and drops its copy. */
			__atomic_compare_exchange_n(&b->tail, &tail, tail + 1, 0, __ATOMIC_ACQ_REL,
						    __ATOMIC_ACQUIRE);
			continue;
		}
		if (mode == REEF_MODE_BLOCK && fatal_elsewhere()) {
			/* Not dropped: the thread waits for the process's end. */
			fatal_park();
			return 0;
		}
		if (mode == REEF_MODE_BLOCK && !__atomic_load_n(&reef__st.stop, __ATOMIC_ACQUIRE)) {
			struct timespec ts = { 0, 20000 };
			reef__wake_consumer();
			nanosleep(&ts, NULL);
			continue;
		}
		return 0;
	}
	__atomic_store_n(&b->slot_seq[slot], REEF_SLOT_WRITING, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	b->cur = pkt;
	/* An open packet: no content_size, nothing committed; both before
	 * the new header, so that a crash-safe ring never shows this slot's
	 * previous packet under the new sequence number. */
	reef__store64(pkt + REEF_OFF_CONTENT_SIZE, 0);
	{
		char *first = pkt + REEF_PACKET_HEADER_SIZE;
		memcpy(pkt + b->packet_size - REEF_COMMIT_WORD, &first, sizeof(first));
	}
	REEF__SIGNAL_FENCE();
	fill_packet_header(b, pkt);
	/* Release: net.c reads the header of the packet `pos` points into. */
	__atomic_store_n(&reef__tls.pos, pkt + REEF_PACKET_HEADER_SIZE, __ATOMIC_RELEASE);
	reef__tls.end = pkt + b->packet_size - REEF_COMMIT_WORD;
	return 1;
}

static char *reserve_slower(size_t size) __attribute__((noinline));

/* Entered with reef__tls.nest already incremented by reef__reserve().
 * Discard mode, no packet because the ring is full (the consumer is
 * behind, or leaves the ring to fill when every live client lags): count
 * the event and return, before anything else and without a stack frame.
 * That is every event of such a thread, and it must cost no more than
 * recording one (tracer/README.md, "Dropping costs less than
 * recording"). Anything else goes on in reserve_slower(). */
char *reef__reserve_slow(size_t size)
{
	struct reef__tls *t = &reef__tls;
	struct reef_buf *b = (struct reef_buf *)t->buf;
	if (REEF_LIKELY(b != NULL) && !b->cur && t->nest == 1 &&
	    reef__st.cfg.mode == REEF_MODE_DISCARD &&
	    b->head - __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE) >= b->npackets &&
	    !t->dead && !__atomic_load_n(&reef__st.stop, __ATOMIC_RELAXED)) {
		reef__count_discarded(b, 1);
		t->nest--;
		return NULL;
	}
	return reserve_slower(size);
}

static char *reserve_slower(size_t size)
{
	struct reef__tls *t = &reef__tls;
	struct reef_buf *b = (struct reef_buf *)t->buf;
	char *p;
	if (t->nest != 1 || t->dead || reef__st.stop) {
		/* Nested (a signal handler interrupted an event), or after the
		 * thread's exit / a fork / shutdown. An event past the state
		 * test when a fatal signal came waits for the process's end. */
		if (t->nest == 1 && !t->dead && fatal_elsewhere())
			fatal_park();
		if (!t->dead && !reef__st.stop)
			discard_one(b);
		t->nest--;
		return NULL;
	}
	if (!b) {
		ensure_init();
		/* Initialising may have registered this thread (REEF_SAMPLE). */
		if (!(b = (struct reef_buf *)t->buf)) {
			b = register_thread();
			if (!b) {
				discard_one(NULL);
				t->nest--;
				return NULL;
			}
			t->buf = b;
			/* REEF_SAMPLE: sample this thread from now on. */
			reef__profile_thread_registered();
		}
	}
	if (size > b->packet_size - REEF_PACKET_HEADER_SIZE - REEF_COMMIT_WORD) {
		discard_one(b); /* can never fit */
		t->nest--;
		return NULL;
	}
	if (b->cur && (size_t)(t->end - t->pos) < size)
		close_packet(b, t->pos);
	if (!b->cur) {
		t->pos = t->end = NULL;
		if (!open_packet(b)) {
			discard_one(b);
			t->nest--;
			return NULL;
		}
	}
	p = t->pos;
	return p;
}

/* Closes the calling thread's packet if it holds anything new. */
static void close_own_packet(void)
{
	struct reef__tls *t = &reef__tls;
	struct reef_buf *b = (struct reef_buf *)t->buf;
	if (!b || t->dead)
		return;
	t->nest++;
	REEF__SIGNAL_FENCE();
	if (t->nest == 1) {
		if (b->cur) {
			close_packet(b, t->pos);
		} else if (__atomic_load_n(&b->discarded, __ATOMIC_RELAXED) != b->reported_discarded &&
			   reef__st.cfg.mode != REEF_MODE_OVERWRITE) {
			/* An empty packet that carries the discarded count. */
			if (open_packet(b))
				close_packet(b, t->pos);
		}
		t->pos = t->end = NULL;
	}
	REEF__SIGNAL_FENCE();
	t->nest--;
}

/* ---- consumer wake-up -------------------------------------------------- */

void reef__wake_consumer(void)
{
	/* Pairs with the consumer's fence between announcing its sleep and
	 * looking at the rings: either it sees our packet or we see it asleep. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&reef__st.consumer_sleeping, __ATOMIC_ACQUIRE) &&
	    reef__st.wake_pipe[1] >= 0) {
		char c = 1;
		/* write(2) is async-signal-safe; a full pipe means "awake soon". */
		if (write(reef__st.wake_pipe[1], &c, 1) < 0) {
			/* nothing to do */
		}
	}
}

/* ---- flush, snapshot, shutdown ----------------------------------------- */

int reef_flush(void)
{
	if (!__atomic_load_n(&reef__st.initialised, __ATOMIC_ACQUIRE) || reef__st.stop)
		return 0;
	close_own_packet();
	return reef__drain(reef__st.cfg.mode == REEF_MODE_OVERWRITE);
}

int reef_snapshot(void)
{
	return reef_flush();
}

/* The current packet of a thread that is still running at shutdown:
 * copy what it has committed and write that as its last packet. */
static void write_live_packet(struct reef_buf *b)
{
	struct reef__tls *t = b->tls;
	uint64_t head = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
	char *pkt = b->base + (size_t)(head % b->npackets) * b->packet_size;
	char *pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
	char *copy;
	size_t len;
	if (pos < pkt + REEF_PACKET_HEADER_SIZE || pos > pkt + b->packet_size) {
		reef__write_discard_packet(b); /* no current packet: just a count */
		return;
	}
	len = (size_t)(pos - pkt);
	copy = malloc(b->packet_size);
	if (!copy)
		return;
	memcpy(copy, pkt, len);
	if (__atomic_load_n(&b->head, __ATOMIC_ACQUIRE) == head &&
	    reef__load64(copy + REEF_OFF_SEQ_NUM) == b->seq) {
		reef__seal(copy, len, __atomic_load_n(&b->discarded, __ATOMIC_RELAXED));
		reef__write_packet(b, copy);
	}
	free(copy);
}

/* A clean end: everything is in the stream files, the rings go. Still
 * mapped: a thread may yet be inside an event. */
static void remove_rings(void)
{
	struct reef_buf *b;
	char path[4400];
	if (!reef__st.cfg.crash_safe)
		return;
	pthread_mutex_lock(&reef__st.registry_lock);
	for (b = reef__st.buffers; b; b = b->next) {
		if (b->map) {
			reef__ring_path(path, sizeof(path), b->instance_id);
			unlink(path);
		}
	}
	pthread_mutex_unlock(&reef__st.registry_lock);
	snprintf(path, sizeof(path), "%s/" REEF_RING_DIR, reef__st.dir);
	rmdir(path);
}

void reef_shutdown(void)
{
	struct reef_buf *b;
	int i;
	if (!__atomic_load_n(&reef__st.initialised, __ATOMIC_ACQUIRE) || reef__st.stop)
		return;
	if ((int)getpid() != reef__st.pid)
		return;
	/* New events stop at the state test; give the ones in flight a
	 * moment to commit. */
	pthread_mutex_lock(&control_lock);
	memset(reef__st.enabled, 0, sizeof(reef__st.enabled));
	publish_states();
	pthread_mutex_unlock(&control_lock);
	for (i = 0; i < 100; i++)
		sched_yield();
	close_own_packet();
	reef__drain(reef__st.cfg.mode == REEF_MODE_OVERWRITE);

	pthread_mutex_lock(&reef__st.drain_lock);
	pthread_mutex_lock(&reef__st.registry_lock);
	__atomic_store_n(&reef__st.stop, 1, __ATOMIC_RELEASE);
	for (b = reef__st.buffers; b; b = b->next) {
		if (!b->retired && b->tls && b->tls != &reef__tls)
			write_live_packet(b);
		else if (!b->retired && b->tls)
			reef__write_discard_packet(b);
	}
	pthread_mutex_unlock(&reef__st.registry_lock);
	pthread_mutex_unlock(&reef__st.drain_lock);

	reef__clock_refine();
	reef__write_metadata();
	reef__wake_consumer();
	reef__net_finish(); /* live clients: the rest, the metadata, the end */
	remove_rings();
}

static void at_exit(void)
{
	reef_shutdown();
}

/* pthread key destructor: the thread is exiting. Its TLS is still valid. */
static void thread_exit(void *arg)
{
	struct reef_buf *b = (struct reef_buf *)arg;
	reef__sample_thread_stop();
	close_own_packet();
	pthread_mutex_lock(&reef__st.registry_lock);
	reef__tls.dead = 1;
	reef__tls.pos = reef__tls.end = NULL;
	b->tls = NULL;
	__atomic_store_n(&b->retired, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reef__st.registry_lock);
	reef__wake_consumer();
}

/* The child of a fork records nothing and never touches the parent's
 * buffers or files: its copy of them is simply abandoned. */
static void after_fork_child(void)
{
	struct reef_buf *b;
	memset(reef__shared.state, REEF__OFF, sizeof(reef__shared.state));
	/* The child's copies of the parent threads' perf_event descriptors
	 * (they count the parent's threads, never the child; closed, not
	 * disabled: the event is the parent's). */
	reef__sample_forget();
	for (b = reef__st.buffers; b; b = b->next)
		if (b->sample_fd > 0) {
			close(b->sample_fd);
			b->sample_fd = 0;
		}
	reef__st.stop = 1;
	reef__st.consumer_tid = 0; /* the parent's consumer */
	reef__tls.dead = 1;
	reef__tls.pos = reef__tls.end = NULL;
	reef__net_after_fork();
}
