"""torchop: a fused bias + GELU operator, compiled with torch.utils.cpp_extension."""

import torch  # loads libtorch before the extension that links against it

from torchop import _C

__all__ = ["FusedBiasGelu", "FusedMLP", "fused_bias_gelu", "has_cuda"]
__version__ = "0.1.0"


class FusedBiasGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias):
        ctx.save_for_backward(x, bias)
        return _C.forward(x, bias)

    @staticmethod
    def backward(ctx, grad):
        x, bias = ctx.saved_tensors
        dx = _C.backward(grad.contiguous(), x, bias)
        return dx, dx.sum(dim=0)


def fused_bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu(x + bias) with the tanh approximation, differentiable in x and bias."""
    return FusedBiasGelu.apply(x, bias)


def has_cuda() -> bool:
    return bool(_C.has_cuda())


class FusedMLP(torch.nn.Module):
    """Linear (no bias) -> fused bias+GELU -> Linear."""

    def __init__(self, n_in: int, hidden: int, n_out: int) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(n_in, hidden, bias=False)
        self.bias = torch.nn.Parameter(torch.zeros(hidden))
        self.fc2 = torch.nn.Linear(hidden, n_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(fused_bias_gelu(self.fc1(x), self.bias))
