"""`/api/activities` against an oracle computed from babeltrace2's text
(btmodel.py) and against `reef activities --log --json`; `/api/periods`
against lttng-analyses 0.6.1's own period statistics, frequencies and
longest periods (tests/periods/lttng-analyses/) and `reef periods --log`.

For definitions on the demo trace (a mutex held, its hand-offs from one
thread to the next, workers from BEGIN to END per thread) and on a kernel
trace (hard IRQs keyed by line and CPU, softirqs per stream): the
activities of the whole trace (times, groups, the rows of their begin and
end events), every activity's statistics, and for random windows the
activities overlapping it, their statistics and duration histogram, the
longest first, and `more`. The oracle pairs begin and end events as
docs/view-api.md says (last in, first out per key), from bt2's events.
Also: expression errors say which expression and where; bad parameters
are 400s.

Usage: python3 activities.py REEF_BINARY
"""

import concurrent.futures
import http.client
import json
import os
import random
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import btmodel  # noqa: E402
from common import KERNEL_TRACES, Report, Server, ensure_demo_trace, reef_binary, row_key  # noqa: E402


def name_is(n):
    return lambda e: e.name == n


# (label, begin expr, end expr, key expr or None, begin pred, end pred,
#  key function of an event (None: no key), group text of a key or None
#  when the oracle cannot know it)
def thread_key(e):
    for scope in (e.sec, e.ec):
        if scope:
            for f in ("vtid", "tid"):
                if scope.get(f) is not None:
                    return ("tid", scope[f])
    if isinstance(e.pkt, dict) and e.pkt.get("tid") is not None:
        return ("tid", e.pkt["tid"])
    return ("stream", e.stream if e.stream is not None else e.cpu)


def fields_key(*names):
    def k(e):
        vals = tuple(e.field(n) for n in names)
        return None if any(v is None for v in vals) else vals
    return k


def fields_group(*names):
    return lambda key: ", ".join("%s = %s" % (n, v) for n, v in zip(names, key))


DEMO = [
    ("mutex held", '$evt.$name == "lock:ACQUIRE"', '$evt.$name == "lock:RELEASE"', "mutex",
     name_is("lock:ACQUIRE"), name_is("lock:RELEASE"), fields_key("mutex"), fields_group("mutex")),
    ("mutex hand-off", '$evt.$name == "lock:RELEASE"', '$evt.$name == "lock:ACQUIRE"', "mutex",
     name_is("lock:RELEASE"), name_is("lock:ACQUIRE"), fields_key("mutex"), fields_group("mutex")),
    ("worker", '$evt.$name == "worker:BEGIN"', '$evt.$name == "worker:END"', None,
     name_is("worker:BEGIN"), name_is("worker:END"), thread_key, lambda k: "tid = %d" % k[1]),
]
KERNEL = [
    ("hard IRQ", '$evt.$name == "irq_handler_entry"', '$evt.$name == "irq_handler_exit"', "irq,cpu_id",
     name_is("irq_handler_entry"), name_is("irq_handler_exit"), fields_key("irq", "cpu_id"),
     fields_group("irq", "cpu_id")),
    # per stream (one per CPU here): the stream's file name is not in bt2's text
    ("softirq", '$evt.$name == "softirq_entry"', '$evt.$name == "softirq_exit"', None,
     name_is("softirq_entry"), name_is("softirq_exit"), thread_key, None),
]


def oracle(tr, begin, end, keyf):
    """Activities in the order they end: (begin t, end t, key, begin row key, end row key)."""
    open_ = {}
    out = []
    for e in tr.events:
        is_end, is_begin = end(e), begin(e)
        if not (is_end or is_begin):
            continue
        k = keyf(e)
        if k is None:
            continue
        if is_end and open_.get(k):
            b = open_[k].pop()
            out.append((b[0], e.t, k, b[1], e.row))
        if is_begin:
            open_.setdefault(k, []).append((e.t, e.row))
    unfinished = sum(len(v) for v in open_.values())
    return out, unfinished


def summary(durs):
    n = len(durs)
    if not n:
        return None
    avg = sum(durs) / n
    sd = None if n < 2 else ((n * sum(d * d for d in durs) - sum(durs) ** 2) / (n * (n - 1))) ** 0.5
    return {"count": n, "min_ns": min(durs), "max_ns": max(durs), "avg_ns": avg, "stdev_ns": sd, "total_ns": sum(durs)}


