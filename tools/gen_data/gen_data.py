#!/usr/bin/env python3
"""Synthetic Criteo-like or Taobao-like Parquet data with a planted, learnable click signal.

  .venv/bin/python tools/gen_data/gen_data.py --kind criteo --rows 1000000 --files 4 --out data/criteo
  .venv/bin/python tools/gen_data/gen_data.py --kind taobao --rows 200000 --out data/taobao

Criteo-like columns: label (int64 0/1), int_0..int_12 (float64, ~5% null, heavy-tailed counts >= 0),
cat_0..cat_25 (int64 ids in [0, num_buckets[i])).
Taobao-like columns: user_id, item_id, cate_id, brand, age_level, gender, pid (int64 ids), price
(float64), clk (int64 0/1).

Ids are Zipf distributed (hot ids are scattered over the id space by a bijective multiplicative
map). The label is Bernoulli(sigmoid(sum of hidden per-id weights of a few features + a dense term +
bias)), so a model can learn it (AUC well above 0.5). Everything is a function of --seed: the same
arguments write the same files. See tools/gen_data/README.md.
"""
import argparse
import math
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "config"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import config_data  # noqa: E402 (tools/gen_data/config_data.py: --from-config)
import pbtext  # noqa: E402 (tools/config/pbtext.py: .config text -> dict)

CRITEO_BUCKETS = [1000, 500, 100000, 50000, 300, 25, 10000, 600, 3, 50000, 5000, 100000, 3000,
                  30, 10000, 100000, 10, 4000, 2000, 4, 100000, 20, 15, 50000, 100, 30000]
TAOBAO_COLUMNS = ["user_id", "item_id", "cate_id", "brand", "age_level", "gender", "pid"]
TAOBAO_BUCKETS = [100000, 200000, 5000, 20000, 7, 3, 2]
# Features whose hidden per-id weights drive the label, with their weight scale.
CRITEO_SIGNAL = {"cat_0": 1.2, "cat_1": 1.0, "cat_4": 0.8, "cat_7": 0.8}
TAOBAO_SIGNAL = {"user_id": 1.0, "item_id": 1.2, "cate_id": 0.8, "age_level": 0.5}
MULT = np.uint64(2654435761)  # prime: id = rank * MULT mod n is a bijection when gcd(MULT, n) = 1


def zipf_ids(rng, n, rows, a):
    """Zipf(a) ranks folded into [0, n), scattered by a multiplicative bijection."""
    rank = (rng.zipf(a, size=rows).astype(np.uint64) - np.uint64(1)) % np.uint64(n)
    mult = MULT if math.gcd(int(MULT), n) == 1 else np.uint64(1)
    return ((rank * mult) % np.uint64(n)).astype(np.int64)


def hidden_weight(ids, salt):
    """Deterministic per-id weight in [-1, 1) (splitmix64 of id and salt)."""
    with np.errstate(over="ignore"):
        h = ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(salt)
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53) * 2.0 - 1.0


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def criteo_chunk(rng, rows, buckets, a, null_rate):
    cols = {}
    logit = np.full(rows, -1.3)
    dense0 = None
    for i in range(13):
        v = np.floor(rng.lognormal(mean=1.0 + 0.2 * i, sigma=1.5, size=rows))
        if i == 0:
            dense0 = np.log1p(v)
        mask = rng.random(rows) < null_rate
        cols[f"int_{i}"] = pa.array(v, type=pa.float64(), mask=mask)
    logit += 0.6 * (dense0 - 1.6)
    for i in range(26):
        name = f"cat_{i}"
        ids = zipf_ids(rng, buckets[i], rows, a)
        if name in CRITEO_SIGNAL:
            logit += CRITEO_SIGNAL[name] * hidden_weight(ids, 1000 + i)
        cols[name] = pa.array(ids, type=pa.int64())
    label = (rng.random(rows) < sigmoid(logit)).astype(np.int64)
    out = {"label": pa.array(label, type=pa.int64())}
    out.update(cols)
    return pa.table(out)


def taobao_chunk(rng, rows, buckets, a, null_rate):
    del null_rate
    cols = {}
    logit = np.full(rows, -2.0)
    for name, n in zip(TAOBAO_COLUMNS, buckets):
        ids = zipf_ids(rng, n, rows, a) if n > 10 else rng.integers(0, n, size=rows)
        if name in TAOBAO_SIGNAL:
            logit += TAOBAO_SIGNAL[name] * hidden_weight(ids, 2000 + len(cols))
        cols[name] = pa.array(ids.astype(np.int64), type=pa.int64())
    price = np.round(rng.lognormal(mean=3.0, sigma=1.0, size=rows), 2)
    logit += -0.3 * (np.log1p(price) - 3.0)
    cols["price"] = pa.array(price, type=pa.float64())
    clk = (rng.random(rows) < sigmoid(logit)).astype(np.int64)
    cols["clk"] = pa.array(clk, type=pa.int64())
    return pa.table(cols)


