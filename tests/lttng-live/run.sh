#!/usr/bin/env bash
# reef reading LTTng sessions live from lttng-relayd, against babeltrace2.
#
# Usage: tests/lttng-live/run.sh [TEST-NAME-SUBSTRING...]
#
# The binary under test is $REEF_BIN (default: target/release/reef). The
# tests, named as below: list (1), print (2), stats (3), destroyed (7),
# view (6), relay-killed (4), fake-relay (5); with arguments, only those
# whose name contains one of them run.
#
# Starts lttng-relayd on free ports and a session daemon in a temporary
# HOME / LTTNG_HOME, records tests/lttng/app (slowed down: it emits its
# events over a few seconds) in live sessions, and checks:
#
#  1. `reef print net://127.0.0.1:PORT` lists the sessions with the same
#     text as `babeltrace2 -i lttng-live net://127.0.0.1:PORT`.
#  2. Two live sessions record the same run of the program; reef reads
#     session A live, babeltrace2 reads session B live (lttng-relayd lets
#     one viewer attach to a session at a time), both attached before the
#     program starts and ending when the session is destroyed
#     (session-not-found-action=end). Then:
#     a. reef printed events while the program ran, and all of them once
#        it ended (before the session was destroyed);
#     b. reef's output (A, live) is byte for byte babeltrace2's output on
#        the relay's own copy of A on disk (the same packets);
#     c. babeltrace2's output (B, live) is byte for byte babeltrace2's on
#        the relay's copy of B: reading live and reading the copy agree,
#        so (b) compares reef live with babeltrace2 live;
#     d. reef (A, live) and babeltrace2 (B, live) print the same event
#        lines, as multisets, once the timestamp and delta are removed:
#        each session's ring buffer reads the clock for its own copy of an
#        event, so the times differ, and with them the merged order of
#        events of different threads that are close in time (the order is
#        checked exactly by b and c).
#  3. `reef stats` on a live session counts the program's events.
#  7. The default session-not-found-action (no option, on either side):
#     reef reads session G live, babeltrace2 reads session H live (its
#     command gives its source `session-not-found-action=end`), the
#     program records in both, and each session is destroyed while the
#     program still runs and its reader reads. Both readers exit 0 within
#     a few seconds of the `lttng destroy`, reef with nothing on stderr;
#     reef's output is byte for byte babeltrace2's on the relay's copy of G
#     (every event the session recorded), babeltrace2's (H, live) is
#     babeltrace2's on the relay's copy of H.
#  4. Killing the relay while reef reads a session: an error on stderr and
#     exit status 1 within a few seconds, what was printed before kept.
#  5. A fake relay (fake_relay.py) sending garbage or truncated replies at
#     every step: exit status 1, a clear error, no panic, no hang.
#  6. `reef view net://...` following a live session (before 4): while
#     the program runs, the events its /api counts grow, classes enabled
#     mid-session (the metadata grows) are seen live, and the page (in
#     headless Chromium, tests/view/e2e-lttng-live.mjs) shows them
#     arriving; once the session
#     ended, its events per name and per stream equal babeltrace2's on
#     the relay's copy of the session (view_api.py). In 4, a view of
#     another session says the relay is gone (live.state failed) and
#     keeps serving what it received.
#
# Every command runs under `timeout`: a hang fails the test.

