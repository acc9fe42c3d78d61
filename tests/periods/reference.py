#!/usr/bin/env python3
"""Expected results of `reef periods` and `reef activities`, computed
without reef: events come from babeltrace2's text (btparse.py), and the
pairing rules are re-implemented here from their documentation (README,
"Periods" and "Activities"; lttng-analyses 0.6.1's period semantics).

    reference.py kernel > expected/kernel.json      # committed
    reference.py pattern TRACE_DIR                  # run by the cargo test

Each case gives the reef arguments; the intervals (name, begin ns, end ns,
group), sorted, as their count, first and last five and a hash of all
(`log_hash`); statistics per (name, group); and the unfinished counts.
"""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import btparse  # noqa: E402

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "../../../shared/conformance/kernel-traces")


def f(e, name):
    return e["fields"].get(name)


def eq(a, b):
    """A comparison with a missing side is false."""
    return a is not None and b is not None and a == b


def glob(s, prefix="", suffix=""):
    return isinstance(s, str) and s.startswith(prefix) and s.endswith(suffix)


def activities(evs, begin, end, key):
    """LIFO pairing per key; an event that ends and begins closes first."""
    open_, out = {}, []
    for e in evs:
        b, x = begin(e), end(e)
        if not (b or x):
            continue
        k = key(e)
        if k is None:
            continue
        if x and open_.get(k):
            out.append(("", open_[k].pop(), e["ts"], k))
        if b:
            open_.setdefault(k, []).append(e["ts"])
    left = sum(len(v) for v in open_.values())
    return out, {"": left}


class Def:
    def __init__(self, name, begin, end=None, parent=None, caps=None, end_caps=None):
        self.name, self.begin, self.parent = name, begin, parent
        # Without an end condition the begin condition ends the period,
        # `$begin` being the event that began it.
        self.end = end if end else (lambda e, b, p: begin(e, p))
        self.caps = caps or (lambda e: {})
        self.end_caps = end_caps or (lambda e, b: {})
        self.children = []


def periods(evs, defs, group_by=()):
    for d in defs:
        if d.parent:
            d.parent.children.append(d)
    roots = [d for d in defs if d.parent is None]
    out, unfinished = [], {}

    def drop(p):
        unfinished[p["def"].name] = unfinished.get(p["def"].name, 0) + 1
        for c in p["kids"]:
            drop(c)

    def end_pass(opens, parent_begin, e):
        for p in list(opens):
            end_pass(p["kids"], p["evt"], e)
        for p in list(opens):
            d = p["def"]
            if d.end(e, p["evt"], parent_begin):
                caps = dict(p["caps"])
                caps.update(d.end_caps(e, p["evt"]))
                group = ", ".join("%s = %s" % (k, caps[k]) for k in sorted(group_by) if k in caps)
                out.append((d.name, p["evt"]["ts"], e["ts"], group))
                opens.remove(p)
                for c in p["kids"]:
                    drop(c)

    def begin_pass(opens, defs_here, parent_begin, e):
        for d in defs_here:
            if d.begin(e, parent_begin):
                opens.append({"def": d, "evt": e, "caps": d.caps(e), "kids": []})
        for p in opens:
            if p["def"].children:
                begin_pass(p["kids"], p["def"].children, p["evt"], e)

    opens = []
    for e in evs:
        end_pass(opens, None, e)
        begin_pass(opens, roots, None, e)
    for p in opens:
        drop(p)
    return out, unfinished


def summary(intervals):
    groups = {}
    for name, b, e, g in intervals:
        groups.setdefault((name, ""), []).append(e - b)
        if g:
            groups.setdefault((name, g), []).append(e - b)
    rows = []
    for (name, g), d in sorted(groups.items()):
        rows.append({
            "name": name, "group": g, "count": len(d), "min_ns": min(d),
            "max_ns": max(d), "total_ns": sum(d), "avg_ns": sum(d) / len(d),
            "stdev_ns": statistics.stdev(d) if len(d) > 1 else None,
        })
    return rows


MOD = (1 << 61) - 1


def log_hash(log):
    """A polynomial hash of the sorted log, so that the committed file stays
    small: every begin, end, name and group byte, in order."""
    h = 0
    for name, b, e, g in log:
        for x in [b, e] + list((name + "\0" + g + "\0").encode()):
            h = (h * 1000003 + (x % MOD)) % MOD
    return h


