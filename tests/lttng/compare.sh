#!/usr/bin/env bash
# Compare `reef print` with babeltrace2 on a trace, for several option sets.
#
# Usage: tests/lttng/compare.sh OUTDIR [-- OPTION...]
#
# For each option set, runs (with TZ=UTC)
#     babeltrace2 OPTIONS OUTDIR
#     $REEF_BIN print OPTIONS OUTDIR
# ($REEF_BIN: the binary under test, default target/release/reef)
# and requires the same standard output (byte for byte) and the same exit
# status. A difference in standard error is reported but is not a failure.
# With `-- OPTION...`, only that one option set is compared.
#
# Exits 0 when everything matches, 1 on any difference (after trying every
# option set), 2 on a usage error. On failure the outputs are kept in a
# directory whose path is printed (set REEF_COMPARE_KEEP=DIR to choose it).

set -u
set -o pipefail

usage() {
	echo "usage: $0 OUTDIR [-- OPTION...]" >&2
	exit 2
}
[ $# -ge 1 ] || usage
REEF=${REEF_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/target/release/reef}
OUTDIR=$1
shift

OPTION_SETS=(
	""
	"--clock-seconds --no-delta"
	"--names=all --fields=all --clock-gmt"
	"--clock-cycles"
	"--clock-date"
)
if [ $# -gt 0 ]; then
	[ "$1" = -- ] || usage
	shift
	OPTION_SETS=("$*")
fi

command -v babeltrace2 >/dev/null 2>&1 || {
	echo "compare.sh: babeltrace2 is not installed (bash scripts/install-deps.sh)" >&2
	exit 1
}
case $REEF in
*/*) ;;
*) REEF=$(command -v "$REEF" || echo "$REEF") ;;
esac
[ -x "$REEF" ] && [ -f "$REEF" ] || {
	echo "compare.sh: reef binary '$REEF' does not exist or is not executable" \
		"(set REEF_BIN, or build it: cargo build --release)" >&2
	exit 1
}
[ -d "$OUTDIR" ] || {
	echo "compare.sh: trace directory '$OUTDIR' does not exist (record one with record.sh)" >&2
	exit 1
}

if [ -n "${REEF_COMPARE_KEEP:-}" ]; then
	WORK=$REEF_COMPARE_KEEP
	mkdir -p "$WORK" || exit 1
else
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-compare.XXXXXX") || exit 1
fi

# Show where two files first differ: line number, both lines (around the
# first differing column if the lines are long) and a diff excerpt.
explain_difference() {
	local bt=$1 rf=$2
	local bt_lines rf_lines
	bt_lines=$(wc -l <"$bt")
	rf_lines=$(wc -l <"$rf")
	echo "    babeltrace2: $bt_lines lines, $(wc -c <"$bt") bytes; reef: $rf_lines lines, $(wc -c <"$rf") bytes"
	local where
	where=$(cmp "$bt" "$rf" 2>&1 | head -n 1)
	echo "    cmp: $where"
	local line
	line=$(printf '%s\n' "$where" | sed -n 's/.*line \([0-9]*\).*/\1/p')
	if [ -z "$line" ]; then
		# EOF on one side: one output is a prefix of the other.
		if [ "$bt_lines" -gt "$rf_lines" ]; then
			echo "    reef output stops early; next babeltrace2 line ($((rf_lines + 1))):"
			sed -n "$((rf_lines + 1))p" "$bt" | cut -c1-400 | sed 's/^/      /'
		else
			echo "    reef prints more; its extra line ($((bt_lines + 1))):"
			sed -n "$((bt_lines + 1))p" "$rf" | cut -c1-400 | sed 's/^/      /'
		fi
		return
	fi
	local a b
	a=$(sed -n "${line}p" "$bt")
	b=$(sed -n "${line}p" "$rf")
	local i=0 n=${#a}
	[ ${#b} -lt "$n" ] && n=${#b}
	while [ $i -lt "$n" ] && [ "${a:i:1}" = "${b:i:1}" ]; do
		i=$((i + 1))
	done
	local from=0
	[ $i -gt 60 ] && from=$((i - 60))
	echo "    first difference at line $line, column $((i + 1)):"
	if [ $from -gt 0 ]; then
		echo "      babeltrace2: ...${a:from:200}"
		echo "      reef       : ...${b:from:200}"
		printf '      %*s^\n' $((i - from + 16)) ''
	else
		echo "      babeltrace2: ${a:0:200}"
		echo "      reef       : ${b:0:200}"
		printf '      %*s^\n' $((i + 13)) ''
	fi
	echo "    diff (first lines, < babeltrace2, > reef):"
	diff "$bt" "$rf" | head -n 10 | cut -c1-300 | sed 's/^/      /'
}

failed=0
set_no=0
for opts in "${OPTION_SETS[@]}"; do
	set_no=$((set_no + 1))
	# shellcheck disable=SC2206 # word splitting of the option set is intended
	args=($opts)
	label="[${opts:-no options}]"
	d="$WORK/set$set_no"
	mkdir -p "$d"
	printf '%s\n' "$opts" >"$d/options"

	TZ=UTC timeout -k 5 120 babeltrace2 "${args[@]}" "$OUTDIR" >"$d/babeltrace2.out" 2>"$d/babeltrace2.err"
	bt_rc=$?
	TZ=UTC timeout -k 5 120 "$REEF" print "${args[@]}" "$OUTDIR" >"$d/reef.out" 2>"$d/reef.err"
	rf_rc=$?

	if [ $bt_rc -ne 0 ]; then
		echo "compare.sh: warning $label: babeltrace2 itself exited with status $bt_rc:" >&2
		head -n 5 "$d/babeltrace2.err" | sed 's/^/    /' >&2
	fi
	ok=1
	if [ $rf_rc -ne $bt_rc ]; then
		ok=0
		what="status $rf_rc"
		if [ $rf_rc -eq 124 ]; then
			what="a timeout (120 s)"
		elif [ $rf_rc -eq 126 ] || [ $rf_rc -eq 127 ]; then
			what="status $rf_rc (could not be run)"
		elif [ $rf_rc -gt 128 ]; then
			what="status $rf_rc (killed by signal $((rf_rc - 128)))"
		fi
		echo "FAIL $label: reef exited with $what, babeltrace2 with status $bt_rc"
		if [ -s "$d/reef.err" ]; then
			echo "    reef stderr (first lines):"
			head -n 10 "$d/reef.err" | cut -c1-300 | sed 's/^/      /'
		fi
	fi
	if ! cmp -s "$d/babeltrace2.out" "$d/reef.out"; then
		ok=0
		echo "FAIL $label: standard output differs"
		explain_difference "$d/babeltrace2.out" "$d/reef.out"
	fi
	if [ $ok = 1 ]; then
		echo "ok   $label: $(wc -l <"$d/reef.out") lines identical"
		if ! cmp -s "$d/babeltrace2.err" "$d/reef.err"; then
			echo "     note: standard error differs (not a failure):"
			diff "$d/babeltrace2.err" "$d/reef.err" | head -n 6 | cut -c1-300 | sed 's/^/      /'
		fi
	else
		failed=$((failed + 1))
	fi
done

if [ $failed -ne 0 ]; then
	echo "compare.sh: $failed of $set_no option set(s) differ; outputs kept in $WORK"
	echo "  (per set: options, babeltrace2.out/.err, reef.out/.err)"
	exit 1
fi
[ -z "${REEF_COMPARE_KEEP:-}" ] && rm -rf "$WORK"
echo "compare.sh: all $set_no option set(s) identical"
