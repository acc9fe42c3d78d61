/*
 * latency.c — a reef analysis plugin: the durations between a begin event
 * and the next end event of the same key, as statistics and a histogram of
 * powers of two (LAMI tables, shown by `reef analyse`, `--lami` and the
 * viewer's Analyses tab).
 *
 *   cc -shared -fPIC -O2 -Wall -Wextra -I crates/reef-capi/include \
 *      examples/plugins/latency.c -o latency.so
 *   reef analyse 'latency=begin=lock:ACQUIRE,end=lock:RELEASE,key=mutex' \
 *      --plugin ./latency.so examples/build/trace
 *
 * Arguments (comma-separated): begin=NAME and end=NAME (event names,
 * required), key=PATH (a field path as reef_event_uint takes it; default:
 * the stream, which is the thread in a libreef trace and the CPU in a
 * kernel trace). Pairing is last-in, first-out per key, as `reef
 * activities` pairs: an end closes the most recent open begin of its key;
 * ends with none open, and begins still open at the end, are counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reef_plugin.h"

#define DEPTH 32
#define BUCKETS 64

struct slot {
	uint64_t key;
	int used;
	int depth;
	int64_t open[DEPTH];
};

struct state {
	char begin[256], end[256], key[256];
	int keyed;
	struct slot *slots;
	size_t nslots, used;
	uint64_t count, unmatched, too_deep;
	int64_t min, max, first, last;
	double sum;
	uint64_t hist[BUCKETS];
	char error[512];
	char *results;
};

static const char *metadata_json =
	"{\"mi-version\":{\"major\":1,\"minor\":0},"
	"\"version\":{\"major\":0,\"minor\":1,\"patch\":0,\"extra\":\"\"},"
	"\"title\":\"Latency between a begin and an end event\","
	"\"authors\":[\"reef examples\"],\"description\":\"latency.c\","
	"\"tags\":[\"latency\"],"
	"\"table-classes\":{"
	"\"stats\":{\"title\":\"Latency statistics\",\"column-descriptions\":["
	"{\"title\":\"Begin\",\"type\":\"string\"},"
	"{\"title\":\"End\",\"type\":\"string\"},"
	"{\"title\":\"Count\",\"type\":\"int\"},"
	"{\"title\":\"Minimum\",\"type\":\"duration\",\"unit\":\"ns\"},"
	"{\"title\":\"Average\",\"type\":\"duration\",\"unit\":\"ns\"},"
	"{\"title\":\"Maximum\",\"type\":\"duration\",\"unit\":\"ns\"},"
	"{\"title\":\"Unmatched ends\",\"type\":\"int\"},"
	"{\"title\":\"Unfinished\",\"type\":\"int\"}]},"
	"\"histogram\":{\"title\":\"Latency histogram\",\"column-descriptions\":["
	"{\"title\":\"From\",\"type\":\"duration\",\"unit\":\"ns\"},"
	"{\"title\":\"To (excluded)\",\"type\":\"duration\",\"unit\":\"ns\"},"
	"{\"title\":\"Count\",\"type\":\"int\"}]}}}";

static const char *describe_error(void *p)
{
	struct state *s = p;
	return s ? s->error : "";
}

/* Copies the value of `name=` in `args` into `out`; 1 if found. */
static int arg(const char *args, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);
	const char *p = args;
	while (p && *p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len > n && strncmp(p, name, n) == 0 && p[n] == '=') {
			size_t v = len - n - 1;
			if (v >= cap)
				return -1;
			memcpy(out, p + n + 1, v);
			out[v] = '\0';
			return 1;
		}
		p = comma ? comma + 1 : NULL;
	}
	return 0;
}

