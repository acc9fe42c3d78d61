/*
 * net.c — live streaming (REEF_LISTEN): a thread that accepts TCP clients
 * and sends each one the metadata, then every packet, in the framing below.
 *
 * Framing (little-endian; also the format of a saved capture, `nc ... >
 * file`): a sequence of records, each a 24-byte header then `size` bytes:
 *
 *     u32 magic   0x66656572 ("reef")
 *     u32 type    1 metadata (TSDL text; a later one replaces it)
 *                 2 packet   (one whole CTF packet of stream `stream`)
 *                 3 end      (the program has finished; size 0)
 *     u64 stream  stream_instance_id of a packet; 0 otherwise
 *     u64 size
 *
 * A client gets the metadata first. Packets are renumbered per client:
 * `packet_seq_num` counts from 0 in each stream, and `events_discarded`
 * from the value it had when the client first saw the stream, so a gap in
 * `packet_seq_num` is exactly the packets dropped for that client (its
 * queue was full) and `events_discarded` what the tracer itself dropped.
 *
 * Auto-flush: every `live_flush_ms` the recorded part of packets still
 * being filled is sent as a packet of its own (a "part"); the rest of the
 * packet follows as another part. A part ends at a time `t` such that its
 * events were recorded at or before `t` and the rest at or after `t`: the
 * cut is explained at auto_flush().
 *
 * Locks, always in this order: drain_lock, registry_lock, `net.lock`.
 * The traced threads never take any of them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define REC_MAGIC 0x66656572u
#define REC_METADATA 1u
#define REC_PACKET 2u
#define REC_END 3u
#define REC_HEADER 24u

struct client {
	int fd;                /* -1: free slot */
	int rd_closed;         /* the client shut down its sending side */
	int need_meta, need_end; /* at shutdown: still to queue */
	uint64_t gen;
	char *q;               /* ring of queued bytes */
	size_t cap, rd, len;
	uint64_t dropped;      /* packets dropped for this client */
	int full;              /* dropped the last packet, not half empty since */
	uint64_t ignored;      /* bytes the client sent (clients send nothing) */
};

static struct {
	int on;                /* REEF_LISTEN was given and the socket is bound */
	int closed;            /* finished: packets go to the directory */
	int quit;
	int listen_fd;
	int wake[2];
	pthread_t thread;
	int have_thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;   /* a client arrived (REEF_LISTEN_WAIT) */
	int nclients;
	uint64_t next_gen;
	struct client cli[REEF_MAX_CLIENTS];
	int flush_ms, both, wait_ms, linger_ms;
	size_t client_buffer;
	char *final_meta;
	size_t final_meta_len;
} net = {
	.listen_fd = -1,
	.wake = { -1, -1 },
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void wake_net(void)
{
	char c = 1;
	if (net.wake[1] >= 0 && write(net.wake[1], &c, 1) < 0) {
		/* full pipe: the thread is awake already */
	}
}

/* ---- queues ------------------------------------------------------------ */

static size_t room(const struct client *c)
{
	return c->cap - c->len;
}

static void put(struct client *c, const char *p, size_t n)
{
	size_t wr = (c->rd + c->len) % c->cap;
	size_t first = c->cap - wr < n ? c->cap - wr : n;
	int was_empty = c->len == 0;
	memcpy(c->q + wr, p, first);
	memcpy(c->q, p + first, n - first);
	c->len += n;
	if (was_empty)
		wake_net();
}

static void put_record(struct client *c, uint32_t type, uint64_t stream, const char *p, size_t n)
{
	char h[REC_HEADER];
	reef__store32(h, REC_MAGIC);
	reef__store32(h + 4, type);
	reef__store64(h + 8, stream);
	reef__store64(h + 16, n);
	put(c, h, REC_HEADER);
	if (n)
		put(c, p, n);
}

static void close_client(struct client *c)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
	free(c->q);
	c->q = NULL;
	c->len = c->rd = 0;
	net.nclients--;
}

