#!/usr/bin/env bash
# The Python package's tests: installs the package from ./python into a
# venv under /tmp (PyPI: maturin to build it, pytest, pyarrow, pandas) made
# from Debian's python3, whose bt2 (python3-bt2) is the reference, and runs
# pytest. Usage: bash python/tests/run.sh [REEF_BIN]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${REEF_PY_VENV:-/tmp/reef-python-venv}
export REEF_BIN=${1:-$ROOT/target/release/reef}
if [ ! -x "$VENV/bin/python" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/pip" install -q pytest pyarrow pandas
# Always rebuilt from this tree (cargo's incremental build in target/).
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$ROOT/python"
cd "$ROOT"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests
