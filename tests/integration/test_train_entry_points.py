"""TorchEasyRec's entry points with the real binaries under tzrun (issue 13 item 5): fine-tuning
from another run's checkpoint on new data at another world size (train_config.fine_tune_checkpoint
/ --fine_tune_checkpoint), the distributed `eval` command and its eval_result.txt, `predict` on
unlabeled input with reserved columns (CSV and Parquet), and the flags TorchEasyRec passes
(unknown ones ignored with a warning, misspelt ones refused), fine_tune_ckpt_param_map's
renames, and the options that shape these runs: the fine-tune optimizer state
(--ignore_restore_optimizer), eval_config.log_step_count_steps' progress lines,
data_config.eval_batch_size in eval and predict, and train_config.seed.

All data is generated (train_job_helpers.write_criteo_like, labels made learnable from int_0), so
nothing here needs ../shared. Budget: about a minute on 2 shared cores.
"""
import copy
import csv
import json
import math
import pathlib
import re
import subprocess

import pytest

from conftest import binary
from train_job_helpers import (  # noqa: F401 (fixtures are used by name)
    BATCH, checkpoints, ckpt_metadata, consumed_ranges, details, job_env, load_config, load_pt,
    metrics, pbtext, small_dlrm, steps_edit, train_cmd, tzrec, write_config, write_criteo_like)

SOURCE_STEPS = 20


def write_learnable(path, rows, seed):
    """Criteo-layout rows whose label is int_0 > 500 (so a trained model beats a fresh one)."""
    write_criteo_like(path, rows, seed)
    lines = []
    for line in pathlib.Path(path).read_text().splitlines():
        fields = line.split("\t")
        fields[0] = str(int(fields[1] != "" and int(fields[1]) > 500))
        lines.append("\t".join(fields))
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def run(cmd, check=True, timeout=240):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                          env=job_env())
    if check:
        assert proc.returncode == 0, details(proc)
    return proc


def tzrun(nproc, *args):
    return [binary("tzrun"), "--standalone", f"--nproc-per-node={nproc}", "tzrec_train", *args]


def first_step_loss(stdout):
    m = re.search(r"^step 1/\d+\s+loss ([0-9.]+)", stdout, re.M)
    assert m, stdout[-3000:]
    return float(m.group(1))


def eval_lines(path):
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("entry_data")
    write_learnable(out / "train.txt", 1024, seed=1)
    write_learnable(out / "eval.txt", 256, seed=2)
    write_learnable(out / "new_train.txt", 512, seed=11)  # "today's data" of the fine-tune run
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory, small_dlrm, data):
    """The run fine-tuned from / evaluated / exported: 2 ranks, SOURCE_STEPS steps."""
    md = tmp_path_factory.mktemp("source") / "m"
    run(train_cmd(small_dlrm, md, 2, data / "train.txt", data / "eval.txt",
                  steps_edit(SOURCE_STEPS, log_every=10)))
    assert list(checkpoints(md)) == [SOURCE_STEPS]
    return md


@pytest.fixture(scope="module")
def source_loss(tmp_path_factory, data, source):
    """The source model's loss on the first batch a 1-rank fine-tune run reads (the first BATCH
    rows of new_train.txt), by the eval command: a fine-tune run's step-1 loss must be exactly
    that."""
    out = tmp_path_factory.mktemp("source_loss")
    first = out / "first_batch.txt"
    first.write_text("".join((data / "new_train.txt").read_text().splitlines(True)[:BATCH]))
    run(tzrun(1, "eval", "--pipeline_config_path", source / "pipeline.config",
              "--checkpoint_path", checkpoints(source)[SOURCE_STEPS],
              "--eval_input_path", first, "--eval_result_filename", out / "first.txt"))
    [line] = eval_lines(out / "first.txt")
    return line["binary_cross_entropy"]


