#!/usr/bin/env python3
"""End-to-end tests of live streaming (REEF_LISTEN, `reef listen`), driven
by run.sh.

The traced programs are examples/build/demo and tests/live/live.c. Traces
written by `reef listen -o` are read with babeltrace2; raw captures are
unpacked by this script's own reader of the record framing (documented in
tracer/README.md) and read with babeltrace2 too, so reef is never checked
against itself.
"""
import argparse
import os
import re
import select
import shutil
import socket
import struct
import subprocess
import sys
import time

ARGS = None
FAILURES = []
MAGIC = 0x66656572


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def env_with(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("REEF_")}
    env["TZ"] = "UTC"
    env.update(extra)
    return env


def work(*parts):
    return os.path.join(ARGS.work, *parts)


def start_traced(cmd, extra_env):
    """Starts a traced program listening on a free loopback port; returns
    (process, port). The program prints the port on stderr at its first
    event."""
    env = env_with(dict({"REEF_LISTEN": "127.0.0.1:0", "REEF_LISTEN_WAIT": "20000",
                         "REEF_OUTPUT": work("unused-%d" % time.monotonic_ns())}, **extra_env))
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    line = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([p.stderr], [], [], 0.5)
        if r:
            c = os.read(p.stderr.fileno(), 1)
            if not c:
                break
            line += c
            if c == b"\n":
                m = re.search(rb"listening on 127\.0\.0\.1:(\d+)", line)
                if m:
                    return p, int(m.group(1))
                line = b""
    p.kill()
    raise Fail("the traced program did not report its port: %r" % line)


def finish(p, timeout=60):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise Fail("the traced program did not finish within %d s" % timeout)
    check(p.returncode == 0, "traced program exit %d: %s" % (p.returncode, err[-1000:]))
    return out.decode(), err.decode()


def listen(port, outdir, *extra, timeout=60):
    return subprocess.run([ARGS.reef, "listen", "127.0.0.1:%d" % port, "-o", outdir] + list(extra),
                          capture_output=True, timeout=timeout, env=env_with({}))


def bt2(trace):
    p = subprocess.run(["babeltrace2", trace], capture_output=True, env=env_with({}))
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def discards(stderr):
    """Sums of babeltrace2's discarded events / packets warnings."""
    ev = sum(int(n) for n in re.findall(r"Tracer discarded (\d+) events?", stderr))
    pk = sum(int(n) for n in re.findall(r"Tracer discarded (\d+) packets?", stderr))
    return ev, pk


def records(data):
    """Parses the framing: a list of (kind, stream, payload)."""
    out, off = [], 0
    while off < len(data):
        check(off + 24 <= len(data), "capture ends inside a record header at %d" % off)
        magic, kind, stream, size = struct.unpack_from("<IIQQ", data, off)
        check(magic == MAGIC, "bad record magic at %d" % off)
        check(kind in (1, 2, 3), "bad record kind %d at %d" % (kind, off))
        check(off + 24 + size <= len(data), "capture ends inside a record at %d" % off)
        out.append((kind, stream, data[off + 24:off + 24 + size]))
        off += 24 + size
    return out


def unpack(data, outdir):
    """Writes a capture as a trace directory (last metadata, one file per
    stream), independently of reef."""
    os.makedirs(outdir, exist_ok=True)
    files = {}
    for kind, stream, payload in records(data):
        if kind == 1:
            with open(os.path.join(outdir, "metadata"), "wb") as f:
                f.write(payload)
        elif kind == 2:
            files.setdefault(stream, bytearray()).extend(payload)
    for s, b in files.items():
        with open(os.path.join(outdir, "stream_%d" % s), "wb") as f:
            f.write(b)


def count_packets(path):
    """Packets in a libreef stream file (packet_size at byte 56)."""
    with open(path, "rb") as f:
        data = f.read()
    off = n = 0
    while off < len(data):
        off += struct.unpack_from("<Q", data, off + 56)[0] // 8
        n += 1
    return n


def packet_fields(payload):
    """seq and events_discarded of one libreef packet (tracer/src/internal.h)."""
    return struct.unpack_from("<QQ", payload, 64)


def raw_client(port, read_delay=0.0, chunk=1 << 16, max_seconds=60):
    """Connects and reads everything until the server closes, pausing
    `read_delay` s between reads (a lagging client). Returns the bytes."""
    s = socket.create_connection(("127.0.0.1", port))
    data = bytearray()
    deadline = time.monotonic() + max_seconds
    while time.monotonic() < deadline:
        b = s.recv(chunk)
        if not b:
            break
        data.extend(b)
        if read_delay:
            time.sleep(read_delay)
    s.close()
    return bytes(data)


