#!/usr/bin/env bash
# tests/tracer/run.sh — end-to-end tests of `reef gen` and libreef.
#
# Builds libreef, generates headers with the reef binary under test,
# compiles the test programs and the example, records traces and checks
# them with babeltrace2 and `reef print`. See check.py for the list of
# tests. Needs Debian's babeltrace2 (scripts/install-deps.sh).
#
#   tests/tracer/run.sh [TEST-NAME-SUBSTRING...]
#   REEF_BIN=/path/to/reef tests/tracer/run.sh   (default: target/release/reef)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF_BIN=${REEF_BIN:-$ROOT/target/release/reef}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-tracer-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

command -v babeltrace2 >/dev/null || { echo "tracer tests: babeltrace2 is not installed (scripts/install-deps.sh)" >&2; exit 1; }
[ -x "$REEF_BIN" ] || { echo "tracer tests: $REEF_BIN is not an executable (build it: cargo build --release --bin reef, or set REEF_BIN)" >&2; exit 1; }

make -s -C "$ROOT/tracer"
python3 "$ROOT/tests/tracer/check.py" --root "$ROOT" --work "$WORK" --reef "$REEF_BIN" --gen "$REEF_BIN gen" "$@"
