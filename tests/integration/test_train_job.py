"""The tzrec_train job (issue 6) end to end with the real binaries: `tzrun --standalone
--nproc-per-node N tzrec_train ...` on Criteo / MovieLens / synthetic Parquet, and checkpoints
(layout, exact continuation, resume at another world size, kill -9 atomicity). Export + predict,
bad input and the training options are in test_train_job_usage.py; the helpers and data fixtures
in train_job_helpers.py.

Data come from ../shared/data through tools/data and tools/gen_data into per-module temporary
directories: those tests carry the needs_shared_data marker (conftest.py) and skip with a message
when ../shared/data is absent (fail under TZRUN_REQUIRE_SHARED_DATA=1). Every test trains into
its own tmp_path. Most checkpoint tests use a copy of the DLRM example with 5000-row hash tables
(SMALL_BUCKETS) so that a save takes milliseconds instead of writing 330 MB.

Budget: the whole file runs in about 2 minutes on 2 shared cores.
"""
import math
import os
import pathlib
import random
import re
import subprocess
import sys
import time
import warnings

import pytest

from train_job_helpers import (  # noqa: F401 (fixtures are used by name)
    BATCH, CONFIGS, SMALL_BUCKETS, TOOLS, assert_complete, checkpoints, ckpt_metadata,
    consumed_ranges, criteo, derived_config, details, job_env, load_config, load_pt, metrics,
    movielens, per_rank_rows, row_set, rows_in, run_job, run_tool, small_dlrm, small_job,
    steps_edit, train_cmd, wait_no_job, write_config)




@pytest.mark.needs_shared_data
def test_dlrm_criteo_main_job(tmp_path, criteo):
    proc = run_job(CONFIGS / "dlrm_criteo.config", tmp_path / "m", 2, criteo / "train.txt",
                   criteo / "eval.txt", tee=True)
    m = metrics(tmp_path / "m")
    assert m["eval_auc"] >= 0.70, m
    assert m["world_size"] == 2
    # 1 epoch: 8000 rows over 2 ranks, 64 a batch -> ceil(4000 / 64) = 63 steps.
    assert m["global_step"] == 63, m
    assert m["samples_per_sec"] > 0 and math.isfinite(m["samples_per_sec"]), m
    assert m["train_loss"] is not None and math.isfinite(m["train_loss"]) and 0 < m["train_loss"] < 1, m
    assert m["eval_samples"] == 2000, m
    # Progress lines (log_step_count_steps 20): steps 20, 40, 60, on rank 0 only.
    progress = [ln for ln in proc.stdout.splitlines() if "]:step " in ln]
    assert len(progress) == 3, details(proc)
    assert all(ln.startswith("[default0]:step ") for ln in progress), progress
    for ln in progress:
        assert "loss" in ln and "samples/s" in ln and "eta" in ln, ln
    assert (tmp_path / "m" / "model.ckpt-63").is_dir()


@pytest.mark.needs_shared_data
def test_multi_tower_movielens(tmp_path, movielens):
    run_job(CONFIGS / "multi_tower_movielens.config", tmp_path / "m", 2, movielens / "train.csv",
            movielens / "eval.csv")
    m = metrics(tmp_path / "m")
    assert m["eval_auc"] >= 0.66, m
    assert "eval_grouped_auc" in m and 0.5 < m["eval_grouped_auc"] < 1.0, m
    assert m["eval_samples"] == 20000 and m["world_size"] == 2, m


@pytest.mark.needs_shared_data
def test_deepfm_criteo(tmp_path, criteo):
    run_job(CONFIGS / "deepfm_criteo.config", tmp_path / "m", 2, criteo / "train.txt", criteo / "eval.txt")
    m = metrics(tmp_path / "m")
    assert m["eval_auc"] >= 0.68, m
    assert math.isfinite(m["train_loss"]) and m["global_step"] > 0, m


