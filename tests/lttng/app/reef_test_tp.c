/* Tracepoint provider: instantiates the probes of reef_test_tp.h. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "reef_test_tp.h"
