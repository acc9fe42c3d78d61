"""csvsink.py — a reef sink plugin in Python: writes each event as a CSV
row (time in ns since the Unix epoch, name, then its payload as
`field=value` cells) to the file given after `=` (default: standard
output), and counts the discarded-events notices at the end.

    reef sink csv=events.csv --plugin examples/plugins/csvsink.py TRACE
"""
import csv
import sys

import reef
import reef.plugin


class Csv(reef.plugin.Sink):
    name = "csv"
    version = "0.1.0"
    description = "writes events as CSV rows (examples/plugins/csvsink.py)"

    def __init__(self, args=None):
        super().__init__(args)
        self.f = open(args, "w", newline="") if args else sys.stdout
        self.w = csv.writer(self.f)
        self.notices = 0

    def consume(self, m):
        if type(m) is reef.Event:
            self.w.writerow([m.timestamp, m.name] + ["%s=%s" % kv for kv in m.payload.items()])
        else:
            self.notices += 1

    def finish(self):
        self.w.writerow(["#notices", self.notices])
        if self.f is not sys.stdout:
            self.f.close()