def freq(durs, bins):
    """lttng-analyses' frequency buckets (reef's --freq): equal widths from min to max, in µs."""
    lo, hi = min(durs) / 1000.0, max(durs) / 1000.0
    step = (hi - lo) / bins
    if step <= 0:
        return []
    counts = [0] * bins
    for d in durs:
        counts[min(int((d / 1000.0 - lo) / step), bins - 1)] += 1
    return [{"lower_us": i * step + lo, "upper_us": (i + 1) * step + lo, "count": c} for i, c in enumerate(counts)]


def close(a, b):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-9 * max(abs(b), 1.0)


def same_summary(got, want):
    if got is None or want is None:
        return got is want
    return all(got[k] == want[k] for k in ("count", "min_ns", "max_ns", "total_ns")) and \
        close(got["avg_ns"], want["avg_ns"]) and close(got["stdev_ns"], want["stdev_ns"])


def check_definition(rep, srv, tr, reef, path, rows_of, label, d, rnd):
    _, bexpr, eexpr, kexpr, bpred, epred, keyf, groupf = d
    found, unfinished = oracle(tr, bpred, epred, keyf)
    params = {"begin": bexpr, "end": eexpr, "from": 0, "to": tr.end + 1, "limit": 100000}
    if kexpr:
        params["key"] = kexpr
    r = srv.api("activities", **params)
    if r.status != 200:
        rep.fail("%s: whole trace" % label, ["status %d %s" % (r.status, r.body[:300])])
        return
    a = r.json
    want = sorted(found, key=lambda x: (x[0], x[1]))
    probs = []
    got = a["activities"]
    if len(got) != len(want):
        probs.append("%d activities, bt2 %d" % (len(got), len(want)))
    crossed = 0
    for g, w in zip(got, want):
        rows = [rows_of.get(w[3]), rows_of.get(w[4])]
        crossed += rows[0] != rows[1]
        exp = {"begin": w[0], "end": w[1], "duration": w[1] - w[0], "rows": rows}
        if groupf:
            exp["group"] = groupf(w[2])
        have = {k: g[k] for k in exp}
        if have != exp:
            probs.append("activity %s, bt2 %s" % (g, exp))
            if len(probs) > 5:
                break
    rep.check("%s: every activity of the trace (time, rows, group) is bt2's" % label, probs,
              "%d activities, %d across rows" % (len(want), crossed))
    durs = [w[1] - w[0] for w in want]
    total = a["totals"][0] if len(a["totals"]) == 1 and a["totals"][0]["name"] == "" else None
    rep.check("%s: every activity's statistics" % label,
              [] if same_summary(total, summary(durs)) and a["unfinished"] == unfinished else
              ["totals %s unfinished %s, bt2 %s %s" % (a["totals"], a["unfinished"], summary(durs), unfinished)])
    # `reef activities --log --json` over the same trace
    cmd = [reef, "activities", "--begin", bexpr, "--end", eexpr, "--log", "--json", path]
    if kexpr:
        cmd[2:2] = ["--key", kexpr]
    cli = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    origin = tr.origin
    cli_ivs = sorted(((iv["begin_ns"] - origin, iv["end_ns"] - origin, iv["group"]) for iv in cli["log"]),
                     key=lambda x: (x[0], x[1]))
    mine = [(g["begin"], g["end"], g["group"]) for g in got]
    rep.check("%s: the list is `reef activities --log`'s" % label,
              [] if mine == cli_ivs else ["%d vs %d; first difference %s" % (
                  len(mine), len(cli_ivs), next(((x, y) for x, y in zip(mine, cli_ivs) if x != y), None))])
    # random windows
    probs = []
    for _ in range(40):
        span = max(1, int(tr.end * rnd.choice([1.0, 0.1, 0.01, 0.001])))
        frm = rnd.randrange(0, max(1, tr.end - span + 1))
        to = frm + span
        pick = rnd.choice(want) if want else None
        edge = rnd.randrange(4)
        if pick and edge == 1:  # starting where an activity ends: it overlaps
            frm, to = pick[1], pick[1] + span
        elif pick and edge == 2:  # ending where one begins: it does not
            frm, to = max(0, pick[0] - span), max(pick[0], 1)
        elif pick and edge == 3:  # ending just after one begins: it does
            frm, to = max(0, pick[0] - span), pick[0] + 1
        over = [w for w in want if w[0] < to and w[1] >= frm]
        bins = rnd.choice([1, 5, 20])
        limit = rnd.choice([3, 50, 100000])
        p = dict(params, **{"from": frm, "to": to, "limit": limit, "bins": bins, "sort": "duration"})
        r = srv.api("activities", **p)
        if r.status != 200:
            probs.append("[%d, %d): status %d" % (frm, to, r.status))
            continue
        g = r.json
        od = [w[1] - w[0] for w in over]
        longest = sorted(over, key=lambda w: (-(w[1] - w[0]), w[0]))[:limit]
        exp_list = [(w[0], w[1]) for w in longest]
        got_list = [(x["begin"], x["end"]) for x in g["activities"]]
        hist = freq(od, bins) if od else None
        ok_hist = (hist is None and g["histogram"] is None) or (
            g["histogram"] is not None and len(g["histogram"]) == len(hist) and all(
                x["count"] == y["count"] and close(x["lower_us"], y["lower_us"]) and close(x["upper_us"], y["upper_us"])
                for x, y in zip(g["histogram"], hist)))
        if g["count"] != len(over) or not same_summary(g["range"], summary(od)) or not ok_hist \
                or got_list != exp_list or g["more"] != (len(over) > limit):
            probs.append("[%d, %d) limit %d bins %d: count %d (bt2 %d), range %s (bt2 %s), more %s, hist ok %s, list ok %s" % (
                frm, to, limit, bins, g["count"], len(over), g["range"], summary(od), g["more"], ok_hist, got_list == exp_list))
    rep.check("%s: 40 random windows: overlapping activities, statistics, histogram, longest first" % label, probs)


