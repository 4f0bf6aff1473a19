"""The tzrec_train job (issue 6) end to end with the real binaries, the commands and options
around training: export + predict, the config files (the protobuf-JSON twins the tests derive
configs through read as the .config examples), bad input, and the training options (gradient
accumulation, clipping, BF16). The models and checkpoints are in test_train_job.py; the helpers and data
fixtures in train_job_helpers.py.

The export and options tests read ../shared/data (needs_shared_data marker, conftest.py); the
bad-input tests use generated data and always run. Every test trains into its own tmp_path.

Budget: the whole file runs in about 1 minute on 2 shared cores.
"""
import math
import re
import subprocess

import pytest

from train_job_helpers import (  # noqa: F401 (fixtures are used by name)
    CONFIGS, SMALL_BUCKETS, assert_complete, checkpoints, criteo, criteo_generated,
    derived_config, details, job_env, load_config, load_pt, metrics, movielens_generated, run_job,
    small_dlrm, small_job, steps_edit, train_cmd, tzrec, wait_no_job, write_config)


@pytest.mark.needs_shared_data
@pytest.mark.parametrize("world", [2, 3])
def test_export_and_predict_reproduce_eval_auc(tmp_path, criteo, small_dlrm, world):
    md = tmp_path / "m"
    small_job(small_dlrm, criteo, md, world, steps_edit(30, log_every=10))
    m = metrics(md)
    out = tmp_path / "export"
    proc = tzrec("export", "--model_dir", md, "--export_dir", out)
    assert "step 30" in proc.stdout, details(proc)
    exported = checkpoints(out)
    assert list(exported) == [30]
    meta = assert_complete(exported[30])
    assert meta["world_size"] == 1
    model = load_pt(exported[30] / "model-000000-of-000001.pt")
    for table, t in meta["tables"].items():
        assert len(t["shards"]) == 1 and t["shards"][0]["sizes"] == t["shape"] == [SMALL_BUCKETS, 16]
        assert list(model[t["shards"][0]["weight_key"]].shape) == [SMALL_BUCKETS, 16]
    scores = tmp_path / "scores.txt"
    proc = tzrec("predict", "--export_dir", out, "--input_path", criteo / "eval.txt",
                 "--output_path", scores)
    line = [ln for ln in proc.stdout.splitlines() if "auc" in ln][-1]
    assert " 2000 rows" in line, line
    auc = float(line.rsplit("auc", 1)[1])
    assert auc == pytest.approx(m["eval_auc"], abs=1e-4), (line, m)
    lines = scores.read_text().splitlines()
    assert lines[0] == "logits,probs"  # TorchEasyRec's output names, sorted (CsvWriter: .txt)
    values = [float(x.split(",")[1]) for x in lines[1:]]
    assert len(values) == 2000 and all(0 < v < 1 for v in values)


# --------------------------------------------------------------------------------------------
# the config files: the tests' protobuf-JSON twins of the .config examples


@pytest.mark.parametrize("example,data,train,evl", [
    ("dlrm_criteo.config", "criteo_generated", "train.txt", "eval.txt"),
    ("deepfm_criteo.config", "criteo_generated", "train.txt", "eval.txt"),
    ("multi_tower_movielens.config", "movielens_generated", "train.csv", "eval.csv"),
])
def test_json_twin_reads_as_the_example(tmp_path, request, example, data, train, evl):
    """load_config (tools/config/pbtext.py) + protobuf JSON, the way every derived config in these
    tests is written, gives tzrec_train the same EasyRecConfig as the .config example read by
    libprotobuf's text parser: the effective configs (model_dir/pipeline.config, protobuf text
    printed from the parsed message) are byte-equal."""
    data = request.getfixturevalue(data)
    cfg = load_config(example)
    twin = write_config(cfg, tmp_path / "twin.json")
    # Small tables and 2 steps keep both runs short; the same edit goes to both.
    edit = steps_edit(2, log_every=1)
    for f in cfg["feature_configs"]:
        if "hash_bucket_size" in f.get("id_feature", {}):
            edit[f"feature_configs[feature_name={f['id_feature']['feature_name']}]"
                 ".id_feature.hash_bucket_size"] = SMALL_BUCKETS
    effective = {}
    for name, path in (("text", CONFIGS / example), ("json", twin)):
        md = tmp_path / name
        run_job(path, md, 1, data / train, data / evl, edit)
        effective[name] = (md / "pipeline.config").read_text().replace(str(md), "MODEL_DIR")
    assert effective["text"] == effective["json"]
    assert 'model_dir: "MODEL_DIR"' in effective["json"], effective["json"][:400]
    resized = sum(1 for k in edit if k.endswith(".hash_bucket_size"))
    assert effective["json"].count(f"hash_bucket_size: {SMALL_BUCKETS}") == resized


