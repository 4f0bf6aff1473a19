#!/usr/bin/env python3
"""TorchRec side of the DLRM training benchmark (issue 6 item 7): TorchRec's plain DLRM with the
dimensions and optimizers of a tzrec_train pipeline config, trained on the same Parquet files,
sharded table-wise over Gloo on CPU.

Run under the TorchRec venv (tools/bench/embedding/setup_torchrec.sh) plus pyarrow, e.g.:

  .venv-torchrec/bin/torchrun --standalone --nproc-per-node=2 tools/bench/train/torchrec_dlrm.py \\
      --config examples/configs/synthetic_criteo.config --data '/tmp/criteo/*.parquet' \\
      --warmup 20 --iters 100

The model, read from the pipeline config (a dlrm model_config):
  - one EmbeddingBagConfig per id_feature (num_buckets or hash_bucket_size rows, embedding_dim,
    SUM pooling, one id per sample), all sharded TABLE_WISE with the FUSED compute kernel
    (FBGEMM's CPU TBE);
  - torchrec.models.dlrm.DLRM(dense_in_features = number of raw_features,
    dense_arch_layer_sizes = dense_mlp.hidden_units, over_arch_layer_sizes =
    final.hidden_units + [1]). TorchRec's plain DLRM has no arch_with_sparse: its over arch sees
    [dense_arch output, the n(n-1)/2 pairwise dots], so compare with tzrec_train run with
    model_config.dlrm.arch_with_sparse = false (run.py does that by default);
  - sparse optimizer: the config's sparse_optimizer, applied in backward
    (apply_optimizer_in_backward): adagrad_optimizer -> torch.optim.Adagrad (TorchRec fuses it as
    EXACT_ADAGRAD), rowwise_adagrad_optimizer -> torchrec.optim.RowWiseAdagrad
    (EXACT_ROWWISE_ADAGRAD), sgd_optimizer -> torch.optim.SGD; lr from the config, eps 1e-8
    (FBGEMM's default, which tzrec_train's fused embedding optimizers use too; TorchEasyRec's
    protos have no eps);
  - dense optimizer: the config's dense_optimizer (adam_optimizer -> torch.optim.Adam with lr,
    beta1, beta2, eps 1e-8; adagrad / sgd likewise) over the non-embedding parameters, whose gradients
    DistributedModelParallel's DDP all-reduces;
  - loss: binary cross entropy with logits against the first label field.

Input (--input):
  stream (default): every step reads the next rows of this rank's row groups from the Parquet
    files with pyarrow (ParquetFile.read_row_group of only the needed columns, one row group
    cached) and converts them (nulls -> 0, the raw_feature normalizer, ids as int64) in the
    training loop, like tzrec_train does (it reads on a background thread), so reading cost is
    in both sides.
  memory: the rank's batches are read and converted before the timed loop and cycled through, so
    reading cost is out of TorchRec's figure (an upper bound for TorchRec).
Rank r reads row groups r, r + world, ... of the files in sorted order (the row split does not
matter for throughput; each rank gets different rows).

Timing: --warmup steps, a barrier, --iters steps, a barrier; the seconds are the slowest rank's.
samples_per_s = world * batch * iters / seconds (batch is per rank, data_config.batch_size).
Rank 0 prints one JSON line last on stdout:
  {"impl":"torchrec","samples_per_s":..,"seconds":..,"world":2,"batch":1024,"iters":..,...}
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config"))
import pbtext  # noqa: E402 (tools/config/pbtext.py: .config text -> dict)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="TorchRec DLRM training benchmark (CPU, Gloo)")
    ap.add_argument("--config", required=True, help="tzrec_train pipeline config (.config protobuf text or protobuf JSON, dlrm)")
    ap.add_argument("--data", required=True, help="Parquet glob (quote it), e.g. 'DIR/*.parquet'")
    ap.add_argument("--batch", type=int, default=0,
                    help="per-rank batch size (default: the config's data_config.batch_size)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed steps (default 20)")
    ap.add_argument("--iters", type=int, default=100, help="timed steps (default 100)")
    ap.add_argument("--input", choices=("stream", "memory"), default="stream",
                    help="read Parquet inside the loop (stream) or before it (memory)")
    ap.add_argument("--sharding", choices=("table_wise", "column_wise", "data_parallel"),
                    default="table_wise")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show-plan", action="store_true", help="rank 0 prints the plan to stderr")
    return ap.parse_args()


def fail(msg: str) -> None:
    print(f"torchrec_dlrm.py: {msg}", file=sys.stderr, flush=True)
    os._exit(2)


def read_config(path: str) -> dict:
    """The parts of a tzrec_train pipeline config that define the model and the optimizers."""
    cfg = pbtext.load(path)
    dense, sparse = [], []  # (name, normalizer) / (name, rows, dim)
    for fc in cfg["feature_configs"]:
        (kind, body), = fc.items()
        if kind == "raw_feature":
            dense.append((body["feature_name"], body.get("normalizer", "")))
        elif kind == "id_feature":
            rows = body.get("num_buckets") or body.get("hash_bucket_size")
            if not rows:
                fail(f"{path}: id_feature {body['feature_name']} has neither num_buckets nor "
                     "hash_bucket_size; this benchmark reads integer ids in [0, num_buckets)")
            sparse.append((body["feature_name"], int(rows), int(body["embedding_dim"])))
        else:
            fail(f"{path}: feature kind '{kind}' is not supported here (raw_feature, id_feature)")
    for name, norm in dense:
        if norm not in ("", "method=log1p"):
            fail(f"{path}: raw_feature {name} normalizer '{norm}' is not supported here "
                 "(use none or method=log1p)")
    mc = cfg["model_config"]
    if "dlrm" not in mc:
        fail(f"{path}: model_config has no dlrm (found {sorted(mc)})")
    dlrm = mc["dlrm"]
    tc = cfg["train_config"]

    def optimizer(key: str) -> tuple[str, dict]:
        (name, body), = [(k, v) for k, v in tc[key].items() if k.endswith("_optimizer")]
        return name, body

    return {
        "dense": dense, "sparse": sparse,
        "dense_mlp": list(dlrm["dense_mlp"]["hidden_units"]),
        "final": list(dlrm["final"]["hidden_units"]),
        "arch_with_sparse": bool(dlrm.get("arch_with_sparse", True)),
        "sparse_optimizer": optimizer("sparse_optimizer"),
        "dense_optimizer": optimizer("dense_optimizer"),
        "batch": int(cfg["data_config"]["batch_size"]),
        "label": cfg["data_config"]["label_fields"][0],
    }


class ParquetBatches:
    """Batches of exactly `batch` rows from this rank's row groups, cycling forever."""

    def __init__(self, files: list[str], rank: int, world: int, batch: int, columns: list[str]):
        import pyarrow.parquet as pq
        self.pq = pq
        self.batch, self.columns = batch, columns
        self.groups = []  # (file, row group index)
        k = 0
        for path in files:
            for g in range(pq.ParquetFile(path).metadata.num_row_groups):
                if k % world == rank:
                    self.groups.append((path, g))
                k += 1
        if not self.groups:
            fail(f"rank {rank}: no row groups to read in {len(files)} files (world {world}); "
                 "write more row groups (gen_data --row-group-size / --rows)")
        self.next_group = 0
        self.buffer = None  # pyarrow.Table of rows not yet returned
        self.files = {}

    def _read_group(self):
        path, g = self.groups[self.next_group % len(self.groups)]
        self.next_group += 1
        f = self.files.get(path)
        if f is None:
            f = self.files[path] = self.pq.ParquetFile(path)
        return f.read_row_group(g, columns=self.columns)

    def next(self):
        import pyarrow as pa
        while self.buffer is None or self.buffer.num_rows < self.batch:
            t = self._read_group()
            self.buffer = t if self.buffer is None else pa.concat_tables([self.buffer, t])
        out = self.buffer.slice(0, self.batch)
        self.buffer = self.buffer.slice(self.batch)
        return out


