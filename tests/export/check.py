#!/usr/bin/env python3
"""reef convert, checked by independent readers.

Parquet (`reef convert --to parquet`), read by DuckDB, pyarrow and polars:
- rows per event name in the `events` table equal `reef stats --json`;
- every event's time and fields in its class's table equal what the bt2
  Python bindings (babeltrace2's, the reference) give for that event:
  payload, event context, stream event context, flattened as
  docs/parquet.md says;
- LTTng kernel traces: per-thread CPU time summed from `sched_slices`
  equals `reef cputop --lami`'s usage, and per-thread system call counts
  from `syscalls` equal `reef syscallstats --lami`'s (both --no-intersection
  and over every thread).

Chrome JSON (`reef convert --to chrome-json`), read by Python's json:
- one instant per event, in bt2's order, at bt2's time to the nanosecond,
  with the payload bt2 gives;
- the format's rules: known phases, `B`/`E` nesting per row, times of
  `B`/`E`/`i` never decreasing per row, `X` events not overlapping on a
  row, every slice ended, `M` events naming rows;
- the system call slices of each thread are the rows of `syscalls`.

Perfetto protobuf (`reef convert --to perfetto`), decoded by Google's
protobuf package against perfetto_trace.proto (compiled by protoc):
- one instant per event, in bt2's order, at bt2's time, with bt2's payload;
- every track described, slices nested per track, the system call slices
  of each thread the rows of `syscalls`; on kernel traces the ftrace
  events (sched_switch, wakeups, forks, IRQs, …) one per bt2 event of
  that name, the sched_switch times and threads bt2's.

Activities (`--activity-begin/--end/--key`, IRQs of the kernel traces) in
the Perfetto and Chrome outputs: the slices are `reef activities`' log.

Usage: check.py [TEST-NAME-SUBSTRING...] (run from the repository root;
needs bt2, duckdb, pyarrow and polars: run.sh makes a venv with them).

The binary under test is $REEF_BIN (default: target/release/reef). A test
is a trace, named by its path under ../shared/conformance; with
arguments, only the traces whose name contains one of them are checked
(exit status 3 when none is).
"""

import decimal
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

import bt2
import duckdb
import polars as pl
import pyarrow.dataset as pads

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
cells = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAIL:", what)


def reef(*args):
    r = subprocess.run([REEF, *args], capture_output=True, text=True)
    return r


# --- bt2: the reference values ---------------------------------------------

def bt2_value(f, nested):
    """A bt2 field as the Parquet tables hold it (nested: inside a list)."""
    if isinstance(f, bt2._EnumerationFieldConst):
        v = int(f)
        labels = sorted(f.labels)
        return ("enum", v, labels)
    if isinstance(f, bt2._BoolFieldConst):
        return bool(f)
    if isinstance(f, bt2._IntegerFieldConst):
        return int(f)
    if isinstance(f, bt2._RealFieldConst):
        return float(f)
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    if isinstance(f, bt2._StructureFieldConst):
        return ("struct", [(k, bt2_value(f[k], nested)) for k in f.keys()])
    if isinstance(f, bt2._VariantFieldConst):
        name = f.cls.option_at_index(f.selected_option_index).name
        return ("variant", name, f.selected_option_index, bt2_value(f.selected_option, nested))
    if isinstance(f, bt2._ArrayFieldConst):
        return ("list", [bt2_value(e, True) for e in f])
    raise TypeError(type(f))


def flatten(prefix, v, out):
    """Top-level columns of a value (dotted names, enum labels beside)."""
    if isinstance(v, tuple) and v[0] == "struct":
        for k, c in v[1]:
            flatten(f"{prefix}.{k}" if prefix else k, c, out)
    elif isinstance(v, tuple) and v[0] == "variant":
        out[prefix] = v[1]
        flatten(f"{prefix}.{v[1]}", v[3], out)
    elif isinstance(v, tuple) and v[0] == "enum":
        out[prefix] = v[1]
        out[prefix + "_label"] = v[2] or None
    else:
        out[prefix] = nested_py(v)


