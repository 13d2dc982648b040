"""Train one model in PyTorch and in JAX from the same start; the results must agree.

    python check_parity.py --steps 100
"""

import argparse
import sys

import jax
import numpy as np
import torch

from parity import jax_side, torch_side
from parity.data import make_problem
from parity.metrics import max_rel_diff


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--device", default="cpu", help="torch device (cpu or cuda)")
    args = parser.parse_args()

    x, y, init = make_problem()
    t_params, t_losses = torch_side.train(x, y, init, args.steps, args.lr, device=args.device)
    j_params, j_losses = jax_side.train(x, y, init, args.steps, args.lr)

    assert t_losses[-1] < 0.5 * t_losses[0], f"torch loss did not fall: {t_losses[0]} -> {t_losses[-1]}"
    diff = max(max_rel_diff(t_params[k], j_params[k]) for k in init)
    loss_diff = max_rel_diff(t_losses, j_losses)
    assert diff < 1e-3, f"parameters differ between frameworks: {diff:.2e}"
    assert loss_diff < 1e-3, f"loss curves differ between frameworks: {loss_diff:.2e}"

    print(f"torch {torch.__version__} ({args.device}), jax {jax.__version__} "
          f"({jax.default_backend()}), numpy {np.__version__}")
    print(f"loss {t_losses[0]:.4f} -> {t_losses[-1]:.4f}; max parameter difference {diff:.2e}")
    print("parity OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
