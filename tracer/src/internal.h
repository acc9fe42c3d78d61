/*
 * internal.h — libreef's shared internals (not installed).
 *
 * Threads and buffers: each tracing thread owns one `struct reef_buf`, a
 * ring of `npackets` fixed-size packet slots. The thread (the only writer)
 * fills the slot at `head % npackets`, then publishes it by incrementing
 * `head`; the consumer writes slots `tail .. head-1` and increments `tail`.
 * `head` and `tail` live on separate cache lines. In overwrite mode nobody
 * consumes until a snapshot, and the writer reclaims the oldest slot by
 * advancing `tail` itself; `slot_seq` is a per-slot sequence lock that lets
 * a snapshot detect a slot overwritten while it was being copied.
 */
#ifndef REEF_INTERNAL_H
#define REEF_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "reef.h"

#define REEF_HIDDEN __attribute__((visibility("hidden")))
#define REEF_CACHELINE 64

/* Packet header + context, as the generated metadata declares them. */
#define REEF_OFF_MAGIC 0
#define REEF_OFF_UUID 4
#define REEF_OFF_STREAM_ID 20
#define REEF_OFF_INSTANCE_ID 24
#define REEF_OFF_TS_BEGIN 32
#define REEF_OFF_TS_END 40
#define REEF_OFF_CONTENT_SIZE 48
#define REEF_OFF_PACKET_SIZE 56
#define REEF_OFF_SEQ_NUM 64
#define REEF_OFF_DISCARDED 72
#define REEF_OFF_TID 80
#define REEF_OFF_THREAD_NAME 84
#define REEF_PACKET_HEADER_SIZE 100
#define REEF_CTF_MAGIC 0xC1FC1FC1u

#define REEF_SLOT_WRITING UINT64_MAX

/* The last bytes of every packet slot: the commit word, where the last
 * complete event ends (an address; stored by reef__commit() in
 * reef_fast.h). Events never use them: `reef__tls.end` stops before. */
#define REEF_COMMIT_WORD 8

/* Crash-safe rings (REEF_CRASH_SAFE): each thread's ring is a shared
 * mapping of DIR/.reef-rings/ring_<instance id>: a header page, then the
 * packet slots. `reef recover` reads it after the process died; a clean
 * exit removes it. A closed packet in a slot has a non-zero content_size
 * (stored last by close_packet()); the open one has content_size 0 and its
 * commit word (above) says how far its events are complete. Layout of the
 * header (little-endian): */
#define REEF_RING_DIR ".reef-rings"
#define REEF_RING_HEADER 4096
#define REEF_RING_MAGIC "reefring"
struct reef_ring_header {
	char magic[8];             /* "reefring" */
	uint32_t version;          /* 1 */
	uint32_t header_size;      /* REEF_RING_HEADER: the first slot's offset */
	uint32_t packet_size;      /* bytes per slot */
	uint32_t npackets;         /* slots */
	uint64_t instance_id;      /* the stream: stream_<instance_id> */
	uint64_t base;             /* the address of slot 0 in the process */
	uint8_t uuid[16];          /* the trace's UUID, as in every packet */
	uint32_t tid;
	uint32_t pid;
};

/* net.c's state for one stream (guarded by net.c's lock). */
#define REEF_MAX_CLIENTS 16
struct reef_live {
	int partial;               /* a part of packet `pkt_seq` was sent ... */
	uint32_t off;              /* ... up to this byte */
	uint64_t pkt_seq;
	uint64_t ts;               /* end time of that part */
	uint64_t last_discarded;   /* events_discarded of the last packet or part */
	char last_header[REEF_PACKET_HEADER_SIZE]; /* of the last packet or part sent */
	int have_header;
	struct {
		uint64_t gen;      /* the client this entry is for */
		uint64_t seq;      /* its next packet_seq_num */
		uint64_t discarded_base;
		int dropped;       /* its last packet was dropped for it */
	} cli[REEF_MAX_CLIENTS];
};

struct reef_buf {
	/* Writer-only. */
	char *base;
	uint32_t npackets;
	uint32_t packet_size;
	char *cur;                 /* current packet slot, NULL if none */
	uint64_t seq;              /* packet_seq_num of the next packet closed */
	uint64_t instance_id;
	uint32_t tid;
	uint64_t *slot_seq;        /* per slot: seq of the packet in it */
	uint32_t wake_at;          /* closed packets waiting that wake the consumer */
	void *map;                 /* crash-safe: the ring file's mapping, else NULL */
	size_t map_len;

	_Alignas(REEF_CACHELINE) uint64_t head;  /* packets closed (writer) */
	uint64_t discarded;        /* events dropped (writer, and its signals:
	                            * reef__count_discarded) */
	_Alignas(REEF_CACHELINE) uint64_t tail;  /* packets consumed */

	/* Registry and consumer. */
	_Alignas(REEF_CACHELINE) struct reef__tls *tls; /* NULL once retired */
	int retired;               /* the thread has exited */
	int parked;                /* held by a fatal signal (core.c, fatal_park) */
	int fd;                    /* stream file, -1 until opened */
	uint64_t reported_discarded; /* events_discarded of the last packet written */
	int sample_fd;             /* profile.c: the thread's perf_event, 0: none */
	struct reef_live live;     /* net.c */
	struct reef_buf *next;
};

