#!/usr/bin/env bash
# bench/export/run.sh — reef convert --to parquet against the pipelines it
# replaces, side by side in one run, on the reader benchmark's ≥ 10 M-event
# LTTng-UST trace (bench/reader/run.sh records it once, cached):
#   reef convert --to parquet -o DIR T       (every table, zstd)
#   babeltrace2 T > file.txt                 (the usual first step by hand)
#   bt2_to_parquet.py T out.parquet          (bt2 Python bindings → pyarrow;
#                                             only the events table's 4 columns)
#   reef sql DIR 'count per name'            vs  reef stats T   (when reef-sql is built:
#   reef sql T   'count per name'                                 cargo build --profile sql -p reef-sql)
# Prints a markdown table: wall time, events/s, peak RSS (GNU time).
#
#   bash bench/export/run.sh          RUNS=1 by default (the bt2 row takes minutes)
#   SKIP_BT2_PY=1                     leave the Python row out
# Needs what bench/reader needs, and pyarrow in the venv of tests/export/run.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-1}
ITERS=${ITERS:-2600000}
REEF=${REEF:-$ROOT/target/release/reef}
VENV=${REEF_EXPORT_VENV:-/tmp/reef-export-venv}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-bench-export.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

[ -n "${NO_BUILD:-}" ] || (cd "$ROOT" && cargo build --release -q -p reef-cli)
PREPARE_ONLY=1 ITERS=$ITERS bash "$ROOT/bench/reader/run.sh" >&2
T="$HOME/.cache/reef-bench/reader/lttng-$ITERS"
"$VENV/bin/python3" -c 'import pyarrow, bt2' 2>/dev/null || {
    /usr/bin/python3 -m venv --system-site-packages "$VENV"; "$VENV/bin/pip" install -q pyarrow==26.0.1; }
EVENTS=$("$REEF" stats --json "$T" | "$VENV/bin/python3" -c 'import json,sys; print(json.load(sys.stdin)["events"])')

# measure NAME CMD...: best wall time of RUNS, and its peak RSS.
measure() {
    local name=$1; shift
    local best="" rss=""
    for _ in $(seq "$RUNS"); do
        rm -rf "$WORK/out" "$WORK/out.txt" "$WORK/out.parquet"
        /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; return 1; }
        read -r t m <"$WORK/time"
        if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; rss=$m; fi
    done
    printf '| %s | %s | %s | %s |\n' "$name" "$best" \
        "$(awk "BEGIN{ if ($best > 0) printf \"%.2f M\", $EVENTS / $best / 1e6; else print \"-\" }")" \
        "$(awk "BEGIN{ printf \"%.0f MiB\", $rss / 1024 }")"
}

echo "trace: $T ($EVENTS events, $(du -sh "$T" | cut -f1))"
echo
echo "| command | wall s | events/s | peak RSS |"
echo "|---|---|---|---|"
measure "reef convert --to parquet" "$REEF" convert --to parquet -o "$WORK/out" "$T"
"$REEF" convert --to parquet -o "$WORK/ds" "$T" 2>/dev/null
measure "babeltrace2 T > file.txt" sh -c "babeltrace2 '$T' > '$WORK/out.txt'"
if [ -z "${SKIP_BT2_PY:-}" ]; then
    measure "bt2 → pyarrow (4 columns)" "$VENV/bin/python3" "$ROOT/bench/export/bt2_to_parquet.py" "$T" "$WORK/out.parquet"
fi
measure "reef stats (count per name)" "$REEF" stats "$T"
if [ -x "$(dirname "$REEF")/reef-sql" ] || [ -x "$(dirname "$REEF")/../sql/reef-sql" ] || command -v reef-sql >/dev/null; then
    measure "reef sql DATASET (count per name)" "$REEF" sql "$WORK/ds" "SELECT name, count(*) FROM events GROUP BY name"
    measure "reef sql TRACE (count per name; converts first)" "$REEF" sql "$T" "SELECT name, count(*) FROM events GROUP BY name"
fi
echo
echo "dataset: $(du -sh "$WORK/ds" | cut -f1) ($(find "$WORK/ds" -name '*.parquet' | wc -l) files); trace $(du -sh "$T" | cut -f1)"
