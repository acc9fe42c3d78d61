#!/usr/bin/env bash
# The README's main command: build reef and libreef, record a trace of the
# bundled example program (examples/demo.c, events in examples/demo.reef),
# then read it back with `reef print` and `reef check`. The binary is
# cargo's, in $CARGO_TARGET_DIR when set (scripts/test.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== building the page of reef view (scripts/build-web.sh) and reef (cargo build --release)"
bash scripts/build-web.sh
cargo build --release --quiet
reef="${CARGO_TARGET_DIR:-$PWD/target}/release/reef"

echo "== generating the trace header and building the example (make -C examples)"
make -s -C examples REEF="$reef"

trace="$PWD/examples/build/trace"
rm -rf "$trace"
echo "== recording: REEF_OUTPUT=$trace examples/build/demo"
REEF_OUTPUT="$trace" examples/build/demo

echo "== reef print $trace | head -15"
"$reef" print "$trace" | head -15
echo "..."
echo "== reef check $trace"
"$reef" check "$trace"
echo "== to see it: $reef view --open $trace"
