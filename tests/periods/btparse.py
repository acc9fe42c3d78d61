"""Events of a trace as babeltrace2 prints them, parsed back into Python.

Independent of reef: runs `babeltrace2 --clock-seconds --no-delta` and
reads its text. Each event is a dict: `ts` (ns from the clock's origin, None without a clock),
`name`, `fields` (every top-level field of every printed scope, the payload
winning over contexts on a name clash, as a plain `$evt.NAME` lookup does in
reef), `cpu_id`/`tid` when printed.
"""

import re
import subprocess

_HEAD = re.compile(r"^(?:\[(-?)(\d+)\.(\d{9})\] )?(?:(\S+) )?(\S+): (.*)$")


def _value(s, i):
    """Parses one value at s[i:]; returns (value, next index)."""
    c = s[i]
    if c == '"':
        out = []
        i += 1
        while s[i] != '"':
            if s[i] == "\\":
                i += 1
                out.append({"n": "\n", "t": "\t", "r": "\r"}.get(s[i], s[i]))
            else:
                out.append(s[i])
            i += 1
        return "".join(out), i + 1
    if c in "{[":
        close = "}" if c == "{" else "]"
        i += 1
        items = {}
        while True:
            while s[i] == " ":
                i += 1
            if s[i] == close:
                return items, i + 1
            m = re.compile(r"([^ =]+) = ").match(s, i)
            key, i = m.group(1), m.end()
            items[key], i = _value(s, i)
            if s[i] == ",":
                i += 1
    if c == "(":
        # Enumeration / variant: ( "LABEL" : container = N ) -> N
        m = re.compile(r'\( (?:"(?:[^"\\]|\\.)*"|\{[^}]*\}) : container = (-?\w+) \)').match(s, i)
        return _num(m.group(1)), m.end()
    m = re.compile(r"[^ ,}\]]+").match(s, i)
    return _num(m.group(0)), m.end()


def _num(t):
    try:
        if t.lower().startswith(("0x", "-0x")):
            return int(t, 16)
        if re.fullmatch(r"-?0[0-7]+", t):
            return int(t, 8)
        return int(t)
    except ValueError:
        return float(t)


def parse_line(line):
    m = _HEAD.match(line)
    if not m:
        raise ValueError("unexpected babeltrace2 line: " + line)
    sign, sec, nsec, _host, name, rest = m.groups()
    ts = None if sec is None else int(sec) * 1_000_000_000 + int(nsec)
    if sign:
        ts = -ts
    fields = {}
    i = 0
    groups = []
    while i < len(rest):
        if rest[i] in ", ":
            i += 1
            continue
        g, i = _value(rest, i)
        groups.append(g)
    for g in groups:  # later groups (payload last) win
        fields.update(g)
    return {"ts": ts, "name": name, "fields": fields, "line": line}


def run(trace):
    """babeltrace2's (stdout, stderr) on the trace."""
    p = subprocess.run(
        ["babeltrace2", "--clock-seconds", "--no-delta", trace],
        check=True,
        capture_output=True,
        text=True,
        env={"TZ": "UTC", "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    return p.stdout, p.stderr


def events(trace):
    return [parse_line(l) for l in run(trace)[0].splitlines()]