def test_fine_tune_on_new_data_at_another_world_size(tmp_path, small_dlrm, data, source,
                                                     source_loss):
    edit = steps_edit(8, log_every=1)
    tuned = tmp_path / "tuned"
    proc = run(train_cmd(small_dlrm, tuned, 1, data / "new_train.txt", data / "eval.txt", edit)
               + ["--fine_tune_checkpoint", str(source)])
    assert "fine-tune: weights and optimizer state from" in proc.stdout, proc.stdout[-2000:]
    assert f"model.ckpt-{SOURCE_STEPS}" in proc.stdout
    assert first_step_loss(proc.stdout) == pytest.approx(source_loss, abs=2e-5), proc.stdout[-2000:]
    # A fresh run: step counter from 0 (model.ckpt-8, not SOURCE_STEPS + 8), the new data from its
    # first row, and the weights were loaded (a fresh init has another first-step loss).
    assert list(checkpoints(tuned)) == [8]
    meta = ckpt_metadata(checkpoints(tuned)[8])
    assert meta["step"] == 8 and meta["world_size"] == 1
    assert consumed_ranges(meta) == [[0, 8 * BATCH]]
    assert metrics(tuned)["global_step"] == 8
    fresh = run(train_cmd(small_dlrm, tmp_path / "fresh", 1, data / "new_train.txt",
                          data / "eval.txt", edit))
    assert abs(first_step_loss(fresh.stdout) - source_loss) > 1e-3, fresh.stdout[-2000:]
    # The config field does the same as the flag; --continue_train on a model_dir with a
    # checkpoint wins over it (TorchEasyRec's order).
    again = run(train_cmd(small_dlrm, tuned, 1, data / "new_train.txt", data / "eval.txt",
                          {**steps_edit(10, log_every=1),
                           "train_config.fine_tune_checkpoint": str(source)},
                          continue_train=True))
    assert "fine_tune_checkpoint" in again.stdout and "is not used" in again.stdout
    assert list(checkpoints(tuned)) == [8, 10]


def test_fine_tune_mismatch_and_missing_checkpoint_are_named(tmp_path, small_dlrm, data, source):
    cfg = load_config("dlrm_criteo.config")
    for f in cfg["feature_configs"]:
        if "id_feature" in f and "hash_bucket_size" in f["id_feature"]:
            f["id_feature"]["hash_bucket_size"] = 777  # another table shape than the source's
    other = tmp_path / "other.json"
    other.write_text(json.dumps(cfg))
    proc = run(train_cmd(other, tmp_path / "m", 1, data / "new_train.txt", data / "eval.txt",
                         steps_edit(2)) + ["--fine_tune_checkpoint", str(source)], check=False)
    assert proc.returncode == 4, details(proc)
    assert re.search(r"table '\w+'", proc.stderr) and "777" in proc.stderr, proc.stderr
    proc = run(train_cmd(small_dlrm, tmp_path / "m2", 1, data / "new_train.txt", data / "eval.txt",
                         steps_edit(2)) + ["--fine_tune_checkpoint", str(tmp_path / "nothing")],
               check=False)
    assert proc.returncode == 2 and "fine_tune_checkpoint" in proc.stderr and "nothing" in proc.stderr


def test_fine_tune_param_map_renames_tables(tmp_path, small_dlrm, data, source, source_loss):
    # The same model with every table renamed: restoring needs fine_tune_ckpt_param_map
    # (TorchEasyRec's "<current name> <saved name>" lines); with it, step 1 sees the source's
    # weights exactly.
    cfg = json.loads(pathlib.Path(small_dlrm).read_text())
    renames = []
    for f in cfg["feature_configs"]:
        if "id_feature" not in f:
            continue
        idf = f["id_feature"]
        saved = idf.get("embedding_name") or idf["feature_name"] + "_emb"
        idf["embedding_name"] = "renamed_" + idf["feature_name"]
        renames.append(f"{idf['embedding_name']} {saved}")
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(cfg))
    param_map = tmp_path / "param_map.txt"
    param_map.write_text("# current saved\n" + "\n".join(renames) + "\n")

    def tune(model_dir, **edit):
        return run(train_cmd(renamed, tmp_path / model_dir, 1, data / "new_train.txt",
                             data / "eval.txt", {**steps_edit(2, log_every=1), **edit})
                   + ["--fine_tune_checkpoint", str(source)], check=False)

    proc = tune("no_map")
    assert proc.returncode == 4 and "renamed_" in proc.stderr, details(proc)
    proc = tune("mapped", **{"train_config.fine_tune_ckpt_param_map": str(param_map)})
    assert proc.returncode == 0, details(proc)
    assert first_step_loss(proc.stdout) == pytest.approx(source_loss, abs=2e-5), proc.stdout[-2000:]
    # A name the model does not have, a malformed line, a missing file: exit 2 before training.
    for text, needle in [("nosuch_emb c0_emb\n", "'nosuch_emb' is neither"),
                         ("a b c\n", "line 1"), (None, "cannot be read")]:
        bad = tmp_path / "bad_map.txt"
        bad.unlink(missing_ok=True)
        if text is not None:
            bad.write_text(text)
        proc = tune("bad", **{"train_config.fine_tune_ckpt_param_map": str(bad)})
        assert proc.returncode == 2 and needle in proc.stderr, details(proc)
        assert not checkpoints(tmp_path / "bad")


