"""Pooled sequence features (issue 14, item 2). First: a sequence_id_feature sharing its table with an
id feature, read by a DEEP group's sequence group and pooled by its pooling_encoder (mean),
trains under tzrun on 2 ranks, continues from that checkpoint on 1 rank (--continue_train),
exports and predicts: the AUC predict prints equals the job's final eval AUC.

The data (fg_mode FG_NONE, TorchEasyRec's fg-encoded form): the training file holds the sequence
as text "id;id;..." (sequence_delim ";"), the eval file as a Parquet list<int64>; sequences are
0 to 8 long, sequence_length 8. The label is planted on the pooled sequence (mean id of the
clicks below 25), so a model that reads the pooled sequence beats 0.5. TorchEasyRec reads an
FG_NONE sequence whole (sequence_length only reaches its feature generation): with
sequence_length 5 the same data is refused, naming the feature, the row and both lengths.

Second: TorchEasyRec's grouped form (sequence_feature with sequence_name) read from CSV, its
sub-features named "<sequence_name>__<feature_name>", pooled with sum, trains on 2 ranks.

Budget: 4 short jobs + export + predict on tiny generated data, about 15 s.
"""
import math
import random

import pyarrow as pa
import pyarrow.parquet as pq

from train_job_helpers import (metrics, run_job, steps_edit, train_restore_export_predict,
                               write_config)

BATCH = 64
FIRST, TOTAL = 20, 40
ITEMS = 50
MAX_LEN = 8  # the longest generated sequence, and the features' sequence_length


def config() -> dict:
    return {
        "train_config": {
            "sparse_optimizer": {"adagrad_optimizer": {"lr": 0.1}, "constant_learning_rate": {}},
            "dense_optimizer": {"adam_optimizer": {"lr": 0.01}, "constant_learning_rate": {}}},
        "data_config": {"batch_size": BATCH, "dataset_type": "ParquetDataset",
                        "label_fields": ["clk"]},
        "feature_configs": [
            {"id_feature": {"feature_name": "item", "num_buckets": ITEMS, "embedding_dim": 8,
                            "embedding_name": "item_emb", "pooling": "mean"}},
            {"sequence_id_feature": {"feature_name": "clicks", "sequence_length": MAX_LEN,
                                     "num_buckets": ITEMS, "embedding_dim": 8,
                                     "embedding_name": "item_emb"}}],
        "model_config": {
            "feature_groups": [{
                "group_name": "all", "feature_names": ["item"],
                "sequence_groups": [{"group_name": "hist", "feature_names": ["item", "clicks"]}],
                "sequence_encoders": [{"pooling_encoder": {"input": "hist"}}]}],
            "multi_tower": {"towers": [{"input": "all", "mlp": {"hidden_units": [16]}}],
                            "final": {"hidden_units": [8]}},
            "metrics": [{"auc": {}}], "losses": [{"binary_cross_entropy": {}}]},
    }


def gen(path, rows, seed, as_list):
    rng = random.Random(seed)
    items, clicks, labels = [], [], []
    for _ in range(rows):
        seq = [rng.randrange(ITEMS) for _ in range(rng.randrange(MAX_LEN + 1))]
        item = rng.randrange(ITEMS)
        signal = (sum(seq) / len(seq) if seq else item) < ITEMS / 2
        labels.append(int(signal) if rng.random() < 0.9 else int(not signal))
        items.append(item)
        clicks.append(seq if as_list else ";".join(map(str, seq)))
    column = pa.array(clicks, type=pa.list_(pa.int64()) if as_list else pa.string())
    pq.write_table(pa.table({"clk": labels, "item": items, "clicks": column}), path)
    return path


def test_pooled_sequence_trains_restores_exports_predicts(tmp_path):
    cfg = write_config(config(), tmp_path / "seq.json")
    train = gen(tmp_path / "train.parquet", TOTAL * 2 * BATCH, 1, as_list=False)
    evl = gen(tmp_path / "eval.parquet", 1024, 2, as_list=True)
    _, m = train_restore_export_predict(cfg, tmp_path, train, evl, FIRST, TOTAL)
    print(f"eval AUC after {TOTAL} steps: {m['eval_auc']:.4f}")
    assert math.isfinite(m["eval_auc"]) and m["eval_auc"] > 0.6, m