LTTNG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "periods", "lttng-analyses")


def check_periods(rep, srv, tr, reef, path, rows_of):
    """The IRQ periods of lttng-analyses' references, asked of /api/periods."""
    ref = {k: json.load(open(os.path.join(LTTNG, "irq.%s.json" % k))) for k in ("stats", "freq", "top")}
    assert ref["stats"]["trace"] == os.path.basename(path)
    definition = ref["stats"]["period"]
    base = {"periods": definition, "from": 0, "to": tr.end + 1}
    r = srv.api("periods", **dict(base, sort="duration", limit=len(ref["top"]["rows"]), bins=20))
    if r.status != 200:
        rep.fail("periods: status %d %s" % (r.status, r.body[:300]))
        return
    a = r.json
    # lttng-periodstats: name, count, min, avg, max, stdev, total (ns)
    name, count, mn, avg, mx, sd, tot = ref["stats"]["rows"][0]
    want = {"count": count, "min_ns": mn, "avg_ns": avg, "max_ns": mx, "stdev_ns": sd, "total_ns": tot}
    got = next((t for t in a["totals"] if t["name"] == name), None)
    rep.check("periods, irq: the statistics are lttng-periodstats'", [] if same_summary(got, want) else
              ["%s, lttng %s" % (got, want)], "%d periods" % count)
    # lttng-periodfreq: lower, upper (ns), count
    hist = a["histogram"] or []
    probs = [] if len(hist) == len(ref["freq"]["rows"]) else ["%d bins, lttng %d" % (len(hist), len(ref["freq"]["rows"]))]
    for g, (lo, hi, n) in zip(hist, ref["freq"]["rows"]):
        if g["count"] != n or not close(g["lower_us"] * 1000, lo) or not close(g["upper_us"] * 1000, hi):
            probs.append("%s, lttng [%s, %s) %d" % (g, lo, hi, n))
    rep.check("periods, irq: the histogram of the whole trace is lttng-periodfreq's", probs)
    # lttng-periodtop: begin, end (ns from the Epoch), duration, name, ...
    got = [(x["begin"], x["end"], x["duration"], x["name"]) for x in a["activities"]]
    want = [(b - tr.origin, e - tr.origin, d, n) for b, e, d, n, *_ in ref["top"]["rows"]]
    rep.check("periods, irq: the longest first are lttng-periodtop's", [] if got == want else ["%s\n lttng %s" % (got, want)])
    # every period: reef periods --log, and its rows: those of bt2's irq_handler_entry / _exit there
    r = srv.api("periods", **dict(base, limit=100000))
    cli = json.loads(subprocess.run([reef, "periods", "--period", definition, "--log", "--json", path],
                                    capture_output=True, text=True, check=True).stdout)
    want = sorted((iv["begin_ns"] - tr.origin, iv["end_ns"] - tr.origin) for iv in cli["log"])
    got = [(x["begin"], x["end"]) for x in r.json["activities"]]
    at = {}
    for e in tr.events:
        at.setdefault((e.name, e.t), []).append(e.row)
    probs = [] if got == want else ["%d periods, reef periods --log %d" % (len(got), len(want))]
    for x in r.json["activities"]:
        b = at.get(("irq_handler_entry", x["begin"]), [])
        e = at.get(("irq_handler_exit", x["end"]), [])
        if rows_of.get(b[0] if len(b) == 1 else None) != x["rows"][0] and len(b) == 1:
            probs.append("%s: begin row, bt2 %s" % (x, b))
        if rows_of.get(e[0] if len(e) == 1 else None) != x["rows"][1] and len(e) == 1:
            probs.append("%s: end row, bt2 %s" % (x, e))
    rep.check("periods, irq: every period is `reef periods --log`'s, on the rows of bt2's events", probs[:10],
              "%d periods" % len(got))
    # `name`: only the periods of that name
    probs = []
    for nm, n in (("irq", count), ("nosuch", 0)):
        r = srv.api("periods", **dict(base, name=nm, limit=0))
        if r.status != 200 or r.json["count"] != n:
            probs.append("name=%s: %d %s, want count %d" % (nm, r.status, r.body[:200], n))
    rep.check("periods: `name` keeps the periods of that name", probs)
    r = srv.api("periods", **dict(base, periods="irq : $evt.$name == "))
    rep.check("periods: an error names the definition and where", [] if r.status == 400 and r.json.get("expr") == "period"
              and r.json.get("text") == "irq : $evt.$name == " and r.json.get("position") == 20 else ["%d %s" % (r.status, r.body[:300])])


