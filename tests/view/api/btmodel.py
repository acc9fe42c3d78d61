"""The oracle of `reef view`'s API, computed from babeltrace2's text only.

Independent of reef: every number here comes from babeltrace2's output,
parsed by this file (standard library only), and from the definitions of
docs/view-api.md applied by brute force.

babeltrace2 runs (all with TZ=UTC):
  * `babeltrace2 --clock-seconds -n all TRACE`: per event the exact time
    (seconds.nanoseconds from the clock's origin), the name and every scope
    by name (`stream.packet.context`, `stream.event.context`,
    `event.context`, `event.fields`): the kernel `cpu_id` comes from the
    packet context, payload fields from `event.fields`.
  * `babeltrace2 TRACE`: the default lines, which `/api/events` must give
    (the server is started with TZ=UTC too).
  * non-kernel traces only: `babeltrace2 -c sink.text.details TRACE`, whose
    `{Trace N, Stream class ID C, Stream ID S}` line before each
    ``Event `NAME` `` gives the stream of every event (same message order as
    the pretty sink). Stream rows are identified by bt2's stream ID (the
    packet header's `stream_instance_id`); `stream_files` maps it to the file
    (`Stream beginning: Name:`).

  * `babeltrace2 -c sink.text.details TRACE`, read only up to the first
    `Environment` block: a trace is a kernel trace when its environment says
    `domain: kernel` (docs/view-api.md, "Rows").

Kernel event names, as docs/view-api.md lists them: system call entry
`syscall_entry_*` or (older LTTng) `sys_*`; exit `syscall_exit_*` or
`exit_syscall`; IRQ entry `irq_handler_entry`, `softirq_entry`,
`irq_softirq_entry`; IRQ exit `irq_handler_exit`, `softirq_exit`,
`irq_softirq_exit`; wakeups `sched_wakeup`, `sched_wakeup_new`,
`sched_waking`.
"""

import bisect
import os
import re
import subprocess

ON_THREAD = (1, 2, 3)
WAKEUPS = frozenset(("sched_wakeup", "sched_wakeup_new", "sched_waking"))
IRQ_ENTRY = frozenset(("irq_handler_entry", "softirq_entry", "irq_softirq_entry"))
IRQ_EXIT = frozenset(("irq_handler_exit", "softirq_exit", "irq_softirq_exit"))
ARROW_MARKS_MAX = 200_000  # a window with more marks gets no arrows


# --------------------------------------------------------------------------
# Parsing babeltrace2's pretty text


_ENUM = re.compile(r'\( (?:"(?:[^"\\]|\\.)*"|\{ (?:"(?:[^"\\]|\\.)*"(?:, )?)* \}|<unknown>) : container = (-?\w+) \)')


class _P:
    """A tiny recursive-descent reader of babeltrace2's value syntax."""

    __slots__ = ("s", "i")

    def __init__(self, s):
        self.s = s
        self.i = 0

    def skip_ws(self):
        s, i = self.s, self.i
        while i < len(s) and s[i] == " ":
            i += 1
        self.i = i

    def string(self):
        s = self.s
        i = self.i + 1
        out = []
        while s[i] != '"':
            if s[i] == "\\":
                i += 1
                out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(s[i], s[i]))
            else:
                out.append(s[i])
            i += 1
        self.i = i + 1
        return "".join(out)

    def token(self):
        s, i = self.s, self.i
        j = i
        while j < len(s) and s[j] not in ",}] ":
            j += 1
        self.i = j
        return _num(s[i:j])

    def value(self):
        self.skip_ws()
        c = self.s[self.i]
        if c == '"':
            return self.string()
        if c == "{":
            return self.compound("}")
        if c == "[":
            return self.compound("]")
        if c == "(":
            # enumeration: ( "L" : container = N ), ( { "A", "B" } : container = N ),
            # ( <unknown> : container = N ); or a parenthesised scalar: (16946)
            m = _ENUM.match(self.s, self.i)
            if m:
                self.i = m.end()
                return _num(m.group(1))
            j = self.s.index(")", self.i)
            inner = self.s[self.i + 1 : j]
            self.i = j + 1
            return _num(inner.strip())
        return self.token()

    def compound(self, close):
        s = self.s
        self.i += 1
        items = {}
        while True:
            self.skip_ws()
            if s[self.i] == close:
                self.i += 1
                return items
            j = s.index(" = ", self.i)
            key = s[self.i : j]
            self.i = j + 3
            items[key] = self.value()
            self.skip_ws()
            if self.i < len(s) and s[self.i] == ",":
                self.i += 1


