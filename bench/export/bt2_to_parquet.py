#!/usr/bin/env python3
"""The hand-made pipeline reef convert replaces: read a trace with the bt2
Python bindings and write its events table (seq, ts, name, cpu) to Parquet
with pyarrow, in batches of 65,536 rows (bounded memory).

    bt2_to_parquet.py TRACE OUT.parquet
"""
import sys

import bt2
import pyarrow as pa
import pyarrow.parquet as pq

schema = pa.schema([("seq", pa.int64()), ("ts", pa.int64()), ("name", pa.string()), ("cpu", pa.int64())])
writer = pq.ParquetWriter(sys.argv[2], schema, compression="zstd")
cols = ([], [], [], [])
seq = 0


def flush():
    writer.write_batch(pa.record_batch([pa.array(c, type=f.type) for c, f in zip(cols, schema)], schema=schema))
    for c in cols:
        c.clear()


for msg in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(msg) is not bt2._EventMessageConst:
        continue
    ev = msg.event
    pc = ev.packet.context_field if ev.packet is not None else None
    cols[0].append(seq)
    cols[1].append(msg.default_clock_snapshot.ns_from_origin)
    cols[2].append(ev.name)
    cols[3].append(int(pc["cpu_id"]) if pc is not None and "cpu_id" in pc else None)
    seq += 1
    if len(cols[0]) == 65536:
        flush()
if cols[0]:
    flush()
writer.close()
print(seq, "events", file=sys.stderr)
