"""fastops: small numeric kernels in C, plus the k-means step built on them."""

from fastops._ext import axpy, row_norms
from fastops.kmeans import kmeans

__all__ = ["axpy", "kmeans", "row_norms"]
__version__ = "0.1.0"
