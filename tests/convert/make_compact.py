#!/usr/bin/env python3
"""Writes a small CTF 1.8 trace whose events carry a 16-bit compact
timestamp (the clock's low 16 bits, as LTTng's 27-bit one), events about
40,000 cycles apart: leaving one out between two kept events makes a gap
the next event's 16 bits cannot express from the one before, so `reef
convert --filter` must start a new packet there (its timestamp_begin the
event's time). Fields of 32- and 64-bit alignment and a bit-packed
5-bit field make events move by other than their alignment when some
are left out, so that they are laid out again.

usage: make_compact.py OUT [EVENTS]
"""
import os
import struct
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
os.makedirs(out, exist_ok=True)
TSDL = """/* CTF 1.8 */
typealias integer { size = 5; align = 1; signed = false; } := uint5_t;
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; map = clock.c.value; } := uint16_clock_t;
typealias integer { size = 32; align = 32; signed = false; } := uint32_t;
typealias integer { size = 64; align = 64; signed = false; } := uint64_t;
typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := uint64_clock_t;
trace {
  major = 1; minor = 8; byte_order = le;
  packet.header := struct { uint32_t magic; uint32_t stream_id; };
};
clock { name = c; freq = 1000000000; offset_s = 1700000000; };
stream {
  id = 0;
  packet.context := struct {
    uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;
    uint64_t content_size; uint64_t packet_size;
    uint64_t packet_seq_num; uint64_t events_discarded;
  };
  event.header := struct { uint8_t id; uint16_clock_t timestamp; };
};
event { id = 0; name = "a"; stream_id = 0; fields := struct { uint5_t small; uint32_t x; string s; }; };
event { id = 1; name = "b"; stream_id = 0; fields := struct { uint64_t y; uint5_t small; }; };
"""
with open(os.path.join(out, "metadata"), "w") as f:
    f.write(TSDL)


class Bits:
    def __init__(self):
        self.v = 0
        self.n = 0

    def align(self, a):
        self.n = (self.n + a - 1) // a * a

    def put(self, val, size, align):
        self.align(align)
        self.v |= (val & ((1 << size) - 1)) << self.n
        self.n += size

    def bytes(self, total_bits):
        return self.v.to_bytes(total_bits // 8, "little")


def packet(seq, events):
    b = Bits()
    b.put(0xC1FC1FC1, 32, 32)
    b.put(0, 32, 32)
    ctx = b.n
    b.n += 64 * 6  # filled below
    for (t, kind, k) in events:
        b.put(kind, 8, 8)
        b.put(t & 0xFFFF, 16, 8)
        # A structure is aligned as its most aligned member.
        if kind == 0:
            b.align(32)
            b.put(k % 32, 5, 1)
            b.put(k * 7, 32, 32)
            b.align(8)
            for ch in (f"ev{k}".encode() + b"\0"):
                b.put(ch, 8, 8)
        else:
            b.align(64)
            b.put(k * 1000003, 64, 64)
            b.put(k % 31, 5, 1)
    content = b.n
    size = (content + 7) // 8 * 8 + 64
    end = b.n
    b.n = ctx
    for v in (events[0][0], events[-1][0], content, size, seq, 0):
        b.put(v, 64, 64)
    b.n = end
    return b.bytes(size)


t = 1000
evs = []
for k in range(n):
    evs.append((t, k % 2, k))
    t += 39000 + (k * 7919) % 2000
data = b""
per = 97
for i in range(0, n, per):
    data += packet(i // per, evs[i:i + per])
with open(os.path.join(out, "stream"), "wb") as f:
    f.write(data)