set -u
set -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REEF=${REEF_BIN:-$ROOT/target/release/reef}
[ -x "$REEF" ] || {
	echo "lttng-live: no reef binary at $REEF (set REEF_BIN, or cargo build --release -p reef-cli)" >&2
	exit 1
}
FILTERS=("$@")
want() { # NAME: whether the test NAME is selected
	local f
	[ ${#FILTERS[@]} -eq 0 ] && return 0
	for f in "${FILTERS[@]}"; do
		case "$1" in *"$f"*) return 0 ;; esac
	done
	return 1
}
selected=0
for t in list print stats destroyed view relay-killed fake-relay; do want "$t" && selected=$((selected + 1)); done
[ "$selected" -gt 0 ] || {
	echo "lttng-live: no test matches: $*" >&2
	exit 1
}

fail=0
note() { echo "lttng-live: $*" >&2; }
bad() {
	echo "lttng-live: FAIL: $*" >&2
	fail=1
}
die() {
	echo "lttng-live: error: $*" >&2
	exit 1
}

for t in lttng lttng-sessiond lttng-relayd babeltrace2 make cc python3 timeout; do
	command -v "$t" >/dev/null 2>&1 || die "missing $t (scripts/install-deps.sh installs lttng-tools, liblttng-ust-dev, babeltrace2)"
done
# The page in headless Chromium (view, relay-killed): installed when missing.
if want view || want relay-killed; then
	[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || bash "$ROOT/scripts/install-deps.sh"
	[ -d "$ROOT/web/node_modules/playwright-core" ] || bash "$ROOT/scripts/build-web.sh"
	command -v node >/dev/null 2>&1 && [ -d "$ROOT/web/node_modules/playwright-core" ] && [ -x "${CHROMIUM:-/usr/bin/chromium}" ] ||
		die "node, web/node_modules/playwright-core and chromium are needed (scripts/install-deps.sh, scripts/build-web.sh)"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-lttng-live.XXXXXX") || die "mktemp"
export HOME=$WORK/home LTTNG_HOME=$WORK/home
mkdir -p "$HOME"
RELAY_PID=
SESSIOND_PID=
SESSIONS=()
BG=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	for s in "${SESSIONS[@]}"; do timeout -k 2 10 lttng destroy "$s" >/dev/null 2>&1; done
	[ -n "$RELAY_PID" ] && kill "$RELAY_PID" 2>/dev/null
	[ -n "$SESSIOND_PID" ] && kill "$SESSIOND_PID" 2>/dev/null
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the program ----------------------------------------------------------
timeout 60 make -s -C "$ROOT/tests/lttng/app" O="$WORK/build" >"$WORK/make.log" 2>&1 ||
	{ cat "$WORK/make.log" >&2; die "building tests/lttng/app failed (liblttng-ust-dev?)"; }
APP=$WORK/build/reef_test_app
ITER=60
EXPECTED=$((3 * (1 + 6 * ITER) + 3))
run_app() { # DELAY_US: runs the program in the background, sets APP_PID
	env REEF_TEST_APP_DELAY_US="$1" LTTNG_UST_REGISTER_TIMEOUT=10000 \
		LTTNG_UST_ALLOW_BLOCKING=1 timeout 60 "$APP" "${2:-$ITER}" >/dev/null &
	APP_PID=$!
	BG+=("$APP_PID")
}

# --- daemons -----------------------------------------------------------------
# As root, LTTng uses the system-wide daemon (its run directory does not
# follow LTTNG_HOME): share it, one user of these tests at a time (the lock
# of tests/lttng/record.sh).
if [ "$(id -u)" = 0 ] && command -v flock >/dev/null 2>&1; then
	exec 9>>/tmp/reef-lttng-record.lock
	flock -w 60 9 || die "another LTTng test holds /tmp/reef-lttng-record.lock"
fi
read -r CTRL DATA LIVE < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
lttng-relayd -C "tcp://127.0.0.1:$CTRL" -D "tcp://127.0.0.1:$DATA" \
	-L "tcp://127.0.0.1:$LIVE" -o "$WORK/relay" >"$WORK/relayd.log" 2>&1 &
RELAY_PID=$!
if ! timeout 10 lttng list >/dev/null 2>&1; then
	timeout 20 lttng-sessiond --daemonize --no-kernel >"$WORK/sessiond.log" 2>&1 ||
		{ cat "$WORK/sessiond.log" >&2; die "lttng-sessiond did not start"; }
	for f in "$HOME/.lttng/lttng-sessiond.pid" /var/run/lttng/lttng-sessiond.pid; do
		[ -r "$f" ] && SESSIOND_PID=$(cat "$f") && break
	done
fi
for _ in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $LIVE), 1)" 2>/dev/null && break
	sleep 0.2
done
RELAY=net://127.0.0.1:$LIVE

