# irq_activities.py's decoder with keep_first_irqs.py's keep().
import pathlib
import runpy

HERE = pathlib.Path(__file__).parent
Decoder = runpy.run_path(str(HERE / "irq_activities.py"))["Decoder"]
keep = runpy.run_path(str(HERE / "keep_first_irqs.py"))["keep"]