# --------------------------------------------------------------------------------------------
# 8: bad input


def failing_job(*args, **kw):
    proc = run_job(*args, check=False, timeout=120, **kw)
    assert proc.returncode != 0, details(proc)
    return proc, proc.stdout + proc.stderr


def test_unknown_config_key_names_it_and_suggests(tmp_path, criteo_generated):
    criteo = criteo_generated
    def misspell(cfg):
        cfg["train_config"]["num_step"] = 10
    cfg = derived_config(tmp_path, "dlrm_criteo.config", misspell)
    proc, out = failing_job(cfg, tmp_path / "m", 2, criteo / "train.txt", criteo / "eval.txt")
    assert proc.returncode == 2, details(proc)
    assert "unknown field 'num_step' in TrainConfig (did you mean 'num_steps'?)" in out, details(proc)
    wait_no_job(str(cfg), timeout=5)
    assert not (tmp_path / "m").exists() or not checkpoints(tmp_path / "m")


def test_existing_checkpoint_needs_continue_train(tmp_path, criteo_generated, small_dlrm):
    criteo = criteo_generated
    md = tmp_path / "m"
    small_job(small_dlrm, criteo, md, 1, steps_edit(4))
    proc, out = failing_job(small_dlrm, md, 2, criteo / "train.txt", criteo / "eval.txt", steps_edit(8))
    assert proc.returncode == 2, details(proc)
    assert "--continue_train" in out and "model.ckpt-4" in out, details(proc)
    assert list(checkpoints(md)) == [4]
    wait_no_job(str(md), timeout=5)


def test_missing_train_input_names_the_path(tmp_path, small_dlrm, criteo_generated):
    criteo = criteo_generated
    missing = tmp_path / "no_such_dir" / "train.txt"
    proc, out = failing_job(small_dlrm, tmp_path / "m", 2, missing, criteo / "eval.txt")
    assert proc.returncode == 2, details(proc)
    assert str(missing) in out, details(proc)
    wait_no_job(str(tmp_path / "m"), timeout=5)


def test_rank_without_training_rows_fails_naming_it(tmp_path, small_dlrm, criteo_generated):
    # One row over two ranks: rank 1 has none. With num_steps every epoch ends before a step, which
    # looped for ever; now every rank ends with rank 1's error, printed in full once.
    one_row = tmp_path / "train.txt"
    one_row.write_text((criteo_generated / "train.txt").read_text().splitlines()[0] + "\n")
    proc, out = failing_job(small_dlrm, tmp_path / "m", 2, one_row, criteo_generated / "eval.txt",
                            steps_edit(5))
    assert proc.returncode == 2, details(proc)
    assert f"rank 1 has no training rows in '{one_row}' (1 rows in all, split over 2 ranks)" in out, \
        details(proc)
    # Rank 0 agreed on rank 1's error and does not print it in full (only "the same error as rank
    # 1", if tzrun has not stopped it first); the report shows the error file tzrec_train wrote.
    assert not re.search(r"^(\[default0\]:)?tzrec_train train_eval rank 0: .*has no training rows",
                         out, re.M), details(proc)
    assert re.search(r"error_file: \S+/error\.json", out), details(proc)
    assert re.search(r"traceback : tzrec_train train_eval rank \d: .*has no training rows", out), \
        details(proc)
    wait_no_job(str(tmp_path / "m"), timeout=5)


def test_uneven_hosts_are_refused_before_planning(tmp_path, small_dlrm, criteo_generated):
    # Three static nodes on this machine with 1, 1 and 2 processes (LOCAL_WORLD_SIZE 1, 1, 2, 2):
    # the planner assumes hosts of one size, so every rank refuses the layout by name.
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    procs = []
    for node, nproc in enumerate([1, 1, 2]):
        cmd = train_cmd(small_dlrm, tmp_path / "m", nproc, criteo_generated / "train.txt",
                        criteo_generated / "eval.txt", steps_edit(4))
        cmd[1:2] = ["--nnodes=3", f"--node-rank={node}", "--master-addr=127.0.0.1",
                    f"--master-port={port}"]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, env=job_env()))
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 2, out
    joined = "\n".join(outs)
    assert "LOCAL_WORLD_SIZE by rank: 1, 1, 2, 2" in joined, joined
    assert "start every node with the same --nproc-per-node" in joined, joined
    assert not (tmp_path / "m").exists() or not checkpoints(tmp_path / "m")


