#!/usr/bin/env bash
# bench/plugins/python.sh — Python plugins against babeltrace2's Python
# user components doing the same work, same run, same files:
#   source: a JSON-lines log of N events (4 threads, request begin/end
#     with an id and a path) read by examples/plugins/jsonl.py under `reef
#     check` (conversion, then every event decoded), and by
#     bt2_components.py's JsonLines source into sink.utils.dummy;
#   sink: the log's CTF conversion read by bench/plugins/pysum.py under
#     `reef sink` and by bt2_components.py's Sum behind source.ctf.fs and
#     the muxer (each counts the events and sums their `id`; the sums are
#     checked equal).
# Both run Debian's python3 for bt2 and the reef package's venv for reef
# (python/tests/run.sh's; REEF_PY_VENV). Medians of RUNS runs, peak RSS.
#
#   REEF=path/to/reef bash bench/plugins/python.sh      N=300000 RUNS=3
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${RUNS:-3}
N=${N:-300000}
REEF=${REEF:-$ROOT/target/release/reef}
VENV=${REEF_PY_VENV:-/tmp/reef-python-venv}
[ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import reef.plugin' \
	|| { echo "bench/plugins/python.sh: no reef package in $VENV (bash python/tests/run.sh makes it)"; exit 1; }
export REEF_PYTHON=$VENV/bin/python
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# shellcheck source=../lib.sh
source "$ROOT/bench/lib.sh"

/usr/bin/python3 - "$W/app.jsonl" "$N" <<'PY'
import json, random, sys
r = random.Random(3)
t = 1_700_000_000_000_000_000
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        t += r.randrange(1, 3000)
        f.write(json.dumps({"time": t, "event": "request_begin" if i % 2 == 0 else "request_end",
                            "thread": i % 4, "id": i // 2, "path": "/api/items/%d" % i}) + "\n")
PY
SRC=(--plugin "$ROOT/examples/plugins/jsonl.py")
"$REEF" convert "${SRC[@]}" "$W/app.jsonl" -o "$W/ctf" > /dev/null 2>&1
a=$("$REEF" sink pysum --plugin "$ROOT/bench/plugins/pysum.py" "$W/ctf")
b=$(/usr/bin/python3 "$ROOT/bench/plugins/bt2_components.py" sink "$W/ctf")
[ "$a" = "$b" ] && [ "$a" = "events $N, sum of id $(( (N / 2) * (N / 2 - 1) ))" ] \
	|| { echo "bench/plugins/python.sh: the sinks disagree: reef '$a', bt2 '$b'"; exit 1; }

read -r rs_t rs_m < <(measure "$RUNS" "$REEF" check "${SRC[@]}" "$W/app.jsonl")
read -r bs_t bs_m < <(measure "$RUNS" /usr/bin/python3 "$ROOT/bench/plugins/bt2_components.py" source "$W/app.jsonl")
read -r rk_t rk_m < <(measure "$RUNS" "$REEF" sink pysum --plugin "$ROOT/bench/plugins/pysum.py" "$W/ctf")
read -r bk_t bk_m < <(measure "$RUNS" /usr/bin/python3 "$ROOT/bench/plugins/bt2_components.py" sink "$W/ctf")

echo
echo "Events: $N ($(stat -c %s "$W/app.jsonl") bytes of JSON lines); $a"
echo "Machine: $(nproc) cores, $(uname -r); $("$REEF_PYTHON" --version), bt2 $(/usr/bin/python3 -c 'import bt2; print(bt2.__version__)'); RUNS=$RUNS"
echo
echo "| work | reef s | bt2 s | reef events/s | bt2 events/s | reef ÷ bt2 | peak RSS MiB reef / bt2 |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row() { awk -v n="$1" -v r="$2" -v b="$3" -v rm="$4" -v bm="$5" -v e="$N" 'BEGIN {printf "| %s | %.2f | %.2f | %.0f k | %.0f k | %.1f× | %.0f / %.0f |\n", n, r, b, e / r / 1e3, e / b / 1e3, b / r, rm / 1024, bm / 1024}'; }
row "Python source (jsonl.py; bt2 JsonLines → dummy)" "$rs_t" "$bs_t" "$rs_m" "$bs_m"
row "Python sink (pysum.py; ctf.fs → muxer → bt2 Sum)" "$rk_t" "$bk_t" "$rk_m" "$bk_m"
