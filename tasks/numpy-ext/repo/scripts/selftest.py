"""CPU check: the C kernels against numpy, then a few k-means steps on three blobs."""

import sys

import numpy as np

import fastops
from fastops import _ext

rng = np.random.default_rng(42)
x = rng.normal(size=(200, 8))
np.testing.assert_allclose(fastops.row_norms(x), np.linalg.norm(x, axis=1), rtol=1e-12)
a, u, v = 2.5, rng.normal(size=1000), rng.normal(size=1000)
np.testing.assert_allclose(fastops.axpy(a, u, v), a * u + v, rtol=1e-12)

blobs = np.concatenate([rng.normal(loc=c, scale=0.3, size=(100, 2)) for c in ((0, 0), (5, 5), (0, 5))])
centers, labels = fastops.kmeans(blobs, k=3, steps=10)
found = sorted(tuple(int(v) for v in np.round(c)) for c in centers)
assert found == [(0, 0), (0, 5), (5, 5)], found
assert np.bincount(labels).tolist() == [100, 100, 100], np.bincount(labels)

print(f"numpy {np.__version__}; extension {_ext.__file__}")
print(f"centers {found}")
print("fastops selftest OK")
sys.exit(0)