@pytest.mark.needs_shared_data
def test_dense_only_model_trains_without_sparse_dist(tmp_path, criteo):
    """A model without id features (TorchEasyRec's TrainPipelineBase path): no embedding tables, no
    KJT all-to-all; the dense part still trains over 2 ranks and learns something."""
    cfg = load_config("dlrm_criteo.config")
    cfg["feature_configs"] = [f for f in cfg["feature_configs"] if "raw_feature" in f]
    dense = [f["raw_feature"]["feature_name"] for f in cfg["feature_configs"]]
    mc = cfg["model_config"]
    mc.pop("dlrm")
    mc["feature_groups"] = [{"group_name": "dense", "feature_names": dense, "group_type": "DEEP"}]
    mc["multi_tower"] = {"towers": [{"input": "dense", "mlp": {"hidden_units": [32, 16]}}],
                         "final": {"hidden_units": [8]}}
    path = write_config(cfg, tmp_path / "dense_only.json")
    run_job(path, tmp_path / "m", 2, criteo / "train.txt", criteo / "eval.txt")
    m = metrics(tmp_path / "m")
    assert m["eval_auc"] > 0.58 and math.isfinite(m["train_loss"]), m


def test_synthetic_parquet(tmp_path):
    sys.path.insert(0, str(TOOLS / "gen_data"))
    try:
        import gen_data  # noqa: PLC0415 (the tool's defaults)
    finally:
        sys.path.pop(0)
    cfg = load_config("synthetic_criteo.config")
    buckets = [f["id_feature"]["num_buckets"] for f in cfg["feature_configs"] if "id_feature" in f]
    if buckets != list(gen_data.CRITEO_BUCKETS):
        # gen_data's default id ranges exceed several of the config's num_buckets (e.g. cat_2: 100000
        # vs 20000), which the input pipeline rejects; write ids in the config's ranges instead.
        warnings.warn(f"gen_data default buckets {gen_data.CRITEO_BUCKETS} != synthetic_criteo.config "
                      f"num_buckets {buckets}; passing --num-buckets")
    arg = ",".join(map(str, buckets))
    gen = TOOLS / "gen_data" / "gen_data.py"
    run_tool(gen, "--kind", "criteo", "--rows", 20000, "--files", 2, "--out", tmp_path / "train",
             "--num-buckets", arg)
    run_tool(gen, "--kind", "criteo", "--rows", 5000, "--out", tmp_path / "eval", "--num-buckets", arg,
             "--seed", 7)
    assert len(list((tmp_path / "train").glob("*.parquet"))) == 2
    # The example's batch of 1024 gives 10 steps on 20k rows, too few to learn anything; 128 a rank
    # gives 79 steps.
    run_job(CONFIGS / "synthetic_criteo.config", tmp_path / "m", 2, tmp_path / "train" / "*.parquet",
            tmp_path / "eval" / "*.parquet", {"data_config.batch_size": 128})
    m = metrics(tmp_path / "m")
    assert m["eval_auc"] > 0.6, m
    assert m["eval_samples"] == 5000 and m["global_step"] == 79, m


# --------------------------------------------------------------------------------------------
# 4-6: checkpoints


def compare_checkpoints(a, b):
    """Every .pt tensor of checkpoint dirs a and b is equal (bitwise, or within 1e-6)."""
    import torch
    names = sorted(p.name for p in pathlib.Path(a).glob("*.pt"))
    assert names == sorted(p.name for p in pathlib.Path(b).glob("*.pt")), (names, list(pathlib.Path(b).iterdir()))
    compared = 0
    for name in names:
        ta, tb = load_pt(pathlib.Path(a) / name), load_pt(pathlib.Path(b) / name)
        assert sorted(ta) == sorted(tb), name
        for key in ta:
            x, y = ta[key], tb[key]
            assert x.shape == y.shape and x.dtype == y.dtype, (name, key)
            if not torch.equal(x, y):
                diff = (x.double() - y.double()).abs().max().item()
                assert diff <= 1e-6, f"{name}:{key} differs by {diff}"
            compared += 1
    return compared


