/*
 * gen-kernel.c — writes a large synthetic LTTng-kernel-like CTF 1.8 trace
 * for bench/view, fast (about 1 GB in seconds).
 *
 *   gen-kernel OUT_DIR [BYTES] [CPUS] [THREADS]
 *
 * BYTES (default 1 GiB; suffix K/M/G) is the size of the stream files to
 * write; CPUS (default 8) the number of per-CPU streams (channel0_N, with
 * LTTng's index/channel0_N.idx); THREADS (default 400) the threads alive at
 * any time (about 20% more are forked, and as many exit, over the trace).
 *
 * Layout as lttng-modules 2.12+ writes it on x86-64: the compact event
 * header (5-bit id, 27-bit timestamp; id 31 and a 32-bit id + 64-bit
 * timestamp when the id is above 30 or the time since the stream's
 * previous event does not fit in 27 bits), 1 MiB packets with the usual
 * packet context (cpu_id), byte-aligned integers, lttng-modules' event
 * names and fields. Tracepoints get ids 0..30, system calls 31 and up (so
 * they use the extended header, as with `lttng enable-event -k --all`).
 *
 * The schedule is a small simulation, deterministic for a given command
 * line: each thread alternates CPU bursts (a per-thread mean, log-uniform in
 * 2 us .. 2 ms) with blocking system calls (a per-thread mean sleep,
 * log-uniform in 20 us .. 2 s); wakeups (sched_waking + sched_wakeup, often
 * from an interrupt) put it on a CPU's run queue; idle CPUs pick from
 * their queue or steal; a thread that used up its slice with others
 * waiting is preempted. Between those, running threads make short system
 * calls, take interrupts and soft-IRQs, allocate pages and start timers;
 * threads fork (sched_process_fork, sched_wakeup_new), exec and exit. A
 * statedump at the start names every thread and its process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PACKET (1u << 20)
#define HEAD 84 /* packet header (32) + packet context (52) */
#define MAXCPU 64
#define MAXTHR 65536
#define CLOCK_OFFSET 1700000000000000000ull
#define START_NS 5000000000ull
#define GAP_RUN 15000.0  /* mean ns between actions of a running thread */
#define GAP_IDLE 400000.0 /* ... of an idle CPU */

/* ---- random numbers (splitmix64 + xoshiro256**) ------------------------ */
static uint64_t rs[4];
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t rnd(void)
{
	uint64_t r = rotl(rs[1] * 5, 7) * 9, t = rs[1] << 17;
	rs[2] ^= rs[0];
	rs[3] ^= rs[1];
	rs[1] ^= rs[2];
	rs[0] ^= rs[3];
	rs[2] ^= t;
	rs[3] = rotl(rs[3], 45);
	return r;
}
static void seed(uint64_t s)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (s += 0x9E3779B97F4A7C15ull);
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		rs[i] = z ^ (z >> 31);
	}
}
static double unif(void) { return (double)(rnd() >> 11) * 0x1.0p-53; }
static uint64_t below(uint64_t n) { return rnd() % n; }
static uint64_t range(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }
static uint64_t expo(double mean)
{
	double u = unif();
	return (uint64_t)(-mean * log(u > 1e-12 ? u : 1e-12)) + 1;
}
static double loguni(double lo, double hi) { return exp(log(lo) + unif() * (log(hi) - log(lo))); }

/* ---- event classes ------------------------------------------------------ */
enum {
	E_SWITCH, E_WAKING, E_WAKEUP, E_WAKEUP_NEW, E_MIGRATE, E_FORK, E_EXEC, E_EXIT, E_FREE,
	E_IRQ_ENTRY, E_IRQ_EXIT, E_SOFTIRQ_RAISE, E_SOFTIRQ_ENTRY, E_SOFTIRQ_EXIT,
	E_HRTIMER_START, E_HRTIMER_ENTRY, E_HRTIMER_EXIT, E_PAGE_ALLOC, E_PAGE_FREE,
	E_SD_START, E_SD_PROCESS, E_SD_END, E_CPU_IDLE, E_RCU,
	E_SYSCALLS = 31
};

#define COMM(n) "\t\tinteger { size = 8; align = 8; signed = 0; encoding = UTF8; base = 10; } " n "[16];\n"
#define I32(n) "\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; base = 10; } " n ";\n"
#define U32(n) "\t\tinteger { size = 32; align = 8; signed = 0; encoding = none; base = 10; } " n ";\n"
#define I64(n) "\t\tinteger { size = 64; align = 8; signed = 1; encoding = none; base = 10; } " n ";\n"
#define U64(n) "\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; base = 10; } " n ";\n"
#define X64(n) "\t\tinteger { size = 64; align = 8; signed = 0; encoding = none; base = 16; } " n ";\n"
#define STR(n) "\t\tstring " n ";\n"

