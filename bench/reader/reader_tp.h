/* LTTng-UST tracepoint provider of the reader benchmark's trace: a 4 x u64
 * event and a string event. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER reef_reader

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./reader_tp.h"

#if !defined(READER_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define READER_TP_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(reef_reader, quad,
	TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c, uint64_t, d),
	TP_FIELDS(
		ctf_integer(uint64_t, a, a)
		ctf_integer(uint64_t, b, b)
		ctf_integer(uint64_t, c, c)
		ctf_integer(uint64_t, d, d)
	)
)

TRACEPOINT_EVENT(reef_reader, msg,
	TP_ARGS(const char *, text),
	TP_FIELDS(
		ctf_string(text, text)
	)
)

#endif

#include <lttng/tracepoint-event.h>
