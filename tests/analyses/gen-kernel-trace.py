#!/usr/bin/env python3
"""Writes a synthetic LTTng-kernel-like CTF 1.8 trace for benchmarks:
N events over 4 CPUs (one stream file each) with the event names and
fields of lttng-modules (sched_switch, sched_wakeup, sched_migrate_task,
syscall_entry_*/syscall_exit_* (read, ioctl, and the I/O calls open,
write, close, socket), irq_handler_*, softirq_*, kmem_mm_page_alloc/free,
block_rq_issue/complete, net_dev_xmit, netif_receive_skb,
lttng_statedump_process_state/block_device), env.domain =
"kernel", 64 KiB packets with a cpu_id packet context.

    gen-kernel-trace.py OUT_DIR [EVENTS [SEED [HOSTNAME]]]

The schedule is a deterministic pseudo-random walk: threads run, make
system calls, wake each other, get interrupted, migrate. It is not meant
to be realistic, only to exercise every path of the analyses at scale.
"""
import os
import random
import struct
import sys

out = sys.argv[1]
total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 42
hostname = sys.argv[4] if len(sys.argv) > 4 else "synthetic"
NCPU = 4
PACKET = 64 * 1024
UUID = bytes(range(16))
uuid_str = "00010203-0405-0607-0809-0a0b0c0d0e0f"

metadata = """/* CTF 1.8 */
typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
typealias integer { size = 32; align = 8; signed = true; } := int32_t;
typealias integer { size = 64; align = 8; signed = true; } := int64_t;
typealias integer { size = 8; align = 8; signed = true; encoding = UTF8; } := char_t;

trace {
    major = 1;
    minor = 8;
    uuid = "%s";
    byte_order = le;
    packet.header := struct {
        uint32_t magic;
        uint8_t uuid[16];
        uint32_t stream_id;
    };
};

env {
    hostname = "%s";
    domain = "kernel";
    tracer_name = "lttng-modules";
    tracer_major = 2;
    tracer_minor = 12;
    tracer_patchlevel = 0;
};

clock {
    name = "monotonic";
    uuid = "%s";
    freq = 1000000000;
    offset = 1500000000000000000;
};

typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := clock_t;

stream {
    id = 0;
    event.header := struct {
        uint32_t id;
        clock_t timestamp;
    };
    packet.context := struct {
        clock_t timestamp_begin;
        clock_t timestamp_end;
        uint64_t content_size;
        uint64_t packet_size;
        uint64_t events_discarded;
        uint32_t cpu_id;
    };
};
""" % (uuid_str, hostname, uuid_str)

