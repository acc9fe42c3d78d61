#!/usr/bin/env bash
# Installs the system packages reef's tests and benchmarks compare against:
# babeltrace2 / babeltrace (reading), LTTng-UST + tools (recording peer),
# Chromium (the page of `reef view`, driven by playwright-core from web/);
# cmake, pkg-config and man-db for the install tests (tests/install);
# python3-bt2 (babeltrace2's Python bindings: the Python package's
# reference) and python3-venv (its tests' venv); openjdk-17-jre-headless
# for Spark (tests/export).
# binutils, linux-perf and valgrind for tests/profile and bench/profile;
# trace-cmd and linux-perf for the kernel inputs (tests/kernel: .dat and
# perf.data, read by their own tools as the reference);
# protobuf-compiler (protoc) for the build of the Perfetto trace types and
# the test that decodes `reef convert --to perfetto`'s output; Go
# (golang-go, unless a `go` is on the PATH) for `go tool pprof`, the
# reader of `reef profile --pprof` in tests/profile.
set -euo pipefail
pkgs=(babeltrace2 babeltrace lttng-tools liblttng-ust-dev python3-babeltrace python3-bt2 python3-venv openjdk-17-jre-headless time build-essential chromium cmake pkg-config man-db binutils linux-perf trace-cmd valgrind protobuf-compiler)
command -v go >/dev/null || pkgs+=(golang-go)
missing=()
for p in "${pkgs[@]}"; do
    # Installed, not merely known (a removed package keeps its config files
    # and `dpkg -s` still succeeds for it).
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "installing: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
