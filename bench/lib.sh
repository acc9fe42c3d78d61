# bench/lib.sh — shell helpers shared by the benches (sourced).

# measure N CMD...: runs CMD N times (its output discarded) and prints the
# median wall time in seconds and the peak RSS in KiB over the runs.
measure() {
	local n=$1; shift
	local ts=() rss=0 out tf
	tf=$(mktemp)
	for _ in $(seq "$n"); do
		/usr/bin/time -o "$tf" -f '%e %M' "$@" > /dev/null 2>/dev/null
		out=$(tail -1 "$tf")
		ts+=("${out% *}")
		[ "${out#* }" -gt "$rss" ] && rss=${out#* }
	done
	rm -f "$tf"
	printf '%s\n' "${ts[@]}" | sort -n | awk -v r="$rss" '{a[NR]=$1} END {print a[int((NR+1)/2)], r}'
}