@pytest.mark.needs_shared_data
def test_exact_continuation_same_world_size(tmp_path, criteo, small_dlrm):
    n = 10
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    small_job(small_dlrm, criteo, straight, 2, steps_edit(2 * n, save_every=n))
    small_job(small_dlrm, criteo, resumed, 2, steps_edit(n, save_every=n))
    proc = small_job(small_dlrm, criteo, resumed, 2, steps_edit(2 * n, save_every=n), continue_train=True)
    assert f"restored {resumed / f'model.ckpt-{n}'} (step {n}" in proc.stdout, details(proc)
    assert list(checkpoints(straight)) == list(checkpoints(resumed)) == [n, 2 * n]
    compared = compare_checkpoints(checkpoints(straight)[2 * n], checkpoints(resumed)[2 * n])
    assert compared > 2 * 26, compared  # weights + optimizer states of 26 tables + dense
    ms, mr = metrics(straight), metrics(resumed)
    assert ms["global_step"] == mr["global_step"] == 2 * n
    assert mr["train_loss"] == pytest.approx(ms["train_loss"], abs=1e-6), (ms, mr)
    assert mr["eval_auc"] == pytest.approx(ms["eval_auc"], abs=1e-6), (ms, mr)
    # Both runs consumed the same rows (a resumed rank's cursor also carries the restored global
    # cursor, so compare the union over ranks).
    cs = consumed_ranges(ckpt_metadata(checkpoints(straight)[2 * n]))
    assert cs == consumed_ranges(ckpt_metadata(checkpoints(resumed)[2 * n]))
    assert rows_in(cs) == 2 * n * BATCH * 2, cs


@pytest.mark.needs_shared_data
def test_exact_continuation_with_shuffle(tmp_path, criteo, small_dlrm):
    # data_config.shuffle: the checkpoint at step n sits mid shuffle buffer; the resumed run replays
    # the epoch's seeded batch order and skips the n batches trained, so it equals the straight run.
    n = 10
    shuffle = {"data_config.shuffle": True, "data_config.shuffle_buffer_size": 8}
    straight, resumed, plain = tmp_path / "straight", tmp_path / "resumed", tmp_path / "plain"
    small_job(small_dlrm, criteo, straight, 2, steps_edit(2 * n, save_every=n, **shuffle))
    small_job(small_dlrm, criteo, resumed, 2, steps_edit(n, save_every=n, **shuffle))
    proc = small_job(small_dlrm, criteo, resumed, 2, steps_edit(2 * n, save_every=n, **shuffle),
                     continue_train=True)
    assert f"restored {resumed / f'model.ckpt-{n}'} (step {n}" in proc.stdout, details(proc)
    compare_checkpoints(checkpoints(straight)[2 * n], checkpoints(resumed)[2 * n])
    ms, mr = metrics(straight), metrics(resumed)
    assert mr["train_loss"] == pytest.approx(ms["train_loss"], abs=1e-6), (ms, mr)
    assert mr["eval_auc"] == pytest.approx(ms["eval_auc"], abs=1e-6), (ms, mr)
    cs = consumed_ranges(ckpt_metadata(checkpoints(straight)[2 * n]))
    assert cs == consumed_ranges(ckpt_metadata(checkpoints(resumed)[2 * n]))
    assert rows_in(cs) == 2 * n * BATCH * 2, cs
    # Shuffled, the rows trained are not each rank's first 2n batches.
    small_job(small_dlrm, criteo, plain, 2, steps_edit(2 * n, save_every=2 * n))
    assert consumed_ranges(ckpt_metadata(checkpoints(plain)[2 * n])) != cs


