"""Build torchop._C: a CppExtension, or a CUDAExtension when nvcc and CUDA_HOME are found.

setup.py imports torch, so the extension is compiled against the torch that runs it; pip's
isolated build environment has no torch (install with --no-build-isolation).
"""

import os
import shutil

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

sources = ["csrc/ops.cpp"]
nvcc = shutil.which("nvcc") or (CUDA_HOME and os.path.join(CUDA_HOME, "bin", "nvcc"))
# CUDA kernels need nvcc, CUDA_HOME and a CUDA build of torch (a CPU torch has no CUDA runtime)
use_cuda = (
    os.environ.get("TORCHOP_CPU_ONLY", "0") != "1"
    and torch.version.cuda is not None
    and CUDA_HOME is not None
    and bool(nvcc)
    and os.path.exists(nvcc)
)
if use_cuda:
    ext = CUDAExtension(
        "torchop._C",
        sources + ["csrc/ops_cuda.cu"],
        define_macros=[("WITH_CUDA", None)],
        extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]},
    )
else:
    ext = CppExtension("torchop._C", sources, extra_compile_args=["-O2"])

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExtension})
