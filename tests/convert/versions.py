#!/usr/bin/env python3
"""tests/convert/versions.py REEF WORK: `reef convert --ctf-version` between
CTF 1.8 and CTF 2, checked against babeltrace2's golden outputs (never
against reef's own output):

1. every CTF 1.8 trace of babeltrace-traces/succeed that has a golden
   (exit 0), written with `--ctf-version 2`: `reef print` on the output
   equals the golden of the original under each option set;
2. every CTF 2 trace of ctf2/traces/succeed and ctf2/traces/converted,
   written with `--ctf-version 1.8`: `reef print` AND the installed
   babeltrace2 (2.0.x reads only CTF 1.8: an independent reader of the
   TSDL written) print the CTF 2 golden, babeltrace2 with no warning;
   the traces in REFUSED must instead fail with a clear error;
3. the JSON written for (1) compared with babeltrace2 2.1.2's own
   conversion of the same trace (ctf2/traces/converted), key order
   normalised: same fragments kinds, same event record classes (name,
   attributes, specific context and payload field classes), same common
   context, same clock classes and environment. The packet header,
   packet context and event header are not compared field by field:
   babeltrace2's sink.ctf.fs writes packets of its own layout, reef keeps
   the input's packets (their roles are checked in (1) by reading);
4. round trip: (1)'s outputs written again with `--ctf-version 1.8`
   print the golden of the original, with reef and with babeltrace2.
"""
import json
import re
import os
import shutil
import subprocess
import sys

REEF, WORK = sys.argv[1], sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared", "conformance")
ENV = dict(os.environ, TZ="UTC", LC_ALL="C")
BT2 = shutil.which("babeltrace2")

# CTF 2 traces whose metadata CTF 1.8 cannot express (what and why).
REFUSED = {
    "succeed/fl-bm": "a bit map",
}

checks = 0
fails = 0


def fail(what, detail=""):
    global fails
    fails += 1
    print(f"FAIL: {what}\n{detail[:2000]}")


def run(args):
    p = subprocess.run(args, capture_output=True, env=ENV)
    return p.returncode, p.stdout, p.stderr


def rows(index):
    out = {}
    base = os.path.dirname(index)
    with open(index) as f:
        next(f)
        for line in f:
            trace, opts, code, _, golden = line.rstrip("\n").split("\t")
            out.setdefault(trace, []).append((opts.split(), int(code), os.path.join(os.path.dirname(base), golden) if golden.startswith("golden/") else os.path.join(base, golden)))
    return out


