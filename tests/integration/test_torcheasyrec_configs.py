"""Every TorchEasyRec pipeline config in ../shared/reference/torcheasyrec-configs/ (issue 13,
item 7) either trains end to end under tzrun on 2 ranks, on data generated for its own input
fields (tools/gen_data/gen_data.py --from-config), or is refused up front by a message that names
the first unsupported model or feature.

Each config is run as a TorchEasyRec user would: `tzrun --standalone --nproc-per-node 2
tzrec_train --pipeline_config_path X.config --train_input_path ... --eval_input_path ...
--model_dir ...`, nothing else changed. No --edit_config_json is needed: the shared configs train
num_epochs 1 and their eval_config.num_steps (100) is more than the eval data has, so the length
of a run is set by the generated rows alone (TRAIN_STEPS steps of the config's batch_size on each
rank: TRAIN_STEPS).

The files are taken from the directory listing, so a new config cannot be missed: EXPECT must
name each one (TRAIN, or the name the refusal message gives), and a file without an entry fails.

A TRAIN config whose embedding tables do not fit this host's memory (the Criteo configs' five
40M-row tables need ~24 GiB, more than a 24 GiB host has) is refused by tzrec_train's planner
before anything is allocated. The test then checks that the refusal is right (the planner's need
is at least the tables' weights + Adagrad state computed here from the config, and more than this
host's memory), trains the same config with every id table capped at SMALL_TABLE_ROWS rows
(the only other change; the data generated for that config) with the same assertions, and skips
with a message starting "host limit: " saying so: the config as is was not trained here. That
skip is a limit of the host, not a missing prerequisite, so conftest.py keeps it a skip even under
TZRUN_REQUIRE_SHARED_DATA=1; on a host with enough memory the config trains as is.
"""
import json
import math
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import HOST_LIMIT, SHARED
from train_job_helpers import (TOOLS, assert_complete, checkpoints, details, metrics, pbtext,
                               run_job)

pytestmark = pytest.mark.needs_shared_data

REF = SHARED / "reference" / "torcheasyrec-configs"
GEN_DATA = TOOLS / "gen_data" / "gen_data.py"
TRAIN = "train"


class Invalid(str):
    """A config of a supported model that TorchEasyRec's own model constructor rejects: refused
    up front with a ConfigError naming this field (not as an unsupported option)."""


class Says(str):
    """A config refused up front (exit 2) with a ConfigError containing this text: a field
    neither our .proto files nor the TorchEasyRec field table know, or a refused combination."""


#: file name -> TRAIN, Invalid(field), Says(text), or the field / model name the first line of the refusal
#: gives in quotes ("'mmoe' (ModelConfig) is a TorchEasyRec option that tzrec_train does not
#: support: ...").
EXPECT = {
    "dlrm_criteo.config": TRAIN,
    "deepfm_criteo.config": TRAIN,
    "multi_tower_taobao.config": TRAIN,
    # An unsupported model is named first, ahead of unsupported fields earlier in the file
    # (dssm's data_config.negative_sampler, the din configs' dense sequence raw features).
    "mmoe_taobao.config": TRAIN,
    "dbmtl_taobao.config": TRAIN,
    # tzrec/models/wukong.py raises "dense mlp last hidden_unit must be the same sparse feature
    # dim": this config's dense_mlp ends at 128, its embeddings are 16 wide.
    "wukong_criteo.config": Invalid("model_config.wukong.dense_mlp.hidden_units"),
    # Its grouped sequence_features and DIN encoders are read; its task towers' train_metrics
    # (a field newer than the TorchEasyRec protos tzrec_train follows) is unknown.
    "dbmtl_has_sequence_mock.config": Says("unknown field 'train_metrics'"),
    # multi_tower_din is read; these two configs are refused for other fields.
    "multi_tower_din_mock.config": "train_metrics",
    # Its FG_DAG sequence_feature is generated item by item.
    "multi_tower_din_taobao.config": TRAIN,
    "multi_tower_din_fg_mock_gradient_clipping.config": "autodis",
    "dssm_taobao.config": "dssm",
}
MUST_TRAIN = {"dlrm_criteo.config", "deepfm_criteo.config", "multi_tower_taobao.config"}
#: steps (of the config's batch_size on each of 2 ranks) a TRAIN config trains: enough for the
#: planted signal to show in the eval AUC (dlrm learns it slowest), few for the time budget
TRAIN_STEPS = {"dlrm_criteo.config": 24, "deepfm_criteo.config": 12}
DEFAULT_TRAIN_STEPS = 12
EVAL_ROWS = 2000
REFUSED_ROWS = 1000  # refused before any row is read
SMALL_TABLE_ROWS = 100000
REFUSAL = re.compile(r"'(\w+)' \((\w+)\) is a TorchEasyRec option that tzrec_train does not "
                     r"support")
