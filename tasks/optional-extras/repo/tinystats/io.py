"""Read and write summaries as HDF5 (the `io` extra: pip install tinystats[io])."""

import h5py

from tinystats.core import Summary


def save(summary: Summary, path: str) -> None:
    with h5py.File(path, "w") as f:
        for key in ("n", "mean", "variance", "median"):
            f.attrs[key] = getattr(summary, key)
