"""Robustness of `reef view`'s API: bad parameters, path traversal, 500
concurrent window queries, corrupt traces, random URLs.

Usage: python3 robust.py REEF_BINARY
One line per check: "ok ..." or "FAIL ..."; exit status 1 when one failed.
"""

import asyncio
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import btmodel  # noqa: E402
from common import KERNEL_TRACES, Report, Server, reef_binary  # noqa: E402

SEED = int(os.environ.get("REEF_VIEW_SEED", "1"))
BUG = os.path.join(KERNEL_TRACES, "bug446190")

# what must never be served: pieces of files of the repository, the system
# or the trace
LEAKS = [b"root:x:0:0", b"[workspace]", b"[package]", b"/* CTF 1.8", b"\xc1\x1f\xfc\xc1",
         b"typealias integer", b"trace {"]


def leak(body):
    return [m for m in LEAKS if m in body]


def expect_error(srv, path, status):
    """Problems of one request that must be an error `status` with a JSON
    `error`."""
    try:
        r = srv.get(path, timeout=20)
    except Exception as ex:
        return ["%s: no answer (%r)" % (path, ex)]
    p = []
    if r.status != status:
        p.append("%s: status %d, expected %d: %r" % (path, r.status, status, r.body[:160]))
    elif not r.is_json() or not isinstance(r.json, dict) or not isinstance(r.json.get("error"), str):
        p.append("%s: body is not a JSON {\"error\": ...}: %r (content-type %r)" % (path, r.body[:160], r.ctype()))
    elif "json" not in r.ctype():
        p.append("%s: content-type %r" % (path, r.ctype()))
    lk = leak(r.body)
    if lk:
        p.append("%s: body holds file content %r" % (path, lk))
    return p


