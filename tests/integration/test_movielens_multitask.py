"""MovieLens 100k multi-task and sequence examples (issue 14) on the real data
(../shared/data/movielens_100k, joined by tools/data/movielens_join.py --multi-task --sequence;
skipped when absent):

- the fastest multi-task example (examples/configs/simple_multi_task_movielens.config, tasks like =
  rating >= 4 and love = rating == 5) trains a few steps on 2 ranks under tzrun and both per-task
  eval AUCs (auc_like, auc_love) are there and above chance;
- the other multi-task examples (mmoe, dbmtl, ple) train a few steps and report both tasks' AUC;
- examples/configs/multi_tower_hist_movielens.config (the history as ";"-separated bags) trains;
- examples/configs/multi_tower_din_movielens.config is refused only for its sequence feature
  generation (fg_mode FG_DAG with a sequence feature); without the sequence its multi_tower_din
  trains (every other field is accepted).
"""
import json
import re

import pytest

from train_job_helpers import (CONFIGS, MOVIELENS_SRC, TOOLS, details, metrics, pbtext, run_job,
                               run_tool, steps_edit, write_config)

pytestmark = pytest.mark.needs_shared_data

STEPS = 30


@pytest.fixture(scope="module")
def movielens_mt(tmp_path_factory):
    if not (MOVIELENS_SRC / "ml-100k.inter").exists():
        pytest.skip(f"{MOVIELENS_SRC} is absent (needs ../shared/data/movielens_100k)")
    out = tmp_path_factory.mktemp("movielens_mt")
    run_tool(TOOLS / "data" / "movielens_join.py", "--src", MOVIELENS_SRC, "--out", out,
             "--multi-task", "--sequence")
    return out


def train(config, data, model_dir, check=True):
    return run_job(config, model_dir, 2, data / "train.csv", data / "eval.csv",
                   steps_edit(STEPS, log_every=10), check=check, timeout=120)


def test_simple_multi_task_like_and_love_auc(movielens_mt, tmp_path):
    md = tmp_path / "smt"
    proc = train(CONFIGS / "simple_multi_task_movielens.config", movielens_mt, md)
    m = metrics(md)
    assert m["global_step"] == STEPS and m["eval_samples"] == 20000, m
    assert "eval_auc" not in m, m
    for task in ("like", "love"):
        assert m[f"eval_auc_{task}"] > 0.5, (task, m, details(proc))
    assert "auc_like 0." in proc.stdout and "auc_love 0." in proc.stdout, details(proc)
    print(f"simple_multi_task {STEPS} steps: auc_like {m['eval_auc_like']:.4f} "
          f"auc_love {m['eval_auc_love']:.4f}")


@pytest.mark.parametrize("model", ["mmoe", "dbmtl", "ple"])
def test_other_multi_task_examples_train(movielens_mt, tmp_path, model):
    md = tmp_path / model
    proc = run_job(CONFIGS / f"{model}_movielens.config", md, 2, movielens_mt / "train.csv",
                   movielens_mt / "eval.csv", steps_edit(10, **{"eval_config.num_steps": 4}),
                   timeout=120)
    m = metrics(md)
    assert m["global_step"] == 10, m
    for task in ("like", "love"):
        assert 0 < m[f"eval_auc_{task}"] < 1, (task, m, details(proc))


def test_history_bag_example_trains(movielens_mt, tmp_path):
    md = tmp_path / "hist"
    proc = run_job(CONFIGS / "multi_tower_hist_movielens.config", md, 2,
                   movielens_mt / "train.csv", movielens_mt / "eval.csv",
                   steps_edit(10, **{"eval_config.num_steps": 4}), timeout=120)
    m = metrics(md)
    assert m["global_step"] == 10 and 0 < m["eval_auc"] < 1, (m, details(proc))


@pytest.mark.parametrize("name", ["multi_tower_ids", "multi_tower_din_ids"])
def test_encoded_id_examples_train(movielens_mt, tmp_path, name):
    """The FG_NONE pair: MultiTowerDIN over the history and its baseline without it."""
    md = tmp_path / name
    proc = run_job(CONFIGS / f"{name}_movielens.config", md, 2,
                   movielens_mt / "train.csv", movielens_mt / "eval.csv",
                   steps_edit(10, **{"eval_config.num_steps": 4}), timeout=180)
    m = metrics(md)
    assert m["global_step"] == 10 and 0 < m["eval_auc"] < 1, (m, details(proc))


def refusal(proc) -> str:
    """The first config error line of a run refused up front (exit 2: bad input)."""
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines()
             if re.match(r"tzrec_train train_eval( rank \d+)?: config: ", ln)]
    assert proc.returncode == 2 and lines, details(proc)
    return lines[0]


def test_din_config_refused_only_for_its_sequence_feature_generation(movielens_mt, tmp_path):
    proc = train(CONFIGS / "multi_tower_din_movielens.config", movielens_mt, tmp_path / "a",
                 check=False)
    assert ("data_config.fg_mode FG_NORMAL / FG_DAG with a sequence feature ('hist_seq__item_id')"
            in refusal(proc))

    # Without the sequence (its sequence_feature, SEQUENCE group and din_towers) the same
    # multi_tower_din trains: every other field is accepted.
    cfg = pbtext.load(CONFIGS / "multi_tower_din_movielens.config", lenient=True)
    cfg["feature_configs"] = [f for f in cfg["feature_configs"] if "sequence_feature" not in f]
    groups = cfg["model_config"]["feature_groups"]
    cfg["model_config"]["feature_groups"] = [g for g in groups if g.get("group_type") != "SEQUENCE"]
    din = cfg["model_config"]["multi_tower_din"]
    assert "seq" in json.dumps(din.pop("din_towers")), din
    train(write_config(cfg, tmp_path / "d.json"), movielens_mt, tmp_path / "d")
    assert metrics(tmp_path / "d")["global_step"] == STEPS
