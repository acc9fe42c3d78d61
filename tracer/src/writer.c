/*
 * writer.c — the consumer side: metadata, packets to stream files, the
 * consumer thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Appends `s` to `out` escaped for a TSDL string literal. */
static void append_escaped(char **out, size_t *len, size_t *cap, const char *s);

static int append(char **out, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = (*cap ? *cap * 2 : 8192) + n;
		char *o = realloc(*out, c);
		if (!o)
			return -1;
		*out = o;
		*cap = c;
	}
	memcpy(*out + *len, s, n);
	*len += n;
	(*out)[*len] = 0;
	return 0;
}

static void append_escaped(char **out, size_t *len, size_t *cap, const char *s)
{
	for (; *s; s++) {
		char c = *s;
		if (c == '"' || c == '\\')
			append(out, len, cap, "\\", 1);
		if ((unsigned char)c < 0x20)
			c = ' ';
		append(out, len, cap, &c, 1);
	}
}

/* Replaces the template's @NAME@ placeholders (see reef-gen's tsdl.rs). */
static void expand_line(char **out, size_t *len, size_t *cap, const char *line)
{
	uint64_t freq, offset;
	int64_t offset_s;
	char num[64];
	reef__clock_params(&freq, &offset_s, &offset);
	while (*line) {
		const char *at = strchr(line, '@');
		const char *close = at ? strchr(at + 1, '@') : NULL;
		size_t n;
		if (!at || !close) {
			append(out, len, cap, line, strlen(line));
			return;
		}
		append(out, len, cap, line, (size_t)(at - line));
		n = (size_t)(close - at + 1);
		if (n == 6 && !strncmp(at, "@UUID@", n)) {
			append(out, len, cap, reef__st.uuid_str, strlen(reef__st.uuid_str));
		} else if (n == 10 && !strncmp(at, "@HOSTNAME@", n)) {
			append_escaped(out, len, cap, reef__st.hostname);
		} else if (n == 10 && !strncmp(at, "@PROCNAME@", n)) {
			append_escaped(out, len, cap, reef__st.procname);
		} else if (n == 5 && !strncmp(at, "@PID@", n)) {
			snprintf(num, sizeof(num), "%d", reef__st.pid);
			append(out, len, cap, num, strlen(num));
		} else if (n == 14 && !strncmp(at, "@CLOCK_SOURCE@", n)) {
			append_escaped(out, len, cap, reef__clock_name());
		} else if (n == 12 && !strncmp(at, "@CLOCK_FREQ@", n)) {
			snprintf(num, sizeof(num), "%llu", (unsigned long long)freq);
			append(out, len, cap, num, strlen(num));
		} else if (n == 16 && !strncmp(at, "@CLOCK_OFFSET_S@", n)) {
			snprintf(num, sizeof(num), "%lld", (long long)offset_s);
			append(out, len, cap, num, strlen(num));
		} else if (n == 14 && !strncmp(at, "@CLOCK_OFFSET@", n)) {
			snprintf(num, sizeof(num), "%llu", (unsigned long long)offset);
			append(out, len, cap, num, strlen(num));
		} else {
			/* Not a placeholder: keep the first '@' and go on. */
			append(out, len, cap, at, 1);
			line = at + 1;
			continue;
		}
		line = close + 1;
	}
}

char *reef__metadata_text(size_t *lenp)
{
	const struct reef_schema *s = reef__st.schema;
	char *text = NULL;
	size_t len = 0, cap = 0;
	const char *const *l;
	/* A program without a schema (sampling, -finstrument-functions)
	 * gets the prelude alone; both get libreef's built-in events. */
	for (l = s ? s->metadata : reef__builtin_prelude; *l; l++) {
		expand_line(&text, &len, &cap, *l);
		append(&text, &len, &cap, "\n", 1);
	}
	append(&text, &len, &cap, reef__builtin_events, strlen(reef__builtin_events));
	*lenp = len;
	return text;
}

int reef__write_metadata(void)
{
	char *text, path[4200], tmp[4210];
	size_t len = 0;
	int fd, rc;
	text = reef__metadata_text(&len);
	if (!text)
		return -1;
	snprintf(path, sizeof(path), "%s/metadata", reef__st.dir);
	snprintf(tmp, sizeof(tmp), "%s/.metadata.tmp", reef__st.dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		free(text);
		return -1;
	}
	rc = write_all(fd, text, len);
	close(fd);
	free(text);
	if (rc || rename(tmp, path))
		return -1;
	return 0;
}

