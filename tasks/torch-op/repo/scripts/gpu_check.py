"""GPU check: the op's CUDA kernels against the CPU result, forward and backward."""

import sys

import torch

import torchop

assert torch.cuda.is_available(), "torch sees no GPU"
assert torchop.has_cuda(), "torchop was built without its CUDA kernels (no nvcc at build time?)"
torch.manual_seed(0)
x = torch.randn(1024, 256, dtype=torch.float32, requires_grad=True)
bias = torch.randn(256, dtype=torch.float32, requires_grad=True)
out_cpu = torchop.fused_bias_gelu(x, bias)
out_cpu.sum().backward()

xg = x.detach().cuda().requires_grad_()
bg = bias.detach().cuda().requires_grad_()
out_gpu = torchop.fused_bias_gelu(xg, bg)
out_gpu.sum().backward()
torch.cuda.synchronize()
torch.testing.assert_close(out_gpu.cpu(), out_cpu.detach(), rtol=1e-4, atol=1e-5)
torch.testing.assert_close(xg.grad.cpu(), x.grad, rtol=1e-4, atol=1e-5)
torch.testing.assert_close(bg.grad.cpu(), bias.grad, rtol=1e-3, atol=1e-3)
print(f"torch {torch.__version__} cuda {torch.version.cuda} on {torch.cuda.get_device_name(0)}")
print("torchop GPU check OK")
sys.exit(0)
