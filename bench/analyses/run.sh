#!/usr/bin/env bash
# Every kernel analysis of reef vs its lttng-analyses 0.6.1 command, same
# traces, same run; then reef's events/s on a large trace, next to
# `reef check`'s.
#
#   bash bench/analyses/run.sh [EVENTS] [RUNS] [BIG_EVENTS]
#
# Compared traces: the real LTTng kernel traces of
# ../shared/conformance/kernel-traces (50k and 31k events: fixed start-up
# costs dominate) and a synthetic 4-CPU kernel trace of EVENTS events
# (default 1,000,000) made by tests/analyses/gen-kernel-trace.py. reef runs
# RUNS times (default 5) per trace; lttng-analyses (50-100 k events/s)
# LTTNG_RUNS times (default 3) on the real traces and once on the
# synthetic one, interleaved with reef's; the figures are medians of
# wall-clock time. lttng-analyses is timed as users run it (it first runs
# babeltrace over the whole trace to look for lost events); SKIP_VALIDATION=1
# adds a column with --skip-validation (the analysis alone, slower to run).
# Before timing, the script checks that both give the same numbers (reef
# --lami vs lttng's -mi command) on every trace. The commands are listed in
# bench/analyses/bench.py (ANALYSES); those reef does not have are skipped.
#
# Then the events/s of `reef check` and of every analysis on a synthetic
# trace of BIG_EVENTS events (default 10,000,000; BIG_TRACE=DIR reuses a
# trace made by gen-kernel-trace.py instead), RUNS rounds of every command
# once (medians). ONLY=cputop,irqstats times
# only those commands.
#
# Needs python3-babeltrace (Debian) and PyPI for lttnganalyses==0.6.1; the
# venv goes to $VENV (default /tmp/reef-lttng-analyses-venv). Not run in CI.
# About 10 minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
events="${1:-1000000}"
runs="${2:-5}"
big_events="${3:-10000000}"
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
bigtmp="$(mktemp -d)"
trap 'rm -rf "$tmp" "$bigtmp"' EXIT
# lttng-analyses wants a directory holding a `kernel` trace (a copy: its
# recursive open does not follow symlinks).
for t in uneven-streams bug446190; do
    mkdir -p "$tmp/$t"
    cp -r "$root/../shared/conformance/kernel-traces/$t" "$tmp/$t/kernel"
done
python3 "$root/tests/analyses/gen-kernel-trace.py" "$tmp/synthetic/kernel" "$events" >/dev/null
big="${BIG_TRACE:-}"
if [ -z "$big" ]; then
    big="$bigtmp"
    python3 "$root/tests/analyses/gen-kernel-trace.py" "$big/kernel" "$big_events" >/dev/null
fi

python3 "$here/bench.py" "$reef" "$venv/bin" "$tmp" "$big" "$runs" "${LTTNG_RUNS:-3}" "${SKIP_VALIDATION:-0}"