BAD_400 = [
    # window
    "/api/window", "/api/window?from=0&to=1000", "/api/window?from=0&width=10", "/api/window?to=10&width=10",
    "/api/window?from=abc&to=1000&width=10", "/api/window?from=0&to=xyz&width=10",
    "/api/window?from=-1&to=1000&width=10", "/api/window?from=0&to=-5&width=10",
    "/api/window?from=1000&to=1000&width=10", "/api/window?from=2000&to=1000&width=10",
    "/api/window?from=0&to=1000&width=0", "/api/window?from=0&to=1000&width=16385",
    "/api/window?from=0&to=1000&width=-3", "/api/window?from=0&to=1000&width=99999999999999999999999",
    "/api/window?from=0&to=99999999999999999999999999999&width=10", "/api/window?from=1.5&to=1000&width=10",
    "/api/window?from=0x10&to=1000&width=10", "/api/window?from=&to=1000&width=10",
    "/api/window?from=0&to=1000&width=10&rows=999999", "/api/window?from=0&to=1000&width=10&rows=a,b",
    "/api/window?from=0&to=1000&width=10&rows=-1", "/api/window?from=0&to=1000&width=10&rows=0,,1",
    "/api/window?from=0&to=1000&width=10&rows=99999999999999999999999",
    "/api/window?from=0&to=1000&width=10&filter=424242", "/api/window?from=0&to=1000&width=10&filter=x",
    # events
    "/api/events", "/api/events?from=0", "/api/events?count=10", "/api/events?from=x&count=10",
    "/api/events?from=-1&count=10", "/api/events?from=0&count=-1", "/api/events?from=0&count=1001",
    "/api/events?from=0&count=99999999999999999999", "/api/events?from=0&count=10&skip=-2",
    "/api/events?from=0&count=10&skip=abc", "/api/events?from=0&count=10&skip=99999999999999999999999",
    "/api/events?from=0&count=10&filter=424242", "/api/events?from=0&count=ten",
    # event
    "/api/event", "/api/event?row=0&from=0", "/api/event?from=0&to=10",
    "/api/event?row=x&from=0&to=10", "/api/event?row=0&from=10&to=10", "/api/event?row=0&from=20&to=10",
    "/api/event?row=-1&from=0&to=10", "/api/event?row=0&from=0&to=10&filter=424242",
    # search
    "/api/search", "/api/search?from=0&skip=0", "/api/search?expr=next_tid%20%3D%3D&from=0&skip=0",
    "/api/search?expr=(((&from=0&skip=0", "/api/search?expr=%22unterminated&from=0&skip=0",
    "/api/search?expr=next_tid%3D%3D1&from=-4&skip=0", "/api/search?expr=next_tid%3D%3D1&from=0&skip=-1",
    "/api/search?expr=next_tid%3D%3D1&from=zz&skip=0",
    # filter
    "/api/filter", "/api/filter?expr=%24evt.%24name%20%3D%3D", "/api/filter?expr=1%20%2B",
    "/api/filter?expr=&hide_classes=abc", "/api/filter?expr=&hide_rows=-1",
    "/api/filter?expr=" + urllib.parse.quote("(" * 200 + "1" + ")" * 200),
    # stats
    "/api/stats", "/api/stats?from=10&to=10", "/api/stats?from=20&to=10", "/api/stats?from=a&to=10",
    "/api/stats?from=-1&to=10", "/api/stats?from=0&to=10&filter=424242",
    # arrows
    "/api/arrows", "/api/arrows?from=0&to=1000", "/api/arrows?from=0&to=1000&width=0",
    "/api/arrows?from=0&to=1000&width=x", "/api/arrows?from=1000&to=0&width=10", "/api/arrows?from=-1&to=10&width=10",
    # a parameter given twice
    "/api/analysis", "/api/analysis?name=cputop", "/api/analysis?name=cputop&from=0&to=10&limit=x",
    "/api/analysis?name=%00&from=0&to=10", "/api/analysis?name=cputop&from=0&to=10&total=maybe",

    "/api/activities", "/api/activities?begin=1&from=0&to=10", "/api/activities?end=1&from=0&to=10",
    "/api/activities?begin=%28%28%28&end=1&from=0&to=10", "/api/activities?begin=1&end=1&key=1%2B&from=0&to=10",
    "/api/activities?begin=1&end=1&from=0&to=10&limit=100001", "/api/activities?begin=1&end=1&from=0&to=10&sort=x",
    "/api/activities?begin=1&end=1&from=0&to=10&bins=0", "/api/activities?begin=1&end=1&from=10&to=10",
    "/api/activities?begin=" + urllib.parse.quote("(" * 300 + "1" + ")" * 300) + "&end=1&from=0&to=10",
    "/api/periods", "/api/periods?periods=&from=0&to=10", "/api/periods?periods=x&from=0&to=10",
    "/api/periods?periods=a%3A1%0Aa%3A1&from=0&to=10", "/api/periods?periods=b(nosuch)%3A1&from=0&to=10",
    "/api/periods?periods=a%3A1&from=0&to=10&bins=1001",

    "/api/window?from=0&from=0&to=1000&width=10", "/api/events?from=0&count=10&count=10",
    "/api/search?expr=next_tid%3D%3D1&expr=next_tid%3D%3D1&from=0&skip=0", "/api/filter?expr=&expr=",
    "/api/stats?from=0&to=10&to=10", "/api/arrows?from=0&to=1000&width=10&width=10",
]

# ids that name nothing: docs/view-api.md, /api/event ("400 for a row that
# does not exist") and /api/filter ("400 ... for ids of no class or row")
UNKNOWN_IDS = ["/api/event?row=999999&from=0&to=10", "/api/filter?expr=&hide_rows=999999",
               "/api/filter?expr=&hide_classes=999999"]

BAD_404 = [
    "/api/nope", "/api/", "/api", "/api/info/extra", "/api/windows?from=0&to=10&width=1", "/nope",
    "/../../etc/passwd", "/%2e%2e/Cargo.toml", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/assets/../../Cargo.toml",
    "/assets/../../../../etc/passwd", "/assets/%2e%2e/%2e%2e/Cargo.toml", "/assets/..%2f..%2fCargo.toml",
    "/..%2f..%2f..%2fetc%2fpasswd", "/assets/..%5c..%5cCargo.toml", "//etc/passwd", "/etc/passwd",
    "/metadata", "/channel0_0", "/bug446190/metadata", "/index/channel0_0.idx", "/Cargo.toml",
    "/assets/%00", "/%00", "/api/%2e%2e/Cargo.toml", "/api/../Cargo.toml", "/assets/",
    "/assets/....//....//Cargo.toml", "/.git/config", "/assets/../crates/reef-view/Cargo.toml",
    "/" + BUG.lstrip("/") + "/metadata", "/%2F" + urllib.parse.quote(BUG.lstrip("/")) + "%2Fmetadata",
]