@pytest.mark.needs_shared_data
def test_sample_weights_weight_the_loss(tmp_path, criteo, small_dlrm):
    # sample_weight_fields: the label column as the weight keeps only the positives' loss (their
    # weight 1 / mean), so the weighted run trains differently; the same column as the second
    # label_fields entry is read and ignored by the single-task model (identical to the plain run).
    n = 10
    plain, weighted, labels = tmp_path / "plain", tmp_path / "weighted", tmp_path / "labels"
    small_job(small_dlrm, criteo, plain, 2, steps_edit(n))
    small_job(small_dlrm, criteo, weighted, 2,
              steps_edit(n, **{"data_config.sample_weight_fields": ["label"]}))
    small_job(small_dlrm, criteo, labels, 2,
              steps_edit(n, **{"data_config.label_fields": ["label", "int_1"]}))
    mp, mw, ml = metrics(plain), metrics(weighted), metrics(labels)
    assert mw["train_loss"] != pytest.approx(mp["train_loss"], abs=1e-4), (mp, mw)
    assert mw["eval_loss"] != pytest.approx(mp["eval_loss"], abs=1e-4), (mp, mw)
    assert ml["train_loss"] == pytest.approx(mp["train_loss"], abs=1e-6), (mp, ml)
    assert ml["eval_auc"] == pytest.approx(mp["eval_auc"], abs=1e-6), (mp, ml)


@pytest.mark.needs_shared_data
def test_exact_continuation_across_epochs(tmp_path, criteo, small_dlrm):
    # num_epochs 2 straight == num_epochs 1, then --continue_train with num_epochs 2 (the finished
    # run's checkpoint sits at the epoch end: the resumed run must start epoch 2, not stop).
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    epochs = {"train_config.num_epochs": 2}
    small_job(small_dlrm, criteo, straight, 2, epochs)
    small_job(small_dlrm, criteo, resumed, 2, {})
    assert list(checkpoints(resumed)) == [63]
    small_job(small_dlrm, criteo, resumed, 2, epochs, continue_train=True)
    ms, mr = metrics(straight), metrics(resumed)
    assert ms["global_step"] == mr["global_step"] == 126, (ms, mr)
    compare_checkpoints(checkpoints(straight)[126], checkpoints(resumed)[126])
    assert mr["train_loss"] == pytest.approx(ms["train_loss"], abs=1e-6), (ms, mr)
    assert mr["eval_auc"] == pytest.approx(ms["eval_auc"], abs=1e-6), (ms, mr)


