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
# libreef uses REEF_BUFFER_SIZE=16M per thread: the memory of the LTTng
# channel below (4 x 4 MiB sub-buffers); one run's trace (42 MB/thread) is
# larger, so the consumer writes most of it while the events are timed.
# Events libreef drops (consumer behind) are counted and reported.
# "crash-safe" is REEF_CRASH_SAFE=1: the rings are shared mappings of files
# in the trace directory (page cache, written back by the kernel).
# "discard, nice 0" is the default mode with the consumer thread at the
# program's priority and policy, on any CPU (REEF_CONSUMER_NICE=0), instead
# of a SCHED_BATCH thread at nice +10 kept off the CPU of the thread that
# wakes it.
# Besides wall-clock time, each program reports the tracing thread's CPU
# time and the whole process's CPU time per event (see harness.h).
#
#   bench/tracer/run.sh                 RUNS=9 ITERS=1000000 by default
#   RUNS=15 ITERS=2000000 bench/tracer/run.sh
#   REEF_BUF=64M bench/tracer/run.sh    another libreef buffer size
#   SKIP_LTTNG=1 / SKIP_BARECTF=1       leave a peer out
#   KEEP=DIR bench/tracer/run.sh         also keep every run's line in DIR
#
# Needs: gcc, liblttng-ust-dev + lttng-tools (Debian), barectf 3.1 (PyPI;
# installed into ~/.cache/reef-bench/venv when not on PATH), and either
# target/release/reef with `reef gen` or cargo to build the generator.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE="$ROOT/bench/tracer"
RUNS=${RUNS:-9}
ITERS=${ITERS:-1000000}
REEF_BUF=${REEF_BUF:-16M}
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
# Runs are interleaved (run 1 of every configuration, then run 2, ...) so
# that a change of load on a shared machine hits every configuration alike.
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }

declare -A CMD
for t in 1 2; do
	CMD[rdtsc_$t]="$WORK/bench_rdtsc"
	CMD[reef_on_$t]="env REEF_OUTPUT=$WORK/trace REEF_BUFFER_SIZE=$REEF_BUF $WORK/bench_reef"
	CMD[reefn0_on_$t]="env REEF_OUTPUT=$WORK/trace REEF_BUFFER_SIZE=$REEF_BUF REEF_CONSUMER_NICE=0 $WORK/bench_reef"
	CMD[reefmem_on_$t]="env REEF_OUTPUT=$WORK/trace REEF_MODE=overwrite REEF_BUFFER_SIZE=$REEF_BUF $WORK/bench_reef"
	CMD[reefcs_on_$t]="env REEF_OUTPUT=$WORK/trace REEF_CRASH_SAFE=1 REEF_BUFFER_SIZE=$REEF_BUF $WORK/bench_reef"
	CMD[reefcsmem_on_$t]="env REEF_OUTPUT=$WORK/trace REEF_CRASH_SAFE=1 REEF_MODE=overwrite REEF_BUFFER_SIZE=$REEF_BUF $WORK/bench_reef"
	CMD[reef_off_$t]="env REEF_OUTPUT=$WORK/trace REEF_SUBSYSTEMS=none $WORK/bench_reef"
	if [ -n "$HAVE_BARECTF" ]; then
		CMD[barectf_on_$t]="env BENCH_TRACE_DIR=$WORK/trace $WORK/bench_barectf"
		CMD[barectf_off_$t]="env BENCH_TRACE_DIR=$WORK/trace BENCH_DISABLED=1 $WORK/bench_barectf"
	fi
	if [ -n "$HAVE_LTTNG" ]; then
		CMD[lttng_off_$t]="$WORK/bench_lttng"
	fi
done

# run_all KEY...: RUNS interleaved rounds; a run's line goes to $WORK/res.KEY.
run_all() {
	local i key
	for i in $(seq "$RUNS"); do
		for key in "$@"; do
			rm -rf "$WORK/trace"
			mkdir -p "$WORK/trace"
			${CMD[$key]} "${key##*_}" "$ITERS" >>"$WORK/res.$key"
			case $key in
			reef_on_* | reefn0_on_* | reefcs_on_*) python3 "$HERE/discarded.py" "$WORK/trace" >>"$WORK/drop.$key" ;;
			esac
		done
	done
}

