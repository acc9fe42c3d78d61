"""Conformance of `reef view`'s API (docs/view-api.md) against an oracle
computed from babeltrace2's text (btmodel.py).

Usage: python3 check.py REEF_BINARY
Environment: REEF_VIEW_SEED (default 1), REEF_VIEW_WINDOWS (default 200).

One line per check: "ok ..." or "FAIL ..." followed by details.
Exit status 1 when a check failed.
"""

import bisect
import fnmatch
import math
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import btmodel  # noqa: E402
from common import KERNEL_TRACES, Report, Server, ensure_demo_trace, reef_binary, row_key  # noqa: E402

SEED = int(os.environ.get("REEF_VIEW_SEED", "1"))
NWIN = int(os.environ.get("REEF_VIEW_WINDOWS", "200"))


def glob(pat):
    """The filter language's glob: `*` any run, `\\*` a star."""
    rx = "".join(".*" if c == "*" else re.escape(c) for c in pat)
    return re.compile("^" + rx + "$", re.S)


def name_glob(pat):
    g = glob(pat)
    return lambda e: bool(g.match(e.name))


def fld(name):
    return lambda e: e.field(name)


def expressions(tr):
    """(search expressions, filter expressions): (text, python predicate)."""
    if tr.kernel:
        # the thread ids' names: ftrace's `next_pid`, `prev_pid` (btmodel)
        nt, pt = ("next_pid", "prev_pid") if getattr(tr, "ftrace", False) else ("next_tid", "prev_tid")
        counts = {}
        for e in tr.events:
            if e.name == "sched_switch" and e.k.get("next_tid"):
                counts[e.k["next_tid"]] = counts.get(e.k["next_tid"], 0) + 1
        tid = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[min(2, len(counts) - 1)][0]
        cpus = sorted({e.cpu for e in tr.events})
        cpu = cpus[len(cpus) // 2]

        def sw(e, tid=tid):
            return e.name == "sched_switch" and e.field(nt) == tid

        # (a short ftrace recording may hold no hard IRQ on that CPU:
        # its softirqs count too)
        irqs = "*irq_*" if getattr(tr, "ftrace", False) else "irq_*"
        irq = name_glob(irqs)

        def irq_cpu(e, cpu=cpu):
            return irq(e) and e.field("cpu_id") == cpu

        sched = name_glob("sched_*")

        def sched_cpu(e, cpu=cpu):
            return sched(e) and e.field("cpu_id") == cpu

        swp = glob("swapper*")

        def swapper(e):
            p, n = e.field(pt), e.field("next_comm")
            return isinstance(p, int) and p > 0 and isinstance(n, str) and bool(swp.match(n))

        search = [
            ('$evt.$name == "sched_switch" && %s == %d' % (nt, tid), sw),
            ('$evt.$name == "%s" && $evt.cpu_id == %d' % (irqs, cpu), irq_cpu),
        ]
        filters = [
            ('$evt.$name == "sched_*" && $evt.cpu_id == %d' % cpu, sched_cpu),
            ('%s > 0 && next_comm == "swapper*"' % pt, swapper),
        ]
    else:
        lock = name_glob("lock:*")

        def end(e):
            return e.name == "worker:END"

        def lock2(e):
            return lock(e) and e.field("id") == 2

        def item3(e):
            v = e.field("value")
            return e.name == "worker:ITEM" and isinstance(v, int) and v % 3 == 1

        app = name_glob("app:*")

        def id1(e):
            return e.field("id") == 1 or app(e)

        search = [('$evt.$name == "worker:END"', end), ('$name =* "lock:*" && id == 2', lock2)]
        filters = [('$evt.$name == "worker:ITEM" && value % 3 == 1', item3),
                   ('id == 1 || $evt.$name == "app:*"', id1)]
    return search, filters


class Ctx:
    def __init__(self, rep, srv, tr, label):
        self.rep = rep
        self.srv = srv
        self.tr = tr
        self.label = label
        self.rows = None
        self.key_of = {}
        self.id_of = {}
        self.classes = []
        self.finest = 0
        self.source_probs = []  # /api/window's "source" (checked apart from the buckets)
        self.source_n = 0

    def name(self, s):
        return "%s: %s" % (self.label, s)


def fmt_b(b, classes):
    j, c, f, v, ch, on = b
    return [j, c, f, v, ch, on]


def compare_window(cx, frm, to, width, marks=None, filt=None, rows=None):
    """Problems of one /api/window answer against the oracle."""
    tr = cx.tr
    params = {"from": frm, "to": to, "width": width}
    if filt is not None:
        params["filter"] = filt
    if rows is not None:
        params["rows"] = ",".join(str(cx.id_of[k]) for k in rows)
    r = cx.srv.api("window", **params)
    q = "/api/window?" + "&".join("%s=%s" % kv for kv in params.items())
    if r.status != 200:
        return ["%s: status %d %r" % (q, r.status, r.body[:200])], None
    a = r.json
    finest = cx.finest
    if filt is not None:
        finest = max(finest, getattr(cx.srv, "filter_finest", {}).get(filt, 0))
    k, res = tr.choose_k(frm, to, width, finest)
    probs = []
    if a.get("k") != k or a.get("res") != res:
        probs.append("%s: k/res %s/%s, expected %d/%d" % (q, a.get("k"), a.get("res"), k, res))
        return probs, res
    want_source = "decoded" if res < finest else "index"
    cx.source_n += 1
    if a.get("source") != want_source:
        cx.source_probs.append("%s: source %r, expected %r (res %d, finest %d)" % (q, a.get("source"), want_source, res, finest))
    want = set(rows) if rows is not None else set(tr.rows)
    got_keys = set()
    for row in a.get("rows", []):
        key = cx.key_of.get(row.get("id"))
        if key is None:
            probs.append("%s: unknown row id %r" % (q, row.get("id")))
            continue
        got_keys.add(key)
        m = marks[key] if marks is not None else None
        _, _, exp = tr.window(frm, to, width, key, m, finest)
        got = []
        for b in row.get("b", []):
            b = list(b)
            if len(b) == 6 and isinstance(b[2], int):
                b[2] = cx.classes[b[2]] if 0 <= b[2] < len(cx.classes) else (None if b[2] == -1 else ("?%d" % b[2]))
            got.append(b)
        if got != exp:
            ej = {b[0]: b for b in exp}
            gj = {b[0]: b for b in got}
            diffs = []
            for j in sorted(set(ej) | set(gj)):
                if ej.get(j) != gj.get(j):
                    diffs.append("j=%d expected %s got %s" % (j, ej.get(j), gj.get(j)))
            probs.append("%s: row %s (id %d), res %d: %d bucket(s) differ: %s" % (
                q, key, row.get("id"), res, len(diffs), "; ".join(diffs[:4])))
    if got_keys != want:
        probs.append("%s: rows missing %s, extra %s" % (q, sorted(want - got_keys, key=str)[:5], sorted(got_keys - want, key=str)[:5]))
    return probs, res


def random_window(rnd, end, beyond=0.05):
    lo, hi = math.log(1000), math.log(max(end + 1, 2000))
    width = max(1, int(math.exp(rnd.uniform(lo, hi))))
    if rnd.random() < beyond:
        frm = rnd.randint(max(0, end - width // 2), end)
    else:
        frm = rnd.randint(0, max(0, end + 1 - width))
    return frm, frm + width, rnd.randint(50, 4000)


def check_info_rows(cx):
    rep, tr, srv = cx.rep, cx.tr, cx.srv
    info = srv.api("info").json
    cx.classes = info.get("classes", [])
    cx.finest = info.get("finest") or 0
    p = []
    if info.get("events") != len(tr.events):
        p.append("events %r, bt2 has %d lines" % (info.get("events"), len(tr.events)))
    if info.get("end") != tr.end:
        p.append("end %r, expected %d (last %d - first %d)" % (info.get("end"), tr.end, tr.events[-1].abs, tr.origin))
    if info.get("origin_ns") != str(tr.origin):
        p.append("origin_ns %r, expected %r" % (info.get("origin_ns"), str(tr.origin)))
    if info.get("kernel") is not tr.kernel:
        p.append("kernel %r, expected %r" % (info.get("kernel"), tr.kernel))
    names = {e.name for e in tr.events}
    missing = names - set(cx.classes)
    if missing:
        p.append("classes lack %s" % sorted(missing)[:10])
    groups = info.get("class_groups", [])
    if len(groups) != len(cx.classes):
        p.append("class_groups has %d entries for %d classes" % (len(groups), len(cx.classes)))
    else:
        bad = [(c, g) for c, g in zip(cx.classes, groups) if g != re.split(r"[_:]", c)[0]]
        if bad:
            p.append("class_groups wrong for %s" % bad[:5])
    if info.get("state") != "ready" or info.get("error") is not None:
        p.append("state %r error %r" % (info.get("state"), info.get("error")))
    if info.get("rows") != len(tr.rows):
        p.append("rows %r, expected %d" % (info.get("rows"), len(tr.rows)))
    rep.check(cx.name("info (events, end, origin, classes, groups, rows)"), p,
              "%d events, %d classes, finest %s" % (len(tr.events), len(cx.classes), info.get("finest")))

    r = srv.api("rows")
    rows = r.json
    cx.rows = rows
    p = []
    for row in rows:
        key = row_key(row)
        if key in cx.id_of:
            p.append("duplicate row %s" % (key,))
        cx.key_of[row["id"]] = key
        cx.id_of[key] = row["id"]
    got = set(cx.id_of)
    want = set(tr.rows)
    if got != want:
        miss = sorted(want - got, key=str)
        extra = sorted(got - want, key=str)
        p.append("rows missing (%d): %s" % (len(miss), miss[:15]))
        p.append("rows extra (%d): %s" % (len(extra), extra[:15]))
        for k in extra[:5]:
            if k[0] == "thread":
                srcs = sorted({e.name for e in tr.events if k[1] in (e.f.get("tid"), e.f.get("prev_tid"), e.f.get("next_tid"), e.f.get("child_tid"), e.f.get("parent_tid"))})
                p.append("  extra %s appears only in %s (not an event the doc lists)" % (k, srcs))
    ids = [row["id"] for row in rows]
    if sorted(ids) != list(range(len(ids))):
        p.append("row ids are not 0..n-1: %s" % ids[:20])
    badpid = []
    known = 0
    for row in rows:
        key = row_key(row)
        o = tr.rows.get(key)
        if o is None or key[0] != "thread" or o.pid is None or o.pid_conflict:
            continue
        known += 1
        if row.get("pid") != o.pid:
            badpid.append("%s pid %r, expected %r" % (key, row.get("pid"), o.pid))
    if badpid:
        p.append("%d thread pids differ: %s" % (len(badpid), badpid[:8]))
    rep.check(cx.name("rows = oracle's (kind, id) set; thread pids"), p,
              "%d rows, %d pids checked" % (len(rows), known))
    return info


def check_windows(cx, info, rnd, cover):
    rep, tr = cx.rep, cx.tr
    finest = info.get("finest") or 0
    coarse = fine = 0
    probs = []
    windows = [random_window(rnd, tr.end) for _ in range(NWIN)]
    # the whole trace and the finest resolution, always
    windows[0] = (0, tr.end + 1, 1000)
    windows[1] = (tr.end // 2, tr.end // 2 + 1000, 1000)
    for frm, to, w in windows:
        p, res = compare_window(cx, frm, to, w)
        if res is not None:
            if res >= finest:
                coarse += 1
            else:
                fine += 1
        probs.extend(p)
    # a subset of rows
    keys = sorted(tr.rows, key=str)
    for _ in range(5):
        sub = rnd.sample(keys, min(3, len(keys)))
        frm, to, w = random_window(rnd, tr.end)
        p, _ = compare_window(cx, frm, to, w, rows=sub)
        probs.extend(p)
    detail = "%d windows: %d from the index (res >= finest %d), %d decoded on demand" % (len(windows), coarse, finest, fine)
    rep.check(cx.name("window buckets = oracle (all rows)"), probs, detail)
    cover[0] += coarse
    cover[1] += fine


def check_events(cx):
    rep, tr, srv = cx.rep, cx.tr, cx.srv
    n = len(tr.events)

    def expect(params, start, count, label):
        r = srv.api("events", **params)
        if r.status != 200:
            return ["%s %s: status %d %r" % (label, params, r.status, r.body[:200])]
        a = r.json
        p = []
        s0 = max(0, min(start, n))
        idx = list(range(s0, min(n, s0 + count)))
        if a.get("total") != n:
            p.append("%s %s: total %r, expected %d" % (label, params, a.get("total"), n))
        if idx and a.get("before") != idx[0]:
            p.append("%s %s: before %r, expected %d" % (label, params, a.get("before"), idx[0]))
        evs = a.get("events", [])
        if len(evs) != len(idx):
            p.append("%s %s: %d events, expected %d" % (label, params, len(evs), len(idx)))
        for i, ev in zip(idx, evs):
            e = tr.events[i]
            es = tr.locate(i)[1]
            if ev.get("t") != e.t or ev.get("skip") != es or cx.key_of.get(ev.get("row")) != e.row or not btmodel.lines_equal(tr.lines[i], ev.get("line", "")):
                p.append("%s %s: event #%d: got t=%r skip=%r row=%r line %r; expected t=%d skip=%d row %s line %r" % (
                    label, params, i, ev.get("t"), ev.get("skip"), cx.key_of.get(ev.get("row")), ev.get("line"), e.t, es, e.row, tr.lines[i]))
                break
        return p

    probs = []
    probs += expect({"from": 0, "count": 200}, 0, 200, "start")
    mid = tr.times[n // 2]
    p0 = tr.pos(mid, 0)
    probs += expect({"from": mid, "count": 50}, p0, 50, "middle")
    probs += expect({"from": mid, "count": 30, "back": 1}, p0 - 30, 30, "back")
    probs += expect({"from": mid, "count": 1000, "back": 1}, max(0, p0 - 1000), min(1000, p0), "back 1000")
    probs += expect({"from": 0, "count": 1000, "skip": n - 10}, n - 10, 1000, "skip to the end")
    probs += expect({"from": tr.end, "count": 10}, tr.pos(tr.end, 0), 10, "last time")
    probs += expect({"from": 1, "count": 5}, tr.pos(1, 0), 5, "from 1")
    # several events at the same ns
    same = None
    for i in range(n // 3, n - 3):
        if tr.times[i] == tr.times[i + 2]:
            same = tr.times[i]
            break
    if same is None:
        for i in range(0, n - 2):
            if tr.times[i] == tr.times[i + 1]:
                same = tr.times[i]
                break
    detail = "no two events share a ns"
    if same is not None:
        ps = tr.pos(same, 0)
        probs += expect({"from": same, "count": 7, "skip": 1}, ps + 1, 7, "skip=1 at a shared ns")
        probs += expect({"from": same, "count": 7, "skip": 2}, ps + 2, 7, "skip=2 at a shared ns")
        probs += expect({"from": same, "count": 3, "skip": 2, "back": 1}, ps - 1, 3, "back from skip=2")
        detail = "shared ns at t=%d (%d events)" % (same, bisect.bisect_right(tr.times, same) - ps)
    # past the end
    r = srv.api("events", **{"from": tr.end + 1, "count": 10})
    if r.status != 200 or r.json.get("events") != [] or r.json.get("total") != n:
        probs.append("from end+1: %d %r" % (r.status, r.body[:200]))
    # the oracle's delta text reproduces bt2's (used for filtered lists)
    bad = [i for i in range(1, n) if btmodel.split_delta(tr.lines[i])[1] != btmodel.format_delta(tr.events[i].abs - tr.events[i - 1].abs)]
    if bad or (n and btmodel.split_delta(tr.lines[0])[1] != btmodel.format_delta(None)):
        probs.append("oracle: format_delta differs from bt2's delta at #%s" % (bad[:3] or [0]))
    rep.check(cx.name("events lines/t/skip/row/total/before = bt2"), probs, detail)


def check_event(cx, rnd):
    rep, tr, srv = cx.rep, cx.tr, cx.srv
    probs = []
    found = notfound = 0
    keys = sorted(tr.rows, key=str)
    marked = [k for k in keys if tr.rows[k].marks_t]
    for it in range(60):
        if it % 3 == 0 or not marked:
            key = rnd.choice(keys)
        else:
            key = rnd.choice(marked)
        res = 1 << rnd.randint(0, max(0, tr.end.bit_length() - 1))
        row = tr.rows[key]
        if row.marks_t and rnd.random() < 0.7:
            t = rnd.choice(row.marks_t)
            j = t // res
        else:
            j = rnd.randint(0, tr.end // res)
        frm, to = j * res, (j + 1) * res
        lo = bisect.bisect_left(row.marks_t, frm)
        exp = row.marks_i[lo] if lo < len(row.marks_t) and row.marks_t[lo] < to else None
        r = srv.api("event", row=cx.id_of[key], **{"from": frm, "to": to})
        q = "/api/event?row=%d&from=%d&to=%d (%s)" % (cx.id_of[key], frm, to, key)
        if exp is None:
            notfound += 1
            if r.status != 404:
                probs.append("%s: expected 404, got %d %r" % (q, r.status, r.body[:200]))
        else:
            found += 1
            e = tr.events[exp]
            if r.status != 200:
                probs.append("%s: expected event #%d, got %d %r" % (q, exp, r.status, r.body[:200]))
                continue
            a = r.json
            es = tr.locate(exp)[1]
            if a.get("t") != e.t or a.get("skip") != es or a.get("row") != cx.id_of[key] or not btmodel.lines_equal(tr.lines[exp], a.get("line", "")):
                probs.append("%s: got %r, expected t=%d skip=%d line %r" % (q, a, e.t, es, tr.lines[exp]))
    rep.check(cx.name("event (first mark of a row in a bucket; 404 when none)"), probs, "%d found, %d 404" % (found, notfound))


def list_locate(tr, lst, k):
    """(t, skip) of the k-th event of the list `lst` (event indices in
    print order): skip counts the list's events at the same time before it."""
    t = tr.times[lst[k]]
    return t, k - bisect.bisect_left(list_times(tr, lst), t)


_LT = {}


def list_times(tr, lst):
    """The times of a list's events (cached per list object)."""
    c = _LT.get(id(lst))
    if c is None or c[0] is not lst:
        c = _LT[id(lst)] = (lst, [tr.times[i] for i in lst])
    return c[1]


def search_cases(tr, lst, pred, rnd, npos):
    """Positions k in the list `lst` (some on matches, some not, the start,
    the end) with the expected forward and backward answers: forward = the
    first match at or after position k (inclusive), back = the last match
    strictly before it. Yields (k, F, S, forward, back) with list positions
    (None: no match)."""
    n = len(lst)
    mpos = [k for k in range(n) if pred(tr.events[lst[k]])]
    lt = list_times(tr, lst)
    ks = {0, n}
    if mpos:
        ks.add(mpos[0])
        ks.add(mpos[-1])
        ks.add(min(n, mpos[-1] + 1))
        for _ in range(npos // 2):
            ks.add(rnd.choice(mpos))  # positions on a match: inclusive vs exclusive
    for _ in range(npos // 2):
        ks.add(rnd.randrange(n + 1))
    out = []
    for k in sorted(ks):
        if k < n:
            F, S = list_locate(tr, lst, k)
        else:
            F, S = (lt[-1] + 1 if lt else 0), 0
        f = bisect.bisect_left(mpos, k)
        fwd = mpos[f] if f < len(mpos) else None
        back = mpos[f - 1] if f > 0 else None
        out.append((k, F, S, fwd, back))
    return out, mpos


def compare_found(cx, lst, params, a, exp_k, delta_from_list):
    """Problems of one /api/search answer `a` against the list position
    exp_k (None: {"found": false})."""
    tr = cx.tr
    if exp_k is None:
        return [] if a.get("found") is False else ["search %s: expected {\"found\": false}, got %r" % (params, a)]
    i = lst[exp_k]
    et, es = list_locate(tr, lst, exp_k)
    e = tr.events[i]
    line = tr.lines[i]
    got_line = a.get("line") or ""
    if delta_from_list:
        # a filtered list: compare modulo the delta (the list's own deltas are
        # checked by /api/events)
        line, got_line = btmodel.split_delta(line)[0], btmodel.split_delta(got_line)[0]
    if (a.get("t"), a.get("skip")) != (et, es) or cx.key_of.get(a.get("row")) != e.row or not btmodel.lines_equal(line, got_line):
        return ["search %s: got %r; expected event #%d t=%d skip=%d row %s line %r" % (params, a, i, et, es, e.row, tr.lines[i])]
    return []


def check_search(cx, search, rnd, filt=None):
    """/api/search over the whole list, or (filt = (id, list of kept event
    indices)) over a filter's list."""
    rep, tr, srv = cx.rep, cx.tr, cx.srv
    lst = filt[1] if filt else list(range(len(tr.events)))
    probs = []
    step_probs = []
    nchecks = nsteps = 0
    for text, pred in search:
        cases, mpos = search_cases(tr, lst, pred, rnd, 8 if filt else 12)
        if not mpos:
            probs.append("oracle: %r matches nothing%s" % (text, " in the filter" if filt else ""))
            continue
        for k, F, S, fwd, back in cases:
            for b in (0, 1):
                params = {"expr": text, "from": F, "skip": S}
                if b:
                    params["back"] = 1
                if filt:
                    params["filter"] = filt[0]
                r = srv.api("search", **params)
                nchecks += 1
                if r.status != 200:
                    probs.append("search %s: status %d %r" % (params, r.status, r.body[:200]))
                    continue
                probs += compare_found(cx, lst, params, r.json, back if b else fwd, bool(filt))
        # stepping: from a found (t, skip), the next match is asked from (t, skip + 1)
        t, skip = list_locate(tr, lst, mpos[0])
        for step in range(1, min(6, len(mpos) + 1)):
            params = {"expr": text, "from": t, "skip": skip + 1}
            if filt:
                params["filter"] = filt[0]
            r = srv.api("search", **params)
            nsteps += 1
            a = r.json if r.status == 200 else {"status": r.status}
            exp = mpos[step] if step < len(mpos) else None
            p = compare_found(cx, lst, params, a, exp, bool(filt))
            if p:
                step_probs.append("step %d of %r: %s" % (step, text, p[0]))
                break
            if exp is None:
                break
            t, skip = list_locate(tr, lst, exp)
    what = " in filter %s" % filt[0] if filt else ""
    if not filt:
        r = srv.api("search", expr='$evt.$name == "sched_*" &&', **{"from": 0, "skip": 0})
        if r.status != 400 or not r.is_json() or "position" not in r.json or "error" not in r.json:
            probs.append("invalid expression: expected 400 with position, got %d %r" % (r.status, r.body[:200]))
        elif r.json["position"] != len('$evt.$name == "sched_*" &&'):
            probs.append("invalid expression: position %r, expected %d (the end of the expression)" % (r.json["position"], len('$evt.$name == "sched_*" &&')))
    rep.check(cx.name("search%s: first match at or after (F, S), back=1 last one before = oracle scan" % what), probs,
              "%d queries, %s" % (nchecks, "; ".join(t for t, _ in search)))
    rep.check(cx.name("search%s: stepping from a match's (t, skip + 1) gives the following match" % what), step_probs,
              "%d steps" % nsteps)


def check_stats(cx, rnd):
    rep, tr, srv = cx.rep, cx.tr, cx.srv
    probs = []
    ranges = [(0, tr.end + 1), (0, tr.end), (tr.end // 3, 2 * tr.end // 3)]
    for _ in range(4):
        frm, to, _w = random_window(rnd, tr.end, 0)
        ranges.append((frm, to))
    same = [tr.times[i] for i in range(1, len(tr.times)) if tr.times[i] == tr.times[i - 1]]
    if same:
        ranges.append((same[0], same[0] + 1))
    for frm, to in ranges:
        total, names = tr.stats(frm, to)
        r = srv.api("stats", **{"from": frm, "to": to})
        if r.status != 200:
            probs.append("stats %d..%d: status %d %r" % (frm, to, r.status, r.body[:200]))
            continue
        a = r.json
        got_names = {x.get("name"): x.get("count") for x in a.get("event_names", [])}
        if a.get("events") != total:
            probs.append("stats [%d, %d): events %r, expected %d" % (frm, to, a.get("events"), total))
        if got_names != names:
            diff = {k: (got_names.get(k), names.get(k)) for k in set(got_names) | set(names) if got_names.get(k) != names.get(k)}
            probs.append("stats [%d, %d): per-name counts differ (got, expected): %s" % (frm, to, dict(list(diff.items())[:8])))
    rep.check(cx.name("stats totals and per-name counts over [F, T)"), probs, "%d ranges" % len(ranges))


def arrow_tuples(cx, a):
    return [(x.get("tid"), cx.key_of.get(x.get("from_row")), x.get("from_t"), cx.key_of.get(x.get("to_row")), x.get("to_t"))
            for x in a.get("arrows", [])]


def check_arrows(cx, rnd, big=False):
    """/api/arrows against the oracle: the arrows of [F, T) in switch-in
    order, the first W of them when there are more (`more`), none and
    `more: true` for a window of more than 200,000 marks."""
    rep, tr, srv = cx.rep, cx.tr, cx.srv
    wins = [(0, tr.end + 1), (tr.end // 4, tr.end // 2)]
    for _ in range(4):
        frm, to, _w = random_window(rnd, tr.end, 0)
        wins.append((frm, to))
    lim = btmodel.ARROW_MARKS_MAX
    mt = sorted(e.t for e in tr.events if e.row is not None)
    bound = []
    bound_probs = []
    if big:
        # well inside both sides of the bound: 150,000 and 250,000 marks
        for n in (150_000, 250_000):
            if len(mt) > n:
                wins.append((0, mt[n - 1] + 1))
        # at the bound: [F, T) holding exactly 200,000 and 200,001 marks
        if len(mt) > lim + 1 and mt[lim] > mt[lim - 1] and mt[lim + 1] > mt[lim]:
            bound = [(0, mt[lim - 1] + 1), (0, mt[lim] + 1)]
            n = len(mt)
            if mt[n - lim] > mt[n - lim - 1]:
                bound += [(mt[n - lim], tr.end + 1), (mt[n - lim - 1], tr.end + 1)]
        else:
            bound_probs.append("oracle: no clean 200,000-marks boundary in this trace (%d marks)" % len(mt))
    count = [0, 0]

    def ask(frm, to, probs):
        nm = tr.marks_in(frm, to)
        too_many = nm > lim
        exp = [] if too_many else tr.arrows(frm, to)
        for width in ((16384,) if too_many or len(exp) <= 16384 else ()) + ((5,) if len(exp) > 5 else ()):
            r = srv.api("arrows", width=width, **{"from": frm, "to": to})
            q = "/api/arrows?from=%d&to=%d&width=%d (%d marks in [F, T))" % (frm, to, width, nm)
            if r.status != 200:
                probs.append("%s: status %d %r" % (q, r.status, r.body[:200]))
                continue
            a = r.json
            got = arrow_tuples(cx, a)
            want = exp[:width]
            more = too_many or len(exp) > width
            count[0] += len(got)
            count[1] += width == 5
            if got != want or a.get("more") is not more:
                if sorted(got) == sorted(want) and a.get("more") is more:
                    probs.append("%s: the expected arrows, but not in switch-in order: first differing #%d" % (
                        q, next(k for k in range(len(got)) if got[k] != want[k])))
                    continue
                ge, ee = set(got), set(want)
                probs.append("%s: %d arrows (more=%r), expected %d (more=%s); missing %s; extra %s" % (
                    q, len(got), a.get("more"), len(want), more, [w for w in want if w not in ge][:3], [g for g in got if g not in ee][:3]))

    probs = []
    for frm, to in wins:
        ask(frm, to, probs)
    rep.check(cx.name("arrows = oracle (latest wakeup -> next switch-in; switch-in order; first W; none above 200,000 marks)"),
              probs, "%d windows, %d arrows compared, %d capped answers" % (len(wins), count[0], count[1]))
    if big:
        for frm, to in bound:
            ask(frm, to, bound_probs)
        rep.check(cx.name("arrows: the 200,000-marks bound is exact (200,000 marks in [F, T): arrows; 200,001: none)"),
                  bound_probs, "%d windows at the bound" % len(bound))


def make_filter(srv, expr, **extra):
    deadline = time.time() + 60
    while True:
        r = srv.api("filter", expr=expr, **extra)
        if r.status != 200:
            return None, r
        if r.json.get("state") == "ready":
            # The doc: with a filter, windows finer than the larger of its
            # `finest` and the base one are decoded.
            if not hasattr(srv, "filter_finest"):
                srv.filter_finest = {}
            srv.filter_finest[r.json.get("id")] = r.json.get("finest") or 0
            return r.json.get("id"), r
        if time.time() > deadline:
            return None, r
        time.sleep(0.05)


def check_filters(cx, filters, rnd):
    rep, tr, srv = cx.rep, cx.tr, cx.srv
    cases = [(text, pred, (), ()) for text, pred in filters]
    # hidden classes and rows, with an empty expression
    names = sorted({e.name for e in tr.events})
    hide_name = max(names, key=lambda nm: sum(1 for e in tr.events if e.name == nm))
    marked = sorted((k for k in tr.rows if tr.rows[k].marks_t), key=str)
    hide_rows = (marked[0],) if len(marked) > 1 else ()
    cases.append(("", lambda e: True, (hide_name,), hide_rows))
    delta_probs = []
    delta_n = [0, 0]
    searched = False
    for text, pred, hn, hr in cases:
        probs = []
        extra = {}
        if hn:
            extra["hide_classes"] = ",".join(str(i) for i, c in enumerate(cx.classes) if c in hn)
        if hr:
            extra["hide_rows"] = ",".join(str(cx.id_of[k]) for k in hr)
        fid, r = make_filter(srv, text, **extra)
        label = "filter %r%s" % (text, (" " + str(extra)) if extra else "")
        if fid is None:
            rep.fail(cx.name(label), ["no ready filter: %d %r" % (r.status, r.body[:300])])
            continue
        marks = tr.filtered_marks(pred, hn, hr)
        sel = sorted(i for v in marks.values() for i in v[1])
        sel_t = list_times(tr, sel)
        for it in range(25):
            frm, to, w = random_window(rnd, tr.end) if it else (0, tr.end + 1, 2000)
            p, _ = compare_window(cx, frm, to, w, marks=marks, filt=fid)
            probs.extend(p)
        # events: lines modulo the delta here; the deltas in a separate check
        for frm, skip, count, back in ((0, 0, 300, 0), (tr.times[len(tr.times) // 2], 0, 40, 0),
                                        (tr.times[len(tr.times) // 2], 0, 40, 1), (0, 5, 20, 0)):
            params = {"from": frm, "count": count, "filter": fid}
            if skip:
                params["skip"] = skip
            if back:
                params["back"] = 1
            r = srv.api("events", **params)
            k0 = bisect.bisect_left(sel_t, frm) + skip
            ks = list(range(max(0, k0 - count), min(k0, len(sel)))) if back else list(range(k0, min(len(sel), k0 + count)))
            if r.status != 200:
                probs.append("events %s: status %d %r" % (params, r.status, r.body[:200]))
                continue
            a = r.json
            if a.get("total") != len(sel):
                probs.append("events %s: total %r, expected %d" % (params, a.get("total"), len(sel)))
            if ks and a.get("before") != ks[0]:
                probs.append("events %s: before %r, expected %d" % (params, a.get("before"), ks[0]))
            evs = a.get("events", [])
            if len(evs) != len(ks):
                probs.append("events %s: %d events, expected %d" % (params, len(evs), len(ks)))
            for ev, k in zip(evs, ks):
                i = sel[k]
                es = list_locate(tr, sel, k)[1]
                gl, gd = btmodel.split_delta(ev.get("line") or "")
                el, _ = btmodel.split_delta(tr.lines[i])
                if ev.get("t") != tr.times[i] or ev.get("skip") != es or cx.key_of.get(ev.get("row")) != tr.events[i].row or not btmodel.lines_equal(el, gl):
                    probs.append("events %s: event #%d: got t=%r skip=%r %r; expected t=%d skip=%d %r" % (
                        params, i, ev.get("t"), ev.get("skip"), ev.get("line"), tr.times[i], es, tr.lines[i]))
                    break
                # the delta: from the previous event of the filtered list
                ed = btmodel.format_delta(tr.events[i].abs - tr.events[sel[k - 1]].abs if k > 0 else None)
                if gd != ed:
                    if len(delta_probs) < 3:
                        delta_probs.append("filter %r, events %s: event #%d (list position %d) delta (%s), expected (%s) (previous kept event %s); line %r" % (
                            text, params, i, k, gd, ed, ("#%d" % sel[k - 1]) if k else "none", ev.get("line")))
                    delta_n[0] += 1
                delta_n[1] += 1
        # /api/stats with the filter, over the whole trace and a random range
        for frm, to in ((0, tr.end + 1), random_window(rnd, tr.end, 0)[:2]):
            lo = bisect.bisect_left(sel_t, frm)
            hi = bisect.bisect_left(sel_t, to)
            names = {}
            for i in sel[lo:hi]:
                names[tr.events[i].name] = names.get(tr.events[i].name, 0) + 1
            r = srv.api("stats", filter=fid, **{"from": frm, "to": to})
            a = r.json if r.status == 200 else {}
            got = {x.get("name"): x.get("count") for x in a.get("event_names", [])}
            if r.status != 200 or a.get("events") != hi - lo or got != names:
                probs.append("stats [%d, %d) filter %s: status %d, events %r (expected %d), per-name differ: %s" % (
                    frm, to, fid, r.status, a.get("events"), hi - lo,
                    {k: (got.get(k), names.get(k)) for k in set(got) | set(names) if got.get(k) != names.get(k)}))
        # /api/event with the filter
        for key in marked[:4]:
            mt, mi = marks[key]
            frm, to = 0, tr.end + 1
            r = srv.api("event", row=cx.id_of[key], filter=fid, **{"from": frm, "to": to})
            if not mi:
                if r.status != 404:
                    probs.append("event row %s filter %s: expected 404, got %d" % (key, fid, r.status))
            else:
                es = list_locate(tr, sel, bisect.bisect_left(sel, mi[0]))[1]
                a = r.json if r.status == 200 else {}
                if (r.status != 200 or a.get("t") != tr.times[mi[0]] or a.get("skip") != es or a.get("row") != cx.id_of[key]
                        or not btmodel.lines_equal(btmodel.split_delta(tr.lines[mi[0]])[0], btmodel.split_delta(a.get("line") or "")[0])):
                    probs.append("event row %s filter %s: got %d %r, expected t=%d skip=%d %r" % (key, fid, r.status, r.body[:200], tr.times[mi[0]], es, tr.lines[mi[0]]))
        rep.check(cx.name(label), probs, "id %s, %d of %d events" % (fid, len(sel), len(tr.events)))
        # /api/search among the filter's events, for a class the filter keeps
        if not searched and text and len(sel) > 2:
            searched = True
            nm = tr.events[sel[len(sel) // 2]].name
            check_search(cx, [('$evt.$name == "%s"' % nm, lambda e, nm=nm: e.name == nm)], rnd, filt=(fid, sel))
    if delta_n[1]:
        rep.check(cx.name("filtered event lines: delta from the previous event of the filtered list (first: +?.?????????)"),
                  (["%d of %d filtered lines have another delta" % tuple(delta_n)] + delta_probs) if delta_n[0] else [],
                  "%d lines" % delta_n[1])
    # invalid expression
    r = srv.api("filter", expr="next_tid == (3")
    ok = r.status == 400 and r.is_json() and isinstance(r.json.get("position"), int) and "error" in r.json
    rep.check(cx.name("filter: invalid expression -> 400 with position"), [] if ok else ["got %d %r" % (r.status, r.body[:200])])


def check_source(cx):
    """/api/window's `source`: "decoded" for a window finer than `finest`,
    else "index" (every window asked through compare_window so far)."""
    p = cx.source_probs
    cx.rep.check(cx.name("window source = \"decoded\" iff res < finest (%d), else \"index\"" % cx.finest),
                 ["%d of %d answers" % (len(p), cx.source_n)] + p[:6] if p else [], "%d answers" % cx.source_n)


def run_trace(rep, reef, label, path, rnd, cover, serve=None):
    """`serve`: what reef view is started on, when it is not `path` (which
    babeltrace2 reads): a trace-cmd file, with its `reef convert` copy."""
    t0 = time.time()
    tr = btmodel.Trace(path)
    srv = Server(reef, serve or path)
    try:
        srv.wait_state(("ready",))
        cx = Ctx(rep, srv, tr, label)
        info = check_info_rows(cx)
        check_windows(cx, info, rnd, cover)
        check_events(cx)
        check_event(cx, rnd)
        search, filters = expressions(tr)
        check_search(cx, search, rnd)
        check_stats(cx, rnd)
        if tr.kernel:
            check_arrows(cx, rnd)
        check_filters(cx, filters, rnd)
        check_source(cx)
    finally:
        stop(rep, srv, label)
    # the same with the smallest index: most windows are then decoded on
    # demand, from checkpoints 16 KiB apart (the hidden --checkpoint-bytes),
    # which start each stream where the index pass stood, inside packets
    label2 = label + " --index-memory 0 --checkpoint-bytes 16384"
    srv = Server(reef, serve or path, args=("--index-memory", "0", "--checkpoint-bytes", "16384"))
    try:
        srv.wait_state(("ready",))
        cx = Ctx(rep, srv, tr, label2)
        info = check_info_rows(cx)
        check_windows(cx, info, rnd, cover)
        check_events(cx)
        check_event(cx, rnd)
        _, filters = expressions(tr)
        check_filters(cx, filters[:1], rnd)
        check_source(cx)
    finally:
        stop(rep, srv, label2)
    # Windows too full to decode are answered at `finest` (the doc's
    # bound, lowered here with the hidden --decode-marks so that these
    # small traces reach it).
    label3 = label + " --index-memory 0 --decode-marks 3000"
    srv = Server(reef, serve or path, args=("--index-memory", "0", "--decode-marks", "3000"))
    saved = tr.DECODE_MARKS
    tr.DECODE_MARKS = 3000
    try:
        srv.wait_state(("ready",))
        cx = Ctx(rep, srv, tr, label3)
        info = check_info_rows(cx)
        check_windows(cx, info, rnd, cover)
        check_source(cx)
        fin = info.get("finest") or 1
        # (a kernel trace too small to reach the bound is not asked to)
        raised = 0 if tr.kernel and len(tr.events) > 4 * tr.DECODE_MARKS else None
        for _ in range(200 if raised is not None else 0):
            frm = rnd.randrange(0, max(1, tr.end))
            to = frm + max(1, int(tr.end * rnd.random()))
            k, _ = tr.choose_k(frm, to, 2000, fin)
            raised += (1 << k) == fin and max(1, (to - frm) // 2000) < fin
        if raised is not None:
            rep.check(cx.name("some windows are too full to decode: answered at finest"),
                      [] if raised else ["no window reached the bound: the check above did not test it"],
                      "%d of 200 random wide windows would be" % raised)
    finally:
        tr.DECODE_MARKS = saved
        stop(rep, srv, label3)
    print("     (%s: %.1f s)" % (label, time.time() - t0), flush=True)


def run_big(rep, reef, rnd):
    """A synthetic kernel trace of more than 200,000 events (bench/view's
    generator, compiled here into a temporary directory): /api/arrows on
    windows on both sides of the 200,000-marks bound, with a light oracle."""
    import shutil
    import subprocess
    import tempfile
    from common import REPO
    label = "synthetic kernel (>200,000 events)"
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="reef-view-big-")
    try:
        gen = os.path.join(tmp, "gen-kernel")
        src = os.path.join(REPO, "bench", "view", "gen-kernel.c")
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            rep.fail("%s: no C compiler to build %s" % (label, src))
            return
        subprocess.run([cc, "-O2", "-o", gen, src, "-lm"], check=True, capture_output=True)
        path = os.path.join(tmp, "trace")
        subprocess.run([gen, path, "6M", "4", "100"], check=True, capture_output=True)
        tr = btmodel.LightKernelTrace(path)
        probs = []
        if tr.bad_lines or tr.bt2_rc != 0 or not tr.kernel:
            probs.append("oracle: %d unparsed lines, bt2 status %d, kernel %r" % (tr.bad_lines, tr.bt2_rc, tr.kernel))
        if any(e.f.get("next_tid", 0) is None or e.f.get("tid", 0) is None for e in tr.events):
            probs.append("oracle: a sched_switch or wakeup without its tid")
        srv = Server(reef, path)
        try:
            srv.wait_state(("ready",))
            info = srv.api("info").json
            if info.get("events") != len(tr.events) or info.get("end") != tr.end:
                probs.append("info: events %r end %r, expected %d and %d" % (info.get("events"), info.get("end"), len(tr.events), tr.end))
            rep.check("%s: info events/end = bt2" % label, probs, "%d events" % len(tr.events))
            cx = Ctx(rep, srv, tr, label)
            for row in srv.api("rows").json:
                cx.key_of[row["id"]] = row_key(row)
                cx.id_of[row_key(row)] = row["id"]
            check_arrows(cx, rnd, big=True)
        finally:
            stop(rep, srv, label)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("     (%s: %.1f s)" % (label, time.time() - t0), flush=True)


def stop(rep, srv, label):
    status = srv.stop()
    err = srv.stderr()
    if srv.died:
        rep.fail("%s: the server exited on its own (status %r)" % (label, status), err[-1500:].splitlines())
    elif "panicked" in err or "RUST_BACKTRACE" in err or status not in (0, -15, 143):
        rep.fail("%s: server exit status %r or a panic on stderr" % (label, status), err[-1500:].splitlines())


def main():
    reef = reef_binary()
    rep = Report("check: ")
    print("     (seed %d)" % SEED, flush=True)
    # `check.py --ftrace DAT CTF`: a trace-cmd file served, its `reef
    # convert` copy read by babeltrace2 (tests/kernel); that trace alone.
    ftrace = "--ftrace" in sys.argv
    if ftrace:
        i = sys.argv.index("--ftrace")
        dat, ctf = sys.argv[i + 1], sys.argv[i + 2]
        traces = [("ftrace " + os.path.basename(dat), ctf, dat)]
    else:
        traces = [("bug446190", os.path.join(KERNEL_TRACES, "bug446190"), None),
                  ("uneven-streams", os.path.join(KERNEL_TRACES, "uneven-streams"), None),
                  ("demo", ensure_demo_trace(), None)]
    for i, (label, path, serve) in enumerate(traces):
        rnd = random.Random(SEED * 1000 + i)
        cover = [0, 0]
        try:
            run_trace(rep, reef, label, path, rnd, cover, serve)
        except Exception as ex:  # a crash of the harness or of the server
            import traceback
            rep.fail("%s: aborted" % label, traceback.format_exc().splitlines()[-6:] + [repr(ex)])
        rep.check("%s: windows cover both the index and decoding on demand" % label,
                  [] if cover[0] and cover[1] else ["%d index-served, %d decoded on demand" % tuple(cover)],
                  "%d index-served, %d decoded on demand, both servers" % tuple(cover))
    try:
        if not ftrace:
            run_big(rep, reef, random.Random(SEED * 1000 + 99))
    except Exception as ex:
        import traceback
        rep.fail("synthetic kernel: aborted", traceback.format_exc().splitlines()[-6:] + [repr(ex)])
    print("     check: %d ok, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
