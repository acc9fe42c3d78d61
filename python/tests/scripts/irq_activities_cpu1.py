# irq_activities.py's decoder, seeing only the events of CPU 1: the
# activities of `reef activities --filter '$evt.cpu_id == 1'` with
# irq_activities.py's definitions.
import pathlib
import runpy

Decoder = runpy.run_path(str(pathlib.Path(__file__).with_name("irq_activities.py")))["Decoder"]


def keep(ev):
    return ev["cpu_id"] == 1
