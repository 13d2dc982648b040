"""The model in PyTorch: tanh hidden layer, MSE, plain gradient descent."""

import torch


def train(x, y, init, steps, lr, device="cpu"):
    x = torch.from_numpy(x).to(device)
    y = torch.from_numpy(y).to(device)
    w = torch.tensor(init["w"], device=device, requires_grad=True)
    v = torch.tensor(init["v"], device=device, requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = torch.mean((torch.tanh(x @ w) @ v - y) ** 2)
        gw, gv = torch.autograd.grad(loss, (w, v))
        with torch.no_grad():
            w -= lr * gw
            v -= lr * gv
        losses.append(loss.item())
    return {"w": w.detach().cpu().numpy(), "v": v.detach().cpu().numpy()}, losses
