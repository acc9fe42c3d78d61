"""`/api/analysis` equals the commands of the same names: for the shared
kernel traces, over the whole trace and over parts of it, each analysis
asked of `reef view` gives the JSON `reef NAME --lami --begin B --end E`
prints (whose numbers tests/analyses compares with lttng-analyses'), with
the table classes of `reef NAME --metadata` beside them. Also:
a non-kernel trace and bad parameters are 400s with a JSON error.

Usage: python3 analyses.py REEF_BINARY
One line per check: "ok ..." or "FAIL ..."; exit status 1 when one failed.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import KERNEL_TRACES, Report, Server, ensure_demo_trace, reef_binary  # noqa: E402

# (query parameters beside the range, the command's options)
CASES = [
    ({"name": "cputop"}, ["cputop"]),
    ({"name": "cputop", "limit": 3}, ["cputop", "--limit", "3"]),
    ({"name": "cputop", "limit": 0}, ["cputop", "--limit", "0"]),
    ({"name": "memtop", "limit": 0}, ["memtop", "--limit", "unlimited"]),
    ({"name": "syscallstats"}, ["syscallstats"]),
    ({"name": "irqstats"}, ["irqstats"]),
    ({"name": "schedstats"}, ["schedstats"]),
    ({"name": "schedstats", "total": 1, "per_prio": 1}, ["schedstats", "--total", "--per-prio"]),
    ({"name": "iolatency"}, ["iolatency"]),
    ({"name": "memtop"}, ["memtop"]),
]


def cli(reef, trace, args, begin, end):
    p = subprocess.run([reef] + args + ["--lami", "--begin=%d" % begin, "--end=%d" % end, trace],
                       capture_output=True, text=True, env=dict(os.environ, TZ="UTC"))
    return json.loads(p.stdout) if p.stdout.strip() else {"exit": p.returncode, "stderr": p.stderr}


def main():
    reef = reef_binary()
    rep = Report("analysis: ")
    # Each analysis' table classes, from `reef NAME --metadata`.
    metadata = {}
    for _, args in CASES:
        p = subprocess.run([reef, args[0], "--metadata"], capture_output=True, text=True, check=True)
        metadata[args[0]] = json.loads(p.stdout)["table-classes"]
    # Result rows compared per case, over every trace: none would make the
    # case vacuous.
    total = {" ".join(args): 0 for _, args in CASES}
    for name in ("bug446190", "uneven-streams"):
        trace = os.path.join(KERNEL_TRACES, name)
        srv = Server(reef, trace)
        try:
            info = srv.wait_state()
            origin, end = int(info["origin_ns"]), info["end"]
            ranges = [(0, end + 1), (end // 4, end * 3 // 4), (end // 2, end // 2 + max(end // 50, 1))]
            for params, args in CASES:
                problems, compared = [], 0
                for a, b in ranges:
                    r = srv.api("analysis", **params, **{"from": a, "to": b})
                    if r.status != 200:
                        problems.append("[%d, %d): status %d %s" % (a, b, r.status, r.body[:300]))
                        continue
                    want = cli(reef, trace, args, origin + a, origin + b - 1)
                    classes = r.json.pop("table-classes", None)
                    if classes != metadata[args[0]]:
                        problems.append("[%d, %d): table classes %s, --metadata has %s" % (
                            a, b, json.dumps(classes)[:300], json.dumps(metadata[args[0]])[:300]))
                    if r.json != want:
                        problems.append("[%d, %d): %s\n  view: %s\n  cli:  %s" % (
                            a, b, " ".join(args), json.dumps(r.json)[:400], json.dumps(want)[:400]))
                    compared += sum(len(t.get("data", [])) for t in want.get("results", []))
                total[" ".join(args)] += compared
                rep.check("%s %s" % (name, " ".join(args)), problems, "%d result rows" % compared)
        finally:
            srv.stop()
    rep.check("every case compared result rows", ["%s: none" % k for k, n in total.items() if n == 0],
              "%d rows" % sum(total.values()))

    # errors
    bug = os.path.join(KERNEL_TRACES, "bug446190")
    srv = Server(reef, bug)
    try:
        srv.wait_state()
        problems = []
        for q in ({"name": "nosuch", "from": 0, "to": 10}, {"name": "cputop", "from": 5, "to": 5},
                  {"name": "cputop", "from": 0, "to": 10, "limit": -1}, {"from": 0, "to": 10},
                  {"name": "cputop", "from": -1, "to": 10}):
            r = srv.api("analysis", **q)
            if r.status != 400 or not (r.is_json() and "error" in r.json):
                problems.append("%s: status %d %s" % (q, r.status, r.body[:200]))
        rep.check("bad parameters are 400s", problems)
    finally:
        srv.stop()
    demo = ensure_demo_trace()
    srv = Server(reef, demo)
    try:
        srv.wait_state()
        r = srv.api("analysis", name="cputop", **{"from": 0, "to": 1000})
        rep.check("a libreef trace: 400, not a kernel trace",
                  [] if r.status == 400 and "kernel" in r.json.get("error", "") else
                  ["status %d %s" % (r.status, r.body[:200])])
    finally:
        srv.stop()
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
