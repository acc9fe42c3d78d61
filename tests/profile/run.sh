#!/usr/bin/env bash
# tests/profile/run.sh — libreef's sampling and function entry/exit, and
# `reef profile` on their traces and on an LTTng-UST cyg-profile trace.
#
#   tests/profile/run.sh [TEST-NAME-SUBSTRING...]
#   PROFILE_SECONDS=10 tests/profile/run.sh   (the ten-function run; default 10)
#
# The binary under test is $REEF_BIN (default: target/release/reef). The
# tests: ten-functions (1), storm (2), late-thread (3), entry-exit (4);
# with arguments, only those whose name contains one of them run. Each
# check prints ok/FAIL; the exit status is the number of failures.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/profile
REEF=${REEF_BIN:-$ROOT/target/release/reef}
want() { # NAME: whether the test NAME is selected (the arguments)
	local f
	[ ${#FILTERS[@]} -eq 0 ] && return 0
	for f in "${FILTERS[@]}"; do
		case "$1" in *"$f"*) return 0 ;; esac
	done
	return 1
}
FILTERS=("$@")
selected=0
for t in ten-functions storm late-thread entry-exit; do want "$t" && selected=$((selected + 1)); done
[ "$selected" -gt 0 ] || { echo "profile: no test matches: $*"; exit 1; }
T=$ROOT/tracer
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-profile-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
SECS=${PROFILE_SECONDS:-10}
fails=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

make -s -C "$T" || exit 1
cd "$WORK" || exit 1
CC="cc -O2 -g -fno-omit-frame-pointer -I$T/include -L$T -Wl,-rpath,$T"

# babeltrace2 reads TRACE with exit 0 and nothing on stderr.
bt_clean() {
	if babeltrace2 "$1" >"$WORK/bt.out" 2>"$WORK/bt.err" && [ ! -s "$WORK/bt.err" ]; then
		ok "babeltrace2 reads $2 ($(wc -l <"$WORK/bt.out") events, no warning)"
	else
		fail "babeltrace2 on $2:"; head -5 "$WORK/bt.err"
	fi
}

$CC -o tenfunc "$HERE/tenfunc.c" -Wl,--no-as-needed -lreef -pthread

# --- 1. ten functions: shares within 0.5 points (RMS) ----------------------
if want ten-functions; then
	REEF_OUTPUT=t10 REEF_SAMPLE=cpu-clock:1ms ./tenfunc "$SECS"
	"$REEF" profile --folded t10 >t10.folded
	if python3 "$HERE/check.py" shares t10.folded; then ok "ten functions, ${SECS} s at 1 kHz: shares"; else fail "ten functions: shares"; fi
	# The same profile as pprof, read by Go's pprof (go tool pprof -traces),
	# and as an SVG flame graph, measured from its frames' widths.
	"$REEF" profile --pprof -o t10.pb.gz t10
	if command -v go >/dev/null && go tool pprof -traces t10.pb.gz >t10.traces 2>t10.pprof.err && python3 "$HERE/check.py" pprof-shares t10.traces; then
		ok "--pprof, read by go tool pprof: shares"
	else fail "--pprof: shares (go tool pprof: $(head -3 t10.pprof.err 2>/dev/null))"; fi
	"$REEF" profile --svg -o t10.svg t10
	if python3 "$HERE/check.py" svg-shares t10.svg; then ok "--svg flame graph: shares from the frames' widths"; else fail "--svg: shares"; fi
	bt_clean t10 "the ten-function trace (samples, objects)"
	# The same with the kernel's call chains (REEF_SAMPLE_STACK=perf).
	REEF_OUTPUT=t10p REEF_SAMPLE=cpu-clock:1ms REEF_SAMPLE_STACK=perf ./tenfunc 2
	"$REEF" profile t10p >t10p.folded
	if python3 "$HERE/check.py" has t10p.folded f50 f20 f15; then ok "REEF_SAMPLE_STACK=perf: names"; else fail "REEF_SAMPLE_STACK=perf"; fi
	# Switched off like a subsystem: no sample, the objects still recorded.
	REEF_OUTPUT=t10off REEF_SAMPLE=cpu-clock:1ms REEF_SUBSYSTEMS=-sample ./tenfunc 0.3
	n=$(babeltrace2 t10off | grep -c ' reef:sample:')
	if [ "$n" = 0 ] && babeltrace2 t10off | grep -q ' reef:object:'; then ok "REEF_SUBSYSTEMS=-sample: no sample"; else fail "REEF_SUBSYSTEMS=-sample: $n samples"; fi
	# A hardware event where the machine may have no PMU: sampled or a
	# warning, the program unharmed either way.
	if REEF_OUTPUT=t10hw REEF_SAMPLE=cycles:1000000 ./tenfunc 0.3 2>hw.err && bt_quiet=$(babeltrace2 t10hw 2>&1 >/dev/null) && [ -z "$bt_quiet" ] &&
		{ grep -q 'perf_event_open' hw.err || [ "$(babeltrace2 t10hw | grep -c ' reef:sample:')" -gt 0 ]; }; then
		ok "REEF_SAMPLE=cycles: $(head -c 100 hw.err | tr -d '\n')"
	else fail "REEF_SAMPLE=cycles"; cat hw.err; fi
	# Through LD_PRELOAD, a program that does not link libreef.
	cc -O2 -g -fno-omit-frame-pointer -o tenfunc_plain "$HERE/tenfunc.c"
	REEF_OUTPUT=t10l REEF_SAMPLE=task-clock:1ms LD_PRELOAD=$T/libreef.so ./tenfunc_plain 1
	"$REEF" profile --speedscope t10l >t10l.json
	if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n=[f["name"] for f in d["shared"]["frames"]]; assert "f50" in n and sum(d["profiles"][0]["weights"]) > 100, n' t10l.json; then
		ok "LD_PRELOAD=libreef.so, task-clock, speedscope JSON"
	else fail "LD_PRELOAD + speedscope"; fi
fi

# --- 2. signal storm and fork while sampling -------------------------------
if want storm; then
	$CC -o storm "$HERE/storm.c" -Wl,--no-as-needed -lreef -pthread
	if REEF_OUTPUT=ts REEF_SAMPLE=cpu-clock:1ms ./storm; then ok "signal storm and fork: every signal and child as without sampling"; else fail "storm"; fi
	"$REEF" profile ts >ts.folded
	if python3 "$HERE/check.py" has ts.folded burn main; then ok "storm: sampled"; else fail "storm: samples"; fi
	bt_clean ts "the storm trace"
fi

# --- 3. a thread created later, a library loaded by dlopen -----------------
if want late-thread; then
	"$REEF" gen "$HERE/prof.reef" -o gen >/dev/null
	$CC -Igen -o late "$HERE/late.c" -lreef -pthread -ldl
	cc -O2 -g -fno-omit-frame-pointer -shared -fPIC -o libplug.so "$HERE/plug.c"
	REEF_OUTPUT=tl REEF_SAMPLE=cpu-clock:1ms ./late ./libplug.so
	"$REEF" profile --per-thread tl >tl.folded
	if python3 "$HERE/check.py" thread tl.folded late_burn; then ok "a thread created after sampling started is sampled"; else fail "late thread"; fi
	if python3 "$HERE/check.py" has tl.folded plug_burn main_burn; then ok "samples in a dlopen'ed library are symbolized"; else fail "dlopen"; fi
	if ! grep -q quiet_burn tl.folded; then ok "reef_disable(REEF_SUBSYS_SAMPLE): no sample meanwhile"; else fail "quiet_burn sampled while sampling was off"; fi
	bt_clean tl "the late-thread trace (schema + built-in events)"
	# The reading options select samples: one thread's, by --filter.
	late_tid=$(sed -n 's/^[^;]*-\([0-9]*\);.*late_burn .*/\1/p' tl.folded | head -1)
	"$REEF" profile --filter "\$evt.tid == ${late_tid:-0}" tl >tlf.folded
	if grep -q ';late_burn ' tlf.folded && ! grep -q 'main_burn' tlf.folded; then ok "--filter: the late thread's samples only"; else fail "--filter"; fi
	# A debug file found by build id under --debug-dir, the program stripped.
	mkdir -p dbg && cp tenfunc tenfunc.full
	id=$(readelf -n tenfunc | sed -n 's/.*Build ID: *//p')
	mkdir -p "dbg/.build-id/${id:0:2}" && objcopy --only-keep-debug tenfunc.full "dbg/.build-id/${id:0:2}/${id:2}.debug"
	strip -s tenfunc
	REEF_OUTPUT=tstrip REEF_SAMPLE=cpu-clock:1ms ./tenfunc 0.5
	if "$REEF" profile tstrip | grep -q '\[tenfunc\]+0x' && "$REEF" profile --debug-dir dbg tstrip | grep -q ';f50 '; then
		ok "stripped program: offsets without --debug-dir, names with it (build id)"
	else fail "--debug-dir"; fi
fi

# --- 4. function entry/exit: libreef, then LTTng-UST cyg-profile ----------
if want entry-exit; then
	cc -O1 -g -finstrument-functions -I"$T/include" -o calls_reef "$HERE/calls.c" -L"$T" -Wl,-rpath,"$T" -lreef -pthread
	REEF_OUTPUT=tc ./calls_reef
	"$REEF" profile --tree tc >tc.tree
	if python3 "$HERE/check.py" tree tc.tree; then ok "-finstrument-functions with libreef: the call tree"; else fail "libreef call tree"; cat tc.tree; fi
	bt_clean tc "the function entry/exit trace"

	cc -O1 -g -finstrument-functions -o calls "$HERE/calls.c"
	mkdir -p "$WORK/app" && make -s -C "$ROOT/tests/lttng/app" O="$WORK/app" >/dev/null || fail "building tests/lttng/app"
	CYG=$(ls /usr/lib/*/liblttng-ust-cyg-profile.so* /usr/lib/liblttng-ust-cyg-profile.so* 2>/dev/null | head -1)
	if [ -z "$CYG" ] || ! command -v lttng >/dev/null; then
		fail "LTTng-UST cyg-profile: liblttng-ust-cyg-profile.so or lttng not installed"
	else
		S=reef-profile-$$
		started=
		if ! timeout 10 lttng list >/dev/null 2>&1; then
			if timeout 20 lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1; then
				pidfile=${LTTNG_HOME:-$HOME}/.lttng/lttng-sessiond.pid
				[ "$(id -u)" = 0 ] && pidfile=/var/run/lttng/lttng-sessiond.pid
				started=$(cat "$pidfile" 2>/dev/null)
			fi
		fi
		(
			exec 9>>/tmp/reef-lttng-record.lock; flock -w 30 9
			timeout 10 lttng create "$S" --output="$WORK/lt" >/dev/null &&
			timeout 10 lttng enable-event -s "$S" -u 'lttng_ust_cyg_profile:*,lttng_ust_statedump:*' >/dev/null &&
			timeout 10 lttng add-context -s "$S" -u -t vpid -t vtid -t procname >/dev/null &&
			timeout 10 lttng start "$S" >/dev/null &&
			LTTNG_UST_REGISTER_TIMEOUT=10000 LD_PRELOAD=$CYG timeout 30 ./calls &&
			timeout 20 lttng stop "$S" >/dev/null &&
			timeout 10 lttng destroy "$S" >/dev/null &&
			# The tracepoints of tests/lttng/app with an `ip` context.
			timeout 10 lttng create "$S" --output="$WORK/lip" >/dev/null &&
			timeout 10 lttng enable-event -s "$S" -u 'reef_test:*,lttng_ust_statedump:*' >/dev/null &&
			timeout 10 lttng add-context -s "$S" -u -t vpid -t vtid -t ip >/dev/null &&
			timeout 10 lttng start "$S" >/dev/null &&
			LTTNG_UST_REGISTER_TIMEOUT=10000 timeout 30 ./app/reef_test_app 4 >/dev/null &&
			timeout 20 lttng stop "$S" >/dev/null
			rc=$?
			timeout 20 lttng destroy "$S" >/dev/null 2>&1
			exit $rc
		) || fail "recording the LTTng-UST cyg-profile trace"
		# The daemon this script started, by its pid, when no one else uses it.
		[ -n "$started" ] && timeout 5 lttng list 2>/dev/null | grep -qi 'no available' &&
			kill "$started" 2>/dev/null
		"$REEF" profile --tree "$WORK/lt" >lt.tree
		if python3 "$HERE/check.py" tree lt.tree; then ok "LTTng-UST cyg-profile trace: the call tree"; else fail "LTTng call tree"; cat lt.tree; fi
		"$REEF" profile --events "$WORK/lip" >lip.folded
		if python3 "$HERE/check.py" emitted lip.folded; then ok "LTTng-UST events with an ip context: symbolized to the functions that emit them"; else fail "ip context"; cat lip.folded; fi
	fi
fi

echo "profile tests: $fails failure(s)"
exit "$fails"
