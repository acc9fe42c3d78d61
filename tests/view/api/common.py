"""Shared helpers of check.py and robust.py: the server process, HTTP, the
report lines."""

import http.client
import json
import os
import select
import subprocess
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
KERNEL_TRACES = os.path.normpath(os.path.join(REPO, "..", "shared", "conformance", "kernel-traces"))
DEMO_TRACE = os.path.join(REPO, "examples", "build", "trace")


def ensure_demo_trace():
    if not os.path.exists(os.path.join(DEMO_TRACE, "metadata")):
        subprocess.run(["bash", os.path.join(REPO, "scripts", "demo.sh")], check=True,
                       stdout=subprocess.DEVNULL)
    return DEMO_TRACE


class Report:
    def __init__(self, prefix=""):
        self.prefix = prefix
        self.failed = 0
        self.passed = 0

    def ok(self, name, detail=""):
        self.passed += 1
        print("ok   %s%s%s" % (self.prefix, name, (" (" + detail + ")") if detail else ""), flush=True)

    def fail(self, name, details=()):
        self.failed += 1
        print("FAIL %s%s" % (self.prefix, name), flush=True)
        for d in list(details)[:12]:
            print("       " + str(d)[:600], flush=True)
        if len(list(details)) > 12:
            print("       ... %d more" % (len(list(details)) - 12), flush=True)

    def check(self, name, problems, detail=""):
        """problems: a list of strings; empty = ok."""
        if problems:
            self.fail(name, problems)
        else:
            self.ok(name, detail)
        return not problems


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self._json = None

    @property
    def json(self):
        if self._json is None:
            self._json = json.loads(self.body.decode("utf-8"))
        return self._json

    def is_json(self):
        try:
            self.json
            return True
        except Exception:
            return False

    def ctype(self):
        return self.headers.get("content-type", "")


class Server:
    def __init__(self, reef, trace, env=None, timeout=60, args=()):
        self.reef = reef
        self.trace = trace
        self.errfile = tempfile.TemporaryFile()
        e = dict(os.environ, TZ="UTC")
        if env:
            e.update(env)
        self.proc = subprocess.Popen([reef, "view", "--port", "0"] + list(args) + ([trace] if trace else []),
                                     stdout=subprocess.PIPE,
                                     stderr=self.errfile, env=e)
        self.url = self._read_url(timeout)
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port = u.hostname, u.port
        self._conn = None

    def _read_url(self, timeout):
        deadline = time.time() + timeout
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"\n" not in buf:
            left = deadline - time.time()
            if left <= 0:
                raise RuntimeError("reef view printed no URL in %ds" % timeout)
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise RuntimeError("reef view exited without a URL: status %s, stderr %r"
                                       % (self.proc.wait(), self.stderr()[-2000:]))
                buf += chunk
        return buf.split(b"\n")[0].decode().strip()

    def stderr(self):
        self.errfile.seek(0)
        return self.errfile.read().decode("utf-8", "replace")

    def get(self, path, timeout=60, fresh=False):
        """GET path (already encoded); a kept-alive connection, reopened on failure."""
        for attempt in range(2):
            try:
                if self._conn is None or fresh:
                    self._conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
                self._conn.request("GET", path)
                r = self._conn.getresponse()
                body = r.read()
                hdrs = {k.lower(): v for k, v in r.getheaders()}
                if hdrs.get("connection", "").lower() == "close":
                    self._conn.close()
                    self._conn = None
                return Response(r.status, hdrs, body)
            except (http.client.HTTPException, ConnectionError, OSError):
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                if attempt == 1:
                    raise

    def api(self, endpoint, **params):
        q = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        return self.get("/api/" + endpoint + ("?" + q if q else ""))

    def wait_state(self, states=("ready", "error"), timeout=90):
        deadline = time.time() + timeout
        while True:
            r = self.api("info")
            if r.status == 200 and r.json.get("state") in states:
                return r.json
            if time.time() > deadline:
                raise RuntimeError("state still %r after %ds" % (r.json.get("state") if r.status == 200 else r.status, timeout))
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with %s" % self.proc.returncode)
            time.sleep(0.05)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        """Ends the server (SIGTERM); returns its exit status. `self.died`
        tells whether it had exited on its own before."""
        if self._conn is not None:
            self._conn.close()
        self.died = self.proc.poll() is not None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def row_key(row):
    k = row.get("kind")
    if k == "cpu":
        return ("cpu", row.get("cpu"))
    if k == "thread":
        return ("thread", row.get("tid"))
    if k == "stream":
        return ("stream", row.get("stream"))
    return (k, row.get("id"))


def reef_binary():
    """The binary under test: $REEF_BIN, default target/release/reef."""
    return os.path.abspath(os.environ.get("REEF_BIN") or os.path.join(REPO, "target", "release", "reef"))
