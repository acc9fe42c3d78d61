/*
 * profile.c — sampling (REEF_SAMPLE), function entry/exit
 * (-finstrument-functions) and the loaded-objects statedump, recorded as
 * built-in events (`reef:sample`, `reef:func_entry`, `reef:func_exit`,
 * `reef:object`) that every trace's metadata declares (see
 * reef__builtin_metadata()).
 *
 * Sampling: one perf_event per sampled thread (pid 0, any CPU), opened when
 * the thread first needs its trace buffer (the thread that starts the
 * library, then each thread at its first event), its overflow delivered to
 * that thread (F_SETOWN_EX F_OWNER_TID) as a real-time signal (F_SETSIG,
 * REEF_SAMPLE_SIGNAL, default SIGRTMIN+5). The handler records a sample in
 * the thread's own stream: its time on the trace's clock, the CPU and the
 * user call stack, taken either by walking frame pointers from the
 * interrupted context (`fp`, the default) or from the call chain the
 * kernel wrote into the event's ring (`perf`). No allocation, no lock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

#define MAX_DEPTH 128
#define RING_PAGES 8 /* data pages of the `perf` ring (a power of two) */

/* What REEF_SAMPLE / cfg.sample asked for. */
static struct {
	int on;             /* sampling configured */
	uint32_t type;      /* PERF_TYPE_* */
	uint64_t config;    /* PERF_COUNT_* */
	uint64_t period;    /* ns for the clocks, events for hardware counters */
	int use_ring;       /* stacks from the kernel's call chain */
	int sig;
} smp;

/* The thread's sampling state; initial-exec: read in the handler. */
struct sample_tls {
	int fd;                 /* perf_event, 0: none (fds here are > 0) */
	int started;            /* setup tried */
	char *ring;             /* `perf` mode: the mapping, else NULL */
	size_t ring_len;
	uintptr_t stack_lo;     /* the thread's stack */
	uintptr_t stack_hi;
	uint64_t objects_seen;  /* statedump generation this thread knows */
};
static __thread struct sample_tls stls __attribute__((tls_model("initial-exec")));

/* ---- configuration ------------------------------------------------------ */

static uint64_t parse_period(const char *s, int clock, int *ok)
{
	char *end;
	double v = strtod(s, &end);
	double mul = 1;
	*ok = end != s && v > 0;
	if (!*ok)
		return 0;
	if (clock) {
		if (!strcmp(end, "ns") || !*end)
			mul = 1;
		else if (!strcmp(end, "us"))
			mul = 1e3;
		else if (!strcmp(end, "ms"))
			mul = 1e6;
		else if (!strcmp(end, "s"))
			mul = 1e9;
		else if (!strcmp(end, "hz") || !strcmp(end, "Hz"))
			return (uint64_t)(1e9 / v);
		else
			*ok = 0;
	} else if (*end) {
		*ok = 0;
	}
	return (uint64_t)(v * mul);
}

/* "cpu-clock:1ms", "task-clock:250us", "cycles:1000000" (also "1khz"-like
 * "cpu-clock:1000hz"); "" or "0": off. */
static void configure(const char *spec, const char *stack)
{
	char name[32];
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	int ok = 1, clock = 1;
	if (!*spec || !strcmp(spec, "0") || n >= sizeof(name))
		return;
	memcpy(name, spec, n);
	name[n] = 0;
	if (!strcmp(name, "cpu-clock") || !strcmp(name, "1")) {
		smp.type = PERF_TYPE_SOFTWARE;
		smp.config = PERF_COUNT_SW_CPU_CLOCK;
	} else if (!strcmp(name, "task-clock")) {
		smp.type = PERF_TYPE_SOFTWARE;
		smp.config = PERF_COUNT_SW_TASK_CLOCK;
	} else if (!strcmp(name, "cycles")) {
		smp.type = PERF_TYPE_HARDWARE;
		smp.config = PERF_COUNT_HW_CPU_CYCLES;
		clock = 0;
	} else if (!strcmp(name, "instructions")) {
		smp.type = PERF_TYPE_HARDWARE;
		smp.config = PERF_COUNT_HW_INSTRUCTIONS;
		clock = 0;
	} else {
		fprintf(stderr, "libreef: REEF_SAMPLE: unknown event `%s` (cpu-clock, task-clock, cycles, instructions); not sampling\n", name);
		return;
	}
	smp.period = clock ? 1000000 : 1000000;
	if (colon && colon[1])
		smp.period = parse_period(colon + 1, clock, &ok);
	if (!ok || !smp.period) {
		fprintf(stderr, "libreef: REEF_SAMPLE: bad period `%s` (e.g. 1ms, 250us, 1000hz; a count for hardware events); not sampling\n", colon + 1);
		return;
	}
	smp.use_ring = stack && !strcmp(stack, "perf");
	if (stack && *stack && strcmp(stack, "perf") && strcmp(stack, "fp"))
		fprintf(stderr, "libreef: REEF_SAMPLE_STACK must be fp or perf; using fp\n");
	smp.on = 1;
}

