"""TorchEasyRec id_feature vocabularies, value_dim and weighted ids in a real job (issue 14, item 4):
a generated Parquet set read with fg_mode FG_DAG through vocab_dict, vocab_file (+ default_bucketize_value),
vocab_list with default_bucketize_value and value_dim 1, and a raw value_dim 3 feature, trained by
`tzrun --nproc-per-node 2 tzrec_train`. The reference for the id mapping is TorchEasyRec's
id_feature_test.py (unit tests: tests/unit/worker/{config/vocab_test,input/vocab_transform_test}.cpp);
here the job must train, learn the planted signal and write the loaded vocabulary into
model_dir/pipeline.config; and a weighted id feature whose only signal is in the weights.

Uses data generated here, never ../shared: always runs. Budget: about 20 s on 2 shared cores.
"""
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from train_job_helpers import metrics, run_job, steps_edit

CITIES = ["bj", "sh", "gz", "sz", "xx"]  # "xx" is in no vocabulary (the unknown id)
BRANDS = ["apple", "mi", "huawei", "oppo", "nokia"]  # "nokia" is not in the vocab_file
CATES = ["c0", "c1", "c2", "c3"]


def write_data(path, rows, seed):
    """Rows whose label depends on city and brand (the planted signal)."""
    rng = np.random.default_rng(seed)
    city = rng.integers(0, len(CITIES), rows)
    brand = rng.integers(0, len(BRANDS), rows)
    cates = ["\x1d".join(CATES[j] for j in rng.integers(0, len(CATES), rng.integers(1, 4)))
             for _ in range(rows)]
    vec = ["|".join(f"{x:.3f}" for x in rng.normal(size=3)) for _ in range(rows)]
    logit = (city <= 1) * 1.5 - (brand == 2) * 1.5 + rng.normal(scale=0.5, size=rows) - 0.2
    table = pa.table({
        "clk": (logit > 0).astype(np.int64),
        "user_id": rng.integers(0, 40, rows),
        "city": [CITIES[i] for i in city],
        "brand": [BRANDS[i] for i in brand],
        "cate": cates,
        "vec": vec,
    })
    pq.write_table(table, path)


def config(vocab_file):
    features = [
        {"id_feature": {"feature_name": "uid", "expression": "user:user_id", "num_buckets": 40,
                        "embedding_dim": 4}},
        # bj and sh share id 2, gz / sz 3 / 4; xx is unknown -> 1; rows 5
        {"id_feature": {"feature_name": "city", "expression": "user:city", "embedding_dim": 4,
                        "vocab_dict": [{"key": "bj", "value": 2}, {"key": "sh", "value": 2},
                                       {"key": "gz", "value": 3}, {"key": "sz", "value": 4}]}},
        # "token id" lines; unknown (nokia) -> default_bucketize_value 0
        {"id_feature": {"feature_name": "brand", "expression": "item:brand", "embedding_dim": 4,
                        "vocab_file": str(vocab_file), "default_bucketize_value": 0}},
        # the first category only; no reserved ids
        {"id_feature": {"feature_name": "cate", "expression": "item:cate", "embedding_dim": 4,
                        "vocab_list": CATES, "default_bucketize_value": 0, "value_dim": 1}},
        {"raw_feature": {"feature_name": "vec", "expression": "item:vec", "value_dim": 3,
                         "separator": "|"}},
    ]
    names = [next(iter(f.values()))["feature_name"] for f in features]
    return {
        "train_config": {
            "sparse_optimizer": {"adagrad_optimizer": {"lr": 0.05},
                                 "constant_learning_rate": {}},
            "dense_optimizer": {"adam_optimizer": {"lr": 0.01}, "constant_learning_rate": {}},
            "num_epochs": 1},
        "data_config": {"batch_size": 64, "dataset_type": "ParquetDataset", "fg_mode": "FG_DAG",
                        "label_fields": ["clk"], "num_workers": 1},
        "feature_configs": features,
        "model_config": {
            "feature_groups": [{"group_name": "all", "feature_names": names,
                                "group_type": "DEEP"}],
            "multi_tower": {"towers": [{"input": "all", "mlp": {"hidden_units": [16]}}],
                            "final": {"hidden_units": [8]}},
            "metrics": [{"auc": {}}], "losses": [{"binary_cross_entropy": {}}]},
    }


