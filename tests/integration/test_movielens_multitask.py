"""MovieLens 100k multi-task and sequence examples (issue 14) on the real data
(../shared/data/movielens_100k, joined by tools/data/movielens_join.py --multi-task --sequence;
skipped when absent):

- the fastest multi-task example (examples/configs/simple_multi_task_movielens.config, tasks like =
  rating >= 4 and love = rating == 5) trains a few steps on 2 ranks under tzrun and both per-task
  eval AUCs (auc_like, auc_love) are there and above chance;
- the other multi-task examples (mmoe, dbmtl, ple) train a few steps and report both tasks' AUC;
- examples/configs/multi_tower_hist_movielens.config (the history as ";"-separated bags) trains;
- examples/configs/multi_tower_din_movielens.config (fg_mode FG_DAG: the sequence_feature
  hist_seq generated item by item, its genre a vocab lookup) trains on 2 ranks under tzrun and
  its eval AUC is above chance;
- examples/configs/multi_tower_multi_window_din_movielens.config (MultiTower whose item group adds
  a multi_window_din_encoder over the same FG_DAG history) the same.
"""
import pytest

from train_job_helpers import (CONFIGS, MOVIELENS_SRC, TOOLS, details, metrics, run_job, run_tool,
                               steps_edit)

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


@pytest.mark.parametrize("config", [
    # MultiTowerDIN with the FG_DAG sequence_feature (hist_seq__item_id ids, hist_seq__genre looked
    # up in the genre vocabulary), the query tables shared with the history.
    "multi_tower_din_movielens",
    # MultiTower with a multi_window_din_encoder (windows 5, 10, 15, 20) over the FG_DAG history
    # in its item group.
    "multi_tower_multi_window_din_movielens",
])
def test_fg_dag_sequence_example_trains(movielens_mt, tmp_path, config):
    """The FG_DAG sequence examples train on 2 ranks and evaluate every eval row."""
    md = tmp_path / config
    proc = train(CONFIGS / f"{config}.config", movielens_mt, md)
    m = metrics(md)
    assert m["global_step"] == STEPS and m["eval_samples"] == 20000, m
    assert 0.5 < m["eval_auc"] < 1, (m, details(proc))
    print(f"{config} {STEPS} steps: eval_auc {m['eval_auc']:.4f}")
