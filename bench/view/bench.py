#!/usr/bin/env python3
"""bench/view's measurements, driven by run.sh:

    bench.py REEF NAME=TRACE_DIR... [--json OUT]

For each trace, in one run: CHECK_RUNS (default 5) rounds of `reef check`
then `reef view --port 0` up to `state: ready` on /api/info (polled every
10 ms), interleaved so that both see the machine in the same state; the
median of each (a warm-up `reef check` first fills the page cache). The
last server stays up: the first answer of a whole-trace /api/window at
2000 px after ready; WINDOWS (default 1000) random windows
(widths log-uniform from the whole trace down to 1 us, positions uniform,
2000 px, all rows; fixed seed) requested one after the other on one
keep-alive connection; the browser's frame times while panning (browse.mjs
in headless Chromium); and last the server's peak RSS (VmHWM). Prints the
details per trace, then a markdown table of the figures and targets.
"""
import http.client
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOWS = int(os.environ.get("WINDOWS", "1000"))
CHECK_RUNS = int(os.environ.get("CHECK_RUNS", "5"))
READY_TIMEOUT = float(os.environ.get("READY_TIMEOUT", "900"))
WIDTH = 2000
SEED = 20240601
# Targets: index ready within this many times `reef check`'s wall time;
# peak RSS (mapped trace pages counted) at most this share of the trace.
READY_RATIO = 2
PEAK_SHARE = 3


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(d, f))
    return total


def pct(xs, p):
    """Nearest-rank percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def human_bytes(n):
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= f:
            return "%.2f %s" % (n / f, unit)
    return "%d B" % n


def human_ns(ns):
    if ns >= 1e9:
        return "%.3g s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.3g ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.3g us" % (ns / 1e3)
    return "%d ns" % ns


class Api:
    """Sequential GETs on one keep-alive HTTP/1.1 connection."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.prefix = u.path.rstrip("/")
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)

    def get(self, path, **params):
        q = urllib.parse.urlencode(params)
        target = "%s/api/%s%s" % (self.prefix, path, "?" + q if q else "")
        for attempt in (0, 1):
            try:
                t = time.perf_counter()
                self.conn.request("GET", target)
                r = self.conn.getresponse()
                body = r.read()
                dt = time.perf_counter() - t
                return r.status, body, dt
            except (http.client.HTTPException, ConnectionError):
                # the server closed the keep-alive connection: count it,
                # reconnect once
                self.reconnects = getattr(self, "reconnects", 0) + 1
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
                if attempt:
                    raise

    def json(self, path, **params):
        status, body, _ = self.get(path, **params)
        if status != 200:
            raise RuntimeError("/api/%s %s: %d %s" % (path, params, status, body[:200]))
        return json.loads(body)


