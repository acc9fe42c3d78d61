#!/usr/bin/env python3
"""Checks of tests/profile/run.sh on `reef profile` output.

    check.py shares FOLDED         the ten-function program: RMS error of the
                                   leaf functions' shares <= 0.5 points
    check.py pprof-shares TRACES   the same from `go tool pprof -traces`
                                   output (pprof's own decoding)
    check.py svg-shares SVG        the same from a flame graph's frame
                                   widths (the root frame is 100 %)
    check.py has FOLDED NAME...    every NAME is a frame of some stack
    check.py thread FOLDED NAME    NAME is sampled in a thread other than
                                   the one that ran `main`
    check.py tree TREE             the call tree calls.c implies
    check.py emitted FOLDED        `reef profile --events` of tests/lttng/app
                                   (4 iterations): each event under the
                                   function whose source emits it
"""
import math
import sys

EXPECTED = {"f50": 50, "f20": 20, "f15": 15, "f5a": 5, "f5b": 5,
            "f1a": 1, "f1b": 1, "f1c": 1, "f1d": 1, "f1e": 1}


def folded(path):
    out = []
    for line in open(path):
        stack, n = line.rstrip("\n").rsplit(" ", 1)
        out.append((stack.split(";"), int(n)))
    return out


def pprof_traces(path):
    """`go tool pprof -traces`: per sample a value and the frames, leaf
    first, between dashed lines; as (frames outermost first, value)."""
    out, frames, value = [], [], None
    for line in open(path):
        if line.startswith("-----------+"):
            if value is not None:
                out.append((frames[::-1], value))
            frames, value = [], None
            continue
        if value is None and line[:11].strip().isdigit():
            value = int(line[:11].strip())
            frames.append(line[11:].strip())
        elif value is not None and line.strip():
            frames.append(line.strip())
    if value is not None:
        out.append((frames[::-1], value))
    return out


def svg_frames(path):
    """(name, width) of every frame of a flame graph; the root is `all`."""
    import re
    import xml.etree.ElementTree as ET

    ns = {"s": "http://www.w3.org/2000/svg"}
    out = []
    for g in ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}g"):
        title = g.find("s:title", ns).text
        name = re.sub(r" \([0-9]+ [a-z]+, [0-9.]+%\)$", "", title)
        out.append((name, float(g.find("s:rect", ns).get("width"))))
    return out


def shares(path, stacks=None):
    per = {k: 0 for k in EXPECTED}
    total = 0
    for frames, n in (stacks if stacks is not None else folded(path)):
        total += n
        leaf = [f for f in frames if f in EXPECTED]
        if leaf:
            per[leaf[-1]] += n
    assert total > 0, "no samples"
    err = 0.0
    for k, want in EXPECTED.items():
        got = 100.0 * per[k] / total
        print(f"  {k}: {got:6.2f} % (expected {want})")
        err += (got - want) ** 2
    rms = math.sqrt(err / len(EXPECTED))
    print(f"  {total} samples, RMS error {rms:.3f} percentage points")
    assert rms <= 0.5, f"RMS error {rms:.3f} > 0.5"


def svg_shares(path):
    frames = svg_frames(path)
    root = [w for n, w in frames if n == "all"]
    assert len(root) == 1, "no single root frame"
    per = {k: 0.0 for k in EXPECTED}
    for n, w in frames:
        if n in per:
            per[n] += w
    err = 0.0
    for k, want in EXPECTED.items():
        got = 100.0 * per[k] / root[0]
        print(f"  {k}: {got:6.2f} % of the flame graph's width (expected {want})")
        err += (got - want) ** 2
    rms = math.sqrt(err / len(EXPECTED))
    print(f"  RMS error {rms:.3f} percentage points")
    assert rms <= 0.5, f"RMS error {rms:.3f} > 0.5"


def has(path, names):
    frames = {f for fs, _ in folded(path) for f in fs}
    for n in names:
        assert n in frames, f"{n} not in any stack of {path}"


def thread(path, name):
    stacks = folded(path)
    main_threads = {fs[0] for fs, _ in stacks if "main" in fs}
    others = {fs[0] for fs, _ in stacks if name in fs}
    assert others, f"{name} never sampled"
    assert others - main_threads, f"{name} only in the main thread: {others}"


def tree(path):
    rows = []
    for line in open(path):
        if line.strip().startswith("total") or line.startswith("#"):
            continue
        total, own, calls = line[:40].split()
        rest = line[40:].rstrip("\n")  # two spaces of indent per level
        name = rest.strip()
        indent = len(rest) - len(rest.lstrip(" "))
        rows.append((indent // 2, name, int(calls), int(total), int(own)))
    # Paths with call counts.
    stack, got = [], {}
    for depth, name, calls, total, own in rows:
        stack = stack[:depth] + [name]
        got[";".join(stack)] = (calls, total, own)
    want = {"main": 1, "main;a": 2, "main;a;b": 6, "main;a;c": 2, "main;c": 1}
    assert {k: v[0] for k, v in got.items()} == want, f"call tree {got} != {want}"
    for k, (calls, total, own) in got.items():
        kids = sum(v[1] for p, v in got.items() if p.startswith(k + ";") and p.count(";") == k.count(";") + 1)
        assert own <= total and abs(total - own - kids) <= 1000, f"{k}: total {total} self {own} children {kids}"
        assert own >= calls * 900000, f"{k}: self {own} ns < {calls} x 0.9 ms"
    print("  call tree:", {k: v[0] for k, v in got.items()})


def emitted(path):
    # From tests/lttng/app/reef_test_app.c: main emits empty (twice) and
    # special_floats; each of the 3 workers thread_start once and the six
    # others once per iteration.
    want = {("main", "reef_test:empty"): 2, ("main", "reef_test:special_floats"): 1,
            ("worker_main", "reef_test:thread_start"): 3}
    for e in ("integers", "hex_network", "floats", "strings", "arrays", "enums"):
        want[("worker_main", "reef_test:" + e)] = 3 * 4
    got = {}
    for frames, n in folded(path):
        outer = [f for f in frames[:-1] if f in ("main", "worker_main")]
        key = (outer[0] if outer else "|".join(frames[:-1]), frames[-1])
        got[key] = got.get(key, 0) + n
    assert got == want, f"{got} != {want}"
    print("  emitted:", got)


cmd = sys.argv[1]
if cmd == "shares":
    shares(sys.argv[2])
elif cmd == "pprof-shares":
    shares(sys.argv[2], pprof_traces(sys.argv[2]))
elif cmd == "svg-shares":
    svg_shares(sys.argv[2])
elif cmd == "has":
    has(sys.argv[2], sys.argv[3:])
elif cmd == "thread":
    thread(sys.argv[2], sys.argv[3])
elif cmd == "emitted":
    emitted(sys.argv[2])
elif cmd == "tree":
    tree(sys.argv[2])