/* The stream file of `b`, opened on first use; -1 if it cannot be. */
static int stream_fd(struct reef_buf *b)
{
	if (b->fd < 0) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/stream_%llu", reef__st.dir,
			 (unsigned long long)b->instance_id);
		b->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	}
	return b->fd;
}

int reef__write_packet(struct reef_buf *b, const char *pkt)
{
	uint64_t bits = reef__load64(pkt + REEF_OFF_CONTENT_SIZE);
	size_t n = (size_t)(bits / 8u);
	if (n < REEF_PACKET_HEADER_SIZE || n > b->packet_size)
		return -1;
	if (!reef__net_packet(b, pkt, n)) {
		b->reported_discarded = reef__load64(pkt + REEF_OFF_DISCARDED);
		return 0; /* went to live clients only */
	}
	if (stream_fd(b) < 0)
		return -1;
	b->reported_discarded = reef__load64(pkt + REEF_OFF_DISCARDED);
	return write_all(b->fd, pkt, n);
}

/* An empty packet carrying the count of events dropped since the last
 * packet written, for a thread that could not open one itself (all its
 * packets were waiting when it exited, or at shutdown). Its header is the
 * previous packet's. */
int reef__write_discard_packet(struct reef_buf *b)
{
	char pkt[REEF_PACKET_HEADER_SIZE];
	uint64_t d = __atomic_load_n(&b->discarded, __ATOMIC_RELAXED), now = reef__now();
	if (d == b->reported_discarded || reef__st.cfg.mode == REEF_MODE_OVERWRITE)
		return 0;
	memset(pkt, 0, sizeof(pkt));
	if (b->head > 0) {
		memcpy(pkt, b->base + (size_t)((b->head - 1) % b->npackets) * b->packet_size,
		       REEF_PACKET_HEADER_SIZE);
		if (reef__load64(pkt + REEF_OFF_TS_END) > now)
			now = reef__load64(pkt + REEF_OFF_TS_END);
	} else {
		reef__store32(pkt + REEF_OFF_MAGIC, REEF_CTF_MAGIC);
		memcpy(pkt + REEF_OFF_UUID, reef__st.uuid, 16);
		reef__store64(pkt + REEF_OFF_INSTANCE_ID, b->instance_id);
		reef__store32(pkt + REEF_OFF_TID, b->tid);
	}
	reef__store64(pkt + REEF_OFF_TS_BEGIN, now);
	reef__store64(pkt + REEF_OFF_TS_END, now);
	reef__store64(pkt + REEF_OFF_CONTENT_SIZE, REEF_PACKET_HEADER_SIZE * 8u);
	reef__store64(pkt + REEF_OFF_PACKET_SIZE, REEF_PACKET_HEADER_SIZE * 8u);
	reef__store64(pkt + REEF_OFF_SEQ_NUM, b->seq++);
	reef__store64(pkt + REEF_OFF_DISCARDED, d);
	return reef__write_packet(b, pkt);
}

