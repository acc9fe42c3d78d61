#!/usr/bin/env python3
"""Kernel traces from ftrace (trace-cmd .dat files), driven by run.sh.

Recordings are made here, through tracefs (events enabled in `set_event`,
then `trace-cmd extract`), while tests/kernel/workload.c runs: threads
that spin for set CPU times, sleep, wake each other through a pipe and
make known numbers of getppid() calls, each printing its own CPU time
(CLOCK_THREAD_CPUTIME_ID) as it ends. The references are trace-cmd's own
reading of the files (`trace-cmd report -R -t`), the workload's own
figures, and babeltrace2 (on `reef convert`'s output); never reef.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

ARGS = None
TRACEFS = "/sys/kernel/tracing"
EVENTS = ("sched:sched_switch sched:sched_waking sched:sched_wakeup sched:sched_wakeup_new "
          "sched:sched_process_fork sched:sched_process_exec sched:sched_process_exit "
          "irq:* raw_syscalls:* syscalls:sys_enter_getppid syscalls:sys_exit_getppid "
          "syscalls:sys_enter_read syscalls:sys_exit_read syscalls:sys_enter_write "
          "syscalls:sys_exit_write syscalls:sys_enter_openat syscalls:sys_exit_openat")
MEMO = {}


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def work(*p):
    return os.path.join(ARGS.work, *p)


def run(cmd, timeout=300, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, **kw)


def reef(*args, timeout=300):
    e = dict(os.environ, TZ="UTC")
    return subprocess.run([ARGS.reef, *args], capture_output=True, text=True, errors="replace", timeout=timeout, env=e)


def put(name, value):
    with open(os.path.join(TRACEFS, name), "w") as f:
        f.write(value)


def mount_tracefs():
    if not os.path.isdir(os.path.join(TRACEFS, "events")):
        r = run(["mount", "-t", "tracefs", "nodev", TRACEFS])
        check(r.returncode == 0, "cannot mount tracefs: %s" % r.stderr.strip())


def record(name, events, buffer_kb, cmd, out=None):
    """A .dat file of `events`, recorded while `cmd` runs (its stdout to
    `out`), written by trace-cmd extract."""
    if name in MEMO:
        return MEMO[name]
    mount_tracefs()
    dat = work(name)
    old_kb = open(os.path.join(TRACEFS, "buffer_size_kb")).read().split()[0]
    try:
        put("tracing_on", "0")
        put("set_event", "")
        put("trace", "")
        put("buffer_size_kb", str(buffer_kb))
        put("set_event", events.replace(" ", "\n") + "\n")
        put("tracing_on", "1")
        with open(out or os.devnull, "w") as o:
            subprocess.run(cmd, stdout=o, check=True, timeout=120)
        put("tracing_on", "0")
        r = run(["trace-cmd", "extract", "-o", dat])
        check(r.returncode == 0 and os.path.getsize(dat) > 0,
              "trace-cmd extract failed: %s" % r.stderr.strip()[-500:])
    finally:
        put("tracing_on", "0")
        put("set_event", "")
        put("buffer_size_kb", old_kb)
        put("trace", "")
    MEMO[name] = dat
    return dat


def workload_dat():
    """The workload's recording (version 7, zstd, as trace-cmd writes it
    here) and the workload's own report."""
    out = work("workload.out")
    dat = record("workload.dat", EVENTS, 8192, [ARGS.workload], out)
    threads = {}
    for line in open(out):
        tid, name, ns, calls = line.split()
        threads[int(tid)] = (name, int(ns), int(calls))
    check(sum(1 for t in threads.values() if t[0] != "wl-filler") == 3,
          "the workload reported %d threads, 3 workers expected" % len(threads))
    if "lost-checked" not in MEMO:
        _, lost = trace_cmd_events(dat)
        check(not lost, "the workload's recording lost events (%s): its references would be wrong" % lost)
        MEMO["lost-checked"] = True
    return dat, threads


def converted(version, compression):
    """The workload's recording rewritten by trace-cmd convert."""
    key = "workload-v%s-%s.dat" % (version, compression)
    if key not in MEMO:
        dat, _ = workload_dat()
        out = work(key)
        r = run(["trace-cmd", "convert", "--file-version", str(version), "--compression",
                 compression, "-i", dat, "-o", out])
        check(r.returncode == 0, "trace-cmd convert: %s" % r.stderr.strip()[-300:])
        MEMO[key] = out
    return MEMO[key]


# --- trace-cmd's reading: `trace-cmd report -R -t` -------------------------

TC_LINE = re.compile(r"^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}): ([^:\s]+):\s?(.*)$")
TC_LOST = re.compile(r"^CPU:\s*(\d+) \[(?:(\d+) EVENTS DROPPED|EVENTS DROPPED|LOST (\d+) EVENTS|LOST EVENTS)\]")


def trace_cmd_events(dat):
    """Events per CPU: (ts_ns, pid, name, raw field text), and lost counts
    per CPU."""
    r = run(["trace-cmd", "report", "-R", "-t", dat], timeout=600)
    check(r.returncode == 0, "trace-cmd report failed: %s" % r.stderr[-300:])
    per_cpu, lost = {}, {}
    for line in r.stdout.splitlines():
        m = TC_LINE.match(line)
        if m:
            comm, pid, cpu, s, ns, name, rest = m.groups()
            per_cpu.setdefault(int(cpu), []).append((int(s) * 10**9 + int(ns), int(pid), name, rest))
            continue
        m = TC_LOST.match(line)
        if m:
            # (no count: the kernel flagged a loss it did not count; reef
            # counts it as one, docs/ftrace.md)
            n = m.group(2) or m.group(3) or "1"
            lost[int(m.group(1))] = lost.get(int(m.group(1)), 0) + int(n)
    return per_cpu, lost


