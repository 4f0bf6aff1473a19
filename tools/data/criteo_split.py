#!/usr/bin/env python3
"""Copies rows 1-8000 of ../shared/data/criteo_dac_10k/train-10k.txt into --out/train.txt and rows
8001-10000 into --out/eval.txt, byte for byte (tab-separated, no header: label, I1..I13, C1..C26;
read with data_config {"dataset_type": "CsvDataset", "delimiter": "\\t", "with_header": false,
"input_fields": [...]}). Never write the output into the repository.

  .venv/bin/python tools/data/criteo_split.py --out /tmp/criteo
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "criteo_dac_10k",
                                            "train-10k.txt"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", default=DEFAULT_SRC)
    p.add_argument("--out", required=True)
    p.add_argument("--train-rows", type=int, default=8000)
    args = p.parse_args()
    if not os.path.exists(args.src):
        sys.exit(f"criteo_split: {args.src} not found; pass --src <train-10k.txt>")
    with open(args.src, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "train.txt"), "wb") as f:
        f.writelines(lines[:args.train_rows])
    with open(os.path.join(args.out, "eval.txt"), "wb") as f:
        f.writelines(lines[args.train_rows:])
    print(f"criteo_split: {min(len(lines), args.train_rows)} rows to {args.out}/train.txt, "
          f"{max(len(lines) - args.train_rows, 0)} to {args.out}/eval.txt")


if __name__ == "__main__":
    main()