def test_eval_command_on_2_ranks_matches_train_eval(tmp_path, data, source):
    m = metrics(source)
    proc = run(tzrun(2, "eval", "--pipeline_config_path", source / "pipeline.config",
                     "--eval_input_path", data / "eval.txt", "--fg_threads", "4"))
    assert "ignoring unknown argument(s) '--fg_threads', '4'" in proc.stderr, proc.stderr
    [line] = eval_lines(source / "eval_result.txt")  # TorchEasyRec's default file name
    assert list(line) == ["global_step", "auc", "binary_cross_entropy"]
    assert line["global_step"] == SOURCE_STEPS
    assert line["auc"] == pytest.approx(m["eval_auc"], abs=1e-6)
    assert line["binary_cross_entropy"] == pytest.approx(m["eval_loss"], abs=1e-6)


def test_eval_ignores_the_configs_training_input(tmp_path, data, source):
    # TorchEasyRec's own configs name odps:// tables; eval reads only its eval input, so the
    # config's train_input_path (which eval has no flag to override) must not stop it.
    text = (source / "pipeline.config").read_text()
    cfg = tmp_path / "odps.config"
    cfg.write_text('train_input_path: "odps://project/tables/train"\n' + "\n".join(
        ln for ln in text.splitlines() if not ln.startswith("train_input_path")))
    run(tzrun(1, "eval", "--pipeline_config_path", cfg, "--checkpoint_path",
              source / f"model.ckpt-{SOURCE_STEPS}", "--eval_input_path", data / "eval.txt",
              "--eval_result_filename", str(tmp_path / "r.txt")))
    [line] = eval_lines(tmp_path / "r.txt")
    assert line["auc"] == pytest.approx(metrics(source)["eval_auc"], abs=1e-6)


def test_misspelt_and_refused_flags(tmp_path, source):
    proc = tzrec("eval", "--pipeline_config_path", source / "pipeline.config",
                 "--checkpiont_path", "x", check=False)
    assert proc.returncode == 2 and "did you mean '--checkpoint_path'?" in proc.stderr, details(proc)
    proc = tzrec("train_eval", "--pipeline_config_path", source / "pipeline.config",
                 "--ignore_restore_lr_scheduler", check=False)
    assert proc.returncode == 2 and "--ignore_restore_lr_scheduler is a TorchEasyRec flag" in \
        proc.stderr, details(proc)
    proc = tzrec("eval", "--pipeline_config_path", source / "pipeline.config", "--eval_type",
                 "best", check=False)
    assert proc.returncode == 2 and "--eval_type 'best'" in proc.stderr, details(proc)