def tc_fields(rest, names):
    """trace-cmd's raw `name=value` text split at the fields reef names."""
    out, pos = {}, []
    for n in names:
        m = re.search(r"(?:^| )%s=" % re.escape(n), rest)
        if m:
            pos.append((m.start() + (1 if rest[m.start()] == " " else 0), m.end(), n))
    pos.sort()
    for i, (s, e, n) in enumerate(pos):
        end = pos[i + 1][0] - 1 if i + 1 < len(pos) else len(rest)
        out[n] = rest[e:end]
    return out


# --- reef's reading: `reef print --clock-cycles --no-delta` ----------------

class P:
    """A parser of the pretty format's field groups."""

    def __init__(self, s):
        self.s, self.i = s, 0

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] == " ":
            self.i += 1

    def eat(self, c):
        self.ws()
        if not self.s.startswith(c, self.i):
            raise ValueError("%r expected at %d of %r" % (c, self.i, self.s))
        self.i += len(c)

    def value(self):
        self.ws()
        c = self.s[self.i]
        if c == "{":
            return self.struct()
        if c == "[":
            self.eat("[")
            items = []
            self.ws()
            while self.s[self.i] != "]":
                self.eat("[")
                while self.s[self.i] != "]":
                    self.i += 1
                self.eat("]")
                self.eat("=")
                items.append(self.value())
                self.ws()
                if self.s[self.i] == ",":
                    self.i += 1
                self.ws()
            self.eat("]")
            return items
        if c == '"':
            self.i += 1
            out = []
            while self.s[self.i] != '"':
                if self.s[self.i] == "\\":
                    self.i += 1
                    out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"'}.get(self.s[self.i], self.s[self.i]))
                else:
                    out.append(self.s[self.i])
                self.i += 1
            self.i += 1
            return "".join(out)
        m = re.compile(r"-?(0x[0-9A-Fa-f]+|\d+)").match(self.s, self.i)
        if not m:
            raise ValueError("a value expected at %d of %r" % (self.i, self.s))
        self.i = m.end()
        t = m.group(0)
        neg = t.startswith("-")
        t = t.lstrip("-")
        v = int(t, 16) if t.startswith("0x") else int(t)
        return -v if neg else v

    def struct(self):
        self.eat("{")
        out = {}
        self.ws()
        while self.s[self.i] != "}":
            m = re.compile(r"(\w+) = ").match(self.s, self.i)
            if not m:
                raise ValueError("a field expected at %d of %r" % (self.i, self.s))
            self.i = m.end()
            out[m.group(1)] = self.value()
            self.ws()
            if self.s[self.i] == ",":
                self.i += 1
            self.ws()
        self.eat("}")
        return out

    def groups(self):
        gs = [self.struct()]
        while self.i < len(self.s):
            self.eat(",")
            gs.append(self.struct())
        return gs


REEF_LINE = re.compile(r"^\[(\d+)\] (\S+) (.+?): (\{.*)$")


def reef_events(path, *extra):
    """Events per CPU: (ts, pid, name, fields), reef's stderr and status."""
    r = reef("print", "--clock-cycles", "--no-delta", *extra, path)
    per_cpu = {}
    for line in r.stdout.splitlines():
        m = REEF_LINE.match(line)
        check(m, "reef print: a line not in the pretty format: %r" % line[:200])
        ts, _host, name, body = m.groups()
        groups = P(body).groups()
        cpu = groups[0]["cpu_id"]
        ctx = groups[1]
        fields = groups[2] if len(groups) > 2 else {}
        per_cpu.setdefault(cpu, []).append((int(ts), ctx["common_pid"], name, fields))
    return per_cpu, r


def tc_value(text):
    t = text.strip()
    if t.startswith("ARRAY["):
        return bytes(int(b, 16) for b in t[6:-1].split(", ") if b)
    try:
        return int(t, 16) if t.lower().startswith("0x") else int(t)
    except ValueError:
        return t


def same_value(mine, theirs):
    """reef's value against trace-cmd's raw text of it."""
    ref = tc_value(theirs)
    if isinstance(mine, str):
        return mine == theirs or mine == theirs.rstrip("\n")
    if isinstance(mine, list):
        if not isinstance(ref, bytes) or not mine:
            return isinstance(ref, bytes) and not mine and not ref
        size = len(ref) // len(mine)
        if size * len(mine) != len(ref) or size not in (1, 2, 4, 8):
            return False
        got = b"".join((v % (1 << (8 * size))).to_bytes(size, "little") for v in mine)
        return got == ref
    if isinstance(ref, int):
        return (mine - ref) % (1 << 64) == 0
    return False