/* ---- loaded objects ----------------------------------------------------- */

/* One loaded object, as recorded by `reef:object`. */
struct object {
	uint64_t bias;       /* load bias: file address = address - bias */
	uint64_t start;      /* lowest mapped address of its PT_LOAD segments */
	uint64_t size;
	uint8_t build_id[64];
	uint32_t build_id_len;
	char path[512];
};

struct objects {
	uint64_t gen;
	size_t n;
	struct object *v;
	struct objects *older; /* kept: a handler may still read them */
};

static struct objects *objects_now;      /* published by statedump() */
static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long objects_adds, objects_subs;
static int objects_wanted;               /* sampling or func events */

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	(void)size;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1;
}

struct collect {
	struct object *v;
	size_t n, cap;
};

static int collect_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct collect *c = arg;
	struct object o;
	uint64_t lo = UINT64_MAX, hi = 0;
	int i;
	(void)size;
	memset(&o, 0, sizeof(o));
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			if (ph->p_vaddr < lo)
				lo = ph->p_vaddr;
			if (ph->p_vaddr + ph->p_memsz > hi)
				hi = ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !o.build_id_len) {
			const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
			const char *e = p + ph->p_memsz;
			while (p + sizeof(ElfW(Nhdr)) <= e) {
				const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
				const char *name = p + sizeof(*nh);
				const char *desc = name + ((nh->n_namesz + 3) & ~3u);
				if (desc + nh->n_descsz > e)
					break;
				if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
				    nh->n_descsz <= sizeof(o.build_id)) {
					memcpy(o.build_id, desc, nh->n_descsz);
					o.build_id_len = nh->n_descsz;
					break;
				}
				p = desc + ((nh->n_descsz + 3) & ~3u);
			}
		}
	}
	if (hi <= lo)
		return 0;
	o.bias = info->dlpi_addr;
	o.start = info->dlpi_addr + lo;
	o.size = hi - lo;
	if (info->dlpi_name && info->dlpi_name[0]) {
		/* dlopen("./x.so") keeps the name as given: made absolute, so
		 * that the trace is read from anywhere. */
		char *abs = info->dlpi_name[0] != '/' && strchr(info->dlpi_name, '/')
				    ? realpath(info->dlpi_name, NULL) : NULL;
		snprintf(o.path, sizeof(o.path), "%s", abs ? abs : info->dlpi_name);
		free(abs);
	} else if (c->n == 0) {
		/* The program itself. */
		ssize_t k = readlink("/proc/self/exe", o.path, sizeof(o.path) - 1);
		o.path[k > 0 ? k : 0] = 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		struct object *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return 1;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = o;
	return 0;
}

/* Takes a new statedump if the set of objects changed (or `force`), and
 * publishes it; threads record it at their next sample or event. Not in a
 * signal handler (dl_iterate_phdr takes the loader's lock). */
static void statedump(int force)
{
	unsigned long long c[2] = { 0, 0 };
	struct collect col = { NULL, 0, 0 };
	struct objects *o;
	dl_iterate_phdr(count_cb, c);
	pthread_mutex_lock(&objects_lock);
	if (!force && objects_now && c[0] == objects_adds && c[1] == objects_subs) {
		pthread_mutex_unlock(&objects_lock);
		return;
	}
	dl_iterate_phdr(collect_cb, &col);
	o = calloc(1, sizeof(*o));
	if (!o) {
		free(col.v);
		pthread_mutex_unlock(&objects_lock);
		return;
	}
	objects_adds = c[0];
	objects_subs = c[1];
	o->gen = objects_now ? objects_now->gen + 1 : 1;
	o->n = col.n;
	o->v = col.v;
	o->older = objects_now;
	__atomic_store_n(&objects_now, o, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&objects_lock);
}

/* The generation some thread has recorded (claimed by CAS: one thread
 * records each statedump). */
static uint64_t objects_recorded;

#define ID_SAMPLE ((REEF_SUBSYS_SAMPLE << 8) | 0u)
#define ID_OBJECT ((REEF_SUBSYS_SAMPLE << 8) | 1u)
#define ID_FUNC_ENTRY ((REEF_SUBSYS_FUNC << 8) | 0u)
#define ID_FUNC_EXIT ((REEF_SUBSYS_FUNC << 8) | 1u)

