"""to_arrow(): the Arrow tables' rows and values equal what the iterator
gives (itself checked against bt2 in test_read.py)."""

import pyarrow
import pytest

import reef
from conftest import SHARED

KERNEL = str(SHARED / "kernel-traces" / "bug446190")
UST = str(SHARED / "babeltrace-traces" / "succeed" / "multi-domains")


def flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


@pytest.mark.parametrize("trace", [KERNEL, UST])
def test_events_table_equals_iterator(trace):
    evs = [m for m in reef.open(trace) if isinstance(m, reef.Event)]
    t = reef.open(trace).to_arrow(batch_rows=1000).read_all()
    # Several traces: each trace's rows come in their own batches; `seq`
    # is the merged order.
    t = t.sort_by("seq")
    assert t.num_rows == len(evs) > 0
    assert t.column("seq").to_pylist() == list(range(len(evs)))
    assert t.column("ts").to_pylist() == [e.timestamp for e in evs]
    assert t.column("name").to_pylist() == [e.name for e in evs]
    assert t.column("cpu").to_pylist() == [e.stream.cpu for e in evs]


def test_class_table_equals_payloads():
    evs = [(i, m) for i, m in enumerate(m for m in reef.open(KERNEL)
                                        if isinstance(m, reef.Event))]
    sw = [(i, m) for i, m in evs if m.name == "sched_switch"]
    t = reef.open(KERNEL).to_arrow("sched_switch", batch_rows=100).read_all()
    rows = t.to_pylist()
    assert len(rows) == len(sw) > 100
    for row, (i, m) in zip(rows, sw):
        assert row["seq"] == i and row["ts"] == m.timestamp and row["cpu"] == m["cpu_id"]
        assert {k: row[k] for k in m.payload} == m.payload


def test_ust_contexts_and_enums():
    evs = [m for m in reef.open(UST) if isinstance(m, reef.Event)]
    name = evs[-1].name
    mine = [m for m in evs if m.name == name]
    rows = reef.open(UST).to_arrow(name).read_all().sort_by("seq").to_pylist()
    assert len(rows) == len(mine)
    for row, m in zip(rows, mine):
        for scope, prefix in ((m.stream_context, "stream_ctx."), (m.context, "ctx."),
                              (m.payload, "")):
            for k, v in flat(scope, prefix).items():
                if isinstance(v, reef.Enum):
                    assert row[k] == int(v) and row[k + "_label"] in v.labels
                elif isinstance(v, list):
                    assert row[k] == v
                else:
                    assert row[k] == v, k


def test_pandas_and_capsule():
    df = reef.open(KERNEL, filter='$evt.$name == "sched_*"').to_pandas()
    n = sum(1 for m in reef.open(KERNEL, filter='$evt.$name == "sched_*"')
            if isinstance(m, reef.Event))
    assert len(df) == n and set(df["name"]) <= {m for m in df["name"] if m.startswith("sched_")}
    # Any consumer of the PyCapsule interface: pyarrow.table() here.
    t = pyarrow.table(reef.open(KERNEL).arrow())
    assert t.num_rows == 31556 or t.num_rows == sum(
        1 for m in reef.open(KERNEL) if isinstance(m, reef.Event))


def test_unknown_table():
    with pytest.raises(ValueError):
        reef.open(KERNEL).arrow("no_such_event")
