#!/usr/bin/env bash
# bench/reader/run.sh — reading speed and memory of reef against babeltrace2
# (and babeltrace 1.5 for reference), measured side by side in one run.
#
# Prepares once, cached under ~/.cache/reef-bench/reader (outside the repo):
#   - an LTTng-UST 2.13 trace of ≥ 10 M events (lttng-sessiond --no-kernel,
#     bench/reader/loop.c: two threads, each recording a 4 x u64 event and a
#     string event per iteration, blocking channel: nothing discarded);
#   - the same program's trace written by libreef (blocking mode).
# Then, for each trace, runs RUNS times each:
#   babeltrace2 T -o dummy        vs  reef check T          (decode everything)
#   babeltrace2 T > /dev/null     vs  reef print T > /dev/null
#   babeltrace T > /dev/null      (1.5, for reference)
#   reef check/print with -j 1 and -j 2 (worker scaling)
#   a 1 % window at the end of the trace: babeltrace2 --begin vs reef print --begin
# and prints a markdown table: median wall time, events/s, ratio peer/reef,
# and peak RSS (GNU time). It also checks once that `reef print` and
# `babeltrace2` print byte-identical text.
#
#   bash bench/reader/run.sh                RUNS=3 by default
#   RUNS=5 ITERS=2600000 bash bench/reader/run.sh
#   SKIP_BT1=1                              leave babeltrace 1.5 out
#   PREPARE_ONLY=1                          record the traces, measure nothing
#   NO_BUILD=1                              use the reef binary as is (REEF=path)
#
# Needs: lttng-tools + liblttng-ust-dev, babeltrace2, babeltrace (1.5),
# gcc, GNU time (/usr/bin/time; scripts/install-deps.sh installs them all).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/reader"
RUNS=${RUNS:-3}
# Iterations per thread: 2 threads x 2 events x ITERS events.
ITERS=${ITERS:-2600000}
CACHE="$HOME/.cache/reef-bench/reader"
REEF=${REEF:-$ROOT/target/release/reef}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-bench-reader.XXXXXX")
STARTED_SESSIOND=""
SESSION="reefreader$$"
SESSION_CREATED=""

