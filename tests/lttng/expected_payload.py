#!/usr/bin/env python3
"""Expected payloads of a trace recorded by tests/lttng/record.sh.

Models, independently of any trace reader, what tests/lttng/app traces, and
prints one line per event in the form babeltrace2 (default options) prints
the event name and payload:

    reef_test:NAME: { FIELD = VALUE, ... }

sorted (bytewise), because the interleaving of the threads is not
deterministic. `check-payload.sh` compares this with the reader's output,
stripped of timestamps, hostname, stream packet context and event context.

Usage: expected_payload.py [ITERATIONS]   (default 10, like the app)
"""
import struct
import sys

NTHREADS = 3
INT8_MIN, INT8_MAX, UINT8_MAX = -(1 << 7), (1 << 7) - 1, (1 << 8) - 1
INT16_MIN, INT16_MAX, UINT16_MAX = -(1 << 15), (1 << 15) - 1, (1 << 16) - 1
INT32_MIN, INT32_MAX, UINT32_MAX = -(1 << 31), (1 << 31) - 1, (1 << 32) - 1
INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


def wrap(v, bits, signed):
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def f32(x):
    """Value of x rounded to single precision, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def g(x):
    """babeltrace2 prints real fields with printf("%g")."""
    return "%g" % x


def hx(v, bits):
    """Hexadecimal fields: the raw bits, uppercase, 0x prefix."""
    return "0x%X" % (v & ((1 << bits) - 1))


def event(name, fields):
    body = ", ".join("%s = %s" % kv for kv in fields)
    return "reef_test:%s: { %s }" % (name, body) if fields else "reef_test:%s: { }" % name


def arr(items):
    if not items:
        return "[ ]"
    return "[ " + ", ".join("[%d] = %s" % (i, v) for i, v in enumerate(items)) + " ]"


COLOR = [("RED", 0, 0), ("GREEN", 1, 1), ("BLUE", 2, 2), ("MINUS_ONE", -1, -1),
         ("LOW", 10, 19), ("OVERLAP_A", 20, 30), ("OVERLAP_B", 25, 35),
         ("HIGH", 100, 1000)]
AUTO = [("AUTO_ZERO", 0, 0), ("AUTO_ONE", 1, 1), ("TEN", 10, 10),
        ("AUTO_ELEVEN", 11, 11), ('weird label \\"q\\"', 42, 42)]


def enum(mappings, value, bits, signed):
    # Mapping bounds are parsed as 64-bit integers; for an unsigned
    # container, a negative bound is reinterpreted as unsigned 64-bit.
    labels = []
    for label, lo, hi in mappings:
        if not signed:
            lo, hi = lo & UINT64_MAX, hi & UINT64_MAX
        if lo <= value <= hi:
            labels.append('"%s"' % label)
    lab = ", ".join(labels) if labels else "<unknown>"
    return "( %s : container = %d )" % (lab, value)


def worker_events(t, iterations):
    out = [event("thread_start", [("thread", t), ("name", '"worker-%d"' % t)])]
    for it in range(iterations):
        out.append(event("integers", [
            ("thread", t), ("iter", it),
            ("s8_min", INT8_MIN), ("s8_max", INT8_MAX), ("u8_max", UINT8_MAX),
            ("s16_min", INT16_MIN), ("s16_max", INT16_MAX), ("u16_max", UINT16_MAX),
            ("s32_min", INT32_MIN), ("s32_max", INT32_MAX), ("u32_max", UINT32_MAX),
            ("s64_min", INT64_MIN), ("s64_max", INT64_MAX), ("u64_max", UINT64_MAX),
            ("s8_neg", wrap(-(it % 100) - 1, 8, True)),
            ("s16_neg", wrap(-(it * 100) - 7, 16, True)),
            ("s32_neg", wrap(-it * 1000003 - 1, 32, True)),
            ("s64_neg", wrap(-it * 1000000000007 - t, 64, True)),
            ("u64_mul", wrap((it + 1) * 0x0123456789ABCDEF, 64, False)),
            ("l_val", -t), ("uc_val", 200 + t),
        ]))
        out.append(event("hex_network", [
            ("h_u8", hx(0xAB, 8)), ("h_u16", hx(0xBEEF, 16)),
            ("h_u32", hx(0xDEADBEEF, 32)), ("h_u64", hx(0x0123456789ABCDEF, 64)),
            ("h_u64_max", hx(UINT64_MAX, 64)), ("h_s8_neg", hx(-2, 8)),
            ("h_s32_neg", hx(-1, 32)), ("h_s64_min", hx(INT64_MIN, 64)),
            ("h_zero", hx(0, 32)), ("h_iter", hx(t << 16 | it, 32)),
            ("n_u16", 0x1234), ("n_u32", 0x12345678), ("n_u64", 0x0102030405060708),
            ("n_s16_neg", -300), ("n_s32_neg", wrap(-5 - it, 32, True)),
            ("n_s64_min", INT64_MIN), ("n_u64_max", UINT64_MAX),
            ("nh_u32", hx(0xCAFEBABE, 32)), ("nh_u16", hx(0xF000 | it, 16)),
        ]))
        out.append(event("floats", [
            ("f_3_5", g(f32(3.5))), ("f_0_1", g(f32(0.1))), ("f_neg", g(f32(-1.25))),
            ("f_big", g(f32(3.4e38))), ("d_0_1", g(0.1)), ("d_neg_1e300", g(-1e300)),
            ("d_3_5", g(3.5)), ("d_pi", g(3.141592653589793)), ("d_zero", g(0.0)),
            ("d_neg_zero", g(-0.0)), ("d_1e5", g(100000.0)), ("d_1e6", g(1000000.0)),
            ("d_1em5", g(1e-5)), ("d_123456789", g(123456789.0)),
            ("d_denorm", g(4.9406564584124654e-324)), ("d_iter", g(it * 0.25 + t)),
        ]))
        out.append(event("strings", [
            ("plain", '"hello, world"'),
            ("quote", r'"say \"hi\""'),
            ("backslash", r'"C:\\path\\to\\file"'),
            ("newline", r'"line1\nline2"'),
            ("tab", r'"a\tb"'),
            ("question", r'"what\? why\?\?"'),
            ("utf8", '"h\u00e9llo w\u00f6rld \u2014 \u2713 \u65e5\u672c\u8a9e"'),
            ("empty", '""'),
            ("control", r'"bell\a bs\b ff\f cr\r vt\v esc\e del\x7f one\x01"'),
            ("name", '"worker-%d"' % t),
            ("thread", t),
        ]))
        seq16 = [it & 0xFFFF, t, 0xFFFF, 7][: it % 5]
        text = 't%d/i%d "q" \\ \t?' % (t, it)
        esc_text = text.replace("\\", "\\\\").replace('"', '\\"') \
            .replace("\t", "\\t").replace("?", "\\?")
        out.append(event("arrays", [
            ("a_s32", arr([it, -it, INT32_MIN, INT32_MAX])),
            ("a_u8_hex", arr([hx(t, 8), hx(it, 8), hx(0xFF, 8)])),
            ("a_u16_net", arr([0x0100 + it, 0xABCD])),
            ("_seq_u16_length", len(seq16)), ("seq_u16", arr(seq16)),
            ("_seq_s64_length", 3), ("seq_s64", arr([INT64_MIN, -1, it * 1000000000000])),
            ("_seq_empty_length", 0), ("seq_empty", arr([])),
            ("_seq_hex_length", 2), ("seq_hex", arr([hx(it, 32), hx(-it, 32)])),
            ("a_text", r'"abc\"d\\e\n"'),
            ("a_text_nul", '"ab"'),
            ("a_text_utf8", '"\u00e9t\u00e9"'),
            ("_seq_text_length", len(text.encode())), ("seq_text", '"%s"' % esc_text),
            ("_seq_text_empty_length", 0), ("seq_text_empty", '""'),
            ("thread", t), ("iter", it),
        ]))
        out.append(event("enums", [
            ("e_red", enum(COLOR, 0, 32, True)),
            ("e_blue_u8", enum(COLOR, 2, 8, False)),
            ("e_u8_255", enum(COLOR, 255, 8, False)),
            ("e_minus_one", enum(COLOR, -1, 8, True)),
            ("e_low_10", enum(COLOR, 10, 32, True)),
            ("e_low_19", enum(COLOR, 19, 64, True)),
            ("e_overlap_27", enum(COLOR, 27, 32, True)),
            ("e_overlap_a_only", enum(COLOR, 22, 32, True)),
            ("e_high_500", enum(COLOR, 500, 16, False)),
            ("e_unmapped_50", enum(COLOR, 50, 32, True)),
            ("e_unmapped_neg", enum(COLOR, -7, 32, True)),
            ("e_u64_max", enum(COLOR, UINT64_MAX, 64, False)),
            ("e_iter", enum(COLOR, (it * 7) % 40 - 1, 32, True)),
            ("a_zero", enum(AUTO, 0, 8, False)),
            ("a_one", enum(AUTO, 1, 8, False)),
            ("a_ten", enum(AUTO, 10, 8, False)),
            ("a_eleven", enum(AUTO, 11, 8, False)),
            ("a_weird", enum(AUTO, 42, 32, False)),
            ("a_none", enum(AUTO, 2, 8, False)),
            ("thread", t),
        ]))
    return out


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    lines = [event("empty", []), event("empty", []),
             event("special_floats", [("d_inf", "inf"), ("d_neg_inf", "-inf"),
                                      ("d_nan", "nan"), ("f_inf", "inf")])]
    for t in range(NTHREADS):
        lines += worker_events(t, iterations)
    data = "".join(line + "\n" for line in lines).encode()
    # bytewise sort, like LC_ALL=C sort
    out = b"".join(sorted(data.splitlines(keepends=True)))
    sys.stdout.buffer.write(out)


if __name__ == "__main__":
    main()
