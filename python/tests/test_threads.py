"""A Reading shared by threads, and a Reading after its error.

Threads run in a child interpreter under a timeout: a deadlock (every
thread waiting, the GIL held by one that waits for a lock) fails the test
instead of hanging the suite."""

import json
import subprocess
import sys
import textwrap

import pytest

import reef

from conftest import SHARED

KERNEL = SHARED / "kernel-traces" / "bug446190"
BAD = SHARED / "babeltrace-traces" / "fail" / "valid-events-then-invalid-events"
TIMEOUT = 60


def run_child(code):
    """Runs `code` in a child interpreter; its stdout's last line as
    JSON. A child still running after TIMEOUT seconds fails the test."""
    try:
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                           capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child interpreter did not finish within {TIMEOUT} s (a deadlock)")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def key(m):
    return [m.stream.index, m.offset, m.timestamp]


def test_two_threads_share_one_reading():
    """Two threads iterating one Reading finish, and share its messages
    out: each message goes to one of them, once, in the reading's order
    as each thread sees it."""
    got = run_child(f"""
        import json, threading, reef
        r = reef.open({str(KERNEL)!r})
        keys = [[], []]
        errors = []
        def work(i):
            try:
                for m in r:
                    keys[i].append([m.stream.index, m.offset, m.timestamp])
            except BaseException as e:
                errors.append(repr(e))
        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        alive = [t.is_alive() for t in ts]
        print(json.dumps({{"keys": keys, "errors": errors, "alive": alive}}))
    """)
    assert got["alive"] == [False, False]
    assert got["errors"] == []
    every = [key(m) for m in reef.open(str(KERNEL))]
    assert len(every) > 5000
    a, b = got["keys"]
    assert len(a) + len(b) == len(every)
    assert sorted(a + b) == sorted(every)
    pos = {tuple(k): i for i, k in enumerate(every)}
    for part in (a, b):
        idx = [pos[tuple(k)] for k in part]
        assert idx == sorted(idx)


def test_threads_share_next_and_fields():
    """`next()` and field access from several threads at once (with the
    GIL switching between them) end, and hand out every message once."""
    got = run_child(f"""
        import json, sys, threading, reef
        sys.setswitchinterval(1e-5)
        r = reef.open({str(KERNEL)!r})
        n = [0, 0, 0, 0]
        errors = []
        def work(i):
            try:
                while True:
                    try:
                        m = next(r)
                    except StopIteration:
                        return
                    str(m)
                    if isinstance(m, reef.Event):
                        m.payload
                    n[i] += 1
            except BaseException as e:
                errors.append(repr(e))
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        print(json.dumps({{"n": n, "errors": errors,
                          "alive": [t.is_alive() for t in ts]}}))
    """)
    assert got["alive"] == [False] * 4
    assert got["errors"] == []
    assert sum(got["n"]) == sum(1 for _ in reef.open(str(KERNEL)))


def test_reading_keeps_its_error():
    """A loop over a Reading after its reef.Error raises it again (after
    no message): it never looks like a reading that simply ended."""
    r = reef.open(str(BAD))
    first = []
    with pytest.raises(reef.Error) as e1:
        for m in r:
            first.append(m.name)
    assert first
    again = []
    with pytest.raises(reef.Error) as e2:
        for m in r:
            again.append(m.name)
    assert again == []
    assert str(e2.value) == str(e1.value)
    assert (e2.value.file, e2.value.offset) == (e1.value.file, e1.value.offset)
    with pytest.raises(reef.Error):
        next(r)
    with pytest.raises(reef.Error):
        list(r)


def test_reading_error_again_with_keep():
    """The same with `keep` (one call per message)."""
    r = reef.open(str(BAD), keep=lambda ev: True)
    with pytest.raises(reef.Error):
        for _ in r:
            pass
    with pytest.raises(reef.Error):
        for _ in r:
            pass
