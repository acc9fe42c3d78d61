#!/usr/bin/env bash
# Builds the page `reef view` serves (web/, TypeScript bundled by esbuild)
# into web/dist, which `cargo build` embeds in the reef binary. Installs
# the npm packages it needs (web/package-lock.json) on the first run, and
# first the build tools when missing (scripts/build-tools.sh: npm, protoc).
set -euo pipefail
cd "$(dirname "$0")/../web"
bash ../scripts/build-tools.sh
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund --loglevel=error
    touch node_modules
fi
npm run --silent build
