/*
 * count.c — a reef sink plugin: counts the events of each name and the
 * discarded-events notices, and writes the counts when the reading ends
 * (`name count` lines in name order, then `total N`).
 *
 *   cc -shared -fPIC -O2 -Wall -Wextra -I crates/reef-capi/include \
 *      examples/plugins/count.c -o count.so
 *   reef sink count=counts.txt --plugin ./count.so TRACE
 *
 * The argument is the file to write (default: standard output). An event
 * class's name is the same pointer for all its events (reef_event_name),
 * so the counts are kept by pointer, without comparing strings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "reef_plugin.h"

struct entry {
	const char *name;
	uint64_t count;
};

struct state {
	char out[4096];
	struct entry *e;
	size_t n, cap;
	uint64_t total, notices;
	const char *last_name;
	size_t last;
	char error[4200];
};

static const char *describe_error(void *p)
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
	if (args && strlen(args) >= sizeof s->out) {
		snprintf(s->error, sizeof s->error, "the output path is too long");
		return REEF_ERR_ARG;
	}
	if (args)
		strcpy(s->out, args);
	return REEF_OK;
}

static void fini(void *p)
{
	struct state *s = p;
	if (s)
		free(s->e);
	free(s);
}

static reef_status consume(void *p, const reef_reader *m, reef_message_kind kind)
{
	struct state *s = p;
	const char *name;
	if (kind != REEF_MESSAGE_EVENT) {
		s->notices++;
		return REEF_OK;
	}
	reef_status st = reef_event_name(m, &name);
	if (st != REEF_OK) {
		snprintf(s->error, sizeof s->error, "%s", reef_error_message());
		return st;
	}
	s->total++;
	if (name == s->last_name) {
		s->e[s->last].count++;
		return REEF_OK;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (s->e[i].name == name) {
			s->e[i].count++;
			s->last_name = name;
			s->last = i;
			return REEF_OK;
		}
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct entry *e = realloc(s->e, cap * sizeof *e);
		if (!e)
			return REEF_ERR_INTERNAL;
		s->e = e;
		s->cap = cap;
	}
	s->e[s->n] = (struct entry){ name, 1 };
	s->last_name = name;
	s->last = s->n++;
	return REEF_OK;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static reef_status finish(void *p, reef_status status, const char **lami)
{
	struct state *s = p;
	(void)status;
	(void)lami;
	FILE *f = s->out[0] ? fopen(s->out, "w") : stdout;
	if (!f) {
		snprintf(s->error, sizeof s->error, "cannot write %s: %s", s->out, strerror(errno));
		return REEF_ERR_ARG;
	}
	/* Names of classes of different streams may repeat: merge them. */
	qsort(s->e, s->n, sizeof *s->e, by_name);
	for (size_t i = 0; i < s->n;) {
		uint64_t c = 0;
		size_t j = i;
		for (; j < s->n && strcmp(s->e[j].name, s->e[i].name) == 0; j++)
			c += s->e[j].count;
		fprintf(f, "%s %llu\n", s->e[i].name, (unsigned long long)c);
		i = j;
	}
	fprintf(f, "total %llu\nnotices %llu\n", (unsigned long long)s->total,
		(unsigned long long)s->notices);
	int bad = ferror(f);
	if (f != stdout)
		bad |= fclose(f);
	else
		bad |= fflush(f);
	if (bad) {
		snprintf(s->error, sizeof s->error, "writing %s failed", s->out[0] ? s->out : "stdout");
		return REEF_ERR_ARG;
	}
	return REEF_OK;
}

static const reef_plugin plugin = {
	.abi = REEF_PLUGIN_ABI,
	.size = sizeof(reef_plugin),
	.name = "count",
	.version = "0.1.0",
	.description = "counts events per name and discarded-events notices",
	.kinds = REEF_PLUGIN_SINK,
	.init = init,
	.fini = fini,
	.error = describe_error,
	.consume = consume,
	.finish = finish,
};

const reef_plugin *reef_plugin_describe(void)
{
	return &plugin;
}
