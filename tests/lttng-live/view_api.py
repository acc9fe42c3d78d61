"""Checks of `reef view net://...` through its HTTP API, for run.sh.

  view_api.py grow URL EXPECTED PID ROWS
                                      while process PID runs: the events
                                      the view counts grow (at least two
                                      growing observations, below EXPECTED);
                                      the last events per row label are
                                      saved to the file ROWS
  view_api.py final URL TRACE_ROOT ROWS
                                      once the session ended and the view
                                      indexed it again: events per name and
                                      per stream equal babeltrace2's on the
                                      traces under TRACE_ROOT (the relay's
                                      own copy of the session), and each
                                      row (by label) holds at least the
                                      events it held live
  view_api.py failed URL              the relay is gone: /api/info says so
                                      (live.state failed, a message) and the
                                      server still serves what it has

Prints one line; exit status 0 when the check holds.
"""

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request


def api(url, path):
    with urllib.request.urlopen(url.rstrip("/") + "/api/" + path, timeout=10) as r:
        return json.loads(r.read())


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def per_label(url, end):
    """The view's events per row label over [0, end)."""
    labels = {r["id"]: r["label"] for r in api(url, "rows")}
    win = api(url, "window?from=0&to=%d&width=1" % max(end, 1))
    return {labels.get(r["id"], str(r["id"])): sum(b[1] for b in r["b"]) for r in win["rows"]}


def grow(url, expected, pid, rows_file):
    seen = []
    last_rows = {}
    classes = set()
    while alive(pid):
        try:
            info = api(url, "info")
            n = info["events"]
            if n > 0:
                classes.update(info["classes"])
        except OSError:
            n = None
        if n is not None and n > 0 and (not seen or n > seen[-1]):
            seen.append(n)
            try:
                last_rows = per_label(url, api(url, "info")["end"] + 1)
            except OSError:
                pass
        time.sleep(0.1)
    with open(rows_file, "w") as f:
        json.dump(last_rows, f)
    growing = [n for n in seen if n < expected]
    msg = "events in the view while the program ran: %s (of %d); classes seen live: %d" % (
        " < ".join(map(str, seen)), expected, len(classes))
    # The metadata grew while the view ran (the classes a program
    # registered after the first): the view must have picked them up.
    if "reef_test:integers" not in classes:
        return False, msg + ": reef_test:integers never seen live (%s)" % sorted(classes)
    return len(growing) >= 3, msg


def bt_names(trace):
    """babeltrace2's events of `trace` counted per event name."""
    out = subprocess.run(["babeltrace2", trace], capture_output=True, text=True, timeout=60, check=True).stdout
    names = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"^\[[^]]*\] \([^)]*\) \S+ (\S+): ", line)
        if m:
            names[m.group(1)] += 1
    return names


def bt_reference(root):
    """Per event name, and per stream file (sorted counts), babeltrace2's
    counts on each CTF trace under `root`; a stream alone is read from a
    directory holding only the trace's metadata and that file."""
    names = collections.Counter()
    streams = []
    for d, _dirs, files in os.walk(root):
        if "metadata" not in files:
            continue
        names.update(bt_names(d))
        for f in sorted(files):
            if f == "metadata" or f.startswith("."):
                continue
            with tempfile.TemporaryDirectory() as one:
                os.symlink(os.path.join(d, "metadata"), os.path.join(one, "metadata"))
                os.symlink(os.path.join(d, f), os.path.join(one, f))
                n = sum(bt_names(one).values())
            if n:
                streams.append(n)
    return names, sorted(streams)


def final(url, root, rows_file):
    deadline = time.time() + 90
    while True:
        i = api(url, "info")
        if i["live"]["state"] == "ended" and not i["live"]["reindexing"] and i["state"] == "ready" and i["epoch"] >= 1:
            break
        if time.time() > deadline:
            return False, "the view did not end: %s" % json.dumps(i)[:600]
        time.sleep(0.2)
    end = i["end"] + 1
    st = api(url, "stats?from=0&to=%d" % end)
    names = {x["name"]: x["count"] for x in st.get("event_names", [])}
    rows = {r["id"]: r for r in api(url, "rows")}
    win = api(url, "window?from=0&to=%d&width=1" % end)
    per_row = sorted(
        sum(b[1] for b in r["b"]) for r in win["rows"] if rows.get(r["id"], {}).get("kind") == "stream"
    )
    per_row = [n for n in per_row if n]
    want_names, want_streams = bt_reference(root)
    probs = []
    if names != dict(want_names):
        probs.append("per name: view %s, babeltrace2 %s" % (names, dict(want_names)))
    if per_row != want_streams:
        probs.append("per stream (sorted): view %s, babeltrace2 %s" % (per_row, want_streams))
    with open(rows_file) as f:
        live_rows = json.load(f)
    final_rows = per_label(url, end)
    for label, n in sorted(live_rows.items()):
        if final_rows.get(label, 0) < n:
            probs.append("row %r: %d events live, %d in the final index" % (label, n, final_rows.get(label, 0)))
    if not live_rows:
        probs.append("no row seen live")
    if i["events"] != sum(want_names.values()):
        probs.append("events: view %d, babeltrace2 %d" % (i["events"], sum(want_names.values())))
    if probs:
        return False, "; ".join(probs)
    return True, ("%d events, per name %s, per stream %s: as babeltrace2 on the relay's copy; "
                  "rows live %s, final %s") % (i["events"], dict(sorted(names.items())), per_row, live_rows, final_rows)


def failed(url):
    deadline = time.time() + 20
    while True:
        i = api(url, "info")
        if i["live"]["state"] == "failed":
            break
        if time.time() > deadline:
            return False, "live.state is still %r after 20 s" % i["live"]["state"]
        time.sleep(0.1)
    # What was received stays served (indexed again, then ready).
    while time.time() < deadline + 20:
        i = api(url, "info")
        if i["state"] != "building" and not i["live"]["reindexing"]:
            break
        time.sleep(0.2)
    rows = api(url, "rows")
    msg = i["live"].get("message") or ""
    ok = bool(msg) and i["events"] > 0 and i["state"] == "ready" and len(rows) > 0
    return ok, "live.state failed, message %r, still serving %d events in %d rows (state %s)" % (
        msg, i["events"], len(rows), i["state"])


def main():
    cmd = sys.argv[1]
    if cmd == "grow":
        ok, msg = grow(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif cmd == "final":
        ok, msg = final(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "failed":
        ok, msg = failed(sys.argv[2])
    else:
        sys.exit("usage: see the docstring")
    print(msg)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
