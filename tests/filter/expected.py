#!/usr/bin/env python3
"""Expected results of `reef print --filter` and `reef stats`, computed
without reef from babeltrace2's text (tests/periods/btparse.py).

    expected.py filter TRACE OUT_DIR   # per case: OUT_DIR/NAME.expr (reef's
                                     # expression), OUT_DIR/NAME.txt (the
                                     # babeltrace2 lines it must keep)
    expected.py stats TRACE            # JSON: events, first/last ns, counts
                                     # per name and per thread, discarded

Each filter case pairs a reef expression with a Python predicate written
from the README's rules: a comparison with a missing field is false
(whatever the operator), `*` in a string compared with == / != is a
wildcard, integers compare exactly, an integer against a float as numbers.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../periods"))
import btparse  # noqa: E402


def v(e, name):
    return e["fields"].get(name)


def num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def cmp(a, op, b):
    """A comparison with a missing side, or a string with a number, is false."""
    if a is None or b is None or num(a) != num(b):
        return False
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def like(s, pattern):
    if not isinstance(s, str):
        return False
    rx = "^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$"
    return re.match(rx, s, re.S) is not None


def arith(a, b, f):
    return f(a, b) if num(a) and num(b) else None


# (name, expression, predicate). Cases whose fields an event class lacks
# simply select nothing there.
CASES = [
    ("name", '$evt.$name == "sched_switch"', lambda e: e["name"] == "sched_switch"),
    ("glob-and-cpu", '$evt.$name == "sched_*" && $evt.cpu_id == 1',
     lambda e: like(e["name"], "sched_*") and cmp(v(e, "cpu_id"), "==", 1)),
    ("bare-names", 'prev_tid > 0 && next_comm == "swapper*"',
     lambda e: cmp(v(e, "prev_tid"), ">", 0) and like(v(e, "next_comm"), "swapper*")),
    ("glob-op-or-not", '$evt.$name =* "*_entry" || !($evt.cpu_id < 2)',
     lambda e: like(e["name"], "*_entry") or not cmp(v(e, "cpu_id"), "<", 2)),
    ("arithmetic", "bytes_alloc - bytes_req >= 256 && ptr % 64 == 0",
     lambda e: cmp(arith(v(e, "bytes_alloc"), v(e, "bytes_req"), lambda a, b: a - b), ">=", 256)
     and cmp(arith(v(e, "ptr"), 64, lambda a, b: a % b), "==", 0)),
    ("float-arith", "bytes_req * 1.5 > bytes_alloc",
     lambda e: cmp(arith(v(e, "bytes_req"), 1.5, lambda a, b: a * b), ">", v(e, "bytes_alloc"))),
    ("missing-ne", "no_such_field != 1", lambda e: False),
    ("missing-negated", '!(no_such_field == 1) && $name == "kmem_kfree"',
     lambda e: e["name"] == "kmem_kfree"),
    ("scopes", "$evt.$pkt_ctx.cpu_id == 3 && $evt.$payload.tid < 100",
     lambda e: cmp(v(e, "cpu_id"), "==", 3) and cmp(v(e, "tid"), "<", 100)),
    ("parens", '(irq == 27 || irq == 151) && $evt.$name != "irq_handler_exit"',
     lambda e: (cmp(v(e, "irq"), "==", 27) or cmp(v(e, "irq"), "==", 151))
     and e["name"] != "irq_handler_exit"),
    ("not-glob", 'comm != "kworker*" && $name == "sched_wakeup"',
     lambda e: isinstance(v(e, "comm"), str) and not like(v(e, "comm"), "kworker*")
     and e["name"] == "sched_wakeup"),
    ("hex-and-neg", "call_site >= 0xC0000000 || prio == -100",
     lambda e: cmp(v(e, "call_site"), ">=", 0xC0000000) or cmp(v(e, "prio"), "==", -100)),
    ("timestamp", "$evt.$timestamp % 1000 < 100 && $timestamp / 1000000000 % 2 == 1",
     lambda e: e["ts"] is not None and e["ts"] % 1000 < 100 and e["ts"] // 1000000000 % 2 == 1),
    # tests/periods/pattern.c's events (libreef: tid in the packet context)
    ("pattern-depth", 'thread == 1 && depth >= 1 && $name == "p:*"',
     lambda e: cmp(v(e, "thread"), "==", 1) and cmp(v(e, "depth"), ">=", 1)
     and like(e["name"], "p:*")),
    ("pattern-string-float", 'label == "even" && weight > 10.5 || label < "e"',
     lambda e: (v(e, "label") == "even" and cmp(v(e, "weight"), ">", 10.5))
     or (isinstance(v(e, "label"), str) and v(e, "label") < "e")),
    ("pattern-pkt-tid", "$evt.$pkt_ctx.tid % 2 == 0 && round / 10 == 2",
     lambda e: cmp(arith(v(e, "tid"), 2, lambda a, b: a % b), "==", 0)
     and cmp(arith(v(e, "round"), 10, lambda a, b: a // b), "==", 2)),
]


def discarded(stderr):
    ev = sum(int(n) for n in re.findall(r"Tracer discarded (\d+) events?", stderr))
    pk = sum(int(n) for n in re.findall(r"Tracer discarded (\d+) packets?", stderr))
    return ev, pk


def main():
    mode, trace = sys.argv[1], sys.argv[2]
    out, err = btparse.run(trace)
    evs = [btparse.parse_line(l) for l in out.splitlines()]
    if mode == "filter":
        d = sys.argv[3]
        os.makedirs(d, exist_ok=True)
        for name, expr, pred in CASES:
            with open(os.path.join(d, name + ".expr"), "w") as f:
                f.write(expr)
            with open(os.path.join(d, name + ".txt"), "w") as f:
                for e in evs:
                    if pred(e):
                        f.write(e["line"] + "\n")
    else:
        names, threads = {}, {}
        for e in evs:
            names[e["name"]] = names.get(e["name"], 0) + 1
            if isinstance(v(e, "tid"), int) and e["name"].startswith("p:"):
                threads[str(v(e, "tid"))] = threads.get(str(v(e, "tid")), 0) + 1
        ts = [e["ts"] for e in evs if e["ts"] is not None]
        ev, pk = discarded(err)
        json.dump({
            "events": len(evs), "first_ns": ts[0] if ts else None,
            "last_ns": ts[-1] if ts else None, "names": names, "threads": threads,
            "discarded_events": ev, "discarded_packets": pk,
        }, sys.stdout, indent=1, sort_keys=True)


main()
