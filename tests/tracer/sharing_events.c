/*
 * sharing_events.c — the events whose memory accesses sharing.c checks.
 *
 * Compiled with -fsanitize=thread but linked WITHOUT the TSan run time:
 * the compiler's instrumentation turns every load and store of this file,
 * including those of the inlined fast path of the generated functions
 * (reef_fast.h), into calls to the __tsan_* hooks that sharing.c defines.
 * libreef.a itself is not instrumented, so what is recorded is exactly what
 * the fast path touches, not the slow path.
 *
 * -DSHARING_NEGATIVE_CONTROL adds, after every event's commit, one store to
 * a per-thread counter in a global array: the two threads write different
 * bytes of the same cache line (false sharing). The check must fail then.
 */
#include "reef.h"
#include "sharing.h"

#ifdef SHARING_NEGATIVE_CONTROL
static __thread unsigned sharing_index;
uint64_t sharing_counts[2];
#define reef__commit(end) (reef__commit(end), sharing_counts[sharing_index & 1]++)
#define SET_INDEX(i) (sharing_index = (i))
#else
#define SET_INDEX(i) ((void)(i))
#endif

/* After the macro: the generated functions use it. */
#include "types.h"

static const uint32_t a2[2] = { 1, 2 };
static const double b2[2] = { 0.5, -1.5 };
static const bool c2[2] = { true, false };
static const void *const d2[2] = { (const void *)(uintptr_t)0x1234abcdu, 0 };
static const uint8_t e2[2] = { 7, 5 };
static const int8_t f3[3] = { -128, 0, 127 };
static const uint16_t sa[3] = { 1, 2, 3 };
static const float sb[1] = { 2.25f };
static const int16_t se[2] = { -2, 2 };

/* Every generated function of types.reef: all field kinds. */
void sharing_events(unsigned index, uint64_t i)
{
	SET_INDEX(index);
	reef_kernel_cswitch((uint32_t)i, index);
	reef_kernel_bzero(a2, i);
	reef_kernel_timer((uint32_t)i);
	reef_all_ints((uint8_t)i, (uint16_t)i, (uint32_t)i, i, (int8_t)i, (int16_t)i, (int32_t)i,
		      (int64_t)i);
	reef_all_others((float)i, (double)i, i & 1, &i, "a string of some length", 5, -2);
	reef_all_arrays(a2, b2, c2, d2, e2, f3);
	reef_all_seqs(3, sa, 1, sb, 2, c2, 2, d2, 2, se);
	reef_all_empty();
	reef_all_keywords(1, 2, 3, "kw");
}