static const struct {
	const char *name, *fields;
} tracepoints[] = {
	[E_SWITCH] = {"sched_switch", COMM("_prev_comm") I32("_prev_tid") I32("_prev_prio") I64("_prev_state")
					      COMM("_next_comm") I32("_next_tid") I32("_next_prio")},
	[E_WAKING] = {"sched_waking", COMM("_comm") I32("_tid") I32("_prio") I32("_target_cpu")},
	[E_WAKEUP] = {"sched_wakeup", COMM("_comm") I32("_tid") I32("_prio") I32("_target_cpu")},
	[E_WAKEUP_NEW] = {"sched_wakeup_new", COMM("_comm") I32("_tid") I32("_prio") I32("_target_cpu")},
	[E_MIGRATE] = {"sched_migrate_task", COMM("_comm") I32("_tid") I32("_prio") I32("_orig_cpu") I32("_dest_cpu")},
	[E_FORK] = {"sched_process_fork",
		    COMM("_parent_comm") I32("_parent_tid") I32("_parent_pid") U32("_parent_ns_inum") COMM("_child_comm")
			I32("_child_tid") U32("__vtids_length")
		    "\t\tinteger { size = 32; align = 8; signed = 1; encoding = none; base = 10; } _vtids[__vtids_length];\n"
			I32("_child_pid") U32("_child_ns_inum")},
	[E_EXEC] = {"sched_process_exec", STR("_filename") I32("_tid") I32("_old_tid")},
	[E_EXIT] = {"sched_process_exit", COMM("_comm") I32("_tid") I32("_prio")},
	[E_FREE] = {"sched_process_free", COMM("_comm") I32("_tid") I32("_prio")},
	[E_IRQ_ENTRY] = {"irq_handler_entry", I32("_irq") STR("_name")},
	[E_IRQ_EXIT] = {"irq_handler_exit", I32("_irq") I32("_ret")},
	[E_SOFTIRQ_RAISE] = {"softirq_raise", U32("_vec")},
	[E_SOFTIRQ_ENTRY] = {"softirq_entry", U32("_vec")},
	[E_SOFTIRQ_EXIT] = {"softirq_exit", U32("_vec")},
	[E_HRTIMER_START] = {"timer_hrtimer_start", X64("_hrtimer") X64("_function") I64("_expires") I64("_softexpires")},
	[E_HRTIMER_ENTRY] = {"timer_hrtimer_expire_entry", X64("_hrtimer") I64("_now") X64("_function")},
	[E_HRTIMER_EXIT] = {"timer_hrtimer_expire_exit", X64("_hrtimer")},
	[E_PAGE_ALLOC] = {"kmem_mm_page_alloc", X64("_page") U64("_pfn") U32("_order") U32("_gfp_flags") I32("_migratetype")},
	[E_PAGE_FREE] = {"kmem_mm_page_free", X64("_page") U64("_pfn") U32("_order")},
	[E_SD_START] = {"lttng_statedump_start", ""},
	[E_SD_PROCESS] = {"lttng_statedump_process_state",
			  I32("_tid") I32("_vtid") I32("_pid") I32("_vpid") I32("_ppid") I32("_vppid") COMM("_name")
			      I32("_type") I32("_mode") I32("_submode") I32("_status") U32("_cpu")},
	[E_SD_END] = {"lttng_statedump_end", ""},
	[E_CPU_IDLE] = {"power_cpu_idle", U32("_state") U32("_cpu_id")},
	[E_RCU] = {"rcu_utilization", STR("_s")},
};
#define NTP ((int)(sizeof(tracepoints) / sizeof(tracepoints[0])))

/* System calls: entry id = E_SYSCALLS + 2*i, exit id = entry + 1. */
enum { S_READ, S_WRITE, S_FUTEX, S_EPOLL_WAIT, S_POLL, S_IOCTL, S_OPENAT, S_CLOSE, S_MMAP, S_MUNMAP,
       S_CLOCK_NANOSLEEP, S_RECVFROM, S_SENDTO, S_GETPID, NSYS };
static const struct {
	const char *name, *entry, *exit;
	int blocks; /* may put the thread to sleep */
} syscalls[NSYS] = {
	[S_READ] = {"read", U32("_fd") X64("_buf") U64("_count"), I64("_ret") X64("_buf"), 1},
	[S_WRITE] = {"write", U32("_fd") X64("_buf") U64("_count"), I64("_ret"), 0},
	[S_FUTEX] = {"futex", X64("_uaddr") I32("_op") U32("_val") X64("_utime") X64("_uaddr2") U32("_val3"),
		     I64("_ret") X64("_uaddr") X64("_uaddr2"), 1},
	[S_EPOLL_WAIT] = {"epoll_wait", I32("_epfd") I32("_maxevents") I32("_timeout"), I64("_ret"), 1},
	[S_POLL] = {"poll", X64("_ufds") U32("_nfds") I32("_timeout_msecs"), I64("_ret"), 1},
	[S_IOCTL] = {"ioctl", U32("_fd") U32("_cmd") U64("_arg"), I64("_ret") U64("_arg"), 0},
	[S_OPENAT] = {"openat", I32("_dfd") STR("_filename") I32("_flags") U32("_mode"), I64("_ret"), 0},
	[S_CLOSE] = {"close", U32("_fd"), I64("_ret"), 0},
	[S_MMAP] = {"mmap", X64("_addr") U64("_len") I32("_prot") I32("_flags") I32("_fd") U64("_pgoff"), X64("_ret"), 0},
	[S_MUNMAP] = {"munmap", X64("_addr") U64("_len"), I64("_ret"), 0},
	[S_CLOCK_NANOSLEEP] = {"clock_nanosleep", I32("_which_clock") I32("_flags") X64("_rqtp"), I64("_ret") X64("_rmtp"), 1},
	[S_RECVFROM] = {"recvfrom", I32("_fd") X64("_ubuf") U64("_size") U32("_flags"), I64("_ret") X64("_addr"), 1},
	[S_SENDTO] = {"sendto", I32("_fd") X64("_buff") U64("_len") U32("_flags"), I64("_ret"), 0},
	[S_GETPID] = {"getpid", "", I64("_ret"), 0},
};

