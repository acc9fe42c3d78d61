# A keep() no --filter can express, and which must run once per reading:
# the first 300 irq_handler_* events it is asked about, then none (a
# second run in the same process would keep nothing).
seen = 0


def keep(ev):
    global seen
    if not ev.name.startswith("irq_handler_"):
        return False
    seen += 1
    return seen <= 300
