#!/usr/bin/env bash
# Installs, from Debian's packages, the build tools that a build of reef
# needs besides Rust and a C compiler, when they are missing: Node.js with
# npm (the page of `reef view`, scripts/build-web.sh) and protoc (Debian's
# protobuf-compiler: the build of the Perfetto trace types that
# `reef convert --to perfetto` writes runs it).
set -euo pipefail
missing=()
command -v npm >/dev/null || missing+=(nodejs npm)
command -v protoc >/dev/null || missing+=(protobuf-compiler)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "installing: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