# name, [(type, field)], struct format
EVENTS = [
    ("sched_switch", [("char_t", "_prev_comm[16]"), ("int32_t", "_prev_tid"),
                      ("int32_t", "_prev_prio"), ("int64_t", "_prev_state"),
                      ("char_t", "_next_comm[16]"), ("int32_t", "_next_tid"),
                      ("int32_t", "_next_prio")], "<16siiq16sii"),
    ("sched_wakeup", [("char_t", "_comm[16]"), ("int32_t", "_tid"), ("int32_t", "_prio"),
                      ("int32_t", "_target_cpu")], "<16siii"),
    ("sched_migrate_task", [("char_t", "_comm[16]"), ("int32_t", "_tid"), ("int32_t", "_prio"),
                            ("int32_t", "_orig_cpu"), ("int32_t", "_dest_cpu")], "<16siiii"),
    ("syscall_entry_read", [("uint32_t", "_fd"), ("uint64_t", "_buf"), ("uint64_t", "_count")], "<IQQ"),
    ("syscall_exit_read", [("int64_t", "_ret"), ("uint64_t", "_buf")], "<qQ"),
    ("syscall_entry_ioctl", [("uint32_t", "_fd"), ("uint32_t", "_cmd"), ("uint64_t", "_arg")], "<IIQ"),
    ("syscall_exit_ioctl", [("int64_t", "_ret"), ("uint64_t", "_arg")], "<qQ"),
    ("irq_handler_entry", [("int32_t", "_irq"), ("char_t", "_name[16]")], "<i16s"),
    ("irq_handler_exit", [("int32_t", "_irq"), ("int32_t", "_ret")], "<ii"),
    ("softirq_raise", [("uint32_t", "_vec")], "<I"),
    ("softirq_entry", [("uint32_t", "_vec")], "<I"),
    ("softirq_exit", [("uint32_t", "_vec")], "<I"),
    ("kmem_mm_page_alloc", [("uint64_t", "_page"), ("uint32_t", "_order"), ("uint32_t", "_gfp_flags"),
                            ("int32_t", "_migratetype")], "<QIIi"),
    ("kmem_mm_page_free", [("uint64_t", "_page"), ("uint32_t", "_order")], "<QI"),
    ("lttng_statedump_process_state", [("int32_t", "_tid"), ("int32_t", "_vtid"), ("int32_t", "_pid"),
                                       ("int32_t", "_vpid"), ("int32_t", "_ppid"), ("int32_t", "_vppid"),
                                       ("char_t", "_name[16]"), ("int32_t", "_type"), ("int32_t", "_mode"),
                                       ("int32_t", "_submode"), ("int32_t", "_status"), ("int32_t", "_ns_level"),
                                       ("int32_t", "_prio")], "<iiiiii16siiiiii"),
    ("syscall_entry_open", [("char_t", "_filename[24]"), ("int32_t", "_flags"), ("uint32_t", "_mode")], "<24siI"),
    ("syscall_exit_open", [("int64_t", "_ret")], "<q"),
    ("syscall_entry_write", [("uint32_t", "_fd"), ("uint64_t", "_buf"), ("uint64_t", "_count")], "<IQQ"),
    ("syscall_exit_write", [("int64_t", "_ret")], "<q"),
    ("syscall_entry_close", [("uint32_t", "_fd")], "<I"),
    ("syscall_exit_close", [("int64_t", "_ret")], "<q"),
    ("syscall_entry_socket", [("int32_t", "_family"), ("int32_t", "_type"), ("int32_t", "_protocol")], "<iii"),
    ("syscall_exit_socket", [("int64_t", "_ret")], "<q"),
    ("lttng_statedump_block_device", [("uint32_t", "_dev"), ("char_t", "_diskname[8]")], "<I8s"),
    ("block_rq_issue", [("uint32_t", "_dev"), ("uint64_t", "_sector"), ("uint32_t", "_nr_sector"),
                        ("uint32_t", "_bytes"), ("int32_t", "_tid"), ("uint32_t", "_rwbs"),
                        ("char_t", "_comm[16]")], "<IQIIiI16s"),
    ("block_rq_complete", [("uint32_t", "_dev"), ("uint64_t", "_sector"), ("uint32_t", "_nr_sector"),
                           ("int32_t", "_errors"), ("uint32_t", "_rwbs")], "<IQIiI"),
    ("net_dev_xmit", [("uint64_t", "_skbaddr"), ("uint32_t", "_len"), ("int32_t", "_rc"),
                      ("char_t", "_name[8]")], "<QIi8s"),
    ("netif_receive_skb", [("uint64_t", "_skbaddr"), ("uint32_t", "_len"), ("char_t", "_name[8]")], "<QI8s"),
]
ID = {name: i for i, (name, _, _) in enumerate(EVENTS)}
FMT = [struct.Struct(f) for (_, _, f) in EVENTS]
for i, (name, fields, _) in enumerate(EVENTS):
    body = "\n".join("        %s %s;" % f for f in fields)
    metadata += '\nevent {\n    name = "%s";\n    id = %d;\n    stream_id = 0;\n    fields := struct {\n%s\n    };\n};\n' % (name, i, body)

os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "metadata"), "w") as f:
    f.write(metadata)

HDR = struct.Struct("<IQ")
PKT_HDR = struct.Struct("<I16sI")
PKT_CTX = struct.Struct("<QQQQQI")
HEAD = PKT_HDR.size + PKT_CTX.size


class Stream:
    def __init__(self, cpu):
        self.cpu = cpu
        self.f = open(os.path.join(out, "channel0_%d" % cpu), "wb")
        self.events = []
        self.size = HEAD
        self.first = None
        self.last = 0

    def emit(self, ts, eid, payload):
        rec = HDR.pack(eid, ts) + payload
        if self.size + len(rec) > PACKET:
            self.flush()
        if self.first is None:
            self.first = ts
        self.last = ts
        self.events.append(rec)
        self.size += len(rec)

    def flush(self):
        if not self.events:
            return
        body = b"".join(self.events)
        ctx = PKT_CTX.pack(self.first, self.last, (HEAD + len(body)) * 8, PACKET * 8, 0, self.cpu)
        pkt = PKT_HDR.pack(0xC1FC1FC1, UUID, 0) + ctx + body
        self.f.write(pkt + b"\0" * (PACKET - len(pkt)))
        self.events = []
        self.size = HEAD
        self.first = None

    def close(self):
        self.flush()
        self.f.close()


rng = random.Random(seed)
streams = [Stream(c) for c in range(NCPU)]
NTHREADS = 200
names = {t: ("worker-%d" % t).encode() for t in range(1000, 1000 + NTHREADS)}
names[0] = b"swapper"
prio = {t: 20 for t in names}
running = [0] * NCPU
in_syscall = {}
fds = {}  # thread: its open descriptors (each thread is a process)
pending = []  # block requests issued, not completed
sector = 1000
ts = 10_000_000_000
count = 0


