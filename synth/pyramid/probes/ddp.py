"""C4 probe, run under torchrun: all_reduce over NCCL plus one DistributedDataParallel step.

Usage: python -m torch.distributed.run --standalone --nproc_per_node N ddp.py

Rank 0 prints the JSON result; every rank checks its own part and fails loudly.
"""
import json
import os
import sys
import time


def main():
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    start = time.time()
    dist.init_process_group("nccl")
    try:
        t = torch.full((1024,), float(rank + 1), device=device)
        dist.all_reduce(t)
        expected = world * (world + 1) / 2.0
        reduce_ok = bool(torch.all(t == expected).item())

        torch.manual_seed(0)
        model = torch.nn.Linear(64, 8).to(device)
        ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(rank)
        x = torch.randn(32, 64, generator=gen).to(device)
        loss = ddp(x).pow(2).mean()
        loss.backward()
        opt.step()
        # After one step every rank must hold the same weights.
        w = model.weight.detach().clone()
        w_max = w.clone()
        w_min = w.clone()
        dist.all_reduce(w_max, op=dist.ReduceOp.MAX)
        dist.all_reduce(w_min, op=dist.ReduceOp.MIN)
        step_ok = bool(torch.allclose(w_max, w_min))
        dist.barrier()
    finally:
        backend = dist.get_backend() if dist.is_initialized() else None
        dist.destroy_process_group()
    if rank == 0:
        out = {"probe": "ddp", "world_size": world, "backend": backend,
               "all_reduce_ok": reduce_ok, "ddp_step_ok": step_ok,
               "nccl_version": ".".join(str(v) for v in torch.cuda.nccl.version())
               if hasattr(torch.cuda, "nccl") else None,
               "seconds": round(time.time() - start, 3), "python": sys.executable}
        sys.stdout.write("\n" + json.dumps(out, sort_keys=True) + "\n")
    if not (reduce_ok and step_ok):
        sys.exit(1)


if __name__ == "__main__":
    main()