def parse_buckets(text, default, names):
    if not text:
        return list(default)
    values = [int(v) for v in text.split(",") if v.strip()]
    if len(values) == 1:
        values = values * len(default)
    if len(values) != len(default) or min(values) < 1:
        sys.exit(f"gen_data: --num-buckets needs 1 or {len(default)} positive integers "
                 f"(for {', '.join(names)}), got '{text}'")
    return values


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=["criteo", "taobao"], default="criteo")
    p.add_argument("--from-config", metavar="X.config", default="",
                   help="columns from this pipeline config (its input_fields, or the columns its "
                        "features and label_fields read); replaces --kind and --num-buckets")
    p.add_argument("--rows", type=int, required=True, help="total rows over all files")
    p.add_argument("--files", type=int, default=1, help="number of part-NNNNN.parquet files")
    p.add_argument("--out", required=True, help="output folder (created)")
    p.add_argument("--num-buckets", default="",
                   help="comma list: one value for every id column, or one per id column "
                        "(criteo: 26 for cat_0..cat_25; taobao: 7 for " + ",".join(TAOBAO_COLUMNS) + ")")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--zipf-a", type=float, default=1.2, help="Zipf exponent of the ids (> 1)")
    p.add_argument("--null-rate", type=float, default=0.05,
                   help="share of null values: criteo int_*, --from-config dense raw columns")
    p.add_argument("--row-group-size", type=int, default=65536)
    args = p.parse_args()
    if args.rows < 0 or args.files < 1 or args.row_group_size < 1 or args.zipf_a <= 1:
        sys.exit("gen_data: need --rows >= 0, --files >= 1, --row-group-size >= 1, --zipf-a > 1")
    csv_options = None
    if args.from_config:
        if args.num_buckets:
            sys.exit("gen_data: --num-buckets does not apply with --from-config (the config's "
                     "num_buckets / hash_bucket_size / vocab_list bound the ids)")
        try:
            cfg = pbtext.load(args.from_config, lenient=True)
            config_data.plan(cfg)
        except (OSError, ValueError) as error:
            sys.exit(f"gen_data: --from-config {args.from_config}: {error}")
        data = cfg.get("data_config", {})
        if data.get("dataset_type") == "CsvDataset":
            csv_options = pcsv.WriteOptions(include_header=bool(data.get("with_header", False)),
                                            delimiter=data.get("delimiter", ","))
        label = config_data.as_list(data.get("label_fields"))[0]
        buckets = config_data.describe(cfg)

        def make(rng, rows, buckets, a, null_rate):
            del buckets
            return config_data.table(cfg, rng, rows, zipf_ids, hidden_weight, a, null_rate)
    elif args.kind == "criteo":
        buckets = parse_buckets(args.num_buckets, CRITEO_BUCKETS, [f"cat_{i}" for i in range(26)])
        make = criteo_chunk
        label = "label"
    else:
        buckets = parse_buckets(args.num_buckets, TAOBAO_BUCKETS, TAOBAO_COLUMNS)
        make = taobao_chunk
        label = "clk"
    os.makedirs(args.out, exist_ok=True)
    base, extra = divmod(args.rows, args.files)
    positives = 0
    for f in range(args.files):
        rows = base + (1 if f < extra else 0)
        rng = np.random.default_rng([args.seed, f])
        path = os.path.join(args.out, f"part-{f:05d}.parquet")
        writer = None
        done = 0
        while done < rows or writer is None:
            n = min(args.row_group_size, rows - done)
            table = make(rng, n, buckets, args.zipf_a, args.null_rate)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            if n > 0:
                writer.write_table(table, row_group_size=args.row_group_size)
                positives += int(table.column(label).to_numpy().sum())
            done += n
            if rows == 0:
                break
        writer.close()
        if csv_options is not None:  # CsvDataset: the same rows as text too
            pcsv.write_csv(pq.read_table(path), path[:-len(".parquet")] + ".csv", csv_options)
    kind = args.from_config or args.kind
    what = buckets if args.from_config else f"id buckets {buckets}"
    print(f"gen_data: wrote {args.rows} {kind} rows in {args.files} file(s) to {args.out} "
          f"({label} rate {positives / max(args.rows, 1):.3f}, {what})")


if __name__ == "__main__":
    main()
