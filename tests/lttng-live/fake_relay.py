#!/usr/bin/env python3
"""A fake lttng-relayd for reef's live client: speaks the viewer protocol
(2.4, big-endian packed structures) well enough to get a client to one
point, then misbehaves there as MODE says.

Usage: fake_relay.py MODE PORTFILE

Listens on 127.0.0.1 (a free port, written to PORTFILE), serves one client
per connection until killed. Session: host `fakehost`, name `fake`; one
data stream (id 2) and its metadata stream (id 1).

Modes (where it goes wrong):
  garbage-connect     random bytes instead of the CONNECT reply
  truncated-list      LIST_SESSIONS cut inside the session record, then close
  bad-attach          ATTACH_SESSION status 77
  bad-index-status    GET_NEXT_INDEX status 99
  truncated-index     GET_NEXT_INDEX reply cut after 30 bytes, then close
  huge-metadata       GET_METADATA announces 2^63 bytes
  bad-packet-len      GET_PACKET says OK with another length than asked
  garbage-packet      a packet of random bytes (the CTF decoder's error)
  close-mid-packet    GET_PACKET's data cut in the middle, then close
  hang                accept, read, never answer
"""
import os
import random
import socket
import struct
import sys
import threading
import time

MODE = sys.argv[1]
PORTFILE = sys.argv[2]

METADATA = b"""/* CTF 1.8 */
typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
trace {
  major = 1; minor = 8; byte_order = le;
  packet.header := struct { uint32_t magic; uint32_t stream_id; };
};
clock { name = monotonic; freq = 1000000000; offset = 0; };
typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := clk_t;
stream {
  id = 0;
  packet.context := struct { clk_t timestamp_begin; clk_t timestamp_end; uint64_t content_size; uint64_t packet_size; };
  event.header := struct { uint32_t id; clk_t timestamp; };
};
event { name = "ev"; id = 0; stream_id = 0; fields := struct { uint32_t x; }; };
"""

PACKET_SIZE = 4096


def recv_exact(c, n):
    b = b""
    while len(b) < n:
        k = c.recv(n - len(b))
        if not k:
            raise EOFError
        b += k
    return b


def name(s, n):
    return s.encode().ljust(n, b"\0")


def stream_rec(sid, meta):
    return struct.pack(">QQI", sid, 1, 1 if meta else 0) + name("fakehost/fake", 4096) + name(
        "chan" if not meta else "metadata", 255
    )


def serve(c):
    rnd = random.Random(7)
    sent_meta = False
    indexes = 0
    try:
        while True:
            hdr = recv_exact(c, 16)
            size, cmd, _ver = struct.unpack(">QII", hdr)
            body = recv_exact(c, size) if size else b""
            if MODE == "hang":
                time.sleep(3600)
            if cmd == 1:  # CONNECT
                if MODE == "garbage-connect":
                    c.sendall(bytes(rnd.randrange(256) for _ in range(20)))
                    continue
                c.sendall(struct.pack(">QIII", 1, 2, 13, 0)[:20])
            elif cmd == 2:  # LIST_SESSIONS
                rec = struct.pack(">QIII", 1, 100000, 0, 2) + name("fakehost", 64) + name("fake", 255)
                if MODE == "truncated-list":
                    c.sendall(struct.pack(">I", 1) + rec[:100])
                    c.close()
                    return
                c.sendall(struct.pack(">I", 1) + rec)
            elif cmd == 8:  # CREATE_SESSION
                c.sendall(struct.pack(">I", 1))
            elif cmd == 3:  # ATTACH_SESSION
                st = 77 if MODE == "bad-attach" else 1
                c.sendall(struct.pack(">II", st, 2) + stream_rec(1, True) + stream_rec(2, False))
            elif cmd == 7:  # GET_NEW_STREAMS
                c.sendall(struct.pack(">II", 2, 0))
            elif cmd == 6:  # GET_METADATA
                if MODE == "huge-metadata":
                    c.sendall(struct.pack(">QI", 1 << 63, 1))
                elif not sent_meta:
                    sent_meta = True
                    c.sendall(struct.pack(">QI", len(METADATA), 1) + METADATA)
                else:
                    c.sendall(struct.pack(">QI", 0, 2))
            elif cmd == 4:  # GET_NEXT_INDEX
                (sid,) = struct.unpack(">Q", body)
                indexes += 1
                rep = struct.pack(
                    ">QQQQQQQII",
                    (indexes - 1) * PACKET_SIZE,
                    PACKET_SIZE * 8,
                    PACKET_SIZE * 8,
                    indexes * 1000,
                    indexes * 1000 + 999,
                    0,
                    0,
                    99 if MODE == "bad-index-status" else 1,
                    0,
                )
                if MODE == "truncated-index":
                    c.sendall(rep[:30])
                    c.close()
                    return
                c.sendall(rep)
            elif cmd == 5:  # GET_PACKET
                sid, off, ln = struct.unpack(">QQI", body)
                if MODE == "bad-packet-len":
                    c.sendall(struct.pack(">III", 1, ln + 1, 0))
                    continue
                if MODE == "close-mid-packet":
                    c.sendall(struct.pack(">III", 1, ln, 0) + b"\0" * (ln // 2))
                    c.close()
                    return
                # garbage-packet (and the default): random bytes.
                c.sendall(struct.pack(">III", 1, ln, 0) + bytes(rnd.randrange(256) for _ in range(ln)))
            elif cmd == 9:  # DETACH_SESSION
                c.sendall(struct.pack(">I", 1))
            else:
                c.close()
                return
    except (EOFError, OSError):
        pass
    finally:
        try:
            c.close()
        except OSError:
            pass


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    tmp = PORTFILE + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(tmp, PORTFILE)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


main()
