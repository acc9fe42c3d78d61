"""A trace file truncated while events read from it are held: reading
their fields raises reef.Error naming the file, instead of the process
dying of SIGBUS (the file is mapped) or strings reading as zeros."""

import os
import shutil
import subprocess
import sys
import textwrap

from conftest import SHARED  # noqa: E402


def test_fields_after_truncation_raise(tmp_path):
    src = SHARED / "kernel-traces" / "bug446190"
    trace = tmp_path / "trace"
    shutil.copytree(src, trace)
    for p in trace.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    # In a child interpreter: a signal kills it, not the test run.
    code = textwrap.dedent(
        f"""
        import os, reef
        trace = {str(trace)!r}
        events = [m for m in reef.open(trace) if isinstance(m, reef.Event)]
        assert len(events) > 30000, len(events)
        # Strings of events late in each stream lie in pages past 4 KiB.
        late = events[-2000:]
        before = [str(e) for e in late]
        files = sorted(f for f in os.listdir(trace) if f.startswith("channel"))
        for f in files:
            os.truncate(os.path.join(trace, f), 4096)
        raised = 0
        for e, was in zip(late, before):
            try:
                dict(e.payload)
                # What does not raise is what was read before.
                assert str(e) == was, (str(e), was)
            except reef.Error as err:
                assert "truncated while being read" in str(err), str(err)
                assert err.file and os.path.basename(err.file) in files, err.file
                raised += 1
        assert raised > len(late) // 2, (raised, len(late))
        print("raised", raised)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert "raised" in r.stdout
