#!/usr/bin/env python3
"""End-to-end tests of `reef gen` + libreef, driven by run.sh.

Each test records a trace with a small program, reads it with babeltrace2
and checks what was recorded: the events and their field values, and the
packet contexts (read straight from the stream files, whose layout libreef
and the generated metadata fix: see tracer/src/internal.h).
"""
import argparse
import difflib
import os
import random
import re
import shlex
import shutil
import struct
import subprocess
import sys
import time
import traceback

ARGS = None
FAILURES = []
CFLAGS = ["-pedantic", "-Wall", "-Wextra", "-Werror", "-O2"]


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def run(cmd, env=None, cwd=None, ok=True):
    full_env = dict(os.environ)
    for k in [k for k in full_env if k.startswith("REEF_")]:
        del full_env[k]
    full_env["TZ"] = "UTC"
    full_env.update(env or {})
    p = subprocess.run(cmd, env=full_env, cwd=cwd, capture_output=True)
    if ok and p.returncode != 0:
        raise Fail("command failed (%d): %s\n%s" % (p.returncode, " ".join(map(str, cmd)),
                                                   p.stderr.decode(errors="replace")[-2000:]))
    return p


def work(*parts):
    return os.path.join(ARGS.work, *parts)


def gen(schema, outdir):
    run(shlex.split(ARGS.gen) + [schema, "-o", outdir])


def build(src, gendir, out, lang="c"):
    """Compiles `src` with the generated header as C11 or C++17, links libreef."""
    inc = ["-I" + os.path.join(ARGS.root, "tracer", "include"), "-I" + gendir]
    obj = out + ".o"
    if lang == "c":
        run(["gcc", "-x", "c", "-std=c11"] + CFLAGS + inc + ["-c", src, "-o", obj])
    else:
        run(["g++", "-x", "c++", "-std=c++17"] + CFLAGS + inc + ["-c", src, "-o", obj])
    run(["g++", obj, os.path.join(ARGS.root, "tracer", "libreef.a"), "-lpthread", "-o", out])
    return out


def bt2(trace, *opts):
    p = run(["babeltrace2"] + list(opts) + [trace], ok=False)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def bt2_clean(trace):
    """babeltrace2 must read the trace with exit 0 and nothing on stderr."""
    rc, out, err = bt2(trace)
    check(rc == 0, "babeltrace2 exit %d: %s" % (rc, err[-1000:]))
    check(err == "", "babeltrace2 wrote to stderr:\n" + err[-1000:])
    return out


LINE = re.compile(r"^\[[^\]]*\] \([^)]*\) \S+ (\S+): \{ tid = (\d+), thread_name = \"([^\"]*)\" \}, (.*)$")


def events(out):
    """babeltrace2 text → [(name, payload, tid, thread_name)]."""
    evs = []
    for line in out.splitlines():
        m = LINE.match(line)
        check(m, "unexpected babeltrace2 line: " + line)
        evs.append((m.group(1), m.group(4), int(m.group(2)), m.group(3)))
    return evs


def names_payloads(out):
    return ["%s: %s" % (n, p) for n, p, _, _ in events(out)]


HEADER = struct.Struct("<I16sIQQQQQQQI16s")