def main():
    reef = reef_binary()
    rep = Report("activities: ")
    rnd = random.Random(int(os.environ.get("REEF_VIEW_SEED", "1")))
    for path, defs in ((ensure_demo_trace(), DEMO), (os.path.join(KERNEL_TRACES, "bug446190"), KERNEL)):
        tr = btmodel.Trace(path)
        srv = Server(reef, path)
        try:
            srv.wait_state()
            rows = srv.api("rows").json
            rows_of = {row_key(r): r["id"] for r in rows}
            for d in defs:
                check_definition(rep, srv, tr, reef, path, rows_of, "%s, %s" % (os.path.basename(path), d[0]), d, rnd)
            # errors
            probs = []
            base = {"begin": DEMO[0][1], "end": DEMO[0][2], "from": 0, "to": 10}
            for q, expr, pos in (
                (dict(base, begin='$evt.$name == '), "begin", 13),
                (dict(base, end='$evt.$nme == "x"'), "end", 5),
                (dict(base, key="a + 1"), "key", 0),
            ):
                r = srv.api("activities", **q)
                if r.status != 400 or r.json.get("expr") != expr or r.json.get("position") is None:
                    probs.append("%s: %d %s" % (q, r.status, r.body[:200]))
                elif r.json["position"] < pos:
                    probs.append("%s: position %s" % (q, r.json["position"]))
            for q in ({"end": "1", "from": 0, "to": 10}, dict(base, to=0), dict(base, limit=100001),
                      dict(base, sort="size"), dict(base, bins=0)):
                r = srv.api("activities", **q)
                if r.status != 400 or not (r.is_json() and "error" in r.json):
                    probs.append("%s: %d %s" % (q, r.status, r.body[:200]))
            rep.check("%s: bad definitions and parameters are 400s (which expression, where)" % os.path.basename(path), probs)
            if defs is KERNEL:
                check_periods(rep, srv, tr, reef, path, rows_of)
            # many requests at once for a definition not asked before: one answer
            d = defs[0]
            q = {"begin": d[1] + " && 1 == 1", "end": d[2], "from": 0, "to": tr.end + 1, "limit": 5}
            if d[3]:
                q["key"] = d[3]
            url = "/api/activities?" + urllib.parse.urlencode(q)

            def one(_):
                c = http.client.HTTPConnection(srv.host, srv.port, timeout=120)
                c.request("GET", url)
                r = c.getresponse()
                return r.status, r.read()
            with concurrent.futures.ThreadPoolExecutor(32) as ex:
                got = list(ex.map(one, range(64)))
            statuses = sorted({st for st, _ in got})
            bodies = {b for _, b in got}
            rep.check("%s: 64 concurrent requests for a new definition: 200s, one answer" % os.path.basename(path),
                      [] if statuses == [200] and len(bodies) == 1 else ["statuses %s, %d different bodies" % (statuses, len(bodies))])
        finally:
            srv.stop()
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
