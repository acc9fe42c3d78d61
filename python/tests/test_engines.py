"""The engines from Python give what the CLI's --json / --lami give (the
CLI itself is checked against babeltrace2 and lttng-analyses by the Rust
and analyses suites)."""

import json
import subprocess

import pytest

import reef
from conftest import SHARED

KERNEL = [str(SHARED / "kernel-traces" / n) for n in ("bug446190", "uneven-streams")]
UST = str(SHARED / "babeltrace-traces" / "succeed" / "multi-domains")


def cli(reef_bin, *args):
    p = subprocess.run([reef_bin, *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("trace", KERNEL + [UST])
def test_stats(reef_bin, trace):
    assert reef.stats(trace) == cli(reef_bin, "stats", "--json", trace)
    flt = '$evt.$name =* "sched_*"'
    got = reef.stats(trace, filter=flt)
    assert got == cli(reef_bin, "stats", "--json", "--filter", flt, trace)


def test_activities(reef_bin):
    trace = KERNEL[0]
    args = dict(begin='$name == "irq_handler_entry"', end='$name == "irq_handler_exit"',
                key="irq,cpu_id")
    got = reef.activities(trace, **args, freq=10, top=5)
    exp = cli(reef_bin, "activities", "--begin", args["begin"], "--end", args["end"],
              "--key", args["key"], "--log", "--stats", "--freq", "--freq-resolution", "10",
              "--top", "5", "--json", trace)
    assert got == exp and len(got["log"]) > 100


def test_periods(reef_bin):
    trace = KERNEL[0]
    period = ('irq : $evt.$name == "irq_handler_entry" : $evt.$name == "irq_handler_exit"'
              ' && $evt.irq == $begin.$evt.irq && $evt.cpu_id == $begin.$evt.cpu_id')
    got = reef.periods(trace, period=period, captures="irq : irq = $evt.irq",
                       group_by="irq", log=True, top=3)
    exp = cli(reef_bin, "periods", "--period", period, "--period-captures",
              "irq : irq = $evt.irq", "--group-by", "irq", "--log", "--stats",
              "--top", "3", "--json", trace)
    assert got == exp and got["stats"]


ANALYSES = [
    ("cputop", {}, []),
    ("cputop", {"limit": 3, "cpu": [0, 1]}, ["--limit", "3", "--cpu", "0,1"]),
    ("syscallstats", {}, []),
    ("irqstats", {}, []),
    ("irqlog", {}, []),
    ("irqfreq", {"freq_resolution": 7}, ["--freq-resolution", "7"]),
    ("schedstats", {"total": True, "per_prio": True}, ["--total", "--per-prio"]),
    ("schedlog", {}, []),
    ("schedtop", {"limit": 4}, ["--limit", "4"]),
    ("schedfreq", {}, []),
    ("memtop", {}, []),
    ("iolatency", {}, []),
    ("iolatencyfreq", {}, []),
    ("iolatencytop", {}, []),
    ("iolog", {}, []),
    ("iousagetop", {"limit": 0}, ["--limit", "unlimited"]),
    ("syscallstats", {"no_intersection": True, "tid": [407]}, ["--no-intersection", "--tid", "407"]),
]


@pytest.mark.parametrize("trace", KERNEL)
@pytest.mark.parametrize("name,opts,args", ANALYSES,
                         ids=[f"{a[0]}{i}" for i, a in enumerate(ANALYSES)])
def test_analyses_equal_lami(reef_bin, trace, name, opts, args):
    got = getattr(reef, name)(trace, **opts)
    exp = cli(reef_bin, name, "--lami", *args, trace)
    assert got == exp
    if trace == KERNEL[0]:
        # (uneven-streams has no IRQ events: empty tables there)
        assert got["results"], "an analysis with no table compares nothing"


def test_analysis_window(reef_bin):
    trace = KERNEL[0]
    got = reef.cputop(trace, begin="08:36:02", end="08:36:05")
    exp = cli(reef_bin, "cputop", "--lami", "--begin", "08:36:02", "--end", "08:36:05", trace)
    assert got == exp


def test_analysis_bad_option():
    with pytest.raises(ValueError):
        reef.cputop(KERNEL[0], nonsense=1)
