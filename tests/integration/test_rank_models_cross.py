"""wide_and_deep, dcn_v1 and dcn_v2 (TorchEasyRec's tzrec/models/wide_and_deep.py, dcn.py, dcn_v2.py)
train under `tzrun --nproc-per-node 2` on tiny generated Criteo-layout data: the job completes,
metrics.json has an eval AUC, and the checkpoint's dense tensors have exactly the names and shapes
of the state dict of the same model built with torch.nn as upstream builds it (MLP from
tzrec/modules/mlp.py, Cross/CrossV2 from tzrec/modules/interaction.py). wide_and_deep's WIDE group
reads "<table>__wide" tables of wide_embedding_dim.
"""
import math

import torch
from torch import nn

from train_job_helpers import (  # noqa: F401 (fixtures are used by name)
    criteo_generated, load_config, load_pt, metrics, checkpoints, ckpt_metadata, run_job,
    steps_edit, write_config)

CATS = [f"cat_{i}" for i in range(6)]
INTS = [f"int_{i}" for i in range(3)]
DIM = 8
STEPS = 6


def base_config() -> dict:
    cfg = load_config("deepfm_criteo.config")
    keep = set(CATS + INTS)
    feats = []
    for f in cfg["feature_configs"]:
        body = f.get("id_feature") or f.get("raw_feature")
        if body["feature_name"] not in keep:
            continue
        if "id_feature" in f:
            body["hash_bucket_size"] = 1000
            body["embedding_dim"] = DIM
        feats.append(f)
    cfg["feature_configs"] = feats
    mc = cfg["model_config"]
    mc.pop("deepfm")
    return cfg


class Mlp(nn.Module):
    """State-dict layout of TorchEasyRec's MLP with default options: mlp.<i>.perceptron.0."""

    def __init__(self, in_dim, units):
        super().__init__()
        dims = [in_dim] + units
        self.mlp = nn.ModuleList(nn.Module() for _ in units)
        for i, p in enumerate(self.mlp):
            p.perceptron = nn.Sequential(nn.Linear(dims[i], dims[i + 1]), nn.ReLU())


class Cross(nn.Module):  # interaction.py Cross
    def __init__(self, d, n):
        super().__init__()
        self.w = nn.ModuleList(nn.Linear(d, 1, bias=False) for _ in range(n))
        self.b = nn.ParameterList(nn.Parameter(torch.zeros(d)) for _ in range(n))


class CrossV2(nn.Module):  # interaction.py CrossV2
    def __init__(self, d, n, r):
        super().__init__()
        self.u_kernels = nn.ModuleList(nn.Linear(d, r, bias=False) for _ in range(n))
        self.v_kernels = nn.ModuleList(nn.Linear(r, d) for _ in range(n))


def dense_shapes(model_dir) -> tuple[dict, dict]:
    ckpt = checkpoints(model_dir)[STEPS]
    tensors = load_pt(ckpt / "model-000000-of-000002.pt")
    dense = {k[len("dense/"):]: list(v.shape) for k, v in tensors.items() if k.startswith("dense/")}
    return dense, ckpt_metadata(ckpt)["tables"]


def expect_state_dict(model_dir, upstream: nn.Module):
    dense, _ = dense_shapes(model_dir)
    want = {k: list(v.shape) for k, v in upstream.state_dict().items()}
    assert dense == want
    return dense


def train(tmp_path, data, cfg):
    path = write_config(cfg, tmp_path / "config.json")
    run_job(path, tmp_path / "m", 2, data / "train.txt", data / "eval.txt", steps_edit(STEPS))
    m = metrics(tmp_path / "m")
    assert 0.0 <= m["eval_auc"] <= 1.0 and math.isfinite(m["train_loss"]), m
    assert m["global_step"] == STEPS and m["world_size"] == 2, m
    return tmp_path / "m"


def test_wide_and_deep(tmp_path, criteo_generated):
    cfg = base_config()
    cfg["model_config"]["feature_groups"] = [
        {"group_name": "wide", "feature_names": CATS, "group_type": "WIDE"},
        {"group_name": "deep", "feature_names": CATS + INTS, "group_type": "DEEP"}]
    cfg["model_config"]["wide_and_deep"] = {
        "deep": {"hidden_units": [16, 8]}, "final": {"hidden_units": [4]}, "wide_embedding_dim": 3}
    md = train(tmp_path, criteo_generated, cfg)
    up = nn.Module()
    up.deep_mlp = Mlp(len(CATS) * DIM + len(INTS), [16, 8])
    up.final_mlp = Mlp(1 + 8, [4])
    up.output_mlp = nn.Linear(4, 1)
    expect_state_dict(md, up)
    _, tables = dense_shapes(md)
    for c in CATS:
        assert tables[f"{c}_emb__wide"]["shape"] == [1000, 3], tables.keys()
        assert tables[f"{c}_emb"]["shape"] == [1000, DIM]


def test_dcn_v1(tmp_path, criteo_generated):
    cfg = base_config()
    cfg["model_config"]["feature_groups"] = [
        {"group_name": "all", "feature_names": CATS + INTS, "group_type": "DEEP"}]
    cfg["model_config"]["dcn_v1"] = {"cross": {"cross_num": 2}, "deep": {"hidden_units": [16, 8]},
                                     "final": {"hidden_units": [4]}}
    md = train(tmp_path, criteo_generated, cfg)
    d = len(CATS) * DIM + len(INTS)
    up = nn.Module()
    up.cross = Cross(d, 2)
    up.deep = Mlp(d, [16, 8])
    up.final_dnn = Mlp(d + 8, [4])
    up.output_linear = nn.Linear(4, 1, bias=False)
    expect_state_dict(md, up)


def test_dcn_v2(tmp_path, criteo_generated):
    cfg = base_config()
    cfg["model_config"]["feature_groups"] = [
        {"group_name": "all", "feature_names": CATS + INTS, "group_type": "DEEP"}]
    cfg["model_config"]["dcn_v2"] = {
        "backbone": {"hidden_units": [24]}, "cross": {"cross_num": 2, "low_rank": 6},
        "deep": {"hidden_units": [16, 8]}, "final": {"hidden_units": [4]}}
    md = train(tmp_path, criteo_generated, cfg)
    d = len(CATS) * DIM + len(INTS)
    up = nn.Module()
    up.backbone = Mlp(d, [24])
    up.cross = CrossV2(24, 2, 6)
    up.deep = Mlp(d, [16, 8])
    up.final = Mlp(24 + 8, [4])
    up.output_mlp = nn.Linear(4, 1, bias=False)
    expect_state_dict(md, up)