def main() -> int:
    args = parse_args()
    if "RANK" not in os.environ:
        fail("RANK is not set; launch with the TorchRec venv's torchrun, e.g. "
             ".venv-torchrec/bin/torchrun --standalone --nproc-per-node=2 "
             "tools/bench/train/torchrec_dlrm.py --config C --data 'DIR/*.parquet'")
    if args.iters <= 0 or args.warmup < 0:
        fail(f"--iters {args.iters} must be > 0 and --warmup {args.warmup} >= 0")
    cfg = read_config(args.config)
    batch = args.batch or cfg["batch"]
    files = sorted(glob.glob(args.data))
    if not files:
        fail(f"--data '{args.data}' matches no file; generate data with tools/gen_data/gen_data.py")

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)  # fbgemm/torchrec log a page of compat and planner notes
    import numpy as np
    import torch
    import torch.distributed as dist
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor, PoolingType
    from torchrec.distributed.embedding_types import EmbeddingComputeKernel
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import (EmbeddingShardingPlanner, ParameterConstraints,
                                              Topology)
    from torchrec.distributed.types import ShardingType
    from torchrec.models.dlrm import DLRM
    from torchrec.optim import RowWiseAdagrad, apply_optimizer_in_backward
    from torchrec.optim.keyed import KeyedOptimizerWrapper
    from torchrec.optim.optimizers import in_backward_optimizer_filter

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(args.seed)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    dims = {d for _, _, d in cfg["sparse"]}
    if len(dims) != 1 or cfg["dense_mlp"][-1] != next(iter(dims)):
        fail(f"DLRM needs one embedding_dim equal to dense_mlp's last unit; got dims {dims}, "
             f"dense_mlp {cfg['dense_mlp']}")
    tables = [EmbeddingBagConfig(name=f"t_{n}", embedding_dim=d, num_embeddings=rows,
                                 feature_names=[n], pooling=PoolingType.SUM)
              for n, rows, d in cfg["sparse"]]
    ebc = EmbeddingBagCollection(tables=tables, device=torch.device("meta"))
    model = DLRM(embedding_bag_collection=ebc, dense_in_features=len(cfg["dense"]),
                 dense_arch_layer_sizes=cfg["dense_mlp"],
                 over_arch_layer_sizes=cfg["final"] + [1], dense_device=torch.device("cpu"))

    sname, sbody = cfg["sparse_optimizer"]
    lr = float(sbody.get("lr", 0.001))
    if sname == "adagrad_optimizer":
        # FBGEMM's fused EXACT_ADAGRAD takes lr and eps only; its accumulator starts at 0.
        sparse_cls, sparse_kw = torch.optim.Adagrad, {"lr": lr, "eps": 1e-8}
    elif sname == "rowwise_adagrad_optimizer":
        sparse_cls, sparse_kw = RowWiseAdagrad, {"lr": lr, "eps": 1e-8}
    elif sname == "sgd_optimizer":
        sparse_cls, sparse_kw = torch.optim.SGD, {"lr": lr}
    else:
        fail(f"sparse_optimizer {sname} is not mapped here (adagrad_optimizer, "
             "rowwise_adagrad_optimizer, sgd_optimizer)")
    data_parallel = args.sharding == "data_parallel"
    if not data_parallel:
        apply_optimizer_in_backward(sparse_cls, model.sparse_arch.parameters(), sparse_kw)

    sharding = {"table_wise": ShardingType.TABLE_WISE, "column_wise": ShardingType.COLUMN_WISE,
                "data_parallel": ShardingType.DATA_PARALLEL}[args.sharding].value
    kernel = (EmbeddingComputeKernel.DENSE if data_parallel else EmbeddingComputeKernel.FUSED).value
    constraints = {t.name: ParameterConstraints(sharding_types=[sharding],
                                                compute_kernels=[kernel]) for t in tables}
    sharders = [EmbeddingBagCollectionSharder()]
    planner = EmbeddingShardingPlanner(
        topology=Topology(world_size=world, compute_device="cpu", local_world_size=world),
        constraints=constraints, batch_size=batch)
    plan = planner.collective_plan(model, sharders, dist.GroupMember.WORLD)
    dmp = DistributedModelParallel(model, device=torch.device("cpu"), plan=plan,
                                   sharders=sharders)
    if args.show_plan and rank == 0:
        print(plan, file=sys.stderr)
        state = dmp.fused_optimizer.state_dict()["state"]
        for name in list(state)[:2]:  # EXACT_ADAGRAD: a [rows, dim] accumulator per table
            print(name, {k: tuple(getattr(getattr(v, "local_tensor", lambda: v)(), "shape", ()))
                         for k, v in state[name].items()}, file=sys.stderr)

    dname, dbody = cfg["dense_optimizer"]
    dlr = float(dbody.get("lr", 0.001))
    if dname == "adam_optimizer":
        make_dense = lambda p: torch.optim.Adam(  # noqa: E731
            p, lr=dlr, betas=(float(dbody.get("beta1", 0.9)), float(dbody.get("beta2", 0.999))),
            eps=1e-8)
    elif dname == "adagrad_optimizer":
        make_dense = lambda p: torch.optim.Adagrad(p, lr=dlr)  # noqa: E731
    elif dname == "sgd_optimizer":
        make_dense = lambda p: torch.optim.SGD(p, lr=dlr)  # noqa: E731
    else:
        fail(f"dense_optimizer {dname} is not mapped here (adam, adagrad, sgd)")
    named = dict(dmp.named_parameters()) if data_parallel else dict(
        in_backward_optimizer_filter(dmp.named_parameters()))
    dense_opt = KeyedOptimizerWrapper(named, make_dense)

    dense_names = [n for n, _ in cfg["dense"]]
    sparse_names = [n for n, _, _ in cfg["sparse"]]
    log1p = {n for n, norm in cfg["dense"] if norm == "method=log1p"}
    columns = [cfg["label"]] + dense_names + sparse_names
    reader = ParquetBatches(files, rank, world, batch, columns)
    lengths = torch.ones(batch * len(sparse_names), dtype=torch.int32)

    def convert(t):
        cols = []
        for n in dense_names:
            v = t.column(n).to_numpy(zero_copy_only=False)  # float64 with NaN for nulls
            v = np.nan_to_num(v, nan=0.0)
            cols.append(np.log1p(v) if n in log1p else v)
        dense = torch.from_numpy(np.stack(cols, axis=1).astype(np.float32))
        ids = torch.from_numpy(np.concatenate(
            [t.column(n).to_numpy(zero_copy_only=False).astype(np.int64) for n in sparse_names]))
        kjt = KeyedJaggedTensor(keys=sparse_names, values=ids, lengths=lengths)
        label = torch.from_numpy(
            t.column(cfg["label"]).to_numpy(zero_copy_only=False).astype(np.float32))
        return dense, kjt, label

    if args.input == "memory":
        n = args.warmup + args.iters
        cached = [convert(reader.next()) for _ in range(n)]
        next_batch = iter(cached).__next__
    else:
        next_batch = lambda: convert(reader.next())  # noqa: E731

    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses = []

    def step() -> None:
        dense, kjt, label = next_batch()
        logits = dmp(dense_features=dense, sparse_features=kjt).squeeze(-1)
        loss = loss_fn(logits, label)
        dense_opt.zero_grad()
        loss.backward()  # the fused sparse optimizer updates the rows inside backward
        dense_opt.step()
        losses.append(float(loss.detach()))

    for _ in range(args.warmup):
        step()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        step()
    dist.barrier()
    elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    seconds = float(elapsed)
    k = max(1, min(10, len(losses) // 2))
    result = {"impl": "torchrec", "samples_per_s": world * batch * args.iters / seconds,
              "seconds": seconds, "world": world, "batch": batch, "warmup": args.warmup,
              "iters": args.iters, "input": args.input, "sharding": args.sharding,
              "sparse_optimizer": sname, "dense_optimizer": dname,
              "threads": torch.get_num_threads(),
              "loss_first": sum(losses[:k]) / k, "loss_last": sum(losses[-k:]) / k}
    if rank == 0:
        if not all(math.isfinite(x) for x in losses):
            print("torchrec_dlrm.py: a loss was not finite", file=sys.stderr)
        print(json.dumps(result), flush=True)
    dist.barrier()
    sys.stderr.flush()
    # Skip interpreter teardown (see tools/bench/embedding/torchrec_ebc.py: a joinable background
    # thread at exit sometimes aborts the process after the figures are out).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
