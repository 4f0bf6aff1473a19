#!/usr/bin/env python3
"""TorchRec side of the sharded-EBC benchmark: forward + backward of a sharded
EmbeddingBagCollection with a fused row-wise Adagrad, on CPU over Gloo.

Run under the TorchRec venv (tools/bench/embedding/setup_torchrec.sh), e.g.:

  .venv-torchrec/bin/torchrun --standalone --nproc-per-node=2 \\
      tools/bench/embedding/torchrec_ebc.py --tables tables.json --batch 4096 --iters 30

What one iteration does, on every rank: take a pre-built random KeyedJaggedTensor of the rank's
own batch (B samples, exactly one id per feature per sample, ids uniform in [0, num_embeddings)),
run the DistributedModelParallel-wrapped EBC forward (input all-to-all, local lookup, pooled
output all-to-all), loss = sum of the pooled output, loss.backward() (gradients go back through
the all-to-alls and the fused kernel updates its rows with row-wise Adagrad inside backward).
W warm-up iterations, then N timed ones between two barriers; the time is the slowest rank's.

Sharding: --sharding table_wise (default) | column_wise | data_parallel (what TorchRec allows
on CPU). table_wise / column_wise use EmbeddingComputeKernel.FUSED with the optimizer given by
apply_optimizer_in_backward(RowWiseAdagrad) (TorchRec turns it into FBGEMM's fused
EXACT_ROWWISE_ADAGRAD); column_wise splits every table into world shards of dim/world columns.
data_parallel uses the DENSE kernel (replicated tables, dense gradients all-reduced by DDP) and a
plain RowWiseAdagrad step after backward (in-backward hooks do not apply there).

Figures (rank 0 prints one JSON line, last on stdout):
  lookups      = global ids per timed run = world * B * (number of features) * N
  lookups_per_s = lookups / seconds
  bytes        = sum over every looked-up id of  dim*4*3 + 4*2, i.e.
                   dim*4      fp32 row read in forward
                 + dim*4*2    row read-modify-write in backward (fused update)
                 + 4*2        row-wise Adagrad accumulator read + write
                 (the same definition as the C++ tzrec_ebc_bench; ids are not deduplicated)
  gb_per_s     = bytes / seconds / 1e9
  {"impl":"torchrec","world":2,"batch":B,"iters":N,"lookups_per_s":..,"gb_per_s":..,...}
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tables as table_set  # noqa: E402

SHARDINGS = ("table_wise", "column_wise", "data_parallel")


def bytes_per_lookup(dim: int) -> int:
    """Embedding bytes one looked-up id touches in forward + backward (see the module doc)."""
    return dim * 4 * 3 + 4 * 2


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="TorchRec sharded EBC forward+backward benchmark")
    ap.add_argument("--tables", help="table-set JSON from tables.py (default: build one with "
                                     "--budget-gib/--dim)")
    ap.add_argument("--budget-gib", type=float, default=1.0,
                    help="when --tables is absent: weights + Adagrad state budget (default 1)")
    ap.add_argument("--dim", type=int, default=64, help="when --tables is absent: embedding_dim")
    ap.add_argument("--batch", type=int, default=4096, help="per-rank batch size (default 4096)")
    ap.add_argument("--iters", type=int, default=30, help="timed iterations (default 30)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up iterations (default 5)")
    ap.add_argument("--sharding", choices=SHARDINGS, default="table_wise")
    ap.add_argument("--lr", type=float, default=0.01, help="row-wise Adagrad learning rate")
    ap.add_argument("--distinct-batches", type=int, default=4,
                    help="random batches built up front and cycled through (default 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show-plan", action="store_true",
                    help="rank 0 prints the sharding plan and the fused optimizer to stderr")
    return ap.parse_args()


def main() -> int:
    args = parse_args()
    if args.batch <= 0 or args.iters <= 0 or args.warmup < 0 or args.distinct_batches <= 0:
        print(f"torchrec_ebc.py: --batch {args.batch}, --iters {args.iters} and "
              f"--distinct-batches {args.distinct_batches} must be > 0, --warmup {args.warmup} "
              f">= 0", file=sys.stderr)
        return 2
    if "RANK" not in os.environ:
        print("torchrec_ebc.py: RANK is not set; launch with the TorchRec venv's torchrun, e.g. "
              ".venv-torchrec/bin/torchrun --standalone --nproc-per-node=2 "
              "tools/bench/embedding/torchrec_ebc.py", file=sys.stderr)
        return 2

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # fbgemm/torchrec log a page of compat and planner notes
    import torch
    import torch.distributed as dist
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor, PoolingType
    from torchrec.distributed.embedding_types import EmbeddingComputeKernel
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import (EmbeddingShardingPlanner, ParameterConstraints,
                                              Topology)
    from torchrec.distributed.types import ShardingType
    from torchrec.optim import RowWiseAdagrad, apply_optimizer_in_backward

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    spec = (table_set.load(args.tables) if args.tables
            else table_set.build(args.budget_gib, args.dim, args.batch))
    configs = [EmbeddingBagConfig(name=t["name"], embedding_dim=t["embedding_dim"],
                                  num_embeddings=t["num_embeddings"],
                                  feature_names=list(t["feature_names"]),
                                  pooling=PoolingType.SUM) for t in spec["tables"]]
    features = [(f, c.num_embeddings, c.embedding_dim) for c in configs for f in c.feature_names]

    ebc = EmbeddingBagCollection(tables=configs, device=torch.device("meta"))
    data_parallel = args.sharding == "data_parallel"
    if not data_parallel:
        apply_optimizer_in_backward(RowWiseAdagrad, ebc.embedding_bags.parameters(),
                                    {"lr": args.lr})
    sharding = {"table_wise": ShardingType.TABLE_WISE, "column_wise": ShardingType.COLUMN_WISE,
                "data_parallel": ShardingType.DATA_PARALLEL}[args.sharding].value
    kernel = (EmbeddingComputeKernel.DENSE if data_parallel else EmbeddingComputeKernel.FUSED).value
    # column_wise: shards of dim/world columns (min_partition), so every table is really split;
    # without it the planner may keep whole tables as single 64-column "column-wise" shards.
    constraints = {
        c.name: ParameterConstraints(
            sharding_types=[sharding], compute_kernels=[kernel],
            min_partition=(c.embedding_dim // world if args.sharding == "column_wise"
                           and c.embedding_dim % (4 * world) == 0 else None))
        for c in configs}
    sharders = [EmbeddingBagCollectionSharder()]
    planner = EmbeddingShardingPlanner(
        topology=Topology(world_size=world, compute_device="cpu", local_world_size=world),
        constraints=constraints, batch_size=args.batch)
    plan = planner.collective_plan(ebc, sharders, dist.GroupMember.WORLD)
    model = DistributedModelParallel(ebc, device=torch.device("cpu"), plan=plan,
                                     sharders=sharders)

    # data_parallel: the in-backward hooks do not survive DDP wrapping (the rows never change),
    # so the replicated tables take a plain RowWiseAdagrad step on their all-reduced gradients.
    dense_optimizer = (RowWiseAdagrad(model.parameters(), lr=args.lr) if data_parallel else None)

    if args.show_plan and rank == 0:
        print(plan, file=sys.stderr)
        state = (dense_optimizer or model.fused_optimizer).state_dict()["state"]
        for name in list(state)[:2]:  # row-wise Adagrad: one fp32 per row ("momentum1")
            print(name, {k: getattr(getattr(v, "local_tensor", lambda: v)(), "shape", v)
                         for k, v in state[name].items()}, file=sys.stderr)

    gen = torch.Generator().manual_seed(args.seed * 1000 + rank)
    keys = [f for f, _, _ in features]
    batches = []
    for _ in range(args.distinct_batches):
        values = torch.cat([torch.randint(0, rows, (args.batch,), generator=gen)
                            for _, rows, _ in features])
        lengths = torch.ones(args.batch * len(keys), dtype=torch.int32)
        batches.append(KeyedJaggedTensor(keys=keys, values=values, lengths=lengths))

    first_loss: dict[int, float] = {}  # per batch: the loss the first time it ran
    changed = False  # a batch seen before gave another loss: the optimizer updated the rows

    def step(i: int) -> None:
        nonlocal changed
        out = model(batches[i % len(batches)])
        loss = out.values().sum()
        loss.backward()
        if dense_optimizer is not None:
            dense_optimizer.step()
            dense_optimizer.zero_grad()
        value = float(loss.detach())
        seen = first_loss.setdefault(i % len(batches), value)
        changed = changed or seen != value

    for i in range(args.warmup):
        step(i)
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.iters):
        step(i)
    dist.barrier()
    elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    seconds = float(elapsed)

    lookups = world * args.batch * len(features) * args.iters
    total_bytes = world * args.batch * args.iters * sum(bytes_per_lookup(d) for _, _, d in features)
    result = {"impl": "torchrec", "world": world, "batch": args.batch, "iters": args.iters,
              "lookups_per_s": lookups / seconds, "gb_per_s": total_bytes / seconds / 1e9,
              "warmup": args.warmup, "sharding": args.sharding, "seconds": seconds,
              "samples_per_s": world * args.batch * args.iters / seconds,
              "tables": len(configs), "features": len(features)}
    updated = torch.tensor([1.0 if changed else 0.0])
    dist.all_reduce(updated)
    if rank == 0:
        if updated.item() == 0:
            print("torchrec_ebc.py: no batch gave a different loss when it came round again, so "
                  "the optimizer did not update the tables; the figures are not a training step "
                  "(use --iters + --warmup > --distinct-batches)", file=sys.stderr)
        print(json.dumps(result), flush=True)
    dist.barrier()
    sys.stderr.flush()
    # Skip interpreter teardown: about one run in three, a background std::thread still
    # joinable at exit (torchrec/fbgemm/gloo, 2.11 + torchrec 1.6.1) aborts the process with
    # "terminate called without an active exception" after the figures are out.
    os._exit(0 if updated.item() > 0 else 1)


if __name__ == "__main__":
    sys.exit(main())
