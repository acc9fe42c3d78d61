#!/usr/bin/env bash
# bench/live/view.sh — `reef view --live` under load (see view.py): a program
# recording 10 M events/s for 30 s, with no viewer and with the viewer's
# page open in headless Chromium.
#
#   bash bench/live/view.sh            (BENCH_RATE=10000000 BENCH_SECS=30 BENCH_REPS=1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF=${REEF:-$ROOT/target/release/reef}
[ -x "$REEF" ] || (cd "$ROOT" && cargo build --release -q -p reef-cli)
[ -d "$ROOT/web/node_modules/playwright-core" ] || bash "$ROOT/scripts/build-web.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-view-live-bench-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
make -s -C "$ROOT/examples" REEF="$REEF" BUILD="$WORK/examples" >/dev/null
cc -std=c11 -O2 -I"$ROOT/tracer/include" -I"$WORK/examples/gen" "$ROOT/tests/live/live.c" \
	"$ROOT/tracer/libreef.a" -lpthread -o "$WORK/live"
python3 "$ROOT/bench/live/view.py" "$WORK/live" "$REEF" "$ROOT/bench/live/page.mjs"
