#!/usr/bin/env bash
# Check that every event payload of a trace recorded by record.sh is exactly
# what tests/lttng/app traced (as modelled by expected_payload.py).
#
# Usage: tests/lttng/check-payload.sh [--reef] OUTDIR [ITERATIONS]
#
# Reads the trace with `babeltrace2 OUTDIR` (with --reef: `$REEF_BIN print
# OUTDIR`, $REEF_BIN defaulting to target/release/reef),
# strips the timestamp, delta, hostname, stream packet context and event
# context of each line, sorts the lines and compares them with
# `expected_payload.py ITERATIONS` (ITERATIONS must be the one given to
# record.sh; default 10).

set -u
set -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

reader=(babeltrace2)
if [ "${1:-}" = --reef ]; then
	reader=("${REEF_BIN:-$HERE/../../target/release/reef}" print)
	shift
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 [--reef] OUTDIR [ITERATIONS]" >&2
	exit 2
fi
OUTDIR=$1
ITERATIONS=${2:-10}
command -v python3 >/dev/null || { echo "check-payload.sh: python3 is required" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/reef-payload.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

python3 "$HERE/expected_payload.py" "$ITERATIONS" >"$tmp/expected" || exit 1
TZ=UTC timeout 60 "${reader[@]}" "$OUTDIR" >"$tmp/raw" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ] || [ -s "$tmp/err" ]; then
	echo "check-payload.sh: '${reader[*]} $OUTDIR' exited with status $rc; stderr:" >&2
	head -n 20 "$tmp/err" >&2
	[ $rc -ne 0 ] && exit 1
fi
# [ts] (+delta) host reef_test:NAME: { cpu_id = N }, { vpid = ... }, { payload }
sed -e 's/^\[[^]]*\] ([^)]*) [^ ]* \(reef_test:[a-z_]*: \){ cpu_id = [0-9]* }, { vpid = [^}]* }, /\1/' \
	"$tmp/raw" | LC_ALL=C sort >"$tmp/actual"
if ! cmp -s "$tmp/expected" "$tmp/actual"; then
	echo "check-payload.sh: payloads differ from what the app traced (< expected, > ${reader[*]}):" >&2
	diff "$tmp/expected" "$tmp/actual" | head -n 20 >&2
	exit 1
fi
echo "check-payload.sh: ok: $(wc -l <"$tmp/actual") event payloads as expected (${reader[*]})"
