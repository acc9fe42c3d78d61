#!/usr/bin/env python3
"""bench/profile/run.sh's measurements (see there)."""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

work, rounds, n = sys.argv[1], int(sys.argv[2]), sys.argv[3]
W = lambda p: os.path.join(work, p)


def reef_env(stack):
    e = dict(os.environ, REEF_SAMPLE="cpu-clock:1ms", REEF_SAMPLE_STACK=stack, REEF_OUTPUT=W("reef-trace"))
    return e


CASES = [
    ("baseline", [W("fbb"), n], None),
    ("reef, frame pointers", [W("fbb_reef"), n], reef_env("fp")),
    ("reef, kernel call chain", [W("fbb_reef"), n], reef_env("perf")),
    ("perf record -g -F 1000", ["perf", "record", "-q", "-g", "-e", "cpu-clock", "-F", "1000",
                                "-o", W("perf.data"), "--", W("fbb"), n], None),
    ("gprof (-pg)", [W("fbb_pg"), n], None),
    ("valgrind --tool=callgrind", ["valgrind", "-q", "--tool=callgrind",
                                   "--callgrind-out-file=" + W("cg.out"), W("fbb"), n], None),
]


def run(cmd, env):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=work, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu


res = {name: ([], []) for name, _, _ in CASES}
for r in range(rounds):
    for name, cmd, env in CASES:
        # callgrind is 20-50 times slower: once is enough.
        if name.startswith("valgrind") and r > 0:
            continue
        wall, cpu = run(cmd, env)
        res[name][0].append(wall)
        res[name][1].append(cpu)
        shutil.rmtree(W("reef-trace"), ignore_errors=True)

samples = None
base_w = statistics.median(res["baseline"][0])
base_c = statistics.median(res["baseline"][1])
print(f"foo/bar/baz, depth 10, N={n}; medians of {rounds} interleaved rounds (callgrind: 1 run)")
print(f"{'':28} {'wall s':>8} {'overhead':>9} {'CPU s':>8} {'overhead':>9}")
for name, _, _ in CASES:
    w = statistics.median(res[name][0])
    c = statistics.median(res[name][1])
    print(f"{name:28} {w:8.3f} {100 * (w / base_w - 1):8.1f}% {c:8.3f} {100 * (c / base_c - 1):8.1f}%")
