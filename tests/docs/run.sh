#!/usr/bin/env bash
# tests/docs/run.sh [NAME-SUBSTRING...]: run every runnable shell block of
# README.md and docs/*.md (a fenced block whose info string is
# `sh runnable`) against the demo trace, and fail naming the file, the line
# and the command when one exits non-zero.
#
# First a self-test: the harness must pass on tests/docs/selftest/good.md
# and fail, naming the broken command's line, on selftest/broken.md.
#
# The binary under test is $REEF_BIN (default: target/release/reef); it is
# on PATH as `reef` while the blocks run. A test is a block, named
# FILE:LINE (README.md:120); with arguments, only the blocks whose name
# contains one of them run (the self-test always runs).
#
# Each block runs in a fresh temporary directory holding:
#   trace, examples/build/trace   the demo trace (examples/demo.c, recorded
#                                 as scripts/demo.sh records it)
#   examples/build/demo           the demo program
#   kernel                        an LTTng kernel trace (../shared/conformance)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export REEF_BIN=${REEF_BIN:-$ROOT/target/release/reef}
[ -x "$REEF_BIN" ] || { echo "docs: $REEF_BIN is not an executable (set REEF_BIN or cargo build --release)" >&2; exit 1; }
exec python3 "$ROOT/tests/docs/rundocs.py" --root "$ROOT" "$@"
