"""tools/gen_data/gen_data.py --from-config (issue 13, item 7): the columns, types, id ranges,
multi-value separators, CSV twin and planted signal of a data set generated for a pipeline config,
checked against the config by hand, and the result read and trained by tzrec_train (the reader is
the reference for which column a feature reads: src/worker/config/features.cpp InputColumn).

Uses configs written here, never ../shared: always runs. Budget: about 15 s on 2 shared cores.
"""
import json
import subprocess
import sys

import numpy as np
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from train_job_helpers import TOOLS, details, metrics, run_job

GEN_DATA = TOOLS / "gen_data" / "gen_data.py"


def config(fg_mode, dataset_type="ParquetDataset", input_fields=None, **data):
    """A small DLRM-free deepfm-free multi_tower config covering the feature kinds we support."""
    features = [
        {"id_feature": {"feature_name": "uid", "expression": "user:user_id", "num_buckets": 50,
                        "embedding_dim": 4}},
        {"id_feature": {"feature_name": "tag", "expression": "item:tag", "hash_bucket_size": 70,
                        "embedding_dim": 4}},
        {"id_feature": {"feature_name": "color", "expression": "item:color",
                        "vocab_list": ["red", "green", "blue"], "embedding_dim": 4}},
        {"raw_feature": {"feature_name": "price", "expression": "item:price_raw",
                         "boundaries": [1.0, 5.0, 20.0], "embedding_dim": 4}},
        {"raw_feature": {"feature_name": "score", "expression": "item:score"}},
        {"raw_feature": {"feature_name": "vec", "expression": "item:vec", "value_dim": 3}},
    ]
    if fg_mode == "FG_NONE":  # encoded data: no vocab (the column holds ids)
        features[2] = {"id_feature": {"feature_name": "color", "num_buckets": 5,
                                      "embedding_dim": 4}}
    names = [next(iter(f.values()))["feature_name"] for f in features]
    d = {"batch_size": 64, "dataset_type": dataset_type, "fg_mode": fg_mode,
         "label_fields": ["clk"], "num_workers": 1}
    d.update(data)
    if input_fields is not None:
        d["input_fields"] = input_fields
    return {
        "train_config": {
            "sparse_optimizer": {"adagrad_optimizer": {"lr": 0.05},
                                 "constant_learning_rate": {}},
            "dense_optimizer": {"adam_optimizer": {"lr": 0.01}, "constant_learning_rate": {}},
            "num_epochs": 1},
        "data_config": d,
        "feature_configs": features,
        "model_config": {
            "feature_groups": [{"group_name": "all", "feature_names": names,
                                "group_type": "DEEP"}],
            "multi_tower": {"towers": [{"input": "all", "mlp": {"hidden_units": [16]}}],
                            "final": {"hidden_units": [8]}},
            "metrics": [{"auc": {}}], "losses": [{"binary_cross_entropy": {}}]},
    }


