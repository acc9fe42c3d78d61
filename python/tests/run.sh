#!/usr/bin/env bash
# The Python package's tests: installs the package from ./python into a
# venv under /tmp (PyPI: maturin to build it, pytest, pyarrow, pandas) made
# from Debian's python3, whose bt2 (python3-bt2) is the reference, and runs
# pytest.
#
#   bash python/tests/run.sh [TEST-NAME-SUBSTRING...]
#
# The CLI under test is $REEF_BIN (default: target/release/reef). With
# arguments, only the tests whose pytest name (file, function, parameters)
# contains one of them run (pytest -k "a or b").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${REEF_PY_VENV:-/tmp/reef-python-venv}
export REEF_BIN=${REEF_BIN:-$ROOT/target/release/reef}
if [ ! -x "$VENV/bin/python" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/pip" install -q pytest pyarrow pandas
# Always rebuilt from this tree (cargo's incremental build in the target
# directory: $CARGO_TARGET_DIR when set).
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$ROOT/python"
cd "$ROOT"
k=()
if [ $# -gt 0 ]; then
    expr=""
    for f in "$@"; do expr="${expr:+$expr or }$f"; done
    k=(-k "$expr")
fi
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "${k[@]}" python/tests