def compare(dat):
    tc, _lost = trace_cmd_events(dat)
    mine, r = reef_events(dat)
    check(r.returncode == 0, "reef print exited %d: %s" % (r.returncode, r.stderr[-300:]))
    n = 0
    check(sorted(tc) == sorted(mine), "CPUs: trace-cmd %s, reef %s" % (sorted(tc), sorted(mine)))
    for cpu in tc:
        a, b = tc[cpu], mine[cpu]
        check(len(a) == len(b), "CPU %d: trace-cmd lists %d events, reef %d" % (cpu, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            where = "CPU %d event %d (%s at %d)" % (cpu, i, x[2], x[0])
            check(x[0] == y[0], "%s: time %d in reef" % (where, y[0]))
            check(x[1] == y[1], "%s: pid %d, reef %d" % (where, x[1], y[1]))
            check(x[2] == y[2] or y[2].endswith(":" + x[2]), "%s: named %s by reef" % (where, y[2]))
            theirs = tc_fields(x[3], list(y[3]))
            check(set(theirs) == set(y[3]),
                  "%s: fields %s in trace-cmd, %s in reef" % (where, sorted(theirs), sorted(y[3])))
            for k, v in y[3].items():
                check(same_value(v, theirs[k]),
                      "%s: field %s = %r in reef, %r in trace-cmd" % (where, k, v, theirs[k]))
            n += 1
    return n


# --- the cases ---------------------------------------------------------------

def fields_equal_trace_cmd_v7_zstd():
    dat, _ = workload_dat()
    return "%d events, every field" % compare(dat)


def fields_equal_trace_cmd_v7_uncompressed():
    return "%d events, every field" % compare(converted(7, "none"))


def fields_equal_trace_cmd_v6():
    return "%d events, every field" % compare(converted(6, "none"))


def lost_events_equal_trace_cmd():
    dat = record("lost.dat", "sched:* raw_syscalls:*", 16,
                 ["sh", "-c", '%s; for i in $(seq 300); do cat /etc/hostname; done' % ARGS.workload])
    _tc, lost = trace_cmd_events(dat)
    check(sum(lost.values()) > 0, "the recording lost no event (the test needs some)")
    compare(dat)
    r = reef("print", dat)
    mine = {}
    for m in re.finditer(r"Tracer discarded (\d+) events? .* within stream \"[^\"]*#cpu(\d+)\"", r.stderr):
        mine[int(m.group(2))] = mine.get(int(m.group(2)), 0) + int(m.group(1))
    check(mine == lost, "lost events per CPU: trace-cmd %s, reef %s" % (lost, mine))
    s = reef("stats", dat)
    m = re.search(r"discarded events\s+(\d+)", s.stdout)
    check(m and int(m.group(1)) == sum(lost.values()),
          "reef stats: %s discarded, trace-cmd %d" % (m and m.group(1), sum(lost.values())))
    return "lost per CPU %s" % lost


def babeltrace2_reads_the_converted_trace():
    dat, _ = workload_dat()
    out = converted_dir()
    bt = run(["babeltrace2", out], env=dict(os.environ, TZ="UTC"))
    check(bt.returncode == 0 and bt.stderr == "", "babeltrace2: %d %s" % (bt.returncode, bt.stderr[-300:]))
    p = reef("print", dat)
    check(p.stdout == bt.stdout, "babeltrace2's text of the converted trace differs from reef print's of the .dat")
    return "%d lines identical" % bt.stdout.count("\n")


def converted_dir():
    """The workload's recording as `reef convert` writes it (a directory
    babeltrace2 reads)."""
    out = work("converted")
    if "converted" not in MEMO:
        dat, _ = workload_dat()
        shutil.rmtree(out, ignore_errors=True)
        c = reef("convert", dat, "-o", out)
        check(c.returncode == 0, "reef convert: %s" % c.stderr[-300:])
        MEMO["converted"] = out
    return out


def perf_workload():
    """perf.data of the workload (perf record -e 'sched:*' -e 'irq:*' -a),
    the workload's report, and perf's own reading of it (perf_dump.py)."""
    if "perf" in MEMO:
        return MEMO["perf"]
    data, out = work("workload.perf.data"), work("workload-perf.out")
    with open(out, "w") as o:
        r = subprocess.run(["perf", "record", "-q", "-e", "sched:*", "-e", "irq:*", "-a", "-o", data, "--",
                            ARGS.workload], stdout=o, stderr=subprocess.PIPE, text=True, timeout=120)
    check(r.returncode == 0, "perf record: %s" % r.stderr[-300:])
    threads = {}
    for line in open(out):
        tid, name, ns, calls = line.split()
        threads[int(tid)] = (name, int(ns), int(calls))
    here = os.path.dirname(os.path.abspath(__file__))
    d = run(["perf", "script", "-i", data, "-s", os.path.join(here, "perf_dump.py")], timeout=600)
    check(d.returncode == 0, "perf script: %s" % d.stderr[-300:])
    per_cpu = {}
    for line in d.stdout.splitlines():
        if not line.startswith("["):
            continue
        name, cpu, ns, tid, fields = json.loads(line)
        per_cpu.setdefault(cpu, []).append((ns, tid, name.split("__", 1)[-1], fields))
    MEMO["perf"] = (data, threads, per_cpu)
    return MEMO["perf"]


def perf_fields_equal_perf_script():
    """Every sample perf's scripting engine gives, reef gives: time, CPU,
    thread, name, every field."""
    data, _, ref = perf_workload()
    mine, r = reef_events(data)
    check(r.returncode == 0, "reef print exited %d: %s" % (r.returncode, r.stderr[-300:]))
    # perf's own records (MMAP, COMM, FORK, EXIT) are events too; the
    # samples are compared here.
    own = ("perf_mmap", "perf_comm", "perf_fork", "perf_exit")
    mine = {cpu: [e for e in evs if e[2] not in own] for cpu, evs in mine.items()}
    mine = {cpu: evs for cpu, evs in mine.items() if evs}
    check(sorted(ref) == sorted(mine), "CPUs: perf %s, reef %s" % (sorted(ref), sorted(mine)))
    n = unknown = 0
    for cpu in ref:
        a, b = ref[cpu], mine[cpu]
        check(len(a) == len(b), "CPU %d: perf gives %d samples, reef %d" % (cpu, len(a), len(b)))
        for x, y in zip(a, b):
            where = "CPU %d %s at %d" % (cpu, x[2], x[0])
            # (perf gives -1 as the thread of samples whose task it did not
            # tell: reef's is the record's common_pid)
            no_tid = x[1] in (-1, 0xFFFFFFFF)
            unknown += no_tid
            check((x[0], x[2]) == (y[0], y[2]) and (no_tid or x[1] == y[1]),
                  "%s: perf gives %s, reef %s" % (where, x[:3], y[:3]))
            check(set(x[3]) == set(y[3]), "%s: fields %s in perf, %s in reef" % (where, sorted(x[3]), sorted(y[3])))
            for k, v in x[3].items():
                w = y[3][k]
                same = (w - v) % (1 << 64) == 0 if isinstance(v, int) and isinstance(w, int) else \
                    (w == v or (isinstance(v, str) and w == v.rstrip("\x00")))
                check(same, "%s: %s = %r in perf, %r in reef" % (where, k, v, w))
            n += 1
    return "%d samples, every field (%d with a thread perf gives as -1)" % (n, unknown)


def perf_cputop_equals_switch_records():
    """reef cputop on the perf.data against the CPU time summed from perf's
    own sched_switch records (within 0.1 ms or 1 %) and, as on the .dat,
    within 1 ms or 3 % of each thread's own CPU time."""
    data, threads, ref = perf_workload()
    run_ns, unrecorded = runtimes({cpu: [(ts, f["prev_pid"], f["next_pid"]) for ts, _t, name, f in evs
                                         if name == "sched_switch"] for cpu, evs in ref.items()})
    d = lami("cputop", data)
    span = d["results"][0]["time-range"]
    dur = span["end"]["value"] - span["begin"]["value"]
    usage = {row[0]["tid"]: row[3]["value"] * dur for row in d["results"][0]["data"]}
    out = []
    for tid, (name, ns, _) in threads.items():
        if name == "wl-filler":
            continue
        want = run_ns.get(tid, 0)
        check(abs(usage.get(tid, 0) - want) <= max(100000, want / 100),
              "%s (%d): reef cputop %.0f ns, perf's sched_switch records %d ns" % (name, tid, usage.get(tid, 0), want))
        out.append("%s %.3f ms (records %+.0f us)" % (name, usage[tid] / 1e6, (usage[tid] - want) / 1e3))
    return ", ".join(out) + "; " + versus_self(threads, usage, unrecorded)


def perf_profile():
    """perf.data of tests/kernel/prof.c under `perf record -g` (a command,
    so its samples carry no CPU), and perf's own reading of its samples:
    (name, ns, pid, tid, period, ip, comm, callchain [(address, symbol,
    dso)]), in time order."""
    if "prof" in MEMO:
        return MEMO["prof"]
    here = os.path.dirname(os.path.abspath(__file__))
    exe, data = work("prof"), work("prof.perf.data")
    r = run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-Wall", "-Wextra", "-Werror", "-pthread",
             "-o", exe, os.path.join(here, "prof.c")])
    check(r.returncode == 0, "gcc prof.c: %s" % r.stderr[-300:])
    r = run(["perf", "record", "-q", "-g", "-o", data, "--", exe], timeout=120)
    check(r.returncode == 0, "perf record -g: %s" % r.stderr[-300:])
    d = run(["perf", "script", "-i", data, "-s", os.path.join(here, "perf_dump.py")], timeout=600)
    check(d.returncode == 0, "perf script: %s" % d.stderr[-300:])
    samples = []
    for line in d.stdout.splitlines():
        if line.startswith("S "):
            name, _cpu, ns, pid, tid, period, ip, comm, chain = json.loads(line[2:])
            samples.append((name, ns, pid, tid, period, ip, comm, [tuple(c) for c in chain]))
    check(len(samples) > 200, "perf script gave %d samples of prof.c" % len(samples))
    # Which frames are a symbol's first byte (perf script's `sym+0x0`):
    # a return address there follows a call that ended the function
    # before, which perf names by the next symbol and reef, looking up
    # the byte before it, by the calling one.
    t = run(["perf", "script", "-i", data, "--ns", "-F", "tid,time,ip,sym,symoff"], timeout=600)
    check(t.returncode == 0, "perf script -F: %s" % t.stderr[-300:])
    starts, block = [], None
    for line in t.stdout.splitlines():
        if not line.strip():
            continue
        if not line.startswith("\t") and not line.startswith(" " * 8):
            block = []
            starts.append(block)
        elif block is not None:
            block.append(bool(re.search(r"\+0x0\b(?!x)", line)) and not line.strip().endswith("+0x0 ([unknown])"))
    check(len(starts) == len(samples), "perf script gave %d samples as text, %d to a script" % (len(starts), len(samples)))
    samples = [s + (at_start,) for s, at_start in zip(samples, starts)]
    samples.sort(key=lambda s: (s[1], s[3]))
    MEMO["prof"] = (data, samples)
    return MEMO["prof"]


