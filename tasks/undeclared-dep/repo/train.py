"""Train tinynet on two spirals and log the curves to TensorBoard.

    python train.py --config configs/tiny.yaml --logdir runs/
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import yaml
from tensorboardX import SummaryWriter

from tinynet.data import spirals
from tinynet.model import MLP

try:  # optional: mirror the curves to Weights & Biases when it is installed
    import wandb
except ImportError:
    wandb = None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/tiny.yaml")
    parser.add_argument("--logdir", default="runs")
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args()
    cfg = yaml.safe_load(pathlib.Path(args.config).read_text())
    steps = args.steps or cfg["train"]["steps"]

    x, y = spirals(**cfg["data"])
    model = MLP(n_in=2, hidden=cfg["model"]["hidden"], seed=cfg["data"]["seed"])
    writer = SummaryWriter(logdir=args.logdir)
    first = last = None
    for step in range(1, steps + 1):
        loss = model.step(x, y, lr=cfg["train"]["lr"])
        first = loss if first is None else first
        last = loss
        if step % cfg["train"]["log_every"] == 0 or step == steps:
            acc = model.accuracy(x, y)
            writer.add_scalar("train/loss", loss, step)
            writer.add_scalar("train/accuracy", acc, step)
            if wandb is not None and wandb.run is not None:
                wandb.log({"loss": loss, "accuracy": acc}, step=step)
            print(f"step {step:4d}  loss {loss:.4f}  accuracy {acc:.3f}")
    writer.close()

    acc = model.accuracy(x, y)
    events = sorted(pathlib.Path(args.logdir).rglob("events.out.tfevents.*"))
    assert last < 0.8 * first, f"loss did not fall: {first:.4f} -> {last:.4f}"
    assert acc > 0.85, f"accuracy {acc:.3f} too low"
    assert events, f"no TensorBoard event file under {args.logdir}"
    print(f"numpy {np.__version__}; events {events[-1]}")
    print(f"training OK: loss {first:.4f} -> {last:.4f}, accuracy {acc:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
