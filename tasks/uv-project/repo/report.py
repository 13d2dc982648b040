"""CPU entrypoint: python report.py runs/metrics.yaml"""

import sys

from uvreport.load import load
from uvreport.table import render

run = load(sys.argv[1])
print(f"run {run['name']}")
print(render(run))
best = min(run["epochs"], key=lambda e: e["loss"])
assert best["epoch"] == 3, best
print("uvreport OK")
