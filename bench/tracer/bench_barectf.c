/*
 * barectf 3.1: one ev4 event record. One barectf context per thread (barectf
 * contexts are single-writer), each with a 64 KiB packet buffer written to
 * its own stream file when full: a minimal file back end written for this
 * benchmark. The clock callback reads the TSC, as libreef does.
 * Disabled: BENCH_DISABLED=1 calls bbench_enable_tracing(ctx, 0).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "bbench.h"
#include "harness.h"

#define PACKET_SIZE (64 * 1024)

struct platform {
	struct bbench_default_ctx ctx;
	uint8_t buf[PACKET_SIZE];
	int fd;
};

static __thread struct platform *plat;

static uint64_t clock_value(void *data)
{
	(void)data;
	return __builtin_ia32_rdtsc();
}

static int backend_full(void *data)
{
	(void)data;
	return 0;
}

static void open_packet(void *data)
{
	struct platform *p = data;
	bbench_default_open_packet(&p->ctx);
}

static void close_packet(void *data)
{
	struct platform *p = data;
	const uint8_t *buf;
	size_t left;
	bbench_default_close_packet(&p->ctx);
	buf = bbench_packet_buf(&p->ctx);
	left = bbench_packet_buf_size(&p->ctx);
	while (left) {
		ssize_t w = write(p->fd, buf, left);
		if (w <= 0)
			break;
		buf += w;
		left -= (size_t)w;
	}
}

static void thread_setup(unsigned index)
{
	char path[4096];
	struct bbench_platform_callbacks cbs;
	const char *dir = getenv("BENCH_TRACE_DIR");
	plat = calloc(1, sizeof(*plat));
	snprintf(path, sizeof(path), "%s/stream_%u", dir ? dir : ".", index);
	plat->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cbs.tsc_clock_get_value = clock_value;
	cbs.is_backend_full = backend_full;
	cbs.open_packet = open_packet;
	cbs.close_packet = close_packet;
	bbench_init(&plat->ctx, plat->buf, PACKET_SIZE, cbs, plat);
	open_packet(plat);
	if (getenv("BENCH_DISABLED"))
		bbench_enable_tracing(&plat->ctx, 0);
}

static void thread_teardown(unsigned index)
{
	(void)index;
	if (bbench_packet_is_open(&plat->ctx) && !bbench_packet_is_empty(&plat->ctx))
		close_packet(plat);
	close(plat->fd);
	free(plat);
}

static void trace_one(uint64_t i)
{
	bbench_default_trace_ev4(&plat->ctx, i, i + 1, i + 2, i + 3);
}

int main(int argc, char **argv)
{
	return bench_main(argc, argv);
}
