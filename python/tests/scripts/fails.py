def keep(ev):
    if ev.name == "sched_switch":
        return ev["no_such_field"] > 0
    return True
