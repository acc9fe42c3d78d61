"""reef.listen: the events of a program streaming with REEF_LISTEN equal
those of the trace directory written from the same stream (itself read by
reef.open, checked against bt2 in test_read.py), and the program's count."""

import os
import re
import select
import subprocess
import time

import pytest

import reef
from conftest import ROOT


@pytest.fixture(scope="module")
def live_program(reef_bin, tmp_path_factory):
    """tests/live/live.c built against libreef, as tests/live/run.sh builds it."""
    d = tmp_path_factory.mktemp("live")
    subprocess.run(["make", "-s", "-C", str(ROOT / "tracer")], check=True)
    subprocess.run(["make", "-s", "-C", str(ROOT / "examples"), f"REEF={reef_bin}",
                    f"BUILD={d}/examples"], check=True)
    exe = d / "live"
    subprocess.run(["cc", "-std=c11", "-O2", "-I", str(ROOT / "tracer" / "include"),
                    "-I", str(d / "examples" / "gen"), str(ROOT / "tests" / "live" / "live.c"),
                    str(ROOT / "tracer" / "libreef.a"), "-lpthread", "-o", str(exe)], check=True)
    return exe


def start(cmd, tmp_path):
    env = {**os.environ, "REEF_LISTEN": "127.0.0.1:0", "REEF_LISTEN_WAIT": "20000",
           "REEF_OUTPUT": str(tmp_path / "unused"), "REEF_MODE": "block",
           "REEF_FLUSH_MS": "5"}
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line, deadline = b"", time.monotonic() + 20
    while time.monotonic() < deadline:
        if select.select([p.stderr], [], [], 0.5)[0]:
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
    pytest.fail(f"the traced program did not report its port: {line!r}")


def test_listen_equals_written_trace(live_program, tmp_path):
    p, port = start([str(live_program), "paced", "3", "3000", "20"], tmp_path)
    out = tmp_path / "received"
    got = []
    for m in reef.listen(f"127.0.0.1:{port}", wait=10, output=str(out)):
        if isinstance(m, reef.Event):
            got.append((m.cycles, m.name, tuple(sorted(m.payload.items()))))
    pout, _ = p.communicate(timeout=60)
    attempted = int(re.search(rb"attempted (\d+)", pout).group(1))
    disk = [(m.cycles, m.name, tuple(sorted(m.payload.items())))
            for m in reef.open(str(out)) if isinstance(m, reef.Event)]
    assert len(got) == attempted == len(disk) > 1000
    # Cycles: times in ns may differ by a few ns per second, as `reef
    # listen` documents (libreef's final metadata re-measures its clock).
    assert sorted(got) == sorted(disk)


def test_listen_nobody_there():
    with pytest.raises(reef.Error):
        reef.listen("127.0.0.1:1")
