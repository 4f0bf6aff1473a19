#!/usr/bin/env python3
"""Training samples/s of every rank model on the quickstart's data (issue 14's done-when). Run by
hand; not a test.

  .venv/bin/python tools/bench/models/run.py [--rows 200000] [--steps 150] [--models dlrm,wukong]

Data: tools/gen_data/gen_data.py --kind criteo (the quickstart's synthetic Criteo: 13 int_*, 26 cat_*
with examples/configs/synthetic_criteo.config's num_buckets), written once into --work. Config:
synthetic_criteo.config with its model_config replaced per model (the same 39 features, groups as
each model needs them, MLPs of [256, 128, 64] and a [64] final, the sizes below); 2 ranks on CPU
over Gloo, batch 1024 per rank, --steps steps, no eval. Figure: samples/s over the steps after the
first log window (rank 0's progress lines, log every steps/3), the median of --repeat runs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "config"))
import pbtext  # noqa: E402

BIN = os.path.join(ROOT, "build", "bin")
CATS = [f"cat_{i}" for i in range(26)]
INTS = [f"int_{i}" for i in range(13)]
DEEP = {"hidden_units": [256, 128, 64]}
FINAL = {"hidden_units": [64]}
PROGRESS = re.compile(r"^step (\d+)/(\d+)\s+loss (\S+).*?samples/s (\S+)")


def groups(*spec):
    return [{"group_name": n, "feature_names": f, "group_type": t} for n, f, t in spec]


MODELS = {
    "deepfm": (groups(("wide", CATS, "WIDE"), ("fm", CATS, "DEEP"), ("deep", CATS + INTS, "DEEP")),
               {"deepfm": {"deep": DEEP, "final": FINAL, "wide_embedding_dim": 1}}),
    "multi_tower": (groups(("dense", INTS, "DEEP"), ("sparse", CATS, "DEEP")),
                    {"multi_tower": {"towers": [{"input": "dense", "mlp": {"hidden_units": [64, 32]}},
                                                {"input": "sparse", "mlp": DEEP}],
                                     "final": FINAL}}),
    "wide_and_deep": (groups(("wide", CATS, "WIDE"), ("deep", CATS + INTS, "DEEP")),
                      {"wide_and_deep": {"deep": DEEP, "final": FINAL, "wide_embedding_dim": 4}}),
    "dcn_v1": (groups(("all", CATS + INTS, "DEEP")),
               {"dcn_v1": {"cross": {"cross_num": 3}, "deep": DEEP, "final": FINAL}}),
    "dcn_v2": (groups(("all", CATS + INTS, "DEEP")),
               {"dcn_v2": {"backbone": {"hidden_units": [256]}, "cross": {"cross_num": 3, "low_rank": 64},
                           "deep": DEEP, "final": FINAL}}),
    "mask_net": (groups(("all", CATS + INTS, "DEEP")),
                 {"mask_net": {"mask_net_module": {
                     "n_mask_blocks": 3, "mask_block": {"reduction_ratio": 2.0, "hidden_dim": 256},
                     "top_mlp": DEEP, "use_parallel": True}}}),
    "xdeepfm": (groups(("wide", CATS, "WIDE"), ("deep", CATS + INTS, "DEEP")),
                {"xdeepfm": {"cin": {"cin_layer_size": [64, 64]}, "deep": DEEP, "final": FINAL,
                             "wide_embedding_dim": 4}}),
    "wukong": (groups(("dense", INTS, "DEEP"), ("sparse", CATS, "DEEP")),
               {"wukong": {"dense_mlp": {"hidden_units": [256, 16]},
                           "wukong_layers": [{"lcb_feature_num": 16, "fmb_feature_num": 16,
                                              "compressed_feature_num": 8,
                                              "feature_num_mlp": {"hidden_units": [256]}}] * 2,
                           "final": FINAL}}),
}


def config(work: str, model: str) -> str:
    cfg = pbtext.load(os.path.join(ROOT, "examples", "configs", "synthetic_criteo.config"))
    if model != "dlrm":
        fg, body = MODELS[model]
        mc = cfg["model_config"]
        cfg["model_config"] = {"feature_groups": fg, **body, "losses": mc["losses"],
                               "metrics": mc["metrics"]}
    path = os.path.join(work, f"{model}.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def buckets() -> str:
    cfg = pbtext.load(os.path.join(ROOT, "examples", "configs", "synthetic_criteo.config"))
    out = [f["id_feature"]["num_buckets"] for f in cfg["feature_configs"] if "id_feature" in f]
    return ",".join(map(str, out))


def run(work, model, data, steps) -> float:
    md = os.path.join(work, f"model_{model}")
    subprocess.run(["rm", "-rf", md], check=True)
    every = max(1, steps // 3)
    edit = {"train_config.num_steps": steps, "train_config.num_epochs": 0,
            "train_config.log_step_count_steps": every, "train_config.save_checkpoints_steps": 0,
            "data_config.batch_size": 1024}
    cmd = [os.path.join(BIN, "tzrun"), "--standalone", "--nproc-per-node=2",
           os.path.join(BIN, "tzrec_train"), "--pipeline_config_path", config(work, model),
           "--model_dir", md, "--train_input_path", data, "--eval_input_path", data,
           "--edit_config_json", json.dumps(edit)]
    print("+", " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}"))
    rates = [float(m.group(4)) for m in map(PROGRESS.match, p.stdout.splitlines()) if m]
    if p.returncode != 0 or len(rates) < 2:
        raise SystemExit(f"{model}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return statistics.mean(rates[1:])  # equal windows: the mean of rates ~ samples / seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--models", default="dlrm," + ",".join(MODELS))
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "tzrec_modelbench"))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    data = os.path.join(a.work, f"criteo-{a.rows}")
    if not os.path.isdir(data):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_data", "gen_data.py"), "--kind",
                        "criteo", "--rows", str(a.rows), "--out", data, "--num-buckets", buckets()],
                       check=True)
    rows = []
    for model in a.models.split(","):
        r = statistics.median(run(a.work, model, os.path.join(data, "*.parquet"), a.steps)
                              for _ in range(a.repeat))
        rows.append((model, r))
        print(f"{model:14s} {r:10.0f} samples/s", flush=True)
    print(json.dumps(dict(rows)))


if __name__ == "__main__":
    main()