/* ---- streams ------------------------------------------------------------ */
struct stream {
	FILE *f, *idx;
	uint8_t *pkt;
	size_t pos;
	uint64_t begin, last, seq, offset;
	int open;
};
static struct stream st[MAXCPU];
static int ncpu = 8;
static uint64_t bytes_written, target_bytes, nevents;
static const uint8_t UUID[16] = {0x7e, 0xef, 0xbe, 0x0c, 0x1a, 0x2b, 0x4c, 0x3d,
				 0x8e, 0x9f, 0xa0, 0xb1, 0xc2, 0xd3, 0xe4, 0xf5};

static void die(const char *what)
{
	fprintf(stderr, "gen-kernel: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void put_be64(FILE *f, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
	if (fwrite(b, 1, 8, f) != 8)
		die("index");
}

static void flush_packet(int cpu)
{
	struct stream *s = &st[cpu];
	if (!s->open)
		return;
	uint8_t *p = s->pkt;
	uint64_t content = (uint64_t)s->pos * 8, size = (uint64_t)PACKET * 8, zero = 0;
	uint32_t magic = 0xC1FC1FC1, sid = 0, c = (uint32_t)cpu;
	uint64_t inst = (uint64_t)cpu;
	memcpy(p, &magic, 4);
	memcpy(p + 4, UUID, 16);
	memcpy(p + 20, &sid, 4);
	memcpy(p + 24, &inst, 8);
	memcpy(p + 32, &s->begin, 8);
	memcpy(p + 40, &s->last, 8);
	memcpy(p + 48, &content, 8);
	memcpy(p + 56, &size, 8);
	memcpy(p + 64, &s->seq, 8);
	memcpy(p + 72, &zero, 8);
	memcpy(p + 80, &c, 4);
	memset(p + s->pos, 0, PACKET - s->pos);
	if (fwrite(p, 1, PACKET, s->f) != PACKET)
		die("write");
	/* index entry (v1.1): offset, packet size, content size, begin, end,
	 * discarded, stream id, stream instance id, sequence number */
	put_be64(s->idx, s->offset);
	put_be64(s->idx, size);
	put_be64(s->idx, content);
	put_be64(s->idx, s->begin);
	put_be64(s->idx, s->last);
	put_be64(s->idx, 0);
	put_be64(s->idx, 0);
	put_be64(s->idx, inst);
	put_be64(s->idx, s->seq);
	s->offset += PACKET;
	s->seq++;
	s->open = 0;
	bytes_written += PACKET;
}

/* The payload being built. */
static uint8_t pl[512];
static size_t pn;
static void p32(uint32_t v) { memcpy(pl + pn, &v, 4); pn += 4; }
static void p64(uint64_t v) { memcpy(pl + pn, &v, 8); pn += 8; }
/* Copies at most 15 bytes of a name and NUL-pads to 16 bytes. */
static void set_comm(void *dst, const char *src)
{
	size_t n = strnlen(src, 15);
	memset(dst, 0, 16);
	memcpy(dst, src, n);
}
static void pcomm(const char *c)
{
	set_comm(pl + pn, c);
	pn += 16;
}
static void pstr(const char *c)
{
	size_t n = strlen(c) + 1;
	memcpy(pl + pn, c, n);
	pn += n;
}

/* Appends the event (id, payload pl[0..pn)) at time ts to cpu's stream;
 * ts is raised to the stream's last time if below. Returns the time used. */
static uint64_t emit(int cpu, uint64_t ts, uint32_t id)
{
	struct stream *s = &st[cpu];
	if (ts < s->last)
		ts = s->last;
	if (s->open && s->pos + 13 + pn > PACKET)
		flush_packet(cpu);
	if (!s->open) {
		s->open = 1;
		s->pos = HEAD;
		s->begin = s->last = ts;
	}
	uint8_t *p = s->pkt + s->pos;
	if (id < 31 && ts - s->last < (1u << 27)) {
		uint32_t h = id | (uint32_t)((ts & ((1u << 27) - 1)) << 5);
		memcpy(p, &h, 4);
		p += 4;
	} else {
		*p++ = 31;
		memcpy(p, &id, 4);
		memcpy(p + 4, &ts, 8);
		p += 12;
	}
	memcpy(p, pl, pn);
	p += pn;
	s->pos = (size_t)(p - s->pkt);
	s->last = ts;
	pn = 0;
	nevents++;
	return ts;
}

/* ---- the simulation ----------------------------------------------------- */
enum { T_FREE, T_RUN, T_READY, T_BLOCKED };
struct thr {
	int tid, pid, prio, cpu, state, sys, resume;
	char comm[16];
	double burst, sleep;
	uint64_t burst_end, slice_end, wake_at;
	int hidx; /* position in the wake heap, -1 if none */
};
static struct thr th[MAXTHR];
static int nth; /* slots used */
static int alive, target_alive;
static int next_tid = 1000;

struct cpu {
	int cur; /* index in th, 0 = swapper */
	uint64_t next;
	int rq[MAXTHR / 8];
	int rqh, rqn;
};
static struct cpu cpus[MAXCPU];
#define RQCAP ((int)(sizeof(cpus[0].rq) / sizeof(int)))

static int heap[MAXTHR], hn;
static void hswap(int a, int b)
{
	int t = heap[a];
	heap[a] = heap[b];
	heap[b] = t;
	th[heap[a]].hidx = a;
	th[heap[b]].hidx = b;
}
static void hpush(int t)
{
	int i = hn++;
	heap[i] = t;
	th[t].hidx = i;
	while (i && th[heap[(i - 1) / 2]].wake_at > th[heap[i]].wake_at) {
		hswap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}
static int hpop(void)
{
	int top = heap[0];
	th[top].hidx = -1;
	heap[0] = heap[--hn];
	if (hn)
		th[heap[0]].hidx = 0;
	int i = 0;
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < hn && th[heap[l]].wake_at < th[heap[m]].wake_at)
			m = l;
		if (r < hn && th[heap[r]].wake_at < th[heap[m]].wake_at)
			m = r;
		if (m == i)
			break;
		hswap(i, m);
		i = m;
	}
	return top;
}

