"""CPU check: the compiled op against a reference, its gradient, and a few training steps."""

import sys

import torch

import torchop
from torchop import _C


def reference(x, bias):
    return torch.nn.functional.gelu(x + bias, approximate="tanh")


torch.manual_seed(0)
x = torch.randn(64, 32, dtype=torch.float64, requires_grad=True)
bias = torch.randn(32, dtype=torch.float64, requires_grad=True)
torch.testing.assert_close(torchop.fused_bias_gelu(x, bias), reference(x, bias))
assert torch.autograd.gradcheck(torchop.fused_bias_gelu, (x[:8], bias)), "gradcheck failed"

# a few steps of a small regression model whose hidden layer is the fused op
inputs = torch.randn(256, 8)
targets = torch.tanh(inputs @ torch.linspace(-1.0, 1.0, 8).unsqueeze(1))
model = torchop.FusedMLP(8, 64, 1)
opt = torch.optim.Adam(model.parameters(), lr=3e-2)
losses = []
for _ in range(100):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert losses[-1] < 0.3 * losses[0], f"loss did not fall: {losses[0]:.4f} -> {losses[-1]:.4f}"

print(f"torch {torch.__version__}; extension {_C.__file__}; cuda kernels: {torchop.has_cuda()}")
print(f"training loss {losses[0]:.4f} -> {losses[-1]:.4f}")
print("torchop CPU check OK")
sys.exit(0)
