"""Plotting a learning-rate schedule (the `plot` extra)."""

from __future__ import annotations

import matplotlib.pyplot as plt


def plot_schedule(config: dict, out: str) -> None:
    steps = range(config["steps"])
    lr = config["optimizer"]["lr"]
    plt.plot(list(steps), [lr * (1 - s / config["steps"]) for s in steps])
    plt.savefig(out)
