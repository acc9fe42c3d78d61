#!/usr/bin/env bash
# bench/kernel/run.sh — reading a large ftrace recording: reef against
# trace-cmd, side by side in one run.
#
# Records once (cached under ~/.cache/reef-bench/kernel): tracefs buffers
# of BUFFER_MB MiB per CPU (default 512: 1 GiB of ring-buffer data on two
# CPUs) filled by bench/kernel/storm.c (a system-call storm on every CPU)
# with sched, irq, raw_syscalls and two syscalls events enabled, written
# by `trace-cmd extract` (version 7, zstd, as trace-cmd writes it here).
# Then runs, RUNS times each (trace-cmd report once unless TC_RUNS is set):
#   trace-cmd report FILE > /dev/null   vs  reef print FILE > /dev/null
#   reef check FILE (decode every field), reef cputop FILE
# and prints a markdown table: median wall time, events/s, trace-cmd/reef
# ratio, peak RSS (GNU time).
#
#   sudo bash bench/kernel/run.sh          RUNS=3 by default
#   BUFFER_MB=128 RUNS=5 bash bench/kernel/run.sh
#
# Needs root (tracefs), trace-cmd, gcc, GNU time (scripts/install-deps.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
TC_RUNS=${TC_RUNS:-1}
BUFFER_MB=${BUFFER_MB:-512}
REEF=${REEF:-$ROOT/target/release/reef}
CACHE="$HOME/.cache/reef-bench/kernel"
DAT="$CACHE/storm-${BUFFER_MB}M.dat"
T=/sys/kernel/tracing
mkdir -p "$CACHE"
[ -x "$REEF" ] || { echo "bench/kernel: $REEF is not built" >&2; exit 1; }

if [ ! -s "$DAT" ]; then
    [ -d "$T/events" ] || mount -t tracefs nodev "$T"
    gcc -O2 -Wall -Wextra -Werror -pthread -o "$CACHE/storm" "$ROOT/bench/kernel/storm.c"
    old_kb=$(cut -d' ' -f1 < "$T/buffer_size_kb")
    restore() { echo 0 > "$T/tracing_on"; echo > "$T/set_event"; echo "$old_kb" > "$T/buffer_size_kb"; echo > "$T/trace"; }
    trap restore EXIT
    echo 0 > "$T/tracing_on"; echo > "$T/set_event"; echo > "$T/trace"
    echo $((BUFFER_MB * 1024)) > "$T/buffer_size_kb"
    printf 'sched:*\nirq:*\nraw_syscalls:*\nsyscalls:sys_enter_getppid\nsyscalls:sys_exit_getppid\nsyscalls:sys_enter_read\nsyscalls:sys_exit_read\n' > "$T/set_event"
    echo 1 > "$T/tracing_on"
    "$CACHE/storm" $(( BUFFER_MB / 32 + 2 ))
    echo 0 > "$T/tracing_on"
    trace-cmd extract -o "$DAT.part" >/dev/null 2>&1
    mv "$DAT.part" "$DAT"
    restore
    trap - EXIT
fi

data_bytes=$(trace-cmd dump --options "$DAT" 2>/dev/null | awk '/data offset and size/ {s += $3} END {print s}')
events=$("$REEF" stats "$DAT" 2>/dev/null | awk '/^events / {print $2}')

# median wall time and peak RSS (KiB) of a command run N times
# shellcheck source=../lib.sh
source "$ROOT/bench/lib.sh"

read -r tc_t tc_m < <(measure "$TC_RUNS" trace-cmd report "$DAT")
read -r rp_t rp_m < <(measure "$RUNS" "$REEF" print "$DAT")
read -r rc_t rc_m < <(measure "$RUNS" "$REEF" check "$DAT")
read -r ru_t ru_m < <(measure "$RUNS" "$REEF" cputop "$DAT")

echo
echo "File: $DAT ($(stat -c %s "$DAT") bytes; $events events; CPU data $data_bytes bytes compressed, ${BUFFER_MB} MiB buffer per CPU)"
echo "Machine: $(nproc) cores, $(uname -r); RUNS=$RUNS (trace-cmd: $TC_RUNS)"
echo
echo "| command | median s | events/s | trace-cmd / reef | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|"
row() { awk -v n="$1" -v t="$2" -v m="$3" -v e="$events" -v tc="$tc_t" 'BEGIN {printf "| %s | %.2f | %.1f M | %s | %.0f |\n", n, t, e / t / 1e6, (n ~ /^trace-cmd/ ? "1" : sprintf("%.1f", tc / t)), m / 1024}'; }
row "trace-cmd report > /dev/null" "$tc_t" "$tc_m"
row "reef print > /dev/null" "$rp_t" "$rp_m"
row "reef check" "$rc_t" "$rc_m"
row "reef cputop" "$ru_t" "$ru_m"
