#!/usr/bin/env bash
# Makes the reference outputs of tests/analyses/ with lttng-analyses 0.6.1
# itself (NOT run in CI: lttng-analyses is slow; the JSON files it writes are
# committed and compared with reef's by crates/reef-analyses/tests/).
#
#   bash tests/analyses/make-references.sh [VENV_DIR]
#
# ONLY=options makes only the references of options.txt.
#
# Needs Debian's python3-babeltrace (the babeltrace 1.5 binding) and PyPI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
traces="$root/../shared/conformance/kernel-traces"
venv="${1:-/tmp/reef-lttng-analyses-venv}"

if [ ! -x "$venv/bin/lttng-cputop-mi" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/pip" install -q lttnganalyses==0.6.1
fi
# 0.6.1 predates Python 3.10, where collections.Mapping moved to
# collections.abc: patch the installed copy so that it starts.
site="$("$venv/bin/python3" -c 'import lttnganalyses, os; print(os.path.dirname(lttnganalyses.__file__))')"
{ grep -rl --include='*.py' 'collections\.Mapping' "$site" || true; } | xargs -r sed -i 's/collections\.Mapping/collections.abc.Mapping/g'
grep -q '^import collections.abc' "$site/core/event.py" || sed -i '0,/^import collections/s//import collections.abc\nimport collections/' "$site/core/event.py"

out="$here/references"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# name of reef's command : lttng-analyses' -mi command and its options
analyses=(
    "cputop:lttng-cputop-mi"
    "syscallstats:lttng-syscallstats-mi"
    "irqstats:lttng-irqstats-mi"
    "schedstats:lttng-schedstats-mi --total --per-tid --per-prio"
    "iolatency:lttng-iolatencystats-mi"
    "memtop:lttng-memtop-mi"
    "schedlog:lttng-schedlog-mi"
    "irqlog:lttng-irqlog-mi"
    "schedtop:lttng-schedtop-mi"
    "schedfreq:lttng-schedfreq-mi --total --per-tid --per-prio"
    "irqfreq:lttng-irqfreq-mi"
    "iolog:lttng-iolog-mi"
    "iolatencyfreq:lttng-iolatencyfreq-mi"
    "iolatencytop:lttng-iolatencytop-mi"
    "iousagetop:lttng-iousagetop-mi"
)
# A synthetic 4-CPU trace whose streams start and end at different times
# (so lttng-analyses' stream intersection matters), made by our generator;
# check-cli.py regenerates it and checks its hash before comparing.
python3 "$here/gen-kernel-trace.py" "$tmp/synthetic/kernel" 100000
(cd "$tmp/synthetic/kernel" && sha256sum metadata channel0_*) >"$out/synthetic.sha256"
for trace in uneven-streams bug446190 synthetic; do
    # lttng-analyses wants a directory holding a `kernel` trace.
    if [ "$trace" != synthetic ]; then
        mkdir -p "$tmp/$trace"
        # (a copy: babeltrace's recursive open does not follow symlinks)
        cp -r "$traces/$trace" "$tmp/$trace/kernel"
    fi
    for a in "${analyses[@]}"; do
        name="${a%%:*}"
        cmd="${a#*:}"
        if [ -n "${ONLY:-}" ]; then continue; fi
        # The logs of the synthetic trace would weigh 10 MB.
        if [ "$trace" = synthetic ] && [ "${name%log}" != "$name" ]; then continue; fi
        # (the view's test reads bug446190's only; uneven-streams' is 1.7 MB)
        if [ "$trace" != bug446190 ] && [ "$name" = iolog ]; then continue; fi
        dest="$out/$trace.$name.json"
        echo "== $trace: $cmd"
        # shellcheck disable=SC2086
        if "$venv/bin/"$cmd "$tmp/$trace" >"$tmp/out.json" 2>"$tmp/err.txt"; then
            "$venv/bin/python3" -m json.tool --indent 1 "$tmp/out.json" >"$dest"
            "$venv/bin/"${cmd%% *} --metadata >"$out/$name.metadata.json" 2>/dev/null || true
        else
            echo "   FAILED (exit $?), recorded in $dest.failed"
            { echo "command: $cmd"; cat "$tmp/err.txt"; } >"$dest.failed"
        fi
    done
done
# A time range inside bug446190 (LAMI's --begin/--end in ns): the kernel
# model sees the events before it, the statistics do not.
range=(--begin 1412670963000000000 --end 1412670965000000000)
[ -n "${ONLY:-}" ] ||
for a in "cputop:lttng-cputop-mi --limit 0" "syscallstats:lttng-syscallstats-mi" \
         "schedstats:lttng-schedstats-mi --total --per-tid --per-prio"; do
    name="${a%%:*}"
    cmd="${a#*:}"
    echo "== bug446190 (range): $cmd"
    # shellcheck disable=SC2086
    "$venv/bin/"$cmd "${range[@]}" "$tmp/bug446190" >"$tmp/out.json"
    "$venv/bin/python3" -m json.tool --indent 1 "$tmp/out.json" >"$out/bug446190-range.$name.json"
done
# The selection options of options.txt, with the same options.
n=0
while IFS='|' read -r name opts; do
    case "$name" in '#'*|'') continue ;; esac
    name="$(echo $name)"
    n=$((n + 1))
    for a in "${analyses[@]}"; do
        [ "${a%%:*}" = "$name" ] || continue
        cmd="${a#*:}"
        cmd="${cmd%% *}"
        for trace in bug446190 synthetic; do
            echo "== $trace (options $n): $cmd $opts"
            # shellcheck disable=SC2086
            "$venv/bin/"$cmd $opts "$tmp/$trace" >"$tmp/out.json"
            "$venv/bin/python3" -m json.tool --indent 1 "$tmp/out.json" >"$out/$trace-opts.$n.json"
        done
    done
done <"$here/options.txt"
"$venv/bin/python3" -c 'import lttnganalyses; print("lttnganalyses", lttnganalyses.__version__)' >"$out/VERSION"
