#!/usr/bin/env python3
"""`reef recover` on damaged crash-safe traces, driven by run.sh.

One crash-safe trace is recorded: tests/tracer/crash.c, 4 threads in
block mode with 4 KiB packets and 64 KiB rings, killed with SIGKILL while
every thread records. Each case damages a copy of its ring or stream files
one way (this script reads and writes the layouts of tracer/src/internal.h
itself) and runs `reef recover` on it, with a time limit. Every output
must be read by babeltrace2 with exit 0 and nothing on stderr. The
reference for what must be there is crash.c's side files (each thread's
count of the events it completed), never reef:

- damage reef can work around (a FIFO among the rings, a zeroed ring
  magic, a ring claiming another's stream, a damaged content_size or
  packet_size): every thread's events from 0 to its last completed one,
  contiguous, each damaged thing named on stderr;
- damage that destroys data (garbled bytes in a stream file): exit 1,
  the file and the offset named, the events of the damaged packets alone
  missing (the packets after them read again), the other threads whole.
"""
import argparse
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import time

ARGS = None
FAILURES = []
RAN = []
K = 0x9E3779B97F4A7C15
STEP = re.compile(r"\{ thread = (\d+), n = (\d+), check = (\d+) \}$")
RING = struct.Struct("<8sIIIIQQ16sII")
CTF_MAGIC = 0xC1FC1FC1
OFF_CONTENT, OFF_PSIZE, OFF_SEQ, OFF_INST = 48, 56, 64, 24
TRACE = None  # (dir, {thread: last n it logged})


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("REEF_")}
    e["TZ"] = "UTC"
    return e


def work(*p):
    return os.path.join(ARGS.work, *p)


def record():
    """The crash-safe trace, killed while its threads record."""
    global TRACE
    if TRACE:
        return TRACE
    for attempt in range(5):
        trace, side = work("trace"), work("side")
        shutil.rmtree(trace, ignore_errors=True)
        shutil.rmtree(side, ignore_errors=True)
        os.makedirs(side)
        e = env()
        e.update(REEF_OUTPUT=trace, REEF_CRASH_SAFE="1", REEF_MODE="block",
                 REEF_BUFFER_SIZE="64K", REEF_PACKET_SIZE="4K")
        p = subprocess.Popen([ARGS.crash, "4", side, "run"], env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.4 + 0.2 * attempt)
        p.kill()
        p.communicate(timeout=60)
        logged = {}
        for i in range(4):
            data = open(os.path.join(side, "thread_%d" % i), "rb").read()
            logged[i] = struct.unpack("<Q", data)[0] if len(data) == 8 else -1
        rings = os.path.join(trace, ".reef-rings")
        # Every thread recorded a few packets, and its ring holds closed
        # packets that its stream file holds too (the cases need both).
        if all(v > 2000 for v in logged.values()) and os.path.isdir(rings) and \
                len([r for r in os.listdir(rings) if r.startswith("ring_")]) == 4:
            TRACE = (trace, logged)
            return TRACE
    raise Fail("could not record a crash-safe trace with 4 threads: %r" % logged)


