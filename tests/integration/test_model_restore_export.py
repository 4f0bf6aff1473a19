"""Every model added for issue 14 restores at another world size, exports and predicts (issue 14,
"Done when"): the rank models wide_and_deep, dcn_v1, dcn_v2, mask_net, xdeepfm, wukong and the
multi-task simple_multi_task, mmoe, ple, dbmtl train 6 steps on 2 ranks, continue from that
checkpoint to step 10 on 1 rank (--continue_train), export, and predict over the eval data: the
AUC predict prints equals the job's final eval AUC (per task for the multi-task models).

Budget: 10 models x (2 short jobs + export + predict) on tiny generated data, about 40 s.
"""

import pytest

import test_multi_task as mt
import test_rank_models_mask as rm
from train_job_helpers import train_restore_export_predict, write_config

BATCH = 32
FIRST, TOTAL = 6, 10

CROSS = {
    "wide_and_deep": {
        "feature_groups": [
            {"group_name": "wide", "feature_names": rm.CATS, "group_type": "WIDE"},
            {"group_name": "deep", "feature_names": rm.CATS + rm.INTS}],
        "wide_and_deep": {"deep": {"hidden_units": [16, 8]}, "final": {"hidden_units": [4]},
                          "wide_embedding_dim": 3}},
    "dcn_v1": {
        "feature_groups": [{"group_name": "all", "feature_names": rm.CATS + rm.INTS}],
        "dcn_v1": {"cross": {"cross_num": 2}, "deep": {"hidden_units": [16, 8]},
                   "final": {"hidden_units": [4]}}},
    "dcn_v2": {
        "feature_groups": [{"group_name": "all", "feature_names": rm.CATS + rm.INTS}],
        "dcn_v2": {"backbone": {"hidden_units": [24]}, "cross": {"cross_num": 2, "low_rank": 6},
                   "deep": {"hidden_units": [16, 8]}, "final": {"hidden_units": [4]}}},
}
RANK = sorted(rm.MODELS) + sorted(CROSS)
MULTI_TASK = ["simple_multi_task", "mmoe", "ple", "dbmtl"]


def config(model: str) -> dict:
    if model in MULTI_TASK:
        if model == "simple_multi_task":
            cfg = mt.config("mmoe")
            towers = cfg["model_config"].pop("mmoe")["task_towers"]
            cfg["model_config"]["simple_multi_task"] = {"task_towers": towers}
            return cfg
        return mt.config(model)
    rm.MODELS.update(CROSS)  # rm.config reads the model body from rm.MODELS
    try:
        return rm.config(model)
    finally:
        for name in CROSS:
            rm.MODELS.pop(name)


@pytest.mark.parametrize("model", RANK + MULTI_TASK)
def test_restore_at_world_1_export_predict(model, tmp_path):
    cfg = write_config(config(model), tmp_path / f"{model}.json")
    train = rm.gen(cfg, TOTAL * 2 * BATCH, tmp_path / "train", 1)
    evl = rm.gen(cfg, 256, tmp_path / "eval", 2)
    train_restore_export_predict(cfg, tmp_path, train, evl, FIRST, TOTAL,
                                 edit={"data_config.batch_size": BATCH})
