#!/usr/bin/env bash
# tests/convert/run.sh [TEST-NAME-SUBSTRING...]: `reef convert` to CTF (cut
# by a time window and by filters) checked against babeltrace2
# (tests/convert/check.py) on the shared babeltrace2 test traces, the LTTng
# kernel traces, a real LTTng-UST trace recorded here (tests/lttng/record.sh,
# test name "lttng"), a libreef trace (tests/periods/record.sh, "libreef"),
# a synthetic trace with compact timestamps and aligned fields
# (tests/convert/make_compact.py, "compact"), a damaged copy of a kernel
# trace (a stream file cut inside a packet, "damaged"), and, read back by
# reef, the CTF 2 traces ("ctf2/..."); then CTF 1.8 <-> CTF 2
# (tests/convert/versions.py, "versions") and damaged inputs
# (tests/convert/damage.py, "damage").
#
# The binary under test is $REEF_BIN (default: target/release/reef). A test
# is a trace, named by its path under ../shared/conformance (or by the
# names above); with arguments, only the tests whose name contains one of
# them run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF=${REEF_BIN:-$ROOT/target/release/reef}
SHARED=$ROOT/../shared/conformance
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-convert.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
[ -x "$REEF" ] || { echo "convert: $REEF is not an executable (set REEF_BIN or cargo build --release)" >&2; exit 1; }

filters=("$@")
selected=0
wanted() {
    local f
    [ ${#filters[@]} -eq 0 ] && { selected=$((selected + 1)); return 0; }
    for f in "${filters[@]}"; do
        case "$1" in *"$f"*) selected=$((selected + 1)); return 0 ;; esac
    done
    return 1
}

traces=()
for t in "$SHARED"/babeltrace-traces/succeed/* "$SHARED"/kernel-traces/*; do
    wanted "${t#"$SHARED"/}" && traces+=("$t")
done
if wanted lttng; then
    # Small sub-buffers make many packets; a loaded machine may still make
    # the tracer discard events (record.sh then fails): tried three times,
    # with larger sub-buffers each time.
    recorded=
    for sub in 16384 65536 262144; do
        rm -rf "$WORK/lttng"
        if REEF_LTTNG_SUBBUF_SIZE=$sub bash "$ROOT/tests/lttng/record.sh" "$WORK/lttng" 100 >"$WORK/lttng.log" 2>&1; then
            recorded=1
            break
        fi
    done
    if [ -z "$recorded" ]; then
        echo "convert: recording an LTTng-UST trace failed:" >&2
        cat "$WORK/lttng.log" >&2
        exit 1
    fi
    traces+=("$WORK/lttng")
fi
if wanted libreef; then
    REEF_BIN="$REEF" bash "$ROOT/tests/periods/record.sh" "$WORK/libreef" 200 >/dev/null
    traces+=("$WORK/libreef/trace")
fi
# Compact 16-bit timestamps, 32/64-bit aligned and bit-packed fields:
# events left out make packets split and events laid out again.
if wanted compact; then
    python3 "$ROOT/tests/convert/make_compact.py" "$WORK/compact"
    traces+=("$WORK/compact")
fi
# A kernel trace with one stream file cut inside a packet.
if wanted damaged; then
    cp -r "$SHARED/kernel-traces/bug446190" "$WORK/damaged"
    chmod -R u+w "$WORK/damaged"
    truncate -s 150000 "$WORK/damaged/channel0_1"
    traces+=("damaged:$WORK/damaged:$SHARED/kernel-traces/bug446190")
fi
for t in "$SHARED"/ctf2/traces/succeed/* "$SHARED"/ctf2/traces/converted/*; do
    wanted "${t#"$SHARED"/}" && traces+=("ctf2:$t")
done
status=0
if [ ${#traces[@]} -gt 0 ]; then
    python3 "$ROOT/tests/convert/check.py" "$REEF" "$WORK/out" "${traces[@]}" || status=1
fi
# CTF 1.8 <-> CTF 2 (--ctf-version), against babeltrace2's goldens.
if wanted versions; then
    python3 "$ROOT/tests/convert/versions.py" "$REEF" "$WORK/versions" || status=1
fi
# Damaged inputs (a packet that does not decode, times that go back, a
# cut metadata): the output reads cleanly, exit 1 (tests/convert/damage.py,
# "damage").
if wanted damage; then
    python3 "$ROOT/tests/convert/damage.py" "$REEF" "$WORK/damage" "$SHARED/kernel-traces/bug446190" || status=1
fi
if [ "$selected" -eq 0 ]; then
    echo "convert: no test matches: $*" >&2
    exit 1
fi
exit $status
