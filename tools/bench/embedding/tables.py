#!/usr/bin/env python3
"""The shared table set of the sharded-EBC benchmark: Criteo's 26 categorical tables, scaled to
a memory budget.

Sizes are the tzrec DLRM ``num_buckets`` list (the NVTabular list capped at 40 M rows; see
/work/shared/reference/torchrec-sharding.md §4.2), one feature per table (``cat_i`` pools
feature ``cat_i``).

Scaling: a row costs ``embedding_dim * 4`` bytes of fp32 weights plus 4 bytes of row-wise
Adagrad state. Tables with at most ``cap_rows`` rows keep their real size; every larger table is
multiplied by the same factor ``f`` (rounded down, never below ``cap_rows``), with ``f`` the
largest value for which the whole set (all ranks together, not per rank) fits ``budget_gib``.
When even the small tables plus ``cap_rows`` per large table do not fit, the cap is halved until
they do (down to 1 row per table). Pure Python, no third-party import, so both the project venv
and the TorchRec venv can import it.

Output (stdout, or --out FILE): the ``tzrec_train plan --tables`` format::

  {"tables": [{"name": "cat_0", "num_embeddings": N, "embedding_dim": D,
               "feature_names": ["cat_0"]}, ...],
   "batch_size": B, "optimizer": "rowwise_adagrad"}

A summary (factor, cap, total rows and bytes) goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

# tzrec examples/dlrm_criteo.config num_buckets, cat_0 .. cat_25.
CRITEO_NUM_BUCKETS = [
    40_000_000, 39_060, 17_295, 7_424, 20_265, 3, 7_122, 1_543, 63, 40_000_000,
    3_067_956, 405_282, 10, 2_209, 11_938, 155, 4, 976, 14, 40_000_000,
    40_000_000, 40_000_000, 590_152, 12_973, 108, 36,
]  # fmt: skip
assert len(CRITEO_NUM_BUCKETS) == 26

GIB = 1 << 30
DEFAULT_CAP_ROWS = 100_000


def row_bytes(dim: int) -> int:
    """Bytes per row: fp32 weights + one fp32 row-wise Adagrad accumulator."""
    return dim * 4 + 4


def _sizes(full: list[int], cap: int, factor: float) -> list[int]:
    return [n if n <= cap else max(cap, int(n * factor)) for n in full]


def scale_rows(full: list[int], dim: int, budget_bytes: int,
               cap_rows: int = DEFAULT_CAP_ROWS) -> tuple[list[int], float, int]:
    """Returns (rows per table, factor applied to the tables above the cap, the cap used).

    Raises ValueError when not even one row per table fits the budget.
    """
    if dim <= 0:
        raise ValueError(f"embedding_dim is {dim}; pass a positive --dim")
    per_row = row_bytes(dim)
    if len(full) * per_row > budget_bytes:
        raise ValueError(
            f"budget {budget_bytes} bytes cannot hold even 1 row of dim {dim} for each of the "
            f"{len(full)} tables ({len(full) * per_row} bytes); raise --budget-gib")
    if sum(full) * per_row <= budget_bytes:
        return list(full), 1.0, max(full)
    cap = max(1, cap_rows)
    while sum(_sizes(full, cap, 0.0)) * per_row > budget_bytes:
        cap //= 2  # loop ends: cap 1 fits by the check above
    lo, hi = 0.0, 1.0  # _sizes is monotone in factor; sizes(lo) fits, sizes(hi) does not
    for _ in range(64):
        mid = (lo + hi) / 2
        if sum(_sizes(full, cap, mid)) * per_row <= budget_bytes:
            lo = mid
        else:
            hi = mid
    return _sizes(full, cap, lo), lo, cap


def build(budget_gib: float = 2.0, dim: int = 64, batch_size: int = 4096,
          cap_rows: int = DEFAULT_CAP_ROWS) -> dict:
    """The table-set JSON object (see the module docstring)."""
    if batch_size <= 0:
        raise ValueError(f"batch size is {batch_size}; pass a positive --batch")
    rows, factor, cap = scale_rows(CRITEO_NUM_BUCKETS, dim, int(budget_gib * GIB), cap_rows)
    tables = [{"name": f"cat_{i}", "num_embeddings": n, "embedding_dim": dim,
               "feature_names": [f"cat_{i}"]} for i, n in enumerate(rows)]
    total_rows = sum(rows)
    summary = {"factor": factor, "cap_rows": cap, "total_rows": total_rows,
               "total_bytes": total_rows * row_bytes(dim)}
    return {"tables": tables, "batch_size": batch_size, "optimizer": "rowwise_adagrad",
            "_summary": summary}


def load(path: str) -> dict:
    """Reads a table-set JSON written by this script (or by hand in the same format)."""
    with open(path) as f:
        spec = json.load(f)
    if not isinstance(spec.get("tables"), list) or not spec["tables"]:
        raise ValueError(f"{path}: needs a non-empty \"tables\" list; write it with tables.py")
    for t in spec["tables"]:
        for key in ("name", "num_embeddings", "embedding_dim", "feature_names"):
            if key not in t:
                raise ValueError(f"{path}: table {t.get('name', '?')} lacks \"{key}\"")
    return spec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-gib", type=float, default=2.0,
                    help="weights + row-wise Adagrad state of all tables, GiB (default 2)")
    ap.add_argument("--dim", type=int, default=64, help="embedding_dim of every table (default 64)")
    ap.add_argument("--batch", type=int, default=4096, help="per-rank batch size (default 4096)")
    ap.add_argument("--cap-rows", type=int, default=DEFAULT_CAP_ROWS,
                    help=f"tables up to this many rows keep their real size (default "
                         f"{DEFAULT_CAP_ROWS})")
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    args = ap.parse_args()
    try:
        spec = build(args.budget_gib, args.dim, args.batch, args.cap_rows)
    except ValueError as e:
        print(f"tables.py: {e}", file=sys.stderr)
        return 2
    s = spec.pop("_summary")
    print(f"tables.py: 26 tables, dim {args.dim}, {s['total_rows']:,} rows, "
          f"{s['total_bytes'] / GIB:.3f} GiB with row-wise Adagrad state (budget "
          f"{args.budget_gib} GiB); tables above {s['cap_rows']:,} rows scaled by "
          f"{s['factor']:.6f}", file=sys.stderr)
    text = json.dumps(spec)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
