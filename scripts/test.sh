#!/usr/bin/env bash
# Runs every test: installs what the tests need (system packages, Rust
# components; quiet when already there), builds the page of `reef view`,
# checks formatting and lints, builds, runs the Rust workspace's tests
# (unit, doc, golden, conformance, robustness), then the end-to-end suites
# listed below, each with REEF_BIN set to the binary built here. Prints a
# table of each step's and suite's wall time and the total; exits non-zero
# if any failed. CI runs exactly this (.ci/run).
#
#   bash scripts/test.sh                      everything
#   bash scripts/test.sh tracer view-api      the install, web and build
#                                             steps, then only the suites
#                                             whose name contains one of
#                                             the arguments
#
# The names that select: the suites (lttng, lttng-live, tracer, profile,
# live, recover, install, export, convert, sql, analyses, python, kernel,
# capi, plugins, view-api, view-e2e, view-activities, view-analyses, view-profile,
# view-live, docs)
# and the steps fmt, clippy, doc and cargo-test, which run with no
# argument or when named. A suite runs as `REEF_BIN=... bash SCRIPT`; its
# own test-name filter is given to it directly (e.g. bash
# tests/live/run.sh block_mode).
#
# Cargo's target directory is $CARGO_TARGET_DIR, by default
# ~/.cache/reef/target: kept outside the clone, so that a new clone on the
# same machine builds only the workspace's own crates, not its
# dependencies (DataFusion alone is about 16 minutes on two cores). The
# release profile is built without LTO here (CARGO_PROFILE_RELEASE_LTO,
# default false): with thin LTO, the dependencies of the LTO-linked reef
# binary are compiled to bitcode, and `cargo test`, the install test's
# `cargo build -p reef-cli` and maturin then compile most of them again;
# without it, every build of the run shares one set of artifacts.
# ARCHITECTURE.md ("Test loop") gives the time of each step.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# name | script (relative to the repository) | how it is run
SUITES=(
    "lttng|tests/lttng/run.sh|bash"
    "lttng-live|tests/lttng-live/run.sh|bash"
    "tracer|tests/tracer/run.sh|bash"
    "profile|tests/profile/run.sh|bash"
    "live|tests/live/run.sh|bash"
    "recover|tests/recover/run.sh|bash"
    "install|tests/install/run.sh|bash"
    "export|tests/export/run.sh|bash"
    "convert|tests/convert/run.sh|bash"
    "sql|tests/sql/run.sh|bash"
    "analyses|tests/analyses/check-cli.py|python3"
    "python|python/tests/run.sh|bash"
    "kernel|tests/kernel/run.sh|bash"
    "capi|tests/capi/run.sh|bash"
    "plugins|tests/plugins/run.sh|bash"
    "view-api|tests/view/api/run.sh|bash"
    "view-e2e|tests/view/e2e.mjs|node"
    "view-activities|tests/view/e2e-activities.mjs|node"
    "view-analyses|tests/view/e2e-analyses.mjs|node"
    "view-profile|tests/view/e2e-profile.mjs|node"
    "view-live|tests/view/e2e-live.mjs|node"
    "docs|tests/docs/run.sh|bash"
)
FILTERS=("$@")
chosen() { # NAME: selected by the arguments (all when there are none)
    local f
    [ ${#FILTERS[@]} -eq 0 ] && return 0
    for f in "${FILTERS[@]}"; do
        case "$1" in *"$f"*) return 0 ;; esac
    done
    return 1
}
if [ ${#FILTERS[@]} -gt 0 ]; then
    for f in "${FILTERS[@]}"; do
        known=
        for n in fmt clippy doc cargo-test "${SUITES[@]%%|*}"; do
            case "$n" in *"$f"*) known=1 ;; esac
        done
        [ -n "$known" ] || { echo "test.sh: no suite or step is named like '$f'" >&2; exit 2; }
    done
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/reef/target}
mkdir -p "$CARGO_TARGET_DIR"
CARGO_TARGET_DIR=$(cd "$CARGO_TARGET_DIR" && pwd)
export REEF_BIN=$CARGO_TARGET_DIR/release/reef
export CARGO_PROFILE_RELEASE_LTO=${CARGO_PROFILE_RELEASE_LTO:-false}

T0=$SECONDS
ROWS=()
fails=0
failed_names=()
# step NAME COMMAND...: runs it, records its wall time and result.
step() {
    local name=$1 t=$SECONDS rc
    shift
    echo
    echo "== $name: $*"
    "$@"
    rc=$?
    if [ $rc -eq 0 ]; then
        ROWS+=("$name|$((SECONDS - t))|ok")
    else
        ROWS+=("$name|$((SECONDS - t))|FAILED ($rc)")
        fails=$((fails + 1))
        failed_names+=("$name")
    fi
    return $rc
}
table() {
    local r name secs result
    echo
    echo "== time per step and suite (wall clock, $(nproc) cores)"
    printf '%-18s %9s  %s\n' "step/suite" "m:ss" "result"
    for r in "${ROWS[@]}"; do
        IFS='|' read -r name secs result <<<"$r"
        printf '%-18s %6d:%02d  %s\n' "$name" $((secs / 60)) $((secs % 60)) "$result"
    done
    local total=$((SECONDS - T0))
    printf '%-18s %6d:%02d\n' "total" $((total / 60)) $((total % 60))
}
fatal() {
    table
    echo "test.sh: $1 failed; nothing after it can run"
    exit 1
}

step install bash scripts/install-deps.sh || fatal install
web() { bash scripts/build-web.sh && (cd web && npm run --silent check); }
step web web || fatal "the web build"
if chosen fmt; then step fmt cargo fmt --all -- --check; fi
# clippy, doc and the builds share one profile (release): the
# dependencies' check metadata made for clippy serves cargo doc, and
# cargo test reuses cargo build's artifacts.
if chosen clippy; then step clippy cargo clippy --workspace --all-targets --release -- -D warnings; fi
if chosen doc; then
    doc() { RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --exclude reef-sql --no-deps --quiet; }
    step doc doc
fi
# reef-sql (the engine of `reef sql`, DataFusion) builds in its own profile
# (Cargo.toml, [profile.sql]) into $CARGO_TARGET_DIR/sql, where `reef sql`
# finds it beside release/reef; it has no unit tests: tests/sql checks it.
step build cargo build --release --workspace --exclude reef-sql || fatal "cargo build"
if chosen cargo-test; then step cargo-test cargo test --release --workspace --exclude reef-sql --no-fail-fast; fi
if chosen sql; then step build-sql cargo build --profile sql -p reef-sql || fatal "the build of reef-sql"; fi

for s in "${SUITES[@]}"; do
    IFS='|' read -r name script how <<<"$s"
    chosen "$name" || continue
    if [ ! -f "$script" ]; then
        echo
        echo "== $name: $script is missing"
        ROWS+=("$name|0|FAILED (missing $script)")
        fails=$((fails + 1))
        failed_names+=("$name")
        continue
    fi
    step "$name" "$how" "$script"
done

table
if [ "$fails" -ne 0 ]; then
    echo "$fails failed: ${failed_names[*]}"
    exit 1
fi
echo "all tests passed"