def case(args, result):
    intervals, unfinished = result
    log = sorted([list(i) for i in intervals], key=lambda i: (i[1], i[2], i[0], i[3]))
    return {
        "args": args,
        "log": {"count": len(log), "head": log[:5], "tail": log[-5:], "hash": log_hash(log)},
        "stats": summary(intervals),
        "unfinished": {k: v for k, v in unfinished.items() if v},
    }


def kernel_cases():
    bug = btparse.events(os.path.join(KERNEL, "bug446190"))
    unev = btparse.events(os.path.join(KERNEL, "uneven-streams"))
    name = lambda n: (lambda e: e["name"] == n)  # noqa: E731
    out = {}

    res = activities(
        bug, name("irq_handler_entry"), name("irq_handler_exit"),
        lambda e: None if f(e, "irq") is None or f(e, "cpu_id") is None
        else "irq = %d, cpu_id = %d" % (f(e, "irq"), f(e, "cpu_id")))
    out["activities-irq"] = dict(case(
        ["activities", "--begin", '$evt.$name == "irq_handler_entry"',
         "--end", '$evt.$name == "irq_handler_exit"', "--key", "irq,cpu_id",
         "bug446190"], res))

    # No thread in these events' contexts: the key is the stream (one file).
    res = activities(unev, name("syscall_entry_ioctl"), name("syscall_exit_ioctl"),
                     lambda e: "stream = channel0_3")
    out["activities-ioctl-default-key"] = case(
        ["activities", "--begin", '$name == "syscall_entry_ioctl"',
         "--end", '$name == "syscall_exit_ioctl"', "uneven-streams"], res)

    irq = Def("irq",
              lambda e, p: e["name"] == "irq_handler_entry",
              lambda e, b, p: e["name"] == "irq_handler_exit" and eq(f(e, "irq"), f(b, "irq"))
              and eq(f(e, "cpu_id"), f(b, "cpu_id")),
              caps=lambda e: {"irq": f(e, "irq")})
    out["periods-irq-group"] = case(
        ["periods", "--period",
         'irq : $evt.$name == "irq_handler_entry" : $evt.$name == "irq_handler_exit" '
         '&& $evt.irq == $begin.$evt.irq && $evt.cpu_id == $begin.$evt.cpu_id',
         "--period-captures", "irq : irq = $evt.irq", "--group-by", "irq", "bug446190"],
        periods(bug, [irq], ["irq"]))

    sw = Def("sw",
             lambda e, p: e["name"] == "sched_switch",
             lambda e, b, p: e["name"] == "sched_switch" and eq(f(e, "cpu_id"), f(b, "cpu_id")),
             caps=lambda e: {"comm": f(e, "next_comm")})
    inner = Def("irqin",
                lambda e, p: e["name"] == "irq_handler_entry" and eq(f(e, "cpu_id"), f(p, "cpu_id")),
                lambda e, b, p: e["name"] == "irq_handler_exit" and eq(f(e, "cpu_id"), f(b, "cpu_id"))
                and eq(f(e, "cpu_id"), f(p, "cpu_id")),
                parent=sw)
    out["periods-nested"] = case(
        ["periods",
         "--period", 'sw : $evt.$name == "sched_switch" : $evt.$name == "sched_switch" && $evt.cpu_id == $begin.$evt.cpu_id',
         "--period", 'irqin(sw) : $evt.$name == "irq_handler_entry" && $evt.cpu_id == $parent.$begin.$evt.cpu_id : '
                     '$evt.$name == "irq_handler_exit" && $evt.cpu_id == $begin.$evt.cpu_id && '
                     '$evt.cpu_id == $parent.$begin.$evt.cpu_id',
         "--period-captures", "sw : comm = $evt.next_comm", "--group-by", "comm", "bug446190"],
        periods(bug, [sw, inner], ["comm"]))

    tick = Def("tick", lambda e, p: e["name"] == "timer_hrtimer_start")
    out["periods-no-end"] = case(
        ["periods", "--period", 'tick : $evt.$name == "timer_hrtimer_start"', "uneven-streams"],
        periods(unev, [tick]))

    sysc = Def("sys",
               lambda e, p: glob(e["name"], "syscall_entry_"),
               lambda e, b, p: glob(e["name"], "syscall_exit_") and e["name"][13:] == b["name"][14:])
    out["periods-glob"] = case(
        ["periods", "--period",
         'sys : $evt.$name == "syscall_entry_*" : $evt.$name =* "syscall_exit_*" && '
         '$evt.$name != "syscall_exit_ioctl" && $evt.$name != "syscall_exit_poll" || '
         '$evt.$name == "syscall_exit_ioctl" && $begin.$evt.$name == "syscall_entry_ioctl" || '
         '$evt.$name == "syscall_exit_poll" && $begin.$evt.$name == "syscall_entry_poll"',
         "uneven-streams"],
        periods(unev, [Def(
            "sys",
            lambda e, p: glob(e["name"], "syscall_entry_"),
            lambda e, b, p: glob(e["name"], "syscall_exit_") and (
                e["name"] not in ("syscall_exit_ioctl", "syscall_exit_poll")
                or (e["name"] == "syscall_exit_ioctl" and b["name"] == "syscall_entry_ioctl")
                or (e["name"] == "syscall_exit_poll" and b["name"] == "syscall_entry_poll")))]))
    del sysc
    return out


