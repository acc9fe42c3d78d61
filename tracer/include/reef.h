/*
 * reef.h — libreef, the reef tracer: public API.
 *
 * A program describes its events in a `.reef` schema and runs
 * `reef gen events.reef -o DIR`; the generated `DIR/events.h` includes this
 * header and defines one `static inline` function per event
 * (`reef_kernel_cswitch(prev_tid, next_tid)`). Calling it records the event
 * into the calling thread's buffer; a consumer thread writes closed packets
 * to a CTF 1.8 trace directory (metadata + one stream file per thread).
 *
 * Nothing needs to be called before the first event: the library
 * initialises itself from the environment (see below). Call reef_init()
 * first to configure it from code.
 *
 * Environment (each one overrides the matching `struct reef_config` field):
 *   REEF_OUTPUT        trace directory (default: reef-trace-<program>-<pid>)
 *   REEF_MODE          discard | overwrite | block        (default: discard)
 *   REEF_BUFFER_SIZE   bytes per thread, suffix K/M/G ok  (default: 1M)
 *   REEF_PACKET_SIZE   bytes per packet, suffix K/M ok    (default: 64K)
 *   REEF_SUBSYSTEMS    "all", "none", or comma-separated subsystem names to
 *                      enable; a leading '-' on a name disables it
 *   REEF_CLOCK         auto | tsc | monotonic             (default: auto)
 *   REEF_CONSUMER_NICE added to the consumer thread's nice value (default:
 *                      10 in discard mode, 0 otherwise; 0: unchanged). When
 *                      above 0, the consumer is also a SCHED_BATCH thread,
 *                      and a thread that wakes it keeps it off its own CPU
 *                      (tracer/README.md, "Buffers, packets, consumer")
 *
 *   REEF_CRASH_SAFE    1: keep each thread's ring in a shared mapping of a
 *                      file under the trace directory, so that `reef
 *                      recover DIR -o OUT` gets every complete event after
 *                      the process died by any means (kill -9 too)
 *   REEF_FATAL_SIGNALS 0: install no handler for fatal signals (below)
 *
 * Profiling (tracer/README.md, "Profiling"):
 *   REEF_SAMPLE        EVENT[:PERIOD]: sample each traced thread's user call
 *                      stack, e.g. cpu-clock:1ms, task-clock:250us,
 *                      cpu-clock:1000hz, cycles:1000000 (needs a PMU);
 *                      recorded as `reef:sample` events. A thread is sampled
 *                      from its first event on (the thread that starts the
 *                      library at once; with REEF_SAMPLE set, libreef starts
 *                      before main() when its constructor is linked in)
 *   REEF_SAMPLE_STACK  fp (default: walk frame pointers in the handler) or
 *                      perf (the kernel's PERF_SAMPLE_CALLCHAIN, read from
 *                      the event's ring)
 *   REEF_SAMPLE_SIGNAL the real-time signal used (default SIGRTMIN+5)
 *
 * Live streaming (see tracer/README.md, "Live"; each overrides the matching
 * `struct reef_config` field):
 *   REEF_LISTEN        [ADDR]:PORT, PORT, ADDR, or 1/on: accept clients on
 *                      that TCP address (default address 127.0.0.1, port
 *                      6666; port 0: any free port). The address is printed
 *                      on stderr ("libreef: listening on ADDR:PORT").
 *   REEF_FLUSH_MS      while a client is connected, send the recorded part
 *                      of packets still being filled this often (default
 *                      100; 0: only full packets)
 *   REEF_LIVE_SINK     network | both: while a client is connected, packets
 *                      go only to clients (default) or also to the directory
 *   REEF_CLIENT_BUFFER bytes queued per client before packets are dropped
 *                      for it (default 4M)
 *   REEF_LISTEN_WAIT   milliseconds the first event waits for a first client
 *                      (default 0)
 *   REEF_LINGER_MS     at exit, how long a client may take nothing of what
 *                      is queued for it before it is cut off (default 2000;
 *                      15 times that in all)
 *
 * Modes:
 *   discard    when every packet of a thread waits for the consumer, new
 *              events are dropped and counted (CTF `events_discarded`).
 *   overwrite  flight recorder: packets stay in memory and the oldest are
 *              reused; reef_snapshot() or process exit writes the ring.
 *              Reused packets show as gaps in `packet_seq_num`.
 *   block      the writer waits for a free packet; nothing is lost.
 *
 * Fork: after fork() the child records nothing (its trace functions return
 * at the state test) and never writes into the parent's buffers or trace;
 * the parent goes on unaffected.
 *
 * Signals: a handler may call trace functions. An event that interrupts
 * another event of the same thread is dropped and counted as discarded;
 * a packet is never corrupted.
 *
 * Crashes: a fatal signal (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL) makes
 * libreef write what every thread holds (with write(2) only), then the
 * program's own handler, installed before the library initialised, or the
 * default action takes over. A handler installed later replaces libreef's.
 * With REEF_CRASH_SAFE=1 nothing but the events being recorded at that
 * moment is lost even when the process is killed (SIGKILL, the OOM
 * killer): run `reef recover DIR -o OUT`. A clean exit removes the rings.
 *
 * Threads: a thread's exit hands its last packet to the consumer. At process
 * exit (exit() or return from main) everything recorded is written,
 * including the current packet of threads that are still running.
 */