def part_a(rep, srv):
    probs = []
    for path in BAD_400:
        probs += expect_error(srv, path, 400)
    rep.check("bad parameters -> 400 with JSON error (%d requests)" % len(BAD_400), probs)
    probs = []
    for path in UNKNOWN_IDS:
        probs += expect_error(srv, path, 400)
    rep.check("unknown row/class ids in /api/event and /api/filter -> 400", probs)
    probs = []
    for path in BAD_404:
        probs += expect_error(srv, path, 404)
    rep.check("unknown paths and traversal attempts -> 404 JSON, no file content (%d)" % len(BAD_404), probs)
    # expression errors carry a position
    probs = []
    for q in ("/api/search?expr=next_tid%20%3D%3D&from=0&skip=0", "/api/filter?expr=1%20%2B"):
        r = srv.get(q)
        if not (r.is_json() and isinstance(r.json.get("position"), int)):
            probs.append("%s: no integer position: %r" % (q, r.body[:200]))
    # the page is served, and only under / and its assets
    r = srv.get("/")
    if r.status != 200:
        probs.append("/: status %d" % r.status)
    rep.check("expression errors have a position; / serves the page", probs)
    r = srv.api("info")
    rep.check("server answers /api/info after bad input", [] if r.status == 200 and r.json.get("state") == "ready" else ["%d %r" % (r.status, r.body[:200])])


async def _raw_get(host, port, path, timeout=120):
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        writer.write(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" % (path, host, port)).encode())
        await writer.drain()
        data = await asyncio.wait_for(reader.read(-1), timeout)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower().decode()] = v.strip().decode()
    if hdrs.get("transfer-encoding", "").lower() == "chunked":
        out = b""
        rest = body
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            n = int(size_line.split(b";")[0], 16)
            if n == 0:
                break
            out += rest[:n]
            rest = rest[n + 2:]
        body = out
    elif "content-length" in hdrs:
        body = body[: int(hdrs["content-length"])]
    return status, body


async def _many(host, port, paths):
    async def one(p):
        try:
            return await _raw_get(host, port, p)
        except Exception as ex:
            return (None, repr(ex).encode())
    return await asyncio.gather(*(one(p) for p in paths))


def part_b(rep, srv, tr, rnd):
    import math
    paths = []
    for _ in range(500):
        width = max(1, int(math.exp(rnd.uniform(math.log(1000), math.log(tr.end + 1)))))
        frm = rnd.randint(0, max(0, tr.end + 1 - width))
        w = rnd.randint(50, 4000)
        paths.append(("/api/window?from=%d&to=%d&width=%d" % (frm, frm + width, w), frm, frm + width, w))
    t0 = time.time()
    res = asyncio.run(_many(srv.host, srv.port, [p[0] for p in paths]))
    dt = time.time() - t0
    probs = []
    for (path, frm, to, w), (st, body) in zip(paths, res):
        if st != 200:
            probs.append("%s: %r %r" % (path, st, body[:200]))
            continue
        try:
            a = json.loads(body)
        except Exception:
            probs.append("%s: not JSON (%d bytes)" % (path, len(body)))
            continue
        k, r = tr.choose_k(frm, to, w)
        if a.get("k") != k or a.get("res") != r or len(a.get("rows", [])) != len(tr.rows):
            probs.append("%s: k %r res %r rows %d" % (path, a.get("k"), a.get("res"), len(a.get("rows", []))))
    # a sample compared with sequential answers
    sample = rnd.sample(range(500), 40)
    same = 0
    for i in sample:
        if res[i][0] != 200:
            continue
        r = srv.get(paths[i][0])
        if r.status != 200 or json.loads(r.body) != json.loads(res[i][1]):
            probs.append("%s: concurrent answer differs from the sequential one" % paths[i][0])
        else:
            same += 1
    rep.check("500 concurrent window queries answered, k/res/rows right", probs, "%.1f s; %d sampled answers equal the sequential ones" % (dt, same))
    t0 = time.time()
    r = srv.get("/api/info", timeout=5, fresh=True)
    dt = time.time() - t0
    rep.check("server answers within a second after the burst", [] if r.status == 200 and dt < 1 else ["status %d after %.2f s" % (r.status, dt)], "%.3f s" % dt)


