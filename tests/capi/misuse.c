/* tests/capi/misuse.c — libreef_reader's C API used wrongly: NULL and
 * garbage handles, a closed reader, calls with no current event, wrong
 * getters, bad paths and scopes, buffers too small, two threads on one
 * reader. Each call must return its status and change nothing: the reader
 * then reads on, and its events must be the same as a clean reading's
 * (their count, and the sum of a field). Built with AddressSanitizer and
 * UndefinedBehaviorSanitizer by run.sh.
 *
 *   misuse TRACE FIELD     FIELD: an integer field every event has */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reef_reader.h>

static int failures;

#define EXPECT(call, want)                                                          \
	do {                                                                        \
		reef_status got_ = (call);                                          \
		if (got_ != (want)) {                                               \
			printf("FAIL %s:%d: %s gave %s, %s expected (%s)\n", __FILE__,    \
			       __LINE__, #call, reef_status_name(got_), #want,         \
			       reef_error_message());                                 \
			failures++;                                                 \
		}                                                                   \
	} while (0)

/* Events and the sum of `field` over them, reading `r` to its end. */
static void read_all(reef_reader *r, const char *field, uint64_t *events, uint64_t *sum)
{
	reef_message_kind k;
	reef_status st;
	while ((st = reef_reader_next(r, &k)) == REEF_OK) {
		if (k != REEF_MESSAGE_EVENT)
			continue;
		uint64_t v = 0;
		if (reef_event_uint(r, field, &v) == REEF_OK)
			*sum += v;
		(*events)++;
	}
	EXPECT(st, REEF_END);
}

struct race {
	reef_reader *r;
	int busy, ok;
};