keys=()
for k in "${!CMD[@]}"; do keys+=("$k"); done
IFS=$'\n' keys=($(sort <<<"${keys[*]}")); unset IFS
run_all "${keys[@]}"
# babeltrace2 agrees with discarded.py on the last libreef discard-mode trace.
if command -v babeltrace2 >/dev/null; then
	rm -rf "$WORK/trace"; mkdir -p "$WORK/trace"
	${CMD[reef_on_2]} 2 "$ITERS" >/dev/null
	a=$(python3 "$HERE/discarded.py" "$WORK/trace")
	b=$(babeltrace2 "$WORK/trace" 2>&1 >/dev/null | { grep -oE "discarded [0-9]+ events?" || true; } | awk '{s += $2} END {print s + 0}')
	[ "$a" = "$b" ] || { echo "discarded.py says $a, babeltrace2 says $b" >&2; exit 1; }
fi
if [ -n "$HAVE_LTTNG" ]; then
	lttng create "$SESSION" --output="$WORK/lttng-trace" >/dev/null
	SESSION_CREATED=1
	lttng enable-channel -u -s "$SESSION" bench --subbuf-size=4M --num-subbuf=4 >/dev/null
	lttng enable-event -u -s "$SESSION" -c bench reef_bench:ev4 >/dev/null
	lttng start "$SESSION" >/dev/null
	CMD[lttng_on_1]="$WORK/bench_lttng"
	CMD[lttng_on_2]="$WORK/bench_lttng"
	# rdtsc again, in the same rounds: the baseline of this phase.
	CMD[rdtscl_1]="$WORK/bench_rdtsc"
	CMD[rdtscl_2]="$WORK/bench_rdtsc"
	run_all lttng_on_1 lttng_on_2 rdtscl_1 rdtscl_2
	lttng stop "$SESSION" >/dev/null
	lttng destroy "$SESSION" >/dev/null
	SESSION_CREATED=""
fi

if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP"
	cp "$WORK"/res.* "$KEEP"/
	cp "$WORK"/drop.* "$KEEP"/ 2>/dev/null || true
fi

# col KEY N: median of column N (1 wall, 2 thread CPU, 3 process CPU).
col() {
	if [ -s "$WORK/res.$1" ]; then awk -v c="$2" '{print $c}' "$WORK/res.$1" | median; else echo "n/a"; fi
}
declare -A R
for k in "${!CMD[@]}"; do
	R[$k]=$(col "$k" 1)
	R[cpu_$k]=$(col "$k" 2)
	R[proc_$k]=$(col "$k" 3)
done
for t in 1 2; do
	for k in reef reefn0 reefcs; do
		R[${k}_drop_$t]=$(if [ -s "$WORK/drop.${k}_on_$t" ]; then median <"$WORK/drop.${k}_on_$t"; else echo n/a; fi)
	done
done

