"""The reference: every message of a trace read by babeltrace2's Python
bindings (Debian's python3-bt2), as JSON lines. Run with /usr/bin/python3:

    /usr/bin/python3 bt2dump.py TRACE_DIR > out.jsonl

Events: [name, ns from origin, cycles, {payload}, {specific context},
{common context}, {packet context}]; discarded notices: ["discarded-events"
or "discarded-packets", count]. Enumerations are {"enum": value, "labels":
sorted labels}; reals are floats (NaN as the string "nan"); a variant is its
selected option's value; static/dynamic arrays are lists. A reading
error ends the output with ["error"].
"""

import json
import math
import sys

import bt2


def conv(f):
    if isinstance(f, bt2._EnumerationFieldConst):
        return {"enum": int(f), "labels": sorted(f.labels)}
    if isinstance(f, bt2._BoolFieldConst):
        return bool(f)
    if isinstance(f, bt2._IntegerFieldConst):
        return int(f)
    if isinstance(f, bt2._RealFieldConst):
        v = float(f)
        return "nan" if math.isnan(v) else v
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._StructureFieldConst):
        return {k: conv(v) for k, v in f.items()}
    if isinstance(f, bt2._VariantFieldConst):
        return conv(f.selected_option)
    if isinstance(f, bt2._OptionFieldConst):
        return None if f.field is None else conv(f.field)
    if isinstance(f, bt2._ArrayFieldConst):
        return [conv(x) for x in f]
    if isinstance(f, bt2._BitArrayFieldConst):
        return int(f.value_as_integer)
    raise TypeError(type(f))


def scope(f):
    return {} if f is None else conv(f)


def main():
    out = sys.stdout
    try:
        for msg in bt2.TraceCollectionMessageIterator(sys.argv[1]):
            row = one(msg)
            if row is not None:
                out.write(json.dumps(row) + "\n")
    except bt2._Error:
        # The reading failed: every message before the failure was given.
        out.write(json.dumps(["error"]) + "\n")


def one(msg):
    if type(msg) is bt2._EventMessageConst:
        ev = msg.event
        clocked = ev.stream.cls.default_clock_class is not None
        cs = msg.default_clock_snapshot if clocked else None
        pkt = ev.packet.context_field if ev.packet is not None else None
        return [ev.name, cs.ns_from_origin if cs else None, cs.value if cs else None,
                scope(ev.payload_field), scope(ev.specific_context_field),
                scope(ev.common_context_field), scope(pkt)]
    if type(msg) is bt2._DiscardedEventsMessageConst:
        return ["discarded-events", msg.count]
    if type(msg) is bt2._DiscardedPacketsMessageConst:
        return ["discarded-packets", msg.count]
    return None


if __name__ == "__main__":
    main()
