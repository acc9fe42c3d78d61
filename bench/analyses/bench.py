#!/usr/bin/env python3
"""The timing half of bench/analyses/run.sh (which installs lttng-analyses
and makes the traces): every kernel analysis of reef against its
lttng-analyses 0.6.1 command, then reef's events/s on a large trace.

    bench.py REEF VENV_BIN TRACES_DIR BIG_TRACE RUNS LTTNG_RUNS SKIP_VALIDATION

TRACES_DIR holds one directory per compared trace, each holding a `kernel`
trace (lttng-analyses' layout); BIG_TRACE is the large synthetic trace.
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

reef, vbin, traces_dir, big, runs, lttng_runs, skip_validation = sys.argv[1:8]
runs, lttng_runs, skip_validation = int(runs), int(lttng_runs), skip_validation == "1"

# reef's command: (lttng-analyses' command, options both take). A command
# reef does not have yet (`reef CMD --help` fails) is left out.
ANALYSES = {
    "cputop": ("lttng-cputop", []),
    "syscallstats": ("lttng-syscallstats", []),
    "irqstats": ("lttng-irqstats", []),
    "schedstats": ("lttng-schedstats", ["--total", "--per-tid", "--per-prio"]),
    "iolatency": ("lttng-iolatencystats", []),
    "memtop": ("lttng-memtop", []),
    "schedlog": ("lttng-schedlog", []),
    "irqlog": ("lttng-irqlog", []),
    "schedtop": ("lttng-schedtop", []),
    "schedfreq": ("lttng-schedfreq", ["--total", "--per-tid", "--per-prio"]),
    "irqfreq": ("lttng-irqfreq", []),
    "iolog": ("lttng-iolog", []),
    "iolatencytop": ("lttng-iolatencytop", []),
    "iolatencyfreq": ("lttng-iolatencyfreq", []),
    "iousagetop": ("lttng-iousagetop", []),
}
# ONLY=cputop,schedstats times those commands alone.
if os.environ.get("ONLY"):
    only = os.environ["ONLY"].split(",")
    ANALYSES = {k: v for k, v in ANALYSES.items() if k in only}


def have(cmd):
    return subprocess.run([reef, cmd, "--help"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def timed(cmd):
    """(wall-clock, CPU) seconds of a run; CPU is user + system time of the
    command and its children (lttng-analyses runs babeltrace), which a
    loaded machine does not inflate as it does the wall clock."""
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    w = time.perf_counter() - t
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return w, (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)


def wall(cmd):
    return timed(cmd)[0]


def med(runs):
    """Medians of the wall-clock and CPU times of runs."""
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def events(trace):
    out = subprocess.run([reef, "check", trace], check=True, capture_output=True, text=True).stdout
    return sum(int(line.split("events: ")[1].split()[0])
               for line in out.splitlines() if "events: " in line)


def same(a, b):
    """The same JSON, numbers to 1e-9 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(b), 1e-300)
    return a == b


def agree(ours, theirs):
    """'same', 'same rows' (a log whose events at one time come in another
    order: lttng-analyses reads with babeltrace 1.5), or None."""
    if same(ours, theirs):
        return "same"
    try:
        a, b = ours["results"], theirs["results"]
        key = lambda row: json.dumps(row, sort_keys=True)
        if len(a) == len(b) and all(
                same({**x, "data": sorted(x["data"], key=key)}, {**y, "data": sorted(y["data"], key=key)})
                for x, y in zip(a, b)):
            return "same rows"
    except (KeyError, TypeError):
        pass
    return None


cmds = [c for c in ANALYSES if have(c)]
missing = [c for c in ANALYSES if c not in cmds]
traces = sorted(os.listdir(traces_dir), key=lambda t: (t == "synthetic", t))
counts = {t: events(os.path.join(traces_dir, t)) for t in traces}

print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
hdr = (f"{'analysis':<14} {'trace':<15} {'events':>8} {'reef':>8} {'lttng':>9} {'ratio':>7}"
       f" {'reef CPU':>9} {'lttng CPU':>9} {'ratio':>7}")
if skip_validation:
    hdr += f" {'lttng --skip-v.':>16} {'ratio':>7}"
print(hdr + "  LAMI")
for c in cmds:
    lttng, opts = ANALYSES[c]
    for t in traces:
        d = os.path.join(traces_dir, t)
        # Both must succeed, and give the same results, before timing.
        ours = json.loads(subprocess.run([reef, c, "--lami", *opts, d], check=True,
                                         capture_output=True, text=True).stdout)
        theirs = json.loads(subprocess.run([os.path.join(vbin, lttng + "-mi"), *opts, d],
                                           check=True, capture_output=True, text=True).stdout)
        verdict = agree(ours, theirs)
        if verdict is None:
            sys.exit(f"{c} on {t}: reef and {lttng} disagree; not timing")
        # lttng-analyses is slow: fewer runs on the synthetic trace.
        n_lttng = 1 if t == "synthetic" else lttng_runs
        r, l, s = [], [], []
        for i in range(max(runs, n_lttng)):  # interleaved: load changes hit both
            if i < runs:
                r.append(timed([reef, c, *opts, d]))
            if i < n_lttng:
                l.append(timed([os.path.join(vbin, lttng), "--no-progress", *opts, d]))
                if skip_validation:
                    s.append(wall([os.path.join(vbin, lttng), "--no-progress", "--skip-validation",
                                   *opts, d]))
        (mr, cr), (ml, cl) = med(r), med(l)
        line = (f"{c:<14} {t:<15} {counts[t]:>8} {mr:>7.3f}s {ml:>8.3f}s {ml / mr:>6.0f}x"
                f" {cr:>8.4f}s {cl:>8.3f}s {cl / max(cr, 1e-6):>6.0f}x")
        if skip_validation:
            ms = statistics.median(s)
            line += f" {ms:>15.3f}s {ms / mr:>6.0f}x"
        print(line + "  " + verdict, flush=True)
print(f"(medians: reef {runs} runs, lttng-analyses {lttng_runs} on the real traces and 1 on the "
      f"synthetic one; lttng timed as users run it, with its trace validation; LAMI: reef "
      f"--lami vs lttng's -mi command, checked before timing)")
if missing:
    print("not in this reef: " + ", ".join(missing))

print()
n = events(big)
print(f"events/s on {big} ({n} events; median of {runs} interleaved runs)")
print(f"{'command':<28} {'seconds':>8} {'events/s':>12} {'CPU s':>8} {'events/CPU s':>13}")
rows = [("check", ["check", big]), ("check -j1", ["check", "-j1", big])]
# As users run them: on a machine with two CPUs or more, a trace this
# large is decoded on a second thread, which also makes most events (see
# the README); then on one thread (-j1).
rows += [(c, [c, *ANALYSES[c][1], big]) for c in cmds]
rows += [(f"{c} -j1", [c, "-j1", *ANALYSES[c][1], big]) for c in cmds]
# Interleaved (each round runs every command once): this VM has phases
# of tens of seconds in which a run takes up to twice its CPU time, and
# one phase would otherwise fall on a few commands' runs alone.
times = {name: [] for name, _ in rows}
for _ in range(runs):
    for name, args in rows:
        times[name].append(timed([reef, *args]))
for name, _ in rows:
    m, c = med(times[name])
    print(f"{name:<28} {m:>7.3f}s {n / m / 1e6:>10.1f} M {c:>7.3f}s {n / c / 1e6:>11.1f} M",
          flush=True)
print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