def copy(name):
    trace, logged = record()
    d = work(name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(d + "-out", ignore_errors=True)
    shutil.copytree(trace, d, symlinks=True)
    return d, logged


def recover(d, timeout=60):
    out = d + "-out"
    try:
        p = subprocess.run([ARGS.reef, "recover", d, "-o", out], capture_output=True,
                           env=env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail("reef recover did not finish within %d s" % timeout)
    err = p.stderr.decode(errors="replace")
    check("panicked" not in err, "reef recover panicked:\n" + err[-2000:])
    return p.returncode, err, out


def bt2_steps(out, lossy=False):
    """babeltrace2 on the output (exit 0, stderr empty; `lossy`: but for
    its warnings of packets missing from the sequence numbers) →
    {thread: [n...]}."""
    p = subprocess.run(["babeltrace2", out], capture_output=True, env=env(), timeout=300)
    err = p.stderr.decode(errors="replace")
    noise = [l for l in err.splitlines()
             if l.strip() and not (lossy and re.match(r"WARNING: Tracer discarded \d+ packets? between", l))]
    check(p.returncode == 0 and not noise, "babeltrace2 on the output: exit %d\n%s" % (p.returncode, err[-1500:]))
    per = {}
    for line in p.stdout.decode().splitlines():
        m = STEP.search(line)
        check(m and " c:STEP: " in line, "unexpected line: " + line)
        t, n, c = int(m.group(1)), int(m.group(2)), int(m.group(3))
        check(c == ((n * K) & (2**64 - 1)) ^ t, "an event with a wrong check value: " + line)
        per.setdefault(t, []).append(n)
    return per


def whole(per, logged, what, skip=()):
    """Every thread (but `skip`): events 0.. contiguous, up to at least the
    one before its last logged (the side file is written after the event:
    it names the last complete one or the one before)."""
    for t in range(4):
        if t in skip:
            continue
        ns = per.get(t, [])
        check(ns, "%s: thread %d: no event" % (what, t))
        check(ns == list(range(len(ns))),
              "%s: thread %d: events missing or repeated (%d events, %d..%d)" % (what, t, len(ns), ns[0], ns[-1]))
        check(ns[-1] + 1 >= logged[t], "%s: thread %d: recovered up to %d, it completed %d" % (what, t, ns[-1], logged[t]))


def ring_files(d):
    rd = os.path.join(d, ".reef-rings")
    return sorted(os.path.join(rd, r) for r in os.listdir(rd) if r.startswith("ring_"))


def ring_header(path):
    data = open(path, "rb").read()
    magic, ver, hsize, psize, npk, inst, base, uuid, tid, pid = RING.unpack_from(data, 0)
    return dict(data=data, hsize=hsize, psize=psize, npk=npk, inst=inst, base=base)


def slots(h):
    """(slot offset, seq, content bits) of the ring's closed packets."""
    out = []
    d = h["data"]
    for i in range(h["npk"]):
        at = h["hsize"] + i * h["psize"]
        if struct.unpack_from("<I", d, at)[0] != CTF_MAGIC:
            continue
        content = struct.unpack_from("<Q", d, at + OFF_CONTENT)[0]
        if content:
            out.append((at, struct.unpack_from("<Q", d, at + OFF_SEQ)[0], content))
    return out


def file_packets(path):
    """[(offset, size, seq)] of a stream file's complete packets."""
    data = open(path, "rb").read()
    off, out = 0, []
    while off + 100 <= len(data):
        size = struct.unpack_from("<Q", data, off + OFF_PSIZE)[0] // 8
        if struct.unpack_from("<I", data, off)[0] != CTF_MAGIC or size < 100 or off + size > len(data):
            break
        out.append((off, size, struct.unpack_from("<Q", data, off + OFF_SEQ)[0]))
        off += size
    return out


def ring_needed(d):
    """A ring whose closed packets the output must take from it: its
    stream file is cut back (at a packet boundary, as a consumer that
    lagged leaves it) to before the ring's closed packets. Returns the
    ring's path and header, and the sequence numbers now only in it."""
    for r in ring_files(d):
        h = ring_header(r)
        closed = {seq for _, seq, _ in slots(h)}
        sf = os.path.join(d, "stream_%d" % h["inst"])
        pk = file_packets(sf)
        if not pk:
            continue
        # The longest run of the file's last packets that the ring holds.
        k = len(pk)
        while k > 0 and pk[k - 1][2] in closed:
            k -= 1
        if len(pk) - k >= 2 and k >= 1:
            with open(sf, "r+b") as f:
                f.truncate(pk[k][0])
            return r, h, [p[2] for p in pk[k:]]
    raise Fail("no ring holds two closed packets that its stream file holds too")


def put(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


# ---- cases -----------------------------------------------------------------

def undamaged_copy_is_whole():
    """The reference run: the undamaged trace recovers whole, exit 0."""
    d, logged = copy("plain")
    rc, err, out = recover(d)
    check(rc == 0, "exit %d\n%s" % (rc, err[-1500:]))
    whole(bt2_steps(out), logged, "undamaged")
    return "threads completed %s" % [logged[t] for t in range(4)]


def fifo_among_rings_and_streams():
    """A FIFO named as a ring and one named as a stream file: never opened
    for reading (that blocks forever); each named, exit 1, everything else
    recovered."""
    d, logged = copy("fifo")
    os.mkfifo(os.path.join(d, ".reef-rings", "ring_4242"))
    os.mkfifo(os.path.join(d, "stream_4243"))
    rc, err, out = recover(d, timeout=30)
    check(rc == 1, "exit %d (expected 1: the FIFOs' contents are left out)\n%s" % (rc, err[-1500:]))
    for n in ("ring_4242", "stream_4243"):
        check(re.search(re.escape(n) + r": offset 0: a FIFO", err), "%s not named as a FIFO:\n%s" % (n, err[-1500:]))
    whole(bt2_steps(out), logged, "fifo")


def zeroed_ring_magic_is_read():
    """A ring whose magic is zeroed (the rest of it intact) is not a thread
    that had not started: its packets are recovered, the damage named."""
    d, logged = copy("magic")
    r, h, only = ring_needed(d)
    put(r, 0, b"\0" * 8)
    rc, err, out = recover(d)
    check("not started" not in err, "the damaged ring is taken for a thread that had not started:\n" + err[-1500:])
    check(os.path.basename(r) + ": offset 0: not a libreef ring header" in err, "the ring's damage is not named:\n" + err[-1500:])
    check(rc in (0, 1), "exit %d" % rc)
    whole(bt2_steps(out), logged, "zeroed magic")
    return "packets %s from the damaged ring" % only


def two_rings_claim_one_stream():
    """A ring header naming another ring's stream: both rings' packets are
    recovered (the file name and the slots say which stream it is)."""
    d, logged = copy("dup")
    r, h, only = ring_needed(d)
    other = [x for x in ring_files(d) if x != r][0]
    put(other, OFF_INST, struct.pack("<Q", h["inst"]))
    rc, err, out = recover(d)
    check(rc in (0, 1), "exit %d" % rc)
    check("instance id" in err, "the conflicting instance id is not named:\n" + err[-1500:])
    whole(bt2_steps(out), logged, "two rings, one id")
    # And a second copy of a ring under another name: merged, no packet
    # lost or repeated.
    d2, _ = copy("dup2")
    r2, h2, _ = ring_needed(d2)
    shutil.copy(r2, os.path.join(d2, ".reef-rings", "ring_copy"))
    rc, err, out = recover(d2)
    check(rc == 0, "a copy of a ring: exit %d\n%s" % (rc, err[-1500:]))
    check("rings hold stream %d" % h2["inst"] in err, "the two rings of one stream are not named:\n" + err[-1500:])
    whole(bt2_steps(out), logged, "a copied ring")


def bogus_content_size_in_a_ring():
    """A closed packet in a ring whose content_size is bogus: its length
    from its packet_size (or, both bogus, its commit word), said; not
    dropped in silence."""
    res = []
    for how, fields in (("content_size", [OFF_CONTENT]), ("both sizes", [OFF_CONTENT, OFF_PSIZE])):
        d, logged = copy("content-%d" % len(fields))
        r, h, only = ring_needed(d)
        at = [a for a, seq, _ in slots(h) if seq == only[0]][0]
        for f in fields:
            put(r, at + f, struct.pack("<Q", 0x7FFF_FFFF_FFFF_FFF0))
        rc, err, out = recover(d)
        check("content_size" in err and os.path.basename(r) in err,
              "%s: the damaged slot is not named:\n%s" % (how, err[-1500:]))
        check(rc in (0, 1), "exit %d" % rc)
        whole(bt2_steps(out), logged, "bogus " + how)
        res.append("%s: packet %d kept" % (how, only[0]))
    return "; ".join(res)


def bogus_content_size_in_a_stream_file():
    """A packet of a stream file with a bogus content_size: it is left out
    and said (exit 1), the packets after it read again."""
    d, logged = copy("filecontent")
    sf = sorted(f for f in os.listdir(d) if f.startswith("stream_"))[0]
    pk = file_packets(os.path.join(d, sf))
    check(len(pk) > 4, "%s: too few packets" % sf)
    off = pk[1][0]
    put(os.path.join(d, sf), off + OFF_CONTENT, struct.pack("<Q", 12345))
    rc, err, out = recover(d)
    check(rc == 1, "exit %d (expected 1)\n%s" % (rc, err[-1500:]))
    check("%s: offset %d:" % (sf, off) in err and "damaged data" in err, "the bad packet is not named:\n" + err[-1500:])
    per = bt2_steps(out, lossy=True)
    lost_one_packet(per, logged, "bogus content_size")


def lost_one_packet(per, logged, what):
    """One thread misses a contiguous run of events (the damaged packets);
    its events after them are there; the other threads are whole."""
    gaps = []
    for t in range(4):
        ns = per.get(t, [])
        check(ns, "%s: thread %d: no event" % (what, t))
        if ns != list(range(len(ns))):
            gaps.append(t)
    check(len(gaps) == 1, "%s: threads with missing events: %s" % (what, gaps))
    t = gaps[0]
    ns = per[t]
    holes = [(a, b) for a, b in zip([-1] + ns, ns + [None]) if b is not None and b != a + 1]
    check(len(holes) == 1, "%s: thread %d: %d holes %s" % (what, t, len(holes), holes[:5]))
    check(ns[-1] + 1 >= logged[t], "%s: thread %d: the events after the damage are missing (up to %d of %d)"
          % (what, t, ns[-1], logged[t]))
    whole(per, logged, what, skip=(t,))
    return holes[0]


def garbled_first_4k_of_a_stream_file():
    """A stream file whose first 4 KiB are garbled: what follows is read
    again from the next packet, the loss said with the file and offset,
    exit 1."""
    d, logged = copy("garbled")
    sfs = sorted(f for f in os.listdir(d) if f.startswith("stream_"))
    sf = max(sfs, key=lambda f: os.path.getsize(os.path.join(d, f)))
    size = os.path.getsize(os.path.join(d, sf))
    import random
    rnd = random.Random(50)
    put(os.path.join(d, sf), 0, bytes(rnd.randrange(256) for _ in range(4096)))
    rc, err, out = recover(d)
    check(rc == 1, "exit %d (expected 1)\n%s" % (rc, err[-1500:]))
    check("%s: offset 0:" % sf in err and "damaged data" in err, "the damage is not named:\n" + err[-1500:])
    per = bt2_steps(out, lossy=True)
    hole = lost_one_packet(per, logged, "garbled 4 KiB")
    return "%s (%d bytes): events %d..%d missing, the rest kept" % (sf, size, hole[0] + 1, hole[1] - 1)


def garbled_middle_of_a_stream_file():
    """Garbled bytes in the middle of a stream file: the packets after them
    read again."""
    d, logged = copy("garbled-mid")
    sf = sorted(f for f in os.listdir(d) if f.startswith("stream_"))[-1]
    pk = file_packets(os.path.join(d, sf))
    check(len(pk) > 6, "%s: too few packets" % sf)
    off = pk[3][0] + 50
    put(os.path.join(d, sf), off, b"\xa5" * 3000)
    rc, err, out = recover(d)
    check(rc == 1, "exit %d (expected 1)\n%s" % (rc, err[-1500:]))
    check("damaged data" in err and sf in err, "the damage is not named:\n" + err[-1500:])
    lost_one_packet(bt2_steps(out, lossy=True), logged, "garbled middle")


def garbled_ring_header():
    """A ring whose whole header page is garbled: its slots are found by
    their packet headers, its closed packets recovered."""
    d, logged = copy("ringhdr")
    r, h, only = ring_needed(d)
    import random
    rnd = random.Random(8)
    put(r, 0, bytes(rnd.randrange(256) for _ in range(4096)))
    rc, err, out = recover(d)
    check(os.path.basename(r) in err, "the ring's damage is not named:\n" + err[-1500:])
    per = bt2_steps(out)
    # The closed packets are recovered; the open packet's events need the
    # base address, found from a closed packet's commit word.
    whole(per, logged, "garbled ring header")
    return "exit %d" % rc


TESTS = [undamaged_copy_is_whole, fifo_among_rings_and_streams, zeroed_ring_magic_is_read,
         two_rings_claim_one_stream, bogus_content_size_in_a_ring, bogus_content_size_in_a_stream_file,
         garbled_first_4k_of_a_stream_file, garbled_middle_of_a_stream_file, garbled_ring_header]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--reef", required=True)
    ap.add_argument("--crash", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("only", nargs="*")
    ARGS = ap.parse_args()
    for fn in TESTS:
        name = fn.__name__
        if ARGS.only and not any(o in name for o in ARGS.only):
            continue
        RAN.append(name)
        t0 = time.monotonic()
        try:
            info = fn()
            print("%-44s ok  (%.1f s)%s" % (name, time.monotonic() - t0, "  " + info if info else ""))
        except Fail as e:
            print("%-44s FAILED: %s" % (name, e))
            FAILURES.append(name)
    if not RAN:
        print("recover tests: no test matches %s" % ARGS.only)
        sys.exit(1)
    if FAILURES:
        print("recover tests: %d of %d failed: %s" % (len(FAILURES), len(RAN), ", ".join(FAILURES)))
        sys.exit(1)
    print("recover tests: all %d passed" % len(RAN))


if __name__ == "__main__":
    main()
