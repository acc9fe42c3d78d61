#!/usr/bin/env python3
"""Runs `reef ANALYSIS --lami` on the kernel traces and compares every cell
with lttng-analyses 0.6.1's output (tests/analyses/references/): integers
exactly, other numbers to 1e-9 relative. Also checks --metadata and the
text output.

Usage: check-cli.py [TEST-NAME-SUBSTRING...]

The binary under test is $REEF_BIN (default: target/release/reef). A test
is named by what it prints ("bug446190 cputop -j 2", "irqlog --metadata",
"memtop on a corrupt trace", ...); with arguments, only the tests whose
name contains one of them run."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
traces = os.path.join(here, "..", "..", "..", "shared", "conformance", "kernel-traces")
reef = os.environ.get("REEF_BIN") or os.path.join(here, "..", "..", "target", "release", "reef")
FILTERS = sys.argv[1:]


def selected(label):
    return not FILTERS or any(f in label for f in FILTERS)

# reef command line for each reference (name: extra options)
analyses = {
    "cputop": [],
    "syscallstats": [],
    "irqstats": [],
    "schedstats": ["--total", "--per-tid", "--per-prio"],
    "memtop": [],
    "iolatency": [],
    "schedlog": [],
    "irqlog": [],
    "schedtop": [],
    "schedfreq": ["--total", "--per-tid", "--per-prio"],
    "irqfreq": [],
    "iolatencyfreq": [],
    "iolatencytop": [],
    "iolog": [],
    "iousagetop": [],
}
# Logs whose rows end at the same time on different CPUs: lttng-analyses
# reads the trace with babeltrace 1.5, whose order of events at one time
# differs from babeltrace2's (reef's); such rows are compared as a set.
LOGS = {"irqlog": lambda row: row[0]["end"]["value"]}


def same_time_order(name, doc):
    key = LOGS.get(name)
    if key and isinstance(doc, dict):
        for r in doc.get("results", []):
            r["data"].sort(key=lambda row: (key(row), json.dumps(row, sort_keys=True)))
    return doc


def compare(path, got, want, diffs):
    if isinstance(want, dict) and isinstance(got, dict):
        for k in set(want) | set(got):
            if k not in got:
                diffs.append(f"{path}.{k}: missing")
            elif k not in want:
                diffs.append(f"{path}.{k}: unexpected")
            else:
                compare(f"{path}.{k}", got[k], want[k], diffs)
    elif isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            diffs.append(f"{path}: {len(got)} items, want {len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            compare(f"{path}[{i}]", g, w, diffs)
    elif isinstance(want, bool) or isinstance(got, bool):
        if got is not want:
            diffs.append(f"{path}: {got!r}, want {want!r}")
    elif isinstance(want, int) and isinstance(got, int):
        if got != want:
            diffs.append(f"{path}: {got}, want {want}")
    elif isinstance(want, float) and isinstance(got, (int, float)):
        if abs(got - want) > 1e-9 * max(abs(want), 1e-300):
            diffs.append(f"{path}: {got}, want {want}")
    elif got != want or type(got) is not type(want):
        diffs.append(f"{path}: {got!r}, want {want!r}")


failed = 0
checked = 0


def check(cmd, want, label, name=None):
    """Runs reef `cmd` and compares its LAMI output with `want`."""
    global checked, failed
    if not selected(label):
        return
    out = subprocess.run(cmd, capture_output=True, text=True)
    diffs = []
    if out.returncode != 0:
        diffs.append(f"exit {out.returncode}: {out.stderr.strip()}")
    else:
        compare("", same_time_order(name, json.loads(out.stdout)), want, diffs)
    checked += 1
    if diffs:
        failed += 1
        print(f"FAIL {label}: {len(diffs)} differences")
        for d in diffs[:10]:
            print("   ", d)

# The synthetic trace the references were made from, regenerated.
tmp = tempfile.TemporaryDirectory()
synthetic = os.path.join(tmp.name, "kernel")
subprocess.run([sys.executable, os.path.join(here, "gen-kernel-trace.py"), synthetic, "100000"],
               check=True, stdout=subprocess.DEVNULL)
with open(os.path.join(here, "references", "synthetic.sha256")) as f:
    for line in f:
        digest, name = line.split()
        with open(os.path.join(synthetic, name), "rb") as g:
            if hashlib.sha256(g.read()).hexdigest() != digest:
                print(f"FAIL synthetic trace: {name} differs from the one the references were made from")
                sys.exit(1)
paths = {t: os.path.join(traces, t) for t in ("uneven-streams", "bug446190")}
paths["synthetic"] = synthetic

for trace in ("uneven-streams", "bug446190", "synthetic"):
    for name, opts in analyses.items():
        ref = os.path.join(here, "references", f"{trace}.{name}.json")
        if not os.path.exists(ref):
            continue  # (no log references of the synthetic trace: 10 MB)
        with open(ref) as f:
            want = same_time_order(name, json.load(f))
        for workers in ("1", "2"):
            check([reef, name, "--lami", "-j", workers, *opts, paths[trace]], want,
                  f"{trace} {name} -j {workers}", name)
        if not selected(f"{trace} {name} text"):
            continue
        checked += 1
        text = subprocess.run([reef, name, *opts, paths[trace]],
                              capture_output=True, text=True)
        # (no result where lttng-analyses gives none: empty tables under the
        # time range, or a line that says so)
        shown = ("Time range:",) if want.get("results") else ("Time range:", "No results")
        if text.returncode != 0 or not any(s in text.stdout for s in shown):
            failed += 1
            print(f"FAIL {trace} {name} text: exit {text.returncode}")
for name in analyses:
    if not selected(f"{name} --metadata"):
        continue
    meta = subprocess.run([reef, name, "--metadata"], capture_output=True, text=True)
    checked += 1
    m = json.loads(meta.stdout)
    if m.get("mi-version") != {"major": 1, "minor": 0} or not m.get("table-classes"):
        failed += 1
        print(f"FAIL {name} --metadata")

# A time range given as LAMI gives it (--begin/--end in ns).
for name, opts in (("cputop", ["--limit=unlimited"]), ("syscallstats", []),
                   ("schedstats", ["--total", "--per-tid", "--per-prio"])):
    with open(os.path.join(here, "references", f"bug446190-range.{name}.json")) as f:
        want = json.load(f)
    check([reef, name, "--lami", "--begin=1412670963000000000", "--end=1412670965000000000",
           *opts, paths["bug446190"]], want, f"bug446190 {name} with a time range")

# lttng-analyses' selection options (options.txt), compared with
# lttng-analyses run with the same options.
with open(os.path.join(here, "options.txt")) as f:
    lines = [l for l in f if l.strip() and not l.startswith("#")]
for n, line in enumerate(lines, 1):
    name, opts = (x.strip() for x in line.split("|"))
    for trace in ("bug446190", "synthetic"):
        with open(os.path.join(here, "references", f"{trace}-opts.{n}.json")) as f:
            want = same_time_order(name, json.load(f))
        check([reef, name, "--lami", *opts.split(), paths[trace]], want,
              f"{trace} {name} {opts}", name)

# A corrupt event in the middle of a stream: the results over the events
# before it, then the error (file, offset, what was expected), exit 1.
import shutil
bad = os.path.join(tmp.name, "corrupt")
shutil.copytree(paths["uneven-streams"], bad)
with open(os.path.join(bad, "channel0_3"), "r+b") as f:
    f.seek(1000000)
    f.write(b"\xff" * 64)
for name in analyses:
    if not selected(f"{name} on a corrupt trace"):
        continue
    checked += 1
    out = subprocess.run([reef, name, "-j", "1", bad], capture_output=True, text=True)
    ref = os.path.join(here, "references", f"uneven-streams.{name}.json")
    shown = ("Time range:", "No results")
    if os.path.exists(ref):
        with open(ref) as f:
            shown = ("Time range:",) if json.load(f).get("results") else shown
    if (out.returncode != 1 or not any(s in out.stdout for s in shown)
            or "channel0_3: at byte 1000000" not in out.stderr or "panicked" in out.stderr):
        failed += 1
        print(f"FAIL {name} on a corrupt trace: exit {out.returncode}, stderr {out.stderr.strip()!r}")

print(f"analyses: {checked - failed} passed, {failed} failed")
if checked == 0:
    print(f"analyses: no test matches {' '.join(FILTERS)}")
sys.exit(1 if failed or checked == 0 else 0)
