#!/usr/bin/env bash
# bench/kernel/perf.sh — perf.data and the cost of recording the kernel,
# side by side in one run.
#
# 1. Reading: a perf.data of at least PERF_MB MB (default 1024), recorded
#    once (cached under ~/.cache/reef-bench/kernel) by `perf record -e
#    'sched:*' -e 'irq:*' -e 'raw_syscalls:*' -a` around bench/kernel/storm.c
#    (a system-call storm on every CPU): `perf script > /dev/null` against
#    `reef print`, `reef check` and `reef cputop`, medians of RUNS runs
#    (perf script once unless PERF_RUNS is set), peak RSS.
# 2. Recording: storm.c making ROUNDS rounds of 200 system calls per CPU
#    (default 50000), its own wall time alone and while recorded with the
#    same events by ftrace (tracefs buffers of BUFFER_KB KiB per CPU, read
#    afterwards by `trace-cmd extract`), by `reef record --kernel` (its
#    readers draining the buffers as it runs) and by `perf record -a`;
#    medians of RUNS runs, and the slowdown against the run alone.
#
#   sudo bash bench/kernel/perf.sh          RUNS=3 by default
#
# Needs root (tracefs), perf, trace-cmd, gcc, GNU time.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
PERF_RUNS=${PERF_RUNS:-1}
PERF_MB=${PERF_MB:-1024}
ROUNDS=${ROUNDS:-50000}
BUFFER_KB=${BUFFER_KB:-65536}
REEF=${REEF:-$ROOT/target/release/reef}
CACHE="$HOME/.cache/reef-bench/kernel"
DATA="$CACHE/storm-${PERF_MB}M.perf.data"
T=/sys/kernel/tracing
EVENTS="sched:* irq:* raw_syscalls:*"
mkdir -p "$CACHE"
[ -x "$REEF" ] || { echo "bench/kernel: $REEF is not built" >&2; exit 1; }
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
gcc -O2 -Wall -Wextra -Werror -pthread -o "$CACHE/storm" "$ROOT/bench/kernel/storm.c"

perf_events=()
for e in $EVENTS; do perf_events+=(-e "$e"); done

# Record for longer until the file is big enough.
secs=2
while [ ! -s "$DATA" ] || [ "$(stat -c %s "$DATA")" -lt $((PERF_MB * 1000000)) ]; do
    perf record -q "${perf_events[@]}" -a -m 16M -o "$DATA.part" -- "$CACHE/storm" "$secs" >/dev/null 2>&1
    mv "$DATA.part" "$DATA"
    secs=$((secs * 2))
    [ "$secs" -le 64 ] || break
done

events=$("$REEF" stats "$DATA" 2>/dev/null | awk '/^events / {print $2}')

# median wall time and peak RSS (KiB) of a command run N times
# shellcheck source=../lib.sh
source "$ROOT/bench/lib.sh"

read -r ps_t ps_m < <(measure "$PERF_RUNS" perf script -i "$DATA")
read -r rp_t rp_m < <(measure "$RUNS" "$REEF" print "$DATA")
read -r rc_t rc_m < <(measure "$RUNS" "$REEF" check "$DATA")
read -r ru_t ru_m < <(measure "$RUNS" "$REEF" cputop "$DATA")

# The storm's own wall time, recorded by each tool; median of RUNS.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
alone() { "$CACHE/storm" 0 "$ROUNDS"; }
ftrace() {
    echo 0 > "$T/tracing_on"; echo > "$T/set_event"; echo > "$T/trace"
    echo "$BUFFER_KB" > "$T/buffer_size_kb"
    for e in $EVENTS; do echo "$e" >> "$T/set_event"; done
    echo 1 > "$T/tracing_on"
    "$CACHE/storm" 0 "$ROUNDS"
    echo 0 > "$T/tracing_on"
    trace-cmd extract -o "$CACHE/rec.dat" >/dev/null 2>&1
    echo > "$T/set_event"; echo > "$T/trace"
}
reef_rec() {
    rm -rf "$CACHE/rec-reef"
    "$REEF" record --kernel -e sched,irq,raw_syscalls --buffer-size "$BUFFER_KB" -o "$CACHE/rec-reef" -- "$CACHE/storm" 0 "$ROUNDS" 2>/dev/null
}
perf_rec() {
    perf record -q "${perf_events[@]}" -a -m 16M -o "$CACHE/rec.perf.data" -- "$CACHE/storm" 0 "$ROUNDS" 2>/dev/null
}
declare -A wall
for how in alone ftrace reef_rec perf_rec; do
    wall[$how]=$(for _ in $(seq "$RUNS"); do $how | tail -1; done | median)
done

echo
echo "File: $DATA ($(stat -c %s "$DATA") bytes; $events events)"
echo "Machine: $(nproc) cores, $(uname -r); perf $(perf --version | awk '{print $3}'); RUNS=$RUNS (perf script: $PERF_RUNS)"
echo
echo "| command | median s | events/s | perf script / reef | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|"
row() { awk -v n="$1" -v t="$2" -v m="$3" -v e="$events" -v ps="$ps_t" 'BEGIN {printf "| %s | %.2f | %.1f M | %s | %.0f |\n", n, t, e / t / 1e6, (n ~ /^perf/ ? "1" : sprintf("%.1f", ps / t)), m / 1024}'; }
row "perf script > /dev/null" "$ps_t" "$ps_m"
row "reef print > /dev/null" "$rp_t" "$rp_m"
row "reef check" "$rc_t" "$rc_m"
row "reef cputop" "$ru_t" "$ru_m"
echo
echo "Recording: storm.c, $ROUNDS rounds of 200 system calls on each of $(nproc) CPUs; events $EVENTS"
echo
echo "| recorded by | storm wall s | slowdown |"
echo "|---|---:|---:|"
for how in alone ftrace reef_rec perf_rec; do
    case $how in
        alone) name="nothing" ;;
        ftrace) name="ftrace (tracefs, then trace-cmd extract)" ;;
        reef_rec) name="reef record --kernel" ;;
        perf_rec) name="perf record -a" ;;
    esac
    awk -v n="$name" -v t="${wall[$how]}" -v a="${wall[alone]}" 'BEGIN {printf "| %s | %.3f | %.2f× |\n", n, t, t / a}'
done
