#!/usr/bin/env bash
# API tests of `reef view` (docs/view-api.md) against babeltrace2's text.
# Builds nothing of reef (check.py compiles bench/view/gen-kernel.c into a
# temporary directory for a synthetic trace of >200,000 events).
#
#   bash tests/view/api/run.sh [TEST-NAME-SUBSTRING...]
#
# The binary under test is $REEF_BIN (default: target/release/reef). The
# tests are the scripts here: check, robust, analyses, activities,
# live_robust, profile; with arguments, only those whose name contains one
# of them run. One line per check ("ok ..." / "FAIL ..."); exit status 1
# on any failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
reef="${REEF_BIN:-$here/../../../target/release/reef}"
reef="$(cd "$(dirname "$reef")" && pwd)/$(basename "$reef")"
export REEF_BIN="$reef"
if ! command -v babeltrace2 >/dev/null; then
    echo "FAIL babeltrace2 is not installed (bash scripts/install-deps.sh)"
    exit 1
fi
if ! "$reef" view --help >/dev/null 2>&1; then
    echo "FAIL $reef has no 'view' command"
    exit 1
fi
export TZ=UTC
status=0
ran=0
# http_guard spends its two minutes waiting for the server to cut idle
# and slow connections: it runs beside the others, its lines printed
# after theirs.
guard_out=$(mktemp "${TMPDIR:-/tmp}/reef-http-guard.XXXXXX")
trap 'rm -f "$guard_out"' EXIT
guard_pid=
for t in http_guard check robust analyses activities live_robust profile; do
    if [ $# -gt 0 ]; then
        match=
        for f in "$@"; do case "$t" in *"$f"*) match=1 ;; esac; done
        [ -n "$match" ] || continue
    fi
    ran=$((ran + 1))
    if [ "$t" = http_guard ]; then
        python3 "$here/$t.py" >"$guard_out" 2>&1 &
        guard_pid=$!
        continue
    fi
    python3 "$here/$t.py" || status=1
done
if [ -n "$guard_pid" ]; then
    wait "$guard_pid" || status=1
    cat "$guard_out"
fi
if [ $ran -eq 0 ]; then echo "FAIL no view API test matches: $*"; exit 1; fi
if [ $status -eq 0 ]; then echo "ok   all view API tests"; else echo "FAIL some view API tests"; fi
exit $status
