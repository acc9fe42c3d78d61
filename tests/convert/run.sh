#!/usr/bin/env bash
# tests/convert/run.sh [REEF]: `reef convert` to CTF (cut by a time window
# and by filters) checked against babeltrace2 (tests/convert/check.py) on
# the shared babeltrace2 test traces, the LTTng kernel traces, a real
# LTTng-UST trace recorded here (tests/lttng/record.sh), a libreef trace
# (tests/periods/record.sh), a synthetic trace with compact timestamps
# and aligned fields (tests/convert/make_compact.py), a damaged copy of a kernel trace (a stream
# file cut inside a packet), and, read back by reef, the CTF 2 traces.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REEF=${1:-$ROOT/target/release/reef}
SHARED=$ROOT/../shared/conformance
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-convert.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

traces=("$SHARED"/babeltrace-traces/succeed/* "$SHARED"/kernel-traces/*)
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
bash "$ROOT/tests/periods/record.sh" "$WORK/libreef" "$REEF" 200 >/dev/null
traces+=("$WORK/libreef/trace")
# Compact 16-bit timestamps, 32/64-bit aligned and bit-packed fields:
# events left out make packets split and events laid out again.
python3 "$ROOT/tests/convert/make_compact.py" "$WORK/compact"
traces+=("$WORK/compact")
# A kernel trace with one stream file cut inside a packet.
cp -r "$SHARED/kernel-traces/bug446190" "$WORK/damaged"
chmod -R u+w "$WORK/damaged"
truncate -s 150000 "$WORK/damaged/channel0_1"
traces+=("damaged:$WORK/damaged:$SHARED/kernel-traces/bug446190")
for t in "$SHARED"/ctf2/traces/succeed/* "$SHARED"/ctf2/traces/converted/*; do
    traces+=("ctf2:$t")
done
python3 "$ROOT/tests/convert/check.py" "$REEF" "$WORK/out" "${traces[@]}"
# CTF 1.8 <-> CTF 2 (--ctf-version), against babeltrace2's goldens.
python3 "$ROOT/tests/convert/versions.py" "$REEF" "$WORK/versions"