NO_PLAN = re.compile(r"no feasible sharding plan: the tables need at least ([\d.]+) GiB of DDR in "
                     r"all, the \d+ rank\(s\) have ([\d.]+) GiB")


def listing() -> list:
    return sorted(p.name for p in REF.glob("*.config")) if REF.is_dir() else []


def require_ref():
    if not listing():
        pytest.skip(f"{REF} is absent or holds no .config (needs ../shared/reference)")


def gen_data(config, rows, out, seed):
    proc = subprocess.run([sys.executable, str(GEN_DATA), "--from-config", str(config),
                           "--rows", str(rows), "--out", str(out), "--seed", str(seed)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, details(proc)
    return out / "part-00000.parquet"


def data_for(config, tmp_path, train_rows, eval_rows=EVAL_ROWS):
    return (gen_data(config, train_rows, tmp_path / "train", seed=1),
            gen_data(config, eval_rows, tmp_path / "eval", seed=2))


def table_bytes(cfg) -> int:
    """Weights + per-element Adagrad state of the id tables, from the config alone (fp32)."""
    total = 0
    for f in cfg.get("feature_configs", []):
        fid = f.get("id_feature")
        if fid:
            rows = int(fid.get("num_buckets") or fid.get("hash_bucket_size") or 0)
            total += rows * int(fid["embedding_dim"]) * 4 * 2
    return total


def host_memory_bytes() -> int:
    for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def assert_trained(proc, model_dir, steps) -> float:
    assert proc.returncode == 0, details(proc)
    m = metrics(model_dir)
    # Single-task: eval_auc; multi-task: eval_auc_<tower> per task (the lowest is returned).
    aucs = {k: v for k, v in m.items() if k == "eval_auc" or k.startswith("eval_auc_")}
    assert aucs, f"no eval AUC in {model_dir}/metrics.json: {m}"
    for key, auc in aucs.items():
        assert math.isfinite(auc), f"{key} {auc} in {model_dir}/metrics.json"
    assert m["global_step"] == steps, m
    ckpts = checkpoints(model_dir)
    assert ckpts, f"no model.ckpt-* in {model_dir}"
    assert_complete(ckpts[max(ckpts)])
    for key, auc in aucs.items():
        assert auc > 0.5, f"{key} {auc} after {steps} steps on a planted signal: {m}"
    if len(aucs) > 1:
        print(f"{model_dir}: " + ", ".join(f"{k} {v:.4f}" for k, v in sorted(aucs.items())))
    return min(aucs.values())


def small_tables(config, out) -> pathlib.Path:
    """The config with every id table capped at SMALL_TABLE_ROWS rows, as protobuf JSON."""
    cfg = pbtext.load(config)
    for f in cfg["feature_configs"]:
        fid = f.get("id_feature", {})
        for key in ("num_buckets", "hash_bucket_size"):
            if int(fid.get(key, 0)) > SMALL_TABLE_ROWS:
                fid[key] = SMALL_TABLE_ROWS
    out.write_text(json.dumps(cfg, indent=2))
    return out


def train_too_big(name, config, proc, tmp_path, train_rows, steps):
    """The as-is run was refused by the planner: check why, then train it with small tables."""
    text = proc.stdout + proc.stderr
    m = NO_PLAN.search(text)
    assert proc.returncode == 3 and m, details(proc)
    need = float(m.group(1)) * 2**30
    estimate = table_bytes(pbtext.load(config))
    assert need >= 0.95 * estimate, f"planner needs {m.group(1)} GiB < tables' {estimate / 2**30:.1f}"
    assert host_memory_bytes() < need, f"host has {host_memory_bytes()} B >= need: {m.group(0)}"
    small = small_tables(config, tmp_path / "small.json")
    train, evl = data_for(small, tmp_path / "small_data", train_rows)
    auc = assert_trained(run_job(small, tmp_path / "small_model", 2, train, evl, check=False,
                                 timeout=600), tmp_path / "small_model", steps)
    print(f"{name}: as is refused by the planner ({m.group(0)}); with tables capped at "
          f"{SMALL_TABLE_ROWS} rows: eval AUC {auc:.4f}")
    pytest.skip(f"{HOST_LIMIT}{name} as is needs {m.group(1)} GiB for its tables, this host has "
                f"{host_memory_bytes() / 2**30:.1f} GiB: trained with id tables capped at "
                f"{SMALL_TABLE_ROWS} rows instead (eval AUC {auc:.4f}), not as is")


def test_every_config_has_an_expectation():
    require_ref()
    files = listing()
    assert not [f for f in files if f not in EXPECT], \
        f"{REF} has configs without an EXPECT entry: {[f for f in files if f not in EXPECT]}"
    assert not [f for f in EXPECT if f not in files], \
        f"EXPECT names configs {REF} does not hold: {[f for f in EXPECT if f not in files]}"
    assert MUST_TRAIN <= {f for f, e in EXPECT.items() if e == TRAIN}


@pytest.mark.parametrize("name", listing() or ["(none)"])
def test_config(name, tmp_path):
    require_ref()
    assert name in EXPECT, f"{name}: no EXPECT entry in {__file__}; add TRAIN or the refused name"
    config = REF / name
    expected = EXPECT[name]
    cfg = pbtext.load(config, lenient=True)
    steps = TRAIN_STEPS.get(name, DEFAULT_TRAIN_STEPS)
    train_rows = steps * 2 * int(cfg["data_config"].get("batch_size", 1024))
    # Tables (weights + Adagrad state, a lower bound) larger than the host: the planner refuses
    # before reading data, so small data does.
    too_big = expected == TRAIN and table_bytes(cfg) > host_memory_bytes()
    if expected == TRAIN and not too_big:
        train, evl = data_for(config, tmp_path / "data", train_rows)
    else:
        train, evl = data_for(config, tmp_path / "data", REFUSED_ROWS, REFUSED_ROWS // 4)
    model_dir = tmp_path / "model"
    proc = run_job(config, model_dir, 2, train, evl, check=False, timeout=600)
    if expected == TRAIN:
        if too_big or (proc.returncode == 3 and NO_PLAN.search(proc.stdout + proc.stderr)):
            train_too_big(name, config, proc, tmp_path, train_rows, steps)
        auc = assert_trained(proc, model_dir, steps)
        print(f"{name}: trained as is, eval AUC {auc:.4f}")
        return
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, details(proc)  # ConfigError
    if isinstance(expected, Says):
        assert expected in text, f"{name}: no refusal saying {expected!r}\n{details(proc)}"
        assert not checkpoints(model_dir), f"{name}: refused, but {model_dir} holds checkpoints"
        return
    if isinstance(expected, Invalid):
        assert f"{expected}: " in text, f"{name}: no ConfigError naming {expected}\n{details(proc)}"
        assert not checkpoints(model_dir), f"{name}: refused, but {model_dir} holds checkpoints"
        return
    m = REFUSAL.search(text)
    assert m, f"{name}: no 'X (Message) is a TorchEasyRec option ...' refusal\n{details(proc)}"
    assert m.group(1) == expected, f"{name}: refusal names '{m.group(1)}', expected '{expected}'"
    assert not checkpoints(model_dir) and not (model_dir / "metrics.json").exists(), \
        f"{name}: refused, but {model_dir} holds training output"
    line = next(ln for ln in text.splitlines() if REFUSAL.search(ln))
    print(f"{name}: refused: {line}")