# ---- table ---------------------------------------------------------------------
get() { echo "${R[$1]:-n/a}"; }
ratio() {
	local a=${R[$1]:-n/a} b=${R[$2]:-n/a}
	if [ "$a" != n/a ] && [ "$b" != n/a ]; then awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1fx", a / b}'; else echo "n/a"; fi
}
row() { printf "%-30s %10s %10s %12s %12s\n" "$@"; }
echo
echo "Tracer cost, ns/event: median of $RUNS interleaved runs x $ITERS events/thread; 4 x u64 payload"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; libreef buffer $REEF_BUF/thread"
echo
echo "Wall clock per event (what the traced thread waits):"
row "" "1 thread" "2 threads" "vs libreef" "vs libreef"
row "" "" "" "(1 thread)" "(2 threads)"
row "libreef, enabled (discard)" "$(get reef_on_1)" "$(get reef_on_2)" "1.0x" "1.0x"
row "libreef, discard, nice 0" "$(get reefn0_on_1)" "$(get reefn0_on_2)" "$(ratio reefn0_on_1 reef_on_1)" "$(ratio reefn0_on_2 reef_on_2)"
row "libreef, overwrite mode" "$(get reefmem_on_1)" "$(get reefmem_on_2)" "$(ratio reefmem_on_1 reef_on_1)" "$(ratio reefmem_on_2 reef_on_2)"
row "libreef, crash-safe discard" "$(get reefcs_on_1)" "$(get reefcs_on_2)" "$(ratio reefcs_on_1 reef_on_1)" "$(ratio reefcs_on_2 reef_on_2)"
row "libreef, crash-safe overwrite" "$(get reefcsmem_on_1)" "$(get reefcsmem_on_2)" "$(ratio reefcsmem_on_1 reef_on_1)" "$(ratio reefcsmem_on_2 reef_on_2)"
row "LTTng-UST 2.13, enabled" "$(get lttng_on_1)" "$(get lttng_on_2)" "$(ratio lttng_on_1 reef_on_1)" "$(ratio lttng_on_2 reef_on_2)"
row "barectf 3.1, enabled" "$(get barectf_on_1)" "$(get barectf_on_2)" "$(ratio barectf_on_1 reef_on_1)" "$(ratio barectf_on_2 reef_on_2)"
row "(rdtsc alone)" "$(get rdtsc_1)" "$(get rdtsc_2)" "$(ratio rdtsc_1 reef_on_1)" "$(ratio rdtsc_2 reef_on_2)"
row "(rdtsc alone, LTTng phase)" "$(get rdtscl_1)" "$(get rdtscl_2)" "" ""
row "libreef, disabled" "$(get reef_off_1)" "$(get reef_off_2)" "1.0x" "1.0x"
row "LTTng-UST 2.13, disabled" "$(get lttng_off_1)" "$(get lttng_off_2)" "$(ratio lttng_off_1 reef_off_1)" "$(ratio lttng_off_2 reef_off_2)"
row "barectf 3.1, disabled" "$(get barectf_off_1)" "$(get barectf_off_2)" "$(ratio barectf_off_1 reef_off_1)" "$(ratio barectf_off_2 reef_off_2)"
echo
echo "CPU per event: the tracing thread's own CPU time (excludes time descheduled) |"
echo "the whole process's CPU time during the timed loops / all events (includes"
echo "libreef's consumer writing meanwhile; not LTTng's consumer daemon, another process):"
row "" "thread, 1" "thread, 2" "process, 1" "process, 2"
row "libreef, enabled (discard)" "$(get cpu_reef_on_1)" "$(get cpu_reef_on_2)" "$(get proc_reef_on_1)" "$(get proc_reef_on_2)"
row "libreef, discard, nice 0" "$(get cpu_reefn0_on_1)" "$(get cpu_reefn0_on_2)" "$(get proc_reefn0_on_1)" "$(get proc_reefn0_on_2)"
row "libreef, overwrite mode" "$(get cpu_reefmem_on_1)" "$(get cpu_reefmem_on_2)" "$(get proc_reefmem_on_1)" "$(get proc_reefmem_on_2)"
row "libreef, crash-safe discard" "$(get cpu_reefcs_on_1)" "$(get cpu_reefcs_on_2)" "$(get proc_reefcs_on_1)" "$(get proc_reefcs_on_2)"
row "libreef, crash-safe overwrite" "$(get cpu_reefcsmem_on_1)" "$(get cpu_reefcsmem_on_2)" "$(get proc_reefcsmem_on_1)" "$(get proc_reefcsmem_on_2)"
row "LTTng-UST 2.13, enabled" "$(get cpu_lttng_on_1)" "$(get cpu_lttng_on_2)" "$(get proc_lttng_on_1)" "$(get proc_lttng_on_2)"
row "barectf 3.1, enabled" "$(get cpu_barectf_on_1)" "$(get cpu_barectf_on_2)" "$(get proc_barectf_on_1)" "$(get proc_barectf_on_2)"
row "(rdtsc alone)" "$(get cpu_rdtsc_1)" "$(get cpu_rdtsc_2)" "$(get proc_rdtsc_1)" "$(get proc_rdtsc_2)"
row "libreef, disabled" "$(get cpu_reef_off_1)" "$(get cpu_reef_off_2)" "" ""
row "LTTng-UST 2.13, disabled" "$(get cpu_lttng_off_1)" "$(get cpu_lttng_off_2)" "" ""
row "barectf 3.1, disabled" "$(get cpu_barectf_off_1)" "$(get cpu_barectf_off_2)" "" ""
echo
echo "libreef events discarded per discard-mode run (median, all threads), of $ITERS per thread:"
echo "  consumer at nice +10 (default): $(get reef_drop_1) (1 thread), $(get reef_drop_2) (2 threads)"
echo "  consumer at nice 0:             $(get reefn0_drop_1) (1 thread), $(get reefn0_drop_2) (2 threads)"
echo "  crash-safe:                     $(get reefcs_drop_1) (1 thread), $(get reefcs_drop_2) (2 threads)"
echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
