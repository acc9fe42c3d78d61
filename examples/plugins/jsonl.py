"""jsonl.py — a reef source plugin in Python: reads JSON-lines logs, one
object per line with a time and an event name, every other member a
field:

    {"time": "2026-12-01T10:00:00.000123Z", "event": "request", "thread": 7, "path": "/a", "ms": 1.5}

`time` is an ISO 8601 UTC time (to the ns) or ns since the Unix epoch;
`thread`, when present, chooses the stream (`thread-N`, else `main`).
An event name's fields and their types come from its first line
(integers, floats, strings); a later line of the same name must have the
same fields. Files ending in `.jsonl` are its own.

    reef print --plugin examples/plugins/jsonl.py app.jsonl
"""
import datetime
import json

import reef.plugin

TYPES = {bool: "s64", int: "s64", float: "f64", str: "string"}
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def ns_of(t):
    if isinstance(t, int):
        return t
    # Python's datetime stops at µs: the fraction is read apart.
    base, _, frac = t.rstrip("Z").partition(".")
    d = datetime.datetime.fromisoformat(base).replace(tzinfo=datetime.timezone.utc)
    s = (d - EPOCH) // datetime.timedelta(seconds=1)
    return s * 1_000_000_000 + int((frac + "000000000")[:9])


class JsonLines(reef.plugin.Source):
    name = "jsonl"
    version = "0.1.0"
    description = "reads JSON-lines logs (examples/plugins/jsonl.py)"
    suffixes = (".jsonl",)

    def read(self, path, out):
        classes, streams = {}, {}
        offset = 0
        with open(path, "rb") as f:
            for n, raw in enumerate(f, 1):
                out.offset(offset)
                offset += len(raw)
                if not raw.strip():
                    continue
                try:
                    o = json.loads(raw)
                    ts = ns_of(o.pop("time"))
                    name = o.pop("event")
                except (ValueError, KeyError, TypeError) as e:
                    raise ValueError("line %d: expected an object with `time` and `event` (%s)" % (n, e)) from None
                thread = o.pop("thread", None)
                sname = "main" if thread is None else "thread-%d" % thread
                s = streams.get(sname)
                if s is None:
                    s = streams[sname] = out.stream(sname)
                c = classes.get(name)
                if c is None:
                    fields = [(k, TYPES.get(type(v), "string")) for k, v in o.items()]
                    # Objects and arrays are kept as their JSON text.
                    nested = any(isinstance(v, (dict, list)) for v in o.values())
                    c = classes[name] = (out.event_class(name, fields), tuple(o), nested)
                cid, keys, nested = c
                if tuple(o) != keys:
                    raise ValueError("line %d: event %r has fields %s, its first line had %s" % (n, name, list(o), list(keys)))
                if nested:
                    out.event(s, cid, ts, tuple(json.dumps(v) if isinstance(v, (dict, list)) else v for v in o.values()))
                else:
                    out.event(s, cid, ts, tuple(o.values()))