RAN = []


def test(fn):
    name = fn.__name__
    if ARGS.only and not any(o in name for o in ARGS.only):
        return
    RAN.append(name)
    t0 = time.monotonic()
    try:
        info = fn()
        print("%-52s ok  (%.1f s)%s" % (name, time.monotonic() - t0, "  " + info if info else ""))
    except (Fail, subprocess.TimeoutExpired) as e:
        print("%-52s FAILED: %s" % (name, e))
        FAILURES.append(name)


# ---- tests ---------------------------------------------------------------

def block_mode_listener_gets_every_event():
    expect = work("block.expect")
    out = work("block-trace")
    p, port = start_traced([ARGS.demo, "4", "20000"], {
        "REEF_MODE": "block", "REEF_CLIENT_BUFFER": "64M", "DEMO_EXPECT": expect})
    lp = listen(port, out)
    finish(p)
    check(lp.returncode == 0, "reef listen exit %d: %s" % (lp.returncode, lp.stderr.decode()))
    rc, text, err = bt2(out)
    check(rc == 0 and err == "", "babeltrace2: exit %d, stderr: %s" % (rc, err[-800:]))
    with open(expect) as f:
        want = sorted(f.read().splitlines())
    got = sorted(re.match(r"^\[[^\]]*\] \([^)]*\) \S+ (\S+) \{ tid", l).group(1) + " " + l.split("}, ", 1)[1]
                 for l in text.splitlines())
    check(len(got) == len(want), "babeltrace2 read %d events, the program recorded %d" % (len(got), len(want)))
    check(got == want, "events differ from what the program recorded")
    rp = subprocess.run([ARGS.reef, "print", out], capture_output=True, env=env_with({}))
    check(rp.returncode == 0 and rp.stdout.decode() == text, "reef print differs from babeltrace2 on the received trace")
    return "%d events" % len(want)


def discard_mode_counts_match_what_is_missing():
    out = work("discard-trace")
    p, port = start_traced([ARGS.live, "burst", "2", "1000000"], {"REEF_CLIENT_BUFFER": "256M"})
    shown_file = work("discard.print")
    with open(shown_file, "wb") as so:
        lp = subprocess.run([ARGS.reef, "listen", "127.0.0.1:%d" % port, "-o", out, "--print",
                             "--color=never"], stdout=so, stderr=subprocess.PIPE, timeout=60,
                            env=env_with({}))
    pout, _ = finish(p)
    check(lp.returncode == 0, "reef listen exit %d: %s" % (lp.returncode, lp.stderr.decode()))
    attempted = int(re.search(r"attempted (\d+)", pout).group(1))
    rc, text, err = bt2(out)
    check(rc == 0, "babeltrace2 exit %d: %s" % (rc, err[-800:]))
    events = len(text.splitlines())
    dev, dpk = discards(err)
    check(dpk == 0, "packets were dropped for a client with a 256 MiB queue: %d" % dpk)
    check(events + dev == attempted,
          "received %d + reported discarded %d != recorded %d" % (events, dev, attempted))
    # What --print showed and warned as the packets arrived agrees with
    # babeltrace2 on the whole received trace.
    with open(shown_file) as f:
        shown = sum(1 for _ in f)
    check(shown == events, "--print showed %d events, babeltrace2 read %d" % (shown, events))
    check(discards(lp.stderr.decode()) == (dev, dpk),
          "--print warned of %s discarded events/packets, babeltrace2 %s" % (discards(lp.stderr.decode()), (dev, dpk)))
    return "%d events received, %d reported discarded, %d recorded" % (events, dev, attempted)


