#!/usr/bin/env python3
"""reef sql, checked against sources that do not share its engine.

- Every shared conformance trace, given as a trace: rows per event name
  from `SELECT name, count(*) FROM events GROUP BY name` equal
  `reef stats --json`.
- The LTTng kernel traces: per-thread CPU time summed from `sched_slices`
  equals `reef cputop --lami --no-intersection`'s usage, and per-thread
  system call counts from `syscalls` equal `reef syscallstats --lami`'s.
- A dataset of several traces (`reef convert --to parquet`, one call per
  trace into one directory): a set of queries (aggregates, joins, window
  functions, class tables, partition columns, ORDER BY/LIMIT, string
  functions) gives the same rows on `reef sql` as on DuckDB (PyPI) over
  the same files: an independent engine as the oracle.
- Output formats: the JSON, CSV and table outputs of one result hold the
  same cells; empty results; `| head`.
- Errors (bad SQL, unknown table or column, missing path, a directory
  that is not a dataset, a missing engine): a message naming the problem,
  exit status 1, no panic.

Usage: check.py [TEST-NAME-SUBSTRING...] (from the repository root).

The binary under test is $REEF_BIN (default: target/release/reef), its
engine reef-sql beside it or in ../sql/ from it, where `cargo build
--profile sql -p reef-sql` puts it. The tests: "counts TRACE", "kernel
TRACE", "oracle", "formats", "errors"; with arguments, only the tests whose
name contains one of them run.
"""

import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import duckdb

REEF = os.path.abspath(os.environ.get("REEF_BIN") or "target/release/reef")
FILTERS = sys.argv[1:]
SHARED = "../shared/conformance"
KERNEL = ["kernel-traces/bug446190", "kernel-traces/uneven-streams"]
SUCCEED = sorted(
    "babeltrace-traces/succeed/" + d
    for d in os.listdir(os.path.join(SHARED, "babeltrace-traces/succeed"))
)
fails = 0
checks = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAIL:", what)


def reef(*args, env=None):
    return subprocess.run([REEF, *args], capture_output=True, text=True, env=env)