@pytest.mark.needs_shared_data
@pytest.mark.parametrize("w1,w2", [(1, 2), (2, 3), (3, 1)])
def test_resume_at_another_world_size(tmp_path, criteo, small_dlrm, w1, w2):
    n = 20  # 2n steps of 64 rows on 3 ranks stay inside the 8000-row epoch
    resumed, straight = tmp_path / "resumed", tmp_path / "straight"
    small_job(small_dlrm, criteo, resumed, w1, steps_edit(n, log_every=10))
    phase1 = metrics(resumed)
    meta1 = ckpt_metadata(checkpoints(resumed)[n])
    assert meta1["world_size"] == w1 and len(meta1["data_cursors"]) == w1
    assert rows_in(consumed_ranges(meta1)) == per_rank_rows(meta1) == n * BATCH * w1

    # Restore only (num_steps already reached): the resharded model at w2 scores the eval set
    # exactly as the w1 model did — shards were redistributed by global offset, nothing lost.
    proc = small_job(small_dlrm, criteo, resumed, w2, steps_edit(n, log_every=10), continue_train=True)
    assert f"saved by {w1} rank(s)" in proc.stdout, details(proc)
    reshard = metrics(resumed)
    assert reshard["world_size"] == w2 and reshard["global_step"] == n, reshard
    assert reshard["eval_auc"] == pytest.approx(phase1["eval_auc"], abs=2e-5), (phase1, reshard)
    assert reshard["eval_loss"] == pytest.approx(phase1["eval_loss"], abs=2e-5), (phase1, reshard)
    assert list(checkpoints(resumed)) == [n], "a restore-only run must not write a checkpoint"

    # Continue n more steps at w2.
    small_job(small_dlrm, criteo, resumed, w2, steps_edit(2 * n, log_every=10), continue_train=True)
    m = metrics(resumed)
    assert m["global_step"] == 2 * n and m["world_size"] == w2, m
    meta2 = ckpt_metadata(checkpoints(resumed)[2 * n])
    assert meta2["world_size"] == w2 and meta2["step"] == 2 * n
    # Data cursor: phase 2 read n batches of 64 on each of w2 ranks, none of them already read in
    # phase 1 and none read by two ranks (no repeats), and no row was marked consumed without
    # being trained on (no skips): the rows each rank added are disjoint and count exactly n*64*w2.
    # (A resumed rank's cursor also carries the restored global cursor, hence the set difference.)
    before = row_set(consumed_ranges(meta1))
    added = [row_set(c["consumed"]) - before for c in meta2["data_cursors"]]
    assert sum(map(len, added)) == len(set().union(*added)) == n * BATCH * w2, \
        [len(a) for a in added]
    final = row_set(consumed_ranges(meta2))
    assert final == before.union(*added) and len(final) == n * BATCH * (w1 + w2)

    # Against a straight 2n-step run at w2 (criterion: |AUC difference| <= 0.03). Phase 1 saw
    # n*64*w1 rows instead of n*64*w2, in another order, so the two models are not equal and a
    # loss-curve match would be arbitrary. What resuming must not do is lose what phase 1 learnt or
    # train on repeated rows; the exact eval after resharding (above) already pins the weights.
    # Measured (deterministic, seeded): phase 1 0.681-0.684; resumed vs straight 0.7154/0.7191
    # (1->2), 0.7246/0.7249 (2->3), 0.7118/0.7098 (3->1): spread <= 0.004, so 0.03 is far from
    # flaky, while restarting from scratch at the resume point would fall back to ~0.68. The
    # resumed model must also have kept learning past its phase-1 self (+0.03..0.04 measured).
    small_job(small_dlrm, criteo, straight, w2, steps_edit(2 * n, log_every=10))
    ms = metrics(straight)
    print(f"w{w1}->w{w2}: phase 1 auc {phase1['eval_auc']:.4f}, resumed {m['eval_auc']:.4f}, "
          f"straight {ms['eval_auc']:.4f}")
    assert abs(m["eval_auc"] - ms["eval_auc"]) <= 0.03, (m, ms)
    assert m["eval_auc"] > phase1["eval_auc"] + 0.01, (phase1, m)  # it kept learning (+0.03..0.04)


@pytest.mark.needs_shared_data
def test_checkpoint_layout_and_keep_max(tmp_path, criteo, small_dlrm):
    import torch
    md = tmp_path / "m"
    proc = small_job(small_dlrm, criteo, md, 2,
                     steps_edit(12, save_every=3, **{"train_config.keep_checkpoint_max": 2}))
    # One evaluation per save; the last step is a save step, so the final evaluation is that one.
    assert re.findall(r"eval step (\d+)  auc", proc.stdout) == ["3", "6", "9", "12"], proc.stdout
    cks = checkpoints(md)
    assert list(cks) == [9, 12], sorted(p.name for p in md.iterdir())
    assert not list(md.glob(".*tmp*")), "leftover temporary checkpoint directories"
    for step, path in cks.items():
        meta = assert_complete(path)
        assert meta["step"] == step and meta["world_size"] == 2
        expected = {f"{kind}-{r:06d}-of-000002.pt" for kind in ("model", "optimizer") for r in range(2)}
        assert {p.name for p in path.glob("*.pt")} == expected
        assert (path / "plan").is_dir() and (path / "plan" / "plan.json").exists()
        assert {f["name"] for f in meta["files"]} >= expected | {"plan/plan.json"}
        models = {r: load_pt(path / f"model-{r:06d}-of-000002.pt") for r in range(2)}
        optims = {r: load_pt(path / f"optimizer-{r:06d}-of-000002.pt") for r in range(2)}
        assert len(meta["tables"]) == 26
        for table, t in meta["tables"].items():
            assert t["shape"] == [SMALL_BUCKETS, 16], (table, t["shape"])
            rows = 0
            for s in t["shards"]:
                w = models[s["rank"]][s["weight_key"]]
                assert isinstance(w, torch.Tensor) and list(w.shape) == s["sizes"], (table, s)
                assert s["model_file"] == f"model-{s['rank']:06d}-of-000002.pt"
                for st in s["optimizer"].values():
                    assert list(optims[s["rank"]][st["key"]].shape) == st["shape"], (table, st)
                rows += s["sizes"][0] if s["sizes"][1] == 16 else 0
            assert rows == SMALL_BUCKETS, f"{table}: shards cover {rows} of {SMALL_BUCKETS} rows"
        for name, d in meta["dense"]["tensors"].items():
            assert list(models[0][f"dense/{name}"].shape) == d["shape"], name
        assert all(torch.isfinite(v).all() for v in models[0].values() if v.is_floating_point())


