"""Iterate every event of a trace and count events per name: with reef
(`count.py reef TRACE`) or with babeltrace2's Python bindings (`count.py bt2
TRACE`, Debian's python3-bt2). Prints the counts as JSON, and the time and
peak RSS of the loop on stderr."""

import json
import resource
import sys
import time


def with_reef(path):
    import reef
    counts = {}
    ev_type = reef.Event
    for m in reef.open(path):
        if type(m) is ev_type:
            n = m.name
            counts[n] = counts.get(n, 0) + 1
    return counts


def with_bt2(path):
    import bt2
    counts = {}
    ev_type = bt2._EventMessageConst
    for m in bt2.TraceCollectionMessageIterator(path):
        if type(m) is ev_type:
            n = m.event.name
            counts[n] = counts.get(n, 0) + 1
    return counts


def main():
    which, path = sys.argv[1], sys.argv[2]
    t = time.perf_counter()
    counts = (with_reef if which == "reef" else with_bt2)(path)
    dt = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(counts, sort_keys=True))
    print(f"{which} {dt:.3f} s {sum(counts.values())} events {rss:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