/* Sends what the socket takes now. */
static void send_some(struct client *c)
{
	while (c->len) {
		size_t n = c->cap - c->rd < c->len ? c->cap - c->rd : c->len;
		ssize_t w = send(c->fd, c->q + c->rd, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				close_client(c);
			return;
		}
		c->rd = (c->rd + (size_t)w) % c->cap;
		c->len -= (size_t)w;
	}
}

/* What a client sends is ignored (past 1 MiB, the client is dropped: the
 * protocol has it send nothing); end of file means it will not send more
 * (it may still read), an error that it is gone. */
static void read_some(struct client *c)
{
	char buf[4096];
	int i;
	for (i = 0; i < 16; i++) {
		ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r > 0) {
			c->ignored += (uint64_t)r;
			if (c->ignored > (1u << 20)) {
				close_client(c);
				return;
			}
			continue;
		}
		if (r == 0) {
			c->rd_closed = 1;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			close_client(c);
		}
		return;
	}
}

static void accept_some(void)
{
	int i, k;
	for (i = 0; i < 16; i++) {
		int fd = accept4(net.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct client *c = NULL;
		char *meta;
		size_t mlen = 0;
		if (fd < 0)
			return;
		for (k = 0; k < REEF_MAX_CLIENTS; k++)
			if (net.cli[k].fd < 0) {
				c = &net.cli[k];
				break;
			}
		meta = c ? reef__metadata_text(&mlen) : NULL;
		if (!c || !meta) {
			close(fd); /* too many clients */
			free(meta);
			continue;
		}
		memset(c, 0, sizeof(*c));
		c->cap = net.client_buffer;
		/* Room for the metadata and a few whole packets at least. */
		if (c->cap < 4 * (mlen + REC_HEADER))
			c->cap = 4 * (mlen + REC_HEADER);
		if (c->cap < 4 * ((size_t)reef__st.cfg.packet_size + REC_HEADER))
			c->cap = 4 * ((size_t)reef__st.cfg.packet_size + REC_HEADER);
		c->q = malloc(c->cap);
		if (!c->q) {
			close(fd);
			free(meta);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->gen = ++net.next_gen;
		net.nclients++;
		put_record(c, REC_METADATA, 0, meta, mlen);
		free(meta);
		pthread_cond_broadcast(&net.cond);
	}
}

/* ---- packets ----------------------------------------------------------- */

/* Whether every packet handed over now would be dropped: clients only (no
 * directory), each of which dropped the last packet it was handed and has
 * not emptied half its queue since (net.lock held). */
static int all_clients_full(void)
{
	int k;
	if (!net.on || net.closed || net.both || !net.nclients)
		return 0;
	for (k = 0; k < REEF_MAX_CLIENTS; k++)
		if (net.cli[k].fd >= 0 && !net.cli[k].full)
			return 0;
	return 1;
}

int reef__net_backlogged(void)
{
	int full;
	if (!__atomic_load_n(&net.on, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&net.lock);
	full = all_clients_full();
	pthread_mutex_unlock(&net.lock);
	return full;
}

/* Sends bytes [from, to) of packet `pkt` of `b`, with `pkt`'s header, as
 * one packet to every client (net.lock held). */
static void broadcast(struct reef_buf *b, const char *pkt, uint32_t from, uint32_t to,
		      uint64_t ts_begin, uint64_t ts_end, uint64_t discarded)
{
	size_t n = REEF_PACKET_HEADER_SIZE + (size_t)(to - from);
	/* The record header and the packet header; the events are copied
	 * straight from `pkt` into the queues that take them (none when every
	 * client lags). */
	char head[REC_HEADER + REEF_PACKET_HEADER_SIZE], *h = head + REC_HEADER;
	int overwrite = reef__st.cfg.mode == REEF_MODE_OVERWRITE;
	int k;
	if (to < from || n > (size_t)b->packet_size)
		return;
	reef__store32(head, REC_MAGIC);
	reef__store32(head + 4, REC_PACKET);
	reef__store64(head + 8, b->instance_id);
	reef__store64(head + 16, n);
	memcpy(h, pkt, REEF_PACKET_HEADER_SIZE);
	reef__store64(h + REEF_OFF_TS_BEGIN, ts_begin);
	reef__store64(h + REEF_OFF_TS_END, ts_end);
	reef__store64(h + REEF_OFF_CONTENT_SIZE, (uint64_t)n * 8u);
	reef__store64(h + REEF_OFF_PACKET_SIZE, (uint64_t)n * 8u);
	memcpy(b->live.last_header, h, REEF_PACKET_HEADER_SIZE);
	b->live.have_header = 1;
	for (k = 0; k < REEF_MAX_CLIENTS; k++) {
		struct client *c = &net.cli[k];
		uint64_t seq, d;
		if (c->fd < 0)
			continue;
		if (b->live.cli[k].gen != c->gen) {
			b->live.cli[k].gen = c->gen;
			b->live.cli[k].seq = 0;
			b->live.cli[k].discarded_base = b->live.last_discarded;
		}
		seq = b->live.cli[k].seq++;
		d = discarded - b->live.cli[k].discarded_base;
		if (discarded < b->live.cli[k].discarded_base)
			d = 0;
		if (overwrite) {
			/* Snapshots: the ring's own numbering shows reused packets. */
			seq = reef__load64(pkt + REEF_OFF_SEQ_NUM);
			d = discarded;
		}
		/* The last eighth of the queue is kept for end-of-stream stubs,
		 * metadata and the end record. */
		if (room(c) < n + REC_HEADER + c->cap / 8) {
			c->dropped++;
			c->full = 1;
			b->live.cli[k].dropped = 1;
			continue;
		}
		c->full = 0;
		b->live.cli[k].dropped = 0;
		reef__store64(h + REEF_OFF_SEQ_NUM, seq);
		reef__store64(h + REEF_OFF_DISCARDED, d);
		put(c, head, sizeof(head));
		if (to > from)
			put(c, pkt + from, to - from);
	}
	b->live.last_discarded = discarded;
}

/* If the last packets of `b` were dropped for client `k`, nothing after
 * them would show it: an empty packet (the last header sent, the next
 * sequence number, the latest count of events dropped) does (net.lock
 * held). */
static void send_stub(struct reef_buf *b, int k)
{
	struct client *c = &net.cli[k];
	char rec[REC_HEADER + REEF_PACKET_HEADER_SIZE], *h = rec + REC_HEADER;
	uint64_t d, base, ts;
	if (c->fd < 0 || b->live.cli[k].gen != c->gen || !b->live.cli[k].dropped ||
	    !b->live.have_header || room(c) < sizeof(rec))
		return;
	reef__store32(rec, REC_MAGIC);
	reef__store32(rec + 4, REC_PACKET);
	reef__store64(rec + 8, b->instance_id);
	reef__store64(rec + 16, REEF_PACKET_HEADER_SIZE);
	memcpy(h, b->live.last_header, REEF_PACKET_HEADER_SIZE);
	ts = reef__load64(h + REEF_OFF_TS_END);
	reef__store64(h + REEF_OFF_TS_BEGIN, ts);
	reef__store64(h + REEF_OFF_CONTENT_SIZE, REEF_PACKET_HEADER_SIZE * 8u);
	reef__store64(h + REEF_OFF_PACKET_SIZE, REEF_PACKET_HEADER_SIZE * 8u);
	d = b->live.last_discarded;
	base = b->live.cli[k].discarded_base;
	if (reef__st.cfg.mode == REEF_MODE_OVERWRITE)
		base = 0;
	else
		reef__store64(h + REEF_OFF_SEQ_NUM, b->live.cli[k].seq++);
	reef__store64(h + REEF_OFF_DISCARDED, d >= base ? d - base : 0);
	put(c, rec, sizeof(rec));
	b->live.cli[k].dropped = 0;
}

void reef__net_retire(struct reef_buf *b)
{
	int k;
	if (!__atomic_load_n(&net.on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&net.lock);
	if (!net.closed)
		for (k = 0; k < REEF_MAX_CLIENTS; k++)
			send_stub(b, k);
	pthread_mutex_unlock(&net.lock);
}

int reef__net_packet(struct reef_buf *b, const char *pkt, size_t n)
{
	uint64_t seq, d, ts_b, ts_e;
	uint32_t from = REEF_PACKET_HEADER_SIZE;
	int partial = 0, to_dir;
	if (!__atomic_load_n(&net.on, __ATOMIC_ACQUIRE))
		return 1;
	pthread_mutex_lock(&net.lock);
	if (net.closed) {
		pthread_mutex_unlock(&net.lock);
		return 1;
	}
	seq = reef__load64(pkt + REEF_OFF_SEQ_NUM);
	d = reef__load64(pkt + REEF_OFF_DISCARDED);
	ts_b = reef__load64(pkt + REEF_OFF_TS_BEGIN);
	ts_e = reef__load64(pkt + REEF_OFF_TS_END);
	if (b->live.partial && b->live.pkt_seq == seq && b->live.off <= n) {
		from = b->live.off;
		ts_b = b->live.ts;
		partial = 1;
	}
	b->live.partial = 0;
	if (ts_e < ts_b)
		ts_e = ts_b;
	/* The rest of a packet already partly sent, or a whole one; nothing
	 * if a part took everything and the count of drops has not moved. */
	if (net.nclients && (!partial || n > from || d != b->live.last_discarded))
		broadcast(b, pkt, from, (uint32_t)n, ts_b, ts_e, d);
	b->live.last_discarded = d;
	to_dir = net.both || net.nclients == 0;
	pthread_mutex_unlock(&net.lock);
	return to_dir;
}

/* Auto-flush: the recorded part of the packets threads are filling, sent
 * as packets of their own (a "part"), cut at one time `t` for all.
 *
 * A part must hold every event of its packet stamped before `t` and none
 * stamped after. For each thread: read its write position `p1`, then `t`
 * (fenced, so that the clock is read after `p1`), then, after a pause
 * longer than a store takes to reach other CPUs, its nesting counter and
 * position again. If it is outside any event and its position has not
 * moved, every event stamped before `t` was committed by `p1`: an event
 * in progress at `t` had incremented the counter before reading the
 * clock, and that increment is visible after the pause (a thread
 * preempted inside an event has made it visible when it was switched
 * out). Otherwise the thread is tried again at the next flush. */
struct cut {
	struct reef_buf *b;
	char *p1;
	uint64_t head, discarded;
};

static uint64_t fenced_now(void)
{
	uint64_t t;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_lfence();
#endif
	t = reef__now();
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_lfence();
#endif
	return t;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sends [the part already sent, p1) of `c->b`'s current packet, cut at
 * `t_cut` (drain_lock, registry_lock held). */
static void send_part(const struct cut *c, uint64_t t_cut)
{
	struct reef_buf *b = c->b;
	char *pkt = b->base + (size_t)(c->head % b->npackets) * b->packet_size;
	uint32_t off, from;
	uint64_t seq;
	if (c->p1 <= pkt + REEF_PACKET_HEADER_SIZE || c->p1 > pkt + b->packet_size)
		return; /* no packet open, or nothing in it */
	off = (uint32_t)(c->p1 - pkt);
	seq = reef__load64(pkt + REEF_OFF_SEQ_NUM);
	pthread_mutex_lock(&net.lock);
	if (net.nclients && !net.closed) {
		uint64_t ts_b = reef__load64(pkt + REEF_OFF_TS_BEGIN);
		from = REEF_PACKET_HEADER_SIZE;
		if (b->live.partial && b->live.pkt_seq == seq) {
			from = b->live.off;
			ts_b = b->live.ts;
		}
		if (off > from) {
			if (ts_b > t_cut)
				ts_b = t_cut;
			broadcast(b, pkt, from, off, ts_b, t_cut, c->discarded);
			b->live.partial = 1;
			b->live.pkt_seq = seq;
			b->live.off = off;
			b->live.ts = t_cut;
		}
	}
	pthread_mutex_unlock(&net.lock);
}

static struct cut *cuts;
static size_t ncuts_cap;

static void auto_flush(void)
{
	struct reef_buf *b;
	size_t n = 0, i;
	uint64_t t_cut, t0;
	reef__drain(0); /* closed packets go first */
	pthread_mutex_lock(&reef__st.drain_lock);
	if (__atomic_load_n(&reef__st.stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&reef__st.drain_lock);
		return;
	}
	pthread_mutex_lock(&reef__st.registry_lock);
	for (b = reef__st.buffers; b; b = b->next) {
		struct reef__tls *t = b->tls;
		uint64_t head;
		if (b->retired || !t)
			continue;
		/* One load of `head` for the check and the cut: loaded twice, a
		 * packet closed in between would have its successor's part sent
		 * before it (out of order), and sent again whole after it. */
		head = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&b->tail, __ATOMIC_ACQUIRE) != head)
			continue; /* closed packets not handed over yet */
		if (n == ncuts_cap) {
			size_t cap = ncuts_cap ? 2 * ncuts_cap : 64;
			struct cut *c = realloc(cuts, cap * sizeof(*c));
			if (!c)
				break;
			cuts = c;
			ncuts_cap = cap;
		}
		cuts[n].b = b;
		cuts[n].discarded = __atomic_load_n(&b->discarded, __ATOMIC_RELAXED);
		cuts[n].head = head;
		cuts[n].p1 = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
		n++;
	}
	if (n) {
		t_cut = fenced_now();
		t0 = mono_ns();
		while (mono_ns() - t0 < 20000) {
			/* let stores in flight on other CPUs become visible */
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		for (i = 0; i < n; i++) {
			struct cut *c = &cuts[i];
			struct reef__tls *t = c->b->tls;
			if (__atomic_load_n(&t->nest, __ATOMIC_ACQUIRE) != 0 ||
			    __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE) != c->p1 ||
			    __atomic_load_n(&c->b->head, __ATOMIC_ACQUIRE) != c->head)
				continue; /* busy: its packet fills, or next time */
			send_part(c, t_cut);
		}
	}
	pthread_mutex_unlock(&reef__st.registry_lock);
	pthread_mutex_unlock(&reef__st.drain_lock);
}

/* ---- the thread -------------------------------------------------------- */

static void *net_main(void *arg)
{
	uint64_t next_flush;
	(void)arg;
	reef__tls.dead = 1; /* this thread never records */
	prctl(PR_SET_NAME, "reef-net", 0, 0, 0);
	next_flush = now_ms() + (uint64_t)(net.flush_ms > 0 ? net.flush_ms : 0);
	for (;;) {
		struct pollfd pfd[2 + REEF_MAX_CLIENTS];
		int who[2 + REEF_MAX_CLIENTS];
		int n = 0, k, timeout = 200, full;
		uint64_t now;
		char drainbuf[64];
		pthread_mutex_lock(&net.lock);
		if (net.quit) {
			pthread_mutex_unlock(&net.lock);
			break;
		}
		pfd[n].fd = net.wake[0];
		pfd[n].events = POLLIN;
		who[n++] = -1;
		pfd[n].fd = net.listen_fd;
		pfd[n].events = POLLIN;
		who[n++] = -2;
		for (k = 0; k < REEF_MAX_CLIENTS; k++) {
			struct client *c = &net.cli[k];
			if (c->fd < 0)
				continue;
			pfd[n].fd = c->fd;
			pfd[n].events = (short)((c->rd_closed ? 0 : POLLIN) | (c->len ? POLLOUT : 0));
			who[n++] = k;
		}
		if (net.nclients && net.flush_ms > 0) {
			now = now_ms();
			timeout = next_flush > now ? (int)(next_flush - now) : 0;
		}
		pthread_mutex_unlock(&net.lock);

		poll(pfd, (nfds_t)n, timeout);

		while (read(net.wake[0], drainbuf, sizeof(drainbuf)) > 0) {
		}
		pthread_mutex_lock(&net.lock);
		full = all_clients_full();
		for (k = 1; k < n; k++) {
			struct client *c;
			if (!pfd[k].revents)
				continue;
			if (who[k] == -2) {
				accept_some();
				continue;
			}
			c = &net.cli[who[k]];
			if (c->fd != pfd[k].fd)
				continue;
			if (pfd[k].revents & (POLLERR | POLLNVAL)) {
				close_client(c);
				continue;
			}
			if (pfd[k].revents & POLLIN)
				read_some(c);
			if (c->fd >= 0 && (pfd[k].revents & POLLHUP) && c->len == 0)
				close_client(c); /* both sides shut down */
		}
		/* Everything queued, even for clients poll() did not report on. */
		for (k = 0; k < REEF_MAX_CLIENTS; k++) {
			struct client *c = &net.cli[k];
			if (c->fd >= 0 && c->len)
				send_some(c);
			/* It reads again: resume once half its queue is free, not
			 * at every byte taken (the consumer and this thread would
			 * wake each other for every packet). */
			if (c->fd >= 0 && c->full && room(c) >= c->cap / 2)
				c->full = 0;
		}
		/* A client reads again, a new one came or the lagging ones
		 * left: the consumer, which stopped handing packets over while
		 * all were full, resumes. */
		if (full && !all_clients_full() && reef__st.wake_pipe[1] >= 0 &&
		    write(reef__st.wake_pipe[1], drainbuf, 1) < 0) {
			/* full pipe: it is awake already */
		}
		k = net.nclients;
		pthread_mutex_unlock(&net.lock);

		now = now_ms();
		if (net.flush_ms > 0 && now >= next_flush) {
			if (k && reef__st.cfg.mode != REEF_MODE_OVERWRITE)
				auto_flush();
			next_flush = now + (uint64_t)net.flush_ms;
		}
	}
	return NULL;
}

/* ---- start, finish, fork ----------------------------------------------- */

static int env_int(const char *name, int fallback)
{
	const char *v = getenv(name);
	char *end;
	long x;
	if (!v || !*v)
		return fallback;
	x = strtol(v, &end, 10);
	if (end == v || x > 1000000000L || x < -1000000000L)
		return fallback;
	return (int)x;
}

static size_t env_size(const char *name, size_t fallback)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;
	if (!v || !*v)
		return fallback;
	x = strtoull(v, &end, 0);
	if (end == v)
		return fallback;
	switch (*end) {
	case 'k': case 'K': x <<= 10; break;
	case 'm': case 'M': x <<= 20; break;
	case 'g': case 'G': x <<= 30; break;
	default: break;
	}
	return (size_t)x;
}

/* "1"/"on"/"yes"/"true", "[ADDR]:PORT", "ADDR:PORT", ":PORT", "PORT",
 * "ADDR" into host and port (default 127.0.0.1:6666). */
static int parse_listen(const char *spec, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon, *p;
	int digits = 1;
	snprintf(host, hostlen, "127.0.0.1");
	snprintf(port, portlen, "6666");
	if (!strcmp(spec, "1") || !strcmp(spec, "on") || !strcmp(spec, "yes") ||
	    !strcmp(spec, "true"))
		return 0;
	for (p = spec; *p; p++)
		if (*p < '0' || *p > '9')
			digits = 0;
	if (digits) {
		snprintf(port, portlen, "%s", spec);
		return 0;
	}
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || (close[1] && close[1] != ':'))
			return -1;
		snprintf(host, hostlen, "%.*s", (int)(close - spec - 1), spec + 1);
		if (close[1] == ':' && close[2])
			snprintf(port, portlen, "%s", close + 2);
		return 0;
	}
	colon = strrchr(spec, ':');
	if (!colon) {
		snprintf(host, hostlen, "%s", spec);
		return 0;
	}
	if (colon != spec)
		snprintf(host, hostlen, "%.*s", (int)(colon - spec), spec);
	if (colon[1])
		snprintf(port, portlen, "%s", colon + 1);
	return strchr(host, ':') ? -1 : 0; /* IPv6 needs brackets */
}

