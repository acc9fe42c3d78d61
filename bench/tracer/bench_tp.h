/* LTTng-UST tracepoint provider: the same 4 x u64 payload. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER reef_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./bench_tp.h"

#if !defined(BENCH_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_TP_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(reef_bench, ev4,
	TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c, uint64_t, d),
	TP_FIELDS(
		ctf_integer(uint64_t, a, a)
		ctf_integer(uint64_t, b, b)
		ctf_integer(uint64_t, c, c)
		ctf_integer(uint64_t, d, d)
	)
)

#endif

#include <lttng/tracepoint-event.h>
