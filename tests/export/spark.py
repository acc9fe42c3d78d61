#!/usr/bin/env python3
"""A fleet's dataset queried with Spark SQL.

Twenty synthetic kernel traces (tests/analyses/gen-kernel-trace.py, seeds
1..20 as hosts host01..host20) are converted, each by its own
`reef convert --to parquet` (two at a time, as independent jobs would be
on a cluster), into one dataset. pyspark (PyPI), in local mode on the
machine's OpenJDK 17, reads it with its Hive partition discovery, and one
Spark SQL query gives each host's five threads with the most CPU time
(`sched_slices`). They must be the five `reef cputop` ranks first on that
host's trace, with the same usage (CPU time over the trace's span, to
1e-9).

Usage: spark.py (from the repository root, in the venv of run.sh; the
binary under test is $REEF_BIN, default target/release/reef).
"""

import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

REEF = os.path.abspath(os.environ.get("REEF_BIN") or "target/release/reef")
HOSTS = 20
EVENTS = 20000


def main():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    tmp = tempfile.mkdtemp(prefix="reef-spark-")
    ds = os.path.join(tmp, "dataset")
    traces = {}
    for i in range(1, HOSTS + 1):
        host = f"host{i:02d}"
        path = os.path.join(tmp, "traces", host)
        subprocess.run(
            [sys.executable, "tests/analyses/gen-kernel-trace.py", path, str(EVENTS), str(i), host],
            check=True, stdout=subprocess.DEVNULL,
        )
        traces[host] = path

    def convert(path):
        return subprocess.run([REEF, "convert", "--to", "parquet", "-o", ds, path],
                              capture_output=True, text=True)

    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(convert, traces.values()))
    fails = [r.stderr for r in results if r.returncode != 0]
    if fails:
        print("FAIL: reef convert:", fails[0])
        sys.exit(1)

    spark = (SparkSession.builder.master("local[2]").appName("reef-fleet")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.read.parquet(os.path.join(ds, "sched_slices")).createOrReplaceTempView("sched_slices")
    spark.read.parquet(os.path.join(ds, "events")).createOrReplaceTempView("events")
    top = spark.sql("""
        SELECT host, tid, cpu_ns FROM (
            SELECT host, tid, SUM(dur) AS cpu_ns,
                   ROW_NUMBER() OVER (PARTITION BY host ORDER BY SUM(dur) DESC, tid) AS rank
            FROM sched_slices GROUP BY host, tid)
        WHERE rank <= 5 ORDER BY host, rank
    """).collect()
    spans = {r["host"]: r["span"] for r in spark.sql(
        "SELECT host, MAX(ts) - MIN(ts) AS span FROM events GROUP BY host").collect()}
    spark.stop()

    got = {}
    for r in top:
        got.setdefault(r["host"], []).append((r["tid"], r["cpu_ns"] / spans[r["host"]]))
    bad = 0
    for host, path in traces.items():
        lami = json.loads(subprocess.run(
            [REEF, "cputop", "--lami", "--no-intersection", "--limit", "0", path],
            capture_output=True, text=True, check=True).stdout)
        rows = [(row[0]["tid"], row[-1]["value"]) for res in lami["results"] for row in res["data"]
                if isinstance(row[0], dict) and row[0].get("class") == "process" and row[0]["tid"] != 0]
        want = sorted(rows, key=lambda r: (-r[1], r[0]))[:5]
        g = got.get(host, [])
        same = len(g) == 5 and [t for t, _ in g] == [t for t, _ in want] and all(
            abs(a[1] - b[1]) <= 1e-9 * max(abs(b[1]), 1e-12) for a, b in zip(g, want))
        if not same:
            bad += 1
            print(f"FAIL: {host}: Spark top 5 {g} != reef cputop {want}")
    print(f"spark: {HOSTS - bad} of {HOSTS} hosts agree with reef cputop "
          f"({sum(1 for _ in top)} rows from Spark SQL over {len(os.listdir(os.path.join(ds, 'sched_slices')))} host partitions)")
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