def _num(t):
    try:
        if t.lower().startswith(("0x", "-0x")):
            return int(t, 16)
        if re.fullmatch(r"-?0[0-7]+", t):
            return int(t, 8)
        return int(t)
    except ValueError:
        try:
            return float(t)
        except ValueError:
            return t


def parse_all_line(line):
    """One line of `babeltrace2 --clock-seconds -n all`: a dict of its
    top-level items (timestamp kept as text)."""
    p = _P(line)
    out = {}
    s = line
    while p.i < len(s):
        p.skip_ws()
        if p.i >= len(s):
            break
        if s[p.i] == ",":
            p.i += 1
            continue
        j = s.find(" = ", p.i)
        if j < 0:
            break
        key = s[p.i : j]
        p.i = j + 3
        if key in ("timestamp", "delta", "name") or key.startswith("trace"):
            k = s.find(", ", p.i)
            k = len(s) if k < 0 else k
            out[key] = s[p.i : k]
            p.i = k
        else:
            out[key] = p.value()
    return out


_STR = re.compile(r'"(?:[^"\\]|\\.)*"')


def lines_equal(bt2, other):
    """Equal modulo babeltrace2 2.0.4's stale strings: where `other` has an
    empty string literal, bt2 may show a stale one."""
    if bt2 == other:
        return True
    a_str = _STR.findall(bt2)
    b_str = _STR.findall(other)
    if len(a_str) != len(b_str) or _STR.sub('""', bt2) != _STR.sub('""', other):
        return False
    return all(x == y or y == '""' for x, y in zip(a_str, b_str))


_DELTA = re.compile(r"^(\[[^\]]*\] )\((\+[^)]*)\)")


def split_delta(line):
    """(the line with its `(+delta)` blanked, the delta)."""
    m = _DELTA.match(line)
    if not m:
        return line, None
    return m.group(1) + "(+)" + line[m.end():], m.group(2)


def run_bt2(args):
    env = dict(os.environ, TZ="UTC", LC_ALL="C")
    r = subprocess.run(["babeltrace2"] + args, capture_output=True, env=env)
    return r.returncode, r.stdout.decode("utf-8", "surrogateescape"), r.stderr.decode("utf-8", "replace")


def trace_environment(path):
    """The first trace's environment, as babeltrace2's details sink prints
    it (read up to the end of the first `Environment` block only)."""
    env = {}
    proc = subprocess.Popen(["babeltrace2", "-c", "sink.text.details", path], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, TZ="UTC", LC_ALL="C"))
    try:
        inside = None
        for raw in proc.stdout:
            ln = raw.decode("utf-8", "replace").rstrip("\n")
            if inside is None:
                m = re.match(r"^( *)Environment \(\d+ entr", ln)
                if m:
                    inside = len(m.group(1)) + 2
                continue
            if len(ln) - len(ln.lstrip(" ")) != inside:
                break
            k, _, v = ln.strip().partition(": ")
            env[k] = v
    finally:
        proc.kill()  # our own child, by its Popen object
        proc.wait()
        proc.stdout.close()
    return env


