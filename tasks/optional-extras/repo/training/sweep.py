"""A parameter sweep that logs to wandb (a research-only script)."""

import random

import wandb

from tinystats import summarize

if __name__ == "__main__":
    run = wandb.init(project="tinystats")
    for n in (10, 100, 1000):
        s = summarize([random.gauss(0, 1) for _ in range(n)])
        run.log({"n": n, "mean": s.mean, "std": s.std})
