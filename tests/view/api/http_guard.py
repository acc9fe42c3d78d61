"""`reef view`'s HTTP server against hostile clients: a page of another
origin opening `/api/live` or reading the API, a second Host header, an
absolute-form request target, and connections that send their head byte
by byte, stay idle or stop reading their answers.

Usage: python3 http_guard.py [REEF_BINARY] [FILTER...]
The binary is REEF_BIN's (default: target/release/reef), or the first
argument when it names an executable file; the other arguments keep only
the checks whose name holds one of them. One line per check: "ok ..." or
"FAIL ..."; exit status 1 when one failed or none ran.
"""

import base64
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import KERNEL_TRACES, REPO, Report, Server  # noqa: E402

BUG = os.path.join(KERNEL_TRACES, "bug446190")

# The server's bounds (crates/reef-view/src/server.rs: HEAD_TIMEOUT,
# WRITE_TIMEOUT), with room for a loaded machine.
HEAD_LIMIT = 10 + 8
WRITE_LIMIT = 30 + 15


def args():
    rest = sys.argv[1:]
    reef = os.environ.get("REEF_BIN") or os.path.join(REPO, "target", "release", "reef")
    if rest and os.path.isfile(rest[0]) and os.access(rest[0], os.X_OK):
        reef = rest.pop(0)
    return os.path.abspath(reef), rest


def exchange(srv, data, timeout=10):
    """Sends `data` on a new connection and reads until the server closes
    it: (status, head, body)."""
    with socket.create_connection((srv.host, srv.port), timeout=timeout) as so:
        so.sendall(data)
        buf = b""
        while True:
            try:
                c = so.recv(65536)
            except socket.timeout:
                break
            if not c:
                break
            buf += c
            # A 101 keeps the connection: its head is enough.
            if buf.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in buf:
                break
    head, _, body = buf.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b"\r\n")[0].split()[1])
    except (IndexError, ValueError):
        status = None
    return status, head, body


def get(srv, path, headers, target=None):
    """A GET of `path` with the given header lines (Connection: close)."""
    lines = ["GET %s HTTP/1.1" % (target or path)] + list(headers) + ["Connection: close", "", ""]
    return exchange(srv, "\r\n".join(lines).encode())


def upgrade(srv, headers):
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET /api/live HTTP/1.1"] + list(headers) + [
        "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
        "Sec-WebSocket-Version: 13", "", ""]
    return exchange(srv, "\r\n".join(lines).encode())


def secret(srv, body):
    """Pieces of /api/info that must not reach another origin."""
    return [s for s in (srv.trace.encode(), b'"traces"', b"hostname", b"sched_switch") if s in body]


def check_origin_ws(rep, srv):
    port = srv.port
    probs = []
    for origin in ("http://evil.com", "http://evil.com:%d" % port, "null", "http://127.0.0.1.evil.com:%d" % port,
                   "http://localhost:%d" % (port + 1), "https://evil.com", "http://127.0.0.1:%d.evil.com" % port):
        st, head, body = upgrade(srv, ["Host: 127.0.0.1:%d" % port, "Origin: " + origin])
        if st != 403:
            probs.append("Origin %r: status %r, expected 403: %r" % (origin, st, head[:60]))
        if secret(srv, body):
            probs.append("Origin %r: the answer holds %r" % (origin, secret(srv, body)))
    # Two Origin headers, the first one the page's own.
    st, head, _ = upgrade(srv, ["Host: 127.0.0.1:%d" % port, "Origin: http://127.0.0.1:%d" % port,
                                "Origin: http://evil.com"])
    if st not in (400, 403):
        probs.append("two Origin headers: status %r, expected 400 or 403" % st)
    rep.check("/api/live: a WebSocket from another origin is refused (403), nothing of /api/info sent", probs)

    probs = []
    for host in ("127.0.0.1:%d" % port, "localhost:%d" % port, "[::1]:%d" % port, "LOCALHOST:%d" % port):
        for origin in ("http://" + host, None):
            st, head, _ = upgrade(srv, ["Host: " + host] + (["Origin: " + origin] if origin else []))
            if st != 101:
                probs.append("Host %r, Origin %r: status %r, expected 101: %r" % (host, origin, st, head[:80]))
    rep.check("/api/live: the page's own origin (127.0.0.1, localhost, [::1]) and no Origin are answered 101", probs)


def check_origin_api(rep, srv):
    port = srv.port
    probs = []
    for path in ("/api/info", "/api/rows", "/api/events?from=0&count=5", "/api/window?from=0&to=1000000&width=10", "/"):
        st, head, body = get(srv, path, ["Host: 127.0.0.1:%d" % port, "Origin: http://evil.com"])
        if st != 403:
            probs.append("%s, Origin http://evil.com: status %r, expected 403" % (path, st))
        if secret(srv, body):
            probs.append("%s: the answer holds %r" % (path, secret(srv, body)))
        st, head, body = get(srv, path, ["Host: localhost:%d" % port, "Origin: http://localhost:%d" % port])
        if st != 200:
            probs.append("%s, own Origin: status %r, expected 200" % (path, st))
    rep.check("API: a request from another origin is refused (403), the page's own is answered", probs)