static int bind_listen(const char *spec)
{
	char host[256], port[32], shown[300], addr[INET6_ADDRSTRLEN + 8];
	struct addrinfo hints, *res = NULL, *ai;
	int fd = -1, one = 1, rc;
	if (parse_listen(spec, host, sizeof(host), port, sizeof(port))) {
		fprintf(stderr, "libreef: REEF_LISTEN must be [ADDR]:PORT; not listening: %s\n", spec);
		return -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		fprintf(stderr, "libreef: cannot listen on %s:%s: %s\n", host, port, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, 16))
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fprintf(stderr, "libreef: cannot listen on %s:%s: %s\n", host, port, strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	{
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char serv[16];
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
		    getnameinfo((struct sockaddr *)&ss, sl, addr, sizeof(addr), serv, sizeof(serv),
				NI_NUMERICHOST | NI_NUMERICSERV))
			snprintf(shown, sizeof(shown), "%s:%s", host, port);
		else if (ss.ss_family == AF_INET6)
			snprintf(shown, sizeof(shown), "[%s]:%s", addr, serv);
		else
			snprintf(shown, sizeof(shown), "%s:%s", addr, serv);
	}
	fprintf(stderr, "libreef: listening on %s\n", shown);
	return fd;
}

void reef__net_start(void)
{
	struct reef_config *cfg = &reef__st.cfg;
	const char *v = getenv("REEF_LISTEN");
	sigset_t all, old;
	int k;
	if (v && *v)
		cfg->listen = v;
	if (!cfg->listen || !*cfg->listen || !strcmp(cfg->listen, "0") || !strcmp(cfg->listen, "off"))
		return;
	cfg->live_flush_ms = env_int("REEF_FLUSH_MS", cfg->live_flush_ms ? cfg->live_flush_ms : 100);
	if ((v = getenv("REEF_LIVE_SINK")) && *v) {
		if (!strcmp(v, "both"))
			cfg->live_both = 1;
		else if (!strcmp(v, "network"))
			cfg->live_both = 0;
		else
			fprintf(stderr, "libreef: REEF_LIVE_SINK must be network or both; ignored: %s\n", v);
	}
	cfg->client_buffer = env_size("REEF_CLIENT_BUFFER", cfg->client_buffer ? cfg->client_buffer : 4u << 20);
	cfg->listen_wait_ms = env_int("REEF_LISTEN_WAIT", cfg->listen_wait_ms);
	cfg->linger_ms = env_int("REEF_LINGER_MS", cfg->linger_ms ? cfg->linger_ms : 2000);
	net.flush_ms = cfg->live_flush_ms;
	net.both = cfg->live_both;
	net.client_buffer = cfg->client_buffer < 64u << 10 ? 64u << 10 : cfg->client_buffer;
	net.wait_ms = cfg->listen_wait_ms;
	net.linger_ms = cfg->linger_ms;
	for (k = 0; k < REEF_MAX_CLIENTS; k++)
		net.cli[k].fd = -1;
	net.listen_fd = bind_listen(cfg->listen);
	if (net.listen_fd < 0)
		return;
	if (pipe2(net.wake, O_CLOEXEC | O_NONBLOCK)) {
		close(net.listen_fd);
		net.listen_fd = -1;
		return;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	net.have_thread = !pthread_create(&net.thread, NULL, net_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!net.have_thread) {
		fprintf(stderr, "libreef: cannot start the network thread; not listening\n");
		close(net.listen_fd);
		net.listen_fd = -1;
		return;
	}
	__atomic_store_n(&net.on, 1, __ATOMIC_RELEASE);
	if (net.wait_ms > 0) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += net.wait_ms / 1000;
		until.tv_nsec += (long)(net.wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&net.lock);
		while (!net.nclients)
			if (pthread_cond_timedwait(&net.cond, &net.lock, &until) == ETIMEDOUT)
				break;
		pthread_mutex_unlock(&net.lock);
	}
}

