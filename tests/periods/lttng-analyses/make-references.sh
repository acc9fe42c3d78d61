#!/usr/bin/env bash
# Makes references for `reef periods` with lttng-analyses 0.6.1 itself
# (lttng-periodstats-mi, -periodfreq-mi, -periodtop-mi). NOT run in CI: the
# JSON files it writes are committed and compared with reef's output by
# crates/reef-cli/tests/periods.rs (lttng_analyses_references).
#
#   bash tests/periods/lttng-analyses/make-references.sh VENV_DIR
#
# VENV_DIR holds lttnganalyses 0.6.1 with Debian's python3-babeltrace, set
# up and patched as tests/analyses/make-references.sh does. Only the cases
# 0.6.1 runs here are made: its --group-by and parent periods fail with
# parse errors ("list index out of range", "'id'") in this environment, so
# those are covered by tests/periods/reference.py only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
traces="$here/../../../../shared/conformance/kernel-traces"
venv="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# lttng-analyses wants a folder named `kernel` inside the path it is given.
for t in bug446190 uneven-streams; do
    mkdir -p "$tmp/$t/kernel"
    ln -s "$traces/$t"/* "$tmp/$t/kernel/"
done

IRQ='irq : $evt.$name == "irq_handler_entry" : $evt.$name == "irq_handler_exit" && $evt.irq == $begin.$evt.irq && $evt.cpu_id == $begin.$evt.cpu_id'
TICK='tick : $evt.$name == "timer_hrtimer_start"'
SYS='sys : $evt.$name =* "syscall_entry_*" : $evt.$name =* "syscall_exit_*"'

# case name | trace | period definition
cases=(
    "irq|bug446190|$IRQ"
    "tick|uneven-streams|$TICK"
    "sys|uneven-streams|$SYS"
)
for c in "${cases[@]}"; do
    IFS='|' read -r name trace def <<<"$c"
    for tool in stats freq top; do
        "$venv/bin/lttng-period$tool-mi" --period "$def" "$tmp/$trace" > "$tmp/out.json"
        python3 - "$name" "$trace" "$def" "$tool" "$tmp/out.json" "$here/$name.$tool.json" <<'PY'
import json, sys
name, trace, definition, tool, src, dst = sys.argv[1:]
res = json.load(open(src))
assert "results" in res and res["results"], res
rows = [[cell.get("value") for cell in row] for row in res["results"][0]["data"]]
json.dump({"trace": trace, "period": definition, "tool": "lttng-period%s-mi" % tool,
           "rows": rows}, open(dst, "w"), indent=1)
PY
    done
done
