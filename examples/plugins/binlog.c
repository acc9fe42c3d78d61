/*
 * binlog.c — a reef source plugin: reads a small binary log format that
 * reef does not know, so that every reef command reads it as a trace.
 *
 *   cc -shared -fPIC -O2 -Wall -Wextra -I crates/reef-capi/include \
 *      examples/plugins/binlog.c -o binlog.so
 *   reef print --plugin ./binlog.so server.blog
 *
 * The format (all integers little-endian):
 *   file header  "BLOG" magic, u32 version (1), u64 the log's start in ns
 *                since the Unix epoch
 *   each record  u16 kind, u16 payload length, u32 thread id, u64 time in
 *                ns since the start, then the payload:
 *     kind 1  request_begin  u32 id, the request's path (the rest)
 *     kind 2  request_end    u32 id, u16 status
 *     kind 3  log            u8 level, the message (the rest)
 * Each thread's records are one stream (`thread-N`), in time order.
 * A record cut short or of an unknown kind ends the reading there (the
 * plugin tells reef each record's offset, which reef's error names); the
 * records before it are kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "reef_plugin.h"

#define MAX_THREADS 4096

struct state {
	char error[512];
};

static const char *describe_error(void *p)
{
	struct state *s = p;
	return s ? s->error : "";
}

static reef_status init(const char *args, void **out)
{
	(void)args;
	*out = calloc(1, sizeof(struct state));
	return *out ? REEF_OK : REEF_ERR_INTERNAL;
}

static void fini(void *p)
{
	free(p);
}

static int detect(const char *path, const uint8_t *head, size_t len)
{
	(void)path;
	return len >= 16 && memcmp(head, "BLOG", 4) == 0 && head[4] == 1;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Stops the reading: the message, and the status to return. */
static reef_status fail(struct state *s, reef_status st, const char *what)
{
	snprintf(s->error, sizeof s->error, "%s", what);
	return st;
}

struct thread {
	uint32_t tid;
	uint32_t stream;
};

static reef_status read_log(void *p, const char *path, reef_source *out)
{
	struct state *s = p;
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(s->error, sizeof s->error, "%s: %s", path, strerror(errno));
		return REEF_ERR_OPEN;
	}
	uint8_t head[16];
	if (fread(head, 1, sizeof head, f) != sizeof head) {
		fclose(f);
		return fail(s, REEF_ERR_READ, "expected a 16-byte BLOG header");
	}
	static const reef_source_field begin_f[] = {
		{ "id", REEF_TYPE_U32 }, { "path", REEF_TYPE_STRING } };
	static const reef_source_field end_f[] = {
		{ "id", REEF_TYPE_U32 }, { "status", REEF_TYPE_U16 } };
	static const reef_source_field log_f[] = {
		{ "level", REEF_TYPE_U8 }, { "message", REEF_TYPE_STRING } };
	uint32_t cls[3];
	reef_status st = REEF_OK;
	struct thread *threads = calloc(MAX_THREADS, sizeof *threads);
	size_t nthreads = 0;
	uint8_t *payload = malloc(65536);
	if (!threads || !payload) {
		st = fail(s, REEF_ERR_INTERNAL, "out of memory");
		goto done;
	}
/* A reef_source_* call failed: stop with its own message. */
#define TRY(call)                                                      \
	do {                                                           \
		reef_status st_ = (call);                              \
		if (st_ != REEF_OK) {                                  \
			st = fail(s, st_, reef_error_message());       \
			goto done;                                     \
		}                                                      \
	} while (0)
	TRY(reef_source_clock(out, 1000000000, (int64_t)le(head + 8, 8)));
	TRY(reef_source_class(out, "request_begin", begin_f, 2, &cls[0]));
	TRY(reef_source_class(out, "request_end", end_f, 2, &cls[1]));
	TRY(reef_source_class(out, "log", log_f, 2, &cls[2]));
	uint64_t offset = sizeof head;
	for (;;) {
		uint8_t r[16];
		size_t got = fread(r, 1, sizeof r, f);
		if (got == 0)
			break;
		TRY(reef_source_offset(out, offset));
		char what[160];
		if (got < sizeof r) {
			snprintf(what, sizeof what,
				 "a record header cut short (%zu of 16 bytes)", got);
			st = fail(s, REEF_ERR_READ, what);
			goto done;
		}
		uint16_t kind = (uint16_t)le(r, 2), len = (uint16_t)le(r + 2, 2);
		uint32_t tid = (uint32_t)le(r + 4, 4);
		uint64_t t = le(r + 8, 8);
		if (fread(payload, 1, len, f) != len) {
			snprintf(what, sizeof what,
				 "a %u-byte payload cut short", len);
			st = fail(s, REEF_ERR_READ, what);
			goto done;
		}
		size_t need = kind == 1 ? 4 : kind == 2 ? 6 : kind == 3 ? 1 : 0;
		if (need == 0 || len < need) {
			snprintf(what, sizeof what,
				 "record kind %u with %u payload bytes: "
				 "expected kind 1 (>= 4), 2 (>= 6) or 3 (>= 1)",
				 kind, len);
			st = fail(s, REEF_ERR_READ, what);
			goto done;
		}
		size_t k = 0;
		while (k < nthreads && threads[k].tid != tid)
			k++;
		if (k == nthreads) {
			if (nthreads == MAX_THREADS) {
				st = fail(s, REEF_ERR_READ, "more than 4096 threads");
				goto done;
			}
			char name[32];
			snprintf(name, sizeof name, "thread-%u", tid);
			threads[k].tid = tid;
			TRY(reef_source_stream(out, name, &threads[k].stream));
			nthreads++;
		}
		TRY(reef_source_begin(out, threads[k].stream, cls[kind - 1], t));
		TRY(reef_source_uint(out, le(payload, kind == 3 ? 1 : 4)));
		if (kind == 1)
			TRY(reef_source_string(out, (const char *)payload + 4, len - 4));
		else if (kind == 2)
			TRY(reef_source_uint(out, le(payload + 4, 2)));
		else
			TRY(reef_source_string(out, (const char *)payload + 1, len - 1));
		TRY(reef_source_end(out));
		offset += sizeof r + len;
	}
done:
	free(threads);
	free(payload);
	fclose(f);
	return st;
}

static const reef_plugin plugin = {
	.abi = REEF_PLUGIN_ABI,
	.size = sizeof(reef_plugin),
	.name = "binlog",
	.version = "0.1.0",
	.description = "reads BLOG binary request logs (examples/plugins/binlog.c)",
	.kinds = REEF_PLUGIN_SOURCE,
	.init = init,
	.fini = fini,
	.error = describe_error,
	.detect = detect,
	.read = read_log,
};

const reef_plugin *reef_plugin_describe(void)
{
	return &plugin;
}
