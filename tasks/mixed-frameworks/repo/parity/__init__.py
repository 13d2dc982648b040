"""parity: train the same small model in PyTorch and in JAX and check they agree."""
