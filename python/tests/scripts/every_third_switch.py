# A script no --filter can express: it counts. Keeps every third
# sched_switch of the reading (the 1st, 4th, ...), and writes one line to
# $REEF_TEST_LOADS each time it is loaded (a command reading the traces
# several times must run it once).
import os

if os.environ.get("REEF_TEST_LOADS"):
    with open(os.environ["REEF_TEST_LOADS"], "a") as f:
        f.write("loaded\n")

seen = 0


def keep(ev):
    global seen
    if ev.name != "sched_switch":
        return False
    seen += 1
    return seen % 3 == 1
