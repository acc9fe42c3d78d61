"""Scripts: keep(event) equals the equivalent --filter, a decoder class
equals the equivalent `reef activities` definition; through the Python API
and through the reef binary's --script (which runs `python3 -m reef`)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import reef
from conftest import SHARED

HERE = pathlib.Path(__file__).parent / "scripts"
KERNEL = str(SHARED / "kernel-traces" / "bug446190")
FILTER = '$evt.$name == "sched_*" && $evt.cpu_id == 1'
ENV = {**os.environ, "REEF_PYTHON": sys.executable}


def run(reef_bin, *args):
    return subprocess.run([reef_bin, *args], capture_output=True, text=True, env=ENV)


def test_keep_equals_filter_api():
    ns = reef.load_script(HERE / "keep_sched_cpu1.py")
    got = [str(m) for m in reef.open(KERNEL, keep=ns["keep"])]
    exp = [str(m) for m in reef.open(KERNEL, filter=FILTER)]
    assert got == exp and len(got) > 100


def test_print_script_equals_filter(reef_bin):
    s = run(reef_bin, "print", "--script", str(HERE / "keep_sched_cpu1.py"), KERNEL)
    f = run(reef_bin, "print", "--filter", FILTER, KERNEL)
    assert s.returncode == f.returncode == 0, s.stderr
    assert s.stdout == f.stdout and s.stdout.count("\n") > 100


ACT = ["--begin", '$name == "irq_handler_entry"', "--end", '$name == "irq_handler_exit"',
       "--key", "irq,cpu_id"]
REPORTS = ["--log", "--stats", "--freq", "--freq-resolution", "10", "--top", "5", "--json"]


def test_decoder_equals_activities(reef_bin):
    exp = json.loads(run(reef_bin, "activities", *ACT, *REPORTS, KERNEL).stdout)
    got = reef.activities(KERNEL, decoder=HERE / "irq_activities.py", freq=10, top=5)
    assert got == exp and len(got["log"]) > 100
    s = run(reef_bin, "activities", "--script", str(HERE / "irq_activities.py"), *REPORTS,
            KERNEL)
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout) == exp


def test_activities_script_keep_equals_filter(reef_bin):
    """`reef activities --script` with a keep(): the events the activities
    see are the kept ones, as with the equivalent --filter — for the
    --begin/--end definitions and for a script's decoder (the API too)."""
    filt = ["--filter", "$evt.cpu_id == 1"]
    exp = json.loads(run(reef_bin, "activities", *ACT, *filt, *REPORTS, KERNEL).stdout)
    every = json.loads(run(reef_bin, "activities", *ACT, *REPORTS, KERNEL).stdout)
    assert exp != every and len(exp["log"]) > 20
    s = run(reef_bin, "activities", *ACT, "--script", str(HERE / "keep_cpu1.py"), *REPORTS,
            KERNEL)
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout) == exp
    s = run(reef_bin, "activities", "--script", str(HERE / "irq_activities_cpu1.py"), *REPORTS,
            KERNEL)
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout) == exp
    got = reef.activities(KERNEL, decoder=HERE / "irq_activities_cpu1.py", freq=10, top=5)
    assert got == exp
    ns = reef.load_script(HERE / "irq_activities_cpu1.py")
    got = reef.activities(KERNEL, decoder=ns["Decoder"], keep=ns["keep"], freq=10, top=5)
    assert got == exp


def test_activities_script_keep_runs_once(reef_bin):
    """A keep() that answers differently when run again: the two passes of
    --freq see the first pass's verdicts, with the definitions (the CLI's
    keep-bits) and with a decoder alike."""
    d = run(reef_bin, "activities", *ACT, "--script", str(HERE / "keep_first_irqs.py"),
            *REPORTS, KERNEL)
    s = run(reef_bin, "activities", "--script", str(HERE / "irq_activities_first.py"),
            *REPORTS, KERNEL)
    assert d.returncode == s.returncode == 0, d.stderr + s.stderr
    got, exp = json.loads(s.stdout), json.loads(d.stdout)
    assert got == exp
    # Fewer activities than in the whole trace, and the freq pass saw them.
    assert 0 < len(exp["log"]) <= 150
    assert sum(b["count"] for _, buckets in exp["freq"] for b in buckets) == len(exp["log"])


def test_activities_script_needs_begin_and_end(reef_bin):
    s = run(reef_bin, "activities", "--begin", '$name == "irq_handler_entry"', "--script",
            str(HERE / "keep_cpu1.py"), KERNEL)
    assert s.returncode != 0 and "--begin and --end" in s.stderr


def test_script_error_shows_traceback_and_event(reef_bin):
    s = run(reef_bin, "print", "--script", str(HERE / "fails.py"), KERNEL)
    assert s.returncode == 1
    assert "Traceback" in s.stderr and "fails.py" in s.stderr and "KeyError" in s.stderr
    first = next(str(m) for m in reef.open(KERNEL) if m.name == "sched_switch")
    assert first in s.stderr
    # The events before it were printed.
    before = []
    for m in reef.open(KERNEL):
        if m.name == "sched_switch":
            break
        before.append(str(m))
    assert s.stdout.splitlines() == before


