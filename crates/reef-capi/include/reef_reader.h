/*
 * reef_reader.h — reading traces with reef from C and C++: CTF 1.8 and 2
 * trace directories, LTTng live sessions (net://...), trace-cmd .dat and
 * perf.data files, merged into one sequence of messages in time order.
 *
 * Link with -lreef_reader (pkg-config reef-reader). The library is
 * separate from libreef, the recording library: a traced program links
 * libreef alone and carries none of the reader.
 *
 * Calls and errors. Every function returns a reef_status: REEF_OK (0),
 * REEF_END (1, no more messages), or a negative error. Every argument is
 * checked: a NULL pointer, a handle this library did not make or already
 * closed, a reader in use by another thread, an index out of range or a
 * getter of the wrong type returns its error without changing anything;
 * the reader stays usable. The message of the calling thread's last error
 * (naming the file and offset of a damaged trace, as the reef command
 * does) is reef_error_message().
 *
 * Memory and threads. A reader is used by one thread at a time (another
 * thread's call meanwhile gets REEF_ERR_BUSY); several readers may run at
 * once. The current message — its name, strings, byte arrays and field
 * names given as pointers — is valid until the next reef_reader_next()
 * or reef_reader_close() on its reader; event names stay valid until the
 * reader is closed. Nothing is allocated per event.
 */
#ifndef REEF_READER_H
#define REEF_READER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API; a program built against version N runs with
 * any library of version N (the soname is libreef_reader.so.N). */
#define REEF_READER_API_VERSION 0

typedef enum reef_status {
	REEF_OK = 0,
	/* reef_reader_next(): the messages are all read. */
	REEF_END = 1,
	/* A pointer argument is NULL. */
	REEF_ERR_NULL = -1,
	/* Not a reader of this library, or one already closed. */
	REEF_ERR_HANDLE = -2,
	/* The reader is in a call from another thread. */
	REEF_ERR_BUSY = -3,
	/* An argument outside its domain: an unknown option, a bad time or
	 * filter, a field path that does not parse, an unknown scope. */
	REEF_ERR_ARG = -4,
	/* The traces could not be found or opened (their metadata). */
	REEF_ERR_OPEN = -5,
	/* Reading stopped at damaged data: every message before it was
	 * given; the message names the file and offset. */
	REEF_ERR_READ = -6,
	/* No current event: before the first message, after the end, or the
	 * current message is a notice (discarded events or packets). */
	REEF_ERR_STATE = -7,
	/* The event has no such field (or no clock, for a time). */
	REEF_ERR_ABSENT = -8,
	/* The field is not of the getter's type (a string read as an
	 * integer, a structure read as a value). */
	REEF_ERR_TYPE = -9,
	/* The value does not fit the getter's type, or a buffer is too
	 * small (the size needed is given). */
	REEF_ERR_RANGE = -10,
	/* A defect of the library (please report it); the reader is closed
	 * for further reading. */
	REEF_ERR_INTERNAL = -11
} reef_status;

/* What reef_reader_next() moved to. */
typedef enum reef_message_kind {
	REEF_MESSAGE_EVENT = 1,
	/* The tracer discarded events (reef_message_discarded: how many). */
	REEF_MESSAGE_DISCARDED_EVENTS = 2,
	/* Packets are missing from a stream (a sequence number gap). */
	REEF_MESSAGE_DISCARDED_PACKETS = 3
} reef_message_kind;

typedef struct reef_reader reef_reader;

/* Options of reef_reader_open(); zero-initialise, then set `size`. */
typedef struct reef_reader_options {
	/* sizeof(reef_reader_options), for versions to come. */
	size_t size;
	/* NULL, or the first and last times to read, in the forms of
	 * babeltrace2's --begin/--end: "YYYY-MM-DD HH:MM[:SS[.NANO]]",
	 * "HH:MM[:SS[.NANO]]" (on the first message's date) or
	 * "[-]SEC[.NANO]" (from the clock's origin). */
	const char *begin;
	const char *end;
	/* Read `begin` and `end` as UTC instead of local time. */
	int utc;
	/* NULL, or keep only the events this expression is true of (the
	 * language of `reef --filter`: docs/filter.md); notices are kept. */
	const char *filter;
	/* Decoding threads; 0: the number of CPUs, at most 8. */
	unsigned workers;
} reef_reader_options;

/* Opens `npaths` paths (trace directories, directories searched for
 * traces, .dat or perf.data files, or one net://HOST/host/H/SESSION
 * URL) with `options` (NULL: the defaults). On success *reader is a new
 * reader; on error *reader is NULL. */
reef_status reef_reader_open(const char *const *paths, size_t npaths,
			     const reef_reader_options *options,
			     reef_reader **reader);

/* Closes `reader` and frees everything it holds. */
reef_status reef_reader_close(reef_reader *reader);

/* Moves to the next message in time order; *kind (when not NULL) says
 * what it is. REEF_END at the end; REEF_ERR_READ when the data is damaged,
 * after every message before the damage (the next call gives REEF_END). */
reef_status reef_reader_next(reef_reader *reader, reef_message_kind *kind);

/* The message of the calling thread's last failed call ("" if none),
 * valid until its next failed call. */
const char *reef_error_message(void);

/* A status's name ("REEF_ERR_TYPE"); NULL for a value that is not one. */
const char *reef_status_name(reef_status status);

