"""The Python rank of comm_mixed_python: joins, through torch.distributed's own env:// path, the
process group whose other rank is the C++ tzrec_comm_check --mixed-allreduce, and runs the same
collectives in the same order (all_reduce, broadcast from the last rank, barrier). If the C++
store chain differed from torch 2.11's, the group would never form and both ranks would time out.

init_process_group("gloo") maps both cpu and cuda to gloo but, all values being equal, builds a
single ProcessGroupGloo on the first device's prefix, "cpu/", which is what the C++ rank builds.
(A mixed "cpu:gloo,cuda:nccl" group would build two backends; tzrec::Comm builds one.)
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    timeout = datetime.timedelta(seconds=int(os.environ.get("PROCESS_GROUP_TIMEOUT_SECONDS", "120")))
    dist.init_process_group(backend="gloo", init_method="env://", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"mixed_rank.py rank={rank} world={world} torch={torch.__version__}", flush=True)
    failed = False

    def report(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
        nonlocal failed
        if got.dtype == want.dtype and torch.equal(got, want):
            print(f"PASS {name} rank={rank}", flush=True)
        else:
            failed = True
            print(f"FAIL {name} rank={rank}: got {got.tolist()} want {want.tolist()}", flush=True)

    t = torch.arange(4, dtype=torch.float32) + 10.0 * (rank + 1)
    dist.all_reduce(t)
    report("mixed_all_reduce", t, torch.arange(4, dtype=torch.float32) * world + 10.0 * (world * (world + 1) / 2))

    b = torch.arange(5, dtype=torch.int64) * 11 if rank == world - 1 else torch.zeros(5, dtype=torch.int64)
    dist.broadcast(b, src=world - 1)
    report("mixed_broadcast_from_last", b, torch.arange(5, dtype=torch.int64) * 11)

    dist.barrier()
    print(f"PASS mixed_barrier rank={rank}", flush=True)
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