def test_vocabularies_and_value_dim_train_on_two_ranks(tmp_path):
    vocab = tmp_path / "brand_vocab.txt"
    vocab.write_text("apple 1\nmi 2\nhuawei 3\noppo 3\n")
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(config(vocab)))
    train, evl = tmp_path / "train.parquet", tmp_path / "eval.parquet"
    write_data(train, 4096, 1)
    write_data(evl, 1024, 2)
    md = tmp_path / "m"
    run_job(cfg, md, 2, train, evl, edit=steps_edit(30, log_every=10))
    m = metrics(md)
    assert m["global_step"] == 30
    assert m["eval_auc"] > 0.75, m  # the city / brand signal goes through the vocabularies
    written = (md / "pipeline.config").read_text()
    assert "vocab_file" not in written  # read into vocab_dict, so the model dir carries it
    assert 'key: "huawei"' in written and "default_bucketize_value: 0" in written


def test_weighted_id_feature_learns_from_the_weights(tmp_path):
    """Every row has the same id "pos"; only its weight (3.0 or 0.3) carries the label. An
    unweighted lookup sees one id (AUC 0.5); the weighted EBC pools w * e, so the job learns it."""
    rng = np.random.default_rng(3)

    def write(path, rows):
        y = rng.integers(0, 2, rows)
        noisy = np.where(rng.random(rows) < 0.1, 1 - y, y)
        kw = [f"pos:{3.0 if v else 0.3}\x1dneu:1" for v in noisy]
        pq.write_table(pa.table({"clk": y.astype(np.int64), "kw": kw}), path)

    train, evl = tmp_path / "train.parquet", tmp_path / "eval.parquet"
    write(train, 4096)
    write(evl, 1024)
    cfg = config(tmp_path / "unused")
    cfg["feature_configs"] = [
        {"id_feature": {"feature_name": "kw", "expression": "item:kw", "embedding_dim": 4,
                        "vocab_list": ["pos", "neu"], "weighted": True}}]
    cfg["model_config"]["feature_groups"][0]["feature_names"] = ["kw"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    md = tmp_path / "m"
    run_job(path, md, 2, train, evl, edit=steps_edit(30, log_every=10))
    m = metrics(md)
    assert m["global_step"] == 30
    assert m["eval_auc"] > 0.8, m


def test_combo_feature_learns_an_interaction(tmp_path):
    """The label is city XOR brand (no signal in either alone); one combo_feature of the two
    columns (hashed cartesian product) lets the job learn it."""
    rng = np.random.default_rng(4)

    def write(path, rows):
        city = rng.integers(0, 4, rows)
        brand = rng.integers(0, 4, rows)
        y = ((city < 2) ^ (brand < 2)).astype(np.int64)
        y = np.where(rng.random(rows) < 0.1, 1 - y, y)
        pq.write_table(pa.table({"clk": y, "city": [CITIES[i] for i in city],
                                 "brand": [BRANDS[i] for i in brand]}), path)

    train, evl = tmp_path / "train.parquet", tmp_path / "eval.parquet"
    write(train, 4096)
    write(evl, 1024)
    cfg = config(tmp_path / "unused")
    cfg["feature_configs"] = [
        {"combo_feature": {"feature_name": "city_brand", "expression": ["user:city", "item:brand"],
                           "embedding_dim": 4, "hash_bucket_size": 1000}}]
    cfg["model_config"]["feature_groups"][0]["feature_names"] = ["city_brand"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    md = tmp_path / "m"
    run_job(path, md, 2, train, evl, edit=steps_edit(30, log_every=10))
    m = metrics(md)
    assert m["global_step"] == 30
    assert m["eval_auc"] > 0.8, m


def _kv_job(tmp_path, write, features):
    train, evl = tmp_path / "train.parquet", tmp_path / "eval.parquet"
    write(train, 4096)
    write(evl, 1024)
    cfg = config(tmp_path / "unused")
    cfg["feature_configs"] = features
    cfg["model_config"]["feature_groups"][0]["feature_names"] = [
        next(iter(f.values()))["feature_name"] for f in features]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    md = tmp_path / "m"
    run_job(path, md, 2, train, evl, edit=steps_edit(30, log_every=10))
    return metrics(md)


def test_lookup_feature_learns_the_looked_up_value(tmp_path):
    """Each row carries a per-row map "c0:v0\\x1dc1:v1..." and a key (a category); the label is
    the sign of the value the key finds. Neither column alone carries it: one numeric
    lookup_feature (combiner sum) and one hashed lookup_feature (need_discrete, need_key) do."""
    rng = np.random.default_rng(5)

    def write(path, rows):
        values = rng.normal(size=(rows, len(CATES)))
        key = rng.integers(0, len(CATES), rows)
        y = (values[np.arange(rows), key] > 0).astype(np.int64)
        kv = ["\x1d".join(f"{c}:{v:.3f}" for c, v in zip(CATES, row)) for row in values]
        sign = ["\x1d".join(f"{c}:{'p' if v > 0 else 'n'}" for c, v in zip(CATES, row))
                for row in values]
        pq.write_table(pa.table({"clk": y, "kv": kv, "sign": sign,
                                 "cate": [CATES[i] for i in key]}), path)

    m = _kv_job(tmp_path, write, [
        {"lookup_feature": {"feature_name": "kv_value", "map": "item:kv", "key": "user:cate",
                            "combiner": "sum"}},
        {"lookup_feature": {"feature_name": "kv_sign", "map": "item:sign", "key": "user:cate",
                            "need_discrete": True, "need_key": True, "hash_bucket_size": 100,
                            "embedding_dim": 4}}])
    assert m["global_step"] == 30
    assert m["eval_auc"] > 0.8, m


def test_expr_feature_learns_the_expression(tmp_path):
    """The label is the sign of a * b (a, b standard normal: neither carries it alone). Two
    expr_features over the two columns learn it: "a * b" bucketized at 0, and the dense
    "sigmoid(3 * dot(u, v))" of two-value text columns u = "a\x1d1", v = "b\x1d0" (a dot product
    equal to a * b)."""
    rng = np.random.default_rng(7)

    def write(path, rows):
        a, b = rng.normal(size=rows), rng.normal(size=rows)
        y = (a * b > 0).astype(np.int64)
        pq.write_table(pa.table({"clk": y, "a": a, "b": b,
                                 "u": [f"{x:.4f}\x1d1" for x in a],
                                 "v": [f"{x:.4f}\x1d0" for x in b]}), path)

    m = _kv_job(tmp_path, write, [
        {"expr_feature": {"feature_name": "ab_sign", "variables": ["user:a", "item:b"],
                          "expression": "a * b", "boundaries": [0.0], "embedding_dim": 4}},
        {"expr_feature": {"feature_name": "uv", "variables": ["user:u", "item:v"],
                          "expression": "sigmoid(3 * dot(u, v))"}}])
    assert m["global_step"] == 30
    assert m["eval_auc"] > 0.8, m


def test_match_feature_learns_the_matched_value(tmp_path):
    """Each row carries a nested map "c0^b0:v,b1:v|c1^..." and a (category, brand) pair; the label
    is the sign of the value the pair matches: a match_feature bucketized at 0 learns it."""
    rng = np.random.default_rng(6)
    brands = BRANDS[:3]

    def write(path, rows):
        values = rng.normal(size=(rows, len(CATES), len(brands)))
        cate = rng.integers(0, len(CATES), rows)
        brand = rng.integers(0, len(brands), rows)
        y = (values[np.arange(rows), cate, brand] > 0).astype(np.int64)
        nested = ["|".join(c + "^" + ",".join(f"{b}:{v:.3f}" for b, v in zip(brands, per_cate))
                           for c, per_cate in zip(CATES, row)) for row in values]
        pq.write_table(pa.table({"clk": y, "kkv": nested, "cate": [CATES[i] for i in cate],
                                 "brand": [brands[i] for i in brand]}), path)

    m = _kv_job(tmp_path, write, [
        {"match_feature": {"feature_name": "cate_brand_value", "nested_map": "user:kkv",
                           "pkey": "item:cate", "skey": "item:brand", "boundaries": [0.0],
                           "embedding_dim": 4}}])
    assert m["global_step"] == 30
    assert m["eval_auc"] > 0.8, m