#ifndef REEF_H
#define REEF_H

#include <stddef.h>
#include <stdint.h>

#define REEF_ABI_VERSION 1

/* Marks what libreef.so exports; the library is built with
 * -fvisibility=hidden, so nothing else leaves it. */
#ifndef REEF_API
#define REEF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* What a thread does when the consumer lags (see above). */
enum reef_mode {
	REEF_MODE_DISCARD = 0,
	REEF_MODE_OVERWRITE = 1,
	REEF_MODE_BLOCK = 2
};

enum reef_clock {
	REEF_CLOCK_AUTO = 0,      /* the TSC when invariant, else CLOCK_MONOTONIC */
	REEF_CLOCK_TSC = 1,       /* the TSC if the CPU has one */
	REEF_CLOCK_MONOTONIC = 2  /* clock_gettime(CLOCK_MONOTONIC) */
};

struct reef_config {
	const char *output_dir;   /* NULL: reef-trace-<program>-<pid> */
	enum reef_mode mode;
	size_t buffer_size;       /* per thread, bytes; 0: 1 MiB */
	size_t packet_size;       /* bytes; 0: 64 KiB; at least 4 KiB */
	const char *subsystems;   /* NULL: all; same syntax as REEF_SUBSYSTEMS */
	enum reef_clock clock;
	/* Live streaming (REEF_LISTEN and friends above). */
	const char *listen;       /* NULL: no clients; "[ADDR]:PORT" */
	int live_flush_ms;        /* 0: 100 ms; < 0: only full packets */
	int live_both;            /* 1: the directory too while clients are connected */
	size_t client_buffer;     /* bytes per client; 0: 4 MiB */
	int listen_wait_ms;       /* the first event waits this long for a client */
	int linger_ms;            /* 0: 2000; < 0: none */
	/* Crash safety (see "Crashes" above). */
	int crash_safe;           /* 1: rings in shared file mappings */
	int no_fatal_handlers;    /* 1: no SIGSEGV/SIGBUS/... handlers */
	/* Profiling (REEF_SAMPLE, REEF_SAMPLE_STACK above). */
	const char *sample;       /* NULL: no sampling; "cpu-clock:1ms" ... */
	const char *sample_stack; /* NULL or "fp": frame pointers; "perf": the kernel's call chain */
};

/* Built-in subsystems (a schema has at most 254): reef_enable() and
 * reef_disable() switch sampling and function entry/exit events on and off
 * at run time; REEF_SUBSYSTEMS knows them as `sample` and `func`. */
#define REEF_SUBSYS_SAMPLE 255u
#define REEF_SUBSYS_FUNC 254u

/* A `reef gen` schema; generated headers register theirs automatically. */
struct reef_schema {
	const char *name;
	uint64_t hash;                     /* identifies the metadata */
	const char *const *metadata;       /* TSDL template, one line each */
	const char *const *subsystem_names;
	uint32_t num_subsystems;
};

/* No event: as a reef_control() argument, "no trigger". */
#define REEF_EVENT_NONE 0xffffffffu

/* Fills `cfg` with the defaults. */
REEF_API void reef_config_default(struct reef_config *cfg);

/* Initialises from `cfg` (NULL: defaults), then the environment. Returns 0,
 * or -1 if the library was already initialised (by an earlier call or by
 * the first event) or the output directory cannot be created. */
REEF_API int reef_init(const struct reef_config *cfg);

/* Run-time control of subsystems (ids are TRACE_SUBSYS_*). */
REEF_API void reef_enable(unsigned subsystem);
REEF_API void reef_disable(unsigned subsystem);
REEF_API void reef_enable_all(void);
REEF_API void reef_disable_all(void);

/* Triggers: recording starts when `start_event` is traced (that event is
 * the first one recorded) and stops after `stop_event` (the last one
 * recorded). Either may be REEF_EVENT_NONE: no start trigger means
 * recording from now on; no stop trigger means until the end.
 * Event ids are TRACE_EVENT_*. */
REEF_API void reef_control(uint32_t start_event, uint32_t stop_event);

/* Closes the calling thread's current packet and writes every closed
 * packet of every thread. Returns 0, or -1 on a write error. */
REEF_API int reef_flush(void);

/* Overwrite mode: writes the ring of every thread (closed packets, and the
 * calling thread's current one) to the trace. Other modes: reef_flush(). */
REEF_API int reef_snapshot(void);

/* Writes everything and stops recording; later events are not recorded.
 * Runs automatically at process exit. */
REEF_API void reef_shutdown(void);

/* The trace directory, or NULL before initialisation. */
REEF_API const char *reef_trace_dir(void);

/* -finstrument-functions: record `reef:func_entry` / `reef:func_exit`. */
REEF_API void __cyg_profile_func_enter(void *fn, void *call_site);
REEF_API void __cyg_profile_func_exit(void *fn, void *call_site);

/* Called by generated headers' constructors. */
REEF_API void reef_register_schema(const struct reef_schema *schema);

#ifdef __cplusplus
}
#endif

#include "reef_fast.h"

#endif /* REEF_H */