def auto_flush_parts_keep_every_event_in_order():
    """Many parts per packet (1 ms auto-flush, events every 20 us on 3
    threads): nothing lost or reordered, no warning, time never goes back."""
    out = work("parts-trace")
    p, port = start_traced([ARGS.live, "paced", "3", "40000", "20"], {
        "REEF_MODE": "block", "REEF_FLUSH_MS": "1", "REEF_CLIENT_BUFFER": "256M"})
    shown_file = work("parts.print")
    with open(shown_file, "wb") as so:
        lp = subprocess.Popen([ARGS.reef, "listen", "127.0.0.1:%d" % port, "-o", out, "--print",
                               "--color=never"], stdout=so, stderr=subprocess.PIPE,
                              env=env_with({}))
        pout, _ = finish(p)
        _, live_err = lp.communicate(timeout=60)
    with open(shown_file, "rb") as f:
        live_out = f.read()
    check(lp.returncode == 0, "reef listen exit %d: %s" % (lp.returncode, live_err.decode()[-800:]))
    attempted = int(re.search(r"attempted (\d+)", pout).group(1))
    rc, text, err = bt2(out)
    check(rc == 0 and err == "", "babeltrace2: exit %d, stderr: %s" % (rc, err[-800:]))
    lines = text.splitlines()
    check(len(lines) == attempted, "babeltrace2 read %d events, the program recorded %d" % (len(lines), attempted))
    nxt = {}
    for l in lines:
        m = re.search(r"worker:ITEM: .*\{ id = (\d+), item = (\d+),", l)
        if m:
            i, item = int(m.group(1)), int(m.group(2))
            check(item == nxt.get(i, 0), "thread %d: item %d after %d" % (i, item, nxt.get(i, 0) - 1))
            nxt[i] = item + 1
    npackets = count_packets(os.path.join(out, "stream_1"))
    # What --print showed as the events arrived is the same set of events.
    shown = [l for l in live_out.decode().splitlines() if "worker:ITEM" in l or "data:TICK" in l]
    check(len(shown) == attempted, "--print showed %d events of %d" % (len(shown), attempted))
    return "%d events, %d packets in stream_1" % (attempted, npackets)


def lagging_client_drops_are_reported():
    p, port = start_traced([ARGS.live, "burst", "1", "2000000"], {"REEF_CLIENT_BUFFER": "64K"})
    data = raw_client(port, read_delay=0.005)
    pout, _ = finish(p)
    attempted = int(re.search(r"attempted (\d+)", pout).group(1))
    recs = records(data)
    check(recs and recs[0][0] == 1, "the capture does not start with metadata")
    check(recs[-1][0] == 3, "the capture does not end with an end record")
    pkts = [r for r in recs if r[0] == 2]
    gaps, last = 0, {}
    for _, stream, payload in pkts:
        seq = packet_fields(payload)[0]
        if stream in last:
            gaps += seq - last[stream] - 1
        last[stream] = seq
    d = work("lagging-trace")
    unpack(data, d)
    rc, text, err = bt2(d)
    check(rc == 0, "babeltrace2 exit %d on the unpacked capture: %s" % (rc, err[-800:]))
    events = len(text.splitlines())
    dev, dpk = discards(err)
    check(dpk == gaps, "babeltrace2 reports %d discarded packets, the seq numbers have %d gaps" % (dpk, gaps))
    missing = attempted - events - dev
    # worker:ITEM is 39 bytes; a 64 KiB packet holds at most this many.
    per_packet = (65536 - 100) // 39
    check(missing >= 0, "more events than recorded")
    check((missing > 0) == (dpk > 0), "%d events missing but %d packets reported dropped" % (missing, dpk))
    check(missing <= dpk * per_packet, "%d events missing, more than %d dropped packets hold" % (missing, dpk))
    check(dpk > 0, "the lagging client lost nothing: the test did not exercise dropping")
    # reef print reads the raw capture the same way.
    capf = work("lagging.capture")
    with open(capf, "wb") as f:
        f.write(data)
    rp = subprocess.run([ARGS.reef, "print", capf], capture_output=True, env=env_with({}))
    check(rp.returncode == 0, "reef print CAPTURE exit %d: %s" % (rp.returncode, rp.stderr.decode()[-500:]))
    check(rp.stdout.decode() == text, "reef print CAPTURE differs from babeltrace2 on the unpacked capture")
    rdev, rdpk = discards(rp.stderr.decode())
    check((rdev, rdpk) == (dev, dpk), "reef print reports %s discarded, babeltrace2 %s" % ((rdev, rdpk), (dev, dpk)))
    return "%d packets dropped for the client, %d events missing, %d received" % (dpk, missing, events)


