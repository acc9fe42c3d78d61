#!/usr/bin/env python3
"""reef convert --to ctf (cutting traces) checked against babeltrace2.

Usage: check.py REEF WORKDIR TRACE...

For each TRACE (a directory searched for CTF traces, as reef and
babeltrace2 do) that babeltrace2 reads with exit 0 and nothing on stderr:

- no window: `reef convert` copies every packet; babeltrace2 prints the
  same text on the copy as on the original, stderr empty, and the stream
  files are byte-identical;
- time windows (begin/end at event times, and between them, taken from
  babeltrace2's own timestamps): babeltrace2 on the output prints exactly
  what `babeltrace2 --begin B --end E` prints on the original (stdout), and
  nothing on stderr except the discarded-events warnings that its run on
  the original prints too;
- filters: babeltrace2 on the output prints exactly what
  `reef print --filter F` prints on the original (reef print's text is
  babeltrace2's, checked by the golden tests), stderr empty when the
  original's babeltrace2 run is;
- CTF 2 inputs (`--ctf-version 2`): reef reads the output back and prints
  what it prints on the original with the same window.

The expected text always comes from babeltrace2 (or, for filters, from
reef print, whose bytes the golden tests tie to babeltrace2); never from
the output of reef convert itself. Exit status 1 on any difference.
"""

import os
import re
import shutil
import subprocess
import sys

REEF, WORK = sys.argv[1], sys.argv[2]
TRACES = sys.argv[3:]
TS = re.compile(rb"^\[(\d+)\.(\d{9})\]")
fails = 0
checks = 0


def run(cmd, env=None):
    e = dict(os.environ)
    e["TZ"] = "UTC"
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, env=e, timeout=600)
    return p.returncode, p.stdout, p.stderr


def bt2(args):
    return run(["babeltrace2"] + args)


def fail(what, detail=b""):
    global fails
    fails += 1
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    print(f"FAIL: {what}\n{detail[:3000]}")


