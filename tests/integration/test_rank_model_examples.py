"""The rank-model example configs (examples/configs/{wide_and_deep,dcn_v1,dcn_v2,mask_net,xdeepfm,
wukong}_criteo.config: deepfm_criteo.config's Criteo features and training with each model's
block) train on Criteo 10k (rows 1-8000 train, 8001-10000 eval) under `tzrun --nproc-per-node 2`
and learn: eval AUC at least 0.70 (docs/training.md's table has the measured figures, 0.727-0.736;
a model that ignored its inputs would sit at 0.5). Skipped without ../shared/data.

Budget: 6 one-epoch jobs of 63 steps, about 35 s (mask_net is the slowest, ~13 s).
"""
import math

import pytest

from train_job_helpers import CONFIGS, criteo, load_config, metrics, run_job  # noqa: F401

pytestmark = pytest.mark.needs_shared_data

MODELS = ["wide_and_deep", "dcn_v1", "dcn_v2", "mask_net", "xdeepfm", "wukong"]


@pytest.mark.parametrize("model", MODELS)
def test_rank_model_example_learns_on_criteo(model, tmp_path, criteo):
    path = CONFIGS / f"{model}_criteo.config"
    cfg = load_config(path.name)
    assert model in cfg["model_config"], cfg["model_config"].keys()  # the model the name says
    run_job(path, tmp_path / "m", 2, criteo / "train.txt", criteo / "eval.txt")
    m = metrics(tmp_path / "m")
    assert m["world_size"] == 2 and m["global_step"] == 63 and m["eval_samples"] == 2000, m
    assert math.isfinite(m["train_loss"]), m
    assert m["eval_auc"] >= 0.70, m