def part_fuzz(rep, srv, rnd):
    segs = ["api", "info", "rows", "window", "events", "event", "search", "filter", "stats", "arrows", "assets",
            "..", ".", "%2e%2e", "", "index.html", "x" * 300, "%00", "%ff", "%", "%C3%A9", "metadata", "~", "%5c",
            "a%20b", "%2f", "..%2f..", "%2e"]
    keys = ["from", "to", "width", "rows", "filter", "count", "skip", "back", "row", "expr", "hide_classes",
            "hide_rows", "", "from%5B%5D", "x"]
    # values: quoted (any text), or raw percent-escapes, valid or not
    vals = ["0", "1", "-1", "18446744073709551616", "9223372036854775807", "abc", "", "1e9", "0,1,2",
            "\"", "next_tid==1", "$evt.$name==\"sched_*\"", "(" * 50, "1" * 400, "16384", "3.5", " 1", "1 ",
            "\u00e9", "\x00", "0x10", "+5", "1,,2", ",", "-0"]
    raw_vals = ["%", "%zz", "%00", "%ff", "%2", "%%"]
    probs = []
    counts = {}
    for _ in range(300):
        n = rnd.randint(1, 4)
        p = "/" + "/".join(rnd.choice(segs) for _ in range(n))
        if rnd.random() < 0.5:
            p = "/api/" + rnd.choice(segs[1:10])
        items = []
        for _ in range(rnd.randint(0, 6)):
            if rnd.random() < 0.15:
                v = rnd.choice(raw_vals)
            else:
                v = urllib.parse.quote(rnd.choice(vals), safe="")
            items.append("%s=%s" % (rnd.choice(keys), v))
        path = p + ("?" + "&".join(items) if items else "")
        try:
            r = srv.get(path, timeout=30)
        except Exception as ex:
            probs.append("%s: no answer %r" % (path, ex))
            if not srv.alive():
                break
            continue
        counts[r.status] = counts.get(r.status, 0) + 1
        short = path if len(path) < 200 else path[:120] + "..." + path[-60:]
        if r.status not in (200, 400, 404):
            probs.append("%s: status %d %r" % (short, r.status, r.body[:100]))
        if path.startswith("/api/") and not r.is_json():
            probs.append("%s: %d, not JSON: %r" % (short, r.status, r.body[:100]))
        elif r.status != 200 and (not r.is_json() or not isinstance(r.json, dict) or "error" not in r.json):
            probs.append("%s: %d without a JSON error: %r" % (short, r.status, r.body[:100]))
        if leak(r.body):
            probs.append("%s: file content %r" % (short, leak(r.body)))
    if not srv.alive():
        probs.append("server died during the fuzz loop")
    rep.check("fuzz: 300 random URLs -> 200/400/404 with JSON", probs, "statuses %s" % dict(sorted(counts.items())))
    # characters RFC 3986 does not allow unescaped in a request target: a
    # request the HTTP layer refuses as invalid HTTP gets a bare 400 (doc,
    # "Errors"); one it lets through is answered as any other (here 200,
    # or 400 with a JSON error for the unknown parameter)
    probs = []
    bare = []
    for ch in ['"', "<", ">", "{", "}", "|", "^", "`"]:
        path = "/api/window?from=0&to=100&width=10&x=" + ch
        try:
            r = srv.get(path, timeout=10)
        except Exception as ex:
            probs.append("%r: no answer %r" % (path, ex))
            continue
        if r.status == 400 and not r.is_json():
            bare.append(ch)
            if leak(r.body):
                probs.append("%r: file content %r" % (path, leak(r.body)))
        elif r.status not in (200, 400) or not (r.is_json() and "json" in r.ctype()) or (r.status == 400 and "error" not in r.json):
            probs.append("%r: %d %r (content-type %r)" % (path, r.status, r.body[:80], r.ctype()))
    if not srv.alive():
        probs.append("the server died")
    rep.check("raw characters not allowed in URLs -> bare 400 (invalid HTTP) or a JSON answer", probs,
              "bare 400 for %s" % " ".join(bare) if bare else "none refused by the HTTP layer")


def raw_request(host, port, host_header, path="/api/info", timeout=10):
    """(status, body) of a GET with the given Host header (Connection: close)."""
    import socket
    with socket.create_connection((host, port), timeout=timeout) as so:
        so.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host_header)).encode())
        data = b""
        while True:
            chunk = so.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b"\r\n")[0].split()[1]), body