def perf_callchains_equal_perf_script():
    """perf record -g: every sample perf gives, reef gives, with the same
    time, process, thread, period, address and callchain (addresses)."""
    data, ref = perf_profile()
    per_run, r = reef_events(data)
    check(r.returncode == 0, "reef print exited %d: %s" % (r.returncode, r.stderr[-300:]))
    mine = sorted(((ts, f["tid"], name, f) for evs in per_run.values() for ts, _p, name, f in evs
                   if "callchain" in f), key=lambda e: (e[0], e[1]))
    check(len(mine) == len(ref), "perf gives %d samples, reef %d" % (len(ref), len(mine)))
    frames = 0
    for (name, ns, pid, tid, period, ip, _comm, chain, _s), (ts, _t, rname, f) in zip(ref, mine):
        where = "the sample at %d ns of thread %d" % (ns, tid)
        check((rname, ts, f["pid"], f["tid"], f["period"], f["ip"]) == (name, ns, pid, tid, period, ip),
              "%s: perf gives %s, reef %s" % (where, (name, ns, pid, tid, period, ip),
                                               (rname, ts, f["pid"], f["tid"], f["period"], f["ip"])))
        check(f["callchain"] == [c[0] for c in chain], "%s: callchain %s in perf, %s in reef" % (
            where, [hex(c[0]) for c in chain], [hex(a) for a in f["callchain"]]))
        frames += len(chain)
    return "%d samples, %d callchain entries" % (len(ref), frames)