/* --- The current message ------------------------------------------------ */

/* Its time in ns from its clock's origin (REEF_ERR_ABSENT: its stream has
 * no clock). For a notice, the beginning of the range it covers. */
reef_status reef_message_time(const reef_reader *reader, int64_t *ns);

/* Its time in its clock's cycles. */
reef_status reef_message_cycles(const reef_reader *reader, uint64_t *cycles);

/* Its stream's index among all the streams of all the traces, and its
 * trace's index among the traces opened (in the order found). */
reef_status reef_message_stream(const reef_reader *reader, uint64_t *stream,
				uint64_t *trace);

/* A notice's count of discarded events or packets (REEF_ERR_ABSENT: the
 * tracer did not say how many; REEF_ERR_STATE: the message is an event). */
reef_status reef_message_discarded(const reef_reader *reader, uint64_t *count);

/* The event's class name (NUL-terminated; valid until reef_reader_close)
 * and the class's id in its stream class. */
reef_status reef_event_name(const reef_reader *reader, const char **name);
reef_status reef_event_class_id(const reef_reader *reader, uint64_t *id);

/* --- Fields ------------------------------------------------------------- */

/* A field path: an optional scope, then member names and element indexes:
 * "prev_tid", "payload.prev_tid", "context.vtid", "payload.seq[2]",
 * "payload.inner.x", "packet_context.cpu_id". Without a scope the first
 * scope holding the first name is taken, in this order: payload, event
 * context, common context, event header, packet context. A variant or an
 * optional stands for the field it holds. One leading underscore of a
 * name may be left out, as in babeltrace2's output. */

/* An integer field (an enumeration's value too). REEF_ERR_RANGE: a
 * negative value read as unsigned, or one above INT64_MAX as signed. */
reef_status reef_event_uint(const reef_reader *reader, const char *path,
			    uint64_t *value);
reef_status reef_event_int(const reef_reader *reader, const char *path,
			   int64_t *value);
/* A floating-point field, or an integer one (converted). */
reef_status reef_event_double(const reef_reader *reader, const char *path,
			      double *value);
/* A string field (or text array or sequence): its bytes, not NUL-
 * terminated, valid until the next message. */
reef_status reef_event_string(const reef_reader *reader, const char *path,
			      const char **bytes, size_t *len);

typedef enum reef_scope {
	REEF_SCOPE_PACKET_CONTEXT = 1,
	REEF_SCOPE_EVENT_HEADER = 2,
	REEF_SCOPE_COMMON_CONTEXT = 3,
	REEF_SCOPE_CONTEXT = 4,
	REEF_SCOPE_PAYLOAD = 5
} reef_scope;

typedef enum reef_field_kind {
	REEF_FIELD_UINT = 1,
	REEF_FIELD_INT = 2,
	REEF_FIELD_DOUBLE = 3,
	/* Text: `bytes`/`len` (UTF-8, or `encoding`'s). */
	REEF_FIELD_STRING = 4,
	/* A CTF 2 BLOB: `bytes`/`len`. */
	REEF_FIELD_BLOB = 5,
	/* An integer wider than 64 bits (its value is not given). */
	REEF_FIELD_BIGINT = 6,
	/* Compounds: `count` members, elements, 1 (a variant: `option`
	 * is the chosen one's index) or 1/0 (an optional present or not),
	 * which follow, one level deeper, then a REEF_FIELD_END. */
	REEF_FIELD_STRUCT = 7,
	REEF_FIELD_ARRAY = 8,
	REEF_FIELD_SEQUENCE = 9,
	REEF_FIELD_VARIANT = 10,
	REEF_FIELD_OPTIONAL = 11,
	REEF_FIELD_END = 12
} reef_field_kind;

/* One field of reef_event_fields(). Names and bytes point into the
 * trace's metadata and data: not NUL-terminated (print with "%.*s"),
 * valid until the next message. */
typedef struct reef_field {
	const char *name; /* "" for an array's element */
	size_t name_len;
	uint32_t kind;  /* reef_field_kind */
	uint32_t depth; /* 0: a member of the scope's structure */
	uint64_t index; /* among its siblings */
	uint64_t count; /* compounds: see reef_field_kind */
	uint64_t u;     /* REEF_FIELD_UINT */
	int64_t i;      /* REEF_FIELD_INT */
	double d;       /* REEF_FIELD_DOUBLE */
	const char *bytes; /* REEF_FIELD_STRING, REEF_FIELD_BLOB */
	size_t len;
	/* An enumeration's first label for the value (NULL: none). */
	const char *label;
	size_t label_len;
	/* REEF_FIELD_STRING: 0 UTF-8, 1/2 UTF-16 BE/LE, 3/4 UTF-32 BE/LE;
	 * REEF_FIELD_VARIANT: the option's index. */
	uint32_t option;
	/* The integer's preferred base (2, 8, 10, 16). */
	uint32_t base;
} reef_field;

/* Every field of `scope` of the current event, in declaration order
 * (compounds first, then their members, then an END): up to `cap` into
 * `fields`, the number in *n. REEF_ERR_RANGE when `cap` is too small:
 * *n is then the number needed and nothing is written. */
reef_status reef_event_fields(const reef_reader *reader, reef_scope scope,
			      reef_field *fields, size_t cap, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* REEF_READER_H */