new_session() { # NAME [EVENTS]
	timeout 10 lttng create "$1" --live=100000 --set-url="net://127.0.0.1:$CTRL:$DATA" >/dev/null &&
		SESSIONS+=("$1") &&
		timeout 10 lttng enable-channel --session="$1" --userspace --buffers-uid \
			--subbuf-size=4096 --num-subbuf=8 --blocking-timeout=inf ch >/dev/null &&
		timeout 10 lttng enable-event --session="$1" --userspace --channel=ch "${2:-reef_test:*}" >/dev/null &&
		timeout 10 lttng start "$1" >/dev/null || die "could not set up live session $1"
}
end_session() { # NAME
	timeout 20 lttng stop "$1" >/dev/null 2>&1
	timeout 20 lttng destroy "$1" >/dev/null 2>&1
	local keep=()
	for s in "${SESSIONS[@]}"; do [ "$s" = "$1" ] || keep+=("$s"); done
	SESSIONS=("${keep[@]}")
}
url_of() { # NAME: the session's URL as babeltrace2 lists it
	timeout 10 babeltrace2 -i lttng-live "$RELAY" | sed -n "s|^\($RELAY/host/[^/]*/$1\) (.*|\1|p" | head -n 1
}
clients_of() { # NAME
	timeout 10 babeltrace2 -i lttng-live "$RELAY" | sed -n "s|^$RELAY/host/[^/]*/$1 (.*, \([0-9]*\) client(s) connected)|\1|p" | head -n 1
}
wait_attached() { # NAME
	for _ in $(seq 100); do
		[ "$(clients_of "$1")" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}
events() { grep -c ' reef_test:' "$1"; }
strip_time() { sed 's/^\[[^]]*\] ([^)]*) //' "$1"; }
disk_copy() { # NAME: the relay's copy of the session on disk
	find "$WORK/relay" -maxdepth 2 -type d -name "$1-*" | head -n 1
}

A=reefA-$$
B=reefB-$$
if want list || want print; then
	new_session "$A"
	new_session "$B"
fi

# --- 1. the list of sessions ------------------------------------------------
if want list; then
	timeout 10 babeltrace2 -i lttng-live "$RELAY" >"$WORK/list.bt" 2>&1
	timeout 10 "$REEF" print -i lttng-live "$RELAY" >"$WORK/list.reef" 2>&1
	if [ -s "$WORK/list.bt" ] && cmp -s "$WORK/list.bt" "$WORK/list.reef"; then
		note "ok: session list as babeltrace2 ($(wc -l <"$WORK/list.reef") lines)"
	else
		bad "session list differs from babeltrace2's"
		diff "$WORK/list.bt" "$WORK/list.reef" >&2
	fi
fi

# --- 2. live printing: reef on A, babeltrace2 on B ----------------------------
if want print; then
	UA=$(url_of "$A")
	UB=$(url_of "$B")
	[ -n "$UA" ] && [ -n "$UB" ] || die "sessions not listed by babeltrace2: $(cat "$WORK/list.bt")"
	timeout 120 "$REEF" print --session-not-found-action=end "$UA" >"$WORK/a.reef" 2>"$WORK/a.reef.err" &
	READ_REEF=$!
	BG+=("$READ_REEF")
	timeout 120 babeltrace2 -i lttng-live "$UB" --params=session-not-found-action=end \
		>"$WORK/b.bt" 2>"$WORK/b.bt.err" &
	READ_BT=$!
	BG+=("$READ_BT")
	wait_attached "$A" || bad "reef did not attach to $A"
	wait_attached "$B" || bad "babeltrace2 did not attach to $B"
	run_app 40000 # 60 iterations x 40 ms: about 2.4 s
	sleep 1.5
	mid=$(events "$WORK/a.reef")
	if kill -0 "$APP_PID" 2>/dev/null && [ "$mid" -gt 0 ]; then
		note "ok: $mid events printed while the program runs"
	else
		bad "no event printed while the program ran ($mid events; program running: $(kill -0 "$APP_PID" 2>/dev/null && echo yes || echo no))"
	fi
	wait "$APP_PID"
	for _ in $(seq 50); do
		[ "$(events "$WORK/a.reef")" -ge "$EXPECTED" ] && break
		sleep 0.1
	done
	after=$(events "$WORK/a.reef")
	if [ "$after" -eq "$EXPECTED" ]; then
		note "ok: all $after events printed once the program ended, before the session ends"
	else
		bad "$after events printed after the program ended, expected $EXPECTED"
	fi
	end_session "$A"
	end_session "$B"
	wait "$READ_REEF"
	rc_reef=$?
	wait "$READ_BT"
	rc_bt=$?
	[ "$rc_reef" = 0 ] || bad "reef print exited with $rc_reef: $(cat "$WORK/a.reef.err")"
	[ "$rc_bt" = 0 ] || bad "babeltrace2 exited with $rc_bt: $(cat "$WORK/b.bt.err")"
	[ -s "$WORK/a.reef.err" ] && bad "reef wrote to stderr: $(head -n 5 "$WORK/a.reef.err")"
	DA=$(disk_copy "$A")
	DB=$(disk_copy "$B")
	timeout 60 babeltrace2 "$DA" >"$WORK/a.disk.bt" 2>&1 || bad "babeltrace2 cannot read $DA"
	timeout 60 babeltrace2 "$DB" >"$WORK/b.disk.bt" 2>&1 || bad "babeltrace2 cannot read $DB"
	na=$(events "$WORK/a.reef")
	nb=$(events "$WORK/b.bt")
	note "reef live (A): $na events, $(wc -l <"$WORK/a.reef") lines; babeltrace2 live (B): $nb events, $(wc -l <"$WORK/b.bt") lines; expected $EXPECTED"
	[ "$na" -eq "$EXPECTED" ] || bad "reef printed $na events of A, expected $EXPECTED"
	[ "$nb" -eq "$EXPECTED" ] || bad "babeltrace2 printed $nb events of B, expected $EXPECTED"
	if cmp -s "$WORK/a.reef" "$WORK/a.disk.bt"; then
		note "ok: reef live (A) = babeltrace2 on the relay's copy of A, byte for byte"
	else
		bad "reef live (A) differs from babeltrace2 on the relay's copy of A"
		diff "$WORK/a.disk.bt" "$WORK/a.reef" | head -n 10 >&2
	fi
	if cmp -s "$WORK/b.bt" "$WORK/b.disk.bt"; then
		note "ok: babeltrace2 live (B) = babeltrace2 on the relay's copy of B, byte for byte"
	else
		bad "babeltrace2 live (B) differs from babeltrace2 on the relay's copy of B"
		diff "$WORK/b.disk.bt" "$WORK/b.bt" | head -n 10 >&2
	fi
	if diff <(strip_time "$WORK/a.reef" | sort) <(strip_time "$WORK/b.bt" | sort) >"$WORK/ab.diff"; then
		note "ok: reef live (A) and babeltrace2 live (B): the same $na event lines but for their timestamps (and so their order)"
	else
		bad "reef live (A) and babeltrace2 live (B) differ beyond timestamps"
		head -n 10 "$WORK/ab.diff" >&2
	fi
fi

# --- 3. another reading command on a live session ------------------------------
if want stats; then
	C=reefC-$$
	new_session "$C"
	UC=$(url_of "$C")
	timeout 120 "$REEF" stats --json --session-not-found-action=end "$UC" >"$WORK/c.stats" 2>"$WORK/c.err" &
	READ_REEF=$!
	BG+=("$READ_REEF")
	wait_attached "$C" || bad "reef stats did not attach to $C"
	run_app 10000
	wait "$APP_PID"
	sleep 0.5
	end_session "$C"
	wait "$READ_REEF" || bad "reef stats on a live session failed: $(cat "$WORK/c.err")"
	n=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = d["traces"] if "traces" in d else [d]
print(sum(x.get("events", 0) for x in t))' "$WORK/c.stats" 2>/dev/null)
	if [ "$n" = "$EXPECTED" ]; then
		note "ok: reef stats on a live session: $n events"
	else
		bad "reef stats on a live session counted '$n' events, expected $EXPECTED"
		head -c 600 "$WORK/c.stats" >&2
	fi
fi

# --- 7. the session destroyed while read, the default action -----------------
exits_within() { # PID SECONDS: waits for PID to end, at most SECONDS; sets
	# EXIT_RC (its status; 124 when it was still running, then killed) and
	# EXIT_MS (the milliseconds waited)
	local t0 i
	t0=$(date +%s%N)
	for i in $(seq $(($2 * 20))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	EXIT_MS=$((($(date +%s%N) - t0) / 1000000))
	if kill -0 "$1" 2>/dev/null; then
		kill "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		EXIT_RC=124
		return 1
	fi
	wait "$1"
	EXIT_RC=$?
}
destroy_sessions() { # NAME...: `lttng destroy` (it stops them), all at once
	local i s pids=() keep=()
	for s in "$@"; do
		timeout 30 lttng destroy "$s" >"$WORK/destroy-$s.log" 2>&1 &
		pids+=($!)
	done
	i=0
	for s in "$@"; do
		wait "${pids[$i]}" || bad "lttng destroy $s failed: $(tail -n 3 "$WORK/destroy-$s.log")"
		i=$((i + 1))
	done
	for s in "${SESSIONS[@]}"; do [[ " $* " == *" $s "* ]] || keep+=("$s"); done
	SESSIONS=("${keep[@]}")
}
if want destroyed; then
	G=reefG-$$
	H=reefH-$$
	new_session "$G"
	new_session "$H"
	UG=$(url_of "$G")
	UH=$(url_of "$H")
	[ -n "$UG" ] && [ -n "$UH" ] || die "sessions $G, $H not listed by babeltrace2"
	# No --session-not-found-action: the defaults.
	timeout 120 "$REEF" print "$UG" >"$WORK/g.reef" 2>"$WORK/g.reef.err" &
	READ_REEF=$!
	BG+=("$READ_REEF")
	timeout 120 babeltrace2 -i lttng-live "$UH" >"$WORK/h.bt" 2>"$WORK/h.bt.err" &
	READ_BT=$!
	BG+=("$READ_BT")
	wait_attached "$G" || bad "reef did not attach to $G"
	wait_attached "$H" || bad "babeltrace2 did not attach to $H"
	run_app 2000 1500 # 1,500 iterations x 2 ms: 27,006 events in about 3 s
	sleep 1.5
	running=$(kill -0 "$APP_PID" 2>/dev/null && echo yes || echo no)
	mid=$(events "$WORK/g.reef")
	# Both at once; the readers timed from the end of `lttng destroy`.
	destroy_sessions "$G" "$H"
	exits_within "$READ_REEF" 15
	rc_reef=$EXIT_RC ms_reef=$EXIT_MS
	exits_within "$READ_BT" 5
	rc_bt=$EXIT_RC ms_bt=$EXIT_MS
	wait "$APP_PID" 2>/dev/null
	note "destroyed: $mid events printed by reef when $G was destroyed (program still running: $running)"
	[ "$running" = yes ] && [ "$mid" -gt 0 ] ||
		bad "destroyed: the session was not destroyed while the program ran and reef read ($mid events, running: $running)"
	if [ "$rc_reef" = 0 ]; then
		note "ok: reef print (default action) exited 0, ${ms_reef} ms after lttng destroy"
	else
		bad "reef print (default action): exit status $rc_reef ${ms_reef} ms after lttng destroy (124: still running, killed): $(head -n 3 "$WORK/g.reef.err")"
	fi
	if [ "$rc_bt" = 0 ]; then
		note "ok: babeltrace2 (default action) exited 0, ${ms_bt} ms after lttng destroy"
	else
		bad "babeltrace2 (default action): exit status $rc_bt ${ms_bt} ms after lttng destroy: $(head -n 3 "$WORK/h.bt.err")"
	fi
	[ -s "$WORK/g.reef.err" ] && bad "reef wrote to stderr: $(head -n 5 "$WORK/g.reef.err")"
	DG=$(disk_copy "$G")
	DH=$(disk_copy "$H")
	timeout 60 babeltrace2 "$DG" >"$WORK/g.disk.bt" 2>&1 || bad "babeltrace2 cannot read $DG"
	timeout 60 babeltrace2 "$DH" >"$WORK/h.disk.bt" 2>&1 || bad "babeltrace2 cannot read $DH"
	ng=$(events "$WORK/g.reef")
	nh=$(events "$WORK/h.bt")
	note "reef live (G): $ng events, the relay's copy of G: $(events "$WORK/g.disk.bt"); babeltrace2 live (H): $nh events, the relay's copy of H: $(events "$WORK/h.disk.bt")"
	if [ "$ng" -gt 0 ] && cmp -s "$WORK/g.reef" "$WORK/g.disk.bt"; then
		note "ok: reef live (G, destroyed) = babeltrace2 on the relay's copy of G, byte for byte"
	else
		bad "reef live (G, destroyed) differs from babeltrace2 on the relay's copy of G"
		diff "$WORK/g.disk.bt" "$WORK/g.reef" | head -n 10 >&2
	fi
	if [ "$nh" -gt 0 ] && cmp -s "$WORK/h.bt" "$WORK/h.disk.bt"; then
		note "ok: babeltrace2 live (H, destroyed) = babeltrace2 on the relay's copy of H, byte for byte"
	else
		bad "babeltrace2 live (H, destroyed) differs from babeltrace2 on the relay's copy of H"
		diff "$WORK/h.disk.bt" "$WORK/h.bt" | head -n 10 >&2
	fi
fi

# reef view on a live session (6 and 4)
start_view() { # URL OUT: starts reef view on the session, sets VIEW_PID
	rm -f "$WORK/view.url"
	VIEW_URL=
	timeout 300 "$REEF" view --port 0 --wait 60 -o "$2" "$1" >"$WORK/view.url" 2>"$WORK/view.err" &
	VIEW_PID=$!
	BG+=("$VIEW_PID")
}
view_url() { # sets VIEW_URL once reef view serves (it has the metadata)
	for _ in $(seq 400); do
		VIEW_URL=$(head -n 1 "$WORK/view.url" 2>/dev/null)
		[ -n "$VIEW_URL" ] && return 0
		kill -0 "$VIEW_PID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}

# --- 6. reef view following a live session ------------------------------------
if want view; then
	E=reefE-$$
	new_session "$E" 'reef_test:thread_start'
	UE=$(url_of "$E")
	# The session's UST trace (and its metadata) exists once a program
	# registers: the view, attached first, waits for it (--wait) before it
	# serves. A short first run of the program brings it, with only
	# `thread_start` enabled (3 events); the page opens; every event is
	# enabled, and the program runs again for a few seconds: its registration
	# grows the metadata with the other classes, which the view must pick up.
	E1=3
	start_view "$UE" "$WORK/view-e"
	wait_attached "$E" || bad "reef view did not attach to $E"
	run_app 40000 8
	if view_url; then
		note "reef view on $UE: $VIEW_URL"
		wait "$APP_PID"
		rm -f "$WORK/e2e.ready"
		timeout 200 node "$ROOT/tests/view/e2e-lttng-live.mjs" "$VIEW_URL" "$WORK/e2e.ready" \
			"$((EXPECTED + E1))" >"$WORK/e2e.out" 2>&1 &
		E2E=$!
		BG+=("$E2E")
		for _ in $(seq 300); do [ -s "$WORK/e2e.ready" ] && break; sleep 0.1; done
		timeout 10 lttng enable-event --session="$E" --userspace --channel=ch 'reef_test:*' >/dev/null ||
			bad "could not enable the events of $E"
		run_app 40000 # about 2.4 s
		if msg=$(python3 "$HERE/view_api.py" grow "$VIEW_URL" "$((EXPECTED + E1))" "$APP_PID" "$WORK/rows.json"); then
			note "ok: reef view: $msg"
		else
			bad "reef view: $msg"
		fi
		wait "$APP_PID"
		sleep 0.5
		end_session "$E"
		if msg=$(python3 "$HERE/view_api.py" final "$VIEW_URL" "$(disk_copy "$E")" "$WORK/rows.json"); then
			note "ok: reef view, session ended: $msg"
		else
			bad "reef view, session ended: $msg"
		fi
		if wait "$E2E"; then
			note "ok: reef view in headless Chromium: $(grep -c '^ok' "$WORK/e2e.out") checks"
		else
			bad "reef view in headless Chromium:"
			cat "$WORK/e2e.out" >&2
		fi
		sed 's/^/   /' "$WORK/e2e.out" >&2
		n=$(timeout 60 babeltrace2 "$WORK/view-e" 2>/dev/null | grep -c ' reef_test:')
		[ "$n" = "$((EXPECTED + E1))" ] || bad "babeltrace2 reads $n events from the view's -o directory"
		kill "$VIEW_PID" 2>/dev/null
		wait "$VIEW_PID" 2>/dev/null
		[ -d "$WORK/view-e" ] || bad "the view's -o directory was removed"
	else
		bad "reef view $UE did not start: $(head -n 3 "$WORK/view.err")"
		end_session "$E"
	fi
fi

# --- 4. the relay dies mid-session ---------------------------------------------
if want relay-killed; then
	D=reefD-$$
	new_session "$D"
	UD=$(url_of "$D")
	F=reefF-$$
	new_session "$F"
	UF=$(url_of "$F")
	timeout 60 "$REEF" print "$UD" >"$WORK/d.reef" 2>"$WORK/d.err" &
	READ_REEF=$!
	BG+=("$READ_REEF")
	wait_attached "$D" || bad "reef did not attach to $D"
	start_view "$UF" "$WORK/view-f"
	wait_attached "$F" || bad "reef view did not attach to $F"
	run_app 50000 200 # 10 s of events
	view_url || bad "reef view $UF did not start: $(head -n 3 "$WORK/view.err")"
	E2E=
	if [ -n "$VIEW_URL" ]; then
		rm -f "$WORK/e2e.ready"
		timeout 200 node "$ROOT/tests/view/e2e-lttng-live.mjs" "$VIEW_URL" "$WORK/e2e.ready" failed >"$WORK/e2e.out" 2>&1 &
		E2E=$!
		BG+=("$E2E")
		for _ in $(seq 300); do [ -s "$WORK/e2e.ready" ] && break; sleep 0.1; done
	fi
	sleep 1.5
	{
		kill -9 "$RELAY_PID"
		wait "$RELAY_PID"
	} 2>/dev/null
	RELAY_PID=
	t0=$SECONDS
	wait "$READ_REEF"
	rc=$?
	took=$((SECONDS - t0))
	before=$(events "$WORK/d.reef")
	if [ "$rc" = 1 ] && grep -q "^reef: error: net://127.0.0.1:$LIVE: " "$WORK/d.err" && [ "$took" -le 15 ] && [ "$before" -gt 0 ]; then
		note "ok: relay killed: exit 1 after ${took} s, $before events printed before: $(head -n 1 "$WORK/d.err")"
	else
		bad "relay killed: exit status $rc after ${took} s (124: a hang), $before events, stderr: $(head -n 3 "$WORK/d.err")"
	fi
	if [ -n "$VIEW_URL" ]; then
		if msg=$(python3 "$HERE/view_api.py" failed "$VIEW_URL"); then
			note "ok: reef view, relay killed: $msg"
		else
			bad "reef view, relay killed: $msg"
		fi
		if [ -n "$E2E" ]; then
			if wait "$E2E"; then
				note "ok: reef view in headless Chromium, relay killed: $(grep -c '^ok' "$WORK/e2e.out") checks"
			else
				bad "reef view in headless Chromium, relay killed:"
			fi
			sed 's/^/   /' "$WORK/e2e.out" >&2
		fi
		kill -0 "$VIEW_PID" 2>/dev/null || bad "reef view exited when the relay was killed: $(head -n 3 "$WORK/view.err")"
		grep -q panicked "$WORK/view.err" && bad "reef view panicked: $(head -n 3 "$WORK/view.err")"
		kill "$VIEW_PID" 2>/dev/null
		wait "$VIEW_PID" 2>/dev/null
	fi
	kill "$APP_PID" 2>/dev/null
	wait "$APP_PID" 2>/dev/null
fi

# --- 5. a fake relay that misbehaves ---------------------------------------------
if want fake-relay; then
	for mode in garbage-connect truncated-list bad-attach bad-index-status truncated-index \
		huge-metadata bad-packet-len garbage-packet close-mid-packet hang; do
		rm -f "$WORK/port"
		python3 "$HERE/fake_relay.py" "$mode" "$WORK/port" &
		FAKE=$!
		BG+=("$FAKE")
		for _ in $(seq 50); do [ -s "$WORK/port" ] && break; sleep 0.1; done
		t0=$SECONDS
		timeout 30 "$REEF" print --session-not-found-action=fail \
			"net://127.0.0.1:$(cat "$WORK/port")/host/fakehost/fake" >"$WORK/f.out" 2>"$WORK/f.err"
		rc=$?
		took=$((SECONDS - t0))
		kill "$FAKE" 2>/dev/null
		wait "$FAKE" 2>/dev/null
		if [ "$rc" = 1 ] && grep -q "^reef: error: " "$WORK/f.err" && ! grep -q panicked "$WORK/f.err"; then
			note "ok: fake relay, $mode: exit 1 after ${took} s: $(head -n 1 "$WORK/f.err")"
		else
			bad "fake relay, $mode: exit status $rc after ${took} s (124: a hang), stderr: $(head -n 3 "$WORK/f.err")"
		fi
	done
fi

[ "$fail" = 0 ] && note "all ok"
exit "$fail"
