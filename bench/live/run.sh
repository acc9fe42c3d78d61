#!/usr/bin/env bash
# bench/live/run.sh — does a lagging live client slow the traced program?
# Event rate of tests/live/live.c (one thread, tight loop, discard mode)
# with REEF_LISTEN unset, listening with no client, with a client that
# never reads, and with `reef listen` reading; max RSS of each.
#
#   bash bench/live/run.sh            (BENCH_EVENTS=20000000 BENCH_REPS=5;
#                                      REEF_BIN: the reef binary, default
#                                      target/release/reef)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF=${REEF_BIN:-$ROOT/target/release/reef}
[ -x "$REEF" ] || (cd "$ROOT" && cargo build --release -q -p reef-cli)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-live-bench-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
make -s -C "$ROOT/examples" REEF="$REEF" BUILD="$WORK/examples" >/dev/null
cc -std=c11 -O2 -I"$ROOT/tracer/include" -I"$WORK/examples/gen" "$ROOT/tests/live/live.c" \
	"$ROOT/tracer/libreef.a" -lpthread -o "$WORK/live"
python3 "$ROOT/bench/live/bench.py" "$WORK/live" "$REEF"