def unlabeled_parquet(src, out, columns):
    """src (Criteo text) as Parquet without the label column, plus sample_id and note columns."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    types = {c: (pa.string() if c.startswith("cat") else pa.int64()) for c in columns}
    table = pcsv.read_csv(src, read_options=pcsv.ReadOptions(column_names=columns),
                          parse_options=pcsv.ParseOptions(delimiter="\t"),
                          convert_options=pcsv.ConvertOptions(column_types=types,
                                                              strings_can_be_null=True))
    table = table.drop(["label"])
    n = table.num_rows
    table = table.append_column("sample_id", pa.array([1000 + 7 * i for i in range(n)]))
    table = table.append_column("note", pa.array([f"row {i}, \"q\"" for i in range(n)]))
    pq.write_table(table, out)
    return n


def test_unlabeled_predict_keeps_reserved_columns(tmp_path, data, source):
    import pyarrow.parquet as pq
    export = tmp_path / "export"
    tzrec("export", "--model_dir", source, "--export_dir", export)
    columns = [f["input_name"] for f in load_config("dlrm_criteo.config")["data_config"]["input_fields"]]
    assert not any(c.startswith("cat") for c in columns[:14]), columns  # label, int_0.. first
    unlabeled = tmp_path / "unlabeled.parquet"
    n = unlabeled_parquet(data / "eval.txt", unlabeled, columns)

    out_csv = tmp_path / "pred.csv"
    proc = tzrec("predict", "--scripted_model_path", export, "--predict_input_path", unlabeled,
                 "--predict_output_path", out_csv, "--reserved_columns", "sample_id,note",
                 "--dataset_type", "ParquetDataset", "--batch_size", "50", "--predict_threads",
                 "4", "--some_odps_flag", "1")
    assert f"{n} rows (no label column" in proc.stdout, details(proc)
    assert "--predict_threads has no effect" in proc.stderr, proc.stderr
    assert "ignoring unknown argument(s) '--some_odps_flag', '1'" in proc.stderr, proc.stderr
    with open(out_csv, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["logits", "probs", "sample_id", "note"]
    body = rows[1:]
    assert [int(r[2]) for r in body] == [1000 + 7 * i for i in range(n)]
    assert [r[3] for r in body] == [f"row {i}, \"q\"" for i in range(n)]
    for logit, prob, *_ in body:
        assert float(prob) == pytest.approx(1 / (1 + math.exp(-float(logit))), abs=1e-6)

    # The same rows with their labels, as the config's CSV: the same scores, and the AUC.
    labeled = tmp_path / "labeled.csv"
    proc = tzrec("predict", "--export_dir", export, "--input_path", data / "eval.txt",
                 "--output_path", labeled, "--output_columns", "probs")
    assert re.search(rf" {n} rows, auc 0\.\d+", proc.stdout), details(proc)
    probs = [float(r[0]) for r in list(csv.reader(open(labeled)))[1:]]
    assert probs == pytest.approx([float(r[1]) for r in body], abs=1e-6)

    # Parquet by the extension: float32 outputs, reserved columns with their Parquet types.
    out_pq = tmp_path / "pred.parquet"
    tzrec("predict", "--scripted_model_path", export, "--predict_input_path", unlabeled,
          "--predict_output_path", out_pq, "--reserved_columns", "sample_id",
          "--output_columns", "probs", "--dataset_type", "ParquetDataset")
    table = pq.read_table(out_pq)
    assert table.column_names == ["probs", "sample_id"]
    assert str(table.schema.field("probs").type) == "float" and \
        str(table.schema.field("sample_id").type) == "int64"
    assert table.column("sample_id").to_pylist() == [1000 + 7 * i for i in range(n)]
    assert table.column("probs").to_pylist() == pytest.approx(probs, abs=1e-6)


# --------------------------------------------------------------------------------------------
# fine-tune optimizer state, eval progress lines, eval_batch_size, seed


def dense_optimizer_steps(ckpt) -> set:
    """The distinct Adam step counts ("<param>/step") of a checkpoint's dense optimizer state."""
    section = ckpt_metadata(ckpt)["dense_optimizer"]
    saved = load_pt(pathlib.Path(ckpt) / section["file"])
    return {float(saved["dense/" + name]) for name in section["tensors"] if name.endswith("/step")}


def sparse_optimizer_state(ckpt) -> dict:
    """table/state -> the whole table's optimizer state, its shards (every rank's file) placed
    by their offsets (metadata.json)."""
    import torch
    ckpt = pathlib.Path(ckpt)
    files, out = {}, {}
    for table, t in ckpt_metadata(ckpt)["tables"].items():
        for shard in t["shards"]:
            saved = files.setdefault(shard["optimizer_file"],
                                     load_pt(ckpt / shard["optimizer_file"]))
            (r, c), (rows, cols) = shard["offsets"], shard["sizes"]
            for name, desc in shard["optimizer"].items():
                part = saved[desc["key"]]
                shape = t["shape"] if part.dim() == 2 else t["shape"][:1]  # [rows, dim] or [rows]
                full = out.setdefault(f"{table}/{name}", torch.zeros(shape, dtype=part.dtype))
                if part.dim() == 2:
                    full[r:r + rows, c:c + cols] = part
                else:
                    full[r:r + rows] = part
    return out


