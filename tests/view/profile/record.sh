#!/usr/bin/env bash
# tests/view/profile/record.sh REEF OUT [SECONDS] — records the traces the
# profile tests of `reef view` read, with libreef (built here, as
# tests/profile/run.sh builds it):
#   OUT/sampled  twothreads.c (tenfunc.c's ten functions on the main thread,
#                side_burn() on a second one) under REEF_SAMPLE=cpu-clock:1ms
#   OUT/calls    tests/profile/calls.c built with -finstrument-functions
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
REEF=$1
OUT=$2
SECS=${3:-2}
T=$ROOT/tracer
make -s -C "$T" >/dev/null
mkdir -p "$OUT"
cd "$OUT"
rm -rf sampled calls
CC="cc -O2 -g -fno-omit-frame-pointer"
$CC -Dmain=tenfunc_main -c -o tenfunc.o "$ROOT/tests/profile/tenfunc.c"
"$REEF" gen "$ROOT/tests/profile/prof.reef" -o gen >/dev/null 2>&1
$CC -I"$T/include" -Igen -L"$T" -Wl,-rpath,"$T" -o twothreads tenfunc.o "$ROOT/tests/view/profile/twothreads.c" \
	-Wl,--no-as-needed -lreef -pthread
REEF_OUTPUT=sampled REEF_SAMPLE=cpu-clock:1ms ./twothreads "$SECS"
cc -O1 -g -finstrument-functions -I"$T/include" -o calls_reef "$ROOT/tests/profile/calls.c" \
	-L"$T" -Wl,-rpath,"$T" -lreef -pthread
REEF_OUTPUT=calls ./calls_reef
