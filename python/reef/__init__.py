"""reef from Python: read CTF traces (LTTng, libreef, barectf) with reef's
reading library, and compute what the `reef` commands compute.

    import reef
    for msg in reef.open("my-trace"):
        if isinstance(msg, reef.Event):
            print(msg.name, msg.timestamp, msg["tid"])

Messages come in babeltrace2's order (the order of `reef print`): `Event`s
and `Discarded` notices (discarded events, missing packets). A trace that
cannot be read raises `reef.Error` (with `file` and `offset`) once every
message before the problem has been given.

Field values are Python ints, floats, strs (bytes when a string is not
UTF-8), lists (arrays, sequences) and dicts (structures); a variant gives
its selected option's value; an enumeration gives a `reef.Enum`, an int
whose `labels` are the labels mapping its value.
"""

from . import _reef
from ._reef import ArrowStream, Discarded, Error, Event, Messages, Stream

__version__ = _reef.__version__

__all__ = [
    "ArrowStream", "Discarded", "Enum", "Reading", "Error", "Event", "Messages", "Stream",
    "open", "stats", "activities", "periods", "analysis", "cputop",
    "syscallstats", "irqstats", "irqlog", "irqfreq", "schedstats",
    "schedlog", "schedtop", "schedfreq", "memtop", "iolatency",
    "iolatencyfreq", "iolatencytop", "iolog", "iousagetop", "listen",
    "__version__",
]


class Enum(int):
    """An enumeration field's value: an int, with `labels` (a tuple of the
    labels whose ranges hold it; empty when none does)."""

    def __new__(cls, value, labels=()):
        self = super().__new__(cls, value)
        self.labels = tuple(labels)
        return self

    def __repr__(self):
        return f"Enum({int(self)}, labels={self.labels!r})"


class Reading(_reef.Messages):
    """The messages of `reef.open()`. `to_arrow()`, `to_pandas()` and
    `to_polars()` read the same traces again, into tables.

    It has one position: `next()`, a second loop, or a loop left by
    `break` go on where the last one stopped. Threads may iterate one
    Reading at once: its messages are shared out, each to one of them,
    once, and each thread gets its share in the reading's order (a
    thread waiting for the next messages does not hold the GIL). `str()`
    of an event gives its delta from the event before it in the
    reading, whichever thread got that one. A reading stopped by a
    `reef.Error` raises it again at every later `next()` or loop: it
    never looks like a reading that ended."""

    def arrow(self, table="events", batch_rows=65536):
        """One table as an Arrow C stream (an object with
        `__arrow_c_stream__`, which pyarrow, polars and pandas take without
        a copy). Tables, as `reef_arrow` makes them: `events` (one row per
        event: seq, ts, name, stream_id, stream, cpu, tid, pid, procname,
        loglevel; `trace` too with several traces), and one per event class
        by its name (seq, ts, cpu, then `stream_ctx.F`, `ctx.F` and the
        payload's fields, flattened with dots; an enumeration's label in
        `F_label`)."""
        return self.arrow_stream(table, batch_rows)

    def to_arrow(self, table="events", batch_rows=65536):
        """One table as a `pyarrow.RecordBatchReader` (streamed: batches of
        `batch_rows` rows read as they are pulled); `.read_all()` makes it
        a `pyarrow.Table`. Needs pyarrow; without it use `arrow()`."""
        import pyarrow
        return pyarrow.RecordBatchReader.from_stream(self.arrow(table, batch_rows))

    def to_pandas(self, table="events"):
        """One table as a pandas DataFrame (through pyarrow)."""
        return self.to_arrow(table).read_all().to_pandas()

    def to_polars(self, table="events"):
        """One table as a polars DataFrame."""
        import polars
        return polars.DataFrame(self.arrow(table))


def _paths(paths):
    if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
        paths = paths[0]
    return [str(p) for p in paths]


def open(*paths, begin=None, end=None, filter=None, workers=None, keep=None, gmt=False):
    """The messages of the traces under `paths`, merged in time order.

    `begin`/`end`: babeltrace2's `--begin`/`--end` formats (str), or ns from
    the origin (int). `filter`: an expression of `reef print --filter`'s
    language. `keep`: a function of an event, false for the events to skip
    (after `filter`; notices are kept); an exception it raises stops the
    iteration, with a note naming the event. `workers`: decoding threads
    (default: 1 for iterating, the Python loop being slower than one; the
    CPUs, at most 8, for `to_arrow()`). `gmt`: read wall-clock `begin`/`end`
    in UTC rather than the local time zone.
    """
    return Reading(_paths(paths), begin, end, filter, workers, keep, gmt)


def load_script(path):
    """Runs a script file and returns its namespace (a dict): scripts
    define `keep(event) -> bool` and/or an activity decoder class."""
    import runpy
    return runpy.run_path(str(path), run_name="__reef_script__")