def sql_json(*args):
    """`reef sql --format json ARGS` as a list of dicts (None on failure)."""
    r = reef("sql", "--format", "json", *args)
    if r.returncode != 0:
        check(False, f"reef sql {args}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    return json.loads(r.stdout)


# --- traces: reef stats, cputop, syscallstats ------------------------------

def check_counts(trace):
    path = os.path.join(SHARED, trace)
    want = {e["name"]: e["count"] for e in json.loads(reef("stats", "--json", path).stdout)["event_names"]}
    rows = sql_json(path, "SELECT name, count(*) AS n FROM events GROUP BY name")
    if rows is None:
        return
    got = {r["name"]: r["n"] for r in rows}
    check(len(rows) == len(got), f"{trace}: a name repeated in {rows}")
    check(got == want, f"{trace}: reef sql counts per name {got} != reef stats {want}")


def lami_tid(title):
    m = re.search(r"TID: (\d+)", title)
    return int(m.group(1)) if m else None


def check_kernel(trace):
    path = os.path.join(SHARED, trace)
    span = sql_json(path, "SELECT min(ts) AS b, max(ts) AS e FROM events")
    cpu = sql_json(path, "SELECT tid, sum(dur) AS cpu FROM sched_slices GROUP BY tid")
    if span is None or cpu is None:
        return
    begin, end = span[0]["b"], span[0]["e"]
    cpu = {r["tid"]: r["cpu"] for r in cpu}
    lami = json.loads(reef("cputop", "--lami", "--no-intersection", "--limit", "0", path).stdout)
    n = 0
    for res in lami["results"]:
        for row in res["data"]:
            if not (isinstance(row[0], dict) and row[0].get("class") == "process"):
                continue
            tid = row[0]["tid"]
            if tid == 0:
                continue
            want = row[-1]["value"]
            got = cpu.get(tid, 0) / (end - begin)
            n += 1
            check(abs(got - want) <= 1e-9 * max(abs(want), 1e-12),
                  f"{trace}: tid {tid}: CPU usage from sched_slices {got} != reef cputop {want}")
    check(n > 3, f"{trace}: cputop listed {n} threads")
    rows = sql_json(path, "SELECT tid, name, count(*) AS n FROM syscalls GROUP BY tid, name")
    if rows is None:
        return
    got = {(r["tid"], r["name"]): r["n"] for r in rows}
    lami = json.loads(reef("syscallstats", "--lami", "--no-intersection", path).stdout)
    want = {}
    for res in lami["results"]:
        tid = lami_tid(res["class"]["title"]) if isinstance(res["class"], dict) else None
        if tid is None:
            continue
        for row in res["data"]:
            want[(tid, row[0]["name"])] = row[1]["value"]
    check(len(want) > 3 and got == want,
          f"{trace}: system calls per thread and name differ from reef syscallstats "
          f"(e.g. {sorted(set(got.items()) ^ set(want.items()))[:4]})")


# --- a dataset of several traces: DuckDB as the oracle -----------------------

QUERIES = [
    "SELECT host, trace, name, count(*) AS n, min(ts) AS first, max(ts) AS last FROM events GROUP BY host, trace, name",
    "SELECT trace, cpu, count(*) AS n FROM events WHERE cpu IS NOT NULL GROUP BY trace, cpu",
    "SELECT trace, tid, procname, count(*) AS n, sum(dur) AS cpu FROM sched_slices GROUP BY trace, tid, procname",
    "SELECT trace, end_state, count(*) AS n FROM sched_slices GROUP BY trace, end_state",
    "SELECT trace, state, count(*) AS n, sum(dur) AS d FROM thread_states GROUP BY trace, state",
    "SELECT trace, name, count(*) AS n, sum(dur) AS d, min(ret) AS r0, max(ret) AS r1 FROM syscalls GROUP BY trace, name",
    "SELECT trace, soft, irq, name, count(*) AS n, max(dur) AS d FROM irqs GROUP BY trace, soft, irq, name",
    # A top-N per trace with a window function.
    "SELECT * FROM (SELECT trace, tid, sum(dur) AS cpu, "
    "row_number() OVER (PARTITION BY trace ORDER BY sum(dur) DESC, tid) AS rk "
    "FROM sched_slices GROUP BY trace, tid) WHERE rk <= 5",
    # Events during each slice of their thread: a join on a range.
    "SELECT s.trace, count(*) AS n FROM sched_slices s JOIN events e "
    "ON e.trace = s.trace AND e.tid = s.tid AND e.ts >= s.ts AND e.ts < s.ts + s.dur GROUP BY s.trace",
    # An event class table, qualified and not.
    "SELECT trace, prev_tid, next_tid, count(*) AS n FROM class.sched_switch GROUP BY trace, prev_tid, next_tid",
    "SELECT count(*) AS n, sum(prev_tid) AS s FROM sched_switch",
    # Joined to events on seq.
    "SELECT e.procname, count(*) AS n FROM class.sched_switch c JOIN events e "
    "ON c.seq = e.seq AND c.trace = e.trace GROUP BY e.procname",
    # ORDER BY and LIMIT; string functions; CASE.
    "SELECT upper(procname) AS p, length(procname) AS l, tid, ts, dur FROM sched_slices "
    "WHERE procname LIKE '%a%' ORDER BY dur DESC, ts, tid LIMIT 20",
    "SELECT CASE WHEN dur > 1000000 THEN 'long' ELSE 'short' END AS k, count(*) AS n FROM syscalls GROUP BY 1",
    "SELECT host, count(DISTINCT trace) AS traces FROM events GROUP BY host",
]


def norm(v):
    if isinstance(v, float) and v == math.floor(v) and abs(v) < 2**53:
        return int(v)
    return v


def check_oracle(tmp):
    ds = os.path.join(tmp, "fleet")
    traces = KERNEL + [t for t in SUCCEED if t.endswith(("smalltrace", "succeed1", "2packets", "multi-domains"))]
    done = []
    for t in traces:
        r = reef("convert", "--to", "parquet", "-o", ds, os.path.join(SHARED, t))
        # Two traces of one name (one partition) are refused: keep the first.
        check(r.returncode == 0 or "already exists" in r.stderr, f"convert {t}: {r.stderr}")
        if r.returncode == 0:
            done.append(t)
    check(len(done) >= 4, f"only {done} converted")
    traces = done
    con = duckdb.connect()
    con.execute("CREATE SCHEMA class")
    for table in sorted(os.listdir(ds)):
        if table == "class":
            continue
        glob = os.path.join(ds, table, "**", "*.parquet")
        # DuckDB keeps the partitions' %XX escapes; reef sql decodes them.
        con.execute(
            f"CREATE VIEW {table} AS SELECT * REPLACE (url_decode(host) AS host, url_decode(trace) AS trace) "
            f"FROM read_parquet('{glob}', hive_partitioning = true, union_by_name = true)")
    glob = os.path.join(ds, "class", "sched_switch", "**", "*.parquet")
    con.execute(
        f"CREATE VIEW class.sched_switch AS SELECT * REPLACE (url_decode(host) AS host, url_decode(trace) AS trace) "
        f"FROM read_parquet('{glob}', hive_partitioning = true, union_by_name = true)")
    con.execute("CREATE VIEW sched_switch AS SELECT * FROM class.sched_switch")
    ntraces = con.execute("SELECT count(DISTINCT trace) FROM events").fetchone()[0]
    check(ntraces >= len(traces), f"the dataset holds {ntraces} traces, fewer than {len(traces)}")
    for q in QUERIES:
        cur = con.execute(q)
        cols = [d[0] for d in cur.description]
        want = sorted((tuple(norm(v) for v in row) for row in cur.fetchall()), key=repr)
        rows = sql_json(ds, q)
        if rows is None:
            continue
        got = sorted((tuple(norm(r.get(c)) for c in cols) for r in rows), key=repr)
        check(len(want) > 0, f"DuckDB: no rows for {q}")
        check(got == want, f"{q}:\n  reef sql {got[:5]} ({len(got)} rows)\n  DuckDB   {want[:5]} ({len(want)} rows)")
    # Several datasets at once: the union of their tables.
    ds2 = os.path.join(tmp, "other")
    reef("convert", "--to", "parquet", "-o", ds2, os.path.join(SHARED, SUCCEED[0]))
    one = sql_json(ds, "SELECT count(*) AS n FROM events")
    two = sql_json(ds2, "SELECT count(*) AS n FROM events")
    both = sql_json(ds, ds2, "SELECT count(*) AS n FROM events")
    if one and two and both:
        check(both[0]["n"] == one[0]["n"] + two[0]["n"], f"two datasets: {both} != {one} + {two}")
    # A trace and a dataset together.
    mixed = sql_json(ds2, os.path.join(SHARED, KERNEL[0]), "SELECT trace, count(*) AS n FROM events GROUP BY trace")
    check(mixed is not None and len(mixed) == 2, f"a dataset and a trace: {mixed}")
    return ds


# --- formats -----------------------------------------------------------------

def check_formats(ds):
    q = "SELECT name, count(*) AS n, min(ts) AS first FROM events GROUP BY name ORDER BY n DESC, name LIMIT 7"
    rows = sql_json(ds, q)
    if not rows:
        check(False, "formats: no rows")
        return
    r = reef("sql", "--format", "csv", ds, q)
    check(r.returncode == 0, f"csv: {r.stderr}")
    table = list(csv.reader(io.StringIO(r.stdout)))
    check(table[0] == ["name", "n", "first"], f"csv header {table[0]}")
    check(table[1:] == [[row["name"], str(row["n"]), str(row["first"])] for row in rows],
          f"csv rows {table[1:]} != json {rows}")
    r = reef("sql", ds, q)  # table is the default
    check(r.returncode == 0, f"table: {r.stderr}")
    lines = r.stdout.rstrip("\n").split("\n")
    check(len({len(x) for x in lines}) == 1, f"table lines not aligned:\n{r.stdout}")
    check(re.fullmatch(r"\+[-+]+\+", lines[0]) is not None, f"table border {lines[0]!r}")
    cells = [[c.strip() for c in x.strip("|").split("|")] for x in lines if x.startswith("|")]
    check(cells[0] == ["name", "n", "first"], f"table header {cells[0]}")
    check(cells[1:] == [[row["name"], str(row["n"]), str(row["first"])] for row in rows],
          f"table rows {cells[1:]} != json {rows}")
    # Nulls in JSON, CSV and the table.
    r = sql_json(ds, "SELECT CAST(NULL AS BIGINT) AS x, 'a' AS y")
    check(r == [{"x": None, "y": "a"}], f"json null: {r}")
    # Empty results.
    empty = "SELECT name, ts FROM events WHERE ts < 0"
    check(sql_json(ds, empty) == [], "json: an empty result is []")
    r = reef("sql", "--format", "csv", ds, empty)
    check(r.returncode == 0 and r.stdout == "name,ts\n", f"csv empty: {r.stdout!r}")
    r = reef("sql", ds, empty)
    check(r.returncode == 0 and "| name | ts |" in r.stdout, f"table empty: {r.stdout!r}")
    # A closed pipe is not an error.
    p = subprocess.run(f"'{REEF}' sql --format csv '{ds}' 'SELECT * FROM events' | head -2",
                       shell=True, capture_output=True, text=True)
    check(len(p.stdout.splitlines()) == 2 and ": error:" not in p.stderr, f"| head: {p.stderr}")
    # SHOW TABLES lists the tables.
    r = sql_json(ds, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema <> 'information_schema'")
    names = {(x["table_schema"], x["table_name"]) for x in r or []}
    for t in ["events", "sched_slices", "thread_states", "syscalls", "irqs"]:
        check(("public", t) in names, f"table {t} not listed: {sorted(names)}")
    check(("class", "sched_switch") in names, "class.sched_switch not listed")


# --- errors ------------------------------------------------------------------

def check_error(args, pattern, what, env=None):
    r = reef("sql", *args, env=env)
    check(r.returncode == 1, f"{what}: exit {r.returncode}, not 1 ({r.stderr.strip()})")
    check("panicked" not in r.stderr and "RUST_BACKTRACE" not in r.stderr, f"{what}: panic: {r.stderr}")
    check(re.search(pattern, r.stderr) is not None, f"{what}: stderr {r.stderr.strip()!r} lacks {pattern!r}")
    check(r.stdout == "", f"{what}: output {r.stdout!r}")


def check_errors(ds, tmp):
    trace = os.path.join(SHARED, KERNEL[0])
    check_error([ds, "SELEC name FROM events"], r"error: .*SELEC", "bad SQL")
    check_error([trace, "SELECT * FROM nosuch"], r"error: .*nosuch.* not found", "unknown table")
    check_error([ds, "SELECT nosuchcol FROM events"], r"error: .*nosuchcol", "unknown column")
    check_error([ds, "SELECT count(*) FROM class.nosuch"], r"error: .*nosuch", "unknown class table")
    check_error(["/nonexistent/trace", "SELECT 1"], r"/nonexistent/trace: no such file", "missing path")
    check_error([ds, "SELECT 1 +"], r"error: ", "truncated SQL")
    check_error([ds, "SELECT CAST('x' AS BIGINT)"], r"error: .*x", "a run-time error")
    check_error(["--begin", "0", ds, "SELECT 1"], r"a dataset: --begin", "window on a dataset")
    # reef-sql itself on a directory that is not a dataset.
    engine = os.path.join(os.path.dirname(REEF), "reef-sql")
    if not os.path.isfile(engine):
        engine = os.path.join(os.path.dirname(REEF), "..", "sql", "reef-sql")
    r = subprocess.run([engine, tmp + "/nothing-here", "SELECT 1"], capture_output=True, text=True)
    check(r.returncode == 1 and "nothing-here" in r.stderr, f"reef-sql on a missing directory: {r.stderr}")
    os.makedirs(os.path.join(tmp, "empty"), exist_ok=True)
    r = subprocess.run([engine, os.path.join(tmp, "empty"), "SELECT 1"], capture_output=True, text=True)
    check(r.returncode == 1 and "no Parquet tables" in r.stderr, f"reef-sql on an empty directory: {r.stderr}")
    # No engine: the message says how to build it.
    lone = os.path.join(tmp, "bin")
    os.makedirs(lone, exist_ok=True)
    shutil.copy(REEF, os.path.join(lone, "reef"))
    env = {k: v for k, v in os.environ.items() if k != "REEF_SQL"}
    env["PATH"] = "/usr/bin:/bin"
    r = subprocess.run([os.path.join(lone, "reef"), "sql", ds, "SELECT 1"], capture_output=True, text=True, env=env)
    check(r.returncode == 1 and "cargo build --profile sql -p reef-sql" in r.stderr,
          f"no engine: exit {r.returncode}: {r.stderr}")


def selected(name):
    return not FILTERS or any(f in name for f in FILTERS)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for trace in KERNEL + SUCCEED:
            if selected("counts " + trace):
                check_counts(trace)
        for trace in KERNEL:
            if selected("kernel " + trace):
                check_kernel(trace)
        if selected("oracle") or selected("formats") or selected("errors"):
            ds = check_oracle(tmp)
            if selected("formats"):
                check_formats(ds)
            if selected("errors"):
                check_errors(ds, tmp)
    if checks == 0:
        print(f"sql: no test matches {' '.join(FILTERS)}")
        sys.exit(1)
    print(f"sql: {checks - fails} passed, {fails} failed ({len(KERNEL + SUCCEED)} traces, {len(QUERIES)} queries vs DuckDB)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
