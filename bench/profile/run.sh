#!/usr/bin/env bash
# bench/profile/run.sh — what profiling costs a recursive program (foo ->
# bar -> baz, calls of depth 10), in one run, interleaved rounds: the
# baseline, libreef sampling at 1 kHz (frame-pointer walk, and the kernel's
# call chain), perf record -g -F 1000 (cpu-clock), gprof (-pg) and
# valgrind --tool=callgrind. Prints a table of wall and CPU time (the
# program and everything it starts: perf's own process too) and the
# overhead over the baseline.
#
#   bench/profile/run.sh [ROUNDS] [N]      defaults: 5 rounds, N = 3000000
#
# Needs: cc, perf (Debian: linux-perf), gprof (binutils), valgrind.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROUNDS=${1:-5}
N=${2:-3000000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-bench-profile.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
make -s -C "$ROOT/tracer"
T=$ROOT/tracer
SRC=$ROOT/bench/profile/foobarbaz.c
CFLAGS="-O2 -g -fno-omit-frame-pointer"
cc $CFLAGS -o "$WORK/fbb" "$SRC"
cc $CFLAGS -o "$WORK/fbb_reef" "$SRC" -L"$T" -Wl,-rpath,"$T" -Wl,--no-as-needed -lreef -pthread
cc $CFLAGS -pg -o "$WORK/fbb_pg" "$SRC"
perf record -q -e cpu-clock -o "$WORK/probe.data" true >/dev/null 2>&1 ||
	{ echo "perf record -e cpu-clock does not work here (kernel.perf_event_paranoid?)" >&2; exit 1; }
python3 "$ROOT/bench/profile/bench.py" "$WORK" "$ROUNDS" "$N"