/* Records the latest statedump if no thread has yet. Async-signal-safe. */
static void record_objects(void)
{
	struct objects *o = __atomic_load_n(&objects_now, __ATOMIC_ACQUIRE);
	uint64_t seen;
	size_t i;
	if (!o)
		return;
	seen = __atomic_load_n(&objects_recorded, __ATOMIC_ACQUIRE);
	if (seen >= o->gen || !__atomic_compare_exchange_n(&objects_recorded, &seen, o->gen, 0,
							     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i < o->n; i++) {
		const struct object *ob = &o->v[i];
		size_t plen = strlen(ob->path);
		size_t sz = REEF_EVENT_HEADER_SIZE + 4 + 8 + 8 + 8 + 4 + ob->build_id_len + plen + 1;
		char *p = reef__reserve(sz), *q;
		if (!p)
			continue;
		q = reef__put_header(p, ID_OBJECT);
		q = reef__put_32(q, (uint32_t)o->gen);
		q = reef__put_64(q, ob->bias);
		q = reef__put_64(q, ob->start);
		q = reef__put_64(q, ob->size);
		q = reef__put_32(q, ob->build_id_len);
		q = reef__put_bytes(q, ob->build_id, ob->build_id_len);
		q = reef__put_string(q, ob->path, plen);
		reef__commit(q);
	}
}

/* The consumer, every wake-up: a dlopen/dlclose gives a new statedump. */
void reef__objects_poll(void)
{
	if (__atomic_load_n(&objects_wanted, __ATOMIC_ACQUIRE))
		statedump(0);
}

/* ---- the handler -------------------------------------------------------- */

static void put_sample(uint32_t cpu, const uint64_t *ips, uint32_t n)
{
	size_t sz = REEF_EVENT_HEADER_SIZE + 4 + 4 + 8u * n;
	char *p, *q;
	struct objects *o = __atomic_load_n(&objects_now, __ATOMIC_ACQUIRE);
	if (o && __atomic_load_n(&objects_recorded, __ATOMIC_RELAXED) != o->gen && !reef__tls.nest)
		record_objects();
	p = reef__reserve(sz);
	if (!p)
		return;
	q = reef__put_header(p, ID_SAMPLE);
	q = reef__put_32(q, cpu);
	q = reef__put_32(q, n);
	q = reef__put_bytes(q, ips, 8u * n);
	reef__commit(q);
}

/* Frame pointers: the interrupted pc, then the return address of each
 * frame, reading only the thread's own stack between the interrupted
 * stack pointer and its top. */
static uint32_t walk_fp(const ucontext_t *uc, uint64_t *ips)
{
	uint32_t n = 0;
#if defined(__x86_64__)
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc;
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.sp;
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
	uintptr_t pc = 0, sp = 0, fp = 0;
#endif
	uintptr_t hi = stls.stack_hi;
	ips[n++] = pc;
	/* Interrupted on another stack (a sigaltstack handler, a coroutine):
	 * the memory between it and this thread's stack top is not known to
	 * be mapped, so only the pc. */
	if (sp < stls.stack_lo || sp >= hi)
		return n;
	while (n < MAX_DEPTH && fp >= sp && fp + 16 <= hi && !(fp & 7)) {
		const uintptr_t *f = (const uintptr_t *)fp;
		uintptr_t next = f[0], ret = f[1];
		if (!ret)
			break;
		/* A return address points after the call: -1 is inside it
		 * (the reader symbolizes all but the first frame at -1). */
		ips[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* `perf` mode: every record the kernel wrote since the last signal. */
static void drain_ring(int record)
{
	struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)stls.ring;
	char *data = stls.ring + 4096;
	uint64_t mask = RING_PAGES * 4096 - 1;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail;
	uint64_t rec[MAX_DEPTH + 8];
	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		size_t k, len;
		char *dst = (char *)rec;
		for (k = 0; k < sizeof(h); k++)
			((char *)&h)[k] = data[(tail + k) & mask];
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		len = h.size < sizeof(rec) ? h.size : sizeof(rec);
		for (k = 0; k < len; k++)
			dst[k] = data[(tail + k) & mask];
		if (record && h.type == PERF_RECORD_SAMPLE && len >= sizeof(h) + 16) {
			/* After the header: u32 cpu, u32 res; u64 nr; u64 ips[nr]. */
			uint64_t *w = (uint64_t *)(dst + sizeof(h));
			uint32_t cpu = (uint32_t)w[0];
			uint64_t nr = w[1], i, out[MAX_DEPTH];
			uint32_t n = 0;
			for (i = 0; i < nr && 2 + i < (len - sizeof(h)) / 8 && n < MAX_DEPTH; i++)
				if (w[2 + i] < (uint64_t)PERF_CONTEXT_MAX)
					out[n++] = w[2 + i];
			put_sample(cpu, out, n);
		} else if (record && h.type == PERF_RECORD_LOST) {
			struct reef_buf *b = reef__tls.buf;
			if (b && len >= sizeof(h) + 16)
				reef__count_discarded(b, ((uint64_t *)(dst + sizeof(h)))[1]);
		}
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
}

static void on_sample(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	uint8_t st;
	(void)sig;
	if (!stls.fd || si->si_fd != stls.fd || reef__tls.dead) {
		errno = saved;
		return;
	}
	st = __atomic_load_n(&reef__shared.state[REEF_SUBSYS_SAMPLE], __ATOMIC_RELAXED);
	if (stls.ring) {
		drain_ring(st == REEF__ON);
	} else if (st == REEF__ON) {
		uint64_t ips[MAX_DEPTH];
		uint32_t n = walk_fp((const ucontext_t *)ucv, ips);
		put_sample((uint32_t)sched_getcpu(), ips, n);
	}
	errno = saved;
}

/* ---- per-thread setup --------------------------------------------------- */

static int handler_installed;

static void install_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(smp.sig, &sa, NULL);
	handler_installed = 1;
}

/* Opens the calling thread's perf_event. Needs its buffer registered (the
 * handler records into it and must not allocate). Not in a handler. */
void reef__sample_thread_start(void)
{
	struct perf_event_attr a;
	struct f_owner_ex own;
	pthread_attr_t pa;
	int fd;
	if (!smp.on || stls.started || reef__tls.dead || !reef__tls.buf || reef__st.stop)
		return;
	stls.started = 1;
	if (!pthread_getattr_np(pthread_self(), &pa)) {
		void *addr;
		size_t size;
		if (!pthread_attr_getstack(&pa, &addr, &size)) {
			stls.stack_lo = (uintptr_t)addr;
			stls.stack_hi = (uintptr_t)addr + size;
		}
		pthread_attr_destroy(&pa);
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = smp.type;
	a.config = smp.config;
	a.sample_period = smp.period;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	a.wakeup_events = 1;
	if (smp.use_ring) {
		a.sample_type = PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;
		a.exclude_callchain_kernel = 1;
	}
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		static int warned;
		int e = errno;
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			fprintf(stderr, "libreef: REEF_SAMPLE: perf_event_open: %s (%s); not sampling\n", strerror(e),
				e == ENOENT || e == EOPNOTSUPP ? "this event does not exist here: no PMU?"
							       : "kernel.perf_event_paranoid?");
		return;
	}
	if (smp.use_ring) {
		size_t len = (RING_PAGES + 1) * 4096;
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			close(fd);
			return;
		}
		stls.ring = m;
		stls.ring_len = len;
	}
	own.type = F_OWNER_TID;
	own.pid = (pid_t)syscall(SYS_gettid);
	stls.fd = fd;
	if (fcntl(fd, F_SETSIG, smp.sig) || fcntl(fd, F_SETOWN_EX, &own) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC)) {
		reef__sample_thread_stop();
		return;
	}
	((struct reef_buf *)reef__tls.buf)->sample_fd = fd;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

/* The thread exits. */
void reef__sample_thread_stop(void)
{
	int fd = stls.fd;
	if (!fd)
		return;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	reef__sample_forget();
}

/* Forgets the thread's perf_event; in a forked child, where the descriptor
 * is a copy of the parent's (disabling it there would stop the parent's
 * sampling), only that. */
void reef__sample_forget(void)
{
	int fd = stls.fd;
	if (!fd)
		return;
	stls.fd = 0;
	REEF__SIGNAL_FENCE();
	if (reef__tls.buf)
		((struct reef_buf *)reef__tls.buf)->sample_fd = 0;
	close(fd);
	if (stls.ring) {
		munmap(stls.ring, stls.ring_len);
		stls.ring = NULL;
	}
}

/* A new thread registered its buffer (first event): sample it too, and
 * record the objects if they changed. */
void reef__profile_thread_registered(void)
{
	if (__atomic_load_n(&objects_wanted, __ATOMIC_ACQUIRE))
		statedump(0);
	reef__sample_thread_start();
}

/* do_init: reads REEF_SAMPLE (over cfg.sample). */
void reef__profile_init(const struct reef_config *cfg)
{
	const char *env = getenv("REEF_SAMPLE");
	const char *stack = getenv("REEF_SAMPLE_STACK");
	const char *sig = getenv("REEF_SAMPLE_SIGNAL");
	if (!env || !*env)
		env = cfg->sample;
	if (!stack || !*stack)
		stack = cfg->sample_stack;
	smp.sig = SIGRTMIN + 5;
	if (sig && *sig) {
		int s = atoi(sig);
		if (s >= SIGRTMIN && s <= SIGRTMAX)
			smp.sig = s;
		else
			fprintf(stderr, "libreef: REEF_SAMPLE_SIGNAL must be a real-time signal (%d..%d); using %d\n",
				SIGRTMIN, SIGRTMAX, smp.sig);
	}
	if (env)
		configure(env, stack);
	if (smp.on) {
		install_handler();
		__atomic_store_n(&objects_wanted, 1, __ATOMIC_RELEASE);
	}
}

/* After do_init, on the initialising thread (not in a handler). */
void reef__profile_start(void)
{
	if (!smp.on)
		return;
	statedump(1);
	if (reef__thread_buf())
		reef__sample_thread_start();
	if (reef__tls.buf && !reef__tls.nest) {
		/* The statedump first in the stream, before any sample. */
		record_objects();
	}
}

/* Libraries linked to the program start sampling before main(). */
__attribute__((constructor)) static void profile_ctor(void)
{
	const char *env = getenv("REEF_SAMPLE");
	if (env && *env && strcmp(env, "0"))
		reef__ensure_init();
}

/* ---- function entry/exit (-finstrument-functions) ----------------------- */

static void func_event(uint16_t id, void *fn, void *site)
{
	char *p, *q;
	if (!reef__enabled(REEF_SUBSYS_FUNC, id))
		return;
	if (REEF_UNLIKELY(!__atomic_load_n(&objects_wanted, __ATOMIC_RELAXED))) {
		/* First function event of the process: the objects. */
		if (!__atomic_exchange_n(&objects_wanted, 1, __ATOMIC_ACQ_REL))
			statedump(1);
	}
	{
		struct objects *o = __atomic_load_n(&objects_now, __ATOMIC_ACQUIRE);
		if (REEF_UNLIKELY(o && __atomic_load_n(&objects_recorded, __ATOMIC_RELAXED) != o->gen) &&
		    reef__tls.buf && !reef__tls.nest)
			record_objects();
	}
	p = reef__reserve(REEF_EVENT_HEADER_SIZE + 16);
	if (!p)
		return;
	q = reef__put_header(p, id);
	q = reef__put_64(q, (uint64_t)(uintptr_t)fn);
	q = reef__put_64(q, (uint64_t)(uintptr_t)site);
	reef__commit(q);
}

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site)
{
	func_event(ID_FUNC_ENTRY, fn, site);
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site)
{
	func_event(ID_FUNC_EXIT, fn, site);
}