cleanup() {
	if [ -n "$SESSION_CREATED" ]; then lttng destroy "$SESSION" >/dev/null 2>&1 || true; fi
	if [ -n "$STARTED_SESSIOND" ]; then kill "$STARTED_SESSIOND" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

note() { echo "run.sh: $*" >&2; }

[ -n "${NO_BUILD:-}" ] || (cd "$ROOT" && cargo build --release -q -p reef-cli)
CFLAGS="-O2 -g -std=gnu11 -Wall -Wextra -Werror"
mkdir -p "$CACHE"

# ---- the LTTng-UST trace --------------------------------------------------------
LTTNG_TRACE="$CACHE/lttng-$ITERS"
if [ ! -f "$LTTNG_TRACE.complete" ]; then
	rm -rf "$LTTNG_TRACE"
	note "recording the LTTng-UST trace ($((ITERS * 4)) events) into $LTTNG_TRACE"
	gcc -O2 -g -I"$HERE" -c "$HERE/reader_tp.c" -o "$WORK/reader_tp.o"
	gcc $CFLAGS -DUSE_LTTNG -I"$HERE" "$HERE/loop.c" "$WORK/reader_tp.o" \
		-llttng-ust -ldl -lpthread -o "$WORK/loop_lttng"
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --daemonize --no-kernel
		sleep 1
		STARTED_SESSIOND=$(pgrep -n -x lttng-sessiond || true)
	fi
	lttng create "$SESSION" --output="$LTTNG_TRACE.tmp" >/dev/null
	SESSION_CREATED=1
	lttng enable-channel -u -s "$SESSION" --subbuf-size=1M --num-subbuf=8 \
		--blocking-timeout=inf reader >/dev/null
	lttng enable-event -u -s "$SESSION" -c reader 'reef_reader:*' >/dev/null
	lttng start "$SESSION" >/dev/null
	LTTNG_UST_REGISTER_TIMEOUT=10000 LTTNG_UST_ALLOW_BLOCKING=1 "$WORK/loop_lttng" "$ITERS"
	lttng stop "$SESSION" >/dev/null
	lttng destroy "$SESSION" >/dev/null
	SESSION_CREATED=""
	if [ -n "$STARTED_SESSIOND" ]; then
		kill "$STARTED_SESSIOND" 2>/dev/null || true
		STARTED_SESSIOND=""
	fi
	mv "$LTTNG_TRACE.tmp" "$LTTNG_TRACE"
	touch "$LTTNG_TRACE.complete"
fi

# ---- the libreef trace ------------------------------------------------------------
REEF_TRACE="$CACHE/libreef-$ITERS"
if [ ! -f "$REEF_TRACE.complete" ]; then
	rm -rf "$REEF_TRACE" "$REEF_TRACE.tmp"
	note "recording the libreef trace ($((ITERS * 4)) events) into $REEF_TRACE"
	make -s -C "$ROOT/tracer" || [ -f "$ROOT/tracer/libreef.a" ]
	"$REEF" gen "$HERE/reader.reef" -o "$WORK/gen" >/dev/null
	gcc $CFLAGS -I"$ROOT/tracer/include" -I"$WORK/gen" "$HERE/loop.c" \
		"$ROOT/tracer/libreef.a" -lpthread -o "$WORK/loop_reef"
	REEF_OUTPUT="$REEF_TRACE.tmp" REEF_MODE=block REEF_BUFFER_SIZE=16M \
		"$WORK/loop_reef" "$ITERS"
	mv "$REEF_TRACE.tmp" "$REEF_TRACE"
	touch "$REEF_TRACE.complete"
fi

if [ -n "${PREPARE_ONLY:-}" ]; then
	note "traces ready: $LTTNG_TRACE $REEF_TRACE"
	exit 0
fi

# ---- measurement ----------------------------------------------------------------------
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# measure KEY CMD...: runs CMD (stdout to /dev/null) RUNS times; records the
# median wall time (s) in T[KEY] and the largest peak RSS (MiB) in M[KEY].
declare -A T M
measure() {
	local key=$1 i s e rss=0 r
	shift
	for i in $(seq "$RUNS"); do
		s=$(date +%s%N)
		/usr/bin/time -f %M -o "$WORK/rss" "$@" >/dev/null 2>"$WORK/err" || {
			note "failed: $* (exit $?)"
			sed 's/^/    | /' "$WORK/err" | head -5 >&2
		}
		e=$(date +%s%N)
		r=$(tail -n 1 "$WORK/rss")
		[ "$r" -gt "$rss" ] && rss=$r
		echo "$(((e - s) / 1000000))" >>"$WORK/times.$key"
	done
	T[$key]=$(median <"$WORK/times.$key" | awk '{printf "%.3f", $1 / 1000}')
	M[$key]=$(awk -v k="$rss" 'BEGIN {printf "%.1f", k / 1024}')
}

row() { # LABEL KEY EVENTS [PEERKEY]
	local label=$1 key=$2 events=$3 peer=${4:-} ratio=""
	if [ -n "$peer" ]; then
		ratio=$(awk -v a="${T[$peer]}" -v b="${T[$key]}" 'BEGIN {printf "%.1fx", a / b}')
	fi
	printf "| %s | %s | %s | %s | %s |\n" "$label" "${T[$key]}" \
		"$(awk -v n="$events" -v t="${T[$key]}" 'BEGIN {printf "%.2f M", n / t / 1e6}')" \
		"$ratio" "${M[$key]}"
}

OUT="$WORK/table.md"
{
	echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
		"babeltrace2 $(babeltrace2 --version | head -n1 | awk '{print $2}'); median of $RUNS runs"
} >"$OUT"

for name in lttng libreef; do
	if [ $name = lttng ]; then TR=$LTTNG_TRACE; else TR=$REEF_TRACE; fi
	events=$("$REEF" check "$TR" | awk '/events:/ {s += $2} END {print s}')
	size=$(du -sm "$TR" | cut -f1)
	note "$name trace: $events events, $size MB"
	# The output must be babeltrace2's, byte for byte.
	if cmp -s <(babeltrace2 "$TR" 2>&1) <("$REEF" print "$TR" 2>&1); then same=identical; else same=DIFFERENT; fi
	# A window at the end: from the time of the event at 99 % of the trace.
	at=$(babeltrace2 --clock-seconds "$TR" 2>/dev/null | sed -n "$((events * 99 / 100))p" | cut -c2-21)
	note "$name: measuring (window from $at)"
	measure bt2_dummy babeltrace2 "$TR" -o dummy
	measure reef_check "$REEF" check "$TR"
	measure reef_check_j1 "$REEF" check -j 1 "$TR"
	measure reef_check_j2 "$REEF" check -j 2 "$TR"
	measure bt2_text babeltrace2 "$TR"
	measure reef_print "$REEF" print "$TR"
	measure reef_print_j1 "$REEF" print -j 1 "$TR"
	measure reef_print_j2 "$REEF" print -j 2 "$TR"
	if [ -z "${SKIP_BT1:-}" ] && command -v babeltrace >/dev/null; then
		measure bt1_text babeltrace "$TR"
	fi
	measure bt2_window babeltrace2 --begin="$at" "$TR"
	measure reef_window "$REEF" print --begin="$at" "$TR"
	wevents=$(babeltrace2 --begin="$at" "$TR" 2>/dev/null | wc -l)
	{
		echo
		echo "**$name trace**: $events events, $size MB; reef print output $same to babeltrace2's"
		echo
		echo "| command | median s | events/s | peer / reef | peak RSS MiB |"
		echo "|---|---|---|---|---|"
		row "babeltrace2 T -o dummy" bt2_dummy "$events"
		row "reef check T" reef_check "$events" bt2_dummy
		row "reef check -j 1 T" reef_check_j1 "$events" bt2_dummy
		row "reef check -j 2 T" reef_check_j2 "$events" bt2_dummy
		row "babeltrace2 T > /dev/null" bt2_text "$events"
		row "reef print T > /dev/null" reef_print "$events" bt2_text
		row "reef print -j 1 T > /dev/null" reef_print_j1 "$events" bt2_text
		row "reef print -j 2 T > /dev/null" reef_print_j2 "$events" bt2_text
		if [ -n "${T[bt1_text]:-}" ]; then row "babeltrace T > /dev/null (1.5)" bt1_text "$events"; fi
		row "babeltrace2 --begin (last 1 %: $wevents events)" bt2_window "$wevents"
		row "reef print --begin (same window)" reef_window "$wevents" bt2_window
	} >>"$OUT"
	unset 'T[bt1_text]'
	rm -f "$WORK"/times.*
done
echo
cat "$OUT"
