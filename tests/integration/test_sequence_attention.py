"""Attention sequence encoders (issue 14): a multi_tower DEEP group's din_encoder,
simple_attention or multi_window_din_encoder (five windows of one item) over sequence group
"hist" {item (the query), clicks (the sequence)}, the clicks sharing the item's table. Each
trains under tzrun on 2 ranks, continues from that checkpoint on 1 rank (--continue_train: the
table, row_wise sharded for din_encoder, is restored at the other world size), exports and
predicts: the AUC predict prints equals the job's final eval AUC.

The label is planted on target attention: 1 when the target item is among the clicks (0 to 5 of
them: sequence_length 5, as an FG_NONE sequence must fit it; 90% of rows), which the attention over the unpooled per-item embeddings can see and a mean of
the clicks hardly can.

Third: multi_tower_din (a tower over DEEP group "user" and a DIN tower over SEQUENCE group
"seq" {item, clicks}), the same train / restore / export / predict.

Budget: 4 x (2 short jobs + export + predict) on tiny generated data, about 40 s.
"""
import math
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from train_job_helpers import train_restore_export_predict, write_config

BATCH = 64
FIRST, TOTAL = 30, 60
ITEMS = 20
KEEP = 5


def config(encoder: dict, item_extra: dict) -> dict:
    return {
        "train_config": {
            "sparse_optimizer": {"adagrad_optimizer": {"lr": 0.1}, "constant_learning_rate": {}},
            "dense_optimizer": {"adam_optimizer": {"lr": 0.01}, "constant_learning_rate": {}}},
        "data_config": {"batch_size": BATCH, "dataset_type": "ParquetDataset",
                        "label_fields": ["clk"]},
        "feature_configs": [
            {"id_feature": {"feature_name": "item", "num_buckets": ITEMS, "embedding_dim": 8,
                            "embedding_name": "item_emb", **item_extra}},
            {"sequence_id_feature": {"feature_name": "clicks", "sequence_length": KEEP,
                                     "num_buckets": ITEMS, "embedding_dim": 8,
                                     "embedding_name": "item_emb"}}],
        "model_config": {
            "feature_groups": [{
                "group_name": "all", "feature_names": ["item"],
                "sequence_groups": [{"group_name": "hist", "feature_names": ["item", "clicks"]}],
                "sequence_encoders": [encoder]}],
            "multi_tower": {"towers": [{"input": "all", "mlp": {"hidden_units": [16]}}],
                            "final": {"hidden_units": [8]}},
            "metrics": [{"auc": {}}], "losses": [{"binary_cross_entropy": {}}]},
    }


def gen(path, rows, seed):
    rng = random.Random(seed)
    items, clicks, labels = [], [], []
    for _ in range(rows):
        seq = [rng.randrange(ITEMS) for _ in range(rng.randrange(KEEP + 1))]  # fits sequence_length
        item = rng.randrange(ITEMS)
        if rng.random() < 0.4 and seq:
            seq[rng.randrange(min(len(seq), KEEP))] = item
        signal = item in seq[:KEEP]
        labels.append(int(signal) if rng.random() < 0.9 else int(not signal))
        items.append(item)
        clicks.append(";".join(map(str, seq)))
    pq.write_table(pa.table({"clk": labels, "item": items, "clicks": clicks}), path)
    return path


CASES = {
    "din_encoder": ({"din_encoder": {"input": "hist", "attn_mlp": {"hidden_units": [16]}}},
                    {"embedding_constraints": {"sharding_types": ["row_wise"]}}),
    "simple_attention": ({"simple_attention": {"input": "hist"}}, {}),
    "multi_window_din_encoder": ({"multi_window_din_encoder": {
        "input": "hist", "windows_len": [1, 1, 1, 1, 1], "attn_mlp": {"hidden_units": [16]}}}, {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_encoder_trains_restores_exports_predicts(tmp_path, name):
    encoder, item_extra = CASES[name]
    cfg = write_config(config(encoder, item_extra), tmp_path / "attn.json")
    train = gen(tmp_path / "train.parquet", TOTAL * 2 * BATCH, 1)
    evl = gen(tmp_path / "eval.parquet", 1024, 2)
    first, m = train_restore_export_predict(cfg, tmp_path, train, evl, FIRST, TOTAL, timeout=180)
    print(f"{name}: eval AUC after {TOTAL} steps: {m['eval_auc']:.4f} (after {FIRST} on 2 ranks: "
          f"{first['eval_auc']:.4f})")
    assert math.isfinite(m["eval_auc"]) and m["eval_auc"] > 0.6, m


def din_model_config() -> dict:
    """multi_tower_din (tzrec/models/multi_tower_din.py): a tower over DEEP group "user" (the
    item, as a plain feature) and a DIN tower over SEQUENCE group "seq" {item, clicks}."""
    cfg = config({"pooling_encoder": {"input": "hist"}}, {})
    cfg["model_config"]["feature_groups"] = [
        {"group_name": "user", "feature_names": ["item"], "group_type": "DEEP"},
        {"group_name": "seq", "feature_names": ["item", "clicks"], "group_type": "SEQUENCE"}]
    del cfg["model_config"]["multi_tower"]
    cfg["model_config"]["multi_tower_din"] = {
        "towers": [{"input": "user", "mlp": {"hidden_units": [16]}}],
        "din_towers": [{"input": "seq", "attn_mlp": {"hidden_units": [16]}}],
        "final": {"hidden_units": [8]}}
    return cfg


def test_multi_tower_din_trains_restores_exports_predicts(tmp_path):
    cfg = write_config(din_model_config(), tmp_path / "din.json")
    train = gen(tmp_path / "train.parquet", TOTAL * 2 * BATCH, 3)
    evl = gen(tmp_path / "eval.parquet", 1024, 4)
    _, m = train_restore_export_predict(cfg, tmp_path, train, evl, FIRST, TOTAL, timeout=180)
    print(f"multi_tower_din: eval AUC after {TOTAL} steps: {m['eval_auc']:.4f}")
    assert math.isfinite(m["eval_auc"]) and m["eval_auc"] > 0.6, m
