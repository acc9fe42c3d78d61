/*
 * fault.c — plugins that go wrong, one way per FAULT_* macro, for
 * tests/plugins/run.sh: each must give a clear error and a non-zero exit
 * (or, for FAULT_MISUSE, refused calls), never a crash of reef.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reef_plugin.h"

#ifdef FAULT_UNDEF
/* A function no host provides: loading must fail, naming it. */
reef_status reef_event_bogus(const reef_reader *r);
#endif

struct state {
	unsigned long n;
	const reef_reader *kept;
	char report[4096];
	char error[256];
};

static const char *err(void *p)
{
	struct state *s = p;
	return s ? s->error : "";
}

static reef_status init(const char *args, void **out)
{
	struct state *s = calloc(1, sizeof *s);
	if (!s)
		return REEF_ERR_INTERNAL;
	*out = s;
#ifdef FAULT_INIT
	(void)args;
	snprintf(s->error, sizeof s->error, "this plugin needs a license key");
	return REEF_ERR_ARG;
#else
	(void)args;
	return REEF_OK;
#endif
}

static void fini(void *s)
{
	free(s);
}

static int filter(void *p, const reef_reader *ev)
{
	struct state *s = p;
	(void)ev;
#ifdef FAULT_UNDEF
	reef_event_bogus(ev);
#endif
#ifdef FAULT_FILTER
	if (++s->n > 100) {
		snprintf(s->error, sizeof s->error, "gave up after %lu events", s->n - 1);
		return REEF_ERR_ARG;
	}
#endif
#ifdef FAULT_FILTER_VALUE
	if (++s->n > 10)
		return 7;
#endif
	(void)s;
	return 1;
}

/* Appends "what: STATUS" to the report. */
__attribute__((unused)) static void note(struct state *s, const char *what, reef_status st)
{
	size_t n = strlen(s->report);
	snprintf(s->report + n, sizeof s->report - n, "%s %s\n", what, reef_status_name(st));
}

static reef_status consume(void *p, const reef_reader *m, reef_message_kind kind)
{
	struct state *s = p;
	(void)kind;
#ifdef FAULT_MISUSE
	if (s->n++ == 0) {
		reef_message_kind k;
		uint64_t v;
		const char *name;
		note(s, "next", reef_reader_next((reef_reader *)m, &k));
		note(s, "close", reef_reader_close((reef_reader *)m));
		note(s, "bad-path", reef_event_uint(m, "payload.[", &v));
		note(s, "null-out", reef_event_name(m, NULL));
		note(s, "name", reef_event_name(m, &name));
		s->kept = m;
	}
#else
	(void)m;
	(void)s;
#endif
#ifdef FAULT_CONSUME
	if (s->n++ == 5) {
		snprintf(s->error, sizeof s->error, "the disk is full");
		return REEF_ERR_RANGE;
	}
#endif
	return REEF_OK;
}

static reef_status finish(void *p, reef_status status, const char **lami)
{
	struct state *s = p;
	(void)status;
#ifdef FAULT_MISUSE
	const char *name;
	note(s, "kept-handle", reef_event_name(s->kept, &name));
	fputs(s->report, stdout);
	(void)lami;
	return REEF_OK;
#elif defined FAULT_LAMI_CELLS
	(void)s;
	*lami = "{\"results\":[{\"class\":\"t\",\"data\":[[1,2]]}]}";
#elif defined FAULT_LAMI_JSON
	(void)s;
	*lami = "{\"results\":[{\"class\":";
#elif defined FAULT_LAMI_NULL
	(void)s;
	(void)lami;
#else
	(void)s;
	*lami = "{\"results\":[{\"class\":\"t\",\"data\":[[1,2,3]]}]}";
#endif
	return REEF_OK;
}

static const char *metadata(void)
{
	return "{\"mi-version\":{\"major\":1,\"minor\":0},\"title\":\"fault\",\"table-classes\":"
	       "{\"t\":{\"title\":\"T\",\"column-descriptions\":[{\"title\":\"a\"},{\"title\":\"b\"},"
	       "{\"title\":\"c\"}]}}}";
}

static const reef_plugin plugin = {
#ifdef FAULT_ABI
	.abi = 99,
#else
	.abi = REEF_PLUGIN_ABI,
#endif
	.size = sizeof(reef_plugin),
#ifdef FAULT_NAME
	.name = "bad name!",
#else
	.name = "fault",
#endif
	.version = "0",
	.description = "plugins that go wrong",
#ifdef FAULT_KINDS
	.kinds = 0x40,
#elif defined FAULT_MISUSE || defined FAULT_CONSUME
	.kinds = REEF_PLUGIN_SINK,
#else
	.kinds = REEF_PLUGIN_FILTER | REEF_PLUGIN_ANALYSIS,
#endif
	.init = init,
	.fini = fini,
	.error = err,
	.filter = filter,
	.consume = consume,
	.finish = finish,
	.metadata = metadata,
};

#ifndef FAULT_NOSYM
const reef_plugin *reef_plugin_describe(void)
{
	return &plugin;
}
#else
const reef_plugin *reef_plugin_description(void)
{
	return &plugin;
}
#endif
