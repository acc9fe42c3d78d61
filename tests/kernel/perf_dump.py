# A perf script (perf script -s perf_dump.py): every tracepoint sample as
# one JSON line [name, cpu, ns, tid, {field: value}], the values as perf's
# own scripting engine gives them, and every other sample as a line
# "S [name, cpu, ns, pid, tid, period, ip, comm, [[address, symbol, dso],
# ...]]" (its callchain as perf resolves it): the reference of tests/kernel.
import json


def process_event(p):
    s = p.get("sample", {})
    chain = [[n.get("ip"), (n.get("sym") or {}).get("name"), n.get("dso")] for n in p.get("callchain", [])]
    print("S " + json.dumps([p.get("ev_name"), s.get("cpu"), s.get("time"), s.get("pid"), s.get("tid"),
                             s.get("period"), s.get("ip"), p.get("comm"), chain]))


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