def test_missing_package_is_a_clear_error(reef_bin, tmp_path):
    env = {**ENV, "REEF_PYTHON": "/usr/bin/python3", "PYTHONNOUSERSITE": "1"}
    p = subprocess.run([reef_bin, "print", "--script", str(HERE / "fails.py"), KERNEL],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    probe = subprocess.run(["/usr/bin/python3", "-c", "import reef"], capture_output=True,
                           cwd=tmp_path, env=env)
    if probe.returncode != 0:
        assert p.returncode != 0 and "pip install ./python" in p.stderr


# Every reading command takes --script: the reef binary reads the traces
# itself and asks the package for one verdict per event (keep-bits).
WINDOW = ["--begin", "1412670962.5", "--end", "1412670965"]
COMMANDS = [
    ["print"],
    ["print", "--names", "all", "--fields", "all", "--clock-seconds"],
    ["print", *WINDOW],
    ["stats", "--json"],
    ["check"],
    ["cputop", "--lami"],
    ["schedlog", "--lami"],
    ["periods", "--period", 'sw : $evt.$name == "sched_switch"', "--freq", "--json", *WINDOW],
]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_command_script_equals_filter(reef_bin, cmd):
    s = run(reef_bin, *cmd, "--script", str(HERE / "keep_sched_cpu1.py"), KERNEL)
    f = run(reef_bin, *cmd, "--filter", FILTER, KERNEL)
    assert s.returncode == f.returncode == 0, s.stderr + f.stderr
    assert s.stdout == f.stdout and len(s.stdout) > 100


def test_convert_script_equals_filter(reef_bin, tmp_path):
    outs = []
    for opt in (["--script", str(HERE / "keep_sched_cpu1.py")], ["--filter", FILTER]):
        out = tmp_path / f"{len(outs)}.json"
        p = run(reef_bin, "convert", "--to", "chrome-json", "-o", str(out), *opt, KERNEL)
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(out.read_text()))
    assert outs[0] == outs[1] and len(outs[0]["traceEvents"]) > 100


def test_stateful_script_runs_once_per_reading(reef_bin, tmp_path):
    """The verdicts of a counting script, in the reading's order, equal the
    Python API's; a two-pass command (--freq) loads the script once."""
    ns = reef.load_script(HERE / "every_third_switch.py")
    exp = [str(m) for m in reef.open(KERNEL, keep=ns["keep"], begin=WINDOW[1], end=WINDOW[3])]
    loads = tmp_path / "loads"
    env = {**ENV, "REEF_TEST_LOADS": str(loads)}
    script = ["--script", str(HERE / "every_third_switch.py")]
    p = subprocess.run([reef_bin, "print", *script, *WINDOW, KERNEL], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == exp and len(exp) > 50
    assert loads.read_text() == "loaded\n"
    loads.unlink()
    p = subprocess.run([reef_bin, "periods", "--period", 'sw : $evt.$name == "sched_switch"',
                        "--freq", "--json", *script, KERNEL], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stderr
    assert loads.read_text() == "loaded\n"
    # Periods from each kept switch to the next: one fewer than kept.
    n = sum(1 for m in reef.open(KERNEL) if m.name == "sched_switch")
    [(name, buckets)] = json.loads(p.stdout)["freq"]
    assert name == "sw" and sum(b["count"] for b in buckets) == (n + 2) // 3 - 1


def test_view_script(reef_bin, tmp_path):
    """`reef view --script`: the traces are cut to the script's events
    first; the view's statistics equal `reef stats --script`'s, and the
    cut traces go when the server stops."""
    import signal
    import time
    import urllib.request
    script = ["--script", str(HERE / "every_third_switch.py"), *WINDOW]
    env = {**ENV, "TMPDIR": str(tmp_path)}
    p = subprocess.Popen([reef_bin, "view", "--port", "0", *script, KERNEL],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = p.stdout.readline().strip()
        assert url.startswith("http://"), p.stderr.read()
        get = lambda path: json.load(urllib.request.urlopen(url + path, timeout=30))
        deadline = time.time() + 60
        while (info := get("api/info"))["state"] == "building" and time.time() < deadline:
            time.sleep(0.1)
        assert info["state"] == "ready", info
        assert any(d.name.startswith("reef-view-script-") for d in tmp_path.iterdir())
        got = get(f"api/stats?from=0&to={info['end'] + 1}")
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
    want = json.loads(run(reef_bin, "stats", "--json", *script, KERNEL).stdout)
    assert got["events"] == want["events"] and got["event_names"] == want["event_names"], (got, want)
    assert want["events"] > 50
    assert not any(d.name.startswith("reef-view-script-") for d in tmp_path.iterdir())
def test_convert_ctf_script(reef_bin, tmp_path):
    """`reef convert --to ctf --script`: the writer reads stream by stream,
    the script's verdicts come in time order (sorted out per stream first);
    babeltrace2 reads the output as the events `reef print --script` keeps,
    for a filter-like script in a window and for a counting one."""
    for script, extra in (("keep_sched_cpu1.py", WINDOW), ("every_third_switch.py", [])):
        out = tmp_path / script
        s = ["--script", str(HERE / script), *extra, KERNEL]
        p = run(reef_bin, "convert", "--to", "ctf", "-o", str(out), *s)
        assert p.returncode == 0, p.stderr
        want = run(reef_bin, "print", *s)
        got = subprocess.run(["babeltrace2", str(out)], capture_output=True, text=True)
        assert got.returncode == 0 and got.stderr == "", got.stderr
        assert got.stdout == want.stdout and got.stdout.count("\n") > 50, script
