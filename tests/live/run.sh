#!/usr/bin/env bash
# tests/live/run.sh — end-to-end tests of live streaming: libreef's
# REEF_LISTEN and `reef listen` (see check.py for the list).
#
# The binary under test is $REEF_BIN (default: target/release/reef);
# babeltrace2 comes from scripts/install-deps.sh. With arguments, only the
# tests whose name contains one of them run.
#
#   tests/live/run.sh [TEST-NAME-SUBSTRING...]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF=${REEF_BIN:-$ROOT/target/release/reef}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-live-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

command -v babeltrace2 >/dev/null || { echo "live tests: babeltrace2 is not installed" >&2; exit 1; }

make -s -C "$ROOT/examples" REEF="$REEF" BUILD="$WORK/examples"
cc -std=c11 -pedantic -Wall -Wextra -Werror -O2 -I"$ROOT/tracer/include" -I"$WORK/examples/gen" \
	"$ROOT/tests/live/live.c" "$ROOT/tracer/libreef.a" -lpthread -o "$WORK/live"
python3 "$ROOT/tests/live/check.py" --reef "$REEF" --demo "$WORK/examples/demo" --live "$WORK/live" \
	--work "$WORK" "$@"
