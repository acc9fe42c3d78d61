#!/usr/bin/env bash
# Builds the page `reef view` serves (web/, TypeScript bundled by esbuild)
# into web/dist, which `cargo build` embeds in the reef binary. Installs
# the npm packages it needs (web/package-lock.json) on the first run.
set -euo pipefail
cd "$(dirname "$0")/../web"
if ! command -v npm >/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "installing: nodejs npm"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund --loglevel=error
    touch node_modules
fi
npm run --silent build
