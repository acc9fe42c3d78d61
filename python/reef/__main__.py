"""`python -m reef print|activities|keep-bits --script FILE.py ...`: the
reading commands with a Python script. The `reef` binary does not link
Python; it runs this module for its `--script` options.

    keep-bits:   the script's `keep(event) -> bool` over a reading, sent as
                 bits on stdout (frames: a little-endian u32 count of
                 events, then that many bits, least significant first; a
                 count of 0 ends); what every reading command's `--script`
                 asks for (see reef-read's `script.rs`).
    print:       the script's `keep(event)` keeps events as `--filter`
                 does; output as `reef print`'s (default format).
    activities:  the script's activity decoder (see `reef.activities`);
                 output as `reef activities --json`.
    plugin-describe, plugin-source, plugin-sink:
                 Python plugins (see `reef.plugin`): their description as
                 JSON, a source's conversion of a file into a CTF
                 directory, a sink over a reading.

A script error prints the script's traceback and the event it failed on,
and exits with status 1; a reading error prints reef's message after what
was read before it, and exits with status 1.
"""

import argparse
import json
import sys
import traceback

import reef


def read_args(p):
    p.add_argument("paths", nargs="+")
    p.add_argument("--script", required=True, metavar="FILE.py")
    p.add_argument("--filter", metavar="EXPR")
    p.add_argument("-j", "--workers", type=int)


def script_failed(e):
    traceback.print_exception(type(e), e, e.__traceback__)
    ev = getattr(e, "reef_event", None)
    where = f" on this event:\n{ev}" if ev is not None else ""
    print(f"reef: error: the script failed{where}", file=sys.stderr)
    return 1


def cmd_print(a):
    ns = reef.load_script(a.script)
    keep = ns.get("keep")
    if not callable(keep):
        print(f"reef: error: {a.script}: no keep(event) function", file=sys.stderr)
        return 2
    out = sys.stdout
    try:
        for m in reef.open(*a.paths, begin=a.begin, end=a.end, filter=a.filter,
                           workers=a.workers, keep=keep):
            if type(m) is reef.Event:
                out.write(str(m))
                out.write("\n")
            else:
                out.flush()
                print(str(m), file=sys.stderr)
    except reef.Error as e:
        out.flush()
        print(f"reef: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except Exception as e:  # the script's
        out.flush()
        return script_failed(e)
    return 0


def cmd_keep_bits(a):
    """One bit per event of the reading: what `keep` says of it."""
    ns = reef.load_script(a.script)
    keep = ns.get("keep")
    if not callable(keep):
        print(f"reef: error: {a.script}: no keep(event) function", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    Event = reef.Event
    frame = bytearray()
    acc = nbits = 0

    def flush():
        nonlocal frame, acc, nbits
        if nbits == 0:
            return
        if nbits % 8:
            frame.append(acc)
        out.write(nbits.to_bytes(4, "little"))
        out.write(frame)
        out.flush()
        frame = bytearray()
        acc = nbits = 0

    try:
        reading = reef.open(*a.paths, begin=a.begin, end=a.end, filter=a.filter,
                            workers=a.workers, gmt=a.gmt)
        for m in reading:
            if type(m) is not Event:
                continue
            try:
                kept = bool(keep(m))
            except Exception as e:
                e.reef_event = m
                raise
            if kept:
                acc |= 1 << (nbits % 8)
            nbits += 1
            if nbits % 8 == 0:
                frame.append(acc)
                acc = 0
                if nbits == 32768:
                    flush()
        flush()
        out.write(b"\0\0\0\0")
        out.flush()
    except reef.Error:
        # The reading's own error: the command meets it too, after the
        # same events; end normally.
        flush()
        out.write(b"\0\0\0\0")
        out.flush()
    except BrokenPipeError:
        return 0
    except Exception as e:  # the script's
        try:
            flush()
        except BrokenPipeError:
            return 0
        return script_failed(e)
    return 0


def cmd_activities(a):
    try:
        res = reef.activities(*a.paths, filter=a.filter, start=a.start, stop=a.stop,
                              workers=a.workers, decoder=a.script,
                              log=a.log or not (a.stats or a.freq or a.top is not None),
                              stats=a.stats or not (a.log or a.freq or a.top is not None),
                              freq=a.freq_resolution if a.freq else None, top=a.top)
    except reef.Error as e:
        print(f"reef: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        return script_failed(e)
    json.dump(res, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="reef", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("print", help="events kept by the script's keep(event)")
    read_args(pp)
    pp.add_argument("--begin", metavar="TIME")
    pp.add_argument("--end", metavar="TIME")
    pk = sub.add_parser("keep-bits", help="keep(event) of every event, as bits on stdout")
    read_args(pk)
    pk.add_argument("--begin", metavar="TIME")
    pk.add_argument("--end", metavar="TIME")
    pk.add_argument("--gmt", action="store_true")
    pa = sub.add_parser("activities", help="activities of the script's decoder, as JSON")
    read_args(pa)
    pa.add_argument("--from", dest="start", metavar="TIME")
    pa.add_argument("--to", dest="stop", metavar="TIME")
    pa.add_argument("--log", action="store_true")
    pa.add_argument("--stats", action="store_true")
    pa.add_argument("--freq", action="store_true")
    pa.add_argument("--freq-resolution", type=int, default=20)
    pa.add_argument("--top", type=int)
    pa.add_argument("--json", action="store_true", help="(always JSON)")
    pd = sub.add_parser("plugin-describe", help="a plugin file's plugins, as JSON")
    pd.add_argument("plugin")
    ps = sub.add_parser("plugin-source", help="a source's conversion of PATH into the CTF directory DIR")
    ps.add_argument("plugin")
    ps.add_argument("name")
    ps.add_argument("path")
    ps.add_argument("dir")
    pz = sub.add_parser("plugin-sink", help="a sink over a reading")
    pz.add_argument("plugin")
    pz.add_argument("name")
    pz.add_argument("--args")
    pz.add_argument("--begin", metavar="TIME")
    pz.add_argument("--end", metavar="TIME")
    pz.add_argument("--gmt", action="store_true")
    pz.add_argument("--filter", metavar="EXPR")
    pz.add_argument("-j", "--workers", type=int)
    pz.add_argument("paths", nargs="+")
    a = p.parse_args(argv)
    if a.cmd.startswith("plugin-"):
        from . import plugin
        if a.cmd == "plugin-describe":
            return plugin.main_describe(a.plugin)
        if a.cmd == "plugin-source":
            return plugin.run_source(a.plugin, a.name, a.path, a.dir)
        return plugin.run_sink(a.plugin, a.name, a.args, a.paths, a.begin, a.end, a.filter, a.workers)
    cmds = {"print": cmd_print, "activities": cmd_activities, "keep-bits": cmd_keep_bits}
    return cmds[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
