"""The rank models mask_net, wukong and xdeepfm (issue 14, item 3) train end to end: `tzrun
--standalone --nproc-per-node 2 tzrec_train` on tiny data generated for each config
(tools/gen_data/gen_data.py --from-config), a few steps, then eval: the job exits 0 and
metrics.json holds a finite eval AUC. The modules are checked against torch in the unit tests
(train.RankModulesGolden.*), the wiring in train.RankMaskModels.*.

Budget: 3 jobs of 12 steps on 2 ranks, about 30 s in all on 2 shared cores.
"""
import math
import subprocess
import sys

import pytest

from train_job_helpers import TOOLS, details, metrics, run_job, write_config

GEN_DATA = TOOLS / "gen_data" / "gen_data.py"
BATCH = 32
STEPS = 12
CATS = [f"cat_{i}" for i in range(4)]
INTS = ["int_0", "int_1"]

MODELS = {
    "mask_net": {
        "feature_groups": [{"group_name": "all", "feature_names": CATS + INTS}],
        "mask_net": {"mask_net_module": {
            "n_mask_blocks": 2, "mask_block": {"reduction_ratio": 2.0, "hidden_dim": 16},
            "top_mlp": {"hidden_units": [16, 8]}, "use_parallel": False}},
    },
    "wukong": {
        "feature_groups": [{"group_name": "dense", "feature_names": INTS},
                           {"group_name": "sparse", "feature_names": CATS}],
        "wukong": {"dense_mlp": {"hidden_units": [16, 8]},
                   "wukong_layers": [{"lcb_feature_num": 4, "fmb_feature_num": 4,
                                      "compressed_feature_num": 4,
                                      "feature_num_mlp": {"hidden_units": [16]}}],
                   "final": {"hidden_units": [16]}},
    },
    "xdeepfm": {
        "feature_groups": [{"group_name": "wide", "feature_names": CATS, "group_type": "WIDE"},
                           {"group_name": "deep", "feature_names": CATS + INTS}],
        "xdeepfm": {"cin": {"cin_layer_size": [8, 8]}, "deep": {"hidden_units": [16, 8]},
                    "final": {"hidden_units": [8]}, "wide_embedding_dim": 8},
    },
}


def config(model: str) -> dict:
    return {
        "train_config": {
            "sparse_optimizer": {"adagrad_optimizer": {"lr": 0.05}, "constant_learning_rate": {}},
            "dense_optimizer": {"adam_optimizer": {"lr": 0.005}, "constant_learning_rate": {}},
            "num_steps": STEPS, "log_step_count_steps": STEPS, "save_checkpoints_steps": STEPS},
        "data_config": {"batch_size": BATCH, "dataset_type": "ParquetDataset",
                        "label_fields": ["label"], "fg_mode": "FG_DAG"},
        "feature_configs": [{"id_feature": {"feature_name": c, "expression": f"user:{c}",
                                            "num_buckets": 50, "embedding_dim": 8}}
                            for c in CATS] +
                           [{"raw_feature": {"feature_name": c, "expression": f"user:{c}",
                                             "normalizer": "method=log1p"}} for c in INTS],
        "model_config": {**MODELS[model], "metrics": [{"auc": {}}],
                         "losses": [{"binary_cross_entropy": {}}]},
    }


def gen(cfg, rows, out, seed):
    proc = subprocess.run([sys.executable, str(GEN_DATA), "--from-config", str(cfg), "--rows",
                           str(rows), "--out", str(out), "--seed", str(seed)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, details(proc)
    return out / "part-00000.parquet"


@pytest.mark.parametrize("model", sorted(MODELS))
def test_rank_model_trains_on_two_ranks(model, tmp_path):
    cfg = write_config(config(model), tmp_path / f"{model}.json")
    train = gen(cfg, STEPS * 2 * BATCH, tmp_path / "train", 1)
    evl = gen(cfg, 256, tmp_path / "eval", 2)
    proc = run_job(cfg, tmp_path / "m", 2, train, evl, check=False, timeout=120)
    assert proc.returncode == 0, details(proc)
    m = metrics(tmp_path / "m")
    assert m["global_step"] == STEPS and m["world_size"] == 2, m
    assert math.isfinite(m["eval_auc"]) and 0 <= m["eval_auc"] <= 1, m
