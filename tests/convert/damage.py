#!/usr/bin/env python3
"""`reef convert` on damaged inputs: whatever it writes must read cleanly.

Usage: damage.py REEF WORKDIR TRACE [NAME-FILTER...]

TRACE is an LTTng kernel trace (CTF 1.8, packet context at byte 24:
timestamp_begin, timestamp_end, content_size, packet_size) that
babeltrace2 reads cleanly. Each case damages a copy one way:

- garbage: 64 bytes of 0xff in a packet's events, where babeltrace2 then
  fails (an event id that no class has, or a length past the packet);
- backwards: a packet's timestamp_begin set to the stream's first one
  (its events' times go back);
- cut-metadata: the metadata file cut at two thirds.

For each: `reef convert` exits 1 naming the damage; babeltrace2 reads the
output with exit 0 and no error (within 60 s: it once hung on a copied
cut metadata); `reef print` reads the output with exit 0; every event of
the output is one babeltrace2 prints on the intact trace or on the
damaged one (deltas aside), and the output holds at least the events `reef
print` gives on the damaged input (nothing that decodes is lost).
"""

import os
import re
import shutil
import struct
import subprocess
import sys

REEF, WORK, TRACE = sys.argv[1], sys.argv[2], sys.argv[3]
ONLY = sys.argv[4:]
DELTA = re.compile(rb"^(\[[^\]]*\]) \([^)]*\) ")
fails = 0
checks = 0


def run(cmd, timeout=120):
    e = dict(os.environ, TZ="UTC")
    try:
        p = subprocess.run(cmd, capture_output=True, env=e, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, b"", b"timed out after %d s" % timeout
    return p.returncode, p.stdout, p.stderr


def fail(what, detail=b""):
    global fails
    fails += 1
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", "replace")
    print(f"FAIL: {what}\n{detail[-2000:]}")


def lines(text):
    return [DELTA.sub(rb"\1 ", l) for l in text.splitlines()]


def packets(path):
    """[(offset, content bytes, packet bytes)] of a stream file."""
    d = open(path, "rb").read()
    off, out = 0, []
    while off + 56 <= len(d) and struct.unpack_from("<I", d, off)[0] == 0xC1FC1FC1:
        _, _, cs, ps = struct.unpack_from("<QQQQ", d, off + 24)
        if ps == 0 or off + ps // 8 > len(d):
            break
        out.append((off, cs // 8, ps // 8))
        off += ps // 8
    return out


def stream_with_packets(d, n):
    best = None
    for f in sorted(os.listdir(d)):
        p = os.path.join(d, f)
        if f == "metadata" or not os.path.isfile(p):
            continue
        pk = packets(p)
        if len(pk) >= n and (best is None or len(pk) > len(best[1])):
            best = (p, pk)
    if best is None:
        raise SystemExit(f"damage.py: {d}: no stream file with {n} packets")
    return best


def garbage(d):
    """0xff bytes where they make the packet fail to decode (in a string
    they would be a valid, if odd, value): tried at several places until
    babeltrace2 fails on the copy."""
    p, pk = stream_with_packets(d, 3)
    off, cs, _ = pk[1]
    orig = open(p, "rb").read()
    for k in range(2, 40):
        at = off + 32 + (cs - 96) * k // 41
        with open(p, "wb") as f:
            f.write(orig[:at] + b"\xff" * 64 + orig[at + 64:])
        code, _, _ = run(["babeltrace2", d])
        if code not in (0, None):
            return
    raise SystemExit("damage.py: no place in the packet where 0xff bytes fail babeltrace2")


def backwards(d):
    p, pk = stream_with_packets(d, 3)
    with open(p, "r+b") as f:
        f.seek(pk[0][0] + 24)
        first = f.read(8)
        f.seek(pk[2][0] + 24)
        f.write(first)


def cut_metadata(d):
    m = os.path.join(d, "metadata")
    os.truncate(m, os.path.getsize(m) * 2 // 3)


CASES = [("garbage", garbage), ("backwards", backwards), ("cut-metadata", cut_metadata)]


def main():
    global checks
    os.makedirs(WORK, exist_ok=True)
    code, orig, err = run(["babeltrace2", "--clock-seconds", TRACE])
    if code != 0:
        raise SystemExit(f"damage.py: babeltrace2 cannot read {TRACE}: {err[-500:]!r}")
    known = set(lines(orig))
    for name, damage in CASES:
        if ONLY and not any(o in name for o in ONLY):
            continue
        d = os.path.join(WORK, "damaged-" + name)
        out = d + "-out"
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(TRACE, d)
        for root, _, files in os.walk(d):
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        damage(d)
        checks += 1
        _, before, _ = run([REEF, "print", "--clock-seconds", d])
        # What babeltrace2 reads of the damaged copy (before its error)
        # is the original's or is in the damaged bytes as they decode.
        _, bt_damaged, _ = run(["babeltrace2", "--clock-seconds", d])
        ok_lines = known | set(lines(bt_damaged))
        code, _, cerr = run([REEF, "convert", d, "-o", out])
        if code != 1 or b"reef: error:" not in cerr or b"panicked" in cerr:
            fail(f"{name}: reef convert exit {code}, expected 1 with the damage named", cerr)
            continue
        if not os.path.isfile(os.path.join(out, "metadata")):
            fail(f"{name}: reef convert wrote no trace", cerr)
            continue
        g, got, gerr = run(["babeltrace2", "--clock-seconds", out], timeout=60)
        noise = [l for l in gerr.splitlines() if l.strip() and not l.startswith(b"WARNING: Tracer discarded")]
        if g != 0 or noise:
            fail(f"{name}: babeltrace2 on the output: exit {g}", gerr)
            continue
        r, rgot, rerr = run([REEF, "print", "--clock-seconds", out])
        if r != 0:
            fail(f"{name}: reef print on the output: exit {r}", rerr)
            continue
        gl = lines(got)
        strange = [l for l in gl if l not in ok_lines]
        if strange:
            fail(f"{name}: events of the output are not the original's", b"\n".join(strange[:5]))
            continue
        if len(gl) < len(before.splitlines()):
            fail(f"{name}: the output holds {len(gl)} events, reef print reads {len(before.splitlines())} "
                 "on the damaged input")
            continue
        print(f"ok {name}: exit 1 ({cerr.decode(errors='replace').strip().splitlines()[-1][:160]}); "
              f"{len(gl)} of {len(orig.splitlines())} events written, read cleanly")
    print(f"convert damage: {checks} checks, {fails} failures")
    sys.exit(1 if fails or checks == 0 else 0)


main()
