#!/usr/bin/env python3
"""Live streaming benchmark, driven by run.sh: the traced program's event
rate with no client, with a client that connects and never reads (lagging),
and with `reef listen` reading everything, measured in the same run,
alternating, median of REPS runs each. Also the program's max RSS, at N and
4N events, to show that a lagging client does not make memory grow.

With a client that never reads, nearly every event is dropped at a full
ring; overwrite mode (no consumer, no client) records every event. Their
per-CPU-second rates compare the cost of dropping an event with that of
recording one, whatever the consumer manages to write in the other cases
(with the cores busy, the no-client consumer falls behind and drops too)."""
import os
import re
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time

LIVE, REEF = sys.argv[1], sys.argv[2]
N = int(os.environ.get("BENCH_EVENTS", "20000000"))
REPS = int(os.environ.get("BENCH_REPS", "5"))
TMP = tempfile.mkdtemp(prefix="reef-live-bench.")


def env(extra):
    e = {k: v for k, v in os.environ.items() if not k.startswith("REEF_")}
    e.update({"REEF_OUTPUT": os.path.join(TMP, "trace")})
    e.update(extra)
    return e


def parse(out):
    """(events per second of wall clock, per second of the thread's CPU
    time, peak RSS in KB)."""
    m = re.search(r"events (\d+) ns (\d+) cpu_ns (\d+) maxrss_kb (\d+)", out)
    n = int(m.group(1))
    return n / (int(m.group(2)) / 1e9), n / (int(m.group(3)) / 1e9), int(m.group(4))


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


def run(kind, n):
    listen = {"REEF_LISTEN": "127.0.0.1:0"}
    if kind == "off":
        p = subprocess.run([LIVE, "rate", str(n)], env=env({}), capture_output=True, text=True)
        return parse(p.stdout)
    if kind == "overwrite":
        p = subprocess.run([LIVE, "rate", str(n)], env=env({"REEF_MODE": "overwrite"}),
                           capture_output=True, text=True)
        return parse(p.stdout)
    if kind == "no-client":
        p = subprocess.run([LIVE, "rate", str(n)], env=env(listen), capture_output=True, text=True)
        return parse(p.stdout)
    wait = dict(listen, REEF_LISTEN_WAIT="20000", REEF_LINGER_MS="100")
    if kind == "lagging-both":
        # The directory gets every packet too: the consumer does the same
        # disk work as with no client, plus the copies for the client.
        wait["REEF_LIVE_SINK"] = "both"
        kind = "lagging"
    p = subprocess.Popen([LIVE, "rate", str(n)], env=env(wait), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    port = port_of(p)
    if kind == "lagging":
        s = socket.create_connection(("127.0.0.1", port))  # never reads
        out, _ = p.communicate(timeout=120)
        s.close()
    else:  # reading: reef listen writes everything it gets
        lp = subprocess.Popen([REEF, "listen", "127.0.0.1:%d" % port, "-o", os.path.join(TMP, "recv")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out, _ = p.communicate(timeout=120)
        lp.wait(timeout=60)
    return parse(out.decode())


kinds = ["off", "no-client", "lagging", "lagging-both", "reading", "overwrite"]
rates = {k: [] for k in kinds}
cpu_rates = {k: [] for k in kinds}
rss = {k: [] for k in kinds}
for _ in range(REPS):
    for k in kinds:
        r, c, m = run(k, N)
        rates[k].append(r)
        cpu_rates[k].append(c)
        rss[k].append(m)
med = {k: statistics.median(v) for k, v in rates.items()}
cmed = {k: statistics.median(v) for k, v in cpu_rates.items()}
print("events per run: %d, runs per case: %d (medians); wall: events per second,"
      " cpu: per second of the traced thread's CPU time" % (N, REPS))
print("%-28s %10s %7s %10s %7s %11s" % ("case", "wall Mev/s", "ratio", "cpu Mev/s", "ratio", "max RSS MB"))
for k, label in [("off", "REEF_LISTEN unset"), ("no-client", "listening, no client"),
                 ("lagging", "client that never reads"),
                 ("lagging-both", "  same, REEF_LIVE_SINK=both"), ("reading", "reef listen reading all"),
                 ("overwrite", "REEF_MODE=overwrite, unset")]:
    print("%-28s %10.1f %7.3f %10.1f %7.3f %11.1f" % (
        label, med[k] / 1e6, med[k] / med["no-client"], cmed[k] / 1e6, cmed[k] / cmed["no-client"],
        max(rss[k]) / 1024))
big = [run("lagging", 4 * N)[2] for _ in range(2)]
print("lagging client, %d events: max RSS %.1f MB (vs %.1f MB at %d)" % (4 * N, max(big) / 1024, max(rss["lagging"]) / 1024, N))
for k in ("lagging", "lagging-both"):
    ratio = med[k] / med["no-client"]
    cratio = cmed[k] / cmed["no-client"]
    print("%s / no client event rate: %.3f wall, %.3f per CPU-second of the traced thread (%s)" % (
        k, ratio, cratio, "not slower by more than 5%" if min(ratio, cratio) >= 0.95
        else "SLOWER by more than 5%"))
print("dropping / recording an event (client that never reads / overwrite mode), per CPU-second: %.3f (%s)" % (
    cmed["lagging"] / cmed["overwrite"],
    "dropping costs no more" if cmed["lagging"] >= cmed["overwrite"] else "DROPPING COSTS MORE"))
subprocess.run(["rm", "-rf", TMP])