def part_host(rep, srv):
    """Bound to a loopback address: a Host other than localhost, 127.0.0.1
    or [::1] (any port) is 403."""
    probs = []
    port = srv.port
    for h in ("localhost", "localhost:%d" % port, "127.0.0.1", "127.0.0.1:%d" % port, "[::1]", "[::1]:%d" % port):
        try:
            st, body = raw_request(srv.host, port, h)
        except Exception as ex:
            probs.append("Host %r: no answer %r" % (h, ex))
            continue
        if st != 200:
            probs.append("Host %r: status %d, expected 200: %r" % (h, st, body[:120]))
    for h in ("evil.example", "evil.example:%d" % port, "127.0.0.1.evil.example", "localhost.evil.example:%d" % port,
              "127.0.0.2:%d" % port, "0.0.0.0:%d" % port, "attacker.localhost"):
        for path in ("/api/info", "/api/events?from=0&count=1", "/"):
            try:
                st, body = raw_request(srv.host, port, h, path)
            except Exception as ex:
                probs.append("Host %r %s: no answer %r" % (h, path, ex))
                continue
            if st != 403:
                probs.append("Host %r %s: status %d, expected 403: %r" % (h, path, st, body[:120]))
            elif path.startswith("/api/") and b"sched_switch" in body:
                probs.append("Host %r %s: 403 with trace content %r" % (h, path, body[:120]))
    rep.check("Host guard: localhost/127.0.0.1/[::1] (any port) answered, other Hosts -> 403", probs)