def emit(cpu, name, *args):
    global count, ts
    ts += rng.randint(50, 3000)
    streams[cpu].emit(ts, ID[name], FMT[ID[name]].pack(*args))
    count += 1


for t in sorted(names):
    if t:
        emit(0, "lttng_statedump_process_state", t, t, t, t, 1, 1, names[t], 0, 0, 0, 1, 0, prio[t])
for dev, disk in ((8388608, b"sda"), (8388624, b"sdb")):
    emit(0, "lttng_statedump_block_device", dev, disk)
threads = [t for t in names if t]
while count < total:
    cpu = rng.randrange(NCPU)
    cur = running[cpu]
    r = rng.random()
    if r < 0.25 or cur == 0:
        # switch to a thread not running elsewhere (or idle)
        nxt = rng.choice(threads) if rng.random() < 0.9 else 0
        if nxt and nxt in running:
            continue
        if nxt and rng.random() < 0.5:
            emit(cpu, "sched_wakeup", names[nxt], nxt, prio[nxt], cpu)
        if nxt and rng.random() < 0.05:
            old = prio[nxt]
            prio[nxt] = 10 if old == 20 else 20
        emit(cpu, "sched_switch", names[cur], cur, prio[cur], 1, names[nxt], nxt, prio[nxt])
        running[cpu] = nxt
    elif r < 0.55:
        if cur in in_syscall:
            call, fd = in_syscall.pop(cur)
            mine = fds.setdefault(cur, [])
            if call in ("read", "ioctl"):
                ret = rng.choice([0, 8, 4096, -11, -4])
                emit(cpu, "syscall_exit_" + call, ret, 0)
            elif call in ("open", "socket"):
                ret = max(mine + [3]) + 1 if rng.random() < 0.9 else -2
                if ret > 0:
                    mine.append(ret)
                emit(cpu, "syscall_exit_" + call, ret)
            elif call == "write":
                emit(cpu, "syscall_exit_write", rng.choice([64, 512, 4096, -32]))
            else:
                if fd in mine:
                    mine.remove(fd)
                emit(cpu, "syscall_exit_close", 0 if fd > 3 else -9)
        else:
            call = rng.choice(["read", "ioctl", "read", "ioctl", "open", "write", "close", "socket"])
            mine = fds.setdefault(cur, [])
            fd = rng.choice(mine) if mine else 3
            in_syscall[cur] = (call, fd)
            if call == "read":
                emit(cpu, "syscall_entry_read", fd if rng.random() < 0.5 else 3, 0, 4096)
            elif call == "ioctl":
                emit(cpu, "syscall_entry_ioctl", 3, 0x5401, 0)
            elif call == "open":
                emit(cpu, "syscall_entry_open", b"/data/file-%d" % rng.randrange(12), 0, 0o644)
            elif call == "socket":
                emit(cpu, "syscall_entry_socket", rng.choice([1, 2]), 1, 0)
            else:
                emit(cpu, "syscall_entry_" + call, fd, *((0, 4096) if call == "write" else ()))
    elif r < 0.65:
        emit(cpu, "irq_handler_entry", 27, b"arch_timer", )
        emit(cpu, "irq_handler_exit", 27, 1)
    elif r < 0.75:
        vec = rng.choice([1, 3, 7, 9])
        emit(cpu, "softirq_raise", vec)
        emit(cpu, "softirq_entry", vec)
        emit(cpu, "softirq_exit", vec)
    elif r < 0.9:
        emit(cpu, "kmem_mm_page_alloc", rng.getrandbits(40), 0, 0xD0, 0)
        if rng.random() < 0.6:
            emit(cpu, "kmem_mm_page_free", rng.getrandbits(40), 0)
    elif r < 0.95:
        t = rng.choice(threads)
        emit(cpu, "sched_migrate_task", names[t], t, prio[t], cpu, (cpu + 1) % NCPU)
    elif r < 0.975:
        # block I/O: issue a request, or complete one issued before
        if pending and rng.random() < 0.5:
            dev, sec, n, rw = pending.pop(rng.randrange(len(pending)))
            emit(cpu, "block_rq_complete", dev, sec, n, 0, rw)
        else:
            dev = rng.choice([8388608, 8388624, 8388640])
            n = rng.choice([8, 64, 256])
            rw = rng.choice([0, 1])
            sector += n
            pending.append((dev, sector, n, rw))
            emit(cpu, "block_rq_issue", dev, sector, n, n * 512, cur, rw, names[cur])
    else:
        name = rng.choice([b"eth0", b"lo"])
        if rng.random() < 0.5:
            emit(cpu, "net_dev_xmit", rng.getrandbits(40), rng.choice([60, 1500]), 0, name)
        else:
            emit(cpu, "netif_receive_skb", rng.getrandbits(40), rng.choice([60, 1500]), name)
for s in streams:
    s.close()
print("%s: %d events, %d streams" % (out, count, NCPU))
