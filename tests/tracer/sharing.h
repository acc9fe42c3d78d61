/* sharing.h — between sharing.c (hooks, checker) and sharing_events.c. */
#ifndef SHARING_H
#define SHARING_H
#include <stdint.h>

/* One call records every event of types.reef once (instrumented code). */
void sharing_events(unsigned index, uint64_t i);

#endif
