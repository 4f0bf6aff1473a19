"""torch worker: env:// init on the agent-hosted store, gloo all_reduce of (rank + 1).

usage: allreduce.py OUTDIR   -> writes OUTDIR/sum<RANK>.txt with the reduced value and the
                                world size seen by torch.distributed.
"""
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    out = sys.argv[1]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    dist.barrier()
    with open(os.path.join(out, f"sum{rank}.txt"), "w") as f:
        f.write(f"{t.item()} {world}")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