/* ---- metadata ------------------------------------------------------------ */

/* The built-in events, declared in every trace's metadata (after the
 * schema's); the types are the prelude's (crates/reef-gen/src/tsdl.rs). */
const char reef__builtin_events[] =
	"\n/* libreef: a sample of the thread's user call stack (innermost first) */\n"
	"event {\n\tname = \"reef:sample\";\n\tid = 65280;\n\tstream_id = 0;\n"
	"\tfields := struct {\n\t\tuint32_t cpu;\n\t\tuint32_t stack_len;\n"
	"\t\treef_ptr_t stack[stack_len];\n\t};\n};\n"
	"\n/* libreef: an object loaded in the process (statedump `gen`) */\n"
	"event {\n\tname = \"reef:object\";\n\tid = 65281;\n\tstream_id = 0;\n"
	"\tfields := struct {\n\t\tuint32_t gen;\n\t\treef_ptr_t bias;\n\t\treef_ptr_t start;\n"
	"\t\tuint64_t size;\n\t\tuint32_t build_id_len;\n\t\tuint8_t build_id[build_id_len];\n"
	"\t\tstring path;\n\t};\n};\n"
	"\n/* libreef: function entry (-finstrument-functions) */\n"
	"event {\n\tname = \"reef:func_entry\";\n\tid = 65024;\n\tstream_id = 0;\n"
	"\tfields := struct {\n\t\treef_ptr_t addr;\n\t\treef_ptr_t call_site;\n\t};\n};\n"
	"\n/* libreef: function exit (-finstrument-functions) */\n"
	"event {\n\tname = \"reef:func_exit\";\n\tid = 65025;\n\tstream_id = 0;\n"
	"\tfields := struct {\n\t\treef_ptr_t addr;\n\t\treef_ptr_t call_site;\n\t};\n};\n";
