#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "reader_tp.h"
