# The same events as --filter '$evt.$name == "sched_*" && $evt.cpu_id == 1'.
def keep(ev):
    return ev.name.startswith("sched_") and ev["cpu_id"] == 1
