"""DDP check, one process per GPU over NCCL:

    python -m torch.distributed.run --standalone --nproc_per_node=2 scripts/ddp_train.py
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import torchop


def main() -> int:
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    probe = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(probe)
    assert probe.item() == world * (world + 1) / 2, f"all_reduce gave {probe.item()}"

    torch.manual_seed(0)
    model = DistributedDataParallel(torchop.FusedMLP(8, 64, 1).to(device), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(rank)
    for _ in range(5):
        inputs = torch.randn(128, 8, generator=gen).to(device)
        targets = torch.sin(inputs.sum(dim=1, keepdim=True))
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        opt.step()

    # after DDP steps every rank must hold the same weights
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(weights) for _ in range(world)]
    dist.all_gather(gathered, weights)
    assert all(torch.equal(gathered[0], w) for w in gathered), "ranks diverged"
    if rank == 0:
        print(f"DDP over NCCL on {world} GPUs OK; loss {loss.item():.4f}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
