#!/usr/bin/env bash
# tests/capi/run.sh — libreef_reader's C API (crates/reef-capi): its
# exported symbols (exactly the header's functions) and soname; a C
# program reading through it compared with babeltrace2's Python bindings
# on the shared CTF 1.8 and kernel traces (check.py), a damaged trace
# (every event before the damage, then the error naming the file and byte), and
# misuse under AddressSanitizer and UndefinedBehaviorSanitizer
# (misuse.c).
#
#   REEF_BIN=/path/to/target/release/reef tests/capi/run.sh [TEST-NAME-SUBSTRING...]
#
# The library is taken beside REEF_BIN (the same cargo target directory).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/capi
REEF_BIN=${REEF_BIN:-$ROOT/target/release/reef}
LIB=$(dirname "$REEF_BIN")
CONF=$ROOT/../shared/conformance
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-capi-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FILTERS=("$@")
want() {
	local f
	[ ${#FILTERS[@]} -eq 0 ] && return 0
	for f in "${FILTERS[@]}"; do case "$1" in *"$f"*) return 0 ;; esac; done
	return 1
}
selected=0
for t in symbols equals-bt2 damaged misuse; do want "$t" && selected=$((selected + 1)); done
[ "$selected" -gt 0 ] || { echo "capi: no test matches: $*"; exit 1; }
[ -f "$LIB/libreef_reader.so" ] || { echo "capi: $LIB/libreef_reader.so is not built (cargo build --release -p reef-capi)"; exit 1; }
/usr/bin/python3 -c 'import bt2' 2>/dev/null || { echo "capi: python3-bt2 is not installed (scripts/install-deps.sh)"; exit 1; }
fails=0
CFLAGS=(-O1 -g -Wall -Wextra -Werror -I "$ROOT/crates/reef-capi/include")
# Cargo writes libreef_reader.so; programs load it by its soname, as an
# installed library is found.
mkdir -p "$WORK/lib"
ln -s "$LIB/libreef_reader.so" "$WORK/lib/libreef_reader.so"
ln -s "$LIB/libreef_reader.so" "$WORK/lib/libreef_reader.so.0"
LDFLAGS=(-L "$WORK/lib" -lreef_reader -Wl,-rpath,"$WORK/lib")
gcc "${CFLAGS[@]}" -o "$WORK/dump" "$HERE/dump.c" "${LDFLAGS[@]}" || exit 1

if want symbols; then
	echo "== symbols: the library exports exactly the header's functions, under its soname"
	header=$(grep -oE '^[a-z_ ]+\**(reef_[a-z_]+)\(' "$ROOT/crates/reef-capi/include/reef_reader.h" | sed -E 's/.*(reef_[a-z_]+)\($/\1/' | sort)
	lib=$(nm -D --defined-only "$LIB/libreef_reader.so" | awk '{print $3}' | sed 's/@.*//' | grep -v '^REEF_READER_' | sort)
	soname=$(readelf -d "$LIB/libreef_reader.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
	if [ "$header" = "$lib" ] && [ "$soname" = libreef_reader.so.0 ] && [ -n "$header" ]; then
		echo "ok   $(echo "$header" | wc -l) functions, soname $soname"
	else
		echo "FAIL soname '$soname'; header vs library:"; diff <(echo "$header") <(echo "$lib")
		fails=$((fails + 1))
	fi
fi

if want equals-bt2; then
	echo "== equals-bt2: every message through the C API against bt2"
	( cd "$CONF" && /usr/bin/python3 "$HERE/check.py" "$WORK/dump" babeltrace-traces/succeed/* kernel-traces/* ) \
		|| fails=$((fails + 1))
fi

if want damaged; then
	echo "== damaged: the events before the damage, then the error"
	cp -r "$CONF/kernel-traces/bug446190" "$WORK/damaged"
	f=$WORK/damaged/channel0_1
	size=$(stat -c %s "$f")
	truncate -s $((size / 2 + 1234)) "$f"
	"$WORK/dump" "$CONF/kernel-traces/bug446190" > "$WORK/clean.jsonl"
	"$WORK/dump" "$WORK/damaged" > "$WORK/damaged.jsonl"
	rc=$?
	/usr/bin/python3 - "$WORK/clean.jsonl" "$WORK/damaged.jsonl" "$rc" "$f" <<'PY' || fails=$((fails + 1))
import json, sys
clean = [json.loads(l) for l in open(sys.argv[1])]
dam = [json.loads(l) for l in open(sys.argv[2])]
rc, path = int(sys.argv[3]), sys.argv[4]
last = dam[-1] if dam else None
ok = rc == 1 and last and last[0] == "X" and last[1] == "REEF_ERR_READ" and path in last[2] and "byte" in last[2]
events = dam[:-1] if ok else dam
# Every message before the error is one of the clean reading's, in its order.
it = iter(clean)
prefix = all(any(m == c for c in it) for m in events)
if ok and prefix and len(events) > 1000:
    print("ok   %d messages, then %s" % (len(events), last[2][:160]))
else:
    print("FAIL exit %d, %d messages (in the clean reading's order: %s), last %s" % (rc, len(events), prefix, last))
    sys.exit(1)
PY
fi

if want misuse; then
	echo "== misuse: under AddressSanitizer and UndefinedBehaviorSanitizer"
	if gcc "${CFLAGS[@]}" -fsanitize=address,undefined -fno-sanitize-recover=undefined -pthread \
		-o "$WORK/misuse" "$HERE/misuse.c" "${LDFLAGS[@]}"; then
		"$WORK/misuse" "$CONF/kernel-traces/bug446190" cpu_id || fails=$((fails + 1))
	else
		fails=$((fails + 1))
	fi
fi

[ $fails -eq 0 ] && echo "capi: all passed" || echo "capi: $fails failed"
exit $fails