struct reef_state {
	struct reef_config cfg;
	char dir[4096];
	uint8_t uuid[16];
	char uuid_str[37];
	char hostname[256];
	char procname[256];
	int pid;
	const struct reef_schema *schema;
	uint8_t enabled[256];      /* what reef_enable/disable asked for */
	pthread_mutex_t registry_lock;  /* guards `buffers` insertions/removals */
	pthread_mutex_t drain_lock;     /* one drainer at a time */
	struct reef_buf *buffers;
	uint64_t next_instance;
	int wake_pipe[2];
	int consumer_sleeping;
	/* Discard mode: once the consumer runs as a batch thread, its thread
	 * id (0 until then) and CPUs; `consumer_off` is the CPU a waking
	 * thread last took out of its affinity (-1: none). See writer.c. */
	int consumer_tid;
	int consumer_off;
	cpu_set_t consumer_cpus;
	int stop;                  /* finalised: no more writes */
	int initialised;
	pthread_t consumer;
	uint64_t lost_unattributed; /* dropped before a buffer existed */
};

extern struct reef_state reef__st REEF_HIDDEN;

/* core.c */
void reef__wake_consumer(void) REEF_HIDDEN;
void reef__ensure_init(void) REEF_HIDDEN;
/* The calling thread's buffer, registered now if needed (not in a signal
 * handler); NULL if it cannot be. */
struct reef_buf *reef__thread_buf(void) REEF_HIDDEN;

/* profile.c: sampling, function entry/exit, loaded objects. */
void reef__profile_init(const struct reef_config *cfg) REEF_HIDDEN;
void reef__profile_start(void) REEF_HIDDEN;
void reef__profile_thread_registered(void) REEF_HIDDEN;
void reef__sample_thread_start(void) REEF_HIDDEN;
void reef__sample_thread_stop(void) REEF_HIDDEN;
void reef__sample_forget(void) REEF_HIDDEN;
void reef__objects_poll(void) REEF_HIDDEN;
extern const char reef__builtin_events[] REEF_HIDDEN;
extern const char *const reef__builtin_prelude[] REEF_HIDDEN;

/* clock.c */
void reef__clock_init(enum reef_clock which) REEF_HIDDEN;
void reef__clock_refine(void) REEF_HIDDEN;
/* Fills freq, offset_s, offset (cycles) for the metadata. */
void reef__clock_params(uint64_t *freq, int64_t *offset_s, uint64_t *offset) REEF_HIDDEN;
const char *reef__clock_name(void) REEF_HIDDEN;

/* writer.c */
int reef__write_metadata(void) REEF_HIDDEN;
/* Writes closed packets; `overwrite_snapshot`: copy and validate slots. */
int reef__drain(int overwrite_snapshot) REEF_HIDDEN;
int reef__write_packet(struct reef_buf *b, const char *pkt) REEF_HIDDEN;
int reef__write_discard_packet(struct reef_buf *b) REEF_HIDDEN;
/* A fatal signal: writes what every thread holds with write(2) alone (no
 * lock held for long, no allocation, no live clients), once the other
 * tracing threads are held (reef__fatal_quiesce() in core.c); returns how
 * many packets could not be written. */
int reef__emergency_write(void) REEF_HIDDEN;
void reef__fatal_quiesce(void) REEF_HIDDEN;
/* Unmaps `b`'s ring (crash-safe) or frees it. */
void reef__free_ring(struct reef_buf *b) REEF_HIDDEN;
/* Crash-safe: the path of `b`'s ring file. */
void reef__ring_path(char *out, size_t n, uint64_t instance_id) REEF_HIDDEN;
void *reef__consumer_main(void *arg) REEF_HIDDEN;
/* The expanded metadata text (malloc'd), or NULL. */
char *reef__metadata_text(size_t *len) REEF_HIDDEN;

/* net.c: live clients (REEF_LISTEN). */
void reef__net_start(void) REEF_HIDDEN;
/* A closed packet of `b` (`n` bytes): sent to clients; returns 1 if it
 * should also go to the directory. */
int reef__net_packet(struct reef_buf *b, const char *pkt, size_t n) REEF_HIDDEN;
void reef__net_finish(void) REEF_HIDDEN;
/* `b`'s thread has exited and its last packet was handed over. */
void reef__net_retire(struct reef_buf *b) REEF_HIDDEN;
int reef__net_backlogged(void) REEF_HIDDEN;
void reef__net_after_fork(void) REEF_HIDDEN;

static inline void reef__store64(char *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void reef__store32(char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline uint64_t reef__load64(const char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Adds `n` to the events `b` dropped. Called only by b's thread (and its
 * signal handlers); other threads only read the count. On x86-64 one
 * `add` to memory without the lock prefix: a signal handler on the same
 * thread cannot split one instruction, and another CPU reading the aligned
 * word sees the old or the new value. The locked add it replaces cost more
 * than recording an event (tracer/README.md, "Live streaming"), and a
 * thread at a full ring drops every event. */
static inline void reef__count_discarded(struct reef_buf *b, uint64_t n)
{
#if defined(__x86_64__)
	__asm__ volatile("addq %1, %0" : "+m"(b->discarded) : "er"(n));
#else
	__atomic_fetch_add(&b->discarded, n, __ATOMIC_RELAXED);
#endif
}

/* Completes the context of a packet of `len` bytes whose header is at
 * `pkt`: its end time now, its sizes, the discarded count. content_size
 * last: in a crash-safe ring a non-zero content_size marks a closed packet
 * whose context is complete (reef recover). */
static inline void reef__seal(char *pkt, size_t len, uint64_t discarded)
{
	reef__store64(pkt + REEF_OFF_TS_END, reef__now());
	reef__store64(pkt + REEF_OFF_PACKET_SIZE, (uint64_t)len * 8u);
	reef__store64(pkt + REEF_OFF_DISCARDED, discarded);
	REEF__SIGNAL_FENCE();
	reef__store64(pkt + REEF_OFF_CONTENT_SIZE, (uint64_t)len * 8u);
}

#endif
