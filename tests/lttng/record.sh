#!/usr/bin/env bash
# Record a real LTTng-UST 2.13 trace of tests/lttng/app into OUTDIR.
#
# Usage: tests/lttng/record.sh OUTDIR [ITERATIONS]
#
# Builds the instrumented test application, makes sure an LTTng session
# daemon runs, creates a uniquely named recording session writing to OUTDIR,
# enables the reef_test:* events with extra contexts, runs the application,
# stops and destroys the session. The UST trace ends up in
# OUTDIR/ust/uid/<UID>/64-bit.
#
# Environment:
#   REEF_LTTNG_KEEP_SESSIOND=1  keep a session daemon this script started
#                               running when it exits (default: stop it)
#   REEF_LTTNG_SUBBUF_SIZE      sub-buffer (= maximum packet) size, default
#                               4096, small to get many packets per stream
#
# Needs: lttng-tools, liblttng-ust-dev, a C compiler and make (Debian:
# apt-get install lttng-tools liblttng-ust-dev build-essential), and
# babeltrace2 for the final sanity check (scripts/install-deps.sh installs
# them all).
#
# Bounded in time: the work has a 40 s deadline, and cleanup (destroying the
# session, stopping a daemon this script started) at most ~20 s more.

set -u
set -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
APP_SRC="$HERE/app"
NTHREADS=3
EVENTS_PER_ITER=6     # integers hex_network floats strings arrays enums
DEADLINE=$((SECONDS + 40))

die() {
	echo "record.sh: error: $*" >&2
	exit 1
}

note() {
	echo "record.sh: $*" >&2
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 OUTDIR [ITERATIONS]" >&2
	exit 2
fi
OUTDIR=$1
ITERATIONS=${2:-10}
case $ITERATIONS in
'' | *[!0-9]*) die "ITERATIONS must be a non-negative integer, got '$ITERATIONS'" ;;
esac
SUBBUF_SIZE=${REEF_LTTNG_SUBBUF_SIZE:-4096}

# --- prerequisites ---------------------------------------------------------
missing=()
for tool in lttng lttng-sessiond make cc timeout babeltrace2; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
	die "missing tool(s): ${missing[*]}
  install them, e.g.: apt-get install lttng-tools liblttng-ust-dev babeltrace2 build-essential"
fi

# OUTDIR must be absent or empty, so the trace we leave is only ours.
if [ -e "$OUTDIR" ]; then
	[ -d "$OUTDIR" ] || die "OUTDIR '$OUTDIR' exists and is not a directory"
	[ -z "$(ls -A "$OUTDIR")" ] || die "OUTDIR '$OUTDIR' is not empty"
fi
mkdir -p "$OUTDIR" || die "cannot create OUTDIR '$OUTDIR'"
OUTDIR=$(cd "$OUTDIR" && pwd)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-lttng.XXXXXX") || die "mktemp failed"
SESSION="reef-test-$$-$(date +%s)-$RANDOM"
SESSION_CREATED=0
SESSIOND_STARTED_PID=

# Run "$@" bounded by min(LIMIT, time left before DEADLINE). Output goes to
# $WORK/last.log (and is shown on failure by the callers through run_step).
bounded() {
	local limit=$1
	shift
	local left=$((DEADLINE - SECONDS))
	[ "$left" -gt 0 ] || {
		echo "deadline exceeded before running: $*" >"$WORK/last.log"
		return 124
	}
	[ "$limit" -le "$left" ] || limit=$left
	timeout -k 3 "$limit" "$@" >"$WORK/last.log" 2>&1 9>&-
}

# run_step LIMIT DESCRIPTION CMD... : run, die with its output on failure.
run_step() {
	local limit=$1 what=$2
	shift 2
	bounded "$limit" "$@"
	local rc=$?
	if [ $rc -ne 0 ]; then
		local why="exit status $rc"
		[ $rc -eq 124 ] && why="timed out"
		sed 's/^/    | /' "$WORK/last.log" >&2
		die "$what failed ($why): $*"
	fi
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ "$SESSION_CREATED" = 1 ]; then
		# Not destroyed yet: we are failing. Do not leave the session behind.
		note "destroying session $SESSION"
		timeout -k 2 10 lttng destroy "$SESSION" >/dev/null 2>&1 ||
			note "warning: could not destroy session $SESSION"
	fi
	if [ -n "$SESSIOND_STARTED_PID" ] && [ "${REEF_LTTNG_KEEP_SESSIOND:-0}" != 1 ] &&
		# leave it to any other (concurrent) user that has a session in it
		timeout 5 lttng list 2>/dev/null | grep -qi 'no available'; then
		if kill "$SESSIOND_STARTED_PID" 2>/dev/null; then
			for _ in $(seq 50); do
				kill -0 "$SESSIOND_STARTED_PID" 2>/dev/null || break
				sleep 0.1
			done
			kill -0 "$SESSIOND_STARTED_PID" 2>/dev/null &&
				note "warning: session daemon $SESSIOND_STARTED_PID still running"
		fi
	fi
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'note "interrupted"; exit 130' INT TERM

