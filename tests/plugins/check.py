#!/usr/bin/python3
"""References for the plugin suite, computed with babeltrace2's Python
bindings (bt2), never with reef. Run with Debian's python3 (python3-bt2).

    check.py keep TRACE SCOPE FIELD OP VALUE   indexes (from 0) of the events kept
    check.py count TRACE                      `name count` lines, total, notices
    check.py latency TRACE BEGIN END [FIELD]  pairing as latency.c documents it, JSON
"""
import json
import operator
import sys

import bt2

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def messages(path):
    for m in bt2.TraceCollectionMessageIterator(path):
        yield m


def field(ev, scope, name):
    s = {"payload": ev.payload_field, "context": ev.specific_context_field,
         "common_context": ev.common_context_field}[scope]
    if s is None or name not in s:
        return None
    f = s[name]
    try:
        return float(f)
    except (TypeError, ValueError):
        return None


def keep(path, scope, name, op, value):
    n = 0
    for m in messages(path):
        if type(m) is not bt2._EventMessageConst:
            continue
        v = field(m.event, scope, name)
        if v is not None and OPS[op](v, float(value)):
            print(n)
        n += 1


def count(path):
    names, total, notices = {}, 0, 0
    for m in messages(path):
        if type(m) is bt2._EventMessageConst:
            names[m.event.name] = names.get(m.event.name, 0) + 1
            total += 1
        elif type(m) in (bt2._DiscardedEventsMessageConst, bt2._DiscardedPacketsMessageConst):
            notices += 1
    for k in sorted(names, key=lambda s: s.encode()):
        print(k, names[k])
    print("total", total)
    print("notices", notices)


def latency(path, begin, end, key=None):
    open_, durs, unmatched = {}, [], 0
    first = last = None
    for m in messages(path):
        if type(m) is not bt2._EventMessageConst:
            continue
        ev, t = m.event, m.default_clock_snapshot.ns_from_origin
        if ev.name not in (begin, end):
            continue
        k = int(ev.payload_field[key]) if key else ev.stream.addr
        if ev.name == end:
            stack = open_.get(k)
            if stack:
                durs.append(t - stack.pop())
                last = t if last is None else max(last, t)
            else:
                unmatched += 1
        if ev.name == begin:
            open_.setdefault(k, []).append(t)
            first = t if first is None else min(first, t)
    hist = {}
    for d in durs:
        b = d.bit_length()
        hist[b] = hist.get(b, 0) + 1
    print(json.dumps({
        "count": len(durs),
        "min": min(durs) if durs else None,
        "max": max(durs) if durs else None,
        "mean": sum(durs) / len(durs) if durs else None,
        "unmatched": unmatched,
        "unfinished": sum(len(s) for s in open_.values()),
        "histogram": [[(1 << (b - 1)) if b else 0, 1 << b, n] for b, n in sorted(hist.items())],
    }))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"keep": keep, "count": count, "latency": latency}[cmd](*args)
