"""The metrics of each epoch as a plain-text table."""

from tabulate import tabulate


def render(run):
    rows = [(e["epoch"], e["loss"], e["accuracy"]) for e in run["epochs"]]
    return tabulate(rows, headers=("epoch", "loss", "accuracy"), floatfmt=".3f")
