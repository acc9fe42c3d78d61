"""Robustness of `reef view --live` against what a peer may send: random
bytes, a broken metadata text, a real capture of examples/build/demo
(libreef, REEF_LISTEN) with one packet damaged, the same capture cut off
mid-record; and a plain GET of the WebSocket endpoint. Each time: a clear
error naming the address or the file and offset, no panic, and a server
that keeps answering with what was decoded before the damage.

Usage: python3 live_robust.py REEF_BINARY
One line per check: "ok ..." or "FAIL ..."; exit status 1 when one failed.
"""

import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import REPO, Report, Server, ensure_demo_trace, reef_binary  # noqa: E402

MAGIC = 0x66656572


def record(kind, stream, payload):
    return struct.pack("<IIQQ", MAGIC, kind, stream, len(payload)) + payload


def capture_demo(work):
    """What examples/build/demo sends a client (libreef's own framing),
    read here with a plain socket: (records as (kind, stream, payload))."""
    ensure_demo_trace()
    demo = os.path.join(REPO, "examples", "build", "demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REEF_")}
    env.update({"REEF_LISTEN": "127.0.0.1:0", "REEF_LISTEN_WAIT": "20000",
                "REEF_OUTPUT": os.path.join(work, "unused")})
    p = subprocess.Popen([demo], env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = b""
    while b"listening on" not in line or not line.endswith(b"\n"):
        c = p.stderr.read(1)
        if not c:
            raise RuntimeError("demo did not listen: %r" % line)
        line += c
    port = int(line.rsplit(b":", 1)[1])
    s = socket.create_connection(("127.0.0.1", port))
    data = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        data += b
    s.close()
    p.wait()
    recs, off = [], 0
    while off + 24 <= len(data):
        magic, kind, stream, size = struct.unpack_from("<IIQQ", data, off)
        assert magic == MAGIC, "bad capture"
        recs.append((kind, stream, data[off + 24:off + 24 + size]))
        off += 24 + size
    return recs


class Peer:
    """A one-connection TCP server that sends `data` then closes."""

    def __init__(self, data):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.data = data
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        try:
            c, _ = self.sock.accept()
            c.sendall(self.data)
            time.sleep(0.3)
            c.close()
        finally:
            self.sock.close()


def run_refused(reef, data, out):
    """`reef view --live` on a peer sending `data`: (status, stderr)."""
    peer = Peer(data)
    p = subprocess.run([reef, "view", "--port", "0", "--live", "127.0.0.1:%d" % peer.port, "-o", out],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stderr


def wait_for(srv, pred, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        r = srv.api("info")
        if r.status == 200:
            last = r.json
            if pred(last):
                return last
        time.sleep(0.1)
    return last


def main():
    reef = reef_binary()
    rep = Report("live robust: ")
    rnd = random.Random(int(os.environ.get("REEF_VIEW_SEED", "1")))
    work = tempfile.mkdtemp(prefix="reef-live-robust.")
    try:
        # Random bytes: refused at start, naming the address and what was wrong.
        st, err = run_refused(reef, bytes(rnd.randrange(256) for _ in range(4096)), os.path.join(work, "a"))
        rep.check("random bytes: refused with a clear error", [] if st != 0 and "127.0.0.1:" in err
                  and "no metadata" in err and "panicked" not in err else ["status %d, stderr %r" % (st, err[-600:])],
                  err.strip().splitlines()[-1] if err.strip() else "")
        # A metadata record that is not TSDL.
        st, err = run_refused(reef, record(1, 0, b"trace { this is not TSDL"), os.path.join(work, "b"))
        rep.check("broken metadata: refused, naming the metadata file", [] if st != 0 and "metadata" in err
                  and "panicked" not in err else ["status %d, stderr %r" % (st, err[-600:])],
                  err.strip().splitlines()[-1] if err.strip() else "")

        recs = capture_demo(work)
        packets = [i for i, r in enumerate(recs) if r[0] == 2]
        rep.check("the demo's capture has metadata and packets", [] if recs[0][0] == 1 and len(packets) >= 3
                  else ["records: %r" % [(k, s, len(p)) for k, s, p in recs][:10]])

        # One packet damaged in the middle: the index stops there with an
        # error naming the stream file and offset; what came before stays.
        bad = list(recs)
        i = packets[len(packets) // 2]
        k, s, p = bad[i]
        bad[i] = (k, s, p[:40] + bytes([0xff]) * 64 + p[104:])
        data = b"".join(record(k, s, p) for k, s, p in bad if k != 3)
        peer = Peer(data)
        out = os.path.join(work, "damaged")
        srv = Server(reef, None, args=("--live", "127.0.0.1:%d" % peer.port, "-o", out))
        try:
            info = wait_for(srv, lambda j: j.get("state") == "error" or j.get("live", {}).get("state") == "dropped")
            info = wait_for(srv, lambda j: j.get("state") == "error", timeout=10) or info
            probs = []
            if info and info.get("state") != "error":
                # The receiving side refuses a packet that does not decode
                # against the metadata (reef listen's checks): it is left
                # out of the directory, what came before and after is kept.
                sent = len(packets)
                got = info.get("live", {}).get("packets", 0)
                if not (0 < got < sent):
                    probs.append("damaged packet not left out: %d of %d packets received" % (got, sent))
                if info.get("events", 0) <= 0:
                    probs.append("nothing kept around the damage")
            elif not info:
                probs.append("no answer")
            else:
                e = info.get("error") or ""
                if "stream_" not in e or out not in e:
                    probs.append("error names no stream file of %s: %r" % (out, e))
                if info.get("events", 0) <= 0:
                    probs.append("nothing kept from before the damage")
            rep.check("damaged packet: left out on receipt, or an error naming the file and offset; other events kept", probs,
                      "%s events; %s" % ((info or {}).get("events"), ((info or {}).get("error") or "")[:160]))
            r = srv.api("window", **{"from": 0, "to": max(1, (info or {}).get("end", 0) + 1), "width": 100})
            rep.check("the server still answers windows after the damage", [] if r.status == 200 else ["%d %r" % (r.status, r.body[:200])])
            # A plain GET of the WebSocket endpoint.
            r = srv.get("/api/live")
            rep.check("GET /api/live without an upgrade: a client error", [] if 400 <= r.status < 500
                      else ["status %d" % r.status], "status %d" % r.status)
            info = wait_for(srv, lambda j: j.get("live", {}).get("state") == "dropped", timeout=10)
            rep.check("the peer gone: shown as dropped, reconnecting", [] if info and info["live"]["state"] == "dropped"
                      else ["live: %r" % (info or {}).get("live")])
        finally:
            status = srv.stop()
            err = srv.stderr()
            rep.check("damaged packet: server exits cleanly, no panic", [] if status in (0, -15, 143) and "panicked" not in err
                      else ["status %r, stderr %r" % (status, err[-800:])])

        # Cut off in the middle of a record, no end record: everything
        # before the cut is indexed, the cut is reported as the drop's reason.
        whole = b"".join(record(k, s, p) for k, s, p in recs if k != 3)
        cut = whole[:len(whole) * 2 // 3]
        peer = Peer(cut)
        out = os.path.join(work, "cut")
        srv = Server(reef, None, args=("--live", "127.0.0.1:%d" % peer.port, "-o", out))
        try:
            info = wait_for(srv, lambda j: j.get("live", {}).get("state") == "dropped" and
                            j["live"].get("indexed_to") is not None and j["live"]["indexed_to"] >= j["live"].get("received_to", 0))
            probs = []
            if not info or info["live"]["state"] != "dropped":
                probs.append("live: %r" % (info or {}).get("live"))
            else:
                msg = info["live"].get("message") or ""
                if "at byte" not in msg and "closed" not in msg:
                    probs.append("message: %r" % msg)
                # babeltrace2 reads what was written: the same events.
                bt = subprocess.run(["babeltrace2", out], capture_output=True, text=True)
                n = len([l for l in bt.stdout.splitlines() if l])
                if bt.returncode != 0 or n != info["events"]:
                    probs.append("babeltrace2 %s: status %d, %d events; page %d" % (out, bt.returncode, n, info["events"]))
            rep.check("capture cut mid-record: every whole packet kept and indexed (= babeltrace2 on -o), the drop shown", probs,
                      "%s events; %s" % ((info or {}).get("events"), ((info or {}).get("live") or {}).get("message")))
            # The live index (epoch 0: no final index after a drop): its list
            # is babeltrace2's text, line for line, from its checkpoints.
            probs = []
            bt = [l for l in subprocess.run(["babeltrace2", out], capture_output=True, text=True,
                                            env=dict(os.environ, TZ="UTC")).stdout.splitlines() if l]
            got = []
            while info and len(got) < len(bt):
                r = srv.api("events", **{"from": 0, "count": 1000, "skip": len(got)})
                if r.status != 200 or not r.json["events"]:
                    probs.append("events from %d: %d %r" % (len(got), r.status, r.body[:200]))
                    break
                got += [e["line"] for e in r.json["events"]]
            diff = [i for i, (a, b) in enumerate(zip(got, bt)) if a != b]
            if len(got) != len(bt) or diff:
                probs.append("%d lines, babeltrace2 %d; first difference at %s: %r / %r" % (
                    len(got), len(bt), diff[:1], got[diff[0]] if diff else None, bt[diff[0]] if diff else None))
            r = srv.api("window", **{"from": 0, "to": info["end"] + 1, "width": 1}) if info else None
            total = sum(b[1] for row in r.json["rows"] for b in row["b"]) if r and r.status == 200 else -1
            if total != len(bt):
                probs.append("marks in one bucket: %d, babeltrace2 %d events" % (total, len(bt)))
            rep.check("live index: its list is babeltrace2's text line for line, its marks count every event", probs,
                      "%d lines" % len(got))
        finally:
            status = srv.stop()
            err = srv.stderr()
            rep.check("cut capture: server exits cleanly, no panic", [] if status in (0, -15, 143) and "panicked" not in err
                      else ["status %r, stderr %r" % (status, err[-800:])])
    except Exception as ex:
        import traceback
        rep.fail("aborted", traceback.format_exc().splitlines()[-6:] + [repr(ex)])
    finally:
        subprocess.run(["rm", "-rf", work])
    print("     live robust: %d ok, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