static int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* Packets per writev(): one call per packet costs the consumer about 20%
 * more CPU than one per 16 (measured: 42 MiB into ext4's page cache). At
 * most a quarter of the ring, so the writer keeps most of its slots while a
 * batch is written. */
#define REEF_WRITE_BATCH 16

/* Writes the closed packets from `tail` on (at most a batch, not across
 * the end of the ring) with one writev(); returns how many were consumed.
 * Each goes to live clients first (net.c) as reef__write_packet() does. */
static uint64_t write_batch(struct reef_buf *b, uint64_t tail, uint64_t head, int *rc)
{
	struct iovec iov[REEF_WRITE_BATCH];
	uint32_t slot = (uint32_t)(tail % b->npackets);
	uint64_t max = b->npackets / 4u, k;
	int n = 0;
	if (max > REEF_WRITE_BATCH)
		max = REEF_WRITE_BATCH;
	if (max < 1)
		max = 1;
	for (k = 0; k < max && tail + k < head && slot + k < b->npackets; k++) {
		const char *pkt = b->base + (size_t)(slot + k) * b->packet_size;
		size_t len = (size_t)(reef__load64(pkt + REEF_OFF_CONTENT_SIZE) / 8u);
		if (len < REEF_PACKET_HEADER_SIZE || len > b->packet_size) {
			*rc = -1;
			continue;
		}
		b->reported_discarded = reef__load64(pkt + REEF_OFF_DISCARDED);
		if (!reef__net_packet(b, pkt, len))
			continue; /* went to live clients only */
		iov[n].iov_base = (void *)(uintptr_t)pkt;
		iov[n].iov_len = len;
		n++;
	}
	if (n && (stream_fd(b) < 0 || writev_all(b->fd, iov, n)))
		*rc = -1;
	return k;
}

/* One buffer: write its closed packets. */
static int drain_buf(struct reef_buf *b, int snapshot, char *scratch)
{
	int rc = 0;
	for (;;) {
		uint64_t tail = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
		uint64_t head = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
		uint32_t slot;
		const char *pkt;
		if (tail >= head)
			return rc;
		slot = (uint32_t)(tail % b->npackets);
		pkt = b->base + (size_t)slot * b->packet_size;
		if (!snapshot) {
			__atomic_store_n(&b->tail, tail + write_batch(b, tail, head, &rc),
					 __ATOMIC_RELEASE);
			continue;
		}
		/* Overwrite mode: the writer may reuse the slot while we copy. */
		{
			uint64_t seq1 = __atomic_load_n(&b->slot_seq[slot], __ATOMIC_ACQUIRE), seq2;
			uint64_t bits;
			if (seq1 != tail)
				continue; /* reclaimed: tail has moved on */
			bits = reef__load64(pkt + REEF_OFF_CONTENT_SIZE);
			if (bits / 8u > b->packet_size)
				continue;
			memcpy(scratch, pkt, (size_t)(bits / 8u));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			seq2 = __atomic_load_n(&b->slot_seq[slot], __ATOMIC_ACQUIRE);
			if (seq2 == seq1 && reef__write_packet(b, scratch))
				rc = -1;
			__atomic_compare_exchange_n(&b->tail, &tail, tail + 1, 0, __ATOMIC_ACQ_REL,
						    __ATOMIC_ACQUIRE);
		}
	}
}

int reef__drain(int snapshot)
{
	struct reef_buf **link, *b;
	char *scratch = NULL;
	int rc = 0;
	pthread_mutex_lock(&reef__st.drain_lock);
	if (__atomic_load_n(&reef__st.stop, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&reef__st.drain_lock);
		return 0;
	}
	if (snapshot)
		scratch = malloc(reef__st.cfg.packet_size);
	link = &reef__st.buffers;
	while ((b = __atomic_load_n(link, __ATOMIC_ACQUIRE))) {
		if (drain_buf(b, snapshot && scratch, scratch))
			rc = -1;
		if (__atomic_load_n(&b->retired, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE) ==
			    __atomic_load_n(&b->head, __ATOMIC_ACQUIRE)) {
			/* The thread is gone and everything is written. */
			struct reef_buf **l;
			reef__write_discard_packet(b);
			reef__net_retire(b);
			/* Re-find the link under the lock: a thread may have pushed
			 * a new buffer at the head since `link` was read. */
			pthread_mutex_lock(&reef__st.registry_lock);
			for (l = &reef__st.buffers; *l != b; l = &(*l)->next) {
			}
			*l = b->next;
			pthread_mutex_unlock(&reef__st.registry_lock);
			if (b->fd >= 0)
				close(b->fd);
			reef__free_ring(b);
			free(b->slot_seq);
			free(b);
			link = l;
			continue;
		}
		link = &b->next;
	}
	free(scratch);
	pthread_mutex_unlock(&reef__st.drain_lock);
	return rc;
}

static int pending(void)
{
	struct reef_buf *b;
	for (b = __atomic_load_n(&reef__st.buffers, __ATOMIC_ACQUIRE); b; b = b->next)
		if (__atomic_load_n(&b->tail, __ATOMIC_ACQUIRE) !=
			    __atomic_load_n(&b->head, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&b->retired, __ATOMIC_ACQUIRE))
			return 1;
	return 0;
}

/* The consumer's sleep: until a byte on the wake pipe or 50 ms, then the
 * pipe emptied; `announced`: it had told the tracing threads it sleeps, and
 * now tells them it is awake before emptying the pipe. */
static void wait_for_wake(int announced)
{
	struct pollfd pfd;
	char drainbuf[64];
	pfd.fd = reef__st.wake_pipe[0];
	pfd.events = POLLIN;
	pfd.revents = 0;
	poll(&pfd, pfd.fd >= 0 ? 1 : 0, 50);
	if (announced)
		__atomic_store_n(&reef__st.consumer_sleeping, 0, __ATOMIC_SEQ_CST);
	if (pfd.fd >= 0)
		while (read(pfd.fd, drainbuf, sizeof(drainbuf)) > 0) {
		}
}

void *reef__consumer_main(void *arg)
{
	(void)arg;
	reef__tls.dead = 1; /* this thread never records */
	{
		/* Copying packets into the page cache costs the consumer about as
		 * much CPU as the events cost the program. In discard mode, when
		 * the cores are busy, it yields them to the program's threads and
		 * what it cannot keep up with is dropped and counted (block mode
		 * waits for it: no change there). REEF_CONSUMER_NICE: added to the
		 * thread's nice value (discard mode: 10; 0: off).
		 * With a lower priority it also becomes a batch thread, whose
		 * wake-up never preempts a running thread, and a tracing thread
		 * that wakes it takes its own CPU out of the consumer's affinity
		 * (keep_consumer_off_this_cpu() in core.c): the scheduler tended
		 * to place the consumer on the waker's CPU, where it took the
		 * tracing thread's core for a whole slice while another idled. */
		const char *e = getenv("REEF_CONSUMER_NICE");
		int inc = e && *e ? atoi(e) : reef__st.cfg.mode == REEF_MODE_DISCARD ? 10 : 0;
		id_t tid = (id_t)syscall(SYS_gettid);
		if (inc > 0) {
			struct sched_param sp = { 0 };
			int cur;
			if (sched_getscheduler(0) == SCHED_OTHER)
				sched_setscheduler(0, SCHED_BATCH, &sp);
			errno = 0;
			cur = getpriority(PRIO_PROCESS, tid);
			if (!errno)
				setpriority(PRIO_PROCESS, tid, cur + inc > 19 ? 19 : cur + inc);
		}
		/* The CPUs of the process (its main thread), not those of the
		 * thread whose first event started the library: pinned to one
		 * CPU, that thread would pin the consumer to it too. */
		if (!sched_getaffinity(getpid(), sizeof(reef__st.consumer_cpus), &reef__st.consumer_cpus)) {
			sched_setaffinity(0, sizeof(reef__st.consumer_cpus), &reef__st.consumer_cpus);
			if (inc > 0 && CPU_COUNT(&reef__st.consumer_cpus) > 1) {
				reef__st.consumer_off = -1;
				__atomic_store_n(&reef__st.consumer_tid, (int)tid, __ATOMIC_RELEASE);
			}
		}
	}
	/* Named once its priority is set (tests/tracer waits for the name). */
	prctl(PR_SET_NAME, "reef-consumer", 0, 0, 0);
	while (!__atomic_load_n(&reef__st.stop, __ATOMIC_ACQUIRE)) {
		reef__objects_poll(); /* a dlopen() since: a new statedump */
		if (reef__st.cfg.mode != REEF_MODE_OVERWRITE)
			reef__drain(0);
		if (reef__st.cfg.mode == REEF_MODE_DISCARD && reef__net_backlogged()) {
			/* Every live client lags and nothing goes to a directory:
			 * whatever is handed over would be dropped. Leave the rings
			 * to fill instead, asleep without telling the tracing
			 * threads (they then drop events for the price of a counter
			 * and never call write() to wake us: at a quarter ring per
			 * wake-up, those calls and the inter-processor interrupts
			 * behind them took 12% of a traced thread's time in a
			 * 2-vCPU VM). Woken by the network thread when a client has
			 * room again, or by the timeout. */
			wait_for_wake(0);
			continue;
		}
		__atomic_store_n(&reef__st.consumer_sleeping, 1, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST); /* see reef__wake_consumer() */
		if (reef__st.cfg.mode != REEF_MODE_OVERWRITE && pending()) {
			__atomic_store_n(&reef__st.consumer_sleeping, 0, __ATOMIC_SEQ_CST);
			continue;
		}
		wait_for_wake(1);
	}
	return NULL;
}

void reef__ring_path(char *out, size_t n, uint64_t instance_id)
{
	snprintf(out, n, "%s/" REEF_RING_DIR "/ring_%llu", reef__st.dir,
		 (unsigned long long)instance_id);
}

void reef__free_ring(struct reef_buf *b)
{
	if (b->map) {
		/* Everything it held is in the stream file: the ring goes. */
		char path[4400];
		reef__ring_path(path, sizeof(path), b->instance_id);
		unlink(path);
		munmap(b->map, b->map_len);
	} else {
		free(b->base);
	}
	b->map = NULL;
	b->base = NULL;
}

/* Waits up to about a second for `m`: a fatal signal must not wait for
 * ever on a lock its own thread may hold. */
static int lock_briefly(pthread_mutex_t *m)
{
	int i;
	for (i = 0; i < 1000; i++) {
		struct timespec ts = { 0, 1000000 };
		if (!pthread_mutex_trylock(m))
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* The packet in `pkt` (its header and context say how long) to b's stream
 * file; a copy of the header (`hdr`, REEF_PACKET_HEADER_SIZE bytes) may
 * replace the packet's own. */
static int emergency_packet(struct reef_buf *b, const char *hdr, const char *pkt, size_t n)
{
	struct iovec iov[2];
	iov[0].iov_base = (void *)(uintptr_t)hdr;
	iov[0].iov_len = REEF_PACKET_HEADER_SIZE;
	iov[1].iov_base = (void *)(uintptr_t)(pkt + REEF_PACKET_HEADER_SIZE);
	iov[1].iov_len = n - REEF_PACKET_HEADER_SIZE;
	if (stream_fd(b) < 0)
		return -1;
	return writev_all(b->fd, iov, iov[1].iov_len ? 2 : 1);
}

int reef__emergency_write(void)
{
	struct reef_buf *b;
	int failed = 0, have_drain, have_registry;
	/* The consumer stops at its next look at `stop`; the one batch it may
	 * be writing ends in a moment (it holds drain_lock meanwhile). */
	have_drain = lock_briefly(&reef__st.drain_lock);
	have_registry = lock_briefly(&reef__st.registry_lock);
	/* Every other tracing thread waits now: what it completed is final. */
	reef__fatal_quiesce();
	for (b = __atomic_load_n(&reef__st.buffers, __ATOMIC_ACQUIRE); b; b = b->next) {
		uint64_t head = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE), tail, seq;
		char hdr[REEF_PACKET_HEADER_SIZE];
		const char *pkt, *pos;
		struct reef__tls *t;
		if (!b->base)
			continue;
		tail = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
		if (!have_drain && reef__st.cfg.mode != REEF_MODE_OVERWRITE)
			tail = head; /* the consumer may be writing them: leave them */
		if (head - tail > b->npackets)
			tail = head - b->npackets;
		for (; tail < head; tail++) {
			size_t n;
			pkt = b->base + (size_t)(tail % b->npackets) * b->packet_size;
			n = (size_t)(reef__load64(pkt + REEF_OFF_CONTENT_SIZE) / 8u);
			if (n < REEF_PACKET_HEADER_SIZE || n > b->packet_size ||
			    reef__load64(pkt + REEF_OFF_SEQ_NUM) != __atomic_load_n(&b->slot_seq[tail % b->npackets], __ATOMIC_ACQUIRE)) {
				failed++;
				continue;
			}
			memcpy(hdr, pkt, sizeof(hdr));
			if (emergency_packet(b, hdr, pkt, n))
				failed++;
		}
		__atomic_store_n(&b->tail, head, __ATOMIC_RELEASE);
		/* The open packet: its committed events. */
		t = b->retired ? NULL : b->tls;
		if (!t || !b->cur)
			continue;
		pkt = b->cur;
		pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
		if (pos <= pkt + REEF_PACKET_HEADER_SIZE || pos > pkt + b->packet_size - REEF_COMMIT_WORD)
			continue;
		memcpy(hdr, pkt, sizeof(hdr));
		seq = reef__load64(hdr + REEF_OFF_SEQ_NUM);
		if (seq != b->seq)
			continue;
		reef__seal(hdr, (size_t)(pos - pkt), __atomic_load_n(&b->discarded, __ATOMIC_RELAXED));
		if (emergency_packet(b, hdr, pkt, (size_t)(pos - pkt)))
			failed++;
	}
	if (have_registry)
		pthread_mutex_unlock(&reef__st.registry_lock);
	if (have_drain)
		pthread_mutex_unlock(&reef__st.drain_lock);
	return failed;
}