def gen(tmp_path, cfg, rows=2000, seed=5, out="data", files=1):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    proc = subprocess.run([sys.executable, str(GEN_DATA), "--from-config", str(path), "--rows",
                           str(rows), "--seed", str(seed), "--files", str(files), "--out",
                           str(tmp_path / out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, details(proc)
    return path, tmp_path / out


def test_fg_dag_columns_follow_expressions(tmp_path):
    _, out = gen(tmp_path, config("FG_DAG"))
    t = pq.read_table(out / "part-00000.parquet")
    assert t.column_names == ["clk", "user_id", "tag", "color", "price_raw", "score", "vec"]
    types = {f.name: str(f.type) for f in t.schema}
    assert types == {"clk": "int64", "user_id": "int64", "tag": "int64", "color": "string",
                     "price_raw": "double", "score": "double", "vec": "string"}
    cols = t.to_pydict()
    assert set(cols["clk"]) == {0, 1}
    assert 0 <= min(cols["user_id"]) and max(cols["user_id"]) < 50
    assert 0 <= min(cols["tag"]) and max(cols["tag"]) < 70
    assert set(cols["color"]) == {"red", "green", "blue"}
    prices = np.array(cols["price_raw"])  # raw values reaching every bucket of [1, 5, 20]
    assert {int(np.searchsorted([1.0, 5.0, 20.0], p, side="right")) for p in prices} == {0, 1, 2, 3}
    assert all(len(v.split("\x1d")) == 3 for v in cols["vec"])  # RawFeature.separator default
    assert any(v is None for v in cols["score"]) and all(x is None or x >= 0 for x in cols["score"])


def test_fg_none_columns_are_feature_names_with_encoded_ids(tmp_path):
    _, out = gen(tmp_path, config("FG_NONE", fg_encoded_multival_sep="|"))
    t = pq.read_table(out / "part-00000.parquet")
    assert t.column_names == ["clk", "uid", "tag", "color", "price", "score", "vec"]
    cols = t.to_pydict()
    assert set(cols["price"]) == {0, 1, 2, 3}  # bucket ids of 3 boundaries
    assert max(cols["color"]) < 5
    assert all(len(v.split("|")) == 3 for v in cols["vec"])  # data_config.fg_encoded_multival_sep


def test_input_fields_give_columns_types_and_csv(tmp_path):
    fields = [{"input_name": n, "input_type": t} for n, t in [
        ("score", "FLOAT"), ("clk", "INT64"), ("user_id", "INT32"), ("tag", "STRING"),
        ("color", "STRING"), ("extra", "INT64"), ("price_raw", "DOUBLE"), ("vec", "STRING")]]
    cfg = config("FG_DAG", "CsvDataset", fields, delimiter=";", with_header=True)
    path, out = gen(tmp_path, cfg, rows=600)
    t = pq.read_table(out / "part-00000.parquet")
    assert t.column_names == [f["input_name"] for f in fields]
    assert [str(f.type) for f in t.schema] == ["float", "int64", "int32", "string", "string",
                                                 "int64", "double", "string"]
    csv = pcsv.read_csv(out / "part-00000.csv", parse_options=pcsv.ParseOptions(delimiter=";"))
    assert csv.column_names == t.column_names and csv.num_rows == 600
    assert csv.column("clk").to_pylist() == t.column("clk").to_pylist()
    # tzrec_train reads the CSV twin (header, ';', the \x1d multi-value cells) and trains on it
    md = tmp_path / "m"
    run_job(path, md, 1, out / "part-00000.csv", out / "part-00000.csv")
    assert metrics(md)["global_step"] == 10


def test_same_seed_same_bytes_other_seed_other_data(tmp_path):
    cfg = config("FG_DAG")
    _, a = gen(tmp_path, cfg, rows=3000, seed=3, out="a", files=2)
    _, b = gen(tmp_path, cfg, rows=3000, seed=3, out="b", files=2)
    _, c = gen(tmp_path, cfg, rows=3000, seed=4, out="c", files=2)
    for name in ("part-00000.parquet", "part-00001.parquet"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
        assert (a / name).read_bytes() != (c / name).read_bytes()


def test_planted_signal_is_learnable(tmp_path):
    """Independent reference: a per-value mean-label table of the planted columns, fitted on
    one generated set and scored on another, has AUC well above 0.5; and tzrec_train learns it."""
    path, train = gen(tmp_path, config("FG_DAG"), rows=20000, seed=1, out="train")
    _, evl = gen(tmp_path, config("FG_DAG"), rows=4000, seed=2, out="eval")
    tr, ev = (pq.read_table(d / "part-00000.parquet").to_pydict() for d in (train, evl))
    base = float(np.mean(tr["clk"]))
    score = np.zeros(len(ev["clk"]))
    for col in ("color", "user_id", "tag"):  # planted (fewest ids >= 3 first), with price_raw
        sums, counts = {}, {}
        for v, y in zip(tr[col], tr["clk"]):
            sums[v] = sums.get(v, 0) + y
            counts[v] = counts.get(v, 0) + 1
        score += [sums[v] / counts[v] if v in counts else base for v in ev[col]]
    y = np.array(ev["clk"])
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(y))
    ranks[order] = np.arange(1, len(y) + 1)
    auc = (ranks[y == 1].sum() - y.sum() * (y.sum() + 1) / 2) / (y.sum() * (len(y) - y.sum()))
    print(f"reference AUC {auc:.4f}")
    assert auc > 0.65, auc
    md = tmp_path / "m"
    run_job(path, md, 2, train / "part-00000.parquet", evl / "part-00000.parquet")
    print(f"tzrec_train eval AUC {metrics(md)['eval_auc']:.4f}")
    assert metrics(md)["eval_auc"] > 0.6, metrics(md)
