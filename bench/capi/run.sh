#!/usr/bin/env bash
# bench/capi/run.sh — reading through C APIs, same run, same trace: count
# the events of each name and sum one integer field (quad's `a`) over
# bench/reader's 10.4 M-event LTTng-UST trace, by
#   count_reef (libreef_reader's C API)
#   count_bt2  (libbabeltrace2's C API: source.ctf.fs → filter.utils.muxer
#               → a simple sink; Debian's libbabeltrace2-dev)
# and by `reef check` and `reef stats` on the same trace. The two programs'
# outputs must be equal. Medians of RUNS runs (bt2: BT2_RUNS), peak RSS.
#
#   bash bench/capi/run.sh               RUNS=3, BT2_RUNS=1
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
BT2_RUNS=${BT2_RUNS:-1}
ITERS=${ITERS:-2600000}
REEF=${REEF:-$ROOT/target/release/reef}
LIB=$(dirname "$REEF")
CACHE="$HOME/.cache/reef-bench/reader"
TRACE="$CACHE/lttng-$ITERS"
[ -f "$LIB/libreef_reader.so" ] || { echo "bench/capi: $LIB/libreef_reader.so is not built" >&2; exit 1; }
pkg-config --exists babeltrace2 || DEBIAN_FRONTEND=noninteractive apt-get install -y -q libbabeltrace2-dev >/dev/null
if [ ! -f "$CACHE/lttng-$ITERS.complete" ] || [ ! -f "$CACHE/libreef-$ITERS.complete" ]; then
	ITERS=$ITERS PREPARE_ONLY=1 bash "$ROOT/bench/reader/run.sh"
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ln -s "$LIB/libreef_reader.so" "$W/libreef_reader.so"
ln -s "$LIB/libreef_reader.so" "$W/libreef_reader.so.0"   # its soname
gcc -O2 -Wall -Wextra -Werror -I "$ROOT/crates/reef-capi/include" -o "$W/count_reef" "$ROOT/bench/capi/count_reef.c" \
	-L "$W" -lreef_reader -Wl,-rpath,"$W"
gcc -O2 -Wall -Wextra -Werror -o "$W/count_bt2" "$ROOT/bench/capi/count_bt2.c" $(pkg-config --cflags --libs babeltrace2)

"$W/count_reef" a "$TRACE" > "$W/reef.out"
"$W/count_bt2" a "$TRACE" > "$W/bt2.out"
cmp -s "$W/reef.out" "$W/bt2.out" || { echo "bench/capi: the counts differ"; diff "$W/reef.out" "$W/bt2.out" | head; exit 1; }
events=$(awk '$1 != "sum" {s += $2} END {print s}' "$W/reef.out")

# shellcheck source=../lib.sh
source "$ROOT/bench/lib.sh"
read -r bt_t bt_m < <(measure "$BT2_RUNS" "$W/count_bt2" a "$TRACE")
read -r cr_t cr_m < <(measure "$RUNS" "$W/count_reef" a "$TRACE")
read -r ck_t ck_m < <(measure "$RUNS" "$REEF" check "$TRACE")
read -r st_t st_m < <(measure "$RUNS" "$REEF" stats "$TRACE")

echo
echo "Trace: $TRACE ($events events; $(du -sb "$TRACE" | cut -f1) bytes)"
echo "Machine: $(nproc) cores, $(uname -r); babeltrace2 $(pkg-config --modversion babeltrace2); RUNS=$RUNS (bt2: $BT2_RUNS)"
echo
echo "| program | median s | events/s | vs libbabeltrace2 | vs reef check | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|"
row() { awk -v n="$1" -v t="$2" -v m="$3" -v e="$events" -v b="$bt_t" -v c="$ck_t" 'BEGIN {printf "| %s | %.2f | %.1f M | %.1f× faster | %.2f× its time | %.0f |\n", n, t, e / t / 1e6, b / t, t / c, m / 1024}'; }
row "count_bt2 (libbabeltrace2 C API)" "$bt_t" "$bt_m"
row "count_reef (libreef_reader C API)" "$cr_t" "$cr_m"
row "reef check" "$ck_t" "$ck_m"
row "reef stats" "$st_t" "$st_m"