def check_time(reef, trace, runs):
    times, out = [], ""
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run([reef, "check", trace], capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        if p.returncode:
            raise SystemExit("reef check %s failed:\n%s" % (trace, p.stderr))
        out = p.stdout
    m = re.search(r"events: (\d+)", out)
    return statistics.median(times), times, int(m.group(1)) if m else None


def start_view(reef, trace):
    t0 = time.perf_counter()
    err = open(os.environ.get("VIEW_STDERR", os.devnull), "ab")
    p = subprocess.Popen([reef, "view", "--port", "0", trace], stdout=subprocess.PIPE, stderr=err)
    line = p.stdout.readline().decode().strip()
    t_url = time.perf_counter() - t0
    if not line.startswith("http"):
        p.kill()
        raise SystemExit("reef view printed %r, not a URL" % line)
    return p, line, t0, t_url


def wait_ready(api, t0, proc):
    polls = 0
    first_info = None
    while True:
        info = api.json("info")
        polls += 1
        if first_info is None:
            first_info = time.perf_counter() - t0
        if info["state"] == "ready":
            return info, time.perf_counter() - t0, polls
        if info["state"] == "error":
            raise SystemExit("reef view: index error: %s" % info.get("error"))
        if proc.poll() is not None:
            raise SystemExit("reef view exited with %s while building" % proc.returncode)
        if time.perf_counter() - t0 > READY_TIMEOUT:
            raise SystemExit("reef view: not ready after %.0f s (progress %s)" % (READY_TIMEOUT, info.get("progress")))
        time.sleep(0.01)


SCREEN_ROWS = int(os.environ.get("SCREEN_ROWS", "40"))


def windows(api, end, finest, rows=None):
    rng = random.Random(SEED)
    span = end + 1
    lo, hi = math.log(1000), math.log(span)
    results = []
    t0 = time.perf_counter()
    for i in range(WINDOWS):
        if i and i % 100 == 0:
            log("  %d windows, %.0f s" % (i, time.perf_counter() - t0))
        w = int(round(math.exp(rng.uniform(lo, hi))))
        w = max(1000, min(w, span))
        f = rng.randint(0, span - w)
        q = {"from": f, "to": f + w, "width": WIDTH}
        if rows is not None:
            q["rows"] = rows
        status, body, dt = api.get("window", **q)
        if status != 200:
            raise SystemExit("/api/window from=%d to=%d: %d %s" % (f, f + w, status, body[:200]))
        ans = json.loads(body)
        buckets = sum(len(r["b"]) for r in ans["rows"])
        results.append({"from": f, "to": f + w, "width": w, "ms": dt * 1e3, "bytes": len(body),
                        "buckets": buckets, "rows": len(ans["rows"]), "res": ans["res"],
                        "decoded": ans["res"] < finest})
    return results


def vm(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return None


def browse(url):
    p = subprocess.run(["node", os.path.join(HERE, "browse.mjs"), url], capture_output=True, text=True,
                       timeout=600)
    if p.returncode:
        log("browse.mjs failed:\n" + p.stderr[-3000:])
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    if p.stderr.strip():
        log(p.stderr.strip()[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench(reef, name, trace):
    size = du(trace)
    log("== %s: %s (%s)" % (name, trace, human_bytes(size)))
    # The page cache warmed once; then the rounds.
    check_time(reef, trace, 1)
    check_runs, ready_runs = [], []
    for i in range(CHECK_RUNS):
        c, _, events = check_time(reef, trace, 1)
        check_runs.append(c)
        proc, url, t0, t_url = start_view(reef, trace)
        api = Api(url)
        info, t, polls = wait_ready(api, t0, proc)
        ready_runs.append(t)
        if i + 1 < CHECK_RUNS:
            proc.terminate()
            proc.wait()
    check, t_ready = statistics.median(check_runs), statistics.median(ready_runs)
    log("reef check: %.3f s (runs: %s), %s events" % (check, ", ".join("%.3f" % t for t in check_runs), events))
    log("reef view ready: %.3f s (runs: %s)" % (t_ready, ", ".join("%.3f" % t for t in ready_runs)))
    try:
        status, body, dt_first = api.get("window", **{"from": 0, "to": info["end"] + 1, "width": WIDTH})
        t_first = time.perf_counter() - t0
        if status != 200:
            raise SystemExit("first /api/window: %d %s" % (status, body[:200]))
        first = json.loads(body)
        first_buckets = sum(len(r["b"]) for r in first["rows"])
        rows = api.json("rows")
        kinds = {}
        for r in rows:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
        log("reef view (last run): URL after %.3f s, ready after %.3f s (%d polls), whole-trace window "
            "at %.3f s (%.1f ms, %s, %d buckets); %d events, %d rows %s, finest %s"
            % (t_url, ready_runs[-1], polls, t_first, dt_first * 1e3, human_bytes(len(body)), first_buckets,
               info["events"], len(rows), kinds, human_ns(info["finest"])))
        if events is not None and info["events"] != events:
            log("NOTE: /api/info events %d != reef check's %d" % (info["events"], events))
        hwm_ready = vm(proc.pid, "VmHWM")

        t = time.perf_counter()
        try:
            res = windows(api, info["end"], info["finest"])
        except OSError as e:
            time.sleep(0.5)
            raise SystemExit("the server went away during the windows (%s); its exit status: %s (negative: "
                             "killed by that signal)" % (e, proc.poll()))
        log("%d windows in %.1f s%s" % (len(res), time.perf_counter() - t,
                                        ", %d reconnects" % api.reconnects if getattr(api, "reconnects", 0) else ""))
        # What the page asks: the rows on screen (SCREEN_ROWS, the first
        # rows: CPUs, then threads), not all of them at once.
        screen = windows(api, info["end"], info["finest"],
                         ",".join(str(i) for i in range(min(SCREEN_ROWS, info["rows"]))))
        lat_screen = [r["ms"] for r in screen]
        lat = [r["ms"] for r in res]
        by_decade = {}
        for r in res:
            d = int(math.floor(math.log10(r["width"])))
            by_decade.setdefault(d, []).append(r)
        log("  window width        n   p50 ms   p95 ms   max ms  mean KB  mean buckets  decoded")
        for d in sorted(by_decade):
            rs = by_decade[d]
            ms = [r["ms"] for r in rs]
            log("  %-8s..%-8s %4d %8.2f %8.2f %8.2f %8.1f %13.0f %8d" % (
                human_ns(10 ** d), human_ns(10 ** (d + 1)), len(rs), pct(ms, 50), pct(ms, 95), max(ms),
                statistics.mean(r["bytes"] for r in rs) / 1e3, statistics.mean(r["buckets"] for r in rs),
                sum(r["decoded"] for r in rs)))
        for kind, sel in (("decoded (res < finest)", [r for r in res if r["decoded"]]),
                          ("from the index", [r for r in res if not r["decoded"]])):
            if sel:
                ms = [r["ms"] for r in sel]
                log("  %-24s n=%d p50 %.2f ms p95 %.2f ms max %.2f ms" % (kind, len(sel), pct(ms, 50), pct(ms, 95),
                                                                        max(ms)))
        log("  slowest:")
        for r in sorted(res, key=lambda r: -r["ms"])[:8]:
            log("    %8.2f ms  from=%d to=%d (width %s, res %s, %s, %d buckets%s)" % (
                r["ms"], r["from"], r["to"], human_ns(r["width"]), human_ns(r["res"]), human_bytes(r["bytes"]),
                r["buckets"], ", decoded" if r["decoded"] else ""))

        browser = browse(url)
        log("browser: %s" % json.dumps(browser))
        hwm = vm(proc.pid, "VmHWM")
        rss, anon, rfile = vm(proc.pid, "VmRSS"), vm(proc.pid, "RssAnon"), vm(proc.pid, "RssFile")
        log("server VmHWM %s (%.2f %% of the trace; at ready %s), VmRSS now %s = RssAnon %s + RssFile %s "
            "(file: the memory-mapped trace pages it touched, page cache)" % (
                human_bytes(hwm), 100 * hwm / size, human_bytes(hwm_ready), human_bytes(rss), human_bytes(anon),
                human_bytes(rfile)))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {
        "name": name, "trace": trace, "size": size, "events": info["events"], "rows": len(rows),
        "row_kinds": kinds, "finest": info["finest"], "check_s": check, "check_runs": check_runs,
        "url_s": t_url, "ready_s": t_ready, "ready_runs": ready_runs, "first_window_s": t_first, "first_window_ms": dt_first * 1e3,
        "hwm": hwm, "hwm_ready": hwm_ready, "rss_anon_end": anon, "rss_file_end": rfile,
        "win_p50": pct(lat, 50), "win_p95": pct(lat, 95), "win_max": max(lat), "windows": res,
        "screen_p50": pct(lat_screen, 50), "screen_p95": pct(lat_screen, 95), "screen_max": max(lat_screen),
        "browser": browser,
    }


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    return "%d CPUs (nproc), %s, %.0f GiB RAM, Linux %s" % (os.cpu_count(), model, mem / 2**30,
                                                              platform.release())


def table(rs):
    def ok(good):
        return "" if good is None else (" ✓" if good else " ✗")

    head = "| measure | target | " + " | ".join("%s (%s, %s events)" % (r["name"], human_bytes(r["size"]),
                                                                          "{:,}".format(r["events"])) for r in rs) + " |"
    lines = [head, "|---|---|" + "---|" * len(rs)]

    def row(label, target, cells):
        lines.append("| %s | %s | %s |" % (label, target, " | ".join(cells)))

    row("`reef check` wall time", "baseline", ["%.2f s" % r["check_s"] for r in rs])
    row("`reef view`: start → index `ready`", "", ["%.2f s" % r["ready_s"] for r in rs])
    row("ratio ready / check", "≤ %g×" % READY_RATIO,
        ["%.2f×%s" % (r["ready_s"] / r["check_s"], ok(r["ready_s"] <= READY_RATIO * r["check_s"]))
                                        for r in rs])
    row("start → first whole-trace window (2000 px)", "", ["%.2f s (window %.0f ms)" % (r["first_window_s"],
                                                                                       r["first_window_ms"]) for r in rs])
    row("server peak RSS (VmHWM)", "≤ %g %% of trace" % PEAK_SHARE,
        ["%s = %.2f %%%s (at ready %s; at the end: %s anonymous + %s mapped trace)" % (
            human_bytes(r["hwm"]), 100 * r["hwm"] / r["size"], ok(r["hwm"] <= PEAK_SHARE / 100 * r["size"]),
            human_bytes(r["hwm_ready"]),
            human_bytes(r["rss_anon_end"]), human_bytes(r["rss_file_end"])) for r in rs])
    row("/api/window, %d random windows, 2000 px, all rows: p50 / p95 / max" % WINDOWS, "p95 ≤ 50 ms",
        ["%.1f / %.1f / %.1f ms%s" % (r["win_p50"], r["win_p95"], r["win_max"], ok(r["win_p95"] <= 50)) for r in rs])

    row("/api/window, the same windows, a screen's %d rows: p50 / p95 / max" % SCREEN_ROWS, "p95 ≤ 50 ms",
        ["%.1f / %.1f / %.1f ms%s" % (r["screen_p50"], r["screen_p95"], r["screen_max"], ok(r["screen_p95"] <= 50))
         for r in rs])

    def frame(r):
        b = r["browser"]
        if "error" in b:
            return "failed: %s" % b["error"]
        m = b.get("median_ms")
        if m is None:
            return "no frames"
        src = "" if b.get("source") == "frameTimes" else " (rAF deltas)"
        return "%.1f ms%s (%d frames)%s" % (m, src, b.get("frames", 0), ok(m <= 16))
    row("browser median frame time while panning", "≤ 16 ms", [frame(r) for r in rs])
    row("rows (kinds)", "", [", ".join("%d %s" % (n, k) for k, n in sorted(r["row_kinds"].items())) for r in rs])
    return "\n".join(lines)


def main():
    args = sys.argv[1:]
    out = None
    if "--json" in args:
        i = args.index("--json")
        out = args[i + 1]
        del args[i:i + 2]
    reef, traces = args[0], [a.split("=", 1) for a in args[1:]]
    results = [bench(reef, n, t) for n, t in traces]
    if out:
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
    print()
    print("Machine: " + machine())
    print()
    print(table(results))


if __name__ == "__main__":
    main()