def test_fg_none_sequence_longer_than_sequence_length_is_refused(tmp_path):
    cfg = config()
    cfg["feature_configs"][1]["sequence_id_feature"]["sequence_length"] = 5
    path = write_config(cfg, tmp_path / "seq5.json")
    train = gen(tmp_path / "train.parquet", 4 * BATCH, 1, as_list=False)
    proc = run_job(path, tmp_path / "m", 1, train, None, steps_edit(2), check=False)
    assert proc.returncode != 0, proc.stdout
    assert "train.parquet row " in proc.stderr and \
        "feature 'clicks': a sequence of " in proc.stderr and \
        "items, more than its sequence_length 5" in proc.stderr, proc.stderr
    assert "set sequence_length to at least the longest sequence" in proc.stderr, proc.stderr


def grouped_config() -> dict:
    """TorchEasyRec's grouped form (sequence_feature with sequence_name, as its reference
    configs write it) read from CSV: sub-features "click__item" (shares "item"'s table item_emb,
    the sub-feature's own name) and "click__price" (bucket ids), sequence_delim "|", pooled with
    sum in the multi_tower's group."""
    cfg = config()
    cfg["data_config"].update({"dataset_type": "CsvDataset", "with_header": True})
    cfg["feature_configs"] = [
        {"id_feature": {"feature_name": "item", "num_buckets": ITEMS, "embedding_dim": 8}},
        {"sequence_feature": {
            "sequence_name": "click", "sequence_length": MAX_LEN, "sequence_delim": "|",
            "features": [
                {"id_feature": {"feature_name": "item", "num_buckets": ITEMS,
                                "embedding_dim": 8}},
                {"raw_feature": {"feature_name": "price", "boundaries": [1, 2, 3],
                                 "embedding_dim": 4}}]}}]
    group = cfg["model_config"]["feature_groups"][0]
    group["sequence_groups"][0]["feature_names"] = ["item", "click__item", "click__price"]
    group["sequence_encoders"][0]["pooling_encoder"]["pooling_type"] = "sum"
    return cfg


def gen_csv(path, rows, seed):
    rng = random.Random(seed)
    lines = ["clk,item,click__item,click__price"]
    for _ in range(rows):
        seq = [rng.randrange(ITEMS) for _ in range(rng.randrange(MAX_LEN + 1))]
        signal = sum(1 for v in seq if v < ITEMS / 2) > len(seq) / 2
        label = int(signal) if rng.random() < 0.9 else int(not signal)
        prices = [rng.randrange(4) for _ in seq]
        lines.append(f"{label},{rng.randrange(ITEMS)},{'|'.join(map(str, seq))},"
                     f"{'|'.join(map(str, prices))}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_grouped_sequence_feature_from_csv_trains_on_two_ranks(tmp_path):
    cfg = write_config(grouped_config(), tmp_path / "grouped.json")
    train = gen_csv(tmp_path / "train.csv", TOTAL * 2 * BATCH, 3)
    evl = gen_csv(tmp_path / "eval.csv", 1024, 4)
    md = tmp_path / "m"
    run_job(cfg, md, 2, train, evl, steps_edit(TOTAL, log_every=TOTAL), timeout=120)
    m = metrics(md)
    assert m["global_step"] == TOTAL and m["world_size"] == 2, m
    print(f"grouped sequence, eval AUC after {TOTAL} steps: {m['eval_auc']:.4f}")
    assert math.isfinite(m["eval_auc"]) and m["eval_auc"] > 0.6, m
    # The pipeline.config written to model_dir holds the expanded sequence features.
    written = (md / "pipeline.config").read_text()
    assert 'feature_name: "click__item"' in written and "sequence_id_feature" in written, written