def test_fine_tune_restores_optimizer_state_unless_ignore_restore_optimizer(tmp_path, small_dlrm,
                                                                           data, source):
    # TorchEasyRec tzrec/main.py `_train_and_evaluate`: a fine_tune_checkpoint is restored with
    # ckpt_manager.restore(ckpt_path, model, optimizer, fine_tune_ckpt_param_map), the optimizer
    # left out only with --ignore_restore_optimizer. The run itself starts at step 0.
    assert dense_optimizer_steps(checkpoints(source)[SOURCE_STEPS]) == {SOURCE_STEPS}

    def tune(name, *flags):
        md = tmp_path / name
        proc = run(train_cmd(small_dlrm, md, 1, data / "new_train.txt", data / "eval.txt",
                             steps_edit(4, log_every=1))
                   + ["--fine_tune_checkpoint", str(source), *flags])
        assert list(checkpoints(md)) == [4] and ckpt_metadata(checkpoints(md)[4])["step"] == 4
        return proc, checkpoints(md)[4]

    proc, restored = tune("restored")
    assert "fine-tune: weights and optimizer state from" in proc.stdout, proc.stdout[-2000:]
    assert dense_optimizer_steps(restored) == {SOURCE_STEPS + 4}
    proc, ignored = tune("ignored", "--ignore_restore_optimizer")
    assert "(not the optimizer state)" in proc.stdout, proc.stdout[-2000:]
    assert dense_optimizer_steps(ignored) == {4}
    # The train job's evaluation prints TorchEasyRec's progress lines too (eval.txt: 4 batches of
    # 64; the default log_step_count_steps 10: after batch 0, then after the loop).
    assert re.findall(r"^Evaluating Epoch-0 model-4: (\d+)it \[[0-9.]+it/s\] $", proc.stdout,
                      re.M) == ["0", "4"], proc.stdout[-3000:]
    # The tables' Adagrad accumulators (saved by 2 ranks, restored into 1): rows the 4 fine-tune
    # steps never touched (still 0 in the ignored run) hold the source's values in the restored run.
    before = sparse_optimizer_state(checkpoints(source)[SOURCE_STEPS])
    after, fresh = sparse_optimizer_state(restored), sparse_optimizer_state(ignored)
    assert before.keys() == after.keys() == fresh.keys() and before
    for key in before:
        untouched = (fresh[key] == 0).reshape(fresh[key].shape[0], -1).all(dim=1)
        assert untouched.any(), key
        assert after[key][untouched].equal(before[key][untouched]), key
    assert sum(float(before[k].double().sum()) for k in before) > 0
    # Another dense optimizer (Adagrad: "<param>/sum", not Adam's state): refused with the fix,
    # which then works.
    cfg = json.loads(pathlib.Path(small_dlrm).read_text())
    cfg["train_config"]["dense_optimizer"] = {"adagrad_optimizer": {"lr": 0.01},
                                              "constant_learning_rate": {}}
    other = write_config(cfg, tmp_path / "adagrad.json")
    cmd = train_cmd(other, tmp_path / "adagrad", 1, data / "new_train.txt", data / "eval.txt",
                    steps_edit(2)) + ["--fine_tune_checkpoint", str(source)]
    proc = run(cmd, check=False)
    assert proc.returncode == 4 and "/sum' is not in" in proc.stderr, details(proc)
    assert "pass --ignore_restore_optimizer" in proc.stderr, details(proc)
    assert not checkpoints(tmp_path / "adagrad")
    run(cmd + ["--ignore_restore_optimizer"])
    assert list(checkpoints(tmp_path / "adagrad")) == [2]


def eval_progress(stdout, desc):
    """The n of each eval progress line "<desc>: <n>it [<rate>it/s] " (TorchEasyRec's
    ProgressLogger wording)."""
    return [int(n) for n in
            re.findall(rf"^{re.escape(desc)}: (\d+)it \[[0-9.]+it/s\] $", stdout, re.M)]


