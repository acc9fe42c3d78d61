#!/usr/bin/env bash
# tests/tracer/run.sh — end-to-end tests of `reef gen` and libreef.
#
# Assumes `cargo build --release` has run and Debian's babeltrace2 is
# installed. Builds libreef, generates headers, compiles the test programs
# and the example, records traces and checks them with babeltrace2 (and
# `reef print` when it works). See check.py for the list of tests.
#
#   tests/tracer/run.sh [TEST-NAME-SUBSTRING...]
#   REEF=/path/to/reef tests/tracer/run.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF=${REEF:-$ROOT/target/release/reef}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-tracer-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

command -v babeltrace2 >/dev/null || { echo "tracer tests: babeltrace2 is not installed" >&2; exit 1; }

if [ -x "$REEF" ] && "$REEF" gen --help >/dev/null 2>&1; then
	GEN="$REEF gen"
else
	echo "note: '$REEF gen' is not available; using the reef-gen example binary instead"
	(cd "$ROOT" && cargo build --release -q -p reef-gen --example gen)
	GEN="$ROOT/target/release/examples/gen"
fi

make -s -C "$ROOT/tracer"
python3 "$ROOT/tests/tracer/check.py" --root "$ROOT" --work "$WORK" --reef "$REEF" --gen "$GEN" "$@"