def format_delta(ns):
    """babeltrace2's `(+S.NNNNNNNNN)` text of a delta in ns (None: the first
    event of a list, `+?.?????????`)."""
    if ns is None:
        return "+?.?????????"
    return "+%d.%09d" % (ns // 1_000_000_000, ns % 1_000_000_000)


def with_delta(line, delta_text):
    """`line` with its `(+...)` delta replaced by `(delta_text)`."""
    m = _DELTA.match(line)
    if not m:
        return line
    return m.group(1) + "(" + delta_text + ")" + line[m.end():]


# --------------------------------------------------------------------------
# The model


class Event:
    __slots__ = ("i", "t", "abs", "name", "cpu", "stream", "pkt", "sec", "ec", "f", "k", "row")

    def field(self, name):
        """`$evt.NAME`: payload, event context, stream event context, (event
        header: not printed by bt2), packet context; one leading `_` may be
        omitted. Returns None when missing."""
        for scope in (self.f, self.ec, self.sec, self.pkt):
            if scope is None:
                continue
            if name in scope:
                return scope[name]
            if "_" + name in scope:
                return scope["_" + name]
        return None


class Row:
    def __init__(self, kind, ident):
        self.kind = kind
        self.ident = ident
        self.marks_t = []  # times of marks, print order
        self.marks_i = []  # event indices
        self.ch_t = []  # change times (value(t) != value(t-1))
        self.ch_v = []  # value from that time on
        self.cum_on = []  # on ns in [ch_t[0], ch_t[i])
        self.pid = None
        self.pid_conflict = False

    def key(self):
        return (self.kind, self.ident)

    def value(self, t):
        i = bisect.bisect_right(self.ch_t, t) - 1
        return -1 if i < 0 else self.ch_v[i]

    def is_on(self, v):
        if self.kind == "cpu":
            return v > 0
        if self.kind == "thread":
            return v in ON_THREAD
        return False

    def on_before(self, x):
        """Number of ns t in [0, x) at which the row is on (x >= 0)."""
        i = bisect.bisect_right(self.ch_t, x) - 1
        if i < 0:
            return 0
        return self.cum_on[i] + ((x - self.ch_t[i]) if self.is_on(self.ch_v[i]) else 0)

    def finish(self):
        acc = 0
        self.cum_on = []
        for i, t in enumerate(self.ch_t):
            if i > 0 and self.is_on(self.ch_v[i - 1]):
                acc += t - self.ch_t[i - 1]
            self.cum_on.append(acc)


class Trace:
    def __init__(self, path):
        self.path = path
        rc, out, err = run_bt2(["--clock-seconds", "-n", "all", path])
        self.bt2_rc = rc
        self.bt2_err = err
        all_lines = out.splitlines()
        rc2, out2, _ = run_bt2([path])
        self.lines = out2.splitlines()  # default lines (TZ=UTC)
        n = min(len(all_lines), len(self.lines))
        self.events = []
        for i in range(n):
            d = parse_all_line(all_lines[i])
            e = Event()
            e.i = i
            sec, ns = d["timestamp"].split(".")
            e.abs = int(sec) * 1_000_000_000 + int(ns)
            e.name = d["name"]
            e.pkt = d.get("stream.packet.context")
            e.sec = d.get("stream.event.context")
            e.ec = d.get("event.context")
            e.f = d.get("event.fields") or {}
            e.cpu = e.pkt.get("cpu_id") if isinstance(e.pkt, dict) else None
            e.stream = None
            e.row = None
            self.events.append(e)
        self.lines = self.lines[:n]
        self.origin = self.events[0].abs if self.events else 0
        for e in self.events:
            e.t = e.abs - self.origin
        self.times = [e.t for e in self.events]
        self.end = self.times[-1] if self.times else 0
        self.env = trace_environment(path)
        self.kernel = self.env.get("domain") == "kernel"
        # A trace read from ftrace keeps ftrace's names (docs/kernel.md):
        # its thread ids are `pid`, `prev_pid`, `next_pid`, `child_pid`
        # (a child's process id is not recorded), its system calls
        # `sys_enter*` / `sys_exit*`. Mapped here onto LTTng's (`e.k`; the
        # fields as bt2 names them stay in `e.f`).
        self.ftrace = self.env.get("tracer_name") == "ftrace"
        for e in self.events:
            e.k = e.f  # the fields the kernel model reads
        if self.ftrace:
            for e in self.events:
                f = e.k = dict(e.f)
                if e.name == "sched_switch":
                    f["prev_tid"], f["next_tid"] = f.pop("prev_pid", None), f.pop("next_pid", None)
                elif e.name in WAKEUPS or e.name == "sched_process_exit":
                    f["tid"] = f.pop("pid", None)
                elif e.name == "sched_process_fork":
                    f["child_tid"] = f.pop("child_pid", None)
                    f.pop("parent_pid", None)
        self.rows = {}  # (kind, id) -> Row
        self.anomalies = []
        if self.kernel:
            self._kernel()
        else:
            self._other()
        for r in self.rows.values():
            r.finish()

    # ----- rows and marks

    def row(self, kind, ident):
        k = (kind, ident)
        r = self.rows.get(k)
        if r is None:
            r = self.rows[k] = Row(kind, ident)
        return r

    def _other(self):
        vtid = any(e.field("vtid") is not None and ((e.sec or {}).get("vtid") is not None or (e.ec or {}).get("vtid") is not None) for e in self.events)
        self.stream_files = {}
        if vtid:
            for e in self.events:
                v = (e.sec or {}).get("vtid", (e.ec or {}).get("vtid"))
                r = self.row("thread", v)
                p = (e.sec or {}).get("vpid", (e.ec or {}).get("vpid"))
                if p is not None:
                    r.pid = p
                e.row = r.key()
                r.marks_t.append(e.t)
                r.marks_i.append(e.i)
            return
        rc, out, _ = run_bt2(["-c", "sink.text.details", self.path])
        streams = []
        cur = None
        name_re = re.compile(r"^\{Trace (\d+), Stream class ID (\d+), Stream ID (\d+)\}$")
        pending = None
        for ln in out.splitlines():
            m = name_re.match(ln)
            if m:
                cur = (int(m.group(1)), int(m.group(3)))
                continue
            if ln.startswith("Event `") and cur is not None:
                streams.append(cur)
                continue
            if ln == "Stream beginning:":
                pending = cur
                continue
            if pending is not None and ln.startswith("  Name: "):
                self.stream_files[pending] = ln[len("  Name: ") :]
                pending = None
        if len(streams) != len(self.events):
            raise RuntimeError(
                "details sink gives %d events, pretty sink %d" % (len(streams), len(self.events))
            )
        for e, s in zip(self.events, streams):
            e.stream = s[1]
            r = self.row("stream", s[1])
            e.row = r.key()
            r.marks_t.append(e.t)
            r.marks_i.append(e.i)

    def _kernel(self):
        def is_sys_entry(n):
            if self.ftrace:
                return n.startswith("sys_enter")
            return n.startswith("syscall_entry_") or n.startswith("sys_")

        def is_sys_exit(n):
            if self.ftrace:
                return n.startswith("sys_exit")
            return n.startswith("syscall_exit_") or n == "exit_syscall"

        irq_in = IRQ_ENTRY
        irq_out = IRQ_EXIT
        wake = WAKEUPS

        # rows: cpus, then threads from the events the doc lists
        self.tid_sources = {}
        for e in self.events:
            if e.cpu is not None:  # no cpu_id: a mark on no row
                r = self.row("cpu", e.cpu)
                e.row = r.key()
                r.marks_t.append(e.t)
                r.marks_i.append(e.i)
            n = e.name
            tids = []
            if n == "sched_switch":
                tids = [e.k.get("prev_tid"), e.k.get("next_tid")]
            elif n in wake or n == "sched_process_exit":
                tids = [e.k.get("tid")]
            elif n == "sched_process_fork":
                tids = [e.k.get("child_tid")]
            elif n == "lttng_statedump_process_state":
                tids = [e.k.get("tid")]
            for t in tids:
                if t is not None and t != 0:
                    self.row("thread", t)
                    self.tid_sources.setdefault(t, set()).add(n)
        # pid: learnt from statedump and fork (last one wins; a conflict is noted)
        seen = {}
        for e in self.events:
            pairs = []
            if e.name == "sched_process_fork":
                pairs = [(e.k.get("child_tid"), e.k.get("child_pid")), (e.k.get("parent_tid"), e.k.get("parent_pid"))]
            elif e.name == "lttng_statedump_process_state":
                pairs = [(e.k.get("tid"), e.k.get("pid"))]
            for tid, pid in pairs:
                if tid in (None, 0) or pid is None or ("thread", tid) not in self.rows:
                    continue
                if tid in seen and seen[tid] != pid:
                    self.rows[("thread", tid)].pid_conflict = True
                seen[tid] = pid
                self.rows[("thread", tid)].pid = pid

        # values, applied in bt2's order
        val = {}  # (kind,id) -> current value
        assigns = {}  # (kind,id) -> list of (t, value)
        cur = {}  # cpu -> current tid
        depth = {}  # cpu -> irq depth
        insys = {}  # tid -> bool

        def setv(key, t, v):
            val[key] = v
            assigns.setdefault(key, []).append((t, v))

        def tv(tid):
            return val.get(("thread", tid), -1)

        def set_thread(tid, t, v):
            if tid is None:
                return
            if tid == 0:
                val[("thread", 0)] = v  # no row
                return
            setv(("thread", tid), t, v)

        for e in self.events:
            n, c, t = e.name, e.cpu, e.t
            if n == "sched_switch":
                p, ps, nx = e.k.get("prev_tid"), e.k.get("prev_state"), e.k.get("next_tid")
                if tv(p) != 6:  # a dying thread switched away stays exited
                    set_thread(p, t, 4 if ps == 0 else 5)
                set_thread(nx, t, 2 if insys.get(nx, False) else 1)
                cur[c] = nx
                setv(("cpu", c), t, nx)
            elif n in wake:
                tid = e.k.get("tid")
                if tv(tid) in (5, 6, -1):
                    set_thread(tid, t, 4)
            elif is_sys_entry(n):
                if c in cur:
                    u = cur[c]
                    insys[u] = True
                    if tv(u) == 1:
                        set_thread(u, t, 2)
            elif is_sys_exit(n):
                if c in cur:
                    u = cur[c]
                    insys[u] = False
                    if tv(u) == 2:
                        set_thread(u, t, 1)
            elif n in irq_in:
                depth[c] = depth.get(c, 0) + 1
                u = cur.get(c)
                if u is not None and u != 0 and tv(u) in (1, 2):
                    set_thread(u, t, 3)
            elif n in irq_out:
                d0 = depth.get(c, 0)
                depth[c] = max(0, d0 - 1)
                u = cur.get(c)
                if depth[c] == 0 and u is not None and tv(u) == 3:
                    set_thread(u, t, 2 if insys.get(u, False) else 1)
            elif n == "sched_process_exit":
                set_thread(e.k.get("tid"), t, 6)

        for key, lst in assigns.items():
            if key not in self.rows:
                continue
            r = self.rows[key]
            r.assigns = lst
            # the value after every event at the same t
            last_at = {}
            order = []
            for t, v in lst:
                if t not in last_at:
                    order.append(t)
                last_at[t] = v
            prev = -1
            for t in order:
                v = last_at[t]
                if v != prev:
                    r.ch_t.append(t)
                    r.ch_v.append(v)
                    prev = v

    # ----- queries

    def pos(self, frm, skip):
        return bisect.bisect_left(self.times, frm) + skip

    def locate(self, i):
        """(t, skip) of event i, as from/skip locate it."""
        t = self.times[i]
        return t, i - bisect.bisect_left(self.times, t)

    def bucket(self, key, res, j, marks=None):
        """[j, count, first_name, v, changes, on] of row `key`.
        `marks`: optional (times, indices) replacing the row's marks (a filter)."""
        r = self.rows[key]
        a, b = j * res, (j + 1) * res
        mt, mi = marks if marks is not None else (r.marks_t, r.marks_i)
        lo = bisect.bisect_left(mt, a)
        hi = bisect.bisect_left(mt, b)
        count = hi - lo
        first = self.events[mi[lo]].name if count else None
        v = r.value(a)
        changes = bisect.bisect_left(r.ch_t, b) - bisect.bisect_left(r.ch_t, a)
        on = r.on_before(b) - r.on_before(a)
        return [j, count, first, v, changes, on]

    # The doc: a window finer than `finest` whose buckets at `finest` hold
    # more than this many marks is answered at `finest` instead.
    DECODE_MARKS = 100000

    def choose_k(self, frm, to, width, finest=None):
        x = max(1, (to - frm) // width)
        k = x.bit_length() - 1
        if finest and (1 << k) < finest:
            a = frm // finest * finest
            b = ((to - 1) // finest + 1) * finest
            if self.marks_in(a, b) > self.DECODE_MARKS:
                k = finest.bit_length() - 1
        return k, 1 << k

    def window(self, frm, to, width, key, marks=None, finest=None):
        """The buckets the doc says /api/window returns for row `key`."""
        k, res = self.choose_k(frm, to, width, finest)
        r = self.rows[key]
        j0 = frm // res
        j1 = (to - 1) // res
        a, b = j0 * res, (j1 + 1) * res
        mt = marks[0] if marks is not None else r.marks_t
        js = {j0}
        for arr in (mt, r.ch_t):
            lo = bisect.bisect_left(arr, a)
            hi = bisect.bisect_left(arr, b)
            last = None
            for x in arr[lo:hi]:
                jj = x // res
                if jj != last:
                    js.add(jj)
                    last = jj
        return k, res, [self.bucket(key, res, j, marks) for j in sorted(js)]

    def filtered_marks(self, pred, hide_names=(), hide_rows=()):
        """Per row: (times, indices) of the events for which pred holds."""
        out = {k: ([], []) for k in self.rows}
        for e in self.events:
            if e.name in hide_names or e.row in hide_rows:
                continue
            if pred(e):
                out[e.row][0].append(e.t)
                out[e.row][1].append(e.i)
        return out

    def all_arrows(self):
        """Per doc, in the order of the switch-ins: one arrow per
        sched_switch switching in a thread (`next_tid`) that has a wakeup
        (sched_wakeup, sched_wakeup_new, sched_waking: `tid`) since its
        previous switch-in, from the latest such wakeup. Each arrow is
        (tid, from_row, from_t, to_row, to_t)."""
        if not self.kernel:
            return []
        if not hasattr(self, "_arrows"):
            pending = {}  # tid -> latest wakeup event since its last switch-in
            arr = []
            for e in self.events:
                if e.name in WAKEUPS:
                    pending[e.k.get("tid")] = e
                elif e.name == "sched_switch":
                    tid = e.k.get("next_tid")
                    w = pending.pop(tid, None)
                    if w is not None:
                        arr.append((tid, w.row, w.t, e.row, e.t))
            self._arrows = arr
        return self._arrows

    def arrows(self, frm, to):
        """The arrows whose switch-in is in [frm, to), in switch-in order."""
        return [a for a in self.all_arrows() if frm <= a[4] < to]

    def marks_in(self, frm, to):
        """Number of marks (events on a row) with time in [frm, to)."""
        if not hasattr(self, "_mark_times"):
            self._mark_times = [e.t for e in self.events if e.row is not None]
        return bisect.bisect_left(self._mark_times, to) - bisect.bisect_left(self._mark_times, frm)

    def stats(self, frm, to):
        lo = bisect.bisect_left(self.times, frm)
        hi = bisect.bisect_left(self.times, to)
        names = {}
        for e in self.events[lo:hi]:
            names[e.name] = names.get(e.name, 0) + 1
        return hi - lo, names


class LightKernelTrace(Trace):
    """A cheap oracle for a large kernel trace, enough for /api/arrows and
    mark counts: per event its time, name, `cpu_id` (packet context: the
    `{ cpu_id = N }` scope of the default line) and, for sched_switch and the
    wakeups, `next_tid` / `tid`, read from `babeltrace2 --clock-seconds`
    default lines with regular expressions. Meant for traces whose strings
    hold no `tid = ` (synthetic ones)."""

    LINE = re.compile(r"^\[(\d+)\.(\d+)\] \([^)]*\) (?:\S+ )?(\S+): \{ cpu_id = (\d+) \}(?:, \{ ?(.*?) ?\})?$")
    TID = re.compile(r"(?:^|, )tid = (-?\d+)")
    NEXT_TID = re.compile(r"(?:^|, )next_tid = (-?\d+)")

    def __init__(self, path):
        self.path = path
        rc, out, err = run_bt2(["--clock-seconds", path])
        self.bt2_rc, self.bt2_err = rc, err
        self.env = trace_environment(path)
        self.kernel = self.env.get("domain") == "kernel"
        self.events = []
        self.rows = {}
        self.bad_lines = 0
        for i, ln in enumerate(out.splitlines()):
            m = self.LINE.match(ln)
            e = Event()
            e.i = i
            e.f = {}
            e.k = e.f
            if not m:
                self.bad_lines += 1
                continue
            e.abs = int(m.group(1)) * 1_000_000_000 + int(m.group(2))
            e.name = m.group(3)
            e.cpu = int(m.group(4))
            payload = m.group(5) or ""
            if e.name == "sched_switch":
                t = self.NEXT_TID.search(payload)
                e.f["next_tid"] = int(t.group(1)) if t else None
            elif e.name in WAKEUPS:
                t = self.TID.search(payload)
                e.f["tid"] = int(t.group(1)) if t else None
            e.row = ("cpu", e.cpu)
            self.rows.setdefault(e.row, None)
            self.events.append(e)
        self.origin = self.events[0].abs if self.events else 0
        for e in self.events:
            e.t = e.abs - self.origin
        self.times = [e.t for e in self.events]
        self.end = self.times[-1] if self.times else 0


def selftest(tr, rnd, n=300):
    """Cross-checks the bisect-based buckets against per-nanosecond loops
    over small buckets (value(t) by scanning the change list linearly)."""
    keys = sorted(tr.rows, key=str)
    bad = 0
    for _ in range(n):
        key = rnd.choice(keys)
        r = tr.rows[key]
        res = 1 << rnd.randint(0, 6)
        pts = r.ch_t + r.marks_t
        t0 = rnd.choice(pts) if pts and rnd.random() < 0.8 else rnd.randint(0, tr.end)
        j = max(0, t0 // res + rnd.randint(-1, 1))

        def val(t):
            v = -1
            for ct, cv in getattr(r, "assigns", []):
                if ct <= t:
                    v = cv
                else:
                    break
            return v

        ts = range(j * res, (j + 1) * res)
        vals = [val(t) for t in ts]
        prev = val(j * res - 1) if j * res > 0 else -1
        changes = 0
        for v in vals:
            changes += v != prev
            prev = v
        ms = [i for i in range(len(tr.events)) if tr.events[i].row == key and j * res <= tr.events[i].t < (j + 1) * res] if r.marks_t else []
        exp = [j, len(ms), tr.events[ms[0]].name if ms else None, vals[0], changes, sum(1 for v in vals if r.is_on(v))]
        got = tr.bucket(key, res, j)
        if got != exp:
            bad += 1
            print("selftest", key, res, j, "bucket", got, "naive", exp)
    return bad


if __name__ == "__main__":
    import random
    import sys

    for p in sys.argv[1:]:
        tr = Trace(p)
        print(p, "kernel" if tr.kernel else "other", len(tr.events), "events, end", tr.end)
        kinds = {}
        for k in tr.rows:
            kinds[k[0]] = kinds.get(k[0], 0) + 1
        print("  rows:", kinds)
        for k, r in sorted(tr.rows.items(), key=lambda kv: (kv[0][0], kv[0][1]))[:6]:
            print("  ", k, "marks", len(r.marks_t), "changes", len(r.ch_t), "pid", r.pid)
        print("  selftest mismatches:", selftest(tr, random.Random(5), 150))
