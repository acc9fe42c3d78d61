#!/usr/bin/env python3
"""`reef view --live` under load, driven by view.sh: tests/live/live.c
records data:TICK events at RATE per second for SECS seconds (one thread,
on a schedule), once written by libreef to a directory with no viewer, once
streamed to `reef view --live -o DIR` with its page open in headless
Chromium; the same run, alternating, REPS times.

Per case: the events recorded and the recording cost (ns per event inside
the program's batches: what a viewer could slow down), the events kept on
disk (`reef check`), how far behind the schedule the program fell; with the
viewer, `reef view`'s peak and final resident memory, how far the page's
newest drawn time was behind the wall clock, and the page's final count."""
import json
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LIVE, REEF, PAGE = sys.argv[1], sys.argv[2], sys.argv[3]
RATE = int(os.environ.get("BENCH_RATE", "10000000"))
SECS = int(os.environ.get("BENCH_SECS", "30"))
REPS = int(os.environ.get("BENCH_REPS", "1"))
TMP = tempfile.mkdtemp(prefix="reef-view-live-bench.")


# What a program recording 10 M events/s sets in both cases: 64 MiB of
# buffer for the thread (about 5 s of data:TICK events; the default 1 MiB
# holds 8 ms, less than a busy 2-core machine may leave the consumer
# waiting) and, streaming, as much queued for the client.
BUFFERS = {"REEF_BUFFER_SIZE": "64M", "REEF_CLIENT_BUFFER": "64M"}


def env(extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("REEF_")}
    e.update(BUFFERS)
    e.update(extra)
    return e


def parse(out):
    m = re.search(r"events (\d+) ns (\d+) busy_ns (\d+) late_ms (\d+) maxrss_kb (\d+)", out)
    n, ns, busy, late, rss = (int(g) for g in m.groups())
    return {"events": n, "rate": n / (ns / 1e9), "ns_per_event": busy / n, "late_ms": late, "rss_kb": rss}


def kept(trace):
    """Events and discarded events in a trace, as `reef check` counts them."""
    out = subprocess.run([REEF, "check", trace], capture_output=True, text=True).stdout
    ev = re.search(r"events: (\d+)", out)
    d = re.search(r"discarded: (\d+) events, (\d+) packets", out)
    return int(ev.group(1)) if ev else 0, (int(d.group(1)), int(d.group(2))) if d else (0, 0)


def rss_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def port_of(p):
    line = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        r, _, _ = select.select([p.stderr], [], [], 0.5)
        if r:
            c = os.read(p.stderr.fileno(), 1)
            if not c:
                break
            line += c
            m = re.search(rb"listening on 127\.0\.0\.1:(\d+)\n", line)
            if m:
                return int(m.group(1))
    raise SystemExit("bench: no port from the traced program")


def no_viewer(i):
    d = os.path.join(TMP, "dir%d" % i)
    p = subprocess.run([LIVE, "steady", str(RATE), str(SECS)], env=env({"REEF_OUTPUT": d}),
                       capture_output=True, text=True)
    r = parse(p.stdout)
    r["kept"], r["discarded"] = kept(d)
    subprocess.run(["rm", "-rf", d])
    return r


def viewer(i):
    d = os.path.join(TMP, "view%d" % i)
    p = subprocess.Popen([LIVE, "steady", str(RATE), str(SECS)],
                         env=env({"REEF_LISTEN": "127.0.0.1:0", "REEF_LISTEN_WAIT": "60000",
                                  "REEF_OUTPUT": os.path.join(TMP, "unused")}),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    port = port_of(p)
    v = subprocess.Popen([REEF, "view", "--live", "127.0.0.1:%d" % port, "-o", d, "--port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = v.stdout.readline().strip()
    page = subprocess.Popen(["node", PAGE, url], stdout=subprocess.PIPE, text=True)
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append(rss_kb(v.pid, "VmRSS"))
            time.sleep(0.25)

    t = threading.Thread(target=sample)
    t.start()
    out, _ = p.communicate(timeout=SECS * 10 + 120)
    ended = time.monotonic()
    r = parse(out.decode())
    page_out, _ = page.communicate(timeout=1800)
    r["reindex_s"] = time.monotonic() - ended
    stop.set()
    t.join()
    r["view_peak_rss_mb"] = rss_kb(v.pid, "VmHWM") / 1024
    r["view_rss_mb"] = [round(s / 1024, 1) for s in samples[:: max(1, len(samples) // 12)]]
    v.terminate()
    v.wait()
    r["page"] = json.loads(page_out.strip().splitlines()[-1])
    r["kept"], r["discarded"] = kept(d)
    subprocess.run(["rm", "-rf", d])
    return r


runs = {"none": [], "view": []}
for i in range(REPS):
    runs["none"].append(no_viewer(i))
    runs["view"].append(viewer(i))
print("data:TICK at %d events/s for %d s, %d run(s) per case (medians)" % (RATE, SECS, REPS))
med = {k: {f: statistics.median(r[f] for r in v) for f in ("rate", "ns_per_event", "late_ms", "kept")}
       for k, v in runs.items()}
print("%-36s %12s %12s %10s %14s" % ("case", "events/s", "ns/event", "late ms", "kept on disk"))
for k, label in (("none", "no viewer (libreef writes the dir)"), ("view", "reef view --live, page open")):
    m = med[k]
    print("%-36s %12.0f %12.2f %10.0f %14d" % (label, m["rate"], m["ns_per_event"], m["late_ms"], m["kept"]))
for r in runs["view"]:
    print("reef view: peak RSS %.1f MB; RSS over the run (MB): %s" % (r["view_peak_rss_mb"], r["view_rss_mb"]))
    print("page: newest drawn time behind the wall clock (ms): %s; frames (ms): %s; %d events on the page, %d on disk; indexed again in %.1f s"
          % (r["page"]["lag_ms"], r["page"]["frame_ms"], r["page"]["events"], r["kept"], r["reindex_s"]))
    print("discarded (events, packets): viewer %s; no viewer %s" % (r["discarded"], runs["none"][0]["discarded"]))
    if r["page"].get("error"):
        print("the page shows an ERROR: %s" % r["page"]["error"])
ratio = med["view"]["rate"] / med["none"]["rate"]
cost = med["none"]["ns_per_event"] / med["view"]["ns_per_event"]
print("event rate with the viewer / without: %.3f; recording cost without / with: %.3f (%s)" % (
    ratio, cost, "within 10%" if min(ratio, cost) >= 0.9 else "NOT within 10%"))
subprocess.run(["rm", "-rf", TMP])