/* At shutdown (after the last packets were handed over): the final
 * metadata and the end record, then up to `linger_ms` for clients to take
 * what is queued. */
void reef__net_finish(void)
{
	uint64_t deadline, hard_deadline;
	int k;
	if (!__atomic_load_n(&net.on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&net.lock);
	if (net.closed) {
		pthread_mutex_unlock(&net.lock);
		return;
	}
	net.quit = 1;
	pthread_mutex_unlock(&net.lock);
	wake_net();
	if (net.have_thread && !pthread_equal(pthread_self(), net.thread))
		pthread_join(net.thread, NULL);
	net.have_thread = 0;

	pthread_mutex_lock(&reef__st.registry_lock);
	pthread_mutex_lock(&net.lock);
	{
		struct reef_buf *b;
		for (b = reef__st.buffers; b; b = b->next)
			for (k = 0; k < REEF_MAX_CLIENTS; k++)
				send_stub(b, k);
	}
	pthread_mutex_unlock(&reef__st.registry_lock);
	net.final_meta = reef__metadata_text(&net.final_meta_len);
	for (k = 0; k < REEF_MAX_CLIENTS; k++) {
		net.cli[k].need_meta = net.final_meta != NULL;
		net.cli[k].need_end = 1;
	}
	/* A client gets `linger_ms` without taking anything before it is cut
	 * off, and 15 times that in all. */
	deadline = now_ms() + (uint64_t)(net.linger_ms > 0 ? net.linger_ms : 0);
	hard_deadline = now_ms() + 15u * (uint64_t)(net.linger_ms > 0 ? net.linger_ms : 0);
	for (;;) {
		struct pollfd pfd[REEF_MAX_CLIENTS];
		int n = 0, busy = 0;
		uint64_t now, queued = 0;
		for (k = 0; k < REEF_MAX_CLIENTS; k++) {
			struct client *c = &net.cli[k];
			if (c->fd < 0)
				continue;
			if (c->need_meta && room(c) >= net.final_meta_len + REC_HEADER) {
				put_record(c, REC_METADATA, 0, net.final_meta, net.final_meta_len);
				c->need_meta = 0;
			}
			if (!c->need_meta && c->need_end && room(c) >= REC_HEADER) {
				put_record(c, REC_END, 0, NULL, 0);
				c->need_end = 0;
			}
			queued += c->len;
			send_some(c);
			if (c->fd < 0)
				continue;
			queued -= c->len; /* sent now */
			if (c->len || c->need_end) {
				pfd[n].fd = c->fd;
				pfd[n].events = POLLOUT;
				n++;
				busy = 1;
			}
		}
		now = now_ms();
		if (queued && deadline < hard_deadline)
			deadline = now + (uint64_t)net.linger_ms < hard_deadline
					   ? now + (uint64_t)net.linger_ms
					   : hard_deadline;
		if (!busy || now >= deadline)
			break;
		poll(pfd, (nfds_t)n, (int)(deadline - now < 50 ? deadline - now : 50));
	}
	for (k = 0; k < REEF_MAX_CLIENTS; k++)
		close_client(&net.cli[k]);
	if (net.listen_fd >= 0)
		close(net.listen_fd);
	net.listen_fd = -1;
	free(net.final_meta);
	net.final_meta = NULL;
	net.closed = 1;
	pthread_mutex_unlock(&net.lock);
}

/* The child of a fork keeps none of the parent's connections. */
void reef__net_after_fork(void)
{
	int k;
	if (!net.on)
		return;
	net.on = 0;
	for (k = 0; k < REEF_MAX_CLIENTS; k++)
		if (net.cli[k].fd >= 0)
			close(net.cli[k].fd);
	if (net.listen_fd >= 0)
		close(net.listen_fd);
	if (net.wake[0] >= 0)
		close(net.wake[0]);
	if (net.wake[1] >= 0)
		close(net.wake[1]);
}
