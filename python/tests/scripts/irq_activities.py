# The activities of
#   reef activities --begin '$name == "irq_handler_entry"'
#       --end '$name == "irq_handler_exit"' --key irq,cpu_id
# written as a decoder: an exit closes the most recent open activity of its
# (irq, cpu_id), then an entry opens one.


class Decoder:
    def __init__(self):
        self.open = {}

    def event(self, ev):
        name = ev.name
        if name == "irq_handler_exit":
            key = (ev["irq"], ev["cpu_id"])
            begun = self.open.get(key)
            if begun:
                yield ("", begun.pop(), ev.timestamp, f"irq = {key[0]}, cpu_id = {key[1]}")
        elif name == "irq_handler_entry":
            self.open.setdefault((ev["irq"], ev["cpu_id"]), []).append(ev.timestamp)

    def unfinished(self):
        return {"": sum(len(v) for v in self.open.values())}
