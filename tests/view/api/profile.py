"""`/api/profile` (the flame chart's call tree) equals `reef profile
--folded` with the same `--begin`/`--end` (and, for one row, the lines of
that row's thread in `reef profile --per-thread --folded`), on traces
recorded here by tests/view/profile/record.sh: a libreef trace sampled at
1 kHz (tests/profile/tenfunc.c's ten functions on the main thread, a
second thread in side_burn()) and a -finstrument-functions one
(tests/profile/calls.c), and an LTTng-UST trace of calls.c under
liblttng-ust-cyg-profile.so (record-lttng.sh). Independent checks beside: the samples counted
equal babeltrace2's `reef:sample` events in the window (per thread by
their `tid` context); the ten functions' shares are those tenfunc.c burns
(RMS error within 3 points); side_burn is the second thread's only
function; calls.c's call tree has the paths its source implies, each
function's self time at least its calls x 0.9 ms. Bad parameters are
400s.

Usage: python3 profile.py REEF_BINARY
One line per check: "ok ..." or "FAIL ..."; exit status 1 when one failed.
"""

import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, Report, Server, reef_binary  # noqa: E402

# tests/profile/tenfunc.c: each function's share of the main thread's CPU.
SHARES = {"f50": 50, "f20": 20, "f15": 15, "f5a": 5, "f5b": 5, "f1a": 1, "f1b": 1, "f1c": 1, "f1d": 1, "f1e": 1}


def folded_of_tree(root):
    """The tree's stacks that end somewhere (self > 0), as folded lines."""
    out = {}

    def walk(n, path):
        if n["self"] > 0 and path:
            out[";".join(path)] = out.get(";".join(path), 0) + n["self"]
        for c in n["children"]:
            walk(c, path + [c["name"]])
        if sum(c["total"] for c in n["children"]) + n["self"] != n["total"]:
            raise AssertionError("%s: total %d != self %d + children" % (";".join(path), n["total"], n["self"]))

    walk(root, [])
    return out


def read_folded(text):
    out = {}
    for line in text.splitlines():
        if line.strip():
            stack, n = line.rsplit(" ", 1)
            out[stack] = out.get(stack, 0) + int(n)
    return out


