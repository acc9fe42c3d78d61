#!/usr/bin/env bash
# tests/lttng/run.sh [TEST-NAME-SUBSTRING...]: records a real LTTng-UST
# trace of tests/lttng/app (record.sh, 10 iterations), then
#   payload         every payload is what the app traced, read by
#                   babeltrace2 and by reef print (check-payload.sh);
#   print OPTIONS   `reef print OPTIONS` = `babeltrace2 OPTIONS`, byte for
#                   byte, for each option set (compare.sh).
# The binary under test is $REEF_BIN (default: target/release/reef). With
# arguments, only the tests whose name contains one of them run.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export REEF_BIN=${REEF_BIN:-$HERE/../../target/release/reef}
sets=("" "--clock-seconds --no-delta" "--names=all --fields=all --clock-gmt" "--clock-cycles" "--clock-date")
names=(payload)
for o in "${sets[@]}"; do names+=("print${o:+ $o}"); done
chosen=()
for n in "${names[@]}"; do
    if [ $# -eq 0 ]; then chosen+=("$n"); continue; fi
    for f in "$@"; do case "$n" in *"$f"*) chosen+=("$n"); break ;; esac; done
done
[ ${#chosen[@]} -gt 0 ] || { echo "lttng: no test matches: $*" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-lttng-suite.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
bash "$HERE/record.sh" "$WORK/trace" >/dev/null || { echo "FAIL recording the LTTng-UST trace"; exit 1; }
failed=0
for n in "${chosen[@]}"; do
    case "$n" in
    payload)
        ok=1
        bash "$HERE/check-payload.sh" "$WORK/trace" || ok=
        bash "$HERE/check-payload.sh" --reef "$WORK/trace" || ok=
        ;;
    print*)
        o=${n#print}
        o=${o# }
        ok=1
        # shellcheck disable=SC2086 # the option set is split into words
        bash "$HERE/compare.sh" "$WORK/trace" -- $o || ok=
        ;;
    esac
    if [ -n "$ok" ]; then echo "ok   $n"; else echo "FAIL $n"; failed=$((failed + 1)); fi
done
[ $failed -eq 0 ] || { echo "lttng: $failed of ${#chosen[@]} test(s) failed"; exit 1; }
echo "lttng: all ${#chosen[@]} test(s) passed"
