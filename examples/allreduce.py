"""Minimal distributed job: every rank joins the default process group through
tzrun's agent-hosted store (env://) and all_reduces its rank.  Run with
  tzrun --nproc-per-node=2 examples/allreduce.py
"""
import os
import sys

import torch
import torch.distributed as dist


def main() -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    expected = world * (world + 1) / 2
    # One write per line, so lines of different ranks never interleave on a shared console.
    sys.stdout.write(f"rank {rank}/{world} (local {os.environ['LOCAL_RANK']}): "
                     f"all_reduce sum = {t.item():g} (expected {expected:g})\n")
    sys.stdout.flush()
    assert t.item() == expected
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
