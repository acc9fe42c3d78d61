#!/bin/sh
# CTF 1.8 vs CTF 2 decoding speed on the same stream files
# (make_pair.py): best of N runs of each command, and the ratio.
# usage: bench/ctf2/run.sh [EVENTS] [RUNS]
set -e
here=$(cd "$(dirname "$0")" && pwd)
reef=${REEF:-$here/../../target/release/reef}
events=${1:-10000000}
runs=${2:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 "$here/make_pair.py" "$dir" "$events" 4
if [ "$("$reef" print "$dir/ctf1" | md5sum)" != "$("$reef" print "$dir/ctf2" | md5sum)" ]; then
    echo "CTF 1.8 and CTF 2 print differently" >&2
    exit 1
fi
# Best of $runs for each format, the two formats' runs interleaved so
# that a load change on the machine hits both.
echo "events: $events, $(du -sh "$dir/ctf1" | cut -f1) of stream files"
now() { date +%s.%N; }
for cmd in print check stats; do
    a= b=
    for _ in $(seq "$runs"); do
        for k in ctf1 ctf2; do
            s=$(now); "$reef" $cmd "$dir/$k" >/dev/null; e=$(now)
            t=$(echo "$e - $s" | bc)
            if [ $k = ctf1 ]; then
                if [ -z "$a" ] || [ "$(echo "$t < $a" | bc)" = 1 ]; then a=$t; fi
            else
                if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
            fi
        done
    done
    printf '%-6s CTF 1.8 %6.3f s  CTF 2 %6.3f s  CTF 2 / CTF 1.8 = %.3f\n' "$cmd" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
