"""The summary record and the function that fills it."""

from __future__ import annotations

import math
import statistics

import attrs


@attrs.frozen
class Summary:
    n: int
    mean: float
    variance: float
    median: float

    @property
    def std(self) -> float:
        return math.sqrt(self.variance)


def summarize(values: list[float]) -> Summary:
    if len(values) < 2:
        raise ValueError("need at least two values")
    return Summary(n=len(values), mean=statistics.fmean(values),
                   variance=statistics.variance(values), median=statistics.median(values))


def plot(summary: Summary, path: str) -> None:
    """Draw the summary (the `viz` extra)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.bar(["mean", "std", "median"], [summary.mean, summary.std, summary.median])
    fig.savefig(path)
