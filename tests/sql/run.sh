#!/usr/bin/env bash
# reef sql checked against independent sources: `reef stats` counts,
# `reef cputop`/`reef syscallstats` (LAMI), and DuckDB (PyPI, the same pin
# as tests/export) running the same SQL over the same dataset. See check.py.
#
#   tests/sql/run.sh [TEST-NAME-SUBSTRING...]
#
# The binary under test is $REEF_BIN (default: target/release/reef); its
# engine reef-sql is looked for beside it and in ../sql from it, where
# `cargo build --profile sql -p reef-sql` puts it (in $CARGO_TARGET_DIR
# when set), and built when missing. With arguments, only the tests whose
# name contains one of them run (check.py lists the names).
set -euo pipefail
cd "$(dirname "$0")/../.."
export REEF_BIN="${REEF_BIN:-$PWD/target/release/reef}"
reef=$REEF_BIN
if [ ! -x "$(dirname "$reef")/reef-sql" ] && [ ! -x "$(dirname "$reef")/../sql/reef-sql" ]; then
    cargo build --profile sql -q -p reef-sql
fi
venv="${REEF_EXPORT_VENV:-/tmp/reef-export-venv}"
if ! "$venv/bin/python3" -c 'import duckdb' 2>/dev/null; then
    venv="${REEF_SQL_VENV:-/tmp/reef-sql-venv}"
    if ! "$venv/bin/python3" -c 'import duckdb' 2>/dev/null; then
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv"
        "$venv/bin/pip" install -q duckdb==2.0.1
    fi
fi
"$venv/bin/python3" tests/sql/check.py "$@"