def part_c(rep, reef, label, damage, framing=False):
    tmp = tempfile.mkdtemp(prefix="reef-view-corrupt-")
    try:
        tdir = os.path.join(tmp, "bug446190")
        shutil.copytree(BUG, tdir)
        for root, dirs, files in os.walk(tdir):
            for f in dirs + files:
                os.chmod(os.path.join(root, f), 0o755 if f in dirs else 0o644)
        os.chmod(tdir, 0o755)
        fname, off, data = damage
        with open(os.path.join(tdir, fname), "r+b") as fh:
            fh.seek(off)
            fh.write(data)
        tr = btmodel.Trace(tdir)
        try:
            srv = Server(reef, tdir)
        except RuntimeError as ex:
            msg = str(ex)
            if framing:
                # Broken packet framing is found when the trace is opened
                # (every packet header is checked then, by every reef
                # command): no server, but a clear error and no panic.
                probs = []
                if fname not in msg or ("byte %d" % off) not in msg or "expected" not in msg:
                    probs.append("error does not name the file, the offset and what was expected: %r" % msg)
                if "panicked" in msg:
                    probs.append("panic: %r" % msg)
                rep.check("corrupt trace (%s): reef view refuses it with file, offset and what was expected" % label,
                          probs, msg.strip()[-160:])
                return
            rep.fail("corrupt trace (%s): the server does not start" % label,
                     [msg, "expected: state `error` with the %d events bt2 printed before the damage (doc: \"After an error, what was decoded before it stays available\")" % len(tr.events)])
            return
        if framing:
            rep.fail("corrupt trace (%s): broken framing was accepted" % label, [])
            srv.stop()
            return
        probs = []
        info = {}
        try:
            info = srv.wait_state(("ready", "error"))
            err = info.get("error") or ""
            if info.get("state") != "error":
                probs.append("state %r, expected error" % info.get("state"))
            if fname not in err or not re.search(r"\d", err.replace(fname, "")):
                probs.append("error %r does not name %s and an offset" % (err, fname))
            n = info.get("events") or 0
            if n <= 0:
                probs.append("events %r after the error, expected > 0 (bt2 printed %d before failing)" % (info.get("events"), len(tr.events)))
            else:
                r = srv.api("events", **{"from": 0, "count": 1000})
                evs = r.json.get("events", []) if r.status == 200 else []
                k = min(len(evs), len(tr.lines))
                bad = [i for i in range(k) if not btmodel.lines_equal(tr.lines[i], evs[i].get("line", ""))]
                if r.status != 200 or k == 0 or bad:
                    probs.append("events: status %d, %d returned; first differing #%s: %r vs bt2 %r" % (
                        r.status, len(evs), bad[0] if bad else None, evs[bad[0]].get("line") if bad else None, tr.lines[bad[0]] if bad else None))
                last = None
                if n <= len(tr.lines):
                    r2 = srv.api("events", **{"from": 0, "count": 1000, "skip": max(0, n - 1000)})
                    evs2 = r2.json.get("events", []) if r2.status == 200 else []
                    base = max(0, n - 1000)
                    last = [base + i for i, ev in enumerate(evs2) if not btmodel.lines_equal(tr.lines[base + i], ev.get("line", ""))]
                    if last:
                        probs.append("last events before the damage differ from bt2's from #%d" % last[0])
                info2 = srv.api("window", **{"from": 0, "to": max(2, info.get("end", 1) + 1), "width": 500})
                if info2.status != 200:
                    probs.append("window after the error: %d" % info2.status)
            if not srv.alive():
                probs.append("the server exited")
        finally:
            status = srv.stop()
            stderr = srv.stderr()
        if srv.died:
            probs.append("the server exited on its own, status %r" % status)
        if status not in (0, -15, 143):
            probs.append("exit status %r" % status)
        if "panicked" in stderr or "RUST_BACKTRACE" in stderr:
            probs.append("panic on stderr: %r" % stderr[-500:])
        rep.check("corrupt trace (%s): state error naming file+offset, events kept = bt2's" % label, probs,
                  "error %r, %s events (bt2 printed %d)" % (info.get("error"), info.get("events"), len(tr.events)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def part_ws(rep, srv, rnd):
    """WebSockets (/api/live): the first answer is /api/info's; more than the
    server keeps open are refused with a 503; garbage frames close one."""
    import base64
    import socket

    def upgrade():
        s = socket.create_connection((srv.host, srv.port), timeout=10)
        key = base64.b64encode(bytes(rnd.randrange(256) for _ in range(16))).decode()
        s.sendall(("GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                   % (srv.port, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            c = s.recv(4096)
            if not c:
                break
            head += c
        # The server's first frame may come in the same read as the
        # answer's head: kept for the first-message check.
        head, _, rest = head.partition(b"\r\n\r\n")
        return s, head, rest

    socks, codes, probs, first = [], [], [], []
    for _ in range(40):
        s, head, rest = upgrade()
        socks.append(s)
        first.append(rest)
        codes.append(head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "?")
    opened = codes.count("101")
    if opened != 32 or codes.count("503") != 8:
        probs.append("40 WebSockets: %d opened, answers %r" % (opened, sorted(set(codes))))
    # The first message of an open one: /api/info (a text frame of JSON).
    s = socks[0]
    data = first[0]
    deadline = time.time() + 5
    while len(data) < 2 and time.time() < deadline:
        try:
            data += s.recv(65536)
        except socket.timeout:
            break
    if not data or data[0] & 0x0F != 1:
        probs.append("no text frame first: %r" % data[:20])
    # Garbage on another: the server closes it and goes on.
    socks[1].sendall(bytes(rnd.randrange(256) for _ in range(512)))
    for s in socks:
        s.close()
    time.sleep(0.3)
    r = srv.api("info")
    if r.status != 200:
        probs.append("info after the sockets: %d" % r.status)
    s, head, _ = upgrade()
    if not head.startswith(b"HTTP/1.1 101"):
        probs.append("a socket after the others closed: %r" % head[:40])
    s.close()
    rep.check("WebSockets: 32 at once, the rest refused (503), garbage closes one, the server goes on", probs,
              "%d opened" % opened)


def main():
    reef = reef_binary()
    rep = Report("robust: ")
    rnd = random.Random(SEED)
    tr = btmodel.Trace(BUG)
    srv = Server(reef, BUG)
    try:
        srv.wait_state(("ready",))
        part_a(rep, srv)
        part_b(rep, srv, tr, rnd)
        part_fuzz(rep, srv, rnd)
        part_host(rep, srv)
        part_ws(rep, srv, rnd)
        r = srv.api("info")
        rep.check("server still answers after everything", [] if r.status == 200 else ["%d" % r.status])
    except Exception as ex:
        import traceback
        rep.fail("robust: aborted", traceback.format_exc().splitlines()[-6:] + [repr(ex)])
    finally:
        status = srv.stop()
        err = srv.stderr()
        rep.check("server exits cleanly on SIGTERM, no panic", [] if status in (0, -15, 143) and "panicked" not in err and not srv.died
                  else ["status %r%s, stderr %r" % (status, " (it had exited on its own)" if srv.died else "", err[-800:])], "status %r" % status)
    for label, damage, framing in (("packet magic of channel0_1's 2nd packet", ("channel0_1", 262144, b"\xde\xad\xbe\xef"), True),
                                   ("64 bytes of 0xff inside channel0_1's 1st packet", ("channel0_1", 150000, b"\xff" * 64), False)):
        try:
            part_c(rep, reef, label, damage, framing)
        except Exception as ex:
            import traceback
            rep.fail("corrupt trace (%s): aborted" % label, traceback.format_exc().splitlines()[-6:] + [repr(ex)])
    print("     robust: %d ok, %d failed" % (rep.passed, rep.failed), flush=True)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
