/*
 * reef_fast.h — the inline fast path used by generated trace functions.
 * Internal: included by reef.h; names starting with `reef__` are not API.
 *
 * An event is: reef__enabled() (one byte load and a branch), reef__reserve()
 * (bump a thread-local nesting counter, compare the room left in the
 * thread's packet), reef__put_header() (id and timestamp: the only clock
 * read), reef__put_*() (plain stores), reef__commit() (publish the new
 * write position). No lock, no system call, no allocation; anything else
 * (first event of a thread, full packet, nested event, trigger) goes to
 * the slow path in the library.
 *
 * Layout: every field is byte-aligned and little-endian, as the generated
 * metadata declares.
 */
#ifndef REEF_FAST_H
#define REEF_FAST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#if !defined(__GNUC__)
#error "libreef needs GCC or Clang (thread-local storage, atomics builtins)"
#endif
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libreef writes little-endian traces and supports little-endian hosts only"
#endif

/* The program's inlined code uses the reef__ symbols below, so libreef.so
 * exports them (see reef.h); they are still not API. */
#ifndef REEF_API
#define REEF_API __attribute__((visibility("default")))
#endif

#define REEF_LIKELY(x) __builtin_expect(!!(x), 1)
#define REEF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define REEF__CONSTRUCTOR(name) __attribute__((constructor)) static void name(void)
#define REEF__SIGNAL_FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* Longest string field recorded, in bytes (longer ones are truncated). */
#ifndef REEF_STRING_MAX
#define REEF_STRING_MAX 255
#endif

/* id (u16) + timestamp (u64) */
#define REEF_EVENT_HEADER_SIZE 10u

#ifdef __cplusplus
extern "C" {
#endif

/* Per-subsystem state bytes. */
#define REEF__OFF 0
#define REEF__ON 1
#define REEF__ASK 2 /* not initialised yet, or a trigger is armed */

/* Read-mostly: written only by control calls, never by an event. */
struct reef__shared {
	uint8_t state[256];
	uint8_t use_tsc;
};
REEF_API extern struct reef__shared reef__shared;

/* The thread's write state. Thread-local, so events of two threads write
 * no common cache line. */
struct reef__tls {
	char *pos;          /* next event goes here */
	char *end;          /* end of the current packet's room for events (its
	                     * commit word follows); pos == end: no room */
	unsigned nest;      /* events in progress on this thread (signals) */
	unsigned dead;      /* the thread has exited or the process forked */
	void *buf;          /* the thread's buffer; NULL until registered */
};
REEF_API extern __thread struct reef__tls reef__tls __attribute__((tls_model("initial-exec")));

/* Slow path (library). */
REEF_API int reef__gate(uint32_t event_id);
REEF_API char *reef__reserve_slow(size_t size);
REEF_API uint64_t reef__clock_slow(void);

static inline int reef__enabled(unsigned subsystem, uint32_t event_id)
{
	uint8_t s = __atomic_load_n(&reef__shared.state[subsystem & 255u], __ATOMIC_RELAXED);
	/* OFF first: a disabled event is a load, a test and one taken branch
	 * to the caller's next statement (about half the cost of testing ON
	 * first, measured in bench/tracer); ON then costs one untaken branch. */
	if (s == REEF__OFF)
		return 0;
	if (REEF_LIKELY(s == REEF__ON))
		return 1;
	return reef__gate(event_id);
}

static inline uint64_t reef__now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (REEF_LIKELY(reef__shared.use_tsc))
		return __builtin_ia32_rdtsc();
#endif
	return reef__clock_slow();
}

/* Returns where `size` bytes of event go, or NULL (dropped and counted).
 * On success the caller must call reef__commit(). */
static inline char *reef__reserve(size_t size)
{
	struct reef__tls *t = &reef__tls;
	unsigned n = ++t->nest;
	char *p;
	REEF__SIGNAL_FENCE();
	p = t->pos;
	if (REEF_UNLIKELY(n != 1 || (size_t)((uintptr_t)t->end - (uintptr_t)p) < size))
		return reef__reserve_slow(size);
	return p;
}

static inline void reef__commit(char *end)
{
	struct reef__tls *t = &reef__tls;
	REEF__SIGNAL_FENCE();
	/* Release: a reader of pos at exit sees the event's bytes. */
	__atomic_store_n(&t->pos, end, __ATOMIC_RELEASE);
	/* The packet's commit word, its last 8 bytes (`end` stops short of
	 * them): where its last complete event ends, kept in the packet so
	 * that a crash-safe ring (REEF_CRASH_SAFE) tells it after the process
	 * died. Stored after every byte of the event (the fence above). */
	memcpy(t->end, &end, sizeof(end));
	REEF__SIGNAL_FENCE();
	t->nest--;
}

static inline char *reef__put_8(char *p, uint8_t v) { memcpy(p, &v, 1); return p + 1; }
static inline char *reef__put_16(char *p, uint16_t v) { memcpy(p, &v, 2); return p + 2; }
static inline char *reef__put_32(char *p, uint32_t v) { memcpy(p, &v, 4); return p + 4; }
static inline char *reef__put_64(char *p, uint64_t v) { memcpy(p, &v, 8); return p + 8; }
static inline char *reef__put_f32(char *p, float v) { memcpy(p, &v, 4); return p + 4; }
static inline char *reef__put_f64(char *p, double v) { memcpy(p, &v, 8); return p + 8; }
static inline char *reef__put_bool(char *p, bool v) { return reef__put_8(p, v ? 1 : 0); }
static inline char *reef__put_ptr(char *p, const void *v) { return reef__put_64(p, (uint64_t)(uintptr_t)v); }

static inline char *reef__put_bytes(char *p, const void *src, size_t n)
{
	if (n)
		memcpy(p, src, n);
	return p + n;
}

static inline size_t reef__strnlen(const char *s, size_t max)
{
	size_t n = 0;
	if (!s)
		return 0;
	while (n < max && s[n])
		n++;
	return n;
}

static inline char *reef__put_string(char *p, const char *s, size_t n)
{
	p = reef__put_bytes(p, s, n);
	*p = 0;
	return p + 1;
}

static inline char *reef__put_header(char *p, uint16_t id)
{
	p = reef__put_16(p, id);
	return reef__put_64(p, reef__now());
}

#ifdef __cplusplus
}
#endif

#endif /* REEF_FAST_H */
