#!/usr/bin/env bash
# bench/plugins/run.sh — what C plugins cost per event, same run, same
# trace (bench/reader's 10.4 M-event LTTng-UST trace): `reef check`
# (every field of every event decoded, streams scanned on all cores), then
# the same check with plugin filters (trivial.c: keep everything;
# examples/plugins/field.c: a field read by path and compared) and the
# built-in --filter doing field.c's work, and `reef sink` with trivial.c's
# sink and examples/plugins/count.c (events per name). A filter makes the
# check read the events in time order, so the row of the built-in filter
# tells that cost from the plugin's. Medians of RUNS runs, peak RSS.
#
#   bash bench/plugins/run.sh               RUNS=3
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
ITERS=${ITERS:-2600000}
REEF=${REEF:-$ROOT/target/release/reef}
CACHE="$HOME/.cache/reef-bench/reader"
TRACE="$CACHE/lttng-$ITERS"
if [ ! -f "$CACHE/lttng-$ITERS.complete" ] || [ ! -f "$CACHE/libreef-$ITERS.complete" ]; then
	ITERS=$ITERS PREPARE_ONLY=1 NO_BUILD=1 REEF=$REEF bash "$ROOT/bench/reader/run.sh"
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CC=(gcc -shared -fPIC -O2 -Wall -Wextra -Werror -I "$ROOT/crates/reef-capi/include")
"${CC[@]}" "$ROOT/bench/plugins/trivial.c" -o "$W/all.so"
"${CC[@]}" -DSINK "$ROOT/bench/plugins/trivial.c" -o "$W/nothing.so"
"${CC[@]}" "$ROOT/examples/plugins/field.c" -o "$W/field.so"
"${CC[@]}" "$ROOT/examples/plugins/count.c" -o "$W/count.so"
P=(--plugin "$W/all.so" --plugin "$W/nothing.so" --plugin "$W/field.so" --plugin "$W/count.so")
# shellcheck source=../lib.sh
source "$ROOT/bench/lib.sh"

events=$("$REEF" sink "count=$W/counts" "${P[@]}" "$TRACE" && awk '$1 == "total" {print $2}' "$W/counts")
kept_expr=$("$REEF" stats --json --filter '$evt.a >= 100' "$TRACE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
kept_plugin=$("$REEF" stats --json "${P[@]}" --plugin-filter 'field=payload.a>=100' "$TRACE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
[ "$kept_expr" = "$kept_plugin" ] || { echo "bench/plugins: field.c kept $kept_plugin events, --filter $kept_expr"; exit 1; }

read -r ck_t ck_m < <(measure "$RUNS" "$REEF" check "$TRACE")
read -r ex_t ex_m < <(measure "$RUNS" "$REEF" check --filter '$evt.a >= 100' "$TRACE")
read -r fa_t fa_m < <(measure "$RUNS" "$REEF" check "${P[@]}" --plugin-filter all "$TRACE")
read -r ff_t ff_m < <(measure "$RUNS" "$REEF" check "${P[@]}" --plugin-filter 'field=payload.a>=100' "$TRACE")
read -r sn_t sn_m < <(measure "$RUNS" "$REEF" sink nothing "${P[@]}" "$TRACE")
read -r sc_t sc_m < <(measure "$RUNS" "$REEF" sink "count=$W/counts" "${P[@]}" "$TRACE")

echo
echo "Trace: $TRACE ($events events; $(du -sb "$TRACE" | cut -f1) bytes); $kept_expr events have a >= 100"
echo "Machine: $(nproc) cores, $(uname -r); RUNS=$RUNS"
echo
echo "| command | median s | events/s | ns per event over reef check | ns per event over --filter | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|"
row() { awk -v n="$1" -v t="$2" -v m="$3" -v e="$events" -v c="$ck_t" -v x="$ex_t" 'BEGIN {printf "| %s | %.2f | %.1f M | %.1f | %s | %.0f |\n", n, t, e / t / 1e6, (t - c) * 1e9 / e, (n ~ /plugin|sink/ ? sprintf("%.1f", (t - x) * 1e9 / e) : "–"), m / 1024}'; }
row "reef check" "$ck_t" "$ck_m"
row "reef check --filter '\$evt.a >= 100' (built-in)" "$ex_t" "$ex_m"
row "reef check --plugin-filter all (trivial.c)" "$fa_t" "$fa_m"
row "reef check --plugin-filter field=payload.a>=100 (field.c)" "$ff_t" "$ff_m"
row "reef sink nothing (trivial.c)" "$sn_t" "$sn_m"
row "reef sink count (count.c)" "$sc_t" "$sc_m"