def first_diff(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return f"line {i + 1}:\n  expected: {x[:300]!r}\n  got:      {y[:300]!r}"
    return f"line counts: expected {len(al)}, got {len(bl)}"


def warnings_only(err):
    """babeltrace2's discarded-events / packets warnings, without their
    time ranges (which name the packets around the loss)."""
    out = []
    for line in err.splitlines():
        m = re.search(rb"(discarded \d+ events|lost \d+ packets|\d+ (?:events|packets))", line)
        if m:
            out.append(m.group(1))
    return out


STR = re.compile(rb'"(?:[^"\\]|\\.)*"')
DELTA = re.compile(rb"^(\[[^\]]*\]) \([^)]*\) ")
BT15 = {}


def bt15_lines(trace):
    """babeltrace 1.5's lines of `trace`, without the delta column."""
    if trace not in BT15:
        code, out, _ = run(["babeltrace", "--clock-seconds", trace])
        BT15[trace] = {DELTA.sub(rb"\1 ", l) for l in out.splitlines()} if code == 0 else set()
    return BT15[trace]


def same_modulo_stale(want, got, trace):
    """`want` and `got` (babeltrace2 2.0.4's text) are the same but for
    lines where string fields differ, each being a string that babeltrace
    1.5 prints as "" on the original: 2.0.4 prints the previous event's
    value of a field where the trace holds an empty string (see
    ../shared/conformance/README.md), and which event came before depends
    on what was cut."""
    if want == got:
        return True
    wl, gl = want.splitlines(), got.splitlines()
    if len(wl) != len(gl):
        return False
    ref = None
    for w, g in zip(wl, gl):
        if w == g:
            continue
        if STR.split(w) != STR.split(g):
            return False
        ws, gs = STR.findall(w), STR.findall(g)
        fixed = w
        for a, b in zip(ws, gs):
            if a != b:
                fixed = fixed.replace(a, b'""', 1) if fixed.count(a) == 1 else None
                if fixed is None:
                    return False
        ref = ref if ref is not None else bt15_lines(trace)
        if DELTA.sub(rb"\1 ", fixed) not in ref:
            return False
    return True


def convert(name, trace, args, version=None):
    out = os.path.join(WORK, name)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [REEF, "convert", trace, "-o", out] + args
    if version:
        cmd += ["--ctf-version", str(version)]
    code, _, err = run(cmd)
    if code != 0:
        fail(f"{name}: reef convert {' '.join(args)} exited {code}", err)
        return None
    return out


def times(text):
    ts = []
    for line in text.splitlines():
        m = TS.match(line)
        if m:
            ts.append(int(m.group(1)) * 10**9 + int(m.group(2)))
    return ts


def sec(ns):
    return f"{ns // 10**9}.{ns % 10**9:09d}"


def check_trace(trace, idx, ctf2):
    global checks
    base = f"t{idx}"
    code, orig, err = bt2(["--clock-seconds", trace]) if not ctf2 else run([REEF, "print", "--clock-seconds", trace])
    noise = [l for l in err.splitlines() if not l.startswith((b"WARNING: Tracer discarded", b"WARNING: Tracer lost"))]
    if code != 0 or (noise and not ctf2):
        print(f"skip {trace}: the reference reader exits {code} / says {err[:200]!r}")
        return
    reader = (lambda p, a=[]: run([REEF, "print", "--clock-seconds"] + a + [p])) if ctf2 else (
        lambda p, a=[]: bt2(["--clock-seconds"] + a + [p]))
    version = 2 if ctf2 else None
    # 1. No window: every packet copied.
    out = convert(base + "-all", trace, [], version)
    if out:
        checks += 1
        c, text, e = reader(out)
        if c != 0 or text != orig or (not ctf2 and warnings_only(e) != warnings_only(err)) or (not ctf2 and e and not err):
            fail(f"{trace}: no window: output differs", first_diff(orig, text) + "\n" + e.decode())
    ts = times(orig)
    if len(ts) < 3:
        print(f"note {trace}: {len(ts)} timed events, windows skipped")
        return
    n = len(ts)
    windows = [
        (ts[n // 3], ts[2 * n // 3]),
        (ts[n // 3] + 1, ts[2 * n // 3] - 1),
        (ts[0], ts[n // 2]),
        (ts[n // 2], ts[-1]),
        (ts[n // 5], ts[n // 5]),
    ]
    for k, (b, e) in enumerate(windows):
        if e < b:
            continue
        args = ["--begin", sec(b), "--end", sec(e)]
        code, want, werr = reader(trace, args)
        if code != 0:
            print(f"note {trace}: reference reader fails on window {args}")
            continue
        out = convert(f"{base}-w{k}", trace, args, version)
        if not out:
            continue
        checks += 1
        c, got, gerr = reader(out)
        if c != 0 or not same_modulo_stale(want, got, trace):
            fail(f"{trace}: window {args}: babeltrace2 on the output differs from babeltrace2 --begin/--end on the original",
                 first_diff(want, got) + "\n" + gerr.decode("utf-8", "replace"))
        elif not ctf2 and warnings_only(gerr) != warnings_only(werr):
            fail(f"{trace}: window {args}: warnings differ", b"expected:\n" + werr + b"\ngot:\n" + gerr)
        elif not ctf2 and gerr and not werr:
            fail(f"{trace}: window {args}: stderr not empty", gerr)
    # Filters: on event names (every other name) and on a field.
    names = sorted({m.group(1) for m in re.finditer(rb"\) (?:\S+ )?([A-Za-z_][\w:]*): ", orig)})
    filters = []
    if names:
        filters.append("$evt.$name == \"%s\"" % names[0].decode())
        filters.append(" || ".join("$evt.$name == \"%s\"" % x.decode() for x in names[::2]))
    filters.append("$evt.$timestamp % 3 != 0")
    for k, flt in enumerate(filters):
        code, want, werr = run([REEF, "print", "--clock-seconds", "--filter", flt, trace])
        if code != 0:
            print(f"note {trace}: reef print --filter {flt!r} exits {code}")
            continue
        out = convert(f"{base}-f{k}", trace, ["--filter", flt], version)
        if not out:
            continue
        checks += 1
        c, got, gerr = reader(out)
        if c != 0 or not same_modulo_stale(want, got, trace):
            fail(f"{trace}: filter {flt!r}: output differs from reef print --filter", first_diff(want, got) + "\n" + gerr.decode("utf-8", "replace"))
        elif not ctf2 and gerr and not err:
            fail(f"{trace}: filter {flt!r}: stderr not empty", gerr)


def check_damaged(damaged, intact, idx):
    """A damaged input: reef convert exits 1 naming the damage, after
    writing a valid trace that babeltrace2 reads with exit 0 and no
    warning, holding exactly the events `reef print` prints on the damaged
    input (the events before the damage: crates/reef-cli/tests/damaged.rs
    checks those against babeltrace2)."""
    global checks
    for k, args in enumerate([[], ["--filter", "$evt.$timestamp % 2 == 0"]]):
        out = os.path.join(WORK, f"d{idx}-{k}")
        shutil.rmtree(out, ignore_errors=True)
        code, _, err = run([REEF, "convert", damaged, "-o", out] + args)
        checks += 1
        if code != 1 or b"the file ends inside this packet" not in err:
            fail(f"{damaged}: reef convert {args} on a damaged trace: exit {code}, expected 1 and the damage named", err)
            continue
        c, want, _ = run([REEF, "print", "--clock-seconds"] + args + [damaged])
        g, got, gerr = bt2(["--clock-seconds", out])
        if g != 0 or gerr or not same_modulo_stale(want, got, intact):
            fail(f"{damaged}: {args}: babeltrace2 on the output (exit {g}) differs from reef print on the damaged input",
                 first_diff(want, got) + "\n" + gerr.decode("utf-8", "replace"))


def main():
    os.makedirs(WORK, exist_ok=True)
    for i, t in enumerate(TRACES):
        if t.startswith("damaged:"):
            _, d, intact = t.split(":", 2)
            check_damaged(d, intact, i)
            continue
        ctf2 = t.startswith("ctf2:")
        check_trace(t[5:] if ctf2 else t, i, ctf2)
    print(f"convert: {checks} checks, {fails} failures")
    sys.exit(1 if fails or checks == 0 else 0)


main()