static void *other_thread(void *arg)
{
	struct race *c = arg;
	for (int i = 0; i < 20000; i++) {
		uint64_t v;
		reef_status st = reef_event_uint(c->r, "no_such_field", &v);
		if (st == REEF_ERR_BUSY)
			c->busy++;
		else if (st == REEF_ERR_ABSENT || st == REEF_ERR_STATE)
			c->ok++;
		else {
			printf("FAIL: another thread's call gave %s\n", reef_status_name(st));
			failures++;
			break;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: misuse TRACE FIELD\n");
		return 2;
	}
	const char *paths[] = {argv[1]};
	const char *field = argv[2];
	uint64_t v = 0;
	int64_t ns = 0;
	const char *s = NULL;
	size_t n = 0;
	reef_message_kind kind;
	reef_reader *r = NULL;

	/* The reference: a clean reading. */
	uint64_t want_events = 0, want_sum = 0;
	EXPECT(reef_reader_open(paths, 1, NULL, &r), REEF_OK);
	read_all(r, field, &want_events, &want_sum);
	EXPECT(reef_reader_close(r), REEF_OK);
	if (want_events == 0) {
		printf("FAIL: no event in %s\n", argv[1]);
		return 1;
	}

	/* Opening wrongly. */
	EXPECT(reef_reader_open(NULL, 1, NULL, &r), REEF_ERR_NULL);
	EXPECT(reef_reader_open(paths, 0, NULL, &r), REEF_ERR_ARG);
	EXPECT(reef_reader_open(paths, 1, NULL, NULL), REEF_ERR_NULL);
	const char *nowhere[] = {"/nonexistent/trace"};
	r = (reef_reader *)0x1;
	EXPECT(reef_reader_open(nowhere, 1, NULL, &r), REEF_ERR_OPEN);
	if (r != NULL) {
		printf("FAIL: a failed open left the reader non-NULL\n");
		failures++;
	}
	if (!strstr(reef_error_message(), "/nonexistent/trace")) {
		printf("FAIL: the error does not name the path: %s\n", reef_error_message());
		failures++;
	}
	const char *null_path[] = {NULL};
	EXPECT(reef_reader_open(null_path, 1, NULL, &r), REEF_ERR_NULL);
	reef_reader_options o;
	memset(&o, 0, sizeof o);
	EXPECT(reef_reader_open(paths, 1, &o, &r), REEF_ERR_ARG); /* size unset */
	o.size = sizeof o;
	o.begin = "not a time";
	EXPECT(reef_reader_open(paths, 1, &o, &r), REEF_ERR_ARG);
	o.begin = NULL;
	o.filter = "$evt.$name ==";
	EXPECT(reef_reader_open(paths, 1, &o, &r), REEF_ERR_ARG);

	/* Handles that are not readers. */
	char garbage[256];
	memset(garbage, 0x5a, sizeof garbage);
	reef_reader *bad = (reef_reader *)garbage;
	EXPECT(reef_reader_next(bad, &kind), REEF_ERR_HANDLE);
	EXPECT(reef_event_uint(bad, field, &v), REEF_ERR_HANDLE);
	EXPECT(reef_reader_close(bad), REEF_ERR_HANDLE);
	EXPECT(reef_reader_next((reef_reader *)(uintptr_t)0xdeadbeef, &kind), REEF_ERR_HANDLE);
	EXPECT(reef_reader_next(NULL, &kind), REEF_ERR_NULL);
	EXPECT(reef_message_time(NULL, &ns), REEF_ERR_NULL);

	/* A closed reader. */
	EXPECT(reef_reader_open(paths, 1, NULL, &r), REEF_OK);
	EXPECT(reef_reader_close(r), REEF_OK);
	EXPECT(reef_reader_next(r, &kind), REEF_ERR_HANDLE);
	EXPECT(reef_event_uint(r, field, &v), REEF_ERR_HANDLE);
	EXPECT(reef_reader_close(r), REEF_ERR_HANDLE);

	/* The reader under test: misused before, between and after events. */
	EXPECT(reef_reader_open(paths, 1, NULL, &r), REEF_OK);
	EXPECT(reef_event_uint(r, field, &v), REEF_ERR_STATE);
	EXPECT(reef_event_name(r, &s), REEF_ERR_STATE);
	EXPECT(reef_message_time(r, &ns), REEF_ERR_STATE);
	uint64_t events = 0, sum = 0;
	reef_field fields[4];
	int checked = 0;
	reef_status st;
	while ((st = reef_reader_next(r, &kind)) == REEF_OK) {
		if (kind != REEF_MESSAGE_EVENT) {
			EXPECT(reef_event_uint(r, field, &v), REEF_ERR_STATE);
			continue;
		}
		if (!checked) {
			checked = 1;
			EXPECT(reef_event_uint(r, NULL, &v), REEF_ERR_NULL);
			EXPECT(reef_event_uint(r, field, NULL), REEF_ERR_NULL);
			EXPECT(reef_event_uint(r, "no_such_field", &v), REEF_ERR_ABSENT);
			EXPECT(reef_event_uint(r, "payload..x", &v), REEF_ERR_ARG);
			EXPECT(reef_event_uint(r, "x[", &v), REEF_ERR_ARG);
			EXPECT(reef_event_uint(r, "", &v), REEF_ERR_ARG);
			/* Paths are remembered per event class by their pointer:
			 * the same buffer holding another path is another path. */
			char buf[64];
			uint64_t again;
			snprintf(buf, sizeof buf, "%s", field);
			EXPECT(reef_event_uint(r, buf, &v), REEF_OK);
			snprintf(buf, sizeof buf, "no_such_field");
			EXPECT(reef_event_uint(r, buf, &again), REEF_ERR_ABSENT);
			snprintf(buf, sizeof buf, "%s", field);
			EXPECT(reef_event_uint(r, buf, &again), REEF_OK);
			if (again != v) {
				fprintf(stderr, "%s read again through another buffer: %llu, then %llu\n",
					field, (unsigned long long)v, (unsigned long long)again);
				failures++;
			}
			snprintf(buf, sizeof buf, "%sx", field);
			EXPECT(reef_event_uint(r, buf, &again), REEF_ERR_ABSENT);
			EXPECT(reef_event_string(r, field, &s, &n), REEF_ERR_TYPE);
			EXPECT(reef_event_string(r, field, NULL, &n), REEF_ERR_NULL);
			EXPECT(reef_event_fields(r, (reef_scope)0, fields, 4, &n), REEF_ERR_ARG);
			EXPECT(reef_event_fields(r, (reef_scope)99, fields, 4, &n), REEF_ERR_ARG);
			EXPECT(reef_event_fields(r, REEF_SCOPE_PAYLOAD, NULL, 4, &n), REEF_ERR_NULL);
			EXPECT(reef_event_fields(r, REEF_SCOPE_PAYLOAD, fields, 4, NULL), REEF_ERR_NULL);
			/* Room for none: the number needed. */
			EXPECT(reef_event_fields(r, REEF_SCOPE_PAYLOAD, NULL, 0, &n), n ? REEF_ERR_RANGE : REEF_OK);
			EXPECT(reef_message_discarded(r, &v), REEF_ERR_STATE);
			EXPECT(reef_message_stream(r, NULL, NULL), REEF_ERR_NULL);
			/* Another thread while this one reads: refused or served,
			 * never both at once. */
			struct race c = {r, 0, 0};
			pthread_t t;
			pthread_create(&t, NULL, other_thread, &c);
			for (int i = 0; i < 20000; i++) {
				uint64_t x;
				reef_status s2 = reef_event_uint(r, field, &x);
				if (s2 != REEF_OK && s2 != REEF_ERR_BUSY) {
					printf("FAIL: a call racing another thread gave %s\n", reef_status_name(s2));
					failures++;
					break;
				}
			}
			pthread_join(t, NULL);
			printf("race: the other thread was refused %d times, served %d times\n", c.busy, c.ok);
		}
		uint64_t x = 0;
		if (reef_event_uint(r, field, &x) == REEF_OK)
			sum += x;
		events++;
		/* A view kept past the next call is documented as invalid; the
		 * reader must not be harmed by the calls around it. */
		EXPECT(reef_event_name(r, &s), REEF_OK);
	}
	EXPECT(st, REEF_END);
	EXPECT(reef_reader_next(r, &kind), REEF_END);
	EXPECT(reef_event_uint(r, field, &v), REEF_ERR_STATE);
	EXPECT(reef_reader_close(r), REEF_OK);
	if (events != want_events || sum != want_sum) {
		printf("FAIL: the misused reader read %" PRIu64 " events (sum %" PRIu64 "), a clean one %" PRIu64
		       " (sum %" PRIu64 ")\n",
		       events, sum, want_events, want_sum);
		failures++;
	}
	if (reef_status_name((reef_status)12345) != NULL) {
		printf("FAIL: a name for a status that is none\n");
		failures++;
	}
	printf("misuse: %" PRIu64 " events read after every misuse (sum of %s: %" PRIu64 "); %d failures\n",
	       events, field, sum, failures);
	return failures ? 1 : 0;
}
