"""Two interleaved spirals: a small, non-linear binary classification problem."""

from __future__ import annotations

import numpy as np


def spirals(points_per_class: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0.05, 1.0, size=points_per_class)) * 1.5 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (1.5 * np.pi)
    x = np.concatenate([arm, -arm]) + rng.normal(scale=noise / 5, size=(2 * points_per_class, 2))
    y = np.concatenate([np.zeros(points_per_class), np.ones(points_per_class)])
    return x, y
