"""A two-layer perceptron with a tanh hidden layer and a sigmoid output, backprop by hand."""

from __future__ import annotations

import numpy as np


class MLP:
    def __init__(self, n_in: int, hidden: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.w1 = rng.normal(scale=1.0, size=(n_in, hidden))
        self.b1 = np.zeros(hidden)
        self.w2 = rng.normal(scale=1.0 / np.sqrt(hidden), size=(hidden, 1))
        self.b2 = np.zeros(1)

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h = np.tanh(x @ self.w1 + self.b1)
        p = 1.0 / (1.0 + np.exp(-(h @ self.w2 + self.b2)))
        return h, p[:, 0]

    def step(self, x: np.ndarray, y: np.ndarray, lr: float) -> float:
        """One full-batch gradient step on the binary cross-entropy; returns the loss."""
        h, p = self.forward(x)
        eps = 1e-9
        loss = float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))
        d_out = ((p - y) / len(y))[:, None]
        d_h = (d_out @ self.w2.T) * (1 - h**2)
        self.w2 -= lr * h.T @ d_out
        self.b2 -= lr * d_out.sum(axis=0)
        self.w1 -= lr * x.T @ d_h
        self.b1 -= lr * d_h.sum(axis=0)
        return loss

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean((self.forward(x)[1] > 0.5) == y))
