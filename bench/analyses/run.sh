#!/usr/bin/env bash
# reef cputop vs lttng-cputop (lttng-analyses 0.6.1), same traces, same run.
#
#   bash bench/analyses/run.sh [EVENTS] [RUNS]
#
# Traces: the real LTTng kernel traces of ../shared/conformance/kernel-traces
# (50k and 31k events: fixed start-up costs dominate) and a synthetic 4-CPU
# kernel trace of EVENTS events (default 1,000,000) made by
# tests/analyses/gen-kernel-trace.py. Each tool runs RUNS times (default 5)
# per trace, interleaved; the figures are medians of wall-clock time.
# lttng-cputop is timed as users run it (it first runs `babeltrace` over the
# whole trace to look for lost events) and with --skip-validation (the
# analysis alone). Before timing, the script checks that both give the same
# numbers (reef --lami vs lttng-cputop-mi) on every trace.
#
# Needs python3-babeltrace (Debian) and PyPI for lttnganalyses==0.6.1; the
# venv goes to $VENV (default /tmp/reef-lttng-analyses-venv). Not run in CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
events="${1:-1000000}"
runs="${2:-5}"
venv="${VENV:-/tmp/reef-lttng-analyses-venv}"

if [ ! -x "$venv/bin/lttng-cputop" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q lttnganalyses==0.6.1
fi
# lttng-analyses 0.6.1 needs collections.abc on Python >= 3.10.
site="$("$venv/bin/python3" -c 'import lttnganalyses, os; print(os.path.dirname(lttnganalyses.__file__))')"
{ grep -rl --include='*.py' 'collections\.Mapping' "$site" || true; } | xargs -r sed -i 's/collections\.Mapping/collections.abc.Mapping/g'
grep -q '^import collections.abc' "$site/core/event.py" || sed -i '0,/^import collections/s//import collections.abc\nimport collections/' "$site/core/event.py"

(cd "$root" && cargo build --release -q -p reef-cli)
reef="$root/target/release/reef"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# lttng-analyses wants a directory holding a `kernel` trace (a copy: its
# recursive open does not follow symlinks).
for t in uneven-streams bug446190; do
    mkdir -p "$tmp/$t"
    cp -r "$root/../shared/conformance/kernel-traces/$t" "$tmp/$t/kernel"
done
python3 "$root/tests/analyses/gen-kernel-trace.py" "$tmp/synthetic/kernel" "$events"

python3 - "$reef" "$venv/bin" "$tmp" "$runs" <<'EOF'
import json, os, statistics, subprocess, sys, time
reef, vbin, tmp, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def wall(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t

def same(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(b), 1e-300)
    return a == b

print(f"{'trace':<16} {'events':>9} {'reef':>9} {'lttng-cputop':>13} {'ratio':>7} "
      f"{'--skip-validation':>18} {'ratio':>7}")
for t in ("uneven-streams", "bug446190", "synthetic"):
    d = os.path.join(tmp, t)
    ours = json.loads(subprocess.run([reef, "cputop", "--lami", d], check=True,
                                     capture_output=True, text=True).stdout)
    theirs = json.loads(subprocess.run([os.path.join(vbin, "lttng-cputop-mi"), d], check=True,
                                       capture_output=True, text=True).stdout)
    if not same(ours, theirs):
        sys.exit(f"{t}: reef cputop and lttng-cputop disagree; not timing")
    check = subprocess.run([reef, "check", d], check=True, capture_output=True, text=True).stdout
    n = int(check.split("events: ")[1].split()[0])
    r, l, s = [], [], []
    for _ in range(runs):  # interleaved, so load changes hit all three alike
        r.append(wall([reef, "cputop", d]))
        l.append(wall([os.path.join(vbin, "lttng-cputop"), "--no-progress", d]))
        s.append(wall([os.path.join(vbin, "lttng-cputop"), "--no-progress", "--skip-validation", d]))
    mr, ml, ms = statistics.median(r), statistics.median(l), statistics.median(s)
    print(f"{t:<16} {n:>9} {mr:>8.3f}s {ml:>12.3f}s {ml / mr:>6.1f}x {ms:>17.3f}s {ms / mr:>6.1f}x")
print(f"(median of {runs} runs each; same numbers checked on every trace)")
EOF