def check_host(rep, srv):
    port = srv.port
    probs = []
    for hosts in (("127.0.0.1:%d" % port, "evil.com"), ("evil.com", "127.0.0.1:%d" % port),
                  ("127.0.0.1:%d" % port, "127.0.0.1:%d" % port)):
        st, head, body = get(srv, "/api/info", ["Host: " + h for h in hosts])
        if st != 400:
            probs.append("Host headers %r: status %r, expected 400" % (hosts, st))
        if secret(srv, body):
            probs.append("Host headers %r: the answer holds %r" % (hosts, secret(srv, body)))
    rep.check("a second Host header is a 400", probs)

    probs = []
    for target in ("http://evil.com/api/info", "http://127.0.0.1:%d/api/info" % port,
                   "http://evil.com/", "*"):
        st, head, body = get(srv, "/api/info", ["Host: 127.0.0.1:%d" % port], target=target)
        if st != 400:
            probs.append("target %r: status %r, expected 400: %r" % (target, st, head[:60]))
        if secret(srv, body):
            probs.append("target %r: the answer holds %r" % (target, secret(srv, body)))
    st, _, _ = get(srv, "/api/info", ["Host: 127.0.0.1:%d" % port])
    if st != 200:
        probs.append("origin-form /api/info: status %r" % st)
    rep.check("an absolute-form request target is a 400", probs)


def held_until_closed(so, feed=None, limit=60):
    """Seconds until the server closes `so` (reads fail or end), feeding
    it one byte of `feed` every 0.25 s meanwhile; None if still open after
    `limit` s."""
    start = time.time()
    so.settimeout(0.25)
    i = 0
    while time.time() - start < limit:
        if feed is not None:
            try:
                so.send(feed[i % len(feed):i % len(feed) + 1])
                i += 1
            except OSError:
                return time.time() - start
        try:
            c = so.recv(65536)
            if not c:
                return time.time() - start
        except socket.timeout:
            continue
        except OSError:
            return time.time() - start
    return None


def check_slow(rep, srv):
    port = srv.port
    results = {}

    def slowloris():
        so = socket.create_connection((srv.host, srv.port))
        so.sendall(b"G")
        head = ("ET /api/info HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port).encode() + b"X-Slow: " + b"a" * 100000
        results["slowloris"] = held_until_closed(so, head)
        so.close()

    def idle():
        so = socket.create_connection((srv.host, srv.port))
        results["idle"] = held_until_closed(so)
        so.close()

    def keepalive():
        so = socket.create_connection((srv.host, srv.port))
        so.sendall(("GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port).encode())
        results["keep-alive"] = held_until_closed(so)
        so.close()

    def slow_reader():
        # Many answers asked for at once and none read: the server's
        # writes wait until it cuts the connection.
        so = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        so.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        so.connect((srv.host, srv.port))
        req = ("GET /api/events?from=0&count=1000 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port).encode()
        so.settimeout(5)
        try:
            for _ in range(400):
                so.sendall(req)
        except OSError:
            pass
        time.sleep(WRITE_LIMIT)
        # Now read everything: a cut connection ends; a held one still
        # answers all 400 and then waits.
        so.settimeout(HEAD_LIMIT + 5)
        tail, answers = b"", 0
        ended = False
        try:
            while True:
                c = so.recv(1 << 20)
                if not c:
                    ended = True
                    break
                # Answers counted as they come (a status line may straddle
                # two reads).
                buf = tail + c
                answers += buf.count(b"HTTP/1.1 200")
                tail = buf[-16:].replace(b"HTTP/1.1 200", b"")
        except socket.timeout:
            pass
        except OSError:
            ended = True
        results["slow reader"] = (ended, answers)
        so.close()

    threads = [threading.Thread(target=f) for f in (slowloris, idle, keepalive, slow_reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    probs = []
    for name in ("slowloris", "idle", "keep-alive"):
        t = results.get(name)
        if t is None or t > HEAD_LIMIT:
            probs.append("%s connection: %s, expected closed within %d s" % (
                name, "still open after 60 s" if t is None else "closed after %.1f s" % t, HEAD_LIMIT))
    ended, answers = results.get("slow reader", (False, 0))
    if not ended or answers >= 400:
        probs.append("a client that stops reading: connection %s after %d s, %d of 400 answers sent" % (
            "ended" if ended else "still open", WRITE_LIMIT, answers))
    r = srv.api("info")
    if r.status != 200:
        probs.append("/api/info afterwards: %d" % r.status)
    rep.check("slow and idle connections are cut: head byte by byte, idle, idle keep-alive, a client that stops reading",
              probs, ", ".join("%s %.1f s" % (k, v) for k, v in results.items() if isinstance(v, float)))


CHECKS = [("origin-ws", check_origin_ws), ("origin-api", check_origin_api), ("host", check_host),
          ("slow", check_slow)]


def main():
    reef, filters = args()
    rep = Report("http guard: ")
    chosen = [(n, f) for n, f in CHECKS if not filters or any(x in n for x in filters)]
    if not chosen:
        rep.fail("no check matches %r (checks: %s)" % (filters, ", ".join(n for n, _ in CHECKS)))
        return 1
    srv = Server(reef, BUG)
    try:
        srv.wait_state(("ready",))
        for name, f in chosen:
            try:
                f(rep, srv)
            except Exception as ex:
                import traceback
                rep.fail("%s: aborted" % name, traceback.format_exc().splitlines()[-6:] + [repr(ex)])
    finally:
        status = srv.stop()
        err = srv.stderr()
    rep.check("server exits cleanly on SIGTERM, no panic",
              [] if status in (0, -15, 143) and "panicked" not in err and not srv.died
              else ["status %r, stderr %r" % (status, err[-800:])])
    print("     http guard: %d ok, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