static reef_status init(const char *args, void **out)
{
	struct state *s = calloc(1, sizeof *s);
	if (!s)
		return REEF_ERR_INTERNAL;
	*out = s;
	s->min = INT64_MAX;
	s->max = INT64_MIN;
	s->first = INT64_MAX;
	s->last = INT64_MIN;
	if (!args || arg(args, "begin", s->begin, sizeof s->begin) != 1 ||
	    arg(args, "end", s->end, sizeof s->end) != 1) {
		snprintf(s->error, sizeof s->error,
			 "expected arguments begin=NAME,end=NAME[,key=PATH], got %s",
			 args ? args : "none");
		return REEF_ERR_ARG;
	}
	s->keyed = arg(args, "key", s->key, sizeof s->key) == 1;
	s->nslots = 1024;
	s->slots = calloc(s->nslots, sizeof *s->slots);
	return s->slots ? REEF_OK : REEF_ERR_INTERNAL;
}

static void fini(void *p)
{
	struct state *s = p;
	if (!s)
		return;
	free(s->slots);
	free(s->results);
	free(s);
}

static struct slot *lookup(struct state *s, uint64_t key, int create)
{
	if (create && (s->used + 1) * 2 > s->nslots) {
		size_t n = s->nslots * 2;
		struct slot *t = calloc(n, sizeof *t);
		if (!t)
			return NULL;
		for (size_t i = 0; i < s->nslots; i++) {
			if (!s->slots[i].used)
				continue;
			size_t j = (s->slots[i].key * 0x9E3779B97F4A7C15ull) & (n - 1);
			while (t[j].used)
				j = (j + 1) & (n - 1);
			t[j] = s->slots[i];
		}
		free(s->slots);
		s->slots = t;
		s->nslots = n;
	}
	size_t j = (key * 0x9E3779B97F4A7C15ull) & (s->nslots - 1);
	while (s->slots[j].used) {
		if (s->slots[j].key == key)
			return &s->slots[j];
		j = (j + 1) & (s->nslots - 1);
	}
	if (!create)
		return NULL;
	s->slots[j].used = 1;
	s->slots[j].key = key;
	s->used++;
	return &s->slots[j];
}

static reef_status consume(void *p, const reef_reader *m, reef_message_kind kind)
{
	struct state *s = p;
	const char *name;
	int64_t t;
	uint64_t key;
	reef_status st;
	if (kind != REEF_MESSAGE_EVENT)
		return REEF_OK;
	if (reef_event_name(m, &name) != REEF_OK || reef_message_time(m, &t) != REEF_OK)
		goto failed;
	int is_end = strcmp(name, s->end) == 0, is_begin = strcmp(name, s->begin) == 0;
	if (!is_end && !is_begin)
		return REEF_OK;
	st = s->keyed ? reef_event_uint(m, s->key, &key) : reef_message_stream(m, &key, NULL);
	if (st != REEF_OK)
		goto failed;
	if (is_end) {
		struct slot *k = lookup(s, key, 0);
		if (!k || k->depth == 0) {
			s->unmatched++;
		} else {
			int64_t d = t - k->open[--k->depth];
			int b = 0;
			while (b < BUCKETS - 1 && (d >> b) > 0)
				b++;
			s->hist[b]++;
			s->count++;
			s->sum += (double)d;
			if (d < s->min)
				s->min = d;
			if (d > s->max)
				s->max = d;
			if (t > s->last)
				s->last = t;
		}
	}
	if (is_begin) {
		struct slot *k = lookup(s, key, 1);
		if (!k)
			return REEF_ERR_INTERNAL;
		if (k->depth == DEPTH) {
			s->too_deep++;
		} else {
			k->open[k->depth++] = t;
		}
		if (t < s->first)
			s->first = t;
	}
	return REEF_OK;
failed:
	snprintf(s->error, sizeof s->error, "%s", reef_error_message());
	return REEF_ERR_ARG;
}

