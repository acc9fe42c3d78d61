/*
 * LTTng-UST 2.13 tracepoint provider "reef_test".
 *
 * The events are designed to exercise as much of the CTF 1.8 metadata that
 * LTTng-UST writes as possible: integers of every size and signedness, hex
 * display bases, big-endian ("network") byte order, single and double
 * precision floats, strings needing escapes, fixed arrays, sequences (with an
 * empty one), text arrays/sequences, enumerations (single values, ranges,
 * overlapping ranges, auto values, unmapped values), log levels and an EMF
 * model URI.
 *
 * All payload values are deterministic functions of (thread, iter).
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER reef_test

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./reef_test_tp.h"

#if !defined(REEF_TEST_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define REEF_TEST_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>
#include <stddef.h>
#include <endian.h>

/* Enumeration with single values, ranges, overlapping ranges, negatives. */
LTTNG_UST_TRACEPOINT_ENUM(reef_test, color,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_value("RED", 0)
		lttng_ust_field_enum_value("GREEN", 1)
		lttng_ust_field_enum_value("BLUE", 2)
		lttng_ust_field_enum_value("MINUS_ONE", -1)
		lttng_ust_field_enum_range("LOW", 10, 19)
		lttng_ust_field_enum_range("OVERLAP_A", 20, 30)
		lttng_ust_field_enum_range("OVERLAP_B", 25, 35)
		lttng_ust_field_enum_range("HIGH", 100, 1000)
	)
)

/* Enumeration with automatically numbered entries. */
LTTNG_UST_TRACEPOINT_ENUM(reef_test, autoenum,
	LTTNG_UST_TP_ENUM_VALUES(
		lttng_ust_field_enum_auto("AUTO_ZERO")
		lttng_ust_field_enum_auto("AUTO_ONE")
		lttng_ust_field_enum_value("TEN", 10)
		lttng_ust_field_enum_auto("AUTO_ELEVEN")
		lttng_ust_field_enum_value("weird label \"q\"", 42)
	)
)

/* Emitted once per thread when it starts. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, thread_start,
	LTTNG_UST_TP_ARGS(int, thread, const char *, name),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int, thread, thread)
		lttng_ust_field_string(name, name)
	)
)

/* Event with no payload field at all. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, empty,
	LTTNG_UST_TP_ARGS(),
	LTTNG_UST_TP_FIELDS()
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(reef_test, empty, LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING)

/* Decimal integers: every size, signed/unsigned, extremes, negatives. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, integers,
	LTTNG_UST_TP_ARGS(int, thread, int, iter),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint8_t, thread, thread)
		lttng_ust_field_integer(int32_t, iter, iter)
		lttng_ust_field_integer(int8_t, s8_min, INT8_MIN)
		lttng_ust_field_integer(int8_t, s8_max, INT8_MAX)
		lttng_ust_field_integer(uint8_t, u8_max, UINT8_MAX)
		lttng_ust_field_integer(int16_t, s16_min, INT16_MIN)
		lttng_ust_field_integer(int16_t, s16_max, INT16_MAX)
		lttng_ust_field_integer(uint16_t, u16_max, UINT16_MAX)
		lttng_ust_field_integer(int32_t, s32_min, INT32_MIN)
		lttng_ust_field_integer(int32_t, s32_max, INT32_MAX)
		lttng_ust_field_integer(uint32_t, u32_max, UINT32_MAX)
		lttng_ust_field_integer(int64_t, s64_min, INT64_MIN)
		lttng_ust_field_integer(int64_t, s64_max, INT64_MAX)
		lttng_ust_field_integer(uint64_t, u64_max, UINT64_MAX)
		lttng_ust_field_integer(int8_t, s8_neg, -(int8_t)(iter % 100) - 1)
		lttng_ust_field_integer(int16_t, s16_neg, -(int16_t)(iter * 100) - 7)
		lttng_ust_field_integer(int32_t, s32_neg, -(int32_t)iter * 1000003 - 1)
		lttng_ust_field_integer(int64_t, s64_neg, -(int64_t)iter * 1000000000007LL - thread)
		lttng_ust_field_integer(uint64_t, u64_mul, (uint64_t)(iter + 1) * UINT64_C(0x0123456789ABCDEF))
		lttng_ust_field_integer(long, l_val, -(long)thread)
		lttng_ust_field_integer(unsigned char, uc_val, (unsigned char)(200 + thread))
	)
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(reef_test, integers, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_LINE)

/* Hexadecimal display base and network (big-endian) byte order. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, hex_network,
	LTTNG_UST_TP_ARGS(int, thread, int, iter),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer_hex(uint8_t, h_u8, 0xAB)
		lttng_ust_field_integer_hex(uint16_t, h_u16, 0xBEEF)
		lttng_ust_field_integer_hex(uint32_t, h_u32, 0xDEADBEEF)
		lttng_ust_field_integer_hex(uint64_t, h_u64, UINT64_C(0x0123456789ABCDEF))
		lttng_ust_field_integer_hex(uint64_t, h_u64_max, UINT64_MAX)
		lttng_ust_field_integer_hex(int8_t, h_s8_neg, -2)
		lttng_ust_field_integer_hex(int32_t, h_s32_neg, -1)
		lttng_ust_field_integer_hex(int64_t, h_s64_min, INT64_MIN)
		lttng_ust_field_integer_hex(uint32_t, h_zero, 0)
		lttng_ust_field_integer_hex(uint32_t, h_iter, (uint32_t)(thread << 16 | iter))
		/*
		 * lttng_ust_field_integer_network*() copy the source bytes as
		 * they are and declare them big-endian ("byte_order = be" in the
		 * metadata): the source must already be in network byte order.
		 */
		lttng_ust_field_integer_network(uint16_t, n_u16, htobe16(0x1234))
		lttng_ust_field_integer_network(uint32_t, n_u32, htobe32(0x12345678))
		lttng_ust_field_integer_network(uint64_t, n_u64, htobe64(UINT64_C(0x0102030405060708)))
		lttng_ust_field_integer_network(int16_t, n_s16_neg, (int16_t) htobe16((uint16_t) -300))
		lttng_ust_field_integer_network(int32_t, n_s32_neg, (int32_t) htobe32((uint32_t) (-5 - iter)))
		lttng_ust_field_integer_network(int64_t, n_s64_min, (int64_t) htobe64((uint64_t) INT64_MIN))
		lttng_ust_field_integer_network(uint64_t, n_u64_max, htobe64(UINT64_MAX))
		lttng_ust_field_integer_network_hex(uint32_t, nh_u32, htobe32(0xCAFEBABE))
		lttng_ust_field_integer_network_hex(uint16_t, nh_u16, htobe16((uint16_t) (0xF000 | iter)))
	)
)