def threads_cpu(pid):
    """CPU seconds (user + system) of each thread of `pid`, by name."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                st = f.read()
            name = st[st.index("(") + 1:st.rindex(")")]
            fields = st[st.rindex(")") + 2:].split()
            out[name] = out.get(name, 0) + (int(fields[11]) + int(fields[12])) / hz
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def a_client_that_never_reads_costs_little_cpu():
    # A tight loop of events with a client that connects and never reads:
    # the consumer and the network thread have nothing useful to do, and
    # must not spend CPU (nor make the traced thread wake them) doing it.
    p, port = start_traced([ARGS.live, "rate", "100000000"], {"REEF_LINGER_MS": "100"})
    s = socket.create_connection(("127.0.0.1", port))
    first, last = {}, {}
    while p.poll() is None:
        now = time.monotonic()
        for name, cpu in threads_cpu(p.pid).items():
            first.setdefault(name, (cpu, now))
            last[name] = (cpu, now)
        time.sleep(0.02)
    out, _ = finish(p)
    s.close()
    span = last.get("live", (0, 0))[1] - first.get("live", (0, 0))[1]
    check(span >= 0.3, "the run was too short to measure (%.2f s)" % span)
    helpers = {n: (last[n][0] - first[n][0]) / span for n in ("reef-consumer", "reef-net") if n in last}
    check("reef-consumer" in helpers, "no consumer thread seen: %s" % sorted(last))
    total = sum(helpers.values())
    check(total <= 0.05, "consumer and network thread used %.3f CPU-seconds per second %s" % (total, helpers))
    rate = re.search(r"events (\d+) ns (\d+)", out)
    return "consumer %.3f, network %.3f CPU-s/s over %.1f s; %.1f M events/s" % (
        helpers.get("reef-consumer", 0), helpers.get("reef-net", 0), span,
        int(rate.group(1)) / int(rate.group(2)) * 1e3)


def print_shows_events_quickly():
    p, port = start_traced([ARGS.live, "ticks", "8", "330"], {"REEF_FLUSH_MS": "100"})
    lp = subprocess.Popen([ARGS.reef, "listen", "127.0.0.1:%d" % port, "--print", "--color=never"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with({}))
    recorded, shown = {}, {}
    bufs = {p.stdout: b"", lp.stdout: b""}
    deadline = time.monotonic() + 30
    open_ = [p.stdout, lp.stdout]
    while open_ and time.monotonic() < deadline:
        r, _, _ = select.select(open_, [], [], 0.5)
        now = time.time_ns()
        for f in r:
            c = os.read(f.fileno(), 65536)
            if not c:
                open_.remove(f)
                continue
            bufs[f] += c
            *lines, bufs[f] = bufs[f].split(b"\n")
            for l in lines:
                l = l.decode()
                m = re.match(r"tick (\d+) (\d+)", l)
                if f is p.stdout and m:
                    recorded[int(m.group(1))] = int(m.group(2))
                m = re.search(r"app:STOP: .*total = (\d+)", l)
                if f is lp.stdout and m:
                    shown[int(m.group(1))] = now
    finish(p)
    lp.wait(timeout=10)
    check(lp.returncode == 0, "reef listen exit %d: %s" % (lp.returncode, lp.stderr.read().decode()))
    check(sorted(shown) == list(range(8)), "reef listen --print showed ticks %s" % sorted(shown))
    lat = sorted((shown[i] - recorded[i]) / 1e6 for i in range(8))
    # The acceptance bound is 250 ms at a 100 ms auto-flush; the margin
    # is for loaded CI machines: the median must meet it, every one 1 s.
    check(lat[len(lat) // 2] < 250, "median latency %.1f ms" % lat[len(lat) // 2])
    check(lat[-1] < 1000, "max latency %.1f ms" % lat[-1])
    return "latency ms: min %.1f median %.1f max %.1f" % (lat[0], lat[len(lat) // 2], lat[-1])


def hostile_clients_neither_crash_nor_stall():
    out = work("hostile-trace")
    t_start = time.monotonic()
    p, port = start_traced([ARGS.live, "ticks", "20", "50"], {"REEF_LINGER_MS": "500"})
    lp = subprocess.Popen([ARGS.reef, "listen", "127.0.0.1:%d" % port, "-o", out],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with({}))
    time.sleep(0.2)
    socks = []
    # Garbage from clients that never read: one sends less than the 1 MiB
    # the tracer ignores, one more (it is dropped).
    for size in (1 << 19, 4 << 20):
        g = socket.create_connection(("127.0.0.1", port))
        g.setblocking(False)
        data = os.urandom(size)
        try:
            while data:
                data = data[g.send(data):]
        except (BlockingIOError, ConnectionError):
            pass
        socks.append(g)
    # Many clients: more than the tracer serves (16); some vanish at once,
    # some reset the connection.
    for i in range(40):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            continue
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        else:
            socks.append(s)
    pout, _ = finish(p, timeout=30)
    elapsed = time.monotonic() - t_start
    for s in socks:
        s.close()
    lp.wait(timeout=10)
    check(lp.returncode == 0, "reef listen exit %d: %s" % (lp.returncode, lp.stderr.read().decode()))
    rc, text, err = bt2(out)
    check(rc == 0 and err == "", "babeltrace2: exit %d, stderr: %s" % (rc, err[-800:]))
    got = re.findall(r"app:STOP: .*total = (\d+)", text)
    check(got == [str(i) for i in range(20)], "the good client received ticks %s" % got)
    check(elapsed < 10, "the program (1 s of ticks) took %.1f s" % elapsed)
    return "the program (1 s of ticks) took %.1f s" % elapsed


def reconnecting_client_gets_metadata_again():
    p, port = start_traced([ARGS.live, "ticks", "12", "100"], {"REEF_FLUSH_MS": "50"})
    # A first client that leaves after a few records.
    s = socket.create_connection(("127.0.0.1", port))
    first = b""
    while len(records_prefix(first)) < 3:
        b = s.recv(4096)
        check(b, "the first client got no data")
        first += b
    s.close()
    time.sleep(0.3)
    data = raw_client(port)
    finish(p)
    recs = records(data)
    check(recs[0][0] == 1, "the second connection does not start with metadata")
    check(recs[-1][0] == 3, "the second connection does not end with an end record")
    pkts = [r for r in recs if r[0] == 2]
    check(pkts, "the second connection got no packet")
    check(packet_fields(pkts[0][2])[0] == 0, "packet_seq_num does not restart at 0 for a new client")
    d = work("reconnect-trace")
    unpack(data, d)
    rc, text, err = bt2(d)
    check(rc == 0 and err == "", "babeltrace2: exit %d, stderr: %s" % (rc, err[-800:]))
    got = [int(x) for x in re.findall(r"app:STOP: .*total = (\d+)", text)]
    check(got and got == list(range(got[0], 12)) and got[0] > 0,
          "the second client got ticks %s" % got)
    return "second client: ticks %d..11" % got[0]


def listen_reports_bad_input():
    """A server that sends a valid metadata record, then garbage or a
    truncated record: reef listen keeps what it got, names the address and
    offset, exits 1, never panics."""
    import threading
    with open(os.path.join(os.path.dirname(ARGS.demo), "gen", "demo.tsdl"), "rb") as f:
        tsdl = f.read()
    meta = struct.pack("<IIQQ", MAGIC, 1, 0, len(tsdl)) + tsdl
    cases = [
        (meta + b"garbage!" * 8, "bad record magic"),
        (meta + struct.pack("<IIQQ", MAGIC, 2, 0, 1 << 62), "more than the"),
        (meta + struct.pack("<IIQQ", MAGIC, 2, 0, 5000) + b"x" * 100, "input ends inside a Packet record"),
        (b"\x00" * 24, "bad record magic"),
    ]
    for i, (payload, want) in enumerate(cases):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]

        def serve():
            c, _ = srv.accept()
            c.sendall(payload)
            c.close()
        th = threading.Thread(target=serve)
        th.start()
        out = work("bad-%d" % i)
        lp = listen(port, out, timeout=30)
        th.join()
        srv.close()
        err = lp.stderr.decode()
        check(lp.returncode == 1, "case %d: exit %d: %s" % (i, lp.returncode, err))
        check(want in err and "127.0.0.1:%d: at byte " % port in err and "panicked" not in err,
              "case %d: message: %s" % (i, err))
        if i < 3:
            check(os.path.exists(os.path.join(out, "metadata")), "case %d: the metadata received was not kept" % i)
    return "%d cases" % len(cases)


def listen_print_names_the_bad_packet():
    """A packet that does not decode, received live: reef listen --print
    prints what came before, then fails naming the stream file it wrote
    and the bad event's offset in it, as `reef print` of that directory
    does."""
    import threading
    p, port = start_traced([ARGS.live, "ticks", "6", "150"], {"REEF_FLUSH_MS": "100"})
    data = raw_client(port)
    finish(p)
    recs = records(data)
    pkts = [i for i, r in enumerate(recs) if r[0] == 2 and len(r[2]) > 100]
    check(len(pkts) >= 3, "too few packets in the capture")
    bad = pkts[2]
    kind, stream, payload = recs[bad]
    # Unknown event id in the packet's first event header (tracer/src/internal.h:
    # events start after the 100-byte packet header; u16 id first).
    payload = payload[:100] + b"\xee\xee" + payload[102:]
    offset = sum(len(r[2]) for r in recs[:bad] if r[0] == 2 and r[1] == stream)
    blob = b"".join(struct.pack("<IIQQ", MAGIC, k, s_, len(pl)) + pl
                    for k, s_, pl in recs[:bad] + [(kind, stream, payload)] + recs[bad + 1:])
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve():
        c, _ = srv.accept()
        c.sendall(blob)
        c.close()
    th = threading.Thread(target=serve)
    th.start()
    out = work("badpkt-trace")
    lp = subprocess.run([ARGS.reef, "listen", "127.0.0.1:%d" % srv.getsockname()[1], "-o", out, "--print",
                         "--color=never"], capture_output=True, timeout=30, env=env_with({}))
    th.join()
    srv.close()
    err = lp.stderr.decode()
    check(lp.returncode == 1, "reef listen exit %d: %s" % (lp.returncode, err))
    # The bad event is right after the packet header, at byte offset + 100.
    where = "%s: at byte %d: event id 61166" % (os.path.join(os.path.abspath(out), "stream_%d" % stream),
                                                 offset + 100)
    check(where in err, "expected %r in: %s" % (where, err))
    rp = subprocess.run([ARGS.reef, "print", out], capture_output=True, env=env_with({}))
    check(where in rp.stderr.decode(), "reef print of the written trace: %s" % rp.stderr.decode())
    shown = re.findall(r"app:STOP: .*total = (\d+)", lp.stdout.decode())
    check(shown, "nothing was printed before the bad packet")
    return "%s; %d events printed before it" % (where.split("/")[-1], len(shown))


def serve_once(blob):
    """A fake peer: sends `blob` to the first client, then closes.
    Returns (port, thread)."""
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve():
        try:
            c, _ = srv.accept()
            c.sendall(blob)
            c.close()
        finally:
            srv.close()
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    return srv.getsockname()[1], th


def frame(recs):
    return b"".join(struct.pack("<IIQQ", MAGIC, k, s_, len(pl)) + pl for k, s_, pl in recs)


def listen_refuses_records_it_cannot_use():
    """A peer whose final metadata record is random bytes or empty, or that
    sends a random packet record or one shorter than the packet it
    declares: reef listen -o leaves that record out (named, with the
    address and its offset), keeps everything else and exits 1. The
    directory it writes reads in babeltrace2 exactly as this script's own
    unpacking of the capture without the bad record."""
    import random
    p, port = start_traced([ARGS.live, "ticks", "6", "150"], {"REEF_FLUSH_MS": "100"})
    data = raw_client(port)
    finish(p)
    recs = records(data)
    metas = [i for i, r in enumerate(recs) if r[0] == 1]
    pkts = [i for i, r in enumerate(recs) if r[0] == 2 and len(r[2]) > 100]
    check(len(metas) >= 2 and len(pkts) >= 3, "the capture has %d metadata and %d packet records" % (len(metas), len(pkts)))
    rnd = random.Random(6)
    last_meta = metas[-1]
    mid = pkts[len(pkts) // 2]
    k, st, pl = recs[mid]
    cases = [
        ("final metadata of random bytes", last_meta, (1, 0, bytes(rnd.randrange(256) for _ in range(700)))),
        ("empty final metadata", last_meta, (1, 0, b"")),
        ("random packet record", mid, (2, st, bytes(rnd.randrange(256) for _ in range(len(pl))))),
        ("packet record shorter than its packet", mid, (2, st, pl[:len(pl) - 100])),
    ]
    res = []
    for n, (what, at, bad) in enumerate(cases):
        sent = recs[:at] + [bad] + recs[at + 1:]
        port, th = serve_once(frame(sent))
        out = work("refuse-%d" % n)
        lp = listen(port, out, timeout=30)
        th.join(5)
        err = lp.stderr.decode()
        check(lp.returncode == 1, "%s: reef listen exit %d: %s" % (what, lp.returncode, err[-800:]))
        offset = len(frame(sent[:at]))
        check("127.0.0.1:%d: at byte %d: " % (port, offset) in err and "left out" in err and "panicked" not in err,
              "%s: the record is not named: %s" % (what, err[-800:]))
        ref = work("refuse-%d-ref" % n)
        unpack(frame(recs[:at] + recs[at + 1:]), ref)
        rc, want, werr = bt2(ref)
        check(rc == 0, "%s: babeltrace2 on the reference: %s" % (what, werr[-500:]))
        rc, got, gerr = bt2(out)
        check(rc == 0 and "ERROR" not in gerr, "%s: babeltrace2 on the output: exit %d %s" % (what, rc, gerr[-800:]))
        check(got == want, "%s: the output reads %d lines, the capture without the bad record %d"
              % (what, len(got.splitlines()), len(want.splitlines())))
        res.append("%s: %d events kept" % (what, len(got.splitlines())))
    return "; ".join(res)


def view_live_keeps_what_it_received():
    """reef view --live on a peer whose metadata does not parse: it fails
    (exit 1), and the temporary directory with what was received is kept
    and named, not deleted."""
    p, port = start_traced([ARGS.live, "ticks", "3", "50"], {"REEF_FLUSH_MS": "100"})
    data = raw_client(port)
    finish(p)
    recs = [(1, 0, b"\x07" * 300) if r[0] == 1 else r for r in records(data)]
    port, th = serve_once(frame(recs))
    vp = subprocess.run([ARGS.reef, "view", "--live", "127.0.0.1:%d" % port, "--port", "0"],
                        capture_output=True, timeout=60, env=env_with({}))
    th.join(5)
    err = vp.stderr.decode()
    check(vp.returncode == 1, "reef view exit %d: %s" % (vp.returncode, err[-800:]))
    m = re.search(r"what was received is kept in (\S+)", err)
    check(m, "reef view does not say where what it received is: %s" % err[-800:])
    d = m.group(1)
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    check(any(f.startswith("stream_") for f in files), "%s holds %s" % (d, files))
    shutil.rmtree(d, ignore_errors=True)
    return "kept in %s: %d stream files" % (d, len([f for f in files if f.startswith("stream_")]))


def config_struct_enables_listening():
    """`struct reef_config`'s live fields, with no REEF_* variable set."""
    env = env_with({"REEF_OUTPUT": work("config-unused")})
    p = subprocess.Popen([ARGS.live, "config-ticks", "5", "100"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    line = p.stderr.readline().decode()
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
    check(m, "no listening line: %r" % line)
    data = raw_client(int(m.group(1)))
    finish(p)
    recs = records(data)
    check(recs[0][0] == 1 and recs[-1][0] == 3, "capture does not start with metadata and end with the end record")
    d = work("config-trace")
    unpack(data, d)
    rc, text, err = bt2(d)
    check(rc == 0 and err == "", "babeltrace2: exit %d, stderr: %s" % (rc, err[-800:]))
    got = re.findall(r"app:STOP: .*total = (\d+)", text)
    check(got == [str(i) for i in range(5)], "received ticks %s" % got)
    return "%d records" % len(recs)


def directory_sink_with_a_client():
    """With a client connected from the start, the trace directory gets no
    packet (the default) or every packet (REEF_LIVE_SINK=both)."""
    res = []
    for sink in ("network", "both"):
        tdir = work("sink-%s" % sink)
        p, port = start_traced([ARGS.live, "ticks", "5", "20"], {"REEF_OUTPUT": tdir, "REEF_LIVE_SINK": sink})
        data = raw_client(port)
        finish(p)
        d = work("sink-%s-received" % sink)
        unpack(data, d)
        rc, text, err = bt2(d)
        check(rc == 0 and err == "" and len(re.findall("app:STOP", text)) == 5,
              "%s: the client did not get the 5 ticks: %s" % (sink, err[-500:]))
        streams = [f for f in os.listdir(tdir) if f.startswith("stream_") and os.path.getsize(os.path.join(tdir, f))]
        if sink == "network":
            check(streams == [], "network sink: the directory got packets too: %s" % streams)
        else:
            rc, text, err = bt2(tdir)
            check(rc == 0 and err == "" and len(re.findall("app:STOP", text)) == 5,
                  "both: the directory does not hold the 5 ticks: %s" % err[-500:])
        res.append("%s: %d stream files" % (sink, len(streams)))
    return ", ".join(res)


def complete_length(data):
    """Bytes of the complete records at the start of `data`."""
    off = 0
    while off + 24 <= len(data):
        size = struct.unpack_from("<Q", data, off + 16)[0]
        if off + 24 + size > len(data):
            break
        off += 24 + size
    return off


def cut_capture_keeps_what_came_before():
    """A capture cut off inside a record (nc stopped, disk full): reef print
    and reef check read every complete record before the cut, exactly as
    babeltrace2 reads them unpacked by this script, then name the file and
    the offset of the cut and exit 1."""
    p, port = start_traced([ARGS.demo, "4", "3000"], {"REEF_MODE": "block", "REEF_CLIENT_BUFFER": "64M"})
    data = raw_client(port)
    finish(p)
    bounds, off = [], 0
    while off < len(data):
        bounds.append(off)
        off += 24 + struct.unpack_from("<Q", data, off + 16)[0]
    check(off == len(data) and len(bounds) > 6, "the capture is not whole: %d records" % len(bounds))
    mid = bounds[len(bounds) // 2]
    kinds = [struct.unpack_from("<I", data, b + 4)[0] for b in bounds]
    last_packet = max(b for b, k in zip(bounds, kinds) if k == 2)
    last_meta = max(b for b, k in zip(bounds, kinds) if k == 1)
    check(last_meta > last_packet, "no metadata record after the last packet")
    cuts = [
        ("inside a packet", mid + 24 + 1000),
        ("inside a record header", mid + 10),
        ("inside the last packet", last_packet + 100),
        ("inside the final metadata record", last_meta + 100),
        ("inside the first metadata record", 100),
    ]
    res = []
    for what, n in cuts:
        capf = work("cut-%d.capture" % n)
        with open(capf, "wb") as f:
            f.write(data[:n])
        whole = complete_length(data[:n])
        rp = subprocess.run([ARGS.reef, "print", capf], capture_output=True, env=env_with({}))
        err = rp.stderr.decode()
        check(rp.returncode == 1, "%s: reef print exit %d: %s" % (what, rp.returncode, err[-500:]))
        check("%s: at byte %d: input ends inside" % (capf, whole) in err,
              "%s: reef print does not name the file and offset %d: %s" % (what, whole, err[-500:]))
        check("panicked" not in err, "%s: reef print panicked" % what)
        if whole == 0 or not any(k == 2 for k, _, _ in records(data[:whole])):
            check(rp.stdout == b"", "%s: reef print printed events from no packet" % what)
            res.append("%s: error, no output" % what)
            continue
        d = work("cut-%d-trace" % n)
        unpack(data[:whole], d)
        rc, text, berr = bt2(d)
        check(rc == 0 and berr == "", "%s: babeltrace2 on the complete records: exit %d %s" % (what, rc, berr[-500:]))
        check(rp.stdout.decode() == text, "%s: reef print differs from babeltrace2 on the complete records" % what)
        rc2 = subprocess.run([ARGS.reef, "check", capf], capture_output=True, env=env_with({}))
        out2 = rc2.stdout.decode()
        check(rc2.returncode == 1 and "events: %d\n" % len(text.splitlines()) in out2,
              "%s: reef check exit %d, %r" % (what, rc2.returncode, out2[-300:]))
        res.append("%s: %d events" % (what, len(text.splitlines())))
    # A capture that ends on a record boundary (no end record) is whole.
    capf = work("cut-boundary.capture")
    with open(capf, "wb") as f:
        f.write(data[:mid])
    rp = subprocess.run([ARGS.reef, "print", capf], capture_output=True, env=env_with({}))
    check(rp.returncode == 0, "a capture ending on a record boundary: exit %d" % rp.returncode)
    return "; ".join(res)


def records_prefix(data):
    out, off = [], 0
    while off + 24 <= len(data):
        magic, kind, stream, size = struct.unpack_from("<IIQQ", data, off)
        if off + 24 + size > len(data):
            break
        out.append(kind)
        off += 24 + size
    return out


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--reef", required=True)
    ap.add_argument("--demo", required=True)
    ap.add_argument("--live", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("only", nargs="*")
    ARGS = ap.parse_args()
    for t in [block_mode_listener_gets_every_event, discard_mode_counts_match_what_is_missing,
              auto_flush_parts_keep_every_event_in_order,
              lagging_client_drops_are_reported, a_client_that_never_reads_costs_little_cpu,
              print_shows_events_quickly,
              hostile_clients_neither_crash_nor_stall, reconnecting_client_gets_metadata_again,
              listen_reports_bad_input, listen_print_names_the_bad_packet,
              listen_refuses_records_it_cannot_use, view_live_keeps_what_it_received,
              config_struct_enables_listening, directory_sink_with_a_client,
              cut_capture_keeps_what_came_before]:
        test(t)
    if not RAN:
        print("live tests: no test matches %s" % " ".join(ARGS.only))
        sys.exit(1)
    if FAILURES:
        print("live tests: %d failed: %s" % (len(FAILURES), ", ".join(FAILURES)))
        sys.exit(1)
    print("live tests: all passed")


if __name__ == "__main__":
    main()