def nested_py(v):
    """A value inside a list as pyarrow's to_pylist gives it."""
    if isinstance(v, tuple) and v[0] == "struct":
        return {k: nested_py(c) for k, c in v[1]}
    if isinstance(v, tuple) and v[0] == "enum":
        return {"value": v[1], "label": v[2] or None}
    if isinstance(v, tuple) and v[0] == "variant":
        return ("variant", v[1], nested_py(v[3]))
    if isinstance(v, tuple) and v[0] == "list":
        return [nested_py(e) for e in v[1]]
    return v


def bt2_events(path):
    """(name, ns or None, columns) of every event, in babeltrace2's order."""
    out = []
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        ns = None
        if ev.stream.cls.default_clock_class is not None:
            ns = msg.default_clock_snapshot.ns_from_origin
        cols = {}
        for prefix, f in (
            ("stream_ctx", ev.common_context_field),
            ("ctx", ev.specific_context_field),
            ("", ev.payload_field),
        ):
            if f is not None:
                flatten(prefix, bt2_value(f, False), cols)
        out.append((ev.name, ns, cols))
    return out


_bt1 = {}


def bt1_empty(path, name, ns, field):
    """Whether babeltrace 1.5 reads `field` of event `name` at `ns` as "".

    babeltrace2 2.0.4 (bt2 here) gives a stale string where a trace holds
    an empty one; babeltrace 1.5 and 2.1.2 give "" (see the README).
    """
    import babeltrace  # Debian's python3-babeltrace (1.5)

    if path not in _bt1:
        tc = babeltrace.TraceCollection()
        tc.add_traces_recursive(path, "ctf")
        idx = defaultdict(list)
        for ev in tc.events:
            idx[(ev.name, ev.timestamp)].append({k: ev[k] for k in ev.keys()})
        _bt1[path] = idx
    return any(f.get(field) == "" for f in _bt1[path].get((name, ns), []))


