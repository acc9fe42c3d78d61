/* Calls every generated function of types.reef; compiled as C11 and as
 * C++17 (see run.sh). Prints nothing: the test reads the trace. */
#include "types.h"

int main(void)
{
	uint32_t a2[2] = { 1, 2 };
	double b2[2] = { 0.5, -1.5 };
	bool c2[2] = { true, false };
	const void *d2[2] = { (const void *)(uintptr_t)0x1234abcdu, 0 };
	uint8_t e2[2] = { TRACE_ENUM_STATE_RUNNING, 7 };
	int8_t f3[3] = { -128, 0, 127 };
	uint16_t sa[3] = { 1, 2, 3 };
	float sb[1] = { 2.25f };
	int16_t se[2] = { TRACE_ENUM_SIGN_NEG, TRACE_ENUM_SIGN_POS };

	reef_kernel_cswitch(1, 2);
	reef_kernel_bzero(0, 4096);
	reef_kernel_timer(3);
	reef_all_ints(255, 65535, 4294967295u, UINT64_C(18446744073709551615), -128, -32768,
		      -2147483647 - 1, INT64_C(-9223372036854775807) - 1);
	reef_all_others(1.5f, -0.25, true, 0, "h\xc3\xa9llo \"\\", TRACE_ENUM_STATE_BLOCKED,
			TRACE_ENUM_SIGN_ZERO);
	reef_all_arrays(a2, b2, c2, d2, e2, f3);
	reef_all_seqs(3, sa, 1, sb, 2, c2, 0, 0, 2, se);
	reef_all_empty();
	reef_all_keywords(1, 2, 3, "kw");
	return 0;
}
