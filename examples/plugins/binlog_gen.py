"""Writes a BLOG file (binlog.c's format) of requests on a few threads,
and the events it holds as JSON lines (what tests/plugins checks the
plugin's reading against).

    python3 binlog_gen.py OUT.blog EXPECTED.jsonl [REQUESTS] [SEED]
"""
import json
import random
import struct
import sys

START_NS = 1_700_000_000_123_456_789


def main():
    out, expected = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 7)
    records = []  # (t, tid, kind, fields)
    clock = {}
    for i in range(n):
        tid = 100 + rng.randrange(4)
        t = clock.get(tid, 0) + rng.randrange(1, 5000)
        path = "/api/%s/%d" % (rng.choice(["users", "orders", "héllo"]), i)
        records.append((t, tid, 1, {"id": i, "path": path}))
        if rng.random() < 0.3:
            t += rng.randrange(1, 2000)
            records.append((t, tid, 3, {"level": rng.randrange(1, 6), "message": "step %d of request %d" % (i % 3, i)}))
        t += rng.randrange(10, 200_000)
        records.append((t, tid, 2, {"id": i, "status": rng.choice([200, 200, 200, 404, 500])}))
        clock[tid] = t
    names = {1: "request_begin", 2: "request_end", 3: "log"}
    with open(out, "wb") as f, open(expected, "w") as e:
        f.write(b"BLOG" + struct.pack("<IQ", 1, START_NS))
        # Threads interleaved in the file; each thread's records in order.
        for t, tid, kind, fields in sorted(records, key=lambda r: (r[0], r[1])):
            if kind == 1:
                payload = struct.pack("<I", fields["id"]) + fields["path"].encode()
            elif kind == 2:
                payload = struct.pack("<IH", fields["id"], fields["status"])
            else:
                payload = struct.pack("<B", fields["level"]) + fields["message"].encode()
            f.write(struct.pack("<HHIQ", kind, len(payload), tid, t) + payload)
            e.write(json.dumps({"ns": START_NS + t, "thread": tid, "name": names[kind], "fields": fields}) + "\n")


if __name__ == "__main__":
    main()
