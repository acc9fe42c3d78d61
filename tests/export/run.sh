#!/usr/bin/env bash
# reef convert checked by independent readers: DuckDB, pyarrow and polars
# (from PyPI, in a venv) read the Parquet datasets; the bt2 Python bindings
# (Debian's python3-bt2, babeltrace2 2.0.4) and babeltrace 1.5's
# (python3-babeltrace) are the reference for every value; Google's protobuf
# package (PyPI) decodes the Perfetto output. See check.py. Then Spark SQL
# over a fleet's dataset (spark.py, test name "spark").
#
#   tests/export/run.sh [TEST-NAME-SUBSTRING...]
#
# The binary under test is $REEF_BIN (default: target/release/reef). The
# tests are the traces (named by their path under ../shared/conformance)
# and "spark"; with arguments, only those whose name contains one of them
# run.
set -euo pipefail
cd "$(dirname "$0")/../.."
export REEF_BIN="${REEF_BIN:-$PWD/target/release/reef}"
venv="${REEF_EXPORT_VENV:-/tmp/reef-export-venv}"
if ! "$venv/bin/python3" -c 'import duckdb, pyarrow, polars, pyspark, bt2, google.protobuf' 2>/dev/null; then
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q duckdb==2.0.1 pyarrow==26.0.1 polars==2.1.0 pyspark==4.0.1 protobuf==6.33.6
fi
# Perfetto's trace types, for decoding `--to perfetto`: protoc (Debian's
# protobuf-compiler) over the perfetto_trace.proto that the Rust crate
# reef builds its types from ships, as a descriptor set for Python's
# protobuf package.
schema="$(cargo metadata --format-version 1 --locked --filter-platform "$(rustc -vV | sed -n "s/^host: //p")" | "$venv/bin/python3" -c '
import json, os, sys
m = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"] == "tracing-perfetto-sdk-schema"))')"
export PERFETTO_DESC="$(mktemp)"
trap 'rm -f "$PERFETTO_DESC"' EXIT
protoc -I "$schema/protos" --include_imports --descriptor_set_out="$PERFETTO_DESC" perfetto_trace.proto
status=0
ran=0
rc=0
"$venv/bin/python3" tests/export/check.py "$@" || rc=$?
case $rc in
0) ran=1 ;;
3) ;; # no trace selected
*) ran=1 status=1 ;;
esac
spark=1
if [ $# -gt 0 ]; then
    spark=
    for f in "$@"; do case spark in *"$f"*) spark=1 ;; esac; done
fi
if [ -n "$spark" ]; then
    ran=1
    # Spark in local mode on the machine's OpenJDK 17 (scripts/install-deps.sh).
    "$venv/bin/python3" tests/export/spark.py 2> >(grep -v -e '^WARNING' -e 'WARN ' -e log4j -e 'setLogLevel' -e 'default log level' >&2) || status=1
fi
[ $ran -eq 1 ] || { echo "export: no test matches: $*" >&2; exit 1; }
exit $status
