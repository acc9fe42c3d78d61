"""A reef sink plugin in Python for bench/plugins/python.sh: counts the
events and sums their integer `id` field (what bt_plugin_reefbench.py's
sink.reefbench.Sum does)."""
import reef
import reef.plugin


class Sum(reef.plugin.Sink):
    name = "pysum"
    description = "counts events and sums their id field (bench)"

    def __init__(self, args=None):
        super().__init__(args)
        self.events = 0
        self.total = 0

    def consume(self, m):
        if type(m) is reef.Event:
            self.events += 1
            v = m.payload.get("id")
            if v is not None:
                self.total += v

    def finish(self):
        print("events %d, sum of id %d" % (self.events, self.total))
