#!/usr/bin/env bash
# bench/view/run.sh — `reef view` on two traces of more than 1 GB each: time
# to first frame against `reef check`, peak memory, /api/window latency and
# the browser's frame time while panning. See bench/view/README.md.
#
#   bash bench/view/run.sh
#
# Traces are generated once into $CACHE (default ~/.cache/reef-bench/view)
# and reused; delete a trace's directory there (or its .done file) to make
# it again. Environment: REEF (a reef binary; default: cargo build --release
# -p reef-cli, then target/release/reef), KERNEL_BYTES / UST_BYTES (default
# 1G each), WINDOWS (1000), CHECK_RUNS (5), PAN_MS (2500), CHROMIUM
# (/usr/bin/chromium). Not run in CI.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=${CACHE:-$HOME/.cache/reef-bench/view}
KERNEL_BYTES=${KERNEL_BYTES:-1G}
UST_BYTES=${UST_BYTES:-1G}
BUILD="$CACHE/build"
mkdir -p "$CACHE" "$BUILD"

if [ -z "${REEF:-}" ]; then
	(cd "$ROOT" && cargo build --release -q -p reef-cli)
	REEF=$ROOT/target/release/reef
fi
"$REEF" view --help >/dev/null 2>&1 || { echo "bench/view: $REEF has no 'view' command" >&2; exit 1; }

# Headless Chromium and playwright-core (web/'s, or a copy of our own).
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
	SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get install -y chromium >/dev/null
fi
if [ ! -f "$ROOT/web/node_modules/playwright-core/package.json" ]; then
	if [ ! -f "$HERE/node_modules/playwright-core/package.json" ]; then
		(cd "$HERE" && npm install --no-save --no-audit --no-fund --silent playwright-core@1 >/dev/null)
	fi
	# tests/view/e2e-lib.mjs resolves it from web/: found here instead.
	export NODE_PATH="$HERE/node_modules${NODE_PATH:+:$NODE_PATH}"
fi

# The generators, rebuilt every run (a second each).
CFLAGS="-std=c11 -pedantic -O2 -Wall -Wextra -Werror"
cc $CFLAGS "$HERE/gen-kernel.c" -lm -o "$BUILD/gen-kernel"
"$REEF" gen "$HERE/app.reef" -o "$BUILD/gen" >/dev/null 2>"$BUILD/gen.log" || { cat "$BUILD/gen.log" >&2; exit 1; }
make -s -C "$ROOT/tracer" >/dev/null
cc $CFLAGS -I"$ROOT/tracer/include" -I"$BUILD/gen" "$HERE/record.c" "$ROOT/tracer/libreef.a" -lpthread \
	-o "$BUILD/record"

# A trace is reused when its .done file names the same generator source
# and size.
stamp() { { sha256sum "$@" | cut -d' ' -f1; } | sha256sum | cut -d' ' -f1; }
KSTAMP="$(stamp "$HERE/gen-kernel.c") $KERNEL_BYTES"
if [ "$(cat "$CACHE/kernel.done" 2>/dev/null)" != "$KSTAMP" ]; then
	rm -rf "$CACHE/kernel" "$CACHE/kernel.done"
	echo "generating the kernel trace ($KERNEL_BYTES)..." >&2
	start=$(date +%s%N)
	"$BUILD/gen-kernel" "$CACHE/kernel" "$KERNEL_BYTES" >&2
	echo "  in $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
	echo "$KSTAMP" > "$CACHE/kernel.done"
fi
USTAMP="$(stamp "$HERE/record.c" "$HERE/app.reef") $UST_BYTES"
if [ "$(cat "$CACHE/ust.done" 2>/dev/null)" != "$USTAMP" ]; then
	rm -rf "$CACHE/ust" "$CACHE/ust.done"
	echo "recording the libreef trace ($UST_BYTES)..." >&2
	start=$(date +%s%N)
	REEF_OUTPUT="$CACHE/ust" REEF_MODE=block REEF_BUFFER_SIZE=4M "$BUILD/record" "$UST_BYTES" >&2
	echo "  in $(( ($(date +%s%N) - start) / 1000000 )) ms" >&2
	echo "$USTAMP" > "$CACHE/ust.done"
fi
echo "cached traces: $(du -sh "$CACHE/kernel" | cut -f1) kernel, $(du -sh "$CACHE/ust" | cut -f1) libreef" >&2

export VIEW_STDERR="$CACHE/view.stderr"
: > "$VIEW_STDERR"
python3 "$HERE/bench.py" --json "$CACHE/last-run.json" "$REEF" "kernel=$CACHE/kernel" "libreef=$CACHE/ust"
echo "(every window's figures: $CACHE/last-run.json; the servers' stderr: $VIEW_STDERR)" >&2
