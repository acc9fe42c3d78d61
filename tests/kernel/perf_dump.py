# A perf script (perf script -s perf_dump.py): every tracepoint sample as
# one JSON line [name, cpu, ns, tid, {field: value}], the values as perf's
# own scripting engine gives them: the reference of tests/kernel.
import json


def trace_unhandled(event_name, context, fields, sample):
    s = sample.get("sample", {})
    out = {}
    for k, v in fields.items():
        if k.startswith("common_"):
            continue
        if isinstance(v, (bytes, bytearray)):
            v = list(v)
        out[k] = v
    print(json.dumps([event_name, s.get("cpu"), s.get("time"), s.get("tid"), out]))