def test_id_out_of_num_buckets_names_feature_and_value(tmp_path, movielens_generated):
    movielens = movielens_generated
    def shrink(cfg):
        for f in cfg["feature_configs"]:
            if f.get("id_feature", {}).get("feature_name") == "user_id":
                f["id_feature"]["num_buckets"] = 100
    cfg = derived_config(tmp_path, "multi_tower_movielens.config", shrink)
    proc, out = failing_job(cfg, tmp_path / "m", 2, movielens / "train.csv", movielens / "eval.csv")
    assert proc.returncode == 2, details(proc)
    line = next((ln for ln in out.splitlines() if "num_buckets" in ln), "")
    assert "user_id" in line and "100" in line, details(proc)
    # the value: a user id >= 100 from train.csv, quoted in the message
    ids = {int(r.split(",")[0]) for r in (movielens / "train.csv").read_text().splitlines()[1:]}
    assert any(f"{v}" in line for v in ids if v >= 100), line
    wait_no_job(str(cfg), timeout=5)


# --------------------------------------------------------------------------------------------
# 10: training options


def dense_tensors(model_dir, step):
    return {k: v for k, v in load_pt(checkpoints(model_dir)[step] / "model-000000-of-000002.pt").items()
            if k.startswith("dense/")}


def options_job(small_dlrm, criteo, model_dir, edit):
    small_job(small_dlrm, criteo, model_dir, 2, steps_edit(20, log_every=10, **edit))
    return metrics(model_dir), dense_tensors(model_dir, 20)


@pytest.mark.needs_shared_data
def test_mlp_batch_norm_buffers_are_saved_restored_and_exported(tmp_path, small_dlrm, criteo):
    """TorchEasyRec MLP options reach the model: use_bn gives BN buffers (TorchEasyRec's state-dict
    names) that go into the checkpoint, come back with --continue_train and into the export."""
    import torch

    md = tmp_path / "m"
    mlp = {"model_config.dlrm.final.use_bn": True, "model_config.dlrm.final.dropout_ratio": [0.1],
           "model_config.dlrm.dense_mlp.activation": "nn.LeakyReLU(negative_slope=0.1)"}
    small_job(small_dlrm, criteo, md, 2, steps_edit(20, save_every=10, log_every=10, **mlp))
    bn = "dense/final_mlp.mlp.0.perceptron.1."
    d = dense_tensors(md, 20)
    assert int(d[bn + "num_batches_tracked"]) == 20, sorted(d)
    assert d[bn + "running_mean"].abs().sum() > 0 and (d[bn + "running_var"] != 1).any()
    assert "dense/final_mlp.mlp.0.perceptron.0.bias" not in d  # no Linear bias with use_bn
    assert "dense/dense_mlp.mlp.0.perceptron.0.weight" in d
    small_job(small_dlrm, criteo, md, 2, steps_edit(30, save_every=10, log_every=10, **mlp),
              continue_train=True)
    assert int(dense_tensors(md, 30)[bn + "num_batches_tracked"]) == 30  # restored at 20
    out = tmp_path / "export"
    tzrec("export", "--model_dir", md, "--export_dir", out)
    exported = load_pt(checkpoints(out)[30] / "model-000000-of-000001.pt")
    assert torch.equal(exported[bn + "running_mean"], dense_tensors(md, 30)[bn + "running_mean"])
    proc = tzrec("predict", "--export_dir", out, "--input_path", criteo / "eval.txt")
    assert " 2000 rows" in proc.stdout, details(proc)


@pytest.fixture(scope="module")
def options_baseline(tmp_path_factory, small_dlrm, criteo):
    return options_job(small_dlrm, criteo, tmp_path_factory.mktemp("options_baseline") / "m", {})


@pytest.mark.parametrize("name,edit", [
    ("accumulation", {"train_config.gradient_accumulation_steps": 2}),
    ("clip_norm", {"train_config.grad_clipping": {"clipping_type": "norm", "max_gradient": 0.05}}),
    ("clip_value", {"train_config.grad_clipping": {"clipping_type": "value", "max_gradient": 0.001}}),
    ("bf16", {"train_config.mixed_precision": "BF16"}),
])
@pytest.mark.needs_shared_data
def test_training_options(tmp_path, criteo, small_dlrm, options_baseline, name, edit):
    import torch
    base_metrics, base_dense = options_baseline
    for m, dense in (options_baseline, options_job(small_dlrm, criteo, tmp_path / "m", edit)):
        assert m["global_step"] == 20, m
        for key in ("train_loss", "eval_auc", "eval_loss", "samples_per_sec"):
            assert m[key] is not None and math.isfinite(m[key]), (name, m)
        assert 0 < m["train_loss"] < 2 and 0.5 < m["eval_auc"] < 1, (name, m)
        assert all(torch.isfinite(v).all() for v in dense.values()), name
    # The option is applied, not ignored: the trained dense weights differ from the baseline's.
    diff = max((dense[k] - base_dense[k]).abs().max().item() for k in base_dense)
    assert diff > 1e-4, f"{name}: dense weights equal to the baseline's (max diff {diff})"
