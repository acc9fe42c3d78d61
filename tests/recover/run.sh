#!/usr/bin/env bash
# tests/recover/run.sh — `reef recover` on damaged crash-safe traces: a
# libreef program (tests/tracer/crash.c, REEF_CRASH_SAFE=1) is killed, and
# copies of its ring and stream files are damaged one way each (a FIFO
# among them, a zeroed ring magic, two rings claiming one stream, bogus
# packet sizes, garbled bytes). See check.py for the cases and what each
# must give; babeltrace2 reads every output, and the threads' own counts
# of the events they completed (crash.c's side files) are the reference.
#
#   REEF_BIN=/path/to/reef tests/recover/run.sh [TEST-NAME-SUBSTRING...]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF_BIN=${REEF_BIN:-$ROOT/target/release/reef}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-recover-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

command -v babeltrace2 >/dev/null || { echo "recover tests: babeltrace2 is not installed (scripts/install-deps.sh)" >&2; exit 1; }
[ -x "$REEF_BIN" ] || { echo "recover tests: $REEF_BIN is not built" >&2; exit 1; }

make -s -C "$ROOT/tracer"
"$REEF_BIN" gen "$ROOT/tests/tracer/crash.reef" -o "$WORK/crash-gen" >/dev/null
gcc -x c -std=c11 -pedantic -Wall -Wextra -Werror -O2 -I"$ROOT/tracer/include" -I"$WORK/crash-gen" \
	-c "$ROOT/tests/tracer/crash.c" -o "$WORK/crash.o"
g++ "$WORK/crash.o" "$ROOT/tracer/libreef.a" -lpthread -o "$WORK/crash"
python3 "$ROOT/tests/recover/check.py" --reef "$REEF_BIN" --crash "$WORK/crash" --work "$WORK" "$@"
