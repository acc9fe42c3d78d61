#!/usr/bin/env bash
# tests/kernel/run.sh — kernel traces from ftrace: .dat files recorded here
# through tracefs and `trace-cmd extract` while tests/kernel/workload.c
# runs, read by reef and compared with trace-cmd's own reading, the
# workload's own CPU times and call counts, and babeltrace2 (see check.py).
# Needs root (tracefs) and trace-cmd (scripts/install-deps.sh).
#
#   REEF_BIN=/path/to/reef tests/kernel/run.sh [TEST-NAME-SUBSTRING...]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF_BIN=${REEF_BIN:-$ROOT/target/release/reef}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-kernel-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

for t in trace-cmd babeltrace2 gcc; do
	command -v $t >/dev/null || { echo "kernel tests: $t is not installed (scripts/install-deps.sh)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "kernel tests: tracefs needs root" >&2; exit 1; }
[ -x "$REEF_BIN" ] || { echo "kernel tests: $REEF_BIN is not built" >&2; exit 1; }

gcc -O2 -Wall -Wextra -Werror -pthread -o "$WORK/workload" "$ROOT/tests/kernel/workload.c"
python3 "$ROOT/tests/kernel/check.py" --reef "$REEF_BIN" --workload "$WORK/workload" --work "$WORK" "$@"
