#!/usr/bin/python3
"""libreef_reader's C API against babeltrace2's Python bindings (bt2).

Every message of each trace, as tests/capi/dump.c gives it through the C
API (name, time in ns from the origin, payload, event context, common
context and packet context, each field by name with its value; discarded
events and packets with their count), must equal what bt2's graph gives
for the same trace. Run with Debian's python3 (python3-bt2).

    check.py DUMP TRACE...
"""
import json
import subprocess
import sys

import bt2


def value(f):
    """A bt2 field as dump.c writes it: variants and options stand for
    what they hold, enumerations for their integer."""
    if f is None:
        return None
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._StructureFieldConst):
        return {k: value(v) for k, v in f.items()}
    if isinstance(f, bt2._VariantFieldConst):
        return value(f.selected_option)
    if isinstance(f, bt2._OptionFieldConst):
        return value(f.field) if f.has_field else None
    if isinstance(f, bt2._ArrayFieldConst):
        return [value(x) for x in f]
    if isinstance(f, bt2._RealFieldConst):
        return float(f)
    if isinstance(f, bt2._BoolFieldConst):
        return int(bool(f))
    if isinstance(f, bt2._IntegerFieldConst):
        return int(f)
    raise TypeError("a bt2 field of type %s" % type(f).__name__)


def scope(f):
    return value(f) if f is not None else {}


def reference(path):
    """bt2's messages of `path`, and the error that stopped it (if any),
    read in another process: bt2 aborts on some traces."""
    r = subprocess.run([sys.executable, __file__, "--ref", path], capture_output=True, text=True, errors="replace")
    lines = r.stdout.splitlines()
    if r.returncode != 0 or not lines or lines[-1] != "END":
        last = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        return None, last
    return [json.loads(l) for l in lines[:-1]], None


def bt2_messages(path):
    """bt2's messages of `path`, and the error that stopped it (if any)."""
    out = []
    try:
        for m in bt2.TraceCollectionMessageIterator(path):
            if isinstance(m, bt2._EventMessageConst):
                ev = m.event
                ns = m.default_clock_snapshot.ns_from_origin if m.event.cls.stream_class.default_clock_class else None
                pkt = ev.packet.context_field if ev.packet is not None else None
                out.append(["E", ev.name, ns, scope(ev.payload_field), scope(ev.specific_context_field),
                            scope(ev.common_context_field), scope(pkt)])
            elif isinstance(m, (bt2._DiscardedEventsMessageConst, bt2._DiscardedPacketsMessageConst)):
                what = "events" if isinstance(m, bt2._DiscardedEventsMessageConst) else "packets"
                ns = m.beginning_default_clock_snapshot.ns_from_origin \
                    if m.stream.cls.discarded_events_have_default_clock_snapshots or \
                    m.stream.cls.discarded_packets_have_default_clock_snapshots else None
                out.append(["D", what, ns, m.count])
    except Exception as e:  # bt2 raises one error type per failure
        return out, e
    return out, None


def same(a, b, key=(), seen=None, stale=None):
    """Whether the C API's value `a` equals bt2's `b`. babeltrace2 2.0
    reuses pooled event objects without clearing an empty string: where
    the data holds "" it gives the string an earlier event of the class
    had in that field (`seen`); such a field counts in `stale`."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            (a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], key + (k,), seen, stale) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, key + (i,), seen, stale) for i, (x, y) in enumerate(zip(a, b)))
    if a == "" and isinstance(b, str) and b and seen is not None and b in seen.get(key, ()):
        stale.append(key)
        return True
    return a == b


def strings(v, key, out):
    """Adds every string of `v` to out[key + path]."""
    if isinstance(v, dict):
        for k, x in v.items():
            strings(x, key + (k,), out)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            strings(x, key + (i,), out)
    elif isinstance(v, str):
        out.setdefault(key, set()).add(v)


def main():
    if sys.argv[1] == "--ref":
        out, err = bt2_messages(sys.argv[2])
        for m in out:
            print(json.dumps(m))
        if err is not None:
            print(str(err).splitlines()[0] if str(err) else type(err).__name__, file=sys.stderr)
            sys.exit(1)
        print("END")
        return
    dump, traces = sys.argv[1], sys.argv[2:]
    failures = compared = 0
    for t in traces:
        ref, err = reference(t)
        if err is not None:
            print("%-60s not compared: babeltrace2's bt2 stops (%s)" % (t[-60:], err[:80]))
            continue
        r = subprocess.run([dump, t], capture_output=True, text=True, errors="replace")
        mine = [json.loads(l) for l in r.stdout.splitlines()]
        stop = mine[-1] if mine and mine[-1][0] == "X" else None
        if stop:
            mine = mine[:-1]
        problem = None
        if r.returncode != 0 or stop:
            problem = "dump exited %d: %s %s" % (r.returncode, stop, r.stderr[-200:])
        elif len(mine) != len(ref):
            problem = "%d messages through the C API, %d from bt2" % (len(mine), len(ref))
        else:
            seen, stale = {}, []
            for i, (a, b) in enumerate(zip(mine, ref)):
                key = (b[0], b[1]) if b[0] == "E" else ("D",)
                if not same(a, b, key, seen, stale):
                    problem = "message %d: C API %s, bt2 %s" % (i, json.dumps(a)[:300], json.dumps(b)[:300])
                    break
                if b[0] == "E":
                    strings(b, key, seen)
        compared += 1
        if problem:
            failures += 1
            print("%-60s FAILED: %s" % (t[-60:], problem))
        else:
            note = "; %d empty strings bt2 gives stale (%s)" % (len(stale), ", ".join(
                sorted({".".join(map(str, k[1:])) for k in stale}))) if stale else ""
            print("%-60s ok  (%d messages%s)" % (t[-60:], len(ref), note))
    print("capi: %d traces compared, %d failed" % (compared, failures))
    if failures or compared == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
