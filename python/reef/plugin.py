"""Plugins in Python (docs/plugins.md): a module defining classes derived
from `Source` or `Sink`, each with a `name`. The `reef` binary runs them
through this package (`python -m reef plugin-...`): it lists them with
`reef plugins`, reads files with a source as with a built-in format, and
runs a sink with `reef sink NAME`.

    import reef.plugin

    class Log(reef.plugin.Source):
        name = "mylog"
        suffixes = (".mylog",)

        def read(self, path, out):
            c = out.event_class("line", [("level", "u8"), ("text", "string")])
            s = out.stream("main")
            for ts, level, text in parse(path):
                out.event(s, c, ts, (level, text))
"""

import json
import os
import runpy
import sys
import traceback

from . import _reef

SourceOut = _reef.SourceOut


class Plugin:
    """What every plugin class states."""

    #: Its name on the command line: letters, digits, '-' and '_'.
    name = None
    version = "0.1.0"
    description = ""


class Source(Plugin):
    """Reads a format reef does not know. A file is this source's when it
    starts with `magic` (bytes) or its name ends with one of `suffixes`,
    or when the source is named with `-i NAME`."""

    magic = None
    suffixes = ()

    def read(self, path, out):
        """Delivers the events of the file `path` to `out` (a
        `SourceOut`): `out.clock(frequency, offset_ns)`,
        `out.event_class(name, [(field, type), ...])` (types u8...u64,
        s8...s64, f32, f64, string) and `out.stream(name)` give ids;
        `out.event(stream, class_id, timestamp, values)` one event, in its
        stream's time order; `out.offset(n)` says where in the file the
        source is, for errors."""
        raise NotImplementedError


class Sink(Plugin):
    """Consumes the events of a reading (`reef sink NAME[=ARGS]`)."""

    def __init__(self, args=None):
        self.args = args

    def consume(self, event):
        """Each event (a `reef.Event`) in time order, and each
        discarded-events notice (a `reef.Discarded`)."""

    def finish(self):
        """The reading ended."""


KINDS = ((Source, "source"), (Sink, "sink"))


def load(path):
    """The plugin classes the module file `path` defines, by name."""
    ns = runpy.run_path(str(path), run_name="__reef_plugin__")
    found = {}
    for v in ns.values():
        if isinstance(v, type) and v.__module__ == "__reef_plugin__" and issubclass(v, Plugin) \
                and v not in (Plugin, Source, Sink) and v.name:
            found[v.name] = v
    return found


def describe(path):
    """The plugins of `path` as `reef plugins` lists them (JSON-ready)."""
    out = []
    for name, c in load(path).items():
        kinds = [k for base, k in KINDS if issubclass(c, base)]
        d = {"name": name, "version": str(c.version), "description": str(c.description), "kinds": kinds}
        if issubclass(c, Source):
            m = c.magic
            d["magic"] = m.hex() if isinstance(m, (bytes, bytearray)) else (m.encode().hex() if m else "")
            d["suffixes"] = [str(s) for s in c.suffixes]
        out.append(d)
    return out


def _failed(e, where):
    traceback.print_exception(type(e), e, e.__traceback__)
    return "%s: %s: %s (its traceback is above)" % (where, type(e).__name__, e)


def run_source(plugin, name, path, outdir):
    """Converts `path` with the source `name` of `plugin` into the CTF
    directory `outdir` (the events before an exception are kept; the
    exception becomes the trace's cut). Exit status 0 once the directory
    is written, whatever the source did."""
    try:
        cls = load(plugin).get(name)
        if cls is None or not issubclass(cls, Source):
            print("reef: error: %s: no source named %r" % (plugin, name), file=sys.stderr)
            return 2
    except Exception as e:
        _failed(e, "loading " + str(plugin))
        return 2
    os.makedirs(outdir, exist_ok=True)
    out = SourceOut(path, name, outdir)
    try:
        cls().read(path, out)
    except Exception as e:
        out.fail(_failed(e, "source %s" % name))
    out.finish()
    return 0


def run_sink(plugin, name, args, paths, begin=None, end=None, filter=None, workers=None):
    """Runs the sink `name` of `plugin` over the reading of `paths`."""
    import reef

    cls = load(plugin).get(name)
    if cls is None or not issubclass(cls, Sink):
        print("reef: error: %s: no sink named %r" % (plugin, name), file=sys.stderr)
        return 2
    sink = cls(args)
    n = 0
    try:
        for m in reef.open(*paths, begin=begin, end=end, filter=filter, workers=workers):
            n += 1
            sink.consume(m)
        sink.finish()
    except reef.Error as e:
        print("reef: error: %s" % e, file=sys.stderr)
        return 1
    except Exception as e:
        print("reef: error: " + _failed(e, "sink %s, message %d" % (name, n)), file=sys.stderr)
        return 1
    return 0


def main_describe(path):
    try:
        print(json.dumps(describe(path)))
    except Exception as e:
        print("reef: error: " + _failed(e, "loading " + str(path)), file=sys.stderr)
        return 1
    return 0