/* Single and double precision floats. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, floats,
	LTTNG_UST_TP_ARGS(int, thread, int, iter),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_float(float, f_3_5, 3.5f)
		lttng_ust_field_float(float, f_0_1, 0.1f)
		lttng_ust_field_float(float, f_neg, -1.25f)
		lttng_ust_field_float(float, f_big, 3.4e38f)
		lttng_ust_field_float(double, d_0_1, 0.1)
		lttng_ust_field_float(double, d_neg_1e300, -1e300)
		lttng_ust_field_float(double, d_3_5, 3.5)
		lttng_ust_field_float(double, d_pi, 3.141592653589793)
		lttng_ust_field_float(double, d_zero, 0.0)
		lttng_ust_field_float(double, d_neg_zero, -0.0)
		lttng_ust_field_float(double, d_1e5, 100000.0)
		lttng_ust_field_float(double, d_1e6, 1000000.0)
		lttng_ust_field_float(double, d_1em5, 1e-5)
		lttng_ust_field_float(double, d_123456789, 123456789.0)
		lttng_ust_field_float(double, d_denorm, 4.9406564584124654e-324)
		lttng_ust_field_float(double, d_iter, iter * 0.25 + thread)
	)
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(reef_test, floats, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)
LTTNG_UST_TRACEPOINT_MODEL_EMF_URI(reef_test, floats, "http://example.com/reef/floats")

/* Non-finite floats, emitted once. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, special_floats,
	LTTNG_UST_TP_ARGS(double, inf, double, nan),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_float(double, d_inf, inf)
		lttng_ust_field_float(double, d_neg_inf, -inf)
		lttng_ust_field_float(double, d_nan, nan)
		lttng_ust_field_float(float, f_inf, (float)inf)
	)
)

/* Strings, including characters that need escaping and non-ASCII UTF-8. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, strings,
	LTTNG_UST_TP_ARGS(int, thread, const char *, name),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_string(plain, "hello, world")
		lttng_ust_field_string(quote, "say \"hi\"")
		lttng_ust_field_string(backslash, "C:\\path\\to\\file")
		lttng_ust_field_string(newline, "line1\nline2")
		lttng_ust_field_string(tab, "a\tb")
		lttng_ust_field_string(question, "what? why??")
		lttng_ust_field_string(utf8, "h\xc3\xa9llo w\xc3\xb6rld \xe2\x80\x94 \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e")
		lttng_ust_field_string(empty, "")
		lttng_ust_field_string(control, "bell\a bs\b ff\f cr\r vt\v esc\x1b del\x7f one\x01")
		lttng_ust_field_string(name, name)
		lttng_ust_field_integer(int, thread, thread)
	)
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(reef_test, strings, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

/* Fixed arrays, sequences (with an empty one), text arrays and sequences. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, arrays,
	LTTNG_UST_TP_ARGS(int, thread, int, iter,
		const int32_t *, a32, const uint8_t *, a8,
		const uint16_t *, seq16, size_t, seq16_len, const uint16_t *, net16,
		const int64_t *, seq64,
		const char *, text, size_t, text_len),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_array(int32_t, a_s32, a32, 4)
		lttng_ust_field_array_hex(uint8_t, a_u8_hex, a8, 3)
		lttng_ust_field_array_network(uint16_t, a_u16_net, net16, 2)
		lttng_ust_field_sequence(uint16_t, seq_u16, seq16, size_t, seq16_len)
		lttng_ust_field_sequence(int64_t, seq_s64, seq64, unsigned int, 3)
		lttng_ust_field_sequence(int64_t, seq_empty, seq64, uint8_t, 0)
		lttng_ust_field_sequence_hex(uint32_t, seq_hex, a32, uint16_t, 2)
		lttng_ust_field_array_text(char, a_text, "abc\"d\\e\n", 8)
		lttng_ust_field_array_text(char, a_text_nul, "ab\0cd\0\0\0", 8)
		lttng_ust_field_array_text(char, a_text_utf8, "\xc3\xa9t\xc3\xa9", 6)
		lttng_ust_field_sequence_text(char, seq_text, text, size_t, text_len)
		lttng_ust_field_sequence_text(char, seq_text_empty, text, uint32_t, 0)
		lttng_ust_field_integer(int, thread, thread)
		lttng_ust_field_integer(int, iter, iter)
	)
)

/* Enumerations: single values, ranges, overlaps, auto values, no label. */
LTTNG_UST_TRACEPOINT_EVENT(reef_test, enums,
	LTTNG_UST_TP_ARGS(int, thread, int, iter),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_enum(reef_test, color, int32_t, e_red, 0)
		lttng_ust_field_enum(reef_test, color, uint8_t, e_blue_u8, 2)
		lttng_ust_field_enum(reef_test, color, uint8_t, e_u8_255, 255)
		lttng_ust_field_enum(reef_test, color, int8_t, e_minus_one, -1)
		lttng_ust_field_enum(reef_test, color, int32_t, e_low_10, 10)
		lttng_ust_field_enum(reef_test, color, int64_t, e_low_19, 19)
		lttng_ust_field_enum(reef_test, color, int32_t, e_overlap_27, 27)
		lttng_ust_field_enum(reef_test, color, int32_t, e_overlap_a_only, 22)
		lttng_ust_field_enum(reef_test, color, uint16_t, e_high_500, 500)
		lttng_ust_field_enum(reef_test, color, int32_t, e_unmapped_50, 50)
		lttng_ust_field_enum(reef_test, color, int32_t, e_unmapped_neg, -7)
		lttng_ust_field_enum(reef_test, color, uint64_t, e_u64_max, UINT64_MAX)
		lttng_ust_field_enum(reef_test, color, int32_t, e_iter, (iter * 7) % 40 - 1)
		lttng_ust_field_enum(reef_test, autoenum, uint8_t, a_zero, 0)
		lttng_ust_field_enum(reef_test, autoenum, uint8_t, a_one, 1)
		lttng_ust_field_enum(reef_test, autoenum, uint8_t, a_ten, 10)
		lttng_ust_field_enum(reef_test, autoenum, uint8_t, a_eleven, 11)
		lttng_ust_field_enum(reef_test, autoenum, uint32_t, a_weird, 42)
		lttng_ust_field_enum(reef_test, autoenum, uint8_t, a_none, 2)
		lttng_ust_field_integer(int, thread, thread)
	)
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(reef_test, enums, LTTNG_UST_TRACEPOINT_LOGLEVEL_NOTICE)

#endif /* REEF_TEST_TP_H */

#include <lttng/tracepoint-event.h>