def perf_records_equal_perf_script():
    """perf record -g: perf's own records (MMAP/MMAP2, COMM, FORK, EXIT)
    are events with the fields perf script shows for them
    (--show-mmap-events, --show-task-events)."""
    data, _ = perf_profile()
    want = []
    t = run(["perf", "script", "-i", data, "--ns", "--show-mmap-events"], timeout=600)
    for m in re.finditer(r"PERF_RECORD_MMAP2? (-?\d+)/(\d+): \[0x([0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0)[^\]]*\]: "
                         r"(\S+) (.*)$", t.stdout, re.M):
        pid, tid, start, size, pgoff, prot, name = m.groups()
        want.append(("perf_mmap", int(pid), int(tid), int(start, 16), int(size, 16), int(pgoff, 16),
                     "x" in prot, name.strip()))
    t = run(["perf", "script", "-i", data, "--ns", "--show-task-events"], timeout=600)
    for m in re.finditer(r"PERF_RECORD_COMM( exec)?: (.*):(\d+)/(\d+)$", t.stdout, re.M):
        want.append(("perf_comm", int(m.group(3)), int(m.group(4)), int(bool(m.group(1))), m.group(2)))
    for m in re.finditer(r"PERF_RECORD_(FORK|EXIT)\((\d+):(\d+)\):\((\d+):(\d+)\)", t.stdout):
        want.append(("perf_" + m.group(1).lower(),) + tuple(int(x) for x in m.groups()[1:]))
    check(len(want) > 5, "perf script showed %d of its records" % len(want))
    per_run, r = reef_events(data)
    check(r.returncode == 0, "reef print exited %d: %s" % (r.returncode, r.stderr[-300:]))
    got = []
    for evs in per_run.values():
        for _ts, _p, name, f in evs:
            if name == "perf_mmap":
                got.append((name, f["pid"], f["tid"], f["start"], f["len"], f["pgoff"] % (1 << 64),
                            bool(f["prot"] & 4), f["filename"]))
            elif name == "perf_comm":
                got.append((name, f["pid"], f["tid"], f["exec"], f["comm"]))
            elif name in ("perf_fork", "perf_exit"):
                got.append((name, f["pid"], f["tid"], f["ppid"], f["ptid"]))
    key = lambda x: tuple(str(v) for v in x)
    diff = sorted(set(want) ^ set(got), key=key)
    check(sorted(want, key=key) == sorted(got, key=key), "%d records differ, e.g. %s (perf: %s)" % (
        len(diff), diff[:3], [d in want for d in diff[:3]]))
    kinds = {}
    for w in want:
        kinds[w[0]] = kinds.get(w[0], 0) + 1
    return ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items()))


def perf_profile_equals_perf_script():
    """reef profile --folded --per-thread --no-inline on the perf.data: the same stacks
    and counts as folded from perf's own symbols for each sample's
    callchain (a frame perf cannot name, and one reef cannot, is
    [unknown])."""
    data, ref = perf_profile()
    want = {}
    ambiguous = 0
    for _name, _ns, _pid, tid, _period, _ip, comm, chain, at_start in ref:
        names = []
        for i, (_a, sym, _d) in enumerate(chain):
            if i > 0 and i < len(at_start) and at_start[i]:
                names.append("*")
                ambiguous += 1
            else:
                names.append((sym or "[unknown]").replace(";", "_"))
        key = ";".join(["%s-%d" % (comm, tid)] + names[::-1])
        want[key] = want.get(key, 0) + 1
    r = reef("profile", "--folded", "--per-thread", "--no-inline", data)
    check(r.returncode == 0, "reef profile exited %d: %s" % (r.returncode, r.stderr[-300:]))
    got = {}
    for line in r.stdout.splitlines():
        stack, n = line.rsplit(" ", 1)
        names = [x if not x.startswith("[") else "[unknown]" for x in stack.split(";")]
        key = ";".join(names)
        got[key] = got.get(key, 0) + int(n)
    # A line with a frame perf names by the next symbol ("*") takes reef's
    # lines equal to it but there.
    for k in [k for k in want if "*" in k]:
        pat = re.compile("^" + ";".join("[^;]*" if f == "*" else re.escape(f) for f in k.split(";")) + "$")
        n = want.pop(k)
        for g in sorted(got):
            if n and pat.match(g) and g not in want:
                take = min(n, got[g])
                got[g] -= take
                n -= take
                if not got[g]:
                    del got[g]
        if n:
            want[k] = n
    diff = sorted(set(want.items()) ^ set(got.items()))
    check(not diff, "%d folded lines differ, e.g. %s" % (len(diff), "; ".join(
        "%s (perf %s, reef %s)" % (k, want.get(k), got.get(k)) for k, _ in diff[:4])))
    top = max(want.items(), key=lambda kv: kv[1])
    return "%d stacks, %d samples (%d frames at a symbol's first byte); hottest: %s %d" % (
        len(want), sum(want.values()), ambiguous, top[0], top[1])


