#!/usr/bin/env python3
"""Writes one trace's stream files twice, under two metadata: CTF 1.8
(TSDL) in OUT/ctf1 and CTF 2 (JSON fragments) in OUT/ctf2, describing the
same bytes. Used to compare reef's decoding speed on the two formats
(bench/ctf2/run.sh) and that both print the same text.

usage: make_pair.py OUT [EVENTS] [STREAMS]
"""
import json
import os
import struct
import sys

out = sys.argv[1]
events = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
streams = int(sys.argv[3]) if len(sys.argv) > 3 else 4
UUID = bytes(range(16))
PACKET = 64 * 1024

TSDL = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 64; align = 8; signed = true; } := int64_t;
trace {
  major = 1; minor = 8; byte_order = le;
  uuid = "00010203-0405-0607-0809-0a0b0c0d0e0f";
  packet.header := struct { uint32_t magic; uint8_t uuid[16]; uint32_t stream_id; };
};
env { hostname = "bench"; domain = "kernel"; };
clock { name = monotonic; freq = 1000000000; offset_s = 1600000000; offset = 0; absolute = true; };
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := uint64_clock_t;
stream {
  id = 0;
  packet.context := struct {
    uint64_clock_t timestamp_begin; uint64_clock_t timestamp_end;
    uint64_t content_size; uint64_t packet_size; uint64_t events_discarded; uint32_t cpu_id;
  };
  event.header := struct { uint16_t id; uint64_clock_t timestamp; };
};
event { name = "sched_like"; id = 0; stream_id = 0;
  fields := struct { int32_t prev_tid; int32_t next_tid; uint32_t prio; string comm; }; };
event { name = "irq"; id = 1; stream_id = 0;
  fields := struct { uint32_t irq; int64_t ret; }; };
"""


def uint(n, roles=(), signed=False):
    fc = {
        "type": "fixed-length-signed-integer" if signed else "fixed-length-unsigned-integer",
        "length": n,
        "byte-order": "little-endian",
        "alignment": 8,
    }
    if roles:
        fc["roles"] = list(roles)
    return fc


def struct_fc(*members):
    return {"type": "structure", "member-classes": [{"name": n, "field-class": f} for n, f in members]}


FRAGMENTS = [
    {"type": "preamble", "version": 2, "uuid": list(UUID)},
    {
        "type": "trace-class",
        "environment": {"hostname": "bench", "domain": "kernel"},
        "packet-header-field-class": struct_fc(
            ("magic", uint(32, ["packet-magic-number"])),
            ("uuid", {"type": "static-length-blob", "length": 16, "roles": ["metadata-stream-uuid"]}),
            ("stream_id", uint(32, ["data-stream-class-id"])),
        ),
    },
    {
        "type": "clock-class",
        "id": "monotonic",
        "frequency": 1000000000,
        "offset-from-origin": {"seconds": 1600000000, "cycles": 0},
        "origin": "unix-epoch",
    },
    {
        "type": "data-stream-class",
        "default-clock-class-id": "monotonic",
        "packet-context-field-class": struct_fc(
            ("timestamp_begin", uint(64, ["default-clock-timestamp"])),
            ("timestamp_end", uint(64, ["packet-end-default-clock-timestamp"])),
            ("content_size", uint(64, ["packet-content-length"])),
            ("packet_size", uint(64, ["packet-total-length"])),
            ("events_discarded", uint(64, ["discarded-event-record-counter-snapshot"])),
            ("cpu_id", uint(32)),
        ),
        "event-record-header-field-class": struct_fc(
            ("id", uint(16, ["event-record-class-id"])),
            ("timestamp", uint(64, ["default-clock-timestamp"])),
        ),
    },
    {
        "type": "event-record-class",
        "id": 0,
        "name": "sched_like",
        "payload-field-class": struct_fc(
            ("prev_tid", uint(32, signed=True)),
            ("next_tid", uint(32, signed=True)),
            ("prio", uint(32)),
            ("comm", {"type": "null-terminated-string"}),
        ),
    },
    {
        "type": "event-record-class",
        "id": 1,
        "name": "irq",
        "payload-field-class": struct_fc(("irq", uint(32)), ("ret", uint(64, signed=True))),
    },
]

HEADER = 4 + 16 + 4
CONTEXT = 8 * 5 + 4


def event(i, ts):
    if i % 3:
        comm = b"proc%d\0" % (i % 97)
        body = struct.pack("<iiI", i % 5000, (i * 7) % 5000, i % 140) + comm
        return struct.pack("<HQ", 0, ts) + body
    return struct.pack("<HQ", 1, ts) + struct.pack("<Iq", i % 64, -(i % 3))


def write_stream(f, cpu, n):
    ts = 1000 + cpu
    i = 0
    while i < n:
        evs = []
        size = HEADER + CONTEXT
        begin = ts
        while i < n:
            e = event(i + cpu, ts)
            if size + len(e) > PACKET:
                break
            evs.append(e)
            size += len(e)
            ts += 997
            i += 1
        end = ts - 997
        head = struct.pack("<I", 0xC1FC1FC1) + UUID + struct.pack("<I", 0)
        ctx = struct.pack("<QQQQQI", begin, end, size * 8, PACKET * 8, 0, cpu)
        data = head + ctx + b"".join(evs)
        f.write(data + b"\0" * (PACKET - len(data)))


for kind in ("ctf1", "ctf2"):
    os.makedirs(os.path.join(out, kind), exist_ok=True)
with open(os.path.join(out, "ctf1", "metadata"), "w") as f:
    f.write(TSDL)
with open(os.path.join(out, "ctf2", "metadata"), "w") as f:
    for frag in FRAGMENTS:
        f.write("\x1e" + json.dumps(frag, indent=1) + "\n")
for cpu in range(streams):
    path = os.path.join(out, "ctf1", "chan_%d" % cpu)
    with open(path, "wb") as f:
        write_stream(f, cpu, events // streams)
    link = os.path.join(out, "ctf2", "chan_%d" % cpu)
    if os.path.lexists(link):
        os.remove(link)
    os.link(path, link)
