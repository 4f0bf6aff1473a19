#!/usr/bin/env python3
"""Joins MovieLens 100K (../shared/data/movielens_100k: ml-100k.inter, .user, .item) into one table
and writes train.csv (earliest 80% by timestamp) and eval.csv (latest 20%) into --out.

Columns: user_id,item_id,rating,timestamp,age,gender,occupation,zip_code,movie_title,release_year,
class,label with label = 1 if rating >= 4 else 0. Rows are sorted by timestamp (ties by user_id,
item_id). Format: comma-delimited with a header line, RFC 4180 quoting (a field holding a comma or
a quote is written in double quotes, inner quotes doubled) — read it with
data_config {"dataset_type": "CsvDataset", "delimiter": ",", "with_header": true}. `class` holds the
genres separated by spaces (use "separator": " " for a multi-valued id feature).

  .venv/bin/python tools/data/movielens_join.py --out /tmp/movielens
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "movielens_100k"))
COLUMNS = ["user_id", "item_id", "rating", "timestamp", "age", "gender", "occupation", "zip_code",
           "movie_title", "release_year", "class", "label"]


def read_atomic(path):
    """RecBole atomic file: tab-separated, header 'name:type'. Returns (names, rows)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        lines = f.read().split("\n")
    names = [h.split(":")[0] for h in lines[0].split("\t")]
    rows = []
    for line in lines[1:]:
        if not line:
            continue
        parts = line.split("\t")
        parts += [""] * (len(names) - len(parts))
        rows.append(dict(zip(names, parts)))
    return names, rows


def fmt_number(text):
    """'3' stays '3', '881250949.0' → '881250949'."""
    try:
        v = float(text)
    except ValueError:
        return text
    return str(int(v)) if v == int(v) else text


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", default=DEFAULT_SRC, help="folder with ml-100k.inter/.user/.item")
    p.add_argument("--out", required=True, help="output folder for train.csv and eval.csv")
    p.add_argument("--train-fraction", type=float, default=0.8)
    args = p.parse_args()
    files = {k: os.path.join(args.src, f"ml-100k.{k}") for k in ("inter", "user", "item")}
    for k, path in files.items():
        if not os.path.exists(path):
            sys.exit(f"movielens_join: {path} not found; pass --src <folder of ml-100k.*>")
    _, inter = read_atomic(files["inter"])
    _, users = read_atomic(files["user"])
    _, items = read_atomic(files["item"])
    user_by_id = {u["user_id"]: u for u in users}
    item_by_id = {i["item_id"]: i for i in items}
    joined = []
    for r in inter:
        u = user_by_id.get(r["user_id"], {})
        i = item_by_id.get(r["item_id"], {})
        rating = float(r["rating"])
        joined.append({
            "user_id": r["user_id"], "item_id": r["item_id"], "rating": fmt_number(r["rating"]),
            "timestamp": fmt_number(r["timestamp"]), "age": u.get("age", ""),
            "gender": u.get("gender", ""), "occupation": u.get("occupation", ""),
            "zip_code": u.get("zip_code", ""), "movie_title": i.get("movie_title", ""),
            "release_year": i.get("release_year", ""), "class": i.get("class", ""),
            "label": "1" if rating >= 4 else "0",
        })
    joined.sort(key=lambda r: (float(r["timestamp"]), int(r["user_id"]), int(r["item_id"])))
    cut = int(len(joined) * args.train_fraction)
    os.makedirs(args.out, exist_ok=True)
    for name, rows in (("train.csv", joined[:cut]), ("eval.csv", joined[cut:])):
        with open(os.path.join(args.out, name), "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
            w.writeheader()
            w.writerows(rows)
    pos = sum(r["label"] == "1" for r in joined)
    print(f"movielens_join: {len(joined)} ratings ({pos / max(len(joined), 1):.3f} label=1): "
          f"{cut} in {args.out}/train.csv, {len(joined) - cut} in {args.out}/eval.csv")


if __name__ == "__main__":
    main()