def perf_damaged_copies_fail_cleanly():
    data, _, _ = perf_workload()
    b = open(data, "rb").read()
    full = set(reef("print", "--clock-cycles", "--no-delta", data).stdout.splitlines())
    rng = random.Random(11)
    copies = [("cut%d" % n, b[:n]) for n in (12, 60, 200, len(b) // 4, len(b) // 2, len(b) - 10)]
    for i in range(12):
        c = bytearray(b)
        for _ in range(1 + i % 3):
            j = rng.randrange(0, len(c))
            c[j] ^= 1 << rng.randrange(8)
        copies.append(("flip%d" % i, bytes(c)))
    errors = 0
    for name, c in copies:
        p = work("perf-damaged-%s.data" % name)
        with open(p, "wb") as f:
            f.write(c)
        r = reef("print", "--clock-cycles", "--no-delta", p, timeout=120)
        check(r.returncode in (0, 1) and "panicked" not in r.stderr, "%s: exit %d %s" % (name, r.returncode, r.stderr[-300:]))
        if r.returncode == 1:
            errors += 1
            check(p in r.stderr and re.search(r"byte \d+", r.stderr), "%s: no file and offset: %s" % (name, r.stderr[-300:]))
        if name.startswith("cut"):
            stray = [l for l in r.stdout.splitlines() if l not in full]
            check(not stray, "%s: events the file does not hold: %s" % (name, stray[:2]))
    return "%d copies, %d errors, none fatal" % (len(copies), errors)


def record_kernel():
    """`reef record --kernel`: a CTF trace babeltrace2 prints cleanly (as
    reef prints it), a state dump of every thread first, and the analyses'
    figures on it: getppid() counts exact, CPU time within 1 ms or 3 % of
    each thread's own."""
    out = work("record-kernel")
    shutil.rmtree(out, ignore_errors=True)
    rep = work("record-kernel.out")
    with open(rep, "w") as o:
        r = subprocess.run([ARGS.reef, "record", "--kernel", "-e",
                            "sched,irq,syscalls:sys_enter_getppid,syscalls:sys_exit_getppid",
                            "-o", out, "--", ARGS.workload], stdout=o, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    check(r.returncode == 0, "reef record: %s" % r.stderr[-300:])
    check(open(os.path.join(TRACEFS, "set_event")).read().strip() == "", "tracefs' events left enabled")
    threads = {}
    for line in open(rep):
        tid, name, ns, calls = line.split()
        threads[int(tid)] = (name, int(ns), int(calls))
    bt = run(["babeltrace2", out], env=dict(os.environ, TZ="UTC"))
    check(bt.returncode == 0 and bt.stderr == "", "babeltrace2: %d %s" % (bt.returncode, bt.stderr[-300:]))
    check(reef("print", out).stdout == bt.stdout, "reef print differs from babeltrace2 on the recording")
    dump = [l for l in bt.stdout.splitlines() if " lttng_statedump_process_state: " in l]
    check(any("tid = 1, pid = 1," in l for l in dump), "the state dump has no thread 1: %s" % dump[:2])
    check(len(dump) == len({l.split("tid = ")[1].split(",")[0] for l in dump}), "a thread twice in the state dump")
    d = lami("cputop", out)
    span = d["results"][0]["time-range"]
    dur = span["end"]["value"] - span["begin"]["value"]
    usage = {row[0]["tid"]: row[3]["value"] * dur for row in d["results"][0]["data"]}
    calls = {}
    for res in lami("syscallstats", out)["results"]:
        c = res["class"]
        m = re.search(r"TID: (\d+)", c.get("title", "") if isinstance(c, dict) else "")
        if m:
            calls[int(m.group(1))] = {row[0]["name"]: row[1]["value"] for row in res["data"]}
    for tid, (name, ns, n) in threads.items():
        if name != "wl-filler":
            check(calls.get(tid, {}).get("getppid") == n, "%s: %s getppid calls, %d made" % (name, calls.get(tid), n))
    sw = {}
    for l in bt.stdout.splitlines():
        m = re.search(r"sched_switch: \{ cpu_id = (\d+) \}.*prev_pid = (\d+),.*next_pid = (\d+),", l)
        if m and " sched_switch: " in l:
            sw.setdefault(int(m.group(1)), []).append((0, int(m.group(2)), int(m.group(3))))
    _, unrecorded = runtimes(sw)
    return "%d events, %d threads in the state dump; cputop %s" % (
        bt.stdout.count("\n"), len(dump), versus_self(threads, usage, unrecorded))


def python_reads_the_dat():
    """`reef.open()` on the .dat (the Python package, installed into the
    venv python/tests/run.sh uses): every event trace-cmd lists, with its
    time, CPU, pid and fields."""
    dat, _ = workload_dat()
    venv = os.environ.get("REEF_PY_VENV", "/tmp/reef-python-venv")
    py = os.path.join(venv, "bin", "python")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
    if not os.path.exists(py):
        check(run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv]).returncode == 0, "venv")
    if run([py, "-c", "import reef"]).returncode != 0:
        r = run([os.path.join(venv, "bin", "pip"), "install", "-q", "--no-deps", os.path.join(root, "python")],
                timeout=1800)
        check(r.returncode == 0, "installing the Python package: %s" % r.stderr[-300:])
    script = (
        "import json, sys, reef\n"
        "for ev in reef.open(sys.argv[1]):\n"
        "    print(json.dumps([ev.timestamp, ev.packet_context['cpu_id'], ev.stream_context['common_pid'], ev.name,\n"
        "                      {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in ev.payload.items()}]))\n")
    r = run([py, "-c", script, dat])
    check(r.returncode == 0, "reef.open: %s" % r.stderr[-500:])
    mine = {}
    for line in r.stdout.splitlines():
        ts, cpu, pid, name, fields = json.loads(line)
        mine.setdefault(cpu, []).append((ts, pid, name, fields))
    tc, _ = trace_cmd_events(dat)
    n = 0
    check(sorted(tc) == sorted(mine), "CPUs: trace-cmd %s, Python %s" % (sorted(tc), sorted(mine)))
    for cpu in tc:
        check(len(tc[cpu]) == len(mine[cpu]), "CPU %d: %d events, Python %d" % (cpu, len(tc[cpu]), len(mine[cpu])))
        for x, y in zip(tc[cpu], mine[cpu]):
            where = "CPU %d %s at %d" % (cpu, x[2], x[0])
            check((x[0], x[1], x[2]) == (y[0], y[1], y[2]), "%s: Python gives %s" % (where, y[:3]))
            theirs = tc_fields(x[3], list(y[3]))
            for k, v in y[3].items():
                check(k in theirs and same_value(v, theirs[k]), "%s: %s = %r in Python, %r in trace-cmd" % (where, k, v, theirs.get(k)))
            n += 1
    return "%d events, every field" % n


def view_api_on_dat():
    """`reef view` on the .dat: tests/view/api/check.py's checks (rows,
    thread states, windows, events, search, filters, wakeup arrows),
    babeltrace2 reading the converted copy as the oracle."""
    dat, _ = workload_dat()
    ctf = converted_dir()
    here = os.path.dirname(os.path.abspath(__file__))
    r = run([sys.executable, os.path.join(here, "../view/api/check.py"), "--ftrace", dat, ctf],
            timeout=900, env=dict(os.environ, REEF_BIN=ARGS.reef, TZ="UTC"))
    fails = [l for l in r.stdout.splitlines() if l.startswith("FAIL")]
    check(r.returncode == 0 and not fails, "view API checks failed: %s" % (fails[:5] or r.stderr[-500:]))
    m = re.search(r"check: (\d+) ok", r.stdout)
    return "%s view API checks" % (m.group(1) if m else "?")


def view_e2e_on_dat():
    """The viewer's page on the .dat in headless Chromium (tests/view/e2e-ftrace.mjs)."""
    dat, _ = workload_dat()
    ctf = converted_dir()
    here = os.path.dirname(os.path.abspath(__file__))
    r = run(["node", os.path.join(here, "../view/e2e-ftrace.mjs"), dat, ctf], timeout=600,
            env=dict(os.environ, REEF_BIN=ARGS.reef, TZ="UTC"))
    print(r.stdout.rstrip())
    check(r.returncode == 0, "e2e failed: %s" % (r.stderr[-500:] or "see above"))
    return "page checks passed (screenshot tests/view/screenshots/ftrace-*.png)"


def damaged_copies_fail_cleanly():
    """Truncated and bit-flipped copies: a clear error naming the file and
    an offset, or a clean read; never a signal or a panic; the events
    given before an error are the file's own."""
    copies = []
    rng = random.Random(7)
    for src in (converted(6, "none"), workload_dat()[0]):
        data = open(src, "rb").read()
        full = reef("print", "--clock-cycles", "--no-delta", src).stdout.splitlines()
        # In the header, the formats and kallsyms; then in the CPU data,
        # which ends the file (the last CPU's pages or zstd chunks).
        head = [11, 40, 300, 2000, 9000, len(data) // 3]
        tail = [len(data) - k for k in (100, 4096 + 50, 3 * 4096, 5 * 4096 + 7)]
        tag = os.path.basename(src).replace(".dat", "")
        # (In version 7 the CPU data's offsets follow it: a cut there
        # leaves nothing to read.)
        v6 = data[10:12] == b"6\0"
        copies += [("%s-cut%d" % (tag, n), data[:n], set(full), v6 and n in tail[1:]) for n in head + tail]
        for i in range(16):
            b = bytearray(data)
            lo = 0 if i < 6 else len(data) - 40000
            for _ in range(1 + i % 4):
                j = rng.randrange(max(lo, 0), len(b))
                b[j] ^= 1 << rng.randrange(8)
            copies.append(("%s-flip%d" % (tag, i), bytes(b), set(full), False))
    errors = 0
    cut_read = 0
    for name, b, fullset, in_data in copies:
        p = work("damaged-%s.dat" % name)
        with open(p, "wb") as f:
            f.write(b)
        r = reef("print", "--clock-cycles", "--no-delta", p, timeout=120)
        check(r.returncode in (0, 1), "%s: reef exited %d: %s" % (name, r.returncode, r.stderr[-300:]))
        check("panicked" not in r.stderr, "%s: reef panicked: %s" % (name, r.stderr[-300:]))
        cut = "-cut" in name
        if cut and r.returncode == 0:
            # Cut where nothing read lies (trace-cmd's strings section at
            # the end): then every event is there.
            check(set(r.stdout.splitlines()) == fullset,
                  "%s: a truncated copy read without error and without all its events" % name)
        if r.returncode == 1:
            errors += 1
            check(p in r.stderr and re.search(r"byte \d+", r.stderr),
                  "%s: the error names no file and offset: %s" % (name, r.stderr.strip()[-300:]))
        if cut:
            stray = [l for l in r.stdout.splitlines() if l not in fullset]
            check(not stray, "%s: events the file does not hold: %s" % (name, stray[:2]))
            if in_data:
                check(r.stdout, "%s: cut in its CPU data, no event before the error" % name)
                cut_read += 1
    return "%d copies, %d errors, none fatal; %d cut in their CPU data kept the events before" % (
        len(copies), errors, cut_read)


def lami(cmd, dat):
    r = reef(cmd, "--lami", dat)
    check(r.returncode == 0, "reef %s: %s" % (cmd, r.stderr[-300:]))
    return json.loads(r.stdout)


def switch_runtimes(dat):
    """CPU time per thread summed from trace-cmd's sched_switch records
    (from a switch in to the next switch out on that CPU), and how many
    switches the kernel did not record (a switch out of a thread other
    than the one last switched in)."""
    tc, _ = trace_cmd_events(dat)
    per_cpu = {}
    for cpu, evs in tc.items():
        for ts, _pid, name, rest in evs:
            if name == "sched_switch":
                f = tc_fields(rest, ["prev_comm", "prev_pid", "prev_prio", "prev_state",
                                     "next_comm", "next_pid", "next_prio"])
                per_cpu.setdefault(cpu, []).append((ts, int(f["prev_pid"]), int(f["next_pid"])))
    return runtimes(per_cpu)


def runtimes(switches):
    """From each CPU's (ts, prev, next) switches: CPU time per thread, and
    the threads the kernel switched out with no switch in recorded (their
    time then is not in the records)."""
    run_ns, since, unrecorded = {}, {}, set()
    for cpu, sw in switches.items():
        for ts, prev, nxt in sw:
            if cpu in since:
                if since[cpu][0] == prev:
                    run_ns[prev] = run_ns.get(prev, 0) + ts - since[cpu][1]
                else:
                    unrecorded.add(prev)
            since[cpu] = (nxt, ts)
    return run_ns, unrecorded


def versus_self(threads, usage, unrecorded):
    """Each workload thread's CPU time from reef against its own clock
    (1 ms or 3 %): the threads the kernel left a switch in unrecorded for
    are not compared (the records lack that time, for every tool); at
    least one must be."""
    out, compared = [], 0
    for tid, (name, ns, _) in threads.items():
        if name == "wl-filler":
            continue
        if tid in unrecorded:
            out.append("%s not compared (a switch in unrecorded)" % name)
            continue
        compared += 1
        check(abs(usage.get(tid, 0) - ns) <= max(1000000, ns * 3 / 100),
              "%s (%d): reef cputop %.0f ns, its own CLOCK_THREAD_CPUTIME_ID %d ns" % (name, tid, usage.get(tid, 0), ns))
        out.append("%s %+.0f us" % (name, (usage.get(tid, 0) - ns) / 1e3))
    check(compared > 0, "no workload thread could be compared with its own CPU time")
    return "self: " + ", ".join(out)


def cputop_equals_thread_cpu_time():
    """reef cputop's CPU time per thread against the sum of trace-cmd's
    sched_switch records (within 0.1 ms or 1 %) and against the time each
    thread read for itself. The latter is looser (1 ms or 3 %) on this
    machine, a VM whose kernel leaves some switches unrecorded (in ftrace
    and perf alike; counted and shown) and whose threads' own clocks leave
    out time the host took (steal): both are outside the trace."""
    dat, threads = workload_dat()
    d = lami("cputop", dat)
    res = {r["class"]: r for r in d["results"]}
    span = d["results"][0]["time-range"]
    dur = span["end"]["value"] - span["begin"]["value"]
    usage = {row[0]["tid"]: row[3]["value"] * dur for row in res["per-process"]["data"]}
    ref, unrecorded = switch_runtimes(dat)
    out = []
    for tid, (name, ns, _) in threads.items():
        if name == "wl-filler":
            continue
        check(tid in usage, "cputop has no row for %s (%d)" % (name, tid))
        want = ref.get(tid, 0)
        check(abs(usage[tid] - want) <= max(100000, want / 100),
              "%s (%d): reef cputop %.0f ns, trace-cmd's sched_switch records %d ns" % (name, tid, usage[tid], want))
        out.append("%s %.3f ms (records %+.0f us)" % (name, usage[tid] / 1e6, (usage[tid] - want) / 1e3))
    return ", ".join(out) + "; " + versus_self(threads, usage, unrecorded)


def syscallstats_counts_known_calls():
    dat, threads = workload_dat()
    d = lami("syscallstats", dat)
    per = {}
    for r in d["results"]:
        c = r["class"]
        title = c.get("title", "") if isinstance(c, dict) else ""
        m = re.search(r"TID: (\d+)", title)
        if m:
            per[int(m.group(1))] = {row[0]["name"]: row[1]["value"] for row in r["data"]}
    out = []
    for tid, (name, _, calls) in threads.items():
        if name == "wl-filler":
            continue
        got = per.get(tid, {}).get("getppid")
        check(got == calls, "%s (%d): %s getppid calls in syscallstats, %d made" % (name, tid, got, calls))
        out.append("%s %d" % (name, calls))
    return "getppid counts " + ", ".join(out)


def schedstats_equal_switch_records():
    dat, threads = workload_dat()
    tc, _ = trace_cmd_events(dat)
    evs = sorted((ts, cpu, name, rest) for cpu, l in tc.items() for ts, _p, name, rest in l)
    current, woken, lat = {}, {}, {}
    for ts, cpu, name, rest in evs:
        if name in ("sched_wakeup", "sched_wakeup_new", "sched_waking"):
            tid = int(tc_fields(rest, ["comm", "pid", "prio", "target_cpu"])["pid"])
            if tid not in current.values() and tid not in woken:
                woken[tid] = ts
        elif name == "sched_switch":
            nxt = int(tc_fields(rest, ["prev_comm", "prev_pid", "prev_prio", "prev_state",
                                       "next_comm", "next_pid", "next_prio"])["next_pid"])
            current[cpu] = nxt
            if nxt in woken:
                lat.setdefault(nxt, []).append(ts - woken.pop(nxt))
    d = lami("schedstats", dat)
    per = {}
    for r in d["results"]:
        if r["class"] == "per_tid_stats":
            for row in r["data"]:
                per[row[0]["tid"]] = (row[1]["value"], row[2]["value"], row[4]["value"])
    out = []
    for tid, (name, _, _) in threads.items():
        if name == "wl-filler":
            continue
        want = lat.get(tid, [])
        check(want, "%s: no latency in trace-cmd's records" % name)
        got = per.get(tid)
        check(got == (len(want), min(want), max(want)),
              "%s (%d): reef schedstats count/min/max %s, trace-cmd's records %s" % (name, tid, got, (len(want), min(want), max(want))))
        out.append("%s %d" % (name, len(want)))
    return "latencies " + ", ".join(out)


TESTS = [fields_equal_trace_cmd_v7_zstd, fields_equal_trace_cmd_v7_uncompressed, fields_equal_trace_cmd_v6,
         lost_events_equal_trace_cmd, babeltrace2_reads_the_converted_trace, damaged_copies_fail_cleanly,
         cputop_equals_thread_cpu_time, syscallstats_counts_known_calls, schedstats_equal_switch_records,
         python_reads_the_dat, view_api_on_dat, view_e2e_on_dat,
         record_kernel, perf_fields_equal_perf_script, perf_cputop_equals_switch_records, perf_damaged_copies_fail_cleanly,
         perf_callchains_equal_perf_script, perf_records_equal_perf_script, perf_profile_equals_perf_script]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--reef", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("only", nargs="*")
    ARGS = ap.parse_args()
    ran, failures = [], []
    for fn in TESTS:
        name = fn.__name__
        if ARGS.only and not any(o in name for o in ARGS.only):
            continue
        ran.append(name)
        t0 = time.monotonic()
        try:
            info = fn()
            print("%-44s ok  (%.1f s)%s" % (name, time.monotonic() - t0, "  " + info if info else ""))
        except Fail as e:
            print("%-44s FAILED: %s" % (name, e))
            failures.append(name)
        sys.stdout.flush()
    if not ran:
        print("kernel tests: no test matches %s" % ARGS.only)
        sys.exit(1)
    if failures:
        print("kernel tests: %d of %d failed: %s" % (len(failures), len(ran), ", ".join(failures)))
        sys.exit(1)
    print("kernel tests: all %d passed" % len(ran))


if __name__ == "__main__":
    main()