def test_eval_progress_lines_follow_log_step_count_steps_and_eval_batch_size(tmp_path, data,
                                                                             source):
    # TorchEasyRec tzrec/main.py `_evaluate`: after eval batch i (0-based) a line when
    # i % eval_config.log_step_count_steps == 0, and one after the loop for the loop variable
    # (the index that found no batch, or the last of range(num_steps), not repeated). The eval
    # dataloader's batch is data_config.eval_batch_size when set (config_util
    # get_inference_batch_size): eval.txt's 256 rows are 8 batches of 32, or 4 of batch_size 64.
    base = pbtext.load(source / "pipeline.config")

    def evaluate(name, every, eval_batch=None, num_steps=None, nproc=1, checkpoint=False):
        cfg = copy.deepcopy(base)
        cfg.setdefault("eval_config", {})["log_step_count_steps"] = every
        if num_steps:
            cfg["eval_config"]["num_steps"] = num_steps
        if eval_batch:
            cfg["data_config"]["eval_batch_size"] = eval_batch
        args = ["eval", "--pipeline_config_path", write_config(cfg, tmp_path / f"{name}.json"),
                "--eval_input_path", data / "eval.txt",
                "--eval_result_filename", tmp_path / f"{name}.txt"]
        if checkpoint:
            args += ["--checkpoint_path", checkpoints(source)[SOURCE_STEPS]]
        proc = run(tzrun(nproc, *args))
        [line] = eval_lines(tmp_path / f"{name}.txt")
        return proc.stdout, line

    newest = f"Evaluating model-{SOURCE_STEPS}"  # no --checkpoint_path: the step is named
    out, by32 = evaluate("every3_batch32", 3, eval_batch=32)
    assert eval_progress(out, newest) == [0, 3, 6, 8], out[-3000:]
    out, _ = evaluate("every5_batch32", 5, eval_batch=32)
    assert eval_progress(out, newest) == [0, 5, 8], out[-3000:]
    out, by64 = evaluate("every3", 3)
    assert eval_progress(out, newest) == [0, 3, 4], out[-3000:]
    assert by64["auc"] == pytest.approx(by32["auc"], abs=1e-6)  # the same rows either way
    out, _ = evaluate("num_steps7", 3, eval_batch=32, num_steps=7, checkpoint=True)
    assert eval_progress(out, "Evaluating") == [0, 3, 6], out[-3000:]
    # Local rank 0 only: 2 ranks of 128 rows, 4 batches of 32 each, one set of lines.
    out, _ = evaluate("two_ranks", 3, eval_batch=32, nproc=2)
    assert eval_progress(out, newest) == [0, 3, 4], out[-3000:]


def test_predict_batch_is_eval_batch_size_unless_batch_size_flag(tmp_path, data, source):
    # TorchEasyRec's predict dataloader (Mode.PREDICT) takes config_util.get_inference_batch_size:
    # eval_batch_size when set, else batch_size; --batch_size sets both (set_inference_batch_size).
    export = tmp_path / "export"
    tzrec("export", "--model_dir", source, "--export_dir", export)
    edit = json.dumps({"data_config.eval_batch_size": 32})

    def predict(*flags):
        proc = tzrec("predict", "--export_dir", export, "--input_path", data / "eval.txt", *flags)
        m = re.search(r"predict: (\d+) batch\(es\) of at most (\d+) rows", proc.stdout)
        assert m and " 256 rows, auc" in proc.stdout, details(proc)
        return int(m[1]), int(m[2])

    assert predict() == (4, BATCH)
    assert predict("--edit_config_json", edit) == (8, 32)
    assert predict("--edit_config_json", edit, "--batch_size", "100") == (3, 100)


def test_seed_sets_the_initial_weights(tmp_path, small_dlrm, data):
    # train_config.seed seeds the initialisation (and the shuffle): the same seed gives the same
    # run to the bit, another seed other initial weights (another step-1 loss).
    def train(name, seed):
        md = tmp_path / name
        proc = run(train_cmd(small_dlrm, md, 1, data / "train.txt", data / "eval.txt",
                             {**steps_edit(2, log_every=1), "train_config.seed": seed}))
        ckpt = checkpoints(md)[2]
        tensors = {f"{f.name}:{k}": v for f in sorted(ckpt.glob("*.pt"))
                   for k, v in load_pt(f).items()}
        return first_step_loss(proc.stdout), tensors, metrics(md)

    loss_a, a, metrics_a = train("a", 7)
    loss_b, b, metrics_b = train("b", 7)
    loss_c, c, _ = train("c", 8)
    assert loss_a == loss_b and metrics_a["eval_auc"] == metrics_b["eval_auc"]
    assert a.keys() == b.keys() == c.keys() and a
    assert all(a[k].equal(b[k]) for k in a)
    assert loss_c != loss_a
    dense = [k for k in a if a[k].is_floating_point() and a[k].dim() == 2 and "dense/" in k]
    assert dense and not all(a[k].equal(c[k]) for k in dense), dense
