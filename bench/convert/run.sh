#!/usr/bin/env bash
# bench/convert/run.sh — `reef convert` (CTF to CTF, no window: every
# packet copied whole) against `cp -r` of the same trace, in the same run,
# and a cut of the middle 10 % of the trace (packets copied, two per
# stream written again) for reference.
#
# The trace is bench/reader's 10 M-event LTTng-UST trace, recorded once
# and cached under ~/.cache/reef-bench/reader (bench/reader/run.sh with
# PREPARE_ONLY=1 makes it; TRACE=dir takes another one).
#
#   bash bench/convert/run.sh            RUNS=5 by default
#
# Each round copies with cp -r and converts with reef, interleaved, into a
# fresh directory of the same file system; the page cache is warm for
# both (the source is read once before). Prints the median wall time of
# each, MB/s, and reef's throughput as a share of cp's.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-5}
REEF=${REEF:-$ROOT/target/release/reef}
TRACE=${TRACE:-$HOME/.cache/reef-bench/reader/lttng-2600000}
if [ ! -d "$TRACE" ]; then
	PREPARE_ONLY=1 NO_BUILD=1 REEF="$REEF" bash "$ROOT/bench/reader/run.sh"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-bench-convert.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

bytes=$(du -sb "$TRACE" | cut -f1)
find "$TRACE" -type f -exec cat {} + >/dev/null

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# The window: the middle 10 % of the trace's time range.
range=$("$REEF" check "$TRACE" | awk '/time range/ {print $3, $5}')
read -r t0 t1 <<<"$range"
b=$(echo "$t0 + ($t1 - $t0) * 0.45" | bc -l | awk '{printf "%.9f", $1}')
e=$(echo "$t0 + ($t1 - $t0) * 0.55" | bc -l | awk '{printf "%.9f", $1}')

: >"$WORK/cp" ; : >"$WORK/reef" ; : >"$WORK/cut"
for i in $(seq "$RUNS"); do
	rm -rf "$WORK/o"
	s=$(now); cp -r "$TRACE" "$WORK/o"; sync -f "$WORK/o" 2>/dev/null || true; x=$(now)
	echo "$x - $s" | bc -l >>"$WORK/cp"
	rm -rf "$WORK/o"
	s=$(now); "$REEF" convert "$TRACE" -o "$WORK/o" 2>/dev/null; sync -f "$WORK/o" 2>/dev/null || true; x=$(now)
	echo "$x - $s" | bc -l >>"$WORK/reef"
	rm -rf "$WORK/o"
	s=$(now); "$REEF" convert --begin "$b" --end "$e" "$TRACE" -o "$WORK/o" 2>/dev/null; x=$(now)
	echo "$x - $s" | bc -l >>"$WORK/cut"
done
cut_bytes=$(du -sb "$WORK/o" | cut -f1)
tc=$(median <"$WORK/cp"); tr=$(median <"$WORK/reef"); tw=$(median <"$WORK/cut")
mb=$(echo "$bytes / 1000000" | bc -l)
echo "trace: $TRACE, $(printf '%.0f' "$mb") MB, $RUNS rounds, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| | median s | MB/s | share of cp's throughput |"
echo "|---|---|---|---|"
printf '| `cp -r` | %.3f | %.0f | 100 %% |\n' "$tc" "$(echo "$mb / $tc" | bc -l)"
printf '| `reef convert` (no window: every packet copied) | %.3f | %.0f | %.0f %% |\n' "$tr" "$(echo "$mb / $tr" | bc -l)" "$(echo "100 * $tc / $tr" | bc -l)"
printf '| `reef convert --begin --end` (middle 10 %%: %.0f MB written) | %.3f | | |\n' "$(echo "$cut_bytes / 1000000" | bc -l)" "$tw"
