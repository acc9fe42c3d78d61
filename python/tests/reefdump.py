"""What `reef` gives for the same rows as bt2dump.py (see there)."""

import json
import math
import sys

import reef


def conv(v):
    if isinstance(v, reef.Enum):
        return {"enum": int(v), "labels": sorted(v.labels)}
    if isinstance(v, float):
        return "nan" if math.isnan(v) else v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, dict):
        return {k: conv(x) for k, x in v.items()}
    if isinstance(v, list):
        return [conv(x) for x in v]
    return v


def rows(path, **kw):
    try:
        for m in reef.open(path, **kw):
            if isinstance(m, reef.Event):
                yield [m.name, m.timestamp, m.cycles, conv(m.payload), conv(m.context),
                       conv(m.stream_context), conv(m.packet_context)]
            else:
                yield ["discarded-" + m.kind, m.count]
    except reef.Error:
        yield ["error"]


if __name__ == "__main__":
    for r in rows(sys.argv[1]):
        sys.stdout.write(json.dumps(r) + "\n")
