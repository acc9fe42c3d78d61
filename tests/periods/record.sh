#!/usr/bin/env bash
# tests/periods/record.sh OUT_DIR [REEF [ROUNDS]]: builds pattern.c with
# libreef and records its trace (ROUNDS rounds per thread, default 50) into
# OUT_DIR/trace.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$1
REEF=${2:-$ROOT/target/release/reef}
mkdir -p "$OUT/gen"
"$REEF" gen "$ROOT/tests/periods/pattern.reef" -o "$OUT/gen" >/dev/null
make -s -C "$ROOT/tracer" >/dev/null
${CC:-cc} -std=c11 -pedantic -Wall -Wextra -Werror -O1 -I"$ROOT/tracer/include" -I"$OUT/gen" \
    "$ROOT/tests/periods/pattern.c" "$ROOT/tracer/libreef.a" -lpthread -o "$OUT/pattern"
rm -rf "$OUT/trace"
REEF_OUTPUT="$OUT/trace" "$OUT/pattern" "${3:-50}"
