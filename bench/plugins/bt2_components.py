"""babeltrace2 Python user components (python3-bt2) doing what
bench/plugins/python.sh asks of reef's Python plugins, run in a graph of
their own (Debian's babeltrace2 CLI loads no Python plugins):

    python3 bt2_components.py source FILE.jsonl   JsonLines -> sink.utils.dummy
    python3 bt2_components.py sink TRACE          source.ctf.fs -> muxer -> Sum

`JsonLines` reads examples/plugins/jsonl.py's format with the same
parsing (one json.loads a line, an event name's classes and fields from
its first line, a stream per thread); `Sum` counts the events and sums
their integer `id` field (pysum.py's work) and prints both.
"""
import json
import sys

import bt2


class _Iter(bt2._UserMessageIterator):
    def __init__(self, config, port):
        comp = port.user_data
        self._c = comp
        self._f = open(comp.path, "rb")
        self._trace = comp.tc()
        self._streams = {}
        self._classes = {}
        self._pending = []

    def _field_classes(self, o):
        tc = self._c.tc
        fc = tc.create_structure_field_class()
        for k, v in o.items():
            if isinstance(v, (bool, int)):
                fc.append_member(k, tc.create_signed_integer_field_class(64))
            elif isinstance(v, float):
                fc.append_member(k, tc.create_double_precision_real_field_class())
            else:
                fc.append_member(k, tc.create_string_field_class())
        return fc

    def __next__(self):
        if self._pending:
            return self._pending.pop()
        while True:
            raw = self._f.readline()
            if not raw:
                if self._streams:
                    self._pending = [self._create_stream_end_message(s) for s in self._streams.values()]
                    self._streams = {}
                    return self._pending.pop()
                raise StopIteration
            if raw.strip():
                break
        o = json.loads(raw)
        ts = o.pop("time")
        name = o.pop("event")
        thread = o.pop("thread", None)
        s = self._streams.get(thread)
        first = s is None
        if first:
            s = self._streams[thread] = self._trace.create_stream(
                self._c.sc, name="main" if thread is None else "thread-%d" % thread)
        ec = self._classes.get(name)
        if ec is None:
            ec = self._classes[name] = self._c.sc.create_event_class(
                name=name, payload_field_class=self._field_classes(o))
        msg = self._create_event_message(ec, s, default_clock_snapshot=ts)
        p = msg.event.payload_field
        for k, v in o.items():
            p[k] = v
        if first:
            self._pending.append(msg)
            return self._create_stream_beginning_message(s)
        return msg


class JsonLines(bt2._UserSourceComponent, message_iterator_class=_Iter):
    def __init__(self, config, params, obj):
        self.path = str(params["path"])
        self.tc = self._create_trace_class()
        cc = self._create_clock_class(frequency=1_000_000_000, origin_is_unix_epoch=True)
        self.sc = self.tc.create_stream_class(default_clock_class=cc, assigns_automatic_stream_id=True)
        self._add_output_port("out", self)


class Sum(bt2._UserSinkComponent):
    def __init__(self, config, params, obj):
        self._port = self._add_input_port("in")
        self.events = 0
        self.total = 0
        SINKS.append(self)

    def _user_graph_is_configured(self):
        self._it = self._create_message_iterator(self._port)

    def _user_consume(self):
        m = next(self._it)
        if type(m) is bt2._EventMessageConst:
            self.events += 1
            p = m.event.payload_field
            if "id" in p:
                self.total += int(p["id"])



# The sinks made, for main() to print their counts after the run.
SINKS = []


def main():
    mode, path = sys.argv[1], sys.argv[2]
    g = bt2.Graph()
    utils = bt2.find_plugin("utils")
    if mode == "source":
        src = g.add_component(JsonLines, "src", params={"path": path})
        sink = g.add_component(utils.sink_component_classes["dummy"], "sink")
        g.connect_ports(src.output_ports["out"], sink.input_ports["in"])
    else:
        ctf = bt2.find_plugin("ctf")
        src = g.add_component(ctf.source_component_classes["fs"], "src", params={"inputs": [path]})
        mux = g.add_component(utils.filter_component_classes["muxer"], "mux")
        for i, p in enumerate(src.output_ports.values()):
            g.connect_ports(p, mux.input_ports["in%d" % i])
        sink = g.add_component(Sum, "sum")
        g.connect_ports(mux.output_ports["out"], sink.input_ports["in"])
    g.run()
    if mode == "sink":
        print("events %d, sum of id %d" % (SINKS[0].events, SINKS[0].total))


if __name__ == "__main__":
    main()