/* Appends to the results text. */
static int put(struct state *s, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static int put(struct state *s, size_t *len, size_t *cap, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(s->results + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		char *r = realloc(s->results, *cap * 2 + (size_t)n);
		if (!r)
			return -1;
		s->results = r;
		*cap = *cap * 2 + (size_t)n;
	}
}

/* A JSON string of `v` (names hold no quotes or backslashes here: they
 * are escaped anyway). */
static int put_str(struct state *s, size_t *len, size_t *cap, const char *v)
{
	if (put(s, len, cap, "\""))
		return -1;
	for (; *v; v++) {
		if (*v == '"' || *v == '\\') {
			if (put(s, len, cap, "\\%c", *v))
				return -1;
		} else if ((unsigned char)*v < 0x20) {
			if (put(s, len, cap, "\\u%04x", *v))
				return -1;
		} else if (put(s, len, cap, "%c", *v)) {
			return -1;
		}
	}
	return put(s, len, cap, "\"");
}

static reef_status finish(void *p, reef_status status, const char **lami)
{
	struct state *s = p;
	size_t len = 0, cap = 4096, unfinished = 0;
	(void)status;
	for (size_t i = 0; i < s->nslots; i++)
		if (s->slots[i].used)
			unfinished += (size_t)s->slots[i].depth;
	s->results = malloc(cap);
	if (!s->results)
		return REEF_ERR_INTERNAL;
	int64_t b = s->first == INT64_MAX ? 0 : s->first;
	int64_t e = s->last == INT64_MIN ? b : s->last;
	int bad = put(s, &len, &cap,
		      "{\"results\":[{\"time-range\":{\"class\":\"time-range\",\"begin\":%lld,"
		      "\"end\":%lld},\"class\":\"stats\",\"data\":[[",
		      (long long)b, (long long)e);
	bad |= put_str(s, &len, &cap, s->begin);
	bad |= put(s, &len, &cap, ",");
	bad |= put_str(s, &len, &cap, s->end);
	bad |= put(s, &len, &cap, ",{\"class\":\"int\",\"value\":%llu},",
		   (unsigned long long)s->count);
	if (s->count) {
		bad |= put(s, &len, &cap,
			   "{\"class\":\"duration\",\"value\":%lld},"
			   "{\"class\":\"duration\",\"value\":%.3f},"
			   "{\"class\":\"duration\",\"value\":%lld},",
			   (long long)s->min, s->sum / (double)s->count, (long long)s->max);
	} else {
		bad |= put(s, &len, &cap, "{\"class\":\"empty\"},{\"class\":\"empty\"},{\"class\":\"empty\"},");
	}
	bad |= put(s, &len, &cap,
		   "{\"class\":\"int\",\"value\":%llu},{\"class\":\"int\",\"value\":%zu}]]},"
		   "{\"time-range\":{\"class\":\"time-range\",\"begin\":%lld,\"end\":%lld},"
		   "\"class\":\"histogram\",\"data\":[",
		   (unsigned long long)s->unmatched, unfinished, (long long)b, (long long)e);
	int rows = 0;
	for (int i = 0; i < BUCKETS; i++) {
		if (!s->hist[i])
			continue;
		unsigned long long lo = i ? 1ull << (i - 1) : 0, hi = 1ull << i;
		bad |= put(s, &len, &cap,
			   "%s[{\"class\":\"duration\",\"value\":%llu},"
			   "{\"class\":\"duration\",\"value\":%llu},{\"class\":\"int\",\"value\":%llu}]",
			   rows++ ? "," : "", lo, hi, (unsigned long long)s->hist[i]);
	}
	bad |= put(s, &len, &cap, "]}]}");
	if (bad)
		return REEF_ERR_INTERNAL;
	*lami = s->results;
	return REEF_OK;
}

static const char *metadata(void)
{
	return metadata_json;
}

static const reef_plugin plugin = {
	.abi = REEF_PLUGIN_ABI,
	.size = sizeof(reef_plugin),
	.name = "latency",
	.version = "0.1.0",
	.description = "durations between a begin and an end event, per key: statistics and a histogram",
	.kinds = REEF_PLUGIN_ANALYSIS,
	.init = init,
	.fini = fini,
	.error = describe_error,
	.consume = consume,
	.finish = finish,
	.metadata = metadata,
};

const reef_plugin *reef_plugin_describe(void)
{
	return &plugin;
}