def decoder_of(ns):
    """A script's activity decoder class: `Decoder`, else the one class
    of the script with an `event` method."""
    if isinstance(ns.get("Decoder"), type):
        return ns["Decoder"]
    found = [v for v in ns.values() if isinstance(v, type) and callable(getattr(v, "event", None))
             and getattr(v, "__module__", None) == "__reef_script__"]
    if len(found) != 1:
        raise ValueError("the script defines no activity decoder (a class `Decoder`, "
                         "or one class with an `event` method)")
    return found[0]


def stats(*paths, begin=None, end=None, filter=None, workers=None):
    """What `reef stats --json` gives, as a dict."""
    return _reef.stats(_paths(paths), begin, end, filter, workers)


def activities(*paths, begin=None, end=None, key=None, filter=None, start=None,
               stop=None, workers=None, log=True, stats=True, freq=None,
               top=None, decoder=None, keep=None):
    """What `reef activities --json` gives: `begin`/`end` are the
    `--begin`/`--end` expressions, `key` the `--key` fields, `start`/`stop`
    the `--from`/`--to` times, `freq` the `--freq-resolution` when a
    distribution is wanted, `top` N for `--top N`.

    Or, with `decoder` (a class, or a script's path): activities found by
    Python code. An instance is made per reading of the trace (`freq` needs
    two); its `event(ev)` receives every event in order and returns None,
    an activity or an iterable of them; `finish()` (optional) is called at
    the end, `unfinished()` (optional) gives {name: count}. An activity is a
    tuple `(name, begin, end, row, attributes)` (row and attributes
    optional), or a dict or object with those names: begin and end in ns
    from the origin, `row` the group its statistics are counted in (as
    `--key`'s values), `attributes` a dict (the log's captures).

    `keep`: a function of an event, false for the events the decoder must
    not see (after `filter`, as `reef.open`'s); a script given as
    `decoder` brings its own `keep(event)` when it defines one. It is
    called once per event even when the reports read the trace twice
    (`freq`): the later passes reuse its verdicts."""
    if decoder is not None:
        if not isinstance(decoder, type):
            ns = load_script(decoder)
            decoder = decoder_of(ns)
            if keep is None and callable(ns.get("keep")):
                keep = ns["keep"]
        r = Reading(_paths(paths), start, stop, filter, workers, keep)
        return _reef.decode_activities(r, decoder, log, stats, freq, top)
    if keep is not None:
        raise TypeError("activities(keep=...) applies to a decoder; with begin/end "
                        "expressions use filter=, or `reef activities --script`")
    if begin is None or end is None:
        raise TypeError("activities() needs begin and end expressions, or a decoder")
    return _reef.activities(_paths(paths), begin, end, key, filter, start,
                            stop, workers, log, stats, freq, top)


def periods(*paths, period, captures=(), group_by=(), begin=None, end=None,
            filter=None, workers=None, log=False, stats=True, freq=None,
            top=None):
    """What `reef periods --json` gives: `period` one definition or a list
    (`NAME[(PARENT)] : BEGIN_EXPR [: END_EXPR]`), `captures` the
    `--period-captures`, `group_by` capture names."""
    if isinstance(period, str):
        period = [period]
    if isinstance(captures, str):
        captures = [captures]
    if isinstance(group_by, str):
        group_by = [group_by]
    return _reef.periods(_paths(paths), list(period), list(captures),
                         list(group_by), begin, end, filter, workers, log,
                         stats, freq, top)


def analysis(name, *paths, begin=None, end=None, **options):
    """A kernel analysis by its `reef` command's name: the `--lami`
    results (a dict with `results`: one table per entry, `class`, `time-range`
    and `data`). Options as the command's, with `_` for `-`: `cpu`, `tid`,
    `procname` (lists), `min`/`max` (µs), `irq`, `softirq`, `minsize`,
    `maxsize`, `limit`, `freq_resolution`, `freq_uniform`, `freq_series`,
    `total`, `per_tid`, `per_prio`, `no_intersection`."""
    return _reef.analysis(name, _paths(paths), begin, end, options)


def _analysis(name):
    def run(*paths, begin=None, end=None, **options):
        return analysis(name, *paths, begin=begin, end=end, **options)
    run.__name__ = name
    run.__doc__ = f"`reef {name} --lami` results, as a dict (see `analysis`)."
    return run


cputop = _analysis("cputop")
syscallstats = _analysis("syscallstats")
irqstats = _analysis("irqstats")
irqlog = _analysis("irqlog")
irqfreq = _analysis("irqfreq")
schedstats = _analysis("schedstats")
schedlog = _analysis("schedlog")
schedtop = _analysis("schedtop")
schedfreq = _analysis("schedfreq")
memtop = _analysis("memtop")
iolatency = _analysis("iolatency")
iolatencyfreq = _analysis("iolatencyfreq")
iolatencytop = _analysis("iolatencytop")
iolog = _analysis("iolog")
iousagetop = _analysis("iousagetop")


def listen(address, **kwargs):
    """Events of a live libreef stream (`REEF_LISTEN`), as `reef listen`
    receives them."""
    return _reef.listen(address, **kwargs)
