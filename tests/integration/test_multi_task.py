"""Multi-task models end to end (src/worker/train/multi_task.cpp, ple.cpp, dbmtl.cpp;
docs/training.md "Multi-task models"): an MMoE, a PLE (two extraction layers) and a DBMTL with two
binary tasks (labels clk, buy) train on 2 ranks over tiny generated data (tools/gen_data
--from-config plants a signal in every label); the per-task metric names are TorchEasyRec's
(auc_<tower>, binary_cross_entropy_<tower>) in the progress lines (training loss per task),
metrics.json (eval_ prefixed), train_eval_result.txt and the eval command's eval_result.txt;
predict writes one logits_/probs_ pair per task and prints each task's AUC.
"""
import csv
import json
import math
import re
import subprocess
import sys

import pytest

from train_job_helpers import TOOLS, details, job_env, metrics, run_job, steps_edit, tzrec, \
    write_config
from conftest import binary

STEPS = 16
BATCH = 64


def config(model: str) -> dict:
    feats = [{"id_feature": {"feature_name": n, "expression": f"user:{n}", "num_buckets": 50,
                             "embedding_dim": 8}} for n in ("user_id", "item_id", "cate")]
    feats.append({"raw_feature": {"feature_name": "price", "expression": "item:price"}})
    towers = [
        {"tower_name": "ctr", "label_name": "clk", "mlp": {"hidden_units": [8]},
         "metrics": [{"auc": {}}], "losses": [{"binary_cross_entropy": {}}]},
        {"tower_name": "cvr", "label_name": "buy", "mlp": {"hidden_units": [8]}, "weight": 2.0,
         "metrics": [{"auc": {"thresholds": 0}}], "losses": [{"binary_cross_entropy": {}}]},
    ]
    if model == "mmoe":
        body = {"expert_mlp": {"hidden_units": [16, 8]}, "num_expert": 2,
                "gate_mlp": {"hidden_units": [4]}, "task_towers": towers}
    elif model == "ple":
        layer = {"network_name": "l", "expert_num_per_task": 1, "share_num": 1,
                 "task_expert_net": {"hidden_units": [8]}, "share_expert_net": {"hidden_units": [8]}}
        body = {"extraction_networks": [layer, dict(layer, expert_num_per_task=2)],
                "task_towers": towers}
    else:
        towers[1]["relation_tower_names"] = ["ctr"]
        towers[1]["relation_mlp"] = {"hidden_units": [4]}
        body = {"bottom_mlp": {"hidden_units": [16]}, "task_towers": towers}
    return {
        "train_config": {"sparse_optimizer": {"adagrad_optimizer": {"lr": 0.05},
                                              "constant_learning_rate": {}},
                         "dense_optimizer": {"adam_optimizer": {"lr": 0.01},
                                             "constant_learning_rate": {}}},
        "data_config": {"batch_size": BATCH, "dataset_type": "ParquetDataset",
                        "label_fields": ["clk", "buy"]},
        "feature_configs": feats,
        "model_config": {"feature_groups": [{"group_name": "all", "group_type": "DEEP",
                                             "feature_names": ["user_id", "item_id", "cate",
                                                               "price"]}],
                         model: body},
    }


def gen(cfg_path, rows, out, seed):
    proc = subprocess.run([sys.executable, str(TOOLS / "gen_data" / "gen_data.py"), "--from-config",
                           str(cfg_path), "--rows", str(rows), "--out", str(out), "--seed",
                           str(seed)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, details(proc)
    return out / "part-00000.parquet"


def check_progress(proc):
    """Progress lines (steps 8, 16) log each task's training loss by TorchEasyRec's name; the
    tasks' (weighted) losses add up to the total loss."""
    lines = [ln for ln in proc.stdout.splitlines() if re.match(r"(\[default0\]:)?step \d", ln)]
    assert len(lines) == 2, details(proc)
    for ln in lines:
        fields = ln.split()
        values = {fields[i]: fields[i + 1] for i in range(len(fields) - 1)}
        ctr = float(values["binary_cross_entropy_ctr"])
        cvr = float(values["binary_cross_entropy_cvr"])
        assert ctr > 0 and cvr > 0, ln
        assert float(values["loss"]) == pytest.approx(ctr + cvr, abs=2e-5), ln


def tzrun(nproc, *args):
    return [binary("tzrun"), "--standalone", f"--nproc-per-node={nproc}", "tzrec_train",
            *map(str, args)]


def test_mmoe_and_dbmtl_train_eval_predict(tmp_path):
    keys = ["auc_ctr", "auc_cvr", "binary_cross_entropy_ctr", "binary_cross_entropy_cvr"]
    for model in ("mmoe", "ple", "dbmtl"):
        cfg = write_config(config(model), tmp_path / f"{model}.json")
        train = gen(cfg, STEPS * 2 * BATCH, tmp_path / model / "train", 1)
        evl = gen(cfg, 512, tmp_path / model / "eval", 2)
        md = tmp_path / model / "m"
        proc = run_job(cfg, md, 2, train, evl, steps_edit(STEPS, log_every=8), timeout=120)
        check_progress(proc)
        m = metrics(md)
        assert m["global_step"] == STEPS and m["eval_samples"] == 512, m
        for k in keys:
            assert math.isfinite(m["eval_" + k]), (k, m)
        assert "eval_auc" not in m, m
        assert m["eval_loss"] == approx(m["eval_binary_cross_entropy_ctr"]
                                               + m["eval_binary_cross_entropy_cvr"]), m
        assert max(m["eval_auc_ctr"], m["eval_auc_cvr"]) > 0.5, m
        print(f"{model}: eval auc_ctr {m['eval_auc_ctr']:.4f} auc_cvr {m['eval_auc_cvr']:.4f}")
        line = json.loads((md / "train_eval_result.txt").read_text().splitlines()[-1])
        assert line["eval_auc_cvr"] == m["eval_auc_cvr"], line
    # The eval command (2 ranks) on the DBMTL checkpoint: the same metrics, TorchEasyRec's keys.
    proc = subprocess.run(tzrun(2, "eval", "--pipeline_config_path", md / "pipeline.config",
                                "--eval_input_path", evl), capture_output=True, text=True,
                          timeout=120, env=job_env())
    assert proc.returncode == 0, details(proc)
    result = json.loads((md / "eval_result.txt").read_text().splitlines()[-1])
    assert list(result) == ["global_step"] + keys, result
    for k in keys:
        assert result[k] == approx(m["eval_" + k]), (k, result, m)
    # export + predict: one logits_/probs_ pair per task, sorted; each task's AUC printed.
    export = tmp_path / "export"
    tzrec("export", "--model_dir", md, "--export_dir", export)
    out = tmp_path / "pred.csv"
    proc = tzrec("predict", "--export_dir", export, "--input_path", evl, "--output_path", out,
                 "--writer_type", "CsvWriter", "--reserved_columns", "clk,buy")
    assert " 512 rows, auc_ctr 0." in proc.stdout and ", auc_cvr 0." in proc.stdout, details(proc)
    rows = list(csv.reader(open(out)))
    assert rows[0] == ["logits_ctr", "logits_cvr", "probs_ctr", "probs_cvr", "clk", "buy"], rows[0]
    assert len(rows) == 513
    for r in rows[1:4]:
        for logit, prob in ((r[0], r[2]), (r[1], r[3])):
            assert float(prob) == approx(1 / (1 + math.exp(-float(logit))))



def approx(v):
    return pytest.approx(v, rel=1e-5, abs=1e-6)
