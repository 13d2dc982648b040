"""Comparing the two frameworks' results (written against the NumPy 1.x API)."""

import numpy as np


def max_rel_diff(a, b):
    a = np.asarray(a, dtype=np.float_)
    b = np.asarray(b, dtype=np.float_)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))