def pattern_cases(trace):
    evs = btparse.events(trace)
    name = lambda n: (lambda e: e["name"] == n)  # noqa: E731
    out = {}
    out["activities-sections"] = case(
        ["activities", "--begin", '$name == "p:ENTER"', "--end", '$name == "p:LEAVE"'],
        activities(evs, name("p:ENTER"), name("p:LEAVE"), lambda e: "tid = %d" % f(e, "tid")))
    out["activities-mutex"] = case(
        ["activities", "--begin", '$name == "p:LOCK"', "--end", '$name == "p:UNLOCK"',
         "--key", "mutex"],
        activities(evs, name("p:LOCK"), name("p:UNLOCK"), lambda e: "mutex = %d" % f(e, "mutex")))
    sect = Def("sect",
               lambda e, p: e["name"] == "p:ENTER" and f(e, "depth") == 0,
               lambda e, b, p: e["name"] == "p:LEAVE" and f(e, "depth") == 0
               and eq(f(e, "thread"), f(b, "thread")))
    sub = Def("sub",
              lambda e, p: e["name"] == "p:ENTER" and (f(e, "depth") or 0) > 0
              and eq(f(e, "thread"), f(p, "thread")),
              lambda e, b, p: e["name"] == "p:LEAVE" and eq(f(e, "thread"), f(b, "thread"))
              and eq(f(e, "depth"), f(b, "depth")),
              parent=sect, end_caps=lambda e, b: {"d": f(b, "depth")})
    out["periods-nested"] = case(
        ["periods",
         "--period", 'sect : $name == "p:ENTER" && depth == 0 : $name == "p:LEAVE" && depth == 0 && thread == $begin.$evt.thread',
         "--period", 'sub(sect) : $name == "p:ENTER" && depth > 0 && thread == $parent.$begin.$evt.thread : '
                     '$name == "p:LEAVE" && thread == $begin.$evt.thread && depth == $begin.$evt.depth',
         "--period-captures", "sub : : d = $begin.$evt.depth", "--group-by", "d"],
        periods(evs, [sect, sub], ["d"]))
    rnd = Def("round", lambda e, p: e["name"] == "p:ROUND" and f(e, "thread") == 0)
    out["periods-rounds"] = case(
        ["periods", "--period", 'round : $name == "p:ROUND" && thread == 0'],
        periods(evs, [rnd]))
    lab = Def("lab",
              lambda e, p: e["name"] == "p:LABEL" and glob(f(e, "label"), "od"),
              lambda e, b, p: e["name"] == "p:ROUND" and eq(f(e, "tid"), f(b, "tid")))
    out["periods-strings"] = case(
        ["periods", "--period", 'lab : $name == "p:LABEL" && label == "od*" : $name == "p:ROUND" && $evt.tid == $begin.$evt.tid'],
        periods(evs, [lab]))
    return out


if __name__ == "__main__":
    if sys.argv[1] == "kernel":
        res = kernel_cases()
    else:
        res = pattern_cases(sys.argv[2])
    json.dump(res, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
