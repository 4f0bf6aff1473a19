"""Minimal distributed job: every rank joins the default process group through
tzrun's agent-hosted store (env://) and all_reduces its rank.  Run with
  tzrun --nproc-per-node=2 examples/allreduce.py
"""
import os

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    expected = world * (world + 1) / 2
    print(f"rank {rank}/{world} (local {os.environ['LOCAL_RANK']}): all_reduce sum = {t.item():g}"
          f" (expected {expected:g})", flush=True)
    assert t.item() == expected
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
