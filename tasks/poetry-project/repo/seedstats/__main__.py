"""python -m seedstats SCORES.csv: one row per method, columns seed,method,score."""

from __future__ import annotations

import csv
import sys
from collections import defaultdict

from tabulate import tabulate

from seedstats import summarise


def main(path: str) -> int:
    scores: dict[str, list[float]] = defaultdict(list)
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            scores[row["method"]].append(float(row["score"]))
    rows = [summarise(m, s) for m, s in sorted(scores.items())]
    print(tabulate([(r.method, r.seeds, f"{r.mean:.3f}", f"{r.std:.3f}",
                     f"[{r.low:.3f}, {r.high:.3f}]") for r in rows],
                   headers=["method", "seeds", "mean", "std", "95% bootstrap"]))
    best = max(rows, key=lambda r: r.mean)
    assert best.low <= best.mean <= best.high
    print(f"seedstats OK: best {best.method} over {best.seeds} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "runs/scores.csv"))
