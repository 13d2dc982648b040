"""GPU check: both frameworks see the GPU, and the parity check holds with torch on CUDA."""

import subprocess
import sys

import jax
import torch

assert torch.cuda.is_available(), "torch sees no GPU"
assert jax.default_backend() == "gpu", f"jax runs on {jax.default_backend()}, not the GPU"
print(f"torch on {torch.cuda.get_device_name(0)}; jax devices {jax.devices()}")
sys.exit(subprocess.call([sys.executable, "check_parity.py", "--device", "cuda"]))