static void rq_push(int c, int t)
{
	struct cpu *p = &cpus[c];
	if (p->rqn == RQCAP) { /* never in practice: leave it blocked a while */
		th[t].state = T_BLOCKED;
		th[t].wake_at = p->next + 1000000;
		hpush(t);
		return;
	}
	p->rq[(p->rqh + p->rqn++) % RQCAP] = t;
	th[t].state = T_READY;
	th[t].cpu = c;
}
static int rq_pop(int c)
{
	struct cpu *p = &cpus[c];
	if (!p->rqn)
		return -1;
	int t = p->rq[p->rqh];
	p->rqh = (p->rqh + 1) % RQCAP;
	p->rqn--;
	return t;
}

static const char *procs[] = {"systemd", "sshd", "bash", "postgres", "nginx", "java", "python3", "chrome",
			      "Xorg", "gnome-shell", "dockerd", "containerd", "node", "redis-server", "mysqld",
			      "cron", "rsyslogd", "dbus-daemon", "pulseaudio", "firefox", "make", "cc1", "ld",
			      "git", "vim", "tmux", "journald", "udevd", "NetworkManager", "snapd"};
#define NPROCS ((int)(sizeof(procs) / sizeof(procs[0])))

static int new_thread(int pid, const char *comm)
{
	int t;
	for (t = 1; t < nth && th[t].state != T_FREE; t++)
		;
	if (t == nth) {
		if (nth == MAXTHR)
			return -1;
		nth++;
	}
	struct thr *x = &th[t];
	memset(x, 0, sizeof(*x));
	x->tid = next_tid++;
	x->pid = pid ? pid : x->tid;
	x->prio = below(10) ? 20 : (int)range(0, 39);
	x->cpu = (int)below((uint64_t)ncpu);
	x->state = T_BLOCKED; /* the caller queues or wakes it */
	x->sys = -1;
	x->hidx = -1;
	set_comm(x->comm, comm);
	x->burst = loguni(2e3, 1e6);
	x->sleep = loguni(2e6, 2e10);
	alive++;
	return t;
}

static void comm_of(int t, char *out)
{
	if (t)
		memcpy(out, th[t].comm, 16);
	else
		strcpy(out, "swapper/0");
}

/* sched_switch on cpu c from its current thread to `next` (index, 0 = idle). */
static uint64_t do_switch(int c, uint64_t ts, int prev_state, int next)
{
	struct cpu *p = &cpus[c];
	int cur = p->cur;
	char pc[16] = {0}, nc[16] = {0};
	comm_of(cur, pc);
	comm_of(next, nc);
	if (!cur)
		snprintf(pc, 16, "swapper/%d", c);
	if (!next)
		snprintf(nc, 16, "swapper/%d", c);
	pcomm(pc);
	p32((uint32_t)(cur ? th[cur].tid : 0));
	p32((uint32_t)(cur ? th[cur].prio : 20));
	p64((uint64_t)(int64_t)prev_state);
	pcomm(nc);
	p32((uint32_t)(next ? th[next].tid : 0));
	p32((uint32_t)(next ? th[next].prio : 20));
	ts = emit(c, ts, E_SWITCH);
	p->cur = next;
	if (next) {
		struct thr *x = &th[next];
		x->state = T_RUN;
		x->cpu = c;
		x->burst_end = ts + expo(x->burst);
		x->slice_end = ts + 3000000;
	}
	return ts;
}

