#!/usr/bin/env bash
# bench/python/run.sh — the reef Python package against babeltrace2's
# Python bindings (Debian's python3-bt2), same run, same traces: iterate
# every event and count events per name (bench/python/count.py), and
# reef's to_arrow() of the whole events table (events/s, peak RSS).
#
# Traces: bench/reader's 10.4 M-event LTTng-UST and libreef traces (cached
# in ~/.cache/reef-bench/reader; recorded first if missing, which needs
# LTTng: see bench/reader/run.sh). ITERS=N makes 4 N events per trace.
#
#   bash bench/python/run.sh               RUNS=3 for reef, 1 for bt2, in
#                                          interleaved rounds
#   RUNS=5 BT2_RUNS=3 bash bench/python/run.sh
#   VENV=/tmp/reef-py-venv                 the venv (made, with the package
#                                          installed by pip from ./python)
#   NO_INSTALL=1                           use the venv's package as it is
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/python"
RUNS=${RUNS:-3}
BT2_RUNS=${BT2_RUNS:-1}
ITERS=${ITERS:-2600000}
CACHE="$HOME/.cache/reef-bench/reader"
VENV=${VENV:-/tmp/reef-py-venv}

if [ ! -x "$VENV/bin/python" ]; then
	/usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
if [ -z "${NO_INSTALL:-}" ]; then
	"$VENV/bin/pip" install -q "$ROOT/python" pyarrow
fi
if [ ! -f "$CACHE/lttng-$ITERS.complete" ] || [ ! -f "$CACHE/libreef-$ITERS.complete" ]; then
	ITERS=$ITERS PREPARE_ONLY=1 bash "$ROOT/bench/reader/run.sh"
fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# One measure: prints "seconds rss_mib", checks the counts against $2.
measure() {
	local py=$1 which=$2 trace=$3 expect=$4
	local err
	err=$(mktemp)
	"$py" "$HERE/count.py" "$which" "$trace" >"$err.out" 2>"$err"
	if [ -n "$expect" ] && ! cmp -s "$err.out" "$expect"; then
		echo "run.sh: $which counts differ from the first run's" >&2
		exit 1
	fi
	cp "$err.out" "${5:-/dev/null}"
	awk '{print $2, $6}' "$err"
	rm -f "$err" "$err.out"
}

arrow_measure() {
	"$VENV/bin/python" - "$1" <<'PY'
import resource, sys, time
import reef
t = time.perf_counter()
n = 0
for b in reef.open(sys.argv[1]).to_arrow():
    n += b.num_rows
dt = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{dt:.3f} {rss:.1f} {n}")
PY
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; bt2 $(/usr/bin/python3 -c 'import bt2; print(bt2.__version__)'); reef $("$VENV/bin/python" -c 'import reef; print(reef.__version__)')"
echo "Load average (1, 5, 15 min) at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| trace | what | median s | events/s | bt2 / reef | peak RSS MiB |"
echo "|---|---|---|---|---|---|"
for kind in lttng libreef; do
	trace="$CACHE/$kind-$ITERS"
	counts=$(mktemp)
	# Interleaved rounds (the machine's load drifts: each round sees the
	# same); bt2 first: its first counts are the reference for reef's.
	bt=() rf=() ar=()
	for round in $(seq $((RUNS > BT2_RUNS ? RUNS : BT2_RUNS))); do
		if [ "$round" -le "$BT2_RUNS" ]; then
			if [ "$round" = 1 ]; then
				bt+=("$(measure /usr/bin/python3 bt2 "$trace" "" "$counts")")
			else
				bt+=("$(measure /usr/bin/python3 bt2 "$trace" "$counts")")
			fi
		fi
		if [ "$round" -le "$RUNS" ]; then
			rf+=("$(measure "$VENV/bin/python" reef "$trace" "$counts")")
			ar+=("$(arrow_measure "$trace")")
		fi
	done
	n=$("$VENV/bin/python" -c 'import json,sys; print(sum(json.load(open(sys.argv[1])).values()))' "$counts")
	bs=$(printf '%s\n' "${bt[@]}" | awk '{print $1}' | median)
	brss=$(printf '%s\n' "${bt[@]}" | awk '{print $2}' | sort -g | tail -1)
	rs=$(printf '%s\n' "${rf[@]}" | awk '{print $1}' | median)
	rrss=$(printf '%s\n' "${rf[@]}" | awk '{print $2}' | sort -g | tail -1)
	as=$(printf '%s\n' "${ar[@]}" | awk '{print $1}' | median)
	arss=$(printf '%s\n' "${ar[@]}" | awk '{print $2}' | sort -g | tail -1)
	arows=$(printf '%s\n' "${ar[@]}" | awk '{print $3}' | sort -u)
	[ "$arows" = "$n" ] || { echo "run.sh: to_arrow gave $arows rows, $n events" >&2; exit 1; }
	rate() { awk -v n="$n" -v s="$1" 'BEGIN {printf "%.2f M", n / s / 1e6}'; }
	echo "| $kind ($n events) | bt2: count per name | $bs | $(rate "$bs") | | $brss |"
	echo "| | reef: count per name | $rs | $(rate "$rs") | $(awk -v a="$bs" -v b="$rs" 'BEGIN {printf "%.1fx", a / b}') | $rrss |"
	echo "| | reef: to_arrow() events table, streamed | $as | $(rate "$as") | | $arss |"
	rm -f "$counts"
	ALL="${ALL:-}$kind runs (s): bt2 $(printf '%s\n' "${bt[@]}" | awk '{printf "%s ", $1}')/ reef $(printf '%s\n' "${rf[@]}" | awk '{printf "%s ", $1}')/ to_arrow $(printf '%s\n' "${ar[@]}" | awk '{printf "%s ", $1}')
"
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s' "$ALL"