def sec(ns):
    return "%d.%09d" % (ns // 1_000_000_000, ns % 1_000_000_000)


def cli_folded(reef, trace, begin=None, end=None, per_thread=False):
    args = [reef, "profile", "--folded"] + (["--per-thread"] if per_thread else [])
    if begin is not None:
        args += ["--begin=" + sec(begin), "--end=" + sec(end)]
    p = subprocess.run(args + [trace], capture_output=True, text=True, env=dict(os.environ, TZ="UTC"))
    if p.returncode != 0:
        raise RuntimeError("reef profile: %s" % p.stderr)
    return read_folded(p.stdout)


def bt2_samples(trace):
    """(ns from the clock's origin, tid) of every reef:sample, and the first event's ns, from babeltrace2."""
    out = subprocess.run(["babeltrace2", "--clock-seconds", trace], capture_output=True, text=True, check=True).stdout
    first, samples = None, []
    for line in out.splitlines():
        m = re.match(r"\[(\d+)\.(\d{9})\] \S+ \S+ (\S+): \{ tid = (\d+)", line)
        if not m:
            continue
        ns = int(m.group(1)) * 1_000_000_000 + int(m.group(2))
        if first is None:
            first = ns
        if m.group(3) == "reef:sample":
            samples.append((ns, int(m.group(4))))
    return first, samples


def diff(got, want):
    probs = []
    for k in sorted(set(got) | set(want)):
        if got.get(k) != want.get(k):
            probs.append("%s: view %s, reef profile %s" % (k, got.get(k), want.get(k)))
    return probs


def main():
    reef = reef_binary()
    rep = Report("profile: ")
    work = tempfile.mkdtemp(prefix="reef-view-profile-")
    subprocess.run(["bash", os.path.join(REPO, "tests/view/profile/record.sh"), work, "3"], check=True,
                   env=dict(os.environ, REEF_BIN=reef),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampled = os.path.join(work, "sampled")
    calls = os.path.join(work, "calls")

    # --- the sampled trace ---
    s = Server(reef, sampled)
    try:
        info = s.wait_state()
        origin = int(info["origin_ns"])
        end = info["end"]
        bt_first, bt = bt2_samples(sampled)
        rep.check("the origin is babeltrace2's first event", [] if bt_first == origin else ["%s != %s" % (origin, bt_first)])
        windows = [(0, end + 1), (end // 4, end * 3 // 5), (end // 2, end // 2 + end // 10)]
        for i, (f, t) in enumerate(windows):
            r = s.api("profile", **{"from": f, "to": t})
            if r.status != 200:
                rep.fail("window %d: status %d %s" % (i, r.status, r.body[:200]))
                continue
            a = r.json
            got = folded_of_tree(a["root"])
            want = cli_folded(reef, sampled, origin + f, origin + t - 1)
            rep.check("window %d [%d, %d): the tree's stacks are reef profile --folded --begin --end's" % (i, f, t),
                      diff(got, want), "%d stacks, %d samples" % (len(want), sum(want.values())))
            n_bt = sum(1 for ns, _ in bt if origin + f <= ns <= origin + t - 1)
            rep.check("window %d: samples = babeltrace2's reef:sample events in it" % i,
                      [] if a["total"] == n_bt == a["samples"] and a["measure"] == "samples" else
                      ["total %s, samples %s, measure %s, babeltrace2 %d" % (a["total"], a["samples"], a["measure"], n_bt)],
                      "%d" % n_bt)
        # Per row: the lines of that row's thread in --per-thread.
        rows = s.api("rows").json
        per = cli_folded(reef, sampled, per_thread=True)
        threads = {}
        for row in rows:
            ev = s.api("event", row=row["id"], **{"from": 0, "to": end + 1})
            m = re.search(r"\{ tid = (\d+)", ev.json.get("line", "")) if ev.status == 200 else None
            if not m:
                rep.fail("row %d: no event with a tid" % row["id"])
                continue
            tid = int(m.group(1))
            a = s.api("profile", row=row["id"], **{"from": 0, "to": end + 1}).json
            got = folded_of_tree(a["root"])
            want = {}
            for k, v in per.items():
                g, rest = k.split(";", 1)
                if g.endswith("-%d" % tid):
                    want[rest] = v
            rep.check("row %d (tid %d): reef profile --per-thread's lines of that thread" % (row["id"], tid),
                      diff(got, want), "%d samples" % sum(want.values()))
            n_bt = sum(1 for _, t in bt if t == tid)
            rep.check("row %d: its samples are babeltrace2's of tid %d" % (row["id"], tid),
                      [] if a["total"] == n_bt else ["%d != %d" % (a["total"], n_bt)], "%d" % n_bt)
            threads[tid] = (row["id"], got, a["total"])
        # Independent: the ten functions' shares on the main thread's row,
        # side_burn alone on the other.
        main_t = [v for v in threads.values() if any(k.endswith(";f50") for k in v[1])]
        side_t = [v for v in threads.values() if any(k.endswith("side_burn") for k in v[1])]
        if len(main_t) == 1 and len(side_t) == 1 and main_t[0][0] != side_t[0][0]:
            _, got, total = main_t[0]
            per_fn = {f: sum(v for k, v in got.items() if k.split(";")[-1] == f) for f in SHARES}
            n = sum(per_fn.values())
            rms = math.sqrt(sum((100.0 * per_fn[f] / n - SHARES[f]) ** 2 for f in SHARES) / len(SHARES)) if n else 99
            rep.check("main thread's row: tenfunc.c's shares (RMS error <= 3 points)",
                      [] if rms <= 3 and n >= 0.95 * total else ["RMS %.2f, %d of %d samples in the ten" % (rms, n, total)],
                      "RMS %.2f points over %d samples" % (rms, n))
            _, got, total = side_t[0]
            # The thread loops in side() calling side_burn(): a sample may
            # land in side() itself, never in the main thread's functions.
            leaves = [k.split(";")[-1] for k in got]
            burn = sum(v for k, v in got.items() if k.split(";")[-1] == "side_burn")
            only = all(f in ("side_burn", "side") for f in leaves) and burn >= 0.99 * total
            rep.check("second thread's row: side_burn (its caller side() at most 1 %)",
                      [] if only and total > 0 else [str(got)], "%d of %d samples in side_burn" % (burn, total))
        else:
            rep.fail("two rows, one with f50 and one with side_burn", [str({k: v[0] for k, v in threads.items()})])
        # Bad parameters.
        for q, why in [({"to": 10}, "no from"), ({"from": 10, "to": 10}, "empty range"), ({"from": 0, "to": 10, "row": "x"}, "row not a number"),
                       ({"from": 0, "to": 10, "row": 99}, "no such row"), ({"from": 0, "to": 10, "events": 2}, "events not 0/1"),
                       ({"from": -1, "to": 10}, "negative time")]:
            r = s.api("profile", **q)
            ok = r.status == 400 and r.is_json() and "error" in r.json
            rep.check("400 for %s" % why, [] if ok else ["status %d %r" % (r.status, r.body[:200])])
        rep.check("server alive, no panic", [] if s.alive() and "panic" not in s.stderr() else [s.stderr()[-500:]])
    finally:
        s.stop()

    # --- the function entry/exit trace ---
    s = Server(reef, calls)
    try:
        info = s.wait_state()
        origin, end = int(info["origin_ns"]), info["end"]
        for i, (f, t) in enumerate([(0, end + 1), (end // 3, end * 2 // 3)]):
            a = s.api("profile", **{"from": f, "to": t}).json
            got = folded_of_tree(a["root"])
            want = cli_folded(reef, calls, origin + f, origin + t - 1)
            rep.check("entry/exit window %d: self time per path is reef profile --folded's" % i, diff(got, want),
                      "%d paths, %d ns" % (len(want), sum(want.values())))
            if i == 0:
                paths = set()

                def walk(n, p):
                    for c in n["children"]:
                        paths.add(";".join(p + [c["name"]]))
                        walk(c, p + [c["name"]])
                walk(a["root"], [])
                want_paths = {"main", "main;a", "main;a;b", "main;a;c", "main;c"}
                calls_n = {"main": 1, "main;a": 2, "main;a;b": 6, "main;a;c": 2, "main;c": 1}
                probs = [] if paths == want_paths else ["paths %s" % sorted(paths)]
                probs += ["%s: self %d ns < %d x 0.9 ms" % (p, got.get(p, 0), c) for p, c in calls_n.items() if got.get(p, 0) < c * 900_000]
                rep.check("entry/exit: calls.c's call tree, self times >= calls x 0.9 ms", probs, a["measure"])
    finally:
        s.stop()
    # --- an LTTng-UST cyg-profile trace (liblttng-ust-cyg-profile.so) ---
    rc = subprocess.run(["bash", os.path.join(REPO, "tests/view/profile/record-lttng.sh"), work],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lt = os.path.join(work, "lt")
    if rc.returncode != 0:
        rep.fail("recording the LTTng-UST cyg-profile trace", [rc.stderr[-500:]])
    else:
        s = Server(reef, lt)
        try:
            info = s.wait_state()
            origin, end = int(info["origin_ns"]), info["end"]
            for i, (f, t) in enumerate([(0, end + 1), (end // 4, end * 3 // 4)]):
                a = s.api("profile", **{"from": f, "to": t}).json
                got = folded_of_tree(a["root"])
                want = cli_folded(reef, lt, origin + f, origin + t - 1)
                rep.check("LTTng cyg-profile window %d: self time per path is reef profile --folded's" % i, diff(got, want),
                          "%s, %d paths" % (a["measure"], len(want)))
            per = cli_folded(reef, lt, per_thread=True)
            rows = [r for r in s.api("rows").json if r.get("tid") is not None]
            for row in rows:
                a = s.api("profile", row=row["id"], **{"from": 0, "to": end + 1}).json
                want = {k.split(";", 1)[1]: v for k, v in per.items() if k.split(";", 1)[0].endswith("-%d" % row["tid"])}
                rep.check("LTTng row %d (vtid %d): reef profile --per-thread's lines of that thread" % (row["id"], row["tid"]),
                          diff(folded_of_tree(a["root"]), want), "%d paths" % len(want))
            rep.check("LTTng: rows with a vtid", [] if rows else ["no thread row"])
        finally:
            s.stop()
    subprocess.run(["rm", "-rf", work])
    print("profile: %d passed, %d failed" % (rep.passed, rep.failed))
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