static uint64_t syscall_entry(int c, uint64_t ts, int t, int s)
{
	switch (s) {
	case S_READ: case S_WRITE: p32((uint32_t)range(3, 40)); p64(0x7ffd1000 + below(1 << 20)); p64(range(1, 65536)); break;
	case S_FUTEX: p64(0x7f3a0000 + 64 * below(4096)); p32(128 + (uint32_t)below(2)); p32(1); p64(0); p64(0); p32(0); break;
	case S_EPOLL_WAIT: p32((uint32_t)range(3, 20)); p32(64); p32((uint32_t)-1); break;
	case S_POLL: p64(0x7ffd2000 + below(1 << 16)); p32((uint32_t)range(1, 8)); p32(1000); break;
	case S_IOCTL: p32((uint32_t)range(3, 40)); p32(0x5401); p64(below(1 << 30)); break;
	case S_OPENAT:
		p32((uint32_t)-100);
		pstr(below(2) ? "/etc/ld.so.cache" : below(2) ? "/proc/self/stat" : "/usr/lib/x86_64-linux-gnu/libc.so.6");
		p32(0x80000); p32(0); break;
	case S_CLOSE: p32((uint32_t)range(3, 40)); break;
	case S_MMAP: p64(0); p64(4096 * range(1, 256)); p32(3); p32(0x22); p32((uint32_t)-1); p64(0); break;
	case S_MUNMAP: p64(0x7f3a00000000 + 4096 * below(1 << 20)); p64(4096 * range(1, 256)); break;
	case S_CLOCK_NANOSLEEP: p32(1); p32(0); p64(0x7ffd3000 + below(1 << 12)); break;
	case S_RECVFROM: case S_SENDTO: p32((uint32_t)range(3, 40)); p64(0x7ffd4000 + below(1 << 20)); p64(range(1, 9000)); p32(0); break;
	default: break;
	}
	th[t].sys = s;
	return emit(c, ts, (uint32_t)(E_SYSCALLS + 2 * s));
}

static uint64_t syscall_exit(int c, uint64_t ts, int t)
{
	int s = th[t].sys;
	switch (s) {
	case S_READ: p64(below(4) ? range(1, 4096) : (uint64_t)-11); p64(0x7ffd1000); break;
	case S_FUTEX: p64(0); p64(0x7f3a0000); p64(0); break;
	case S_IOCTL: p64(0); p64(0); break;
	case S_MMAP: p64(0x7f3a00000000 + 4096 * below(1 << 20)); break;
	case S_CLOCK_NANOSLEEP: p64(0); p64(0); break;
	case S_RECVFROM: p64(range(1, 1500)); p64(0); break;
	case S_GETPID: p64((uint64_t)th[t].pid); break;
	default: p64(below(8) ? range(0, 64) : (uint64_t)-4); break;
	}
	th[t].sys = -1;
	th[t].resume = 0;
	return emit(c, ts, (uint32_t)(E_SYSCALLS + 2 * s + 1));
}

static const char *irq_names[] = {"eth0-rx-0", "nvme0q1", "virtio0-input.0", "i8042", "ahci[0000:00:1f.2]"};

static uint64_t interrupt(int c, uint64_t ts)
{
	int irq = (int)below(5);
	p32((uint32_t)(24 + irq));
	pstr(irq_names[irq]);
	ts = emit(c, ts, E_IRQ_ENTRY);
	int vec = irq == 0 ? 3 : irq == 1 ? 4 : -1;
	if (vec >= 0) {
		p32((uint32_t)vec);
		ts = emit(c, ts + range(50, 300), E_SOFTIRQ_RAISE);
	}
	p32((uint32_t)(24 + irq));
	p32(1);
	ts = emit(c, ts + range(300, 4000), E_IRQ_EXIT);
	if (vec >= 0) {
		p32((uint32_t)vec);
		ts = emit(c, ts + range(100, 500), E_SOFTIRQ_ENTRY);
		p32((uint32_t)vec);
		ts = emit(c, ts + range(500, 20000), E_SOFTIRQ_EXIT);
	}
	return ts;
}

static uint64_t timer_tick(int c, uint64_t ts)
{
	uint64_t timer = 0xffff88807fc1e000ull + 0x40ull * (uint64_t)c;
	p64(timer); p64(ts); p64(0xffffffff81156f30ull);
	ts = emit(c, ts, E_HRTIMER_ENTRY);
	pstr("Start scheduler-tick");
	ts = emit(c, ts + range(100, 400), E_RCU);
	pstr("End scheduler-tick");
	ts = emit(c, ts + range(300, 2000), E_RCU);
	p64(timer);
	ts = emit(c, ts + range(100, 400), E_HRTIMER_EXIT);
	if (below(3) == 0) {
		p32(1);
		ts = emit(c, ts + range(50, 200), E_SOFTIRQ_RAISE);
		p32(1);
		ts = emit(c, ts + range(100, 500), E_SOFTIRQ_ENTRY);
		p32(1);
		ts = emit(c, ts + range(500, 8000), E_SOFTIRQ_EXIT);
	}
	return ts;
}

/* Picks the next thread for idle cpu c: its queue, else the longest other. */
static int pick(int c)
{
	int t = rq_pop(c);
	if (t >= 0)
		return t;
	int best = -1;
	for (int o = 0; o < ncpu; o++)
		if (cpus[o].rqn > 1 && (best < 0 || cpus[o].rqn > cpus[best].rqn))
			best = o;
	if (best < 0)
		return -1;
	t = rq_pop(best);
	pcomm(th[t].comm);
	p32((uint32_t)th[t].tid); p32((uint32_t)th[t].prio); p32((uint32_t)best); p32((uint32_t)c);
	emit(c, cpus[c].next, E_MIGRATE);
	return t;
}

