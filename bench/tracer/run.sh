#!/usr/bin/env bash
# bench/tracer/run.sh — cost per event of libreef, LTTng-UST and barectf,
# measured in the same run on the same machine.
#
# Every tracer records the same event, four u64 values, from 1 and 2
# threads; "disabled" is the cost of the call when the event is off
# (libreef: subsystem disabled; LTTng-UST: no session enables the event;
# barectf: tracing disabled on the context). Each figure is the median of
# RUNS processes, each timing ITERS events per thread after a warm-up event.
# "libreef, enabled" is the default discard mode with the consumer thread
# writing the trace to disk meanwhile; "overwrite mode" keeps the trace in
# memory (flight recorder, written at exit), i.e. the fast path alone.
# barectf writes each full packet synchronously from the tracing thread.
#
#   bench/tracer/run.sh                 RUNS=7 ITERS=1000000 by default
#   RUNS=11 ITERS=2000000 bench/tracer/run.sh
#   SKIP_LTTNG=1 / SKIP_BARECTF=1       leave a peer out
#
# Needs: gcc, liblttng-ust-dev + lttng-tools (Debian), barectf 3.1 (PyPI;
# installed into ~/.cache/reef-bench/venv when not on PATH), and either
# target/release/reef with `reef gen` or cargo to build the generator.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/tracer"
RUNS=${RUNS:-7}
ITERS=${ITERS:-1000000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-bench-tracer.XXXXXX")
STARTED_SESSIOND=""
SESSION="reefbench$$"

cleanup() {
	if [ -n "${SESSION_CREATED:-}" ]; then lttng destroy "$SESSION" >/dev/null 2>&1 || true; fi
	if [ -n "$STARTED_SESSIOND" ]; then kill "$STARTED_SESSIOND" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

CFLAGS="-O2 -g -std=gnu11 -Wall -Wextra -Werror"

# ---- libreef ---------------------------------------------------------------
REEF=${REEF:-$ROOT/target/release/reef}
if [ -x "$REEF" ] && "$REEF" gen --help >/dev/null 2>&1; then
	GEN="$REEF gen"
else
	(cd "$ROOT" && cargo build --release -q -p reef-gen --example gen)
	GEN="$ROOT/target/release/examples/gen"
fi
make -s -C "$ROOT/tracer"
$GEN "$HERE/bench.reef" -o "$WORK/gen" 2>/dev/null
gcc $CFLAGS -I"$ROOT/tracer/include" -I"$WORK/gen" -I"$HERE" "$HERE/bench_reef.c" \
	"$ROOT/tracer/libreef.a" -lpthread -o "$WORK/bench_reef"
gcc $CFLAGS -I"$HERE" "$HERE/bench_rdtsc.c" -lpthread -o "$WORK/bench_rdtsc"

# ---- LTTng-UST ---------------------------------------------------------------
HAVE_LTTNG=""
if [ -z "${SKIP_LTTNG:-}" ] && command -v lttng >/dev/null && [ -e /usr/include/x86_64-linux-gnu/lttng/tracepoint.h -o -e /usr/include/lttng/tracepoint.h ]; then
	gcc -O2 -g -I"$HERE" -c "$HERE/bench_tp.c" -o "$WORK/bench_tp.o"
	gcc $CFLAGS -I"$HERE" "$HERE/bench_lttng.c" "$WORK/bench_tp.o" -llttng-ust -ldl -lpthread -o "$WORK/bench_lttng"
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --daemonize --no-kernel
		sleep 1
		STARTED_SESSIOND=$(pgrep -n -x lttng-sessiond || true)
	fi
	HAVE_LTTNG=1
fi

# ---- barectf -----------------------------------------------------------------
HAVE_BARECTF=""
if [ -z "${SKIP_BARECTF:-}" ]; then
	BARECTF=$(command -v barectf || true)
	VENV="$HOME/.cache/reef-bench/venv"
	if [ -z "$BARECTF" ] && [ ! -x "$VENV/bin/barectf" ]; then
		echo "installing barectf 3.1 into $VENV ..." >&2
		python3 -m venv "$VENV"
		# PyYAML 5.4 (required by barectf 3.1) does not build with Cython 3.
		"$VENV/bin/pip" install -q "cython<3.0.0" wheel setuptools
		"$VENV/bin/pip" install -q --no-build-isolation "pyyaml==5.4.1"
		"$VENV/bin/pip" install -q "barectf==3.1.2"
	fi
	[ -z "$BARECTF" ] && BARECTF="$VENV/bin/barectf"
	if [ -x "$BARECTF" ]; then
		mkdir -p "$WORK/barectf"
		(cd "$WORK/barectf" && "$BARECTF" generate "$HERE/barectf.yaml" >/dev/null)
		gcc -O2 -g -c "$WORK/barectf/bbench.c" -I"$WORK/barectf" -o "$WORK/bbench.o"
		gcc $CFLAGS -I"$WORK/barectf" -I"$HERE" "$HERE/bench_barectf.c" "$WORK/bbench.o" -lpthread -o "$WORK/bench_barectf"
		HAVE_BARECTF=1
	fi
fi

# ---- measurement -------------------------------------------------------------
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# measure NAME THREADS -- command...: prints the median ns/event.
measure() {
	local threads=$1; shift
	local i out
	for i in $(seq "$RUNS"); do
		rm -rf "$WORK/trace"
		mkdir -p "$WORK/trace"
		out=$("$@" "$threads" "$ITERS")
		echo "$out"
	done | median
}

declare -A R
for t in 1 2; do
	R[rdtsc_$t]=$(measure $t "$WORK/bench_rdtsc")
	R[reef_on_$t]=$(measure $t env REEF_OUTPUT="$WORK/trace" REEF_BUFFER_SIZE=64M "$WORK/bench_reef")
	# Events dropped in the last run (the consumer lagging): reported, not hidden.
	R[reef_drop_$t]=$(babeltrace2 "$WORK/trace" 2>&1 >/dev/null | { grep -o "discarded [0-9]* events" || true; } | awk '{s += $2} END {print s + 0}' || true)
	R[reefmem_on_$t]=$(measure $t env REEF_OUTPUT="$WORK/trace" REEF_MODE=overwrite REEF_BUFFER_SIZE=64M "$WORK/bench_reef")
	R[reef_off_$t]=$(measure $t env REEF_OUTPUT="$WORK/trace" REEF_SUBSYSTEMS=none "$WORK/bench_reef")
	if [ -n "$HAVE_BARECTF" ]; then
		R[barectf_on_$t]=$(measure $t env BENCH_TRACE_DIR="$WORK/trace" "$WORK/bench_barectf")
		R[barectf_off_$t]=$(measure $t env BENCH_TRACE_DIR="$WORK/trace" BENCH_DISABLED=1 "$WORK/bench_barectf")
	fi
	if [ -n "$HAVE_LTTNG" ]; then
		R[lttng_off_$t]=$(measure $t "$WORK/bench_lttng")
	fi
done
if [ -n "$HAVE_LTTNG" ]; then
	lttng create "$SESSION" --output="$WORK/lttng-trace" >/dev/null
	SESSION_CREATED=1
	lttng enable-channel -u -s "$SESSION" bench --subbuf-size=4M --num-subbuf=4 >/dev/null
	lttng enable-event -u -s "$SESSION" -c bench reef_bench:ev4 >/dev/null
	lttng start "$SESSION" >/dev/null
	for t in 1 2; do
		R[lttng_on_$t]=$(measure $t "$WORK/bench_lttng")
	done
	lttng stop "$SESSION" >/dev/null
	lttng destroy "$SESSION" >/dev/null
	SESSION_CREATED=""
fi

# ---- table ---------------------------------------------------------------------
get() { echo "${R[$1]:-n/a}"; }
ratio() {
	local a=${R[$1]:-} b=${R[$2]:-}
	if [ -n "$a" ] && [ -n "$b" ]; then awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1fx", a / b}'; else echo "n/a"; fi
}
echo
echo "Tracer cost, ns/event (median of $RUNS runs x $ITERS events/thread; 4 x u64 payload)"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
printf "%-26s %12s %12s %12s %12s\n" "" "1 thread" "2 threads" "vs libreef" "vs libreef"
printf "%-26s %12s %12s %12s %12s\n" "" "" "" "(1 thread)" "(2 threads)"
printf "%-26s %12s %12s %12s %12s\n" "libreef, enabled" "$(get reef_on_1)" "$(get reef_on_2)" "1.0x" "1.0x"
printf "%-26s %12s %12s %12s %12s\n" "libreef, overwrite mode" "$(get reefmem_on_1)" "$(get reefmem_on_2)" "$(ratio reefmem_on_1 reef_on_1)" "$(ratio reefmem_on_2 reef_on_2)"
printf "%-26s %12s %12s %12s %12s\n" "LTTng-UST 2.13, enabled" "$(get lttng_on_1)" "$(get lttng_on_2)" "$(ratio lttng_on_1 reef_on_1)" "$(ratio lttng_on_2 reef_on_2)"
printf "%-26s %12s %12s %12s %12s\n" "barectf 3.1, enabled" "$(get barectf_on_1)" "$(get barectf_on_2)" "$(ratio barectf_on_1 reef_on_1)" "$(ratio barectf_on_2 reef_on_2)"
printf "%-26s %12s %12s %12s %12s\n" "(rdtsc alone)" "$(get rdtsc_1)" "$(get rdtsc_2)" "$(ratio rdtsc_1 reef_on_1)" "$(ratio rdtsc_2 reef_on_2)"
printf "%-26s %12s %12s %12s %12s\n" "libreef, disabled" "$(get reef_off_1)" "$(get reef_off_2)" "1.0x" "1.0x"
printf "%-26s %12s %12s %12s %12s\n" "LTTng-UST 2.13, disabled" "$(get lttng_off_1)" "$(get lttng_off_2)" "$(ratio lttng_off_1 reef_off_1)" "$(ratio lttng_off_2 reef_off_2)"
printf "%-26s %12s %12s %12s %12s\n" "barectf 3.1, disabled" "$(get barectf_off_1)" "$(get barectf_off_2)" "$(ratio barectf_off_1 reef_off_1)" "$(ratio barectf_off_2 reef_off_2)"
echo "libreef events discarded in the last enabled run: $(get reef_drop_1) (1 thread), $(get reef_drop_2) (2 threads)"
echo "load average during the run: $(cut -d' ' -f1-3 /proc/loadavg)"