def incomplete_checkpoints(model_dir) -> dict:
    """step -> problem for every model.ckpt-STEP directory that is not complete."""
    bad = {}
    for step, path in checkpoints(model_dir).items():
        try:
            assert_complete(path)
        except (AssertionError, ValueError) as e:
            bad[step] = str(e).splitlines()[0]
    return bad


@pytest.mark.needs_shared_data
def test_kill_9_leaves_only_complete_checkpoints(tmp_path, criteo):
    # 20000-row tables: ~70 MB a checkpoint, so a good share of the run is spent saving and pruning.
    cfg = derived_config(tmp_path, "dlrm_criteo.config", lambda c: [
        f["id_feature"].update(hash_bucket_size=20000) for f in c["feature_configs"] if "id_feature" in f])
    md = tmp_path / "m"
    edit = steps_edit(60, save_every=2, log_every=10, **{"train_config.keep_checkpoint_max": 3})
    seed = int(os.environ.get("TZRUN_TEST_SEED", time.time_ns() % 100000))
    rng = random.Random(seed)
    for attempt in range(4):
        delay = rng.uniform(1.0, 3.5)
        p = subprocess.Popen(train_cmd(cfg, md, 2, criteo / "train.txt", criteo / "eval.txt", edit,
                                       continue_train=attempt > 0),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=job_env(),
                             start_new_session=True)
        try:
            time.sleep(delay)
            p.kill()  # SIGKILL of tzrun: no cleanup runs in the launcher
            p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        wait_no_job(str(md))  # the workers die with their launcher (no orphans)
        cks = checkpoints(md)
        bad = incomplete_checkpoints(md)
        print(f"TZRUN_TEST_SEED={seed} attempt {attempt}: killed after {delay:.2f} s, checkpoints "
              f"{list(cks)}, incomplete {bad}")
        complete = sorted(set(cks) - set(bad))
        # No model.ckpt-STEP may be incomplete: saves and keep_checkpoint_max pruning both go
        # through a temporary name (rename is atomic), so a kill leaves only .tmp directories.
        assert not bad, f"TZRUN_TEST_SEED={seed}: incomplete checkpoint directories {bad}"
    cks = checkpoints(md)
    complete = sorted(set(cks) - set(incomplete_checkpoints(md)))
    assert complete, f"no checkpoint survived 4 kills (TZRUN_TEST_SEED={seed}); the kills came too early"
    latest = complete[-1]
    proc = run_job(cfg, md, 2, criteo / "train.txt", criteo / "eval.txt",
                   steps_edit(latest + 4, save_every=2, log_every=10), continue_train=True)
    assert f"restored {cks[latest]} (step {latest}" in proc.stdout, details(proc)
    assert metrics(md)["global_step"] == latest + 4
    assert not list(md.glob(".model.ckpt-*.tmp")), "the next save removes leftover .tmp directories"
    assert not incomplete_checkpoints(md), "pruning after the resumed saves removes the partial ones"


# --------------------------------------------------------------------------------------------
# 7: export + predict