# --- build the application -------------------------------------------------
note "building test application"
if ! bounded 40 make -s -C "$APP_SRC" O="$WORK/build"; then
	sed 's/^/    | /' "$WORK/last.log" >&2
	die "building $APP_SRC failed (is liblttng-ust-dev, LTTng-UST 2.13, installed?)"
fi
APP="$WORK/build/reef_test_app"

# --- one recording at a time ------------------------------------------------
# Sessions of concurrent runs would all record every reef_test app running,
# and a run could stop a session daemon another one uses: serialize the runs.
if command -v flock >/dev/null 2>&1; then
	LOCK=/tmp/reef-lttng-record.lock
	exec 9>>"$LOCK" || die "cannot open lock file $LOCK"
	if ! flock -w 30 9; then
		die "another record.sh still holds $LOCK after 30 s"
	fi
else
	note "warning: flock not found; concurrent runs may record each other's events"
fi

# --- session daemon ----------------------------------------------------------
if ! bounded 10 lttng list; then
	note "no session daemon answers; starting lttng-sessiond --daemonize --no-kernel"
	if bounded 20 lttng-sessiond --daemonize --no-kernel; then
		if [ "$(id -u)" = 0 ]; then
			pidfile=/var/run/lttng/lttng-sessiond.pid
		else
			pidfile="${LTTNG_HOME:-$HOME}/.lttng/lttng-sessiond.pid"
		fi
		[ -r "$pidfile" ] && SESSIOND_STARTED_PID=$(cat "$pidfile")
	else
		# Maybe a concurrent run started one meanwhile: use it if it answers.
		sed 's/^/    | /' "$WORK/last.log" >&2
		note "lttng-sessiond could not be started; checking for another daemon"
	fi
	# (--daemonize returns once the daemon is ready; another instance
	# started concurrently may need a moment.)
	for _ in 1 2 3 4 5 6 7 8 9; do
		bounded 5 lttng list && break
		sleep 1
	done
	run_step 10 "contacting the session daemon" lttng list
fi

# --- recording session -------------------------------------------------------
note "creating session $SESSION -> $OUTDIR"
run_step 10 "lttng create" lttng create "$SESSION" --output="$OUTDIR"
SESSION_CREATED=1

# A dedicated channel with small sub-buffers (many packets per stream) in
# blocking mode (the application waits instead of discarding events, given
# LTTNG_UST_ALLOW_BLOCKING=1), so that no event is lost.
run_step 10 "lttng enable-channel" lttng enable-channel --session="$SESSION" \
	--userspace --buffers-uid --subbuf-size="$SUBBUF_SIZE" --num-subbuf=8 \
	--blocking-timeout=inf reefchan
run_step 10 "lttng enable-event" lttng enable-event --session="$SESSION" \
	--userspace --channel=reefchan 'reef_test:*'
run_step 10 "lttng add-context" lttng add-context --session="$SESSION" \
	--userspace --channel=reefchan \
	-t vpid -t vtid -t procname -t pthread_id -t ip
run_step 10 "lttng start" lttng start "$SESSION"

# --- run the application -----------------------------------------------------
note "running $NTHREADS threads x $ITERATIONS iterations"
# LTTNG_UST_REGISTER_TIMEOUT: wait (ms) for the session daemon at start-up so
# that the very first events are recorded.
run_step 30 "the test application" \
	env LTTNG_UST_REGISTER_TIMEOUT=10000 LTTNG_UST_ALLOW_BLOCKING=1 "$APP" "$ITERATIONS"

# lttng stop waits until the consumer has flushed all the data to OUTDIR.
run_step 20 "lttng stop" lttng stop "$SESSION"
run_step 20 "lttng destroy" lttng destroy "$SESSION"
SESSION_CREATED=0

# --- check the result ---------------------------------------------------------
metadata=$(find "$OUTDIR/ust" -name metadata -type f 2>/dev/null | head -n 1)
[ -n "$metadata" ] || die "no UST trace (no ust/**/metadata) under $OUTDIR:
$(cd "$OUTDIR" && find . | sed 's/^/    /')
  did the application register with the session daemon?"
TRACE_DIR=$(dirname "$metadata")

expected=$((NTHREADS * (1 + EVENTS_PER_ITER * ITERATIONS) + 3))
timeout -k 3 30 babeltrace2 "$OUTDIR" >"$WORK/bt.out" 2>"$WORK/bt.err"
bt_rc=$?
if [ $bt_rc -ne 0 ]; then
	sed 's/^/    | /' "$WORK/bt.err" | head -n 20 >&2
	die "babeltrace2 cannot read the recorded trace (exit status $bt_rc)"
fi
got=$(grep -c ' reef_test:' "$WORK/bt.out")
if [ -s "$WORK/bt.err" ]; then
	sed 's/^/    | /' "$WORK/bt.err" | head -n 20 >&2
	die "babeltrace2 wrote to stderr (discarded events?)"
fi
[ "$got" -eq "$expected" ] ||
	die "expected $expected reef_test events, babeltrace2 shows $got"
note "ok: $got events in $TRACE_DIR"
echo "$TRACE_DIR"
