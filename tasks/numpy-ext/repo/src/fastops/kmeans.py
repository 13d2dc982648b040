"""A tiny k-means whose distance computation runs in the C extension."""

from __future__ import annotations

import numpy as np

from fastops._ext import row_norms


def kmeans(points: np.ndarray, k: int, steps: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's algorithm; returns (centers, labels)."""
    rng = np.random.default_rng(seed)
    # farthest-point initialisation: every new center is the point farthest from the others
    centers = points[[rng.integers(len(points))]].copy()
    while len(centers) < k:
        nearest = np.min(np.stack([row_norms(points - c) for c in centers], axis=1), axis=1)
        centers = np.vstack([centers, points[np.argmax(nearest)]])
    labels = np.zeros(len(points), dtype=np.int64)
    for _ in range(steps):
        # distance of every point to every center, one row_norms call per center
        dists = np.stack([row_norms(points - c) for c in centers], axis=1)
        labels = np.argmin(dists, axis=1)
        for j in range(k):
            members = points[labels == j]
            if len(members):
                centers[j] = members.mean(axis=0)
    return centers, labels