def first_diff(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return f"line {i + 1}:\n  want {x!r}\n  got  {y!r}"
    return f"lengths differ: want {len(al)} lines, got {len(bl)}"


def convert(src, dst, version):
    shutil.rmtree(dst, ignore_errors=True)
    return run([REEF, "convert", "--ctf-version", version, src, "-o", dst])


def bt2_warnings(trace, opts):
    """babeltrace2's messages on `trace`, its path replaced by TRACE
    (babeltrace2 prints it with `..` resolved by name, which differs from
    its real path when a directory on it is a symbolic link)."""
    _, _, err = run([BT2] + opts + [trace])
    text = err.decode("utf-8", "replace")
    for p in (os.path.realpath(trace), os.path.normpath(os.path.abspath(trace)), trace):
        text = text.replace(p, "TRACE")
    return text


def check_prints(label, out, golden_rows, with_bt2, ref=None):
    """`reef print` (and babeltrace2) on `out` equal each golden;
    babeltrace2 says nothing on `out` but what it says on `ref`, the CTF
    1.8 trace of the same events (the shared traces with discarded
    events make it warn)."""
    global checks
    for opts, code, golden in golden_rows:
        want = open(golden, "rb").read()
        readers = [("reef print", [REEF, "print"])]
        if with_bt2 and BT2:
            readers.append(("babeltrace2", [BT2]))
        for name, cmd in readers:
            checks += 1
            c, got, err = run(cmd + opts + [out])
            if c != 0 or got != want:
                fail(f"{label} {opts}: {name} (exit {c}) differs from the golden", first_diff(want.decode("utf-8", "replace"), got.decode("utf-8", "replace")) + "\n" + err.decode("utf-8", "replace"))
            elif name == "babeltrace2":
                want_err = bt2_warnings(ref, opts) if ref and os.path.isdir(ref) else ""
                got_err = bt2_warnings(out, opts)
                # What it says on the output, it says on the reference
                # (which may say more: warnings about its metadata's
                # unknown attributes, which reef does not write again);
                # and every discarded-events warning stays. A UUID that
                # babeltrace2's own conversion added is not compared.
                def lines(t):
                    t = re.sub(r"\((no UUID|UUID: [^)]*|no UID|UID: [^)]*)\)", "(UUID)", t)
                    return {re.sub(r"^\d\d-\d\d [\d:.]+ +\d+ +\d+ ", "", l) for l in t.splitlines() if l.strip()}
                gl, wl = lines(got_err), lines(want_err)
                if not gl <= wl or {l for l in wl if "discarded" in l} - gl:
                    fail(f"{label} {opts}: babeltrace2 says other things than on {ref}", f"want {want_err!r}\ngot  {got_err!r}")


def fragments(path):
    data = open(path, "rb").read()
    return [json.loads(f) for f in data.split(b"\x1e")[1:]]


LAYOUT = ("alignment", "minimum-alignment", "byte-order")
STRINGS = ("null-terminated-string", "static-length-string", "dynamic-length-string")


def norm(v):
    """A field class without its layout: babeltrace2's sink.ctf.fs lays
    its packets out anew (byte-aligned, its own byte order, every string
    null-terminated), reef keeps the input's layout."""
    if isinstance(v, list):
        return [norm(x) for x in v]
    if not isinstance(v, dict):
        return v
    if v.get("type") in STRINGS:
        return {"type": "string"}
    return {k: norm(x) for k, x in v.items() if k not in LAYOUT}


def attrs(v):
    """Event record class attributes, namespaces merged (babeltrace2 writes
    the log level under its own, reef under LTTng's)."""
    out = {}
    for ns in ("lttng.org,2009", "babeltrace.org,2020"):
        out.update((v or {}).get(ns, {}))
    return out or None


def compare_json(name, ours, theirs):
    """(3): our CTF 2 metadata against babeltrace2 2.1.2's conversion."""
    global checks
    a, b = fragments(ours), fragments(theirs)
    kinds = lambda fs: sorted({f["type"] for f in fs})
    checks += 1
    if kinds(a) != kinds(b):
        fail(f"{name}: fragment kinds {kinds(a)} vs babeltrace2's {kinds(b)}")

    def by(fs, t):
        return [f for f in fs if f["type"] == t]

    # Clock classes: frequency, offset, origin (babeltrace2 drops a zero
    # offset or precision as reef does).
    def clocks(fs):
        return sorted(
            (f["frequency"], json.dumps(f.get("offset-from-origin", {}), sort_keys=True), f.get("origin"), f.get("precision", 0))
            for f in by(fs, "clock-class")
        )

    checks += 1
    if clocks(a) != clocks(b):
        fail(f"{name}: clock classes differ", f"ours {clocks(a)}\nbt2  {clocks(b)}")
    checks += 1
    ea = (by(a, "trace-class") or [{}])[0].get("environment", {})
    eb = (by(b, "trace-class") or [{}])[0].get("environment", {})
    if ea != eb:
        fail(f"{name}: environment differs", f"ours {ea}\nbt2  {eb}")
    for sa, sb in zip(by(a, "data-stream-class"), by(b, "data-stream-class")):
        checks += 1
        k = "event-record-common-context-field-class"
        if norm(sa.get(k)) != norm(sb.get(k)):
            fail(f"{name}: common context differs", f"ours {json.dumps(sa.get(k), sort_keys=True)}\nbt2  {json.dumps(sb.get(k), sort_keys=True)}")

    def events(fs):
        return {(f.get("name"), f.get("id", 0)): f for f in by(fs, "event-record-class")}

    eva, evb = events(a), events(b)
    checks += 1
    # babeltrace2 writes only the event record classes of the events it
    # saw; reef writes every one.
    if not set(evb) <= set(eva):
        fail(f"{name}: event record classes {sorted(eva)} vs babeltrace2's {sorted(evb)}")
    for key in sorted(set(eva) & set(evb)):
        for k in ("payload-field-class", "specific-context-field-class", "attributes"):
            checks += 1
            x, y = eva[key].get(k), evb[key].get(k)
            x, y = (attrs(x), attrs(y)) if k == "attributes" else (norm(x), norm(y))
            if x != y:
                fail(f"{name}: event record class {key}: {k} differs", f"ours {json.dumps(x, sort_keys=True)}\nbt2  {json.dumps(y, sort_keys=True)}")


def main():
    bt2v = run([BT2, "--version"])[1].decode().splitlines()[0] if BT2 else "none"
    print(f"versions: babeltrace2 here: {bt2v}")
    g18 = rows(os.path.join(SHARED, "golden", "index.tsv"))
    g2 = rows(os.path.join(SHARED, "ctf2", "golden", "index.tsv"))
    os.makedirs(WORK, exist_ok=True)
    # (1), (3), (4)
    for trace in sorted(t for t in g18 if t.startswith("succeed/")):
        golden = [r for r in g18[trace] if r[1] == 0]
        if not golden:
            print(f"skip {trace}: babeltrace2 has no golden output (exit {g18[trace][0][1]})")
            continue
        src = os.path.join(SHARED, "babeltrace-traces", trace)
        name = os.path.basename(trace)
        out2 = os.path.join(WORK, "to2", name)
        c, _, err = convert(src, out2, "2")
        if c != 0:
            fail(f"{trace}: --ctf-version 2 exits {c}", err.decode("utf-8", "replace"))
            continue
        check_prints(f"{trace} as CTF 2", out2, golden, False)
        theirs = os.path.join(SHARED, "ctf2", "traces", "converted", name, "metadata")
        mine = [os.path.join(d, "metadata") for d, _, fs in os.walk(out2) if "metadata" in fs]
        if os.path.exists(theirs) and len(mine) == 1:
            compare_json(trace, mine[0], theirs)
        back = os.path.join(WORK, "back", name)
        c, _, err = convert(out2, back, "1.8")
        if c != 0:
            fail(f"{trace}: 1.8 -> 2 -> 1.8 exits {c}", err.decode("utf-8", "replace"))
            continue
        check_prints(f"{trace} 1.8 -> 2 -> 1.8", back, golden, True, src)
    # (2)
    for trace in sorted(t for t in g2 if t.startswith(("succeed/", "converted/"))):
        golden = [r for r in g2[trace] if r[1] == 0]
        src = os.path.join(SHARED, "ctf2", "traces", trace)
        out = os.path.join(WORK, "to18", trace)
        c, _, err = convert(src, out, "1.8")
        global checks
        if trace in REFUSED:
            checks += 1
            msg = err.decode("utf-8", "replace")
            if c == 0 or "cannot write" not in msg or REFUSED[trace] not in msg:
                fail(f"{trace}: expected a refusal naming {REFUSED[trace]!r}, got exit {c}", msg)
            else:
                print(f"refused as expected: {msg.strip()}")
            continue
        if c != 0:
            fail(f"{trace}: --ctf-version 1.8 exits {c}", err.decode("utf-8", "replace"))
            continue
        if not golden:
            print(f"skip {trace}: babeltrace2 2.1.2 has no golden output")
            continue
        ref = os.path.join(SHARED, "babeltrace-traces", "succeed", os.path.basename(trace))
        orig = g18.get("succeed/" + os.path.basename(trace), [])
        bt2_ok = all(r[1] == 0 for r in orig)
        if not bt2_ok:
            print(f"note {trace}: babeltrace2 {bt2v} fails on the CTF 1.8 original too (exit {orig[0][1]}): reef print only")
        check_prints(f"{trace} as CTF 1.8", out, golden, bt2_ok, ref)
    print(f"versions: {checks} checks, {fails} failures")
    sys.exit(1 if fails else 0)


main()