def bt2_events_safe(path):
    """bt2_events in a child process: babeltrace2 2.0.4 aborts on some of
    the shared traces (an assertion in its metadata code). None then."""
    import concurrent.futures
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
        try:
            return ex.submit(bt2_events, path).result()
        except concurrent.futures.process.BrokenProcessPool:
            return None
        except Exception as e:  # bt2 refuses the trace
            print(f"  {path}: bt2: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            return None


skipped = []
syscall_rows = {}


def parquet_value(v, ref):
    """A Parquet cell made comparable with the reference `ref`."""
    if isinstance(ref, tuple) and ref[0] == "variant":
        # A variant inside a list: {option, <options>...}.
        return ("variant", v["option"], parquet_value(v[v["option"]], ref[2]))
    if isinstance(ref, list) and isinstance(v, list):
        return [parquet_value(a, b) for a, b in zip(v, ref)] + v[len(ref):]
    if isinstance(ref, dict) and isinstance(v, dict):
        if set(ref) == {"value", "label"}:
            return {"value": v["value"], "label": sorted(v["label"].split(", ")) if v["label"] else None}
        return {k: parquet_value(v.get(k), ref[k]) for k in ref}
    return v


def label_list(v):
    return sorted(v.split(", ")) if v else None


# --- Parquet -----------------------------------------------------------------

def check_parquet(trace, tmp):
    global cells
    path = os.path.join(SHARED, trace)
    dsdir = os.path.join(tmp, "ds")
    shutil.rmtree(dsdir, ignore_errors=True)
    r = reef("convert", "--to", "parquet", "-o", dsdir, path)
    check(r.returncode == 0, f"{trace}: reef convert exit {r.returncode}: {r.stderr}")
    if r.returncode != 0:
        return
    stats = json.loads(reef("stats", "--json", path).stdout)
    want = {e["name"]: e["count"] for e in stats["event_names"]}
    glob = os.path.join(dsdir, "events", "**", "*.parquet")
    con = duckdb.connect()
    got = dict(con.execute(
        f"SELECT name, count(*) FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY name"
    ).fetchall())
    check(got == want, f"{trace}: DuckDB counts per name {got} != reef stats {want}")
    t = pads.dataset(os.path.join(dsdir, "events"), format="parquet", partitioning="hive").to_table()
    got = Counter(t.column("name").to_pylist())
    check(dict(got) == want, f"{trace}: pyarrow counts per name differ from reef stats")
    got = dict(
        pl.scan_parquet(glob, hive_partitioning=True)
        .group_by("name").len().collect().iter_rows()
    )
    check(got == want, f"{trace}: polars counts per name differ from reef stats")

    # Every event's fields against bt2.
    ref = bt2_events_safe(path)
    if ref is None:
        skipped.append(trace)
        return
    check(len(ref) == sum(want.values()), f"{trace}: bt2 reads {len(ref)} events, reef stats {sum(want.values())}")
    rows = {}
    classdir = os.path.join(dsdir, "class")
    for name in os.listdir(classdir) if os.path.isdir(classdir) else []:
        tab = pads.dataset(os.path.join(classdir, name), format="parquet", partitioning="hive").to_table()
        for row in tab.to_pylist():
            rows[row["seq"]] = row
    events = t.sort_by("seq").to_pylist()
    bad = 0
    for seq, (name, ns, cols) in enumerate(ref):
        row = rows.get(seq)
        ev = events[seq] if seq < len(events) else None
        if row is None or ev is None or ev["name"] != name or row["ts"] != ns or ev["ts"] != ns:
            bad += 1
            if bad <= 3:
                print(f"  {trace}: event {seq}: bt2 {name} at {ns}; parquet {ev and ev['name']} at {row and row['ts']}")
            continue
        for col, v in cols.items():
            got = row.get(col, "<missing>")
            if col.endswith("_label") and col[: -len("_label")] in cols:
                got = label_list(got) if got != "<missing>" else got
            else:
                got = parquet_value(got, v)
            if got == "" and isinstance(v, str) and "." not in col and bt1_empty(path, name, ns, col):
                continue
            cells += 1
            if got != v:
                bad += 1
                if bad <= 3:
                    print(f"  {trace}: event {seq} ({name}) {col}: parquet {got!r} != bt2 {v!r}")
    check(bad == 0, f"{trace}: {bad} events differ between the class tables and bt2")

    if trace in KERNEL:
        check_kernel(trace, path, dsdir, t)


def lami_tid(title):
    m = re.search(r"TID: (\d+)", title)
    return int(m.group(1)) if m else None


def check_kernel(trace, path, dsdir, events):
    ts = [x for x in events.column("ts").to_pylist() if x is not None]
    begin, end = min(ts), max(ts)
    con = duckdb.connect()
    slices = os.path.join(dsdir, "sched_slices", "**", "*.parquet")
    cpu = dict(con.execute(
        f"SELECT tid, sum(dur) FROM read_parquet('{slices}', hive_partitioning = true) GROUP BY tid"
    ).fetchall())
    lami = json.loads(reef("cputop", "--lami", "--no-intersection", "--limit", "0", path).stdout)
    n = 0
    for res in lami["results"]:
        rows = res["data"]
        for row in rows:
            if not (isinstance(row[0], dict) and row[0].get("class") == "process"):
                continue
            tid = row[0]["tid"]
            if tid == 0:
                continue
            want = row[-1]["value"]
            got = cpu.get(tid, 0) / (end - begin)
            n += 1
            check(abs(got - want) <= 1e-9 * max(abs(want), 1e-12) or (want == 0 and got == 0),
                  f"{trace}: tid {tid}: CPU usage from sched_slices {got} != reef cputop {want}")
    check(n > 3, f"{trace}: cputop listed {n} threads")
    calls = os.path.join(dsdir, "syscalls", "**", "*.parquet")
    got = {(tid, name): c for tid, name, c in con.execute(
        f"SELECT tid, name, count(*) FROM read_parquet('{calls}', hive_partitioning = true) GROUP BY tid, name"
    ).fetchall()}
    lami = json.loads(reef("syscallstats", "--lami", "--no-intersection", path).stdout)
    want = {}
    for res in lami["results"]:
        tid = lami_tid(res["class"]["title"]) if isinstance(res["class"], dict) else None
        if tid is None:
            continue
        for row in res["data"]:
            want[(tid, row[0]["name"])] = row[1]["value"]
    syscall_rows.update(got)
    check(len(want) > 3 and got == want,
          f"{trace}: system calls per thread and name from syscalls differ from reef syscallstats "
          f"({len(got)} vs {len(want)}; e.g. {sorted(set(got.items()) ^ set(want.items()))[:4]})")


def compare_instants(trace, path, what, instants):
    """Instants (name, ns, args) equal bt2's events with a time, in order,
    with the payload bt2 gives (scalars; an enumeration as its labels)."""
    ref = bt2_events_safe(path)
    if ref is None:
        return None
    ref = [(n, ns, cols) for (n, ns, cols) in ref if ns is not None]
    check(len(instants) == len(ref), f"{trace}: {what}: {len(instants)} instants, bt2 {len(ref)} events with a time")
    bad = 0
    for (ename, t, eargs), (name, ns, cols) in zip(instants, ref):
        payload = {k: v for k, v in cols.items() if not k.startswith(("ctx.", "stream_ctx.")) and "." not in k and not k.endswith("_label")}
        args = {k: v for k, v in eargs.items() if k not in ("ctx", "stream_ctx")}
        scalar = {k: v for k, v in payload.items() if isinstance(v, (int, str)) and not isinstance(v, bool)}
        diff = [k for k, v in scalar.items()
                if args.get(k) != v and not (args.get(k) == "" and bt1_empty(path, name, ns, k)) and not (isinstance(args.get(k), str) and cols.get(k + "_label") and args[k] == ", ".join(cols[k + "_label"]))]
        if ename != name or t != ns or diff:
            bad += 1
            if bad <= 3:
                print(f"  {trace}: {what} {ename} at {t}, bt2 {name} at {ns}; differing args {diff}")
    check(bad == 0, f"{trace}: {what}: {bad} instants differ from bt2's events")
    return ref


# --- Chrome JSON ---------------------------------------------------------------

def check_chrome(trace, tmp, calls=None):
    path = os.path.join(SHARED, trace)
    out = os.path.join(tmp, "trace.json")
    r = reef("convert", "--to", "chrome-json", "-o", out, path)
    check(r.returncode == 0, f"{trace}: reef convert --to chrome-json exit {r.returncode}: {r.stderr}")
    if r.returncode != 0:
        return
    with open(out) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    evs = doc["traceEvents"]
    origin = doc["otherData"]["reef_origin_ns"]
    check(all(e["ph"] in ("i", "B", "E", "X", "C", "M") for e in evs), f"{trace}: unknown phase")
    instants = [e for e in evs if e["ph"] == "i"]
    compare_instants(trace, path, "chrome",
                     [(e["name"], int(decimal.Decimal(e["ts"]) * 1000) + origin, e["args"]) for e in instants])
    # The format's rules.
    stacks = defaultdict(list)
    last = {}
    x_end = {}
    bad = 0
    named = set()
    for e in evs:
        row = (e["pid"], e["tid"])
        if e["ph"] == "M":
            check("name" in e["args"], f"{trace}: M event without a name")
            named.add(row if e["name"] == "thread_name" else (e["pid"], None))
            continue
        ts = decimal.Decimal(e["ts"])
        if e["ph"] == "X":
            # Complete events are written at their end; they must not
            # overlap on a thread (a thread makes one system call at a time).
            if e["dur"] < 0:
                bad += 1
            if row in x_end and ts < x_end[row]:
                bad += 1
            x_end[row] = ts + decimal.Decimal(e["dur"])
            last.setdefault(row, ts)
            continue
        if row in last and ts < last[row]:
            bad += 1
        last[row] = ts
        if e["ph"] == "B":
            stacks[row].append(e["name"])
        elif e["ph"] == "E":
            if not stacks[row]:
                bad += 1
            else:
                stacks[row].pop()
    check(bad == 0, f"{trace}: {bad} rows go back in time or end a slice never begun")
    check(all(not s for s in stacks.values()), f"{trace}: slices left open")
    if calls is not None:
        # System call slices on thread rows: per thread and name, as many
        # as the rows of `syscalls`.
        got = Counter((e["tid"], e["name"]) for e in evs if e["ph"] == "X" and e.get("cat") == "syscall")
        check(dict(got) == calls, f"{trace}: system call slices per thread and name differ from the syscalls table "
              f"(e.g. {sorted(set(got.items()) ^ set(calls.items()))[:4]})")
    check(all(r in named for r in last), f"{trace}: rows without a thread_name")


# --- Perfetto ------------------------------------------------------------------

# LTTng kernel event name -> the ftrace event Perfetto parses.
FTRACE = {n: n for n in ["sched_switch", "sched_wakeup", "sched_waking", "sched_wakeup_new",
                         "sched_process_fork", "sched_process_exec", "sched_process_exit",
                         "sched_process_free", "irq_handler_entry", "irq_handler_exit",
                         "softirq_entry", "softirq_exit"]}
FTRACE.update(power_cpu_idle="cpu_idle", power_cpu_frequency="cpu_frequency")
_trace_class = []


def perfetto_trace_class():
    """perfetto.protos.Trace, from the descriptor set protoc made of the
    perfetto_trace.proto the Rust crate ships (run.sh), decoded by Google's
    protobuf package: not reef's encoder."""
    if not _trace_class:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

        fds = descriptor_pb2.FileDescriptorSet()
        with open(os.environ["PERFETTO_DESC"], "rb") as f:
            fds.ParseFromString(f.read())
        pool = descriptor_pool.DescriptorPool()
        for fd in fds.file:
            pool.Add(fd)
        _trace_class.append(message_factory.GetMessageClass(pool.FindMessageTypeByName("perfetto.protos.Trace")))
    return _trace_class[0]


def annotation_py(a):
    if len(a.dict_entries):
        return {d.name: annotation_py(d) for d in a.dict_entries}
    if len(a.array_values):
        return [annotation_py(x) for x in a.array_values]
    kind = a.WhichOneof("value")
    return getattr(a, kind) if kind else None


def check_perfetto(trace, tmp, calls=None):
    path = os.path.join(SHARED, trace)
    out = os.path.join(tmp, "trace.pftrace")
    r = reef("convert", "--to", "perfetto", "-o", out, path)
    check(r.returncode == 0, f"{trace}: reef convert --to perfetto exit {r.returncode}: {r.stderr}")
    if r.returncode != 0:
        return
    t = perfetto_trace_class()()
    with open(out, "rb") as f:
        t.ParseFromString(f.read())
    tracks, instants, seqs = {}, [], set()
    slices = defaultdict(list)
    ftrace, switches, power = Counter(), [], []
    bad_order = 0
    for i, p in enumerate(t.packet):
        seqs.add(p.trusted_packet_sequence_id)
        kind = p.WhichOneof("data")
        if kind == "track_descriptor":
            tracks[p.track_descriptor.uuid] = p.track_descriptor
        elif kind == "track_event":
            e = p.track_event
            if e.type == 3:  # TYPE_INSTANT
                instants.append((e.name, p.timestamp, {a.name: annotation_py(a) for a in e.debug_annotations},
                                 e.track_uuid))
            else:
                slices[e.track_uuid].append((p.timestamp, i, e.type, e.name, list(e.categories)))
        elif kind == "ftrace_events":
            last = 0
            for fe in p.ftrace_events.event:
                k = fe.WhichOneof("event")
                ftrace[k] += 1
                bad_order += fe.timestamp < last
                last = fe.timestamp
                if k == "sched_switch":
                    sw = fe.sched_switch
                    switches.append((fe.timestamp, sw.prev_pid, sw.next_pid))
                elif k in ("cpu_idle", "cpu_frequency"):
                    pe = getattr(fe, k)
                    power.append((fe.timestamp, k, pe.state, pe.cpu_id))
    check(seqs <= {1}, f"{trace}: perfetto: packets on sequences {seqs}")
    check(bad_order == 0, f"{trace}: perfetto: {bad_order} ftrace events before the one they follow in a bundle")
    ref = compare_instants(trace, path, "perfetto", [(n, ts, a) for (n, ts, a, _) in instants])
    undescribed = {u for (_, _, _, u) in instants} - set(tracks) | set(slices) - set(tracks)
    check(not undescribed, f"{trace}: perfetto: {len(undescribed)} tracks without a descriptor")
    threads = [d for d in tracks.values() if d.HasField("thread")]
    check(all(d.thread.HasField("pid") and d.thread.HasField("tid") for d in threads),
          f"{trace}: perfetto: a thread descriptor without pid or tid")
    # Slices nest per track once sorted by time (the trace processor keeps
    # the order of packets of equal times).
    bad, got_calls = 0, Counter()
    for u, evs in slices.items():
        depth = 0
        for ts, _, typ, name, cats in sorted(evs):
            if typ == 1:
                depth += 1
                if "syscall" in cats:
                    got_calls[(tracks[u].thread.tid, name)] += 1
            elif typ == 2:
                depth -= 1
                bad += depth < 0
        bad += depth != 0
    check(bad == 0, f"{trace}: perfetto: {bad} slices end unbegun or stay open")
    if calls is not None:
        check(dict(got_calls) == calls, f"{trace}: perfetto: system call slices per thread and name differ from "
              f"the syscalls table (e.g. {sorted(set(got_calls.items()) ^ set(calls.items()))[:4]})")
    if ref is not None:
        # LTTng kernel events (a kernel trace's names have no provider
        # prefix): one ftrace event each.
        want = Counter(FTRACE[n] for (n, _, _) in ref if n in FTRACE)
        check(dict(ftrace) == dict(want), f"{trace}: perfetto: ftrace events per kind {dict(ftrace)}, "
              f"bt2 events per name {dict(want)}")
        want_sw = sorted((ns, c["prev_tid"], c["next_tid"]) for (n, ns, c) in ref if n == "sched_switch")
        check(sorted(switches) == want_sw, f"{trace}: perfetto: sched_switch times and threads differ from bt2's")
        want_pw = sorted((ns, FTRACE[n], c["state"], c["cpu_id"]) for (n, ns, c) in ref
                         if n in ("power_cpu_idle", "power_cpu_frequency"))
        check(sorted(power) == want_pw, f"{trace}: perfetto: cpu_idle/cpu_frequency events differ from bt2's "
              f"({len(power)} vs {len(want_pw)})")


# --- Counters (--counter) in the Perfetto and Chrome outputs ----------------------

# Per trace: a numeric field to follow.
COUNTERS = {
    "kernel-traces/uneven-streams": ("kmem_mm_page_alloc", "order"),
    "kernel-traces/bug446190": ("kmem_kmalloc", "bytes_alloc"),
}


def check_counters(trace, tmp):
    """`--counter NAME=EVENT:FIELD`: one counter value per bt2 event of that
    name, at its time, with its field's value; Perfetto's on counter tracks
    (a CounterDescriptor, under a process track), Chrome's as `C` events."""
    path = os.path.join(SHARED, trace)
    event, field = COUNTERS[trace]
    ref = bt2_events_safe(path)
    if ref is None:
        return
    want = sorted((ns, c[field]) for (n, ns, c) in ref if n == event)
    check(len(want) > 100, f"{trace}: too few {event} events to compare ({len(want)})")
    spec = ["--counter", f"k={event}:{field}"]
    out = os.path.join(tmp, "counter.json")
    r = reef("convert", "--to", "chrome-json", "-o", out, *spec, path)
    check(r.returncode == 0, f"{trace}: convert --to chrome-json --counter exit {r.returncode}: {r.stderr}")
    with open(out) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    origin = doc["otherData"]["reef_origin_ns"]
    got = sorted((int(decimal.Decimal(e["ts"]) * 1000) + origin, e["args"]["value"])
                 for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "k")
    check(got == want, f"{trace}: chrome: counter values differ from bt2's ({len(got)} vs {len(want)})")
    out = os.path.join(tmp, "counter.pftrace")
    r = reef("convert", "--to", "perfetto", "-o", out, *spec, path)
    check(r.returncode == 0, f"{trace}: convert --to perfetto --counter exit {r.returncode}: {r.stderr}")
    t = perfetto_trace_class()()
    with open(out, "rb") as f:
        t.ParseFromString(f.read())
    tracks, got = {}, []
    for p in t.packet:
        kind = p.WhichOneof("data")
        if kind == "track_descriptor":
            tracks[p.track_descriptor.uuid] = p.track_descriptor
        elif kind == "track_event" and p.track_event.type == 4:  # TYPE_COUNTER
            e = p.track_event
            v = e.counter_value if e.HasField("counter_value") else e.double_counter_value
            got.append((p.timestamp, v, e.track_uuid))
    check(sorted((ts, v) for ts, v, _ in got) == want,
          f"{trace}: perfetto: counter values differ from bt2's ({len(got)} vs {len(want)})")
    ok = all(u in tracks and tracks[u].HasField("counter") and tracks[u].name == "k"
             and tracks[tracks[u].parent_uuid].HasField("process") for _, _, u in got)
    check(ok, f"{trace}: perfetto: a counter value not on a named counter track under a process")


# --- Activities in the Perfetto and Chrome outputs -------------------------------

# Per kernel trace: begin, end, key (the IRQ events its LTTng version names).
ACTS = {
    "kernel-traces/bug446190": ('$evt.$name == "irq_handler_entry"', '$evt.$name == "irq_handler_exit"', "irq"),
    "kernel-traces/uneven-streams": ('$evt.$name == "irq_softirq_entry"', '$evt.$name == "irq_softirq_exit"', "vec"),
}


def check_activities(trace, tmp):
    """The IRQ activities of a kernel trace (one IRQ taken on several CPUs
    at once overlaps itself: lanes) as slices equal `reef activities`'
    log: (begin, end, group) of each, and no two slices of a row overlap."""
    path = os.path.join(SHARED, trace)
    begin, end, key = ACTS[trace]
    ACT = ["--activity-begin", begin, "--activity-end", end, "--activity-key", key]
    r = reef("activities", "--begin", begin, "--end", end, "--key", key, "--json", path)
    check(r.returncode == 0, f"{trace}: reef activities exit {r.returncode}")
    want = sorted((a["begin_ns"], a["end_ns"], a["group"]) for a in json.loads(r.stdout)["log"])
    check(len(want) > 0, f"{trace}: no IRQ activity to compare")
    out = os.path.join(tmp, "act.json")
    r = reef("convert", "--to", "chrome-json", "-o", out, *ACT, path)
    check(r.returncode == 0, f"{trace}: convert --to chrome-json with activities exit {r.returncode}: {r.stderr}")
    with open(out) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    origin = doc["otherData"]["reef_origin_ns"]
    got, rows = [], defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") == "activity":
            b = int(decimal.Decimal(e["ts"]) * 1000) + origin
            d = int(decimal.Decimal(e["dur"]) * 1000)
            got.append((b, b + d, e["args"]["group"]))
            rows[(e["pid"], e["tid"])].append((b, b + d))
    check(sorted(got) == want, f"{trace}: chrome activities differ from reef activities' log ({len(got)} vs {len(want)})")
    overlaps = sum(1 for r_ in rows.values() for x, y in zip(sorted(r_), sorted(r_)[1:]) if y[0] < x[1])
    check(overlaps == 0, f"{trace}: chrome: {overlaps} activities overlap on a row")
    out = os.path.join(tmp, "act.pftrace")
    r = reef("convert", "--to", "perfetto", "-o", out, *ACT, path)
    check(r.returncode == 0, f"{trace}: convert --to perfetto with activities exit {r.returncode}: {r.stderr}")
    t = perfetto_trace_class()()
    with open(out, "rb") as f:
        t.ParseFromString(f.read())
    per_track = defaultdict(list)
    for i, p in enumerate(t.packet):
        if p.WhichOneof("data") == "track_event" and p.track_event.type in (1, 2):
            e = p.track_event
            per_track[e.track_uuid].append((p.timestamp, i, e.type, list(e.categories),
                                            {a.name: annotation_py(a) for a in e.debug_annotations}))
    got, bad = [], 0
    for evs in per_track.values():
        evs.sort()
        if not any("activity" in c for (_, _, _, c, _) in evs):
            continue
        open_ = None
        for ts, _, typ, cats, args in evs:
            if typ == 1:
                bad += open_ is not None
                open_ = (ts, args.get("group"))
            elif open_ is None:
                bad += 1
            else:
                got.append((open_[0], ts, open_[1]))
                open_ = None
    check(bad == 0, f"{trace}: perfetto: {bad} activity slices overlap on a track or end unbegun")
    check(sorted(got) == want, f"{trace}: perfetto activities differ from reef activities' log ({len(got)} vs {len(want)})")
    # Parquet: the `activities` table, read by DuckDB.
    out = os.path.join(tmp, "act-parquet-" + os.path.basename(trace))
    r = reef("convert", "--to", "parquet", "-o", out, "--activity-name", "irq", *ACT, path)
    check(r.returncode == 0, f"{trace}: convert --to parquet with activities exit {r.returncode}: {r.stderr}")
    rows = duckdb.connect().execute(
        "SELECT ts, end_ts, \"group\", dur, name, lane FROM read_parquet(?, hive_partitioning = true)",
        [os.path.join(out, "activities", "**", "*.parquet")]).fetchall()
    check(sorted((b, e, g) for b, e, g, _, _, _ in rows) == want,
          f"{trace}: parquet activities differ from reef activities' log ({len(rows)} vs {len(want)})")
    check(all(b + d == e and n == "irq" and ln.startswith(g) for b, e, g, d, n, ln in rows),
          f"{trace}: parquet activities: dur, name or lane inconsistent")


def main():
    traces = [t for t in KERNEL + SUCCEED if not FILTERS or any(f in t for f in FILTERS)]
    if not traces:
        print(f"export: no trace matches {' '.join(FILTERS)}")
        sys.exit(3)
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces:
            syscall_rows.clear()
            check_parquet(trace, tmp)
            check_chrome(trace, tmp, dict(syscall_rows) if trace in KERNEL else None)
            check_perfetto(trace, tmp, dict(syscall_rows) if trace in KERNEL else None)
            if trace in KERNEL:
                check_activities(trace, tmp)
            if trace in COUNTERS:
                check_counters(trace, tmp)
    if skipped:
        print(f"bt2 (2.0.4) cannot read {len(skipped)} trace(s), values not compared: {' '.join(skipped)}")
    print(f"{cells} field values compared with bt2")
    print(f"export: {checks - fails} passed, {fails} failed ({len(traces)} traces)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
