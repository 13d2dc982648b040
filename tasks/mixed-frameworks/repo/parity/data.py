"""A shared regression problem, made once with numpy and handed to both frameworks."""

import numpy as np


def make_problem(n=256, d=16, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w_true = rng.normal(size=(d, 1)).astype(np.float32)
    y = np.tanh(x @ w_true) + 0.01 * rng.normal(size=(n, 1)).astype(np.float32)
    w0 = (0.1 * rng.normal(size=(d, 8))).astype(np.float32)
    v0 = (0.1 * rng.normal(size=(8, 1))).astype(np.float32)
    return x, y.astype(np.float32), {"w": w0, "v": v0}
