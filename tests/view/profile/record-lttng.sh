#!/usr/bin/env bash
# tests/view/profile/record-lttng.sh OUT — records OUT/lt: an LTTng-UST
# trace of tests/profile/calls.c (built with -finstrument-functions) run
# under liblttng-ust-cyg-profile.so, with the statedump and the vpid,
# vtid and procname contexts, as tests/profile/run.sh records it. Starts a
# session daemon when none answers (and stops it after, when idle).
# Exit status 2: LTTng or its cyg-profile library is not installed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=$1
CYG=$(ls /usr/lib/*/liblttng-ust-cyg-profile.so* /usr/lib/liblttng-ust-cyg-profile.so* 2>/dev/null | head -1)
if [ -z "$CYG" ] || ! command -v lttng >/dev/null; then
	echo "liblttng-ust-cyg-profile.so or lttng not installed" >&2
	exit 2
fi
mkdir -p "$OUT" && cd "$OUT" || exit 1
rm -rf lt
cc -O1 -g -finstrument-functions -o calls_cyg "$ROOT/tests/profile/calls.c" || exit 1
S=reef-view-profile-$$
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
	timeout 10 lttng create "$S" --output="$OUT/lt" >/dev/null &&
	timeout 10 lttng enable-event -s "$S" -u 'lttng_ust_cyg_profile:*,lttng_ust_statedump:*' >/dev/null &&
	timeout 10 lttng add-context -s "$S" -u -t vpid -t vtid -t procname >/dev/null &&
	timeout 10 lttng start "$S" >/dev/null &&
	LTTNG_UST_REGISTER_TIMEOUT=10000 LD_PRELOAD=$CYG timeout 30 ./calls_cyg &&
	timeout 20 lttng stop "$S" >/dev/null
	rc=$?
	timeout 20 lttng destroy "$S" >/dev/null 2>&1
	exit $rc
)
rc=$?
# The daemon this script started, by its pid, when no one else uses it.
[ -n "$started" ] && timeout 5 lttng list 2>/dev/null | grep -qi 'no available' && kill "$started" 2>/dev/null
exit $rc