def packets(trace):
    """{stream file: [packet context dict]} read from the stream files."""
    result = {}
    for name in sorted(os.listdir(trace)):
        if not name.startswith("stream_"):
            continue
        data = open(os.path.join(trace, name), "rb").read()
        off, pk = 0, []
        while off < len(data):
            (magic, uuid, sid, inst, tb, te, content, psize, seq, disc, tid,
             tname) = HEADER.unpack_from(data, off)
            check(magic == 0xC1FC1FC1, "%s: bad magic at %d" % (name, off))
            check(content == psize and psize % 8 == 0 and psize // 8 >= HEADER.size,
                  "%s: bad sizes at %d" % (name, off))
            check(tb <= te, "%s: timestamp_begin > timestamp_end at %d" % (name, off))
            pk.append(dict(seq=seq, discarded=disc, tid=tid, instance=inst,
                           name=tname.split(b"\0")[0].decode(), ts_begin=tb, ts_end=te,
                           size=psize // 8))
            off += psize // 8
        check(off == len(data), "%s: trailing bytes" % name)
        result[name] = pk
    return result


def seqs(out, name="t:SEQ"):
    return [int(re.search(r"n = (\d+)", p).group(1)) for n, p, _, _ in events(out) if n == name]


# ---- the tests -------------------------------------------------------------

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def program(name):
    """tests/tracer/NAME.c with its NAME.reef schema, built once."""
    exe = work(name)
    if not os.path.exists(exe):
        gen(os.path.join(ARGS.root, "tests/tracer", name + ".reef"), work(name + "-gen"))
        build(os.path.join(ARGS.root, "tests/tracer", name + ".c"), work(name + "-gen"), exe)
    return exe


def modes_prog():
    return program("modes")


def record(what, n=None, env=None, trace_name=None):
    trace = work(trace_name or ("trace-" + what + "-" + "-".join(sorted((env or {}).values()))))
    cmd = [modes_prog(), what] + ([str(n)] if n is not None else [])
    p = run(cmd, env=dict(env or {}, REEF_OUTPUT=trace))
    return trace, p


@test
def header_compiles_c11_and_cxx17():
    """Every field type: the header compiles with -Wall -Wextra -Werror
    -pedantic as C11 and C++17, and both programs record the same values."""
    gendir = work("types-gen")
    gen(os.path.join(ARGS.root, "tests/tracer/types.reef"), gendir)
    expect = open(os.path.join(ARGS.root, "tests/tracer/types.expect")).read().splitlines()
    for lang in ("c", "c++"):
        exe = build(os.path.join(ARGS.root, "tests/tracer/types_use.c"), gendir,
                    work("types-" + lang), lang)
        trace = work("trace-types-" + lang)
        run([exe], env={"REEF_OUTPUT": trace})
        got = names_payloads(bt2_clean(trace))
        check(got == expect, "%s: recorded\n%s\nexpected\n%s" % (lang, "\n".join(got), "\n".join(expect)))
    # The standalone metadata that reef gen writes reads too (no stream).
    meta = open(os.path.join(gendir, "types.tsdl")).read()
    check("@" not in meta, "placeholders left in types.tsdl")


def example_trace():
    """The example's trace (4 threads, 2000 items each), recorded once:
    (trace, its events as the example traced them)."""
    if getattr(ARGS, "example", None) is None:
        b = work("example")
        run(["make", "-s", "-C", os.path.join(ARGS.root, "examples"), "BUILD=" + b,
             "REEF_GEN=" + ARGS.gen])
        trace = work("trace-example")
        expect_file = work("example.expect")
        run([os.path.join(b, "demo"), "4", "2000"], env={"REEF_OUTPUT": trace, "DEMO_EXPECT": expect_file})
        ARGS.example = (trace, open(expect_file).read().splitlines())
    return ARGS.example


@test
def example_records_exactly_what_it_traced():
    """The example (4 threads, 4 subsystems, a mutex): babeltrace2 reads the
    trace cleanly; events and values are exactly those the program traced,
    in each thread's order; each stream names its thread."""
    trace, expect = example_trace()
    out = bt2_clean(trace)
    got = names_payloads(out)
    check(len(got) == len(expect) == 3 + 4 * (2 + 3 * 2000) + 1,
          "event count: recorded %d, traced %d" % (len(got), len(expect)))
    check(sorted(got) == sorted(expect), "recorded events differ from traced events")
    # Per-thread order and thread identity.
    last = {}
    for n, p, tid, tname in events(out):
        if n == "worker:ITEM":
            wid = int(re.search(r"id = (\d+)", p).group(1))
            item = int(re.search(r"item = (\d+)", p).group(1))
            check(tname == "worker-%d" % wid, "ITEM of worker %d in stream of %s" % (wid, tname))
            check(item == last.get(wid, -1) + 1, "worker %d: item %d after %s" % (wid, item, last.get(wid)))
            last[wid] = item
    pk = packets(trace)
    check(len(pk) == 5, "expected 5 streams (main + 4 workers), found %d" % len(pk))
    for name, plist in pk.items():
        check([p["seq"] for p in plist] == list(range(len(plist))), name + ": packet_seq_num gaps")
        check(all(p["discarded"] == 0 for p in plist), name + ": events discarded")


@test
def reef_print_equals_babeltrace2():
    """`reef print` prints exactly what babeltrace2 prints, with the same
    exit status, on the example's trace, a small one and one with
    discarded events; babeltrace2 reads each cleanly (exit 0), so a
    failing `reef print` fails the test."""
    traces = [example_trace()[0], record("control")[0], record("burst", 300000, {
        "REEF_PACKET_SIZE": "4K", "REEF_BUFFER_SIZE": "8K"})[0]]
    for t in traces:
        rc, out, err = bt2(t)
        check(rc == 0 and out, "babeltrace2 exit %d on %s: %s" % (rc, t, err[-500:]))
        p = run([ARGS.reef, "print", t], ok=False)
        check(p.returncode == rc, "reef print exit %d, babeltrace2 %d, on %s: %s" % (
            p.returncode, rc, t, p.stderr.decode(errors="replace")[-500:]))
        check(p.stdout.decode() == out, "reef print differs from babeltrace2 on " + t)


@test
def discard_mode_counts_what_it_drops():
    """Discard mode, 2 small packets, a burst: what is not recorded is
    counted in events_discarded, and recorded + discarded = traced."""
    n = 300000
    trace, _ = record("burst", n, {"REEF_PACKET_SIZE": "4K", "REEF_BUFFER_SIZE": "8K"})
    rc, out, err = bt2(trace)
    check(rc == 0, "babeltrace2 exit %d" % rc)
    got = seqs(out)
    pk = packets(trace)["stream_0"]
    discarded = pk[-1]["discarded"]
    check(discarded > 0, "nothing discarded: the test did not overrun the buffer")
    check(len(got) + discarded == n, "recorded %d + discarded %d != %d" % (len(got), discarded, n))
    check(got == sorted(got) and len(set(got)) == len(got), "SEQ out of order")
    check(all(a["discarded"] <= b["discarded"] for a, b in zip(pk, pk[1:])), "events_discarded decreases")
    check("discarded" in err, "babeltrace2 did not report the discarded events")
    # What babeltrace2 reports adds up to the packet contexts' count.
    reported = sum(int(x) for x in re.findall(r"Tracer discarded (\d+) events?", err))
    check(reported == discarded, "babeltrace2 reports %d discarded, contexts say %d" % (reported, discarded))


@test
def consumer_yields_to_the_program_in_discard_mode():
    """Discard mode: the consumer thread runs as SCHED_BATCH (its wake-up
    preempts no running thread) at nice +10 from the program's, and a
    thread that wakes it takes its own CPU out of the consumer's affinity;
    block mode and REEF_CONSUMER_NICE=0 leave the consumer as the program
    is. In every mode the consumer starts on the process's CPUs, not only
    on those of the thread whose first event started it."""
    other, batch = 0, 3  # SCHED_OTHER, SCHED_BATCH (Linux)
    cpus = len(os.sched_getaffinity(0))

    def sched(env):
        # 64 packets of 4 KiB: the burst wakes the consumer many times.
        _, p = record("consumer", 200000, env=dict(env, REEF_PACKET_SIZE="4K", REEF_BUFFER_SIZE="256K"))
        out = p.stdout.decode()
        m = re.fullmatch(r"main (-?\d+) (-?\d+) consumer (-?\d+) (-?\d+) (\d+) cpu \d+ has ([01]) of (\d+)\n", out)
        check(m, "unexpected output %r" % out)
        return [int(x) for x in m.groups()]

    mpol, mnice, cpol, cnice, start, has, count = sched({})
    check(mpol == other, "the test program itself is not SCHED_OTHER (%d)" % mpol)
    check(start == cpus, "discard mode: the consumer started on %d of %d CPUs" % (start, cpus))
    check((cpol, cnice) == (batch, min(mnice + 10, 19)),
          "discard mode: consumer policy %d nice %d, program nice %d" % (cpol, cnice, mnice))
    if cpus > 1:
        check((has, count) == (0, cpus - 1),
              "discard mode: the consumer's affinity has the waking thread's CPU: %d, %d of %d CPUs"
              % (has, count, cpus))
    for env in ({"REEF_MODE": "block"}, {"REEF_CONSUMER_NICE": "0"}):
        _, mnice, cpol, cnice, start, has, count = sched(env)
        check((cpol, cnice, start, has, count) == (other, mnice, cpus, 1, cpus),
              "%s: consumer policy %d nice %d, on %d then %d CPUs" % (env, cpol, cnice, start, count))


@test
def block_mode_loses_nothing():
    n = 300000
    trace, _ = record("burst", n, {"REEF_MODE": "block", "REEF_PACKET_SIZE": "4K", "REEF_BUFFER_SIZE": "8K"})
    out = bt2_clean(trace)
    check(seqs(out) == list(range(n)), "block mode lost or reordered events")
    pk = packets(trace)["stream_0"]
    check(all(p["discarded"] == 0 for p in pk), "events_discarded != 0 in block mode")
    check([p["seq"] for p in pk] == list(range(len(pk))), "packet_seq_num gaps in block mode")


@test
def overwrite_mode_keeps_the_newest():
    """Flight recorder: the newest events survive, as a contiguous run that
    ends with the last one; overwritten packets are gaps in packet_seq_num."""
    n = 300000
    trace, _ = record("burst", n, {"REEF_MODE": "overwrite", "REEF_PACKET_SIZE": "4K", "REEF_BUFFER_SIZE": "16K"})
    rc, out, err = bt2(trace)
    check(rc == 0, "babeltrace2 exit %d: %s" % (rc, err[-500:]))
    got = seqs(out)
    check(got and got[-1] == n - 1, "the last event is missing")
    check(got == list(range(got[0], n)), "the recorded events are not the newest contiguous run")
    check(got[0] > 0 and len(got) < 4 * 4096 // 18 + 1, "recorded %d events: more than the ring holds" % len(got))
    pk = packets(trace)["stream_0"]
    check(pk[0]["seq"] > 0, "the oldest packets were not overwritten")
    check([p["seq"] for p in pk] == list(range(pk[0]["seq"], pk[0]["seq"] + len(pk))), "gap inside the kept ring")
    check(all(p["discarded"] == 0 for p in pk), "events_discarded != 0 in overwrite mode")


@test
def overwrite_snapshot_writes_the_ring_at_that_moment():
    n = 100000
    trace, _ = record("snapshot", n, {"REEF_MODE": "overwrite", "REEF_PACKET_SIZE": "4K", "REEF_BUFFER_SIZE": "16K"})
    rc, out, err = bt2(trace)
    check(rc == 0, "babeltrace2 exit %d: %s" % (rc, err[-500:]))
    got = seqs(out)
    cut = got.index(n - 1) + 1 if (n - 1) in got else -1
    check(cut > 0, "the snapshot does not hold the last event before it")
    first, second = got[:cut], got[cut:]
    check(first == list(range(first[0], n)), "snapshot: not the newest contiguous run")
    check(second and second == list(range(second[0], 2 * n)), "after the snapshot: not the newest run")
    check(first[0] > 0 and second[0] > n, "nothing was overwritten")


@test
def triggers_start_and_stop_recording():
    trace, _ = record("trigger")
    got = names_payloads(bt2_clean(trace))
    expect = ["t:START: { arg = 0 }"] + ["t:MARK: { v = %d }" % i for i in range(10, 20)] + ["t:STOP: { arg = 0 }"]
    check(got == expect, "recorded:\n" + "\n".join(got))


@test
def subsystems_enable_disable_at_run_time():
    trace, _ = record("control")
    got = names_payloads(bt2_clean(trace))
    expect = ["off:X: { v = 1 }", "t:MARK: { v = 2 }", "t:MARK: { v = 4 }", "off:X: { v = 3 }"]
    check(got == expect, "recorded:\n" + "\n".join(got))


@test
def subsystems_from_the_environment():
    for spec, expect in (("-off", ["t:MARK: { v = 1 }"]), ("off", ["off:X: { v = 1 }"]),
                         ("t,off", ["t:MARK: { v = 1 }", "off:X: { v = 1 }"])):
        trace, _ = record("subsys", env={"REEF_SUBSYSTEMS": spec})
        got = names_payloads(bt2_clean(trace))
        check(got == expect, "REEF_SUBSYSTEMS=%s recorded %s" % (spec, got))


@test
def signal_handlers_may_trace():
    """A 50 us timer's handler traces while the thread traces in a loop:
    nested events are dropped and counted, no packet is corrupted."""
    n = 3000000
    trace, p = record("signal", n, {"REEF_MODE": "block"})
    handled = int(re.search(r"(\d+) signals handled", p.stderr.decode()).group(1))
    out = bt2_clean(trace) if False else None
    rc, out, err = bt2(trace)
    check(rc == 0, "babeltrace2 exit %d: %s" % (rc, err[-500:]))
    evs = events(out)
    marks = [p for n_, p, _, _ in evs if n_ == "t:MARK"]
    pk = packets(trace)["stream_0"]
    discarded = pk[-1]["discarded"]
    check(seqs(out) == list(range(n)) or discarded > 0, "SEQ events lost without being counted")
    check(len(evs) + discarded == n + handled + 1,
          "recorded %d + discarded %d != traced %d" % (len(evs), discarded, n + handled + 1))
    check(handled > 0 and len(marks) > 1, "no event recorded from the signal handler")


@test
def fork_child_does_not_trace():
    trace, _ = record("fork")
    got = names_payloads(bt2_clean(trace))
    check(got == ["t:MARK: { v = 1 }", "t:MARK: { v = 3 }"], "recorded %s" % got)
    check(list(packets(trace)) == ["stream_0"], "the child wrote a stream")


@test
def flush_writes_before_exit():
    trace, _ = record("flush")
    got = names_payloads(bt2_clean(trace))
    check(got == ["t:MARK: { v = 1 }", "t:MARK: { v = 2 }"], "recorded %s" % got)


@test
def thread_exit_hands_over_its_last_packet():
    trace, _ = record("threads", 16)
    evs = events(bt2_clean(trace))
    check(sorted(int(p.split("= ")[1].rstrip(" }")) for _, p, _, _ in evs) == list(range(16)), "missing events")
    pk = packets(trace)
    check(len(pk) == 16, "expected 16 streams, found %d" % len(pk))
    check(len({p[0]["tid"] for p in pk.values()}) == 16, "stream tids are not distinct")


@test
def fast_path_two_threads_share_no_written_cache_line():
    """Every event kind, two threads: the compiler's -fsanitize=thread
    instrumentation (hooks in sharing.c, no TSan run time) records each
    load/store of the inlined fast path; no 64-byte line written by one
    thread is read or written by the other. A negative control (a per-thread
    counter in one global array after each commit) must be caught."""
    gendir = work("types-gen")
    gen(os.path.join(ARGS.root, "tests/tracer/types.reef"), gendir)
    src = os.path.join(ARGS.root, "tests/tracer")
    inc = ["-I" + os.path.join(ARGS.root, "tracer", "include"), "-I" + gendir, "-I" + src]
    cc = ["gcc", "-std=c11"] + CFLAGS + inc
    run(cc + ["-c", os.path.join(src, "sharing.c"), "-o", work("sharing.o")])
    lib = os.path.join(ARGS.root, "tracer", "libreef.a")
    results = {}
    for name, extra in (("sharing", []), ("sharing-neg", ["-DSHARING_NEGATIVE_CONTROL"])):
        obj = work(name + "-events.o")
        run(cc + ["-fsanitize=thread"] + extra + ["-c", os.path.join(src, "sharing_events.c"), "-o", obj])
        run(["gcc", obj, work("sharing.o"), lib, "-lpthread", "-o", work(name)])
        results[name] = run([work(name), "20000"], env={"REEF_OUTPUT": work("trace-" + name)}, ok=False)
    pos, neg = results["sharing"], results["sharing-neg"]
    check(pos.returncode == 0, "shared cache lines written on the fast path (exit %d):\n%s"
          % (pos.returncode, pos.stdout.decode()))
    check(neg.returncode == 1 and b"shared line" in neg.stdout,
          "the negative control was not caught (exit %d):\n%s" % (neg.returncode, neg.stdout.decode()))
    return "ok (%s)" % pos.stdout.decode().splitlines()[0]


# ---- crashes (crash.c, reef recover) ----------------------------------------

CRASH_K = 0x9E3779B97F4A7C15
STEP = re.compile(r"\{ thread = (\d+), n = (\d+), check = (\d+) \}$")
CRASH_ENV = {"REEF_MODE": "block", "REEF_BUFFER_SIZE": "64K", "REEF_PACKET_SIZE": "4K"}


def crash_run(name, args, env, kill_after=None):
    """Runs crash.c with 4 threads; kill -9 after `kill_after` seconds.
    Returns (trace, exit status, stderr, {thread: last n it logged})."""
    trace, side = work("crash-" + name), work("crash-" + name + "-side")
    shutil.rmtree(trace, ignore_errors=True)
    shutil.rmtree(side, ignore_errors=True)
    os.makedirs(side)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("REEF_")}
    full_env.update(env, REEF_OUTPUT=trace, TZ="UTC")
    p = subprocess.Popen([program("crash"), "4", side] + args, env=full_env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_after is not None:
        time.sleep(kill_after)
        p.kill()
    _, err = p.communicate(timeout=120)
    logged = {}
    for i in range(4):
        path = os.path.join(side, "thread_%d" % i)
        # No file: killed before the thread started.
        data = open(path, "rb").read() if os.path.exists(path) else b""
        logged[i] = struct.unpack("<Q", data)[0] if len(data) == 8 else -1
        if logged[i] == 2**64 - 1:
            logged[i] = -1  # crash.c's `mapped`: nothing published yet
    return trace, p.returncode, err.decode(errors="replace"), logged, side


def steps(out):
    """babeltrace2 text of a crash.c trace → {thread: [n...]}, checking
    each event's `check` field (an invented event would fail it)."""
    per = {}
    for line in out.splitlines():
        m = STEP.search(line)
        check(m and " c:STEP: " in line, "unexpected line: " + line)
        t, n, c = int(m.group(1)), int(m.group(2)), int(m.group(3))
        check(c == ((n * CRASH_K) & (2**64 - 1)) ^ t, "event with a wrong check value: " + line)
        per.setdefault(t, []).append(n)
    return per


def contiguous(ns, what):
    check(ns, what + ": no event")
    check(ns == list(range(ns[0], ns[0] + len(ns))),
          what + ": events missing or repeated (%d events, %d..%d)" % (len(ns), ns[0], ns[-1]))


def recover(trace):
    out = trace + "-recovered"
    shutil.rmtree(out, ignore_errors=True)
    p = run([ARGS.reef, "recover", trace, "-o", out])
    err = p.stderr.decode()
    m = re.search(r"lost in flight: (\d+)", err)
    check(m, "reef recover says nothing of events in flight:\n" + err)
    return out, int(m.group(1))


@test
def crash_safe_kill_9_loses_only_events_in_flight():
    seed = int(os.environ.get("REEF_CRASH_SEED", "2611"))
    rnd = random.Random(seed)
    flight, events = 0, 0
    kills = [("block", rnd.uniform(0.02, 0.3)) for _ in range(20)]
    kills += [("overwrite", rnd.uniform(0.02, 0.3)) for _ in range(4)]
    # Threads that do nothing but trace (no side files) and never wait for
    # the consumer (overwrite mode): often inside an event when killed.
    kills += [("fast", rnd.uniform(0.01, 0.04)) for _ in range(4)]
    for k, (mode, delay) in enumerate(kills):
        env = dict(CRASH_ENV, REEF_CRASH_SAFE="1", REEF_MODE="overwrite" if mode == "fast" else mode)
        trace, rc, err, logged, _ = crash_run("kill%d" % k, ["fast" if mode == "fast" else "run"],
                                              env, kill_after=delay)
        what = "seed %d, kill %d (%s, after %.3f s)" % (seed, k, mode, delay)
        check(rc == -9, "%s: exit status %d, not killed: %s" % (what, rc, err[-500:]))
        out, lost = recover(trace)
        text = bt2_clean(out)
        check(run([ARGS.reef, "print", out]).stdout.decode() == text,
              what + ": reef print differs from babeltrace2 on the recovered trace")
        per = steps(text)
        for t in range(4):
            ns = per.get(t, [])
            if logged[t] < 0 and not ns:
                continue  # the thread had not traced yet
            contiguous(ns, "%s, thread %d" % (what, t))
            if mode == "block":
                check(ns[0] == 0, "%s, thread %d: starts at %d" % (what, t, ns[0]))
            events += len(ns)
            if mode == "fast":
                continue
            # The side file names the last complete event or the one before.
            check(logged[t] <= ns[-1] <= logged[t] + 1,
                  "%s, thread %d: last event %d, but the thread had logged %d"
                  % (what, t, ns[-1], logged[t]))
        check(lost <= 4, "%s: %d events in flight for 4 threads" % (what, lost))
        flight += lost
    return "ok (%d kills, seed %d: %d events recovered, %d in flight)" % (len(kills), seed, events, flight)


@test
def crash_safe_sigsegv_writes_the_trace_and_recover_agrees():
    env = dict(CRASH_ENV, REEF_CRASH_SAFE="1")
    trace, rc, err, logged, _ = crash_run("segv-safe", ["segv", "20000"], env)
    check(rc == -11, "exit status %d, not SIGSEGV: %s" % (rc, err[-500:]))
    check("libreef: fatal signal" in err, "no word of the fatal signal on stderr: " + err[-500:])
    direct = steps(bt2_clean(trace))
    check(direct[0][-1] == 20000, "thread 0 ends at %d, not 20000" % direct[0][-1])
    out, _ = recover(trace)
    rec = steps(bt2_clean(out))
    for t in range(4):
        if t != 0 and logged[t] < 0 and not direct.get(t) and not rec.get(t):
            continue  # the thread had not traced yet when thread 0 crashed
        contiguous(direct.get(t, []), "written at the signal, thread %d" % t)
        contiguous(rec.get(t, []), "recovered, thread %d" % t)
        check(rec[t][0] == 0 and rec[t][-1] >= direct[t][-1],
              "thread %d: recovered %d..%d, written %d..%d" % (t, rec[t][0], rec[t][-1], direct[t][0], direct[t][-1]))
    check(rec[0][-1] == 20000, "recovered thread 0 ends at %d" % rec[0][-1])


@test
def crash_safe_sigsegv_loses_no_completed_event():
    """Block mode, 4 threads each publishing every event it completed
    through a shared mapping (no system call between events); thread 0
    dereferences NULL after its event 200,000. Several runs crash-safe:
    reef recover has, per thread, every event it published (and at most
    the one it was recording beyond), from 0 on; two runs without
    crash-safe rings: the same of the trace written at the signal."""
    runs = int(os.environ.get("REEF_CRASH_RUNS", "5"))
    total = 0
    for k in range(runs + 2):
        safe = k < runs
        env = dict(CRASH_ENV, REEF_CRASH_SAFE="1") if safe else CRASH_ENV
        trace, rc, err, logged, _ = crash_run("segv-mapped%d" % k, ["mapped", "200000"], env)
        what = "run %d (%s)" % (k, "crash-safe, recovered" if safe else "written at the signal")
        check(rc == -11, "%s: exit status %d, not SIGSEGV: %s" % (what, rc, err[-500:]))
        rec = steps(bt2_clean(recover(trace)[0] if safe else trace))
        for t in range(4):
            ns = rec.get(t, [])
            if logged[t] < 0 and not ns:
                continue  # the thread had not traced yet
            contiguous(ns, "%s, thread %d" % (what, t))
            check(ns[0] == 0, "%s, thread %d: starts at %d" % (what, t, ns[0]))
            check(logged[t] <= ns[-1] <= logged[t] + 1,
                  "%s, thread %d: events 0..%d in the trace, but the thread had completed 0..%d"
                  % (what, t, ns[-1], logged[t]))
            total += len(ns)
        check(rec[0][-1] == 200000, "%s: thread 0 ends at %d" % (what, rec[0][-1]))
    return "ok (%d runs crash-safe, 2 without; %d events)" % (runs, total)


@test
def fatal_signal_writes_the_trace_then_the_program_handler_runs():
    trace, rc, err, logged, side = crash_run("segv-handler", ["handler", "30000"], CRASH_ENV)
    check(rc == 42, "exit status %d, not the program's handler's 42: %s" % (rc, err[-500:]))
    check(os.path.exists(os.path.join(side, "handled")), "the program's handler did not run")
    per = steps(bt2_clean(trace))
    check(per[0][-1] == 30000, "thread 0 ends at %d, not 30000" % per[0][-1])
    for t in range(4):
        contiguous(per.get(t, []), "thread %d" % t)
        check(per[t][0] == 0, "thread %d starts at %d" % (t, per[t][0]))
    trace, rc, err, logged, _ = crash_run("abort", ["abort", "30000"], CRASH_ENV)
    check(rc == -6, "abort(): exit status %d, not SIGABRT: %s" % (rc, err[-500:]))
    per = steps(bt2_clean(trace))
    check(per[0][-1] == 30000, "abort(): thread 0 ends at %d, not 30000" % per[0][-1])
    # And with the handlers switched off, nothing is written at the crash
    # (only what the consumer had written: a prefix).
    trace, rc, err, logged, _ = crash_run("abort-off", ["abort", "30000"],
                                          dict(CRASH_ENV, REEF_FATAL_SIGNALS="0"))
    check(rc == -6 and "fatal signal" not in err, "REEF_FATAL_SIGNALS=0: %d %s" % (rc, err[-300:]))


@test
def recover_reports_damaged_input_and_never_panics():
    """reef recover on rings and stream files with flipped bytes, zeroed
    ranges or cut short: exit 0 with a trace babeltrace2 reads, or exit 1
    with a message; never a panic."""
    seed = int(os.environ.get("REEF_CRASH_SEED", "2611"))
    rnd = random.Random(seed)
    env = dict(CRASH_ENV, REEF_CRASH_SAFE="1")
    trace, rc, err, _, _ = crash_run("fuzz", ["run"], env, kill_after=0.05)
    check(rc == -9, "not killed: %d %s" % (rc, err[-300:]))
    files = [os.path.join(".reef-rings", f) for f in os.listdir(os.path.join(trace, ".reef-rings"))]
    files += [f for f in os.listdir(trace) if f.startswith("stream_")] + ["metadata"]
    ok = failed = damaged = meta_refused = 0
    meta_example = None
    for k in range(200):
        copy = work("crash-fuzz-%d" % k)
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(trace, copy)
        name = rnd.choice(files)
        path = os.path.join(copy, name)
        data = bytearray(open(path, "rb").read())
        how = rnd.choice(["flip", "flip", "zero", "cut"])
        if how == "flip":
            # Mostly where the structure is: headers and contexts.
            for _ in range(rnd.randint(1, 8)):
                at = rnd.randrange(min(len(data), 4096 + 128) if rnd.random() < 0.7 else len(data))
                data[at] ^= 1 << rnd.randrange(8)
        elif how == "zero":
            at = rnd.randrange(len(data))
            n = rnd.randint(1, 256)
            data[at:at + n] = bytes(len(data[at:at + n]))
        else:
            del data[rnd.randrange(len(data)):]
        open(path, "wb").write(bytes(data))
        out = copy + "-recovered"
        p = run([ARGS.reef, "recover", copy, "-o", out], ok=False)
        e = p.stderr.decode(errors="replace")
        what = "seed %d, case %d (%s %s)" % (seed, k, how, name)
        check("panicked" not in e and p.returncode in (0, 1),
              "%s: exit %d\n%s" % (what, p.returncode, e[-800:]))
        if p.returncode == 0 or "reef recover: damaged data: " in e:
            # A trace written (what was damaged left out, and said so):
            # babeltrace2 reads it.
            bt_rc, _, bt_err = bt2(out)
            if bt_rc != 0 and name == "metadata":
                # The metadata is copied as it is: babeltrace2 must refuse
                # the damaged input's metadata too.
                in_rc = bt2(copy)[0]
                check(in_rc != 0, "%s: babeltrace2 reads the input, not reef recover's output:\n%s"
                      % (what, bt_err[-800:]))
                meta_refused += 1
                if not meta_example:
                    orig = open(os.path.join(trace, "metadata"), errors="replace").read().splitlines()
                    meta_example = [l for l in difflib.ndiff(orig, bytes(data).decode(errors="replace").splitlines())
                                    if l[:1] in "+-"]
                shutil.rmtree(copy)
                shutil.rmtree(out, ignore_errors=True)
                continue
            check(bt_rc == 0, "%s: reef recover wrote a trace babeltrace2 cannot read:\n%s\n%s"
                  % (what, e[-600:], bt_err[-800:]))
            ok += p.returncode == 0
            damaged += p.returncode != 0
        else:
            check("reef: error:" in e, "%s: exit 1 without an error message" % what)
            failed += 1
        shutil.rmtree(copy)
        shutil.rmtree(out, ignore_errors=True)
    return ("ok (seed %d: %d recovered, %d with damage left out, %d refused; %d with metadata reef reads and babeltrace2 refuses)"
            % (seed, ok, damaged, failed, meta_refused)
            + ("; first: %s" % meta_example if meta_example else ""))


@test
def crash_safe_clean_exit_removes_the_rings():
    plain, _ = record("burst", 100000, env={"REEF_MODE": "block"}, trace_name="burst-plain")
    safe, _ = record("burst", 100000, env={"REEF_MODE": "block", "REEF_CRASH_SAFE": "1"},
                     trace_name="burst-crash-safe")
    check(not os.path.exists(os.path.join(safe, ".reef-rings")), "the rings are still there")
    check(seqs(bt2_clean(safe)) == list(range(100000)), "crash-safe mode lost or changed events")
    check(seqs(bt2_clean(plain)) == list(range(100000)), "block mode lost events")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--reef", required=True)
    ap.add_argument("--gen", required=True)
    ap.add_argument("only", nargs="*")
    ARGS = ap.parse_args()
    failed = 0
    for t in TESTS:
        if ARGS.only and not any(o in t.__name__ for o in ARGS.only):
            continue
        t0 = time.time()
        try:
            r = t() or "ok"
            # A test passes by returning nothing or "ok ...": anything else
            # (a "skip") is a failure, never a pass.
            check(r == "ok" or r.startswith("ok "), "did not run to the end: %s" % r)
            print("%-55s %s (%.1f s)" % (t.__name__, r, time.time() - t0), flush=True)
        except Fail as e:
            failed += 1
            print("%-55s FAIL\n    %s" % (t.__name__, str(e).replace("\n", "\n    ")))
        except Exception:  # the test itself broke: a failure, the others still run
            failed += 1
            print("%-55s FAIL\n    %s" % (t.__name__, traceback.format_exc().replace("\n", "\n    ")))
    if failed:
        print("tracer tests: %d failed" % failed)
        sys.exit(1)
    print("tracer tests: all passed")


if __name__ == "__main__":
    main()
