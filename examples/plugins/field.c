/*
 * field.c — a reef filter plugin: keeps the events whose numeric field
 * compares to a value, e.g. `--plugin-filter 'field=payload.item>=50'`.
 *
 *   cc -shared -fPIC -O2 -Wall -Wextra -I crates/reef-capi/include \
 *      examples/plugins/field.c -o field.so
 *   reef print --plugin ./field.so --plugin-filter 'field=item>=50' TRACE
 *
 * The argument is PATH OP VALUE, OP one of == != < <= > >=, VALUE an
 * integer or a decimal number; PATH as reef_event_double takes it. An
 * event without the field (or whose field is not a number) is dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reef_plugin.h"

enum op { EQ, NE, LT, LE, GT, GE };

struct state {
	char path[256];
	enum op op;
	double value;
	char error[512];
};

static const char *describe_error(void *p)
{
	struct state *s = p;
	return s ? s->error : "";
}

static reef_status init(const char *args, void **out)
{
	static const struct {
		const char *text;
		enum op op;
	} ops[] = { { "==", EQ }, { "!=", NE }, { "<=", LE }, { ">=", GE }, { "<", LT }, { ">", GT } };
	struct state *s = calloc(1, sizeof *s);
	if (!s)
		return REEF_ERR_INTERNAL;
	*out = s;
	if (!args)
		goto usage;
	const char *at = strpbrk(args, "=!<>");
	if (!at || at == args || (size_t)(at - args) >= sizeof s->path)
		goto usage;
	memcpy(s->path, args, (size_t)(at - args));
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		size_t n = strlen(ops[i].text);
		if (strncmp(at, ops[i].text, n) == 0) {
			char *end;
			s->op = ops[i].op;
			s->value = strtod(at + n, &end);
			if (end == at + n || *end)
				goto usage;
			return REEF_OK;
		}
	}
usage:
	snprintf(s->error, sizeof s->error,
		 "expected PATH OP VALUE (OP: == != < <= > >=), got %s", args ? args : "none");
	return REEF_ERR_ARG;
}

static void fini(void *s)
{
	free(s);
}

static int filter(void *p, const reef_reader *ev)
{
	struct state *s = p;
	double v;
	reef_status st = reef_event_double(ev, s->path, &v);
	if (st == REEF_ERR_ABSENT || st == REEF_ERR_TYPE)
		return 0;
	if (st != REEF_OK) {
		snprintf(s->error, sizeof s->error, "%s", reef_error_message());
		return st;
	}
	switch (s->op) {
	case EQ: return v == s->value;
	case NE: return v != s->value;
	case LT: return v < s->value;
	case LE: return v <= s->value;
	case GT: return v > s->value;
	case GE: return v >= s->value;
	}
	return 0;
}

static const reef_plugin plugin = {
	.abi = REEF_PLUGIN_ABI,
	.size = sizeof(reef_plugin),
	.name = "field",
	.version = "0.1.0",
	.description = "keeps the events whose numeric field compares to a value (PATH OP VALUE)",
	.kinds = REEF_PLUGIN_FILTER,
	.init = init,
	.fini = fini,
	.error = describe_error,
	.filter = filter,
};

const reef_plugin *reef_plugin_describe(void)
{
	return &plugin;
}