static void wake(uint64_t now)
{
	int t = hpop();
	struct thr *x = &th[t];
	/* the waker: an interrupt on the target CPU, or another CPU */
	int w = below(3) ? (int)below((uint64_t)ncpu) : x->cpu;
	int target = x->cpu;
	int from = (int)below((uint64_t)ncpu);
	for (int i = 0; i < ncpu; i++) {
		int o = (from + i) % ncpu;
		if (!cpus[o].cur && !cpus[o].rqn) {
			target = o;
			break;
		}
	}
	uint64_t ts = now;
	int via_irq = below(2) == 0;
	if (via_irq) {
		p32(24);
		pstr(irq_names[0]);
		ts = emit(w, ts, E_IRQ_ENTRY);
	}
	pcomm(x->comm); p32((uint32_t)x->tid); p32((uint32_t)x->prio); p32((uint32_t)target);
	ts = emit(w, ts + range(100, 500), E_WAKING);
	pcomm(x->comm); p32((uint32_t)x->tid); p32((uint32_t)x->prio); p32((uint32_t)target);
	ts = emit(w, ts + range(100, 800), E_WAKEUP);
	if (via_irq) {
		p32(24);
		p32(1);
		ts = emit(w, ts + range(200, 2000), E_IRQ_EXIT);
	}
	rq_push(target, t);
	if (!cpus[target].cur && cpus[target].next > ts + 5000)
		cpus[target].next = ts + range(1000, 5000);
	if (cpus[w].next < ts)
		cpus[w].next = ts + 100;
}

static void block(int t, uint64_t ts)
{
	struct thr *x = &th[t];
	x->state = T_BLOCKED;
	x->wake_at = ts + expo(x->sleep);
	x->resume = 1;
	hpush(t);
}

static void fork_thread(int c, uint64_t ts, int parent)
{
	struct thr *p = &th[parent];
	int same = below(3) != 0; /* a thread of the same process, or a new process */
	int t = new_thread(same ? p->pid : 0, p->comm);
	if (t < 0)
		return;
	struct thr *x = &th[t];
	pcomm(p->comm); p32((uint32_t)p->tid); p32((uint32_t)p->pid); p32(4026531836u);
	pcomm(x->comm); p32((uint32_t)x->tid); p32(1); p32((uint32_t)x->tid); p32((uint32_t)x->pid); p32(4026531836u);
	ts = emit(c, ts, E_FORK);
	pcomm(x->comm); p32((uint32_t)x->tid); p32((uint32_t)x->prio); p32((uint32_t)c);
	ts = emit(c, ts + range(200, 2000), E_WAKEUP_NEW);
	rq_push(c, t);
	if (!same && below(2)) {
		/* the child execs something else at its first run: simplified as
		 * a new name now */
		const char *n = procs[below(NPROCS)];
		set_comm(x->comm, n);
		x->resume = 2;
	}
}

static uint64_t run_action(int c, uint64_t now)
{
	struct cpu *p = &cpus[c];
	int t = p->cur;
	struct thr *x = &th[t];
	uint64_t ts = now;
	if (x->resume == 2) { /* a child that execs */
		char path[64];
		snprintf(path, sizeof(path), "/usr/bin/%s", x->comm);
		pstr(path); p32((uint32_t)x->tid); p32((uint32_t)x->tid);
		x->resume = 0;
		return emit(c, ts, E_EXEC);
	}
	if (x->sys >= 0) /* a short system call ends, or a blocking one resumes */
		return syscall_exit(c, ts, t);
	if (ts >= x->burst_end) {
		if (alive > target_alive && below(50) == 0) {
			/* exit */
			pcomm(x->comm); p32((uint32_t)x->tid); p32((uint32_t)x->prio);
			ts = emit(c, ts, E_EXIT);
			int n = pick(c);
			ts = do_switch(c, ts + range(1000, 5000), 64, n < 0 ? 0 : n);
			pcomm(x->comm); p32((uint32_t)x->tid); p32((uint32_t)x->prio);
			ts = emit(c, ts + range(1000, 20000), E_FREE);
			x->state = T_FREE;
			alive--;
			return ts;
		}
		/* block in a system call */
		static const int blocking[] = {S_FUTEX, S_FUTEX, S_EPOLL_WAIT, S_POLL, S_READ, S_CLOCK_NANOSLEEP,
					       S_RECVFROM};
		ts = syscall_entry(c, ts, t, blocking[below(7)]);
		block(t, ts);
		int n = pick(c);
		return do_switch(c, ts + range(500, 3000), 1, n < 0 ? 0 : n);
	}
	if (p->rqn && ts >= x->slice_end) { /* preempted */
		int n = rq_pop(c);
		rq_push(c, t);
		return do_switch(c, ts, 0, n);
	}
	uint64_t r = below(1000);
	if (r < 450) {
		static const int quick[] = {S_READ, S_WRITE, S_IOCTL, S_OPENAT, S_CLOSE, S_MMAP, S_MUNMAP,
					    S_SENDTO, S_GETPID, S_FUTEX};
		ts = syscall_entry(c, ts, t, quick[below(10)]);
		p->next = ts + expo(3000);
		return p->next;
	}
	if (r < 600)
		return interrupt(c, ts);
	if (r < 750)
		return timer_tick(c, ts);
	if (r < 900) {
		p64(0xffffea0000000000ull + 64 * below(1 << 24)); p64(below(1 << 24)); p32(0); p32(0x400dc0); p32(1);
		ts = emit(c, ts, E_PAGE_ALLOC);
		if (below(2)) {
			p64(0xffffea0000000000ull + 64 * below(1 << 24)); p64(below(1 << 24)); p32(0);
			ts = emit(c, ts + range(100, 3000), E_PAGE_FREE);
		}
		return ts;
	}
	if (r < 990) {
		p64(0xffffc90000000000ull + 64 * below(1 << 16)); p64(0xffffffff81156f30ull);
		p64(ts + range(10000, 10000000)); p64(ts + range(10000, 10000000));
		return emit(c, ts, E_HRTIMER_START);
	}
	if (r == 990 && alive < target_alive * 6 / 5 && below(100) == 0) {
		fork_thread(c, ts, t);
		return ts;
	}
	return ts;
}

