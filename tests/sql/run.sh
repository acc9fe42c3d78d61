#!/usr/bin/env bash
# reef sql checked against independent sources: `reef stats` counts,
# `reef cputop`/`reef syscallstats` (LAMI), and DuckDB (PyPI, the same pin
# as tests/export) running the same SQL over the same dataset. See check.py.
# Usage: tests/sql/run.sh [REEF]   (reef-sql is looked for beside REEF and in
# target/sql, where `cargo build --profile sql -p reef-sql` puts it; built when missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
reef="${1:-$PWD/target/release/reef}"
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
"$venv/bin/python3" tests/sql/check.py "$reef"
