#!/usr/bin/env bash
# API tests of `reef view` (docs/view-api.md) against babeltrace2's text.
# Builds nothing of reef (check.py compiles bench/view/gen-kernel.c into a
# temporary directory for a synthetic trace of >200,000 events). Usage: bash tests/view/api/run.sh [REEF_BINARY]
# One line per check ("ok ..." / "FAIL ..."); exit status 1 on any failure.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
reef="${1:-$here/../../../target/release/reef}"
reef="$(cd "$(dirname "$reef")" && pwd)/$(basename "$reef")"
if ! command -v babeltrace2 >/dev/null; then
    echo "FAIL babeltrace2 is not installed (apt-get install -y babeltrace2)"
    exit 1
fi
if ! "$reef" view --help >/dev/null 2>&1; then
    echo "FAIL $reef has no 'view' command"
    exit 1
fi
export TZ=UTC
status=0
python3 "$here/check.py" "$reef" || status=1
python3 "$here/robust.py" "$reef" || status=1
python3 "$here/analyses.py" "$reef" || status=1
python3 "$here/activities.py" "$reef" || status=1
python3 "$here/live_robust.py" "$reef" || status=1
python3 "$here/profile.py" "$reef" || status=1
if [ $status -eq 0 ]; then echo "ok   all view API tests"; else echo "FAIL some view API tests"; fi
exit $status
