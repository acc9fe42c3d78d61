# The same events as --filter '$evt.cpu_id == 1'.
def keep(ev):
    return ev["cpu_id"] == 1
