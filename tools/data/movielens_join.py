#!/usr/bin/env python3
"""Joins MovieLens 100K (../shared/data/movielens_100k: ml-100k.inter, .user, .item) into one table
and writes train.csv (earliest 80% by timestamp) and eval.csv (latest 20%) into --out.

Columns: user_id,item_id,rating,timestamp,age,gender,occupation,zip_code,movie_title,release_year,
class,label with label = 1 if rating >= 4 else 0. Rows are sorted by timestamp (ties by user_id,
item_id). Format: comma-delimited with a header line, RFC 4180 quoting (a field holding a comma or
a quote is written in double quotes, inner quotes doubled) — read it with
data_config {"dataset_type": "CsvDataset", "delimiter": ",", "with_header": true}. `class` holds the
genres separated by spaces (use "separator": " " for a multi-valued id feature).

Optional columns, appended after `label` (the default output is unchanged):
  --multi-task  like = 1 if rating >= 4 else 0 (the same as label), love = 1 if rating == 5 else 0:
                two binary tasks for examples/configs/{simple_multi_task,mmoe,dbmtl,ple}_movielens
  --sequence    genre (the row's item's first genre), hist_seq__item_id and hist_seq__genre: the
                ids / first genres of the items this user rated strictly before this row's
                timestamp (ratings at the same second are left out, so no row sees its own or a
                simultaneous rating), oldest first and most recent last, at most --max-seq-len
                (default 50), joined by ";" (TorchEasyRec's sequence_delim default); empty for a
                user's first rating. The names are TorchEasyRec's input fields of a
                sequence_feature "hist_seq" with id features item_id and genre
                (examples/configs/multi_tower_din_movielens.config). The history is computed over
                all ratings before the split, so an eval row's history includes the user's
                earlier train-period ratings (all before it in time).

  .venv/bin/python tools/data/movielens_join.py --out /tmp/movielens
  .venv/bin/python tools/data/movielens_join.py --multi-task --sequence --out /tmp/movielens_mt
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data", "movielens_100k"))
COLUMNS = ["user_id", "item_id", "rating", "timestamp", "age", "gender", "occupation", "zip_code",
           "movie_title", "release_year", "class", "label"]
MULTI_TASK_COLUMNS = ["like", "love"]
SEQUENCE_COLUMNS = ["genre", "hist_seq__item_id", "hist_seq__genre"]
SEQUENCE_DELIM = ";"  # TorchEasyRec's sequence_delim default (tzrec/protos/feature.proto)


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


def first_genre(classes):
    """The first of an item's space-separated genres ('unknown' when it has none)."""
    parts = classes.split()
    return parts[0] if parts else "unknown"


def history_columns(rows, max_len=50, delim=SEQUENCE_DELIM):
    """For each row (dicts with user_id, item_id, timestamp, genre), the pair
    (earlier item ids, their genres): the same user's rows with a timestamp strictly smaller than
    this row's, by (timestamp, item_id), the most recent last, at most max_len, joined by delim.
    Rows at the same timestamp as this one (this row included) are never part of its history.
    Returns a list parallel to rows."""
    by_user = defaultdict(list)
    for idx, r in enumerate(rows):
        by_user[r["user_id"]].append(idx)
    out = [None] * len(rows)
    for idxs in by_user.values():
        idxs.sort(key=lambda i: (float(rows[i]["timestamp"]), int(rows[i]["item_id"])))
        start = 0  # idxs[:start] all have a timestamp < the current row's
        for pos, i in enumerate(idxs):
            ts = float(rows[i]["timestamp"])
            while start < pos and float(rows[idxs[start]]["timestamp"]) < ts:
                start += 1
            earlier = idxs[max(0, start - max_len):start]
            out[i] = (delim.join(rows[j]["item_id"] for j in earlier),
                      delim.join(rows[j]["genre"] for j in earlier))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", default=DEFAULT_SRC, help="folder with ml-100k.inter/.user/.item")
    p.add_argument("--out", required=True, help="output folder for train.csv and eval.csv")
    p.add_argument("--train-fraction", type=float, default=0.8)
    p.add_argument("--multi-task", action="store_true", help="add the labels like and love")
    p.add_argument("--sequence", action="store_true",
                   help="add genre, hist_seq__item_id, hist_seq__genre (earlier items)")
    p.add_argument("--max-seq-len", type=int, default=50,
                   help="most recent earlier items kept per row with --sequence (default 50)")
    args = p.parse_args()
    if args.max_seq_len < 1:
        sys.exit(f"movielens_join: --max-seq-len {args.max_seq_len} must be >= 1")
    if not 0 < args.train_fraction < 1:
        sys.exit(f"movielens_join: --train-fraction {args.train_fraction} must be in (0, 1)")
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
        if args.multi_task:
            joined[-1]["like"] = "1" if rating >= 4 else "0"
            joined[-1]["love"] = "1" if rating == 5 else "0"
        if args.sequence:
            joined[-1]["genre"] = first_genre(i.get("class", ""))
    columns = list(COLUMNS)
    if args.multi_task:
        columns += MULTI_TASK_COLUMNS
    if args.sequence:
        columns += SEQUENCE_COLUMNS
        for r, (hist_items, hist_genres) in zip(joined, history_columns(joined, args.max_seq_len)):
            r["hist_seq__item_id"] = hist_items
            r["hist_seq__genre"] = hist_genres
    joined.sort(key=lambda r: (float(r["timestamp"]), int(r["user_id"]), int(r["item_id"])))
    cut = int(len(joined) * args.train_fraction)
    os.makedirs(args.out, exist_ok=True)
    for name, rows in (("train.csv", joined[:cut]), ("eval.csv", joined[cut:])):
        with open(os.path.join(args.out, name), "w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
            w.writeheader()
            w.writerows(rows)
    pos = sum(r["label"] == "1" for r in joined)
    extra = ""
    if args.multi_task:
        love = sum(r["love"] == "1" for r in joined)
        extra = f", {love / max(len(joined), 1):.3f} love=1"
    print(f"movielens_join: {len(joined)} ratings ({pos / max(len(joined), 1):.3f} label=1{extra}): "
          f"{cut} in {args.out}/train.csv, {len(joined) - cut} in {args.out}/eval.csv")


if __name__ == "__main__":
    main()