static uint64_t idle_action(int c, uint64_t now)
{
	int n = pick(c);
	if (n >= 0)
		return do_switch(c, now, 0, n);
	uint64_t ts = now;
	if (below(3) == 0) {
		p32(0xffffffff); p32((uint32_t)c);
		ts = emit(c, ts, E_CPU_IDLE);
		ts = timer_tick(c, ts + range(1000, 20000));
		p32(1); p32((uint32_t)c);
		ts = emit(c, ts + range(100, 1000), E_CPU_IDLE);
	} else if (below(4) == 0) {
		ts = interrupt(c, ts);
	}
	cpus[c].next = ts + expo(GAP_IDLE);
	return ts;
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (uint64_t)v;
}

static void write_metadata(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		die(path);
	fprintf(f,
		"/* CTF 1.8 */\n\n"
		"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
		"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n"
		"typealias integer { size = 5; align = 1; signed = false; } := uint5_t;\n"
		"typealias integer { size = 27; align = 1; signed = false; } := uint27_t;\n\n"
		"trace {\n\tmajor = 1;\n\tminor = 8;\n"
		"\tuuid = \"7eefbe0c-1a2b-4c3d-8e9f-a0b1c2d3e4f5\";\n"
		"\tbyte_order = le;\n"
		"\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n"
		"\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n"
		"env {\n\thostname = \"bench-view\";\n\tdomain = \"kernel\";\n\tsysname = \"Linux\";\n"
		"\tkernel_release = \"6.1.0-synthetic\";\n\tkernel_version = \"#1 SMP PREEMPT_DYNAMIC\";\n"
		"\ttracer_name = \"lttng-modules\";\n\ttracer_major = 2;\n\ttracer_minor = 13;\n"
		"\ttracer_patchlevel = 9;\n\ttrace_buffering_scheme = \"global\";\n\ttrace_name = \"bench-view\";\n};\n\n"
		"clock {\n\tname = \"monotonic\";\n\tuuid = \"0f4a2b3c-5d6e-4f70-8192-a3b4c5d6e7f8\";\n"
		"\tdescription = \"Monotonic Clock\";\n\tfreq = 1000000000; /* Frequency, in Hz */\n"
		"\t/* clock value offset from Epoch is: offset * (1/freq) */\n\toffset = %llu;\n};\n\n"
		"typealias integer {\n\tsize = 27; align = 1; signed = false;\n\tmap = clock.monotonic.value;\n"
		"} := uint27_clock_monotonic_t;\n\n"
		"typealias integer {\n\tsize = 64; align = 8; signed = false;\n\tmap = clock.monotonic.value;\n"
		"} := uint64_clock_monotonic_t;\n\n"
		"struct packet_context {\n\tuint64_clock_monotonic_t timestamp_begin;\n"
		"\tuint64_clock_monotonic_t timestamp_end;\n\tuint64_t content_size;\n\tuint64_t packet_size;\n"
		"\tuint64_t packet_seq_num;\n\tunsigned long events_discarded;\n\tuint32_t cpu_id;\n};\n\n"
		"struct event_header_compact {\n\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n"
		"\tvariant <id> {\n\t\tstruct {\n\t\t\tuint27_clock_monotonic_t timestamp;\n\t\t} compact;\n"
		"\t\tstruct {\n\t\t\tuint32_t id;\n\t\t\tuint64_clock_monotonic_t timestamp;\n\t\t} extended;\n"
		"\t} v;\n} align(8);\n\n"
		"stream {\n\tid = 0;\n\tevent.header := struct event_header_compact;\n"
		"\tpacket.context := struct packet_context;\n};\n\n",
		(unsigned long long)CLOCK_OFFSET);
	for (int i = 0; i < NTP; i++)
		if (tracepoints[i].name)
			fprintf(f, "event {\n\tname = \"%s\";\n\tid = %d;\n\tstream_id = 0;\n\tfields := struct {\n%s\t};\n};\n\n",
				tracepoints[i].name, i, tracepoints[i].fields);
	for (int s = 0; s < NSYS; s++) {
		fprintf(f, "event {\n\tname = \"syscall_entry_%s\";\n\tid = %d;\n\tstream_id = 0;\n\tfields := struct {\n%s\t};\n};\n\n",
			syscalls[s].name, E_SYSCALLS + 2 * s, syscalls[s].entry);
		fprintf(f, "event {\n\tname = \"syscall_exit_%s\";\n\tid = %d;\n\tstream_id = 0;\n\tfields := struct {\n%s\t};\n};\n\n",
			syscalls[s].name, E_SYSCALLS + 2 * s + 1, syscalls[s].exit);
	}
	if (fclose(f))
		die(path);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: gen-kernel OUT_DIR [BYTES] [CPUS] [THREADS]\n");
		return 2;
	}
	const char *dir = argv[1];
	target_bytes = argc > 2 ? parse_size(argv[2]) : 1ull << 30;
	ncpu = argc > 3 ? atoi(argv[3]) : 8;
	target_alive = argc > 4 ? atoi(argv[4]) : 400;
	if (ncpu < 1 || ncpu > MAXCPU || target_alive < 1 || target_alive > MAXTHR / 2) {
		fprintf(stderr, "gen-kernel: bad CPUS or THREADS\n");
		return 2;
	}
	seed(42);
	char path[4096];
	if (mkdir(dir, 0755) && errno != EEXIST)
		die(dir);
	snprintf(path, sizeof(path), "%s/index", dir);
	if (mkdir(path, 0755) && errno != EEXIST)
		die(path);
	write_metadata(dir);
	for (int c = 0; c < ncpu; c++) {
		snprintf(path, sizeof(path), "%s/channel0_%d", dir, c);
		if (!(st[c].f = fopen(path, "w")))
			die(path);
		setvbuf(st[c].f, NULL, _IOFBF, 4 << 20);
		snprintf(path, sizeof(path), "%s/index/channel0_%d.idx", dir, c);
		if (!(st[c].idx = fopen(path, "w")))
			die(path);
		uint8_t h[16] = {0xC1, 0xF1, 0xDC, 0xC1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 72};
		if (fwrite(h, 1, 16, st[c].idx) != 16)
			die(path);
		if (!(st[c].pkt = malloc(PACKET)))
			die("malloc");
	}

	/* processes and threads */
	nth = 1; /* slot 0: swapper */
	while (alive < target_alive) {
		const char *name = procs[below(NPROCS)];
		int lead = new_thread(0, name);
		int n = (int)(below(4) ? range(0, 3) : range(4, 30));
		for (int i = 0; i < n && alive < target_alive; i++)
			new_thread(th[lead].pid, name);
	}
	for (int c = 0; c < ncpu && alive < target_alive + 3 * ncpu; c++) {
		char k[32];
		snprintf(k, sizeof(k), "ksoftirqd/%d", c);
		new_thread(0, k);
		snprintf(k, sizeof(k), "kworker/%d:1", c);
		new_thread(0, k);
		snprintf(k, sizeof(k), "migration/%d", c);
		new_thread(0, k);
	}
	target_alive = alive;

	/* statedump on CPU 0 */
	uint64_t ts = START_NS;
	ts = emit(0, ts, E_SD_START);
	for (int t = 1; t < nth; t++) {
		struct thr *x = &th[t];
		p32((uint32_t)x->tid); p32((uint32_t)x->tid); p32((uint32_t)x->pid); p32((uint32_t)x->pid);
		p32(1); p32(1); pcomm(x->comm); p32(x->tid == x->pid ? 0 : 1); p32(0); p32(0); p32(5); p32((uint32_t)x->cpu);
		ts = emit(0, ts + range(200, 2000), E_SD_PROCESS);
	}
	ts = emit(0, ts + 1000, E_SD_END);
	for (int t = 1; t < nth; t++) { /* everyone asleep, not in a system call */
		th[t].state = T_BLOCKED;
		th[t].wake_at = ts + below((uint64_t)(th[t].sleep < 1e8 ? th[t].sleep : 1e8)) + 1;
		hpush(t);
	}
	for (int c = 0; c < ncpu; c++)
		cpus[c].next = ts + below(100000);

	while (bytes_written < target_bytes) {
		int c = 0;
		for (int o = 1; o < ncpu; o++)
			if (cpus[o].next < cpus[c].next)
				c = o;
		uint64_t now = cpus[c].next;
		if (hn && th[heap[0]].wake_at <= now) {
			wake(th[heap[0]].wake_at);
			continue;
		}
		uint64_t end;
		if (cpus[c].cur)
			end = run_action(c, now);
		else
			end = idle_action(c, now);
		if (cpus[c].next <= now) {
			/* gap before this CPU's next action: short while running */
			cpus[c].next = end + (cpus[c].cur ? expo(GAP_RUN) : expo(GAP_IDLE));
			if (cpus[c].cur && th[cpus[c].cur].burst_end < cpus[c].next && th[cpus[c].cur].burst_end > end)
				cpus[c].next = th[cpus[c].cur].burst_end;
		}
	}
	uint64_t first = START_NS, last = 0;
	for (int c = 0; c < ncpu; c++) {
		if (st[c].open && st[c].last > last)
			last = st[c].last;
		flush_packet(c);
		if (fclose(st[c].f) || fclose(st[c].idx))
			die("close");
		free(st[c].pkt);
	}
	printf("%s: %" PRIu64 " events, %" PRIu64 " bytes, %d CPUs, %d threads alive, %d tids, %.3f s\n", dir,
	       nevents, bytes_written, ncpu, alive, next_tid - 1000, (double)(last - first) / 1e9);
	return 0;
}
