#!/usr/bin/env bash
# Runs every test: installs what the tests need (system packages, Rust
# components; quiet when already there), checks formatting and lints, then
# the Rust workspace (unit, doc, golden, conformance, robustness) and the
# end-to-end tests that need LTTng and babeltrace2. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

echo "== web: npm ci, tsc --noEmit (strict), esbuild"
bash scripts/build-web.sh
(cd web && npm run --silent check)

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --release -- -D warnings
echo "== cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --exclude reef-sql --no-deps --quiet

# reef-sql (the engine of `reef sql`, DataFusion) builds in its own profile
# (Cargo.toml, [profile.sql]); it has no unit tests: tests/sql checks it.
cargo build --release --workspace --exclude reef-sql
cargo test --release --workspace --exclude reef-sql
cargo build --profile sql -p reef-sql
reef="$PWD/target/release/reef"
fails=0
if [ -x tests/lttng/record.sh ] || [ -f tests/lttng/record.sh ]; then
    echo "== LTTng-UST trace: reef print vs babeltrace2"
    out=$(mktemp -d)
    if bash tests/lttng/record.sh "$out/trace" && bash tests/lttng/compare.sh "$reef" "$out/trace"; then
        echo "lttng: ok"
    else
        echo "lttng: FAILED"; fails=$((fails + 1))
    fi
    rm -rf "$out"
fi
if [ -f tests/lttng-live/run.sh ]; then
    echo "== LTTng live (lttng-relayd): reef print net://... vs babeltrace2"
    if bash tests/lttng-live/run.sh "$reef"; then echo "lttng-live: ok"; else echo "lttng-live: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/tracer/run.sh ]; then
    echo "== libreef tracer tests"
    if bash tests/tracer/run.sh; then echo "tracer: ok"; else echo "tracer: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/profile/run.sh ]; then
    echo "== profiling: libreef sampling, function entry/exit, reef profile, LTTng-UST cyg-profile"
    if bash tests/profile/run.sh; then echo "profile: ok"; else echo "profile: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/live/run.sh ]; then
    echo "== live streaming tests (REEF_LISTEN, reef listen)"
    if bash tests/live/run.sh; then echo "live: ok"; else echo "live: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/install/run.sh ]; then
    echo "== install: make install / cmake --install into a DESTDIR, the examples built against it"
    if bash tests/install/run.sh; then echo "install: ok"; else echo "install: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/export/run.sh ]; then
    echo "== reef convert: Parquet read by DuckDB, pyarrow, polars; Chrome JSON; values vs bt2"
    if bash tests/export/run.sh "$reef"; then echo "export: ok"; else echo "export: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/convert/run.sh ]; then
    echo "== reef convert to CTF: windows, filters, a damaged input, vs babeltrace2"
    if bash tests/convert/run.sh "$reef"; then echo "convert: ok"; else echo "convert: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/sql/run.sh ]; then
    echo "== reef sql: vs reef stats, cputop, syscallstats and DuckDB; formats; errors"
    if bash tests/sql/run.sh "$reef"; then echo "sql: ok"; else echo "sql: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/analyses/check-cli.py ]; then
    echo "== kernel analyses (reef CLI, LAMI) vs lttng-analyses 0.6.1 references"
    if python3 tests/analyses/check-cli.py "$reef"; then echo "analyses: ok"; else echo "analyses: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f python/tests/run.sh ]; then
    echo "== Python package (import reef): vs bt2 (python3-bt2), the CLI's JSON/LAMI, scripts, Arrow"
    if bash python/tests/run.sh "$reef"; then echo "python: ok"; else echo "python: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/view/api/run.sh ]; then
    echo "== reef view: API vs babeltrace2, bad input"
    if bash tests/view/api/run.sh "$reef"; then echo "view api: ok"; else echo "view api: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/view/e2e.mjs ]; then
    echo "== reef view: the page in headless Chromium"
    if REEF_BIN="$reef" node tests/view/e2e.mjs; then echo "view e2e: ok"; else echo "view e2e: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/view/e2e-activities.mjs ]; then
    echo "== reef view: activities in headless Chromium vs reef activities --log and babeltrace2"
    if REEF_BIN="$reef" node tests/view/e2e-activities.mjs; then echo "view activities e2e: ok"; else echo "view activities e2e: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/view/e2e-analyses.mjs ]; then
    echo "== reef view: the Analyses tab in headless Chromium vs lttng-analyses 0.6.1 references"
    if REEF_BIN="$reef" node tests/view/e2e-analyses.mjs; then echo "view analyses e2e: ok"; else echo "view analyses e2e: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/view/e2e-profile.mjs ]; then
    echo "== reef view: sample lanes and the Profile tab in headless Chromium vs babeltrace2 and /api/profile"
    if REEF_BIN="$reef" node tests/view/e2e-profile.mjs; then echo "view profile e2e: ok"; else echo "view profile e2e: FAILED"; fails=$((fails + 1)); fi
fi
if [ -f tests/view/e2e-live.mjs ]; then
    echo "== reef view --live: a libreef program streaming, in headless Chromium, vs babeltrace2"
    if REEF_BIN="$reef" node tests/view/e2e-live.mjs; then echo "view live e2e: ok"; else echo "view live e2e: FAILED"; fails=$((fails + 1)); fi
fi
[ "$fails" -eq 0 ] || { echo "$fails end-to-end suite(s) failed"; exit 1; }
echo "all tests passed"
