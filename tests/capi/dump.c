/* tests/capi/dump.c — every message of the traces given, through
 * libreef_reader's C API, as one JSON line each:
 *   ["E", name, ns, {payload}, {context}, {common context}, {packet context}]
 *   ["D", "events" | "packets", ns, count]
 * then, when reading stopped at damage, ["X", status name, message].
 * Compared by check.py with babeltrace2's Python bindings. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reef_reader.h>

static void json_string(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

enum frame { OBJ, ARR, INNER };

/* The fields of one scope as a JSON object; variants and optionals stand
 * for what they hold (null: an empty optional). */
static void scope(reef_reader *r, reef_scope s, reef_field **buf, size_t *cap)
{
	size_t n = 0;
	reef_status st = reef_event_fields(r, s, *buf, *cap, &n);
	if (st == REEF_ERR_RANGE) {
		*cap = n * 2;
		*buf = realloc(*buf, *cap * sizeof **buf);
		if (!*buf)
			abort();
		st = reef_event_fields(r, s, *buf, *cap, &n);
	}
	if (st != REEF_OK) {
		fprintf(stderr, "reef_event_fields: %s: %s\n", reef_status_name(st), reef_error_message());
		exit(2);
	}
	enum frame stack[256];
	size_t emitted[256];
	int top = 0;
	stack[0] = OBJ;
	emitted[0] = 0;
	putchar('{');
	for (size_t k = 0; k < n; k++) {
		const reef_field *f = &(*buf)[k];
		if (f->kind == REEF_FIELD_END) {
			enum frame fr = stack[top--];
			if (fr == OBJ)
				putchar('}');
			else if (fr == ARR)
				putchar(']');
			continue;
		}
		if (stack[top] != INNER) {
			if (emitted[top]++)
				putchar(',');
			if (stack[top] == OBJ) {
				json_string(f->name, f->name_len);
				putchar(':');
			}
		}
		if (top >= 250) {
			fprintf(stderr, "fields nested too deep\n");
			exit(2);
		}
		switch (f->kind) {
		case REEF_FIELD_UINT: printf("%" PRIu64, f->u); break;
		case REEF_FIELD_INT: printf("%" PRId64, f->i); break;
		case REEF_FIELD_DOUBLE: printf("%.17g", f->d); break;
		case REEF_FIELD_STRING: json_string(f->bytes, f->len); break;
		case REEF_FIELD_BLOB:
			putchar('[');
			for (size_t i = 0; i < f->len; i++)
				printf("%s%u", i ? "," : "", (unsigned char)f->bytes[i]);
			putchar(']');
			break;
		case REEF_FIELD_BIGINT: printf("null"); break;
		case REEF_FIELD_STRUCT: putchar('{'); stack[++top] = OBJ; emitted[top] = 0; break;
		case REEF_FIELD_ARRAY:
		case REEF_FIELD_SEQUENCE: putchar('['); stack[++top] = ARR; emitted[top] = 0; break;
		case REEF_FIELD_VARIANT: stack[++top] = INNER; break;
		case REEF_FIELD_OPTIONAL:
			if (f->count == 0)
				printf("null");
			stack[++top] = INNER;
			break;
		default: fprintf(stderr, "unknown field kind %u\n", f->kind); exit(2);
		}
	}
	putchar('}');
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: dump TRACE...\n");
		return 2;
	}
	reef_reader *r = NULL;
	reef_reader_options o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	if (getenv("DUMP_WORKERS"))
		o.workers = (unsigned)atoi(getenv("DUMP_WORKERS"));
	reef_status st = reef_reader_open((const char *const *)argv + 1, (size_t)argc - 1, &o, &r);
	if (st != REEF_OK) {
		printf("[\"X\",\"%s\",", reef_status_name(st));
		json_string(reef_error_message(), strlen(reef_error_message()));
		printf("]\n");
		return 1;
	}
	size_t cap = 64;
	reef_field *buf = malloc(cap * sizeof *buf);
	reef_message_kind kind;
	while ((st = reef_reader_next(r, &kind)) == REEF_OK) {
		int64_t ns = 0;
		int has_ns = reef_message_time(r, &ns) == REEF_OK;
		if (kind == REEF_MESSAGE_EVENT) {
			const char *name;
			if (reef_event_name(r, &name) != REEF_OK)
				return 2;
			printf("[\"E\",");
			json_string(name, strlen(name));
			if (has_ns)
				printf(",%" PRId64 ",", ns);
			else
				printf(",null,");
			scope(r, REEF_SCOPE_PAYLOAD, &buf, &cap);
			putchar(',');
			scope(r, REEF_SCOPE_CONTEXT, &buf, &cap);
			putchar(',');
			scope(r, REEF_SCOPE_COMMON_CONTEXT, &buf, &cap);
			putchar(',');
			scope(r, REEF_SCOPE_PACKET_CONTEXT, &buf, &cap);
			printf("]\n");
		} else {
			uint64_t count = 0;
			reef_status c = reef_message_discarded(r, &count);
			printf("[\"D\",\"%s\",", kind == REEF_MESSAGE_DISCARDED_EVENTS ? "events" : "packets");
			if (has_ns)
				printf("%" PRId64 ",", ns);
			else
				printf("null,");
			if (c == REEF_OK)
				printf("%" PRIu64 "]\n", count);
			else
				printf("null]\n");
		}
	}
	int rc = 0;
	if (st != REEF_END) {
		printf("[\"X\",\"%s\",", reef_status_name(st));
		json_string(reef_error_message(), strlen(reef_error_message()));
		printf("]\n");
		rc = 1;
	}
	free(buf);
	if (reef_reader_close(r) != REEF_OK)
		rc = 2;
	return rc;
}
