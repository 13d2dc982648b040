"""Mean, sample standard deviation and a percentile bootstrap interval of per-seed scores."""

from __future__ import annotations

import random
import statistics

import attrs


@attrs.frozen
class Summary:
    method: str
    seeds: int
    mean: float
    std: float
    low: float
    high: float


def bootstrap(scores: list[float], rounds: int = 2000, level: float = 0.95,
              seed: int = 0) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean, from a seeded generator."""
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(scores, k=len(scores)))
                   for _ in range(rounds))
    tail = (1 - level) / 2
    return means[int(tail * rounds)], means[int((1 - tail) * rounds) - 1]


def summarise(method: str, scores: list[float]) -> Summary:
    if len(scores) < 2:
        raise ValueError(f"{method}: a summary needs two seeds or more, got {len(scores)}")
    low, high = bootstrap(scores)
    return Summary(method, len(scores), statistics.fmean(scores), statistics.stdev(scores),
                   low, high)
